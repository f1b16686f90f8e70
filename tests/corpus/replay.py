"""Replay one corpus case: build its machine under pyfakefs, probe it, run the checks.

Shared by the corpus test and the figure script (``python -m tests.corpus.figure``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyfakefs.fake_filesystem_unittest import Patcher

from cudadoctor.checks.engine import run_checks
from cudadoctor.checks.findings import Finding, Status
from cudadoctor.data import CompatMatrix
from cudadoctor.probes.collect import collect_facts
from cudadoctor.probes.registry import probe_function, probed
from tests.conftest import make_ctx
from tests.corpus.builder import Replay, build, env_os

_SEVERITY = {"fail": Status.FAIL, "warn": Status.WARN}

# Import every probe module now, outside any fake file system: a module first imported inside a
# pyfakefs session keeps that session's fake ``os``/``posixpath`` after it ends.
for _spec in probed().values():
    probe_function(_spec)


@dataclass(frozen=True)
class Outcome:
    """What cudadoctor said about one case, and whether that is the expected diagnosis."""

    findings: tuple[Finding, ...]
    missing: tuple[str, ...]  #: expected ``CODE:severity`` not reported as expected
    errors: tuple[str, ...]  #: ``CODE:status`` of every fail/error finding

    @property
    def diagnosed(self) -> bool:
        return not self.missing


def replay(case: dict[str, Any], matrix: CompatMatrix) -> Outcome:
    """Probe the case's machine (built under pyfakefs, nothing real touched) and run every check."""
    machine = build(case)
    with Patcher() as patcher:
        assert patcher.fs is not None
        machine.write("/")
        ctx = make_ctx(env=machine.env, runner=machine.runner, native=machine.native, python=machine.python,
                       machine=machine.machine, system=_system(machine))  # fmt: skip
        facts = collect_facts(ctx)
    # `[check] require`: the `check --require` assertions of a case whose install failed (issue #16 j)
    requirements = tuple(str(r) for r in case.get("check", {}).get("require", ()))
    findings = tuple(run_checks(facts, matrix, requirements=requirements))
    by_code = {f.code: f for f in findings}
    missing = []
    for expect in case.get("expect", []):
        finding = by_code.get(str(expect["code"]))
        wanted = _SEVERITY[str(expect.get("severity", "fail"))]
        if finding is None or finding.status is not wanted or not _has_fix(finding):
            missing.append(f"{expect['code']}:{expect.get('severity', 'fail')}")
    errors = tuple(f"{f.code}:{f.status.value}" for f in findings if f.status in (Status.FAIL, Status.ERROR))
    return Outcome(findings, tuple(missing), errors)


def _system(machine: Replay) -> str:
    """The OS the probes are told they run on: a case on Windows is replayed on a Linux layout, but wheel
    platforms, environment markers and the driver's CUDA table are Windows ones there."""
    return "Windows" if env_os(machine).startswith("Windows") else "Linux"


def _has_fix(finding: Finding) -> bool:
    """A diagnosis counts only with its fix: words, and a command or image where one exists."""
    return finding.remediation is not None and bool(finding.remediation.text)
