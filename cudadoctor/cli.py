"""The ``cudadoctor`` command line: the only place that prints, exits, or catches errors.

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
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, ParamSpec, TypeVar

import typer

from cudadoctor import __version__
from cudadoctor.commands import CheckOptions, check_command, closed_pipe, guard, prepare_command_line
from cudadoctor.errors import UsageError
from cudadoctor.report import Format
from cudadoctor.terminal import ColorMode, set_color_mode
from cudadoctor.why.cli import register as register_why

if TYPE_CHECKING:
    from cudadoctor.planning import HostFlags

__all__ = ["app", "main"]

P = ParamSpec("P")
R = TypeVar("R")

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
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

# --- shared options ---------------------------------------------------------------------------------

FromOpt = Annotated[
    str | None,
    typer.Option("--from", metavar="FILE", help="Evaluate a saved snapshot (or JSON report) instead of probing."),
]
RootOpt = Annotated[
    str | None,
    typer.Option(
        "--root",
        metavar="DIR",
        help="Read every file-based fact from an extracted image root instead of /. Nothing in it is run, "
        "and none of this host's facts are used.",
    ),
]
EnvFileOpt = Annotated[
    str | None,
    typer.Option("--env-file", metavar="FILE", help="The image's environment, as KEY=VALUE lines (docker style)."),
]
PythonOpt = Annotated[
    str | None,
    typer.Option(
        "--python",
        metavar="PATH",
        help="The interpreter whose packages to examine. Default: the active virtualenv or conda env, else "
        "the interpreter running cudadoctor (unless that is a pipx/uv tool install).",
    ),
]
AssumeDriverOpt = Annotated[
    str | None,
    typer.Option(
        "--driver",
        "--assume-driver",
        metavar="VERSION",
        help="The driver of the host this will run on (e.g. 550.54.15); overrides the probed driver. "
        "--assume-driver is the same option.",
    ),
]
AssumeGpuOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--gpu",
        "--assume-gpu",
        metavar="NAME|CC",
        help="A GPU of the target host: a model (H100, 'RTX 4090') or compute capability (8.9, sm_89). "
        "Repeat for several GPUs; overrides the probed GPUs. --assume-gpu is the same option.",
    ),
]


class RootKindChoice(str, enum.Enum):
    AUTO = "auto"
    HOST = "host"
    IMAGE = "image"


RootKindOpt = Annotated[
    RootKindChoice,
    typer.Option(
        "--root-kind",
        help="What the examined root is, which decides the fixes: host (a machine's own system, or its disk mounted "
        "under --root: a driver that differs from the kernel module is mended by a reboot) or image (a container or "
        "an exported image: driver libraries baked into it are removed, the NVIDIA runtime mounts the host's). "
        "auto decides from markers (/.dockerenv, /run/.containerenv, cgroups, a kernel in /boot) and, when they are "
        "missing or disagree, gives a host's fixes, which delete nothing.",
    ),
]
NoRedactOpt = Annotated[
    bool,
    typer.Option(
        "--no-redact",
        help="Show paths under the home directory as they are instead of as ~ (for local debugging). Tokens, "
        "secret-looking environment values, credentials in URLs and GPU UUIDs stay masked.",
    ),
]


def _guarded(func: Callable[P, int | None]) -> Callable[P, None]:
    """Run a command body through :func:`cudadoctor.commands.guard`; a non-zero code exits with it."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> None:
        code = guard(lambda: func(*args, **kwargs), passthrough=(typer.Exit, typer.Abort))
        if code:
            raise typer.Exit(code)

    return wrapper


# --- commands ---------------------------------------------------------------------------------------


