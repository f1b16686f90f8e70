"""Broken environments for the fault-injection suite: the real H200 machine with one thing broken.

Each :class:`Fault` starts from the H200 machine of ``tests/h200_fixture.py`` (its files, its image
environment, its NVML / libcuda answers and nvidia-smi output) and breaks one thing: a file's
contents, a link, a permission, an environment value, a native answer or a command's behaviour.
File edits are plain ``os`` calls under a prefix, so the same edit applies to a real image root (for
``python -m cudadoctor check --root``) and, copied into pyfakefs, to a live machine examined in-process.

The two suites (``test_faults_inprocess.py``, ``test_faults_subprocess.py``) run every fault and hold
cudadoctor to one contract: no traceback, a clear reason (a probe error or a finding naming what broke),
the expected exit code, and every other category of the report still there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyfakefs.fake_filesystem_unittest import Patcher

from cudadoctor.app import build_report
from cudadoctor.checks.engine import run_checks
from cudadoctor.checks.findings import Finding, Status
from cudadoctor.data import CompatMatrix
from cudadoctor.data import load as compat_load
from cudadoctor.facts.codec import redact_facts
from cudadoctor.facts.model import Facts
from cudadoctor.probes.collect import collect_facts
from cudadoctor.probes.native import LibcudaResult, NvmlDevice, NvmlResult
from cudadoctor.probes.registry import probe_function, probed
from cudadoctor.redact import Redactor
from cudadoctor.report.json import render_json
from cudadoctor.report.options import RenderOptions
from cudadoctor.report.text import render_text
from tests.conftest import FakeNative, FakeRunner, make_ctx
from tests.h200_fixture import LIBCUDA, NVCC_OUTPUT, NVML, SITE, SMI_OUTPUT, SMI_QUERY

__all__ = [
    "CACHE_FAULTS",
    "CATEGORY_KEYS",
    "CATEGORY_TITLES",
    "COMPAT_FAULTS",
    "CONTROLS",
    "ENV_FILE_FAULTS",
    "FAULTS",
    "ISSUE_14_FAULTS",
    "SNAPSHOT_FAULTS",
    "Fault",
    "InputFault",
    "assert_categories",
    "assert_expected",
    "assert_report_intact",
    "collect_live",
    "env_file_text",
    "fresh_tree",
    "json_observations",
    "judge",
    "observations",
]

#: Characters no report may contain, whatever the machine holds (issue #14: escape sequences from
#: os-release or env values reached the terminal): controls but newline, and bidirectional overrides.
CONTROLS = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

#: The report's categories, as the text report titles them and as the JSON summary keys them.
CATEGORY_TITLES = (
    "Host",
    "NVIDIA driver",
    "GPUs",
    "CUDA toolkit",
    "CUDA from pip wheels",
    "cuDNN",
    "NCCL",
    "TensorRT",
    "Python packages",
)
CATEGORY_KEYS = ("host", "driver", "gpus", "toolkit", "wheels", "cudnn", "nccl", "tensorrt", "python")

PROC = "/proc/driver/nvidia/version"
SYS = "/sys/module/nvidia/version"
LIBDIR = "/usr/lib/x86_64-linux-gnu"
NVLIB = "/usr/local/nvidia/lib64"
CUDA_ROOT = "/usr/local/cuda-13.0"
NVML_MISSING = NvmlResult(error="NVML Shared Library Not Found")
NVCC = ("/usr/local/cuda/bin/nvcc", "--version")

# Import every probe module now, outside any fake file system: a module first imported inside a
# pyfakefs session keeps that session's fake ``os``/``posixpath`` after it ends (the second fault's
# probes then crashed with pyfakefs's AssertionError), as tests/corpus/replay.py does.
for _spec in probed().values():
    probe_function(_spec)

# --- file edits (plain os calls under a prefix: a real image root, or "" inside pyfakefs) ---------


def _full(prefix: str, path: str) -> str:
    return prefix.rstrip("/") + path


def _remove(prefix: str, path: str) -> None:
    full = _full(prefix, path)
    if os.path.islink(full) or os.path.isfile(full):
        os.remove(full)
    elif os.path.isdir(full):
        shutil.rmtree(full)


def _write(prefix: str, path: str, data: bytes | str) -> None:
    _remove(prefix, path)
    full = _full(prefix, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "wb") as handle:
        handle.write(data.encode() if isinstance(data, str) else data)


def _sparse(prefix: str, path: str, size: int, head: bytes = b"") -> None:
    """A file of ``size`` bytes that takes no disk space: ``head`` then a hole."""
    _write(prefix, path, head)
    with open(_full(prefix, path), "r+b") as handle:
        handle.truncate(size)


def _link(prefix: str, path: str, target: str) -> None:
    _remove(prefix, path)
    full = _full(prefix, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    os.symlink(target, full)


def _mkdir(prefix: str, path: str) -> None:
    """A directory where a file is expected (not empty: pyfakefs copies no empty directory)."""
    _remove(prefix, path)
    os.makedirs(_full(prefix, path))
    with open(os.path.join(_full(prefix, path), "entry"), "w") as handle:
        handle.write("a directory, not a file\n")


def _chmod(prefix: str, path: str, mode: int) -> None:
    os.chmod(_full(prefix, path), mode)


Edit = Callable[[str], None]


def edits(*steps: Edit) -> Edit:
    def apply(prefix: str) -> None:
        for step in steps:
            step(prefix)

    return apply


def write(path: str, data: bytes | str) -> Edit:
    return lambda prefix: _write(prefix, path, data)


def sparse(path: str, size: int, head: bytes = b"") -> Edit:
    return lambda prefix: _sparse(prefix, path, size, head)


def link(path: str, target: str) -> Edit:
    return lambda prefix: _link(prefix, path, target)


def mkdir(path: str) -> Edit:
    return lambda prefix: _mkdir(prefix, path)


def remove(*paths: str) -> Edit:
    def apply(prefix: str) -> None:
        for path in paths:
            _remove(prefix, path)

    return apply


def chmod(path: str, mode: int) -> Edit:
    return lambda prefix: _chmod(prefix, path, mode)


def _nothing(prefix: str) -> None:
    return None


def fresh_tree(template: str, dest: str, fault: Fault) -> str:
    """A copy of the H200 tree at ``dest`` with ``fault``'s file edits applied; returns ``dest``."""
    shutil.copytree(template, dest, symlinks=True)
    fault.mutate(dest)
    return dest


