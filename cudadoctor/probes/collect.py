"""Collecting facts: run every probe, each isolated, and assemble one :class:`~cudadoctor.facts.model.Facts`.

A probe is a function ``probe_x(ctx) -> part``. A probe that raises does not stop the others: its
part is left empty and the exception becomes one :class:`~cudadoctor.facts.model.ProbeError`. Probes run
in a small thread pool: the slow parts (nvidia-smi, nvcc, NVML) wait on other processes or C code
and release the GIL, so the whole collection takes about as long as its slowest probe.
"""

from __future__ import annotations

import datetime
import os
import threading
import time
from collections.abc import Callable
from dataclasses import MISSING, replace
from typing import Any

from cudadoctor import __version__
from cudadoctor.facts.model import Facts, HostInfo
from cudadoctor.facts.registry import probe_function, probed
from cudadoctor.probes import host
from cudadoctor.probes.context import ProbeContext
from cudadoctor.probes.native import NullNative, RealNative
from cudadoctor.probes.nvml_health import NullHealthSource, RealHealthSource
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


def collect_facts(ctx: ProbeContext) -> Facts:
    """Run every probe against ``ctx`` and return the facts, with per-probe timings."""
    start = time.perf_counter()
    specs = probed()
    # Probes that mostly wait on C code or a child process (NVML, libcuda, ``nvcc --version``) run in
    # threads; the rest run in the main thread, one after the other: Python-heavy probes gain nothing
    # from threads under the GIL (measured on the H200 fixture: all probes in a 6-thread pool took
    # 74-90 ms, one after the other 49 ms).
    background = [name for name, spec in specs.items() if spec.background]
    outcomes: dict[str, tuple[Any, float, bool]] = {}
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
    for name, spec in specs.items():
        if name not in background:
            outcomes[name] = _run_one(ctx, name, probe_function(spec))
    for thread in threads:
        thread.join()
    results: dict[str, Any] = {}
    timings: dict[str, float] = {}
    for name in specs:
        value, seconds, ok = outcomes[name]
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
    hardware-health answers too)."""
    return ProbeContext(
        fs=RootFS("/"),
        env=dict(os.environ),
        runner=SubprocessRunner(),
        native=RealNative(),
        python=python,
        health_source=RealHealthSource() if health else NullHealthSource("--no-health"),
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
