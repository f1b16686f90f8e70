"""CD210-CD213: torch.compile's GPU path is ready — what Triton needs to compile a kernel is where it looks.

CD210  the driver's libcuda is found the way the installed Triton looks for it (its assertion and its link)
CD211  the ptxas Triton runs for each GPU knows that GPU's architecture
CD212  a C compiler for Triton's launcher (CC, gcc or clang)
CD213  the target interpreter's Python.h for Triton's launcher

Severity: warn. These break only code that compiles with Triton — ``torch.compile`` on a GPU, and packages that
ship Triton kernels — while torch itself, its eager mode and everything else keep working; the first compiled call
fails with the messages quoted in each docstring. ``--strict`` turns the warnings into failures where the workload
compiles. The rules and their sources are in :mod:`cudadoctor.rules.compile` and compat/triton.toml.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from typing import TYPE_CHECKING

from packaging.version import Version

from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.checks.hostfix import distro_family, is_image
from cudadoctor.facts.compile import CompileEnv, LibcudaDir, PtxasBinary
from cudadoctor.rules.compile import libcuda_lookup, ptxas_knows, ptxas_role, sm_number

if TYPE_CHECKING:
    from cudadoctor.data import CompatMatrix
    from cudadoctor.data.rows import GpuArch, TritonRelease
    from cudadoctor.facts.model import (
        DriverInfo,
        GpuInfo,
        HostInfo,
        InstalledPackage,
        ManagedPlatform,
        PythonEnv,
        RootKind,
        ToolkitInstall,
    )

__all__ = ["CD210", "CD211", "CD212", "CD213"]


def _triton(compile_env: CompileEnv) -> str:
    if compile_env.triton is None or compile_env.triton_version is None:
        raise NotApplicable("triton is not installed (torch.compile's GPU backend): nothing compiles with it here")
    return f"{compile_env.triton} {compile_env.triton_version}"


def _release(compile_env: CompileEnv, matrix: CompatMatrix) -> TritonRelease | None:
    """The installed triton's row of compat/triton.toml; None for pytorch-triton, a local build or an unknown one."""
    version = compile_env.triton_version
    if compile_env.triton != "triton" or version is None or version.local:
        return None
    return matrix.triton_release(version)


def _row(compile_env: CompileEnv, matrix: CompatMatrix) -> TritonRelease:
    name = _triton(compile_env)
    row = _release(compile_env, matrix)
    if row is None:
        raise CannotJudge(f"how {name} looks for its toolchain (not a release in compat/triton.toml)")
    return row


def _launcher_built(
    compile_env: CompileEnv, driver: DriverInfo | None, gpus: tuple[GpuInfo, ...], root_kind: RootKind | None
) -> str:
    """The installed Triton, where its launcher gets built: Triton builds it for NVIDIA GPUs, so nothing is judged on
    a machine with neither a driver nor a GPU, unless the root is an image (the driver comes with the host)."""
    name = _triton(compile_env)
    if driver is None and not gpus and not is_image(root_kind):
        raise NotApplicable("no NVIDIA driver or GPU here (and not an image): Triton compiles nothing for a GPU")
    return name


def _root_prefix(root_kind: RootKind | None, platform: ManagedPlatform | None) -> str:
    """``sudo `` on a host; nothing in an image (a Dockerfile RUN line) or on a managed notebook, which runs as
    root (Colab, Kaggle)."""
    return "" if is_image(root_kind) or platform is not None else "sudo "


def _driver_dirs(driver: DriverInfo | None) -> list[str]:
    """The directories holding the real driver's libcuda (not a stub or a cuda-compat copy), search path first."""
    if driver is None:
        return []
    files = sorted(driver.libcuda_files, key=lambda f: not f.on_search_path)
    return list(dict.fromkeys(posixpath.dirname(f.path) for f in files if f.kind in ("driver", "wsl")))


