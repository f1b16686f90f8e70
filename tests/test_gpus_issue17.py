"""Issue #17, "GPUs": every GPU a user may type or NVML may report resolves to the compute capability
and brand its public source gives, an "A" variant is not folded into its namesake, a Kepler K80 is
known and reported as unsupported by CUDA 12+, and what no source confirms stays unknown (not guessed).

The expected values are written here from the sources (compat/gpus.toml ``[[meta.sources]]``), not
read back from the table: developer.nvidia.com/cuda-gpus for the current rows, the NVIDIA MIG User
Guide for H20, NVIDIA's TensorRT-LLM hardware list (L20 under Ada Lovelace, Ada = 8.9), the Jetson AGX
Thor Developer Kit guide (T5000 module), and NVIDIA's developer forum for the K80 (3.7).
"""

from __future__ import annotations

import pytest
from packaging.version import Version
from typer.testing import CliRunner

from cudadoctor.cli import app
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import DriverVersion
from cudadoctor.gpu_models import load_models, lookup, parse_gpu_spec
from cudadoctor.rules.gpus import gpu_brands
from cudadoctor.suggest import Constraints, Gpu, suggest_torch

M = CompatMatrix()
TABLE = M.gpu_models  # compat/gpus.toml alone (load_models adds the device list)
cli = CliRunner()

#: (name as NVML / nvidia-smi / a user writes it, compute capability, segment), from the sources above.
KNOWN = [
    ("NVIDIA GB10", "12.1", "workstation"),
    ("DGX Spark", "12.1", "workstation"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "12.0", "workstation"),
    ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "12.0", "workstation"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0", "workstation"),
    ("NVIDIA RTX PRO 4500 Blackwell Server Edition", "12.0", "workstation"),
    ("NVIDIA RTX PRO 5000 Blackwell", "12.0", "workstation"),
    ("NVIDIA RTX PRO 4500 Blackwell", "12.0", "workstation"),
    ("NVIDIA RTX PRO 4000 Blackwell", "12.0", "workstation"),
    ("NVIDIA RTX PRO 4000 Blackwell SFF Edition", "12.0", "workstation"),
    ("Jetson T5000", "11.0", "embedded"),
    ("Jetson T4000", "11.0", "embedded"),
    ("Jetson AGX Thor", "11.0", "embedded"),
    ("Jetson Thor", "11.0", "embedded"),
    ("NVIDIA B300 SXM6 AC", "10.3", "datacenter"),
    ("NVIDIA GB300", "10.3", "datacenter"),
    ("NVIDIA B200", "10.0", "datacenter"),
    ("NVIDIA GB200", "10.0", "datacenter"),
    ("NVIDIA GH200 480GB", "9.0", "datacenter"),
    ("NVIDIA H100 NVL", "9.0", "datacenter"),
    ("NVIDIA H20", "9.0", "datacenter"),
    ("NVIDIA L20", "8.9", "datacenter"),
    ("NVIDIA L4", "8.9", "datacenter"),
    ("NVIDIA L40", "8.9", "datacenter"),
    ("NVIDIA L40S", "8.9", "datacenter"),
    ("NVIDIA RTX 5000 Ada Generation Laptop GPU", "8.9", "workstation"),
    ("Jetson AGX Orin", "8.7", "embedded"),
    ("Jetson Orin NX", "8.7", "embedded"),
    ("Jetson Orin Nano", "8.7", "embedded"),
    ("NVIDIA A2", "8.6", "datacenter"),
    ("NVIDIA A16", "8.6", "datacenter"),
    ("NVIDIA A40", "8.6", "datacenter"),
    ("NVIDIA RTX A2000", "8.6", "workstation"),
    ("NVIDIA RTX A5000", "8.6", "workstation"),
    ("NVIDIA GeForce RTX 3050 Laptop GPU", "8.6", "geforce"),
    ("NVIDIA A30", "8.0", "datacenter"),
    ("Tesla T4", "7.5", "datacenter"),
    ("GeForce RTX 2080 with Max-Q Design", "7.5", "geforce"),
    ("Tesla K80", "3.7", "datacenter"),
]


@pytest.mark.parametrize(("name", "cc", "segment"), KNOWN, ids=[k[0] for k in KNOWN])
def test_named_gpu_resolves_to_its_sourced_compute_capability_and_segment(name: str, cc: str, segment: str) -> None:
    model = parse_gpu_spec(name, TABLE)
    assert (model.compute_capability, model.segment) == (cc, segment)
    assert model.source  # every row cites a [[meta.sources]] id (the loader checks that it exists)


@pytest.mark.parametrize(
    ("name", "brands"),
    [
        ("NVIDIA GeForce RTX 3050 Laptop GPU", ("geforce",)),
        ("Tesla K80", ("tesla", "nvidia")),  # a data-center part: NVML says Tesla or NVIDIA
        ("NVIDIA L20", ("tesla", "nvidia")),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", ("quadro", "quadrortx", "nvidiartx", "nvidia")),
        ("Jetson AGX Thor", None),  # no brand clause is known for Jetson modules: could not judge
    ],
)
def test_brand_candidates_follow_the_name_and_the_segment(name: str, brands: tuple[str, ...] | None) -> None:
    model = parse_gpu_spec(name, TABLE)
    assert gpu_brands(name, model.segment) == brands


