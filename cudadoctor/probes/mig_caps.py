"""The MIG devices of one GPU, from the driver's MIG capability files, for when NVML does not answer.

The NVIDIA driver lists each GPU instance and compute instance as a capability (MIG user guide, "Device Nodes and
Capabilities", https://docs.nvidia.com/datacenter/tesla/mig-user-guide/device-nodes-and-capabilities.html):
``/proc/driver/nvidia/capabilities/gpu<minor>/mig/gi<G>/access`` for a GPU instance and ``…/gi<G>/ci<C>/access``
for a compute instance in it, ``<minor>`` being the GPU's device-node minor (``/dev/nvidia<minor>``, the ``Device
Minor`` of ``/proc/driver/nvidia/gpus/*/information``). A MIG device, what CUDA runs on, is a compute instance: a
GPU instance without one gives CUDA nothing. GPU instances exist only in MIG mode, so any ``gi<G>`` shows MIG on.

In a container the NVIDIA Container Toolkit hides ``/proc/driver/nvidia`` and injects, for each MIG device it
gives, the device node ``/dev/nvidia-caps/nvidia-cap<N>``; ``/proc/driver/nvidia-caps/mig-minors`` names each
minor ``N`` (``gpu0/gi1/ci0/access 6``), the table the toolkit itself reads
(https://github.com/NVIDIA/nvidia-container-toolkit, internal/nvcaps).
"""

from __future__ import annotations

import posixpath
import re

from cudadoctor.facts.model import Source, SourceKind
from cudadoctor.probes.context import ProbeContext
from cudadoctor.record import record

__all__ = ["CAPABILITIES", "MIG_MINORS", "MigCaps", "mig_from_caps", "parse_mig_minors"]

CAPABILITIES = "/proc/driver/nvidia/capabilities"
MIG_MINORS = "/proc/driver/nvidia-caps/mig-minors"
CAP_NODES = "/dev/nvidia-caps"

_COMPUTE_INSTANCE = re.compile(r"gpu([0-9]{1,9})/gi[0-9]{1,9}/ci[0-9]{1,9}/access")
_CAP_NODE = re.compile(r"nvidia-cap([0-9]{1,9})")


@record
class MigCaps:
    """The MIG devices (compute instances) of one GPU the capability files show, and where that was read."""

    devices: int
    source: Source


def parse_mig_minors(text: str) -> dict[int, str]:
    """``minor -> capability name`` from ``mig-minors`` (lines ``config 1``, ``gpu0/gi1/ci0/access 6``)."""
    names: dict[int, str] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and re.fullmatch(r"[0-9]{1,9}", parts[1]):
            names.setdefault(int(parts[1]), parts[0])
    return names


def mig_from_caps(ctx: ProbeContext, minor: int) -> MigCaps | None:
    """The MIG devices of the GPU with device minor ``minor``; None when the files do not show MIG mode."""
    base = f"{CAPABILITIES}/gpu{minor}/mig"
    instances = ctx.fs.glob(base, "gi*")
    if instances:
        computes = [c for gi in instances for c in ctx.fs.glob(gi, "ci*") if ctx.fs.exists(posixpath.join(c, "access"))]
        return MigCaps(len(computes), Source(SourceKind.FILE, f"{base}/gi*/ci*/access"))
    if ctx.fs.is_dir(base):
        return None  # the driver's own view, with no GPU instance: MIG mode off, or on with none created
    return _from_cap_nodes(ctx, minor)


def _from_cap_nodes(ctx: ProbeContext, minor: int) -> MigCaps | None:
    nodes = [
        n for n in (_CAP_NODE.fullmatch(posixpath.basename(p)) for p in ctx.fs.glob(CAP_NODES, "nvidia-cap*")) if n
    ]
    if not nodes:
        return None
    try:
        names = parse_mig_minors(ctx.fs.read_text(MIG_MINORS, limit=1024 * 1024))
    except FileNotFoundError:
        return None
    except OSError as exc:
        ctx.fail("gpus", f"cannot read: {exc.strerror or exc}", MIG_MINORS)
        return None
    given = 0
    for node in nodes:
        match = _COMPUTE_INSTANCE.fullmatch(names.get(int(node.group(1)), ""))
        given += bool(match and int(match.group(1)) == minor)
    if not given:
        return None
    return MigCaps(given, Source(SourceKind.FILE, f"{CAP_NODES}/nvidia-cap* named in {MIG_MINORS}"))
