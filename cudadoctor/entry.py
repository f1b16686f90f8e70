"""Entry point of the ``cudadoctor`` command: the common forms of ``check`` without typer.

``cudadoctor check``, with any of a few flags, is what CI jobs and Dockerfile pre-flights run; typer
and click cost about 35 ms of it (measured). Those forms are parsed here into the
:class:`~cudadoctor.commands.CheckOptions` that the typer command would build (a test compares the
two for every form); anything else, including ``-h`` and every mistake, goes to :mod:`cudadoctor.cli`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from cudadoctor.commands import CheckOptions

__all__ = ["Helpers", "fast_check_options", "fast_suggest_args", "main", "run"]

#: Flags without a value that the fast path takes, and the option each sets.
_FLAGS = {
    "--no-health": "no_health",
    "-v": "verbose",
    "--verbose": "verbose",
    "--strict": "strict",
    "--fail-on-unknown": "fail_on_unknown",
    "--no-redact": "no_redact",
}
_FORMATS = ("text", "json", "github", "markdown", "slurm", "npd", "health-json")
#: ``--root-kind`` values (cudadoctor.assume.ROOT_KINDS, not imported here: the fast path imports nothing)
_ROOT_KINDS = ("auto", "host", "image")
#: Options with a value that the fast path takes: option -> (field, the values it accepts)
_VALUED = {"-f": ("output_format", _FORMATS), "--format": ("output_format", _FORMATS),
           "--root-kind": ("root_kind", _ROOT_KINDS)}  # fmt: skip


def _fast_values(argv: Sequence[str]) -> dict[str, object] | None:
    """The :class:`~cudadoctor.commands.CheckOptions` fields of a ``check`` command line this module parses itself
    (the format as its name), else None; nothing is imported."""
    if not argv or argv[0] != "check":
        return None
    values: dict[str, object] = {}
    rest = list(argv[1:])
    while rest:
        token = rest.pop(0)
        if token in _FLAGS:
            values[_FLAGS[token]] = True
            continue
        name, equals, value = token.partition("=") if token.startswith("--") else (token, "", "")
        if name not in _VALUED or not (equals or rest):
            return None  # an option the fast path does not take, or one without its value
        if not equals:
            value = rest.pop(0)
        field, accepted = _VALUED[name]
        if value not in accepted:
            return None  # a value typer must check and explain
        values[field] = value
    return values


#: ``suggest`` formats the fast path takes (the plan's; ``markdown`` is the matrix's, through typer).
_SUGGEST_FORMATS = ("text", "json", "commands", "dockerfile")


def fast_suggest_args(argv: Sequence[str]) -> tuple[str, str, bool] | None:
    """(target, format, verbose) of the common ``suggest`` forms for this machine (``suggest torch``, ``--target``,
    ``-f``, ``-v``), parsed here; None for anything else, which typer parses (and explains when it is wrong)."""
    if not argv or argv[0] != "suggest":
        return None
    target: str | None = None
    fmt, verbose = "text", False
    rest = list(argv[1:])
    while rest:
        token = rest.pop(0)
        if token in ("-v", "--verbose"):
            verbose = True
            continue
        name, equals, value = token.partition("=") if token.startswith("--") else (token, "", "")
        if name in ("-t", "--target", "-f", "--format") and not equals:
            if not rest:
                return None
            value = rest.pop(0)
        elif name not in ("--target", "--format"):
            if token.startswith("-") or target is not None:
                return None  # another option, or a second target: typer's to refuse or to take
            target = token
            continue
        if name in ("-t", "--target"):
            if target is not None or not value:
                return None
            target = value
        elif value in _SUGGEST_FORMATS:
            fmt = value
        else:
            return None
    return (target, fmt, verbose) if target else None


def _options(values: dict[str, object]) -> CheckOptions:
    from cudadoctor.commands import CheckOptions
    from cudadoctor.report import Format

    if "output_format" in values:
        values = {**values, "output_format": Format(values["output_format"])}
    return CheckOptions(**values)  # type: ignore[arg-type]


def fast_check_options(argv: Sequence[str]) -> CheckOptions | None:
    """The options of a ``check`` command line this module parses itself, else None."""
    values = _fast_values(argv)
    return _options(values) if values is not None else None


def run() -> None:
    """The ``cudadoctor`` command: :func:`main`, and a fast path's exit without the interpreter's teardown."""
    main(hard_exit=True)


def main(*, hard_exit: bool = False) -> None:
    """Run ``cudadoctor``: ``check`` directly when this module can parse it, else through typer.

    ``hard_exit``: end a fast ``check`` with ``os._exit`` once its output is flushed. Tearing down ~150 modules
    and the NVML threads cost ~10 ms of a 110 ms run (measured); nothing of the fast path is left to clean up
    (its caches are written and closed, its child processes waited for, its threads daemons).
    """
    from cudadoctor.commands import prepare_command_line

    argv = prepare_command_line(sys.argv)
    values = None if _COMPLETING in os.environ else _fast_values(argv)
    if values is None:
        suggest = None if _COMPLETING in os.environ else fast_suggest_args(argv)
        if suggest is None:
            from cudadoctor.cli import main as cli_main

            cli_main()
            return
        _exit(_probing(lambda: _suggest(*suggest), health=False), hard_exit=hard_exit)
    _exit(_probing(lambda: _check(values), health=not values.get("no_health", False)), hard_exit=hard_exit)


#: The variable a shell's completion script sets when it asks for the words that may follow (click's protocol:
#: https://click.palletsprojects.com/en/stable/shell-completion/); typer answers it.
_COMPLETING = "_CUDADOCTOR_COMPLETE"


def _check(values: dict[str, object]) -> int:
    from cudadoctor.commands import check_command

    return check_command(_options(values))


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
    options' module)."""
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
