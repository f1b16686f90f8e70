"""Strategies and helpers shared by the property tests.

Three kinds of input are generated for every parser:

* anything: ``text()`` and ``binary()`` decoded as UTF-8 with ``errors="replace"`` (what the probes
  do with a file's bytes), plus text over a small alphabet of the characters parsers look at;
* near-valid: a real captured file (``tests/fixtures/``) with random edits (see :func:`mutated`);
* valid: rendered from generated values, so that parsing must give those values back.
"""

from __future__ import annotations

import json
import string
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.conftest import fixture_text

__all__ = [
    "JUNK_ALPHABET",
    "LINE_BREAKS",
    "any_text",
    "assert_one_line",
    "cuda_versions",
    "driver_versions",
    "fixture_text",
    "json_values",
    "line_free_text",
    "mutated",
    "numberish",
    "pep440_versions",
    "property_settings",
]

#: The characters the parsers split and match on, so that short random strings hit their branches.
JUNK_ALPHABET = string.digits + ".:,;=#-_+/ \t\n()[]{}\"'<>&@ablrcuxUNIXKernelModuleVrsion"

#: The characters ``str.splitlines`` breaks lines on.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def property_settings(examples: int, **kwargs: Any) -> settings:
    """``settings`` with ``max_examples`` and no deadline (the suite runs on slow, shared CI machines)."""
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        **kwargs,
    )


def assert_one_line(exc: BaseException) -> None:
    """A documented error must carry a message that is exactly one non-empty line."""
    message = str(exc)
    assert message.strip(), f"{type(exc).__name__} with an empty message"
    assert len(message.splitlines()) == 1, f"{type(exc).__name__} message spans lines: {message!r}"


#: Characters that ``str.isdigit()`` accepts (and ``\\d`` matches) but that are not ASCII digits:
#: superscripts, which ``int()`` rejects, and other scripts' digits, which ``Version()`` rejects.
ODD_DIGITS = "²³¹٠١٢٣٤٥٦٧٨٩०१२"


def numberish() -> st.SearchStrategy[str]:
    """Where a file holds a number: a number, digits of other scripts, or one past ``int()``'s digit limit."""
    return st.one_of(
        st.integers(0, 10**6).map(str),
        st.text(alphabet=string.digits + ODD_DIGITS, min_size=1, max_size=6),
        st.integers(4300, 4310).map(lambda n: "9" * n),
    )


