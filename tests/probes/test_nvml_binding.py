"""cudadoctor's own NVML binding (cudadoctor.probes.nvml) against nvidia-ml-py and a fake libnvidia-ml.

Three checks: every structure has nvidia-ml-py's size, field names, offsets and field types; every function
runs against a fake library compiled here from tests/fixtures/nvml/fake_nvml.c (fixed answers, errors and
the two-call patterns included); and the health and native records made through either binding, pointed at
the same fake library, are identical.
"""

from __future__ import annotations

import ast
import ctypes
import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from cudadoctor.probes import native, nvml, nvml_calls
from cudadoctor.probes.nvml_health import _plain

pynvml = pytest.importorskip("pynvml")

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tests" / "fixtures" / "nvml" / "fake_nvml.c"


# -- 1. layouts -------------------------------------------------------------------------------------------


def _structures() -> list[str]:
    return sorted(
        name
        for name, value in vars(nvml).items()
        if isinstance(value, type)
        and issubclass(value, (ctypes.Structure, ctypes.Union))
        and value.__module__ == nvml.__name__
        and not name.startswith("_")
    )


def _shape(ctype: Any) -> Any:
    """A comparable description of a ctypes type: simple types by identity, the rest by layout."""
    if isinstance(ctype, type) and issubclass(ctype, (ctypes.Structure, ctypes.Union)):
        kind = "union" if issubclass(ctype, ctypes.Union) else "struct"
        fields = [(name, getattr(ctype, name).offset, _shape(t)) for name, t, *_ in getattr(ctype, "_fields_", [])]
        return (kind, ctypes.sizeof(ctype), fields)
    if isinstance(ctype, type) and issubclass(ctype, ctypes.Array):
        return ("array", ctype._length_, _shape(ctype._type_))
    if isinstance(ctype, type) and issubclass(ctype, ctypes._Pointer):
        return ("pointer", _shape(ctype._type_))
    return ctype


def test_every_structure_is_checked() -> None:
    assert len(_structures()) == 16


@pytest.mark.parametrize("name", _structures())
def test_structure_layout_matches_nvidia_ml_py(name: str) -> None:
    ours, theirs = getattr(nvml, name), getattr(pynvml, name)
    assert ctypes.sizeof(ours) == ctypes.sizeof(theirs)
    assert _shape(ours) == _shape(theirs)


@pytest.mark.parametrize("name", ["c_nvmlDevice_t", "c_nvmlGpmSample_t", "NVML_GPM_METRICS_GET_VERSION"])
def test_handle_types_and_constants_match(name: str) -> None:
    assert _shape(getattr(nvml, name)) == _shape(getattr(pynvml, name))


def test_error_codes_and_texts_match_nvidia_ml_py() -> None:
    for name in [n for n in vars(nvml) if n.startswith("NVML_ERROR_") or n == "NVML_SUCCESS"]:
        assert getattr(nvml, name) == getattr(pynvml, name), name
    for code in nvml._ERROR_TEXT:
        assert str(nvml.NVMLError(code)) == str(pynvml.NVMLError(code)), code


# -- 2. every function against the fake library -----------------------------------------------------------


def _compile(directory: pathlib.Path, *flags: str) -> pathlib.Path:
    directory.mkdir(parents=True)
    # No -soname: loaded by path in this process, the fake never answers a later dlopen("libnvidia-ml.so.1").
    target = directory / "libnvidia-ml.so.1"
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler to build the fake libnvidia-ml")
    subprocess.run([cc, "-shared", "-fPIC", "-O1", *flags, "-o", str(target), str(SOURCE)], check=True, timeout=120)
    return target


@pytest.fixture(scope="module")
def fakes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pathlib.Path]:
    base = tmp_path_factory.mktemp("fake-nvml")
    return {"new": _compile(base / "new"), "old": _compile(base / "old", "-DOLD_DRIVER")}


def _opener(path: pathlib.Path) -> Callable[[], ctypes.CDLL]:
    return lambda: ctypes.CDLL(str(path))


