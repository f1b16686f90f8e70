"""The application: what each command does, between the flags the CLI parsed and the text it prints.

:mod:`cudadoctor.cli` only declares the commands and their options, calls these functions and prints what
they return. Here live the validation of option combinations, merging the project settings, gathering the
facts (live, from an image root or a snapshot), running the checks, the exit code, writing ``--output``
and the planner's constraints. Domain code raises :class:`~cudadoctor.errors.InvalidValue` without flag
names; this module says which flag or setting a value came from.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace

from cudadoctor.checks.findings import Finding, Status
from cudadoctor.data import CompatMatrix
from cudadoctor.errors import InvalidValue, SnapshotError, UsageError
from cudadoctor.facts.model import Facts
from cudadoctor.record import record
from cudadoctor.report.document import FAIL_ON_LEVELS, Report

__all__ = [
    "FAIL_ON_LEVELS",
    "CheckRequest",
    "FactSource",
    "build_report",
    "exit_code",
    "gather",
    "read_snapshot",
    "run_check",
]


@record
class FactSource:
    """Where the facts come from, and what to assume about the host."""

    from_file: str | None = None  #: ``--from``: a snapshot or JSON report
    root: str | None = None  #: ``--root``: an extracted image
    env_file: str | None = None  #: ``--env-file``: the image's environment
    python: str | None = None  #: ``--python``
    assume_driver: str | None = None
    assume_gpus: tuple[str, ...] = ()
    root_kind: str = "auto"  #: ``--root-kind``: host, image, or auto (decided from the root's markers)
    redact_home: bool = True  #: secrets are always masked; this only concerns the home directory
    deep_timeout: float | None = None  #: ``--deep``: seconds per child; None: no runtime probes
    nccl: bool = False
    health: bool = True  #: ask NVML for hardware health (``--no-health``: skip it and the CD15x-CD19x checks)
    dcgm_level: int | None = None  #: ``--dcgm-diag``: run ``dcgmi diag -r LEVEL``; None: never
    dcgm_timeout: float | None = None  #: ``--dcgm-timeout``; None: the level's default


@record
class CheckRequest:
    """Everything ``check`` was asked, flags and project settings merged."""

    source: FactSource
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    require: tuple[str, ...] = ()
    fail_on: str = "error"
    fail_on_unknown: bool = False


def _validate(source: FactSource) -> None:
    if source.from_file is not None and source.root is not None:
        raise UsageError("--from and --root cannot be combined: a snapshot already holds its facts")
    if source.env_file is not None and source.root is None:
        raise UsageError("--env-file describes an image: use it with --root")
    if source.nccl and source.deep_timeout is None:
        raise UsageError("--nccl is part of the runtime checks: use it with --deep")
    if source.deep_timeout is not None and (source.root is not None or source.from_file is not None):
        raise UsageError("--deep runs code on this machine: it cannot be combined with --root or --from")
    _validate_dcgm(source)


def _validate_dcgm(source: FactSource) -> None:
    if source.dcgm_level is None:
        if source.dcgm_timeout is not None:
            raise UsageError("--dcgm-timeout applies to --dcgm-diag: give both")
        return
    from cudadoctor.probes.dcgm import DCGM_LEVELS  # only when asked: check's default path imports nothing new

    if source.dcgm_level not in DCGM_LEVELS:
        raise UsageError(
            f"--dcgm-diag {source.dcgm_level}: give 1 or 2 (levels 3 and 4 run 15 minutes and more: run dcgmi yourself)"
        )
    if source.root is not None or source.from_file is not None:
        raise UsageError("--dcgm-diag tests this machine's GPUs: it cannot be combined with --root or --from")
    if not source.health:
        raise UsageError("--dcgm-diag is a GPU health check: it cannot be combined with --no-health")
    if source.dcgm_timeout is not None and not 0 < source.dcgm_timeout < float("inf"):
        raise UsageError("--dcgm-timeout must be a positive number of seconds")


def read_snapshot(path: str) -> Facts:
    """The facts of a snapshot or JSON report file (at most 64 MiB, UTF-8)."""
    from cudadoctor.facts.codec import SNAPSHOT_LIMIT, facts_from_json
    from cudadoctor.fileread import read_named_file

    # A snapshot is tens of kilobytes; refuse anything absurd instead of reading it whole.
    data = read_named_file(path, SNAPSHOT_LIMIT, "a cudadoctor snapshot", SnapshotError, allow_stream=True)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SnapshotError(f"{path}: not UTF-8 text, not a cudadoctor snapshot") from None
    return facts_from_json(text, origin=path)


def _context(source: FactSource, warn: Callable[[str], None]):  # type: ignore[no-untyped-def]
    from cudadoctor.probes.collect import live_context, root_context
    from cudadoctor.pythonarg import resolve_python

    if source.root is not None and not os.path.isdir(source.root):
        raise UsageError(f"--root {source.root}: not a directory")
    python = resolve_python(source.python, source.root) if source.python is not None else None
    if source.root is None:
        return live_context(python=python, health=source.health)
    env: dict[str, str] = {}
    if source.env_file is not None:
        from cudadoctor.envfile import read_env_file

        env, warnings = read_env_file(source.env_file)
        for warning in warnings:
            warn(f"warning: {warning}")
    return root_context(source.root, env, python=python)


def _probed(source: FactSource, warn: Callable[[str], None]) -> Facts:
    from cudadoctor.probes.collect import collect_facts

    ctx = _context(source, warn)
    facts = collect_facts(ctx)
    if source.dcgm_level is not None:
        from cudadoctor.probes.dcgm import probe_dcgm_diag

        warn(f"running dcgmi diag -r {source.dcgm_level}…")
        facts = replace(facts, dcgm=probe_dcgm_diag(ctx, source.dcgm_level, source.dcgm_timeout))
    if source.deep_timeout is None:
        return facts
    from cudadoctor.probes.runtime import probe_nccl_smoke, probe_runtime, visible_gpus

    warn("running --deep probes in child processes…")
    runtime = probe_runtime(ctx, timeout=source.deep_timeout)
    if source.nccl and runtime is not None:
        warn("running the NCCL all-reduce test…")
        smoke = probe_nccl_smoke(ctx, visible_gpus(runtime), timeout=max(source.deep_timeout, 60.0))
        runtime = replace(runtime, nccl_smoke=smoke)
    return replace(facts, runtime=runtime, errors=tuple(ctx.errors))


def _assumed(facts: Facts, source: FactSource) -> Facts:
    if source.assume_driver is None and not source.assume_gpus and source.root_kind == "auto":
        return facts  # nothing assumed: the plain run does not import the assumptions' module
    from cudadoctor.assume import apply_assumptions, apply_root_kind

    try:
        facts = apply_assumptions(facts, driver=source.assume_driver)
    except InvalidValue as exc:
        raise exc.at("--assume-driver") from None
    try:
        facts = apply_assumptions(facts, gpus=source.assume_gpus)
    except InvalidValue as exc:
        raise exc.at("--assume-gpu") from None
    try:
        return apply_root_kind(facts, source.root_kind)
    except InvalidValue as exc:
        raise exc.at("--root-kind") from None


def gather(source: FactSource, warn: Callable[[str], None]) -> Facts:
    """Facts from a snapshot, an image root or this machine, with assumptions and redaction applied.

    ``warn`` receives one-line notices (progress of ``--deep``, env-file warnings).
    """
    from cudadoctor.facts.codec import redact_facts
    from cudadoctor.redact import Redactor

    _validate(source)
    facts = read_snapshot(source.from_file) if source.from_file is not None else _probed(source, warn)
    facts = _assumed(facts, source)
    # Secrets, URL credentials and GPU UUIDs are masked always; --no-redact only keeps the home directory.
    return redact_facts(facts, Redactor.for_this_user() if source.redact_home else Redactor())


def exit_code(findings: Sequence[Finding], fail_on: str, *, fail_on_unknown: bool = False) -> int:
    """1 when a finding fails the run at this level (``--fail-on``, ``--fail-on-unknown``), else 0."""
    failing = set(FAIL_ON_LEVELS[fail_on])
    if fail_on_unknown:
        failing.add(Status.UNKNOWN)
    return 1 if any(f.status in failing for f in findings) else 0


def parse_requirements(texts: Sequence[str]) -> None:
    """Refuse a bad ``--require`` before any probing."""
    from cudadoctor.checks.meta import parse_assertion

    for text in texts:
        try:
            parse_assertion(text)
        except InvalidValue as exc:
            raise exc.at("--require") from None


def run_check(request: CheckRequest, warn: Callable[[str], None]) -> Report:
    """Gather the facts, run the selected checks and build the report."""
    from cudadoctor.checks import ALL_CHECKS, HEALTH_PREFIXES, selected
    from cudadoctor.checks.engine import run_checks

    if request.fail_on not in FAIL_ON_LEVELS:
        raise UsageError(f"--fail-on {request.fail_on!r}: expected one of {', '.join(FAIL_ON_LEVELS)}")
    parse_requirements(request.require)
    health_codes = tuple(code for code in ALL_CHECKS if code.startswith(HEALTH_PREFIXES))
    ignore = request.ignore if request.source.health else (*request.ignore, *health_codes)
    codes = selected(request.select, ignore)
    facts = gather(request.source, warn)
    matrix = CompatMatrix()
    findings = tuple(run_checks(facts, matrix, select=codes, requirements=request.require))
    code = exit_code(findings, request.fail_on, fail_on_unknown=request.fail_on_unknown)
    return build_report(facts, findings, matrix, exit_code=code, fail_on=request.fail_on)


def build_report(
    facts: Facts, findings: Sequence[Finding], matrix: CompatMatrix, *, exit_code: int = 0, fail_on: str = "error"
) -> Report:
    """The report of a run: the data dates are those of the data shipped (and of ``cudadoctor update``),
    whichever checks were selected."""
    index = matrix.index_data
    return Report(
        facts=facts,
        findings=tuple(findings),
        exit_code=exit_code,
        compat_data_as_of=matrix.curated_as_of,
        index_data_as_of=index.updated if index is not None else None,
        fail_on=fail_on,
    )


def stderr_notice(message: str) -> None:
    """The default ``warn``: one line on stderr."""
    from cudadoctor.report.sanitize import terminal

    print(f"cudadoctor: {terminal(message)}", file=sys.stderr)  # one line, escapes shown