class CD210(Check):
    """The driver's libcuda is found the way the installed Triton looks for it.

    What it checks: with triton installed, replays its release's search for the driver (compat/triton.toml, read
    from each release's wheel): the directories of the `ldconfig -p` lines naming libcuda.so (2.1-2.3) or
    libcuda.so.1 (3.x), TRITON_LIBCUDA_PATH where the release honours it (2.2 on), LD_LIBRARY_PATH when the
    loader cache names none (2.2 on); Triton's own assertion that one of them holds libcuda.so (2.x) or libcuda.so.1
    (3.x); and the launcher's link, `-lcuda` (needs the unversioned libcuda.so, up to 3.5) or `-l:libcuda.so.1`
    (3.6 on), in those directories, LIBRARY_PATH or the linker's default ones. The loader cache is
    /etc/ld.so.cache as read, or the directories of /etc/ld.so.conf when there is none.

    Why it matters: torch.compile (and any Triton kernel) fails on its first GPU call with "AssertionError:
    libcuda.so cannot found!" (https://github.com/pytorch/pytorch/issues/113521: Colab's loader cache does not list
    /usr/lib64-nvidia) or "/usr/bin/ld: cannot find -lcuda" (https://github.com/pytorch/pytorch/issues/103417),
    while CUDA itself works.

    How to fix: register the driver's directory with the loader cache (`ldconfig <dir>`, or a file in
    /etc/ld.so.conf.d then `ldconfig`); create the unversioned link `ln -s libcuda.so.1 <dir>/libcuda.so` where
    only libcuda.so.1 is there; or point TRITON_LIBCUDA_PATH at the driver's directory (triton 2.2 and later).
    """

    name = "triton-libcuda"
    category = "toolkit"
    severity = Status.WARN

    def check(
        self,
        compile_env: CompileEnv,
        matrix: CompatMatrix,
        driver: DriverInfo | None = None,
        root_kind: RootKind | None = None,
        platform: ManagedPlatform | None = None,
        packages: dict[str, InstalledPackage] | None = None,
        python: PythonEnv | None = None,
        mode: str = "live",
    ) -> Problem | None:
        name = _triton(compile_env)
        if mode.startswith("root:"):
            # the NVIDIA Container Toolkit brings the host's libcuda into the container when it starts
            raise NotApplicable("an image root: the driver's libcuda comes from the host it runs on")
        if driver is None:
            raise NotApplicable("no NVIDIA driver: Triton has no GPU to compile for")
        row = _row(compile_env, matrix)
        verdict = libcuda_lookup(row, compile_env.libcuda_dirs)
        if not verdict.is_problem or verdict.detail is None:
            return None
        lookup = verdict.detail
        shown = ", ".join(d.path for d in lookup.dirs) or "none"
        evidence = {
            "triton": f"{name} (compat/triton.toml: {lookup.how})",
            "directories found": shown,
            "loader cache": compile_env.cache_note or "not read",
        }
        if lookup.failed == "assert":
            message = (
                f"{name} looks for the driver through {lookup.how} and finds {lookup.needs} in none of them "
                f"(directories: {shown}): torch.compile fails with 'AssertionError: libcuda.so cannot found!'"
            )
        else:
            flag = "-lcuda" if lookup.needs == "libcuda.so" else f"-l:{lookup.needs}"
            message = (
                f"{name} links its launcher against {lookup.needs} ({flag}) and no directory it passes ({shown}), "
                f"LIBRARY_PATH or the linker's default directories holds it: torch.compile fails with "
                f"'/usr/bin/ld: cannot find {flag}'"
            )
        if verdict.inferred:
            evidence["inferred"] = verdict.inferred
        remedy = _libcuda_fix(row, lookup.failed, lookup.needs, lookup.dirs, driver, root_kind, platform)
        remedy = _with_torch_upgrade(remedy, row, matrix, packages or {}, python, lambda r: _libcuda_ok(r, compile_env))
        return Problem(message, evidence, remedy)


def _libcuda_ok(row: TritonRelease, compile_env: CompileEnv) -> bool:
    return not libcuda_lookup(row, compile_env.libcuda_dirs).is_problem


