"""Collecting facts: run every probe, each isolated, and assemble one :class:`~cudadoctor.facts.model.Facts`.

A probe is a function ``probe_x(ctx) -> part``. A probe that raises does not stop the others: its
part is left empty and the exception becomes one :class:`~cudadoctor.facts.model.ProbeError`. Probes run
in a small thread pool: the slow parts (nvidia-smi, nvcc, NVML) wait on other processes or C code
and release the GIL, so the whole collection takes about as long as its slowest probe.
"""

from __future__ import annotations

import datetime
import functools
import os
import threading
import time
from collections.abc import Callable
from dataclasses import MISSING, replace
from typing import Any

from cudadoctor import __version__
from cudadoctor.facts.model import Facts, HostInfo, ProbeError
from cudadoctor.probes import host
from cudadoctor.probes.context import DRIVER_FILES, ProbeContext
from cudadoctor.probes.native import NullNative, RealHealthSource, RealNative
from cudadoctor.probes.nvml_health import NullHealthSource
from cudadoctor.probes.registry import probe_function, probed
from cudadoctor.rootfs import RootFS
from cudadoctor.runner import NullRunner, SubprocessRunner

__all__ = ["collect_facts", "live_context", "root_context"]


def _empty(name: str, ctx: ProbeContext) -> Any:
    """What a fact holds when its probe crashed: its declared default (the host: what Python knows)."""
    if name == "host":
        return HostInfo(os=ctx.system, arch=ctx.machine)
    default = Facts.__dataclass_fields__[name]
    return default.default_factory() if default.default_factory is not MISSING else default.default


def _run_one(ctx: ProbeContext, name: str, probe: Callable[[ProbeContext], Any]) -> tuple[Any, float, bool]:
    start = time.perf_counter()
    try:
        value = probe(ctx)
        ok = True
    except Exception as exc:  # one broken probe must never take the report down
        ctx.fail(name, f"probe crashed: {type(exc).__name__}: {exc}", crashed=True)
        value, ok = None, False
    return value, time.perf_counter() - start, ok


def _driver_files() -> tuple[Callable[[ProbeContext], Any], type]:
    from cudadoctor.probes.driver import DriverFiles, driver_files

    return driver_files, DriverFiles


#: Parts of background probes that only read files, by their ``ctx.once`` key: computed and kept with the file
#: probes' facts (:mod:`cudadoctor.probes.memo`); on a hit the background probe finds them answered.
_MEMO_PARTS: dict[str, Callable[[], tuple[Callable[[ProbeContext], Any], type]]] = {DRIVER_FILES: _driver_files}


def _memo_file(ctx: ProbeContext) -> tuple[str, tuple[Any, ...]]:
    """(where the memo of ``ctx``'s run is kept, the key it is kept under)."""
    from cudadoctor.probes import memo

    return memo.memo_path(ctx.fs.root), memo.run_key(ctx.fs.root, ctx.machine, ctx.system, ctx.python)


def _from_memo(
    ctx: ProbeContext, names: list[str], where: str, key: tuple[Any, ...]
) -> tuple[dict[str, Any], list[ProbeError]] | None:
    """The file probes' facts and errors of the last run when everything they read is unchanged, else None; the
    kept parts (``_MEMO_PARTS``) are given to ``ctx``."""
    from cudadoctor.errors import SnapshotError
    from cudadoctor.facts import codec
    from cudadoctor.probes import memo

    stored = memo.load(where, key)
    if stored is None or set(stored["results"]) != set(names) or not isinstance(stored.get("parts"), dict):
        return None
    if set(stored["parts"]) != set(_MEMO_PARTS):
        return None
    # The helper started with the run (live machine) has asked the questions again already; else ask them here.
    early = memo.early_verdict(where) if ctx.live else None
    unchanged = early[0] if early is not None and early[1] == stored["crc"] else None
    if unchanged is None:
        unchanged = memo.replay(stored["seen"], ctx.fs, ctx.env)
    if not unchanged:
        return None
    hints = codec.field_types()
    try:
        results = {name: codec.decode_fast(hints[name], stored["results"][name], name) for name in names}
        errors = [codec.decode_fast(ProbeError, error, "errors") for error in stored["errors"]]
        parts = {part: codec.decode_fast(load()[1], stored["parts"][part], part) for part, load in _MEMO_PARTS.items()}
    except (SnapshotError, RecursionError):
        return None
    for part, value in parts.items():
        ctx.preset(part, value)
    return results, errors


def _start_recording(ctx: ProbeContext) -> tuple[Any, ProbeContext, dict[str, Any]]:
    """(the memo being recorded, the recording context, the kept parts computed through it), before any background
    probe starts: each part is handed to the run's own context at once, so the background probe that needs it (the
    driver's) finds it answered instead of listing the same directories again, however soon NVML answers it."""
    from cudadoctor.probes import memo

    record = memo.Memo()
    recording = ProbeContext(
        fs=memo.RecordingFS(ctx.fs.root, record),
        env=memo.RecordingEnv(ctx.env, record),
        runner=memo.Tainting(ctx.runner, record, "a command"),
        native=memo.Tainting(ctx.native, record, "NVML or libcuda"),
        health_source=memo.Tainting(ctx.health_source, record, "NVML"),
        python=ctx.python,
        machine=ctx.machine,
        system=ctx.system,
        observe=record.observe,
    )
    parts: dict[str, Any] = {}
    for part, load in _MEMO_PARTS.items():
        try:
            parts[part] = recording.once(part, functools.partial(load()[0], recording))
        except Exception:  # noqa: S112 - the background probe computes it again and says what failed
            continue
        ctx.preset(part, parts[part])
    return record, recording, parts


