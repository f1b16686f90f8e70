"""Container images (compat/images.toml) that fit a plan, the host's driver, and what the plan must compile.

What an image must carry depends on what runs in it, not only on the wheels:

- pip wheels of torch, vLLM, JAX … bring their own CUDA libraries, so an image needs none of its own;
- Triton, which torch and vLLM wheels pull on Linux, builds a small C module with the host C compiler on its
  first kernel launch (``triton/runtime/build.py``: "Failed to find C compiler. Please specify via CC"),
  and torch.compile and vLLM run Triton kernels: the image needs gcc and Python's headers;
- extension builds (flash-attn from its PyPI source distribution, anything built with the user's own CUDA
  toolkit, given as ``--cuda``) need nvcc: an nvidia/cuda ``devel`` image of the plan's CUDA major.

So a plan gets ``python:X.Y-slim`` (nothing to compile), ``python:X.Y`` (gcc and headers; it builds on
buildpack-deps, https://hub.docker.com/_/python), or an nvidia/cuda ``devel`` image (nvcc), first; the
smallest nvidia/cuda image, ``base`` (the CUDA runtime only), comes next for those who want NVIDIA's image.
"""

from __future__ import annotations

from dataclasses import replace

from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.data.rows import NvidiaCudaTag
from cudadoctor.suggest.constraints import Constraints, Plan, short

__all__ = ["compiler_need", "os_python", "with_images"]

_OS_PYTHON_MATCH = "its python3 is the plan's"

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")  # fmt: skip


def os_python(matrix: CompatMatrix, os_name: str) -> str | None:
    """The python3 an nvidia/cuda image on ``os_name`` gets from its distribution (compat/images.toml
    ``base_os``): nvidia/cuda images have no Python of their own."""
    return next((o.python for o in matrix.base_oses if o.os == os_name), None)


def _ended(matrix: CompatMatrix, os_name: str) -> str | None:
    """ "Ubuntu 20.04's standard support ended in May 2025" when that month is before the data's date."""
    row = next((o for o in matrix.base_oses if o.os == os_name), None)
    if row is None or row.standard_support_end >= matrix.curated_as_of.strftime("%Y-%m"):
        return None
    year, month = row.standard_support_end.split("-")
    name = os_name.replace("ubuntu", "Ubuntu ")
    return f"{name}'s standard support ended in {_MONTHS[int(month) - 1]} {year}"


#: marks an image the driver cannot start: it becomes a caveat of the plan, not an image to use
_NOT_OFFERED = "not offered: "

#: packages whose wheels pull Triton on Linux (torch's Requires-Dist; vLLM requires torch)
_TRITON = ("torch", "vllm")

#: installed packages PyPI has only as source distributions that compile CUDA code (compat/ecosystem.toml:
#: flash-attn publishes sdists only; its setup fetches a prebuilt wheel when one matches, else runs nvcc)
_BUILT_WITH_NVCC = ("flash-attn", "flash_attn")


def compiler_need(c: Constraints, plan: Plan) -> tuple[str | None, str]:
    """What the plan must compile, and why: ``nvcc``, ``cc`` (a C compiler for Triton) or None."""
    if plan.cuda is not None and c.cuda_ceiling is not None and c.cuda_ceiling.major == plan.cuda.major:
        return "nvcc", f"you build CUDA code with your CUDA {c.cuda_ceiling} toolkit (--cuda): it needs nvcc"
    built = [name for name, _v in c.installed_ecosystem if name in _BUILT_WITH_NVCC]
    if built:
        return "nvcc", f"the installed {built[0]} is built from source against torch: rebuilding it needs nvcc"
    if plan.target in _TRITON and c.platform.startswith("linux"):
        return "cc", "Triton (torch.compile, and every vLLM engine) compiles a C module with gcc at run time"
    return None, "nothing to compile: the wheels bring their own CUDA libraries"


