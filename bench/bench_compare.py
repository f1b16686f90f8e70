"""Benchmark: ``cudadoctor compare`` over 100, 1,000 and 10,000 node reports.

The reports are the real H200 snapshot (tests/fixtures/h200-device/snapshot.json) with variations: one node
in a hundred on another NCCL, one in fifty on another driver branch, a fifth of the fleet on another GPU
model (a second pool). Prints wall time and the child's peak memory per fleet size, and the cost per report.

    python bench/bench_compare.py                 # 100, 1000, 10000
    python bench/bench_compare.py --sizes 100     # the CI smoke run
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SNAPSHOT = os.path.join(HERE, "..", "tests", "fixtures", "h200-device", "snapshot.json")


def _fleet(directory: str, size: int) -> None:
    with open(SNAPSHOT, encoding="utf-8") as handle:
        base = json.load(handle)
    variants = {}
    for name, change in (("nccl", ("nccl", 0, "version", "2.21.5")), ("gpu", ("gpus", 0, "name", "NVIDIA B200"))):
        doc = copy.deepcopy(base)
        key, index, field, value = change
        doc["facts"][key][index][field] = value
        variants[name] = json.dumps(doc)
    driver = copy.deepcopy(base)
    driver["facts"]["driver"]["version"] = "570.86.10"
    variants["driver"] = json.dumps(driver)
    plain = json.dumps(base)
    for i in range(size):
        text = variants["nccl"] if i % 100 == 7 else variants["driver"] if i % 50 == 3 else plain
        text = variants["gpu"] if i % 5 == 4 else text
        with open(os.path.join(directory, f"gpu{i:05d}.json"), "w", encoding="utf-8") as handle:
            handle.write(text)


def _run(directory: str) -> tuple[float, int, int]:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "cudadoctor", "compare", directory, "-f", "json"],
        capture_output=True, timeout=600, check=False,
    )  # fmt: skip
    elapsed = time.perf_counter() - start
    return elapsed, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, proc.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    args = parser.parse_args()
    print(f"{'reports':>8} {'seconds':>8} {'ms/report':>10} {'max RSS MiB':>12}  exit")
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as directory:
            _fleet(directory, size)
            seconds, rss, code = _run(directory)
        print(f"{size:>8} {seconds:8.2f} {1000 * seconds / size:10.3f} {rss // 1024:>12}  {code}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
