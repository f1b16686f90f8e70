"""CD430-CD434 on the real H200's facts (torch 2.11.0 cu130, CUDA 13 wheels, Python 3.12), changed one fact at a time:
onnxruntime-gpu's CUDA major, the CPU onnxruntime beside it, TensorFlow's tested CUDA and [and-cuda],
paddlepaddle-gpu's build."""

from __future__ import annotations

from dataclasses import replace

from packaging.version import Version

from cudadoctor.checks.findings import Status
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import (
    CudaWheels,
    Facts,
    InstalledPackage,
    Source,
    SourceKind,
    ToolkitInstall,
    WheelComponent,
)
from cudadoctor.fixes.machine import verify_on
from cudadoctor.fixes.parse import parse
from cudadoctor.rules.ortf import ort_for_cuda, paddle_build, tf_tested
from cudadoctor.testing import run_check

MATRIX = CompatMatrix()


def _package(name: str, version: str, **kw: object) -> InstalledPackage:
    return InstalledPackage(name, Version(version), "/site", Source(SourceKind.METADATA, f"/site/{name}"), **kw)  # type: ignore[arg-type]


def _with(facts: Facts, *add: InstalledPackage, drop: tuple[str, ...] = ()) -> Facts:
    packages = {n: p for n, p in facts.packages.items() if n not in drop}
    packages.update({p.name: p for p in add})
    return replace(facts, packages=packages)


def _cuda12(facts: Facts, python: str = "3.12.3") -> Facts:
    """The machine with CUDA 12 only: a cu124 torch, the CUDA 12.4 runtime wheel and cuDNN 9 for CUDA 12."""
    runtime = WheelComponent("nvidia-cuda-runtime-cu12", Version("12.4.127"), "/site/nvidia/cuda_runtime/lib",
                             Source(SourceKind.METADATA, "/site/nvidia_cuda_runtime_cu12"))  # fmt: skip
    cudnn = replace(facts.cudnn[0], version=Version("9.1.0.70"), cuda_major=12, distribution="nvidia-cudnn-cu12")
    torch = _package("torch", "2.6.0+cu124", cuda_build="12.4", cuda_variant="cu124")
    return replace(
        _with(facts, torch), toolkits=(), cudnn=(cudnn,), cuda_wheels=CudaWheels("cu12", (runtime,)),
        python=replace(facts.python, version=Version(python)) if facts.python else facts.python,
    )  # fmt: skip


def _no_cuda(facts: Facts) -> Facts:
    return replace(_with(facts, drop=("torch",)), toolkits=(), cuda_wheels=None, cudnn=(), loader=None)


def _commands(finding) -> tuple[str, ...]:  # type: ignore[no-untyped-def]
    return finding.remediation.commands if finding.remediation else ()


def _parsed(command: str):  # type: ignore[no-untyped-def]
    parsed = parse(command)
    assert parsed is not None, command
    return parsed


def _verified(command: str, facts: Facts) -> None:
    verification = verify_on(_parsed(command), MATRIX, facts)
    assert verification.ok, verification.problems


# --- CD430 -------------------------------------------------------------------------------------------------


def test_cd430_cuda12_ort_beside_cuda13_torch_falls_back_to_cpu_and_names_the_cuda13_release(h200):
    facts = _with(h200, _package("onnxruntime-gpu", "1.26.0"))
    finding = run_check("CD430", facts)
    assert finding.status is Status.FAIL
    assert "built for CUDA 12" in finding.message and "CPUExecutionProvider" in finding.message
    newest13 = max(r.version for r in MATRIX.onnxruntime_releases if r.cuda_major == 13)
    assert _commands(finding) == (f"python -m pip install onnxruntime-gpu=={newest13}",)
    _verified(_commands(finding)[0], facts)


def test_cd430_cuda13_ort_beside_cuda12_torch_names_the_newest_cuda12_release(h200):
    facts = _with(_cuda12(h200), _package("onnxruntime-gpu", "1.31.1"))
    finding = run_check("CD430", facts)
    assert finding.status is Status.FAIL and "built for CUDA 13" in finding.message
    assert _commands(finding) == ("python -m pip install onnxruntime-gpu==1.26.0",)
    assert "preload_dlls()" in (finding.remediation.text if finding.remediation else "")
    _verified(_commands(finding)[0], facts)


