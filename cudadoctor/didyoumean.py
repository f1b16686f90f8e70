"""Did-you-mean hints for names typed on the command line: commands, suggest targets, check codes, GPUs.

One rule everywhere: the closest known spelling by :func:`difflib.get_close_matches` (the similarity
ratio of the standard library's SequenceMatcher, compared case-insensitively), offered only when it is
close enough to be a plausible typo; never more than one.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["closest", "did_you_mean"]

#: SequenceMatcher ratio a known name must reach: "trch"/"torch" is 0.89, "CD9011"/"CD901" 0.91,
#: "H1000"/"H100" 0.89, while unrelated words of the same length stay below 0.5.
CUTOFF = 0.6


def closest(word: str, known: Iterable[str]) -> str | None:
    """The known name closest to ``word`` (as it is spelled in ``known``), or None."""
    by_folded: dict[str, str] = {}
    for name in known:
        by_folded.setdefault(name.casefold(), name)
    match = difflib.get_close_matches(word.strip().casefold(), list(by_folded), n=1, cutoff=CUTOFF)
    return by_folded[match[0]] if match else None


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """``"; did you mean 'torch'?"`` to append to an error message, or ``""``."""
    name = closest(word, known)
    return f"; did you mean {name!r}?" if name is not None else ""
