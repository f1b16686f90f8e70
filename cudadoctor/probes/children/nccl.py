"""One rank of the NCCL all-reduce of ``check --deep --nccl``, through ``torch.distributed``.

Run as ``<python> -I nccl.py <rank> <world size> <port> <timeout s> [<site directories>]`` (see
``__init__.py``), one process per GPU. torch is imported through :func:`load` (importlib), in this
child process only. It prints one result line behind :data:`MARKER` on stdout.
"""

from __future__ import annotations

import datetime
import importlib
import json
import os
import sys
from types import ModuleType
from typing import Any

#: Prefix of the one result line on stdout (cudadoctor.probes.runtime.MARKER).
MARKER = "@@cudadoctor-runtime@@"
#: Prefix of the progress lines on stderr (cudadoctor.probes.runtime.STAGE_MARKER).
STAGE = "@@cudadoctor-stage@@"


# --- the result protocol (the same in every child) ------------------------------------------------


def stage(name: str) -> None:
    """Say on stderr which stage starts, so a child that crashes still says where."""
    sys.stderr.write(STAGE + name + "\n")
    sys.stderr.flush()


def mapped() -> list[str]:
    """The shared libraries this process has mapped (``/proc/self/maps``), in mapping order."""
    found: list[str] = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                parts = line.rstrip("\n").split(None, 5)
                if len(parts) == 6:
                    path = parts[5].replace(" (deleted)", "")
                    if path.startswith("/") and ".so" in path and path not in found:
                        found.append(path)
    except OSError:
        pass
    return found


def emit(out: dict[str, Any]) -> None:
    """Print the one result line, on a line of its own: a library may have written to stdout."""
    out["maps"] = mapped()
    sys.stdout.write("\n" + MARKER + json.dumps(out, default=str) + "\n")
    sys.stdout.flush()


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return (type(exc).__name__ + ": " + text)[:1000]


def add_sites(joined: str) -> None:
    """Put the site directories cudadoctor examined back (``-I`` dropped them) before site-packages."""
    extra = [p for p in joined.split(os.pathsep) if p and p not in sys.path]
    if extra:
        at = next((i for i, p in enumerate(sys.path) if p.endswith(("site-packages", "dist-packages"))), len(sys.path))
        sys.path[at:at] = extra


def load(module: str) -> ModuleType:
    """Import a framework module: here, in this child process only, never in cudadoctor's own."""
    return importlib.import_module(module)


# --- the all-reduce -------------------------------------------------------------------------------


def all_reduce(out: dict[str, Any], rank: int, world: int, limit: float) -> None:
    """Every rank adds a tensor of ones: each must then hold ``world`` everywhere."""
    torch: Any = load("torch")
    dist: Any = load("torch.distributed")
    torch.cuda.set_device(rank)
    stage("init")
    dist.init_process_group("nccl", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=limit))
    stage("all_reduce")
    x = torch.ones(1024, device=f"cuda:{rank}")
    dist.all_reduce(x)
    torch.cuda.synchronize()
    out["ok"] = bool((x == world).all())
    out["nccl"] = ".".join(str(p) for p in torch.cuda.nccl.version())
    dist.destroy_process_group()


def main(argv: list[str]) -> None:
    rank, world, port, limit = int(argv[0]), int(argv[1]), argv[2], float(argv[3])
    add_sites(argv[4] if len(argv) > 4 else "")
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    out: dict[str, Any] = {"probe": "nccl", "rank": rank, "world": world, "ok": False}
    try:
        all_reduce(out, rank, world, limit)
    except BaseException as exc:
        out["error"] = one_line(exc)
    emit(out)


if __name__ == "__main__":
    main(sys.argv[1:])
