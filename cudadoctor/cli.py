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
import re
import sys
from typing import TYPE_CHECKING, Annotated

import typer
from packaging.specifiers import InvalidSpecifier
from packaging.version import InvalidVersion, Version

from cudadoctor import __version__
from cudadoctor.errors import CudadoctorError, UsageError
from cudadoctor.facts.model import Facts
from cudadoctor.report import Format

if TYPE_CHECKING:
    from cudadoctor.checks.findings import Finding
    from cudadoctor.data import DataDates

__all__ = ["app", "main"]

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
        "--assume-driver",
        metavar="VERSION",
        help="The driver of the host this will run on (e.g. 550.54.15); overrides the probed driver.",
    ),
]
AssumeGpuOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--assume-gpu",
        metavar="NAME|CC",
        help="A GPU of the target host: a model (H100, 'RTX 4090') or compute capability (8.9, sm_89). "
        "Repeat for several GPUs; overrides the probed GPUs.",
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


def _err(message: str) -> None:
    prefix = (
        "\x1b[31mcudadoctor: error:\x1b[0m "
        if sys.stderr.isatty() and "NO_COLOR" not in os.environ
        else ("cudadoctor: error: ")
    )
    print(prefix + message, file=sys.stderr)


def _gather(
    *,
    from_file: str | None,
    root: str | None,
    env_file: str | None,
    python: str | None,
    assume_driver: str | None,
    assume_gpu: list[str] | None,
    redact: bool,
    deep_timeout: float | None = None,
    nccl: bool = False,
) -> Facts:
    """Facts from a snapshot, an image root or this machine, with assumptions and redaction applied."""
    from cudadoctor.assume import apply_assumptions
    from cudadoctor.facts.codec import redact_facts
    from cudadoctor.redact import Redactor

    if from_file is not None and root is not None:
        raise UsageError("--from and --root cannot be combined: a snapshot already holds its facts")
    if env_file is not None and root is None:
        raise UsageError("--env-file describes an image: use it with --root")
    if from_file is not None:
        facts = _read_snapshot(from_file)
    else:
        from cudadoctor.probes.collect import collect_facts, live_context, root_context

        if root is not None:
            if not os.path.isdir(root):
                raise UsageError(f"--root {root}: not a directory")
            env: dict[str, str] = {}
            if env_file is not None:
                from cudadoctor.envfile import read_env_file

                env, warnings = read_env_file(env_file)
                for warning in warnings:
                    print(f"cudadoctor: warning: {warning}", file=sys.stderr)
            ctx = root_context(root, env, python=python)
        else:
            ctx = live_context(python=python)
        facts = collect_facts(ctx)
        if deep_timeout is not None:
            from dataclasses import replace

            from cudadoctor.probes.runtime import probe_runtime

            print("cudadoctor: running --deep probes in child processes…", file=sys.stderr)
            runtime = probe_runtime(ctx, timeout=deep_timeout)
            if nccl and runtime is not None:
                from cudadoctor.probes.runtime import probe_nccl_smoke

                print("cudadoctor: running the NCCL all-reduce test…", file=sys.stderr)
                from cudadoctor.probes.runtime import visible_gpus

                smoke = probe_nccl_smoke(ctx, visible_gpus(runtime), timeout=max(deep_timeout, 60.0))
                runtime = replace(runtime, nccl_smoke=smoke)
            facts = replace(facts, runtime=runtime, errors=tuple(ctx.errors))
    facts = apply_assumptions(facts, driver=assume_driver, gpus=assume_gpu or ())
    # Secrets, URL credentials and GPU UUIDs are masked always; --no-redact only keeps the home directory.
    return redact_facts(facts, Redactor.for_this_user() if redact else Redactor())


def _read_snapshot(path: str) -> Facts:
    from cudadoctor.errors import SnapshotError
    from cudadoctor.facts.codec import facts_from_json

    try:
        with open(path, "rb") as handle:
            # A snapshot is tens of kilobytes; refuse anything absurd instead of reading it whole.
            data = handle.read(64 << 20)
            if handle.read(1):
                raise SnapshotError(f"{path}: larger than 64 MiB, not a cudadoctor snapshot")
    except OSError as exc:
        raise SnapshotError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SnapshotError(f"{path}: not UTF-8 text, not a cudadoctor snapshot") from None
    return facts_from_json(text, origin=path)


