"""llama-cpp-python's build, read from the shared objects it installed.

PyPI has only its source distribution (compat/llama_cpp.toml), so ``pip install llama-cpp-python`` compiles
llama.cpp on the machine, with CUDA only when ``CMAKE_ARGS`` turned it on. The wheel puts the libraries in
``llama_cpp/`` (up to 0.2.79) or ``llama_cpp/lib/`` (0.2.80 and later; ``libggml-cuda.so`` from 0.3.2 on), as
the CMakeLists.txt of each release installs them (https://github.com/abetlen/llama-cpp-python/blob/main/CMakeLists.txt);
a CUDA build's objects need the CUDA runtime and cuBLAS (DT_NEEDED ``libcudart.so.N``, ``libcublas.so.N``: the
prebuilt wheels leave them out of the wheel, https://github.com/abetlen/llama-cpp-python/blob/main/.github/workflows/build-wheels-cuda.yaml).
Only the dynamic sections are read (:mod:`.elf`, through the scan cache), nothing is loaded.
"""

from __future__ import annotations

import posixpath

from cudadoctor.facts.model import LlamaCppBuild
from cudadoctor.facts.source import Source, SourceKind
from cudadoctor.probes import scancache
from cudadoctor.probes.context import ProbeContext

__all__ = ["probe_llama_cpp"]

#: at most this many objects are read (a wheel holds about ten)
_MAX_OBJECTS = 64


def probe_llama_cpp(ctx: ProbeContext) -> LlamaCppBuild | None:
    """The shared objects of the installed llama-cpp-python and the CUDA libraries they need.

    :param ctx: the probe context.
    :return: None when llama-cpp-python is not installed.
    """
    from cudadoctor.probes import packages

    dist = packages.distributions(ctx).get("llama-cpp-python")
    if dist is None:
        return None
    directory = posixpath.join(dist.location, "llama_cpp")
    found = sorted(
        path
        for sub in (directory, posixpath.join(directory, "lib"))
        for pattern in ("*.so", "*.so.*")
        for path in ctx.fs.glob(sub, pattern)
        if ctx.fs.is_file(path)
    )
    cache = scancache.ScanCache(observe=ctx.observe)
    needs: set[str] = set()
    unread: list[str] = []
    for path in found[:_MAX_OBJECTS]:
        try:
            host = ctx.fs.host_path(ctx.fs.resolve(path))
        except OSError as exc:
            unread.append(f"{path}: not read ({exc.strerror or exc})")
            continue
        dyn = cache.dynamic(host)
        if host in cache.unread:
            unread.append(f"{path}: {cache.unread[host]}")
        elif dyn is not None:
            needs.update(dyn.needed)
    unread += [f"{path}: more than {_MAX_OBJECTS} shared objects; not read" for path in found[_MAX_OBJECTS:]]
    cache.save()
    objects = tuple(posixpath.relpath(p, dist.location) for p in found)
    return LlamaCppBuild(directory, objects, tuple(sorted(needs)), tuple(unread), Source(SourceKind.FILE, directory))
