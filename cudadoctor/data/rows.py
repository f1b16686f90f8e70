"""One frozen dataclass per record of ``compat/*.toml``: the row's type is its schema.

A field's annotation says what the data must hold (see :mod:`cudadoctor.data.types` and
:mod:`cudadoctor.data.fields`); a field without a default, or made with :func:`in_data`, is
required. Every record also names its evidence (``source`` or ``sources``, ids of the file's
``[[meta.sources]]``) and may carry a ``note``: those are checked but are not row fields, except
where a row keeps ``source`` for its readers (:class:`GpuModel`). :data:`LAYOUTS` says which row
type each table of each kind of file holds. compat/README.md explains every field in words.
"""

# No `from __future__ import annotations`: the annotations are the schema, read at run time, and
# evaluating them once here is cheaper than typing.get_type_hints compiling each string on first use.

import re
import types
from collections.abc import Mapping
from dataclasses import field
from typing import Annotated, Any, NamedTuple

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudadoctor.data.row import Row, row
from cudadoctor.data.types import (
    Branch,
    BranchDesignation,
    Cc,
    Pattern,
    PlainCc,
    PreloadWhen,
    YearMonth,
    in_data,
)
from cudadoctor.facts.model import DriverVersion

__all__ = [
    "LAYOUTS",
    "BitsandbytesNeeded",
    "BitsandbytesSelection",
    "BitsandbytesWheel",
    "CompanionCudaCheck",
    "CompanionRelease",
    "Ctranslate2Range",
    "CudaError",
    "CudaRelease",
    "CudnnLoading",
    "CudnnRelease",
    "CudnnSublibrary",
    "CupyPackage",
    "DriverBranch",
    "DriverLifecycle",
    "DriverOpen",
    "ErrorCause",
    "ErrorMessage",
    "FlashAttnExclusion",
    "FlashAttnRelease",
    "FlashinferAot",
    "FlashinferPackage",
    "ForwardCompat",
    "ForwardCompatPackage",
    "FrameworkPreload",
    "GpuArch",
    "GpuDevice",
    "GpuModel",
    "JaxRelease",
    "JetsonSbsa",
    "Layout",
    "LlamaCppCmakeFlag",
    "LlamaCppIndex",
    "LlamaCppPypi",
    "MinorCompat",
    "NcclRelease",
    "NgcContainer",
    "NgcPytorchImage",
    "NvidiaCudaScheme",
    "NvidiaCudaTag",
    "OnnxDocsBuild",
    "OnnxruntimeRelease",
    "PytorchImage",
    "PytorchImageScheme",
    "RuntimeLoad",
    "TensorflowRelease",
    "TensorrtRelease",
    "TorchArchList",
    "TorchBundledCudnn",
    "TorchInstallForm",
    "TorchRelease",
    "TorchTriton",
    "TorchVariant",
    "TritonRelease",
    "VllmImage",
    "VllmImageScheme",
    "VllmRelease",
    "XformersRelease",
    "XidEntry",
]

_NO_TABLE: Mapping[str, Any] = types.MappingProxyType({})


def _no_table() -> Any:
    """An empty read-only table as a field's default."""
    return field(default_factory=lambda: _NO_TABLE)


# --- compat/cuda.toml (kind cuda-toolkit-drivers) ---------------------------------------------------


@row(kw_only=True)
class CudaRelease(Row):
    """A CUDA toolkit release and the driver it needs (the release notes' driver table)."""

    version: Version
    label: str | None = None  #: as NVIDIA names it ("12.4 Update 1")
    min_driver_linux: DriverVersion | None = None
    min_driver_windows: DriverVersion | None = None


@row(kw_only=True)
class MinorCompat(Row):
    """The oldest driver that runs any CUDA ``cuda_major``.x application (minor-version compatibility)."""

    cuda_major: int
    min_driver_branch: Branch | None = None
    min_driver_linux: DriverVersion
    min_driver_windows: DriverVersion | None = None
    upper_driver_branch_exclusive: Branch | None = None  #: the first branch whose own CUDA major is newer
    limits: tuple[str, ...] = ()


@row(kw_only=True)
class ForwardCompatPackage(Row):
    """A ``cuda-compat-X-Y`` package and the driver branches it runs on (forward compatibility)."""

    package: str
    compatible_driver_branches: tuple[Branch, ...] = ()
    paired_driver_branch: Branch | None = None  #: the branch the package's own driver comes from


@row(kw_only=True)
class ForwardCompat(Row):
    """The forward-compatibility facts that hold for every ``cuda-compat`` package."""

    gpus: str  #: which GPUs forward compatibility supports, in NVIDIA's words
    package: str  #: the package name pattern
    introduced_in_cuda: Version
    install_dir: str
    requires_newer_than_kernel_driver: bool
    supported_driver_branches: tuple[Branch, ...]
    unsupported_features: tuple[str, ...] = ()
    error_codes: tuple[str, ...] = ()


@row(kw_only=True)
class DriverBranch(Row):
    """A driver branch's type and end of life (NVIDIA Data Center Drivers, "Supported Drivers and CUDA Toolkit
    Versions")."""

    branch: Branch
    designation: BranchDesignation | None = None  #: long-term / production / new-feature / evaluation
    end_of_life: YearMonth | None = None  #: ``"2028-06"``: the branch is end of life once that month is over
    listed_end_of_life: bool = False  #: NVIDIA lists it among the end-of-life branches (no date)
    older_unlisted_end_of_life: bool = False  #: every older branch not in the table is end of life


@row(kw_only=True)
class DriverLifecycle(Row):
    """Which GPUs NVIDIA's driver branch lifecycle (the ``driver_branch`` rows) covers, by their segment in
    compat/gpus.toml."""

    segments: tuple[str, ...]  #: the product lines the lifecycle covers (``datacenter``)
    #: product lines whose driver NVIDIA publishes no branch end of life for (``geforce``, ``workstation``)
    unpublished_segments: tuple[str, ...] = ()


