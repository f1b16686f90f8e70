"""The Slurm recipes of examples/slurm/, on a real slurmctld and three slurmd started here.

The cluster (munged, slurmctld, slurmd for gpu001-gpu003, all on 127.0.0.1) is started by the fixture and
killed at teardown. Without root or without Debian's slurm-wlm and munge, the tests skip and say why;
with CUDADOCTOR_REQUIRE_SLURM=1 (.ci/run sets it when the packages installed) they fail instead.
"""

from __future__ import annotations

import glob
import json
import os
import shlex
import subprocess
from collections.abc import Iterator

import pytest

from tests.fleet.slurm_cluster import SlurmCluster, missing, wait_for
from tests.fleet.support import EXAMPLES, REPO, cudadoctor_bin, h200_snapshot

pytestmark = pytest.mark.slow

NODES = ("gpu001", "gpu002", "gpu003")
SBATCH = os.path.join(EXAMPLES, "slurm", "cudadoctor-fleet.sbatch")
HEALTHCHECK = os.path.join(EXAMPLES, "slurm", "cudadoctor-healthcheck.sh")
#: The README's srun line (the test checks the README still says it).
SRUN = """srun --ntasks-per-node=1 sh -c 'cudadoctor snapshot -o "reports/$SLURMD_NODENAME.json"'"""


def _cannot(reason: str) -> None:
    if os.environ.get("CUDADOCTOR_REQUIRE_SLURM") == "1":
        pytest.fail(f"Slurm recipe could not run although CUDADOCTOR_REQUIRE_SLURM=1: {reason}")
    pytest.skip(f"Slurm recipe not run: {reason}")


def _healthcheck_wrapper(directory: str, bindir: str, conf: str) -> str:
    """slurmd's HealthCheckProgram: the example script, for the nodes that have a ``hc/NODE.args`` file.

    slurmd gives the program only SLURMD_NODENAME, so the wrapper names the test's slurm.conf and cudadoctor;
    each finished run is counted in ``hc/NODE.runs``.
    """
    hc = os.path.join(directory, "hc")
    os.makedirs(hc, exist_ok=True)
    path = os.path.join(directory, "healthcheck")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(
            "#!/bin/sh\n"
            f'args={shlex.quote(hc)}/"$SLURMD_NODENAME.args"\n'
            '[ -f "$args" ] || exit 0\n'
            f"export SLURM_CONF={shlex.quote(conf)} CUDADOCTOR={shlex.quote(bindir)}/cudadoctor\n"
            'CUDADOCTOR_ARGS=$(cat "$args") /bin/sh ' + shlex.quote(HEALTHCHECK) + "\n"
            f'echo done >> {shlex.quote(hc)}/"$SLURMD_NODENAME.runs"\n'
        )
    os.chmod(path, 0o755)  # noqa: S103 - slurmd runs it
    return path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[SlurmCluster]:
    reason = missing()
    if reason:
        _cannot(reason)
    directory = str(tmp_path_factory.mktemp("slurm"))
    bindir = cudadoctor_bin(directory)
    conf = os.path.join(directory, "slurm.conf")
    slurm = SlurmCluster(directory, NODES, health_check=_healthcheck_wrapper(directory, bindir, conf))
    slurm.env["PATH"] = f"{bindir}:{slurm.env['PATH']}"
    try:
        slurm.start()
    except (OSError, TimeoutError, subprocess.SubprocessError) as exc:
        logs = slurm.logs()
        slurm.stop()
        _cannot(f"the daemons did not start ({exc}); their logs:\n{logs}")
    try:
        yield slurm
    finally:
        slurm.stop()


def _compare(slurm: SlurmCluster, reports: str) -> tuple[int, dict]:
    result = slurm.run(["cudadoctor", "compare", reports, "-f", "json"], timeout=60)
    return result.returncode, json.loads(result.stdout)


def test_the_readme_shows_the_tested_srun_line():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as handle:
        readme = handle.read()
    assert SRUN in readme
    with open(SBATCH, encoding="utf-8") as handle:
        assert SRUN in handle.read()


