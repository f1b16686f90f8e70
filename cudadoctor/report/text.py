"""The terminal report: one line per category with a mark, details with ``-v``.

Modelled on ``flutter doctor``: ``[✓]`` found, ``[!]`` something could not be read or needs a
look, ``[✗]`` a problem, ``[-]`` not installed. Warnings always show; information lines only with
``-v``. Colour only when the output is a terminal and ``NO_COLOR`` is unset (rich decides).
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from cudadoctor.checks.findings import Finding, Status
from cudadoctor.facts.model import Facts
from cudadoctor.report.summary import Category, Mark, categories

if TYPE_CHECKING:
    from cudadoctor.data import DataDates

__all__ = ["render_text"]

_BOX = {
    Mark.OK: ("[green][✓][/green]", "[✓]"),
    Mark.WARN: ("[yellow][!][/yellow]", "[!]"),
    Mark.FAIL: ("[red][✗][/red]", "[✗]"),
    Mark.ABSENT: ("[dim][-][/dim]", "[-]"),
}
_BULLET = {"info": "•", "warn": "[yellow]![/yellow]", "fail": "[red]✗[/red]"}


def _category(console: Console, cat: Category, verbose: bool) -> None:
    box = _BOX[cat.mark][0]
    console.print(f"{box} [bold]{escape(cat.title)}[/bold]: {escape(cat.headline)}", highlight=False, soft_wrap=True)
    for line in cat.lines:
        if line.level == "info" and not verbose:
            continue
        text = escape(line.text)
        if verbose and line.source:
            text += f" [dim]({escape(line.source)})[/dim]"
        console.print(f"    {_BULLET[line.level]} {text}", highlight=False, soft_wrap=True)
        for command in line.commands:
            console.print(f"        $ {escape(command)}", highlight=False, soft_wrap=True)


def render_text(
    facts: Facts,
    findings: list[Finding] | None = None,
    *,
    verbose: bool = False,
    color: bool = False,
    width: int = 100,
    dates: DataDates | None = None,
) -> str:
    """The report as text (with ANSI colour codes when ``color``); ``dates``: the data's, for the last line."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        force_terminal=color,
        no_color=not color,
        color_system="standard" if color else None,
        emoji=False,
        highlight=False,
    )
    if not verbose:
        console.print("cudadoctor summary (details and sources: cudadoctor check -v)", highlight=False)
    else:
        console.print(
            f"cudadoctor {facts.tool_version} — facts gathered {facts.collected_at} ({facts.mode})", highlight=False
        )
    console.print()
    findings = findings or []
    cats = categories(facts, findings)
    for cat in cats:
        _category(console, cat, verbose)
    console.print()
    failed = [f for f in findings if f.status in (Status.FAIL, Status.ERROR)]
    warned = [f for f in findings if f.status is Status.WARN]
    unread = [
        c for c in cats if any(line.level == "warn" and line.text.startswith("could not read") for line in c.lines)
    ]
    if failed or warned:
        affected = len({f.category for f in failed + warned})
        parts = [f"{len(failed)} error{'s' * (len(failed) != 1)}"] if failed else []
        parts += [f"{len(warned)} warning{'s' * (len(warned) != 1)}"] if warned else []
        mark = "[red]✗[/red]" if failed else "[yellow]![/yellow]"
        console.print(
            f"{mark} cudadoctor found {' and '.join(parts)} in {affected} categor{'y' if affected == 1 else 'ies'}.",
            highlight=False,
        )
    elif findings:
        console.print(f"[green]✓[/green] No issues found ({len(findings)} checks).", highlight=False)
    if unread:
        console.print(
            "[yellow]![/yellow] Some facts could not be read ("
            + ", ".join(c.title for c in unread)
            + "); run with -v for the reasons.",
            highlight=False,
        )
    as_of = dates.compat if dates is not None else None
    if as_of is not None and findings:
        index = dates.index if dates is not None else None
        extra = f"; package-index data read {index} (cudadoctor update)" if index else ""
        console.print(f"[dim]compatibility data as of {as_of}{extra}[/dim]", highlight=False)
    probes = {k: v for k, v in facts.timings.items() if k != "total"}
    if verbose and probes:
        slowest = max(probes, key=lambda k: probes[k])
        total = f"{facts.timings['total']:.3f} s" if "total" in facts.timings else "an unknown time"
        console.print(f"[dim]probes took {total}; slowest: {slowest} {probes[slowest]:.3f} s[/dim]", highlight=False)
    return buffer.getvalue()