# --- compat/gpus.toml (gpu-models) and compat/gpu_archs.toml (gpu-architectures) -----------------------


@row()
class GpuModel(Row):
    """One GPU model of the table, or a bare compute capability given on the command line."""

    name: str  #: as the table names it ("H200"), or the spec as given ("sm_90a")
    compute_capability: PlainCc  #: ``"9.0"``
    architecture: str | None = None  #: ``Hopper``
    segment: str | None = None  #: ``datacenter`` / ``geforce`` / ``workstation`` …
    source: str | None = None  #: the ``[[meta.sources]]`` id the record cites
    aliases: tuple[str, ...] = in_data(())
    #: the rule of an *inferred* compute capability (a model of compat/gpu_devices.toml); None: read from a source
    inferred: str | None = None


#: A PCI ID as lspci and NVIDIA's README write it: four upper-case hex digits (``"2237"``).
PciId = Annotated[str, Pattern(re.compile(r"^[0-9A-F]{4}$"), "a PCI ID (four upper-case hex digits)")]
#: A subsystem as NVIDIA's README writes it: vendor and device ID (``"10DE 152F"``).
PciSubsystem = Annotated[str, Pattern(re.compile(r"^[0-9A-F]{4} [0-9A-F]{4}$"), "a PCI subsystem (vendor device)")]


# --- compat/gpu_devices.toml (kind gpu-devices) ---------------------------------------------------------


@row(kw_only=True)
class GpuDevice(Row):
    """One NVIDIA GPU by PCI device ID: its name and the driver releases whose README lists it."""

    pci: PciId  #: the PCI device ID (vendor 10DE)
    name: str  #: the product name as the driver prints it ("NVIDIA A10G")
    #: the first release of each driver branch whose README lists it (a listing proves support from there on)
    listed_from: tuple[DriverVersion, ...]
    #: the subsystems (vendor device) this name is listed for; empty: the device ID alone names it
    subsystems: tuple[PciSubsystem, ...] = ()
    compute_capability: PlainCc | None = None  #: None: neither named in gpus.toml nor safely inferred
    cc_model: str | None = None  #: the compat/gpus.toml record its compute capability comes from
    inferred: str | None = None  #: the rule an *inferred* compute capability follows
    source: str | None = None  #: the ``[[meta.sources]]`` id the record cites


@row(kw_only=True)
class JetsonSbsa(Row):
    """The Jetson modules that run the Arm-server (SBSA) CUDA stack (JetPack 7) rather than L4T's own CUDA."""

    jetson_linux: tuple[str, ...]  #: release prefixes of ``/etc/nv_tegra_release`` (``R38``)
    min_compute_capability: PlainCc  #: the lowest compute capability of those modules (``11.0``, Thor)


@row(kw_only=True)
class GpuArch(Row):
    """A compute capability's architecture and the CUDA versions that support it."""

    compute_capability: Cc
    name: str
    first_cuda: Version | None = None
    last_cuda_major: int | None = None
    arch_specific: tuple[Cc, ...] = ()
    min_driver_branch: Branch | None = None
    #: the compute capabilities its family-specific code (``sm_XYf``) runs on
    family_runs_on: tuple[Cc, ...] = ()
    renumbered_from: Cc | None = None
    renumbered_to: Cc | None = None
    renumbered_in_cuda: Version | None = None
    last_driver_branch: Branch | None = None  #: the last branch that supports it (legacy GPUs)


# --- compat/torch.toml (torch-releases) and compat/vllm.toml (vllm-releases) ----------------------------


@row(kw_only=True)
class TorchVariant(Row):
    """A build variant on PyTorch's wheel index (``cu124``, ``cpu``, ``rocm6.1``)."""

    tag: str
    cuda: Version | None = None
    index_url: str | None = None


@row(kw_only=True)
class UvTorchBackend(Row):
    """What uv's automatic PyTorch backend (``uv pip install torch --torch-backend=auto``) knows of the indexes."""

    newest_rocm: Version  #: the newest ROCm index in uv's table; uv searches no newer one


@row()
class TorchRelease(Row):
    """One torch release: its variants, the CUDA of its default PyPI wheel, Python versions, companions."""

    version: Version
    python: tuple[str, ...] = ()
    python_aarch64: tuple[str, ...] = ()
    #: CPython versions of its macOS arm64 wheels (PyPI; CPU and MPS builds)
    python_macos_arm64: tuple[str, ...] = ()
    #: CPython versions of its Windows x86-64 wheels on PyPI (empty: none there, or not read)
    python_windows: tuple[str, ...] = ()
    pypi_default_cuda: Version | None = None
    pypi_default_evidence: str | None = None
    pypi_aarch64_cuda: Version | None = None
    variants: tuple[str, ...] = ()
    torchvision: Version | None = None
    torchaudio: Version | None = None
    #: read from the package index by `cudadoctor update` (the date), not curated; None when curated
    derived: str | None = None
    requires_python: SpecifierSet | None = None
    pypi_aarch64_evidence: str | None = None
    variants_partial: bool = False  #: the variant list is known to be incomplete
    #: a derived row only: the GPU targets of its default PyPI wheel, taken from an earlier curated release
    inherited_archs: tuple[str, ...] = ()
    #: a derived row only: what was inherited from which release (the *inferred* label); None: nothing
    inherited: str | None = None
    #: the variants whose index on download.pytorch.org has Linux aarch64 (SBSA) wheels of the release
    variants_aarch64: tuple[str, ...] = ()
    #: the default PyPI Linux aarch64 wheel is a CPU build (its torch/version.py says ``cuda = None``)
    pypi_aarch64_cpu: bool = False
    #: CPython versions of its free-threaded wheels on PyPI (ABI ``cp313t``); empty: none there
    python_freethreaded: tuple[str, ...] = ()


