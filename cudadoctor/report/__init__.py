"""Reports: the facts (and, later, findings) arranged for people or machines.

Renderers are pure: they take the report and return text. The CLI writes it out.
"""

from __future__ import annotations

import enum

__all__ = ["Format"]


class Format(str, enum.Enum):
    """Output formats of ``cudadoctor check``."""

    TEXT = "text"
    JSON = "json"
    GITHUB = "github"
    MARKDOWN = "markdown"
