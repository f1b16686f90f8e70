"""What uv's automatic PyTorch backend (``uv pip install torch --torch-backend=auto``) picks, by uv's rules.

uv's documentation (https://docs.astral.sh/uv/guides/integration/pytorch/#automatic-backend-selection): uv
queries the installed CUDA driver, AMD GPU and Intel GPU, then uses "the most-compatible PyTorch index";
without such a GPU it falls back to the CPU-only index. The details are in uv's source (astral-sh/uv at
26a9dd4, 2026-08-21):

- ``crates/uv-torch/src/backend.rs`` (``LINUX_CUDA_DRIVERS``): on Linux, every PyTorch CUDA index whose CUDA
  major the driver runs by minor-version compatibility (NVIDIA's floors: CUDA 13.x R580, 12.x 525.60.13, 11.x
  450.80.02; cudadoctor reads them from compat/cuda.toml), newest CUDA first, then the CPU index. The GPU's
  compute capability is not looked at. An AMD GPU gets the ROCm indexes whose builds list its architecture,
  an Intel GPU the xpu index; any other machine (macOS included) the CPU index.
- ``crates/uv-torch/src/accelerator.rs``: an Intel GPU is any PCI device of vendor 0x8086 and base class 0x03
  under /sys/bus/pci/devices, so an integrated one counts too (cudadoctor plans XPU builds for discrete ones).
- ``crates/uv-client/src/registry_client.rs`` (``index_strategy_for``): torch packages are searched with
  ``unsafe-first-match``, which "prefer[s] the first index with a compatible version, even if newer versions are
  available on other indexes" (docs/concepts/indexes.md).

So uv installs the newest torch of the first index in that order that has one for the machine's Python and
platform. This module works that out from compat/torch.toml, and judges the pick by cudadoctor's own rules;
cudadoctor's plan is :func:`cudadoctor.suggest.suggest_torch`'s.
"""

from __future__ import annotations

from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.data.rows import TorchRelease
from cudadoctor.record import record
from cudadoctor.rules.wheels import torch_has_wheels
from cudadoctor.suggest.constraints import Constraints
from cudadoctor.suggest.judge import Reason, driver_reasons, gpu_reason, start

__all__ = ["UvPick", "uv_auto_indexes", "uv_auto_pick"]


@record
class UvPick:
    """uv's pick on one machine: the index, the torch it installs, and what cudadoctor's rules say of it."""

    index: str  #: ``cu132``, ``cpu``, ``rocm6.4``, ``xpu``
    version: Version | None  #: the newest torch compat data lists there for this Python and platform; None: none
    problems: tuple[Reason, ...] = ()  #: why that build does not run here (cudadoctor's rules); (): it runs
    note: str = ""  #: what the data cannot say about the pick

    @property
    def label(self) -> str:
        return f"{self.index} index" + (f" → torch {self.version}" if self.version is not None else "")


def uv_auto_indexes(matrix: CompatMatrix, c: Constraints) -> tuple[str, ...]:
    """The PyTorch indexes uv's automatic backend searches on this machine, first first."""
    if c.accelerator == "rocm":  # uv's own table says which ROCm builds list the GPU; compat data has no such list
        newest = _uv_newest_rocm(matrix)
        tags = [t for t in matrix.torch_variants if t.startswith("rocm") and (newest is None or _rocm(t) <= newest)]
        return (*sorted(tags, key=_rocm, reverse=True), "cpu")
    if _uv_sees_intel_gpu(c):
        return ("xpu",)
    if c.accelerator not in (None, "cuda") or c.driver is None or c.platform not in ("linux-x86_64", "linux-aarch64"):
        return ("cpu",)
    found = []
    for tag, variant in matrix.torch_variants.items():
        floor = matrix.minor_compat(variant.cuda.major) if variant.cuda is not None else None
        if variant.cuda is not None and floor is not None and c.driver >= floor.min_driver_linux:
            found.append((variant.cuda, tag))
    return (*(tag for _cuda, tag in sorted(found, reverse=True)), "cpu")


def _uv_sees_intel_gpu(c: Constraints) -> bool:
    return c.accelerator == "xpu" or (c.accelerator == "cpu" and bool(c.intel_gpus))


def _on_index(release: TorchRelease, tag: str, c: Constraints) -> bool:
    """Whether compat data lists a wheel of ``release`` on the ``tag`` index for this Python and platform."""
    if c.platform == "linux-aarch64":
        listed = tag in release.variants_aarch64 or (tag == "cpu" and release.pypi_aarch64_cpu is True)
    else:
        listed = c.platform == "linux-x86_64" and tag in release.variants
    return listed and (c.python is None or torch_has_wheels(release, c.python, c.platform).is_ok)


def _problems(matrix: CompatMatrix, c: Constraints, version: Version, tag: str) -> tuple[Reason, ...]:
    variant = matrix.torch_variants.get(tag)
    if variant is None or variant.cuda is None:
        return ()
    aarch64 = c.platform == "linux-aarch64"
    archs, _inherited = matrix.torch_arch_list_or_inherited(version, tag, aarch64=aarch64)
    found = [*start("torch", matrix, c, "").hard, *driver_reasons(matrix, c, variant.cuda)]
    found += [reason for gpu in c.gpus if (reason := gpu_reason(matrix, archs, variant.cuda, gpu))]
    return tuple(found)


def uv_auto_pick(matrix: CompatMatrix, c: Constraints) -> UvPick:
    """What ``uv pip install torch --torch-backend=auto`` installs on the machine ``c`` describes."""
    if c.accelerator == "mps" or c.platform == "macos-arm64":
        return UvPick(
            "cpu", None, note="no NVIDIA, AMD or Intel GPU: the CPU index; its macOS wheels are not in compat data"
        )
    if c.accelerator == "jetson":  # uv reads /sys/module/nvidia/version, /proc/driver/nvidia/version, nvidia-smi
        return UvPick(
            "cpu", None, note="the CPU index, or an SBSA CUDA index where it reads a driver: no JetPack build"
        )
    indexes = uv_auto_indexes(matrix, c)
    note = (
        _rocm_note(matrix)
        if c.accelerator == "rocm"
        else _INTEGRATED_NOTE
        if c.accelerator == "cpu" and c.intel_gpus
        else ""
    )
    for tag in indexes:
        newest = next((r.version for r in matrix.torch_releases if _on_index(r, tag, c)), None)
        if newest is not None:
            return UvPick(tag, newest, _problems(matrix, c, newest, tag), note)
    return UvPick(indexes[0], None, note=f"compat data lists no torch on {', '.join(indexes)} for this machine")


def _rocm(tag: str) -> Version:
    return Version(tag.removeprefix("rocm"))


def _uv_newest_rocm(matrix: CompatMatrix) -> Version | None:
    backend = matrix.uv_torch_backend
    return backend.newest_rocm if backend is not None else None


def _rocm_note(matrix: CompatMatrix) -> str:
    """How uv's ROCm indexes compare with the ROCm builds in compat data."""
    newest = max((_rocm(t) for t in matrix.torch_variants if t.startswith("rocm")), default=None)
    uv = _uv_newest_rocm(matrix)
    if uv is None:
        return "compat/torch.toml does not say which ROCm indexes uv knows"
    if newest is None or newest == uv:
        return ""
    if newest < uv:
        return f"uv also knows newer ROCm indexes (to rocm{uv}) than compat data"
    return f"uv's table stops at rocm{uv}; compat data also has rocm{newest} builds"


#: uv's accelerator.rs takes any Intel display device for an XPU, the integrated one included
_INTEGRATED_NOTE = "uv takes the integrated Intel GPU for an XPU"