@app.command()
@_guarded
def check(
    output_format: Annotated[
        Format,
        typer.Option(
            "--format",
            "-f",
            help="text for people; json for tools (all facts with sources); github for workflow annotations; "
            "markdown for a bug report or PR comment; slurm, npd (one line) and health-json for schedulers: the "
            "node's GPU health verdict, exit 0 ok, 1 problem, 2 could not judge.",
        ),
    ] = Format.TEXT,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show every fact and where it was read.")] = False,
    from_file: FromOpt = None,
    root: RootOpt = None,
    env_file: EnvFileOpt = None,
    python: PythonOpt = None,
    assume_driver: AssumeDriverOpt = None,
    assume_gpu: AssumeGpuOpt = None,
    root_kind: RootKindOpt = RootKindChoice.AUTO,
    no_redact: NoRedactOpt = False,
    select: Annotated[
        list[str] | None,
        typer.Option(
            "--select", metavar="CODE", help="Run only these checks: a code (CD102), a prefix (CD1) or a name."
        ),
    ] = None,
    ignore: Annotated[
        list[str] | None,
        typer.Option("--ignore", metavar="CODE", help="Skip these checks: a code, a prefix or a name. Repeatable."),
    ] = None,
    require: Annotated[
        list[str] | None,
        typer.Option(
            "--require",
            metavar="REQ",
            help="Assert something this job needs: a package ('torch>=2.6', 'vllm'), 'cuda>=12.4' (the CUDA version "
            "the driver supports) or 'driver>=550'. Repeatable; fails the run (CD901) when unmet.",
        ),
    ] = None,
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            metavar="LEVEL",
            help="Exit 1 on: error (default), warning (errors and warnings) or never (report only).",
        ),
    ] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Same as --fail-on warning.")] = False,
    fail_on_unknown: Annotated[
        bool,
        typer.Option(
            "--fail-on-unknown",
            help="Also exit 1 when a check could not be judged (a fact unreadable, data missing): for CI gates "
            "that must not pass on what cudadoctor does not know.",
        ),
    ] = False,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Write the report (in --format) to FILE; the terminal gets the summary.",
        ),
    ] = None,
    deep: Annotated[
        bool,
        typer.Option(
            "--deep",
            help="Also check at run time, in child processes of the target interpreter: cuInit and the devices, "
            "then each installed framework imported with one small GPU operation and the libraries it really "
            "loaded. Takes seconds; never imports a framework in cudadoctor's own process.",
        ),
    ] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", metavar="SECONDS", help="Time allowed to each --deep child process.")
    ] = 30.0,
    nccl: Annotated[
        bool,
        typer.Option(
            "--nccl",
            help="With --deep on a machine with two or more GPUs: run an NCCL all-reduce between one process "
            "per GPU (torch, over 127.0.0.1).",
        ),
    ] = False,
    no_health: Annotated[
        bool,
        typer.Option(
            "--no-health",
            help="Skip the GPU hardware-health checks (CD150-CD199: NVML ECC, row remapping, Xids, throttling, "
            "PCIe, NVLink, NCCL host prerequisites).",
        ),
    ] = False,
    dcgm_diag: Annotated[
        int | None,
        typer.Option(
            "--dcgm-diag",
            metavar="LEVEL",
            help="Also run NVIDIA DCGM's active diagnostic, dcgmi diag -r LEVEL (1: seconds of software checks; "
            "2: adds memory and PCIe tests, about two minutes), through the running nv-hostengine, and report its "
            "verdict as CD167. Never run unless given.",
        ),
    ] = None,
    dcgm_timeout: Annotated[
        float | None,
        typer.Option(
            "--dcgm-timeout",
            metavar="SECONDS",
            help="Time allowed to dcgmi diag (default 90 s for level 1, 300 s for level 2).",
        ),
    ] = None,
) -> int:
    """Examine this machine (or an image root, or a snapshot) and judge whether its CUDA stack fits together.

    Nothing is imported from torch, vLLM, JAX, TensorFlow or TensorRT: versions come from files,
    package metadata, NVML and the driver library. Typical run time is well under a second.
    Settings for CI (ignore, select, require, fail-on) can live in [tool.cudadoctor] of pyproject.toml
    or in .cudadoctor.toml. Exit status: 0 no errors, 1 errors found (or warnings with --fail-on warning),
    2 usage error, 3 cudadoctor could not produce a report.
    """
    return check_command(
        CheckOptions(
            output_format=output_format, verbose=verbose, from_file=from_file, root=root, env_file=env_file,
            python=python, assume_driver=assume_driver, assume_gpu=_tuple(assume_gpu), root_kind=root_kind.value,
            no_redact=no_redact, select=_tuple(select), ignore=_tuple(ignore), require=_tuple(require), fail_on=fail_on,
            strict=strict,
            fail_on_unknown=fail_on_unknown, output=output, deep=deep, timeout=timeout, nccl=nccl,
            no_health=no_health, dcgm_diag=dcgm_diag, dcgm_timeout=dcgm_timeout,
        )
    )  # fmt: skip


def _tuple(values: list[str] | None) -> tuple[str, ...] | None:
    return tuple(values) if values is not None else None


