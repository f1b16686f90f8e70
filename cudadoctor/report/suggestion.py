"""Rendering a :class:`~cudadoctor.suggest.Suggestion`: text, JSON, bare commands, or a Dockerfile."""

from __future__ import annotations

import json

from cudadoctor.facts.codec import encode
from cudadoctor.suggest import Constraints, Suggestion
from cudadoctor.suggest.constraints import pin

__all__ = [
    "SUGGEST_KIND",
    "assumptions",
    "constraints_line",
    "render_commands",
    "render_dockerfile",
    "render_suggestion_json",
    "render_suggestion_text",
]

SUGGEST_KIND = "cudadoctor-suggestion"


def constraints_line(c: Constraints) -> str:
    parts = [
        f"driver {c.driver}" + (f" (CUDA {c.driver_cuda})" if c.driver_cuda else "") if c.driver else "driver unknown",
        ", ".join(f"{g.name} ({g.compute_capability})" for g in c.gpus) or _no_nvidia_gpu(c),
        f"Python {c.python}" if c.python else "Python unknown",
        c.platform,
    ]
    if c.cuda_ceiling:
        parts.append(f"CUDA <= {c.cuda_ceiling}")
    return "; ".join(parts)


_ACCELERATORS = {
    "cpu": "no GPU (CPU only)",
    "rocm": "AMD GPU (ROCm)",
    "mps": "Apple Silicon GPU (MPS)",
    "xpu": "Intel GPU",
    "jetson": "NVIDIA Jetson",
}


def _no_nvidia_gpu(c: Constraints) -> str:
    shown = _ACCELERATORS.get(c.accelerator or "", "GPU unknown")
    if c.accelerator == "rocm" and c.rocm is not None:
        shown += f" {c.rocm}"
    return shown


def render_suggestion_text(s: Suggestion, c: Constraints, *, verbose: bool = False) -> str:
    out = [f"cudadoctor suggest --target {s.requirement}", f"for: {constraints_line(c)}", ""]
    notes = [*assumptions(c), *s.notes]
    out.extend(f"note: {note}" for note in notes)
    if notes:
        out.append("")
    for number, plan in enumerate(s.plans, start=1):
        out.append(f"Plan {number}: " + " ".join(pin(n, v) for n, v in plan.packages))
        if number > 1 and not verbose:
            # The plans after the first are older releases of the same target, whose reasons and caveats mostly
            # repeat the first's: one install line each here, the whole plan with -v (or --format json).
            out.extend(f"    $ {cmd}" for cmd in plan.commands[:1])
            out.append("")
            continue
        out.extend(f"  why: {w}" for w in plan.why)
        out.extend(f"  caveat: {w}" for w in plan.caveats)
        out.append("  install:")
        out.extend(f"    $ {cmd}" for cmd in plan.commands)
        if plan.images:
            out.append("  images:")
            out.extend(f"    {image}  ({why})" for image, why in plan.images)
        out.append("")
    if s.plans and s.upgrades:
        out.append("Would unlock newer releases:")
        out.extend(f"  {u.text}" for u in s.upgrades)
        out.append("")
    if not s.plans:
        out.append("Nothing fits.")
        out.extend(f"  to change: {a}" for a in s.advice)
        out.extend(_reasons(s))
        out.append("")
    if len(s.plans) > 1 and not verbose:
        out.append(f"(-v shows the reasons, caveats and images of plans 2-{len(s.plans)} too)")
    rules: dict[str, int] = {}
    for e in s.excluded:
        rules[e.rule] = rules.get(e.rule, 0) + 1
    if s.excluded:
        out.append(
            f"{len(s.excluded)} candidate(s) excluded: "
            + ", ".join(f"{n} by {rule}" for rule, n in sorted(rules.items()))
            + ("" if verbose else " (-v lists them; --format json explains each)")
        )
        if verbose:
            out.extend(f"  - {e.candidate}: {e.rule}: {e.observed}; requires {e.required}" for e in s.excluded)
    return "\n".join(out).rstrip() + "\n"


def assumptions(c: Constraints) -> list[str]:
    """Assumptions the flags made, stated (a driver branch taken as its oldest release)."""
    origin = c.origins.get("driver", "")
    return [f"assumed driver: {origin.removeprefix('--driver ')}"] if origin.startswith("--driver ") else []


def _reasons(s: Suggestion) -> list[str]:
    """When nothing fits, the rules that excluded the candidates, always listed (at most five shown)."""
    if not s.excluded:
        return ["  why: no candidate in compat data matches the target's version"]
    out = [f"  why: {e.candidate}: {e.rule}: {e.observed}; requires {e.required}" for e in s.excluded[:5]]
    if len(s.excluded) > 5:
        out.append(f"  … and {len(s.excluded) - 5} more (-v lists them)")
    return out


def render_suggestion_json(s: Suggestion, c: Constraints) -> str:
    doc = {"kind": SUGGEST_KIND, "schema_version": 1, "constraints": encode(c), "suggestion": encode(s)}
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def render_commands(s: Suggestion) -> str:
    """The top plan's pip command only, for scripts (empty when nothing fits)."""
    return (s.plans[0].commands[0] + "\n") if s.plans else ""


def render_dockerfile(s: Suggestion, c: Constraints) -> str:
    """The top plan as a Dockerfile, from the first image the text shows for it (else the official Python image).

    A python:X.Y image has the plan's Python (and, not -slim, gcc and its headers); an nvidia/cuda image has no
    Python, so the distribution's python3 is installed where it is the plan's, else the plan's version from the
    deadsnakes PPA (as vLLM's own docker/Dockerfile does), with gcc and Python's headers wherever something is
    compiled (:func:`~cudadoctor.suggest.images.compiler_need`). Written to pass hadolint's apt and pip rules.
    """
    from cudadoctor.data import CompatMatrix
    from cudadoctor.suggest.images import compiler_need, os_python

    if not s.plans:
        return ""
    plan = s.plans[0]
    python = f"{c.python.major}.{c.python.minor}" if c.python else "3.12"
    head = f"# cudadoctor suggest {s.requirement} ({constraints_line(c)})\n"
    image = plan.images[0][0] if plan.images else f"python:{python}"
    if not image.split(":")[0].endswith("nvidia/cuda"):
        pip = plan.commands[0].replace("python -m pip install", "python -m pip install --no-cache-dir")
        return head + f"FROM {image}\nRUN {pip}\n"
    need, _why = compiler_need(c, plan)
    distribution_python = os_python(CompatMatrix(cache_dir=False), image.rsplit("-", 1)[-1])
    binary = "python3" if distribution_python == python else f"python{python}"
    packages = [f"{binary}", f"{binary}-dev", f"{binary}-venv", *(["build-essential"] if need else [])]
    ppa = "" if binary == "python3" else (
        "RUN apt-get update && apt-get install -y --no-install-recommends software-properties-common \\\n"
        "    && add-apt-repository -y ppa:deadsnakes/ppa && rm -rf /var/lib/apt/lists/*\n"
    )  # fmt: skip
    pip = plan.commands[0].replace("python -m pip install", "python -m pip install --no-cache-dir")
    return head + (
        f"FROM {image}\n{ppa}"
        f"RUN apt-get update && apt-get install -y --no-install-recommends {' '.join(packages)} \\\n"
        "    && rm -rf /var/lib/apt/lists/*\n"
        f"RUN {binary} -m venv /opt/venv\n"
        'ENV PATH="/opt/venv/bin:$PATH"\n'
        f"RUN {pip}\n"
    )
