"""suggest on everyday machines: one test per story of issue #12 ("Tried as a new user would"), from its facts."""

from __future__ import annotations

from dataclasses import replace

import pytest
from packaging.version import Version
from typer.testing import CliRunner

from cudadoctor.cli import app
from cudadoctor.data import CompatMatrix
from cudadoctor.errors import UsageError
from cudadoctor.facts.model import (
    DriverInfo,
    DriverVersion,
    Facts,
    GpuInfo,
    HostInfo,
    InstalledPackage,
    Source,
    SourceKind,
)
from cudadoctor.planning import HostFlags, constraints_for, parse_target
from cudadoctor.rules.branches import branch_status, supported_branches
from cudadoctor.suggest import Constraints, suggest_torch, suggest_vllm
from cudadoctor.suggest.install import torch_install
from cudadoctor.suggest.matrix import fit_matrix
from cudadoctor.suggest.upgrades import with_upgrades
from cudadoctor.suggest.uv_auto import uv_auto_pick
from tests.machines import described

M = CompatMatrix()
SRC = Source(SourceKind.METADATA, "test")


def _c(driver: str | None, *gpus: tuple[str, str], python: str = "3.12", **kw: object) -> Constraints:
    return described(driver, *gpus, python=python, **kw)


def _facts(host: HostInfo, **kw: object) -> Facts:
    return Facts(host=host, **kw)  # type: ignore[arg-type]


def _run(*args: str):
    return CliRunner().invoke(app, ["suggest", "--no-probe", *args])


# --- 1. machines without an NVIDIA GPU -------------------------------------------------------------------------


def test_cpu_only_laptop_gets_the_cpu_index_not_cuda_wheels():
    facts = _facts(HostInfo(os="Linux", arch="x86_64"))
    c = constraints_for(M, HostFlags(python="3.12"), facts)
    assert c.accelerator == "cpu"
    s = suggest_torch(M, c)
    assert s.plans
    for plan in s.plans:
        assert plan.variant == "cpu" and plan.index_url == "https://download.pytorch.org/whl/cpu"
        assert plan.cuda is None and not plan.images  # no nvidia/cuda image for a CPU build
        assert plan.commands[0].endswith("--index-url https://download.pytorch.org/whl/cpu")
    assert "uv's automatic backend" in " ".join(s.plans[0].why)


def test_amd_host_gets_rocm_builds_ranked_by_the_hosts_rocm_major():
    facts = _facts(HostInfo(os="Linux", arch="x86_64", rocm_version=Version("6.1.3"), amdgpu_driver=True))
    c = constraints_for(M, HostFlags(python="3.12"), facts)
    assert (c.accelerator, c.rocm) == ("rocm", Version("6.1.3"))
    s = suggest_torch(M, c)
    assert s.plans and all(p.variant.startswith("rocm") for p in s.plans)
    assert s.plans[0].variant.startswith("rocm6")
    assert any("host's ROCm 6.1.3" in w for w in s.plans[0].why)
    eight = suggest_torch(M, replace(c, rocm=Version("8.0")))  # newer than every ROCm build in the data
    assert any("differs in major" in cav for cav in eight.plans[0].caveats)


def test_mi300x_by_name_plans_rocm_and_vllm_says_why_nothing_fits():
    result = _run("torch", "--gpu", "MI300X", "--python", "3.12")
    assert result.exit_code == 0, result.stdout
    assert "AMD GPU (ROCm)" in result.stdout and "/whl/rocm" in result.stdout
    vllm = _run("vllm", "--gpu", "MI300X", "--python", "3.12")
    assert vllm.exit_code == 1 and "why: vllm: accelerator: no CUDA GPU (rocm)" in vllm.stdout


def test_apple_silicon_gets_pypi_wheels_with_mps():
    facts = _facts(HostInfo(os="Darwin", arch="arm64", apple_silicon=True))
    c = constraints_for(M, HostFlags(python="3.13"), facts)
    assert (c.accelerator, c.platform) == ("mps", "macos-arm64")
    s = suggest_torch(M, c)
    top = s.plans[0]
    assert top.index_url is None and "MPS" in top.why[0]
    # 2.5.x has no macOS arm64 wheel for 3.13 (PyPI), though its Linux wheels have one
    old = suggest_torch(M, c, "torch<2.6")
    assert all(Version(p.packages[0][1]) < Version("2.5") for p in old.plans)
    assert any(e.candidate == "torch 2.5.1" and e.rule == "python" for e in old.excluded)


