"""CD8xx: what child processes saw at run time (``check --deep``): cuInit, each framework, the libraries loaded."""

# CD8xx: runtime (check --deep)
#   CD801  cuInit succeeds
#   CD802  every installed framework imports and runs one GPU operation
#   CD803  the cuDNN a framework loaded is the copy it pins and not older than its build
#   CD804  the NCCL a framework loaded is the copy it pins and not older than its build
#   CD805  the GPU code a framework carries runs on every GPU it sees

from __future__ import annotations

import posixpath
import re
from dataclasses import field
from typing import TYPE_CHECKING, Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudadoctor.bounded import requirement_or_none
from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.checks.packages import unmet_requirements
from cudadoctor.data import CompatMatrix
from cudadoctor.data.rows import CudaError
from cudadoctor.facts.derive import GpuEvidence, ld_library_path
from cudadoctor.facts.model import DriverInfo, GpuInfo, HostInfo, InstalledPackage, LibraryCopy, VisibleDevices
from cudadoctor.facts.names import canonical_name
from cudadoctor.facts.runtime import DriverApiResult, FrameworkRuntime, LoadedLibrary, RuntimeInfo
from cudadoctor.record import mutable_record
from cudadoctor.rules.archs import covers

if TYPE_CHECKING:
    from packaging.requirements import Requirement

__all__ = [
    "CD801",
    "CD802",
    "CD803",
    "CD804",
    "CD805",
    "CD806",
    "CudaErrorInfo",
    "arch_runs_on",
    "cuda_error",
    "symbol_owner",
]


# --- the error table (compat/cuda_errors.toml) ----------------------------------------------------


#: One record of compat/cuda_errors.toml: a CUDA error code and what it means for the environment.
CudaErrorInfo = CudaError


def cuda_error(matrix: CompatMatrix, code: int | str, api: str = "driver") -> CudaErrorInfo | None:
    """The record for an error code (``803``) or name (``CUDA_ERROR_NO_DEVICE``), preferring ``api``'s."""
    found = [e for e in matrix.cuda_errors if e.code == code or e.name == code]
    return next((e for e in found if e.api == api), found[0] if found else None)


# Error codes as frameworks print them: torch "Error 803: …", JAX "cuInit(0) failed: CUDA_ERROR_NO_DEVICE",
# CuPy "cudaErrorSystemDriverMismatch".
_CODE_IN_TEXT = re.compile(r"\b(?:Error|error|code=)\s*(\d{2,3})\b|\b(CUDA_ERROR_[A-Z_]+|cudaError[A-Za-z]+)\b")


def _error_in_text(matrix: CompatMatrix, *texts: str | None) -> CudaErrorInfo | None:
    for text in texts:
        for match in _CODE_IN_TEXT.finditer(text or ""):
            found = cuda_error(matrix, int(match.group(1)) if match.group(1) else match.group(2))
            if found is not None:
                return found
    return None


# --- shared helpers -------------------------------------------------------------------------------


def _ld_library_path(host: HostInfo | None) -> tuple[str, ...] | None:
    return ld_library_path(host) if host is not None else None


def _without(host: HostInfo | None, drop: Any) -> tuple[str, ...]:
    """The command that takes the LD_LIBRARY_PATH entries for which ``drop(entry)`` holds out of it."""
    entries = _ld_library_path(host)
    if entries is None:
        return ()
    kept = [p for p in entries if not drop(posixpath.normpath(p))]
    if len(kept) == len(entries):
        return ()
    return (f"export LD_LIBRARY_PATH={':'.join(kept)}",) if kept else ("unset LD_LIBRARY_PATH",)


