"""What would have to change when nothing fits, from the rules that excluded the candidates."""

from __future__ import annotations

from cudadoctor.suggest.constraints import Constraints, short
from cudadoctor.suggest.judge import Run

__all__ = ["advice"]


def advice(c: Constraints, run: Run, target: str, *, pinned: str | None = None) -> list[str]:
    """The smallest change that makes something fit, or the rule that stands in the way; ``pinned``: the one
    release the requirement names (``1.10.1``), which the lines then speak of."""
    named = f"{target} {pinned}" if pinned else target
    rules = {e.rule for e in run.excluded}
    out = []
    if run.driver_only:
        # The smallest upgrade that makes something fit, and with it the newest release it allows.
        smallest = min(needs[0] for _r, _c, needs in run.driver_only)
        _release, candidate, needs = max((d for d in run.driver_only if d[2][0] == smallest), key=lambda d: d[0])
        out.append(f"upgrade the NVIDIA driver to {needs[1]}: then {candidate} fits")
    elif rules & {"gpu-arch-list", "cuda-dropped-arch", "cuda-predates-arch", "driver-dropped-gpu"}:
        gpus = ", ".join(f"{g.name} ({g.compute_capability})" for g in c.gpus)
        out.append(f"no {named} build in compat data has GPU code for {gpus} that this driver can run")
        # A GPU that CUDA or the driver dropped: say what it needs, not only that nothing fits.
        for rule in ("cuda-dropped-arch", "driver-dropped-gpu"):
            # one line per GPU (their requirements differ), a few at most
            required = sorted({f"{e.observed}: requires {e.required}" for e in run.excluded if e.rule == rule})
            out += required[:3]
    if "python" in rules and not out:
        python = short(c.python) if c.python else "?"
        out.append(
            f"{named} has no wheels for Python {python}"
            if pinned
            else f"no {target} release in compat data has wheels for Python {python}"
        )
    if "cuda-ceiling" in rules and not out:
        out.append("raise --cuda: every build that fits otherwise needs a newer CUDA")
    if not out:
        out.append(f"no {target} candidate fits; see the exclusions for each rule")
    return out