@pytest.fixture
def nv(fakes: dict[str, pathlib.Path]) -> Iterator[Any]:
    nvml.use_library(_opener(fakes["new"]))
    nvml.nvmlInit()
    yield nvml
    nvml.use_library(None)


# (function, arguments with "h0"/"h1" for the two devices' handles, the answer)
ANSWERS: list[tuple[str, tuple[Any, ...], Any]] = [
    ("nvmlSystemGetDriverVersion", (), "580.159.04"),
    ("nvmlSystemGetNVMLVersion", (), "13.580.159.04"),
    ("nvmlSystemGetCudaDriverVersion_v2", (), 13000),
    ("nvmlSystemGetProcessName", (4242,), "python3"),
    ("nvmlDeviceGetCount", (), 2),
    ("nvmlDeviceGetName", ("h0",), "NVIDIA H200"),
    ("nvmlDeviceGetName", ("h1",), "Tesla T4"),
    ("nvmlDeviceGetCudaComputeCapability", ("h0",), (9, 0)),
    ("nvmlDeviceGetMemoryInfo", ("h0",), {"total": 150754820096, "free": 149681078272, "used": 1073741824}),
    ("nvmlDeviceGetBrand", ("h0",), 2),
    ("nvmlDeviceGetArchitecture", ("h1",), 6),
    ("nvmlDeviceGetPersistenceMode", ("h0",), 1),
    ("nvmlDeviceGetDisplayActive", ("h0",), 0),
    ("nvmlDeviceGetMigMode", ("h0",), [1, 0]),
    ("nvmlDeviceGetMaxMigDeviceCount", ("h0",), 7),
    ("nvmlDeviceGetGspFirmwareVersion", ("h0",), b"580.159.04"),
    ("nvmlDeviceGetGspFirmwareMode", ("h1",), [0, 1]),
    ("nvmlDeviceGetUtilizationRates", ("h0",), {"gpu": 35, "memory": 12}),
    ("nvmlDeviceGetPowerUsage", ("h0",), 123456),
    ("nvmlDeviceGetEnforcedPowerLimit", ("h1",), 70000),
    ("nvmlDeviceGetComputeRunningProcesses", ("h1",), []),
    ("nvmlDeviceGetEccMode", ("h0",), [1, 1]),
    ("nvmlDeviceGetTotalEccErrors", ("h0", 1, 0), 11),
    ("nvmlDeviceGetMemoryErrorCounter", ("h0", 1, 1, 2), 106),
    ("nvmlDeviceGetRemappedRows", ("h0",), (2, 1, 0, 0)),
    ("nvmlDeviceGetRetiredPagesPendingStatus", ("h0",), 0),
    ("nvmlDeviceGetRetiredPages", ("h0", 0), [0x1000, 0x2000, 0x3000]),
    ("nvmlDeviceGetRetiredPages", ("h0", 1), []),
    ("nvmlDeviceGetCurrentClocksEventReasons", ("h1",), 4),
    ("nvmlDeviceGetCurrentClocksThrottleReasons", ("h0",), 1),
    ("nvmlDeviceGetViolationStatus", ("h0", 0), {"referenceTime": 1700000000000000, "violationTime": 5000000000}),
    ("nvmlDeviceGetCurrPcieLinkGeneration", ("h1",), 3),
    ("nvmlDeviceGetMaxPcieLinkGeneration", ("h0",), 5),
    ("nvmlDeviceGetGpuMaxPcieLinkGeneration", ("h0",), 5),
    ("nvmlDeviceGetCurrPcieLinkWidth", ("h1",), 8),
    ("nvmlDeviceGetMaxPcieLinkWidth", ("h0",), 16),
    ("nvmlDeviceGetPcieReplayCounter", ("h0",), 0),
    ("nvmlDeviceGetNvLinkState", ("h0", 1), 0),
    ("nvmlDeviceGetNvLinkState", ("h0", 2), 1),
    ("nvmlGpmQueryDeviceSupport", ("h0",), {"version": 1, "isSupportedDevice": 1}),
]

