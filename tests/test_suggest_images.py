"""Images that fit a plan (issue #12, item 5): one test per story, and the Dockerfile parsed and linted."""

from __future__ import annotations

import re
import shlex
from dataclasses import replace

from packaging.version import Version
from typer.testing import CliRunner

from cudadoctor.cli import app
from cudadoctor.data import CompatMatrix
from cudadoctor.suggest import Constraints, Gpu, Plan, suggest_jax, suggest_torch, suggest_vllm
from cudadoctor.suggest.images import compiler_need
from tests.machines import described

M = CompatMatrix()


def _c(driver: str, gpu: tuple[str, str] = ("H100", "9.0"), python: str = "3.12", **kw: object) -> Constraints:
    return described(driver, gpu, python=python, **kw)


def _on(driver: str, name: str, cc: str, segment: str) -> Constraints:
    """A machine with one GPU of that segment (compat/gpus.toml), as planning gives it."""
    return replace(_c(driver), gpus=(Gpu(name, cc, "--gpu", segment),))


def _images(plan: Plan) -> dict[str, str]:
    return dict(plan.images)


# --- fresh tags ------------------------------------------------------------------------------------------------


def test_a_cuda_13_2_plan_gets_a_13_2_base_image_not_13_0() -> None:
    """The supported-tags list read ends at 13.0.0; NVIDIA's own builds show 13.1-13.3 base tags on nvcr.io."""
    c = replace(_c("595.45.04"), wanted_variant="cu132")
    plan = suggest_torch(M, c, "torch==2.15.0").plans[0]
    assert plan.cuda == Version("13.2")
    base = next(i for i in _images(plan) if "/cuda:" in i)
    assert base.startswith("nvcr.io/nvidia/cuda:13.2.") and base.endswith("-base-ubuntu24.04"), base
    assert not any(i.startswith("nvidia/cuda:13.0") for i in _images(plan))


def test_no_image_is_newer_than_the_driver_runs() -> None:
    plan = suggest_torch(M, _c("580.65.06"), limit=1).plans[0]  # driver CUDA 13.0
    for image in _images(plan):
        if match := re.search(r"/cuda:(\d+)\.(\d+)\.", image):
            assert (int(match.group(1)), int(match.group(2))) <= (13, 0), image


# --- end-of-life OS ----------------------------------------------------------------------------------------------


def test_an_ubuntu_past_its_support_is_said_so() -> None:
    plan = suggest_torch(M, _c("470.82.01", ("RTX 3090", "8.6"), python="3.8"), limit=1).plans[0]
    old = [why for image, why in plan.images if "ubuntu20.04" in image]
    assert old and all("20.04's standard support ended in May 2025" in why for why in old)


# --- what the plan compiles -------------------------------------------------------------------------------------


def test_a_torch_plan_starts_from_python_with_gcc_for_triton_not_a_cuda_runtime_image() -> None:
    plan = suggest_torch(M, _c("580.65.06"), limit=1).plans[0]
    first, why = plan.images[0]
    assert first == "python:3.12" and "gcc" in why and "Triton" in why
    assert not any("-runtime-" in image for image in _images(plan))  # the wheels bring their CUDA


def test_a_toolkit_the_user_builds_with_gets_a_devel_image_of_its_major() -> None:
    c = _c("550.54.14", python="3.10", cuda_ceiling=Version("12.4"))
    plan = suggest_torch(M, c, limit=1).plans[0]
    first, why = plan.images[0]
    assert re.fullmatch(r"nvidia/cuda:12\.4\.\d+-devel-ubuntu22\.04", first), first
    assert "nvcc" in why and "python3 is the plan's 3.10" in why


def test_an_installed_flash_attn_needs_nvcc() -> None:
    c = _c("580.65.06", installed_ecosystem=(("flash-attn", "2.8.3"),))
    plan = suggest_torch(M, c, limit=1).plans[0]
    assert compiler_need(c, plan)[0] == "nvcc"
    assert "-devel-" in plan.images[0][0]


def test_jax_brings_every_cuda_library_from_pip_so_a_slim_image_is_enough() -> None:
    plan = suggest_jax(M, _c("580.65.06"), limit=1).plans[0]
    first, why = plan.images[0]
    assert first == "python:3.12-slim" and "nothing to compile" in why


# --- the base's Python -------------------------------------------------------------------------------------------


def test_the_nvidia_image_is_on_the_ubuntu_whose_python_is_the_plans() -> None:
    for python, ubuntu in (("3.12", "ubuntu24.04"), ("3.10", "ubuntu22.04")):
        plan = suggest_torch(M, _c("570.86.10", python=python), limit=1).plans[0]  # CUDA 12.8: both have tags
        base = next(i for i in _images(plan) if "/cuda:" in i)
        assert base.endswith(ubuntu) and f"python3 is the plan's {python}" in _images(plan)[base]


# --- framework images with their CUDA and driver floors ----------------------------------------------------------


