"""``cudadoctor snapshot`` once on every node of a Ray cluster, gathered into a directory, then ``compare``.

    pip install cudadoctor            # on every node, like the job's own environment
    python cudadoctor_fleet.py --address auto --out reports/
    cudadoctor compare reports/       # the script runs it too, and exits with its status

Each node's snapshot is named by its host name (with the start of its Ray node id when several nodes share a
host). Needs only ``ray`` on the machine that runs it; cudadoctor itself never imports Ray.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from collections import Counter

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy


# No num_gpus, on purpose: a task that asks for GPUs waits until Ray can give it some, and then sees only those
# (Ray sets CUDA_VISIBLE_DEVICES to the GPUs it assigned: https://docs.ray.io/en/latest/ray-core/scheduling/accelerators.html).
# The doctor has to see every GPU of the node, as the driver does, and must run beside a job that holds them
# all. num_cpus=0 lets it run even on a node whose CPUs are all taken. Ray releases before ray-project/ray#54868
# also set CUDA_VISIBLE_DEVICES="" in tasks without GPUs (every GPU hidden);
# RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO=0 turns that off in the releases that have the switch.
@ray.remote(num_cpus=0, max_retries=0, runtime_env={"env_vars": {"RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "0"}})
def _snapshot(command: list[str], timeout: float) -> tuple[int, bytes, bytes]:
    try:
        proc = subprocess.run([*command, "snapshot"], capture_output=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 127, b"", str(exc).encode()
    return proc.returncode, proc.stdout, proc.stderr


def _names(nodes: list[dict]) -> dict[str, str]:
    """Ray node id -> file name: the host name, or host-<id prefix> where hosts repeat (several raylets per host)."""
    hosts = Counter(n["NodeManagerHostname"] for n in nodes)
    names = {}
    for node in nodes:
        host = re.sub(r"[^A-Za-z0-9._-]", "_", node["NodeManagerHostname"])
        names[node["NodeID"]] = host if hosts[node["NodeManagerHostname"]] == 1 else f"{host}-{node['NodeID'][:8]}"
    return names


def gather(out: str, command: list[str], timeout: float) -> list[str]:
    """Write ``OUT/<node>.json`` for every alive node; return the nodes whose snapshot failed."""
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    names = _names(nodes)
    refs = {
        names[n["NodeID"]]: _snapshot.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=n["NodeID"], soft=False)
        ).remote(command, timeout)
        for n in nodes
    }
    os.makedirs(out, exist_ok=True)
    failed = []
    for name, ref in refs.items():
        code, stdout, stderr = ray.get(ref, timeout=timeout + 60)
        if code != 0:
            failed.append(name)
            detail = stderr.decode(errors="replace")[-500:]
            print(f"{name}: cudadoctor snapshot exited {code}: {detail}", file=sys.stderr)
            continue
        with open(os.path.join(out, f"{name}.json"), "wb") as handle:
            handle.write(stdout)
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", default="auto", help="the Ray cluster (ray.init address); default: auto")
    parser.add_argument("--out", default="reports", help="directory for the snapshots; default: reports")
    parser.add_argument("--cudadoctor", default="cudadoctor", help="the command on the nodes; default: cudadoctor")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per node; default: 120")
    args = parser.parse_args(argv)
    ray.init(address=args.address, logging_level="warning")
    try:
        failed = gather(args.out, shlex.split(args.cudadoctor), args.timeout)
    finally:
        ray.shutdown()
    compare = subprocess.run([*shlex.split(args.cudadoctor), "compare", args.out], timeout=600, check=False)
    return 2 if failed else compare.returncode


if __name__ == "__main__":
    sys.exit(main())
