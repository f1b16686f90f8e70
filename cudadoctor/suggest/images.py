"""Container images (compat/images.toml) that fit a plan and the host's driver."""

from __future__ import annotations

from dataclasses import replace

from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.suggest.constraints import Constraints, Plan, short

__all__ = ["with_images"]

_OS_PREFERENCE = ("ubuntu24.04", "ubuntu22.04", "ubuntu20.04")

#: the python3 each Ubuntu release ships (https://packages.ubuntu.com/noble/python3,
#: https://packages.ubuntu.com/jammy/python3, https://packages.ubuntu.com/focal/python3); nvidia/cuda images
#: have no Python of their own, so `apt-get install python3` gives this one
_OS_PYTHON = {"ubuntu24.04": "3.12", "ubuntu22.04": "3.10", "ubuntu20.04": "3.8"}

#: Ubuntu releases past their standard support (https://ubuntu.com/about/release-cycle: 20.04 ended May 2025)
_OS_PYTHON_MATCH = "its python3 is the plan's"

_OS_END_OF_LIFE = {"ubuntu20.04": "Ubuntu 20.04's standard support ended in May 2025"}


def with_images(matrix: CompatMatrix, c: Constraints, plan: Plan) -> Plan:
    """The plan with the container images that fit it and the host's driver.

    An nvidia/cuda image sets NVIDIA_REQUIRE_CUDA=cuda>=X.Y, which the NVIDIA Container Toolkit checks against
    the driver's own CUDA unless cuda-compat applies
    (https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/docker-specialized.html).
    pip wheels bring their own CUDA runtime, so the image only has to run on the host.
    """
    images = _cuda_base(matrix, c, plan.cuda) if plan.cuda is not None else []
    if c.python is not None and plan.cuda is not None and not any(_OS_PYTHON_MATCH in why for _i, why in images):
        python = short(c.python)
        why = (
            f"the plan's Python {python}; the wheels bring their own CUDA runtime, and this image (not -slim) has "
            "the gcc Triton and torch.compile need (https://hub.docker.com/_/python)"
        )
        images.insert(0, (f"python:{python}", why))
    for name, version in plan.packages:
        images.extend(_framework_images(matrix, name, version))
    return replace(plan, images=tuple(images))


def _cuda_base(matrix: CompatMatrix, c: Constraints, plan_cuda: Version) -> list[tuple[str, str]]:
    """The newest runtime nvidia/cuda image of the plan's CUDA major, no newer than the plan or the driver.

    Among the OS releases of that CUDA, one whose python3 is the plan's Python comes first; an OS past its
    standard support is said so.
    """
    python = short(c.python) if c.python is not None else None
    fitting = []
    for tag in matrix.nvidia_cuda_tags:
        cuda = tag.cuda
        if tag.flavour != "runtime" or tag.variant or tag.os not in _OS_PREFERENCE:
            continue
        if cuda.major != plan_cuda.major or (cuda.major, cuda.minor) > (plan_cuda.major, plan_cuda.minor):
            continue
        if c.driver_cuda is not None and (cuda.major, cuda.minor) > (c.driver_cuda.major, c.driver_cuda.minor):
            continue
        same_python = python is not None and _OS_PYTHON.get(tag.os) == python
        fitting.append((cuda, same_python, -_OS_PREFERENCE.index(tag.os), tag.tag, tag.os))
    if not fitting:
        return []
    cuda, same_python, _rank, best, os_name = max(fitting)
    why = f"CUDA {cuda} runtime base (requires a driver with CUDA >= {short(cuda)}"
    why += f"; this one has {c.driver_cuda})" if c.driver_cuda else ")"
    if same_python:
        why += f"; {_OS_PYTHON_MATCH} {python}"
    if python is not None and not same_python:
        why += f"; its python3 is {_OS_PYTHON.get(os_name, '?')}, not the plan's {python}: install {python} yourself"
    if os_name in _OS_END_OF_LIFE:
        why += f"; {_OS_END_OF_LIFE[os_name]}"
    return [(f"nvidia/cuda:{best}", why)]


def _framework_images(matrix: CompatMatrix, name: str, version: str) -> list[tuple[str, str]]:
    """The pytorch/pytorch or vllm/vllm-openai images of a planned package version."""
    if name == "torch":
        return [
            (f"pytorch/pytorch:{record.tag}", f"torch {version} with CUDA {record.cuda}")
            for record in matrix.pytorch_images
            if record.torch is not None and str(record.torch) == version and record.flavour == "runtime"
        ]
    if name != "vllm":
        return []
    known = [r for r in matrix.vllm_images if r.vllm is not None and str(r.vllm) == version]
    if known:
        return [(f"vllm/vllm-openai:{known[0].tag}", f"the vLLM {version} image")]
    if matrix.vllm_image_scheme is not None:
        why = "from vLLM's documented tag scheme (v<version>); its CUDA is not in data"
        return [(f"vllm/vllm-openai:v{version}", why)]
    return []
