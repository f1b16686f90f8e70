"""The questions the compat tables answer, as typed accessors of :class:`CompatMatrix`.

Checks, rules and suggest read the data only through here: rows (:mod:`cudadoctor.data.rows`),
never the parsed TOML. Each table is loaded the first time a question needs it, and the matrix
remembers which it loaded so a report can say how old the data it used is (:attr:`CompatMatrix.dates`).
"""

from __future__ import annotations

import datetime
import functools
import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudadoctor.cachedir import cache_file
from cudadoctor.data.load import Table, load_table
from cudadoctor.data.row import Row
from cudadoctor.data.row import row as _row
from cudadoctor.data.rows import (
    BaseOs,
    BitsandbytesNeeded,
    BitsandbytesSelection,
    BitsandbytesWheel,
    CompanionCudaCheck,
    CompanionRelease,
    Ctranslate2Range,
    CudaError,
    CudaRelease,
    CudnnLoading,
    CudnnRelease,
    CudnnSublibrary,
    CupyPackage,
    DriverBranch,
    DriverLifecycle,
    DriverOpen,
    ErrorCause,
    ErrorMessage,
    FlashAttnRelease,
    FlashinferAot,
    FlashinferPackage,
    ForwardCompat,
    ForwardCompatPackage,
    FrameworkPreload,
    GpuArch,
    GpuDevice,
    GpuModel,
    JaxRelease,
    JetsonSbsa,
    LlamaCppIndex,
    LlamaCppPypi,
    MinorCompat,
    NcclRelease,
    NgcContainer,
    NgcPytorchImage,
    NvidiaCudaScheme,
    NvidiaCudaTag,
    OnnxruntimeRelease,
    PaddleRelease,
    PytorchImage,
    PytorchImageScheme,
    RuntimeLoad,
    TensorflowRelease,
    TensorrtRelease,
    TorchArchList,
    TorchBundledCudnn,
    TorchInstallForm,
    TorchRelease,
    TorchTriton,
    TorchVariant,
    TritonRelease,
    UvTorchBackend,
    VllmImage,
    VllmImageScheme,
    VllmRelease,
    XformersRelease,
    XidEntry,
)
from cudadoctor.facts.model import DriverVersion

__all__ = ["CompatMatrix", "DataDates", "FlashAttnWheel"]


@_row()
class DataDates(Row):
    """How old the data behind a report is."""

    compat: datetime.date | None  #: the oldest ``meta.updated`` of the compat tables used (None: none was)
    index: datetime.date | None  #: when `cudadoctor update` last read the package index (None: never)


@_row()
class FlashAttnWheel(Row):
    """One prebuilt flash-attn wheel of a GitHub release (its local version names the build)."""

    version: Version
    cuda_tag: str  #: ``cu12``
    torch: str  #: ``2.8``
    cxx11abi: str  #: ``TRUE`` / ``FALSE``
    python: str  #: ``3.12``

    @property
    def filename(self) -> str:
        """The wheel's file name as the release publishes it (Linux x86_64)."""
        cp = "cp" + self.python.replace(".", "")
        local = f"{self.cuda_tag}torch{self.torch}cxx11abi{self.cxx11abi}"
        return f"flash_attn-{self.version}+{local}-{cp}-{cp}-linux_x86_64.whl"


