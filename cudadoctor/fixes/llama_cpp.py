"""The commands that give llama-cpp-python a CUDA build: a rebuild from its sdist with the release's CMake flag, or
a prebuilt wheel from the project's CUDA index (compat/llama_cpp.toml).

``--force-reinstall`` because the installed CPU build already satisfies ``llama-cpp-python==X``, and
``--no-cache-dir`` because pip would otherwise reinstall the CPU wheel it built and cached
(https://github.com/abetlen/llama-cpp-python/issues/787: the reporter's working command).
"""

from __future__ import annotations

from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.data.rows import LlamaCppIndex
from cudadoctor.fixes.model import Install, Pin

__all__ = ["llama_cpp_index_with", "llama_cpp_prebuilt", "llama_cpp_source_build"]


def llama_cpp_source_build(matrix: CompatMatrix, version: Version) -> Install | None:
    """``CMAKE_ARGS=<the release's CUDA flag> pip install --force-reinstall --no-cache-dir llama-cpp-python==X``;
    None when the data names no CUDA flag for the release."""
    flag = matrix.llama_cpp_cmake_args(version)
    if flag is None:
        return None
    return Install(
        (Pin.exact("llama-cpp-python", Version(version.public)),),
        force_reinstall=True,
        no_cache_dir=True,
        env=(("CMAKE_ARGS", flag),),
    )


def llama_cpp_index_with(matrix: CompatMatrix, version: Version, runtimes: set[Version]) -> LlamaCppIndex | None:
    """The newest CUDA wheel index listing the release whose CUDA is of an installed runtime's major and not newer
    than it (``runtimes``: major.minor): the wheel links that runtime's libcudart.so.N, and a build against a newer
    minor may use what an older runtime lacks (*inferred* from CUDA's minor-version compatibility rules,
    https://docs.nvidia.com/deploy/cuda-compatibility/)."""
    text = str(Version(version.public))
    found = [
        i
        for i in matrix.llama_cpp_indexes
        if text in i.releases and any(r.major == i.cuda.major and i.cuda <= r for r in runtimes)
    ]
    return max(found, key=lambda i: i.cuda, default=None)


def llama_cpp_prebuilt(index: LlamaCppIndex, version: Version) -> Install:
    """The release's wheel from the index (its wheels carry no local version, so the sdist on PyPI has the same
    version: pip prefers the wheel of equal version)."""
    return Install(
        (Pin.exact("llama-cpp-python", Version(version.public)),),
        extra_index_urls=(index.url,),
        force_reinstall=True,
        no_cache_dir=True,
    )