def with_images(matrix: CompatMatrix, c: Constraints, plan: Plan) -> Plan:
    """The plan with the container images that fit it and the host's driver, the one to start from first.

    An nvidia/cuda image sets NVIDIA_REQUIRE_CUDA=cuda>=X.Y, which the NVIDIA Container Toolkit checks against
    the driver's own CUDA unless cuda-compat applies
    (https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/docker-specialized.html).
    """
    if plan.cuda is None:
        return plan
    need, why_need = compiler_need(c, plan)
    python = short(c.python) if c.python is not None else None
    images: list[tuple[str, str]] = []
    if need == "nvcc":
        images += _nvidia_cuda(matrix, c, plan.cuda, "devel", f"nvcc: {why_need}")
    if python is not None and need != "nvcc":
        if need is None:
            why = f"the plan's Python {python}; {why_need}: no CUDA image is needed"
            images.append((f"python:{python}-slim", why))
        else:
            why = f"the plan's Python {python}; {why_need}: this image (not -slim) has gcc and Python's headers"
            images.append((f"python:{python}", why + "; the wheels bring their own CUDA libraries"))
    if need != "nvcc":
        images += _nvidia_cuda(matrix, c, plan.cuda, "base", "the smallest NVIDIA image: the wheels bring the rest")
    for name, version in plan.packages:
        images += _framework_images(matrix, c, name, version, plan.cuda)
    refused = [f"{image.removeprefix(_NOT_OFFERED)}: {why}" for image, why in images if image.startswith(_NOT_OFFERED)]
    shown = tuple((image, why) for image, why in images if not image.startswith(_NOT_OFFERED))
    return replace(plan, images=shown, caveats=(*plan.caveats, *refused))


def _fits(c: Constraints, tag: NvidiaCudaTag, plan_cuda: Version, flavour: str, oses: tuple[str, ...]) -> bool:
    """A tag of the flavour on a base OS in data, the plan's CUDA major, no newer than the plan's CUDA or the
    driver's."""
    cuda = tag.cuda
    if tag.flavour != flavour or tag.variant or tag.os not in oses:
        return False
    if cuda.major != plan_cuda.major or (cuda.major, cuda.minor) > (plan_cuda.major, plan_cuda.minor):
        return False
    return c.driver_cuda is None or (cuda.major, cuda.minor) <= (c.driver_cuda.major, c.driver_cuda.minor)


def _nvidia_cuda(
    matrix: CompatMatrix, c: Constraints, plan_cuda: Version, flavour: str, role: str
) -> list[tuple[str, str]]:
    """The newest nvidia/cuda tag of a flavour that fits; an OS whose python3 is the plan's comes first among
    those of that CUDA, and an OS past its standard support is said so."""
    python = short(c.python) if c.python is not None else None
    oses = tuple(o.os for o in matrix.base_oses)  # newest first: the preferred one
    fitting = [
        (
            (tag.cuda.major, tag.cuda.minor),
            python is not None and os_python(matrix, tag.os or "") == python,
            tag.cuda,
            -oses.index(tag.os or ""),
            tag,
        )
        for tag in matrix.nvidia_cuda_tags
        if _fits(c, tag, plan_cuda, flavour, oses)
    ]
    if not fitting:
        return []
    # devel: the newest CUDA minor (nvcc's), then the plan's Python; base: the plan's Python first (the wheels
    # bring their CUDA, so the base's minor matters less than a Python the Dockerfile needs not add)
    order = (0, 1) if flavour == "devel" else (1, 0)
    _minor, same_python, cuda, _rank, best = max(fitting, key=lambda f: (f[order[0]], f[order[1]], f[2], f[3]))
    os_name = best.os or ""
    why = f"CUDA {cuda} {flavour} image, {role} (requires a driver with CUDA >= {short(cuda)}"
    why += f"; this one has {c.driver_cuda})" if c.driver_cuda else ")"
    if same_python:
        why += f"; {_OS_PYTHON_MATCH} {python}"
    elif python is not None:
        why += f"; its python3 is {os_python(matrix, os_name) or '?'}, not the plan's {python}"
    if ended := _ended(matrix, os_name):
        why += f"; {ended}"
    reference = matrix.nvidia_cuda_references(best)[0].removeprefix("docker.io/")
    return [(reference, why)]


