"""CD307 (a linked CUDA library only in a pip wheel off the object's search path) and the symptom CD302 names for
an older CUDA-numbered copy, on the real H200 snapshot changed one fact at a time."""

from __future__ import annotations

from dataclasses import replace

import pytest
from packaging.version import Version

from cudadoctor.checks.byname import older_copy_symptom
from cudadoctor.checks.findings import Status
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import InstalledPackage, LinkedFile, LoaderView, NeededLibrary, Source, SourceKind
from cudadoctor.testing import run_check

SITE = "/opt/venv/lib/python3.12/site-packages"
PROVIDER = f"{SITE}/onnxruntime/capi/libonnxruntime_providers_cuda.so"
OFF = "wheel, off this object's search path"


def _wheel(folder: str, soname: str, dist: str, version: str, via: str = OFF) -> LinkedFile:
    return LinkedFile(f"{SITE}/nvidia/{folder}/lib/{soname}", via, Version(version), dist)


def _ort_need(soname: str, loaded: LinkedFile | None, shadowed: tuple[LinkedFile, ...] = ()) -> NeededLibrary:
    return NeededLibrary("onnxruntime-gpu", PROVIDER, soname, loaded, shadowed)


def _ort(version: str) -> InstalledPackage:
    return InstalledPackage("onnxruntime-gpu", Version(version), SITE, Source(SourceKind.METADATA, SITE))


CUDNN = _wheel("cudnn", "libcudnn.so.9", "nvidia-cudnn-cu12", "9.1.0.70")
NVRTC = _wheel("cuda_nvrtc", "libnvrtc.so.12", "nvidia-cuda-nvrtc-cu12", "12.4.127")


def _with(h200, view: LoaderView, ort: str = "1.20.0"):  # type: ignore[no-untyped-def]
    return replace(h200, loader=view, packages={**h200.packages, "onnxruntime-gpu": _ort(ort)})


def test_cd307_provider_libraries_only_in_wheels_off_its_path_are_an_error(h200):
    view = LoaderView(needs=(_ort_need("libcudnn.so.9", CUDNN), _ort_need("libnvrtc.so.12", NVRTC)), cache="test")
    finding = run_check("CD307", _with(h200, view))
    assert finding.status is Status.FAIL
    assert "libcudnn.so.9: cannot open shared object file" in finding.message
    assert finding.remediation is not None
    assert finding.remediation.commands == (
        f"export LD_LIBRARY_PATH={SITE}/nvidia/cuda_nvrtc/lib:{SITE}/nvidia/cudnn/lib:$LD_LIBRARY_PATH",
    )
    assert "preload_dlls" not in finding.remediation.text  # 1.20.0 has no preload_dlls()


def test_cd307_names_onnxruntime_preload_dlls_from_the_release_that_has_it(h200):
    view = LoaderView(needs=(_ort_need("libcudnn.so.9", CUDNN),), cache="test")
    finding = run_check("CD307", _with(h200, view, "1.21.0"))
    assert finding.remediation is not None and "onnxruntime.preload_dlls()" in finding.remediation.text


def test_cd307_a_copy_torch_loads_first_is_a_warning(h200):
    torch_copy = replace(CUDNN, via="RPATH")
    torch_need = NeededLibrary("torch", f"{SITE}/torch/lib/libtorch_cuda.so", "libcudnn.so.9", torch_copy, ())
    view = LoaderView(needs=(torch_need, _ort_need("libcudnn.so.9", CUDNN)), cache="test")
    finding = run_check("CD307", _with(h200, view))
    assert finding.status is Status.WARN
    assert "import it before this one" in finding.message


def test_cd307_torch_loading_cudnn_does_not_load_its_sub_libraries(h200):
    """ld.so reuses a loaded soname, not a directory: torch's libcudnn.so.9 leaves libcudnn_adv.so.9 unloaded."""
    torch_need = NeededLibrary(
        "torch", f"{SITE}/torch/lib/libtorch_cuda.so", "libcudnn.so.9", replace(CUDNN, via="RPATH"), ()
    )
    adv = _wheel("cudnn", "libcudnn_adv.so.9", "nvidia-cudnn-cu12", "9.1.0.70")
    view = LoaderView(needs=(torch_need, _ort_need("libcudnn_adv.so.9", adv)), cache="test")
    finding = run_check("CD307", _with(h200, view))
    assert finding.status is Status.FAIL
    assert "nothing installed loads libcudnn_adv.so.9 first" in finding.message