@row(kw_only=True)
class TorchArchList(Row):
    """The GPU targets (``TORCH_CUDA_ARCH_LIST``) of one variant's wheels over a range of releases."""

    releases: SpecifierSet
    variant: str
    archs: tuple[str, ...]
    aarch64: bool = False  #: the list of the Linux aarch64 (SBSA) wheels; False: the Linux x86_64 ones


@row(kw_only=True)
class TorchInstallForm(Row):
    """How the CUDA builds of a range of torch releases install when their variant has no index URL of its own
    (torch 1.x): pip's option, its URL and the packages pinned with the build's local version."""

    releases: SpecifierSet
    #: ``find-links`` (pip's ``-f``) or ``extra-index-url``: printed as the pip option of a fix's command
    option: Annotated[str, Pattern(re.compile(r"^(find-links|extra-index-url)$"), "find-links or extra-index-url")]
    url: str  #: ``{tag}`` stands for the variant tag (``cu111``)
    #: the packages pinned ``==X+{tag}`` (PyTorch's commands leave torchaudio untagged)
    local_tag: tuple[str, ...]


@row(kw_only=True)
class TorchBundledCudnn(Row):
    """The cuDNN a torch 1.x wheel copies into ``torch/lib`` (before torch depended on nvidia-cudnn wheels)."""

    releases: SpecifierSet
    variant: str  #: ``cu113``
    cudnn: Version
    #: the file names in torch/lib: the shim and its sub-libraries, not renamed (the wheel build keeps cuDNN's names)
    files: tuple[str, ...]


@row()
class VllmRelease(Row):
    """One vLLM release: its torch pin, Python range, the CUDA its wheel was built with, the GPU floor."""

    version: Version
    torch: SpecifierSet | None = None  #: the Requires-Dist pin of the Linux x86_64 wheel
    requires_python: SpecifierSet | None = None
    python: tuple[str, ...] = ()  #: CPython tags of its wheels (an abi3 wheel lists its floor)
    abi3: bool = False
    linux_x86_64_tag: str | None = None  #: None when no Linux x86_64 wheel was published
    cuda: Version | None = None
    min_compute_capability: Cc | None = None
    derived: str | None = None  #: see TorchRelease.derived
    cuda_major_linked: int | None = None  #: the CUDA major of the libraries the PyPI wheel links
    torch_pypi_cuda_pin: str | None = None  #: the CUDA runtime pin of the torch it requires
    other_cuda: tuple[Version, ...] = ()  #: CUDA versions of wheels published outside PyPI
    other_cuda_index: str | None = None  #: their URL template (${VLLM_VERSION}, ${CUDA_VERSION})
    other_cuda_torch_index: str | None = None  #: the torch index to pair them with (same template)
    #: a derived row only: what was inherited from which release (the *inferred* label); None: nothing
    inherited: str | None = None


# --- compat/tensorrt.toml (tensorrt-releases) and compat/libraries.toml (cuda-libraries) -----------------


@row(kw_only=True)
class TensorrtRelease(Row):
    """One TensorRT release on PyPI: its per-CUDA packages, what plain ``tensorrt`` pulls, Python."""

    version: Version
    trt_build: str | None = None  #: the TensorRT build number when the PyPI version differs
    early_access: bool = False
    packages: tuple[str, ...] = ()
    plain_tensorrt_kind: str | None = None  #: ``sdist`` / ``wheel`` / ``absent``
    plain_tensorrt_pulls: str | None = None  #: what ``pip install tensorrt`` installs
    plain_tensorrt_pulls_win32: str | None = None
    plain_tensorrt_index: str | None = None  #: the extra index plain ``tensorrt`` installs from
    cuda: tuple[str, ...] = ()  #: the support matrix's CUDA versions, as NVIDIA writes them
    cuda_builds: tuple[Version, ...] = ()
    cudnn: Version | None = None
    requires_python: SpecifierSet | None = None
    python: tuple[str, ...] = ()
    linux_x86_64_bindings: bool | None = None
    readme_tag: str | None = None  #: the TensorRT OSS tag whose README describes it


@row(kw_only=True)
class CudnnRelease(Row):
    """One cuDNN release on PyPI: its wheels per CUDA major and what they need."""

    version: Version
    release: Version | None = None  #: NVIDIA's release number (without the build)
    cuda_majors: tuple[int, ...] = ()
    wheels: tuple[str, ...] = ()  #: ``nvidia-cudnn-cu13==9.17.0.29``
    wheel_platforms: Mapping[str, tuple[str, ...]] = _no_table()  #: per ``cu13``: platform tags
    linux_x86_64: Mapping[str, bool] = _no_table()  #: per ``cu12``: False where no Linux x86_64 wheel exists
    requires: Mapping[str, tuple[str, ...]] = _no_table()  #: per ``cu13``: the wheels it requires
    yanked: tuple[str, ...] = ()
    pinned_by_torch: tuple[Version, ...] = ()
    min_driver_linux_by_cuda: Mapping[str, DriverVersion] = _no_table()  #: per ``cuda13``


@row(kw_only=True)
class CudnnLoading(Row):
    """Where the shim ``libcudnn.so.N`` of one cuDNN major looks first when it loads its sub-libraries."""

    major: int
    #: True: its own directory first, the loader's search as a fallback; False: the loader's search first
    own_directory_first: bool


@row(kw_only=True)
class CudnnSublibrary(Row):
    """cuDNN sub-libraries (``libcudnn_ops_infer`` …) that the shim loads by soname, and which releases ship them."""

    stems: tuple[str, ...]
    major: int  #: the soname's number (``libcudnn_ops_infer.so.8``)
    shipped: SpecifierSet  #: the cuDNN releases whose packages hold the files
    loaded_by: SpecifierSet  #: the cuDNN releases whose core loads them


