"""Benchmark: ``cudadoctor check`` against ``python -m torch.utils.collect_env`` and ``python -c pass``.

A benchmark, not a test: it prints wall times (median of N runs, after one warm-up) and ratios.
Run it where torch is installed to see the comparison the README quotes::

    python bench/bench_check.py --runs 5
    python bench/bench_check.py --python /opt/venv/bin/python   # collect_env of another env

``cudadoctor check`` is run as ``<this python> -m cudadoctor check``; collect_env with the
interpreter given by ``--python`` (default: this one), and skipped when torch is not installed
there. Peak memory (max RSS of the child) is printed where the platform reports it.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time


def _time(argv: list[str], runs: int, env: dict[str, str]) -> tuple[float, int, int]:
    """(median seconds, max RSS in KiB of the children, last exit code)."""
    subprocess.run(argv, capture_output=True, env=env, timeout=300, check=False)  # warm the page cache
    times: list[float] = []
    rc = 0
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, env=env, timeout=300, check=False)
        times.append(time.perf_counter() - start)
        rc = proc.returncode
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return statistics.median(times), rss, rc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--python", default=sys.executable, help="interpreter for collect_env")
    args = parser.parse_args()
    env = dict(os.environ, NO_COLOR="1")

    rows: list[tuple[str, float, int, int]] = []
    base, rss, rc = _time([sys.executable, "-c", "pass"], args.runs, env)
    rows.append(("python -c pass", base, rss, rc))
    check, rss, rc = _time([sys.executable, "-m", "cudadoctor", "check"], args.runs, env)
    rows.append(("cudadoctor check", check, rss, rc))
    check_json, rss, rc = _time([sys.executable, "-m", "cudadoctor", "check", "--format", "json"], args.runs, env)
    rows.append(("cudadoctor check --format json", check_json, rss, rc))
    has_torch = (
        subprocess.run(
            [args.python, "-c", "import importlib.util,sys; sys.exit(importlib.util.find_spec('torch') is None)"],
            capture_output=True,
            timeout=60,
            check=False,
        ).returncode
        == 0
    )
    collect = None
    if has_torch:
        collect, rss, rc = _time([args.python, "-m", "torch.utils.collect_env"], args.runs, env)
        rows.append(("python -m torch.utils.collect_env", collect, rss, rc))

    print(f"{'command':<36} {'median s':>9} {'vs pass':>8}  exit")
    for name, seconds, _rss, code in rows:
        print(f"{name:<36} {seconds:9.3f} {seconds / base:8.1f}x  {code}")
    print(f"\ncudadoctor check, net of interpreter start: {check - base:.3f} s")
    if collect is not None:
        print(f"collect_env / cudadoctor check: {collect / check:.1f}x slower")
    else:
        print("torch is not installed for", args.python, "- collect_env not measured")
    print(f"(max RSS of any child so far: {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