def test_cd307_a_copy_on_the_search_path_is_fine(h200):
    system = LinkedFile("/usr/lib/x86_64-linux-gnu/libcudnn.so.9", "ld.so.cache", Version("9.1.0"))
    view = LoaderView(needs=(_ort_need("libcudnn.so.9", system, (CUDNN,)),), cache="test")
    assert run_check("CD307", _with(h200, view)).status is Status.OK


def test_cd307_leaves_the_nvidia_wheels_own_needs_to_the_frameworks_that_load_them(h200):
    jit = _wheel("nvjitlink", "libnvJitLink.so.12", "nvidia-nvjitlink-cu12", "12.4.127")
    need = NeededLibrary("nvidia-cusolver-cu12", f"{SITE}/nvidia/cusolver/lib/libcusolver.so.11",
                         "libnvJitLink.so.12", jit, ())  # fmt: skip
    assert run_check("CD307", _with(h200, LoaderView(needs=(need,), cache="test"))).status is Status.OK


def test_cd307_could_not_judge_when_an_object_was_not_read(h200):
    view = LoaderView(cache="test", unread=(f"{SITE}/x.so: not read: truncated",), unread_total=1)
    finding = run_check("CD307", _with(h200, view))
    assert finding.status is Status.UNKNOWN and "x.so" in finding.reason


def test_cd307_not_applicable_without_cuda_needs(h200):
    assert run_check("CD307", _with(h200, LoaderView(cache="test"))).status is Status.NOT_APPLICABLE


def test_preload_calls_are_read_from_the_data():
    matrix = CompatMatrix()
    rows = matrix.preload_calls_for("onnxruntime-gpu", Version("1.22.0"))
    assert [r.call for r in rows] == ["onnxruntime.preload_dlls()"]
    assert "cudnn/lib/libcudnn.so.9" in rows[0].libraries
    assert matrix.preload_calls_for("onnxruntime-gpu", Version("1.20.1")) == ()
    # torch's preloads run by themselves: none is a call for the user to make
    assert matrix.preload_calls_for("torch", Version("2.11.0")) == ()


@pytest.mark.parametrize(
    ("soname", "loaded", "expected"),
    [
        ("libnvJitLink.so.12", "12.0.146", "__nvJitLink…_12_N, version libnvJitLink.so.12' for an N above 0"),
        ("libcublasLt.so.12", "12.1.3.1", "version libcublasLt.so.12' for what CUDA after 12.1 added"),
        ("libcudnn.so.9", "9.1.0", None),
        ("libnccl.so.2", "2.18.1", None),
        ("libnvJitLink.so.12", None, None),
    ],
)
def test_older_copy_symptom(soname, loaded, expected):
    found = older_copy_symptom(soname, Version(loaded) if loaded else None)
    assert (found is None) if expected is None else (expected in (found or ""))


def test_cd302_names_the_undefined_symbol_of_an_older_nvjitlink(h200):
    loaded = LinkedFile("/usr/local/cuda-12.0/lib64/libnvJitLink.so.12.0.146", "LD_LIBRARY_PATH", Version("12.0.146"))
    wheel = _wheel("nvjitlink", "libnvJitLink.so.12", "nvidia-nvjitlink-cu12", "12.2.140", "RUNPATH")
    need = NeededLibrary("nvidia-cusparse-cu12", f"{SITE}/nvidia/cusparse/lib/libcusparse.so.12",
                         "libnvJitLink.so.12", loaded, (wheel,))  # fmt: skip
    finding = run_check("CD302", replace(h200, loader=LoaderView(needs=(need,), cache="test")))
    assert finding.status is Status.FAIL
    assert "undefined symbol: __nvJitLink…_12_N, version libnvJitLink.so.12' for an N above 0" in finding.message


