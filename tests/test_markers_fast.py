"""probes.markers.evaluate answers a marker exactly as packaging.markers does, or declines (None).

The markers: every one on a Requires-Dist line of the corpus's real packages and the fixtures, forms it must
decline, and generated and/or/parenthesised combinations of real atoms; each in several target environments.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement

from cudadoctor.probes.markers import evaluate
from tests.test_requires_lines import REAL

ENVIRONMENTS = [
    {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
     "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": "",
     "python_version": "3.12", "python_full_version": "3.12.3", "implementation_version": "3.12.3"},
    {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "aarch64", "os_name": "posix",
     "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": "",
     "python_version": "3.10", "python_full_version": "3.10.0rc1", "implementation_version": "3.10.0rc1"},
    {"sys_platform": "win32", "platform_system": "Windows", "platform_machine": "AMD64", "os_name": "nt",
     "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": "",
     "python_version": "3.13", "python_full_version": "3.13.1", "implementation_version": "3.13.1"},
    # what the packages probe passes when the target's Python version is unknown
    {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
     "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""},
]  # fmt: skip


def _packaging(text: str, env: dict[str, str]) -> bool:
    """What the packages probe concluded before: packaging's answer, False where it cannot evaluate."""
    try:
        return Marker(text).evaluate(env)
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName, ValueError):
        return False


def _markers() -> list[str]:
    out = set()
    for line in REAL:
        try:
            marker = Requirement(line).marker
        except InvalidRequirement:
            continue
        if marker is not None:
            out.add(line.partition(";")[2].strip() if "@" not in line else str(marker))
    return sorted(out)


MARKERS = _markers()


def test_the_corpus_has_real_markers_of_every_common_form():
    assert len(MARKERS) > 50
    answered = [m for m in MARKERS if evaluate(m, ENVIRONMENTS[0]) is not None]
    assert len(answered) / len(MARKERS) > 0.9  # the point: packaging.markers is rarely imported


@pytest.mark.parametrize("env", ENVIRONMENTS, ids=["linux-312", "arm-310rc", "windows-313", "no-python"])
def test_real_markers_agree_with_packaging(env):
    for text in MARKERS:
        answer = evaluate(text, env)
        assert answer is None or answer == _packaging(text, env), text


DECLINED = [
    "'linux' == sys_platform",  # reversed
    "'cuda' in extra",
    "platform_release >= '5.15'",
    "os_name == '1'",  # a version-like literal on a string variable
    "platform_machine ~= 'x86_64'",
    "python_version === '3.12'",
    "python_version > 'not a version'",
    "python_version < '3.11' and",
    "(python_version < '3.11'",
    "python_version < '3.11')",
    "python_version <",
    "extra == 'a b'",
    "extra == '-dev'",
    "unknown_variable == 'x'",
    "(" * 40 + "extra == 'x'" + ")" * 40,
]


@pytest.mark.parametrize("text", DECLINED)
def test_forms_it_does_not_answer_are_declined(text):
    assert evaluate(text, ENVIRONMENTS[0]) is None


ATOMS = [
    "extra == 'dev'", 'extra != "All_Things"', "extra == ''",
    'platform_system == "Linux"', "platform_system != 'Windows'", 'platform_machine == "x86_64"',
    "platform_machine == 'aarch64'", "sys_platform == 'linux'", "sys_platform == 'win32'", 'os_name == "nt"',
    "platform_python_implementation == 'CPython'", "implementation_name != 'pypy'",
    'python_version < "3.11"', "python_version >= '3.9'", "python_version == '3.12'", "python_version != '3.10'",
    "python_version ~= '3.10'", "python_full_version >= '3.10.0'", "python_full_version < '3.12.4'",
    "python_full_version == '3.10.*'",
]  # fmt: skip


@st.composite
def _expression(draw: st.DrawFn, depth: int = 0) -> str:
    if depth > 2 or draw(st.booleans()):
        return draw(st.sampled_from(ATOMS))
    left = draw(_expression(depth + 1))
    right = draw(_expression(depth + 1))
    joined = f"{left} {draw(st.sampled_from(['and', 'or']))} {right}"
    return f"({joined})" if draw(st.booleans()) else joined


@given(_expression(), st.sampled_from(ENVIRONMENTS))
def test_generated_combinations_agree_with_packaging(text, env):
    answer = evaluate(text, env)
    assert answer is None or answer == _packaging(text, env)
    if "python" not in text or "python_version" in env:
        assert answer is not None  # every atom is of an answered form


@given(st.text(max_size=200), st.sampled_from(ENVIRONMENTS))
def test_any_text_gives_an_answer_or_none_never_an_exception(text, env):
    answer = evaluate(text, env)
    assert answer is None or answer == _packaging(text, env)