def _guarded(func):  # type: ignore[no-untyped-def]
    """Run a command body; turn cudadoctor's errors into one line and an exit code."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
        try:
            return func(*args, **kwargs)
        except CudadoctorError as exc:
            _err(str(exc))
            raise typer.Exit(exc.exit_code) from None
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
            raise
        except Exception as exc:  # a bug: say so, with the traceback only when asked
            _err(
                f"internal error: {type(exc).__name__}: {exc} (please report this; set CUDADOCTOR_DEBUG=1 "
                "for the traceback)"
            )
            if os.environ.get("CUDADOCTOR_DEBUG"):
                import traceback

                traceback.print_exc()
            raise typer.Exit(3) from None

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
            "markdown for a bug report or PR comment.",
        ),
    ] = Format.TEXT,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show every fact and where it was read.")] = False,
    from_file: FromOpt = None,
    root: RootOpt = None,
    env_file: EnvFileOpt = None,
    python: PythonOpt = None,
    assume_driver: AssumeDriverOpt = None,
    assume_gpu: AssumeGpuOpt = None,
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
) -> None:
    """Examine this machine (or an image root, or a snapshot) and judge whether its CUDA stack fits together.

    Nothing is imported from torch, vLLM, JAX, TensorFlow or TensorRT: versions come from files,
    package metadata, NVML and the driver library. Typical run time is well under a second.
    Settings for CI (ignore, select, require, fail-on) can live in [tool.cudadoctor] of pyproject.toml
    or in .cudadoctor.toml. Exit status: 0 no errors, 1 errors found (or warnings with --fail-on warning),
    2 usage error, 3 cudadoctor could not produce a report.
    """
    from cudadoctor.checks import selected
    from cudadoctor.checks.meta import parse_assertion
    from cudadoctor.config import FAIL_ON, find_settings

    settings = find_settings()
    level = "warning" if strict else (fail_on or settings.fail_on or "error")
    if level not in FAIL_ON:
        raise UsageError(f"--fail-on {level!r}: expected one of {', '.join(FAIL_ON)}")
    requirements = (*settings.require, *(require or ()))
    for text in requirements:
        parse_assertion(text)  # a bad assertion is a usage error before any probing
    codes = selected(select or settings.select, (*settings.ignore, *(ignore or ())))
    if nccl and not deep:
        raise UsageError("--nccl is part of the runtime checks: use it with --deep")
    if deep and (root is not None or from_file is not None):
        raise UsageError("--deep runs code on this machine: it cannot be combined with --root or --from")
    if timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    facts = _gather(
        from_file=from_file, root=root, env_file=env_file, python=python,
        assume_driver=assume_driver, assume_gpu=assume_gpu, redact=not no_redact or output_format is Format.MARKDOWN,
        deep_timeout=timeout if deep else None, nccl=nccl,
    )  # fmt: skip
    from cudadoctor.checks.engine import run_checks
    from cudadoctor.checks.findings import Status
    from cudadoctor.data import CompatMatrix

    matrix = CompatMatrix()
    findings = run_checks(facts, matrix, select=codes, requirements=requirements)
    failing = {
        "error": {Status.FAIL, Status.ERROR},
        "warning": {Status.FAIL, Status.ERROR, Status.WARN},
        "never": set(),
    }
    exit_code = 1 if any(f.status in failing[level] for f in findings) else 0
    dates = matrix.dates
    report = _render(
        output_format, facts, findings, exit_code=exit_code, verbose=verbose, to_terminal=output is None, dates=dates
    )
    if output is not None:
        _write_file(output, report)
        summary = _render(
            Format.TEXT, facts, findings, exit_code=exit_code, verbose=False, to_terminal=True, dates=dates
        )
        sys.stdout.write(summary)
        print(f"cudadoctor: wrote the {output_format.value} report to {output}", file=sys.stderr)
    else:
        sys.stdout.write(report)
    if exit_code:
        raise typer.Exit(exit_code)


def _render(
    fmt: Format,
    facts: Facts,
    findings: list[Finding],
    *,
    exit_code: int,
    verbose: bool,
    to_terminal: bool,
    dates: DataDates,
) -> str:
    if fmt is Format.JSON:
        from cudadoctor.report.json import render_json

        return render_json(facts, findings, exit_code=exit_code, dates=dates) + "\n"
    if fmt is Format.GITHUB:
        from cudadoctor.report.github import render_github

        return render_github(findings)
    if fmt is Format.MARKDOWN:
        from cudadoctor.report.markdown import render_markdown

        return render_markdown(facts, findings)
    from cudadoctor.report.text import render_text

    color = to_terminal and sys.stdout.isatty() and "NO_COLOR" not in os.environ
    width = min(max(_terminal_width(), 60), 160) if to_terminal else 100
    return render_text(facts, findings, verbose=verbose, color=color, width=width, dates=dates)


def _write_file(path: str, text: str) -> None:
    """Write ``text`` to ``path`` atomically (a half-written report is never left behind)."""
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        # errors="replace": a name or value that is not UTF-8 (a surrogate escape) must not lose the report.
        with open(tmp, "w", encoding="utf-8", errors="replace") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _terminal_width() -> int:
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns
    except (OSError, ValueError):
        return 100


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
    no_redact: NoRedactOpt = False,
) -> None:
    """Write every fact, with its source, as JSON: attach it to a bug report; replay it with check --from."""
    from cudadoctor.facts.codec import facts_to_json

    facts = _gather(
        from_file=None, root=root, env_file=env_file, python=python,
        assume_driver=assume_driver, assume_gpu=assume_gpu, redact=not no_redact,
    )  # fmt: skip
    text = facts_to_json(facts) + "\n"
    if output is None or output == "-":
        sys.stdout.write(text)
        return
    _write_file(output, text)
    print(f"cudadoctor: wrote {output}", file=sys.stderr)


class SuggestFormat(str, enum.Enum):
    TEXT = "text"
    JSON = "json"
    COMMANDS = "commands"
    DOCKERFILE = "dockerfile"


@app.command()
@_guarded
def suggest(
    target: Annotated[
        str,
        typer.Option(
            "--target",
            "-t",
            metavar="TARGET",
            help="What to install: torch, vllm, jax, tensorrt, tensorflow, cupy or onnxruntime-gpu, optionally "
            "with a requirement ('torch>=2.6', 'vllm==0.30.0').",
        ),
    ],
    driver: Annotated[
        str | None, typer.Option("--driver", metavar="VERSION", help="Plan for this driver (e.g. 535.104.05).")
    ] = None,
    gpu: Annotated[
        list[str] | None,
        typer.Option(
            "--gpu", metavar="NAME|CC", help="Plan for this GPU ('RTX 4090', sm_89, 8.9); repeat for a fleet."
        ),
    ] = None,
    python_version: Annotated[
        str | None, typer.Option("--python", metavar="X.Y", help="Plan for this Python version.")
    ] = None,
    platform_name: Annotated[
        str | None,
        typer.Option("--platform", metavar="PLATFORM", help="linux-x86_64 (default), linux-aarch64 or windows."),
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
            "dockerfile (FROM and RUN lines).",
        ),
    ] = SuggestFormat.TEXT,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="List every excluded candidate.")] = False,
) -> None:
    """Plan the wheels that fit this machine, or one described by flags, offline; exit 1 when nothing fits.

    Constraints come from this machine (driver, GPUs, Python, platform, installed torch) unless --no-probe;
    a flag overrides the probed fact. Plans are ranked: keep a compatible installed torch, then the newest
    release, a CUDA the driver supports natively before one that relies on minor-version compatibility.
    """
    from cudadoctor import suggest as planner
    from cudadoctor.data import CompatMatrix
    from cudadoctor.report.suggestion import (
        render_commands,
        render_dockerfile,
        render_suggestion_json,
        render_suggestion_text,
    )

    name = re.split(r"[<>=!~ \[]", target.strip(), maxsplit=1)[0].lower()
    planners = {
        "torch": planner.suggest_torch,
        "vllm": planner.suggest_vllm,
        "jax": planner.suggest_jax,
        "tensorrt": planner.suggest_tensorrt,
        "cupy": planner.suggest_cupy,
        "onnxruntime-gpu": planner.suggest_onnxruntime_gpu,
        "tensorflow": planner.suggest_tensorflow,
    }
    if name not in planners:
        raise UsageError(f"--target {target!r}: suggest plans {', '.join(planners)}")
    matrix = CompatMatrix()
    constraints = _constraints(matrix, driver, gpu or [], python_version, platform_name, cuda, probe=not no_probe)
    try:
        result = planners[name](matrix, constraints, target.strip())
    except InvalidSpecifier:
        raise UsageError(f"--target {target!r}: not a requirement such as 'torch>=2.6'") from None
    if output_format is SuggestFormat.JSON:
        sys.stdout.write(render_suggestion_json(result, constraints))
    elif output_format is SuggestFormat.COMMANDS:
        sys.stdout.write(render_commands(result))
    elif output_format is SuggestFormat.DOCKERFILE:
        sys.stdout.write(render_dockerfile(result, constraints))
    else:
        sys.stdout.write(render_suggestion_text(result, constraints, verbose=verbose))
    if not result.plans:
        if output_format in (SuggestFormat.COMMANDS, SuggestFormat.DOCKERFILE):
            print("cudadoctor: nothing fits: " + "; ".join(result.advice), file=sys.stderr)
        raise typer.Exit(1)


def _constraints(matrix, driver, gpus, python_version, platform_name, cuda, *, probe):  # type: ignore[no-untyped-def]
    """Constraints from this machine's facts (unless ``probe`` is False), overridden by the flags."""
    from cudadoctor import gpu_models
    from cudadoctor.assume import parse_driver_version
    from cudadoctor.checks.driver import effective_cuda, forward_compat, gpu_segments
    from cudadoctor.suggest import PLATFORMS, Constraints, Gpu

    origins: dict[str, str] = {}
    facts = None
    if probe:
        from cudadoctor.probes.collect import collect_facts, live_context

        facts = collect_facts(live_context())
    drv = drv_cuda = None
    if driver is not None:
        drv = parse_driver_version(driver.replace("--assume-driver", ""))
        drv_cuda = matrix.cuda_for_driver(drv)
        origins["driver"] = "--driver"
    elif facts is not None and facts.driver is not None and facts.driver.version is not None:
        drv = facts.driver.version
        drv_cuda = effective_cuda(facts.driver, matrix)[0]
        origins["driver"] = "probed"
    found: list[Gpu] = []
    if gpus:
        table = gpu_models.load_models()
        for spec in gpus:
            try:
                model = gpu_models.parse_gpu_spec(spec, table)
            except ValueError as exc:
                raise UsageError(f"--gpu {spec!r}: {exc}") from None
            found.append(Gpu(model.name, model.compute_capability, "--gpu", model.segment))
        origins["gpus"] = "--gpu"
    elif facts is not None:
        known = tuple(g for g in facts.gpus if g.compute_capability)
        # segments decide only forward compatibility; the GPU table is not read otherwise
        segments = (
            gpu_segments(known) if facts.driver and forward_compat(facts.driver) else ((g.name, None) for g in known)
        )
        found = [Gpu(g.name, g.compute_capability, "probed", s) for g, (_, s) in zip(known, segments, strict=True)]
        origins["gpus"] = "probed"
    py = None
    if python_version is not None:
        try:
            py = Version(python_version)
        except InvalidVersion:
            raise UsageError(f"--python {python_version!r}: expected a version such as 3.12") from None
        origins["python"] = "--python"
    elif facts is not None and facts.python is not None:
        py = facts.python.version
        origins["python"] = "probed"
    platform_value = platform_name or _this_platform(facts)
    if platform_value not in PLATFORMS:
        raise UsageError(f"--platform {platform_value!r}: expected one of {', '.join(PLATFORMS)}")
    ceiling = None
    if cuda is not None:
        try:
            ceiling = Version(cuda)
        except InvalidVersion:
            raise UsageError(f"--cuda {cuda!r}: expected a CUDA version such as 12.4") from None
    torch = facts.packages.get("torch") if facts is not None else None
    return Constraints(
        driver=drv,
        driver_cuda=drv_cuda,
        gpus=tuple(found),
        python=py,
        platform=platform_value,
        cuda_ceiling=ceiling,
        installed_torch=(
            torch.torch_build.version
            if torch and torch.torch_build and torch.torch_build.version
            else torch.version
            if torch
            else None
        ),
        installed_torch_variant=torch.cuda_variant if torch else None,
        origins=origins,
        # only a probed host's own cuda-compat libcuda counts; a described one has none
        forward_compat=forward_compat(facts.driver) if origins.get("driver") == "probed" and facts else None,
    )