@row(kw_only=True)
class NcclRelease(Row):
    """One NCCL release on PyPI: its wheels per CUDA major."""

    version: Version
    cuda_majors: tuple[int, ...] = ()
    wheels: tuple[str, ...] = ()
    wheel_platforms: Mapping[str, tuple[str, ...]] = _no_table()
    linux_x86_64: Mapping[str, bool] = _no_table()
    yanked: tuple[str, ...] = ()
    pinned_by_torch: tuple[Version, ...] = ()


# --- compat/triton.toml (triton-releases) -----------------------------------------------------------


@row(kw_only=True)
class TritonRelease(Row):
    """One triton release on PyPI: the ptxas its wheel bundles and how it finds libcuda for its launcher."""

    version: Version
    torch: tuple[Version, ...] = ()  #: torch releases whose Linux x86_64 wheel pins it
    ptxas: Version  #: the CUDA release of the bundled ptxas (read from the binary)
    ptxas_file: str  #: where the wheel puts it, below site-packages
    ptxas_env: str  #: the variable naming a ptxas Triton tries first
    ptxas_blackwell: Version | None = None  #: the second bundled ptxas, for SM numbers from ``blackwell_from``
    ptxas_blackwell_file: str | None = None
    ptxas_blackwell_env: str | None = None
    blackwell_from: int | None = None  #: the lowest SM number (major*10+minor) given to ``ptxas_blackwell``
    libcuda_lookup: str  #: ``ldconfig`` (``/sbin/ldconfig -p``) or ``whereis`` (``whereis libcuda.so``)
    libcuda_cache_match: str | None = None  #: the text an ``ldconfig -p`` line must contain
    libcuda_dir_needs: str | None = None  #: the file one of the found directories must hold (Triton's assertion)
    libcuda_link_needs: str  #: the file the launcher's link needs (``libcuda.so`` for ``-lcuda``)
    libcuda_env: str | None = None  #: the variable that replaces the search with one directory
    ld_library_path_fallback: bool = False  #: LD_LIBRARY_PATH is searched when ldconfig lists no match


# --- compat/cuda_errors.toml (cuda-errors) ---------------------------------------------------------


@row(kw_only=True)
class CudaError(Row):
    """A CUDA error code and what it means for the environment."""

    code: int
    name: str  #: ``CUDA_ERROR_SYSTEM_DRIVER_MISMATCH``
    api: str  #: ``driver`` (CUresult) or ``runtime`` (cudaError_t)
    summary: str  #: NVIDIA's description, shortened
    cause: str  #: what in the environment produces it
    fix: str
    observed: str | None = None  #: what was seen on a real machine, when it was
    checks: tuple[str, ...] = ()  #: the fast-path checks that look at the same cause


# --- compat/error_messages.toml (error-messages) -----------------------------------------------------


@row(kw_only=True)
class ErrorCause(Row):
    """A family of causes an error message can come from, and the checks whose problem is that cause."""

    id: str  #: ``driver-too-old``
    title: str  #: the cause in words
    checks: tuple[str, ...] = ()  #: codes of the checks that decide it (empty: no check can)
    decide: str  #: the one fact that decides it when the checks cannot (what to run, where)


@row(kw_only=True)
class ErrorMessage(Row):
    """An error message as users meet it, its patterns, and the families of causes it comes from."""

    id: str  #: ``cuda-insufficient-driver``
    title: str  #: what the message means
    library: str  #: who prints it: ``cuda-runtime``, ``ld.so``, ``nccl``, ``onnxruntime`` …
    patterns: tuple[str, ...]  #: bounded regular expressions, searched case-insensitively
    causes: tuple[str, ...]  #: ids of :class:`ErrorCause` rows, the likeliest first
    example: str  #: the message as the library prints it: the entry must claim it (cudadoctor/why/catalogue.py)
    cuda_error: int | None = None  #: its code in compat/cuda_errors.toml
    xid: bool = False  #: the first group of the matching pattern is an Xid code of compat/xid.toml
    sources: tuple[str, ...] = ()  #: the ``[[meta.sources]]`` ids it cites, kept to show their URLs


# --- compat/xid.toml (xid-catalog) -------------------------------------------------------------------


@row(kw_only=True)
class XidEntry(Row):
    """One Xid code of NVIDIA's catalog and what an operator does about it."""

    code: int
    mnemonic: str  #: ``ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS``
    description: str  #: NVIDIA's description
    immediate: str  #: NVIDIA's immediate resolution bucket (``RESET_GPU``)
    investigatory: str  #: NVIDIA's investigatory bucket (``CONTACT_SUPPORT``)
    verdict: str  #: app, watch, reset, reboot or replace (inferred from the immediate bucket)
    action: str  #: what to do, one line


# --- compat/ecosystem.toml (ecosystem) -------------------------------------------------------------------


@row(kw_only=True)
class JaxRelease(Row):
    """One JAX release: its jaxlib and CUDA plugin pins and the cuDNN its plugins need."""

    version: Version
    requires_python: SpecifierSet | None = None
    jaxlib: SpecifierSet | None = None
    jaxlib_in_cuda12_extra: SpecifierSet | None = None
    jaxlib_same_version_on_pypi: bool | None = None
    plugin_in_cuda12_extra: SpecifierSet | None = None
    plugin_in_cuda13_extra: SpecifierSet | None = None
    cuda_plugins: tuple[str, ...] = ()
    min_cudnn: Mapping[str, Version] = _no_table()  #: per ``cuda12``
    cudnn_requirement: Mapping[str, SpecifierSet] = _no_table()  #: per ``cuda12``
    cudnn_pin_in: str | None = None  #: which package carries the cuDNN pin
    yanked: bool = False