def test_jetson_gets_a_sourced_refusal_naming_its_l4t():
    facts = _facts(HostInfo(os="Linux", arch="aarch64", jetson_l4t="R36.4.3"), gpus=())
    c = constraints_for(M, HostFlags(python="3.10"), facts)
    assert c.accelerator == "jetson"
    s = suggest_torch(M, c)
    assert not s.plans and s.excluded
    assert "L4T R36.4.3" in s.advice[0] and "install-pytorch-jetson-platform" in s.advice[0]


ARC_A770 = "0000:03:00.0 8086:56A0"  #: a discrete card: its own PCI bus
UHD_620 = "0000:00:02.0 8086:5917"  #: Intel's integrated GPU sits at bus 0, device 2


def test_discrete_intel_gpu_gets_xpu_builds_from_the_xpu_index():
    facts = _facts(HostInfo(os="Linux", arch="x86_64", intel_gpu_driver="i915", intel_gpus=(UHD_620, ARC_A770)))
    c = constraints_for(M, HostFlags(python="3.12"), facts)
    assert c.accelerator == "xpu"
    s = suggest_torch(M, c)
    assert s.plans and all(p.variant == "xpu" for p in s.plans)
    top = s.plans[0]
    # the newest release compat data lists an XPU build for (Intel GPU docs, release and 2.14.0 candidate matrices)
    assert top.packages[0] == ("torch", "2.14.0") and top.index_url == "https://download.pytorch.org/whl/xpu"
    assert top.commands[0].endswith("--index-url https://download.pytorch.org/whl/xpu")
    assert any("Intel's GPU driver" in cav for cav in top.caveats)
    assert any(e.candidate == "torch 2.15.0" and "XPU build not listed" in e.observed for e in s.excluded)
    assert uv_auto_pick(M, c).label == "xpu index → torch 2.14.0"


def test_integrated_intel_gpu_alone_gets_cpu_plans_and_a_note():
    facts = _facts(HostInfo(os="Linux", arch="x86_64", intel_gpu_driver="i915", intel_gpus=(UHD_620,)))
    c = constraints_for(M, HostFlags(python="3.12"), facts)
    s = suggest_torch(M, c)
    assert c.accelerator == "cpu" and s.plans and s.plans[0].variant == "cpu"
    assert any("integrated Intel GPU only (0000:00:02.0 8086:5917)" in n for n in s.notes)
    pick = uv_auto_pick(M, c)  # uv counts any Intel display device
    assert pick.index == "xpu" and "integrated" in pick.note


def test_intel_gpu_by_name_plans_xpu_and_vllm_says_why_nothing_fits():
    for name in ("Intel Arc A770", "Data Center GPU Max 1550", "Intel Core Ultra 7 155H"):
        result = _run("torch", "--gpu", name, "--python", "3.12")
        assert result.exit_code == 0, result.stdout
        assert "Intel GPU" in result.stdout and "--index-url https://download.pytorch.org/whl/xpu" in result.stdout
    vllm = _run("vllm", "--gpu", "Intel Arc B580", "--python", "3.12")
    assert vllm.exit_code == 1 and "why: vllm: accelerator: no CUDA GPU (xpu)" in vllm.stdout


def test_an_nvidia_host_stays_cuda():
    gpu = GpuInfo(index=0, name="NVIDIA H100", compute_capability="9.0", source=SRC)
    facts = _facts(
        HostInfo(os="Linux", arch="x86_64"),
        gpus=(gpu,),
        driver=DriverInfo(version=DriverVersion("580.95.05"), cuda_api=Version("13.0")),
    )
    assert constraints_for(M, HostFlags(python="3.12"), facts).accelerator == "cuda"
    assert constraints_for(M, HostFlags(python="3.12", probe=False), None).accelerator is None