# --- environment edits ----------------------------------------------------------------------------

EnvEdit = Callable[[dict[str, str]], dict[str, str]]


def setenv(**values: str) -> EnvEdit:
    return lambda env: {**env, **values}


def unsetenv(*names: str) -> EnvEdit:
    return lambda env: {k: v for k, v in env.items() if k not in names}


def env_file_text(env: Mapping[str, str]) -> str:
    """An image environment as ``--env-file`` lines (Docker's format)."""
    return "".join(f"{k}={v}\n" for k, v in env.items())


# --- the faults -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    """One broken environment, and what cudadoctor must say about it."""

    id: str
    mutate: Edit = _nothing
    env: EnvEdit = field(default=lambda env: env)
    #: raw ``--env-file`` contents for the subprocess run (bytes an env dict cannot hold); None: from ``env``
    env_file: bytes | None = None
    nvml: NvmlResult = NVML
    libcuda: LibcudaResult = LIBCUDA
    #: nvidia-smi's behaviour: (stdout, returncode, stderr, error); None: the H200's answer
    smi: tuple[str, int, str, str | None] | None = None
    #: the fault lives in NVML / libcuda / nvidia-smi, which an image audit (--root) never touches:
    #: the subprocess replays a snapshot of the in-process facts with ``check --from``
    native: bool = False
    exit_code: int = 0
    #: exit code of the image audit (``--root``), when it differs (live-only checks are skipped there)
    exit_code_root: int | None = None
    #: substrings each of which must appear in one observation (``probe: message`` of a probe error,
    #: ``CODE status: message`` of a finding), in-process (live machine)
    expect: tuple[str, ...] = ()
    #: the same for the image audit (``--root``); None: same as ``expect``
    expect_root: tuple[str, ...] | None = None
    #: the fault is a permission: it cannot bite when the subprocess runs as root
    needs_non_root: bool = False
    #: examine in-process as an image root on the real disk instead of a live machine under pyfakefs
    #: (a tree too large to copy into pyfakefs quickly)
    inprocess_root: bool = False
    #: the whole run (collect, checks, both renderers; or the subprocess) must take less than this
    max_seconds: float = 20.0

    @property
    def root_exit_code(self) -> int:
        return self.exit_code if self.exit_code_root is None else self.exit_code_root

    @property
    def root_expect(self) -> tuple[str, ...]:
        return self.expect if self.expect_root is None else self.expect_root

    def runner(self) -> FakeRunner:
        runner = FakeRunner()
        if self.smi is None:
            runner.add(SMI_QUERY, SMI_OUTPUT)
        else:
            stdout, returncode, stderr, error = self.smi
            runner.add(SMI_QUERY, stdout, returncode, stderr, error)
        runner.add(NVCC, NVCC_OUTPUT)
        return runner

    def fake_native(self) -> FakeNative:
        return FakeNative(self.nvml, self.libcuda)


def observations(facts: Any, findings: Iterable[Any]) -> list[str]:
    """What a report says went wrong: every probe error and every finding that is not ok or skipped."""
    out = [f"{e.probe}: {e.message}" for e in facts.errors]
    quiet = (Status.OK, Status.NOT_APPLICABLE)
    out += [f"{f.code} {f.status.value}: {f.message}" for f in findings if f.status not in quiet]
    return out


def json_observations(doc: dict[str, Any]) -> list[str]:
    """:func:`observations` read from a JSON report."""
    out = [f"{e['probe']}: {e['message']}" for e in doc["facts"]["errors"]]
    quiet = ("ok", "not-applicable")
    out += [f"{f['code']} {f['status']}: {f['message']}" for f in doc["findings"] if f["status"] not in quiet]
    return out


# --- site-packages with thousands of distributions ------------------------------------------------

#: Distributions planted by the ``site-packages-5000-dists`` fault, and how many are broken.
MANY_DISTS = 5000


