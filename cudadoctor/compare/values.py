"""What ``compare`` compares on each node, and how strictly.

Values are read straight from a snapshot's or report's JSON document (``facts``), never by decoding
the whole model: a fleet of 10,000 reports must compare in seconds. Each compared fact has a policy:

* ``match``: every node of a pool must have the same value (the NCCL that loads and its network plugin,
  the torch build and its CUDA variant, the CUDA runtime major, the cuDNN that loads, Python X.Y);
* ``branch``: the same driver branch (the major number: 550.54.15 and 550.90.07 are one branch);
* ``pool``: not judged but splitting nodes into pools compared separately (GPU model, count, MIG layout).
"""

from __future__ import annotations

import enum
import unicodedata
from collections.abc import Mapping
from typing import Any

from cudadoctor.record import record

__all__ = ["FACTS", "CompareFact", "Policy", "node_values"]


class Policy(str, enum.Enum):
    MATCH = "match"
    BRANCH = "branch"
    POOL = "pool"
    FLEET = "fleet"


@record
class CompareFact:
    key: str
    title: str
    policy: Policy


FACTS: tuple[CompareFact, ...] = (
    CompareFact("gpu_model", "GPU model", Policy.POOL),
    # judged across the whole fleet, before pools: a node that lost its driver or GPUs would otherwise be a
    # pool of its own, and its own majority
    CompareFact("gpus_visible", "GPUs and driver visible", Policy.FLEET),
    CompareFact("well_formed", "report readable", Policy.FLEET),
    CompareFact("gpu_count", "GPU count", Policy.POOL),
    CompareFact("mig_layout", "MIG layout", Policy.POOL),
    CompareFact("driver_branch", "driver branch", Policy.BRANCH),
    CompareFact("driver", "driver version", Policy.MATCH),
    CompareFact("nccl", "NCCL that loads", Policy.MATCH),
    CompareFact("nccl_net_plugin", "NCCL network plugin", Policy.MATCH),
    CompareFact("torch", "torch build", Policy.MATCH),
    CompareFact("cuda_runtime_major", "CUDA runtime major", Policy.MATCH),
    CompareFact("cudnn", "cuDNN that loads", Policy.MATCH),
    CompareFact("python", "Python", Policy.MATCH),
)

#: The driver's patch version may differ within a branch without harm (rolling upgrades); it is shown
#: but only the branch is judged, so ``driver`` is informational unless a baseline pins it.
INFORMATIONAL = frozenset({"driver"})


def _get(mapping: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(mapping, Mapping):
            return None
        mapping = mapping.get(key)
    return mapping


def _str(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    # a name is compared as people read it: zero-width and other format characters, and runs of spaces,
    # must not put two nodes with the same GPU or version into two groups
    cleaned = " ".join("".join(c for c in unicodedata.normalize("NFKC", value) if c.isprintable()).split())
    return cleaned or None


def _items(value: Any) -> list[Mapping[str, Any]]:
    """The objects of a JSON list; anything else (a wrongly typed field) counts as none."""
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _gpus(facts: Mapping[str, Any]) -> dict[str, str | None]:
    gpus = _items(facts.get("gpus"))
    names = sorted({name for g in gpus if (name := _str(g.get("name")))})
    mig = sorted(str(g.get("mig_mode")) for g in gpus if g.get("mig_mode") == "Enabled")
    return {
        "gpu_model": " + ".join(names) if names else None,
        "gpu_count": str(len(gpus)),
        "mig_layout": f"{len(mig)} GPU(s) in MIG mode" if mig else "MIG off",
    }


def _loaded_copy(facts: Mapping[str, Any], library: str) -> str | None:
    """The copy a framework loads: the pip wheel a framework pins when there is one, else the first other copy.

    torch and JAX load the cuDNN and NCCL of the nvidia-* wheels they pin before anything on the
    loader's path (their preload of the wheels' libraries), so a pip copy wins when present.
    """
    copies = [c for c in _items(facts.get(library)) if _str(c.get("version"))]
    pip = [c for c in copies if c.get("origin") == "pip"]
    chosen = (pip or copies)[:1]
    return f"{chosen[0]['version']} ({chosen[0].get('origin')})" if chosen else None


def _torch(facts: Mapping[str, Any]) -> str | None:
    torch = _get(facts, "packages", "torch")
    if not isinstance(torch, Mapping):
        return None
    build = _str(_get(torch, "torch_build", "version")) or _str(torch.get("version"))
    variant = _str(torch.get("cuda_variant"))
    return f"{build} ({variant})" if build and variant and "+" not in build else build


def _cuda_major(facts: Mapping[str, Any]) -> str | None:
    runtime = _str(_get(facts, "cuda_wheels", "runtime_version"))
    if runtime is None:
        runtime = _str(_get(facts, "packages", "torch", "cuda_build"))
    return runtime.split(".")[0] if runtime else None


def _env(facts: Mapping[str, Any], name: str) -> str | None:
    for var in _items(_get(facts, "host", "env")):
        if var.get("name") == name:
            return _str(var.get("value"))
    return None


#: The fields compare reads and the JSON type each must have (a snapshot ``check --from`` would refuse).
_SHAPES: tuple[tuple[tuple[str, ...], type | tuple[type, ...]], ...] = (
    (("gpus",), list), (("nccl",), list), (("cudnn",), list), (("host",), dict), (("host", "env"), list),
    (("driver",), (dict, type(None))), (("packages",), dict), (("python",), (dict, type(None))),
)  # fmt: skip


def _well_formed(facts: Mapping[str, Any]) -> str:
    """``yes``, or which field has the wrong type: such a node is named, never counted as agreeing."""
    for path, kinds in _SHAPES:
        parent = _get(facts, *path[:-1]) if len(path) > 1 else facts
        if isinstance(parent, Mapping) and path[-1] in parent and not isinstance(parent[path[-1]], kinds):
            return f"no: facts.{'.'.join(path)} has the wrong type"
    return "yes"


def node_values(facts: Mapping[str, Any]) -> dict[str, str | None]:
    """Every compared fact of one node, as text (None: the node does not have it).

    The driver is the loaded kernel module's version where it was read (what runs), else the agreed one.
    """
    driver = _str(_get(facts, "driver", "kernel_module", "version")) or _str(_get(facts, "driver", "version"))
    python = _str(_get(facts, "python", "version"))
    values: dict[str, str | None] = {
        **_gpus(facts),
        "gpus_visible": "yes" if _items(facts.get("gpus")) and isinstance(facts.get("driver"), Mapping) else "no",
        "well_formed": _well_formed(facts),
        "driver": driver,
        "driver_branch": driver.split(".")[0] if driver else None,
        "nccl": _loaded_copy(facts, "nccl"),
        "nccl_net_plugin": _env(facts, "NCCL_NET_PLUGIN") or _env(facts, "NCCL_NET"),
        "torch": _torch(facts),
        "cuda_runtime_major": _cuda_major(facts),
        "cudnn": _loaded_copy(facts, "cudnn"),
        "python": ".".join(python.split(".")[:2]) if python else None,
    }
    return values