def _this_platform(facts) -> str:  # type: ignore[no-untyped-def]
    if facts is None:
        return "linux-x86_64"
    if facts.host.os == "Windows":
        return "windows"
    return "linux-aarch64" if facts.host.arch in ("aarch64", "arm64") else "linux-x86_64"


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

        result = refresh(packages or DEFAULT_PACKAGES, index=index, cache_dir=target, progress=progress, limit=limit)
    for warning in result.warnings:
        print(f"cudadoctor: warning: {warning}", file=sys.stderr)
    for summary in result.packages:
        if not summary.found:
            print(f"cudadoctor: warning: {summary.name}: not on {result.index}", file=sys.stderr)
    print(
        f"cudadoctor: {result.new} new release record(s) from {result.index} in {result.requests} request(s); "
        f"cache: {result.cache_path}"
    )


@app.command("list-checks")
@_guarded
def list_checks(
    output_format: Annotated[Format, typer.Option("--format", "-f", help="text or json.")] = Format.TEXT,
) -> None:
    """List every check: its code, name, category and the healthy condition it verifies."""
    from cudadoctor.checks import ALL_CHECKS

    if output_format is Format.JSON:
        import json

        rows = [
            {
                "code": c.code,
                "name": c.name,
                "category": c.category,
                "severity": c.severity.value,
                "summary": c.summary(),
            }
            for c in ALL_CHECKS.values()
        ]
        sys.stdout.write(json.dumps({"checks": rows}, indent=2) + "\n")
        return
    for check in ALL_CHECKS.values():
        sys.stdout.write(f"{check.code}  {check.name:<40} {check.summary()}\n")


