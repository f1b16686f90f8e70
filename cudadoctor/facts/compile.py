"""The facts of torch.compile's GPU path: what Triton needs on the machine to build and run a kernel.

Triton (the compiler ``torch.compile``'s inductor emits GPU kernels with) runs ``ptxas`` on every kernel, links a
small C launcher against the driver's ``libcuda`` with the C compiler it finds, and compiles that launcher against
the target interpreter's ``Python.h``. Which files it looks for, per release, is in compat/triton.toml; these
records say what the probe found, each with where it was read (:mod:`cudadoctor.probes.compile`).
"""

from __future__ import annotations

from packaging.version import Version

from cudadoctor.facts.source import Source
from cudadoctor.record import record

__all__ = ["CCompiler", "CompileEnv", "LibcudaDir", "PtxasBinary", "PythonHeaders"]


@record
class PtxasBinary:
    """One ptxas Triton can run: its bundled one, or the one a variable names."""

    path: str
    #: ``bundled`` (the wheel's own file) or the variable that names it (``TRITON_PTXAS_PATH``)
    chosen_by: str
    present: bool  #: the file exists
    #: the CUDA release of that ptxas (``12.4.99``); None when it could not be read
    version: Version | None
    #: where the version was read: the binary's own "Cuda compilation tools" string, or compat/triton.toml
    source: Source
    #: ``ptxas`` or ``ptxas-blackwell``: the bundled binary this one is for (or stands in for)
    role: str = "ptxas"


@record
class LibcudaDir:
    """A directory Triton's libcuda search or the launcher's link may use, and which driver names it holds."""

    path: str
    #: how the directory came up: ``ld.so.cache``, ``ld.so.conf`` (no readable cache: its directories stand in),
    #: ``LD_LIBRARY_PATH``, ``TRITON_LIBCUDA_PATH``, ``LIBRARY_PATH`` or ``default`` (the linker's default)
    via: str
    #: the ``libcuda`` names the loader cache lists in it (``libcuda.so.1``, ``libcuda.so``)
    cached: tuple[str, ...] = ()
    has_unversioned: bool = False  #: ``libcuda.so`` exists there (a link or a file)
    has_soname: bool = False  #: ``libcuda.so.1`` exists there


@record
class CCompiler:
    """The C compiler Triton would run for its launcher (``CC``, else ``gcc``, else ``clang`` on PATH)."""

    name: str  #: ``gcc``, ``clang`` or the ``CC`` value
    path: str | None  #: where it was found; None when ``CC`` names nothing that exists
    source: Source


@record
class PythonHeaders:
    """``Python.h`` of the target interpreter, where ``sysconfig``'s include path puts it."""

    include_dir: str  #: ``/usr/include/python3.10``
    present: bool
    source: Source


@record
class CompileEnv:
    """What Triton needs to compile a kernel here: ptxas, the driver's libcuda by the names it uses, a C compiler
    and Python.h. Triton's release decides which of these it looks for (compat/triton.toml)."""

    #: the installed Triton distribution (``triton`` or ``pytorch-triton``) and its version; None when none
    triton: str | None
    triton_version: Version | None
    ptxas: tuple[PtxasBinary, ...] = ()
    libcuda_dirs: tuple[LibcudaDir, ...] = ()
    #: where the loader cache was read (``/etc/ld.so.cache (2650 entries)``, or why ld.so.conf stands in)
    cache_note: str = ""
    compiler: CCompiler | None = None
    headers: PythonHeaders | None = None
    #: the variables Triton reads that were set, by name (``TRITON_PTXAS_PATH``, ``TRITON_LIBCUDA_PATH``, ``CC`` …)
    env: tuple[tuple[str, str], ...] = ()
    #: why something could not be looked at (the interpreter's version unknown, a binary unreadable)
    unread: tuple[str, ...] = ()
