"""The terminal report: one line per category with a mark, details with ``-v``.

Modelled on ``flutter doctor``: ``[✓]`` found and every check about it passed, ``[?]`` found but a
check could not judge it (the reason is shown), ``[!]`` a warning or something that could not be read,
``[✗]`` a problem, ``[-]`` not installed. Problems and could-not-judge lines always show; information
lines only with ``-v``. Colour only when asked for (the CLI decides from the terminal and ``NO_COLOR``).

Plain lines and five ANSI SGR styles need no terminal library: importing and driving rich's Console
cost ~45 ms of a 0.2 s ``check`` (measured with ``python -X importtime`` on a real H200). On a terminal
(``options.width``) a finding's text wraps at its width under its own indent; a command line is never
wrapped, so it stays copyable, and nothing is wrapped for a file or a pipe. Long values are folded in ``-v``
(a 3 KB ``NVIDIA_REQUIRE_CUDA`` would fill the screen).
"""

from __future__ import annotations

from cudadoctor.report.document import Report
from cudadoctor.report.options import RenderOptions
from cudadoctor.report.sanitize import terminal
from cudadoctor.report.summary import Category, Mark, categories

__all__ = ["fold", "render_text"]

#: ANSI SGR codes of the five styles used (ECMA-48,
#: https://ecma-international.org/publications-and-standards/standards/ecma-48/).
_SGR = {"green": "32", "yellow": "33", "red": "31", "dim": "2", "bold": "1"}

_BOX = {
    Mark.OK: ("[✓]", "green"),
    Mark.UNKNOWN: ("[?]", "yellow"),
    Mark.WARN: ("[!]", "yellow"),
    Mark.FAIL: ("[✗]", "red"),
    Mark.ABSENT: ("[-]", "dim"),
}
_BULLET = {"info": ("•", None), "unknown": ("?", "yellow"), "warn": ("!", "yellow"), "fail": ("✗", "red")}

#: Characters of a value shown in ``-v`` before it is folded.
FOLD_AT = 240


def fold(text: str, limit: int = FOLD_AT) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out (the JSON report has it whole)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters; --format json has all)"


class _Lines:
    """Lines of the report, styled only when colour is on, wrapped only at a terminal's width."""

    def __init__(self, color: bool, width: int | None = None) -> None:
        self.color = color
        self.width = width
        self.lines: list[str] = []

    def style(self, text: str, style: str | None) -> str:
        if not self.color or style is None:
            return text
        return f"\x1b[{_SGR[style]}m{text}\x1b[0m"

    def add(self, text: str = "") -> None:
        self.lines.append(text)

    def add_wrapped(self, lead: str, shown: int, text: str, tail: str = "", indent: int | None = None) -> None:
        """``lead`` (``shown`` columns on screen, escape codes aside), then ``text`` and ``tail`` (styled), wrapped
        at the terminal's width under ``indent`` columns (the lead's by default): at spaces only, so no path or
        version is cut."""
        if self.width is None or shown + len(text) + len(tail) <= self.width:
            self.lines.append(f"{lead}{text}{tail}")
            return
        import textwrap  # only a terminal narrower than a line pays for it

        hang = shown if indent is None else indent
        first = textwrap.wrap(text, max(self.width - shown, 20), break_long_words=False, break_on_hyphens=False)
        rest = " ".join(text.split()[len(" ".join(first[:1]).split()) :]) if first else ""
        more = textwrap.wrap(rest, max(self.width - hang, 20), break_long_words=False, break_on_hyphens=False)
        self.lines.append(lead + (first[0] if first else ""))
        self.lines.extend(" " * hang + part for part in more)
        if tail:
            self.lines[-1] += tail

    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)


def _category(out: _Lines, cat: Category, verbose: bool) -> None:
    box, color = _BOX[cat.mark]
    title = terminal(cat.title)
    lead = f"{out.style(box, color)} {out.style(title, 'bold')}: "
    out.add_wrapped(lead, len(box) + len(title) + 3, terminal(cat.headline), indent=4)
    for line in cat.lines:
        if line.level == "info" and not verbose:
            continue
        text = terminal(fold(line.text) if verbose else line.text)
        tail = " " + out.style(f"({terminal(fold(line.source))})", "dim") if verbose and line.source else ""
        bullet, style = _BULLET[line.level]
        out.add_wrapped(f"    {out.style(bullet, style)} ", 6, text, tail)
        for command in line.commands:
            out.add(f"        $ {terminal(command)}")


def _verdict_line(out: _Lines, report: Report) -> str:
    """The closing line: what was found, and how many checks passed, did not apply or could not judge."""
    counts = report.counts
    if counts.errors or counts.warnings:
        affected = len({f.category for f in report.problems})
        mark = out.style("✗", "red") if counts.errors else out.style("!", "yellow")
        where = f"in {affected} categor{'y' if affected == 1 else 'ies'}"
        return f"{mark} cudadoctor found {counts.problems_phrase()} {where} ({counts.phrase()})."
    if counts.unknown:
        return f"{out.style('?', 'yellow')} No issues found, but not everything could be judged: {counts.phrase()}."
    return f"{out.style('✓', 'green')} No issues found: {counts.phrase()}."


def _footer(out: _Lines, report: Report, cats: list[Category], verbose: bool) -> None:
    unread = [
        c for c in cats if any(line.level == "warn" and line.text.startswith("could not read") for line in c.lines)
    ]
    if unread:
        names = ", ".join(c.title for c in unread)
        out.add(f"{out.style('!', 'yellow')} Some facts could not be read ({names}); run with -v for the reasons.")
    if report.compat_data_as_of is not None and report.findings:
        index = report.index_data_as_of
        extra = f"; package-index data read {index} (cudadoctor update)" if index else ""
        out.add(out.style(terminal(f"compatibility data as of {report.compat_data_as_of}{extra}"), "dim"))
    probes = {k: v for k, v in report.facts.timings.items() if k != "total"}
    if verbose and probes:
        slowest = max(probes, key=lambda k: probes[k])
        total = f"{report.facts.timings['total']:.3f} s" if "total" in report.facts.timings else "an unknown time"
        out.add(out.style(terminal(f"probes took {total}; slowest: {slowest} {probes[slowest]:.3f} s"), "dim"))


def render_text(report: Report, options: RenderOptions) -> str:
    """The report as text (with ANSI colour codes when ``options.color``)."""
    out = _Lines(options.color, options.width)
    facts = report.facts
    if options.verbose:
        origin = "a snapshot" if options.from_snapshot else facts.mode
        out.add(terminal(f"cudadoctor {facts.tool_version} — facts gathered {facts.collected_at} ({origin})"))
    else:
        out.add_wrapped("", 0, "cudadoctor summary (details and sources: cudadoctor check -v)")
    out.add()
    cats = categories(facts, report.findings)
    for cat in cats:
        _category(out, cat, options.verbose)
    out.add()
    if report.findings:
        mark, _, verdict = _verdict_line(out, report).partition(" ")
        out.add_wrapped(mark + " ", 2, verdict)
    _footer(out, report, cats, options.verbose)
    return out.text()
