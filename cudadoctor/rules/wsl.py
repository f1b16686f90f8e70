"""The WSL2 driver store (``/usr/lib/wsl/lib``): what a Windows driver ships and what a container must map.

* The Windows driver installs ``libcuda.so``, ``libcuda.so.1`` and ``libcuda.so.1.1`` as identical regular files
  (the Windows folder C:\\Windows\\System32\\lxss\\lib has no symlinks), so ``ldconfig`` warns
  "/usr/lib/wsl/lib/libcuda.so.1 is not a symbolic link" and caches only ``libcuda.so.1``
  (https://github.com/microsoft/WSL/issues/5548, https://github.com/microsoft/WSL/issues/8587).
* Windows drivers 555.xx and newer add ``libnvdxgdmal.so.1``, which must be mapped into a container; without it
  CUDA initialisation returns error 500 (CUDA_ERROR_NOT_FOUND). NVIDIA Container Toolkit 1.14.4 and 1.15.0 map it;
  Docker Desktop 4.31.0 ships the fix (the maintainer in https://github.com/NVIDIA/nvidia-container-toolkit/issues/520;
  "Added detection of libnvdxgdmal.so.1 on WSL2", https://github.com/NVIDIA/nvidia-container-toolkit/releases/tag/v1.15.0-rc.2).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "DXGDMAL",
    "DXGDMAL_DOCKER_DESKTOP",
    "DXGDMAL_DRIVER_BRANCH",
    "DXGDMAL_TOOLKIT",
    "WSL_LIB",
    "copied_libcuda_names",
    "needs_dxgdmal",
    "unversioned_libcuda_found",
]

WSL_LIB = "/usr/lib/wsl/lib"
#: the library Windows drivers from this branch on add, and the first releases that map it into containers
DXGDMAL = "libnvdxgdmal.so.1"
DXGDMAL_DRIVER_BRANCH = 555
DXGDMAL_TOOLKIT = "1.14.4"
DXGDMAL_DOCKER_DESKTOP = "4.31.0"

#: the names ldconfig expects as links to libcuda.so.1.1
_LINK_NAMES = ("libcuda.so", "libcuda.so.1")


def copied_libcuda_names(wsl_libcuda_paths: Sequence[str]) -> list[str]:
    """Of the real (link-resolved) libcuda files in the driver store, those that should be links."""
    names = [p.rsplit("/", 1)[-1] for p in wsl_libcuda_paths if p.startswith(WSL_LIB + "/")]
    return [n for n in names if n in _LINK_NAMES]


def needs_dxgdmal(driver_branch: int) -> bool:
    """Whether a Windows driver of this branch ships libnvdxgdmal.so.1, which CUDA then needs."""
    return driver_branch >= DXGDMAL_DRIVER_BRANCH


def unversioned_libcuda_found(path: str | None, via: str | None, wsl_libcuda_paths: Sequence[str]) -> bool:
    """Whether ``dlopen("libcuda.so")`` succeeds, given where the loader model found that name (None: nowhere).

    Without a readable loader cache the model stands the ld.so.conf directories in for it; but ldconfig records a
    regular file under its SONAME, so the driver store's copy of libcuda.so (SONAME libcuda.so.1, the objdump in
    https://github.com/microsoft/WSL/issues/11229) is not in the cache under that name (``ldconfig -p`` in
    https://github.com/microsoft/WSL/issues/8587): found that way, it is not found.
    """
    if path is None:
        return False
    copies = copied_libcuda_names(wsl_libcuda_paths)
    return not (via == "ld.so.conf" and path.startswith(WSL_LIB + "/") and "libcuda.so" in copies)
