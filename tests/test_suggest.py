"""suggest: plans for described machines, offline, from compat/ data; every rule and exclusion."""

from __future__ import annotations

import json

import pytest
from packaging.version import Version
from typer.testing import CliRunner

from cudadoctor.cli import app
from cudadoctor.data import CompatMatrix
from cudadoctor.suggest import Constraints, suggest_torch
from tests.machines import described

M = CompatMatrix()


def _c(driver: str | None, *gpus: tuple[str, str], python: str | None = "3.12", **kw) -> Constraints:
    return described(driver, *gpus, python=python, **kw)


def test_old_driver_and_rtx_3090_get_a_cuda11_build():
    s = suggest_torch(M, _c("470.82.01", ("RTX 3090", "8.6"), python="3.10"))
    assert s.plans, s.advice
    assert all(p.index_url and p.index_url.endswith(("/cu117", "/cu118")) for p in s.plans)
    top = s.plans[0]
    assert top.commands[0].startswith("python -m pip install torch==")
    assert any("minor-version compatibility" in w for w in top.why)
    assert {e.rule for e in s.excluded} >= {"driver-floor"}


def test_gtx_1080_ti_on_a_new_driver_gets_cu126_never_cu128_or_newer():
    s = suggest_torch(M, _c("580.95.05", ("GTX 1080 Ti", "6.1")))
    assert s.plans
    assert {p.variant for p in s.plans} == {"cu126"}
    newer = [e for e in s.excluded if any(t in e.candidate for t in ("cu128", "cu130", "cu132", "PyPI"))]
    assert newer and {e.rule for e in newer} <= {"gpu-arch-list", "cuda-dropped-arch", "data"}


def test_rtx_5090_gets_only_cuda_12_8_or_newer():
    s = suggest_torch(M, _c("575.57.08", ("RTX 5090", "12.0")))
    assert s.plans
    assert all(p.cuda >= Version("12.8") for p in s.plans)
    assert any(e.rule == "cuda-predates-arch" and "cu126" in e.candidate for e in s.excluded)


def test_python_3_13_only_releases_with_cp313_wheels():
    s = suggest_torch(M, _c("580.95.05", ("H100", "9.0"), python="3.13"))
    assert s.plans
    for plan in s.plans:
        release = M.torch_release(Version(plan.packages[0][1]))
        assert "3.13" in release.python
    assert any(e.rule == "python" and e.candidate == "torch 2.1.2" for e in s.excluded)


def test_aarch64_only_builds_published_for_it():
    s = suggest_torch(M, _c("580.95.05", ("GH200", "9.0"), platform="linux-aarch64"))
    assert s.plans
    for plan in s.plans:
        release = M.torch_release(Version(plan.packages[0][1]))
        if plan.index_url is None:  # PyPI's aarch64 wheel, where it is a CUDA build
            assert release.pypi_aarch64_cuda == plan.cuda
        else:  # a variant whose index has aarch64 wheels of that release
            assert plan.variant in release.variants_aarch64
    assert any(e.rule == "platform" for e in s.excluded)


def test_cuda_ceiling():
    s = suggest_torch(M, _c("580.95.05", ("H100", "9.0"), cuda_ceiling=Version("12.6")))
    assert s.plans and all(p.cuda <= Version("12.6") for p in s.plans)
    assert any(e.rule == "cuda-ceiling" for e in s.excluded)


def test_requirement_narrows_releases():
    s = suggest_torch(M, _c("580.95.05", ("H100", "9.0")), "torch>=2.5,<2.6")
    assert {p.packages[0][1] for p in s.plans} <= {"2.5.0", "2.5.1"}


def test_keeps_a_compatible_installed_torch():
    c = _c("580.95.05", ("H200", "9.0"), installed_torch=Version("2.11.0+cu130"), installed_torch_variant="cu130")
    s = suggest_torch(M, c)
    assert s.plans[0].keeps_installed
    assert s.plans[0].packages[0] == ("torch", "2.11.0")
    assert s.plans[0].why[0] == "keeps the installed torch"


