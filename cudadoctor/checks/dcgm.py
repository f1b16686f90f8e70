"""CD167: DCGM's own active diagnostic, when asked for (``check --dcgm-diag LEVEL``).

cudadoctor does not reimplement DCGM: it runs ``dcgmi diag -r LEVEL -j`` (:mod:`cudadoctor.probes.dcgm`) and
reports DCGM's verdict per test, with DCGM's own words as the evidence.

# CD167  DCGM's diagnostic passes (only when --dcgm-diag asked for it)
"""

from __future__ import annotations

from cudadoctor.checks._base import CannotJudge, Check
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.facts.health import DcgmDiag, DcgmTest

__all__ = ["CD167"]

_HOW = (
    "start the host engine (`sudo systemctl start nvidia-dcgm`, or `nv-hostengine`) and install DCGM where it is "
    "missing: https://docs.nvidia.com/datacenter/dcgm/latest/"
)


def _said(test: DcgmTest, status: str) -> str:
    """``software: GPU 0: Persistence Mode: …`` — DCGM's words for the entities with this status."""
    parts = [f"{r.entity}: {'; '.join(r.warnings) or r.status}" for r in test.results if r.status == status]
    parts += list(test.info) if not parts else []
    return f"{test.name}: " + (" | ".join(parts) or status)[:300]


class CD167(Check):
    """DCGM's active diagnostic (dcgmi diag) passes, when asked for with --dcgm-diag.

    What it checks: runs `dcgmi diag -r LEVEL -j` against the running nv-hostengine (level 1: deployment and
    software checks in seconds; level 2 adds memory and PCIe tests, about two minutes) and reads each test's
    status: Fail is an error, Warn a warning, a run where every test was skipped could not be judged. Nothing
    runs unless --dcgm-diag is given.

    Why it matters: DCGM's diagnostic exercises the GPU actively, which no passive reading of counters can;
    NVIDIA's own suite is the reference for "this GPU works", and operators run it before returning a node
    to service (https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html).

    How to fix: read DCGM's message for each failed test (`dcgmi diag -r LEVEL -v` prints more); follow its
    advice, then drain the node if a hardware test failed.
    """

    name = "dcgm-diagnostic"
    category = "health"

    def check(self, dcgm: DcgmDiag) -> Problem | None:
        if dcgm.error is not None:
            raise CannotJudge(f"{dcgm.command}: {dcgm.error}; {_HOW}")
        ran = [t for t in dcgm.tests if t.status != "Skip"]
        if not ran:
            raise CannotJudge(f"{dcgm.command} ran no test (every test was skipped or none was reported)")
        failed = [t for t in ran if t.status == "Fail"]
        warned = [t for t in ran if t.status == "Warn"]
        if not failed and not warned:
            return None
        worst, status = (failed, "Fail") if failed else (warned, "Warn")
        version = f"DCGM {dcgm.dcgm_version}" if dcgm.dcgm_version else "DCGM"
        return Problem(
            f"{version} diagnostic level {dcgm.level}: " + "; ".join(_said(t, status) for t in worst),
            {f"{t.category}/{t.name}": t.status for t in dcgm.tests},
            Remediation(
                "follow DCGM's message for each failed test; drain the node if a hardware test failed",
                (f"dcgmi diag -r {dcgm.level} -v",),
            ),
            Status.FAIL if failed else Status.WARN,
        )
