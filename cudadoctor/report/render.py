"""The renderers of ``check``'s report, one per :class:`~cudadoctor.report.Format`, by format.

Each is a pure function ``(Report, RenderOptions) -> str`` in its own module, imported only when its format is
asked for (rich only for text); a test keeps the registry exhaustive.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from cudadoctor.report import Format
from cudadoctor.report.document import Report
from cudadoctor.report.options import RenderOptions

__all__ = ["RENDERERS", "render"]

Renderer = Callable[[Report, RenderOptions], str]

#: format -> (module, function) of its renderer
_WHERE: dict[Format, tuple[str, str]] = {
    Format.TEXT: ("cudadoctor.report.text", "render_text"),
    Format.JSON: ("cudadoctor.report.json", "render_json"),
    Format.GITHUB: ("cudadoctor.report.github", "render_github"),
    Format.MARKDOWN: ("cudadoctor.report.markdown", "render_markdown"),
    Format.SLURM: ("cudadoctor.report.scheduler", "render_slurm"),
    Format.NPD: ("cudadoctor.report.scheduler", "render_npd"),
    Format.HEALTH_JSON: ("cudadoctor.report.scheduler", "render_health_json"),
}


def _lazy(module: str, function: str) -> Renderer:
    def renderer(report: Report, options: RenderOptions) -> str:
        rendered: str = getattr(importlib.import_module(module), function)(report, options)
        return rendered

    renderer.__name__ = function
    return renderer


RENDERERS: dict[Format, Renderer] = {fmt: _lazy(*where) for fmt, where in _WHERE.items()}


def render(report: Report, fmt: Format, options: RenderOptions) -> str:
    """The report in one format."""
    return RENDERERS[fmt](report, options)