@app.command()
@_guarded
def snapshot(
    output: Annotated[
        str | None, typer.Option("--output", "-o", metavar="FILE", help="Write here instead of standard output.")
    ] = None,
    root: RootOpt = None,
    env_file: EnvFileOpt = None,
    python: PythonOpt = None,
    assume_driver: AssumeDriverOpt = None,
    assume_gpu: AssumeGpuOpt = None,
    root_kind: RootKindOpt = RootKindChoice.AUTO,
    no_redact: NoRedactOpt = False,
) -> None:
    """Write every fact, with its source, as JSON: attach it to a bug report; replay it with check --from."""
    from cudadoctor.app import FactSource, gather, stderr_notice
    from cudadoctor.facts.codec import facts_to_json
    from cudadoctor.output import write_text

    source = FactSource(
        root=root, env_file=env_file, python=python, assume_driver=assume_driver,
        assume_gpus=tuple(assume_gpu or ()), root_kind=root_kind.value, redact_home=not no_redact,
    )  # fmt: skip
    text = facts_to_json(gather(source, stderr_notice)) + "\n"
    if output is None or output == "-":
        sys.stdout.write(text)
        return
    write_text(output, text)
    print(f"cudadoctor: wrote {output}", file=sys.stderr)


class UsageFormat(str, enum.Enum):
    TEXT = "text"
    JSON = "json"


@app.command()
@_guarded
def usage(
    sample: Annotated[
        float,
        typer.Option(
            "--sample",
            metavar="SECONDS",
            help="Measure GPM's SM activity and occupancy over this window (Hopper and newer); 0 reads only the "
            "driver's sample buffer.",
        ),
    ] = 1.0,
    output_format: Annotated[UsageFormat, typer.Option("--format", "-f", help="text or json.")] = UsageFormat.TEXT,
) -> int:
    """Show how busy each GPU really is: utilization.gpu next to SM activity, and memory held by idle processes.

    utilization.gpu counts the time any kernel runs, even one that fills a single SM; this view puts the
    driver's last ~14 s of it next to GPM's SM activity (Hopper and newer) and each process's memory and
    activity, and says what one look can and cannot tell. Exit status: 0 shown, 2 usage error, 3 NVML did
    not answer.
    """
    from cudadoctor.probes.native import RealHealthSource
    from cudadoctor.usage import usage_command

    text, code = usage_command(RealHealthSource(), sample, output_format.value)
    # A view that could not be made is an error, and errors go to stderr; JSON stays on stdout for its reader.
    (sys.stderr if code and output_format is UsageFormat.TEXT else sys.stdout).write(text)
    return code


class SuggestFormat(str, enum.Enum):
    TEXT = "text"
    JSON = "json"
    COMMANDS = "commands"
    DOCKERFILE = "dockerfile"
    MARKDOWN = "markdown"


def _suggest_matrix(
    target: str, flags: HostFlags, output_format: SuggestFormat, *, matrix: bool, verbose: bool
) -> None:
    """``suggest --matrix``: the table of releases x builds, as text, JSON or Markdown."""
    from cudadoctor.commands import this_machine
    from cudadoctor.planning import matrix_plan
    from cudadoctor.report.fit_matrix import render_matrix_json, render_matrix_markdown, render_matrix_text

    if not matrix:
        raise UsageError("--format markdown: give --matrix (the plans themselves are text, json, commands, dockerfile)")
    if output_format in (SuggestFormat.COMMANDS, SuggestFormat.DOCKERFILE):
        raise UsageError(f"--matrix --format {output_format.value}: expected text, json or markdown")
    found, constraints = matrix_plan(target, flags, this_machine)
    if output_format is SuggestFormat.JSON:
        sys.stdout.write(render_matrix_json(found, constraints))
    elif output_format is SuggestFormat.MARKDOWN:
        sys.stdout.write(render_matrix_markdown(found, constraints, verbose=verbose))
    else:
        sys.stdout.write(render_matrix_text(found, constraints, verbose=verbose))
    if not any(cell.fits for row in found.rows for cell in row.cells):
        raise typer.Exit(1)


