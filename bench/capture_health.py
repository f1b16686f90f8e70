"""Record every NVML answer the health category uses, on a real GPU, as a replayable JSON fixture.

Run on the device (its python3 has nvidia-ml-py), from the repository root:

    PYTHONPATH=$PWD python3 bench/capture_health.py > "$OUT/health-capture.json"

It writes one JSON document: ``fast`` is exactly what ``cudadoctor check`` asks NVML
(cudadoctor.probes.nvml_health.query_health), ``utilization`` the same plus the driver's utilization ring
buffer and a 1 s GPM window, ``timings_ms`` five timed repetitions of the fast query, ``kernel_log`` whether
/dev/kmsg was readable and its Xid lines, ``host`` the PCI functions, uptime, /dev/shm and memlock as the
probe reads them. Tests replay ``fast`` through RecordedHealthSource (tests/fixtures/health/).
Nothing is written to the GPU; no CUDA context is created.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time

from cudadoctor.probes.context import ProbeContext
from cudadoctor.probes.health import host_health
from cudadoctor.probes.nvml_health import query_health
from cudadoctor.rootfs import RootFS


def main() -> int:
    fast = query_health()
    timings = []
    for _ in range(5):
        start = time.perf_counter()
        query_health()
        timings.append(round((time.perf_counter() - start) * 1000, 2))
    utilization = query_health(utilization=True, sample_seconds=1.0)
    start = time.perf_counter()
    host = host_health(ProbeContext(fs=RootFS("/"), env=dict(os.environ)))
    host_ms = round((time.perf_counter() - start) * 1000, 2)
    document = {
        "captured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "uid": os.getuid(),
        "fast": fast,
        "utilization": utilization,
        "timings_ms": {"query_health": timings, "host_health": host_ms},
        "host": dataclasses.asdict(host),
    }
    json.dump(document, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
