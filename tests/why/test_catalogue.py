"""compat/error_messages.toml: every entry is sourced, safe to search and recognises its own example."""

from __future__ import annotations

import re
import time

import pytest

from cudadoctor.checks import ALL_CHECKS
from cudadoctor.data import CompatMatrix
from cudadoctor.data.load import load_table
from cudadoctor.why.matching import compiled, recognise, required_word
from cudadoctor.why.reading import LINE_CHARS, from_argument

MATRIX = CompatMatrix(cache_dir=False)
MESSAGES = MATRIX.error_messages
#: Repeats that make a backtracking engine blow up: an unbounded repeat, and a repeat inside a repeated group.
UNBOUNDED = re.compile(r"(?<!\\)(\.\*|\.\+|\\S\*|\\S\+|\\w\*|\\w\+|\)[*+])")


def test_the_table_validates_and_is_large() -> None:
    load_table("error_messages", validate=True)
    assert len(MESSAGES) >= 80


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: m.id)
def test_entry_is_sourced_and_links_what_exists(message) -> None:  # type: ignore[no-untyped-def]
    assert message.sources and all(s in MATRIX.error_sources for s in message.sources)
    assert message.causes and all(c in MATRIX.error_causes for c in message.causes)
    if message.cuda_error is not None:
        assert message.cuda_error in {e.code for e in MATRIX.cuda_errors}


def test_every_cause_names_checks_that_exist() -> None:
    for cause in MATRIX.error_causes.values():
        assert all(code in ALL_CHECKS for code in cause.checks), cause.id
        assert cause.decide


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: m.id)
def test_patterns_are_bounded_and_have_a_required_word(message) -> None:  # type: ignore[no-untyped-def]
    for pattern in message.patterns:
        assert not UNBOUNDED.search(pattern), pattern
        assert required_word(pattern) is not None, pattern


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: m.id)
def test_example_is_recognised_as_its_own_entry(message) -> None:  # type: ignore[no-untyped-def]
    found = recognise(from_argument(message.example).lines, MESSAGES)
    assert [m.message.id for m in found][:1] == [message.id]


def test_required_word_is_what_a_match_must_contain() -> None:
    assert required_word(r"NVRM: Xid \(PCI:[^)]{0,40}\): (\d{1,3})") == "NVRM: Xid (PCI:"
    assert required_word(r"couldn\x27t communicate with the NVIDIA driver") == "t communicate with the NVIDIA driver"
    assert required_word(r"colou?r of it") == "r of it"
    assert required_word(r"this|that") is None
    assert required_word(r"ab\d+") is None


@pytest.mark.parametrize(
    "hostile",
    [
        "a" * (1 << 20),
        "undefined symbol: _ZN" + "3c10" * (1 << 18),
        "NVRM: Xid (PCI:" + "(" * (1 << 20),
        ("lib" + "cu" * 30 + ".so" + ".1" * 50 + " ") * 5000,
        "CUDA driver version is insufficient " * 30000,
    ],
    ids=["letters", "symbol", "xid", "libraries", "repeats"],
)
def test_a_hostile_megabyte_line_is_matched_fast(hostile: str) -> None:
    text = from_argument(hostile)
    assert all(len(line) <= LINE_CHARS for line in text.lines)
    start = time.perf_counter()
    recognise(text.lines, MESSAGES)
    # and each pattern on the whole megabyte, uncut: bounded repeats keep it linear
    for message in MESSAGES:
        for pattern in compiled(message.patterns):
            pattern.search(hostile)
    assert time.perf_counter() - start < 5.0
