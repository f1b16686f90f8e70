"""Tests for cudadoctor.probes.runtime: the child protocol, its parsers, and the probe over FakeRunner.

The children's outputs are replayed from tests/fixtures/runtime/ (values observed on the real H200,
tests/fixtures/h200-deep/ and tests/fixtures/h200-device/). Two tests run the child programs for real with
this interpreter, outside pyfakefs: the driver-API child on this GPU-less machine, and the framework child against a
fake ``torch`` package.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from dataclasses import replace

import pytest
from packaging.version import Version

from cudadoctor.facts import codec, model
from cudadoctor.facts.codec import facts_from_json
from cudadoctor.facts.model import SourceKind
from cudadoctor.facts.runtime import DriverApiResult, FrameworkRuntime, LoadedLibrary, RuntimeDevice, RuntimeInfo
from cudadoctor.probes import runtime
from cudadoctor.probes.collect import collect_facts
from cudadoctor.probes.registry import probe_function, probed
from cudadoctor.probes.runtime import (
    DRIVER_CHILD,
    FRAMEWORK_CHILD,
    MARKER,
    STAGE_MARKER,
    decode_cudnn_version,
    decode_nccl_version,
    driver_argv,
    framework_argv,
    installed_frameworks,
    loaded_libraries,
    parse_driver_output,
    parse_framework_output,
    parse_marked_json,
    parse_undefined_symbol,
    probe_runtime,
)
from cudadoctor.runner import SubprocessRunner
from tests.conftest import FakeRunner, fixture_text, make_ctx

V = Version
H200 = facts_from_json(fixture_text("h200-device", "snapshot.json"))
PY = "/opt/torch/.venv/bin/python3"
SITE = "/opt/torch/.venv/lib/python3.12/site-packages"
SITES = ("/tmp/cd", SITE)  # the capture's site_paths: PYTHONPATH, then the venv
HOST = "/usr/local/nvidia/lib64/libcuda.so.580.159.04"
COMPAT = "/usr/local/cuda-13.0/compat/libcuda.so.580.95.05"
DRIVER_ARGV = (PY, "-I", DRIVER_CHILD)
TORCH_ARGV = (PY, "-I", FRAMEWORK_CHILD, "torch", f"/tmp/cd{os.pathsep}{SITE}")


def out(name: str) -> str:
    return fixture_text("runtime", name)


def _ctx(runner: FakeRunner, packages=None, **kwargs):
    """A live context whose target interpreter and packages are the H200 capture's (seeded caches)."""
    ctx = make_ctx(runner=runner, **kwargs)
    ctx._cache["python.env"] = H200.python
    ctx._cache["python.packages"] = H200.packages if packages is None else packages
    return ctx


def _torch_only() -> dict:
    return {"torch": H200.packages["torch"]}


# --- the protocol ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "garbage\n",
        '{"probe": "driver"}\n',
        f"{MARKER}\n",
        f'{MARKER}{{"probe": "driver", "init_rc"\n',
        f"{MARKER}[1, 2]\n",
        f"{MARKER}\x00\x7fELF\ufffd\n",
    ],
    ids=["empty", "garbage", "json-without-marker", "marker-only", "truncated", "not-an-object", "binary"],
)
def test_parse_marked_json_junk(text):
    assert parse_marked_json(text) is None


def test_parse_marked_json_skips_noise_and_takes_the_last_line():
    text = f'banner\n{MARKER}{{"a": 1}}\nmore noise {MARKER}{{"a": 2}} [C++ log on the same line]\n'
    assert parse_marked_json(text) == {"a": 2}


@pytest.mark.parametrize(
    ("value", "expected"),
    [(91900, V("9.19.0")), (91400, V("9.14.0")), (8907, V("8.9.7")), ([9, 19, 0], V("9.19.0")), (0, None),
     (None, None), ("junk", None), (True, None)],
    ids=["cudnn9", "cudnn9.14", "cudnn8", "list", "zero", "none", "junk", "bool"],
)  # fmt: skip
def test_decode_cudnn_version(value, expected):
    assert decode_cudnn_version(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [([2, 28, 9], V("2.28.9")), (22809, V("2.28.9")), (2708, V("2.7.8")), (0, None), ([], None), ([2, -1], None)],
    ids=["torch-tuple", "code", "old-code", "zero", "empty", "negative"],
)
def test_decode_nccl_version(value, expected):
    assert decode_nccl_version(value) == expected


