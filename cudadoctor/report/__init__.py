"""Reports: the facts (and, later, findings) arranged for people or machines.

Renderers are pure: they take the report and return text. The CLI writes it out.
"""

from __future__ import annotations

import enum

__all__ = ["SCHEDULER_FORMATS", "Format"]


class Format(str, enum.Enum):
    """Output formats of ``cudadoctor check``."""

    TEXT = "text"
    JSON = "json"
    GITHUB = "github"
    MARKDOWN = "markdown"
    SLURM = "slurm"  #: one line for Slurm's HealthCheckProgram (exit 0 ok, 1 problem, 2 unknown)
    NPD = "npd"  #: one line of <= 80 bytes for a node-problem-detector custom plugin (same exit codes)
    HEALTH_JSON = "health-json"  #: the node's health verdict and counters as JSON (same exit codes)


#: Formats whose exit status is the node's health verdict (cudadoctor.report.scheduler), not the whole report's.
SCHEDULER_FORMATS = frozenset({Format.SLURM, Format.NPD, Format.HEALTH_JSON})
