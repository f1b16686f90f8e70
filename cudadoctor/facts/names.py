"""Distribution names as one form, so ``NVIDIA_CUDNN_CU12``, ``nvidia.cudnn-cu12`` and ``nvidia-cudnn-cu12``
are the same package everywhere (probes, checks, the update cache)."""

from __future__ import annotations

import re

__all__ = ["canonical_name"]

_SEPARATORS = re.compile(r"[-_.]+")


def canonical_name(name: str) -> str:
    """A distribution name normalised as PEP 503 says (``NVIDIA_CUDNN_CU12`` -> ``nvidia-cudnn-cu12``).

    The same rule as :func:`packaging.utils.canonicalize_name`
    (https://packaging.python.org/en/latest/specifications/name-normalization/), written out because
    importing ``packaging.utils`` pulls in ``packaging.tags`` (about 15 ms, a tenth of the time budget).
    """
    return _SEPARATORS.sub("-", name).lower()