def test_a_vllm_image_the_driver_cannot_start_is_a_caveat_not_an_image() -> None:
    plan = suggest_vllm(M, _c("550.54.14"), limit=1).plans[0]  # runs the CUDA 12.9 wheel by minor-version compat
    assert not any(i.startswith("vllm/vllm-openai") for i in _images(plan))
    assert any(c.startswith("vllm/vllm-openai:v") and "it will not start" in c for c in plan.caveats)
    fine = suggest_vllm(M, _c("580.65.06"), limit=1).plans[0]
    image = next(i for i in _images(fine) if i.startswith("vllm/vllm-openai"))
    assert "requires a driver with CUDA >= 13.0" in _images(fine)[image] and "inferred" in _images(fine)[image]


def test_ngc_pytorch_is_offered_only_where_the_driver_runs_its_cuda() -> None:
    ngc = "nvcr.io/nvidia/pytorch:25.12-py3"  # CUDA 13.1.0 (compat/images.toml)
    on_595 = suggest_torch(M, _c("595.45.04"), limit=1).plans[0]
    assert ngc in _images(on_595) and "CUDA 13.1.0" in _images(on_595)[ngc]
    geforce = _on("580.65.06", "RTX 5090", "12.0", "geforce")  # CUDA 13.0 < 13.1; no forward compatibility there
    assert ngc not in _images(suggest_torch(M, geforce, limit=1).plans[0])
    # an H100 on R580 runs it through the cuda-compat package (the forward compatibility guide's R580 for 13.1)
    on_580 = _images(suggest_torch(M, _on("580.65.06", "H100", "9.0", "datacenter"), limit=1).plans[0])
    assert ngc in on_580 and "any R580 driver on a data center GPU" in on_580[ngc]


def _ngc_caveat(plan: Plan) -> str:
    return next(c for c in plan.caveats if c.startswith("NGC containers: "))


def test_a_535_driver_on_an_a100_gets_an_ngc_release_whose_floor_it_meets_through_forward_compat() -> None:
    """Triton 24.10 notes: CUDA 12.6.2 needs 560, "or 535.86 (or later R535)" on a data center GPU."""
    c = _c("535.104.05", ("A100", "8.0"), python="3.10")
    c = replace(c, gpus=(replace(c.gpus[0], segment="datacenter"),))
    caveat = _ngc_caveat(suggest_torch(M, c, limit=1).plans[0])
    assert "nvcr.io/nvidia/tritonserver 24.10 (CUDA 12.6.2" in caveat
    assert "535.86 or later R535 on a data center GPU (forward compatibility: the cuda-compat package" in caveat


def test_a_535_data_center_host_gets_a_current_ngc_pytorch_container_a_geforce_does_not() -> None:
    """Issue #30: an H100 on 535.104.05 was offered NGC PyTorch 20.06 (2020). NGC PyTorch 25.12 (CUDA 13.1) runs
    on R535 data center drivers through forward compatibility (cuda-compat-13-1's branches), never on a GeForce."""
    h100 = _ngc_caveat(suggest_torch(M, _on("535.104.05", "H100", "9.0", "datacenter"), limit=1).plans[0])
    assert "nvcr.io/nvidia/pytorch 25.12 (CUDA 13.1.0" in h100 and "pytorch 20.06" not in h100
    assert "cuda-compat package in the container, data center GPUs only" in h100
    geforce = _ngc_caveat(suggest_torch(M, _on("535.104.05", "RTX 4090", "8.9", "geforce"), limit=1).plans[0])
    assert "nvcr.io/nvidia/pytorch 20.06" in geforce and "pytorch 25.12" not in geforce


def test_ngc_pytorch_forward_branches_are_the_cuda_compat_packages() -> None:
    """A release whose notes give no driver numbers records the branches of its CUDA's cuda-compat package."""
    for image in M.ngc_pytorch_images:
        assert image.cuda is not None
        cuda = Version(image.cuda.split()[0])
        name = f"cuda-compat-{cuda.major}-{cuda.minor}"
        package = next((p for p in M.forward_compat_packages if p.package == name), None)
        if image.min_driver_linux is None and image.forward_compat_drivers and package is not None:
            assert image.forward_compat_drivers == tuple(str(b) for b in package.compatible_driver_branches), image


def test_a_470_driver_is_told_the_newest_ngc_release_it_runs() -> None:
    geforce = _c("470.82.01", ("RTX 3090", "8.6"), python="3.8")
    caveat = _ngc_caveat(suggest_torch(M, geforce, limit=1).plans[0])
    # no forward compatibility on a GeForce: Triton 21.04 (465.19.01) is the newest whose floor 470 meets
    assert "nvcr.io/nvidia/tritonserver 21.04 (CUDA 11.3.0" in caveat and "nvcr.io/nvidia/pytorch 20.06" in caveat
    datacenter = replace(geforce, gpus=(Gpu("A100", "8.0", "--gpu", "datacenter"),))
    assert "nvcr.io/nvidia/tritonserver 24.10" in _ngc_caveat(suggest_torch(M, datacenter, limit=1).plans[0])