def _recorded(
    ctx: ProbeContext,
    started: tuple[Any, ProbeContext, dict[str, Any]],
    specs: dict[str, Any],
    outcomes: dict[str, tuple[Any, float, bool]],
    where: str,
    key: tuple[Any, ...],
) -> None:
    """Run the file probes while recording what they read, and keep their facts for the next run
    (:mod:`cudadoctor.probes.memo`): unless one asked a command or NVML, crashed, or saw a file change."""
    from cudadoctor.facts.codec import encode
    from cudadoctor.probes import memo

    record, recording, parts = started
    for name, spec in specs.items():
        outcomes[name] = _run_one(recording, name, probe_function(spec))
    ctx.errors.extend(recording.errors)
    if record.storable() and len(parts) == len(_MEMO_PARTS) and all(outcomes[name][2] for name in specs):
        results = {name: encode(outcomes[name][0]) for name in specs}
        kept = {part: encode(value) for part, value in parts.items()}
        memo.save(where, key, record, results, [encode(e) for e in recording.errors], kept)


def collect_facts(ctx: ProbeContext, *, skip: tuple[str, ...] = ()) -> Facts:
    """Run every probe against ``ctx`` and return the facts, with per-probe timings.

    ``skip``: facts a caller never reads, left at their default unprobed (``suggest`` plans from the driver, the
    GPUs, Python and the packages: it does not run ``nvcc``).
    """
    start = time.perf_counter()
    specs = {name: spec for name, spec in probed().items() if name not in skip or spec.memo}
    # Probes that mostly wait on C code or a child process (NVML, libcuda, ``nvcc --version``) run in
    # threads; the rest run in the main thread, one after the other: Python-heavy probes gain nothing
    # from threads under the GIL (measured on the H200 fixture: all probes in a 6-thread pool took
    # 74-90 ms, one after the other 49 ms).
    background = [name for name, spec in specs.items() if spec.background]
    outcomes: dict[str, tuple[Any, float, bool]] = {}
    timings: dict[str, float] = {}
    # The file probes' memo is asked before any thread starts: it is a few hundred stats, each of which would
    # otherwise wait for the GIL behind the background probes' Python.
    memoised = {name: spec for name, spec in specs.items() if spec.memo and not spec.background} if ctx.memo else {}
    where, key = _memo_file(ctx) if memoised else ("", ())
    stored = _from_memo(ctx, list(memoised), where, key) if memoised else None
    if stored is not None:
        remembered, errors = stored
        outcomes.update((name, (remembered[name], 0.0, True)) for name in memoised)
        ctx.errors.extend(errors)
        timings["memo"] = round(time.perf_counter() - start, 4)
    recording = _start_recording(ctx) if memoised and stored is None else None
    # One plain thread per background probe (a thread pool's module costs a millisecond to import); each
    # stores its outcome under its own name, and _run_one never raises.
    threads = [
        threading.Thread(
            target=lambda name=name: outcomes.__setitem__(name, _run_one(ctx, name, probe_function(specs[name]))),
            name=f"cudadoctor-probe-{name}",
            daemon=True,
        )
        for name in background
    ]
    for thread in threads:
        thread.start()
    if recording is not None:
        _recorded(ctx, recording, memoised, outcomes, where, key)
    for name, spec in specs.items():
        if name not in background and name not in outcomes:
            outcomes[name] = _run_one(ctx, name, probe_function(spec))
    for thread in threads:
        thread.join()
    results: dict[str, Any] = {}
    for name in probed():
        value, seconds, ok = outcomes.get(name, (None, 0.0, False))  # skipped: its default, as a crashed probe's
        timings[name] = round(seconds, 4)
        results[name] = value if ok else _empty(name, ctx)
    timings["total"] = round(time.perf_counter() - start, 4)
    facts = Facts(
        **results,
        errors=(),
        mode="live" if ctx.live else f"root:{ctx.fs.root}",
        tool_version=__version__,
        collected_at=datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat(),
        timings=timings,
    )
    return replace(facts, errors=tuple(ctx.errors))


def live_context(*, python: str | None = None, health: bool = True) -> ProbeContext:
    """A context that examines this machine: real files, commands, NVML and libcuda (``health``: NVML's
    hardware-health answers too), with the file probes' memo (:mod:`cudadoctor.probes.memo`)."""
    from cudadoctor.probes import memo

    return ProbeContext(
        fs=RootFS("/"),
        env=dict(os.environ),
        runner=SubprocessRunner(),
        native=RealNative(),
        python=python,
        health_source=RealHealthSource() if health else NullHealthSource("--no-health"),
        memo=memo.enabled(os.environ),
    )


def root_context(root: str, env: dict[str, str], *, python: str | None = None) -> ProbeContext:
    """A context that examines an image root: its files only; nothing from it runs, no host facts."""
    ctx = ProbeContext(
        fs=RootFS(root),
        env=env,
        runner=NullRunner("nothing from an image root is run"),
        native=NullNative("no driver calls when examining an image root"),
        python=python,
        system="Linux",
    )
    # The image may be built for another CPU than this host's; its loader paths depend on it.
    ctx.machine = host.image_arch(ctx) or ctx.machine
    return ctx
