"""The Ray recipe (examples/ray/cudadoctor_fleet.py) on a real local Ray cluster of three nodes.

The nodes are three raylets on this machine (ray.cluster_utils.Cluster); one is started with another NCCL
network plugin in its environment, as a node whose image differs. Needs the ``fleet`` extra
(``pip install -e '.[fleet]'``, installed by .ci/run); without it the test skips and says so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.fleet.support import EXAMPLES, cudadoctor_bin

pytestmark = pytest.mark.slow

SCRIPT = os.path.join(EXAMPLES, "ray", "cudadoctor_fleet.py")


@pytest.fixture(scope="module")
def ray_cluster():
    pytest.importorskip("ray", reason="Ray recipe not run: ray is not installed (pip install -e '.[fleet]')")
    from ray.cluster_utils import Cluster

    small = {"num_cpus": 1, "object_store_memory": 80 << 20, "include_dashboard": False}
    cluster = Cluster(initialize_head=True, head_node_args=small)
    try:
        cluster.add_node(num_cpus=1, object_store_memory=80 << 20)
        cluster.add_node(num_cpus=1, object_store_memory=80 << 20, env_vars={"NCCL_NET_PLUGIN": "ofi"})
        cluster.wait_for_nodes(timeout=120)
        yield cluster
    finally:
        cluster.shutdown()


def test_one_snapshot_per_node_gathered_then_compared(ray_cluster, tmp_path):
    command = os.path.join(cudadoctor_bin(str(tmp_path)), "cudadoctor")
    out = tmp_path / "reports"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    result = subprocess.run(
        [sys.executable, SCRIPT, "--address", ray_cluster.address, "--out", str(out), "--cudadoctor", command],
        capture_output=True, text=True, timeout=300, check=False, env=env,
    )  # fmt: skip
    files = sorted(os.listdir(out))
    assert len(files) == 3, result.stderr
    documents = {}
    for name in files:
        with open(out / name, encoding="utf-8") as handle:
            documents[name] = json.load(handle)
    # No GPU was requested: Ray left CUDA_VISIBLE_DEVICES as the node had it.
    visible = {d["facts"]["visible"]["cuda_visible_devices"] for d in documents.values()}
    assert visible == {os.environ.get("CUDA_VISIBLE_DEVICES")}
    plugins = {n: [e["value"] for e in d["facts"]["host"]["env"] if e["name"] == "NCCL_NET_PLUGIN"]
               for n, d in documents.items()}  # fmt: skip
    (odd,) = [n[:-5] for n, p in plugins.items() if p == ["ofi"]]
    # compare's verdict is the script's exit status: one node differs.
    assert result.returncode == 1, result.stderr
    assert f"✗ 1 of 3 node(s) differ: {odd}" in result.stdout
    assert "NCCL network plugin: expected (none) (majority)" in result.stdout
