"""Whether Triton (torch.compile's GPU compiler) can build its launcher and compile kernels here: the driver's
libcuda found the way its release looks, and a ptxas that knows each GPU's architecture.

Triton's lookups per release are compat/triton.toml's (read from each release's wheel; compat/notes/triton.md):

* ``ldconfig`` releases read ``/sbin/ldconfig -p`` and keep the directories of the lines containing
  ``libcuda_cache_match`` (``TRITON_LIBCUDA_PATH`` replaces that search where ``libcuda_env`` names it; with no
  matching line, the LD_LIBRARY_PATH directories holding ``libcuda_dir_needs`` where ``ld_library_path_fallback``),
  then assert one directory holds ``libcuda_dir_needs``: "AssertionError: libcuda.so cannot found!". The launcher
  is then linked with ``-L`` those directories and ``-lcuda`` (``libcuda.so``) or ``-l:libcuda.so.1``; the linker
  also searches ``LIBRARY_PATH`` and its defaults (*inferred*: the loader's default directories stand in for GNU
  ld's built-in list), else "/usr/bin/ld: cannot find -lcuda".
* 2.0.0 runs ``whereis libcuda.so`` and links ``-lcuda`` (*inferred*: whereis's system directories are taken as
  the loader's default ones).
* ptxas: a ptxas of CUDA X.Y compiles for compute capability ``cc`` when ``first_cuda(cc) <= X.Y`` and, for an
  architecture a CUDA major dropped, ``X <= last_cuda_major`` (compat/gpu_archs.toml; *inferred* from how CUDA's
  compilers work, not a table of ptxas itself).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from packaging.version import Version

from cudadoctor.facts.compile import LibcudaDir
from cudadoctor.record import record
from cudadoctor.rules.verdict import Verdict, cannot_judge, fails, fits

if TYPE_CHECKING:
    from cudadoctor.data.rows import GpuArch, TritonRelease

__all__ = ["LibcudaLookup", "holds", "libcuda_lookup", "ptxas_knows", "ptxas_role", "sm_number"]

_CACHE_VIAS = ("ld.so.cache", "ld.so.conf")


@record
class LibcudaLookup:
    """What Triton's search found: the directories it returns, and the step that failed (``""`` when none)."""

    dirs: tuple[LibcudaDir, ...]
    #: ``assert`` (Triton's own assertion) or ``link`` (the launcher's link); ``""`` when both pass
    failed: str = ""
    #: the file that step needed (``libcuda.so`` / ``libcuda.so.1``)
    needs: str = ""
    #: how the directories were chosen (``TRITON_LIBCUDA_PATH``, ``ld.so.cache``, ``LD_LIBRARY_PATH``, ``whereis``)
    how: str = ""


def holds(directory: LibcudaDir, name: str) -> bool:
    """The directory holds ``libcuda.so`` or ``libcuda.so.1``."""
    return directory.has_soname if name.endswith(".so.1") else directory.has_unversioned


def _link_dirs(found: tuple[LibcudaDir, ...], dirs: tuple[LibcudaDir, ...]) -> tuple[LibcudaDir, ...]:
    return found + tuple(d for d in dirs if d.via in ("LIBRARY_PATH", "default"))