def _sentence(text: str) -> str:
    text = text.strip()
    return (text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")) if text else text


def _label(fw: FrameworkRuntime, packages: dict[str, InstalledPackage] | None = None) -> str:
    installed = (packages or {}).get(fw.distribution)
    version = fw.version or (installed.version if installed else None)
    return f"{fw.framework} {version}" if version else fw.framework


def _gpu_frameworks(runtime: RuntimeInfo) -> list[FrameworkRuntime]:
    """The frameworks that were tried and can use an NVIDIA GPU (CPU builds are CD402's business)."""
    return [fw for fw in runtime.frameworks if fw.gpu_build is not False]


def _canon_dir(directory: str) -> str:
    """A directory comparable across the usual aliases: the kernel names mapped files by their real
    path (/usr/lib/… where a merged /usr makes /lib a link to it; a venv's lib/ where lib64 links to
    it), while the file probes keep the path they searched."""
    directory = posixpath.normpath(directory)
    if directory.startswith("/usr/lib"):
        directory = directory[len("/usr") :]
    return directory.replace("/lib64/python", "/lib/python")


def _norm_dir(path: str) -> str:
    """:func:`_canon_dir` of a file's directory."""
    return _canon_dir(posixpath.dirname(posixpath.normpath(path)))


def _copy_of(path: str, copies: tuple[LibraryCopy, ...]) -> LibraryCopy | None:
    """The installed copy a mapped library file belongs to (same directory as one of its files)."""
    directory = _norm_dir(path)
    for copy in copies:
        files = copy.lib_paths or ((copy.path,) if copy.path.endswith(".so") or ".so." in copy.path else ())
        if any(_norm_dir(f) == directory for f in files):
            return copy
    return None


def _describe_copy(copy: LibraryCopy | None, lib: LoadedLibrary) -> str:
    if copy is None:
        return f"{lib.path} (a copy cudadoctor did not find installed)"
    dist = f" {copy.distribution}" if copy.distribution else ""
    return f"{lib.path} ({copy.origin}{dist} {copy.version or 'unknown version'})"


# --- CD801 ----------------------------------------------------------------------------------------


class CD801(Check):
    """cuInit succeeds: the CUDA driver initialises and sees the GPUs.

    What it checks: a child process of the target interpreter loads libcuda.so.1 with ctypes and calls
    cuDriverGetVersion and cuInit(0) (check --deep only). A failing cuInit is translated into its cause
    from compat/cuda_errors.toml and tied to what was observed: the libcuda file the process mapped,
    the kernel module's version, LD_LIBRARY_PATH, CUDA_VISIBLE_DEVICES and the /dev/nvidia* nodes.

    Why it matters: cuInit is what every CUDA program runs first. NVML and nvidia-smi do not go
    through it, so they can look healthy while cuInit fails: on a real H200 an older cuda-compat libcuda
    first on LD_LIBRARY_PATH made cuInit return 803 with nvidia-smi fully healthy, and frameworks then
    blame themselves ("a CUDA-enabled jaxlib is not installed").

    How to fix: follow the cause named for the error code: remove a cuda-compat or stubs directory from
    LD_LIBRARY_PATH (803, 804, 34), unset CUDA_VISIBLE_DEVICES or give the container its GPUs (100),
    start NVIDIA Fabric Manager (802), load the nvidia_uvm module or reboot after a driver upgrade (999).
    """

    name = "cuinit-succeeds"
    category = "driver"

    def check(
        self,
        runtime: RuntimeInfo,
        matrix: CompatMatrix,
        driver: DriverInfo | None = None,
        visible: VisibleDevices | None = None,
        host: HostInfo | None = None,
        gpus: tuple[GpuInfo, ...] = (),
        gpu_evidence: GpuEvidence | None = None,
    ) -> Problem | None:
        api = runtime.driver
        if api is None:
            raise NotApplicable("the driver-API probe did not run")
        if api.error is not None and api.init_rc is None and api.load_error is None:
            return _probe_failed(api, runtime)
        if api.load_error is not None:
            if driver is None and gpu_evidence is None:
                raise NotApplicable("no NVIDIA driver or GPU found: there is no libcuda to load")
            return _load_failed(api.load_error, api)
        if api.init_rc is None:
            raise CannotJudge("cuInit was not reached")
        if api.init_rc == 0:
            return None
        code = api.init_rc
        info = cuda_error(matrix, code)
        name = api.init_error_name or (info.name if info else "an error not in compat/cuda_errors.toml")
        evidence = _cuinit_evidence(code, name, api, driver, visible, host, info)
        detail, commands = _diagnose(code, api, driver, visible, host, gpus)
        cause = detail or (info.cause if info else "cudadoctor has no explanation for this code")
        fix = info.fix if info else "See the CUDA driver API documentation for this code."
        return Problem(
            f"cuInit fails with {code} {name}: {cause}",
            evidence,
            Remediation(_sentence(fix), commands),
        )


def _load_failed(load_error: str, api: DriverApiResult) -> Problem:
    return Problem(
        f"libcuda.so.1 cannot be loaded ({load_error}): no CUDA program can start",
        {"dlopen libcuda.so.1": load_error, "probe": str(api.source)},
        Remediation(
            "Install the NVIDIA driver's user-space libraries for the loaded kernel module; in a container, "
            "run it with the NVIDIA Container Toolkit (--gpus all) so the host's are mounted.",
            (),
        ),
    )


def _cuinit_evidence(
    code: int,
    name: str,
    api: DriverApiResult,
    driver: DriverInfo | None,
    visible: VisibleDevices | None,
    host: HostInfo | None,
    info: CudaErrorInfo | None,
) -> dict[str, str]:
    """What a failing cuInit is judged on: its code, the libcuda mapped, the kernel module, the variables."""
    evidence = {
        "cuInit(0)": f"{code} {name}" + (f' "{api.init_error_string}"' if api.init_error_string else ""),
        "libcuda mapped": api.libcuda_path or "unknown",
        "cuDriverGetVersion": (
            f"{api.version_rc}" + (f" (CUDA {api.cuda_api})" if api.cuda_api else "")
            if api.version_rc is not None
            else "not called"
        ),
    }
    if driver is not None and driver.kernel_module is not None:
        evidence["kernel module"] = f"{driver.kernel_module.version} ({driver.kernel_module.source.where})"
    ld_path = _ld_library_path(host)
    if ld_path is not None:
        evidence["LD_LIBRARY_PATH"] = ":".join(ld_path) or "(empty)"
    if visible is not None and visible.cuda_visible_devices is not None and code == 100:
        evidence["CUDA_VISIBLE_DEVICES"] = repr(visible.cuda_visible_devices)
    if code in (100, 999):
        evidence["device nodes"] = ", ".join(f"/dev/{n}" for n in api.device_nodes) or "none"
    if info is not None and info.observed:
        evidence["seen before"] = info.observed
    return evidence


def _probe_failed(api: DriverApiResult, runtime: RuntimeInfo) -> Problem:
    if api.error_kind == "timeout":
        return Problem(
            f"the driver-API probe did not finish ({api.error}): loading libcuda or cuInit hangs",
            {"probe": str(api.source), "timeout": f"{runtime.timeout:g} s"},
            Remediation(
                "Check the GPUs with nvidia-smi and the kernel log (dmesg) for Xid errors; a GPU that stopped "
                "answering needs a reset or a reboot. Raise the --deep timeout if initialisation is only slow.",
                (),
            ),
            status=Status.WARN,
        )
    if api.error_kind == "not-run":
        raise CannotJudge(f"the driver-API probe could not run: {api.error}")
    return Problem(
        f"the driver-API probe {api.error}: loading libcuda.so.1 or calling the driver broke the process",
        {"probe": str(api.source)},
        Remediation("Check which libcuda.so.1 the loader picks (CD101-CD103) and the kernel log (dmesg).", ()),
    )


def _diagnose(
    code: int,
    api: DriverApiResult,
    driver: DriverInfo | None,
    visible: VisibleDevices | None,
    host: HostInfo | None,
    gpus: tuple[GpuInfo, ...],
) -> tuple[str | None, tuple[str, ...]]:
    """A cause in this machine's terms (names the evidence), and the commands that fix it."""
    path = api.libcuda_path
    mapped_dir = posixpath.dirname(path) if path else None
    kernel = driver.kernel_module.version if driver and driver.kernel_module else None
    if code in (803, 804) and path and "/compat/" in path:
        compat = path.rsplit(".so.", 1)[-1] if ".so." in path else "unknown"
        commands = _without(host, lambda d: posixpath.basename(d) == "compat" or d == mapped_dir)
        if code == 804:
            names = ", ".join(sorted({g.name for g in gpus})) or "this GPU"
            return (
                f"the process uses the cuda-compat libcuda {path}, and forward compatibility does not cover {names}",
                commands,
            )
        newer = f" the kernel module {kernel}" if kernel else " the installed driver"
        return (
            f"the process mapped the cuda-compat libcuda {path} ({compat}), which is not newer than{newer}: "
            "forward compatibility only works with a newer compat library",
            commands,
        )
    if code == 803 and path and kernel and ".so." in path and path.rsplit(".so.", 1)[-1] != str(kernel):
        return f"the process mapped {path}, but the kernel module is {kernel}: two driver versions are mixed", ()
    if code == 34:
        where = f" ({path})" if path else ""
        commands = _without(host, lambda d: d == mapped_dir or d.endswith("/stubs"))
        return f"the libcuda the process mapped{where} is the CUDA toolkit's link-time stub, not the driver", commands
    if code == 100:
        value = visible.cuda_visible_devices if visible else None
        if value is not None:
            return (
                f"CUDA_VISIBLE_DEVICES={value!r} hides every GPU from the process",
                ("unset CUDA_VISIBLE_DEVICES",),
            )
        if not any(re.fullmatch(r"nvidia\d+", n) for n in api.device_nodes):
            return "the process sees no /dev/nvidiaN device node: the container was started without its GPUs", ()
    if code == 999 and "nvidia-uvm" not in api.device_nodes:
        return (
            "/dev/nvidia-uvm is missing: the nvidia_uvm kernel module is not loaded",
            ("sudo modprobe nvidia_uvm",),
        )
    if code == 802:
        return None, ("sudo systemctl enable --now nvidia-fabricmanager",)
    return None, ()


# --- CD802 ----------------------------------------------------------------------------------------


def symbol_owner(symbol: str) -> str | None:
    """The library an undefined symbol belongs to, from its (mangled) name; None when not recognisable.

    ``_ZN3c104cuda9SetDeviceEi`` (``c10::cuda::SetDevice(int)``) -> ``torch``; ``cudnnGetVersion`` ->
    ``cuDNN``; ``ncclCommInitRankConfig`` -> ``NCCL``.
    """
    match = re.match(r"_ZN[KVRO]*(\d+)", symbol)
    if match:
        length = int(match.group(1))
        namespace = symbol[match.end() : match.end() + length]
        return "torch" if namespace in ("c10", "at", "torch", "caffe2") else None
    for prefix, owner in (("cudnn", "cuDNN"), ("nccl", "NCCL"), ("cublas", "cuBLAS"), ("cuda", "the CUDA runtime")):
        if symbol.startswith(prefix):
            return owner
    return None


#: Framework extensions compiled against torch's C++ API; they run inside a torch process.
_TORCH_EXTENSIONS = ("vllm", "flash-attn", "xformers")


def _installed(req: Requirement, target: InstalledPackage | None, verb: str = "") -> str:
    """``torch 2.8.0 [is ]installed``, or ``torch [is ]not installed`` when the pinned package is missing."""
    if target is None:
        return f"{req.name} {verb}not installed"
    return f"{target.name} {target.version} {verb}installed"


def _import_failure(
    fw: FrameworkRuntime, packages: dict[str, InstalledPackage]
) -> tuple[str, dict[str, str], tuple[str, ...], str]:
    """Why an import failed (tied to the package pair that causes it when there is one), the
    evidence, the commands that fix it and the fix in words."""
    evidence = {f"import {fw.module}": fw.error or "failed"}
    label = _label(fw, packages)
    if fw.undefined_symbol:
        owner = symbol_owner(fw.undefined_symbol)
        unmet = [(d, r, t) for d, r, t in unmet_requirements(packages) if d.name == fw.distribution]
        head = f"import {fw.module} fails with undefined symbol {fw.undefined_symbol}"
        if unmet:
            dependent, req, target = unmet[0]
            for d, r, t in unmet:
                evidence[f"{d.name} {d.version}"] = f"requires {r} (Requires-Dist), {_installed(r, t)}"
            name = req.name if target is None else target.name
            return (
                f"{head}: {dependent.name} {dependent.version} requires {req}, but "
                f"{_installed(req, target, 'is ')}, and {fw.module} was compiled against the pinned {name}",
                evidence,
                (f"python -m pip install '{req.name}{req.specifier}'",),
                f"install the {name} version {dependent.name} pins",
            )
        torch = packages.get("torch")
        if owner == "torch" and torch is not None and fw.framework in _TORCH_EXTENSIONS:
            evidence["torch"] = f"{fw.reported.get('torch') or torch.version} installed"
            return (
                f"{head} (a torch C++ symbol): {label} was compiled against another torch than the installed "
                f"torch {fw.reported.get('torch') or torch.version}",
                evidence,
                (),
                f"reinstall {fw.distribution} built for the installed torch (or the torch it was built for)",
            )
        if owner is not None:
            return (
                f"{head} (from {owner}): the {owner} loaded is not the one {label} was built against",
                evidence,
                (),
                f"let {fw.module} load the {owner} it was built against (CD803, CD804 show what it loaded)",
            )
        return head, evidence, (), f"reinstall {fw.distribution}"
    if fw.missing_library:
        major = re.search(r"libcudart\.so\.(\d+)", fw.missing_library)
        why = f" ({label} is built for CUDA {major.group(1)})" if major else ""
        return (
            f"import {fw.module} fails: {fw.missing_library} is not found{why}",
            evidence,
            (),
            f"install the CUDA libraries {fw.distribution} needs, or its build for the CUDA you have",
        )
    return f"import {fw.module} fails: {fw.error}", evidence, (), f"reinstall {fw.distribution}"


class CD802(Check):
    """Every installed GPU framework imports and runs one operation on the GPU.

    What it checks: in a child process of the target interpreter each, torch, JAX (with its CUDA
    plugin), CuPy, vLLM's compiled extension vllm._C, TensorRT, flash-attn and xformers are imported and
    run one tiny GPU operation (check --deep only). An import error is tied to its cause: an
    "undefined symbol" to the pin between the packages that breaks it (vLLM pins torch==X while torch
    Y is installed), a missing libcudart.so.N to the CUDA version the package was built for, and a GPU
    error to the CUDA error code it carries.

    Why it matters: a package can be installed, with matching metadata, and still fail when imported:
    a compiled extension built against another torch fails with "undefined symbol", and a framework
    whose CUDA initialisation fails often falls back to the CPU with a misleading message.

    How to fix: install the versions the pins name (the command is given), rebuild or reinstall an
    extension for the installed torch, or fix the CUDA initialisation first (CD801).
    """

    name = "frameworks-run-on-gpu"
    category = "python"

    def check(
        self, runtime: RuntimeInfo, matrix: CompatMatrix, packages: dict[str, InstalledPackage]
    ) -> Problem | None:
        tried = _gpu_frameworks(runtime)
        if not tried:
            raise NotApplicable("no GPU framework installed that --deep tries")
        api = runtime.driver
        init_failed = api is not None and api.init_rc not in (None, 0)
        lines: list[str] = []
        evidence: dict[str, str] = {}
        commands: list[str] = []
        hints: list[str] = []
        only_slow = True
        for fw in tried:
            if fw.error is None and fw.gpu_op is not False:
                continue
            label = _label(fw, packages)
            only_slow = only_slow and fw.error_kind == "timeout"
            if fw.error_kind == "import":
                line, found, cmds, hint = _import_failure(fw, packages)
                hints.append(hint)
                evidence.update(found)
                commands.extend(c for c in cmds if c not in commands)
                lines.append(f"{label}: {line}")
                continue
            if fw.error_kind in ("timeout", "crash", "no-output", "not-run"):
                lines.append(f"{label}: the probe {fw.error} (import {fw.module} and one GPU operation)")
                evidence[f"{fw.framework} probe"] = fw.error or fw.error_kind or "failed"
                if fw.stderr_tail:
                    evidence[f"{fw.framework} stderr"] = fw.stderr_tail.splitlines()[-1][:300]
                hints.append(
                    "raise the --deep timeout if the import is only slow"
                    if fw.error_kind == "timeout"
                    else f"run 'python -c \"import {fw.module}\"' to see the crash"
                )
                continue
            what = fw.error or "the result was wrong"
            line = f"{label}: imports, but its GPU operation fails: {what}"
            if init_failed and api is not None:
                line += f" (cuInit itself fails with {api.init_rc} for every program here: CD801)"
                hints.append("fix CUDA initialisation first (CD801)")
            elif (info := _error_in_text(matrix, fw.error, *fw.warnings, fw.stderr_tail)) is not None:
                line += f" ({info.code} {info.name}: {info.cause})"
                hints.append(info.fix)
            else:
                hints.append(f"run one {fw.framework} GPU operation by hand to see the full error")
            lines.append(line)
            evidence[f"{fw.framework} GPU operation"] = what
        if not lines:
            return None
        return Problem(
            "; ".join(lines),
            evidence,
            Remediation(_sentence("; ".join(dict.fromkeys(hints))), tuple(commands)),
            status=Status.WARN if only_slow else Status.FAIL,
        )


# --- CD803 / CD804 --------------------------------------------------------------------------------


def _pins(
    fw: FrameworkRuntime, packages: dict[str, InstalledPackage], wheel_prefix: str
) -> list[tuple[str, Requirement]]:
    """(pinning distribution, requirement) for the library wheels the framework's process should load.

    torch extensions load torch's copy; JAX's pins sit on its CUDA plugin and jaxlib.
    """
    sources = [fw.distribution]
    if fw.framework in _TORCH_EXTENSIONS:
        sources.append("torch")
    if fw.framework == "jax":
        sources += sorted(n for n in packages if re.fullmatch(r"jax-cuda\d+-(plugin|pjrt)|jaxlib", n))
    found: list[tuple[str, Requirement]] = []
    for source in sources:
        pkg = packages.get(source)
        for line in pkg.requires if pkg else ():
            req = requirement_or_none(line)
            if req is not None and canonical_name(req.name).startswith(wheel_prefix):
                found.append((source, req))
    return found


def _satisfies(version: Version, specifier: SpecifierSet) -> bool:
    """Whether a library's own version meets a wheel pin, at the library's precision: cuDNN reports
    9.19.0 for the wheel nvidia-cudnn-cu13 9.19.0.56, NCCL 2.28.9 for nvidia-nccl-cu13 2.28.9."""
    if specifier.contains(version, prereleases=True):
        return True
    exact = [s for s in specifier if s.operator == "==" and "*" not in s.version]
    if not exact or any(Version(s.version).release[: len(version.release)] != version.release for s in exact):
        return False
    rest = SpecifierSet(",".join(str(s) for s in specifier if s not in exact))
    return rest.contains(version, prereleases=True) if len(rest) else True


@mutable_record
class _Found:
    """What CD803/CD804 gather over the frameworks, in report order."""

    lines: list[str] = field(default_factory=list)
    evidence: dict[str, str] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)
    status: Status = Status.WARN


