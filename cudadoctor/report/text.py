"""The terminal report: one line per category with a mark, details with ``-v``.

Modelled on ``flutter doctor``: ``[✓]`` found and every check about it passed, ``[?]`` found but a
check could not judge it (the reason is shown), ``[!]`` a warning or something that could not be read,
``[✗]`` a problem, ``[-]`` not installed. Problems and could-not-judge lines always show; information
lines only with ``-v``. Colour only when asked for (the CLI decides from the terminal and ``NO_COLOR``).
"""

from __future__ import annotations

import io

from rich.console import Console
from rich.markup import escape

from cudadoctor.report.document import Report
from cudadoctor.report.options import RenderOptions
from cudadoctor.report.sanitize import terminal
from cudadoctor.report.summary import Category, Mark, categories

__all__ = ["render_text"]

_BOX = {
    Mark.OK: "[green][✓][/green]",
    Mark.UNKNOWN: "[yellow][?][/yellow]",
    Mark.WARN: "[yellow][!][/yellow]",
    Mark.FAIL: "[red][✗][/red]",
    Mark.ABSENT: "[dim][-][/dim]",
}
_BULLET = {"info": "•", "unknown": "[yellow]?[/yellow]", "warn": "[yellow]![/yellow]", "fail": "[red]✗[/red]"}


def _safe(text: str) -> str:
    """Untrusted text for rich: no control character reaches the terminal, no markup is read."""
    return escape(terminal(text))


def _category(console: Console, cat: Category, verbose: bool) -> None:
    console.print(f"{_BOX[cat.mark]} [bold]{_safe(cat.title)}[/bold]: {_safe(cat.headline)}", soft_wrap=True)
    for line in cat.lines:
        if line.level == "info" and not verbose:
            continue
        text = _safe(line.text)
        if verbose and line.source:
            text += f" [dim]({_safe(line.source)})[/dim]"
        console.print(f"    {_BULLET[line.level]} {text}", soft_wrap=True)
        for command in line.commands:
            console.print(f"        $ {_safe(command)}", soft_wrap=True)


def _verdict_line(report: Report) -> str:
    """The closing line: what was found, and how many checks passed, did not apply or could not judge."""
    counts = report.counts
    if counts.errors or counts.warnings:
        affected = len({f.category for f in report.problems})
        mark = "[red]✗[/red]" if counts.errors else "[yellow]![/yellow]"
        where = f"in {affected} categor{'y' if affected == 1 else 'ies'}"
        return f"{mark} cudadoctor found {counts.problems_phrase()} {where} ({counts.phrase()})."
    if counts.unknown:
        return f"[yellow]?[/yellow] No issues found, but not everything could be judged: {counts.phrase()}."
    return f"[green]✓[/green] No issues found: {counts.phrase()}."


def _footer(console: Console, report: Report, cats: list[Category], verbose: bool) -> None:
    unread = [
        c for c in cats if any(line.level == "warn" and line.text.startswith("could not read") for line in c.lines)
    ]
    if unread:
        names = ", ".join(c.title for c in unread)
        console.print(f"[yellow]![/yellow] Some facts could not be read ({names}); run with -v for the reasons.")
    if report.compat_data_as_of is not None and report.findings:
        index = report.index_data_as_of
        extra = f"; package-index data read {index} (cudadoctor update)" if index else ""
        console.print(f"[dim]compatibility data as of {_safe(str(report.compat_data_as_of))}{_safe(extra)}[/dim]")
    probes = {k: v for k, v in report.facts.timings.items() if k != "total"}
    if verbose and probes:
        slowest = _safe(max(probes, key=lambda k: probes[k]))
        total = f"{report.facts.timings['total']:.3f} s" if "total" in report.facts.timings else "an unknown time"
        console.print(f"[dim]probes took {total}; slowest: {slowest} {max(probes.values()):.3f} s[/dim]")


def render_text(report: Report, options: RenderOptions) -> str:
    """The report as text (with ANSI colour codes when ``options.color``)."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=options.width,
        force_terminal=options.color,
        no_color=not options.color,
        color_system="standard" if options.color else None,
        emoji=False,
        highlight=False,
    )
    facts = report.facts
    if options.verbose:
        origin = "a snapshot" if options.from_snapshot else facts.mode
        console.print(
            f"cudadoctor {_safe(facts.tool_version)} — facts gathered {_safe(facts.collected_at)} ({_safe(origin)})"
        )
    else:
        console.print("cudadoctor summary (details and sources: cudadoctor check -v)")
    console.print()
    cats = categories(facts, report.findings)
    for cat in cats:
        _category(console, cat, options.verbose)
    console.print()
    if report.findings:
        console.print(_verdict_line(report))
    _footer(console, report, cats, options.verbose)
    return buffer.getvalue()
