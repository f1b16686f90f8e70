"""Packages whose releases compat data does not list, each with why a command naming one is still printed.

A printed command naming any other package the data cannot verify fails the corpus test
(tests/corpus/test_fix_commands.py) and the property test of suggest's plans.
"""

from __future__ import annotations

import re

__all__ = ["UNVERIFIABLE", "allowed"]

_CUDA13_WHEELS = r"nvidia-(?:cublas|cuda-runtime|cuda-nvrtc|cufft|curand|cusolver|cusparse|nvjitlink)"

#: package-name pattern -> why it is printed though compat data has no release list for it
UNVERIFIABLE = {
    rf"nvidia-[a-z-]+-cu\d+|{_CUDA13_WHEELS}": "NVIDIA's CUDA runtime wheels (CUDA 13's dropped the -cuNN "
    "suffix: https://pypi.org/project/nvidia-cublas/): compat/runtime_libraries.toml names the wheel that "
    "ships each soname, not its releases; a bare name or a major (==11.*) leaves the version to pip, and an "
    "exact pin is copied from an installed package's own Requires-Dist",
    r"triton|cuda-bindings|cuda-toolkit": "pinned by an installed torch's own Requires-Dist (its METADATA, "
    "published with it): the release exists where that torch does",
}


def allowed(unverified: str) -> str | None:
    """Why a could-not-verify part is allowed (its package is on :data:`UNVERIFIABLE`), else None."""
    name = unverified.split(":", 1)[0]
    return next((why for pattern, why in UNVERIFIABLE.items() if re.fullmatch(pattern, name)), None)
