"""check --deep --nccl: the worker command lines, and every way a worker can answer, replayed."""

from __future__ import annotations

import json

import pytest

from cudadoctor.checks.findings import Status
from cudadoctor.facts.model import Facts, HostInfo, RuntimeInfo
from cudadoctor.probes.runtime import MARKER, parse_worker_output, probe_nccl_smoke
from cudadoctor.probes.runtime import nccl_argv as worker_argv
from cudadoctor.testing import run_check
from tests.conftest import FakeRunner, make_ctx

PY = "/usr/bin/python3"
PORT = 29512


def _ctx(runner: FakeRunner):
    ctx = make_ctx(runner=runner, python=PY)
    ctx._cache["python.env"] = type("Env", (), {"executable": PY, "site_paths": ("/site",)})()
    return ctx


def _reply(rank: int, **out) -> str:
    return "noise from torch\n" + MARKER + json.dumps({"probe": "nccl", "rank": rank, "world": 2, **out}) + "\n"


def _argv(rank: int) -> list[str]:
    return worker_argv(PY, rank, 2, str(PORT), 60.0, "/site")


def test_two_ranks_agree():
    runner = FakeRunner()
    for rank in (0, 1):
        runner.add(_argv(rank), _reply(rank, ok=True, nccl="2.28.9"))
    smoke = probe_nccl_smoke(_ctx(runner), 2, timeout=60.0, port=PORT)
    assert (smoke.world_size, smoke.ok, str(smoke.nccl), smoke.error) == (2, True, "2.28.9", None)
    assert sorted(runner.calls) == sorted(tuple(_argv(r)) for r in (0, 1))
    assert runner.timeouts == [75.0, 75.0]


def test_a_rank_that_fails_or_hangs_is_named():
    runner = FakeRunner()
    runner.add(_argv(0), _reply(0, ok=False, error="DistBackendError: NCCL error: unhandled system error"))
    runner.add(_argv(1), error="timed out after 75 s")
    smoke = probe_nccl_smoke(_ctx(runner), 2, timeout=60.0, port=PORT)
    assert smoke.ok is False
    assert smoke.error == "rank 0: DistBackendError: NCCL error: unhandled system error"


def test_one_gpu_is_not_run():
    ctx = _ctx(FakeRunner())
    assert probe_nccl_smoke(ctx, 1, port=PORT) is None
    assert ctx.errors[-1].message == "the NCCL test needs two GPUs; 1 found"


@pytest.mark.parametrize("stdout", ["", "garbage", MARKER + "{not json"])
def test_unreadable_worker_output(stdout):
    assert parse_worker_output(stdout) is None


def test_cd806_reports_the_failure_and_skips_when_not_run():
    runner = FakeRunner()
    runner.add(_argv(0), _reply(0, ok=False, error="NCCL error: invalid usage"))
    runner.add(_argv(1), _reply(1, ok=False, error="NCCL error: invalid usage"))
    smoke = probe_nccl_smoke(_ctx(runner), 2, timeout=60.0, port=PORT)
    facts = Facts(
        host=HostInfo(os="Linux", arch="x86_64"), runtime=RuntimeInfo(python=PY, timeout=30.0, nccl_smoke=smoke)
    )
    finding = run_check("CD806", facts)
    assert finding.status is Status.FAIL
    assert finding.message == "an NCCL all-reduce across 2 GPUs failed: rank 0: NCCL error: invalid usage"
    skipped = Facts(host=HostInfo(os="Linux", arch="x86_64"), runtime=RuntimeInfo(python=PY, timeout=30.0))
    assert run_check("CD806", skipped).status is Status.NOT_APPLICABLE


def test_world_size_is_what_cuda_sees_not_what_nvml_lists():
    from cudadoctor.facts.codec import facts_from_json
    from cudadoctor.probes.runtime import visible_gpus
    from tests.conftest import fixture_text

    two = facts_from_json(fixture_text("h200-deep", "deep-2gpu.json"))
    assert visible_gpus(two.runtime) == 2
    hidden = facts_from_json(fixture_text("h200-deep", "deep-s3.json"))  # CUDA_VISIBLE_DEVICES="" on the H200
    assert len(hidden.gpus) == 1 and visible_gpus(hidden.runtime) == 0
