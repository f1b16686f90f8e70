"""The node's health verdict for schedulers: one line with stable codes, an exit status, and a JSON snapshot.

``check --format slurm`` and ``--format npd`` print one line and exit with the status both consumers can act on:

====  ==========  =================================================================================
exit  status      meaning
====  ==========  =================================================================================
 0    ok          no node-level check found a problem (at the ``--fail-on`` level)
 1    problem     a node-level check found one: the line names its code first
 2    unknown     nothing failed, but a node-level check could not judge (or GPU health was not examined)
 3    —           cudadoctor itself failed (read as "unknown" by node-problem-detector, like 2)
====  ==========  =================================================================================

node-problem-detector's custom plugins speak exactly this: exit 0 OK, 1 NonOK, any other status Unknown, the
message read from stdout and cut to ``max_output_length``, 80 bytes by default
(https://github.com/kubernetes/node-problem-detector/blob/master/pkg/custompluginmonitor/types/config.go,
``.../plugin/plugin.go``), so the ``npd`` line is at most 80 bytes with the codes before the words.
Slurm runs ``HealthCheckProgram`` as root and leaves every action to it ("execute scontrol update
NodeName=foo State=drain Reason=..." to drain, https://slurm.schedmd.com/slurm.conf.html); the ``slurm``
line is meant to be that Reason, prefixed ``cudadoctor:`` the way NHC prefixes its own (README shows the
wrapper). ``--format health-json`` is the same verdict with the per-GPU counters, for scraping.

Only checks that judge the node count: the GPU health category (CD150-CD199), the driver's user-space
libraries against its kernel module (CD101) and the driver against the GPUs' architecture (CD114). A
Python environment that does not fit is no reason to drain a node.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from cudadoctor.checks.findings import Finding, Status
from cudadoctor.record import record
from cudadoctor.report.document import FAIL_ON_LEVELS, Report
from cudadoctor.report.options import RenderOptions

__all__ = [
    "NODE_CODES",
    "NPD_MAX",
    "NodeVerdict",
    "node_verdict",
    "render_health_json",
    "render_npd",
    "render_slurm",
]

#: Code prefixes of the checks that judge the node rather than a Python environment.
NODE_CODES = ("CD15", "CD16", "CD17", "CD18", "CD19", "CD101", "CD114")
#: node-problem-detector's default max_output_length (bytes of stdout kept as the condition's message).
NPD_MAX = 80
HEALTH_KIND = "cudadoctor-node-health"
HEALTH_SCHEMA = 1


@record
class NodeVerdict:
    """What the node-level checks say, as a scheduler consumes it."""

    status: str  #: ok | problem | unknown
    exit_code: int  #: 0 | 1 | 2
    problems: tuple[Finding, ...] = ()  #: failing at the --fail-on level, worst first
    warnings: tuple[Finding, ...] = ()  #: problems below that level (reported, not failing)
    unknown: tuple[Finding, ...] = ()
    not_examined: str | None = None  #: why GPU health was not examined, when it was asked for and not

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(f.code for f in (self.problems or self.unknown))


def _node(finding: Finding) -> bool:
    return finding.code.startswith(NODE_CODES)


def node_verdict(report: Report) -> NodeVerdict:
    """The verdict over the node-level findings of a report, at the report's ``--fail-on`` level."""
    node = [f for f in report.findings if _node(f)]
    failing = FAIL_ON_LEVELS.get(report.fail_on, FAIL_ON_LEVELS["error"])
    problems = sorted((f for f in node if f.status in failing), key=lambda f: (-f.status.rank, f.code))
    warnings = tuple(f for f in node if f.status.is_problem and f.status not in failing)
    unknown = tuple(f for f in node if f.status is Status.UNKNOWN)
    health_asked = any(f.code.startswith(NODE_CODES[:5]) for f in node)
    not_examined = None
    if health_asked and report.facts.health is None:
        not_examined = "GPU health not examined: NVML is not available (no driver or no nvidia-ml library)"
    if problems:
        return NodeVerdict("problem", 1, tuple(problems), warnings, unknown, not_examined)
    if unknown or not_examined:
        return NodeVerdict("unknown", 2, (), warnings, unknown, not_examined)
    return NodeVerdict("ok", 0, (), warnings, (), None)


def _first_line(text: str) -> str:
    return " ".join(text.split())


def _words(verdict: NodeVerdict) -> str:
    """What the first finding of the verdict says, in one line."""
    if verdict.problems:
        return _first_line(verdict.problems[0].message)
    if verdict.unknown:
        return "could not judge: " + _first_line(verdict.unknown[0].reason or "")
    if verdict.not_examined:
        return verdict.not_examined
    if verdict.warnings:
        return f"warning {verdict.warnings[0].code}: " + _first_line(verdict.warnings[0].message)
    return "GPU health and driver checks passed"


def reason_line(verdict: NodeVerdict, limit: int | None = None) -> str:
    """``cudadoctor: FAIL CD151,CD153: the driver asks for recovery: …`` — the codes before the words, so
    a cut keeps them; ``limit`` counts UTF-8 bytes."""
    label = {"ok": "OK", "problem": "FAIL", "unknown": "UNKNOWN"}[verdict.status]
    codes = ",".join(verdict.codes)
    line = f"cudadoctor: {label}{' ' + codes if codes else ''}: {_words(verdict)}"
    if limit is not None and len(line.encode()) > limit:  # node-problem-detector cuts bytes, not characters
        line = line.encode()[: limit - 3].decode("utf-8", "ignore") + "..."
    return line


def render_slurm(report: Report, options: RenderOptions) -> str:
    """One line for Slurm's HealthCheckProgram: the drain Reason when the exit status is 1."""
    return reason_line(node_verdict(report)) + "\n"


def render_npd(report: Report, options: RenderOptions) -> str:
    """One line of at most 80 bytes for a node-problem-detector custom plugin."""
    return reason_line(node_verdict(report), NPD_MAX) + "\n"


def _finding(f: Finding) -> dict[str, Any]:
    fix = f.remediation
    return {
        "code": f.code,
        "name": f.name,
        "status": f.status.value,
        "message": f.message,
        "reason": f.reason,
        "evidence": dict(f.evidence),
        "action": fix.text if fix else None,
        "commands": list(fix.commands) if fix else [],
    }


def _counters(report: Report) -> dict[str, Any]:
    health = report.facts.health
    if health is None:
        return {"gpus": [], "host": None, "nvml_error": None}
    gpus = [{k: v for k, v in dataclasses.asdict(g).items() if k not in ("samples", "gpm")} for g in health.gpus]
    host = dataclasses.asdict(health.host)
    return {"gpus": gpus, "host": host, "nvml_error": health.nvml_error, "driver_version": health.driver_version}


def render_health_json(report: Report, options: RenderOptions) -> str:
    """The verdict with its findings and the per-GPU health counters, for a scraper."""
    verdict = node_verdict(report)
    document = {
        "kind": HEALTH_KIND,
        "schema_version": HEALTH_SCHEMA,
        "status": verdict.status,
        "exit_code": verdict.exit_code,
        "reason": reason_line(verdict),
        "codes": list(verdict.codes),
        "fail_on": report.fail_on,
        "problems": [_finding(f) for f in verdict.problems],
        "warnings": [_finding(f) for f in verdict.warnings],
        "unknown": [_finding(f) for f in verdict.unknown],
        "not_examined": verdict.not_examined,
        "collected_at": report.facts.collected_at,
        **_counters(report),
    }
    return json.dumps(document, indent=2, sort_keys=True, default=str) + "\n"