def _framework_images(
    matrix: CompatMatrix, c: Constraints, name: str, version: str, plan_cuda: Version
) -> list[tuple[str, str]]:
    """The pytorch/pytorch, NGC PyTorch or vllm/vllm-openai images of a planned package version."""
    if name == "torch":
        found = [
            (f"pytorch/pytorch:{record.tag}", f"torch {version} with CUDA {record.cuda}")
            for record in matrix.pytorch_images
            if record.torch is not None and str(record.torch) == version and record.flavour == "runtime"
        ]
        return found + _ngc_pytorch(matrix, c, plan_cuda)
    if name == "vllm":
        return _vllm_image(matrix, c, version)
    return []


def _driver_floor(c: Constraints, cuda: Version) -> tuple[bool, str]:
    """(whether the driver runs an image whose NVIDIA_REQUIRE_CUDA is ``cuda``, the words)."""
    words = f"requires a driver with CUDA >= {short(cuda)}"
    if c.driver_cuda is None:
        return True, words
    fits = (c.driver_cuda.major, c.driver_cuda.minor) >= (cuda.major, cuda.minor)
    return fits, words + f"; this one has {c.driver_cuda}" + ("" if fits else ": it will not start")


def _vllm_image(matrix: CompatMatrix, c: Constraints, version: str) -> list[tuple[str, str]]:
    """vllm/vllm-openai:v<version>, with the CUDA it is built for and the driver that needs.

    vLLM's docker/Dockerfile builds the wheel and the image from one CUDA_VERSION, and the image starts from
    nvidia/cuda:${CUDA_VERSION} (https://github.com/vllm-project/vllm/blob/main/docker/Dockerfile); so where
    compat data has no CUDA for the image, it is *inferred* to be the CUDA of the release's wheel.
    """
    known = next((r for r in matrix.vllm_images if r.vllm is not None and str(r.vllm) == version), None)
    if known is None and matrix.vllm_image_scheme is None:
        return []
    release = matrix.vllm_release(Version(version))
    tag = known.tag if known is not None else f"v{version}"
    cuda = known.cuda if known is not None and known.cuda is not None else None
    label = ""
    if cuda is None and release is not None and release.cuda is not None:
        cuda, label = release.cuda, "inferred: the CUDA of its wheel (one Dockerfile builds both); "
    if cuda is None:
        return [(f"vllm/vllm-openai:{tag}", f"the vLLM {version} image; its CUDA is not in compat data")]
    fits, floor = _driver_floor(c, cuda)
    why = f"the vLLM {version} image: CUDA {short(cuda)} ({label}{floor})"
    return [(f"vllm/vllm-openai:{tag}", why)] if fits else [(_NOT_OFFERED + f"vllm/vllm-openai:{tag}", why)]


def _ngc_pytorch(matrix: CompatMatrix, c: Constraints, plan_cuda: Version) -> list[tuple[str, str]]:
    """NVIDIA's own PyTorch container of the plan's CUDA major whose CUDA the driver runs (its torch is
    NVIDIA's build, not the planned release)."""
    out = []
    for image in matrix.ngc_pytorch_images:
        try:
            cuda = Version(image.cuda or "")
        except ValueError:
            continue  # written as NVIDIA's notes write it ("10.1 Update 1"): not comparable
        if cuda.major != plan_cuda.major or image.torch is None:
            continue
        fits, floor = _driver_floor(c, cuda)
        if fits:
            floor += "; inferred from its CUDA: NVIDIA's release notes give no driver number"
            why = f"NVIDIA's PyTorch container {image.release}: its own torch {image.torch}, CUDA {cuda} ({floor})"
            out.append((f"nvcr.io/nvidia/pytorch:{image.tag or image.release + '-py3'}", why))
    return out
