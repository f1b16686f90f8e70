"""Rendering ``cudadoctor suggest driver``'s :class:`~cudadoctor.suggest.driver.DriverPlan`: text, JSON, the command."""

from __future__ import annotations

import json

from cudadoctor.facts.codec import encode
from cudadoctor.suggest.driver import DriverOption, DriverPlan

__all__ = ["DRIVER_PLAN_KIND", "render_driver_commands", "render_driver_json", "render_driver_text"]

DRIVER_PLAN_KIND = "cudadoctor-driver-plan"

_FLAVORS = {
    "open": "the open kernel modules (these GPUs need them)",
    "proprietary": "the proprietary kernel module (the open modules do not drive these GPUs)",
    "either": "the open or the proprietary kernel module (NVIDIA recommends the open one from Turing on)",
    "": "no one kernel module flavour drives every GPU",
}


def _verdict(option: DriverOption) -> str:
    if option.fits:
        return "runs every GPU"
    if option.fits is None:
        return f"could not judge: {option.why}"
    return f"does not fit: {option.why}"


def render_driver_text(plan: DriverPlan, origin: str) -> str:
    """The plan as a person reads it: the GPUs, the kernel module flavour, each branch with its verdict."""
    lines = [f"GPUs ({origin}): {', '.join(plan.gpus) or 'none'}", f"kernel module: {_FLAVORS[plan.flavor]}", ""]
    best = plan.best
    for option in plan.options:
        mark = "*" if option is best else "✓" if option.fits else "?" if option.fits is None else "✗"
        newest = f"; from {option.release}, runs CUDA up to {option.cuda}" if option.release and option.cuda else ""
        lines.append(f"{mark} {option.label}{newest}: {_verdict(option)}")
        lines += [f"    {where}: {command}" for where, command in option.commands]
    if plan.advice:
        lines.append("")
        lines += [f"note: {line}" for line in plan.advice]
    return "\n".join(lines) + "\n"


def render_driver_json(plan: DriverPlan, origin: str) -> str:
    doc = {"kind": DRIVER_PLAN_KIND, "schema_version": 1, "gpus_from": origin, "plan": encode(plan)}
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def render_driver_commands(plan: DriverPlan) -> str:
    """The best branch's install command, for scripts (empty when no supported branch fits or the distribution
    is not one the commands are known for)."""
    best = plan.best
    return (best.commands[0][1] + "\n") if best is not None and len(best.commands) == 1 else ""
