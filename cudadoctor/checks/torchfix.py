"""The install command a check prints to replace a torch build that does not fit this machine.

`suggest`'s rules (cudadoctor.suggest.torch) choose it, so check and suggest agree: the best build of the installed
release when one fits (a project pinned to torch 1.10.1 on an RTX 3090 gets ``torch==1.10.1+cu111 … -f …``, not the
newest torch), else the nearest release that fits. Imported lazily: only a finding's fix needs the planner.
"""

from __future__ import annotations

from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import Facts, InstalledPackage

__all__ = ["torch_fix_commands"]

#: what a fix says when no build in compat data fits: the planner explains why
_ASK_SUGGEST = ("cudadoctor suggest --target torch",)


def torch_fix_commands(
    matrix: CompatMatrix, facts: Facts | None, torch: InstalledPackage, *, reinstall: bool = False
) -> tuple[str, ...]:
    """One pip command installing the torch build that fits; ``reinstall`` adds ``--force-reinstall`` (pip keeps
    ``2.1.2+cpu`` as satisfying ``torch==2.1.2``: a local label is ignored when the specifier has none)."""
    from cudadoctor.planning import constraints_from_facts
    from cudadoctor.suggest.torch import plan_for_installed

    installed = torch.torch_build.version if torch.torch_build and torch.torch_build.version else torch.version
    plan = plan_for_installed(matrix, constraints_from_facts(matrix, facts), installed)
    if plan is None:
        return _ASK_SUGGEST
    command = plan.commands[0]
    if reinstall and not plan.keeps_installed and "--force-reinstall" not in command:
        command += " --force-reinstall"
    return (command,)