@row(kw_only=True)
class FlashAttnExclusion(Row):
    """A combination a flash-attn release published no wheel for: every field given must match."""

    torch_version: str
    python_version: str | None = None
    cuda_version: Version | None = None


@row(kw_only=True)
class FlashAttnRelease(Row):
    """One flash-attn release and the prebuilt wheels of its GitHub release (the product of the lists)."""

    version: Version
    requires_python: SpecifierSet | None = None
    torch_requirement: str | None = None
    release_tag: str | None = None
    wheels_torch: tuple[str, ...] = ()  #: torch major.minor[.patch] as the wheel names write it
    wheels_python: tuple[str, ...] = ()
    wheels_cuda_build: tuple[Version, ...] = ()
    wheels_cuda_tag: tuple[str, ...] = ()  #: ``cu12``
    wheels_cuda_majors: tuple[int, ...] = ()
    wheels_cxx11abi: tuple[str, ...] = ()  #: ``TRUE`` / ``FALSE``
    wheels_excluded: tuple[FlashAttnExclusion, ...] = ()
    wheels_os: tuple[str, ...] = ()  #: the build runners' OS (``ubuntu-22.04``)


@row(kw_only=True)
class XformersRelease(Row):
    """One xformers release, the torch it pins and what its PyPI wheel was built with."""

    version: Version
    torch: SpecifierSet | None = None
    requires_python: SpecifierSet | None = None
    wheel_torch: str | None = None  #: the torch build its Linux x86_64 PyPI wheel was built against (``2.4.1+cu121``)
    wheel_cuda: Version | None = None  #: the CUDA that wheel was built with (its ``xformers/cpp_lib.json``)
    wheel_read: str | None = None  #: the wheel file these were read from
    #: the download.pytorch.org indexes (variant tags: ``cu126``, ``rocm7.1``) its README names install commands for
    pytorch_indexes: tuple[str, ...] = ()


@row(kw_only=True)
class OnnxDocsBuild(Row):
    """A CUDA/cuDNN pairing ONNX Runtime's docs list for a release."""

    cuda: str  #: as the docs write it ("12.x")
    cudnn: str
    pypi: bool | None = None  #: whether the PyPI wheel is this build (None: the docs do not say)
    #: the pip index that has this build's wheel where it is not PyPI's (ONNX Runtime's onnxruntime-cuda-12 feed)
    index: str | None = None


@row(kw_only=True)
class OnnxruntimeRelease(Row):
    """One onnxruntime-gpu release: the CUDA and cuDNN majors of its PyPI wheel."""

    version: Version
    cuda_major: int | None = None
    cudnn_major: int | None = None
    cuda_build: Version | None = None
    requires_python: SpecifierSet | None = None
    cuda_extra_runtime: str | None = None  #: the ``[cuda]`` extra's runtime requirement
    cudnn_extra: str | None = None  #: the ``[cudnn]`` extra's requirement
    wheel_sonames: tuple[str, ...] = ()  #: the CUDA libraries the wheel links
    wheel_read: str | None = None  #: the wheel file these facts were read from
    evidence: tuple[str, ...] = ()  #: which parts of the wheel they came from
    docs_builds: tuple[OnnxDocsBuild, ...] = ()
    python: tuple[str, ...] = ()  #: CPython versions of its manylinux x86_64 wheels on PyPI
    #: whether ``onnxruntime.preload_dlls()`` exists in it (None: not read)
    preload_dlls: bool | None = None


@row(kw_only=True)
class PaddleRelease(Row):
    """One paddlepaddle-gpu release on PyPI: the CUDA and cuDNN its wheel was built with."""

    version: Version
    cuda: Version
    cudnn: Version | None = None


@row(kw_only=True)
class CupyPackage(Row):
    """One CuPy binary package (``cupy-cudaNNx``, or the older per-minor ``cupy-cudaNNN``): the CUDA it needs,
    its first and newest releases."""

    package: str
    cuda_major: int
    #: the CUDA range its PyPI description names, inclusive (``11.2``-``11.8``; one minor for the per-minor
    #: ``cupy-cuda102`` … ``cupy-cuda117``); None where it names the whole major (``CUDA 12.x``)
    cuda_min: Version | None = None
    cuda_max: Version | None = None
    first_version: Version | None = None
    first_uploaded: str | None = None
    last_version: Version | None = None
    last_uploaded: str | None = None
    releases: int | None = None
    latest_requires_python: SpecifierSet | None = None
    yanked: tuple[str, ...] = ()


@row(kw_only=True)
class Ctranslate2Range(Row):
    """Consecutive ctranslate2 releases whose PyPI Linux x86_64 wheels need the same CUDA and cuDNN majors."""

    releases: tuple[str, ...]  #: the releases, oldest first (PyPI's release list)
    cuda: Version  #: the CUDA its cudart (linked statically) is from: cuBLAS of that major is opened by name
    #: the cuDNN major its bundled cuDNN shim opens by name; None: the wheels bundle no cuDNN
    cudnn_major: int | None = None


@row(kw_only=True)
class TensorflowRelease(Row):
    """One TensorFlow release: the CUDA and cuDNN it was tested with and its ``[and-cuda]`` pins."""

    version: Version
    cuda: Version | None = None
    cudnn: Version | None = None
    tested_python: str | None = None  #: ``3.10-3.13``
    requires_python: SpecifierSet | None = None
    python: tuple[str, ...] = ()  #: CPython versions of its manylinux x86_64 wheels on PyPI
    python_aarch64: tuple[str, ...] = ()  #: … of its manylinux aarch64 wheels
    python_macos_arm64: tuple[str, ...] = ()  #: … of its macOS arm64 wheels
    python_windows: tuple[str, ...] = ()  #: … of its Windows x86-64 wheels
    and_cuda: Mapping[str, SpecifierSet] = _no_table()  #: the ``[and-cuda]`` extra's pins
    #: False where pip cannot resolve ``tensorflow[and-cuda]==<version>`` (a pin PyPI lacks); None: not known
    and_cuda_resolves: bool | None = None