def _libcuda_fix(
    row: TritonRelease,
    failed: str,
    needs: str,
    found: tuple[LibcudaDir, ...],
    driver: DriverInfo,
    root_kind: RootKind | None,
    platform: ManagedPlatform | None,
) -> Remediation:
    sudo = _root_prefix(root_kind, platform)
    dirs = _driver_dirs(driver)
    if not dirs:
        return Remediation(
            "No libcuda of the NVIDIA driver was found on disk: install the driver (or start the container with the "
            "GPUs), then run ldconfig so that the loader cache lists it."
        )
    home = dirs[0]
    commands: list[str] = []
    text = ""
    override = next((d for d in found if d.via == "TRITON_LIBCUDA_PATH"), None)
    if override is not None:  # Triton takes the variable's directory as it is
        text = f"{row.libcuda_env}={override.path} holds no {needs}: point it at the driver's directory."
        return Remediation(text, (f"export {row.libcuda_env}={home}",))
    if failed == "assert" and (not found or needs.endswith(".so.1")):
        # ldconfig -p names no libcuda (or a stale one): the driver's directory is not in the loader cache (Colab's
        # /usr/lib64-nvidia, a cache not rebuilt since the driver came).
        text = (
            f"The loader cache does not list the driver's libcuda in {home}: add the directory to the cache "
            "(`ldconfig DIR` adds it until the next full rebuild; a file in /etc/ld.so.conf.d keeps it)."
        )
        commands.append(f"{sudo}ldconfig {home}")
        if row.libcuda_env:
            text += f" Or point {row.libcuda_env} at it (no root needed)."
            commands.append(f"export {row.libcuda_env}={home}")
    else:
        # the link goes where Triton looks: a directory it found that holds the soname, else the driver's own
        home = next((d.path for d in found if d.has_soname), home)
        link = posixpath.join(home, "libcuda.so")
        text = (
            f"{home} holds libcuda.so.1 but not the unversioned libcuda.so that triton {row.version} needs: "
            "create the link (what the driver's development package installs), then refresh the loader cache."
        )
        commands.append(f"{sudo}ln -s libcuda.so.1 {link} && {sudo}ldconfig")
    return Remediation(text, tuple(commands))


def _with_torch_upgrade(
    remedy: Remediation,
    row: TritonRelease,
    matrix: CompatMatrix,
    packages: dict[str, InstalledPackage],
    python: PythonEnv | None,
    works: Callable[[TritonRelease], bool],
) -> Remediation:
    """The remedy, plus the nearest newer torch whose pinned triton would work here (``works(row)``), if any."""
    from cudadoctor.fixes.build import pip
    from cudadoctor.fixes.machine import installed_versions
    from cudadoctor.fixes.torch import torch_build_install

    torch = packages.get("torch")
    if torch is None or Version(torch.version.public) not in row.torch:  # a torch that does not pin this triton
        return remedy
    current = matrix.torch_release(Version(torch.version.public))
    if current is None or torch.cuda_variant is None:
        return remedy
    newer = sorted((r for r in matrix.torch_releases if r.version > current.version), key=lambda r: r.version)
    for candidate in newer:
        pinned = matrix.triton_pinned_by(candidate.version)
        if pinned is None or not works(pinned):
            continue
        if python is not None and python.version and not matrix.torch_publishes_for_python(candidate, python.version):
            continue
        command = torch_build_install(matrix, candidate, torch.cuda_variant, installed_versions(packages))
        if command is None:
            continue
        text = (
            f"{remedy.text} Or upgrade torch: {candidate.version} pins triton {pinned.version}, whose search works "
            "here (compat/triton.toml)."
        )
        return Remediation(text, (*remedy.commands, pip(command)))
    return remedy


