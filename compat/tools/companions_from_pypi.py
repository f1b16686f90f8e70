"""Read from PyPI what compat/companions.toml holds: the torch requirement of every torchvision and torchaudio
release, and the triton pin of every torch release.

How to run (network access to pypi.org and files.pythonhosted.org; standard library only):

    python3 compat/tools/companions_from_pypi.py > /tmp/companions.json

For every release of torchvision and torchaudio it reads one wheel's METADATA (a manylinux x86_64 wheel where
there is one; the PEP 658 ``.metadata`` file, else the wheel's own METADATA by HTTP range requests) and prints
its ``torch`` requirement as written (``torch==2.5.1``, ``torch>=2.14.0``, or none). For every torch release
from 2.0.0 on it prints the ``triton`` / ``pytorch-triton-rocm`` pins of its manylinux x86_64 wheel's
Requires-Dist with their markers. The JSON goes to stdout; the TOML records are written from it by hand
review. Nothing runs at import.
"""

from __future__ import annotations

import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from torch_from_pypi import _WHEEL_RE, list_files, requires_dist, torch_requirement, vkey, wheel_metadata


def _one_wheel_per_version(pkg: str) -> dict[str, dict]:
    """version -> one wheel file (a manylinux x86_64 one where there is one)."""
    chosen: dict[str, dict] = {}
    for f in list_files(pkg):
        m = _WHEEL_RE.match(f["filename"])
        if not m or f.get("yanked"):
            continue
        version = m.group("ver")
        better = "linux" in m.group("plat") and "x86_64" in m.group("plat")
        if version not in chosen or better:
            chosen[version] = f
    return chosen


def companion_requirements(pkg: str, pool: ThreadPoolExecutor) -> list[dict[str, str | None]]:
    """Every release of ``pkg`` (newest first) with the torch requirement of its wheel."""
    wheels = _one_wheel_per_version(pkg)
    versions = sorted(wheels, key=vkey, reverse=True)
    reqs = list(pool.map(lambda v: requires_dist(wheel_metadata(wheels[v])), versions))
    return [
        {"version": v, "torch": torch_requirement(r), "wheel": wheels[v]["filename"]}
        for v, r in zip(versions, reqs, strict=True)
    ]


def triton_pins(pool: ThreadPoolExecutor, first: str = "2.0.0") -> list[dict[str, object]]:
    """Every torch release from ``first`` on with the triton lines of its manylinux x86_64 wheel."""
    wheels = {
        v: f for v, f in _one_wheel_per_version("torch").items() if "+" not in v and vkey(v) >= vkey(first)
    }
    versions = sorted(wheels, key=vkey, reverse=True)
    reqs = list(pool.map(lambda v: requires_dist(wheel_metadata(wheels[v])), versions))
    return [
        {"version": v, "triton": [r for r in rq if "triton" in r.split(";")[0]], "wheel": wheels[v]["filename"]}
        for v, rq in zip(versions, reqs, strict=True)
    ]


def main() -> int:
    with ThreadPoolExecutor(8) as pool:
        out = {
            "torchvision": companion_requirements("torchvision", pool),
            "torchaudio": companion_requirements("torchaudio", pool),
            "torch_triton": triton_pins(pool),
        }
    json.dump(out, sys.stdout, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
