"""CD8xx (check --deep) on the real H200's facts plus runtime results replayed from tests/fixtures/runtime/.

The checks are not registered yet (the lead adds them and the ``runtime`` injectable), so they run
through the engine's ``run_check`` with the injectables plus ``runtime``.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace

import pytest
from packaging.version import Version

from cudadoctor.checks.engine import check_values, run_check
from cudadoctor.checks.findings import Status
from cudadoctor.checks.runtime import CD801, CD802, CD803, CD804, CD805, arch_runs_on, cuda_error, symbol_owner
from cudadoctor.data import CompatMatrix
from cudadoctor.data.load import compat_dir, validate_table
from cudadoctor.facts.model import InstalledPackage, Source, SourceKind, VisibleDevices
from cudadoctor.facts.runtime import LoadedLibrary, RuntimeDevice, RuntimeInfo
from cudadoctor.probes.runtime import parse_driver_output, parse_framework_output
from tests.checks.conftest import with_env
from tests.conftest import fixture_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

V = Version
SITE = "/opt/torch/.venv/lib/python3.12/site-packages"
COMPAT = "/usr/local/cuda-13.0/compat/libcuda.so.580.95.05"
SYSTEM_CUDNN = "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0"
SYSTEM_NCCL = "/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3"


def _load_errors() -> dict:
    with open(os.path.join(compat_dir(), "cuda_errors.toml"), "rb") as handle:
        return tomllib.load(handle)


MATRIX = CompatMatrix()


def driver(name: str):
    result = parse_driver_output(fixture_text("runtime", name), "python -I <driver-API probe>")
    assert result is not None
    return result


def framework(name: str, fw: str, dist: str | None = None):
    result = parse_framework_output(fixture_text("runtime", name), fw, dist or fw, "python -I <probe>")
    assert result is not None
    return result


def rt(drv=None, *fws) -> RuntimeInfo:
    return RuntimeInfo(python="/opt/torch/.venv/bin/python3", timeout=30.0, driver=drv, frameworks=tuple(fws))


def run(check, facts, runtime):
    values = check_values(facts, MATRIX)
    values["runtime"] = runtime
    return run_check(check, values, live=facts.mode == "live")


def _pkg(name: str, version: str, requires: tuple[str, ...] = ()) -> InstalledPackage:
    return InstalledPackage(
        name, Version(version), SITE, Source(SourceKind.METADATA, f"{name}/METADATA"), requires=requires
    )


def _lib(name: str, path: str, suffix: str, origin: str) -> LoadedLibrary:
    return LoadedLibrary(name, path, suffix, origin)


# --- compat/cuda_errors.toml ----------------------------------------------------------------------


def test_cuda_errors_file_validates():
    data = _load_errors()
    assert validate_table("compat/cuda_errors.toml", data) == []
    assert data["meta"]["sources"][0]["url"] == "https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html"


@pytest.mark.parametrize(
    ("code", "name", "api"),
    [
        (34, "CUDA_ERROR_STUB_LIBRARY", "driver"),
        (35, "cudaErrorInsufficientDriver", "runtime"),
        (100, "CUDA_ERROR_NO_DEVICE", "driver"),
        (802, "CUDA_ERROR_SYSTEM_NOT_READY", "driver"),
        (803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "driver"),
        (804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "driver"),
        (999, "CUDA_ERROR_UNKNOWN", "driver"),
    ],
)
def test_cuda_error_lookup(code, name, api):
    info = cuda_error(MATRIX, code, api)
    assert info is not None and (info.name, info.api) == (name, api)
    assert cuda_error(MATRIX, name) == info


def test_cuda_error_unknown_code():
    assert cuda_error(MATRIX, 12345) is None


# --- CD801 cuInit ---------------------------------------------------------------------------------


def test_cd801_healthy_h200(h200):
    assert run(CD801(), h200, rt(driver("driver-healthy-h200.txt"))).status is Status.OK


def test_cd801_s1_compat_first_names_the_compat_file_and_the_kernel_module(h200):
    facts = with_env(h200, LD_LIBRARY_PATH="/usr/local/cuda/compat:/usr/local/nvidia/lib64:/usr/local/nvidia/lib")
    finding = run(CD801(), facts, rt(driver("driver-s1-compat-first.txt")))
    assert finding.status is Status.FAIL
    assert finding.message.startswith("cuInit fails with 803 CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: ")
    assert f"cuda-compat libcuda {COMPAT} (580.95.05)" in finding.message
    assert "not newer than the kernel module 580.159.04" in finding.message
    assert finding.evidence["libcuda mapped"] == COMPAT
    assert finding.evidence["cuDriverGetVersion"] == "0 (CUDA 13.0)"
    assert finding.evidence["kernel module"] == "580.159.04 (/proc/driver/nvidia/version)"
    assert "nvidia-smi and NVML stayed healthy" in finding.evidence["seen before"]
    assert finding.remediation.commands == ("export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/nvidia/lib",)


def test_cd801_s2_stub_is_named_from_the_table(h200):
    facts = with_env(h200, LD_LIBRARY_PATH="/tmp/stub:/usr/local/nvidia/lib64:/usr/local/nvidia/lib")
    finding = run(CD801(), facts, rt(driver("driver-s2-stub.txt")))
    assert finding.status is Status.FAIL
    assert finding.message.startswith("cuInit fails with 34 CUDA_ERROR_STUB_LIBRARY: ")
    assert "(/tmp/stub/libcuda.so.1) is the CUDA toolkit's link-time stub" in finding.message
    assert finding.evidence["cuDriverGetVersion"] == "34"
    assert finding.remediation.commands == ("export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/nvidia/lib",)


def test_cd801_s3_empty_visible_devices(h200):
    facts = replace(h200, visible=replace(h200.visible, cuda_visible_devices=""))
    finding = run(CD801(), facts, rt(driver("driver-s3-no-visible-devices.txt")))
    assert finding.status is Status.FAIL
    assert "100 CUDA_ERROR_NO_DEVICE" in finding.message
    assert "CUDA_VISIBLE_DEVICES='' hides every GPU" in finding.message
    assert finding.evidence["CUDA_VISIBLE_DEVICES"] == "''"
    assert finding.remediation.commands == ("unset CUDA_VISIBLE_DEVICES",)


def test_cd801_no_device_node_in_a_container(h200):
    api = replace(driver("driver-s3-no-visible-devices.txt"), device_nodes=("nvidia-uvm", "nvidiactl"))
    finding = run(CD801(), h200, rt(api))
    assert "no /dev/nvidiaN device node" in finding.message


def test_cd801_unknown_error_without_uvm(h200):
    api = replace(driver("driver-healthy-h200.txt"), init_rc=999, init_error_name="CUDA_ERROR_UNKNOWN", devices=())
    api = replace(api, device_nodes=("nvidia0", "nvidiactl"))
    finding = run(CD801(), h200, rt(api))
    assert "/dev/nvidia-uvm is missing" in finding.message
    assert finding.remediation.commands == ("sudo modprobe nvidia_uvm",)


def test_cd801_fabric_manager(h200):
    api = replace(driver("driver-healthy-h200.txt"), init_rc=802, init_error_name=None, devices=())
    finding = run(CD801(), h200, rt(api))
    assert "802 CUDA_ERROR_SYSTEM_NOT_READY" in finding.message and "Fabric Manager" in finding.message
    assert finding.remediation.commands == ("sudo systemctl enable --now nvidia-fabricmanager",)


def test_cd801_code_not_in_the_table(h200):
    api = replace(driver("driver-healthy-h200.txt"), init_rc=3, init_error_name="CUDA_ERROR_NOT_INITIALIZED")
    finding = run(CD801(), h200, rt(api))
    assert finding.status is Status.FAIL
    assert (
        finding.message == "cuInit fails with 3 CUDA_ERROR_NOT_INITIALIZED: cudadoctor has no explanation for this code"
    )


def test_cd801_libcuda_not_loadable(h200):
    finding = run(CD801(), h200, rt(driver("driver-no-libcuda.txt")))
    assert finding.status is Status.FAIL and "libcuda.so.1 cannot be loaded" in finding.message
    # no device node either: /dev/nvidia0 alone shows a GPU, for which an unloadable libcuda is a failure
    bare = replace(h200, driver=None, gpus=(), visible=replace(h200.visible, device_nodes=()))
    assert run(CD801(), bare, rt(driver("driver-no-libcuda.txt"))).status is Status.NOT_APPLICABLE
    nodes_only = replace(h200, driver=None, gpus=())
    assert run(CD801(), nodes_only, rt(driver("driver-no-libcuda.txt"))).status is Status.FAIL


def test_cd801_probe_timed_out_or_crashed(h200):
    base = driver("driver-healthy-h200.txt")
    timed_out = replace(base, error="timed out after 30 s during init", error_kind="timeout", init_rc=None)
    finding = run(CD801(), h200, rt(timed_out))
    assert finding.status is Status.WARN and "cuInit hangs" in finding.message
    crashed = replace(base, error="crashed with SIGSEGV during init", error_kind="crash", init_rc=None)
    assert run(CD801(), h200, rt(crashed)).status is Status.FAIL
    not_run = replace(base, error="not found", error_kind="not-run", init_rc=None)
    assert run(CD801(), h200, rt(not_run)).reason == "the driver-API probe could not run: not found"
    # cuInit answered before something later in the child raised: cuInit's answer is what counts
    late = replace(base, error="raised AttributeError: cuDeviceGetName", error_kind="crash")
    assert run(CD801(), h200, rt(late)).status is Status.OK


def test_cd801_skipped_without_deep(h200):
    assert run(CD801(), h200, None).status is Status.NOT_APPLICABLE
    assert run(CD801(), h200, rt(None)).status is Status.NOT_APPLICABLE


# --- CD802 frameworks -----------------------------------------------------------------------------


def test_cd802_healthy_torch(h200):
    runtime = rt(driver("driver-healthy-h200.txt"), framework("torch-healthy-h200.txt", "torch"))
    assert run(CD802(), h200, runtime).status is Status.OK


def test_cd802_s1_torch_blames_cuinit(h200):
    runtime = rt(driver("driver-s1-compat-first.txt"), framework("torch-s1-compat-first.txt", "torch"))
    finding = run(CD802(), h200, runtime)
    assert finding.status is Status.FAIL
    assert finding.message.startswith("torch 2.11.0+cu130: imports, but its GPU operation fails: RuntimeError:")
    assert "cuInit itself fails with 803 for every program here: CD801" in finding.message
    assert finding.remediation.text == "Fix CUDA initialisation first (CD801)."


def test_cd802_translates_the_code_a_framework_prints(h200):
    runtime = rt(driver("driver-healthy-h200.txt"), framework("torch-s1-compat-first.txt", "torch"))
    finding = run(CD802(), h200, runtime)
    assert "(803 CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: the user-space libcuda does not match" in finding.message


def test_cd802_vllm_undefined_symbol_tied_to_the_torch_pin(h200):
    packages = {
        "torch": _pkg("torch", "2.8.0"),
        "vllm": _pkg("vllm", "0.10.1.1", ("torch==2.7.1", "transformers>=4.55")),
    }
    facts = replace(h200, packages=packages)
    runtime = rt(driver("driver-healthy-h200.txt"), framework("vllm-undefined-symbol.txt", "vllm"))
    finding = run(CD802(), facts, runtime)
    assert finding.status is Status.FAIL
    assert finding.message == (
        "vllm 0.10.1.1: import vllm._C fails with undefined symbol _ZN3c104cuda9SetDeviceEi: vllm 0.10.1.1 "
        "requires torch==2.7.1, but torch 2.8.0 is installed, and vllm._C was compiled against the pinned torch"
    )
    assert finding.evidence["vllm 0.10.1.1"] == "requires torch==2.7.1 (Requires-Dist), torch 2.8.0 installed"
    assert finding.remediation.commands == ("python -m pip install 'torch==2.7.1'",)
    assert finding.remediation.text == "Install the torch version vllm pins."


def test_cd802_undefined_symbol_with_the_pinned_package_missing(h200):
    # Regression (issue #10): a pin on a package that is not installed made CD802 crash with
    # "AttributeError: 'NoneType' object has no attribute 'name'".
    facts = replace(h200, packages={"vllm": _pkg("vllm", "0.10.1.1", ("torch==2.7.1",))})
    runtime = rt(driver("driver-healthy-h200.txt"), framework("vllm-undefined-symbol.txt", "vllm"))
    finding = run(CD802(), facts, runtime)
    assert finding.status is Status.FAIL
    assert finding.message == (
        "vllm 0.10.1.1: import vllm._C fails with undefined symbol _ZN3c104cuda9SetDeviceEi: vllm 0.10.1.1 "
        "requires torch==2.7.1, but torch is not installed, and vllm._C was compiled against the pinned torch"
    )
    assert finding.evidence["vllm 0.10.1.1"] == "requires torch==2.7.1 (Requires-Dist), torch not installed"
    assert finding.remediation.commands == ("python -m pip install 'torch==2.7.1'",)
    assert finding.remediation.text == "Install the torch version vllm pins."


def test_cd802_extension_without_a_pin_built_for_another_torch(h200):
    facts = replace(h200, packages={"torch": _pkg("torch", "2.8.0"), "flash-attn": _pkg("flash-attn", "2.8.3")})
    fw = replace(framework("vllm-undefined-symbol.txt", "vllm"), framework="flash-attn", module="flash_attn")
    fw = replace(fw, distribution="flash-attn")
    finding = run(CD802(), facts, rt(driver("driver-healthy-h200.txt"), fw))
    assert "(a torch C++ symbol): flash-attn 2.8.3 was compiled against another torch than the installed torch " in (
        finding.message
    )


def test_cd802_missing_cuda_runtime(h200):
    fw = replace(
        framework("vllm-undefined-symbol.txt", "vllm"),
        undefined_symbol=None,
        missing_library="libcudart.so.12",
        error="ImportError: libcudart.so.12: cannot open shared object file: No such file or directory",
    )
    finding = run(CD802(), replace(h200, packages={"vllm": _pkg("vllm", "0.10.1.1")}), rt(None, fw))
    assert "libcudart.so.12 is not found (vllm 0.10.1.1 is built for CUDA 12)" in finding.message


def test_cd802_timeouts_only_warn_crashes_fail(h200):
    base = framework("torch-healthy-h200.txt", "torch")
    slow = replace(base, error_kind="timeout", error="timed out after 30 s during import", gpu_op=None)
    finding = run(CD802(), h200, rt(None, slow))
    assert finding.status is Status.WARN and "the probe timed out after 30 s during import" in finding.message
    crashed = replace(base, error_kind="crash", error="crashed with SIGSEGV during gpu", stderr_tail="a\nSegfault")
    finding = run(CD802(), h200, rt(None, slow, crashed))
    assert finding.status is Status.FAIL and finding.evidence["torch stderr"] == "Segfault"


def test_cd802_cpu_build_is_cd402s_business(h200):
    cpu = replace(framework("torch-healthy-h200.txt", "torch"), gpu_build=False, gpu_op=None)
    assert run(CD802(), h200, rt(None, cpu)).status is Status.NOT_APPLICABLE


# --- CD803 / CD804 loaded cuDNN and NCCL ----------------------------------------------------------


def _torch_with(**changes):
    return replace(framework("torch-healthy-h200.txt", "torch"), **changes)


def _swap(fw, name: str, lib: LoadedLibrary):
    return tuple(lib if old.name == name else old for old in fw.libraries)


@pytest.mark.parametrize("check", [CD803, CD804])
def test_cd803_cd804_healthy_h200(h200, check):
    # torch pins nvidia-cudnn-cu13==9.19.0.56 / nvidia-nccl-cu13==2.28.9 and loads exactly those wheels.
    assert run(check(), h200, rt(None, framework("torch-healthy-h200.txt", "torch"))).status is Status.OK


def test_cd803_system_cudnn_loaded_instead_of_the_pinned_wheel(h200):
    base = framework("torch-healthy-h200.txt", "torch")
    fw = replace(
        base, cudnn=V("9.14.0"), libraries=_swap(base, "cudnn", _lib("cudnn", SYSTEM_CUDNN, "9.14.0", "system"))
    )
    facts = with_env(h200, LD_LIBRARY_PATH="/lib/x86_64-linux-gnu:/usr/local/nvidia/lib64:/usr/local/nvidia/lib")
    finding = run(CD803(), facts, rt(None, fw))
    assert finding.status is Status.WARN
    assert finding.message == (
        f"torch 2.11.0+cu130 loaded cuDNN from {SYSTEM_CUDNN} (system 9.14.0), not the nvidia-cudnn-cu13 9.19.0.56 "
        "wheel it pins (torch pins nvidia-cudnn-cu13==9.19.0.56)"
    )
    assert finding.evidence["torch pins nvidia-cudnn-cu13==9.19.0.56"] == f"installed at {SITE}/nvidia/cudnn/lib"
    assert finding.remediation.commands == ("export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/nvidia/lib",)


def test_cd803_pinned_copy_without_library_files_is_not_judged_by_place(h200):
    cudnn = tuple(replace(c, lib_paths=()) if c.origin == "pip" else c for c in h200.cudnn)
    assert run(CD803(), replace(h200, cudnn=cudnn), rt(None, framework("torch-healthy-h200.txt", "torch"))).status is (
        Status.OK
    )


def test_cd803_cudnn_older_than_the_build_fails(h200):
    base = framework("torch-healthy-h200.txt", "torch")
    fw = replace(
        base,
        cudnn=V("9.14.0"),
        cudnn_build=V("9.19.0"),
        libraries=_swap(base, "cudnn", _lib("cudnn", SYSTEM_CUDNN, "9.14.0", "system")),
    )
    finding = run(CD803(), h200, rt(None, fw))
    assert finding.status is Status.FAIL
    assert "torch 2.11.0+cu130 was built against cuDNN 9.19.0 but loaded cuDNN 9.14.0" in finding.message


def test_cd803_pinned_copy_but_another_version(h200):
    finding = run(CD803(), h200, rt(None, _torch_with(cudnn=V("9.18.0"))))
    assert finding.status is Status.WARN
    assert "loaded cuDNN 9.18.0, but torch pins nvidia-cudnn-cu13==9.19.0.56" in finding.message
    assert finding.remediation.commands == ("python -m pip install 'nvidia-cudnn-cu13==9.19.0.56'",)


def test_cd803_two_copies_in_one_process(h200):
    base = framework("torch-healthy-h200.txt", "torch")
    fw = replace(base, libraries=(*base.libraries, _lib("cudnn", SYSTEM_CUDNN, "9.14.0", "system")))
    finding = run(CD803(), h200, rt(None, fw))
    assert "torch 2.11.0+cu130 mapped 2 copies of cuDNN in one process" in finding.message


def test_cd804_system_nccl_loaded(h200):
    base = framework("torch-healthy-h200.txt", "torch")
    fw = replace(base, nccl=V("2.28.3"), libraries=_swap(base, "nccl", _lib("nccl", SYSTEM_NCCL, "2.28.3", "system")))
    finding = run(CD804(), h200, rt(None, fw))
    assert finding.status is Status.WARN
    assert f"loaded NCCL from {SYSTEM_NCCL} (system 2.28.3), not the nvidia-nccl-cu13 2.28.9 wheel" in finding.message


def test_cd803_skip_without_frameworks(h200):
    assert run(CD803(), h200, rt(driver("driver-healthy-h200.txt"))).status is Status.NOT_APPLICABLE


# --- CD805 architectures --------------------------------------------------------------------------


def test_cd805_healthy_h200(h200):
    assert run(CD805(), h200, rt(None, framework("torch-healthy-h200.txt", "torch"))).status is Status.OK


def test_cd805_no_code_for_a_pascal_gpu(h200):
    fw = _torch_with(devices=(RuntimeDevice(0, "Tesla P100-PCIE-16GB", "6.0"),))
    finding = run(CD805(), h200, rt(None, fw))
    assert finding.status is Status.FAIL
    assert "carries no code for GPU 0 Tesla P100-PCIE-16GB (compute capability 6.0)" in finding.message


def test_cd805_ptx_only_warns(h200):
    fw = _torch_with(arch_list=("sm_80", "compute_80"), devices=(RuntimeDevice(0, "NVIDIA H200", "9.0"),))
    finding = run(CD805(), h200, rt(None, fw))
    assert finding.status is Status.WARN and "only PTX" in finding.message


@pytest.mark.parametrize(
    ("entry", "cc", "expected"),
    [
        ("sm_90", "9.0", "native"),
        ("sm_80", "8.6", "native"),
        ("sm_86", "8.0", None),
        ("sm_90a", "9.0", "native"),
        ("sm_90a", "10.0", None),
        ("sm_100f", "10.3", "native"),
        ("sm_120", "9.0", None),
        ("compute_80", "9.0", "ptx"),
        ("compute_90", "8.6", None),
        ("junk", "9.0", None),
        ("sm_90", "junk", None),
    ],
)
def test_arch_runs_on(entry, cc, expected):
    families = {a.compute_capability: a.family_runs_on for a in CompatMatrix().gpu_archs.values()}
    assert arch_runs_on(entry, cc, families) == expected


@pytest.mark.parametrize(
    ("symbol", "owner"),
    [
        ("_ZN3c104cuda9SetDeviceEi", "torch"),
        ("_ZNK2at10TensorBase8data_ptrIfEEPT_v", "torch"),
        ("cudnnGetVersion", "cuDNN"),
        ("ncclCommInitRankConfig", "NCCL"),
        ("_ZN5boost6detail3fooEv", None),
        ("memcpy", None),
    ],
)
def test_symbol_owner(symbol, owner):
    assert symbol_owner(symbol) == owner


def test_checks_are_well_formed():
    for check in (CD801, CD802, CD803, CD804, CD805):
        assert check.validate() == []


def test_visible_devices_default_is_harmless(h200):
    facts = replace(h200, visible=VisibleDevices())
    assert run(CD801(), facts, rt(driver("driver-healthy-h200.txt"))).status is Status.OK