class CD211(Check):
    """The ptxas Triton runs for each GPU knows that GPU's architecture.

    What it checks: with triton installed, for each GPU, the ptxas Triton would run for it — the file
    TRITON_PTXAS_PATH (TRITON_PTXAS_BLACKWELL_PATH for the second binary of triton 3.3 and 3.6 on) names, else the
    one its wheel bundles (compat/triton.toml: ptxas 12.0 in 2.0.0 up to 12.9 / 13.4 in 3.9.0, read from the
    wheels) — exists, and its CUDA release compiles for the GPU's compute capability (the first CUDA that does,
    compat/gpu_archs.toml; inferred from how CUDA's compilers work).

    Why it matters: Triton runs ptxas on every kernel; an older one stops torch.compile with "ptxas fatal : Value
    'sm_121a' is not defined for option 'gpu-name'" on a GPU newer than it
    (https://github.com/triton-lang/triton/issues/8539), and a missing one with "RuntimeError: Cannot find ptxas".

    How to fix: upgrade to a torch whose pinned triton bundles a ptxas that knows the GPU (compat/triton.toml),
    or set TRITON_PTXAS_PATH to the ptxas of a CUDA toolkit new enough (`export
    TRITON_PTXAS_PATH=/usr/local/cuda-12.8/bin/ptxas`).
    """

    name = "triton-ptxas-arch"
    category = "toolkit"
    severity = Status.WARN

    def check(
        self,
        compile_env: CompileEnv,
        matrix: CompatMatrix,
        gpus: tuple[GpuInfo, ...] = (),
        toolkits: tuple[ToolkitInstall, ...] = (),
        packages: dict[str, InstalledPackage] | None = None,
        python: PythonEnv | None = None,
    ) -> Problem | None:
        name = _triton(compile_env)
        if not gpus:
            raise NotApplicable("no GPU: Triton has nothing to compile for")
        row = _release(compile_env, matrix)
        bad: list[str] = []
        evidence: dict[str, str] = {"triton": name}
        needed: Version | None = None
        roles: set[str] = set()
        for gpu in gpus:
            cc = gpu.compute_capability
            sm = sm_number(cc) if cc else None
            if cc is None or sm is None:
                raise CannotJudge(f"the compute capability of GPU {gpu.index} ({gpu.name})")
            role = ptxas_role(row, sm)
            binary = _binary(compile_env.ptxas, role)
            if binary is None or not binary.present:
                where = binary.path if binary is not None else f"{role} in {name}"
                bad.append(f"GPU {gpu.index} ({gpu.name}, sm_{sm}): no {role} at {where}")
                continue
            if binary.version is None:
                why = "; ".join(compile_env.unread) or binary.path
                raise CannotJudge(f"the CUDA release of {binary.path} ({why})")
            verdict = ptxas_knows(binary.version, matrix.gpu_arch(cc), cc, _family(matrix, cc))
            evidence[f"GPU {gpu.index} {gpu.name}"] = f"sm_{sm}: {role} {binary.version} ({binary.source})"
            if verdict.is_unknown:
                raise CannotJudge(verdict.missing)
            if verdict.is_problem:
                bad.append(
                    f"GPU {gpu.index} ({gpu.name}, sm_{sm}) needs {verdict.required}; {binary.chosen_by} "
                    f"{role} {binary.path} is {binary.version}"
                )
                roles.add(role)
                first = verdict.detail
                if first is not None and (needed is None or first > needed):
                    needed = first
                evidence["inferred"] = verdict.inferred
        if not bad:
            return None
        message = (
            "; ".join(bad)
            + ": torch.compile fails on these GPUs ('ptxas fatal : Value 'sm_NN' is not defined', or 'Cannot find "
            "ptxas')"
        )
        return Problem(
            message, evidence, _ptxas_fix(row, needed, roles, toolkits, matrix, packages or {}, python, gpus)
        )


def _family(matrix: CompatMatrix, compute_capability: str) -> GpuArch | None:
    """The ``X.0`` row of a compute capability's major (8.0 for 8.6)."""
    return matrix.gpu_arch(compute_capability.split(".")[0] + ".0")


def _binary(found: tuple[PtxasBinary, ...], role: str) -> PtxasBinary | None:
    """The ptxas Triton runs for ``role``: the variable's file when it exists (tried first), else the bundled one."""
    chosen = [b for b in found if b.role == role]
    return next((b for b in chosen if b.chosen_by != "bundled" and b.present), None) or next(
        (b for b in chosen if b.chosen_by == "bundled"), chosen[0] if chosen else None
    )