def test_nothing_fits_names_the_driver_upgrade():
    s = suggest_torch(M, _c("418.40.04", ("V100", "7.0")))
    assert s.plans == ()
    assert s.advice[0].startswith("upgrade the NVIDIA driver to ")
    assert s.advice[0].endswith("fits")


def test_b200_on_driver_550_gets_nothing_and_the_driver_upgrade_named():
    s = suggest_torch(M, _c("550.54.15", ("B200", "10.0")))
    assert s.plans == ()
    assert s.advice == (
        "upgrade the NVIDIA driver to branch R570 or newer (for B200): then torch 2.11.0 cu128 from "
        "PyTorch's index fits",
    )
    assert any(e.rule == "driver-too-old-for-gpu" and e.required == "driver branch R570 or newer" for e in s.excluded)


# --- the command line ----------------------------------------------------------------------------------


def _run(*args: str):
    return CliRunner().invoke(app, ["suggest", "--no-probe", *args])


def test_cli_json_explains_every_exclusion():
    result = _run("--target", "torch", "--driver", "470.82.01", "--gpu", "RTX 3090", "--python", "3.10", "-f", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["kind"] == "cudadoctor-suggestion"
    assert doc["constraints"]["driver"] == "470.82.01"
    for exclusion in doc["suggestion"]["excluded"]:
        assert set(exclusion) == {"candidate", "rule", "observed", "required"}
        assert all(exclusion.values())


def test_cli_commands_and_dockerfile():
    args = ("--target", "torch>=2.9", "--driver", "580.95.05", "--gpu", "H100", "--python", "3.12")
    commands = _run(*args, "-f", "commands").stdout
    assert commands.count("\n") == 1 and commands.startswith("python -m pip install torch==")
    dockerfile = _run(*args, "-f", "dockerfile").stdout
    # the image the text shows first for the top plan: python:3.12 (gcc for Triton; the wheels bring their
    # CUDA, so no nvidia/cuda runtime image duplicating it; issue #12)
    assert dockerfile.splitlines()[1] == "FROM python:3.12"
    assert dockerfile.splitlines()[-1].startswith("RUN python -m pip install --no-cache-dir torch==")


def test_cli_nothing_fits_exits_1():
    # R396 runs CUDA 9.2 at most; every torch in data needs CUDA 10.0 or newer (an RTX 3090 needs 11.0).
    result = _run("--target", "torch", "--driver", "396.54", "--gpu", "RTX 3090", "--python", "3.12")
    assert result.exit_code == 1
    assert "Nothing fits." in result.stdout and "to change: to unlock a plan: driver >= " in result.stdout
    quiet = _run("--target", "torch", "--driver", "396.54", "--gpu", "RTX 3090", "-f", "commands")
    assert quiet.exit_code == 1 and quiet.stdout == "" and "nothing fits" in quiet.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--target", "paddlepaddle"], "suggest plans torch, vllm, jax, tensorrt"),
        (["--target", "torch>>2"], "not a requirement"),
        (["--target", "torch", "--gpu", "Voodoo"], "--gpu 'Voodoo'"),
        (["--target", "torch", "--platform", "solaris"], "--platform 'solaris'"),
        (["--target", "torch", "--python", "three"], "--python 'three'"),
    ],
)
def test_cli_usage_errors(args, message):
    result = _run(*args)
    assert result.exit_code == 2
    assert message in result.stderr


# --- vLLM ----------------------------------------------------------------------------------------------

from cudadoctor.suggest import suggest_vllm  # noqa: E402