# --- compat/companions.toml (companions) ------------------------------------------------------------


@row(kw_only=True)
class CompanionRelease(Row):
    """One torchvision or torchaudio release and the torch requirement of its wheel (None: it requires none)."""

    version: Version
    torch: SpecifierSet | None = None
    wheel: str | None = None  #: the wheel file the requirement was read from


@row(kw_only=True)
class CompanionCudaCheck(Row):
    """How a companion compares its CUDA build with torch's at import, for a range of its releases."""

    package: str
    releases: SpecifierSet
    #: ``major``: only a different CUDA major fails; ``minor``: a different major.minor fails too
    compares: Annotated[str, Pattern(re.compile(r"^(major|minor)$"), "major or minor")]
    error: str  #: the start of the error it raises, as printed


@row(kw_only=True)
class TorchTriton(Row):
    """The triton requirement of a torch release's Linux x86_64 wheel."""

    version: Version
    triton: SpecifierSet


@row(kw_only=True)
class FlashinferAot(Row):
    """The torch minors an ahead-of-time ``flashinfer`` wheel built for ``built`` also loads into."""

    built: str  #: ``2.4``
    loads_into: tuple[str, ...]


@row(kw_only=True)
class FlashinferPackage(Row):
    """One FlashInfer package: its index, the releases read there, the package whose version it must equal."""

    package: str
    index: str | None = None
    same_version_as: str | None = None
    pypi_versions: tuple[Version, ...] = ()  #: the releases with files on PyPI (empty: not on PyPI, or not read)


# --- compat/llama_cpp.toml (llama-cpp) -----------------------------------------------------------------


@row(kw_only=True)
class LlamaCppCmakeFlag(Row):
    """The CMake option a llama-cpp-python release's README gives for a CUDA build from source."""

    first: Version
    last: Version | None = None  #: None: still current
    cmake_args: str  #: ``-DGGML_CUDA=on``


@row(kw_only=True)
class LlamaCppIndex(Row):
    """One prebuilt CUDA wheel index of llama-cpp-python and the releases it lists."""

    tag: str  #: ``cu124``
    cuda: Version  #: the CUDA the wheels are built with (their cudart and cuBLAS are the machine's)
    url: str
    releases: tuple[str, ...]


@row(kw_only=True)
class LlamaCppPypi(Row):
    """llama-cpp-python on PyPI: its releases, and that they are source distributions only."""

    sdist_only: bool
    releases: tuple[str, ...]
    yanked: tuple[str, ...] = ()


# --- compat/runtime_libraries.toml (runtime-libraries) ---------------------------------------------


@row(kw_only=True)
class RuntimeLoad(Row):
    """CUDA libraries one object of a package's wheel loads by name at run time (``dlopen``), not through
    DT_NEEDED, for a range of the package's releases."""

    package: str  #: the distribution (``ctranslate2``)
    versions: SpecifierSet  #: the releases the row covers (``>=4.0.0,<4.5.0``)
    arch: str  #: the wheels' machine (``x86_64``): other machines' wheels may be CPU-only
    #: the loading object, a glob relative to site-packages (``ctranslate2.libs/libctranslate2-*.so*``)
    object: str
    object_read: str  #: that object's name in the wheel the row was read from
    sonames: tuple[str, ...]  #: what it passes to dlopen (``libcublas.so.12``)
    cuda_build: Version | None = None  #: the CUDA the release was built with (its static cudart)
    #: packages whose presence makes the libraries required; without them (or with ``optional``) a
    #: library that loads nowhere only matters when another major of it is installed
    required_with: tuple[str, ...] = ()
    optional: bool = False  #: the package works without them (a feature is off)
    wheel_read: str | None = None  #: the wheel file the names were read from
    #: the loading object's DT_RUNPATH as read (``$ORIGIN/../nvidia/cudnn/lib`` …): where its dlopen looks; a
    #: replay of the wheel lays the object out with it
    object_runpath: tuple[str, ...] = ()


@row(kw_only=True)
class FrameworkPreload(Row):
    """NVIDIA wheel libraries a framework loads by full path when it is imported (``ctypes.CDLL`` of
    ``site/nvidia/<folder>/lib/<file>``), for a range of its releases: once loaded, that copy is the one every
    later need of its soname gets, whatever the needer's own search would find."""

    package: str  #: the distribution (``torch``)
    versions: SpecifierSet  #: the releases the row covers (``>=2.6.0,<2.9.0``)
    #: ``load_failure``: only after its own load failed to find one of them; ``wheel_cudart``: only when its
    #: libcudart came from the ``nvidia/cuda_runtime`` wheel; ``cudart_loaded``: whenever its own libcudart
    #: loaded, from anywhere; ``always``: whenever it initialises; ``on_call``: only when the program calls ``call``
    #: (onnxruntime.preload_dlls()): never assumed to have run, named in the fix
    when: PreloadWhen
    #: ``<folder>/lib/<glob>`` under ``nvidia/`` of the first site directory that has it
    libraries: tuple[str, ...]
    #: in order, until the first that no site directory holds (the framework stops there: torch)
    ordered: bool = False
    #: also ``nvidia/cu<N>/lib/<file>`` (the CUDA 13 wheels' one directory), N = the framework's CUDA major
    cuda_folder: bool = False
    serves: tuple[str, ...] = ()  #: other distributions whose objects load after the preload (JAX's plugin)
    #: only when this distribution is installed in ``requires_versions`` (CuPy takes NCCL from its wheel)
    requires_package: str | None = None
    requires_versions: SpecifierSet | None = None
    member: str | None = None  #: the wheel member the row was read from (``torch/__init__.py``)
    call: str | None = None  #: for ``on_call``: what the program calls, before it loads the package's GPU code