def _library_problems(
    lib: str,
    title: str,
    runtime: RuntimeInfo,
    packages: dict[str, InstalledPackage],
    copies: tuple[LibraryCopy, ...],
    host: HostInfo | None,
) -> Problem | None:
    found = _Found()
    for fw in _gpu_frameworks(runtime):
        label = _label(fw, packages)
        mapped = [m for m in fw.libraries if m.name == lib]
        loaded_version: Version | None = getattr(fw, lib)
        built_for: Version | None = getattr(fw, f"{lib}_build")
        if mapped:
            found.evidence[f"{label} loaded"] = ", ".join(_describe_copy(_copy_of(m.path, copies), m) for m in mapped)
        if len({_norm_dir(m.path) for m in mapped}) > 1:
            found.lines.append(f"{label} mapped {len(mapped)} copies of {title} in one process")
        if (
            loaded_version
            and built_for
            and (loaded_version.major != built_for.major or loaded_version.release < built_for.release)
        ):
            found.status = Status.FAIL
            found.lines.append(f"{label} was built against {title} {built_for} but loaded {title} {loaded_version}")
            found.evidence[f"{label} {title}"] = f"{loaded_version} at run time, built against {built_for}"
        for source, req in _pins(fw, packages, f"nvidia-{lib}"):
            _judge_pin(found, f"{label} loaded {title}", source, req, mapped, loaded_version, copies, host)
    if not found.lines:
        return None
    return Problem(
        "; ".join(found.lines),
        found.evidence,
        Remediation(
            f"Let each framework load the {title} wheel it pins: remove other {title} directories from "
            "LD_LIBRARY_PATH and LD_PRELOAD, and install the pinned version.",
            tuple(found.commands),
        ),
        status=found.status,
    )