def test_a_driver_that_meets_every_ngc_floor_gets_no_ngc_caveat() -> None:
    plan = suggest_torch(M, _c("580.65.06"), limit=1).plans[0]
    assert not any(c.startswith("NGC containers") for c in plan.caveats)


def test_a_vllm_plan_names_the_triton_container_with_nvidias_build_of_that_vllm() -> None:
    image = "nvcr.io/nvidia/tritonserver:25.11-vllm-python-py3"  # vLLM 0.11.0+582e4e37.nv25.11.cu130, CUDA 13.0.2
    fits = suggest_vllm(M, _c("580.65.06"), "vllm==0.11.0", limit=1).plans[0]
    assert image in _images(fits) and "CUDA 13.0.2" in _images(fits)[image]
    old = suggest_vllm(M, _c("570.86.10"), "vllm==0.11.0", limit=1).plans[0]  # CUDA 12.8 driver
    assert image not in _images(old)
    assert any(c.startswith(image) and "it will not start" in c for c in old.caveats)


# --- the Dockerfile ----------------------------------------------------------------------------------------------


def _instructions(text: str) -> list[tuple[str, str]]:
    """(instruction, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    out, pending = [], ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip("\\").strip() + " "
        if not line.endswith("\\"):
            keyword, _sep, rest = pending.strip().partition(" ")
            out.append((keyword, rest))
            pending = ""
    assert not pending, "a continuation line runs off the end"
    return out


def _lint(text: str) -> list[str]:
    """hadolint's rules that a generated Dockerfile can break (DL3006/7, DL3009, DL3015, DL3042, DL3059 …)."""
    problems = []
    steps = _instructions(text)
    if not steps or steps[0][0] != "FROM":
        problems.append("the first instruction is not FROM")
    for keyword, args in steps:
        if keyword not in {"FROM", "RUN", "ENV"}:
            problems.append(f"unexpected {keyword}")
        if keyword == "FROM" and (":" not in args or args.endswith(":latest")):
            problems.append(f"FROM without a pinned tag: {args}")
        if keyword == "RUN":
            shlex.split(args)  # quotes balance
            if "apt-get install" in args and not all(
                part in args
                for part in ("apt-get update", " -y ", "--no-install-recommends", "rm -rf /var/lib/apt/lists/*")
            ):
                problems.append(f"apt-get install without update/-y/--no-install-recommends/cleanup: {args}")
            if "pip install" in args and "--no-cache-dir" not in args:
                problems.append(f"pip install without --no-cache-dir: {args}")
        if keyword == "ENV" and "=" not in args:
            problems.append(f"legacy ENV form: {args}")
    return problems


def _both(*args: str) -> tuple[str, str]:
    base = ["suggest", "--no-probe", *args]
    return CliRunner().invoke(app, base).stdout, CliRunner().invoke(app, [*base, "-f", "dockerfile"]).stdout


def test_every_dockerfile_starts_from_the_first_image_and_passes_the_lint() -> None:
    machines = [
        ("torch", "--driver", "580", "--gpu", "H100", "--python", "3.12"),
        ("torch", "--driver", "550", "--gpu", "H100", "--python", "3.10", "--cuda", "12.4"),
        ("torch", "--driver", "580", "--gpu", "H100", "--python", "3.11", "--cuda", "13.0"),
        ("vllm", "--driver", "580", "--gpu", "H100", "--python", "3.12"),
        ("jax", "--driver", "580", "--gpu", "H100", "--python", "3.12"),
    ]
    for args in machines:
        text, docker = _both(*args)
        first = text.split("  images:\n")[1].split()[0]
        steps = _instructions(docker)
        assert steps[0] == ("FROM", first), (args, docker)
        assert _lint(docker) == [], (args, docker)
        command = text.split("  install:\n")[1].splitlines()[0].strip().removeprefix("$ ")
        pinned = command.replace("python -m pip install", "python -m pip install --no-cache-dir")
        assert steps[-1] == ("RUN", pinned), (args, docker)  # the text's own command


def test_a_devel_image_whose_python_is_not_the_plans_gets_the_plans_python() -> None:
    _text, docker = _both("torch", "--driver", "580", "--gpu", "H100", "--python", "3.11", "--cuda", "13.0")
    assert "add-apt-repository -y ppa:deadsnakes/ppa" in docker
    assert "python3.11 python3.11-dev python3.11-venv build-essential" in docker
    assert "RUN python3.11 -m venv /opt/venv" in docker


def test_the_lint_catches_what_it_is_for() -> None:
    bad = "FROM nvidia/cuda:latest\nRUN apt-get install -y gcc\nRUN pip install torch\nENV PATH /x\n"
    assert len(_lint(bad)) == 4
