"""Record what ``cudadoctor usage`` asks NVML, on a real GPU, under four known loads, as replayable JSON.

Run on the device (its python3 has nvidia-ml-py and torch), from the repository root:

    PYTHONPATH=$PWD python3 bench/capture_usage.py > "$OUT/usage-capture.json"

Scenarios, each recorded with query_health(utilization=True, sample_seconds=1.0) while the load runs in
child processes (the recording process itself never creates a CUDA context):

* ``idle``: nothing on the GPU;
* ``held``: one process holds 4 GiB and launches nothing for 16 s (longer than the driver's buffer);
* ``spin``: the holder, plus a process looping ``torch.cuda._sleep`` (one thread of one block spinning);
* ``gemm``: a process looping bf16 8192x8192 matmuls.

Tests replay these records through cudadoctor.usage (tests/fixtures/health/usage-h200-*.json).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from cudadoctor.probes.nvml_health import query_health

HOLD = (
    "import torch,time; x=torch.empty(4<<30, dtype=torch.uint8, device='cuda'); torch.cuda.synchronize(); "
    "time.sleep(600)"
)
SPIN = "import torch\nwhile True:\n    torch.cuda._sleep(1<<30)\n    torch.cuda.synchronize()"
GEMM = (
    "import torch\na=torch.randn(8192,8192,dtype=torch.bfloat16,device='cuda'); b=a.clone()\n"
    "while True:\n    [a@b for _ in range(20)]; torch.cuda.synchronize()"
)


def _start(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code])


def _record(name: str, out: dict[str, object]) -> None:
    start = time.perf_counter()
    out[name] = query_health(utilization=True, sample_seconds=1.0)
    print(f"{name}: {time.perf_counter() - start:.2f} s", file=sys.stderr)


def main() -> int:
    scenarios: dict[str, object] = {}
    _record("idle", scenarios)
    holder = _start(HOLD)
    children = [holder]
    try:
        time.sleep(22)  # torch import + context, then ~16 s of nothing: the buffer sees only idleness
        _record("held", scenarios)
        children.append(_start(SPIN))
        time.sleep(12)
        _record("spin", scenarios)
        children.pop().kill()
        holder.kill()
        children = [_start(GEMM)]
        time.sleep(15)
        _record("gemm", scenarios)
    finally:
        for child in children:
            child.kill()
    document = {"captured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "scenarios": scenarios}
    json.dump(document, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