@app.command()
@_guarded
def explain(
    code: Annotated[str, typer.Argument(metavar="CODE", help="A check's code (CD102) or name.")],
    output_format: Annotated[Format, typer.Option("--format", "-f", help="text or json.")] = Format.TEXT,
) -> None:
    """Explain one check: what it checks, why it matters, and how to fix what it finds."""
    from cudadoctor.checks import ALL_CHECKS, resolve_codes

    matches = resolve_codes([code], "explain")
    if len(matches) != 1:
        raise UsageError(
            f"explain {code!r}: matches {len(matches)} checks ({', '.join(sorted(matches))}); give one code"
        )
    check = ALL_CHECKS[matches.pop()]
    sections = check.sections()
    if output_format is Format.JSON:
        import json

        doc = {
            "code": check.code,
            "name": check.name,
            "category": check.category,
            "summary": check.summary(),
            "severity": check.severity.value,
            "sections": sections,
        }
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    out = [f"{check.code} {check.name}", "", check.summary(), ""]
    for title, body in sections.items():
        out += [f"{title}:", f"  {body}", ""]
    out.append(
        f"Category: {check.category}; a problem is {'an error' if check.severity.value == 'fail' else 'a warning'}."
    )
    sys.stdout.write("\n".join(out) + "\n")


def _version_callback(value: bool) -> None:
    if value:
        print(f"cudadoctor {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version_callback, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """A CUDA environment doctor."""


def main() -> None:
    """Entry point of the ``cudadoctor`` command."""
    # A report reaches stdout whatever it holds: a file name or variable that is not UTF-8 (a surrogate
    # escape) or a terminal that cannot show "✓" prints "?" there, instead of an internal error (exit 3).
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="replace")
    app()