def _judge_pin(
    found: _Found,
    loaded: str,
    source: str,
    req: Requirement,
    mapped: list[LoadedLibrary],
    loaded_version: Version | None,
    copies: tuple[LibraryCopy, ...],
    host: HostInfo | None,
) -> None:
    """Whether the framework (``loaded``: "torch 2.11.0 loaded cuDNN") loaded the wheel ``source`` pins."""
    wheel = canonical_name(req.name)
    pinned_copy = next((c for c in copies if c.distribution == wheel), None)
    pin = f"{source} pins {req.name}{req.specifier}"
    if pinned_copy is None:
        return  # the pinned wheel is not installed: CD401's finding
    # without the copy's library files its place is unknown: only its version can be judged
    strays = [m for m in mapped if pinned_copy.lib_paths and _copy_of(m.path, (pinned_copy,)) is None]
    if strays:
        stray = strays[0]
        found.lines.append(
            f"{loaded} from {_describe_copy(_copy_of(stray.path, copies), stray)}, "
            f"not the {wheel} {pinned_copy.version} wheel it pins ({pin})"
        )
        where = posixpath.dirname(pinned_copy.lib_paths[0]) if pinned_copy.lib_paths else pinned_copy.path
        found.evidence[pin] = f"installed at {where}"
        stray_dir = _norm_dir(stray.path)
        for cmd in _without(host, lambda d: _canon_dir(d) == stray_dir):
            if cmd not in found.commands:
                found.commands.append(cmd)
    elif loaded_version is not None and req.specifier and not _satisfies(loaded_version, req.specifier):
        found.lines.append(f"{loaded} {loaded_version}, but {pin}")
        found.commands.append(f"python -m pip install '{req.name}{req.specifier}'")