def test_loaded_libraries_keeps_cuda_libraries_once_with_their_origin():
    paths = [
        "/usr/lib/x86_64-linux-gnu/libc.so.6",
        f"{SITE}/torch/lib/libtorch_cuda.so",
        f"{SITE}/nvidia/cu13/lib/libcudart.so.13",
        f"{SITE}/nvidia/cudnn/lib/libcudnn.so.9",
        f"{SITE}/nvidia/cudnn/lib/libcudnn_graph.so.9",
        f"{SITE}/nvidia/cudnn/lib/libcudnn.so.9",
        f"{SITE}/nvidia/nccl/lib/libnccl.so.2",
        HOST,
        COMPAT,
        "/usr/local/nvidia/lib64/libcudadebugger.so.580.159.04",
        "/usr/local/cuda-13.0/targets/x86_64-linux/lib/stubs/libcuda.so",
        "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libnvJitLink.so.13",
        "/opt/conda/lib/libcublasLt.so.12",
        "relative/libcuda.so.1",
    ]
    found = loaded_libraries(paths)
    assert [(lib.name, lib.suffix, lib.origin) for lib in found] == [
        ("cudart", "13", "pip"),
        ("cudnn", "9", "pip"),
        ("cudnn_graph", "9", "pip"),
        ("nccl", "2", "pip"),
        ("cuda", "580.159.04", "system"),
        ("cuda", "580.95.05", "compat"),
        ("cuda", "", "stub"),
        ("nvJitLink", "13", "toolkit"),
        ("cublasLt", "12", "conda"),
    ]


# --- the driver-API child's output ----------------------------------------------------------------


def test_parse_driver_healthy_h200():
    result = parse_driver_output(out("driver-healthy-h200.txt"), "probe")
    assert result is not None
    assert (result.version_rc, result.cuda_api, result.init_rc, result.device_count) == (0, V("13.0"), 0, 1)
    assert result.devices == (RuntimeDevice(0, "NVIDIA H200", "9.0"),)
    assert result.libcuda_path == HOST
    assert [lib.path for lib in result.libraries] == [HOST]
    assert "nvidia-uvm" in result.device_nodes
    assert result.source.kind is SourceKind.RUNTIME and result.error is None


