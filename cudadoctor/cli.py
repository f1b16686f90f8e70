"""The ``cudadoctor`` command line through typer: each command's parameters, read from
:mod:`cudadoctor.cli_options` (declared there once), and what it prints; the bodies are in the application's rooms.

Exit codes (also in the README):

====  ==========================================================================
 0    the report was produced
 1    problems were found (used by the compatibility checks)
 2    usage error: a bad option, an unreadable env file, a bad snapshot
 3    cudadoctor could not produce a report (invalid compat data, internal error)
====  ==========================================================================
"""

from __future__ import annotations

import enum
import functools
import inspect
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

import typer

from cudadoctor import __version__
from cudadoctor.cli_options import COMMANDS, COMPLETE_VAR, GLOBAL, HELP_FLAGS, Param
from cudadoctor.commands import check_command, check_options, closed_pipe, guard, prepare_command_line
from cudadoctor.errors import UsageError
from cudadoctor.terminal import ColorMode, set_color_mode
from cudadoctor.why.cli import HELP as WHY_HELP
from cudadoctor.why.cli import why as why_body

__all__ = ["app", "main", "typer_parameters"]

app = typer.Typer(
    name="cudadoctor",
    help=(
        "A CUDA environment doctor. Reads the NVIDIA driver, GPUs, CUDA toolkits, cuDNN, NCCL, TensorRT and the "
        "Python wheels of torch / vLLM / JAX without importing any of them, and reports what it found and "
        "where it read it.\n\n"
        "Examples:\n\n"
        "  cudadoctor check              # this machine, one line per component\n\n"
        "  cudadoctor check -v           # every fact with its source\n\n"
        "  cudadoctor check --format json > report.json\n\n"
        "  cudadoctor snapshot -o facts.json   # attach to a bug report; replay with check --from\n\n"
        "  cudadoctor check --root ./image-rootfs --env-file image.env   # audit an exported image"
    ),
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": list(HELP_FLAGS)},
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

# --- the declarations, as typer takes them ----------------------------------------------------------------------

_TYPES: dict[str, Any] = {"flag": bool, "text": str, "texts": list[str], "int": int, "float": float}


@functools.cache
def _choices(param: Param) -> type[enum.Enum]:
    """The values of a "choice" parameter as the enum typer lists in --help and checks the value against."""
    return enum.Enum(param.dest, {value: value for value in param.choices}, type=str)  # type: ignore[return-value]


@functools.cache  # check's parameters are why's too
def _parameter(param: Param, callback: Callable[[Any], None] | None) -> inspect.Parameter:
    """``param`` as a typer parameter: its type (``| None`` where it may be absent) annotated with typer's Option or
    Argument, and its default (a choice's as the enum's member)."""
    kind = _choices(param) if param.kind == "choice" else _TYPES[param.kind]
    default = kind(param.default) if param.kind == "choice" and param.default is not None else param.default
    if param.default is None and not param.required:
        kind = kind | None
    info: Any
    if param.flags:
        info = typer.Option(
            *param.flags, metavar=param.metavar, help=param.help, callback=callback, is_eager=callback is not None
        )
    else:
        info = typer.Argument(metavar=param.metavar, help=param.help)
    return inspect.Parameter(
        param.dest,
        inspect.Parameter.KEYWORD_ONLY,
        default=inspect.Parameter.empty if param.required else default,
        annotation=Annotated[kind, info],
    )


def typer_parameters(
    params: Sequence[Param], callbacks: Mapping[str, Callable[[Any], None]] | None = None
) -> inspect.Signature:
    """The signature typer reads ``params`` from (``callbacks``: an eager callback by a flag's ``dest``)."""
    return inspect.Signature([_parameter(p, (callbacks or {}).get(p.dest)) for p in params])


def _plain(value: object) -> object:
    """A parsed value as the bodies take it: a choice by its name, a repeated option as a tuple."""
    if isinstance(value, enum.Enum):
        return value.value
    return tuple(value) if isinstance(value, list) else value


def _command(name: str, *, help: str | None = None) -> Callable[[Callable[..., int | None]], Callable[..., None]]:
    """Register a body as the command ``name``, with the parameters :data:`~cudadoctor.cli_options.COMMANDS` holds
    for it; the body runs through :func:`cudadoctor.commands.guard`, and a non-zero code exits with it."""

    def register(body: Callable[..., int | None]) -> Callable[..., None]:
        def command(**values: Any) -> None:
            plain = {key: _plain(value) for key, value in values.items()}
            code = guard(lambda: body(**plain), passthrough=(typer.Exit, typer.Abort))
            if code:
                raise typer.Exit(code)

        command.__signature__ = typer_parameters(COMMANDS[name])  # type: ignore[attr-defined]
        command.__doc__, command.__name__ = body.__doc__, body.__name__
        app.command(name, help=help)(command)
        return command

    return register


# --- commands ---------------------------------------------------------------------------------------------------


@_command("check")
def check(**options: Any) -> int:
    """Examine this machine (or an image root, or a snapshot) and judge whether its CUDA stack fits together.

    Nothing is imported from torch, vLLM, JAX, TensorFlow or TensorRT: versions come from files,
    package metadata, NVML and the driver library. Typical run time is well under a second.
    Settings for CI (ignore, select, require, fail-on) can live in [tool.cudadoctor] of pyproject.toml
    or in .cudadoctor.toml. Exit status: 0 no errors, 1 errors found (or warnings with --fail-on warning),
    2 usage error, 3 cudadoctor could not produce a report.
    """
    return check_command(check_options(options))


@_command("snapshot")
def snapshot(**options: Any) -> None:
    """Write every fact, with its source, as JSON: attach it to a bug report; replay it with check --from."""
    from cudadoctor.commands import snapshot_command

    snapshot_command(**options)


@_command("usage")
def usage(*, sample: float, output_format: str) -> int:
    """Show how busy each GPU really is: utilization.gpu next to SM activity, and memory held by idle processes.

    utilization.gpu counts the time any kernel runs, even one that fills a single SM; this view puts the
    driver's last ~14 s of it next to GPM's SM activity (Hopper and newer) and each process's memory and
    activity, and says what one look can and cannot tell. Exit status: 0 shown, 2 usage error, 3 NVML did
    not answer.
    """
    from cudadoctor.probes.native import RealHealthSource
    from cudadoctor.usage import usage_command

    text, code = usage_command(RealHealthSource(), sample, output_format)
    # A view that could not be made is an error, and errors go to stderr; JSON stays on stdout for its reader.
    (sys.stderr if code and output_format == "text" else sys.stdout).write(text)
    return code


@_command("suggest")
def suggest(
    *,
    what: str | None,
    target: str | None,
    assume_driver: str | None,
    assume_gpu: tuple[str, ...] | None,
    python: str | None,
    platform: str | None,
    cuda: str | None,
    no_probe: bool,
    output_format: str,
    verbose: bool,
    matrix: bool,
) -> int:
    """Plan the wheels that fit this machine, or one described by flags, offline; exit 1 when nothing fits.

    Constraints come from this machine (driver, GPUs, Python, platform, installed torch) unless --no-probe;
    a flag overrides the probed fact. Plans are ranked: keep a compatible installed torch, then the newest
    release, a CUDA the driver supports natively before one that relies on minor-version compatibility.
    """
    from cudadoctor.commands import suggest_command, suggest_matrix_command
    from cudadoctor.planning import HostFlags

    flags = HostFlags(
        driver=assume_driver, gpus=tuple(assume_gpu or ()), python=python, platform=platform, cuda=cuda,
        probe=not no_probe,
    )  # fmt: skip
    if (what is None) == (target is None):
        raise UsageError("suggest: give one target, as an argument or --target (e.g. cudadoctor suggest torch)")
    if not (matrix or output_format == "markdown"):
        return suggest_command(what or target or "", flags, output_format, verbose=verbose)
    if not matrix:
        raise UsageError("--format markdown: give --matrix (the plans themselves are text, json, commands, dockerfile)")
    if output_format in ("commands", "dockerfile"):
        raise UsageError(f"--matrix --format {output_format}: expected text, json or markdown")
    return suggest_matrix_command(what or target or "", flags, output_format, verbose=verbose)


@_command("update")
def update(*, packages: tuple[str, ...] | None, index_url: str | None, cache_dir: str | None, limit: int) -> int:
    """Refresh release data (pins, Python versions, wheels) from your package index into the user cache.

    Reads each release's core metadata (PEP 658) through the simple API, never downloading wheels and never
    running anything fetched. Curated data in compat/ wins over what is read here; what is read is marked
    derived. A failed refresh leaves the previous cache as it was.
    """
    from cudadoctor.update.command import update_command

    return update_command(packages, index_url=index_url, cache_dir=cache_dir, limit=limit)


@_command("list-checks")
def list_checks(*, output_format: str) -> None:
    """List every check: its code, name, category and the healthy condition it verifies."""
    from cudadoctor.catalog import list_checks as listing

    sys.stdout.write(listing(output_format))


@_command("explain")
def explain(*, code: str, output_format: str) -> None:
    """Explain one check: what it checks, why it matters, and how to fix what it finds."""
    from cudadoctor.catalog import explain as explanation

    sys.stdout.write(explanation(code, output_format))


@_command("compare")
def compare(*, paths: tuple[str, ...], output_format: str, **expected: Any) -> int:
    """Find the node that differs: compare the snapshots or reports of many nodes.

    Nodes are split into pools by GPU model and MIG layout; within a pool a node with fewer GPUs than its
    peers is named, the NCCL, cuDNN, cuBLAS and libcuda that load (what --deep saw mapped, else what LD_PRELOAD
    or the loader's search puts first), the NCCL network plugin, the torch build, the CUDA runtime major and
    Python must match and the driver must be on one branch. Each fact is judged against --baseline or the
    pool's majority (with no majority, no node is named). A node named twice counts once. Exit status: 0 all
    agree, 1 a node differs, is missing or stale (or a report holds an error), 2 usage error.
    """
    from cudadoctor.compare.command import compare_command

    text, code = compare_command(paths, output_format=output_format, **expected)
    sys.stdout.write(text)
    return code


_command("why", help=WHY_HELP)(why_body)  # check's options and why's own (cudadoctor.cli_options.WHY)


@_command("completion")
def completion(*, shell: str) -> None:
    """Print the shell completion script for SHELL: commands, options and their values complete on Tab.

    Load it from your shell's start-up file:

      bash:  echo 'eval "$(cudadoctor completion bash)"' >> ~/.bashrc

      zsh:   echo 'eval "$(cudadoctor completion zsh)"' >> ~/.zshrc

      fish:  cudadoctor completion fish > ~/.config/fish/completions/cudadoctor.fish
    """
    from typer._completion_shared import get_completion_script

    sys.stdout.write(get_completion_script(prog_name="cudadoctor", complete_var=COMPLETE_VAR, shell=shell))


def _version_callback(value: bool) -> None:
    if value:
        print(f"cudadoctor {__version__}")
        raise typer.Exit()


def _root(**options: Any) -> None:
    """A CUDA environment doctor."""
    # Reached only when typer is driven directly (tests, an embedding program): the entry point takes both
    # options out of the command line before typer parses it, wherever they stand.
    color, no_color = _plain(options["color"]), options["no_color"]
    if no_color or color != ColorMode.AUTO.value:
        set_color_mode(ColorMode.NEVER if no_color else ColorMode(color))


_root.__signature__ = typer_parameters(GLOBAL, {"version": _version_callback})  # type: ignore[attr-defined]
app.callback()(_root)


def main() -> None:
    """Entry point of the ``cudadoctor`` command through typer (:func:`cudadoctor.entry.main` has already taken the
    colour options and prepared the streams when it is the caller; doing it again changes nothing)."""
    prepare_command_line(sys.argv)
    if COMPLETE_VAR in os.environ:  # a completion script asking: typer answers once its shells are registered
        from typer._completion_classes import completion_init

        completion_init()
    try:
        app(prog_name="cudadoctor", complete_var=COMPLETE_VAR)
    except BrokenPipeError:
        closed_pipe()
    except SystemExit as exc:
        # typer answers EPIPE in its own output (--help, --version, a usage error) with exit 1 after wrapping the
        # streams (typer/core.py, click's PacifyFlushWrapper): the same closed pipe as every other command's
        if exc.code == 1 and type(sys.stdout).__name__ == "PacifyFlushWrapper":
            closed_pipe()
        raise