@app.command()
@_guarded
def suggest(
    what: Annotated[
        str | None,
        typer.Argument(
            metavar="[TARGET]",
            help="What to install: torch, vllm, jax, tensorrt, tensorflow, cupy or onnxruntime-gpu, optionally "
            "with a requirement ('torch>=2.6', 'torch==2.13.0+cu126', 'vllm==0.30.0').",
        ),
    ] = None,
    target: Annotated[
        str | None, typer.Option("--target", "-t", metavar="TARGET", help="The same as the TARGET argument.")
    ] = None,
    driver: Annotated[
        str | None,
        typer.Option(
            "--driver", "--assume-driver", metavar="VERSION", help="Plan for this driver (535.104.05) or branch (550)."
        ),
    ] = None,
    gpu: Annotated[
        list[str] | None,
        typer.Option(
            "--gpu",
            "--assume-gpu",
            metavar="NAME|CC",
            help="Plan for this GPU ('RTX 4090', sm_89, 8.9; MI300X, 'Apple M2'; none: no GPU); repeat for a fleet.",
        ),
    ] = None,
    python_version: Annotated[
        str | None, typer.Option("--python", metavar="X.Y", help="Plan for this Python version.")
    ] = None,
    platform_name: Annotated[
        str | None,
        typer.Option(
            "--platform", metavar="PLATFORM", help="linux-x86_64 (default), linux-aarch64, windows or macos-arm64."
        ),
    ] = None,
    cuda: Annotated[
        str | None, typer.Option("--cuda", metavar="X.Y", help="Never plan a build for a CUDA newer than this.")
    ] = None,
    no_probe: Annotated[
        bool, typer.Option("--no-probe", help="Ignore this machine: plan only from the flags given.")
    ] = False,
    output_format: Annotated[
        SuggestFormat,
        typer.Option(
            "--format",
            "-f",
            help="text; json (every exclusion explained); commands (top plan's command only); "
            "dockerfile (FROM and RUN lines); markdown (--matrix only).",
        ),
    ] = SuggestFormat.TEXT,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="List every excluded candidate.")] = False,
    matrix: Annotated[
        bool,
        typer.Option(
            "--matrix", help="Every release x CUDA build of the target: fits, or why not (text, json, markdown)."
        ),
    ] = False,
) -> int | None:
    """Plan the wheels that fit this machine, or one described by flags, offline; exit 1 when nothing fits.

    Constraints come from this machine (driver, GPUs, Python, platform, installed torch) unless --no-probe;
    a flag overrides the probed fact. Plans are ranked: keep a compatible installed torch, then the newest
    release, a CUDA the driver supports natively before one that relies on minor-version compatibility.
    """
    from cudadoctor.commands import suggest_command
    from cudadoctor.planning import HostFlags

    flags = HostFlags(
        driver=driver, gpus=tuple(gpu or ()), python=python_version, platform=platform_name, cuda=cuda,
        probe=not no_probe,
    )  # fmt: skip
    if (what is None) == (target is None):
        raise UsageError("suggest: give one target, as an argument or --target (e.g. cudadoctor suggest torch)")
    if matrix or output_format is SuggestFormat.MARKDOWN:
        _suggest_matrix(what or target or "", flags, output_format, matrix=matrix, verbose=verbose)
        return None
    return suggest_command(what or target or "", flags, output_format.value, verbose=verbose)


