"""facts.requires.name_and_specifier reads a Requires-Dist line as packaging's Requirement does, or declines.

The lines: every Requires-Dist of the corpus's real packages (tests/corpus, each from the package index's metadata
of that release), of the fixtures, and forms PEP 508 allows that the light reader must decline or read alike.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tomllib
from hypothesis import given
from hypothesis import strategies as st
from packaging.requirements import InvalidRequirement, Requirement

from cudadoctor.facts.names import canonical_name
from cudadoctor.facts.requires import name_and_specifier, read_requirement

TESTS = Path(__file__).parent


def _corpus_lines() -> set[str]:
    lines: set[str] = set()
    for case in TESTS.glob("corpus/*/*/case.toml"):
        text = case.read_text(encoding="utf-8")
        lines.update(re.findall(r"^Requires-Dist: (.+)$", text, re.MULTILINE))
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            continue
        stack: list[object] = [data]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                stack.extend(item.values())
                if isinstance(item.get("requires"), list):
                    lines.update(x for x in item["requires"] if isinstance(x, str))
            elif isinstance(item, list):
                stack.extend(item)
    for path in TESTS.glob("fixtures/**/METADATA"):
        lines.update(
            re.findall(r"^Requires-Dist: (.+)$", path.read_text(encoding="utf-8", errors="replace"), re.MULTILINE)
        )
    return lines


REAL = sorted(_corpus_lines())

TRICKY = [
    "torch==2.5.1",
    "nvidia-nccl-cu12 (==2.21.5)",
    "nvidia-cudnn-cu12 (>=9.1,<10); platform_system == 'Linux'",
    "Jinja2",
    'triton==3.1.0; platform_system == "Linux" and platform_machine == "x86_64" and python_version < "3.13"',
    "jax-cuda12-plugin[with-cuda] <=0.6.0 , >=0.6.0 ; extra == 'cuda12'",
    "xformers[dev]==0.0.28.post3",
    "flash_attn.tools>=2",
    "torch @ https://download.pytorch.org/whl/cu121/torch-2.1.0.whl",
    "torch (>=2.0; python_version>'3')",
    "torch>=2.0,",
    "torch>=",
    "torch=2.0",
    "torch==2.*",
    "torch===2.0.0",
    "torch~=2.0",
    "torch!=2.0.1,>=2.0",
    "-torch==2",
    "torch_==2",
    "torch[a b]==2",
    "torch[]==2",
    "torch==2.0+cu121",
    "torch == 1.0.0.dev1 ",
    "torch==v2",
    "torch<=2.0.0rc1",
    "tørch==2",
    "",
    " ",
]


def _same(line: str) -> None:
    """Declined, or read as Requirement reads it. The one part the light reader does not read is the marker after
    ``;`` (the probe kept only lines whose marker it evaluated, and an unmet line is parsed again in full): where
    Requirement refuses only the marker, the line before ``;`` must read alike."""
    read = name_and_specifier(line)
    if read is None:
        return  # declined: the caller parses it with Requirement
    try:
        req = Requirement(line)
    except InvalidRequirement:
        assert ";" in line, f"{line!r}: read as {read} but Requirement refuses it"
        req = Requirement(line.partition(";")[0])
    assert read == (canonical_name(req.name), req.specifier), line


def test_the_real_lines_are_many_and_all_read_alike() -> None:
    assert len(REAL) > 150
    read = [line for line in REAL if name_and_specifier(line) is not None]
    assert len(read) > 0.9 * len(REAL)  # the common form is the form: the light reader takes nearly all
    for line in REAL:
        _same(line)


@pytest.mark.parametrize("line", TRICKY)
def test_every_tricky_form_is_read_alike_or_declined(line: str) -> None:
    _same(line)


@pytest.mark.parametrize("line", [*TRICKY, "torch @ https://x/torch.whl", "torch=2.0", "-torch==2", ""])
def test_read_requirement_takes_every_form_requirement_takes(line: str) -> None:
    """The light reader where it reads, Requirement where it declines: one answer for any line."""
    try:
        req = Requirement(line)
    except InvalidRequirement:
        req = None
    read = read_requirement(line)
    if req is None:
        assert read is None or ";" in line, line  # only a refused marker may leave the light reading standing
    else:
        assert read == (canonical_name(req.name), req.specifier), line


def test_forms_it_must_decline() -> None:
    for line in ("torch @ https://x/torch.whl", "torch>=2.0,", "torch=2.0", "torch[a b]==2", "-torch==2", ""):
        assert name_and_specifier(line) is None, line


_PIECES = st.sampled_from(
    [
        "torch",
        "nvidia-cudnn-cu12",
        "a",
        "A.b_c",
        "==",
        ">=",
        "<",
        "~=",
        "!=",
        "===",
        "2",
        "2.0",
        "2.*",
        "1.0rc1",
        "+cu121",
        ",",
        " ",
        "(",
        ")",
        "[",
        "]",
        ";",
        "extra == 'x'",
        "@",
        "x",
        ".",
        "-",
        "_",
        "*",
        "'",
        '"',
    ]
)


@given(st.lists(_PIECES, max_size=9).map("".join))
def test_any_line_is_read_alike_or_declined(line: str) -> None:
    _same(line)


def test_checking_the_real_h200_never_parses_a_requirement() -> None:
    """The H200's torch has ~40 Requires-Dist lines, all met: the checks read them without importing
    ``packaging.requirements`` (its tokenizer and markers cost ~6 ms of every run there)."""
    import subprocess
    import sys

    program = (
        "import sys\n"
        "import json\n"
        "from cudadoctor.facts.codec import decode\n"
        "from cudadoctor.facts.model import Facts\n"
        "from cudadoctor.checks import selected\n"
        "from cudadoctor.checks.engine import run_checks\n"
        "from cudadoctor.data import CompatMatrix\n"
        f"facts = decode(Facts, json.load(open({str(TESTS / 'golden/h200-facts.json')!r})), 'facts')\n"
        "assert sum(len(p.requires) for p in facts.packages.values()) > 30\n"
        "findings = list(run_checks(facts, CompatMatrix(), select=selected((), ())))\n"
        "print(len(findings), 'packaging.requirements' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=True)
    count, imported = out.stdout.split()
    assert int(count) > 30 and imported == "False"