def _decoded(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def any_text(max_size: int = 400) -> st.SearchStrategy[str]:
    """Any text: unicode, bytes decoded with ``errors="replace"``, and junk over :data:`JUNK_ALPHABET`."""
    return st.one_of(
        st.text(max_size=max_size),
        st.binary(max_size=max_size).map(_decoded),
        st.text(alphabet=JUNK_ALPHABET, max_size=max_size),
    )


def line_free_text(min_size: int = 0, max_size: int = 30, alphabet: Any = None) -> st.SearchStrategy[str]:
    """Text without any character ``splitlines`` would break on."""
    chars = alphabet if alphabet is not None else st.characters(codec="utf-8", exclude_characters=LINE_BREAKS)
    return st.text(alphabet=chars, min_size=min_size, max_size=max_size).filter(
        lambda s: len(s.splitlines()) <= 1 and not any(c in LINE_BREAKS for c in s)
    )


# --- near-valid input: a real file with random edits ---------------------------------------------------


@st.composite
def mutated(draw: st.DrawFn, seed: str, max_edits: int = 4) -> str:
    """``seed`` with a few random edits: a span replaced, deleted or duplicated, junk inserted,
    a digit changed, a token swapped for another, or the text cut short."""
    text = seed
    for _ in range(draw(st.integers(0, max_edits))):
        n = len(text)
        at = draw(st.integers(0, n))
        end = draw(st.integers(at, min(n, at + 40)))
        op = draw(st.sampled_from(["replace", "delete", "insert", "duplicate", "digit", "token", "truncate"]))
        if op == "replace":
            text = text[:at] + draw(any_text(20)) + text[end:]
        elif op == "delete":
            text = text[:at] + text[end:]
        elif op == "insert":
            text = text[:at] + draw(st.text(alphabet=JUNK_ALPHABET, max_size=12)) + text[at:]
        elif op == "duplicate":
            text = text[:end] + text[at:end] + text[end:]
        elif op == "digit":
            digits = [i for i, c in enumerate(text) if c.isdigit()]
            if digits:
                i = draw(st.sampled_from(digits))
                text = text[:i] + draw(numberish()) + text[i + 1 :]
        elif op == "token":
            tokens = text.split(" ")
            if tokens:
                i = draw(st.integers(0, len(tokens) - 1))
                tokens[i] = draw(st.sampled_from(["", "1.2", "99999999999", "-1", "for", "UNIX", "Open", "x"]))
                text = " ".join(tokens)
        else:
            text = text[:at]
    return text


# --- versions ----------------------------------------------------------------------------------------

_small = st.integers(0, 999)


@st.composite
def driver_versions(draw: st.DrawFn) -> str:
    """An NVIDIA driver version as NVIDIA writes it: ``580.159.04``, ``515.76``, ``177.80``."""
    major = draw(st.integers(1, 999))
    minor = draw(st.integers(0, 999))
    width = draw(st.sampled_from([1, 2, 3]))
    text = f"{major}.{minor:0{width}d}"
    if draw(st.booleans()):
        text += f".{draw(st.integers(0, 99)):0{draw(st.sampled_from([1, 2]))}d}"
    return text


def cuda_versions() -> st.SearchStrategy[tuple[int, int]]:
    """(major, minor) of a CUDA version; minor < 100 as the x*1000 + y*10 encoding requires."""
    return st.tuples(st.integers(1, 99), st.integers(0, 99))


@st.composite
def pep440_versions(draw: st.DrawFn) -> str:
    """A PEP 440 version: epochs, pre-, post- and dev-releases, and local tags (``+cu128``, ``+rocm6.2``)."""
    release = ".".join(str(draw(_small)) for _ in range(draw(st.integers(1, 4))))
    text = f"{draw(st.integers(1, 3))}!{release}" if draw(st.integers(0, 9)) == 0 else release
    if draw(st.booleans()):
        text += f"{draw(st.sampled_from(['a', 'b', 'rc']))}{draw(_small)}"
    if draw(st.booleans()):
        text += f".post{draw(_small)}"
    if draw(st.booleans()):
        text += f".dev{draw(_small)}"
    local = draw(
        st.one_of(
            st.none(),
            st.sampled_from(["cu128", "cu130", "cu118", "cu92", "rocm6.2", "rocm6.1.3", "cpu", "cpu.cxx11.abi", "xpu"]),
            st.builds(lambda d: f"cu{d}", st.integers(10, 999)),
            st.lists(
                st.text(string.ascii_lowercase + string.digits, min_size=1, max_size=8), min_size=1, max_size=3
            ).map(".".join),
        )
    )
    return f"{text}+{local}" if local else text


# --- JSON --------------------------------------------------------------------------------------------

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)


def json_values(max_leaves: int = 10) -> st.SearchStrategy[Any]:
    """Any JSON value (nested lists and objects)."""
    return st.recursive(
        json_scalars,
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)),
        max_leaves=max_leaves,
    )


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            out += _paths(value, (*prefix, i))
    return out


@st.composite
def mutated_json(draw: st.DrawFn, seed: Any, max_edits: int = 3, values: Callable[[], Any] = json_values) -> Any:
    """A deep copy of the JSON document ``seed`` with a few values replaced, removed or added."""
    doc = json.loads(json.dumps(seed))
    for _ in range(draw(st.integers(1, max_edits))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        if not path:
            if draw(st.integers(0, 9)) == 0:
                doc = draw(values())
            continue
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        op = draw(st.sampled_from(["replace", "replace", "delete", "add", "retype"]))
        if op == "replace":
            parent[key] = draw(values())
        elif op == "delete":
            del parent[key]
        elif op == "add" and isinstance(parent, dict):
            parent[draw(st.text(max_size=10) | st.text(JUNK_ALPHABET, max_size=10))] = draw(values())
        elif op == "add":
            parent.insert(key, draw(values()))
        else:
            value = parent[key]
            parent[key] = [value] if not isinstance(value, list) else {"0": value}
    return doc
