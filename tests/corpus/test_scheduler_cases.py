"""The Ray cases of the corpus get the scheduler's fix (num_gpus=1), not ``unset CUDA_VISIBLE_DEVICES`` (#16 g)."""

from __future__ import annotations

import pytest

from cudadoctor.checks.findings import Status
from cudadoctor.data import CompatMatrix
from tests.corpus.builder import case_paths, load_case
from tests.corpus.replay import replay

RAY_CASES = [p for p in case_paths("cases") if "/ray-" in p or "/verl-590-" in p]


@pytest.mark.parametrize("path", RAY_CASES, ids=lambda p: p.rstrip("/").split("/")[-2])
def test_ray_case_gets_num_gpus(path):
    outcome = replay(load_case(path), CompatMatrix())
    finding = next(f for f in outcome.findings if f.code == "CD104")
    assert finding.status is Status.FAIL
    assert finding.remediation is not None
    assert finding.remediation.commands == ("@ray.remote(num_gpus=1)",)


def test_there_are_ray_cases():
    assert len(RAY_CASES) >= 3