class CD803(Check):
    """The cuDNN each framework loads is the copy it pins, and not older than the one it was built with.

    What it checks: the libcudnn file each framework's child process actually mapped (its
    /proc/self/maps) against the installed cuDNN copies, and the cuDNN version the framework reports
    at run time (torch.backends.cudnn.version(), JAX's cudnn_get_version) against the framework's
    Requires-Dist pin on the nvidia-cudnn wheel and the cuDNN it was compiled against (check --deep).

    Why it matters: an image often has two cuDNN copies (the apt one the image's NV_CUDNN_VERSION names
    and the pip wheel torch pins; on the captured H200, 9.14.0 and 9.19.0). LD_LIBRARY_PATH or
    LD_PRELOAD can make a framework load the other one; a cuDNN older than the build fails with
    "cuDNN version incompatibility", and an unpinned one runs untested code paths.

    How to fix: remove the other cuDNN's directory from LD_LIBRARY_PATH (and LD_PRELOAD), and install
    the cuDNN wheel version the framework pins.
    """

    name = "loaded-cudnn-is-pinned-copy"
    category = "cudnn"

    def check(
        self,
        runtime: RuntimeInfo,
        packages: dict[str, InstalledPackage],
        cudnn: tuple[LibraryCopy, ...] = (),
        host: HostInfo | None = None,
    ) -> Problem | None:
        if not _gpu_frameworks(runtime):
            raise NotApplicable("no GPU framework installed that --deep tries")
        return _library_problems("cudnn", "cuDNN", runtime, packages, cudnn, host)