# --- 2. replace, don't no-op ------------------------------------------------------------------------------------


def test_installed_cpu_torch_is_really_replaced_by_the_cuda_build():
    c = _c(
        "550.54.14", ("RTX 4090", "8.9"),
        installed_torch=Version("2.13.0+cpu"), installed_torch_variant="cpu",
        installed_ecosystem=(("xformers", "0.0.40"),),
    )  # fmt: skip
    s = suggest_torch(M, c, "torch==2.13.0")
    top = s.plans[0]
    assert top.variant == "cu126" and not top.keeps_installed
    assert "torch==2.13.0+cu126" in top.commands[0] and "torchvision==0.28.0+cu126" in top.commands[0]
    assert any("replaces the installed torch 2.13.0+cpu (cpu build)" in cav for cav in top.caveats)
    assert any("xformers 0.0.40" in cav for cav in top.caveats)


def test_a_pypi_build_replacing_another_build_is_forced():
    c = _c("580.95.05", ("H100", "9.0"), installed_torch=Version("2.13.0+cu126"), installed_torch_variant="cu126")
    s = suggest_torch(M, c, "torch==2.13.0")
    pypi = next(p for p in s.plans if p.index_url is None)
    assert "--force-reinstall" in pypi.commands[0] and "--reinstall" in pypi.commands[1]
    kept = next(p for p in s.plans if p.variant == "cu126")
    assert kept.keeps_installed and "+cu126" not in kept.commands[0]


def test_every_torch_plan_installs_torchvision_with_it():
    s = suggest_torch(M, _c("580.95.05", ("H100", "9.0")), limit=10)
    for plan in s.plans:
        names = [n for n, _v in plan.packages]
        assert names[:2] == ["torch", "torchvision"]
    pins = {p.packages[0][1]: dict(p.packages) for p in s.plans}
    # released with 2.14.1 / 2.15.0, requiring torch>=2.14.0 / >=2.11 (PyPI: Requires-Dist, upload times); no
    # torchaudio was published with 2.14.1, so none is pinned for it (compat/notes/torch.md)
    assert pins["2.14.1"]["torchvision"] == "0.29.1" and "torchaudio" not in pins["2.14.1"]
    assert all(not any("torchvision" in cav for cav in p.caveats) for p in s.plans)
    release = M.torch_release(Version("2.14.1"))
    assert release is not None
    unmatched = replace(release, torchvision=None, torchaudio=None)
    install = torch_install(Constraints(), unmatched, "cu130", "https://download.pytorch.org/whl/cu130")
    assert dict(install.pins)["torchvision"] == "" and "torchaudio" not in dict(install.pins)
    assert any("no torchvision release pins torch" in cav for cav in install.caveats)


# --- 3. --cuda is the toolkit the user builds with --------------------------------------------------------------


def test_cuda_flag_ranks_its_major_first_and_says_why():
    result = _run("torch", "--cuda", "12.4", "--driver", "580.95.05", "--gpu", "H100", "--python", "3.12")
    assert result.exit_code == 0
    first = result.stdout.split("Plan 2:")[0]
    # a CUDA 12.4 build first (2.5.1 from PyPI: its arch list is verified; 2.6.0's is not in data, so it ranks below)
    assert "(CUDA 12.4)" in first and "cu118" not in first
    assert "the major of your CUDA 12.4 toolkit" in first


# --- 4. upgrade paths -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("planner", "driver", "gpu"),
    [
        (suggest_vllm, "550.54.14", ("H100", "9.0")),
        (suggest_vllm, "470.82.01", ("RTX 3090", "8.6")),
        (suggest_torch, "570.26", ("B300", "10.3")),
        (suggest_torch, "470.82.01", ("RTX 3090", "8.6")),
    ],
)
def test_every_upgrade_hint_is_what_suggest_plans_under_it(planner, driver, gpu):
    c = _c(driver, gpu)
    s = with_upgrades(M, c, planner)
    assert s.upgrades
    for hint in s.upgrades:
        assumed = DriverVersion(hint.value)
        there = planner(M, replace(c, driver=assumed, driver_cuda=M.cuda_for_driver(assumed)), limit=1)
        assert there.plans[0] == hint.plan
        assert branch_status(M, assumed.major).is_ok  # only supported branches are proposed
        assert f"R{assumed.major}" in hint.text


