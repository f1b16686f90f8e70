"""Which CUDA library copies some installed package loads by itself: ld.so then reuses that soname for later needs."""

from __future__ import annotations

from cudadoctor.facts.model import LoaderView

__all__ = ["loaded_elsewhere"]


def loaded_elsewhere(loader: LoaderView) -> set[tuple[str, str]]:
    """(soname, path) of the CUDA libraries some installed package loads by its own search or preload (torch's RPATH
    into ``nvidia/cudnn/lib``): once that package is imported the soname is in the process, and ld.so reuses a loaded
    soname for every later need or dlopen of it (ld.so(8), https://man7.org/linux/man-pages/man8/ld.so.8.html). Only
    that soname: cuDNN loads its sub-libraries (libcudnn_cnn.so.9 …) from the same directory when it first uses them,
    not with its core (https://docs.nvidia.com/deeplearning/cudnn/latest/api/overview.html), so a package that
    imported torch without running a convolution has not loaded them."""
    return {
        (n.soname, n.loaded.path) for n in loader.needs if n.loaded is not None and not n.loaded.via.startswith("wheel")
    }