def _ptxas_fix(
    row: TritonRelease | None,
    needed: Version | None,
    roles: set[str],
    toolkits: tuple[ToolkitInstall, ...],
    matrix: CompatMatrix,
    packages: dict[str, InstalledPackage],
    python: PythonEnv | None,
    gpus: tuple[GpuInfo, ...],
) -> Remediation:
    commands: list[str] = []
    text = "Reinstall triton: its bundled ptxas is missing." if needed is None else ""
    if needed is not None:
        text = f"Triton needs a ptxas of CUDA {needed} or newer for these GPUs."
        fitting = [
            t for t in toolkits if (v := t.nvcc_version or t.version) and Version(f"{v.major}.{v.minor}") >= needed
        ]
        variable = "TRITON_PTXAS_PATH"
        if row is not None and roles == {"ptxas-blackwell"}:
            variable = row.ptxas_blackwell_env or variable
        if fitting and variable.isidentifier():
            tk = fitting[0]
            text += f" The toolkit at {tk.root} has one: point {variable} at it."
            commands.append(f"export {variable}={posixpath.join(tk.root, 'bin', 'ptxas')}")
    if row is not None and needed is not None:

        def works(candidate: TritonRelease) -> bool:
            for gpu in gpus:
                sm = sm_number(gpu.compute_capability or "")
                if sm is None:
                    return False
                role = ptxas_role(candidate, sm)
                version = candidate.ptxas_blackwell if role == "ptxas-blackwell" else candidate.ptxas
                cc = gpu.compute_capability or ""
                if version is None or not ptxas_knows(version, matrix.gpu_arch(cc), cc, _family(matrix, cc)).is_ok:
                    return False
            return True

        return _with_torch_upgrade(Remediation(text, tuple(commands)), row, matrix, packages, python, works)
    return Remediation(text, tuple(commands))


#: The distributions' packages, by family: the C compiler (Debian/Ubuntu ``gcc``, https://packages.ubuntu.com/gcc;
#: Fedora/RHEL ``gcc``, https://packages.fedoraproject.org/pkgs/gcc/gcc/) and the interpreter's headers
#: (Debian/Ubuntu ``pythonX.Y-dev``, e.g. https://packages.ubuntu.com/jammy/python3.10-dev; Fedora/RHEL
#: ``python3-devel``, https://packages.fedoraproject.org/pkgs/python3.12/python3-devel/).
_INSTALL = {"deb": "apt-get install -y", "rpm": "dnf install -y"}


def _install(host: HostInfo, root_kind: RootKind | None, platform: ManagedPlatform | None, package: str) -> str | None:
    family = distro_family(host.distro)
    if family is None:
        return None
    sudo = _root_prefix(root_kind, platform)
    update = f"{sudo}apt-get update && " if family == "deb" else ""
    return f"{update}{sudo}{_INSTALL[family]} {package}"


