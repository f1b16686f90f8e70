"""Planning installs: which wheels (and images) fit a machine, and why every other candidate does not.

A plan is judged against :class:`Constraints` (the driver and any forward compatibility it has, the GPUs,
the Python version, the platform, an optional CUDA ceiling) by the same rules `check` asks
(:mod:`cudadoctor.rules`), on ``compat/`` data only. Everything here is pure: the CLI gathers the
constraints and prints the result.

- :mod:`~cudadoctor.suggest.constraints`: what a plan must fit, and what planning answers;
- :mod:`~cudadoctor.suggest.judge`: a candidate against the rules, as exclusions;
- :mod:`~cudadoctor.suggest.torch`, :mod:`~cudadoctor.suggest.vllm`, :mod:`~cudadoctor.suggest.per_major`
  (JAX, TensorRT, CuPy, onnxruntime-gpu, TensorFlow): one planner per target family;
- :mod:`~cudadoctor.suggest.images`: the container images that fit a plan; :mod:`~cudadoctor.suggest.advice`:
  what would have to change when nothing fits.
"""

from __future__ import annotations

from cudadoctor.suggest.constraints import PLATFORMS, Constraints, Exclusion, Gpu, Plan, Suggestion
from cudadoctor.suggest.per_major import (
    suggest_cupy,
    suggest_jax,
    suggest_onnxruntime_gpu,
    suggest_tensorflow,
    suggest_tensorrt,
)
from cudadoctor.suggest.torch import suggest_torch
from cudadoctor.suggest.vllm import suggest_vllm

__all__ = [
    "PLATFORMS",
    "Constraints",
    "Exclusion",
    "Gpu",
    "Plan",
    "Suggestion",
    "suggest_cupy",
    "suggest_jax",
    "suggest_onnxruntime_gpu",
    "suggest_tensorflow",
    "suggest_tensorrt",
    "suggest_torch",
    "suggest_vllm",
]
