"""The catalogue's own rules, beyond the row types: what makes compat/error_messages.toml usable by ``why``.

The loader checks each record's fields and sources; this checks what only the catalogue as a whole can say:
every pattern compiles, is bounded (no unbounded or nested repeat, so a hostile line cannot stall a search) and
has a literal word a match must contain (the reader's prefilter); every entry's ``example`` is recognised as that
entry (the first that matches a line claims it, so a broader entry placed too early hides a specific one); every
cause, check code and CUDA error code named exists. tests/why/test_catalogue.py runs it on the shipped table.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence

from cudadoctor.data.rows import ErrorCause, ErrorMessage
from cudadoctor.why.matching import recognise, required_word
from cudadoctor.why.reading import from_argument

__all__ = ["catalogue_problems"]

#: Repeats a backtracking engine can blow up on: an unbounded repeat of any character or class, and a repeated
#: group. Counted repeats ({0,40}) of a single character or class are what the catalogue uses instead.
UNBOUNDED = re.compile(r"(?<!\\)(\.[*+]|\\[SsWwDd][*+]|\][*+]|\)[*+])")


def _pattern_problems(message: ErrorMessage) -> list[str]:
    problems = []
    for pattern in message.patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            problems.append(f"{message.id}: pattern {pattern!r} does not compile: {exc}")
            continue
        if UNBOUNDED.search(pattern):
            problems.append(f"{message.id}: pattern {pattern!r} has an unbounded or nested repeat")
        if required_word(pattern) is None:
            problems.append(f"{message.id}: pattern {pattern!r} has no literal word of four characters outside groups")
    return problems


def catalogue_problems(
    messages: Sequence[ErrorMessage],
    causes: Mapping[str, ErrorCause],
    *,
    check_codes: Collection[str],
    cuda_errors: Collection[int],
) -> list[str]:
    """Every problem of the catalogue, each as ``entry: what``; empty when ``why`` can use it."""
    problems: list[str] = []
    for cause in causes.values():
        problems.extend(f"cause {cause.id}: no check {code}" for code in cause.checks if code not in check_codes)
    for message in messages:
        found_in_patterns = _pattern_problems(message)
        problems.extend(found_in_patterns)
        problems.extend(f"{message.id}: no cause {c!r}" for c in message.causes if c not in causes)
        if message.cuda_error is not None and message.cuda_error not in cuda_errors:
            problems.append(f"{message.id}: CUDA error {message.cuda_error} is not in compat/cuda_errors.toml")
        if any("does not compile" in p for p in found_in_patterns):
            continue
        found = [m.message.id for m in recognise(from_argument(message.example).lines, messages)]
        if found[:1] != [message.id]:
            problems.append(f"{message.id}: its example is recognised as {found[:1] or 'nothing'}")
    return problems