# (function, arguments, the nvmlReturn_t it raises, its text)
REFUSALS: list[tuple[str, tuple[Any, ...], int, str]] = [
    ("nvmlSystemGetProcessName", (777,), 4, "Insufficient Permissions"),
    ("nvmlDeviceGetHandleByIndex", (2,), 2, "Invalid Argument"),
    ("nvmlDeviceGetMigMode", ("h1",), 3, "Not Supported"),
    ("nvmlDeviceGetMigDeviceHandleByIndex", ("h0", 1), 6, "Not Found"),
    ("nvmlDeviceGetMemoryErrorCounter", ("h0", 0, 0, 7), 3, "Not Supported"),
    ("nvmlDeviceGetRetiredPages", ("h1", 0), 3, "Not Supported"),
    ("nvmlDeviceGetNvLinkState", ("h0", 3), 2, "Invalid Argument"),
    ("nvmlDeviceGetSamples", ("h1", 1, 0), 6, "Not Found"),
    ("nvmlDeviceGetProcessUtilization", ("h1", 0), 0, "Success"),  # nvidia-ml-py raises on NVML_SUCCESS here
    ("nvmlDeviceGetGpuFabricInfo", ("h1", None), 3, "Not Supported"),
    ("nvmlGpmSampleGet", ("h1", None), 3, "Not Supported"),
]


def _args(nv: Any, args: tuple[Any, ...]) -> list[Any]:
    handles = {"h0": nv.nvmlDeviceGetHandleByIndex(0), "h1": nv.nvmlDeviceGetHandleByIndex(1)}
    return [handles.get(a, a) if isinstance(a, str) else a for a in args]


@pytest.mark.parametrize(("name", "args", "expected"), ANSWERS, ids=[f"{n}{a}" for n, a, _ in ANSWERS])
def test_answer(nv: Any, name: str, args: tuple[Any, ...], expected: Any) -> None:
    value = getattr(nv, name)(*_args(nv, args))
    assert (_plain(value) if isinstance(expected, dict) else value) == expected
    assert type(value) is type(expected) or isinstance(expected, dict)


@pytest.mark.parametrize(("name", "args", "code", "text"), REFUSALS, ids=[f"{n}{a}" for n, a, *_ in REFUSALS])
def test_refusal(nv: Any, name: str, args: tuple[Any, ...], code: int, text: str) -> None:
    with pytest.raises(nv.NVMLError) as raised:
        getattr(nv, name)(*_args(nv, args))
    assert (raised.value.value, str(raised.value)) == (code, text)


def test_every_function_is_exercised() -> None:
    functions = {n for n, v in vars(nvml).items() if n.startswith("nvml") and callable(v) and not isinstance(v, type)}
    covered = {n for n, *_ in ANSWERS} | {n for n, *_ in REFUSALS} | set(_COVERED_BELOW)
    assert functions - covered == set()


_COVERED_BELOW = (
    "nvmlInit",
    "nvmlDeviceGetHandleByIndex",
    "nvmlDeviceGetPciInfo",
    "nvmlDeviceGetComputeRunningProcesses",
    "nvmlDeviceGetFieldValues",
    "nvmlDeviceGetGpuFabricInfo",
    "nvmlDeviceGetSamples",
    "nvmlDeviceGetProcessUtilization",
    "nvmlGpmSampleAlloc",
    "nvmlGpmSampleGet",
    "nvmlGpmMetricsGet",
    "nvmlGpmSampleFree",
    "nvmlDeviceGetMigDeviceHandleByIndex",
)


def test_pci_info_reads_as_text(nv: Any) -> None:
    info = nv.nvmlDeviceGetPciInfo(nv.nvmlDeviceGetHandleByIndex(0))
    assert (info.busId, info.busIdLegacy, info.bus, info.pciDeviceId) == (
        "00000000:18:00.0",
        "0000:18:00.0",
        0x18,
        0x233510DE,
    )


