"""Evaluating the environment markers of Requires-Dist lines in the forms real METADATA uses, without
``packaging.markers``.

Importing ``packaging.markers`` costs about 11 ms (it pulls in ``packaging.tags``, ``logging`` and
``sysconfig``), paid by every run that probes the packages afresh. Nearly every marker of real wheels is a few
comparisons of one variable with a string, joined by ``and``/``or``: ``extra == "dev"``, ``platform_system ==
"Linux" and platform_machine == "x86_64"``, ``python_version < "3.11"``. :func:`evaluate` answers those with
PEP 508's rules (https://peps.python.org/pep-0508/#environment-markers: ``and`` binds tighter than ``or``;
a version variable compares as a version specifier, ``prereleases`` allowed; ``extra`` names compare normalized,
PEP 685) and returns None for anything else — a reversed comparison, ``in``, an unknown variable, a version-like
literal on a string variable, anything malformed — which the caller then hands to ``packaging.markers``.
``tests/test_markers_fast.py`` holds it to packaging's answer over the corpus's real markers and generated ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from packaging.specifiers import InvalidSpecifier, Specifier

from cudadoctor.facts.names import canonical_name

__all__ = ["evaluate"]

_TOKEN = re.compile(r"""\s*(?:([()])|(===|==|!=|~=|<=|>=|<|>)|'([^']*)'|"([^"]*)"|([A-Za-z_][A-Za-z0-9_.]*))""")
#: Variables compared as strings, and only with == and != (PEP 508 names them; their values are words).
_STRING_VARIABLES = frozenset(
    ("sys_platform", "platform_system", "platform_machine", "os_name", "implementation_name",
     "platform_python_implementation")
)  # fmt: skip
#: Variables compared as versions.
_VERSION_VARIABLES = frozenset(("python_version", "python_full_version"))
_VERSION_OPERATORS = frozenset(("==", "!=", "<", "<=", ">", ">=", "~="))
#: A literal that could read as a version (packaging before 25 tried every comparison as a version specifier
#: first); such literals on string variables are left to packaging.
_VERSIONISH = re.compile(r"[vV]?\d")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.+-]*")
#: An extra's name as PEP 685 normalizes it (or the empty name).
_EXTRA = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9._-]*)?")
_MAX_DEPTH = 16
_MAX_CHARS = 1024


class _Unsure(Exception):
    """A form this evaluator does not answer: packaging must."""


def evaluate(text: str, environment: Mapping[str, str]) -> bool | None:
    """The marker's value in ``environment``, or None when it is not of a form answered here."""
    if len(text) > _MAX_CHARS:
        return None
    try:
        tokens = _tokens(text)
        value, rest = _or(tokens, 0, environment, 0)
    except _Unsure:
        return None
    return value if rest == len(tokens) else None


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    position = 0
    end = len(text.rstrip())
    while position < end:
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise _Unsure
        paren, op, single, double, word = match.groups()
        if paren:
            out.append(("paren", paren))
        elif op:
            out.append(("op", op))
        elif single is not None or double is not None:
            out.append(("string", single if single is not None else double))
        else:
            out.append(("word", word))
        position = match.end()
    return out


def _or(tokens: list[tuple[str, str]], at: int, env: Mapping[str, str], depth: int) -> tuple[bool, int]:
    return _chain(tokens, at, env, depth, "or", _and)


def _and(tokens: list[tuple[str, str]], at: int, env: Mapping[str, str], depth: int) -> tuple[bool, int]:
    return _chain(tokens, at, env, depth, "and", _atom)


_Operand = Callable[[list[tuple[str, str]], int, Mapping[str, str], int], tuple[bool, int]]


def _chain(
    tokens: list[tuple[str, str]], at: int, env: Mapping[str, str], depth: int, word: str, operand: _Operand
) -> tuple[bool, int]:
    """Operands joined by ``word`` (``or`` of ``and``-chains, ``and`` of atoms: ``and`` binds tighter)."""
    value, at = operand(tokens, at, env, depth)
    while at < len(tokens) and tokens[at] == ("word", word):
        right, at = operand(tokens, at + 1, env, depth)
        value = (value or right) if word == "or" else (value and right)
    return value, at


def _atom(tokens: list[tuple[str, str]], at: int, env: Mapping[str, str], depth: int) -> tuple[bool, int]:
    if at >= len(tokens) or depth > _MAX_DEPTH:
        raise _Unsure
    if tokens[at] == ("paren", "("):
        value, at = _or(tokens, at + 1, env, depth + 1)
        if at >= len(tokens) or tokens[at] != ("paren", ")"):
            raise _Unsure
        return value, at + 1
    if at + 3 > len(tokens):
        raise _Unsure
    (kind, name), (op_kind, op), (literal_kind, literal) = tokens[at : at + 3]
    if kind != "word" or op_kind != "op" or literal_kind != "string" or name not in env:
        raise _Unsure
    return _compare(name, op, literal, env[name]), at + 3


def _compare(name: str, op: str, literal: str, value: str) -> bool:
    if name == "extra":
        if op not in ("==", "!=") or not _EXTRA.fullmatch(literal):
            raise _Unsure
        return (canonical_name(value) == canonical_name(literal)) == (op == "==")
    if name in _STRING_VARIABLES:
        if op not in ("==", "!=") or not _WORD.fullmatch(literal) or _VERSIONISH.match(literal):
            raise _Unsure
        return (value == literal) == (op == "==")
    if name in _VERSION_VARIABLES and op in _VERSION_OPERATORS:
        try:
            return Specifier(f"{op}{literal}").contains(value, prereleases=True)
        except InvalidSpecifier:
            raise _Unsure from None
    raise _Unsure