def test_vllm_on_driver_535_and_h100_is_the_newest_release_for_cuda_12():
    s = suggest_vllm(M, _c("535.104.05", ("H100", "9.0"), python="3.11"))
    assert s.plans
    newest_cuda12 = max(
        r.version
        for r in M.vllm_releases
        # its PyPI wheel's CUDA, or a CUDA 12 build vLLM publishes outside PyPI (compat/vllm.toml other_cuda)
        if any(v.major == 12 for v in (*([r.cuda] if r.cuda else []), *(r.other_cuda if r.other_cuda_index else ())))
        and r.min_compute_capability is not None
        and (r.requires_python is None or r.requires_python.contains("3.11"))
    )
    assert s.plans[0].packages == (("vllm", str(newest_cuda12)),)
    # Every CUDA 13 release is excluded by the driver's floor for CUDA 13.x.
    cuda13 = {f"vllm {r.version}" for r in M.vllm_releases if r.cuda is not None and r.cuda.major == 13}
    assert cuda13 and cuda13 <= {e.candidate for e in s.excluded if e.rule == "driver-floor"}


def test_vllm_on_pascal_nothing_fits_and_the_torch_alternative_is_named():
    s = suggest_vllm(M, _c("580.95.05", ("GTX 1080 Ti", "6.1")))
    assert s.plans == ()
    assert s.advice[0].startswith("no vLLM release in compat data supports compute capability 6.1; the newest torch")
    assert "(cu126)" in s.advice[0]


def test_vllm_b200_on_550_names_the_driver_upgrade():
    s = suggest_vllm(M, _c("550.54.15", ("B200", "10.0")))
    assert s.plans == ()
    assert s.advice[0].startswith("upgrade the NVIDIA driver to branch R570 or newer (for B200): then vllm ")


def test_vllm_python_range_and_platform():
    s = suggest_vllm(M, _c("580.95.05", ("H200", "9.0"), python="3.9"))
    for plan in s.plans:
        release = next(r for r in M.vllm_releases if str(r.version) == plan.packages[0][1])
        assert release.requires_python is None or release.requires_python.contains("3.9")
    arm = suggest_vllm(M, _c("580.95.05", ("GH200", "9.0"), platform="linux-aarch64"))
    assert arm.plans == () and {e.rule for e in arm.excluded} == {"platform"}


def test_vllm_plan_says_it_replaces_the_installed_torch():
    c = _c("580.95.05", ("H200", "9.0"), installed_torch=Version("2.11.0+cu130"), installed_torch_variant="cu130")
    s = suggest_vllm(M, c, "vllm==0.33.0")
    assert s.plans[0].packages == (("vllm", "0.33.0"),)
    assert "replaces the installed torch 2.11.0+cu130 with 2.14.0 (vLLM pins it)" in s.plans[0].caveats


def test_plans_name_images_that_run_on_the_host():
    s = suggest_torch(M, _c("550.54.15", ("H100", "9.0"), python="3.11"))
    images = dict(s.plans[0].images)
    (base,) = [i for i in images if i.startswith("nvidia/cuda:")]
    assert base.startswith("nvidia/cuda:12.4.") and base.endswith("-base-ubuntu22.04")  # the CUDA runtime only
    assert "requires a driver with CUDA >= 12.4; this one has 12.4" in images[base]
    v = suggest_vllm(M, _c("580.95.05", ("H100", "9.0"), python="3.11"), "vllm==0.33.0")
    assert ("vllm/vllm-openai:v0.33.0") in dict(v.plans[0].images)


# --- JAX and TensorRT ------------------------------------------------------------------------------------

from cudadoctor.suggest import suggest_jax, suggest_tensorrt  # noqa: E402


def test_jax_picks_the_plugin_for_the_drivers_cuda_major():
    s = suggest_jax(M, _c("550.54.15", ("H100", "9.0")))
    assert s.plans and all(p.packages[0][0] == "jax[cuda12]" for p in s.plans)
    assert any(e.rule == "driver-floor" and "(CUDA 13)" in e.candidate for e in s.excluded)
    new = suggest_jax(M, _c("580.95.05", ("H100", "9.0")))
    assert new.plans[0].packages[0][0] == "jax[cuda13]"
    assert new.plans[0].commands[0].startswith("python -m pip install 'jax[cuda13]==")