def _many_dists(prefix: str) -> None:
    """5,000 dist-infos; every 25th is an ``nvidia-*`` one (its METADATA is read), most of those corrupt."""
    site = _full(prefix, SITE)
    corrupt = (
        b"\xff\xfe\x00\x81 not UTF-8 \xc3\x28\n",  # not UTF-8 at all
        b"Metadata-Version: 2.1\nName: nvidia-fake\nSummary: no version line\n",
        b"Metadata-Version: 2.1\nName: nvidia-fake\nVersion: not-a-version!\n",
    )
    for i in range(MANY_DISTS):
        if i % 25 == 0:
            directory = os.path.join(site, f"nvidia_fake{i}_cu13-1.{i}.0.dist-info")
            kind = (i // 25) % 4
            data = (
                corrupt[kind] if kind < 3 else f"Metadata-Version: 2.1\nName: nvidia-fake{i}-cu13\nVersion: 1.{i}.0\n"
            )
        else:
            directory = os.path.join(site, f"pkg{i}-1.0.dist-info")
            data = f"Metadata-Version: 2.1\nName: pkg{i}\nVersion: 1.0\n"
        os.mkdir(directory)
        with open(os.path.join(directory, "METADATA"), "wb") as handle:
            handle.write(data.encode() if isinstance(data, str) else data)


def _odd_dist_names(prefix: str) -> None:
    site = _full(prefix, SITE)
    # Dist-infos without METADATA (a RECORD only) under names that say little or nothing, one not UTF-8.
    names: list[str | bytes] = [
        ".dist-info",
        "-.dist-info",
        "-1.0.dist-info",
        "nvidia_empty-.dist-info",
        b"nvidia_bad\xff-1.0.dist-info",
    ]
    for name in names:
        directory = os.path.join(os.fsencode(site), os.fsencode(name))
        os.mkdir(directory)
        with open(os.path.join(directory, b"RECORD"), "w") as handle:
            handle.write("")
    # A file where a dist-info directory is expected.
    with open(os.path.join(site, "nvidia_file-1.0.dist-info"), "w") as handle:
        handle.write("Name: nvidia-file\nVersion: 1.0\n")


# --- snapshots and bad input files ------------------------------------------------------------------


def deeply_nested_snapshot(depth: int = 100_000) -> bytes:
    return b'{"kind": "cudadoctor-facts", "schema_version": 1, "facts": {"gpus": ' + b"[" * depth + b"]" * depth + b"}}"


def wrong_typed_snapshot(good: bytes) -> bytes:
    doc = json.loads(good)
    doc["facts"]["gpus"] = [{"index": "zero", "name": ["H200"]}]
    return json.dumps(doc).encode()


# --- the catalogue ----------------------------------------------------------------------------------

_BINARY = bytes(range(256)) * 16
_SMI_FAILED = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
    "NVIDIA driver is installed and running.\n"
)
_SMI_MISMATCH = "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.159\n"
# A future nvidia-smi that answers the same query with a header and more columns.
_SMI_NEWER = (
    "index, name, pci.bus_id, driver_version, compute_cap, memory.total [MiB], mig.mode.current, uuid\n"
    "0, NVIDIA H200, 00000000:00:06.0, 600.01, 9.0, 143771 MiB, Disabled, GPU-0\n"
)
_H200_DEVICE = NVML.devices[0]
#: What CD401 says when torch's metadata cannot be read: torchvision's pin on it is unmet.
_TORCH_UNREADABLE = "CD401 fail: torchvision 0.26.0 requires torch==2.11.0, but it is not installed"


def _nvml_error(text: str) -> NvmlResult:
    return NvmlResult(error=text)


