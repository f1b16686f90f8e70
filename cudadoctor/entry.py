"""Entry point of the ``cudadoctor`` command: the common forms of ``check`` without typer.

``cudadoctor check``, with any of a few flags, is what CI jobs and Dockerfile pre-flights run; typer
and click cost about 35 ms of it (measured). Those forms, and ``suggest TARGET``'s, are parsed here, with the
declarations typer is given (:mod:`cudadoctor.cli_options`), into the :class:`~cudadoctor.commands.CheckOptions`
that the typer command would build (a test compares the two for every form); anything else, including ``-h`` and
every mistake, goes to :mod:`cudadoctor.cli`.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from cudadoctor.cli_options import Param
    from cudadoctor.commands import CheckOptions

__all__ = ["Helpers", "fast_check_options", "fast_suggest_args", "main", "run"]

#: check's options the fast path takes (by their ``dest`` in :data:`cudadoctor.cli_options.CHECK`): those without
#: a value, and those whose value is one of a few names; the rest, and every mistake, go to typer.
_FAST_CHECK = frozenset(
    {"output_format", "verbose", "no_health", "strict", "fail_on_unknown", "no_redact", "root_kind"}
)
#: suggest's parameters the fast path takes: the target (an argument or --target), the format, -v.
_FAST_SUGGEST = frozenset({"what", "target", "output_format", "verbose"})


def _parse(words: Sequence[str], params: Sequence[Param]) -> dict[str, object] | None:
    """The values (by ``dest``) of a command line made only of ``params``: flags, options with a value (one of the
    choices, or any but the empty one) and at most one argument; None for anything else, which typer parses (and
    explains when it is wrong)."""
    named = {flag: param for param in params for flag in param.flags}
    argument = next((param.dest for param in params if not param.flags), None)
    values: dict[str, object] = {}
    rest = list(words)
    while rest:
        token = rest.pop(0)
        if token in named and named[token].kind == "flag":
            values[named[token].dest] = True
            continue
        name, equals, value = token.partition("=") if token.startswith("--") else (token, "", "")
        param = named.get(name)
        if param is None:
            if token.startswith("-") or argument is None or argument in values:
                return None  # an option the fast path does not take, or a second argument
            values[argument] = token
            continue
        if param.kind == "flag" or not (equals or rest):
            return None  # a value given to a flag, or an option without its value
        if not equals:
            value = rest.pop(0)
        if not value or (param.choices and value not in param.choices):
            return None  # a value typer must check and explain
        values[param.dest] = value
    return values


def _fast_values(argv: Sequence[str]) -> dict[str, object] | None:
    """The :class:`~cudadoctor.commands.CheckOptions` fields of a ``check`` command line this module parses itself
    (the format as its name), else None."""
    if not argv or argv[0] != "check":
        return None
    from cudadoctor.cli_options import CHECK

    return _parse(argv[1:], [p for p in CHECK if p.dest in _FAST_CHECK])


def fast_suggest_args(argv: Sequence[str]) -> tuple[str, str, bool] | None:
    """(target, format, verbose) of the common ``suggest`` forms for this machine (``suggest torch``, ``--target``,
    ``-f``, ``-v``), parsed here; None for anything else, which typer parses (and explains when it is wrong)."""
    if not argv or argv[0] != "suggest":
        return None
    from cudadoctor.cli_options import SUGGEST, SUGGEST_PLAN_FORMATS

    values = _parse(argv[1:], [p for p in SUGGEST if p.dest in _FAST_SUGGEST])
    if values is None or ("what" in values) == ("target" in values):
        return None  # no target, or one given twice: typer's to refuse
    target, fmt = str(values.get("what") or values.get("target") or ""), str(values.get("output_format", "text"))
    if not target or fmt not in SUGGEST_PLAN_FORMATS:
        return None  # an empty target, or the matrix's format
    return target, fmt, bool(values.get("verbose", False))


def fast_check_options(argv: Sequence[str]) -> CheckOptions | None:
    """The options of a ``check`` command line this module parses itself, else None."""
    from cudadoctor.commands import check_options

    values = _fast_values(argv)
    return check_options(values) if values is not None else None


def run() -> None:
    """The ``cudadoctor`` command: :func:`main`, and a fast path's exit without the interpreter's teardown."""
    main(hard_exit=True)


def main(*, hard_exit: bool = False) -> None:
    """Run ``cudadoctor``: ``check`` directly when this module can parse it, else through typer.

    ``hard_exit``: end a fast ``check`` with ``os._exit`` once its output is flushed. Tearing down ~150 modules
    and the NVML threads cost ~10 ms of a 110 ms run (measured); nothing of the fast path is left to clean up
    (its caches are written and closed, its child processes waited for, its threads daemons).
    """
    from cudadoctor.cli_options import COMPLETE_VAR
    from cudadoctor.commands import prepare_command_line

    argv = prepare_command_line(sys.argv)
    completing = COMPLETE_VAR in os.environ  # a completion script asking: typer answers
    values = None if completing else _fast_values(argv)
    if values is None:
        suggest = None if completing else fast_suggest_args(argv)
        if suggest is None:
            from cudadoctor.cli import main as cli_main

            cli_main()
            return
        _exit(_probing(lambda: _suggest(*suggest), health=False), hard_exit=hard_exit)
    _exit(_probing(lambda: _check(values), health=not values.get("no_health", False)), hard_exit=hard_exit)


def _check(values: dict[str, object]) -> int:
    from cudadoctor.commands import check_command, check_options

    return check_command(check_options(values))


def _suggest(target: str, fmt: str, verbose: bool) -> int:
    from cudadoctor.commands import suggest_command
    from cudadoctor.planning import HostFlags

    return suggest_command(target, HostFlags(), fmt, verbose=verbose)


class Helpers:
    """NVML's helper and the memo's replay helper, started before a command that examines this machine imports its
    modules (so that they answer meanwhile) and stopped when it ends (a usage error before the probes asked leaves
    no helper running). ``bench/phases.py`` times the command inside the same pair."""

    def __init__(self, *, health: bool) -> None:
        self.health = health

    def __enter__(self) -> Helpers:
        from cudadoctor.probes.memo import start_replay
        from cudadoctor.probes.native import start_early

        start_early(health=self.health)
        start_replay(os.environ)
        return self

    def __exit__(self, *_exc: object) -> None:
        from cudadoctor.probes.memo import stop_replay
        from cudadoctor.probes.native import stop_early

        stop_early()
        stop_replay()


def _probing(command: Callable[[], int], *, health: bool) -> int:
    """Run a fast command that examines this machine inside its :class:`Helpers` (started first, before even the
    options' module). The cyclic garbage collector is off: a command of one report keeps nearly everything it makes
    until it exits, and the collector's passes over the objects of the imports, the memo and the compat tables cost
    ~9 ms of a warm check (bench/phases.py, 2 cores); reference counting still frees what is not in a cycle."""
    gc.disable()
    with Helpers(health=health):
        try:
            from cudadoctor.commands import guard

            return guard(command)
        except BrokenPipeError:
            from cudadoctor.commands import closed_pipe

            closed_pipe()


def _exit(code: int, *, hard_exit: bool) -> NoReturn:
    """End the fast path: ``os._exit`` once the output is flushed (``hard_exit``), else ``sys.exit``."""
    if hard_exit:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
