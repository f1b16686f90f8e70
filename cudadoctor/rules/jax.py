"""jaxlib builds that bundle CUDA (before the CUDA plugins): the cuDNN they were built against.

Such wheels came from JAX's own index (https://storage.googleapis.com/jax-releases/jax_cuda_releases.html) with the
CUDA and cuDNN of the build in the local version tag: ``jaxlib 0.4.14+cuda11.cudnn86`` is built for CUDA 11 and
cuDNN 8.6, ``+cuda11.cudnn805`` for cuDNN 8.0.5. JAX's README of that time states the rule: a wheel works
"provided the major version of your CUDA and CuDNN installation matches, and the minor version is at least as new
as the version JAX expects" (JAX's README of the jaxlib 0.4.1x releases, section "pip installation: GPU (CUDA,
installed locally, harder)", https://github.com/google/jax#installation); the ``cudnn805`` spelling is cuDNN 8.0.5
(``jax[cuda=11,cudnn=805]``, https://github.com/google/jax/releases/tag/jax-v0.2.23). Otherwise XLA stops with
"Loaded runtime CuDNN library: X but source was compiled with: Y" (https://github.com/jax-ml/jax/issues/16901).
"""

from __future__ import annotations

import re

from packaging.version import Version

from cudadoctor.rules.verdict import Verdict, fails, fits

__all__ = ["cudnn_meets_jaxlib_build", "jaxlib_cudnn_build"]

_CUDNN_PART = re.compile(r"cudnn(\d)(\d+)")


def jaxlib_cudnn_build(version: Version) -> Version | None:
    """The cuDNN a bundled-CUDA jaxlib was built against, from its local tag (``cudnn86`` → 8.6); None if unsaid.

    ``cudnn805`` is 8.0.5 (a leading zero marks a patch); other multi-digit minors are ambiguous and give None.
    """
    for part in (version.local or "").split("."):
        match = _CUDNN_PART.fullmatch(part)
        if match is None:
            continue
        major, rest = match.groups()
        if len(rest) == 1:
            return Version(f"{major}.{rest}")
        if len(rest) == 2 and rest.startswith("0"):
            return Version(f"{major}.0.{rest[1]}")
        return None
    return None


def cudnn_meets_jaxlib_build(built: Version, found: Version) -> Verdict[str]:
    """Does a cuDNN of version ``found`` serve a jaxlib built against ``built`` (same major, at least as new)?"""
    observed = f"cuDNN {found}"
    required = f"cuDNN {built.major}.x at least {built}"
    if found.major != built.major or found < built:
        return fails("jaxlib-cudnn", observed, required)
    return fits("jaxlib-cudnn", f"{observed} meets the build's {built}")