def test_processes_take_the_two_call_pattern(nv: Any) -> None:
    found = nv.nvmlDeviceGetComputeRunningProcesses(nv.nvmlDeviceGetHandleByIndex(0))
    assert [type(p).__name__ for p in found] == ["nvmlFriendlyObject"] * 2
    assert [vars(p) for p in found] == [
        {"pid": 4242, "usedGpuMemory": 1073741824, "gpuInstanceId": 0xFFFFFFFF, "computeInstanceId": 0xFFFFFFFF},
        {"pid": 777, "usedGpuMemory": None, "gpuInstanceId": 1, "computeInstanceId": 0},  # NVML_VALUE_NOT_AVAILABLE
    ]


def test_field_values_carry_their_own_codes(nv: Any) -> None:
    values = nv.nvmlDeviceGetFieldValues(nv.nvmlDeviceGetHandleByIndex(0), [230, 38, (45, 2), 52])
    assert [(v.fieldId, v.nvmlReturn, v.valueType) for v in values] == [(230, 0, 1), (38, 0, 3), (45, 3, 0), (52, 0, 4)]
    assert (values[1].value.ullVal, values[3].value.sllVal, values[2].scopeId) == (12, -1, 2)


def test_samples_and_process_utilization(nv: Any) -> None:
    h = nv.nvmlDeviceGetHandleByIndex(0)
    kind, samples = nv.nvmlDeviceGetSamples(h, 1, 0)
    assert (kind, [(s.timeStamp, s.sampleValue.uiVal) for s in samples]) == (1, [(1000, 10), (2000, 20), (3000, 30)])
    rows = nv.nvmlDeviceGetProcessUtilization(h, 0)
    assert [(r.pid, r.timeStamp, r.smUtil, r.memUtil) for r in rows] == [(4242, 5000, 40, 20), (777, 5001, 41, 21)]


def test_fabric_info_is_filled_in_place(nv: Any) -> None:
    info = nv.c_nvmlGpuFabricInfo_t()
    assert nv.nvmlDeviceGetGpuFabricInfo(nv.nvmlDeviceGetHandleByIndex(0), ctypes.byref(info)) == nv.NVML_SUCCESS
    assert (info.state, info.status, info.cliqueId, list(info.clusterUuid)[:2]) == (3, 0, 7, [0xAB, 0xAB])


def test_gpm_metrics_between_two_samples(nv: Any) -> None:
    h = nv.nvmlDeviceGetHandleByIndex(0)
    first, second = nv.nvmlGpmSampleAlloc(), nv.nvmlGpmSampleAlloc()
    assert nv.nvmlGpmSampleGet(h, first) is first
    nv.nvmlGpmSampleGet(h, second)
    request = nv.c_nvmlGpmMetricsGet_t()
    request.version, request.numMetrics, request.sample1, request.sample2 = (
        nv.NVML_GPM_METRICS_GET_VERSION,
        2,
        first,
        second,
    )
    request.metrics[0].metricId, request.metrics[1].metricId = 2, 10
    assert nv.nvmlGpmMetricsGet(request) is request
    assert [(m.nvmlReturn, m.value) for m in request.metrics[:2]] == [(0, 3.0), (0, 15.0)]
    assert nv.nvmlGpmSampleFree(first) is None
    nv.nvmlGpmSampleFree(second)


def test_mig_devices_by_slot(nv: Any) -> None:
    h = nv.nvmlDeviceGetHandleByIndex(0)
    assert nvml_calls._mig_device_count(nv, h) == 2
    assert bool(nv.nvmlDeviceGetMigDeviceHandleByIndex(h, 3))


