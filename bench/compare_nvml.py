"""Compare cudadoctor's ctypes NVML binding with nvidia-ml-py on a real GPU, before making it the default.

Run on the device (its python3 has nvidia-ml-py), from the repository root::

    PYTHONPATH=$PWD python3 bench/compare_nvml.py                 # records, import cost, check time
    PYTHONPATH=$PWD python3 bench/compare_nvml.py --check-runs 0  # no whole-command timing

It prints three things:

* **records**: ``query_health`` (the fast view, and the utilization view with a GPM window) and the native
  query (``_query_nvml``), made through both bindings in one process, alternating (``CUDADOCTOR_NVML``
  switches the binding per call). First the *shape*: the same keys, the same value-or-error at every key,
  the same error codes and texts, the same JSON types. Then every differing *value*. Each difference is
  marked ``volatile`` where it is a live reading (power, utilization, samples, processes ...) that may change
  between two calls, ``DIFFERENT`` otherwise: a ``DIFFERENT`` line is a bug of the binding;
* **import cost**: the median of fresh interpreters importing each binding, after the standard modules
  cudadoctor has already imported by then (ctypes, threading, typing ...);
* **cudadoctor check**: the median wall time of the whole command with each binding (fresh processes,
  alternating).

Exit status 1 when a shape differs or a non-volatile value differs, else 0.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from cudadoctor.probes.native import BINDING_VAR, _query_nvml  # noqa: E402
from cudadoctor.probes.nvml_health import query_health  # noqa: E402

#: Per-device keys whose values are live readings (they may change between two calls).
VOLATILE = {
    "utilization_rates", "power_usage_mw", "memory_used_bytes", "compute_processes", "clock_event_reasons",
    "violation_power", "violation_thermal", "pcie_gen_current", "pcie_width_current", "pcie_replay_counter",
    "field_values", "samples_gpu", "process_samples", "process_names", "gpm",
}  # fmt: skip
BINDINGS = {"pynvml": "pynvml", "ctypes": None}
PRELOADED = "import ctypes, threading, typing, functools, os, sys, string, dataclasses"


def _use(binding: str) -> None:
    value = BINDINGS[binding]
    if value is None:
        os.environ.pop(BINDING_VAR, None)
    else:
        os.environ[BINDING_VAR] = value


def _records(binding: str, sample_seconds: float) -> dict[str, Any]:
    _use(binding)
    fast = query_health()
    utilization = query_health(utilization=True, sample_seconds=sample_seconds)
    native = dataclasses.asdict(_query_nvml())
    return {"fast": fast, "utilization": utilization, "native": native}


def _without_timing(records: dict[str, Any]) -> dict[str, Any]:
    return {view: {k: v for k, v in record.items() if k != "elapsed_ms"} for view, record in records.items()}


def _shape(value: Any) -> Any:
    """The record with every value replaced by its JSON type; errors (``{"e", "c"}``) kept whole."""
    if isinstance(value, dict):
        if set(value) == {"e", "c"}:
            return value
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return type(value).__name__


def _differences(ours: Any, theirs: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    if isinstance(ours, dict) and isinstance(theirs, dict):
        found = []
        for key in sorted(set(ours) | set(theirs), key=str):
            found += _differences(ours.get(key), theirs.get(key), f"{path}/{key}")
        return found
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        return [
            d for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) for d in _differences(a, b, f"{path}[{i}]")
        ]
    return [] if ours == theirs else [(path, ours, theirs)]


def _volatile(path: str) -> bool:
    return any(part.split("[")[0] in VOLATILE for part in path.split("/"))


def compare(rounds: int, sample_seconds: float) -> int:
    """Print the differences of ``rounds`` alternating pairs of records; the number of real ones."""
    real = 0
    for index in range(rounds):
        first, second = ("pynvml", "ctypes") if index % 2 == 0 else ("ctypes", "pynvml")
        made = {first: _records(first, sample_seconds), second: _records(second, sample_seconds)}
        ours, theirs = _without_timing(made["ctypes"]), _without_timing(made["pynvml"])
        shape = _differences(_shape(ours), _shape(theirs))
        values = _differences(ours, theirs)
        print(f"round {index + 1} ({first} first): {len(shape)} shape differences, {len(values)} value differences")
        for kind, found in (("shape", shape), ("value", values)):
            for path, a, b in found:
                label = "volatile " if _volatile(path) else "DIFFERENT"
                print(f"  {label} {kind} {path}: ctypes {json.dumps(a)[:120]} / pynvml {json.dumps(b)[:120]}")
        real += sum(not _volatile(path) for path, _, _ in [*shape, *values])
        timing = {name: [made[name][view]["elapsed_ms"] for view in ("fast", "utilization")] for name in made}
        print(f"  query_health elapsed ms (fast, utilization): {timing}")
    return real


def _import_ms(module: str) -> float:
    code = f"{PRELOADED}\nimport time\nstart = time.perf_counter()\nimport {module}\nprint(time.perf_counter() - start)"
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its .pyc files
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True)
    return float(out.stdout.strip()) * 1000


def import_costs(runs: int) -> None:
    modules = {"pynvml": "pynvml", "ctypes": "cudadoctor.probes.nvml"}
    for module in modules.values():  # warm-up: the page cache and .pyc files
        _import_ms(module)
    times: dict[str, list[float]] = {name: [] for name in modules}
    for _ in range(runs):
        for name, module in modules.items():
            times[name].append(_import_ms(module))
    for name, series in times.items():
        print(f"import {name:<7} median {statistics.median(series):6.2f} ms  min {min(series):6.2f} ms  ({runs} runs)")


def check_times(runs: int) -> None:
    env = dict(os.environ, PYTHONPATH=ROOT, NO_COLOR="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    argv = [sys.executable, "-m", "cudadoctor", "check"]
    times: dict[str, list[float]] = {name: [] for name in BINDINGS}
    for index in range(runs + 1):  # the first pair warms the page cache
        for name, value in BINDINGS.items():
            run_env = {k: v for k, v in env.items() if k != BINDING_VAR}
            if value is not None:
                run_env[BINDING_VAR] = value
            start = time.perf_counter()
            subprocess.run(argv, env=run_env, capture_output=True, timeout=120, check=False)
            if index:
                times[name].append(time.perf_counter() - start)
    for name, series in times.items():
        print(f"cudadoctor check with {name:<7} median {statistics.median(series):6.3f} s  ({runs} runs)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4, help="alternating pairs of records to compare")
    parser.add_argument("--sample-seconds", type=float, default=0.5, help="GPM window of the utilization view")
    parser.add_argument("--import-runs", type=int, default=9)
    parser.add_argument("--check-runs", type=int, default=7, help="0: do not time the whole command")
    args = parser.parse_args()
    real = compare(args.rounds, args.sample_seconds)
    import_costs(args.import_runs)
    if args.check_runs > 0:
        check_times(args.check_runs)
    print(f"{real} differences that are not live readings" if real else "records agree (live readings aside)")
    return 1 if real else 0


if __name__ == "__main__":
    raise SystemExit(main())