def _newest_cuda12_vllm() -> tuple[str, str, str]:
    """(release, wheel URL, torch index) of the newest vLLM with a CUDA 12 build outside PyPI, from compat data."""
    for release in M.vllm_releases:  # newest first
        for cuda, wheel, index in M.vllm_other_cuda_wheels(release):
            if cuda.major == 12 and index is not None:
                return str(release.version), wheel, index
    raise AssertionError("compat/vllm.toml has no CUDA 12 build outside PyPI")


@pytest.mark.parametrize("driver", ["535.54.03", "550.54.14", "570.86.10"])
def test_a_cuda12_driver_gets_the_newest_vllm_whose_cuda12_build_exists(driver):
    # issue 12: below 580 the plan was vllm 0.19.1 (the last CUDA 12 PyPI wheel) with no word of the CUDA 12.9
    # builds vLLM publishes with every later release on GitHub (compat/vllm.toml other_cuda)
    version, wheel, index = _newest_cuda12_vllm()
    assert Version(version) > Version("0.19.1")
    c = _c(driver, ("H100", "9.0"))
    top = suggest_vllm(M, c).plans[0]
    assert top.packages == (("vllm", version),) and top.variant == "cu129" and top.cuda == Version("12.9")
    assert top.commands[0] == f"python -m pip install {wheel} --extra-index-url {index}"
    assert wheel.startswith(f"https://github.com/vllm-project/vllm/releases/download/v{version}/vllm-{version}+cu129-")
    assert any("not on PyPI" in w for w in top.why)
    # suggest --matrix asks the same planner: the cell of that build is the plan suggest shows first
    row = next(r for r in fit_matrix(M, c, "vllm", suggest_vllm, f"vllm=={version}").rows if r.version == version)
    cells = {cell.build: cell for cell in row.cells}
    assert cells["cu129"].plan == top and cells["cu129"].rank == 1
    assert not cells["cu130"].fits and {e.rule for e in cells["cu130"].reasons} == {"driver-floor"}


def test_the_cuda12_build_is_asked_for_by_name_and_ranks_below_pypi_where_both_fit():
    version, _wheel, _index = _newest_cuda12_vllm()
    on_580 = _c("580.65.06", ("H100", "9.0"))
    both = suggest_vllm(M, on_580, f"vllm=={version}").plans
    assert [p.variant for p in both] == ["pypi", "cu129"]
    named = suggest_vllm(M, replace(on_580, wanted_variant="cu129"), f"vllm=={version}").plans
    assert [p.variant for p in named] == ["cu129"]


def test_vllm_below_580_is_told_what_580_unlocks():
    c = _c("550.54.14", ("H100", "9.0"))
    s = with_upgrades(M, replace(c, gpus=(replace(c.gpus[0], segment="datacenter"),)), suggest_vllm)
    assert s.plans[0].packages == (("vllm", _newest_cuda12_vllm()[0]),) and s.plans[0].variant == "cu129"
    newest = max(r.version for r in M.vllm_releases)
    assert any(u.value == "580.65.06" and u.plan.packages == (("vllm", str(newest)),) for u in s.upgrades)
    assert any("R550 is end of life" in n for n in s.notes)


def test_the_end_of_life_note_is_for_data_center_gpus_only():
    # issue #30: NVIDIA's branch lifecycle is the data center GPUs'; a GeForce on R550 is not told it ended
    c = _c("550.54.14", ("RTX 4090", "8.9"))
    s = with_upgrades(M, replace(c, gpus=(replace(c.gpus[0], segment="geforce"),)), suggest_vllm)
    assert not any("end of life" in n for n in s.notes)


