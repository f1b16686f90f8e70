"""Node names folded as Slurm writes host lists: ``gpu001 … gpu097, gpu099`` -> ``gpu[001-097,099]``.

The notation of Slurm's ``scontrol show hostlist`` (https://slurm.schedmd.com/scontrol.html): a common
prefix, then a bracketed list of ranges of the numeric suffix, zero padding kept; names with another
prefix or padding form their own group.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["fold"]

_SUFFIX = re.compile(r"^(.*?)(\d+)$")


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


def fold(names: Iterable[str]) -> str:
    """The names as one Slurm host list, groups in order of first appearance."""
    groups: dict[tuple[str, int], set[int]] = {}
    plain: list[str] = []
    order: list[tuple[str, int] | str] = []
    for name in names:
        match = _SUFFIX.match(name)
        if match is None:
            if name not in plain:
                plain.append(name)
                order.append(name)
            continue
        key = (match.group(1), len(match.group(2)) if match.group(2).startswith("0") else 0)
        if key not in groups:
            groups[key] = set()
            order.append(key)
        groups[key].add(int(match.group(2)))
    out = []
    for item in order:
        if isinstance(item, str):
            out.append(item)
            continue
        prefix, width = item
        numbers = sorted(groups[item])
        if len(numbers) == 1:
            out.append(f"{prefix}{numbers[0]:0{width}d}")
        else:
            out.append(f"{prefix}[{_ranges(numbers, width)}]")
    return ",".join(out)