class CD212(Check):
    """Triton finds a C compiler for its launcher.

    What it checks: with triton installed on a machine with an NVIDIA driver or GPU (or in an image root), the
    compiler Triton's `_build` runs for the small C launcher of every
    kernel: `CC` as given, else `gcc`, else `clang` on PATH (every release 2.0-3.9, compat/notes/triton.md), is
    there. Its execute bit is not checked.

    Why it matters: without one torch.compile fails on its first GPU call with "RuntimeError: Failed to find C
    compiler. Please specify via CC environment variable." (https://github.com/apple/ml-cross-entropy/issues/5),
    typical of slim container images (python:3.x-slim, pytorch/pytorch's runtime images).

    How to fix: install the distribution's gcc (`apt-get install -y gcc`, `dnf install -y gcc`), or set CC to a
    compiler that exists.
    """

    name = "triton-c-compiler"
    category = "toolkit"
    severity = Status.WARN

    def check(
        self,
        compile_env: CompileEnv,
        host: HostInfo,
        root_kind: RootKind | None = None,
        platform: ManagedPlatform | None = None,
        driver: DriverInfo | None = None,
        gpus: tuple[GpuInfo, ...] = (),
    ) -> Problem | None:
        name = _launcher_built(compile_env, driver, gpus, root_kind)
        cc = compile_env.compiler
        if cc is not None and cc.path is not None:
            return None
        command = _install(host, root_kind, platform, "gcc")
        if cc is not None:
            message = f"CC={cc.name!r} names no file on PATH: {name} runs it to build its launcher and fails"
            evidence = {"CC": f"{cc.name} ({cc.source})"}
        else:
            message = (
                f"no C compiler (CC unset; no gcc or clang on PATH): {name} cannot build its launcher, torch.compile "
                "fails with 'RuntimeError: Failed to find C compiler'"
            )
            evidence = {"looked for": "CC, gcc, clang on PATH"}
        text = "Install a C compiler (gcc)" + (", or set CC to one that exists." if cc is not None else ".")
        if command is None:
            text += " This distribution's package manager is not one cudadoctor knows: install gcc with it."
        return Problem(message, evidence, Remediation(text, (command,) if command else ()))


class CD213(Check):
    """The target interpreter's Python.h is there for Triton's launcher.

    What it checks: with triton installed on a machine with an NVIDIA driver or GPU (or in an image root), whether
    `Python.h` is in the include directory Triton passes to the
    compiler (sysconfig's `include` path of the posix_prefix scheme: `<base prefix>/include/pythonX.Y`; a venv's base
    prefix is the directory above its pyvenv.cfg `home`).

    Why it matters: Triton compiles a C launcher that includes Python.h for every kernel; without the interpreter's
    development headers torch.compile fails with "fatal error: Python.h: No such file or directory"
    (https://github.com/theroyallab/tabbyAPI/issues/453).

    How to fix: install the headers of that interpreter: Debian/Ubuntu `pythonX.Y-dev`, Fedora/RHEL
    `python3-devel` for the system's Python; a self-built or downloaded interpreter needs its own include directory.
    """

    name = "triton-python-headers"
    category = "toolkit"
    severity = Status.WARN

    def check(
        self,
        compile_env: CompileEnv,
        host: HostInfo,
        python: PythonEnv | None = None,
        root_kind: RootKind | None = None,
        platform: ManagedPlatform | None = None,
        driver: DriverInfo | None = None,
        gpus: tuple[GpuInfo, ...] = (),
    ) -> Problem | None:
        name = _launcher_built(compile_env, driver, gpus, root_kind)
        headers = compile_env.headers
        if headers is None:
            why = "; ".join(u for u in compile_env.unread if u.startswith("Python.h")) or "not looked for"
            raise CannotJudge(f"where the target interpreter's Python.h would be ({why})")
        if headers.present:
            return None
        message = (
            f"no Python.h in {headers.include_dir}: {name} cannot compile its launcher, torch.compile fails with "
            "'fatal error: Python.h: No such file or directory'"
        )
        evidence = {"looked at": str(headers.source)}
        command = None
        version = python.version if python is not None else None
        system = headers.include_dir.startswith("/usr/include/")
        # Debian and Ubuntu name the headers per interpreter (pythonX.Y-dev); Fedora/RHEL's python3-devel is only the
        # default interpreter's, so no command is printed there (the text names the package family).
        if system and version is not None and distro_family(host.distro) == "deb":
            command = _install(host, root_kind, platform, f"python{version.major}.{version.minor}-dev")
        if command is not None:
            text = "Install the system interpreter's development headers."
        else:
            text = (
                f"Install the development headers of the interpreter whose include directory is {headers.include_dir} "
                "(its distribution's -dev/-devel package, or reinstall it with its headers)."
            )
        return Problem(message, evidence, Remediation(text, (command,) if command else ()))


def _release_of(version: Version) -> Version:
    """``12.8.93`` -> ``12.8``."""
    return Version(f"{version.major}.{version.minor}")