def libcuda_lookup(row: TritonRelease, dirs: tuple[LibcudaDir, ...]) -> Verdict[LibcudaLookup]:
    """Triton ``row``'s libcuda search over the directories the probe saw (see the module docstring)."""
    rule = "triton-libcuda"
    link = row.libcuda_link_needs
    if row.libcuda_lookup == "whereis":
        found = tuple(d for d in dirs if d.via == "default" and d.has_unversioned)
        how = "whereis libcuda.so (the system library directories)"
        inferred = "whereis's directories are taken as the loader's default ones"
    else:
        needs = row.libcuda_dir_needs or link
        override = next((d for d in dirs if d.via == "TRITON_LIBCUDA_PATH"), None) if row.libcuda_env else None
        inferred = ""
        if override is not None:  # returned as it is: Triton checks nothing in it
            found, how = (override,), str(row.libcuda_env)
        else:
            match = row.libcuda_cache_match or needs
            found = tuple(d for d in dirs if d.via in _CACHE_VIAS and any(match in n for n in d.cached))
            how = f"ldconfig -p lines containing {match}"
            if not found and row.ld_library_path_fallback:
                found = tuple(d for d in dirs if d.via == "LD_LIBRARY_PATH" and holds(d, needs))
                how = f"LD_LIBRARY_PATH directories holding {needs} (no ldconfig -p line contains {match})"
            if not any(holds(d, needs) for d in found):
                return fails(rule, how, needs, LibcudaLookup(found, "assert", needs, how))
    if not any(holds(d, link) for d in _link_dirs(found, dirs)):
        return fails(rule, how, link, LibcudaLookup(found, "link", link, how), inferred=inferred or _LINK_INFERRED)
    return fits(rule, how, LibcudaLookup(found, "", "", how), inferred=inferred)


_LINK_INFERRED = "the linker's default directories are taken as the loader's"


def sm_number(compute_capability: str) -> int | None:
    """``"12.0"`` -> 120, the number Triton compares (``capability = major * 10 + minor``)."""
    major, _, minor = compute_capability.partition(".")
    if not major.isdigit() or not minor[:1].isdigit():
        return None
    return int(major) * 10 + int(minor[:1])


def ptxas_role(row: TritonRelease | None, sm: int) -> str:
    """Which bundled ptxas Triton gives a GPU: ``ptxas-blackwell`` from the row's ``blackwell_from`` on."""
    if row is not None and row.blackwell_from is not None and sm >= row.blackwell_from:
        return "ptxas-blackwell"
    return "ptxas"


def ptxas_knows(
    version: Version, arch: GpuArch | None, compute_capability: str, family: GpuArch | None = None
) -> Verdict[Version]:
    """Whether a ptxas of CUDA ``version`` compiles for ``compute_capability`` (see the module docstring).

    Where the table has no first CUDA for the compute capability (8.6, 8.7) but has one for its major's ``X.0``
    (``family``), a ptxas of a later CUDA major knows it (*inferred*: the minor revisions of an architecture came
    within the CUDA major that introduced it); an earlier or the same major could not be judged."""
    rule = "ptxas-arch"
    release = Version(f"{version.major}.{version.minor}")
    first = family.first_cuda if family is not None else None
    revision = arch is not None and arch.first_cuda is None and arch.last_cuda_major is None
    if revision and first is not None and release.major > first.major:
        why = (
            f"compat/gpu_archs.toml gives compute capability {compute_capability.split('.')[0]}.0 CUDA "
            f"{first}; its revision {compute_capability} came within CUDA {first.major}"
        )
        return fits(rule, why, first, inferred=why)
    if arch is None or arch.first_cuda is None:
        return cannot_judge(rule, f"the first CUDA that compiles for compute capability {compute_capability}")
    why = f"compat/gpu_archs.toml: compute capability {compute_capability} needs CUDA {arch.first_cuda} or newer"
    if arch.renumbered_in_cuda is not None and release >= arch.renumbered_in_cuda:
        return cannot_judge(rule, f"which target CUDA {release} gives compute capability {compute_capability}")
    if release < arch.first_cuda:
        return fails(rule, f"ptxas {version}", f"CUDA {arch.first_cuda} or newer", arch.first_cuda, inferred=why)
    if arch.last_cuda_major is not None and release.major > arch.last_cuda_major:
        required = f"CUDA {arch.last_cuda_major}.x or older"
        return fails(rule, f"ptxas {version}", required, arch.first_cuda, inferred=f"CUDA {release.major} dropped it")
    return fits(rule, why, arch.first_cuda, inferred=why)
