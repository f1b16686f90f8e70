"""DCGM's active diagnostic, run only when asked (``check --dcgm-diag LEVEL``): ``dcgmi diag -r LEVEL -j``.

cudadoctor does not test the GPU itself; it delegates to NVIDIA's Data Center GPU Manager and reads its
verdict. ``dcgmi`` talks to a running ``nv-hostengine`` (127.0.0.1:5555 by default,
https://docs.nvidia.com/datacenter/dcgm/latest/reference/command-line-reference/nv-hostengine.html);
level 1 runs software and deployment checks "normally lasting seconds", level 2 adds memory and PCIe tests
"lasting approximately two minutes"
(https://docs.nvidia.com/datacenter/dcgm/latest/reference/command-line-reference/dcgmi/dcgmi-diag.html).

Two JSON layouts are read. DCGM 4 writes ``"DCGM Diagnostic"`` → ``test_categories`` → ``tests`` with a
``test_summary`` and per-entity ``results`` (``entity_group``, ``entity_id``, ``status``, ``warnings`` as
objects with a ``warning`` text), plus top-level ``metadata`` (DCGM's own schema:
https://github.com/NVIDIA/DCGM/blob/master/testing/python3/dcgm_diag_schema.json). DCGM 3 wrote
``"DCGM GPU Diagnostic"`` with per-``gpu_id`` results and no summary
(https://github.com/NVIDIA/DCGM/issues/139; the key change is listed among DCGM 4's breaking changes,
https://github.com/facebookresearch/gcm/pull/38).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from cudadoctor.facts.health import DcgmDiag, DcgmEntityResult, DcgmTest
from cudadoctor.probes.context import ProbeContext

__all__ = ["DCGM_LEVELS", "DCGM_TIMEOUTS", "parse_dcgm_json", "probe_dcgm_diag"]

#: Levels cudadoctor runs; 3 and 4 take 15 minutes and more, an operator's own decision.
DCGM_LEVELS = (1, 2)
#: Default seconds allowed per level: level 1 takes seconds, level 2 about two minutes (dcgmi-diag reference).
DCGM_TIMEOUTS = {1: 90.0, 2: 300.0}
#: DCGM's status words, worst first.
_WORST = ("Fail", "Warn", "Pass", "Skip")


def probe_dcgm_diag(ctx: ProbeContext, level: int, timeout: float | None = None) -> DcgmDiag:
    """Run ``dcgmi diag -r LEVEL -j`` with a deadline and read its JSON."""
    argv = ("dcgmi", "diag", "-r", str(level), "-j")
    command = " ".join(argv)
    seconds = timeout if timeout is not None else DCGM_TIMEOUTS[level]
    start = time.monotonic()
    result = ctx.runner.run(argv, timeout=seconds)
    took = round(time.monotonic() - start, 2)
    if result.error is not None:
        why = result.error
        if "not found" in why:
            why = "dcgmi is not installed (NVIDIA DCGM: the datacenter-gpu-manager package)"
        return DcgmDiag(level, command, error=why, seconds=took)
    try:
        document = json.loads(result.stdout)
    except ValueError:
        # no JSON: dcgmi said why on its own lines ("Unable to connect to host engine…")
        return DcgmDiag(level, command, error=result.describe(), returncode=result.returncode, seconds=took)
    parsed = parse_dcgm_json(document)
    if not isinstance(parsed, DcgmDiag):
        return DcgmDiag(level, command, error=parsed, returncode=result.returncode, seconds=took)
    return DcgmDiag(
        level,
        command,
        error=parsed.error,
        returncode=result.returncode,
        seconds=took,
        dcgm_version=parsed.dcgm_version,
        driver_version=parsed.driver_version,
        tests=parsed.tests,
    )


def parse_dcgm_json(document: Any) -> DcgmDiag | str:
    """The tests of a ``dcgmi diag -j`` document (level and command left empty), or why it is not one."""
    if not isinstance(document, dict):
        return "dcgmi's output is not a JSON object"
    root = document.get("DCGM Diagnostic", document.get("DCGM GPU Diagnostic"))
    if not isinstance(root, dict):
        return "dcgmi's JSON has no 'DCGM Diagnostic' object"
    metadata = _dict(document.get("metadata")) or root
    tests = tuple(
        _test(str(category.get("category", "")), test)
        for category in _list(root.get("test_categories"))
        if isinstance(category, dict)
        for test in _list(category.get("tests"))
        if isinstance(test, dict)
    )
    error = root.get("runtime_error")
    return DcgmDiag(
        0,
        "",
        error=f"DCGM reported: {error}" if isinstance(error, str) and error else None,
        dcgm_version=_text(metadata.get("version")),
        driver_version=_text(metadata.get("Driver Version Detected")),
        tests=tests,
    )


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str | None:
    return str(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None


def _warnings(result: Mapping[str, Any]) -> tuple[str, ...]:
    """DCGM 4: objects with a ``warning`` text; DCGM 3: plain strings."""
    found = []
    for item in _list(result.get("warnings")):
        text = item.get("warning") if isinstance(item, dict) else item
        if isinstance(text, str) and text.strip():
            found.append(" ".join(text.split()))
    return tuple(found)


def _entity(result: Mapping[str, Any]) -> str:
    if "entity_id" in result:
        return f"{result.get('entity_group', 'GPU')} {result['entity_id']}"
    if "gpu_id" in result:
        return f"GPU {result['gpu_id']}"
    ids = result.get("gpu_ids")
    return "GPU " + ",".join(str(i) for i in ids) if isinstance(ids, list) else "system"


def _test(category: str, test: Mapping[str, Any]) -> DcgmTest:
    results = tuple(
        DcgmEntityResult(_entity(r), str(r.get("status", "")), _warnings(r))
        for r in _list(test.get("results"))
        if isinstance(r, dict)
    )
    summary = _dict(test.get("test_summary"))
    told = summary.get("status")
    status = told if isinstance(told, str) else _worst(r.status for r in results)
    info = tuple(str(i) for i in _list(summary.get("info")) if isinstance(i, str))
    return DcgmTest(category, str(test.get("name", "")), status, results, info)


def _worst(statuses: Any) -> str:
    seen = set(statuses)
    return next((s for s in _WORST if s in seen), "Skip")
