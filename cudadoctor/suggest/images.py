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

import datetime
import re
from dataclasses import replace

from packaging.version import Version

from cudadoctor.bounded import version_or_none
from cudadoctor.data import CompatMatrix
from cudadoctor.data.rows import NvidiaCudaTag
from cudadoctor.suggest.constraints import Constraints, Plan, short

__all__ = ["compiler_need", "os_python", "with_images"]

_OS_PYTHON_MATCH = "its python3 is the plan's"


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
    # %B is the C locale's English month name: Python never calls setlocale by itself.
    return f"{name}'s standard support ended in {datetime.date(int(year), int(month), 1):%B %Y}"


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
    if any(name in ("torch", "vllm") for name, _version in plan.packages):
        images += _ngc_newest(matrix, c)
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
        return _vllm_image(matrix, c, version) + _triton_vllm(matrix, c, version)
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


def _driver_number(text: str | None) -> Version | None:
    """A driver as NVIDIA's release notes write it (``418.xx``, ``384.111+``, ``440.33.01``, ``510``)."""
    match = re.match(r"\d+(?:\.\d+)*", (text or "").replace(".xx", ""))
    return Version(match.group(0)) if match else None


def _datacenter(c: Constraints) -> bool:
    return bool(c.gpus) and all(gpu.segment == "datacenter" for gpu in c.gpus)


def _forward_branch(c: Constraints, forward: tuple[str, ...]) -> str | None:
    """The entry of an NGC release's data center driver list (``470.57``: "470.57 or later R470"; ``535``: any
    R535) the driver meets, on data center GPUs only: forward compatibility, through the cuda-compat package the
    container carries, runs on data center GPUs only (compat/cuda.toml ``forward_compat``); None otherwise."""
    driver = c.driver
    if driver is None or not _datacenter(c):
        return None
    return next((e for e in forward if (n := _driver_number(e)) and n.major == driver.major and driver >= n), None)


def _forward_words(driver: Version, branch: str, asked: str) -> str:
    later = f"{branch} or later R{driver.major}" if "." in branch else f"any R{branch} driver"
    return (
        f"driver {driver} is older than {asked}, but NVIDIA allows {later} on a data center GPU (forward "
        "compatibility: the cuda-compat package in the container, data center GPUs only)"
    )


def _ngc_floor(c: Constraints, floor: str | None, forward: tuple[str, ...]) -> tuple[bool | None, str]:
    """Whether the driver meets an NGC release's Driver Requirements: the driver its CUDA needs, or, on a data
    center GPU, a driver of one of the branches the notes list ("470.57 (or later R470)": forward compatibility,
    the container's cuda-compat). None when the notes give no number or the driver is unknown."""
    low, driver = _driver_number(floor), c.driver
    if low is None or driver is None:
        return None, ""
    if driver >= low:
        return True, f"its release notes ask for driver {floor} or later; this one is {driver}"
    branch = _forward_branch(c, forward)
    if branch is not None:
        return True, _forward_words(driver, branch, f"the {floor} its release notes ask for")
    where = f" ({', '.join(forward)} on a data center GPU)" if forward else ""
    return False, f"its release notes ask for driver {floor} or later{where}; this one is {driver}"


def _release_floor(c: Constraints, cuda: Version, floor: str | None, forward: tuple[str, ...]) -> tuple[bool, str]:
    """Whether the driver meets an NGC release: its release notes' Driver Requirements where they give a number,
    else the driver its CUDA needs, or on a data center GPU a branch its forward compatibility allows."""
    fits, words = _ngc_floor(c, floor, forward)
    if fits is not None:
        return fits, words
    fits, words = _driver_floor(c, cuda)
    branch = _forward_branch(c, forward)
    if not fits and branch is not None and c.driver is not None:
        return True, _forward_words(c.driver, branch, f"the driver of CUDA {short(cuda)}")
    return fits, words + "; inferred from its CUDA: NVIDIA's release notes give no driver number"


def _ngc_pytorch(matrix: CompatMatrix, c: Constraints, plan_cuda: Version) -> list[tuple[str, str]]:
    """NVIDIA's own PyTorch container of the plan's CUDA major whose driver floor the driver meets (its torch is
    NVIDIA's build, not the planned release)."""
    out = []
    for image in matrix.ngc_pytorch_images:
        cuda = version_or_none(image.cuda)
        if cuda is None or cuda.major != plan_cuda.major or image.torch is None:
            continue
        fits, floor = _release_floor(c, cuda, image.min_driver_linux, image.forward_compat_drivers)
        if fits:
            why = f"NVIDIA's PyTorch container {image.release}: its own torch {image.torch}, CUDA {cuda} ({floor})"
            out.append((f"nvcr.io/nvidia/pytorch:{image.tag or image.release + '-py3'}", why))
    return out


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split(".") if part.isdigit())


def _ngc_newest(matrix: CompatMatrix, c: Constraints) -> list[tuple[str, str]]:
    """For a driver older than some NGC release's floor: the newest release of each NGC image (of those whose
    release notes compat data has with driver numbers) that it meets, as a caveat."""
    rows = [("nvcr.io/nvidia/pytorch", r.release, r.cuda, r.min_driver_linux, r.forward_compat_drivers)
            for r in matrix.ngc_pytorch_images]  # fmt: skip
    rows += [(r.image, r.release, r.cuda, r.min_driver_linux, r.forward_compat_drivers) for r in matrix.ngc_containers]
    if c.driver is None or not any((n := _driver_number(row[3])) and c.driver < n for row in rows):
        return []
    best: dict[str, tuple[str, str | None, str]] = {}
    for image, release, cuda, floor, forward in rows:
        fits, words = _ngc_floor(c, floor, forward)
        if fits is None and forward:  # no driver number: its CUDA's driver, or its forward compatibility
            known = version_or_none(cuda or "")
            fits, words = _release_floor(c, known, floor, forward) if known is not None else (None, "")
        if fits and (image not in best or _release_key(release) > _release_key(best[image][0])):
            best[image] = (release, cuda, words)
    if not best:
        return [(_NOT_OFFERED + "NGC containers", "no release in compat data whose driver floor this driver meets")]
    newest = "; ".join(f"{image} {release} (CUDA {cuda}: {words})" for image, (release, cuda, words) in best.items())
    why = f"the newest releases (of those in compat data) whose release notes' driver floor this driver meets: {newest}"
    return [(_NOT_OFFERED + "NGC containers", why)]


def _triton_vllm(matrix: CompatMatrix, c: Constraints, version: str) -> list[tuple[str, str]]:
    """NVIDIA's Triton Inference Server container with its own build of the planned vLLM release (the newest
    Triton release that has it), per Triton's Release Compatibility Matrix."""
    wanted = version_or_none(version)
    found = [
        r
        for r in matrix.ngc_containers
        if r.vllm is not None and r.tag is not None and wanted is not None
        and version_or_none(r.vllm.replace(" post", ".post").partition("+")[0]) == wanted
    ]  # fmt: skip
    newest = max(found, key=lambda r: _release_key(r.release), default=None)
    if newest is None or (cuda := version_or_none(newest.cuda)) is None:
        return []
    fits, floor = _release_floor(c, cuda, newest.min_driver_linux, newest.forward_compat_drivers)
    why = (
        f"NVIDIA's Triton Inference Server {newest.release} with its own vLLM build {newest.vllm}: CUDA {newest.cuda}, "
        f"whose toolkit's driver is {newest.cuda_driver} ({floor})"
    )
    reference = f"{newest.image}:{newest.tag}"
    return [(reference, why)] if fits else [(_NOT_OFFERED + reference, why)]