def test_an_entry_point_the_driver_lacks(fakes: dict[str, pathlib.Path]) -> None:
    nvml.use_library(_opener(fakes["old"]))
    try:
        nvml.nvmlInit()
        with pytest.raises(nvml.NVMLError) as raised:
            nvml.nvmlDeviceGetGpuMaxPcieLinkGeneration(nvml.nvmlDeviceGetHandleByIndex(0))
        assert (raised.value.value, str(raised.value)) == (13, "Function Not Found")
    finally:
        nvml.use_library(None)


def test_unknown_codes_ask_the_library(nv: Any) -> None:
    assert str(nv.NVMLError(26)) == "Deprecated"  # the fake's nvmlErrorString; not in the fixed table


def test_no_library_and_no_init(tmp_path: pathlib.Path, fakes: dict[str, pathlib.Path]) -> None:
    try:
        nvml.use_library(_opener(tmp_path / "missing.so"))
        with pytest.raises(nvml.NVMLError) as raised:
            nvml.nvmlInit()
        assert (raised.value.value, str(raised.value)) == (12, "NVML Shared Library Not Found")
        assert str(nvml.NVMLError(28)) == "NVML Error with code 28"  # nvmlErrorString itself unreachable
        nvml.use_library(_opener(fakes["new"]))
        with pytest.raises(nvml.NVMLError) as raised:
            nvml.nvmlDeviceGetCount()
        assert raised.value.value == nvml.NVML_ERROR_UNINITIALIZED
    finally:
        nvml.use_library(None)


def test_the_own_binding_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(native.BINDING_VAR, raising=False)
    assert native.nvml_binding() is nvml
    monkeypatch.setenv(native.BINDING_VAR, "pynvml")
    assert native.nvml_binding() is pynvml


# -- 3. the same records through either binding -----------------------------------------------------------

_BOTH = """
import dataclasses, json, os, sys
from cudadoctor.probes.native import _query_nvml
from cudadoctor.probes.nvml_health import query_health

def records():
    health = query_health(utilization=True, sample_seconds=0.01)
    health.pop("elapsed_ms", None)
    return {"health": health, "native": dataclasses.asdict(_query_nvml())}

ours = records()
pynvml_imported = "pynvml" in sys.modules
os.environ["CUDADOCTOR_NVML"] = "pynvml"
print(json.dumps({"ours": ours, "pynvml": records(), "pynvml_imported_by_ours": pynvml_imported}))
"""