def test_cd430_picks_a_release_with_a_wheel_for_this_python_not_only_requires_python(h200):
    # 1.24.1 declares Requires-Python >=3.10 but ships no cp310 wheel: 1.23.2 is the newest for 3.10
    facts = _with(_cuda12(h200, python="3.10.12"), _package("onnxruntime-gpu", "1.17.0"))
    finding = run_check("CD430", facts)
    assert finding.status is Status.FAIL
    assert _commands(finding) == ("python -m pip install onnxruntime-gpu==1.23.2",)
    _verified(_commands(finding)[0], facts)
    assert ort_for_cuda(MATRIX, 12, 9, Version("3.11.9")) is not None
    assert ort_for_cuda(MATRIX, 12, 9, Version("3.11.9")).version == Version("1.26.0")  # type: ignore[union-attr]


def test_cd430_cuda12_with_only_cudnn8_has_no_pypi_build_and_names_the_install_page(h200):
    facts = _with(_cuda12(h200, python="3.10.12"), _package("onnxruntime-gpu", "1.16.3"))
    facts = replace(facts, cudnn=(replace(facts.cudnn[0], version=Version("8.9.2.26")),))
    finding = run_check("CD430", facts)
    assert finding.status is Status.FAIL and _commands(finding) == ()
    assert "onnxruntime.ai/docs/install" in (finding.remediation.text if finding.remediation else "")


def test_cd430_matching_major_is_fine_and_absent_is_not_applicable(h200):
    assert run_check("CD430", _with(h200, _package("onnxruntime-gpu", "1.31.1"))).status is Status.OK
    assert run_check("CD430", _with(_cuda12(h200), _package("onnxruntime-gpu", "1.22.0"))).status is Status.OK
    assert run_check("CD430", h200).status is Status.NOT_APPLICABLE  # only the CPU onnxruntime on the H200


def test_cd430_could_not_judge_an_unknown_release_or_without_any_cuda(h200):
    assert run_check("CD430", _with(h200, _package("onnxruntime-gpu", "1.5.1"))).status is Status.UNKNOWN
    assert run_check("CD430", _with(_no_cuda(h200), _package("onnxruntime-gpu", "1.17.0"))).status is Status.UNKNOWN


def test_the_ort_data_says_where_preload_dlls_starts():
    rows = {str(r.version): r for r in MATRIX.onnxruntime_releases}
    assert MATRIX.onnxruntime_has_preload(rows["1.21.0"]) is True
    assert MATRIX.onnxruntime_has_preload(rows["1.20.2"]) is False
    assert all(r.preload_dlls is (r.version >= Version("1.21.0")) for r in rows.values())


# --- CD431 -------------------------------------------------------------------------------------------------


def test_cd431_cpu_package_beside_the_gpu_one_fails_with_uninstall_and_forced_reinstall(h200):
    facts = _with(h200, _package("onnxruntime-gpu", "1.30.0"))  # the H200's venv has onnxruntime 1.30.0
    finding = run_check("CD431", facts)
    assert finding.status is Status.FAIL
    assert _commands(finding) == (
        "python -m pip uninstall -y onnxruntime && "
        "python -m pip install --force-reinstall --no-deps onnxruntime-gpu==1.30.0",
    )
    _verified(_commands(finding)[0], facts)


def test_cd431_one_package_is_fine_none_is_not_applicable(h200):
    assert run_check("CD431", h200).status is Status.NOT_APPLICABLE
    gpu_only = _with(h200, _package("onnxruntime-gpu", "1.30.0"), drop=("onnxruntime",))
    assert run_check("CD431", gpu_only).status is Status.OK


# --- CD432 / CD433 -----------------------------------------------------------------------------------------


def test_tf_tested_reads_the_series_row():
    row = tf_tested(MATRIX, Version("2.11.1"))
    assert row is not None and row.cuda == Version("11.2") and row.version == Version("2.11.0")


def test_cd432_tf_tested_with_cuda11_on_a_cuda12_machine_names_a_cuda12_release_with_and_cuda(h200):
    facts = _with(_cuda12(h200, python="3.10.12"), _package("tensorflow", "2.11.0"))
    finding = run_check("CD432", facts)
    assert finding.status is Status.FAIL and "CUDA 11.2" in finding.message
    (command,) = _commands(finding)
    assert command.startswith("python -m pip install 'tensorflow[and-cuda]==")
    _verified(command, facts)


