"""Recognising an error: the catalogue's patterns searched in the lines of the text.

Entries are tried in the catalogue's order (the more specific first) and the first entry that matches a line
claims it, so ``undefined symbol: __nvJitLinkComplete`` is the nvJitLink entry and not the generic ld.so one.
Patterns are searched case-insensitively in lines of at most :data:`~cudadoctor.why.reading.LINE_CHARS`
characters; the catalogue's test keeps them free of nested and unbounded quantifiers, so a search is linear in
the line and a hostile line cannot stall it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from cudadoctor.data.rows import ErrorMessage
from cudadoctor.record import record

__all__ = ["MAX_LINES_SHOWN", "Match", "compiled", "error_lines", "recognise", "required_word"]

#: Lines kept per recognised message (a log can repeat one warning thousands of times).
MAX_LINES_SHOWN = 3


@record
class Match:
    """One catalogue entry recognised in the text, with the lines that show it."""

    message: ErrorMessage
    lines: tuple[tuple[int, str], ...]  #: (1-based line number, the line), at most MAX_LINES_SHOWN
    count: int  #: lines this entry claimed in all
    group: str | None = None  #: the pattern's first group where it has one (an Xid code)


@functools.cache
def compiled(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.IGNORECASE) for p in patterns)


def recognise(lines: Sequence[str], messages: Sequence[ErrorMessage]) -> tuple[Match, ...]:
    """The entries recognised in ``lines``, in the order their first line appears.

    Each pattern has a literal word it cannot match without (:func:`required_word`, kept so by the catalogue's
    test): only lines holding that word are searched, so a long log costs one substring search per pattern.
    """
    lowered = [line.lower() for line in lines]
    whole = "\n".join(lowered)
    claims: dict[int, tuple[int, str | None]] = {}  # line index -> (catalogue index of its entry, group)
    for rank, message in enumerate(messages):
        for pattern, word in zip(compiled(message.patterns), _words(message.patterns), strict=True):
            if word not in whole:
                continue
            for index, low in enumerate(lowered):
                if word not in low or claims.get(index, (len(messages),))[0] <= rank:
                    continue
                hit = pattern.search(lines[index])
                if hit is not None:
                    claims[index] = (rank, hit.group(1) if hit.groups() else None)
    found: dict[int, tuple[list[tuple[int, str]], list[int], list[str | None]]] = {}
    for index in sorted(claims):
        rank, group = claims[index]
        shown, count, first = found.setdefault(rank, ([], [0], [None]))
        if len(shown) < MAX_LINES_SHOWN:
            shown.append((index + 1, lines[index]))
        count[0] += 1
        if first[0] is None:
            first[0] = group
    return tuple(Match(messages[rank], tuple(shown), n[0], g[0]) for rank, (shown, n, g) in found.items())


#: A line that reads like an error, for an error the catalogue does not know (bounded: literal words only).
_ERROR_LIKE = re.compile(r"(error|exception)\b|\b(failed|fatal|cannot|could not|unable to|not found)\b", re.IGNORECASE)


def error_lines(lines: Sequence[str], limit: int = MAX_LINES_SHOWN) -> tuple[tuple[int, str], ...]:
    """The last ``limit`` lines that read like an error (the end of a log is where a job failed)."""
    found: list[tuple[int, str]] = []
    for index in range(len(lines) - 1, -1, -1):
        if _ERROR_LIKE.search(lines[index]):
            found.append((index + 1, lines[index]))
            if len(found) == limit:
                break
    return tuple(reversed(found))


@functools.cache
def _words(patterns: tuple[str, ...]) -> tuple[str, ...]:
    return tuple((required_word(p) or "").lower() for p in patterns)


_LITERAL = re.compile(r"(?:[A-Za-z0-9_ '`:/,;=<>\"!@#%&~-]|\\[.()\[\]{}|*+?$^\\ ])+")


def required_word(pattern: str) -> str | None:
    """The longest run of plain characters a match of ``pattern`` must contain (outside any group or class), or
    None when it has none of at least four characters, or a top-level alternation."""
    depth = 0
    outside = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            escaped = pattern[i + 1]
            plain = depth == 0 and not escaped.isalnum()  # \. is a dot; \d, \s, \x27 are classes or codes
            outside.append(pattern[i : i + 2] if plain else "\x00")
            i += 4 if escaped == "x" else 2
            continue
        if char == "[":  # a class: skip to its end (a ] first in it, or after ^, is a member)
            i += 2 if pattern[i + 1 : i + 2] == "^" else 1
            i += 1 if pattern[i : i + 1] == "]" else 0
            while i < len(pattern) and pattern[i] != "]":
                i += 2 if pattern[i] == "\\" else 1
            outside.append("\x00")
        elif char == "{":  # a counted repeat: its numbers are no part of the text
            outside.append("{")
            i = pattern.find("}", i)
            if i < 0:
                return None
        elif char in "()":
            depth += 1 if char == "(" else -1
            outside.append("\x00")
        else:
            outside.append(char if depth == 0 else "\x00")
        i += 1
    text = "".join(outside)
    if "|" in text:
        return None
    runs = _LITERAL.findall(text)
    best = max(runs, key=len, default="")
    # A run followed by a quantifier is not required in full: drop its last character.
    end = text.find(best) + len(best)
    if end < len(text) and text[end] in "?*{":
        best = best[:-1]
    word = re.sub(r"\\(.)", r"\1", best).strip()
    return word if len(word) >= 4 else None
