"""CD130 (several MIG devices given to one process) and CD131 (MIG mode with no MIG device), on the real
H200 capture with its GPU put in MIG mode; the rule (cudadoctor/rules/mig.py) and `--assume-gpu` MIG profiles."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cudadoctor.assume import apply_assumptions, split_mig_profile
from cudadoctor.checks.findings import Status
from cudadoctor.facts.model import Facts, GpuInfo
from cudadoctor.rules.mig import mig_view
from cudadoctor.testing import run_check


def _mig(facts: Facts, *counts: int | None, cvd: str | None = None) -> Facts:
    """The capture's GPU repeated once per count, each in MIG mode with that many MIG devices."""
    base = facts.gpus[0]
    gpus = tuple(replace(base, index=i, mig_mode="Enabled", mig_devices=c) for i, c in enumerate(counts))
    return replace(facts, gpus=gpus, visible=replace(facts.visible, cuda_visible_devices=cvd))


def test_real_h200_without_mig_is_not_applicable(h200):
    assert h200.gpus and h200.gpus[0].mig_mode != "Enabled"
    assert run_check("CD130", h200).status is Status.NOT_APPLICABLE
    assert run_check("CD131", h200).status is Status.NOT_APPLICABLE


def test_one_mig_device_is_healthy(h200):
    facts = _mig(h200, 1)
    assert run_check("CD130", facts).status is Status.OK
    assert run_check("CD131", facts).status is Status.OK


def test_cd130_two_mig_devices_on_one_gpu_fail_with_the_per_process_fix(h200):
    finding = run_check("CD130", _mig(h200, 2))
    assert finding.status is Status.FAIL
    assert "given 2 MIG devices" in finding.message
    assert finding.remediation is not None
    assert "CUDA_VISIBLE_DEVICES=MIG-<uuid> python <script>.py" in finding.remediation.commands


def test_cd130_one_mig_device_on_each_of_two_gpus_fails(h200):
    assert run_check("CD130", _mig(h200, 1, 1)).status is Status.FAIL


def test_cd130_one_mig_uuid_selected_among_many_is_healthy(h200):
    facts = _mig(h200, 7, cvd="MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f")
    assert run_check("CD130", facts).status is Status.OK


def test_cd130_index_selects_one_gpu_of_two(h200):
    assert run_check("CD130", _mig(h200, 1, 3, cvd="0")).status is Status.OK
    assert run_check("CD130", _mig(h200, 1, 3, cvd="1")).status is Status.FAIL


def test_cd130_cannot_judge_without_nvml_counts_or_with_gpu_uuids(h200):
    assert run_check("CD130", _mig(h200, None)).status is Status.UNKNOWN
    unmappable = _mig(h200, 2, cvd="GPU-0f7d2c1e-0000-0000-0000-000000000000")
    assert run_check("CD130", unmappable).status is Status.UNKNOWN


def test_cd131_mig_mode_without_mig_device_fails(h200):
    finding = run_check("CD131", _mig(h200, 0))
    assert finding.status is Status.FAIL
    assert "CUDA_ERROR_NO_DEVICE" in finding.message
    assert finding.remediation is not None and finding.remediation.commands


def test_cd131_a_plain_gpu_beside_an_empty_mig_gpu_is_fine(h200):
    facts = _mig(h200, 0, 0)
    plain = replace(facts.gpus[1], mig_mode="Disabled", mig_devices=None)
    assert run_check("CD131", replace(facts, gpus=(facts.gpus[0], plain))).status is Status.OK


def test_rule_counts_mig_uuid_entries():
    gpu = GpuInfo(0, "NVIDIA A100-SXM4-80GB", "8.0", source=None, mig_mode="Enabled", mig_devices=3)  # type: ignore[arg-type]
    assert mig_view((gpu,), "MIG-a,MIG-b").devices == 2
    assert mig_view((gpu,), None).devices == 3


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("A100-SXM4-80GB MIG 3g.40gb", ("A100-SXM4-80GB", "3g.40gb")),
        ("H100 MIG 1g.10gb+me", ("H100", "1g.10gb+me")),
        ("NVIDIA A100-SXM4-80GB-MIG-3g.40gb", ("NVIDIA A100-SXM4-80GB", "3g.40gb")),
        ("A100", ("A100", None)),
    ],
)
def test_split_mig_profile(spec, expected):
    assert split_mig_profile(spec) == expected


def test_assume_gpu_with_mig_profile_gives_one_mig_device(h200):
    facts = apply_assumptions(h200, gpus=["A100-SXM4-80GB MIG 3g.40gb"])
    (gpu,) = facts.gpus
    assert gpu.compute_capability == "8.0" and gpu.mig_mode == "Enabled" and gpu.mig_devices == 1
    unset = replace(facts.visible, cuda_visible_devices=None)
    assert run_check("CD130", replace(facts, visible=unset)).status is Status.OK
    two = apply_assumptions(h200, gpus=["A100-SXM4-80GB MIG 3g.40gb"] * 2)
    assert run_check("CD130", replace(two, visible=unset)).status is Status.FAIL