def test_cd432_an_and_cuda_release_gets_its_own_wheels(h200):
    facts = _with(h200, _package("tensorflow", "2.17.0"))  # tested with CUDA 12.3; the H200 has CUDA 13 only
    finding = run_check("CD432", facts)
    assert finding.status is Status.FAIL
    assert _commands(finding) == ("python -m pip install 'tensorflow[and-cuda]==2.17.0'",)
    _verified(_commands(finding)[0], facts)


def test_cd432_matching_major_is_fine_other_cases_not_applicable(h200):
    assert run_check("CD432", _with(_cuda12(h200), _package("tensorflow", "2.17.0"))).status is Status.OK
    assert run_check("CD432", h200).status is Status.NOT_APPLICABLE
    assert run_check("CD432", _with(_no_cuda(h200), _package("tensorflow", "2.17.0"))).status is Status.NOT_APPLICABLE


def test_cd433_tf_without_and_cuda_and_no_cuda_on_a_gpu_machine(h200):
    facts = _with(_no_cuda(h200), _package("tensorflow", "2.17.0"))
    finding = run_check("CD433", facts)
    assert finding.status is Status.FAIL
    assert _commands(finding) == ("python -m pip install 'tensorflow[and-cuda]==2.17.0'",)
    _verified(_commands(finding)[0], facts)
    before_and_cuda = _with(_no_cuda(h200), _package("tensorflow", "2.12.0"))
    assert run_check("CD433", before_and_cuda).status is Status.UNKNOWN
    assert run_check("CD433", _with(h200, _package("tensorflow", "2.17.0"))).status is Status.OK  # CUDA 13: CD432's


def test_cd433_not_applicable_without_tf(h200):
    assert run_check("CD433", h200).status is Status.NOT_APPLICABLE


# --- CD434 -------------------------------------------------------------------------------------------------


def _toolkit(version: str) -> ToolkitInstall:
    return ToolkitInstall(f"/usr/local/cuda-{version}", Version(version), Source(SourceKind.FILE, "version.json"))


def test_paddle_build_from_the_pypi_wheel_or_pins():
    assert paddle_build(MATRIX, _package("paddlepaddle-gpu", "2.6.2"))[:2] == (Version("11.8"), Version("8.6.0"))  # type: ignore[index]
    assert paddle_build(MATRIX, _package("paddlepaddle-gpu", "2.5.2.post117")) is None  # Paddle's own index
    pinned = _package("paddlepaddle-gpu", "3.0.0", cuda_build="12.6", cuda_variant="cu126")
    assert paddle_build(MATRIX, pinned)[0] == Version("12.6")  # type: ignore[index]


def test_cd434_paddle_for_cuda_10_2_with_a_cuda_11_8_toolkit_names_the_11_8_release(h200):
    facts = replace(_with(_no_cuda(h200), _package("paddlepaddle-gpu", "2.4.2")), toolkits=(_toolkit("11.8"),))
    finding = run_check("CD434", facts)
    assert finding.status is Status.FAIL and "CUDA 10.2" in finding.message
    assert _commands(finding) == ("python -m pip install paddlepaddle-gpu==2.6.2",)
    _verified(_commands(finding)[0], facts)


def test_cd434_fits_or_cannot_be_judged(h200):
    fits = replace(_with(_no_cuda(h200), _package("paddlepaddle-gpu", "2.6.2")), toolkits=(_toolkit("11.4"),))
    assert run_check("CD434", fits).status is Status.OK  # an 11.8 build on 11.4: same major (minor-version compat)
    unknown = _with(_no_cuda(h200), _package("paddlepaddle-gpu", "2.5.2.post117"))
    assert run_check("CD434", unknown).status is Status.UNKNOWN
    nothing = _with(_no_cuda(h200), _package("paddlepaddle-gpu", "2.6.2"))
    assert run_check("CD434", nothing).status is Status.UNKNOWN
    assert run_check("CD434", h200).status is Status.NOT_APPLICABLE


def test_cd434_cuda11_paddle_on_a_cuda13_machine_has_no_pypi_build(h200):
    finding = run_check("CD434", _with(h200, _package("paddlepaddle-gpu", "2.6.2")))
    assert finding.status is Status.FAIL and _commands(finding) == ()
    assert "13.0" in finding.message