def test_jax_python_floor():
    s = suggest_jax(M, _c("580.95.05", ("H100", "9.0"), python="3.9"))
    assert s.plans
    for plan in s.plans:
        record = M.jax_release(Version(plan.packages[0][1]))
        assert record is not None and record.requires_python.contains("3.9")
    newest = M.jax_releases[0]
    assert any(e.rule == "python" and e.candidate == f"jax {newest.version}" for e in s.excluded)


def test_tensorrt_never_plans_a_cuda13_package_for_pascal():
    s = suggest_tensorrt(M, _c("580.95.05", ("GTX 1080 Ti", "6.1")))
    assert s.plans and all(p.packages[0][0] != "tensorrt-cu13" for p in s.plans)
    assert any(e.rule == "cuda-dropped-arch" and "(CUDA 13)" in e.candidate for e in s.excluded)


def test_tensorrt_on_an_old_driver_names_the_upgrade():
    s = suggest_tensorrt(M, _c("418.40.04", ("V100", "7.0")))
    assert s.plans == () and s.advice[0].startswith("upgrade the NVIDIA driver to ")


@pytest.mark.parametrize(
    ("target", "package"),
    [("cupy", "cupy-cuda12x"), ("onnxruntime-gpu", "onnxruntime-gpu"), ("tensorflow", "tensorflow[and-cuda]")],
)
def test_other_targets_fit_the_drivers_cuda_major(target, package):
    result = _run("--target", target, "--driver", "550.54.15", "--gpu", "H100", "--python", "3.11", "-f", "json")
    assert result.exit_code == 0, result.output
    plans = json.loads(result.stdout)["suggestion"]["plans"]
    assert plans[0]["packages"][0][0] == package and plans[0]["cuda"].startswith("12.")
    assert all(not p["cuda"].startswith("13.") for p in plans)  # CUDA 13 needs driver 580.65.06


def test_a_driver_that_dropped_the_gpu_is_named_even_when_it_alone_excludes_everything() -> None:
    """Advice from the exclusions: a driver past the GPU's last branch is said with its requirement, not
    "see the exclusions", also when no build lacks the GPU's code."""
    from packaging.specifiers import SpecifierSet

    from cudadoctor.suggest.advice import advice
    from cudadoctor.suggest.constraints import Exclusion
    from cudadoctor.suggest.judge import Run

    c = described("590.44.01", ("GeForce GTX 1080", "6.1"))
    observed = "driver 590.44.01; GeForce GTX 1080 (Pascal)"
    run = Run(SpecifierSet(), [], [])
    run.excluded.append(Exclusion("torch 2.9.1+cu126", "driver-dropped-gpu", observed, "driver branch R580 or older"))
    lines = advice(c, run, "torch")
    assert lines[0].startswith("no torch build in compat data has GPU code for GeForce GTX 1080 (6.1)")
    assert f"{observed}: requires driver branch R580 or older" in lines


def test_onnxruntime_gpu_plans_only_releases_with_a_wheel_for_the_python():
    """1.24.1 declares Requires-Python >=3.10 but ships no cp310 wheel (compat/ecosystem.toml `python`): on
    Python 3.10 with a CUDA 12 driver the newest plan is 1.23.2, the rule CD430 asks too."""
    result = _run(
        "--target", "onnxruntime-gpu", "--driver", "550.54.15", "--gpu", "H100", "--python", "3.10", "-f", "json"
    )
    assert result.exit_code == 0, result.output
    plans = json.loads(result.stdout)["suggestion"]["plans"]
    assert plans[0]["packages"][0] == ["onnxruntime-gpu", "1.23.2"]
