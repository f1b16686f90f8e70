"""CD7xx: the container context: the image's NVIDIA_REQUIRE_* and the toolkit's variables."""

# CD7xx: container and environment
#   CD701  the image's NVIDIA_REQUIRE_* requirements are met by this driver and these GPUs
#   CD702  NVIDIA_DISABLE_REQUIRE is spelled the way the NVIDIA Container Toolkit reads it

from __future__ import annotations

from cudadoctor.checks._base import Check, Skip
from cudadoctor.findings import Problem, Remediation, Status
from cudadoctor.model import DriverInfo, GpuInfo, HostInfo
from cudadoctor.nvreq import RequirementError, brand_token, evaluate, parse_requirement

__all__ = ["CD701", "CD702"]

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
    image built for an older CUDA. Setting NVIDIA_DISABLE_REQUIRE=1 only hides the check.
    """

    name = "nvidia-require-met"
    category = "host"

    def check(self, host: HostInfo, driver: DriverInfo, gpus: tuple[GpuInfo, ...] = ()) -> Problem | None:
        env = _env(host)
        if env.get("NVIDIA_DISABLE_REQUIRE", "").strip().lower() in _TRUE:
            raise Skip("NVIDIA_DISABLE_REQUIRE is set")
        requirements = {
            k: v for k, v in env.items() if k.startswith("NVIDIA_REQUIRE_") and k != "NVIDIA_REQUIRE_JETPACK"
        }
        if not requirements:
            raise Skip("no NVIDIA_REQUIRE_* variable is set")
        facts_per_gpu = [
            {
                "cuda": str(driver.cuda_api) if driver.cuda_api else None,
                "driver": str(driver.version) if driver.version else None,
                "arch": g.compute_capability,
                "brand": brand_token(g.brand),
            }
            for g in gpus
        ] or [
            {
                "cuda": str(driver.cuda_api) if driver.cuda_api else None,
                "driver": str(driver.version) if driver.version else None,
                "_no_gpu": "1",
            }
        ]
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
            if all(r is not False for r in results):
                continue
            first = " ".join(str(c).replace(" ", "") for c in alternatives[0][:1]) if alternatives else ""
            shown = ", ".join(str(c) for c in alternatives[0]) if alternatives else value
            evidence = {
                name: value if len(value) <= 200 else value[:200] + "…",
                "driver": f"{driver.version} (supports CUDA {driver.cuda_api or 'unknown'})",
            }
            return Problem(
                f"{name} is not met: no alternative holds for this driver"
                + (f" and GPU(s) {', '.join(g.name for g in gpus)}" if gpus else "")
                + f'; `docker run --gpus` fails with "unsatisfied condition: {shown}"',
                evidence,
                Remediation(
                    f"Upgrade the host driver so that {first or 'the requirement'} holds, or use an image "
                    "built for the CUDA version this driver supports.",
                    (),
                ),
            )
        return None


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
