"""compat/error_messages.toml: every entry is sourced, safe to search and recognises its own example."""

from __future__ import annotations

import os
import re
import time
from dataclasses import replace

import pytest

from cudadoctor.checks import ALL_CHECKS
from cudadoctor.data import CompatMatrix
from cudadoctor.data.load import load_table
from cudadoctor.why.catalogue import catalogue_problems
from cudadoctor.why.matching import compiled, recognise, required_word
from cudadoctor.why.reading import LINE_CHARS, from_argument

MATRIX = CompatMatrix(cache_dir=False)
MESSAGES = MATRIX.error_messages


def test_the_table_validates_and_is_large() -> None:
    load_table("error_messages", validate=True)
    assert len(MESSAGES) >= 80


def test_the_catalogue_has_no_problem() -> None:
    codes = {e.code for e in MATRIX.cuda_errors}
    assert catalogue_problems(MESSAGES, MATRIX.error_causes, check_codes=ALL_CHECKS, cuda_errors=codes) == []


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: m.id)
def test_entry_is_sourced(message) -> None:  # type: ignore[no-untyped-def]
    assert message.sources and all(s in MATRIX.error_sources for s in message.sources)
    assert all(MATRIX.error_sources[s].startswith("https://") for s in message.sources)


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        (r"CUDA error: .*", "unbounded"),
        (r"(undefined symbol: \w+)+", "unbounded"),
        (r"\w+ failed", "unbounded"),
        (r"a|b", "no literal word"),
        (r"broken (", "does not compile"),
    ],
)
def test_an_unsafe_pattern_is_a_problem(pattern: str, problem: str) -> None:
    entry = replace(MESSAGES[0], patterns=(pattern,))
    found = catalogue_problems([entry], MATRIX.error_causes, check_codes=ALL_CHECKS, cuda_errors={35})
    assert any(problem in p for p in found), found


def test_a_specific_entry_behind_a_broader_one_is_a_problem() -> None:
    broad = replace(MESSAGES[0], id="broad", patterns=("CUDA error",), example="CUDA error: x")
    specific = replace(MESSAGES[0], id="specific", patterns=("CUDA error: x",), example="CUDA error: x")
    found = catalogue_problems([broad, specific], MATRIX.error_causes, check_codes=ALL_CHECKS, cuda_errors={35})
    assert found == ["specific: its example is recognised as ['broad']"]


def test_required_word_is_what_a_match_must_contain() -> None:
    assert required_word(r"NVRM: Xid \(PCI:[^)]{0,40}\): (\d{1,3})") == "NVRM: Xid (PCI:"
    assert required_word(r"couldn\x27t communicate with the NVIDIA driver") == "t communicate with the NVIDIA driver"
    assert required_word(r"colou?r of it") == "r of it"
    assert required_word(r"this|that") is None
    assert required_word(r"ab\d+") is None


HOSTILE = {
    "letters": "a" * (1 << 20),
    "symbol": "undefined symbol: _ZN" + "3c10" * (1 << 18),
    "xid": "NVRM: Xid (PCI:" + "(" * (1 << 20),
    "libraries": ("lib" + "cu" * 30 + ".so" + ".1" * 50 + " ") * 5000,
    "repeats": "CUDA driver version is insufficient " * 30000,
}


@pytest.mark.parametrize("hostile", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_megabyte_is_recognised_fast(hostile: str) -> None:
    # as one line (cut to LINE_CHARS), and as a megabyte of lines that each hold the patterns' words
    one = from_argument(hostile)
    many = from_argument("\n".join(hostile[i : i + LINE_CHARS] for i in range(0, len(hostile), LINE_CHARS)))
    assert all(len(line) <= LINE_CHARS for line in (*one.lines, *many.lines))
    start = time.perf_counter()
    recognise(one.lines, MESSAGES)
    recognise(many.lines, MESSAGES)
    assert time.perf_counter() - start < 5.0


@pytest.mark.slow
@pytest.mark.parametrize("hostile", HOSTILE.values(), ids=HOSTILE.keys())
def test_every_pattern_is_linear_on_an_uncut_hostile_megabyte(hostile: str) -> None:
    # the cut is not what keeps a search fast: the bounded patterns are (a nested repeat would take hours here)
    for message in MESSAGES:
        for pattern in compiled(message.patterns):
            start = time.perf_counter()
            pattern.search(hostile)
            assert time.perf_counter() - start < 2.0, (message.id, pattern.pattern)


def test_the_readme_counts_the_catalogue() -> None:
    readme = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "README.md")
    with open(readme, encoding="utf-8") as handle:
        text = handle.read()
    found = re.search(r"error_messages\.toml`: (\d+) messages .{0,400}?grouped into (\d+) families", text, re.DOTALL)
    assert found, "the README lost its sentence on the catalogue's size"
    assert (int(found.group(1)), int(found.group(2))) == (len(MESSAGES), len(MATRIX.error_causes))