def test_sbatch_snapshots_every_node_and_compares(cluster, tmp_path):
    result = cluster.run(["sbatch", f"--nodes={len(NODES)}", "--wait", "--output=fleet-%j.out", SBATCH],
                         timeout=180, cwd=str(tmp_path))  # fmt: skip
    (out,) = glob.glob(str(tmp_path / "fleet-*.out"))
    with open(out, encoding="utf-8") as handle:
        text = handle.read()
    assert result.returncode == 0, f"{result.stderr}\n{text}\n{cluster.logs()}"
    assert sorted(os.listdir(tmp_path / "reports")) == [f"{n}.json" for n in NODES]
    assert f"✓ {len(NODES)} node(s) agree on every compared fact" in text


def test_srun_then_compare_names_the_node_with_another_nccl_plugin(cluster, tmp_path):
    run = cluster.run(["sh", "-c", f"mkdir -p reports && {SRUN.replace('srun ', f'srun --nodes={len(NODES)} ')}"],
                      timeout=120, cwd=str(tmp_path))  # fmt: skip
    assert run.returncode == 0, run.stderr
    # gpu003 again, its tasks started with another NCCL network plugin (as a node whose environment differs)
    odd = cluster.run(["sh", "-c", f"srun --nodelist=gpu003 --export=ALL,NCCL_NET_PLUGIN=ofi {SRUN[5:]}"],
                      timeout=120, cwd=str(tmp_path))  # fmt: skip
    assert odd.returncode == 0, odd.stderr
    code, doc = _compare(cluster, str(tmp_path / "reports"))
    assert code == 1
    assert doc["outliers"] == ["gpu003"]
    (diff,) = doc["pools"][0]["differences"]
    assert diff["fact"] == "nccl_net_plugin" and diff["expected"] is None and diff["basis"] == "majority"


def _runs(slurm: SlurmCluster, node: str) -> int:
    try:
        with open(os.path.join(slurm.dir, "hc", f"{node}.runs"), encoding="utf-8") as handle:
            return len(handle.readlines())
    except FileNotFoundError:
        return 0


def _health(slurm: SlurmCluster, node: str, args: str | None) -> None:
    """Set what the health check of ``node`` runs (None: nothing) and wait for two complete runs of it."""
    path = os.path.join(slurm.dir, "hc", f"{node}.args")
    if args is None:
        if os.path.exists(path):
            os.remove(path)
        return
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(args)
    start = _runs(slurm, node)
    wait_for(f"two health checks on {node}", lambda: _runs(slurm, node) >= start + 2, 60)


def test_healthcheck_drains_with_a_cudadoctor_reason_and_resumes(cluster, tmp_path):
    healthy = h200_snapshot(str(tmp_path), "healthy.json")
    broken = h200_snapshot(str(tmp_path), "broken.json", cuda_visible_devices="")
    try:
        _health(cluster, "gpu002", f"--from {broken}")
        state, reason = cluster.node_state("gpu002")
        assert state in ("drained", "draining"), cluster.logs()
        assert reason.startswith("cudadoctor: CD104 CUDA_VISIBLE_DEVICES='' hides all 1 GPU(s)")
        assert cluster.node_state("gpu001") == ("idle", "none")
        _health(cluster, "gpu002", f"--from {healthy}")
        assert cluster.node_state("gpu002") == ("idle", "none")
    finally:
        _health(cluster, "gpu002", None)


def test_healthcheck_leaves_an_administrators_drain_and_a_doctor_that_cannot_run_alone(cluster, tmp_path):
    broken = h200_snapshot(str(tmp_path), "broken.json", cuda_visible_devices="")
    try:
        _health(cluster, "gpu001", f"--from {tmp_path}/no-such-snapshot.json")  # cudadoctor exits 2
        assert cluster.node_state("gpu001") == ("idle", "none")
        admin = cluster.run(["scontrol", "update", "nodename=gpu001", "state=drain", "reason=maintenance: cable"])
        assert admin.returncode == 0, admin.stderr
        _health(cluster, "gpu001", f"--from {broken}")
        assert cluster.node_state("gpu001")[1] == "maintenance: cable"
    finally:
        _health(cluster, "gpu001", None)
        cluster.run(["scontrol", "update", "nodename=gpu001", "state=resume"])
