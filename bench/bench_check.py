"""Benchmark: where the time of ``cudadoctor check`` goes, and how it compares with torch's collect_env.

A benchmark, not a test (CI runs it once as a smoke test, without timing assertions)::

    python bench/bench_check.py --runs 11
    python bench/bench_check.py --python /opt/venv/bin/python   # collect_env of another env
    python bench/bench_check.py --from tests/fixtures/h200-device/snapshot.json   # no probing

It prints the median of ``--runs`` fresh processes for each part (the commands alternate, so a busy
machine slows them alike):

* ``interpreter start``: ``python -c pass`` (site and .pth files included);
* ``imports``, ``probes``, ``checks``, ``render``: one ``check`` in phases (``bench/phases.py``);
* ``cudadoctor check``: the whole command, wall time and max RSS of the process (warm: the user cache holds the
  file probes' memo and the ELF scan from the run before);
* ``cudadoctor check, cold``: the same with an empty user cache each run, as the first run after an install (an
  installed wheel then reads the compat tables it ships parsed; a source checkout parses their TOML);
* ``collect_env``: ``python -m torch.utils.collect_env``, when torch is installed for ``--python``,
  and the ratio of the two.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


#: The series run with an empty user cache each time.
COLD = "cudadoctor check, cold"


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    """(wall seconds, max RSS in KiB of this child alone, stdout) of one fresh process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    out = proc.stdout.read() if proc.stdout else b""
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0  # reaped by wait4
    return time.perf_counter() - start, usage.ru_maxrss, out.decode("utf-8", "replace")


def _has_torch(python: str) -> bool:
    probe = "import importlib.util,sys; sys.exit(importlib.util.find_spec('torch') is None)"
    return subprocess.run([python, "-c", probe], capture_output=True, timeout=60, check=False).returncode == 0


def measure(runs: int, python: str, snapshot: str | None, collect_env: bool) -> dict[str, list[float]]:
    """Every series, by name: seconds (and ``check rss`` in MiB)."""
    env = dict(os.environ, NO_COLOR="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its .pyc files; compiling is not check's time
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.dirname(HERE), env.get("PYTHONPATH")) if p)
    source = ["--from", snapshot] if snapshot else []
    commands = {
        "interpreter start": [sys.executable, "-c", "pass"],
        "phases": [sys.executable, os.path.join(HERE, "phases.py"), *source],
        "cudadoctor check": [sys.executable, "-m", "cudadoctor", "check", *source],
        COLD: [sys.executable, "-m", "cudadoctor", "check", *source],
    }
    if collect_env:
        commands["collect_env"] = [python, "-m", "torch.utils.collect_env"]
    series: dict[str, list[float]] = {}
    caches = tempfile.mkdtemp(prefix="cudadoctor-bench-")
    try:
        for name, argv in commands.items():  # one warm-up each (the page cache, .pyc files): the cold run is check's
            if name != COLD:
                _run(argv, env)
        for index in range(runs):
            _one_round(commands, env, series, os.path.join(caches, str(index)))
    finally:
        shutil.rmtree(caches, ignore_errors=True)
    return series


def _one_round(commands: dict[str, list[str]], env: dict[str, str], series: dict[str, list[float]], cold: str) -> None:
    for name, argv in commands.items():
        seconds, rss, out = _run(argv, dict(env, XDG_CACHE_HOME=cold) if name == COLD else env)
        if name == "phases":
            for phase, value in json.loads(out.strip().splitlines()[-1])["phases"].items():
                series.setdefault(phase, []).append(value)
            continue
        series.setdefault(name, []).append(seconds)
        if name == "cudadoctor check":
            series.setdefault("check max RSS MiB", []).append(rss / 1024)


def report(series: dict[str, list[float]]) -> str:
    med = {name: statistics.median(values) for name, values in series.items()}
    lines = [f"{'part':<26} {'median':>9}  (runs: {len(series['cudadoctor check'])})"]
    for name in ("interpreter start", "imports", "probes", "checks", "render", "cudadoctor check"):
        lines.append(f"{name:<26} {med[name]:8.3f}s")
    parts = sum(med[n] for n in ("interpreter start", "imports", "probes", "checks", "render"))
    lines.append(f"{'(other: argv, exit)':<26} {med['cudadoctor check'] - parts:8.3f}s")
    lines.append(f"{COLD:<26} {med[COLD]:8.3f}s")
    lines.append(f"{'check max RSS':<26} {max(series['check max RSS MiB']):7.1f} MiB")
    if "collect_env" in med:
        ratio = med["cudadoctor check"] / med["collect_env"]
        lines.append(f"{'collect_env':<26} {med['collect_env']:8.3f}s")
        lines.append(f"check / collect_env: {ratio:.3f}")
    else:
        lines.append("collect_env: torch is not installed for that interpreter, not measured")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--python", default=sys.executable, help="interpreter for collect_env")
    parser.add_argument("--from", dest="snapshot", metavar="FILE", help="replay a snapshot instead of probing")
    args = parser.parse_args()
    series = measure(max(args.runs, 1), args.python, args.snapshot, _has_torch(args.python))
    print(report(series))
    return 0


if __name__ == "__main__":
    sys.exit(main())