def test_cd302_could_not_judge_a_copy_without_a_version_ahead_of_a_wheel(h200):
    """A copied libnvJitLink.so.12 (no version in its name or link) ahead of the wheel: older or not is unknown."""
    loaded = LinkedFile("/opt/tools/lib/libnvJitLink.so.12", "LD_LIBRARY_PATH", None)
    wheel = _wheel("nvjitlink", "libnvJitLink.so.12", "nvidia-nvjitlink-cu12", "12.4.127", "RUNPATH")
    need = NeededLibrary("nvidia-cusparse-cu12", f"{SITE}/nvidia/cusparse/lib/libcusparse.so.12",
                         "libnvJitLink.so.12", loaded, (wheel,))  # fmt: skip
    finding = run_check("CD302", replace(h200, loader=LoaderView(needs=(need,), cache="test")))
    assert finding.status is Status.UNKNOWN
    assert "/opt/tools/lib/libnvJitLink.so.12" in finding.reason and "nvidia-nvjitlink-cu12 12.4.127" in finding.reason


def _replay_tf(version: str, cudnn: str, ld_library_path: str | None) -> dict[str, str]:
    """CD304's status and fix for a replayed TensorFlow with its pip cuDNN (tests/corpus/builder.py lays the wheels
    out as pip does, and the opener with the RUNPATH compat/runtime_libraries.toml read)."""
    from tests.corpus.replay import replay

    env: dict[str, object] = {
        "os": "Ubuntu 22.04", "arch": "x86_64", "container": "none",
        "env": {"LD_LIBRARY_PATH": ld_library_path} if ld_library_path else {},
        "driver": {"version": "550.54.14", "flavor": "proprietary", "devices": True},
        "gpus": [{"name": "NVIDIA GeForce RTX 3090"}],
        "python": {"version": "3.10.12", "prefix": "/opt/venv", "kind": "venv"},
        "packages": [{"name": "tensorflow", "version": version},
                     {"name": cudnn.split("==")[0], "version": cudnn.split("==")[1]}],
    }  # fmt: skip
    outcome = replay({"case": {"id": "tf"}, "env": env}, CompatMatrix(cache_dir=False))
    found = next(f for f in outcome.findings if f.code == "CD304")
    return {"status": found.status.value, "fix": " ".join(found.remediation.commands) if found.remediation else ""}


WHEEL_CUDNN = "/opt/venv/lib/python3.10/site-packages/nvidia/cudnn/lib"


def test_tensorflow_2_12_pip_cudnn_needs_ld_library_path():
    """TensorFlow 2.12's RUNPATHs reach no wheel folder: its install guide's LD_LIBRARY_PATH step is the fix."""
    assert _replay_tf("2.12.0", "nvidia-cudnn-cu11==8.6.0.163", None) == {
        "status": "fail",
        "fix": f"export LD_LIBRARY_PATH={WHEEL_CUDNN}:$LD_LIBRARY_PATH",
    }
    assert _replay_tf("2.12.0", "nvidia-cudnn-cu11==8.6.0.163", WHEEL_CUDNN)["status"] == "ok"


@pytest.mark.parametrize(("version", "cudnn"), [("2.15.1", "nvidia-cudnn-cu12==8.9.4.25"),
                                                ("2.20.0", "nvidia-cudnn-cu12==9.3.0.75")])  # fmt: skip
def test_tensorflow_whose_runpath_reaches_the_cudnn_wheel_is_judged_fine(version, cudnn):
    assert _replay_tf(version, cudnn, None)["status"] == "ok"


def test_cd302_puts_the_wheel_folder_first_where_ld_library_path_lists_it_after_the_older_copy(h200):
    """TensorFlow's 2.12 pip guide appended the cuDNN wheel's folder to LD_LIBRARY_PATH (tensorflow#60750)."""
    loaded = LinkedFile("/usr/local/cuda-11.2/lib64/libcudnn.so.8.1.1", "LD_LIBRARY_PATH", Version("8.1.1"))
    wheel = _wheel("cudnn", "libcudnn.so.8", "nvidia-cudnn-cu11", "8.6.0.163", "LD_LIBRARY_PATH")
    need = NeededLibrary("tensorflow", f"{SITE}/tensorflow/libtensorflow_framework.so.2", "libcudnn.so.8", loaded,
                         (wheel,), how="dlopen")  # fmt: skip
    finding = run_check("CD302", replace(h200, loader=LoaderView(needs=(need,), cache="test")))
    assert finding.status is Status.FAIL and finding.remediation is not None
    assert finding.remediation.commands == (
        f"export LD_LIBRARY_PATH={SITE}/nvidia/cudnn/lib${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}",
    )