@row(kw_only=True)
class DriverOpen(Row):
    """An object that opens the CUDA driver by a name other than its soname (``dlopen("libcuda.so")``), for a
    range of releases of a package, or of any installed cuDNN copy (``package = "cudnn"``)."""

    package: str  #: the distribution (``cuda-python``), or ``cudnn`` for a cuDNN copy of any origin
    versions: SpecifierSet  #: the releases the row covers (``>=11.5.0,<11.6.1``)
    object_read: str  #: the opening object's path in the wheel the row was read from
    opens: str  #: the name it passes to dlopen (``libcuda.so``)
    wheel_read: str  #: the wheel file the name was read from


# --- compat/bitsandbytes.toml (bitsandbytes-releases) ---------------------------------------------


@row(kw_only=True)
class BitsandbytesWheel(Row):
    """One Linux wheel of a bitsandbytes release on PyPI: the native libraries it ships."""

    version: Version
    arch: str  #: the machine its libraries are built for (a py3-none-any wheel installs anywhere)
    wheel: str  #: the wheel file the list was read from
    #: ``libbitsandbytes_cpu.so``, ``libbitsandbytes_cuda121.so``, ``libbitsandbytes_cuda118_nocublaslt.so`` …
    libraries: tuple[str, ...]
    requires_torch: SpecifierSet | None = None  #: its Requires-Dist torch (None: none, or no version)
    requires_python: SpecifierSet | None = None


@row(kw_only=True)
class BitsandbytesNeeded(Row):
    """The CUDA libraries one bitsandbytes native library needs (DT_NEEDED), for a range of releases."""

    library: str  #: ``libbitsandbytes_cuda121.so``
    arch: str
    versions: SpecifierSet  #: the releases whose wheel ships this library with these needs
    sonames: tuple[str, ...]  #: ``libcudart.so.12``, ``libcublas.so.12`` … (the C and C++ runtime left out)


#: Where a bitsandbytes release takes the CUDA version of the library it loads from.
BnbCudaFrom = Annotated[str, Pattern(re.compile(r"^(libcudart|torch)$"), "libcudart or torch")]
#: How a bitsandbytes release builds the library name from its override variable.
BnbOverrideForm = Annotated[str, Pattern(re.compile(r"^(slice|strip|substitute|replace)$"), "an override form")]
#: What a bitsandbytes release does when the library it picked is not in the package.
BnbWhenMissing = Annotated[str, Pattern(re.compile(r"^(cpu|error)$"), "cpu or error")]


@row(kw_only=True)
class BitsandbytesSelection(Row):
    """How a range of bitsandbytes releases picks the native library to load, as their Python code does it."""

    versions: SpecifierSet
    #: ``torch``: ``libbitsandbytes_cuda{major}{minor}.so`` from torch.version.cuda; ``libcudart``: from the
    #: version of the first libcudart.so found on LD_LIBRARY_PATH, the conda prefix or /usr/local/cuda
    cuda_from: BnbCudaFrom
    override: str | None = None  #: the variable that names another CUDA version (``BNB_CUDA_VERSION``)
    #: how the override's value makes the file name from the one torch's CUDA gives: ``slice`` (drop the last six
    #: characters, add value and ``.so``), ``strip`` (drop the digits before ``.so``, add value), ``substitute``
    #: (the first ``cuda<digits>`` becomes ``cuda<value>``), ``replace`` (``libbitsandbytes_cuda<value>.so``)
    override_form: BnbOverrideForm | None = None
    #: an override that is not digits (an empty one included) raises instead of being ignored
    override_digits_only: bool = False
    #: below this compute capability (the highest GPU's) the ``_nocublaslt`` variant is loaded
    nocublaslt_below: PlainCc | None = None
    #: ``cpu``: libbitsandbytes_cpu.so is loaded instead ("CUDA Setup failed despite GPU being available");
    #: ``error``: the library is not loaded and the first call raises
    when_missing: BnbWhenMissing
    #: with no override, a missing exact version falls back to the newest shipped one of the same CUDA major
    #: not newer than torch's, else the oldest newer one of that major
    nearest_same_major: bool = False
    members: tuple[str, ...]  #: the wheel members the selection was read from


# --- compat/images.toml (container-images) ----------------------------------------------------------


@row(kw_only=True)
class NvidiaCudaScheme(Row):
    """How nvidia/cuda image tags are made."""

    repositories: tuple[str, ...]
    scheme: str
    flavours: tuple[str, ...]
    variants: tuple[str, ...]
    os: tuple[str, ...]
    latest_tag: bool


@row(kw_only=True)
class BaseOs(Row):
    """An OS release nvidia/cuda images are built on, with what an image on it gets."""

    os: str  #: as the tags write it: ``ubuntu24.04``
    python: str  #: the release's python3 (``apt-get install python3``)
    standard_support_end: str  #: ``YYYY-MM``, the month the vendor's standard support ends


@row(kw_only=True)
class NvidiaCudaTag(Row):
    """One nvidia/cuda image tag."""

    tag: str
    cuda: Version
    os: str | None = None
    flavour: str | None = None
    variant: str | None = None
    #: the one repository its source shows it in (``nvcr.io/nvidia/cuda``); None: every [nvidia_cuda] repository
    registry: str | None = None


@row(kw_only=True)
class PytorchImageScheme(Row):
    """How pytorch/pytorch image tags are made."""

    scheme: str
    format_in_workflow: str | None = None
    image_types: tuple[str, ...] = ()
    platforms: Mapping[str, tuple[str, ...]] = _no_table()  #: per image type
    workflow_registry: str | None = None