FAULTS: tuple[Fault, ...] = (
    # --- the kernel module's version files ---------------------------------------------------------
    Fault("proc-version-empty", write(PROC, ""), expect=("driver: empty file",)),
    Fault(
        "proc-version-garbled", write(PROC, "NVRM versoin: ?? who knows\n"), expect=("driver: unrecognised contents",)
    ),
    Fault("proc-version-binary", write(PROC, _BINARY), expect=("driver: unrecognised contents",)),
    Fault("proc-version-huge-50MB", sparse(PROC, 50 << 20), expect=("driver: unrecognised contents",)),
    Fault("proc-version-is-a-directory", mkdir(PROC), expect=("driver: cannot read",)),
    Fault(
        "proc-version-unreadable-chmod-000",
        chmod(PROC, 0),
        expect=("driver: cannot read: Permission denied",),
        needs_non_root=True,
    ),
    Fault("sys-version-empty", write(SYS, ""), expect=("driver: empty file",)),
    Fault("sys-version-garbled", write(SYS, "580.159.04 or so\nsecond line\n"), expect=("driver: unrecognised",)),
    Fault("sys-version-binary", write(SYS, _BINARY), expect=("driver: unrecognised contents",)),
    Fault(
        "sys-version-huge-50MB",
        sparse(SYS, 50 << 20, head=b"580.159.04\n"),
        expect=("driver: unrecognised contents: '580.159.04'",),
    ),
    Fault("sys-version-is-a-directory", mkdir(SYS), expect=("driver: cannot read",)),
    # --- links in library directories and in /usr/local/cuda --------------------------------------
    Fault(
        "libdir-broken-symlinks",
        edits(
            link(f"{LIBDIR}/libcudnn.so.9.99.0", "/nonexistent/libcudnn.so.9.99.0"),
            link(f"{LIBDIR}/libnccl.so.2.99.1", "libnccl.so.2.99.1.missing"),
            link(f"{NVLIB}/libcuda.so.999.1.1", "/gone/libcuda.so"),
        ),
        expect=("cudnn: dangling or looping symbolic link", "nccl: dangling or looping symbolic link"),
    ),
    Fault(
        "libdir-symlink-loops",
        edits(
            link(f"{LIBDIR}/libcudnn.so.9.98.0", "libcudnn.so.9.97.0"),
            link(f"{LIBDIR}/libcudnn.so.9.97.0", "libcudnn.so.9.98.0"),
            link(f"{LIBDIR}/libnccl.so.2.97.0", "libnccl.so.2.97.0"),
            link(f"{NVLIB}/libcuda.so.1", "libcuda.so.1"),
        ),
        # A live machine follows links with realpath (no ELOOP): the loop is named like a dangling link.
        # An image root follows them itself, and drops looping entries.
        expect=("cudnn: dangling or looping symbolic link",),
        expect_root=(),
    ),
    Fault(
        "libdir-itself-a-loop",
        edits(link("/opt/loopdir", "/opt/loopdir"), link("/opt/loop-a", "loop-b"), link("/opt/loop-b", "loop-a")),
        env=setenv(LD_LIBRARY_PATH="/opt/loopdir:/opt/loop-a/lib:/usr/local/nvidia/lib64"),
    ),
    Fault(
        "cuda-link-broken",
        link("/etc/alternatives/cuda", "/usr/local/cuda-99.9"),
        expect=("toolkit: CUDA_HOME=/usr/local/cuda: no such directory",),
    ),
    Fault(
        "cuda-link-loop",
        link("/usr/local/cuda", "/usr/local/cuda"),
        expect=("toolkit: CUDA_HOME=/usr/local/cuda: no such directory",),
        expect_root=("toolkit: CUDA_HOME: cannot resolve /usr/local/cuda: too many levels of symbolic links",),
    ),
    Fault(
        "cuda-include-loop",
        link(f"{CUDA_ROOT}/targets/x86_64-linux/include", f"{CUDA_ROOT}/targets/x86_64-linux/include"),
        expect=("toolkit: no version.json, version.txt or cuda.h with a version",),
    ),
    Fault(
        "cuda-version-json-garbled",
        write(f"{CUDA_ROOT}/version.json", b'{"cuda": {"version": \xff'),
        expect=("toolkit: version.json: not JSON",),
    ),
    # --- site-packages ----------------------------------------------------------------------------
    Fault(
        "site-packages-5000-dists",
        _many_dists,
        expect=(
            "packages: nvidia-fake50-cu13: invalid version 'not-a-version!'",
            "libraries: METADATA no Name/Version headers",
            "libraries: METADATA has an invalid Version",
        ),
        inprocess_root=True,
        max_seconds=3.0,
    ),
    Fault(
        "metadata-not-utf8",
        edits(
            write(
                f"{SITE}/torch-2.11.0.dist-info/METADATA",
                b"Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0\nSummary: caf\xe9 \xff\xfe\n",
            ),
            write(f"{SITE}/nvidia_cudnn_cu13-9.19.0.56.dist-info/METADATA", _BINARY),
        ),
        expect=("libraries: METADATA no Name/Version headers; version taken from the dist-info name",),
    ),
    Fault(
        "metadata-no-version-line",
        write(f"{SITE}/nvidia_nccl_cu13-2.28.9.dist-info/METADATA", "Metadata-Version: 2.4\nName: nvidia-nccl-cu13\n"),
        expect=("libraries: METADATA no Name/Version headers; version taken from the dist-info name",),
    ),
    Fault(
        "metadata-version-not-pep440",
        write(
            f"{SITE}/torch-2.11.0.dist-info/METADATA",
            "Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0-final.banana\n",
        ),
        exit_code=1,  # torchvision's pin on torch cannot be met by a torch that cannot be read (CD401)
        expect=("packages: torch: invalid version '2.11.0-final.banana'", _TORCH_UNREADABLE),
    ),
    Fault(
        "metadata-empty-file",
        write(f"{SITE}/nvidia_cudnn_cu13-9.19.0.56.dist-info/METADATA", b""),
        expect=("libraries: METADATA no Name/Version headers",),
    ),
    Fault(
        "metadata-unreadable-chmod-000",
        chmod(f"{SITE}/torch-2.11.0.dist-info/METADATA", 0),
        exit_code=1,  # torchvision's pin on torch cannot be met by a torch that cannot be read (CD401)
        expect=("packages: cannot read the metadata of torch: Permission denied", _TORCH_UNREADABLE),
        needs_non_root=True,
    ),
    Fault(
        "metadata-is-a-directory",
        mkdir(f"{SITE}/torch-2.11.0.dist-info/METADATA"),
        exit_code=1,  # torchvision's pin on torch cannot be met by a torch that cannot be read (CD401)
        expect=("packages: cannot read the metadata of torch", _TORCH_UNREADABLE),
    ),
    Fault(
        "dist-info-odd-names",
        _odd_dist_names,
        expect=(
            "packages: cannot read the metadata of nvidia-file",
            "packages: cannot read the metadata of nvidia-bad",
        ),
    ),
    Fault("torch-version-py-binary", write(f"{SITE}/torch/version.py", _BINARY)),
    # --- nvidia-smi (run only when NVML cannot answer) ----------------------------------------------
    Fault(
        "smi-hangs",
        nvml=NVML_MISSING,
        smi=("", 0, "", "timed out after 10 s"),
        native=True,
        expect=("driver: nvidia-smi: timed out after 10 s",),
    ),
    Fault(
        "smi-exits-non-zero",
        nvml=NVML_MISSING,
        smi=(_SMI_FAILED, 9, "", None),
        native=True,
        expect=("driver: nvidia-smi: NVIDIA-SMI has failed because it couldn't communicate",),
    ),
    Fault(
        "smi-nvml-version-mismatch",
        nvml=NVML_MISSING,
        smi=(_SMI_MISMATCH, 18, "", None),
        native=True,
        exit_code=1,  # rightly: the kernel module and the user-space library differ (CD101)
        expect=(
            "driver: nvidia-smi: Failed to initialize NVML: Driver/library version mismatch",
            "CD101 fail: the kernel module is 580.159.04 but the user-space driver is a different version",
        ),
    ),
    Fault(
        "smi-newer-output-format",
        nvml=NVML_MISSING,
        smi=(_SMI_NEWER, 0, "", None),
        native=True,
        expect=("driver: nvidia-smi: unrecognised output",),
    ),
    Fault(
        "smi-binary-output",
        nvml=NVML_MISSING,
        smi=(_BINARY.decode("latin-1"), 0, "", None),
        native=True,
        expect=("driver: nvidia-smi: unrecognised output",),
    ),
    # --- NVML errors ----------------------------------------------------------------------------------
    Fault(
        "nvml-driver-not-loaded",
        nvml=_nvml_error("Driver Not Loaded"),
        native=True,
        expect=("driver: NVML: Driver Not Loaded",),
    ),
    Fault(
        "nvml-insufficient-permissions",
        nvml=_nvml_error("Insufficient Permissions"),
        native=True,
        expect=("driver: NVML: Insufficient Permissions",),
    ),
    Fault(
        "nvml-unknown-error", nvml=_nvml_error("Unknown Error"), native=True, expect=("driver: NVML: Unknown Error",)
    ),
    Fault("nvml-gpu-is-lost", nvml=_nvml_error("GPU is lost"), native=True, expect=("driver: NVML: GPU is lost",)),
    Fault(
        "nvml-library-not-found",
        nvml=_nvml_error("NVML Shared Library Not Found"),
        native=True,
        expect=("driver: NVML: NVML Shared Library Not Found",),
    ),
    Fault(
        "nvml-device-errors",
        nvml=NvmlResult(
            driver_version="580.159.04",
            cuda_driver_version=13000,
            devices=(_H200_DEVICE,),
            device_errors=("device 1: GPU is lost", "device 2: Insufficient Permissions"),
        ),
        native=True,
        expect=("gpus: NVML: device 1: GPU is lost", "gpus: NVML: device 2: Insufficient Permissions"),
    ),
    Fault(
        "nvml-nonsense-values",
        nvml=NvmlResult(
            driver_version="580.xx-beta",
            cuda_driver_version=-1,
            devices=(
                NvmlDevice(0, "", None, -5, "Weird", None, None),
                NvmlDevice(7, "NVIDIA H200\x00\udcff", None, None, None, "not-a-bus-id", "Unknown"),
            ),
        ),
        native=True,
        expect=("driver: NVML: unrecognised driver version '580.xx-beta'", "gpus: unknown GPU model"),
    ),
    # --- libcuda ------------------------------------------------------------------------------------
    Fault(
        "libcuda-missing",
        libcuda=LibcudaResult(error="libcuda.so.1: cannot open shared object file: No such file or directory"),
        native=True,
        expect=("driver: libcuda: libcuda.so.1: cannot open shared object file",),
    ),
    Fault(
        "libcuda-stub-rc-34",
        libcuda=LibcudaResult(path=f"{CUDA_ROOT}/targets/x86_64-linux/lib/stubs/libcuda.so", returncode=34, version=0),
        native=True,
        exit_code=1,
        expect=("driver: cuDriverGetVersion returned 34 (CUDA_ERROR_STUB_LIBRARY)", "CD103 fail:"),
    ),
    Fault(
        "libcuda-rc-999",
        libcuda=LibcudaResult(path=f"{NVLIB}/libcuda.so.580.159.04", returncode=999, version=0),
        native=True,
        expect=("driver: cuDriverGetVersion returned 999",),
    ),
    Fault(
        "no-driver-anywhere",
        edits(
            remove("/proc/driver", "/sys/module/nvidia", NVLIB, "/usr/lib/libcuda.so", "/usr/lib/libcuda.so.1"),
            remove(f"{CUDA_ROOT}/compat"),
        ),
        nvml=_nvml_error("Driver Not Loaded"),
        libcuda=LibcudaResult(error="libcuda.so.1: cannot open shared object file: No such file or directory"),
        smi=("", 0, "", "not found"),
        expect=("driver: no NVIDIA driver found",),
        expect_root=(),  # an image without a driver is the normal case: nothing to report
    ),
    # --- the environment ----------------------------------------------------------------------------
    Fault(
        "env-ld-library-path-10000-entries",
        env=setenv(LD_LIBRARY_PATH=":".join([*(f"/nonexistent/lib{i}" for i in range(10_000)), NVLIB])),
        inprocess_root=True,  # 10,000 directories looked up four times: slow under pyfakefs
        max_seconds=10.0,
    ),
    Fault("env-ld-library-path-empty-entries", env=setenv(LD_LIBRARY_PATH=":::/usr/local/nvidia/lib64::; ;:")),
    Fault(
        "env-values-not-utf8",
        # os.environ holds undecodable bytes as surrogate escapes; an --env-file's are replaced on reading.
        env=setenv(LD_LIBRARY_PATH="/opt/\udcff\udcfe/lib:/usr/local/nvidia/lib64", NCCL_SOCKET_IFNAME="eth\udcff"),
        env_file=b"LD_LIBRARY_PATH=/opt/\xff\xfe/lib:/usr/local/nvidia/lib64\nNCCL_SOCKET_IFNAME=eth\xff\nPATH=/usr/bin\n",
    ),
    Fault("env-cuda-visible-devices-garbage", env=setenv(CUDA_VISIBLE_DEVICES="GPU-xyz,foo")),
    Fault("env-path-missing", env=unsetenv("PATH")),
    Fault("env-home-unset", env=unsetenv("HOME")),
    Fault(
        "env-virtual-env-nowhere",
        env=setenv(VIRTUAL_ENV="/nonexistent/venv"),
        expect=("python: VIRTUAL_ENV names a directory that does not exist: /nonexistent/venv",),
    ),
    Fault(
        "env-cuda-home-nowhere",
        env=setenv(CUDA_HOME="/nonexistent/cuda", CUDA_PATH="relative/cuda"),
        expect=("toolkit: CUDA_HOME=/nonexistent/cuda: no such directory",),
    ),
    Fault("env-file-1MB-line", env=setenv(NCCL_DEBUG_SUBSYS="x" * (1 << 20))),
)


