"""No unused fact (issue #28, 5): every fact is read by some check, or listed here with the reason it is kept.

``python -m tests.test_facts_used`` prints every top-level and derived fact with its readers. The readers are
derived from the code, not kept by hand:

* a check reads the facts its ``check()`` parameters name (the engine injects them by name,
  :mod:`cudadoctor.checks.engine`), and, when it takes the whole ``facts``, the ``facts.<name>`` its module reads;
* a derived fact (:data:`cudadoctor.checks.derived.DERIVED`) reads the top-level facts its computation touches (run
  here on the real H200 snapshot through a recorder), so the checks that read it read those facts too;
* a nested field (``DriverInfo.wsl_libraries``, ``VisibleDevices.device_nodes`` …) counts as read when the check
  path (``cudadoctor/checks``, ``cudadoctor/rules``, ``cudadoctor/facts/derive.py``) reads an attribute of that name:
  the granularity the code allows, as a field's type is not known statically.

A fact no check reads fails unless :data:`NOT_READ_BY_A_CHECK` gives its reason and where it is used instead; an
entry whose consumer no longer reads it, or that a check has come to read, fails too, so the list stays exact.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import inspect
import pathlib
import sys
import types
import typing
from typing import Any

import cudadoctor
import cudadoctor.facts.model as model
from cudadoctor.checks import ALL_CHECKS
from cudadoctor.checks.derived import CONTEXT, DERIVED
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.codec import facts_from_json
from cudadoctor.facts.model import Facts
from cudadoctor.facts.registry import FACTS
from tests.conftest import fixture_text

PACKAGE = pathlib.Path(cudadoctor.__file__).parent
#: The modules a check's verdict is computed in.
CHECK_PATH = ("checks/*.py", "rules/*.py", "facts/derive.py")
#: Where a fact no check reads may be used instead, by the name an entry of NOT_READ_BY_A_CHECK gives.
CONSUMERS = {
    "report": ("report/*.py",),
    "suggest": ("planning.py", "suggest/*.py"),
    "usage": ("usage.py",),
    "engine": ("checks/engine.py",),
    "probes": ("probes/*.py", "probes/children/*.py"),
    "snapshot": (),  # kept in `cudadoctor snapshot` for people and for later checks; nothing else to verify
}


@dataclasses.dataclass(frozen=True)
class Kept:
    """Why a fact no check reads is kept: where it is used instead (a key of CONSUMERS), and why."""

    used_by: str
    why: str


_SNAPSHOT = "recorded in `cudadoctor snapshot`; no check judges it yet"

#: Facts no check reads, by name (``name`` for a top-level or derived fact, ``Type.field`` for a nested one).
NOT_READ_BY_A_CHECK: dict[str, Kept] = {
    # top level
    "tensorrt": Kept(
        "report",
        "the TensorRT copies are listed in the report; CD601 judges TensorRT through the "
        "loader's view and the packages, which see the copy that loads",
    ),
    "tool_version": Kept("report", "the report's header names the cudadoctor that gathered the facts"),
    "timings": Kept("report", "check --verbose shows how long each probe took"),
    # the host
    "HostInfo.kernel": Kept("report", "shown in the host line"),
    "HostInfo.glibc": Kept("report", "shown in the host line; no check has a glibc floor yet"),
    "HostInfo.apple_silicon": Kept("suggest", "suggest plans MPS builds on Apple silicon; there is no CUDA to check"),
    "HostInfo.rocm_version": Kept("suggest", "suggest plans ROCm builds; no check judges ROCm"),
    "HostInfo.amdgpu_driver": Kept("suggest", "suggest plans ROCm builds where the amdgpu driver is loaded"),
    "HostInfo.intel_gpu_driver": Kept("report", "shown in the host line beside the Intel GPUs"),
    "HostInfo.intel_gpus": Kept("suggest", "suggest plans XPU builds for Intel GPUs"),
    "HostInfo.loader_paths": Kept("snapshot", _SNAPSHOT + ": the checks read the loader through LinkedFile.via"),
    "EnvVar.claims": Kept("snapshot", _SNAPSHOT + ": CD703 compares the variables' values itself"),
    # the driver and GPUs
    "KernelModule.flavour": Kept("report", "the report names the kernel module open or proprietary"),
    "GpuInfo.memory_mib": Kept("usage", "`cudadoctor usage` and the report show the GPU's memory"),
    "GpuInfo.compute_capability_source": Kept("report", "the report says a compute capability came from compat/"),
    "VisibleDevices.nvidia_visible_devices": Kept(
        "report",
        "shown in the GPU section; the NVIDIA runtime has already applied it to the device nodes the checks read",
    ),
    # libraries and packages
    "CudaWheels.layout": Kept("report", "the report names the wheels' layout (cu13, cu12, mixed)"),
    "CudaWheels.toolkit_meta": Kept("report", "the report shows the cuda-toolkit meta-package's version"),
    "CudaWheels.runtime_version": Kept("report", "the report shows the pip CUDA runtime's version"),
    "WheelComponent.lib_dir": Kept("report", "the report shows where each CUDA wheel's libraries are"),
    "LoaderView.scanned": Kept("report", "check --verbose shows how many shared objects were scanned"),
    "NeededLibrary.versions": Kept("snapshot", _SNAPSHOT + ": the DT_VERNEED versions a needer wants"),
    "PythonEnv.prefix": Kept("report", "the report names the environment examined"),
    "InstalledPackage.location": Kept("probes", "the loader's view finds each package's shared objects from it"),
    "InstalledPackage.cuda_requires": Kept("report", "the report shows the CUDA pins; CD401 reads all of `requires`"),
    "TorchBuild.hip": Kept("snapshot", _SNAPSHOT + ": a ROCm build is told from its variant (rocm6.2) by CD402"),
    "TorchBuild.debug": Kept("snapshot", _SNAPSHOT),
    "TorchBuild.git_version": Kept("snapshot", _SNAPSHOT + ": names the exact source of a nightly build"),
    # hardware health: NVML's answers kept whole, the checks judge the ones with a documented threshold
    "HealthInfo.query_ms": Kept("report", "check --verbose shows how long NVML's health query took"),
    "GpuHealth.ecc_corrected_aggregate": Kept("snapshot", _SNAPSHOT + ": CD15x judge the counts since boot"),
    "GpuHealth.ecc_uncorrected_aggregate": Kept("snapshot", _SNAPSHOT + ": CD15x judge the counts since boot"),
    "GpuHealth.dram_uncorrected_volatile": Kept(
        "snapshot", _SNAPSHOT + ": CD15x judge the ECC total and row remapping"
    ),
    "GpuHealth.remapped_correctable": Kept("snapshot", _SNAPSHOT + ": CD15x judge failed and pending remaps"),
    "GpuHealth.retired_pages": Kept(
        "snapshot", _SNAPSHOT + ": CD15x judge pages pending retirement, not those retired"
    ),
    "GpuHealth.violation_power_ns": Kept("snapshot", _SNAPSHOT + ": power capping is a setting, not a fault"),
    "GpuHealth.pcie_gen_gpu_max": Kept("snapshot", _SNAPSHOT + ": the link check compares with the system maximum"),
    "GpuHealth.pcie_replays": Kept("snapshot", _SNAPSHOT + ": NVIDIA documents no replay threshold"),
    "GpuHealth.util_memory_percent": Kept("snapshot", _SNAPSHOT + ": a live reading, not a fault"),
    "GpuHealth.power_w": Kept("usage", "`cudadoctor usage` shows the power draw"),
    "GpuHealth.power_limit_w": Kept("usage", "`cudadoctor usage` shows the power limit"),
    "GpuHealth.processes": Kept("usage", "`cudadoctor usage` lists the processes on each GPU"),
    "GpuHealth.memory_used_mib": Kept("usage", "`cudadoctor usage` shows the memory in use"),
    "GpuHealth.samples": Kept("usage", "`cudadoctor usage` draws the utilisation samples"),
    "GpuHealth.gpm_supported": Kept("usage", "`cudadoctor usage` shows GPM metrics where supported"),
    "GpuHealth.gpm": Kept("usage", "`cudadoctor usage` shows the GPM metrics"),
    "UtilSample.timestamp_us": Kept("usage", "`cudadoctor usage` orders the samples"),
    "UtilSample.percent": Kept("usage", "`cudadoctor usage` draws the samples"),
    "HostHealth.kernel_log_first_s": Kept("snapshot", _SNAPSHOT + ": how far back the kernel log reaches"),
    "XidEvent.seconds_after_boot": Kept("snapshot", _SNAPSHOT + ": when an Xid happened"),
    # check --deep
    "DriverApiResult.device_count": Kept("probes", "check --deep sizes the NCCL smoke test by it (probes/runtime.py)"),
    "LoadedLibrary.suffix": Kept("snapshot", _SNAPSHOT + ": the version suffix of a mapped library's file name"),
    "FrameworkRuntime.imported": Kept("snapshot", _SNAPSHOT + ": the checks read the import's error instead"),
    "FrameworkRuntime.cuda_runtime": Kept("snapshot", _SNAPSHOT + ": the CUDA runtime a framework reports"),
    "FrameworkRuntime.cuda_runtime_build": Kept("snapshot", _SNAPSHOT + ": the CUDA runtime it was built with"),
    "FrameworkRuntime.cudnn_build": Kept(
        "snapshot",
        "read by CD803 through getattr(fw, f'{lib}_build') in "
        "checks/runtime.py: a computed name the code scan cannot see",
    ),
    "FrameworkRuntime.nccl_build": Kept(
        "snapshot",
        "read by CD804 through getattr(fw, f'{lib}_build') in "
        "checks/runtime.py: a computed name the code scan cannot see",
    ),
    "DcgmDiag.returncode": Kept("snapshot", _SNAPSHOT + ": CD167 judges dcgmi's JSON, which states each result"),
}


# --- the readers, from the code ----------------------------------------------------------------------------


def _sources(patterns: tuple[str, ...]) -> list[pathlib.Path]:
    return sorted({p for pattern in patterns for p in PACKAGE.glob(pattern)})


def _attributes(paths: list[pathlib.Path], *, on: str | None = None) -> set[str]:
    """Attribute names the modules read (``x.name``); with ``on``, only on a variable of that name."""
    found: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and (
                on is None or (isinstance(node.value, ast.Name) and node.value.id == on)
            ):
                found.add(node.attr)
    return found


class _Recorder:
    """Facts that note which top-level fact is read."""

    def __init__(self, facts: Facts) -> None:
        self._facts = facts
        self.read: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        self.read.add(name)
        return getattr(self._facts, name)


def _derived_reads() -> dict[str, set[str]]:
    """The top-level facts each derived fact's computation reads (run on the real H200 snapshot)."""
    facts, matrix = facts_from_json(fixture_text("h200-device", "snapshot.json")), CompatMatrix()
    reads: dict[str, set[str]] = {}
    for name, derived in DERIVED.items():
        recorder = _Recorder(facts)
        derived.compute(recorder, matrix)  # type: ignore[arg-type]
        reads[name] = recorder.read & set(FACTS)
    return reads