#: Named in issue #17 and left out of compat/gpus.toml: no NVIDIA table read gives their compute
#: capability (compat/gpus.SOURCES.md, "Issue #17 item 3"). The curated table does not guess them; those of
#: NVIDIA's device list with an *inferred* value resolve through compat/gpu_devices.toml
#: (tests/test_gpu_devices.py), the rest stay unknown.
UNCONFIRMED = [
    "NVIDIA GeForce GTX 1660 Ti",
    "NVIDIA GeForce GTX 1650",
    "NVIDIA TITAN RTX",
    "Quadro RTX 4000",
    "Quadro RTX 8000",
    "NVIDIA A10G",
    "NVIDIA A800 80GB PCIe",
    "NVIDIA H800",
    "Tesla V100S-PCIE-32GB",
    "NVIDIA T4G",
    "NVIDIA GeForce RTX 3050 A Laptop GPU",
]
#: Of those, the ones no table gives a compute capability: not in NVIDIA's device list, or without an inferred one.
STILL_UNKNOWN = ["NVIDIA GeForce GTX 1660 Ti", "Tesla V100S-PCIE-32GB", "NVIDIA T4G"]


@pytest.mark.parametrize("name", UNCONFIRMED)
def test_unconfirmed_gpus_are_unknown_not_guessed(name: str) -> None:
    assert lookup(name, TABLE) is None
    with pytest.raises(ValueError, match="unknown GPU"):
        parse_gpu_spec(name, TABLE)
    if name in STILL_UNKNOWN:
        with pytest.raises(ValueError, match="unknown GPU"):
            parse_gpu_spec(name, load_models())
    else:
        assert parse_gpu_spec(name, load_models()).inferred


def test_rtx_3050_a_laptop_is_not_folded_into_the_ampere_rtx_3050() -> None:
    # NVIDIA's "A" part is another chip; the prefix "RTX 3050" (8.6) must not claim it.
    assert lookup("NVIDIA GeForce RTX 3050 A Laptop GPU", TABLE) is None
    assert lookup("NVIDIA GeForce RTX 3050 Ti Laptop GPU", TABLE).compute_capability == "8.6"  # type: ignore[union-attr]
    assert lookup("NVIDIA RTX A2000 8GB Laptop GPU", TABLE).name == "RTX A2000"  # type: ignore[union-attr]


def _torch_plans(driver: str, name: str, cc: str):  # type: ignore[no-untyped-def]
    drv = DriverVersion(driver)
    gpus = (Gpu(name, cc, "--gpu"),)
    c = Constraints(driver=drv, driver_cuda=M.cuda_for_driver(drv), gpus=gpus, python=Version("3.10"))
    return suggest_torch(M, c)


def test_k80_is_known_and_unsupported_by_cuda_12_and_newer() -> None:
    s = _torch_plans("580.95.05", "K80", "3.7")
    assert not s.plans
    dropped = [e for e in s.excluded if e.rule == "cuda-dropped-arch"]
    assert dropped and all("Kepler" in e.observed and "CUDA 11.x or older" in e.required for e in dropped)
    # On its last driver branch (R470) a CUDA 11 build with sm_37 is planned.
    old = _torch_plans("470.256.02", "K80", "3.7")
    assert old.plans and all(p.cuda < Version("12") for p in old.plans)


def test_cli_k80_says_kepler_and_cuda_11_not_unknown_gpu() -> None:
    r = cli.invoke(app, ["suggest", "--target", "torch", "--gpu", "Tesla K80", "--driver", "580.95.05", "--no-probe"])
    assert "unknown GPU" not in r.output
    assert "K80 (3.7)" in r.output and "Kepler" in r.output and "CUDA 11.x or older" in r.output


@pytest.mark.parametrize("name", ["NVIDIA L20", "Jetson AGX Thor", "NVIDIA RTX PRO 6000 Blackwell Server Edition"])
def test_cli_plans_for_newly_known_gpus(name: str) -> None:
    r = cli.invoke(app, ["suggest", "--target", "torch", "--gpu", name, "--driver", "580.95.05", "--no-probe"])
    assert r.exit_code == 0, r.output
    assert "Plan 1:" in r.output


def test_a_described_jetson_is_planned_for_arm_unless_told_otherwise() -> None:
    argv = ["suggest", "--target", "torch", "--gpu", "Jetson AGX Thor", "--driver", "580.95.05", "--no-probe"]
    r = cli.invoke(app, argv)
    assert "linux-aarch64" in r.output.splitlines()[1] and "Plan 1:" in r.output
    forced = cli.invoke(app, [*argv, "--platform", "linux-x86_64"])
    assert "linux-x86_64" in forced.output.splitlines()[1] and "Nothing fits" in forced.output
