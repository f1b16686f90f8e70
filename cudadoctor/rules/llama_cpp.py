"""llama-cpp-python's build: CUDA or not, and for which CUDA major, from the objects it installed.

A CUDA build of llama.cpp links the CUDA runtime and cuBLAS (DT_NEEDED ``libcudart.so.N``, ``libcublas.so.N``: the
prebuilt wheels leave exactly these out of the wheel, https://github.com/abetlen/llama-cpp-python/blob/main/.github/workflows/build-wheels-cuda.yaml),
and from 0.3.2 on installs ``llama_cpp/lib/libggml-cuda.so`` (its CMakeLists.txt,
https://github.com/abetlen/llama-cpp-python/blob/main/CMakeLists.txt). A build with neither, whose objects were
all read, was compiled without CUDA; one with another GPU backend's library (``libggml-vulkan.so`` …) uses that one.
"""

from __future__ import annotations

import posixpath
import re

from cudadoctor.facts.model import LlamaCppBuild

__all__ = ["llama_cpp_cuda", "llama_cpp_other_backend"]

_CUDA_LIBRARY = re.compile(r"^lib(?:cudart|cublas|cublasLt)\.so\.(\d+)")
_BACKEND = re.compile(r"^libggml-(cuda|vulkan|hip|sycl|metal|musa|kompute|opencl|cann)\.so")


def _backends(build: LlamaCppBuild) -> set[str]:
    return {m.group(1) for o in build.objects if (m := _BACKEND.match(posixpath.basename(o)))}


def llama_cpp_cuda(build: LlamaCppBuild) -> tuple[bool | None, int | None]:
    """(is it a CUDA build, the CUDA major its objects need). ``None`` for the first: nothing decides it (no
    object found, or one not read while nothing else shows CUDA)."""
    majors = {int(m.group(1)) for n in build.cuda_needs if (m := _CUDA_LIBRARY.match(n))}
    major = max(majors) if majors else None
    if majors or "cuda" in _backends(build):
        return True, major
    if not build.objects or build.unread:
        return None, None
    return False, None


def llama_cpp_other_backend(build: LlamaCppBuild) -> str | None:
    """Another GPU backend the build holds (``vulkan``, ``hip`` …), None when it has none."""
    others = sorted(_backends(build) - {"cuda"})
    return others[0] if others else None