@app.command()
@_guarded
def update(
    packages: Annotated[
        list[str] | None,
        typer.Argument(metavar="[PACKAGE]...", help="Projects to refresh (default: torch, vllm, jax, the nvidia-* …)."),
    ] = None,
    index_url: Annotated[
        str | None,
        typer.Option(
            "--index-url",
            metavar="URL",
            help="A PEP 503/691 simple index. Default: the one pip is configured to use (PIP_INDEX_URL, pip.conf), "
            "else https://pypi.org/simple/.",
        ),
    ] = None,
    cache_dir: Annotated[
        str | None, typer.Option("--cache-dir", metavar="DIR", help="Default: $XDG_CACHE_HOME/cudadoctor.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", metavar="N", help="Newest releases read per project.")] = 40,
) -> None:
    """Refresh release data (pins, Python versions, wheels) from your package index into the user cache.

    Reads each release's core metadata (PEP 658) through the simple API, never downloading wheels and never
    running anything fetched. Curated data in compat/ wins over what is read here; what is read is marked
    derived. A failed refresh leaves the previous cache as it was.
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from cudadoctor.pipconfig import configured_index
    from cudadoctor.update import DEFAULT_PACKAGES, default_cache_dir, refresh
    from cudadoctor.update.errors import PackagesNotFound

    if limit < 1:
        raise UsageError("--limit must be at least 1")
    index = configured_index(os.environ, explicit=index_url)
    for problem in index.problems:
        print(f"cudadoctor: warning: {problem}", file=sys.stderr)
    target = cache_dir or default_cache_dir()
    console = Console(stderr=True)
    console.print(f"Reading {index.display} ({index.source}) …", highlight=False, markup=False)
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=console, transient=True
    ) as bar:
        task = bar.add_task("index pages", total=None)

        def progress(done: int, total: int, label: str) -> None:
            bar.update(task, completed=done, total=total, description=label)

        try:
            names = packages or DEFAULT_PACKAGES
            result = refresh(names, index=index, cache_dir=target, progress=progress, limit=limit)
        except PackagesNotFound as exc:
            unknown = _unknown_names(exc.names)
            if not unknown:  # names cudadoctor knows are on PyPI: the index is wrong (exit 3)
                raise
            raise UsageError(f"{exc}{_known_package_hint(unknown)}") from None
    for warning in result.warnings:
        print(f"cudadoctor: warning: {warning}", file=sys.stderr)
    missing = [s.name for s in result.packages if not s.found]
    for name in missing:
        print(f"cudadoctor: warning: {name}: not on {result.index}{_known_package_hint((name,))}", file=sys.stderr)
    what = f"{result.new} new release record(s)" if result.new else "nothing changed (the cache is up to date)"
    print(f"cudadoctor: {what} from {result.index} in {result.requests} request(s); cache: {result.cache_path}")
    if _unknown_names(missing):  # a name typed that the index lacks and cudadoctor does not know: a typo
        raise typer.Exit(2)


def _unknown_names(names: Sequence[str]) -> list[str]:
    """Names that are not among the packages ``update`` refreshes by default (all of them are on PyPI)."""
    from cudadoctor.update import DEFAULT_PACKAGES

    return [n for n in names if n.lower() not in DEFAULT_PACKAGES]


def _known_package_hint(names: Sequence[str]) -> str:
    from cudadoctor.didyoumean import did_you_mean
    from cudadoctor.update import DEFAULT_PACKAGES

    return "".join(did_you_mean(name, DEFAULT_PACKAGES) for name in _unknown_names(names)[:1])


class ListFormat(str, enum.Enum):
    TEXT = "text"
    JSON = "json"
    MARKDOWN = "markdown"


@app.command("list-checks")
@_guarded
def list_checks(
    output_format: Annotated[
        ListFormat, typer.Option("--format", "-f", help="text, json, or markdown (a table).")
    ] = ListFormat.TEXT,
) -> None:
    """List every check: its code, name, category and the healthy condition it verifies."""
    from cudadoctor.catalog import list_checks as listing

    sys.stdout.write(listing(output_format.value))


@app.command()
@_guarded
def explain(
    code: Annotated[str, typer.Argument(metavar="CODE", help="A check's code (CD102) or name.")],
    output_format: Annotated[
        ListFormat, typer.Option("--format", "-f", help="text, json or markdown.")
    ] = ListFormat.TEXT,
) -> None:
    """Explain one check: what it checks, why it matters, and how to fix what it finds."""
    from cudadoctor.catalog import explain as explanation
    from cudadoctor.checks import resolve_codes

    matches = resolve_codes([code], "explain")
    if len(matches) != 1:
        raise UsageError(
            f"explain {code!r}: matches {len(matches)} checks ({', '.join(sorted(matches))}); give one code"
        )
    sys.stdout.write(explanation(matches.pop(), output_format.value))


@app.command()
@_guarded
def compare(
    paths: Annotated[
        list[str],
        typer.Argument(
            metavar="REPORT|DIR...",
            help="Snapshots (cudadoctor snapshot) or JSON reports (check -f json) of the nodes, or directories of "
            "them; a node is named by its file (reports/%N.json from srun).",
        ),
    ],
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            metavar="FILE",
            help="Judge every node against this node's report, or a JSON object of expected values "
            '({"nccl": "2.28.9 (pip)", "driver_branch": "580"}); default: the majority of each pool.',
        ),
    ] = None,
    expect_hosts: Annotated[
        str | None,
        typer.Option(
            "--expect-hosts",
            metavar="HOSTLIST|FILE",
            help="The nodes that must have a report: a Slurm host list (gpu[001-098]) or a file of names, one a "
            "line; a node without one is named.",
        ),
    ] = None,
    expect_gpus: Annotated[
        list[str] | None,
        typer.Option(
            "--expect-gpus",
            metavar="COUNTxMODEL",
            help="What each kind of node holds (8xH100; repeat for several kinds): a node with fewer GPUs, or a "
            "model none names, is named. Default: the majority of its pool.",
        ),
    ] = None,
    max_age: Annotated[
        str | None,
        typer.Option(
            "--max-age", metavar="AGE", help="Name the nodes whose report is older than this (seconds, or 90m, 2h, 1d)."
        ),
    ] = None,
    output_format: Annotated[
        ListFormat, typer.Option("--format", "-f", help="text, json or markdown.")
    ] = ListFormat.TEXT,
) -> None:
    """Find the node that differs: compare the snapshots or reports of many nodes.

    Nodes are split into pools by GPU model and MIG layout; within a pool a node with fewer GPUs than its
    peers is named, the NCCL, cuDNN, cuBLAS and libcuda that load (what --deep saw mapped, else what LD_PRELOAD
    or the loader's search puts first), the NCCL network plugin, the torch build, the CUDA runtime major and
    Python must match and the driver must be on one branch. Each fact is judged against --baseline or the
    pool's majority (with no majority, no node is named). A node named twice counts once. Exit status: 0 all
    agree, 1 a node differs, is missing or stale (or a report holds an error), 2 usage error.
    """
    from cudadoctor.compare.inventory import expected_gpus, expected_hosts, parse_age
    from cudadoctor.compare.judge import judge
    from cudadoctor.compare.load import baseline_values, load_nodes, node_files
    from cudadoctor.compare.render import FORMATS, exit_code

    expected = baseline_values(baseline) if baseline is not None else None
    hosts = expected_hosts(expect_hosts) if expect_hosts is not None else None
    age = parse_age(max_age) if max_age is not None else None
    files, notes = node_files(paths)
    gpus = expected_gpus(expect_gpus) if expect_gpus else None
    verdict = judge(
        list(load_nodes(files)), expected, expected_hosts=hosts, max_age=age, notes=notes, expected_gpus=gpus
    )
    sys.stdout.write(FORMATS[output_format.value](verdict))
    code = exit_code(verdict)
    if code:
        raise typer.Exit(code)


register_why(app, check, _guarded)  # `why`: check's options, read from its signature


class Shell(str, enum.Enum):
    BASH = "bash"
    ZSH = "zsh"
    FISH = "fish"
    POWERSHELL = "powershell"


#: The variable a completion script sets when it asks for the words that may follow (cudadoctor.entry routes
#: such a call here, past the fast path).
COMPLETE_VAR = "_CUDADOCTOR_COMPLETE"


@app.command()
@_guarded
def completion(shell: Annotated[Shell, typer.Argument(help="bash, zsh, fish or powershell.")]) -> None:
    """Print the shell completion script for SHELL: commands, options and their values complete on Tab.

    Load it from your shell's start-up file:

      bash:  echo 'eval "$(cudadoctor completion bash)"' >> ~/.bashrc

      zsh:   echo 'eval "$(cudadoctor completion zsh)"' >> ~/.zshrc

      fish:  cudadoctor completion fish > ~/.config/fish/completions/cudadoctor.fish
    """
    from typer._completion_shared import get_completion_script

    sys.stdout.write(get_completion_script(prog_name="cudadoctor", complete_var=COMPLETE_VAR, shell=shell.value))


def _version_callback(value: bool) -> None:
    if value:
        print(f"cudadoctor {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", "-V", callback=_version_callback, is_eager=True, help="Print the version."),
    ] = False,
    color: Annotated[
        ColorMode,
        typer.Option(
            "--color",
            help="Colour the output: auto (on a terminal, unless NO_COLOR is set or TERM=dumb; FORCE_COLOR forces "
            "it), always or never. Taken before or after the command's name, like --no-color.",
        ),
    ] = ColorMode.AUTO,
    no_color: Annotated[bool, typer.Option("--no-color", help="The same as --color never.")] = False,
) -> None:
    """A CUDA environment doctor."""
    # Reached only when typer is driven directly (tests, an embedding program): the entry point takes both
    # options out of the command line before typer parses it, wherever they stand.
    if no_color or color is not ColorMode.AUTO:
        set_color_mode(ColorMode.NEVER if no_color else color)


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