def test_a_470_driver_gets_vllms_cuda_11_build_and_a_supported_branch_to_move_to():
    # CUDA 11.8 runs on 470 by minor-version compatibility; the newest vLLM with a CUDA 11.8 build (a GitHub
    # release asset: compat/vllm.toml other_cuda) is the plan, and the newer releases it names need a supported branch
    s = with_upgrades(M, _c("470.82.01", ("RTX 3090", "8.6")), suggest_vllm)
    newest_cu118 = max(r.version for r in M.vllm_releases if Version("11.8") in r.other_cuda and r.other_cuda_index)
    assert s.plans[0].packages == (("vllm", str(newest_cu118)),) and s.plans[0].variant == "cu118"
    assert s.upgrades and all(branch_status(M, DriverVersion(u.value).major).is_ok for u in s.upgrades)
    assert not any("525." in u.text for u in s.upgrades)


def test_a_470_driver_is_never_sent_to_an_end_of_life_branch():
    s = with_upgrades(M, _c("470.82.01", ("RTX 3090", "8.6")), suggest_vllm, "vllm>=0.11")
    assert not s.plans
    assert not any("525." in a for a in s.advice)
    # the oldest supported long-term branch today (R535 was one until June 2026: compat/cuda.toml driver_branch)
    lts = supported_branches(M)[0]
    assert lts.designation == "long-term"
    assert s.advice[0].startswith(f"to unlock a plan: driver >= {lts.branch}.")


def test_b300_on_570_is_promised_what_580_really_plans():
    s = with_upgrades(M, _c("570.26", ("B300", "10.3")), suggest_torch)
    assert not s.plans
    on_580 = suggest_torch(M, _c("580.65.06", ("B300", "10.3")), limit=1).plans[0]
    assert s.upgrades[0].plan == on_580 and on_580.packages[0][1] in s.advice[0]


# --- 7. interface -----------------------------------------------------------------------------------------------


def test_a_target_with_a_build_tag_is_accepted_and_picks_that_build():
    assert parse_target("torch==2.13.0+cu126") == ("torch", "torch==2.13.0", "cu126")
    c = replace(_c("550.54.14", ("RTX 4090", "8.9")), wanted_variant="cu126")
    s = suggest_torch(M, c, "torch==2.13.0")
    assert [p.variant for p in s.plans] == ["cu126"]
    assert any(e.rule == "variant" for e in s.excluded)


@pytest.mark.parametrize(("typed", "meant"), [("pytorch", "torch"), ("vlm", "vllm"), ("tensorflw", "tensorflow")])
def test_a_misspelt_target_gets_did_you_mean(typed, meant):
    with pytest.raises(UsageError, match=f"did you mean '{meant}'"):
        parse_target(typed)


def test_positional_target_any_case_and_a_driver_branch():
    result = _run("vLLM", "--driver", "550", "--gpu", "H100", "--python", "3.12")
    assert result.exit_code == 0, result.stdout
    assert "assumed driver: 550 (branch R550, taken as its oldest release" in result.stdout
    assert "Plan 1: vllm==" in result.stdout and "Would unlock newer releases:" in result.stdout


def test_nothing_fits_always_lists_the_reason():
    result = _run("torch==2.13.0+cu999", "--driver", "580.95.05", "--gpu", "H100", "--python", "3.12")
    assert result.exit_code == 1
    assert "why: torch 2.13.0" in result.stdout and "variant" in result.stdout


def test_installed_package_facts_reach_the_constraints():
    torch = InstalledPackage("torch", Version("2.13.0+cpu"), "/site", SRC, cuda_variant="cpu")
    xformers = InstalledPackage("xformers", Version("0.0.40"), "/site", SRC)
    facts = _facts(HostInfo(os="Linux", arch="x86_64"), packages={"torch": torch, "xformers": xformers})
    c = constraints_for(M, HostFlags(python="3.12", gpus=("RTX 4090",), driver="550"), facts)
    assert c.installed_torch_variant == "cpu" and c.installed_ecosystem == (("xformers", "0.0.40"),)
    assert c.accelerator == "cuda"


# --- 5. images that fit -----------------------------------------------------------------------------------------