class CD804(Check):
    """The NCCL each framework loads is the copy it pins, and not older than the one it was built with.

    What it checks: the libnccl file each framework's child process actually mapped against the
    installed NCCL copies, and the NCCL version it reports at run time (torch.cuda.nccl.version(),
    CuPy's nccl.get_version) against the framework's pin on the nvidia-nccl wheel and the NCCL it was
    compiled against (check --deep).

    Why it matters: images carry an apt NCCL (the one NCCL_VERSION names) beside the pip wheel torch
    pins (2.28.3 and 2.28.9 on the captured H200). Loading the wrong one changes collective behaviour
    and performance across a cluster, and one older than the build can miss symbols.

    How to fix: remove the other NCCL's directory from LD_LIBRARY_PATH (and LD_PRELOAD), and install
    the NCCL wheel version the framework pins.
    """

    name = "loaded-nccl-is-pinned-copy"
    category = "nccl"

    def check(
        self,
        runtime: RuntimeInfo,
        packages: dict[str, InstalledPackage],
        nccl: tuple[LibraryCopy, ...] = (),
        host: HostInfo | None = None,
    ) -> Problem | None:
        if not _gpu_frameworks(runtime):
            raise NotApplicable("no GPU framework installed that --deep tries")
        return _library_problems("nccl", "NCCL", runtime, packages, nccl, host)


