"""A Slurm cluster on this machine for the recipe tests: munged, slurmctld and one slurmd per node name.

Everything runs as root on 127.0.0.1, in one temporary directory (keys, sockets, state, spool, logs), on
free ports picked at start; several slurmd share the host through distinct node names and ports (Debian's
slurm-wlm is built with multiple-slurmd support: ``slurmd -N NAME``). Every wait is bounded; :meth:`stop`
kills the daemons it started, by their process ids.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from typing import IO

DAEMONS = ("munged", "slurmctld", "slurmd", "srun", "scontrol", "sinfo")


class Unavailable(Exception):
    """The cluster cannot run here: the message says why (for the skip)."""


def missing() -> str | None:
    """Why a Slurm cluster cannot be started here, or None."""
    if os.geteuid() != 0:
        return "needs root (slurmd and munged run as root here)"
    absent = [name for name in DAEMONS if shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin") is None]
    if absent:
        return f"{', '.join(absent)} not installed (apt-get install slurm-wlm munge; .ci/run does)"
    return None


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def wait_for(what: str, condition: Callable[[], bool], timeout: float, interval: float = 0.5) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


class SlurmCluster:
    def __init__(self, directory: str, nodes: Sequence[str], *, health_check: str | None = None) -> None:
        self.dir = directory
        self.nodes = tuple(nodes)
        self.health_check = health_check
        self.procs: list[subprocess.Popen[bytes]] = []
        self._outputs: list[IO[bytes]] = []
        ctld, slurmd, *node_ports = _free_ports(2 + len(self.nodes))
        self.conf = os.path.join(directory, "slurm.conf")
        self.env = {**os.environ, "SLURM_CONF": self.conf, "PATH": os.environ.get("PATH", "") + ":/usr/sbin"}
        self._write_conf(ctld, slurmd, node_ports)

    def _path(self, *parts: str) -> str:
        return os.path.join(self.dir, *parts)

    def _write_conf(self, ctld: int, slurmd: int, node_ports: Sequence[int]) -> None:
        for sub in ("munge", "state", "log", *(f"spool/{n}" for n in self.nodes)):
            os.makedirs(self._path(sub), exist_ok=True)
        os.chmod(self._path("munge"), 0o711)  # noqa: S103 - munged wants its socket's directory searchable
        lines = [
            "ClusterName=cudadoctor-test",
            "SlurmctldHost=localhost(127.0.0.1)",
            f"SlurmctldPort={ctld}",
            f"SlurmdPort={slurmd}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self._path('munge', 'munge.socket')}",
            f"StateSaveLocation={self._path('state')}",
            f"SlurmdSpoolDir={self._path('spool', '%n')}",
            f"SlurmctldPidFile={self._path('slurmctld.pid')}",
            f"SlurmdPidFile={self._path('slurmd-%n.pid')}",
            f"SlurmctldLogFile={self._path('log', 'slurmctld.log')}",
            f"SlurmdLogFile={self._path('log', 'slurmd-%n.log')}",
            "MailProg=/bin/true",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "SchedulerType=sched/builtin",
            "SelectType=select/cons_tres",
            "MpiDefault=none",
            "ReturnToService=2",
            "SlurmdTimeout=30",
        ]
        if self.health_check:
            lines += [f"HealthCheckProgram={self.health_check}", "HealthCheckInterval=2", "HealthCheckNodeState=ANY"]
        for name, port in zip(self.nodes, node_ports, strict=True):
            lines.append(
                f"NodeName={name} NodeHostname=localhost NodeAddr=127.0.0.1 Port={port} CPUs=1 RealMemory=200 "
                "State=UNKNOWN"
            )
        lines.append(f"PartitionName=test Nodes={','.join(self.nodes)} Default=YES MaxTime=5 State=UP")
        with open(self.conf, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")

    def _spawn(self, name: str, argv: Sequence[str]) -> None:
        log = open(self._path("log", f"{name}.out"), "wb")  # noqa: SIM115 - closed by stop()
        self._outputs.append(log)
        self.procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env, cwd=self.dir))

    def start(self) -> None:
        key = self._path("munge", "munge.key")
        with open(key, "wb") as handle:
            handle.write(os.urandom(1024))
        os.chmod(key, 0o400)
        munge = self._path("munge")
        self._spawn("munged", ["munged", "--foreground", "--force", f"--key-file={key}",
                               f"--socket={munge}/munge.socket", f"--pid-file={munge}/munged.pid",
                               f"--log-file={munge}/munged.log", f"--seed-file={munge}/seed"])  # fmt: skip
        wait_for("munged's socket", lambda: os.path.exists(f"{munge}/munge.socket"), 15)
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", self.conf])
        wait_for("slurmctld", lambda: self.run(["scontrol", "ping"], timeout=5).returncode == 0, 30)
        for node in self.nodes:
            self._spawn(f"slurmd-{node}", ["slurmd", "-D", "-N", node, "-f", self.conf])
        wait_for("every node idle", lambda: self.idle() == set(self.nodes), 45)

    def run(self, argv: Sequence[str], *, timeout: float = 30, **kwargs: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run(  # type: ignore[call-overload, no-any-return]
            list(argv), env=kwargs.pop("env", self.env), capture_output=True, text=True, timeout=timeout,
            check=False, **kwargs,
        )  # fmt: skip

    def node_state(self, node: str) -> tuple[str, str]:
        """(state, reason) as sinfo shows them: ``idle``/``drained``/``draining``…, the reason or ``none``."""
        out = self.run(["sinfo", "--noheader", f"--nodes={node}", "--format=%T|%E"], timeout=10).stdout
        state, _, reason = (out.splitlines() or ["|"])[0].partition("|")
        return state.strip(), reason.strip()

    def idle(self) -> set[str]:
        return {n for n in self.nodes if self.node_state(n)[0] == "idle"}

    def logs(self) -> str:
        parts = []
        for name in sorted(os.listdir(self._path("log"))):
            with open(self._path("log", name), encoding="utf-8", errors="replace") as handle:
                parts.append(f"--- {name}\n" + "".join(handle.readlines()[-15:]))
        return "\n".join(parts)

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        for log in self._outputs:
            log.close()