def test_images_match_the_plans_python_and_name_end_of_life_systems():
    s = suggest_torch(M, _c("580.95.05", ("H100", "9.0")), limit=1)
    images = dict(s.plans[0].images)
    cuda = next(i for i in images if i.startswith("nvidia/cuda:"))
    assert "ubuntu24.04" in cuda and "python3 is the plan's 3.12" in images[cuda]
    old = suggest_torch(M, _c("470.82.01", ("RTX 3090", "8.6"), python="3.10"), limit=1)
    first, why = old.plans[0].images[0]
    assert first == "python:3.10" and "gcc" in why
    assert any("20.04's standard support ended" in w for _i, w in old.plans[0].images if "ubuntu20.04" in _i)


def test_the_dockerfile_starts_from_the_image_the_text_shows_first():
    for args in (("--driver", "550", "--python", "3.12"), ("--driver", "580.95.05", "--python", "3.12")):
        text = _run("torch", "--gpu", "H100", *args).stdout
        docker = _run("torch", "--gpu", "H100", *args, "-f", "dockerfile").stdout
        first_image = text.split("  images:\n")[1].split()[0]
        assert f"FROM {first_image}\n" in docker
        assert "-slim" not in docker


# --- 6. the user's index ----------------------------------------------------------------------------------------


def test_the_users_index_is_found_where_pip_and_uv_read_it(tmp_path):
    from cudadoctor.planning import user_index

    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = https://user:token@mirror.example/simple\n")
    assert user_index({"PIP_CONFIG_FILE": str(conf)}) == (
        "https://****@mirror.example/simple",
        f"{conf} [global] index-url",
    )
    env = {"PIP_CONFIG_FILE": "/dev/null", "PIP_INDEX_URL": "https://pip.example/simple"}
    assert user_index(env) == ("https://pip.example/simple", "PIP_INDEX_URL")
    assert user_index({"PIP_CONFIG_FILE": "/dev/null", "UV_INDEX_URL": "https://uv.example/simple"}) == (
        "https://uv.example/simple",
        "UV_INDEX_URL",
    )
    assert user_index({"PIP_CONFIG_FILE": "/dev/null"}) is None  # PyPI: nothing to say


def test_plans_keep_the_users_index_for_pypi_and_say_when_pytorchs_own_is_needed():
    c = replace(_c("550.54.14", ("RTX 4090", "8.9")), user_index=("https://mirror.example/simple", "PIP_INDEX_URL"))
    s = suggest_torch(M, c, "torch==2.13.0", limit=10)
    index = next(p for p in s.plans if p.index_url is not None)
    assert "--index-url https://download.pytorch.org/whl/" in index.commands[0]
    assert any(
        cav.startswith("--index-url replaces the index pip is configured with (https://mirror.example/simple, PIP_")
        for cav in index.caveats
    )
    on_580 = replace(c, driver=DriverVersion("580.95.05"), driver_cuda=Version("13.0"))
    pypi = next(p for p in suggest_torch(M, on_580, "torch==2.13.0", limit=10).plans if p.index_url is None)
    assert "--index-url" not in pypi.commands[0]  # pip reads its own configuration: the mirror
    assert any("installs from the index pip is configured with (https://mirror.example/simple" in w for w in pypi.why)


def test_uvs_index_is_named_as_uvs_not_pips():
    c = replace(_c("580.95.05", ("H100", "9.0")), user_index=("https://uv.example/simple", "UV_INDEX_URL"))
    pypi = next(p for p in suggest_torch(M, c, "torch==2.13.0", limit=10).plans if p.index_url is None)
    assert any("the index uv is configured with (https://uv.example/simple, UV_INDEX_URL)" in w for w in pypi.why)


def test_vllm_on_a_jetson_is_refused_as_a_jetson_not_as_a_machine_without_cuda():
    result = _run("vllm", "--gpu", "Jetson AGX Orin", "--platform", "linux-aarch64", "--python", "3.10")
    assert result.exit_code == 1
    assert "why: vllm: platform: Jetson (CUDA from JetPack)" in result.stdout
    assert "not JetPack builds" in result.stdout and "no CUDA GPU" not in result.stdout


# --- 1 (by flags). a machine without an NVIDIA GPU, described on the command line ----------------------------


