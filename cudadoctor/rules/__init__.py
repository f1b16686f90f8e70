"""The compatibility rules: pure functions that `check` and `suggest` both ask.

Each answers one question with a :class:`~cudadoctor.rules.verdict.Verdict` (ok, problem, could not judge
and what was missing, not applicable); the checks turn problems into findings, the planner into exclusions.
A rule knows nothing of findings or plans, so the two can never disagree about a machine.

- :mod:`~cudadoctor.rules.driver`: does the driver run CUDA X (minor-version and forward compatibility);
  does its branch know the GPU; forward compatibility on a GPU.
- :mod:`~cudadoctor.rules.archs`: does a build's GPU target list cover a GPU (CUDA binary compatibility).
- :mod:`~cudadoctor.rules.gpus`: is an architecture supported by a CUDA version; vLLM's compute-capability
  floor.
- :mod:`~cudadoctor.rules.wheels`: does a release publish wheels for a Python version and platform.
"""
