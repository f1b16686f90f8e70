"""CD7xx: the container context: the image's NVIDIA_REQUIRE_* and the toolkit's variables."""

# CD7xx: container and environment
#   CD701  the image's NVIDIA_REQUIRE_* requirements are met by this driver and these GPUs
#   CD702  NVIDIA_DISABLE_REQUIRE is spelled the way the NVIDIA Container Toolkit reads it
#   CD703  the image's CUDA_VERSION / NV_CUDNN_VERSION / NCCL_VERSION agree with what is installed

from __future__ import annotations

import re
from dataclasses import replace

from packaging.version import Version

from cudadoctor import gpu_models
from cudadoctor.bounded import version_or_none
from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.checks.hostfix import driver_fixed_by
from cudadoctor.data import CompatMatrix
from cudadoctor.errors import CompatDataError
from cudadoctor.facts.model import DriverInfo, Facts, GpuInfo, HostInfo, ManagedPlatform, ToolkitInstall
from cudadoctor.nvreq import Condition, RequirementError, brand_token, evaluate, parse_requirement
from cudadoctor.rules.gpus import gpu_brands

__all__ = ["CD701", "CD702", "CD703"]

_TRUE = {"1", "true", "yes", "on", "t", "y"}


def _env(host: HostInfo) -> dict[str, str]:
    return {v.name: v.value for v in host.env}


class CD701(Check):
    """The image's NVIDIA_REQUIRE_* conditions are met by the driver and GPUs.

    What it checks: every NVIDIA_REQUIRE_* variable (for example NVIDIA_REQUIRE_CUDA in nvidia/cuda
    images) evaluated as the NVIDIA Container Toolkit does: alternatives separated by spaces,
    conditions joined by commas, against the driver's version, the CUDA version it supports, and each
    GPU's compute capability and brand.

    Why it matters: when no alternative is met, `docker run --gpus` refuses to start the container
    with "unsatisfied condition: cuda>=X, please update your driver". Checking first (for example with
    --root and --assume-driver) says so before a deploy, and says which driver would do.

    How to fix: upgrade the host driver to one that supports the image's CUDA version, or use an
    image built for an older CUDA (on a managed platform, whose driver cannot be changed, only the latter).
    Setting NVIDIA_DISABLE_REQUIRE=1 only hides the check.
    """

    name = "nvidia-require-met"
    category = "host"

    def check(
        self,
        host: HostInfo,
        driver: DriverInfo,
        matrix: CompatMatrix,
        gpus: tuple[GpuInfo, ...] = (),
        platform: ManagedPlatform | None = None,
    ) -> Problem | None:
        env = _env(host)
        if env.get("NVIDIA_DISABLE_REQUIRE", "").strip().lower() in _TRUE:
            raise NotApplicable("NVIDIA_DISABLE_REQUIRE is set")
        requirements = {
            k: v for k, v in env.items() if k.startswith("NVIDIA_REQUIRE_") and k != "NVIDIA_REQUIRE_JETPACK"
        }
        if not requirements:
            raise NotApplicable("no NVIDIA_REQUIRE_* variable is set")
        facts_per_gpu = _requirement_facts(driver, gpus)
        unknown: list[str] = []
        for name, value in sorted(requirements.items()):
            if not value.strip():
                continue
            try:
                alternatives = parse_requirement(value)
            except RequirementError as exc:
                return Problem(
                    f"{name} is not a valid requirement ({exc}); the NVIDIA Container Toolkit will refuse to start "
                    "the container",
                    {name: value[:200]},
                    Remediation(f"Fix the value of {name} in the image.", ()),
                )
            results = [evaluate(alternatives, facts) for facts in facts_per_gpu]
            if all(r is True for r in results):
                continue
            if all(r is not False for r in results):  # unknown is not met: the gate must not pass on it
                unknown.append(name)
                continue
            problem = _unmet(name, value, alternatives, driver, gpus, facts_per_gpu, matrix)
            if platform is None:
                return problem
            cuda = f"CUDA {driver.cuda_api} or older" if driver.cuda_api else "the CUDA version this driver supports"
            fix = Remediation(f"{driver_fixed_by(platform)} Use an image built for {cuda}.", ())
            return replace(problem, remediation=fix)
        if unknown:
            raise CannotJudge(
                f"{', '.join(unknown)} depends on the driver's CUDA version or a GPU fact that is unknown"
                " (give --assume-driver / --assume-gpu when auditing an image)"
            )
        return None