@pytest.mark.parametrize(
    ("flags", "machine", "index"),
    [
        (
            ("--gpu", "none"),
            "no GPU (CPU only); Python 3.12; linux-x86_64",
            "--index-url https://download.pytorch.org/whl/cpu",
        ),
        (("--gpu", "Apple M2"), "Apple Silicon GPU (MPS); Python 3.12; macos-arm64", "through MPS"),
        (("--platform", "macos-arm64"), "Apple Silicon GPU (MPS); Python 3.12; macos-arm64", "through MPS"),
    ],
)
def test_a_machine_without_cuda_can_be_described_by_flags(flags, machine, index):
    result = _run("torch", *flags, "--python", "3.12")
    assert result.exit_code == 0, result.stdout
    assert f"for: driver unknown; {machine}" in result.stdout
    top = result.stdout.split("Plan 2:")[0]
    assert index in top and "CUDA" not in top.split("install:")[1]


# --- 4 (all machines). every upgrade hint is what a real run under its assumption plans ---------------------


def _everyday():
    from tests.everyday_machines import MACHINES, host_flags

    return [(name, host_flags(flags)) for name, flags in MACHINES]


@pytest.mark.parametrize("target", ["torch", "vllm", "jax"])
def test_every_hint_on_the_everyday_machines_is_what_suggest_plans_under_it_and_unlocks_it(target):
    from cudadoctor.planning import plan

    hints = 0
    for name, flags in _everyday():
        s, _c0 = plan(target, flags)
        for hint in s.upgrades:
            change = {"driver": hint.value} if hint.change == "driver" else {"python": hint.value}
            assumed = replace(flags, **change)
            there, _c1 = plan(target, assumed)
            assert there.plans, f"{name}: {hint.text} plans nothing"
            top = there.plans[0]
            assert (top.packages, top.variant) == (hint.plan.packages, hint.plan.variant), f"{name}: {hint.text}"
            if hint.change == "driver":
                assert branch_status(M, DriverVersion(hint.value).major).is_ok, f"{name}: {hint.text}"
            # an unlock: the release is not planned on the machine as it is (not merely ranked lower there)
            assert not plan(f"{target}=={top.packages[0][1]}", flags)[0].plans, f"{name}: {hint.text}"
            hints += 1
    assert hints  # the machines have upgrade paths to check


def test_no_python_hint_for_a_release_this_python_already_gets():
    """H200 on 580, Python 3.12: torch 2.15.0 has 3.12 wheels and is planned (below 2.14.1, whose GPU list is
    verified); 'Python 3.15 -> torch 2.15.0' would promise what is already there."""
    s = with_upgrades(M, _c("580.95.05", ("H200", "9.0")), suggest_torch)
    assert not [u for u in s.upgrades if u.plan.packages[0][1] == "2.15.0"]
    assert suggest_torch(M, _c("580.95.05", ("H200", "9.0")), "torch==2.15.0").plans


def test_a_jetson_thor_on_jetpack_7_gets_the_sbsa_cuda_13_wheels():
    """JetPack 7 aligns Jetson Thor with SBSA and installs the Arm servers' CUDA 13 (NVIDIA's JetPack 7.1 notes);
    PyTorch's aarch64 CUDA 13 wheels list sm_110 (Thor). An Orin (JetPack 6, L4T's own CUDA) is still refused."""
    result = _run(
        "torch", "--gpu", "Jetson T5000", "--driver", "580", "--platform", "linux-aarch64", "--python", "3.12"
    )
    assert result.exit_code == 0, result.stdout
    top = result.stdout.split("Plan 2:")[0]
    assert "(aarch64)" in top and "sm_110" in top and "cover Jetson T5000" in top
    thor = _facts(HostInfo(os="Linux", arch="aarch64", jetson_l4t="R38.2.1"), gpus=())
    orin = _facts(HostInfo(os="Linux", arch="aarch64", jetson_l4t="R36.4.3"), gpus=())
    assert constraints_for(M, HostFlags(python="3.12"), thor).accelerator == "cuda"
    assert constraints_for(M, HostFlags(python="3.12"), orin).accelerator == "jetson"
