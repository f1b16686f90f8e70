"""A real container-without-GPUs case replayed as a root (``check --root /proc/<pid>/root --assume-driver …``):
CD120 is judged on the root of a running container, with the host's driver given by the flag, and an image or copy
(no device in its /dev) stays not judged (issue #28, 5)."""

from __future__ import annotations

import os
import shutil
import stat

import pytest
from pyfakefs.fake_filesystem_unittest import Patcher

from cudadoctor.assume import apply_assumptions
from cudadoctor.checks.access import IMAGE_ROOT
from cudadoctor.checks.engine import run_checks
from cudadoctor.checks.findings import Status
from cudadoctor.data import CompatMatrix
from cudadoctor.probes.collect import collect_facts
from tests.conftest import make_ctx
from tests.corpus.builder import CORPUS, build, load_case
from tests.corpus.replay import replay  # noqa: F401 - imports every probe module outside the fake file system

CASE = load_case(os.path.join(CORPUS, "cases", "docker-pytorch-27-run-without-gpus", "case.toml"))
ROOT = "/proc/4242/root"
MATRIX = CompatMatrix()


@pytest.mark.parametrize(("live_dev", "status"), [(True, Status.FAIL), (False, Status.NOT_APPLICABLE)])
def test_docker_pytorch_27_as_a_running_containers_root(live_dev, status):
    machine = build(CASE)
    MATRIX.gpu_models  # noqa: B018 - the GPU table is read before the fake file system hides compat/
    with Patcher() as patcher:
        assert patcher.fs is not None
        machine.write(ROOT)
        # the host's view of the container: its /proc does not show the driver here, --assume-driver gives it
        shutil.rmtree(f"{ROOT}/proc/driver")
        if live_dev:  # the runtime's default devices in a running container's /dev
            patcher.fs.create_file(f"{ROOT}/dev/null", st_mode=stat.S_IFCHR | 0o666)
        ctx = make_ctx(root=ROOT, env=machine.env, runner=machine.runner, python=machine.python)
        probed = collect_facts(ctx)
    facts = apply_assumptions(probed, driver=str(CASE["env"]["driver"]["version"]))
    assert facts.host.container is not None and IMAGE_ROOT in facts.host.container.markers  # the probe's word
    (finding,) = [f for f in run_checks(facts, MATRIX) if f.code == "CD120"]
    assert finding.status is status, finding
    assert status is Status.FAIL or "/dev" in (finding.reason or ""), finding.reason
    if status is Status.FAIL:
        assert finding.remediation is not None and "--gpus all" in finding.remediation.commands[0]
        assert finding.evidence["host driver (assumed)"].startswith("435.21")