# --- CD805 ----------------------------------------------------------------------------------------


def arch_runs_on(entry: str, compute_capability: str, families: dict[str, tuple[str, ...]] | None = None) -> str | None:
    """How code for ``entry`` (``sm_90``, ``sm_90a``, ``sm_100f``, ``compute_80``) runs on a GPU.

    The rules are :func:`cudadoctor.rules.archs.covers`; ``families`` (from compat/gpu_archs.toml) says where
    family-specific code runs. :return: ``"native"``, ``"ptx"`` (after JIT compilation) or None.
    """
    found = covers([entry], compute_capability, families)
    if found is None:
        return None
    return "ptx" if found.lower().startswith("compute_") else "native"


class CD805(Check):
    """The GPU code each framework carries runs on every GPU it sees.

    What it checks: the architectures a framework was compiled for, as it reports them at run time
    (torch.cuda.get_arch_list(): sm_75 … sm_120, compute_XY for PTX), against the compute capability of
    each GPU its process sees, with the CUDA binary compatibility rules (same major and a minor at least
    the cubin's; "a" targets only on exactly that GPU; PTX compiled just in time for newer GPUs)
    (check --deep).

    Why it matters: a build without code for the GPU fails with "no kernel image is available for
    execution on the device"; one that only carries PTX for it compiles every kernel at first use,
    which can take minutes.

    How to fix: install a build of the framework whose architecture list includes the GPU (for torch,
    the wheel from the index for a CUDA version that supports it), or build it with
    TORCH_CUDA_ARCH_LIST naming the GPU's compute capability.
    """

    name = "framework-code-runs-on-gpu"
    category = "gpus"

    def check(
        self, runtime: RuntimeInfo, packages: dict[str, InstalledPackage], matrix: CompatMatrix
    ) -> Problem | None:
        families = matrix.arch_families
        judged = [fw for fw in _gpu_frameworks(runtime) if fw.arch_list and fw.devices]
        if not judged:
            raise CannotJudge("no framework reported both its architecture list and its GPUs")
        lines: list[str] = []
        evidence: dict[str, str] = {}
        status = Status.WARN
        for fw in judged:
            label = _label(fw, packages)
            for device in fw.devices:
                if not device.compute_capability:
                    continue
                ways = {arch_runs_on(a, device.compute_capability, families) for a in fw.arch_list}
                if "native" in ways:
                    continue
                evidence[f"{label} architectures"] = " ".join(fw.arch_list)
                evidence[f"GPU {device.index}"] = f"{device.name}, compute capability {device.compute_capability}"
                if "ptx" in ways:
                    lines.append(
                        f"{label} has no compiled code for GPU {device.index} {device.name} (compute capability "
                        f"{device.compute_capability}), only PTX: every kernel is compiled at first use"
                    )
                else:
                    status = Status.FAIL
                    lines.append(
                        f"{label} carries no code for GPU {device.index} {device.name} (compute capability "
                        f"{device.compute_capability}): kernels fail with 'no kernel image is available'"
                    )
        if not lines:
            return None
        return Problem(
            "; ".join(lines),
            evidence,
            Remediation(
                "Install a build whose architecture list includes the GPU, or build with TORCH_CUDA_ARCH_LIST "
                "naming its compute capability.",
                (),
            ),
            status=status,
        )


