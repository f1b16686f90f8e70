"""The renderers of ``check``'s report, one per :class:`~cudadoctor.report.Format`, by format.

Each is a pure function ``(Report, RenderOptions) -> str``; a test keeps the registry exhaustive.
"""

from __future__ import annotations

from collections.abc import Callable

from cudadoctor.report import Format
from cudadoctor.report.document import Report
from cudadoctor.report.options import RenderOptions

__all__ = ["RENDERERS", "render"]

Renderer = Callable[[Report, RenderOptions], str]


def _text(report: Report, options: RenderOptions) -> str:
    from cudadoctor.report.text import render_text  # rich is imported only for the text format

    return render_text(report, options)


def _json(report: Report, options: RenderOptions) -> str:
    from cudadoctor.report.json import render_json

    return render_json(report, options)


def _github(report: Report, options: RenderOptions) -> str:
    from cudadoctor.report.github import render_github

    return render_github(report, options)


def _markdown(report: Report, options: RenderOptions) -> str:
    from cudadoctor.report.markdown import render_markdown

    return render_markdown(report, options)


def _slurm(report: Report, options: RenderOptions) -> str:
    from cudadoctor.report.scheduler import render_slurm

    return render_slurm(report, options)


def _npd(report: Report, options: RenderOptions) -> str:
    from cudadoctor.report.scheduler import render_npd

    return render_npd(report, options)


def _health_json(report: Report, options: RenderOptions) -> str:
    from cudadoctor.report.scheduler import render_health_json

    return render_health_json(report, options)


RENDERERS: dict[Format, Renderer] = {
    Format.TEXT: _text,
    Format.JSON: _json,
    Format.GITHUB: _github,
    Format.MARKDOWN: _markdown,
    Format.SLURM: _slurm,
    Format.NPD: _npd,
    Format.HEALTH_JSON: _health_json,
}


def render(report: Report, fmt: Format, options: RenderOptions) -> str:
    """The report in one format."""
    return RENDERERS[fmt](report, options)