def _requirement_facts(driver: DriverInfo, gpus: tuple[GpuInfo, ...]) -> list[dict[str, str | None]]:
    """Per GPU, what the requirement language compares: the driver, its CUDA, the GPU's arch and brand.

    The brand is NVML's when it was read, else the brands the GPU's model and compat/gpus.toml segment allow
    (:func:`cudadoctor.rules.gpus.gpu_brands`), so that a GeForce's unmet `cuda>=X` is not excused by the
    image's brand=tesla clauses.
    """
    common = {
        "cuda": str(driver.cuda_api) if driver.cuda_api else None,
        "driver": str(driver.version) if driver.version else None,
    }
    if not gpus:
        return [{**common, "_no_gpu": "1"}]
    facts = []
    for gpu in gpus:
        candidates = (brand_token(gpu.brand),) if gpu.brand else gpu_brands(gpu.name, None)
        if not candidates or candidates == (None,):
            candidates = gpu_brands(gpu.name, _segment(gpu))
        brand = "|".join(c for c in candidates if c) if candidates else None
        facts.append({**common, "arch": gpu.compute_capability, "brand": brand or None})
    return facts


def _segment(gpu: GpuInfo) -> str | None:
    """The GPU's segment in compat/gpus.toml; None when the table lacks the model or cannot be read (the GPU
    probe records an unreadable table as its reason, and a brand left unknown only makes CD701 less sure)."""
    try:
        return gpu_models.gpu_segment(gpu.name)
    except CompatDataError:
        return None


def _unmet(
    name: str,
    value: str,
    alternatives: list[list[Condition]],
    driver: DriverInfo,
    gpus: tuple[GpuInfo, ...],
    facts_per_gpu: list[dict[str, str | None]],
    matrix: CompatMatrix,
) -> Problem:
    shown = ", ".join(str(c) for c in alternatives[0]) if alternatives else value
    evidence = {
        name: value if len(value) <= 200 else value[:200] + "…",
        "driver": f"{driver.version} (supports CUDA {driver.cuda_api or 'unknown'})",
    }
    for gpu, facts in zip(gpus, facts_per_gpu, strict=False):
        evidence[f"GPU {gpu.index}"] = f"{gpu.name} (brand {facts.get('brand') or 'unknown'})"
    return Problem(
        f"{name} is not met: no alternative holds for this driver"
        + (f" and GPU(s) {', '.join(g.name for g in gpus)}" if gpus else "")
        + f'; `docker run --gpus` fails with "unsatisfied condition: {shown}"',
        evidence,
        Remediation(_driver_fix(alternatives, facts_per_gpu, matrix), ()),
    )


def _driver_fix(
    alternatives: list[list[Condition]], facts_per_gpu: list[dict[str, str | None]], matrix: CompatMatrix
) -> str:
    """Which driver branch satisfies the requirement: the `cuda>=X` clause's minimum driver, and the
    branches of the brand clauses that hold for these GPUs."""
    cuda = next((c.value for alt in alternatives for c in alt if c.prop == "cuda" and c.op in (">=", ">")), None)
    parts = []
    if cuda is not None:
        needed = matrix.min_driver_for_cuda(Version(cuda))
        branch = f"the R{needed.major} branch ({needed} or newer)" if needed else f"a driver that supports CUDA {cuda}"
        parts.append(f"Upgrade the host driver to {branch}, which supports CUDA {cuda}")
    branches = sorted(
        {
            c.value
            for alt in alternatives
            if any(c.prop == "brand" for c in alt)
            and all(evaluate([[b]], facts) is not False for b in alt if b.prop == "brand" for facts in facts_per_gpu)
            for c in alt
            if c.prop == "driver" and c.op == ">="
        },
        key=lambda v: Version(v),
    )
    if branches:
        parts.append(f"or one of the driver branches the image accepts for this GPU's brand: R{', R'.join(branches)}")
    text = "; ".join(parts) or "Upgrade the host driver so that the requirement holds"
    return text + "; or use an image built for the CUDA version this driver supports."