@pytest.mark.parametrize("variant", ["new", "old"])
def test_both_bindings_record_the_same(fakes: dict[str, pathlib.Path], variant: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != native.BINDING_VAR}
    env.update(LD_LIBRARY_PATH=str(fakes[variant].parent), PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-c", _BOTH], env=env, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["ours"] == result["pynvml"]
    assert result["pynvml_imported_by_ours"] is False
    health = result["ours"]["health"]
    assert [d["name"] for d in health["devices"]] == [{"v": "NVIDIA H200"}, {"v": "Tesla T4"}]
    assert health["devices"][0]["gpm"]["v"]["sm"] == 3.0
    assert result["ours"]["native"]["devices"][0]["mig_devices"] == 2
    expected_gen = {"c": 13, "e": "Function Not Found"} if variant == "old" else {"v": 5}
    assert health["devices"][0]["pcie_gen_gpu_max"] == expected_gen


# -- bench/compare_nvml.py, the comparison for the next device session -------------------------------------


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("compare_nvml", ROOT / "bench" / "compare_nvml.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_tells_live_readings_from_real_differences() -> None:
    bench = _bench()
    ours = {
        "devices": [{"power_usage_mw": {"v": 1}, "name": {"v": "H200"}, "ecc_mode": {"e": "Not Supported", "c": 3}}]
    }
    theirs = {"devices": [{"power_usage_mw": {"v": 2}, "name": {"v": "H200"}, "ecc_mode": {"v": [1, 1]}}]}
    found = bench._differences(bench._shape(ours), bench._shape(theirs))
    paths = ["/devices[0]/ecc_mode/c", "/devices[0]/ecc_mode/e", "/devices[0]/ecc_mode/v"]
    assert [(path, bench._volatile(path)) for path, *_ in found] == [(p, False) for p in paths]
    values = bench._differences(ours, theirs)
    assert [bench._volatile(path) for path, *_ in values if "power" in path] == [True]


@pytest.mark.slow
def test_bench_agrees_on_the_fake_library(fakes: dict[str, pathlib.Path]) -> None:
    env = {k: v for k, v in os.environ.items() if k != native.BINDING_VAR}
    env.update(LD_LIBRARY_PATH=str(fakes["new"].parent), PYTHONPATH=str(ROOT))
    argv = [sys.executable, str(ROOT / "bench" / "compare_nvml.py"), "--rounds", "1", "--sample-seconds", "0.01"]
    argv += ["--import-runs", "1", "--check-runs", "0"]
    run = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 shape differences, 0 value differences" in run.stdout
    assert "records agree" in run.stdout


# -- the helper process: the fast path's NVML and libcuda answers from cudadoctor.probes.nvml_child ---------------

_HELPER = """
import dataclasses, json, os, sys
from cudadoctor.probes import native
from cudadoctor.probes.native import RealHealthSource
from cudadoctor.probes.nvml_health import query_health

native.start_early(health=True)
helper = isinstance(native._EARLY.get("nvml"), native._FromHelper)
probe = native.RealNative()
got = {"nvml": dataclasses.asdict(probe.nvml()), "libcuda": dataclasses.asdict(probe.libcuda_version()),
       "health": RealHealthSource().query()}
binding_here = "cudadoctor.probes.nvml" in sys.modules
here = {"nvml": dataclasses.asdict(native._query_nvml()), "libcuda": dataclasses.asdict(native._query_libcuda()),
        "health": query_health()}
for record in (got, here):
    record["health"].pop("elapsed_ms", None)
print(json.dumps({"helper": helper, "binding_here": binding_here, "got": got, "here": here}))
"""


def test_the_helper_process_answers_as_this_process_would(fakes: dict[str, pathlib.Path]) -> None:
    env = {k: v for k, v in os.environ.items() if k != native.BINDING_VAR}
    env.update(LD_LIBRARY_PATH=str(fakes["new"].parent), PYTHONPATH=str(ROOT))
    run = subprocess.run(
        [sys.executable, "-c", _HELPER], env=env, capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["helper"] is True  # NVML is there: the queries ran in the helper process ...
    assert result["binding_here"] is False  # ... and the NVML binding was never imported in this one
    assert result["got"] == result["here"]
    assert [d["name"] for d in result["got"]["nvml"]["devices"]] == ["NVIDIA H200", "Tesla T4"]
    assert result["got"]["health"]["devices"][0]["name"] == {"v": "NVIDIA H200"}


def test_the_helper_imports_no_records(fakes: dict[str, pathlib.Path]) -> None:
    """The helper stays small: no dataclasses, records, typing or json (it holds NVML's 18 MB; 30 MB in all)."""
    from cudadoctor.runner import helper_bootstrap

    BOOTSTRAP = helper_bootstrap("cudadoctor.probes.nvml_child", "main")

    code = BOOTSTRAP.replace("main(sys.argv[2:])", "main(sys.argv[2:]); print(); print(sorted(sys.modules))")
    env = {k: v for k, v in os.environ.items() if k != native.BINDING_VAR}
    env.update(LD_LIBRARY_PATH=str(fakes["new"].parent))
    run = subprocess.run(
        [sys.executable, "-S", "-I", "-c", code, str(ROOT), "1"], env=env, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    answers, modules = run.stdout.splitlines()
    assert ast.literal_eval(answers)["nvml"]["driver_version"] == "580.159.04"
    loaded = set(ast.literal_eval(modules))
    assert {"dataclasses", "cudadoctor.record", "cudadoctor.probes.native", "packaging"}.isdisjoint(loaded)
    assert {"typing", "json", "re", "collections", "threading"}.isdisjoint(loaded)  # ~2.6 MB: its budget is tight
