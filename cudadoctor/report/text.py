"""The terminal report: one line per category with a mark, details with ``-v``.

Modelled on ``flutter doctor``: ``[✓]`` found, ``[!]`` something could not be read or needs a
look, ``[✗]`` a problem, ``[-]`` not installed. Warnings always show; information lines only with
``-v``. Colour only when the output is a terminal and ``NO_COLOR`` is unset (rich decides).
"""

from __future__ import annotations

import io

from rich.console import Console
from rich.markup import escape

from cudadoctor.model import Facts
from cudadoctor.report.summary import Category, Mark, categories

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


def render_text(facts: Facts, *, verbose: bool = False, color: bool = False, width: int = 100) -> str:
    """The report as text (with ANSI colour codes when ``color``)."""
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
    cats = categories(facts)
    for cat in cats:
        _category(console, cat, verbose)
    console.print()
    warned = [c for c in cats if c.mark is Mark.WARN]
    if warned:
        console.print(
            f"[yellow]![/yellow] Some facts could not be read in {len(warned)} "
            f"categor{'y' if len(warned) == 1 else 'ies'}: "
            + ", ".join(c.title for c in warned)
            + ". Run with -v for the reasons.",
            highlight=False,
        )
    else:
        console.print("Every fact was read. (Compatibility checks are not part of this version yet.)", highlight=False)
    probes = {k: v for k, v in facts.timings.items() if k != "total"}
    if verbose and probes:
        slowest = max(probes, key=lambda k: probes[k])
        total = f"{facts.timings['total']:.3f} s" if "total" in facts.timings else "an unknown time"
        console.print(f"[dim]probes took {total}; slowest: {slowest} {probes[slowest]:.3f} s[/dim]", highlight=False)
    return buffer.getvalue()