def readers() -> dict[str, set[str]]:
    """Every top-level and derived fact, with the codes of the checks that read it."""
    found: dict[str, set[str]] = collections.defaultdict(set)
    derived = _derived_reads()
    for code, check in ALL_CHECKS.items():
        names = set(inspect.signature(check.check).parameters)  # type: ignore[attr-defined]
        if "facts" in names:
            module = pathlib.Path(inspect.getfile(type(check)))
            names |= _attributes([module], on="facts") & set(FACTS)
        for name in names - set(CONTEXT):
            found[name].add(code)
            for fact in derived.get(name, ()):
                found[fact].add(code)
    return {name: found.get(name, set()) for name in [*FACTS, *DERIVED]}


def _records(annotation: Any, seen: dict[type, None]) -> None:
    """Every record type reachable from an annotation, in the order met."""
    if typing.get_origin(annotation) is not None or isinstance(annotation, types.UnionType):
        for argument in typing.get_args(annotation):
            _records(argument, seen)
        return
    if not (isinstance(annotation, type) and dataclasses.is_dataclass(annotation)) or annotation in seen:
        return
    seen[annotation] = None
    # the codec resolves every record's annotations in the model's namespace (facts/model.py)
    hints = typing.get_type_hints(annotation, {**vars(model), **vars(sys.modules[annotation.__module__])})
    for field in dataclasses.fields(annotation):
        _records(hints[field.name], seen)