def test_every_code_is_explained():
    from cudadoctor.checks import ALL_CHECKS

    for code in ("CD430", "CD431", "CD432", "CD433", "CD434"):
        doc = ALL_CHECKS[code].__doc__ or ""
        assert "What it checks:" in doc and "Why it matters:" in doc and "How to fix:" in doc


def _python(facts: Facts, version: str) -> Facts:
    return replace(facts, python=replace(facts.python, version=Version(version))) if facts.python else facts


def test_cd432_tf_2_15_0_and_cuda_cannot_resolve_so_the_fix_names_2_15_0_post1(h200):
    # 2.15.0.post1 dropped the tensorrt pins from [and-cuda] (compat/ecosystem.toml)
    h200 = _python(h200, "3.11.9")  # TensorFlow 2.15 has wheels for 3.9 to 3.11
    facts = _with(h200, _package("tensorflow", "2.15.0"))
    finding = run_check("CD432", facts)
    assert _commands(finding) == ("python -m pip install 'tensorflow[and-cuda]==2.15.0.post1'",)
    _verified(_commands(finding)[0], facts)
    unresolvable = verify_on(_parsed("python -m pip install 'tensorflow[and-cuda]==2.15.0'"), MATRIX, facts)
    assert any("cannot resolve" in p for p in unresolvable.problems)
    cd433 = run_check("CD433", _with(_no_cuda(h200), _package("tensorflow", "2.15.0")))
    assert _commands(cd433) == ("python -m pip install 'tensorflow[and-cuda]==2.15.0.post1'",)


def test_cd432_before_cuda_11_the_exact_minor_counts(h200):
    tf23 = _with(_no_cuda(h200), _package("tensorflow", "2.3.0"))
    wrong_minor = replace(tf23, toolkits=(_toolkit("10.2"),))
    finding = run_check("CD432", wrong_minor)
    assert finding.status is Status.FAIL and "CUDA 10.1" in finding.message and "10.2" in finding.message
    assert "CUDA 10.1 toolkit and cuDNN 7.6" in (finding.remediation.text if finding.remediation else "")
    assert run_check("CD432", replace(tf23, toolkits=(_toolkit("10.1"),))).status is Status.OK
    cuda11 = run_check("CD432", replace(tf23, toolkits=(_toolkit("11.0"),)))
    assert cuda11.status is Status.FAIL


def test_a_conda_cudnn_makes_the_tf_checks_could_not_judge(h200):
    """conda's cudatoolkit (lib/libcudart.so.*, no targets/) is no toolkit the probes find; its cuDNN shows it may be
    there, so missing CUDA is not claimed."""
    conda = replace(h200.cudnn[1], origin="conda", cuda_major=None, path="/opt/conda/envs/tf/include/cudnn_version.h")
    no_cuda = replace(_with(_no_cuda(h200), _package("tensorflow", "2.17.0")), cudnn=(conda,))
    assert run_check("CD433", no_cuda).status is Status.UNKNOWN
    other = replace(_with(h200, _package("tensorflow", "2.13.0")), cudnn=(conda,))
    assert run_check("CD432", other).status is Status.UNKNOWN
    system = replace(conda, origin="system", path="/usr/include/x86_64-linux-gnu/cudnn_version.h")
    assert run_check("CD432", replace(other, cudnn=(system,))).status is Status.FAIL


def test_cd434_a_driver_below_the_builds_cuda_floor_fails(h200):
    from cudadoctor.facts.model import DriverVersion

    facts = replace(_with(_no_cuda(h200), _package("paddlepaddle-gpu", "2.6.2")), toolkits=(_toolkit("11.8"),))
    old = replace(facts, driver=replace(h200.driver, version=DriverVersion("418.87.01"), cuda_api=Version("10.1")))
    finding = run_check("CD434", old)
    assert finding.status is Status.FAIL and "driver 418.87.01" in finding.message
    assert run_check("CD434", facts).status is Status.OK  # the H200's driver runs CUDA 11.8
    conda = replace(h200.cudnn[1], origin="conda", cuda_major=None, path="/opt/conda/include/cudnn_version.h")
    other = replace(_with(h200, _package("paddlepaddle-gpu", "2.6.2")), cudnn=(conda,))
    assert run_check("CD434", other).status is Status.UNKNOWN  # conda's CUDA 11 may sit beside that cuDNN