# --- issue #14: what an adversarial review of v0.1 broke ----------------------------------------------

#: More digits than Python's int() accepts from text (4,300).
_HUGE = "9" * 5000
_GPU_INFO = "/proc/driver/nvidia/gpus/0000:00:06.0/information"
_TORCH_DIST = f"{SITE}/torch-2.11.0.dist-info"
_PYVENV = "/opt/torch/.venv/pyvenv.cfg"
#: escape sequences that clear the screen, set the window title and reverse the text (bidi override)
_ESCAPES = "\x1b[2J\x1b[H\x1b]0;owned\x07\u202e"


def _mkfifo(prefix: str, path: str) -> None:
    _remove(prefix, path)
    full = _full(prefix, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    os.mkfifo(full)


def fifo(path: str) -> Edit:
    """A FIFO where a file is expected: opening it for reading waits for a writer forever."""
    return lambda prefix: _mkfifo(prefix, path)


def _ld_so_conf_alias_cycle(prefix: str) -> None:
    """16 files, each including ``l{i}/*.conf`` with ``l{i} -> .``: every path new, every file the same."""
    _write(prefix, "/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n")
    for i in range(16):
        _write(prefix, f"/etc/ld.so.conf.d/f{i}.conf", f"/opt/lib{i}\ninclude l{i}/*.conf\n")
        _link(prefix, f"/etc/ld.so.conf.d/l{i}", ".")


def _nvidia_dist(name: str, version: str, extra: str = "") -> Edit:
    stem = f"{name.replace('-', '_')}-1.0.dist-info"
    return write(f"{SITE}/{stem}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{extra}")


def _fifo_fault(name: str, path: str, expect: tuple[str, ...] = (), exit_code: int = 0) -> Fault:
    # FIFOs cannot be copied into pyfakefs: the in-process run examines the tree on disk as an image root.
    return Fault(f"fifo-{name}", fifo(path), expect=expect, exit_code=exit_code, inprocess_root=True, max_seconds=10.0)


_VERSION_PY_HUGE = f"__version__ = '{_HUGE}'\ncuda = '{_HUGE}.0'\n"
_OS_RELEASE_HOSTILE = f'PRETTY_NAME="Ubuntu{_ESCAPES} <b>@octocat</b>"\n'

ISSUE_14_FAULTS: tuple[Fault, ...] = (
    _fifo_fault("proc-driver-version", PROC, expect=("driver:",)),
    _fifo_fault("os-release", "/etc/os-release"),
    _fifo_fault("ld-so-conf", "/etc/ld.so.conf"),
    _fifo_fault("pyvenv-cfg", _PYVENV),
    _fifo_fault("metadata-torch", f"{_TORCH_DIST}/METADATA", ("packages: cannot read the metadata of torch",), 1),
    _fifo_fault("version-py-torch", f"{SITE}/torch/version.py"),
    _fifo_fault("installer", f"{SITE}/nvidia_nccl_cu13-2.28.9.dist-info/INSTALLER"),
    _fifo_fault("gpu-information", _GPU_INFO),
    _fifo_fault("dpkg-status", "/var/lib/dpkg/status"),
    Fault(
        "dpkg-libc6-5000-digits-keeps-nvidia-require",
        write("/var/lib/dpkg/status", f"Package: libc6\nStatus: install ok installed\nVersion: {_HUGE}.1-0\n\n"),
        env=setenv(NVIDIA_REQUIRE_CUDA="cuda>=99.0"),
        exit_code=1,  # live: the driver's CUDA is known, and cuda>=99.0 is not met (CD701)
        exit_code_root=0,  # an image without --assume-driver: the driver's CUDA is unknown
        expect=("CD701 fail: NVIDIA_REQUIRE_CUDA is not met",),
        expect_root=("CD701 unknown",),
    ),
    Fault(
        "nvidia-metadata-5000-digits-keeps-torch",
        edits(
            _nvidia_dist("nvidia-evil-cu13", _HUGE),
            _nvidia_dist("nvidia-marker-cu13", "1.0", f'Requires-Dist: foo; python_version > "{_HUGE}"\n'),
        ),
        expect=("packages: nvidia-evil-cu13: invalid version",),
    ),
    Fault("version-py-5000-digits", write(f"{SITE}/torch/version.py", _VERSION_PY_HUGE)),
    Fault("pyvenv-cfg-5000-digits", write(_PYVENV, f"home = /usr/bin\nversion = {_HUGE}.1\n")),
    Fault(
        "version-json-nested-100000-deep",
        write(f"{CUDA_ROOT}/version.json", "[" * 100_000 + "]" * 100_000),
        expect=("toolkit: version.json: not JSON",),
    ),
    Fault(
        "ld-so-conf-alias-cycle-16-files",
        _ld_so_conf_alias_cycle,
        inprocess_root=True,  # 16 x 16 links: the case is the walk, not pyfakefs's copy
        max_seconds=5.0,
    ),
    Fault("ld-so-conf-nul-byte", write("/etc/ld.so.conf", "/opt/a\x00b/lib\ninclude /etc/x\x00y/*.conf\n")),
    Fault("os-release-escapes-and-markdown", write("/etc/os-release", _OS_RELEASE_HOSTILE)),
    Fault("env-values-with-escapes", env=setenv(NCCL_DEBUG=f"INFO{_ESCAPES}", CUDA_VERSION=_HUGE)),
)


# --- faults in what cudadoctor is given to read: a snapshot, its update cache, its data, an env file ----


@dataclass(frozen=True)
class InputFault:
    """A broken input file: ``make`` writes it; ``message`` is in the one line cudadoctor prints."""

    id: str
    make: Callable[..., None]
    message: str = ""
    exit_code: int | None = None  #: None: the family's (2 for a snapshot or env file, 3 for compat data)


def _write_file(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)


def _snapshot(transform: Callable[[bytes], bytes]) -> Callable[[str, bytes], None]:
    return lambda path, good: _write_file(path, transform(good))


def _newer_schema(good: bytes) -> bytes:
    doc = json.loads(good)
    doc["schema_version"] = 99
    return json.dumps(doc).encode()


def _edited(edit: Callable[[dict[str, Any]], None]) -> Callable[[bytes], bytes]:
    def transform(good: bytes) -> bytes:
        doc = json.loads(good)
        edit(doc)
        return json.dumps(doc).encode()

    return transform


#: More digits than Python's int() accepts from text (4,300).
_HUGE_NUMBER = "9" * 5000


def _huge_snapshot(path: str, good: bytes) -> None:
    _write_file(path, good)
    with open(path, "r+b") as handle:
        handle.truncate(100 << 20)  # sparse: 100 MB that take no disk space


SNAPSHOT_FAULTS: tuple[InputFault, ...] = (
    InputFault("snapshot-invalid-json", _snapshot(lambda good: b"{kind: cudadoctor-facts}"), "not JSON"),
    InputFault("snapshot-truncated", _snapshot(lambda good: good[: len(good) // 2]), "not JSON"),
    InputFault("snapshot-deeply-nested", _snapshot(lambda good: deeply_nested_snapshot()), "nested too deeply"),
    InputFault("snapshot-wrong-typed", _snapshot(wrong_typed_snapshot), "facts.gpus[0].index: expected an integer"),
    InputFault("snapshot-newer-schema", _snapshot(_newer_schema), "written with facts schema 99"),
    InputFault(
        "snapshot-number-too-long",
        _snapshot(lambda good: good.replace(b'"index": 0', b'"index": ' + _HUGE_NUMBER.encode(), 1)),
        "Exceeds the limit (4300 digits) for integer string conversion",
    ),
    InputFault(
        "snapshot-version-too-long",
        _snapshot(_edited(lambda doc: doc["facts"]["driver"].update(version=_HUGE_NUMBER))),
        "facts.driver.version: '999",
    ),
    InputFault(
        "snapshot-key-with-newline",
        _snapshot(_edited(lambda doc: doc["facts"]["packages"].update({"a\nb": 1}))),
        "facts.packages['a\\nb']: expected an object",
    ),
    InputFault("snapshot-100MB", _huge_snapshot, "larger than 64 MiB"),
    InputFault("snapshot-is-a-directory", lambda path, good: os.mkdir(path), "cannot read"),
)


def _cache_file(data: bytes) -> Callable[[str], None]:
    return lambda cache_dir: _write_file(os.path.join(cache_dir, "index-releases.json"), data)


CACHE_FAULTS: tuple[InputFault, ...] = (
    InputFault("cache-not-json", _cache_file(b"{not json")),
    InputFault("cache-binary", _cache_file(_BINARY)),
    InputFault(
        "cache-wrong-shape",
        _cache_file(b'{"kind": "cudadoctor-index-data", "schema_version": 1, "updated": "soon", "packages": 5}'),
    ),
    InputFault("cache-is-a-directory", lambda cache_dir: os.makedirs(os.path.join(cache_dir, "index-releases.json"))),
    InputFault("cache-is-a-fifo", lambda cache_dir: _mkfifo(cache_dir, "/index-releases.json")),  # issue #14
)


def _compat_copy(edit: Callable[[str], None]) -> Callable[..., None]:
    def make(directory: str, *, real: str) -> None:
        shutil.copytree(real, directory)
        edit(directory)

    return make


COMPAT_FAULTS: tuple[InputFault, ...] = (
    InputFault("compat-dir-missing", lambda directory, *, real: None, "cannot read: No such file or directory"),
    InputFault(
        "compat-invalid-toml",
        _compat_copy(lambda d: _write_file(os.path.join(d, "cuda.toml"), b"[[[release")),
        "compat/cuda.toml: not valid TOML",
    ),
    InputFault(
        "compat-no-meta-block",
        _compat_copy(lambda d: _write_file(os.path.join(d, "cuda.toml"), b'[[release]]\nversion = "13.0"\n')),
        "problem(s) in compat data",
    ),
    # The GPU table alone is read by the GPU probe, which records it as a reason and goes on (by design,
    # tests/probes/test_gpus.py::test_gpu_table_unavailable): the report is made, exit 0.
    InputFault(
        "compat-gpu-table-invalid",
        _compat_copy(lambda d: _write_file(os.path.join(d, "gpus.toml"), b"[[gpu]]\nname = 3\n")),
        "compat/gpus.toml",
        exit_code=0,
    ),
)

ENV_FILE_FAULTS: tuple[InputFault, ...] = (
    InputFault(
        "env-file-binary", lambda path: _write_file(path, b"\x00\x01\xff garbage\nPATH=/usr/bin\n"), "env file line 1"
    ),
    InputFault("env-file-is-a-directory", lambda path: os.mkdir(path), "cannot read env file"),
    InputFault("env-file-missing", lambda path: None, "cannot read env file"),
    # issue #14: a secret on a malformed line is never shown (the suites also check stderr for it)
    InputFault(
        "env-file-multi-line-secret",
        lambda path: _write_file(path, b"PATH=/usr/bin\nAWS_SECRET=first line\nwJalrXUtnFEMI/K7MDENG/SECRETKEY\n"),
        "env file line 3: not a NAME=VALUE line (the line is not shown",
    ),
    InputFault(
        "env-file-space-for-equals",
        lambda path: _write_file(path, b"PATH=/usr/bin\nAWS_SECRET_ACCESS_KEY wJalrXUtnFEMI/K7MDENG/SECRETKEY\n"),
        "env file line 2: AWS_SECRET_ACCESS_KEY is followed by a space",
    ),
)


def _unique(*groups: Iterable[Any]) -> None:
    ids = [item.id for group in groups for item in group]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    assert not duplicates, f"fault ids must be unique: {duplicates}"


FAULTS = FAULTS + ISSUE_14_FAULTS
_unique(FAULTS, SNAPSHOT_FAULTS, CACHE_FAULTS, COMPAT_FAULTS, ENV_FILE_FAULTS)


# --- collecting and judging in-process ----------------------------------------------------------------


def collect_live(tree: str, env: dict[str, str], fault: Fault) -> Facts:
    """The facts of a *live* machine whose files are ``tree`` (copied into pyfakefs), with the fault's
    NVML, libcuda and nvidia-smi. ``needs_non_root`` faults run as a normal user even under root."""
    compat = compat_load.compat_dir()
    with Patcher(allow_root_user=not fault.needs_non_root) as patcher:
        assert patcher.fs is not None
        patcher.fs.add_real_directory(tree, target_path="/", lazy_read=False)
        patcher.fs.add_real_directory(compat, lazy_read=False)  # the GPU table, if looked up
        return collect_facts(make_ctx(env=env, runner=fault.runner(), native=fault.fake_native()))


def judge(facts: Facts) -> tuple[list[Finding], int, str, str, dict[str, Any]]:
    """What ``cudadoctor check`` does after collecting: redact, run the checks, render text and JSON.

    :return: (findings, exit code, text report, verbose text report, JSON report parsed)
    """
    facts = redact_facts(facts, Redactor.for_this_user())
    matrix = CompatMatrix()
    findings = run_checks(facts, matrix)
    exit_code = 1 if any(f.status in (Status.FAIL, Status.ERROR) for f in findings) else 0
    report = build_report(facts, findings, matrix, exit_code=exit_code)
    text = render_text(report, RenderOptions())
    verbose = render_text(report, RenderOptions(verbose=True))
    doc = json.loads(render_json(report, RenderOptions()))
    return findings, exit_code, text, verbose, doc


def assert_report_intact(facts: Facts, findings: list[Finding], text: str, verbose: str, doc: dict[str, Any]) -> None:
    """No check crashed, no probe crashed, no traceback, and every category is in every rendering."""
    crashed = [f"{f.code}: {f.message}" for f in findings if f.status is Status.ERROR]
    assert not crashed, f"checks crashed: {crashed}"
    assert not [e.message for e in facts.errors if "probe crashed" in e.message]
    for report in (text, verbose, json.dumps(doc)):
        assert "Traceback" not in report
        assert not CONTROLS.search(report), f"a control character reached the report: {CONTROLS.search(report)}"
    assert_categories(text)
    assert_categories(verbose)
    assert tuple(s["category"] for s in doc["summary"]) == CATEGORY_KEYS


def assert_categories(text: str) -> None:
    """Every category has its ``[mark] Title:`` line in a text report."""
    lines = [line for line in text.splitlines() if line.startswith("[")]
    for title in CATEGORY_TITLES:
        assert any(f"] {title}:" in line for line in lines), f"no {title!r} line in:\n{text}"


def assert_expected(fault_id: str, seen: list[str], expected: tuple[str, ...]) -> None:
    """Each expected reason is part of one observation."""
    for wanted in expected:
        assert any(wanted in line for line in seen), f"{fault_id}: no {wanted!r} in {seen}"
