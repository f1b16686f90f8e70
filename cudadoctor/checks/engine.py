"""Running checks: inject the facts each check names, isolate failures, collect findings.

A check's parameters name what it needs (``driver``, ``gpus``, ``torch``, ``matrix`` …). A required
parameter whose fact is absent skips the check with a reason ("torch is not installed"); a
parameter with a default is optional. A check that raises becomes one ``error`` finding and never
stops the others. Which checks run is decided by ``--select`` / ``--ignore`` before anything runs.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Iterable
from typing import Any

from cudadoctor.checks import ALL_CHECKS, selected
from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.derived import absent_reason, injectables
from cudadoctor.checks.findings import Finding, Problem, Status
from cudadoctor.data import CompatMatrix
from cudadoctor.errors import CompatDataError
from cudadoctor.facts.model import Facts
from cudadoctor.facts.registry import fact_of_error

__all__ = ["check_values", "run_check", "run_checks"]


def check_values(facts: Facts, matrix: CompatMatrix, *, requirements: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every value a check may ask for, by parameter name (see :mod:`cudadoctor.checks.derived`)."""
    return injectables(facts, {"matrix": matrix, "requirements": requirements})


def _finding(check: Check, status: Status, **kwargs: Any) -> Finding:
    return Finding(
        code=check.code,
        name=check.name,
        category=check.category,
        status=status,
        summary=check.summary(),
        **kwargs,
    )


def _unreadable(values: dict[str, Any]) -> dict[str, str]:
    """Facts whose probe crashed, with why: a check needing one could not judge (it is not "absent")."""
    facts = values.get("facts")
    errors = facts.errors if isinstance(facts, Facts) else ()
    found: dict[str, str] = {}
    for error in errors:
        name = fact_of_error(error.probe)
        if error.crashed and name is not None:
            found.setdefault(name, error.message)
    return found


def _arguments(function: Callable[..., Any], values: dict[str, Any]) -> dict[str, Any] | tuple[Status, str]:
    """The check's arguments by parameter name, or why it cannot run: (status, reason)."""
    kwargs: dict[str, Any] = {}
    unreadable = _unreadable(values)
    for name, default in _parameters(function):
        value = values.get(name)
        absent = value is None or (isinstance(value, (tuple, list, dict)) and not value and name != "packages")
        if name in unreadable and (absent or name == "packages"):
            return Status.UNKNOWN, f"could not read {name}: {unreadable[name]}"
        if absent and default is _REQUIRED:
            return Status.NOT_APPLICABLE, absent_reason(name) or f"{name} unknown"
        kwargs[name] = value if not absent else default
    return kwargs


_REQUIRED = inspect.Parameter.empty


def _parameters(function: Callable[..., Any]) -> list[tuple[str, Any]]:
    """(name, default or ``_REQUIRED``) of each parameter, as ``inspect.signature`` gives them.

    A plain function's are read from its code object: ``inspect.signature`` cost ~1.5 ms for the sixty checks of
    every run (measured); anything else (a partial, a callable object) goes through ``inspect``.
    """
    bound = isinstance(function, types.MethodType)
    plain = function.__func__ if isinstance(function, types.MethodType) else function
    code = getattr(plain, "__code__", None)
    wrapped = hasattr(plain, "__wrapped__") or hasattr(plain, "__signature__")  # inspect follows those
    if (
        code is None
        or wrapped
        or not isinstance(plain, types.FunctionType)
        or code.co_flags & (_VARARGS | _VARKEYWORDS)
    ):
        return [(n, p.default) for n, p in inspect.signature(function).parameters.items()]
    positional = code.co_varnames[: code.co_argcount]
    defaults = plain.__defaults__ or ()
    first_default = len(positional) - len(defaults)
    out = [(n, defaults[i - first_default] if i >= first_default else _REQUIRED) for i, n in enumerate(positional)]
    keyword = code.co_varnames[code.co_argcount : code.co_argcount + code.co_kwonlyargcount]
    kwdefaults = plain.__kwdefaults__ or {}
    out += [(n, kwdefaults.get(n, _REQUIRED)) for n in keyword]
    return out[1:] if bound else out


_VARARGS = inspect.CO_VARARGS
_VARKEYWORDS = inspect.CO_VARKEYWORDS


def run_check(check: Check, values: dict[str, Any], *, live: bool = True) -> Finding:
    """Evaluate one check against the injectable values."""
    if check.live_only and not live:
        return _finding(check, Status.NOT_APPLICABLE, reason="judged only on the machine itself")
    function: Callable[..., Problem | None] = check.check  # type: ignore[attr-defined]
    arguments = _arguments(function, values)
    if isinstance(arguments, tuple):
        return _finding(check, arguments[0], reason=arguments[1])
    try:
        result = function(**arguments)
    except NotApplicable as why:
        return _finding(check, Status.NOT_APPLICABLE, reason=str(why))
    except CannotJudge as why:
        return _finding(check, Status.UNKNOWN, reason=str(why))
    except CompatDataError:
        raise  # invalid shipped data is fatal for the whole run (exit 3), not one finding
    except Exception as exc:  # a bug in the check: one error finding, the others go on
        return _finding(
            check,
            Status.ERROR,
            message=f"the check crashed: {type(exc).__name__}: {exc} (please report this)",
        )
    if result is None:
        return _finding(check, Status.OK)
    problem: Problem = result
    return _finding(
        check,
        problem.status or check.severity,
        message=problem.message,
        evidence=dict(problem.evidence),
        remediation=problem.remediation,
    )


def run_checks(
    facts: Facts,
    matrix: CompatMatrix,
    *,
    select: Iterable[str] = (),
    ignore: Iterable[str] = (),
    requirements: Iterable[str] = (),
) -> list[Finding]:
    """Every selected check's finding, in code order."""
    values = check_values(facts, matrix, requirements=tuple(requirements))
    live = facts.mode == "live"
    return [run_check(ALL_CHECKS[code], values, live=live) for code in selected(select, ignore)]