class CD806(Check):
    """An NCCL all-reduce between one process per GPU succeeds (check --deep --nccl).

    What it checks: two or more worker processes of the target interpreter, one per GPU, join a torch
    process group over 127.0.0.1 with the NCCL backend and all-reduce a tensor; every rank must see the
    right sum within the timeout.

    Why it matters: multi-GPU training and tensor-parallel inference (vLLM) fail or hang in their first
    collective when NCCL cannot use the GPUs' interconnect, the shared-memory or peer-to-peer path is
    blocked in a container, or the NCCL copies differ; a single-GPU check never shows it.

    How to fix: read the first rank's error; run with NCCL_DEBUG=INFO; in containers give enough shared
    memory (--shm-size or --ipc=host); check NCCL_P2P_DISABLE / NCCL_IB_DISABLE and the NCCL copy loaded
    (CD804).
    """

    name = "nccl-all-reduce-works"
    category = "nccl"

    def check(self, runtime: RuntimeInfo) -> Problem | None:
        smoke = runtime.nccl_smoke
        if smoke is None:
            raise NotApplicable("the NCCL test was not run (use --deep --nccl on a machine with two or more GPUs)")
        if smoke.ok:
            return None
        return Problem(
            f"an NCCL all-reduce across {smoke.world_size} GPUs failed"
            + (f": {smoke.error}" if smoke.error else " (a rank saw the wrong sum)"),
            {"NCCL test": f"{smoke.world_size} ranks, {smoke.seconds} s ({smoke.source.where})"},
            Remediation("Rerun with NCCL_DEBUG=INFO to see where it stops.", ("export NCCL_DEBUG=INFO",)),
        )
