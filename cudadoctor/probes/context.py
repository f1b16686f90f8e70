"""What every probe is handed: the file system, environment, runner and native calls to use.

A :class:`ProbeContext` is the only way a probe touches the outside world, which is what lets the
same probe read the live machine, an image root (``--root``) or a pyfakefs tree in a test.
Expensive shared answers (NVML, the nvidia-smi query, the loader's search path, the target
interpreter) are computed once per context, thread-safely, whichever probe asks first.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any, Protocol, TypeVar

from cudadoctor.facts.model import ProbeError
from cudadoctor.probes.native import Native, NullNative
from cudadoctor.probes.nvml_health import NullHealthSource
from cudadoctor.record import mutable_record
from cudadoctor.rootfs import RootFS
from cudadoctor.runner import NullRunner, Runner

__all__ = ["DRIVER_FILES", "HealthSource", "ProbeContext", "kernel_release", "own_sys_path"]

T = TypeVar("T")

#: The ``ctx.once`` key of the driver's file part (:func:`cudadoctor.probes.driver.driver_files`), which the file
#: probes' memo keeps with their facts (:mod:`cudadoctor.probes.collect`).
DRIVER_FILES = "driver.files"


def _uname() -> tuple[str, str, str]:
    """(system, release, machine) of this machine as :func:`platform.uname` gives them. Where ``os.uname`` exists
    they are its fields (platform.uname() is os.uname() there, Linux and macOS): the platform module costs ~1.5 ms
    to import on every run; elsewhere (Windows) it is asked."""
    if hasattr(os, "uname"):
        info = os.uname()
        return info.sysname, info.release, info.machine
    import platform  # pragma: no cover - no os.uname: Windows

    return platform.system(), platform.release(), platform.machine()  # pragma: no cover


def _this_machine() -> str:
    return _uname()[2]


def _this_system() -> str:
    return _uname()[0]


def kernel_release() -> str:
    """This machine's kernel release (``uname -r``), as :func:`platform.release` gives it."""
    return _uname()[1]


def own_sys_path() -> list[str]:
    """This process's sys.path without its first entry when that is the script's directory or the
    working directory (``python -m``): a property of how cudadoctor was started, not of the env."""
    paths = list(sys.path)
    if paths and not paths[0].endswith(("site-packages", "dist-packages")):
        first = os.path.abspath(paths[0] or ".")
        script_dir = os.path.dirname(os.path.abspath(sys.argv[0])) if sys.argv and sys.argv[0] else None
        try:
            cwd = os.getcwd()
        except OSError:
            cwd = None
        if first in (cwd, script_dir):
            paths = paths[1:]
    return paths


class HealthSource(Protocol):
    """Where the health probe gets NVML's answers (cudadoctor.probes.nvml_health: real, recorded or none)."""

    def query(self, *, utilization: bool = False, sample_seconds: float = 0.0) -> dict[str, Any]: ...


@mutable_record
class ProbeContext:
    """Everything a probe may use. Build one per run; it caches shared answers."""

    fs: RootFS = field(default_factory=RootFS)
    #: the examined environment: ``os.environ`` live, the ``--env-file`` contents for an image
    env: Mapping[str, str] = field(default_factory=dict)
    runner: Runner = field(default_factory=NullRunner)
    native: Native = field(default_factory=lambda: NullNative("native calls disabled"))
    #: NVML's health answers (``check --no-health`` and an image root: none)
    health_source: HealthSource = field(default_factory=lambda: NullHealthSource("health not examined"))
    #: ``--python PATH``: the interpreter whose packages to examine (None: detect)
    python: str | None = None
    #: CPU architecture and OS of the examined machine (live: this one's)
    machine: str = field(default_factory=_this_machine)
    system: str = field(default_factory=_this_system)
    errors: list[ProbeError] = field(default_factory=list)
    #: told each stat that decides a fact without passing through ``fs`` (the ELF scan cache's), for
    #: :mod:`cudadoctor.probes.memo`; None when nothing records them
    observe: Callable[[str, str, object], None] | None = None
    #: reuse the file probes' facts of the last run while nothing they read changed (:mod:`cudadoctor.probes.memo`)
    memo: bool = False
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)
    _locks: dict[str, threading.Lock] = field(default_factory=dict, repr=False)
    _guard: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def live(self) -> bool:
        """True when examining this machine, False for an image root."""
        return self.fs.is_live

    def fail(self, probe: str, message: str, source: str | None = None, *, crashed: bool = False) -> None:
        """Record why a fact is unknown (``crashed``: the whole probe failed, so all it reports is unknown)."""
        with self._guard:
            self.errors.append(ProbeError(probe=probe, message=message, source=source, crashed=crashed))

    def attempt(self, probe: str, what: str, compute: Callable[[], T], default: T, source: str | None = None) -> T:
        """``compute()``, or ``default`` when it raises, with the reason recorded as a fact.

        One part of a probe that fails (one dist-info, the C library's version) must neither take the
        probe's other facts with it nor vanish: it becomes "could not read <what>: <why>", and the
        checks that need it see the fact missing (could not judge) while the rest are still judged.
        """
        try:
            return compute()
        except Exception as exc:  # any failure of one part is recorded, never raised
            self.fail(probe, f"could not read {what}: {type(exc).__name__}: {str(exc)[:200]}", source)
            return default

    def preset(self, key: str, value: object) -> None:
        """Give ``key`` its answer before anyone asks (the file probes' memo), unless it was computed already."""
        with self._guard:
            self._cache.setdefault(key, value)

    def once(self, key: str, compute: Callable[[], T]) -> T:
        """``compute()`` the first time ``key`` is asked for; the cached answer after that."""
        with self._guard:
            if key in self._cache:
                return self._cache[key]  # type: ignore[no-any-return]
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            with self._guard:
                if key in self._cache:
                    return self._cache[key]  # type: ignore[no-any-return]
            value = compute()
            with self._guard:
                self._cache[key] = value
            return value
