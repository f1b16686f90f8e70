"""Slurm host lists: node names folded (``gpu001 … gpu097, gpu099`` -> ``gpu[001-097,099]``) and expanded.

The notation of Slurm's ``scontrol show hostlist`` (https://slurm.schedmd.com/scontrol.html): a common
prefix, then a bracketed list of ranges of the numeric suffix, zero padding kept. A suffix written with a
leading zero fixes its width (``gpu01`` and ``gpu001`` are two hosts, in two groups); one without (``gpu100``)
joins the group of any width it fills, so ``gpu099`` and ``gpu100`` fold to ``gpu[099-100]``: the rule of
Slurm's ``_width_equiv`` (src/common/hostlist.c: two widths are equivalent when formatting either number
with either width changes neither one's zero padding).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["HostlistError", "expand", "fold"]

_SUFFIX = re.compile(r"^(.*?)(\d+)$")
#: More names than any cluster has: an expression that expands past this is refused, not expanded.
MAX_HOSTS = 1_000_000
#: A host name is at most 253 characters (RFC 1035's 255 octets on the wire); a part of a host list, brackets
#: and ranges included, at most this; a whole host list (or host file) at most MAX_EXPRESSION.
MAX_NAME = 1024
MAX_EXPRESSION = 8 << 20


class HostlistError(ValueError):
    """A host list expression that is not Slurm's notation, or expands to too many names."""


def _ranges(numbers: list[int], width: int) -> str:
    parts: list[str] = []
    start = prev = numbers[0]
    for n in [*numbers[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}")
        if n is not None:
            start = prev = n
    return ",".join(parts)


def _padded(digits: str) -> bool:
    return len(digits) > 1 and digits.startswith("0")


def fold(names: Iterable[str]) -> str:
    """The names as one Slurm host list, groups in order of first appearance."""
    parsed: list[tuple[str, str] | str] = []
    widths: dict[str, set[int]] = {}  # prefix -> the widths its zero-padded names fix
    for name in dict.fromkeys(names):
        match = _SUFFIX.match(name)
        if match is None:
            parsed.append(name)
            continue
        prefix, digits = match.group(1), match.group(2)
        parsed.append((prefix, digits))
        if _padded(digits):
            widths.setdefault(prefix, set()).add(len(digits))
    groups: dict[tuple[str, int], set[int]] = {}
    order: list[tuple[str, int] | str] = []
    for item in parsed:
        if isinstance(item, str):
            order.append(item)
            continue
        prefix, digits = item
        if _padded(digits):
            width = len(digits)
        else:  # an unpadded number joins the widest padded group it fills (gpu100 -> the gpu0NN group)
            width = max((w for w in widths.get(prefix, ()) if w <= len(digits)), default=0)
        key = (prefix, width)
        if key not in groups:
            groups[key] = set()
            order.append(key)
        groups[key].add(int(digits))
    out = []
    for group in order:
        if isinstance(group, str):
            out.append(group)
            continue
        head, size = group
        numbers = sorted(groups[group])
        if len(numbers) == 1:
            out.append(f"{head}{numbers[0]:0{size}d}")
        else:
            out.append(f"{head}[{_ranges(numbers, size)}]")
    return ",".join(out)


_BRACKET = re.compile(r"\[([^\[\]]*)\]")
_RANGE = re.compile(r"^(\d{1,18})(?:-(\d{1,18}))?$")


def _shown(expression: str) -> str:
    """The expression as an error names it: quoted, escaped, at most 60 characters."""
    return repr(expression[:60]) + ("…" if len(expression) > 60 else "")


def _split_top(text: str) -> list[str]:
    """``a[1-2],b,c[3,5]`` -> ``a[1-2]``, ``b``, ``c[3,5]``: commas and whitespace outside brackets separate."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"{_shown(text)}: ']' without '['")
        if depth == 0 and (char == "," or char.isspace()):
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth:
        raise HostlistError(f"{_shown(text)}: '[' without ']'")
    parts.append("".join(current))
    return [p for p in parts if p]


def _numbers(body: str, expression: str) -> list[str]:
    out: list[str] = []
    for item in body.split(","):
        match = _RANGE.match(item.strip())
        if match is None:
            raise HostlistError(f"{_shown(expression)}: {_shown(item)} is not a number or a range")
        lo, hi = match.group(1), match.group(2) or match.group(1)
        if int(hi) < int(lo):
            raise HostlistError(f"{_shown(expression)}: range {_shown(item)} runs backwards")
        if int(hi) - int(lo) >= MAX_HOSTS:
            raise HostlistError(f"{_shown(expression)}: more than {MAX_HOSTS:,} names")
        width = len(lo)  # Slurm pads every number of the range to the width its start is written with
        out += [f"{n:0{width}d}" for n in range(int(lo), int(hi) + 1)]
    return out


def _expand_one(name: str, expression: str) -> list[str]:
    match = _BRACKET.search(name)
    if match is None:
        return [name]
    head, tail = name[: match.start()], name[match.end() :]
    out: list[str] = []
    for number in _numbers(match.group(1), expression):
        out += _expand_one(f"{head}{number}{tail}", expression)
        if len(out) > MAX_HOSTS:
            raise HostlistError(f"{_shown(expression)}: more than {MAX_HOSTS:,} names")
    return out


def expand(expression: str) -> list[str]:
    """The names of a Slurm host list (``gpu[001-003,007],login1`` -> gpu001, gpu002, gpu003, gpu007, login1),
    in order, each once. :raises HostlistError: on what is not that notation."""
    names: dict[str, None] = {}
    if len(expression) > MAX_EXPRESSION:
        raise HostlistError(
            f"{len(expression):,} characters, more than a host list of any cluster ({MAX_EXPRESSION:,})"
        )
    for part in _split_top(expression):
        if len(part) > MAX_NAME:
            raise HostlistError(f"{_shown(part)}: longer than a host name ({MAX_NAME} characters)")
        names.update(dict.fromkeys(_expand_one(part, expression)))
        if len(names) > MAX_HOSTS:
            raise HostlistError(f"{_shown(expression)}: more than {MAX_HOSTS:,} names")
    return list(names)
