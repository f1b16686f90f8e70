"""Issue #12 and #17: PyTorch's Linux aarch64 (SBSA) CUDA wheels have their own GPU targets, and CD113 reads
the list of the machine's platform (compat/torch.toml ``arch_list`` with ``aarch64 = true``).

The H200 snapshot supplies a real machine's facts; each test replaces the host's CPU architecture, the GPU
and the installed torch with the story's.
"""

from __future__ import annotations

from dataclasses import replace

from packaging.version import Version

from cudadoctor.checks.findings import Status
from cudadoctor.facts.model import GpuInfo, InstalledPackage, Source, SourceKind
from cudadoctor.testing import run_check

ASSUMED = Source(SourceKind.ASSUMED, "story")


def _story(facts, *, arch: str, gpu: tuple[str, str], torch: str, variant: str, cuda: str):
    pkg = InstalledPackage("torch", Version(torch), "/opt/venv/lib/python3.12/site-packages", ASSUMED, variant, cuda)
    return replace(
        facts,
        host=replace(facts.host, arch=arch),
        gpus=(GpuInfo(0, gpu[0], gpu[1], ASSUMED),),
        packages={"torch": pkg},
    )


def test_a100_on_aarch64_with_torch_2_7_1_cu128_fails_cd113(h200):
    # The 2.7 aarch64 cu128 build targets 9.0, 10.0 and 12.0 only (pytorch/pytorch#146378, #148169).
    facts = _story(
        h200, arch="aarch64", gpu=("NVIDIA A100-SXM4-80GB", "8.0"), torch="2.7.1+cu128", variant="cu128", cuda="12.8"
    )
    finding = run_check("CD113", facts)
    assert finding.status is Status.FAIL
    assert "its build targets are sm_90 sm_100 sm_120" in finding.message


def test_a100_on_x86_64_with_the_same_torch_is_covered(h200):
    facts = _story(
        h200, arch="x86_64", gpu=("NVIDIA A100-SXM4-80GB", "8.0"), torch="2.7.1+cu128", variant="cu128", cuda="12.8"
    )
    assert run_check("CD113", facts).status is Status.OK


def test_gh200_with_torch_2_7_0_cu128_aarch64_is_covered(h200):
    facts = _story(
        h200, arch="aarch64", gpu=("NVIDIA GH200 480GB", "9.0"), torch="2.7.0+cu128", variant="cu128", cuda="12.8"
    )
    assert run_check("CD113", facts).status is Status.OK


def test_jetson_thor_with_torch_2_9_1_cu128_aarch64_fails_cd113(h200):
    # sm_110 is not in the cu128 aarch64 list and there is no PTX to JIT from (OpenRAL/openral#167 measured it).
    facts = _story(h200, arch="aarch64", gpu=("NVIDIA Thor", "11.0"), torch="2.9.1+cu128", variant="cu128", cuda="12.8")
    finding = run_check("CD113", facts)
    assert finding.status is Status.FAIL
    assert "sm_80 sm_90 sm_100 sm_120" in finding.message


def test_aarch64_release_without_a_sourced_list_could_not_judge(h200):
    # 2.8's aarch64 builds are not confirmed (compat/notes/torch.md): no x86_64 list stands in for them.
    facts = _story(
        h200, arch="aarch64", gpu=("NVIDIA GH200 480GB", "9.0"), torch="2.8.0+cu128", variant="cu128", cuda="12.8"
    )
    finding = run_check("CD113", facts)
    assert finding.status is Status.UNKNOWN and "no arch list" in finding.reason


def test_gtx_1070_ti_with_a_cu111_nightly_of_march_2021_fails_cd113(h200):
    # pytorch/pytorch#53164: the nightly's targets were sm_50 sm_70 sm_80 sm_86 (pytorch/builder e4425d1).
    facts = _story(
        h200,
        arch="x86_64",
        gpu=("GeForce GTX 1070 Ti", "6.1"),
        torch="1.9.0.dev20210302+cu111",
        variant="cu111",
        cuda="11.1",
    )
    finding = run_check("CD113", facts)
    assert finding.status is Status.FAIL
    assert "sm_50 sm_70 sm_80 sm_86" in finding.message