@row(kw_only=True)
class PytorchImage(Row):
    """One pytorch/pytorch image tag."""

    tag: str
    torch: Version | None = None
    cuda: Version | None = None
    cudnn: str | None = None
    flavour: str | None = None
    registry: str | None = None


@row(kw_only=True)
class VllmImageScheme(Row):
    """How vllm/vllm-openai image tags are made."""

    repository: str
    tags: tuple[str, ...]


@row(kw_only=True)
class VllmImage(Row):
    """One vllm/vllm-openai image tag."""

    tag: str
    vllm: Version | None = None
    cuda: Version | None = None


@row(kw_only=True)
class NgcPytorchImage(Row):
    """One NGC PyTorch container release (nvcr.io/nvidia/pytorch:YY.MM-py3)."""

    release: str  #: ``25.12``
    tag: str | None = None
    # As NVIDIA's release notes write them ("10.1 Update 1", "418.xx"), not normalised.
    cuda: str | None = None
    torch: str | None = None
    min_driver_linux: str | None = None
    forward_compat_drivers: tuple[str, ...] = ()


@row(kw_only=True)
class NgcContainer(Row):
    """One release of another NGC container (``nvcr.io/nvidia/tritonserver``), as NVIDIA's page writes it."""

    image: str  #: the repository, ``nvcr.io/nvidia/tritonserver``
    release: str  #: ``24.10``
    tag: str | None = None  #: where the page names one (``25.11-vllm-python-py3``)
    cuda: str | None = None
    #: the release notes' Driver Requirements: the driver its CUDA needs, and the data center GPU drivers it also
    #: runs on through forward compatibility (``470.57`` for "470.57 (or later R470)")
    min_driver_linux: str | None = None
    forward_compat_drivers: tuple[str, ...] = ()
    cuda_driver: str | None = None  #: the "CUDA Driver version" of its CUDA toolkit (a matrix column), not a floor
    vllm: str | None = None  #: NVIDIA's vLLM build in it (``0.11.0+582e4e37.nv25.11.cu130``)


# --- which row type each table holds -------------------------------------------------------------------


class Layout(NamedTuple):
    """The tables of one kind of file: arrays of records (``[[release]]``) and single records."""

    arrays: Mapping[str, type]
    singles: Mapping[str, type] = _NO_TABLE


#: ``meta.kind`` -> the file's layout.
LAYOUTS: Mapping[str, Layout] = types.MappingProxyType(
    {
        "gpu-models": Layout({"gpu": GpuModel}, {"jetson_sbsa": JetsonSbsa}),
        "cuda-toolkit-drivers": Layout(
            {
                "release": CudaRelease,
                "minor_compat": MinorCompat,
                "forward_compat_package": ForwardCompatPackage,
                "driver_branch": DriverBranch,
            },
            {"forward_compat": ForwardCompat, "driver_lifecycle": DriverLifecycle},
        ),
        "gpu-architectures": Layout({"arch": GpuArch}),
        "gpu-devices": Layout({"device": GpuDevice}),
        "torch-releases": Layout(
            {
                "variant": TorchVariant,
                "release": TorchRelease,
                "arch_list": TorchArchList,
                "bundled_cudnn": TorchBundledCudnn,
                "install_form": TorchInstallForm,
            },
            {"uv_torch_backend": UvTorchBackend},
        ),
        "vllm-releases": Layout({"release": VllmRelease}),
        "tensorrt-releases": Layout({"release": TensorrtRelease}),
        "triton-releases": Layout({"release": TritonRelease}),
        "cuda-libraries": Layout(
            {
                "cudnn": CudnnRelease,
                "nccl": NcclRelease,
                "cudnn_loading": CudnnLoading,
                "cudnn_sublibrary": CudnnSublibrary,
            }
        ),
        "cuda-errors": Layout({"error": CudaError}),
        "xid-catalog": Layout({"xid": XidEntry}),
        "error-messages": Layout({"cause": ErrorCause, "message": ErrorMessage}),
        "ecosystem": Layout(
            {
                "jax": JaxRelease,
                "flash_attn": FlashAttnRelease,
                "xformers": XformersRelease,
                "onnxruntime_gpu": OnnxruntimeRelease,
                "cupy": CupyPackage,
                "tensorflow": TensorflowRelease,
                "ctranslate2": Ctranslate2Range,
                "paddlepaddle_gpu": PaddleRelease,
            }
        ),
        "companions": Layout(
            {
                "torchvision": CompanionRelease,
                "torchaudio": CompanionRelease,
                "cuda_check": CompanionCudaCheck,
                "torch_triton": TorchTriton,
                "flashinfer_aot": FlashinferAot,
                "flashinfer_package": FlashinferPackage,
            }
        ),
        "llama-cpp": Layout({"cmake_flag": LlamaCppCmakeFlag, "index": LlamaCppIndex}, {"pypi": LlamaCppPypi}),
        "runtime-libraries": Layout({"load": RuntimeLoad, "driver_open": DriverOpen, "preload": FrameworkPreload}),
        "bitsandbytes-releases": Layout(
            {"wheel": BitsandbytesWheel, "needed": BitsandbytesNeeded, "selection": BitsandbytesSelection}
        ),
        "container-images": Layout(
            {
                "base_os": BaseOs,
                "nvidia_cuda_tag": NvidiaCudaTag,
                "pytorch_image": PytorchImage,
                "vllm_image": VllmImage,
                "ngc_pytorch": NgcPytorchImage,
                "ngc_container": NgcContainer,
            },
            {
                "nvidia_cuda": NvidiaCudaScheme,
                "pytorch_image_scheme": PytorchImageScheme,
                "vllm_image_scheme": VllmImageScheme,
            },
        ),
    }
)