class CD702(Check):
    """NVIDIA_DISABLE_REQUIRE is spelled as the NVIDIA Container Toolkit reads it.

    What it checks: whether NVIDIA_DISABLE_REQUIRES (with an S) is set.

    Why it matters: the toolkit reads NVIDIA_DISABLE_REQUIRE (no S). The misspelling circulates in
    issue threads as a workaround and silently does nothing.

    How to fix: rename the variable to NVIDIA_DISABLE_REQUIRE, or better, fix the driver/image mismatch
    that made you want it (see CD701).
    """

    name = "disable-require-spelling"
    category = "host"
    severity = Status.WARN

    def check(self, host: HostInfo) -> Problem | None:
        env = _env(host)
        if "NVIDIA_DISABLE_REQUIRES" not in env:
            return None
        return Problem(
            "NVIDIA_DISABLE_REQUIRES is set, but the NVIDIA Container Toolkit reads NVIDIA_DISABLE_REQUIRE: "
            "the setting has no effect",
            {"NVIDIA_DISABLE_REQUIRES": env["NVIDIA_DISABLE_REQUIRES"]},
            Remediation("Rename it.", (f"export NVIDIA_DISABLE_REQUIRE={env['NVIDIA_DISABLE_REQUIRES']}",)),
        )


#: Image variables that describe what the image's packages installed (nvidia/cuda images), and the
#: library copy each one describes.
_IMAGE_CLAIMS = (("CUDA_VERSION", "toolkit"), ("NV_CUDNN_VERSION", "cudnn"), ("NCCL_VERSION", "nccl"))


def _claimed(value: str) -> Version | None:
    match = re.match(r"(\d+(?:\.\d+){1,3})", value.strip())
    return version_or_none(match.group(1)) if match else None  # bounded: CUDA_VERSION=9…9 (5,000 digits)


#: version.json keys of components, which number their own patch level: CUDA 12.8 Update 1 (CUDA_VERSION
#: 12.8.1) ships cuda_cudart 12.8.90 and cuda_nvcc 12.8.93 (the release notes' "CUDA Toolkit Major Component
#: Versions" table, https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/#cuda-toolkit-major-component-versions).
#: A component shares the release's major.minor only, so that is what is compared.
_COMPONENT_KEYS = ("#cuda_cudart", "#cuda_nvcc")


def _toolkit_release(toolkit: ToolkitInstall) -> Version:
    """The toolkit's version in the numbering CUDA_VERSION uses: a component's version cut to major.minor."""
    version = toolkit.version or Version("0")  # callers pass toolkits with a version
    where = toolkit.source.where if toolkit.source else ""
    if where.endswith(_COMPONENT_KEYS):
        return Version(f"{version.major}.{version.minor}")
    return version


def _same(claim: Version, found: Version) -> bool:
    """9.14.0.64 claims the same as 9.14.0 (a file name keeps three parts): compare the common prefix."""
    n = min(len(claim.release), len(found.release))
    return claim.release[:n] == found.release[:n]


class CD703(Check):
    """The image's version variables agree with what is installed.

    What it checks: CUDA_VERSION, NV_CUDNN_VERSION and NCCL_VERSION (set by nvidia/cuda images) against the
    system toolkit, cuDNN and NCCL cudadoctor found; pip wheels are not what these variables describe.

    Why it matters: after a package upgrade or removal in a derived image these variables keep describing the
    base image, and tools and people that trust them (vLLM's collect-env prints NCCL_VERSION) report the wrong
    version.

    How to fix: update or unset the variable in the Dockerfile (ENV), or reinstall the version it names.
    """

    name = "image-env-matches-installed"
    category = "host"
    severity = Status.WARN

    def check(self, host: HostInfo, facts: Facts) -> Problem | None:
        env = {v.name: v.value for v in host.env}
        found_by_kind = {
            "toolkit": [_toolkit_release(t) for t in facts.toolkits if t.version is not None],
            "cudnn": [c.version for c in facts.cudnn if c.origin == "system" and c.version is not None],
            "nccl": [c.version for c in facts.nccl if c.origin == "system" and c.version is not None],
        }
        drift = {}
        for name, kind in _IMAGE_CLAIMS:
            claim = _claimed(env.get(name, ""))
            found = found_by_kind[kind]
            if claim is None or not found:
                continue
            if not any(_same(claim, f) for f in found):
                drift[name] = f"says {env[name]}, installed: {', '.join(str(f) for f in found)}"
        if not drift:
            return None
        return Problem(
            "image variables contradict what is installed: " + "; ".join(f"{k} {v}" for k, v in drift.items()),
            drift,
            Remediation("Update or unset these ENV lines in the Dockerfile.", ()),
        )
