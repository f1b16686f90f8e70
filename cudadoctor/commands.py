"""The bodies of commands and their error guard, without the option parser.

``cudadoctor check`` runs on every CI job and in every Dockerfile pre-flight, so its common forms skip
typer and click (about 35 ms of a 180 ms run on two cores, measured): :mod:`cudadoctor.entry` parses
them itself into the same :class:`CheckOptions` that the typer command builds, and both call
:func:`check_command`. Everything here is free of typer; :mod:`cudadoctor.cli` adds the parser.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, NoReturn

from cudadoctor.errors import CudadoctorError, UsageError
from cudadoctor.record import record
from cudadoctor.report import Format

if TYPE_CHECKING:
    from cudadoctor.app import CheckRequest
    from cudadoctor.facts.model import Facts
    from cudadoctor.planning import HostFlags
    from cudadoctor.report.document import Report

__all__ = [
    "CheckOptions",
    "check_command",
    "check_options",
    "check_request",
    "closed_pipe",
    "err",
    "guard",
    "render_report",
    "snapshot_command",
    "suggest_command",
    "suggest_driver_command",
    "suggest_matrix_command",
    "take_color_options",
    "this_machine",
]


@record
class CheckOptions:
    """The options of ``cudadoctor check``: one field per option, named and defaulted as the command's
    parameters are (``tests/test_entry.py`` keeps the two equal)."""

    output_format: Format = Format.TEXT
    verbose: bool = False
    from_file: str | None = None
    root: str | None = None
    env_file: str | None = None
    python: str | None = None
    assume_driver: str | None = None
    assume_gpu: tuple[str, ...] | None = None
    root_kind: str = "auto"
    no_redact: bool = False
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    require: tuple[str, ...] | None = None
    fail_on: str | None = None
    strict: bool = False
    fail_on_unknown: bool = False
    output: str | None = None
    deep: bool = False
    timeout: float = 30.0
    nccl: bool = False
    no_health: bool = False
    dcgm_diag: int | None = None
    dcgm_timeout: float | None = None


def check_options(values: Mapping[str, object]) -> CheckOptions:
    """The options of ``check`` from the values a parser read (:data:`cudadoctor.cli_options.CHECK`'s, by their
    ``dest``; repeated options as tuples, the format as its name); what is not given keeps its default."""
    given = dict(values)
    if "output_format" in given:
        given["output_format"] = Format(given["output_format"])
    return CheckOptions(**given)  # type: ignore[arg-type]


def err(message: str) -> None:
    """One error line on stderr (red where :func:`cudadoctor.terminal.wants_color` says so). A path or a key it
    names (typed by the user, or read from a snapshot, an env file or an image) is shown with its escapes and
    newlines visible: one line, nothing sent to the terminal (issue #27)."""
    from cudadoctor.report.sanitize import terminal
    from cudadoctor.terminal import wants_color

    color = wants_color(sys.stderr)
    prefix = "\x1b[31mcudadoctor: error:\x1b[0m " if color else "cudadoctor: error: "
    print(prefix + terminal(message), file=sys.stderr)


def take_color_options(argv: Sequence[str]) -> list[str]:
    """``argv`` without its colour options (:data:`cudadoctor.cli_options.COLOR` and ``NO_COLOR``, as declared
    there), which set :func:`cudadoctor.terminal.color_mode`; the last one given wins, as in uv.

    ``--color`` is taken before any command word as after it (``cudadoctor --color never check``, ``cudadoctor
    check --no-color``); nothing after ``--`` is read. A value other than auto, always or never is a usage error.
    """
    from cudadoctor.cli_options import COLOR, NO_COLOR
    from cudadoctor.terminal import ColorMode, parse_color_mode, set_color_mode

    out: list[str] = []
    rest = list(argv)
    while rest:
        word = rest.pop(0)
        if word == "--":
            out.extend((word, *rest))
            break
        name, equals, value = word.partition("=")
        if word in NO_COLOR.flags:
            set_color_mode(ColorMode.NEVER)
        elif name in COLOR.flags:
            set_color_mode(parse_color_mode(value if equals else (rest.pop(0) if rest else "")))
        else:
            out.append(word)
    return out


def prepare_command_line(argv: list[str]) -> list[str]:
    """The arguments after the program's name, without the colour options, which are taken here for every command
    (:func:`take_color_options`; a bad value ends the run: one line, exit 2); stdout and stderr then print
    whatever a report holds (ASCII stand-ins for what their encoding cannot show). ``argv`` keeps the program's
    name and the rest, for typer."""
    from cudadoctor.terminal import prepare_streams

    prepare_streams()
    try:
        argv[1:] = take_color_options(argv[1:])
    except UsageError as exc:
        err(str(exc))
        sys.exit(exc.exit_code)
    return argv[1:]


def closed_pipe() -> NoReturn:
    """The reader went away (``cudadoctor list-checks | head -1``): end quietly, as ``cat`` does.

    Python's own advice (https://docs.python.org/3/library/signal.html#note-on-sigpipe): point stdout at
    devnull so the interpreter's final flush does not raise again, and exit like a process killed by
    SIGPIPE (128 + 13) without a word.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(141)


def guard(call: Callable[[], int | None], passthrough: tuple[type[BaseException], ...] = ()) -> int:
    """Run a command body; turn cudadoctor's errors into one line and an exit code.

    ``passthrough``: exceptions the caller handles itself (typer's Exit and Abort). A bug prints one
    line (the traceback with CUDADOCTOR_DEBUG=1) and exits 3; output with nowhere to go exits 2.
    """
    from cudadoctor.output import flush_stdout, output_failure

    try:
        try:
            return call() or 0
        finally:
            flush_stdout()  # stdout on a full disk fails here, inside the guard
    except CudadoctorError as exc:
        err(str(exc))
        return exc.exit_code
    except BrokenPipeError:
        closed_pipe()
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # a bug: say so, with the traceback only when asked
        if isinstance(exc, passthrough):
            raise
        if (line := output_failure(exc)) is not None:  # not a bug: the output has nowhere to go
            err(line)
            return 2
        err(
            f"internal error: {type(exc).__name__}: {exc} (please report this; set CUDADOCTOR_DEBUG=1 "
            "for the traceback)"
        )
        if os.environ.get("CUDADOCTOR_DEBUG"):
            import traceback

            traceback.print_exc()
        return 3


def render_report(report: Report, fmt: Format, *, verbose: bool, to_terminal: bool, snapshot: bool) -> str:
    from cudadoctor.report.options import RenderOptions
    from cudadoctor.report.render import render
    from cudadoctor.terminal import terminal_width, wants_color

    color = to_terminal and wants_color(sys.stdout)
    width = terminal_width(sys.stdout) if to_terminal else None
    options = RenderOptions(
        verbose=verbose, color=color, width=None if width is None else max(width, 60), from_snapshot=snapshot
    )
    return render(report, fmt, options)


def check_request(o: CheckOptions) -> CheckRequest:
    """What ``check`` is asked by these options and the project settings (``why`` asks the same)."""
    from cudadoctor.app import CheckRequest, FactSource
    from cudadoctor.config import find_settings

    if o.timeout <= 0 or o.timeout != o.timeout or o.timeout == float("inf"):
        raise UsageError("--timeout must be a positive number of seconds")
    settings = find_settings()
    source = FactSource(
        from_file=o.from_file, root=o.root, env_file=o.env_file, python=o.python,
        assume_driver=o.assume_driver, assume_gpus=tuple(o.assume_gpu or ()), root_kind=o.root_kind,
        redact_home=not o.no_redact or o.output_format is Format.MARKDOWN,
        deep_timeout=o.timeout if o.deep else None, nccl=o.nccl, health=not o.no_health,
        dcgm_level=o.dcgm_diag, dcgm_timeout=o.dcgm_timeout,
    )  # fmt: skip
    return CheckRequest(
        source=source,
        select=tuple(o.select or settings.select),
        ignore=(*settings.ignore, *(o.ignore or ())),
        require=(*settings.require, *(o.require or ())),
        fail_on="warning" if o.strict else (o.fail_on or settings.fail_on or "error"),
        fail_on_unknown=o.fail_on_unknown,
    )


def check_command(o: CheckOptions) -> int:
    """``cudadoctor check``: gather, judge, print; the exit code of the report."""
    from cudadoctor.app import run_check, stderr_notice

    report = run_check(check_request(o), stderr_notice)
    snapshot = o.from_file is not None
    fmt = o.output_format
    if o.output is not None:
        from cudadoctor.output import write_text

        write_text(o.output, render_report(report, fmt, verbose=o.verbose, to_terminal=False, snapshot=snapshot))
        sys.stdout.write(render_report(report, Format.TEXT, verbose=False, to_terminal=True, snapshot=snapshot))
        print(f"cudadoctor: wrote the {fmt.value} report to {o.output}", file=sys.stderr)
    else:
        sys.stdout.write(render_report(report, fmt, verbose=o.verbose, to_terminal=True, snapshot=snapshot))
    return _exit_code(report, fmt)


def _exit_code(report: Report, fmt: Format) -> int:
    """The report's exit code; for a scheduler format, the node's verdict (0 ok, 1 problem, 2 unknown)."""
    from cudadoctor.report import SCHEDULER_FORMATS

    if fmt not in SCHEDULER_FORMATS:
        return report.exit_code
    from cudadoctor.report.scheduler import node_verdict

    return node_verdict(report).exit_code


def this_machine() -> Facts:
    """This machine's facts as ``suggest`` plans from them: never the hardware health, nor the toolkits (so
    ``nvcc`` is not run)."""
    from cudadoctor.probes.collect import collect_facts, live_context

    return collect_facts(live_context(health=False), skip=("toolkits", "nvcc"))


def suggest_command(target: str, flags: HostFlags, output_format: str, *, verbose: bool = False) -> int:
    """``cudadoctor suggest TARGET``: the plan written to stdout; 1 when nothing fits (the advice on stderr for the
    formats a script reads). The typer command and the entry's fast path both run this."""
    from cudadoctor.planning import plan
    from cudadoctor.report.suggestion import (
        render_commands,
        render_dockerfile,
        render_suggestion_json,
        render_suggestion_text,
    )

    if target.strip().lower() == "driver":
        return suggest_driver_command(flags, output_format)
    result, constraints = plan(target, flags, this_machine)
    if output_format == "json":
        sys.stdout.write(render_suggestion_json(result, constraints))
    elif output_format == "commands":
        sys.stdout.write(render_commands(result))
    elif output_format == "dockerfile":
        sys.stdout.write(render_dockerfile(result, constraints))
    else:
        sys.stdout.write(render_suggestion_text(result, constraints, verbose=verbose))
    if not result.plans:
        if output_format in ("commands", "dockerfile"):
            print("cudadoctor: nothing fits: " + "; ".join(result.advice), file=sys.stderr)
        return 1
    return 0


def snapshot_command(
    output: str | None,
    *,
    root: str | None,
    env_file: str | None,
    python: str | None,
    assume_driver: str | None,
    assume_gpu: Sequence[str] | None,
    root_kind: str,
    no_redact: bool,
) -> None:
    """``cudadoctor snapshot``: every fact, with its source, as JSON on stdout or in ``output``."""
    from cudadoctor.app import FactSource, gather, stderr_notice
    from cudadoctor.facts.codec import facts_to_json
    from cudadoctor.output import write_text

    source = FactSource(
        root=root, env_file=env_file, python=python, assume_driver=assume_driver,
        assume_gpus=tuple(assume_gpu or ()), root_kind=root_kind, redact_home=not no_redact,
    )  # fmt: skip
    text = facts_to_json(gather(source, stderr_notice)) + "\n"
    if output is None or output == "-":
        sys.stdout.write(text)
        return
    write_text(output, text)
    print(f"cudadoctor: wrote {output}", file=sys.stderr)


def suggest_driver_command(flags: HostFlags, output_format: str) -> int:
    """``cudadoctor suggest driver``: the driver branches for this machine's GPUs (or --gpu); 1 when no supported
    branch runs every GPU."""
    from cudadoctor.planning import driver_plan
    from cudadoctor.report.driver_plan import render_driver_commands, render_driver_json, render_driver_text

    if output_format == "dockerfile":
        raise UsageError("suggest driver --format dockerfile: a driver is installed on the host, never in an image")
    found, origin = driver_plan(flags, this_machine)
    if output_format == "json":
        sys.stdout.write(render_driver_json(found, origin))
    elif output_format == "commands":
        sys.stdout.write(render_driver_commands(found))
    else:
        sys.stdout.write(render_driver_text(found, origin))
    return 0 if found.best is not None else 1


def suggest_matrix_command(target: str, flags: HostFlags, output_format: str, *, verbose: bool) -> int:
    """``cudadoctor suggest --matrix``: the table of releases x builds as text, JSON or Markdown; 1 when no cell
    fits."""
    from cudadoctor.planning import matrix_plan
    from cudadoctor.report.fit_matrix import render_matrix_json, render_matrix_markdown, render_matrix_text

    if target.strip().lower() == "driver":
        raise UsageError("suggest driver --matrix: the matrix is of wheels; `suggest driver` lists every branch")
    found, constraints = matrix_plan(target, flags, this_machine)
    if output_format == "json":
        sys.stdout.write(render_matrix_json(found, constraints))
    elif output_format == "markdown":
        sys.stdout.write(render_matrix_markdown(found, constraints, verbose=verbose))
    else:
        sys.stdout.write(render_matrix_text(found, constraints, verbose=verbose))
    return 0 if any(cell.fits for row in found.rows for cell in row.cells) else 1
