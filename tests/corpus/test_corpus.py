"""The real-case corpus: every case is diagnosed (its expected codes at the expected severity, with a fix)
and every healthy configuration comes out without an error.

Cases not diagnosed yet are listed in ``missed.toml`` with the reason; such a case must stay missed
(a case that starts being diagnosed fails here until it is taken off the list), so the list is always
the exact set of known gaps. ``python -m tests.corpus.figure`` prints the figure per class.
"""

from __future__ import annotations

import os

import pytest
import tomllib

from cudadoctor.app import exit_code
from cudadoctor.checks.findings import Status
from cudadoctor.data import CompatMatrix
from tests.corpus.builder import CORPUS, case_paths, load_case
from tests.corpus.replay import replay

MATRIX = CompatMatrix()

with open(os.path.join(CORPUS, "missed.toml"), "rb") as _handle:
    MISSED: dict[str, str] = tomllib.load(_handle)["missed"]


def _id(path: str) -> str:
    return os.path.basename(os.path.dirname(path))


@pytest.mark.parametrize("path", case_paths("cases"), ids=_id)
def test_case_is_diagnosed(path: str) -> None:
    case = load_case(path)
    outcome = replay(case, MATRIX)
    case_id = case["case"]["id"]
    if case_id in MISSED:
        assert not outcome.diagnosed, f"{case_id} is diagnosed now: take it off tests/corpus/missed.toml"
        pytest.xfail(MISSED[case_id])
    assert outcome.diagnosed, f"expected {outcome.missing}; reported {outcome.errors or 'no error'}"


#: The healthy configurations on which `check --fail-on-unknown` exits 1 (issue #30 item 2), with the one fact
#: that is really unknown for each check that could not judge. The exact set: a check that starts judging one of
#: them fails here until its entry is taken off.
UNKNOWN_ON_HEALTHY: dict[str, dict[str, str]] = {
    "colab-t4-2023-driver-525-cuda-11.8": {
        "CD114": "NVIDIA's open kernel modules README lists Tesla T4 only from 575.51.02; no sourced oldest branch for "
        "Turing (compat/notes/gpu-devices.md)",
    },
    "colab-t4-2025-driver-12.4-toolkit-12.5": {
        "CD114": "as above, on R550 (550.54.15)",
    },
    "gtx1080ti-torch260-cu126": {
        "CD113": "no arch list for torch 2.6.0+cu126 in compat/torch.toml",
        "CD114": "Pascal is not in the open kernel modules README (Turing and newer); no sourced oldest branch",
    },
    "ngc-pytorch-20-06-a100-driver450": {
        "CD113": "no arch list for NGC's torch 1.6.0a0 build",
        "CD114": "no README of the open kernel modules before R515 (the A100 is listed from 515.48.07)",
        "CD404": "torch 1.6.0a0 (an NGC build) is not in compat/torch.toml",
    },
    "ray-gpu-task-num-gpus-1": {
        "CD115": "the NVIDIA A10G's product line is in no NVIDIA table read (compat/gpus.toml lacks it), and R535's "
        "end of life (June 2026) is the data center GPUs' lifecycle",
    },
    "vllm-openai-082-h100-driver550": {
        "CD113": "no arch list for torch 2.6.0 cu124 in compat/torch.toml",
    },
}


@pytest.mark.parametrize("path", case_paths("healthy"), ids=_id)
def test_healthy_configuration_has_no_error(path: str) -> None:
    case = load_case(path)
    outcome = replay(case, MATRIX)
    assert outcome.errors == ()
    # `check --fail-on-unknown` (the recommended CI gate) passes, or the unknowns are the listed ones.
    unknown = {f.code for f in outcome.findings if f.status is Status.UNKNOWN}
    listed = UNKNOWN_ON_HEALTHY.get(case["case"]["id"], {})
    assert unknown == set(listed), {f.code: f.reason for f in outcome.findings if f.status is Status.UNKNOWN}
    assert exit_code(outcome.findings, "error", fail_on_unknown=True) == (1 if listed else 0)


@pytest.mark.parametrize("path", case_paths("cases") + case_paths("healthy"), ids=_id)
def test_case_records_its_provenance(path: str) -> None:
    case = load_case(path)
    meta = case["case"]
    assert all(meta.get(key) for key in ("id", "class", "project", "source", "date"))
    assert meta["id"] == _id(path)
    assert meta["source"].startswith("https://")
    if "/healthy/" in path:
        assert "expect" not in case
        return
    assert all(meta.get(key) for key in ("symptom", "root_cause", "fix", "confirmed_by"))
    assert meta["confirmed_by"] in ("maintainer", "reporter")
    assert case["expect"], "a broken case names what cudadoctor must report"


def test_missed_list_names_only_real_cases() -> None:
    ids = {_id(p) for p in case_paths("cases")}
    assert set(MISSED) <= ids


def test_at_most_ten_cases_per_class() -> None:
    classes: dict[str, int] = {}
    for path in case_paths("cases"):
        cls = load_case(path)["case"]["class"]
        classes[cls] = classes.get(cls, 0) + 1
    assert max(classes.values()) <= 10
