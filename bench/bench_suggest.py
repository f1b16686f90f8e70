"""Benchmark: the wall time of ``cudadoctor suggest`` offline (``--no-probe``), on everyday machines of issue #12.

A benchmark, not a test (a slow smoke test runs it once, without timing assertions); the aim is 0.3 s or
less a command::

    python bench/bench_suggest.py --runs 11

It prints the median of ``--runs`` fresh processes for each command (they alternate, so a busy machine slows
them alike), plans and ``--matrix`` alike, and the slowest median against the aim.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
AIM = 0.3

#: (label, arguments after ``cudadoctor suggest --no-probe``)
COMMANDS = (
    ("torch, RTX 4090 on 550", ["torch", "--driver", "550", "--gpu", "RTX 4090", "--python", "3.12"]),
    ("vllm, H100 on 535", ["vllm", "--driver", "535", "--gpu", "H100", "--python", "3.11"]),
    ("torch dockerfile, B200 on 570", ["torch", "--driver", "570", "--gpu", "B200", "-f", "dockerfile"]),
    ("torch --matrix, GTX 1080 Ti on 580", ["torch", "--matrix", "--driver", "580", "--gpu", "GTX 1080 Ti"]),
    ("vllm --matrix json, H200 on 580", ["vllm", "--matrix", "-f", "json", "--driver", "580", "--gpu", "H200"]),
)


def _seconds(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    return time.perf_counter() - start


def measure(runs: int) -> dict[str, list[float]]:
    env = dict(os.environ, NO_COLOR="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.dirname(HERE), env.get("PYTHONPATH")) if p)
    argvs = {label: [sys.executable, "-m", "cudadoctor", "suggest", "--no-probe", *args] for label, args in COMMANDS}
    for argv in argvs.values():  # warm-up: the page cache, .pyc files, the parsed-compat cache
        _seconds(argv, env)
    series: dict[str, list[float]] = {}
    for _ in range(runs):
        for label, argv in argvs.items():
            series.setdefault(label, []).append(_seconds(argv, env))
    return series


def report(series: dict[str, list[float]]) -> str:
    med = {label: statistics.median(values) for label, values in series.items()}
    lines = [f"{'command':<40} {'median':>9}  (runs: {len(next(iter(series.values())))})"]
    lines += [f"{label:<40} {value:8.3f}s" for label, value in med.items()]
    slowest = max(med.values())
    lines.append(f"slowest {slowest:.3f}s; aim {AIM:.1f}s: {'met' if slowest <= AIM else 'missed'}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    print(report(measure(max(parser.parse_args().runs, 1))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