def test_parse_driver_s1_compat_first():
    # tests/fixtures/h200-deep/deep-s1.json: cuDriverGetVersion answers 13000 from the compat library, cuInit 803.
    result = parse_driver_output(out("driver-s1-compat-first.txt"))
    assert result is not None
    assert (result.version_rc, result.cuda_api) == (0, V("13.0"))
    assert (result.init_rc, result.init_error_name) == (803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH")
    assert result.init_error_string == "system has unsupported display driver / cuda driver combination"
    assert result.libcuda_path == COMPAT
    assert result.libraries[0].origin == "compat"
    assert result.devices == () and result.device_count is None


def test_parse_driver_s2_stub():
    # S2: the stub answers 34 to cuDriverGetVersion (version 0) and to cuInit.
    result = parse_driver_output(out("driver-s2-stub.txt"))
    assert result is not None
    assert (result.version_rc, result.cuda_api, result.init_rc) == (34, None, 34)
    assert result.init_error_name is None
    assert result.libcuda_path == "/tmp/stub/libcuda.so.1"


def test_parse_driver_s3_no_visible_devices():
    result = parse_driver_output(out("driver-s3-no-visible-devices.txt"))
    assert result is not None
    assert (result.init_rc, result.init_error_name) == (100, "CUDA_ERROR_NO_DEVICE")
    assert result.libcuda_path == HOST


def test_parse_driver_without_libcuda():
    result = parse_driver_output(out("driver-no-libcuda.txt"))
    assert result is not None
    assert result.load_error == "libcuda.so.1: cannot open shared object file: No such file or directory"
    assert (result.libcuda_path, result.version_rc, result.init_rc) == (None, None, None)


def test_parse_driver_child_that_raised():
    line = MARKER + json.dumps({"probe": "driver", "version_rc": 0, "version": 13000, "init_rc": 0,
                                "error": "AttributeError: cuDeviceGetName"})  # fmt: skip
    result = parse_driver_output(line)
    assert result is not None and result.init_rc == 0
    assert (result.error, result.error_kind) == ("raised AttributeError: cuDeviceGetName", "crash")


def test_parse_driver_rejects_a_framework_result():
    assert parse_driver_output(out("torch-healthy-h200.txt")) is None


# --- a framework child's output -------------------------------------------------------------------


def test_parse_torch_healthy_h200():
    # tests/fixtures/h200-device/truth.txt
    result = parse_framework_output(out("torch-healthy-h200.txt"), "torch", "torch")
    assert result is not None
    assert (result.imported, result.gpu_op, result.gpu_build) == (True, True, True)
    assert result.version == V("2.11.0+cu130")
    assert (result.cuda_runtime, result.cudnn, result.nccl) == (V("13.0"), V("9.19.0"), V("2.28.9"))
    assert result.arch_list == ("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120")
    assert result.devices == (RuntimeDevice(0, "NVIDIA H200", "9.0"),)
    assert [lib.path for lib in result.libraries] == [
        f"{SITE}/nvidia/cu13/lib/libcudart.so.13",
        f"{SITE}/nvidia/cudnn/lib/libcudnn.so.9",
        f"{SITE}/nvidia/nccl/lib/libnccl.so.2",
        HOST,
    ]
    assert result.error is None and result.error_kind is None
    assert result.source.kind is SourceKind.RUNTIME


def test_parse_torch_s1_gpu_operation_fails():
    result = parse_framework_output(out("torch-s1-compat-first.txt"), "torch", "torch")
    assert result is not None
    assert (result.imported, result.gpu_op, result.error_kind) == (True, False, "gpu")
    assert "Error 803: system has unsupported display driver" in (result.error or "")
    assert "Error 803" in result.warnings[0]
    assert COMPAT in [lib.path for lib in result.libraries]


def test_parse_vllm_undefined_symbol():
    result = parse_framework_output(out("vllm-undefined-symbol.txt"), "vllm", "vllm")
    assert result is not None
    assert (result.module, result.imported, result.error_kind) == ("vllm._C", False, "import")
    assert result.undefined_symbol == "_ZN3c104cuda9SetDeviceEi"
    assert result.reported == {"torch": "2.8.0+cu128"}


def test_parse_framework_wrong_framework_or_driver_result():
    assert parse_framework_output(out("torch-healthy-h200.txt"), "jax", "jax") is None
    assert parse_framework_output(out("driver-healthy-h200.txt"), "torch", "torch") is None


@pytest.mark.parametrize(
    ("error", "symbol"),
    [
        ("ImportError: /v/vllm/_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi", "_ZN3c104cuda9SetDeviceEi"),
        ("OSError: /v/libx.so: undefined symbol: cudnnGetVersion, version libcudnn.so.9", "cudnnGetVersion"),
        ("ImportError: libcudart.so.12: cannot open shared object file: No such file or directory", None),
        ("", None),
    ],
    ids=["mangled", "c-symbol", "missing-library", "empty"],
)
def test_parse_undefined_symbol(error, symbol):
    assert parse_undefined_symbol(error) == symbol


def test_missing_library_is_recorded():
    line = MARKER + json.dumps({
        "probe": "framework", "framework": "flash-attn", "imported": False, "error_kind": "import",
        "error": "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory",
    })  # fmt: skip
    result = parse_framework_output(line, "flash-attn", "flash-attn")
    assert result is not None and result.missing_library == "libcudart.so.12"


# --- which frameworks -----------------------------------------------------------------------------


def test_installed_frameworks_on_the_h200():
    # torch, JAX with jax-cuda13-plugin, and cupy-cuda13x are installed there.
    assert installed_frameworks(H200.packages) == [("torch", "torch"), ("jax", "jax"), ("cupy", "cupy-cuda13x")]


def test_installed_frameworks_cpu_jax_and_tensorrt_names():
    pkgs = dict(H200.packages)
    for name in ("jax-cuda13-plugin", "jax-cuda13-pjrt", "torch", "cupy-cuda13x"):
        pkgs.pop(name)
    base = H200.packages["torch"]
    pkgs["tensorrt-llm"] = replace(base, name="tensorrt-llm")
    assert installed_frameworks(pkgs) == []
    pkgs["tensorrt-cu12"] = replace(base, name="tensorrt-cu12")
    pkgs["flash-attn"] = replace(base, name="flash-attn")
    assert installed_frameworks(pkgs) == [("tensorrt", "tensorrt-cu12"), ("flash-attn", "flash-attn")]


# --- the probe over FakeRunner --------------------------------------------------------------------


def test_argv():
    assert driver_argv(PY) == list(DRIVER_ARGV)
    assert framework_argv(PY, "torch", SITES) == list(TORCH_ARGV)
    assert framework_argv(PY, "torch") == [PY, "-I", FRAMEWORK_CHILD, "torch"]


def test_probe_runtime_healthy_h200():
    runner = FakeRunner()
    runner.add(DRIVER_ARGV, out("driver-healthy-h200.txt"))
    runner.add(TORCH_ARGV, out("torch-healthy-h200.txt"), stderr=f"{STAGE_MARKER}import\n")
    info = probe_runtime(_ctx(runner, _torch_only()))
    assert sorted(runner.calls) == sorted([DRIVER_ARGV, TORCH_ARGV])
    assert runner.timeouts == [30.0, 30.0]
    assert info is not None and (info.python, info.timeout) == (PY, 30.0)
    assert info.driver is not None and info.driver.init_rc == 0 and info.driver.seconds is not None
    (torch,) = info.frameworks
    assert (torch.framework, torch.distribution, torch.gpu_op, torch.cudnn) == ("torch", "torch", True, V("9.19.0"))
    assert torch.stderr_tail is None  # kept only when the child failed
    assert torch.source.where == f"{PY} -I <import torch and run one GPU operation>"


def test_probe_runtime_tries_every_installed_framework_with_the_timeout_given():
    runner = FakeRunner()
    info = probe_runtime(_ctx(runner), timeout=5.0)
    expected = {DRIVER_ARGV} | {(*TORCH_ARGV[:3], fw, TORCH_ARGV[4]) for fw in ("torch", "jax", "cupy")}
    assert set(runner.calls) == expected and len(runner.calls) == 4
    assert runner.timeouts == [5.0] * 4
    assert info is not None and [f.framework for f in info.frameworks] == ["torch", "jax", "cupy"]
    # FakeRunner answers unknown commands with "not found": recorded, not raised
    assert {f.error_kind for f in info.frameworks} == {"not-run"}
    assert info.driver is not None and info.driver.error == "not found"


def test_child_timeout():
    runner = FakeRunner()
    runner.add(DRIVER_ARGV, error="timed out after 30 s")
    runner.add(TORCH_ARGV, error="timed out after 30 s")
    info = probe_runtime(_ctx(runner, _torch_only()))
    assert info is not None and info.driver is not None
    assert (info.driver.error_kind, info.driver.error) == ("timeout", "timed out after 30 s")
    assert (info.frameworks[0].error_kind, info.frameworks[0].error) == ("timeout", "timed out after 30 s")


def test_child_segfault_says_where():
    stderr = (
        f"{STAGE_MARKER}import\n{STAGE_MARKER}versions\n{STAGE_MARKER}gpu\n"
        "Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f (most recent call first):\n"
        '  File "<string>", line 61 in torch_op\n'
    )
    runner = FakeRunner()
    runner.add(DRIVER_ARGV, out("driver-healthy-h200.txt"))
    runner.add(TORCH_ARGV, "", returncode=-11, stderr=stderr)
    info = probe_runtime(_ctx(runner, _torch_only()))
    assert info is not None
    (torch,) = info.frameworks
    assert (torch.error_kind, torch.error) == ("crash", "crashed with SIGSEGV during gpu")
    assert torch.stderr_tail is not None and "Segmentation fault" in torch.stderr_tail
    assert STAGE_MARKER not in torch.stderr_tail


def test_a_result_printed_before_a_crash_at_exit_is_kept():
    runner = FakeRunner()
    runner.add(DRIVER_ARGV, out("driver-healthy-h200.txt"), returncode=-11)
    runner.add(TORCH_ARGV, out("torch-healthy-h200.txt"), returncode=-6)
    info = probe_runtime(_ctx(runner, _torch_only()))
    assert info is not None and info.driver is not None
    assert info.driver.error is None and info.driver.init_rc == 0
    assert info.frameworks[0].error is None and info.frameworks[0].gpu_op is True


@pytest.mark.parametrize(
    ("stdout", "returncode", "stderr", "kind", "message"),
    [
        ("garbage\nmore garbage\n", 0, "", "no-output", "printed no result"),
        ('{"probe": "framework", "framework": "torch"}\n', 0, "", "no-output", "printed no result"),
        ("", 1, f"{STAGE_MARKER}import\nTraceback …\nSystemExit: 1\n", "crash",
         "exited with status 1 during import and printed no result"),
        ("", -9, "", "crash", "crashed with SIGKILL"),
    ],
    ids=["garbage", "missing-marker", "exit-status", "killed"],
)  # fmt: skip
def test_child_without_a_result(stdout, returncode, stderr, kind, message):
    runner = FakeRunner()
    runner.add(DRIVER_ARGV, stdout, returncode=returncode, stderr=stderr)
    runner.add(TORCH_ARGV, stdout, returncode=returncode, stderr=stderr)
    info = probe_runtime(_ctx(runner, _torch_only()))
    assert info is not None and info.driver is not None
    assert (info.driver.error_kind, info.driver.error) == (kind, message)
    assert (info.frameworks[0].error_kind, info.frameworks[0].error) == (kind, message)


def test_failed_framework_keeps_its_stderr_tail():
    runner = FakeRunner()
    runner.add(DRIVER_ARGV, out("driver-s1-compat-first.txt"))
    runner.add(TORCH_ARGV, out("torch-s1-compat-first.txt"), stderr=f"{STAGE_MARKER}gpu\nUserWarning: CUDA init\n")
    info = probe_runtime(_ctx(runner, _torch_only()))
    assert info is not None and info.frameworks[0].stderr_tail == "UserWarning: CUDA init"


def test_nothing_runs_for_an_image_root(tmp_path):
    runner = FakeRunner()
    ctx = make_ctx(root=str(tmp_path), runner=runner)
    assert probe_runtime(ctx) is None
    assert runner.calls == []
    assert [e.probe for e in ctx.errors] == ["runtime"]


def test_fast_path_runs_no_runtime_child():
    """Without --deep nothing imports a framework: the runtime probe is not among the collected probes."""
    assert all(probe_function(spec).__name__ != "probe_runtime" for spec in probed().values())
    runner = FakeRunner()
    collect_facts(make_ctx(runner=runner))
    assert not [c for c in runner.calls if DRIVER_CHILD in c or FRAMEWORK_CHILD in c]


def test_runtime_facts_round_trip_through_the_codec(monkeypatch):
    """Once the model imports the runtime classes (the lead's wiring), the generic codec reads them back."""
    for cls in (DriverApiResult, FrameworkRuntime, LoadedLibrary, RuntimeDevice, RuntimeInfo):
        monkeypatch.setattr(model, cls.__name__, cls, raising=False)
    runner = FakeRunner()
    runner.add(DRIVER_ARGV, out("driver-s1-compat-first.txt"))
    runner.add(TORCH_ARGV, out("torch-healthy-h200.txt"))
    info = probe_runtime(_ctx(runner, _torch_only()))
    data = json.loads(json.dumps(codec.encode(info)))
    assert data["driver"]["source"] == {"kind": "runtime", "where": f"{PY} -I <driver-API probe>"}
    assert codec.decode(RuntimeInfo, data, "runtime") == info


def test_no_uuid_is_kept():
    text = out("torch-healthy-h200.txt").replace('"cc": "9.0"}', '"cc": "9.0", "uuid": "GPU-0123"}')
    result = parse_framework_output(text, "torch", "torch")
    assert result is not None and "GPU-0123" not in repr(result)


# --- the child programs, run for real -------------------------------------------------------------


def test_driver_script_runs_here_and_reports_cleanly():
    """On this machine (no GPU) the child must say libcuda cannot be loaded, not crash."""
    result = SubprocessRunner().run(driver_argv(sys.executable), timeout=60)
    assert result.returncode == 0, result.stderr
    parsed = parse_driver_output(result.stdout)
    assert parsed is not None
    if parsed.load_error is None:  # a machine with a driver: cuInit answered something
        assert parsed.libcuda_path and isinstance(parsed.init_rc, int)
    else:
        assert "libcuda.so.1" in parsed.load_error
        assert parsed.libcuda_path is None and parsed.libraries == ()
    assert f"{STAGE_MARKER}load" in result.stderr


FAKE_TORCH = textwrap.dedent(
    """
    import warnings
    warnings.warn("unrelated chatter")
    warnings.warn("old api", DeprecationWarning)
    warnings.warn("CUDA initialization: fake warning, Error 803: system has unsupported display driver")
    __version__ = "2.11.0+cu130"

    class version:
        cuda = "13.0"

    class _T:
        def __init__(self, values):
            self.values = values
        def __mul__(self, k):
            return _T([v * k for v in self.values])
        def sum(self):
            return _T([sum(self.values)])
        def __float__(self):
            return float(self.values[0])

    def ones(n, device=None):
        return _T([1.0] * n)

    class _Cudnn:
        @staticmethod
        def version():
            return 91900

    class backends:
        cudnn = _Cudnn

    class _C:
        class _cudnn:
            @staticmethod
            def getCompileVersion():
                return (9, 19, 0)

    class _Nccl:
        @staticmethod
        def version():
            return (2, 28, 9)

    class cuda:
        nccl = _Nccl
        @staticmethod
        def get_arch_list():
            return ["sm_90"]
        @staticmethod
        def synchronize():
            pass
        @staticmethod
        def device_count():
            return 1
        @staticmethod
        def get_device_name(i):
            return "Fake GPU"
        @staticmethod
        def get_device_capability(i):
            return (9, 0)
    """
)


def test_framework_script_runs_against_a_fake_torch(tmp_path):
    site = tmp_path / "site-packages"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text(FAKE_TORCH)
    argv = framework_argv(sys.executable, "torch", (str(site),))
    result = SubprocessRunner().run(argv, timeout=60)
    assert result.returncode == 0, result.stderr
    parsed = parse_framework_output(result.stdout, "torch", "torch")
    assert parsed is not None, result.stdout + result.stderr
    assert (parsed.imported, parsed.gpu_op, parsed.gpu_build, parsed.error) == (True, True, True, None)
    assert (parsed.version, parsed.cudnn, parsed.cudnn_build, parsed.nccl) == (
        V("2.11.0+cu130"), V("9.19.0"), V("9.19.0"), V("2.28.9"),
    )  # fmt: skip
    assert parsed.arch_list == ("sm_90",)
    assert parsed.devices == (RuntimeDevice(0, "Fake GPU", "9.0"),)
    # deprecations dropped, the CUDA one first
    assert parsed.warnings == (
        "CUDA initialization: fake warning, Error 803: system has unsupported display driver",
        "unrelated chatter",
    )


def test_framework_script_reports_an_undefined_symbol(tmp_path):
    site = tmp_path / "site-packages"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text(
        f"raise ImportError('{site}/torch/_C.so: undefined symbol: _ZN3c104cuda9SetDeviceEi')\n"
    )
    result = SubprocessRunner().run(framework_argv(sys.executable, "torch", (str(site),)), timeout=60)
    parsed = parse_framework_output(result.stdout, "torch", "torch")
    assert parsed is not None, result.stdout + result.stderr
    assert (parsed.imported, parsed.error_kind, parsed.undefined_symbol) == (
        False,
        "import",
        "_ZN3c104cuda9SetDeviceEi",
    )


def test_module_has_no_framework_import():
    """The parent module never imports a framework (the children do, in their own processes)."""
    with open(runtime.__file__, encoding="utf-8") as handle:
        source = handle.read()
    code_lines = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert not [line for line in code_lines if any(f in line for f in ("torch", "jax", "cupy", "vllm", "tensorrt"))]