class CompatMatrix:
    """The compatibility tables, each loaded (and validated) the first time a question needs it.

    Release lists (torch, vLLM) also take releases that `cudadoctor update` read from the package index
    into the user cache and that the curated tables do not have yet; curated records always win, and
    derived ones say so (``derived``: the date they were read). ``cache_dir=False`` ignores the cache.
    """

    def __init__(self, cache_dir: str | bool | None = None) -> None:
        self._cache_dir = cache_dir
        self._loaded: dict[str, Table] = {}

    def _table(self, name: str, *, validate: bool = False) -> Table:
        table = self._loaded.get(name) if not validate else None
        if table is None:  # once per table and matrix: finding compat/ costs system calls
            table = self._loaded[name] = load_table(name, validate=validate)
        return table

    def _rows(self, name: str, key: str) -> tuple[Any, ...]:
        return self._table(name).rows(key)

    @property
    def dates(self) -> DataDates:
        """The data dates of what this matrix has used so far."""
        compat = min((t.updated for t in self._loaded.values()), default=None)
        index = self.index_data
        return DataDates(compat, index.updated if index is not None else None)

    @functools.cached_property
    def curated_as_of(self) -> datetime.date:
        """``meta.updated`` of the driver table, which stands for the curated tables.

        They are refreshed together; the driver table is the smallest file that every report loads anyway.
        """
        return self._table("cuda").updated

    # --- the `cudadoctor update` cache --------------------------------------------------------------

    @functools.cached_property
    def index_data(self) -> Any:
        """The `cudadoctor update` cache (``IndexData``) or None; a broken cache is ignored, never fatal."""
        if self._cache_dir is False or not os.path.exists(
            cache_file(self._cache_dir if isinstance(self._cache_dir, str) else None)
        ):
            return None  # told to ignore it, or (the common case) no `cudadoctor update` yet: no update code imported
        from cudadoctor.data.indexed import read_index_data

        data, self.index_warning = read_index_data(self._cache_dir)
        return data

    #: why the `cudadoctor update` cache could not be used (a corrupt file), for CD902 to report
    index_warning: str | None = None

    # --- CUDA toolkit and driver (compat/cuda.toml) ---------------------------------------------------

    @property
    def cuda_releases(self) -> tuple[CudaRelease, ...]:
        return self._rows("cuda", "release")

    def minor_compat(self, cuda_major: int) -> MinorCompat | None:
        """The minor-version compatibility floor of a CUDA major."""
        return next((r for r in self._rows("cuda", "minor_compat") if r.cuda_major == cuda_major), None)

    @property
    def forward_compat(self) -> ForwardCompat | None:
        """What holds for every forward-compatibility package."""
        found: ForwardCompat | None = self._table("cuda").single("forward_compat")
        return found

    @property
    def driver_lifecycle(self) -> DriverLifecycle | None:
        """Which GPUs (by segment) the driver branch lifecycle covers."""
        found: DriverLifecycle | None = self._table("cuda").single("driver_lifecycle")
        return found

    @property
    def forward_compat_packages(self) -> tuple[ForwardCompatPackage, ...]:
        return self._rows("cuda", "forward_compat_package")

    @property
    def driver_branches(self) -> tuple[DriverBranch, ...]:
        """Driver branches with their type and end of life (NVIDIA's data center driver lifecycle), newest first."""
        return self._rows("cuda", "driver_branch")

    def driver_branch(self, branch: int) -> DriverBranch | None:
        return next((r for r in self.driver_branches if r.branch == branch), None)

    def minor_compat_limits(self, cuda_major: int) -> tuple[str, ...]:
        """What minor-version compatibility does not cover for a CUDA major (NVIDIA's list)."""
        row = self.minor_compat(cuda_major)
        return row.limits if row is not None else ()

    def forward_compat_setup(self, cuda: Version) -> dict[str, Any] | None:
        """How forward compatibility would be set up for ``cuda``, None where it does not exist.

        https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html
        """
        general = self.forward_compat
        if general is None or cuda < general.introduced_in_cuda:
            return None
        fill = {"<cuda_major_version>": str(cuda.major), "<cuda_minor_version>": str(cuda.minor)}
        fill |= {"<major>": str(cuda.major), "<minor>": str(cuda.minor)}
        package, directory = general.package, general.install_dir
        for key, value in fill.items():
            package, directory = package.replace(key, value), directory.replace(key, value)
        return {
            "package": package,
            "install_dir": directory,
            "gpus": general.gpus,
            "needs_newer_than_kernel_driver": general.requires_newer_than_kernel_driver,
            "unsupported": general.unsupported_features,
            "errors": general.error_codes,
        }

    def forward_compat_runs_on(self, cuda: Version, branch: int) -> bool | None:
        """Whether ``cuda-compat`` for ``cuda`` runs on driver branch ``branch`` (None: not in data).

        A package runs on the branches its table row lists and on its own paired branch, and only on
        branches the forward-compatibility section still supports
        (https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html).
        """
        name = f"cuda-compat-{cuda.major}-{cuda.minor}"
        row = next((p for p in self.forward_compat_packages if p.package == name), None)
        if row is None:
            return None
        general = self.forward_compat
        supported = general is None or branch in general.supported_driver_branches or branch == row.paired_driver_branch
        return supported and (branch in row.compatible_driver_branches or branch == row.paired_driver_branch)

    def cuda_for_driver(self, driver: Version, *, windows: bool = False) -> Version | None:
        """The newest CUDA (major.minor) whose toolkit driver requirement ``driver`` meets.

        This is the CUDA version a driver reports (``nvidia-smi``'s "CUDA Version"), derived from the
        release notes' table for an assumed driver that cannot be asked.
        """
        best: Version | None = None
        for release in self.cuda_releases:
            needed = release.min_driver_windows if windows else release.min_driver_linux
            if needed is not None and needed <= driver:
                short = Version(f"{release.version.major}.{release.version.minor}")
                if best is None or short > best:
                    best = short
        return best

    def min_driver_for_cuda(self, cuda: Version, *, windows: bool = False) -> DriverVersion | None:
        """The oldest driver whose own CUDA version is at least ``cuda`` (major.minor)."""
        candidates = [
            (r.min_driver_windows if windows else r.min_driver_linux)
            for r in self.cuda_releases
            if (r.version.major, r.version.minor) >= (cuda.major, cuda.minor)
        ]
        known = [c for c in candidates if c is not None]
        return min(known) if known else None

    def cuda_label(self, cuda: Version) -> str:
        """NVIDIA's name for a CUDA release ("12.4 Update 1"), or the version when the table lacks it."""
        row = next((r for r in self.cuda_releases if r.version == cuda), None)
        return row.label if row is not None and row.label else str(cuda)

    def driver_branch_cuda_major(self, branch: int) -> int | None:
        """The CUDA major whose minor-version compatibility window holds driver branch ``branch``."""
        for row in self._rows("cuda", "minor_compat"):
            low, high = row.min_driver_branch, row.upper_driver_branch_exclusive
            if low is not None and branch >= low and (high is None or branch < high):
                major: int = row.cuda_major
                return major
        return None

    # --- GPUs (compat/gpus.toml, compat/gpu_archs.toml) --------------------------------------------------

    @property
    def jetson_sbsa(self) -> JetsonSbsa | None:
        """Which Jetson modules run the Arm-server CUDA stack (``[jetson_sbsa]``), None when the data has none."""
        found: JetsonSbsa | None = self._table("gpus", validate=True).single("jetson_sbsa")
        return found

    @property
    def gpu_models(self) -> tuple[GpuModel, ...]:
        """The GPU models, fully validated: the table is read on the probe path, before any check."""
        return self._table("gpus", validate=True).rows("gpu")

    def gpu_models_naming(self, word: str) -> tuple[GpuModel, ...]:
        """The models of compat/gpus.toml whose name or an alias holds ``word`` (lower case), in the table's order,
        the others left unbuilt (a GPU's segment is asked on every run: gpu_models.gpu_segment)."""
        rows: tuple[GpuModel, ...] = self._table("gpus", validate=True).select("gpu", _naming(word))
        return rows

    @functools.cached_property
    def gpu_devices(self) -> tuple[GpuDevice, ...]:
        """The GPUs of compat/gpu_devices.toml by PCI ID (NVIDIA's open kernel modules README)."""
        rows: tuple[GpuDevice, ...] = self._rows("gpu_devices", "device")
        return rows

    def gpu_devices_naming(self, word: str, *more: str) -> tuple[GpuDevice, ...]:
        """The rows of compat/gpu_devices.toml whose name holds ``word`` and each of ``more`` (lower case), the
        others left unbuilt: CD114 asks this for every GPU on every run."""
        rows: tuple[GpuDevice, ...] = self._table("gpu_devices").select("device", _naming(word, *more))
        return rows

    def device_listed(self, device_id: str) -> bool:
        """Whether any row of the table lists this PCI device ID, for whichever subsystem."""
        pci = device_id.upper().removeprefix("0X")
        return bool(self._table("gpu_devices").select("device", lambda r: r.get("pci") == pci))

    def device_for(self, device_id: str, subsystem: str | None = None) -> GpuDevice | None:
        """The row naming a PCI device (``"2237"``, any case) with this subsystem (``"10DE 152F"``), else its row
        listed for the device ID alone; None when neither is in the table. Only that device's rows are built."""
        pci = device_id.upper().removeprefix("0X")
        rows: tuple[GpuDevice, ...] = self._table("gpu_devices").select("device", lambda r: r.get("pci") == pci)
        wanted = (subsystem or "").upper()
        return next((d for d in rows if wanted and wanted in d.subsystems), None) or next(
            (d for d in rows if not d.subsystems), None
        )

    @functools.cached_property
    def gpu_archs(self) -> dict[str, GpuArch]:
        return {a.compute_capability: a for a in self._rows("gpu_archs", "arch")}

    @functools.cached_property
    def arch_families(self) -> dict[str, tuple[str, ...]]:
        """Compute capability -> those its family-specific code (``sm_XYf``) runs on, where it has any."""
        return {a.compute_capability: a.family_runs_on for a in self.gpu_archs.values() if a.family_runs_on}

    def gpu_arch(self, compute_capability: str) -> GpuArch | None:
        """The architecture of a compute capability (a/f suffix ignored), following a renumbering."""
        arch = self.gpu_archs.get(compute_capability.rstrip("af"))
        if arch is not None and arch.renumbered_to is not None and arch.renumbered_to in self.gpu_archs:
            return self.gpu_archs[arch.renumbered_to]
        return arch

    def renumbered(self, compute_capability: str) -> tuple[str, Version | None] | None:
        """(the new compute capability, the CUDA that renumbered it) for a renumbered one, else None."""
        arch = self.gpu_archs.get(compute_capability.rstrip("af"))
        if arch is None or arch.renumbered_to is None:
            return None
        return arch.renumbered_to, arch.renumbered_in_cuda

    def renumbered_from(self, compute_capability: str) -> str | None:
        """The compute capability an architecture had before a CUDA release renumbered it."""
        arch = self.gpu_archs.get(compute_capability.rstrip("af"))
        return arch.renumbered_from if arch is not None else None

    def last_driver_branch(self, compute_capability: str) -> int | None:
        """The last driver branch that supports an architecture (legacy GPUs), None while supported."""
        arch = self.gpu_archs.get(compute_capability.rstrip("af"))
        return arch.last_driver_branch if arch is not None else None

    def arch_specific_targets(self, compute_capability: str) -> tuple[str, ...]:
        """The arch-specific targets (``9.0a``) of a compute capability."""
        arch = self.gpu_archs.get(compute_capability.rstrip("af"))
        return arch.arch_specific if arch is not None else ()

    def first_cuda(self, compute_capability: str) -> Version | None:
        """The first CUDA release that supports an architecture."""
        arch = self.gpu_archs.get(compute_capability.rstrip("af"))
        return arch.first_cuda if arch is not None else None

    # --- PyTorch (compat/torch.toml) -----------------------------------------------------------------

    @functools.cached_property
    def torch_variants(self) -> dict[str, TorchVariant]:
        return {v.tag: v for v in self._rows("torch", "variant")}

    @property
    def uv_torch_backend(self) -> UvTorchBackend | None:
        """What uv's automatic PyTorch backend knows of the indexes (``[uv_torch_backend]``), None when absent."""
        found: UvTorchBackend | None = self._table("torch").single("uv_torch_backend")
        return found

    @functools.cached_property
    def torch_releases(self) -> tuple[TorchRelease, ...]:
        from cudadoctor.data.indexed import derived_torch, inherit_torch_archs, new_records

        curated: tuple[TorchRelease, ...] = self._rows("torch", "release")
        records = new_records(self.index_data, "torch", (t.version for t in curated))
        derived = [inherit_torch_archs(d, curated, self.torch_arch_list) for r in records if (d := derived_torch(r))]
        return tuple(sorted((*curated, *derived), key=lambda t: t.version, reverse=True))

    def torch_release(self, version: Version) -> TorchRelease | None:
        public = Version(version.public)
        return next((r for r in self.torch_releases if r.version == public), None)

    def torch_arch_list(self, version: Version, variant: str, *, aarch64: bool = False) -> tuple[str, ...] | None:
        """The GPU targets of a release's variant wheels (Linux x86_64, or aarch64), when the data has them."""
        public = Version(version.public)
        entries: tuple[TorchArchList, ...] = self._rows("torch", "arch_list")
        for entry in entries:
            if entry.aarch64 != aarch64 or entry.variant != variant:
                continue
            if entry.releases.contains(public, prereleases=True):
                return entry.archs
        return None

    def torch_arch_list_or_inherited(
        self, version: Version, variant: str, *, aarch64: bool = False
    ) -> tuple[tuple[str, ...] | None, str]:
        """(the GPU targets of a release's variant, "" or why they are *inferred*).

        Curated lists first; a release known only from the package index has its default wheel's list
        inherited from an earlier curated release (``TorchRelease.inherited``), and that reason comes back
        (Linux x86_64 only: nothing is inherited for aarch64).
        """
        archs = self.torch_arch_list(version, variant, aarch64=aarch64)
        if archs is not None or aarch64:
            return archs, ""
        release = self.torch_release(version)
        if release is None or release.inherited is None or not release.inherited_archs:
            return None, ""
        cuda = release.pypi_default_cuda
        if cuda is None or variant != f"cu{cuda.major}{cuda.minor}":
            return None, ""
        return release.inherited_archs, release.inherited

    @property
    def torch_install_forms(self) -> tuple[TorchInstallForm, ...]:
        """Every ``[[install_form]]``: how the CUDA builds without an index URL of their own install."""
        forms: tuple[TorchInstallForm, ...] = self._rows("torch", "install_form")
        return forms

    def torch_install_form(self, version: Version) -> TorchInstallForm | None:
        """How the CUDA builds of a release without an index URL of their own install (``[[install_form]]``)."""
        public = Version(version.public)
        return next((f for f in self.torch_install_forms if f.releases.contains(public, prereleases=True)), None)

    def torch_publishes_for_python(self, release: TorchRelease, python: Version, *, aarch64: bool = False) -> bool:
        """Whether a torch release has wheels for a Python (its wheel list, else its Requires-Python)."""
        listed = release.python_aarch64 if aarch64 else release.python
        if listed:
            return f"{python.major}.{python.minor}" in listed
        return release.requires_python is None or release.requires_python.contains(python, prereleases=True)

    def torch_default_cuda(self, release: TorchRelease, *, aarch64: bool = False) -> tuple[Version | None, str | None]:
        """(the CUDA of the release's default PyPI wheel, the evidence for it) on a platform."""
        if aarch64:
            return release.pypi_aarch64_cuda, release.pypi_aarch64_evidence
        return release.pypi_default_cuda, release.pypi_default_evidence

    def torch_variants_complete(self, release: TorchRelease) -> bool:
        """Whether the release's variant list is complete (a partial one cannot rule a variant out)."""
        return not release.variants_partial

    # --- vLLM (compat/vllm.toml) -------------------------------------------------------------------------

    @functools.cached_property
    def vllm_releases(self) -> tuple[VllmRelease, ...]:
        from cudadoctor.data.indexed import derived_vllm, inherit_vllm_floor, new_records

        curated: tuple[VllmRelease, ...] = self._rows("vllm", "release")
        records = new_records(self.index_data, "vllm", (v.version for v in curated))
        derived = [inherit_vllm_floor(d, curated) for r in records if (d := derived_vllm(r))]
        return tuple(sorted((*curated, *derived), key=lambda v: v.version, reverse=True))

    def vllm_release(self, version: Version) -> VllmRelease | None:
        public = Version(version.public)
        return next((r for r in self.vllm_releases if r.version == public), None)

    def vllm_other_cuda_wheels(self, release: VllmRelease) -> Iterator[tuple[Version, str, str | None]]:
        """(CUDA, wheel URL, torch index URL) of a release's wheels published outside PyPI."""
        if release.other_cuda_index is None:
            return
        for cuda in release.other_cuda:
            tag = f"{cuda.major}{cuda.minor}"

            def fill(template: str, tag: str = tag) -> str:
                return template.replace("${VLLM_VERSION}", str(release.version)).replace("${CUDA_VERSION}", tag)

            torch_index = fill(release.other_cuda_torch_index) if release.other_cuda_torch_index else None
            yield cuda, fill(release.other_cuda_index), torch_index

    def vllm_linked_cuda(self, release: VllmRelease) -> tuple[int | None, str | None]:
        """(the CUDA major its PyPI wheel links, the CUDA runtime pin of the torch it requires)."""
        return release.cuda_major_linked, release.torch_pypi_cuda_pin

    # --- Triton (compat/triton.toml) ---------------------------------------------------------------------

    @functools.cached_property
    def triton_releases(self) -> tuple[TritonRelease, ...]:
        return self._rows("triton", "release")

    def triton_release(self, version: Version) -> TritonRelease | None:
        """The row of a triton release (its public version: a local build ``3.2.0+git…`` is the release's)."""
        public = Version(version.public)
        return next((r for r in self.triton_releases if r.version == public), None)

    def triton_pinned_by(self, torch: Version) -> TritonRelease | None:
        """The triton release torch's Linux x86_64 wheel pins (the torch release's public version)."""
        public = Version(torch.public)
        return next((r for r in self.triton_releases if public in r.torch), None)

    # --- TensorRT, cuDNN, NCCL (compat/tensorrt.toml, compat/libraries.toml) -----------------------------------

    @property
    def tensorrt_releases(self) -> tuple[TensorrtRelease, ...]:
        return self._rows("tensorrt", "release")

    def tensorrt_release(self, version: Version) -> TensorrtRelease | None:
        """A TensorRT release by its PyPI version or its TensorRT build number."""
        for row in self.tensorrt_releases:
            if row.version == version or (row.trt_build is not None and Version(row.trt_build) == version):
                return row
        return None

    @staticmethod
    def tensorrt_plain_install(
        row: TensorrtRelease, *, windows: bool = False
    ) -> tuple[str | None, str | None, str | None]:
        """(what plain ``pip install tensorrt`` is — sdist, wheel —, what it pulls in, from which index)."""
        pulls = (
            row.plain_tensorrt_pulls_win32 if windows and row.plain_tensorrt_pulls_win32 else row.plain_tensorrt_pulls
        )
        return row.plain_tensorrt_kind, pulls, row.plain_tensorrt_index

    def installs_no_objects(self, name: str, version: Version) -> bool:
        """The distribution release is a package that only pulls in others (plain ``tensorrt`` from 8.6.1 on is an
        sdist whose setup.py installs tensorrt-cuNN / tensorrt-libs, compat/tensorrt.toml): it ships no shared object,
        so it opens nothing by name itself."""
        row = self.tensorrt_release(version) if name == "tensorrt" else None
        return row is not None and row.plain_tensorrt_kind == "sdist"

    @staticmethod
    def tensorrt_support(row: TensorrtRelease) -> tuple[tuple[str, ...], tuple[Version, ...], Version | None]:
        """(the CUDA versions of its support matrix, the CUDA its wheels were built with, its cuDNN)."""
        return row.cuda, row.cuda_builds, row.cudnn

    @staticmethod
    def tensorrt_docs_tag(row: TensorrtRelease) -> tuple[str | None, bool | None]:
        """(the TensorRT OSS tag that documents it, whether Linux x86_64 bindings were published)."""
        return row.readme_tag, row.linux_x86_64_bindings

    @property
    def cudnn_releases(self) -> tuple[CudnnRelease, ...]:
        return self._rows("libraries", "cudnn")

    @property
    def nccl_releases(self) -> tuple[NcclRelease, ...]:
        return self._rows("libraries", "nccl")

    def cudnn_release(self, version: Version) -> CudnnRelease | None:
        return next((r for r in self.cudnn_releases if r.version == version or r.release == version), None)

    def cudnn_own_directory_first(self, major: int) -> bool | None:
        """Whether cuDNN ``major``'s shim loads its sub-libraries from its own directory first; None: not in data."""
        rows: tuple[CudnnLoading, ...] = self._rows("libraries", "cudnn_loading")
        return next((r.own_directory_first for r in rows if r.major == major), None)

    def cudnn_sublibraries_loaded(self, version: Version) -> tuple[str, ...] | None:
        """The sub-library sonames the core of cuDNN ``version`` loads by name; None when no row covers it."""
        return _cudnn_sonames(self._rows("libraries", "cudnn_sublibrary"), version, shipped=False)

    def cudnn_sublibraries_shipped(self, version: Version) -> tuple[str, ...] | None:
        """The sub-library sonames the packages of cuDNN ``version`` hold; None when no row covers it."""
        return _cudnn_sonames(self._rows("libraries", "cudnn_sublibrary"), version, shipped=True)

    @property
    def torch_bundled_cudnn_rows(self) -> tuple[TorchBundledCudnn, ...]:
        return self._rows("torch", "bundled_cudnn")

    def torch_bundled_cudnn(self, version: Version, variant: str) -> TorchBundledCudnn | None:
        """The cuDNN a torch 1.x wheel of this release and variant copies into torch/lib, when the data has it."""
        public = Version(version.public)
        rows = self.torch_bundled_cudnn_rows
        return next((r for r in rows if r.variant == variant and r.releases.contains(public, prereleases=True)), None)

    def nccl_release(self, version: Version) -> NcclRelease | None:
        return next((r for r in self.nccl_releases if r.version == version), None)

    def library_wheel(self, row: CudnnRelease | NcclRelease, cuda_major: int, platform: str) -> str | None:
        """The pip requirement of a cuDNN/NCCL release for a CUDA major on a platform tag, None if unpublished.

        ``platform`` is a wheel platform suffix (``x86_64``, ``aarch64``, ``win_amd64``); yanked releases
        are never offered (https://peps.python.org/pep-0592/).
        """
        tag = f"cu{cuda_major}"
        if (
            cuda_major not in row.cuda_majors
            or row.yanked
            or (row.linux_x86_64.get(tag) is False and platform == "x86_64")
        ):
            return None
        if not any(p.endswith(platform) for p in row.wheel_platforms.get(tag, ())):
            return None
        return next((w for w in row.wheels if f"-{tag}==" in w), None)

    def cudnn_needs(self, row: CudnnRelease, cuda_major: int) -> tuple[tuple[str, ...], DriverVersion | None]:
        """(the wheels a cuDNN release's cuXX wheel requires, the oldest Linux driver it supports there)."""
        return row.requires.get(f"cu{cuda_major}", ()), row.min_driver_linux_by_cuda.get(f"cuda{cuda_major}")

    def pinned_by_torch(self, torch: Version) -> tuple[CudnnRelease | None, NcclRelease | None]:
        """The cuDNN and NCCL releases a torch release pins (from the libraries' ``pinned_by_torch``)."""
        public = Version(torch.public)
        cudnn = next((r for r in self.cudnn_releases if public in r.pinned_by_torch), None)
        nccl = next((r for r in self.nccl_releases if public in r.pinned_by_torch), None)
        return cudnn, nccl

    # --- Xid codes (compat/xid.toml) -------------------------------------------------------------------

    @property
    def xid_entries(self) -> dict[int, XidEntry]:
        return {x.code: x for x in self._rows("xid", "xid")}

    # --- CUDA errors (compat/cuda_errors.toml) --------------------------------------------------------

    @property
    def cuda_errors(self) -> tuple[CudaError, ...]:
        return self._rows("cuda_errors", "error")

    def cuda_errors_for_check(self, code: str) -> tuple[CudaError, ...]:
        """The error records whose cause a fast-path check (``CD111``) also looks at."""
        return tuple(e for e in self.cuda_errors if code in e.checks)

    # --- error messages (compat/error_messages.toml) ---------------------------------------------------

    @property
    def error_messages(self) -> tuple[ErrorMessage, ...]:
        """The catalogue of error messages, in the order they are tried (the more specific first)."""
        return self._rows("error_messages", "message")

    @property
    def error_causes(self) -> dict[str, ErrorCause]:
        return {c.id: c for c in self._rows("error_messages", "cause")}

    @property
    def error_sources(self) -> dict[str, str]:
        """The catalogue's source ids and their public URLs."""
        return {str(s["id"]): str(s["url"]) for s in self._table("error_messages").data["meta"]["sources"]}

    # --- torch's companions (compat/companions.toml) -----------------------------------------------------

    def companion_releases(self, package: str) -> tuple[CompanionRelease, ...]:
        """The releases of ``torchvision`` or ``torchaudio``, newest first (empty for any other name)."""
        return self._rows("companions", package) if package in ("torchvision", "torchaudio") else ()

    def companion_release(self, package: str, version: Version) -> CompanionRelease | None:
        """The release of a companion ``version`` is (its public part: ``0.20.1+cu124`` is 0.20.1)."""
        public = Version(version.public)
        return next((r for r in self.companion_releases(package) if r.version == public), None)

    def companion_cuda_check(self, package: str, version: Version) -> CompanionCudaCheck | None:
        """How this companion release compares its CUDA build with torch's at import (None: not in the data)."""
        public = Version(version.public)
        rows: tuple[CompanionCudaCheck, ...] = self._rows("companions", "cuda_check")
        return next((r for r in rows if r.package == package and r.releases.contains(public, prereleases=True)), None)

    @property
    def torch_tritons(self) -> tuple[TorchTriton, ...]:
        """The triton requirement of each torch release from 2.0.0 on, newest first."""
        return self._rows("companions", "torch_triton")

    def flashinfer_aot_loads_into(self, built: str) -> tuple[str, ...]:
        """The torch minors an AOT ``flashinfer`` wheel built for torch ``built`` (``2.4``) loads into: itself,
        and those FlashInfer's maintainers name ABI compatible."""
        rows: tuple[FlashinferAot, ...] = self._rows("companions", "flashinfer_aot")
        return (built, *(m for r in rows if r.built == built for m in r.loads_into))

    def flashinfer_package(self, name: str) -> FlashinferPackage | None:
        """A FlashInfer package (``flashinfer-python``, ``flashinfer-cubin``, ``flashinfer-jit-cache``)."""
        rows: tuple[FlashinferPackage, ...] = self._rows("companions", "flashinfer_package")
        return next((r for r in rows if r.package == name), None)

    # --- the ecosystem (compat/ecosystem.toml) ------------------------------------------------------------

    @property
    def jax_releases(self) -> tuple[JaxRelease, ...]:
        return self._rows("ecosystem", "jax")

    def jax_release(self, version: Version) -> JaxRelease | None:
        found: JaxRelease | None = self._table("ecosystem").find("jax", "version", version)
        return found

    @staticmethod
    def jax_pins(row: JaxRelease, cuda_major: int) -> dict[str, Any]:
        """What ``jax[cudaNN]`` of a release pins: jaxlib, the plugin, cuDNN, and where the cuDNN pin lives."""
        plugin = {12: row.plugin_in_cuda12_extra, 13: row.plugin_in_cuda13_extra}.get(cuda_major)
        jaxlib = row.jaxlib_in_cuda12_extra if cuda_major == 12 and row.jaxlib_in_cuda12_extra else row.jaxlib
        return {
            "jaxlib": jaxlib,
            "plugin": plugin,
            "cudnn": row.cudnn_requirement.get(f"cuda{cuda_major}"),
            "cudnn_pin_in": row.cudnn_pin_in,
            "jaxlib_on_pypi": row.jaxlib_same_version_on_pypi,
        }

    @property
    def flash_attn_releases(self) -> tuple[FlashAttnRelease, ...]:
        return self._rows("ecosystem", "flash_attn")

    @staticmethod
    def flash_attn_wheels(row: FlashAttnRelease) -> tuple[FlashAttnWheel, ...]:
        """The prebuilt wheels of a flash-attn GitHub release: the product of its lists, less the exclusions."""
        wheels: list[FlashAttnWheel] = []
        for cuda_tag in row.wheels_cuda_tag:
            for torch in row.wheels_torch:
                for python in row.wheels_python:
                    if any(
                        torch == e.torch_version and e.python_version in (None, python) and e.cuda_version is None
                        for e in row.wheels_excluded
                    ):
                        continue
                    short = ".".join(torch.split(".")[:2])
                    wheels.extend(
                        FlashAttnWheel(row.version, cuda_tag, short, abi, python) for abi in row.wheels_cxx11abi
                    )
        return tuple(wheels)

    @staticmethod
    def flash_attn_build(
        row: FlashAttnRelease,
    ) -> tuple[str | None, tuple[Version, ...], tuple[int, ...], tuple[str, ...], str | None]:
        """(the release tag, the CUDA builds, their majors, the build runners' OS, the torch requirement)."""
        return row.release_tag, row.wheels_cuda_build, row.wheels_cuda_majors, row.wheels_os, row.torch_requirement

    @property
    def xformers_releases(self) -> tuple[XformersRelease, ...]:
        return self._rows("ecosystem", "xformers")

    def xformers_release(self, version: Version) -> XformersRelease | None:
        """The xformers release ``version`` (its public part: ``0.0.28.post1+cu118`` is 0.0.28.post1)."""
        public = Version(version.public)
        return next((r for r in self.xformers_releases if r.version == public), None)

    @staticmethod
    def xformers_wheel_build(row: XformersRelease) -> tuple[str | None, Version | None, str | None]:
        """(the torch build its PyPI wheel was built against, the CUDA it was built with, the wheel read)."""
        return row.wheel_torch, row.wheel_cuda, row.wheel_read

    @staticmethod
    def xformers_indexes(row: XformersRelease) -> tuple[str, ...]:
        """The download.pytorch.org variant indexes that serve the release (its README at the release tag)."""
        return row.pytorch_indexes

    def xformers_for_torch(self, torch: Version, python: Version | None = None) -> tuple[XformersRelease, ...]:
        """The xformers releases whose torch pin ``torch`` meets (and Requires-Python, given ``python``)."""
        public = Version(torch.public)
        return tuple(
            r
            for r in self.xformers_releases
            if (r.torch is None or r.torch.contains(public, prereleases=True))
            and (python is None or r.requires_python is None or r.requires_python.contains(python, prereleases=True))
        )

    @property
    def onnxruntime_releases(self) -> tuple[OnnxruntimeRelease, ...]:
        return self._rows("ecosystem", "onnxruntime_gpu")

    @staticmethod
    def onnxruntime_wheel(row: OnnxruntimeRelease) -> dict[str, Any]:
        """What an onnxruntime-gpu release's PyPI wheel was built with and needs, with its evidence."""
        return {
            "cuda_major": row.cuda_major,
            "cudnn_major": row.cudnn_major,
            "cuda_build": row.cuda_build,
            "cuda_extra_runtime": row.cuda_extra_runtime,
            "cudnn_extra": row.cudnn_extra,
            "sonames": row.wheel_sonames,
            "read_from": row.wheel_read,
            "evidence": row.evidence,
            "docs_builds": tuple((b.cuda, b.cudnn, b.pypi) for b in row.docs_builds),
        }

    def onnxruntime_release(self, version: Version) -> OnnxruntimeRelease | None:
        """The onnxruntime-gpu release ``version`` (its public part) on PyPI, None when the data lacks it."""
        public = Version(version.public)
        return next((r for r in self.onnxruntime_releases if r.version == public), None)

    @staticmethod
    def onnxruntime_pythons(row: OnnxruntimeRelease) -> tuple[tuple[str, ...], SpecifierSet | None]:
        """(the CPython versions of its manylinux x86_64 wheels, its Requires-Python)."""
        return row.python, row.requires_python

    @staticmethod
    def onnxruntime_has_preload(row: OnnxruntimeRelease) -> bool | None:
        """Whether ``onnxruntime.preload_dlls()`` exists in that release (None: not read)."""
        return row.preload_dlls

    @property
    def paddle_releases(self) -> tuple[PaddleRelease, ...]:
        return self._rows("ecosystem", "paddlepaddle_gpu")

    def paddle_release(self, version: Version) -> PaddleRelease | None:
        """The paddlepaddle-gpu PyPI release ``version`` (exactly: ``2.5.2.post117`` is another build)."""
        return next((r for r in self.paddle_releases if r.version == version), None)

    # --- bitsandbytes (compat/bitsandbytes.toml) ----------------------------------------------------------

    @property
    def bitsandbytes_wheels(self) -> tuple[BitsandbytesWheel, ...]:
        """Every Linux wheel of every bitsandbytes release on PyPI, newest first."""
        return self._rows("bitsandbytes", "wheel")

    def bitsandbytes_wheel(self, version: Version, arch: str) -> BitsandbytesWheel | None:
        """The wheel of ``version`` whose libraries are built for ``arch``; None when PyPI has none."""
        public = Version(version.public)
        return next((w for w in self.bitsandbytes_wheels if w.version == public and w.arch == arch), None)

    def bitsandbytes_selection(self, version: Version) -> BitsandbytesSelection | None:
        """How ``version`` picks the native library it loads."""
        rows: tuple[BitsandbytesSelection, ...] = self._rows("bitsandbytes", "selection")
        return next((r for r in rows if r.versions.contains(Version(version.public), prereleases=True)), None)

    def bitsandbytes_needed(self, library: str, version: Version, arch: str) -> tuple[str, ...] | None:
        """The CUDA sonames ``library`` of ``version``'s ``arch`` wheel needs (DT_NEEDED); None when not read."""
        rows: tuple[BitsandbytesNeeded, ...] = self._rows("bitsandbytes", "needed")
        public = Version(version.public)
        found = next(
            (
                r
                for r in rows
                if r.library == library and r.arch == arch and r.versions.contains(public, prereleases=True)
            ),
            None,
        )
        return found.sonames if found is not None else None

    # --- libraries loaded by name at run time (compat/runtime_libraries.toml) ---------------------------

    @property
    def runtime_loads(self) -> tuple[RuntimeLoad, ...]:
        return self._rows("runtime_libraries", "load")

    @staticmethod
    def runtime_load_file(row: RuntimeLoad) -> tuple[str, str | None]:
        """(the loading object's path under site-packages, the wheel file) as the row was read: what a
        replay of that wheel lays out (tests/corpus/builder.py)."""
        return row.object_read, row.wheel_read

    @staticmethod
    def runtime_load_runpath(row: RuntimeLoad) -> tuple[str, ...]:
        """The loading object's RUNPATH as read from the wheel (empty when it has none or it was not recorded)."""
        return row.object_runpath

    def runtime_loads_for(self, package: str, version: Version, arch: str) -> tuple[RuntimeLoad, ...]:
        """The rows saying what ``package`` ``version``'s wheel for ``arch`` opens by name at run time."""
        return tuple(
            r for r in self.runtime_loads
            if r.package == package and r.arch == arch and r.versions.contains(version, prereleases=True)
        )  # fmt: skip

    @property
    def framework_preloads(self) -> tuple[FrameworkPreload, ...]:
        """NVIDIA wheel libraries frameworks load by full path when imported (compat/runtime_libraries.toml)."""
        return self._rows("runtime_libraries", "preload")

    def preload_calls_for(self, package: str, version: Version) -> tuple[FrameworkPreload, ...]:
        """The preloads ``package`` ``version`` offers a program to call (``onnxruntime.preload_dlls()``), which load
        NVIDIA wheel libraries by full path only when called (compat/runtime_libraries.toml ``when = "on_call"``)."""
        return tuple(
            r for r in self.framework_preloads
            if r.package == package and r.when == "on_call" and r.call
            and r.versions.contains(version, prereleases=True)
        )  # fmt: skip

    @property
    def driver_opens(self) -> tuple[DriverOpen, ...]:
        """Objects that open the CUDA driver by its unversioned name (compat/runtime_libraries.toml)."""
        return self._rows("runtime_libraries", "driver_open")

    def driver_opens_for(self, package: str, version: Version) -> tuple[DriverOpen, ...]:
        """The rows saying that ``package`` ``version`` (or a cuDNN copy, ``package="cudnn"``) opens the
        driver by a name its loader cache may lack."""
        return tuple(
            r for r in self.driver_opens if r.package == package and r.versions.contains(version, prereleases=True)
        )

    @property
    def cupy_packages(self) -> tuple[CupyPackage, ...]:
        return self._rows("ecosystem", "cupy")

    def cupy_package(self, name: str) -> CupyPackage | None:
        """The CuPy binary package called ``name`` (``cupy-cuda12x``, ``cupy-cuda102``)."""
        return next((r for r in self.cupy_packages if r.package == name), None)

    @staticmethod
    def cupy_cuda_range(row: CupyPackage) -> tuple[Version, Version] | None:
        """(lowest, highest) CUDA major.minor the package is for, both inclusive; None for a whole major."""
        if row.cuda_min is None:
            return None
        return row.cuda_min, row.cuda_max if row.cuda_max is not None else row.cuda_min

    @staticmethod
    def cupy_per_minor(row: CupyPackage) -> bool:
        """Whether the package is one of the older per-minor ones (``cupy-cuda111``: CUDA 11.1 only)."""
        return row.cuda_min is not None and row.cuda_min == row.cuda_max

    def cupy_for_cuda(self, cuda: Version) -> CupyPackage | None:
        """The per-major package (``cupy-cudaNNx``) whose CUDA range holds ``cuda`` (major.minor)."""
        for row in self.cupy_packages:
            span = self.cupy_cuda_range(row)
            if self.cupy_per_minor(row) or row.cuda_major != cuda.major:
                continue
            if span is None or span[0].release[:2] <= cuda.release[:2] <= span[1].release[:2]:
                return row
        return None

    @staticmethod
    def cupy_history(row: CupyPackage) -> tuple[Version | None, str | None, str | None, int | None, tuple[str, ...]]:
        """(first version, its upload date, the newest's upload date, how many releases, yanked ones)."""
        return row.first_version, row.first_uploaded, row.last_uploaded, row.releases, row.yanked

    @property
    def ctranslate2_ranges(self) -> tuple[Ctranslate2Range, ...]:
        """ctranslate2's releases grouped by the CUDA and cuDNN their wheels need (compat/ecosystem.toml)."""
        return self._rows("ecosystem", "ctranslate2")

    def ctranslate2_range(self, version: Version) -> Ctranslate2Range | None:
        """The range holding a ctranslate2 release (its public version), None when none of the data's does."""
        public = Version(version.public)  # a release between two listed ones of a range is in it (4.3.0, no files)
        return next(
            (r for r in self.ctranslate2_ranges if Version(r.releases[0]) <= public <= Version(r.releases[-1])), None
        )

    # --- llama-cpp-python (compat/llama_cpp.toml) -----------------------------------------------------------

    @property
    def llama_cpp_indexes(self) -> tuple[LlamaCppIndex, ...]:
        return self._rows("llama_cpp", "index")

    @property
    def llama_cpp_pypi(self) -> LlamaCppPypi | None:
        found: LlamaCppPypi | None = self._table("llama_cpp").single("pypi")
        return found

    def llama_cpp_cmake_args(self, version: Version) -> str | None:
        """The CMAKE_ARGS that turn CUDA on when a release is built from source; None before 0.1.49."""
        public = Version(version.public)
        for flag in self._rows("llama_cpp", "cmake_flag"):
            if flag.first <= public and (flag.last is None or public <= flag.last):
                return str(flag.cmake_args)
        return None

    @property
    def tensorflow_releases(self) -> tuple[TensorflowRelease, ...]:
        return self._rows("ecosystem", "tensorflow")

    @staticmethod
    def tensorflow_tested(row: TensorflowRelease) -> tuple[Version | None, Version | None, str | None]:
        """(the CUDA and cuDNN a TensorFlow release was tested with, its tested Python range)."""
        return row.cuda, row.cudnn, row.tested_python

    @staticmethod
    def tensorflow_and_cuda_pin(row: TensorflowRelease, package: str) -> Any:
        """The ``tensorflow[and-cuda]`` pin of one NVIDIA wheel (a SpecifierSet), None when it has none."""
        return row.and_cuda.get(package)

    # --- container images (compat/images.toml) ---------------------------------------------------------

    @property
    def nvidia_cuda_tags(self) -> tuple[NvidiaCudaTag, ...]:
        return self._rows("images", "nvidia_cuda_tag")

    @property
    def base_oses(self) -> tuple[BaseOs, ...]:
        """The OS releases of nvidia/cuda images, newest first (compat/images.toml ``base_os``)."""
        return self._rows("images", "base_os")

    @property
    def nvidia_cuda_scheme(self) -> NvidiaCudaScheme | None:
        found: NvidiaCudaScheme | None = self._table("images").single("nvidia_cuda")
        return found

    @property
    def pytorch_images(self) -> tuple[PytorchImage, ...]:
        return self._rows("images", "pytorch_image")

    @property
    def pytorch_image_scheme(self) -> PytorchImageScheme | None:
        found: PytorchImageScheme | None = self._table("images").single("pytorch_image_scheme")
        return found

    @property
    def vllm_images(self) -> tuple[VllmImage, ...]:
        return self._rows("images", "vllm_image")

    @property
    def vllm_image_scheme(self) -> VllmImageScheme | None:
        found: VllmImageScheme | None = self._table("images").single("vllm_image_scheme")
        return found

    @property
    def ngc_pytorch_images(self) -> tuple[NgcPytorchImage, ...]:
        return self._rows("images", "ngc_pytorch")

    def ngc_pytorch_image(self, release: str) -> NgcPytorchImage | None:
        """An NGC PyTorch container release (``25.12``)."""
        return next((r for r in self.ngc_pytorch_images if r.release == release), None)

    @property
    def ngc_containers(self) -> tuple[NgcContainer, ...]:
        """Other NGC containers (Triton Inference Server) with their CUDA and driver floors."""
        return self._rows("images", "ngc_container")

    @staticmethod
    def ngc_pytorch_drivers(image: NgcPytorchImage) -> tuple[str | None, tuple[str, ...]]:
        """(the driver an NGC release needs, the older drivers it runs on through forward compatibility)."""
        return image.min_driver_linux, image.forward_compat_drivers

    def nvidia_cuda_references(self, tag: NvidiaCudaTag) -> tuple[str, ...]:
        """Every registry reference of an nvidia/cuda tag (Docker Hub and NGC publish the same tags)."""
        if tag.registry is not None:  # its source shows it in that repository only
            return (f"{tag.registry}:{tag.tag}",)
        scheme = self.nvidia_cuda_scheme
        repositories = scheme.repositories if scheme is not None else ("docker.io/nvidia/cuda",)
        return tuple(f"{repository}:{tag.tag}" for repository in repositories)

    def nvidia_cuda_has(self, *, flavour: str | None = None, latest: bool = False) -> bool:
        """Whether nvidia/cuda publishes a flavour (``runtime``), or a ``latest`` tag."""
        scheme = self.nvidia_cuda_scheme
        if scheme is None:
            return False
        return scheme.latest_tag if latest else flavour in scheme.flavours

    @staticmethod
    def pytorch_image_reference(image: PytorchImage) -> str:
        """The full reference of a pytorch/pytorch image."""
        return f"{image.registry or 'docker.io/pytorch/pytorch'}:{image.tag}"

    def pytorch_image_tag(self, torch: Version, cuda: Version, cudnn_major: int, image_type: str) -> str | None:
        """The tag PyTorch's release workflow would give an image, from its tag format; None if it has no such type."""
        scheme = self.pytorch_image_scheme
        if scheme is None or scheme.format_in_workflow is None or image_type not in scheme.image_types:
            return None
        tag = scheme.format_in_workflow.replace("${PYTORCH_VERSION}", str(torch))
        tag = tag.replace("${CUDA_VERSION_SHORT}", f"{cuda.major}.{cuda.minor}").replace(
            "${CUDNN_VERSION}", str(cudnn_major)
        )
        return tag.replace("-runtime", f"-{image_type}")

    def pytorch_image_platforms(self, image_type: str) -> tuple[tuple[str, ...], str | None]:
        """(the platforms PyTorch builds an image type for, the registry its workflow pushes to)."""
        scheme = self.pytorch_image_scheme
        if scheme is None:
            return (), None
        return scheme.platforms.get(image_type, ()), scheme.workflow_registry

    def vllm_image_reference(self, version: Version) -> str | None:
        """The vllm/vllm-openai reference of a release by vLLM's documented scheme (``v<version>``)."""
        scheme = self.vllm_image_scheme
        if scheme is None or "v<vllm version>" not in scheme.tags:
            return None
        return f"{scheme.repository}:v{version}"


def _cudnn_sonames(rows: tuple[CudnnSublibrary, ...], version: Version, *, shipped: bool) -> tuple[str, ...] | None:
    release = Version(".".join(str(p) for p in version.release[:3]))
    hits = [r for r in rows if (r.shipped if shipped else r.loaded_by).contains(release, prereleases=True)]
    if not hits:
        return None
    return tuple(f"{stem}.so.{r.major}" for r in hits for stem in r.stems)


def _naming(word: str, *more: str) -> Callable[[Mapping[str, Any]], bool]:
    """A test of a record of compat/gpus.toml or compat/gpu_devices.toml (as read): does its name or an alias hold
    ``word`` and each of ``more`` (lower case)? For :meth:`Table.select`, which then builds only the records that
    pass."""

    def naming(record: Mapping[str, Any]) -> bool:
        for name in (record.get("name", ""), *record.get("aliases", ())):
            low = str(name).lower()
            if word in low and all(w in low for w in more):  # one test for most records
                return True
        return False

    return naming
