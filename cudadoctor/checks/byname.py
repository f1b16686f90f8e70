"""CD3xx: CUDA libraries a package links whose only copy is a pip wheel its loader search never reaches."""

# CD307  every CUDA library a package's shared objects link (DT_NEEDED) is found on that object's own search path
#        (RPATH, LD_LIBRARY_PATH, RUNPATH, ld.so.cache, the default directories), not only in a pip wheel's
#        directory that nothing names (onnxruntime-gpu's CUDA provider and the wheels of its [cuda,cudnn] extras)

from __future__ import annotations

import posixpath

from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.checks.loader import unread_reason
from cudadoctor.checks.reuse import loaded_elsewhere
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import InstalledPackage, LinkedFile, LoaderView, NeededLibrary

__all__ = ["CD307", "off_path_links", "older_copy_symptom"]


#: nvJitLink names its entry points by the CUDA minor that added them (__nvJitLinkAddData_12_1 is CUDA 12.1's,
#: __nvJitLinkComplete_12_4 CUDA 12.4's: pytorch/pytorch#111469, #140797; https://docs.nvidia.com/cuda/nvjitlink/), so
#: a needer built with a newer minor than the copy that loads fails on such a symbol; the other CUDA-numbered
#: libraries version their symbols under the soname.
_CUDA_NUMBERED = ("libcudart.so.", "libcublas.so.", "libcublasLt.so.", "libcusparse.so.", "libnvrtc.so.")


def older_copy_symptom(soname: str, loaded: object) -> str | None:
    """The error a needer built with a newer CUDA minor meets when the older copy ``loaded`` (a Version) of a
    CUDA-numbered library loads: ``undefined symbol: __nvJitLink…_12_N, version libnvJitLink.so.12`` for an N above the
    loaded minor; None for libraries numbered on their own (cuDNN, NCCL …), whose mismatches read otherwise."""
    release: tuple[int, ...] = tuple(getattr(loaded, "release", ()))
    if len(release) < 2:
        return None
    if soname.startswith("libnvJitLink.so."):
        return (
            f"'undefined symbol: __nvJitLink…_{release[0]}_N, version {soname}' for an N above {release[1]} "
            "(as __nvJitLinkAddData_12_1 or __nvJitLinkComplete_12_4)"
        )
    if soname.startswith(_CUDA_NUMBERED):
        return f"'undefined symbol: …, version {soname}' for what CUDA after {release[0]}.{release[1]} added"
    return None


def off_path_links(loader: LoaderView) -> list[tuple[NeededLibrary, LinkedFile]]:
    """(need, the wheel copy) of each library a package's object links whose only copy sits in a pip wheel directory
    off that object's search path (the loader's view keeps such a copy as ``loaded`` with ``via`` saying so).

    The NVIDIA wheels' own needs of each other are left out: the framework that loads them loads their
    dependencies first (torch's RPATH, JAX's and torch's preloads), which the view models per framework.
    """
    return [
        (need, need.loaded)
        for need in loader.needs
        if need.how == "DT_NEEDED"
        and not need.optional
        and not need.package.startswith("nvidia-")
        and need.loaded is not None
        and need.loaded.distribution
        and need.loaded.via.startswith("wheel")
    ]


def _preload_call(matrix: CompatMatrix | None, package: InstalledPackage | None, dirs: set[str]) -> str | None:
    """The call the package offers that loads every one of ``dirs``'s libraries by full path
    (``onnxruntime.preload_dlls()``, compat/runtime_libraries.toml ``on_call``), or None."""
    if matrix is None or package is None:
        return None
    for row in matrix.preload_calls_for(package.name, package.version):
        folders = {"nvidia/" + posixpath.dirname(lib) for lib in row.libraries}
        if all(any(d.endswith("/" + f) for f in folders) for d in dirs):
            return row.call
    return None


class CD307(Check):
    """Every CUDA library a package's shared objects link is found on their own loader search path.

    What it checks: the CUDA libraries (cuDNN, cuBLAS, cuFFT, cuRAND, NVRTC, cudart …) that an installed package's
    shared objects name in DT_NEEDED, when the only copy is in a pip wheel's directory (site-packages/nvidia/*/lib)
    that the object's RPATH/RUNPATH does not name and LD_LIBRARY_PATH, /etc/ld.so.cache and the default
    directories do not hold. onnxruntime-gpu's CUDA provider is such an object: it has no RUNPATH into the wheels
    its [cuda,cudnn] extras install (compat/runtime_libraries.toml). An error when no installed package loads that
    copy by itself; a warning when one does (torch, through its RPATH): then it works only when that package is
    imported first. Could not judge when the loader's view could not read every shared object.

    Why it matters: ld.so does not search site-packages: the object fails to load ("libcudnn.so.9: cannot open
    shared object file", "Failed to load library libonnxruntime_providers_cuda.so") and onnxruntime falls back
    to the CPU provider, although `pip install nvidia-cudnn-cu12` was done.

    How to fix: put the wheels' library directories on LD_LIBRARY_PATH before starting Python (the command shown),
    or load them first: onnxruntime 1.21 and later offer onnxruntime.preload_dlls(); a compatible torch imported
    first loads them too.
    """

    name = "linked-cuda-libraries-on-search-path"
    category = "wheels"
    severity = Status.FAIL

    def check(
        self,
        loader: LoaderView | None = None,
        packages: dict[str, InstalledPackage] | None = None,
        matrix: CompatMatrix | None = None,
    ) -> Problem | None:
        unread = unread_reason(loader)
        if loader is None or not loader.needs:
            if unread:
                raise CannotJudge(unread)
            raise NotApplicable("no installed package needs a CUDA library")
        off = off_path_links(loader)
        if not off:
            if unread:
                raise CannotJudge(unread)
            return None
        elsewhere = loaded_elsewhere(loader)
        alone = [(n, c) for n, c in off if (n.soname, c.path) not in elsewhere]
        dirs = sorted({posixpath.dirname(c.path) for _n, c in off})
        package = (packages or {}).get(off[0][0].package)
        call = _preload_call(matrix, package, set(dirs))
        names = ", ".join(sorted({f"{n.soname} ({c.distribution})" for n, c in off}))
        needers = ", ".join(sorted({f"{n.package}'s {posixpath.basename(n.needer)}" for n, _c in off}))
        lonely = ", ".join(sorted({n.soname for n, _c in alone}))
        when = (
            f"nothing installed loads {lonely} first, so loading it fails "
            f"('{alone[0][0].soname}: cannot open shared object file')"
            if alone
            else "they load only because another package (torch) loads them first: import it before this one"
        )
        text = "Put the wheels' library directories on LD_LIBRARY_PATH before starting Python"
        if call:
            text += f", or call {call} before the package loads its GPU code"
        if not alone:
            text += ", or keep importing the package that loads them first"
        return Problem(
            f"{needers} links {names}, but only pip wheel directories hold them and its loader search (RPATH, "
            f"LD_LIBRARY_PATH, RUNPATH, ld.so.cache, default directories) reaches none of them: {when}",
            {f"{n.package}: {n.soname}": f"needed by {n.needer}; only copy {c.path}" for n, c in off},
            Remediation(text + ".", (f"export LD_LIBRARY_PATH={':'.join(dirs)}:$LD_LIBRARY_PATH",)),
            status=Status.FAIL if alone else Status.WARN,
        )