def nested_fields() -> list[str]:
    """``Type.field`` of every record reachable from Facts (Facts itself aside: its fields are the top level)."""
    seen: dict[type, None] = {}
    _records(Facts, seen)
    return [f"{t.__name__}.{f.name}" for t in seen if t is not Facts for f in dataclasses.fields(t)]


# --- the tests -----------------------------------------------------------------------------------------------


def test_every_fact_is_read_by_a_check_or_kept_for_a_reason():
    unread = [name for name, codes in readers().items() if not codes and name not in NOT_READ_BY_A_CHECK]
    read = _attributes(_sources(CHECK_PATH))
    unread += [name for name in nested_fields() if name.split(".")[1] not in read and name not in NOT_READ_BY_A_CHECK]
    assert unread == [], "facts no check reads: read them, or list them in NOT_READ_BY_A_CHECK with the reason"


def test_every_kept_fact_exists_is_unread_and_used_where_it_says():
    top, nested = readers(), nested_fields()
    read = _attributes(_sources(CHECK_PATH))
    for name, kept in NOT_READ_BY_A_CHECK.items():
        assert name in top or name in nested, f"{name}: no such fact"
        if name in top:
            assert not top[name], f"{name} is read by {sorted(top[name])} now: take it off NOT_READ_BY_A_CHECK"
        else:
            assert name.split(".")[1] not in read, f"{name} is read by the checks now: take it off the list"
        assert kept.used_by in CONSUMERS and kept.why, name
        attribute = name.split(".")[-1]
        if CONSUMERS[kept.used_by]:
            assert attribute in _attributes(_sources(CONSUMERS[kept.used_by])), f"{name}: not read by {kept.used_by}"


def test_the_readers_come_from_the_code():
    """Spot checks that the derivation sees what the issue names: device nodes read through gpu_evidence, the
    WSL2 driver store, the MIG capability source, and the whole-facts readers."""
    found = readers()
    assert {"CD104", "CD402", "CD120"} <= found["visible"]  # CD402 through the derived gpu_evidence
    assert "CD402" in found["gpu_evidence"] and "CD201" in found["nvcc"]  # nvcc through build_toolkit
    assert "CD101" in found["errors"] and "CD101" in found["mode"]  # the whole facts: facts.errors, facts.mode
    read = _attributes(_sources(CHECK_PATH))
    assert {"wsl_libraries", "device_nodes", "mig_source", "live_dev"} <= read
    assert "VisibleDevices.live_dev" in nested_fields() and "GpuInfo.mig_source" in nested_fields()


if __name__ == "__main__":  # python -m tests.test_facts_used: the table of facts and their readers
    for fact, codes in readers().items():
        print(f"{fact}: {', '.join(sorted(codes)) or 'no check: ' + NOT_READ_BY_A_CHECK[fact].why}")
