"""Container images (compat/images.toml) that fit a plan and the host's driver."""

from __future__ import annotations

from dataclasses import replace

from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.suggest.constraints import Constraints, Plan, short

__all__ = ["with_images"]

_OS_PREFERENCE = ("ubuntu24.04", "ubuntu22.04", "ubuntu20.04")


def with_images(matrix: CompatMatrix, c: Constraints, plan: Plan) -> Plan:
    """The plan with the container images that fit it and the host's driver.

    An nvidia/cuda image sets NVIDIA_REQUIRE_CUDA=cuda>=X.Y, which the NVIDIA Container Toolkit checks against
    the driver's own CUDA unless cuda-compat applies
    (https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/docker-specialized.html).
    pip wheels bring their own CUDA runtime, so the image only has to run on the host.
    """
    images = _cuda_base(matrix, c, plan.cuda) if plan.cuda is not None else []
    for name, version in plan.packages:
        images.extend(_framework_images(matrix, name, version))
    return replace(plan, images=tuple(images))


def _cuda_base(matrix: CompatMatrix, c: Constraints, plan_cuda: Version) -> list[tuple[str, str]]:
    """The newest runtime nvidia/cuda image of the plan's CUDA major, no newer than the plan or the driver."""
    fitting = []
    for tag in matrix.nvidia_cuda_tags:
        cuda = tag.cuda
        if tag.flavour != "runtime" or tag.variant or tag.os not in _OS_PREFERENCE:
            continue
        if cuda.major != plan_cuda.major or (cuda.major, cuda.minor) > (plan_cuda.major, plan_cuda.minor):
            continue
        if c.driver_cuda is not None and (cuda.major, cuda.minor) > (c.driver_cuda.major, c.driver_cuda.minor):
            continue
        fitting.append((cuda, -_OS_PREFERENCE.index(tag.os), tag.tag))
    if not fitting:
        return []
    cuda, _os, best = max(fitting)
    why = f"CUDA {cuda} runtime base (requires a driver with CUDA >= {short(cuda)}"
    why += f"; this one has {c.driver_cuda})" if c.driver_cuda else ")"
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
