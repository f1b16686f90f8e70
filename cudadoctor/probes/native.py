"""The two library calls the fast path makes: NVML and ``cuDriverGetVersion``.

Neither creates a CUDA context: NVML is the management library ``nvidia-smi`` uses, and
``cuDriverGetVersion`` answers without ``cuInit`` (about 1.6 ms, measured on a real H200). Both
run in a daemon thread with a timeout, so a wedged driver cannot hang cudadoctor: the call is
abandoned and recorded as timed out. Probes see only the :class:`Native` protocol; tests inject
a fake, and ``--root`` / ``--from`` use :class:`NullNative`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import field
from typing import Any, Protocol, TypeVar

from cudadoctor.probes.nvml_calls import (
    BINDING_VAR,
    load_nvml_library,
    nvml_binding,
    query_libcuda,
    query_nvml,
)
from cudadoctor.record import record
from cudadoctor.runner import CommandResult, StartedCommand, helper_command, start_command

__all__ = [
    "BINDING_VAR",
    "LibcudaResult",
    "Native",
    "NullNative",
    "NvmlDevice",
    "NvmlResult",
    "RealHealthSource",
    "RealNative",
    "call_with_timeout",
    "decode_cuda_version",
    "libcuda_result",
    "nvml_binding",
    "nvml_result",
    "start_early",
    "stop_early",
    "take_early",
]

#: Seconds allowed for NVML init + queries, and for loading libcuda.
NATIVE_TIMEOUT = 10.0

T = TypeVar("T")


def decode_cuda_version(value: int) -> str | None:
    """``13000`` -> ``"13.0"``, ``12080`` -> ``"12.8"`` (cuDriverGetVersion / NVML encoding).

    The encoding is major * 1000 + minor * 10
    (https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__VERSION.html).
    Returns None for 0 or negative values (a stub library answers 0).
    """
    if value <= 0:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


@record
class NvmlDevice:
    """One device as NVML reports it. The UUID is never read."""

    index: int
    name: str
    compute_capability: str | None = None
    memory_mib: int | None = None
    mig_mode: str | None = None
    pci_bus_id: str | None = None
    brand: str | None = None
    #: MIG devices (GPU instance + compute instance) that exist on this GPU and this process may use;
    #: None when MIG is off or NVML could not say
    mig_devices: int | None = None


@record
class NvmlResult:
    """NVML's answers, or why there are none."""

    driver_version: str | None = None
    cuda_driver_version: int | None = None  #: nvmlSystemGetCudaDriverVersion_v2, e.g. 13000
    devices: tuple[NvmlDevice, ...] = ()
    error: str | None = None  #: e.g. "NVML Shared Library Not Found", "Driver/library version mismatch"
    device_errors: tuple[str, ...] = field(default=())


@record
class LibcudaResult:
    """``cuDriverGetVersion`` of the libcuda the dynamic loader picks for ``libcuda.so.1``."""

    path: str | None = None  #: the file the loader mapped
    returncode: int | None = None  #: CUresult; 34 = CUDA_ERROR_STUB_LIBRARY
    version: int | None = None  #: e.g. 13000
    error: str | None = None  #: the library could not be loaded or the call timed out


class Native(Protocol):
    def nvml(self) -> NvmlResult: ...

    def libcuda_version(self) -> LibcudaResult: ...


class NullNative:
    """Calls nothing; every answer says why."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def nvml(self) -> NvmlResult:
        return NvmlResult(error=self.reason)

    def libcuda_version(self) -> LibcudaResult:
        return LibcudaResult(error=self.reason)


def call_with_timeout(func: Callable[[], T], timeout: float, on_timeout: T) -> T:
    """Run ``func`` in a daemon thread; give up after ``timeout`` seconds and return ``on_timeout``.

    ctypes releases the GIL during foreign calls, so a call stuck in the driver does not stop
    this thread from returning; the abandoned thread dies with the process.
    """
    box: list[T] = []

    def target() -> None:
        box.append(func())

    thread = threading.Thread(target=target, name="cudadoctor-native", daemon=True)
    thread.start()
    thread.join(timeout)
    return box[0] if box else on_timeout


class _Early:
    """A native query started before the probes run, in a daemon thread of its own."""

    def __init__(self, func: Callable[[], object]) -> None:
        self._box: list[object] = []
        self._thread = threading.Thread(target=lambda: self._box.append(func()), name="cudadoctor-early", daemon=True)
        self._thread.start()

    def result(self, timeout: float, on_timeout: T) -> T:
        self._thread.join(timeout)
        return self._box[0] if self._box else on_timeout  # type: ignore[return-value]


#: Seconds the helper process may run before it is killed: the longest any of its askers waits (NVML's 10 s; the
#: health probe asks with its own, shorter deadline and gives up alone, without ending the helper for the others).
HELPER_DEADLINE = NATIVE_TIMEOUT


class _Helper:
    """The helper process (:mod:`cudadoctor.probes.nvml_child`), read in a thread of its own until it ends or its
    deadline kills it; each asker waits only as long as its own timeout."""

    def __init__(self, started: StartedCommand, deadline: float) -> None:
        self.started = started
        self.done = threading.Event()
        self.answers: dict[str, Any] | None = None
        #: why its answers are errors rather than a reason to ask again here (it hung, or NVML killed it)
        self.failure: str | None = None
        threading.Thread(target=self._read, args=(deadline,), name="cudadoctor-nvml-helper", daemon=True).start()

    def _read(self, deadline: float) -> None:
        try:
            result = self.started.result(deadline)
            self.answers, self.failure = _helper_answers(result, deadline)
        except (OSError, ValueError) as exc:  # stopped while reading (stop_early): the process is ending
            self.failure = f"the NVML helper was stopped: {exc}"
        finally:
            self.done.set()

    def stop(self) -> None:
        if not self.done.is_set():
            self.started.stop()


def _helper_answers(result: CommandResult, deadline: float) -> tuple[dict[str, Any] | None, str | None]:
    """(answers, failure) of a finished helper. A helper that could not run or answered garbage gives neither: the
    probes then ask in this process. One that hung or died of a signal gives a failure: asking NVML here again
    would hang or crash the doctor itself."""
    import ast

    if result.timed_out:
        return None, f"the NVML helper did not answer within {deadline:g} s"
    if result.returncode is not None and result.returncode < 0:
        tail = result.stderr.strip().splitlines()[-1:] if result.stderr else []
        return None, f"the NVML helper died of signal {-result.returncode}" + (f" ({tail[0][:200]})" if tail else "")
    if not result.ok:
        return None, None
    try:  # a Python literal (cudadoctor.probes.nvml_child says why): read, never evaluated
        answers = ast.literal_eval(result.stdout)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None, None
    return (answers if isinstance(answers, dict) else None), None


class _FromHelper:
    """One early query answered by the helper process."""

    def __init__(
        self, helper: _Helper, name: str, convert: Callable[[Any], object], failed: Callable[[str], object]
    ) -> None:
        self.helper, self.name, self.convert, self.failed = helper, name, convert, failed

    def result(self, timeout: float, on_timeout: T) -> T | None:
        if not self.helper.done.wait(timeout):
            return on_timeout  # this asker gives up; the helper keeps its own deadline for the others
        if self.helper.failure is not None:
            return self.failed(self.helper.failure)  # type: ignore[return-value]
        answers = self.helper.answers
        if answers is None or not isinstance(answers.get(self.name), dict):
            return None  # the helper could not run: the probe asks in this process
        return self.convert(answers[self.name])  # type: ignore[return-value]


_EARLY: dict[str, _Early | _FromHelper] = {}
_EARLY_LOCK = threading.Lock()
_HELPERS: list[_Helper] = []


def helper_argv(health: bool) -> list[str] | None:
    """The helper process's command line, or None where one is not used: not Linux, another binding asked for
    (``CUDADOCTOR_NVML=pynvml|inprocess``), no interpreter to start, or no NVML library on this machine."""
    import sys

    if not sys.platform.startswith("linux") or os.environ.get(BINDING_VAR) or load_nvml_library() is not None:
        return None
    return helper_command("cudadoctor.probes.nvml_child", "main", "1" if health else "0")


def _start_helper(health: bool) -> _Helper | None:
    argv = helper_argv(health)
    if argv is None:
        return None
    started = start_command(argv)
    if not isinstance(started, StartedCommand):
        return None
    helper = _Helper(started, HELPER_DEADLINE)
    _HELPERS.append(helper)
    return helper


def stop_early() -> None:
    """End any helper process still running (the command is finishing: a usage error before the probes asked, or
    askers that gave up); its process group is killed."""
    for helper in _HELPERS:
        helper.stop()


def start_early(*, health: bool) -> None:
    """Start the NVML and libcuda queries (and NVML's health answers) now, for this machine's probes.

    On Linux NVML runs in a helper process (:mod:`cudadoctor.probes.nvml_child`), elsewhere or on request in a
    daemon thread, as libcuda's version always does; either way they overlap the import of the checks instead of
    following it (``cudadoctor check`` on an H200: the NVML calls take ~50 ms). Only for a live run: a probe that
    finds no early query, or whose helper failed, asks itself, as before.
    """
    with _EARLY_LOCK:
        if _EARLY:
            return
        # The helper first: loading libcuda in a thread holds the dynamic loader's lock, which the check for NVML's
        # library (before the helper starts) would wait on.
        helper = _start_helper(health)
        _EARLY["libcuda"] = _Early(_query_libcuda)  # here in either case: see cudadoctor.probes.nvml_child
        if helper is not None:
            _EARLY["nvml"] = _FromHelper(helper, "nvml", nvml_result, lambda why: NvmlResult(error=why))
            if health:
                from cudadoctor.probes.nvml_health import init_failure

                _EARLY["health"] = _FromHelper(helper, "health", dict, init_failure)
            return
        from cudadoctor.probes.nvml_health import query_health

        _EARLY["nvml"] = _Early(_query_nvml)
        if health:
            _EARLY["health"] = _Early(query_health)


def take_early(name: str, timeout: float, on_timeout: T) -> T | None:
    """The result of the early query ``name`` (once; None when none was started)."""
    with _EARLY_LOCK:
        early = _EARLY.pop(name, None)
    return early.result(timeout, on_timeout) if early is not None else None


class RealNative:
    """NVML through :func:`nvml_binding` (the own binding unless ``CUDADOCTOR_NVML=pynvml``); libcuda via ctypes."""

    def __init__(self, timeout: float = NATIVE_TIMEOUT) -> None:
        self.timeout = timeout
        self._nvml: NvmlResult | None = None
        self._libcuda: LibcudaResult | None = None
        self._lock = threading.Lock()

    def nvml(self) -> NvmlResult:
        with self._lock:
            if self._nvml is None:
                timed_out = NvmlResult(error=f"NVML timed out after {self.timeout:g} s")
                early = take_early("nvml", self.timeout, timed_out)
                self._nvml = early or call_with_timeout(_query_nvml, self.timeout, timed_out)
            return self._nvml

    def libcuda_version(self) -> LibcudaResult:
        with self._lock:
            if self._libcuda is None:
                timed_out = LibcudaResult(error=f"loading libcuda timed out after {self.timeout:g} s")
                early = take_early("libcuda", self.timeout, timed_out)
                self._libcuda = early or call_with_timeout(_query_libcuda, self.timeout, timed_out)
            return self._libcuda


class RealHealthSource:
    """NVML's health answers (:func:`cudadoctor.probes.nvml_health.query_health`): the early query's, else asked in
    a daemon thread with a deadline."""

    def __init__(self, timeout: float | None = None) -> None:
        self.timeout = timeout

    def query(self, *, utilization: bool = False, sample_seconds: float = 0.0) -> dict[str, Any]:
        from cudadoctor.probes.nvml_health import HEALTH_TIMEOUT, init_failure, query_health

        deadline = (HEALTH_TIMEOUT if self.timeout is None else self.timeout) + sample_seconds
        timed_out = init_failure(f"NVML did not answer within {deadline:g} s")
        if not utilization and sample_seconds <= 0 and (early := take_early("health", deadline, timed_out)):
            return early
        return call_with_timeout(lambda: query_health(utilization, sample_seconds), deadline, timed_out)


def _query_nvml() -> NvmlResult:
    return nvml_result(query_nvml())


def _query_libcuda() -> LibcudaResult:
    return libcuda_result(query_libcuda())


def nvml_result(plain: dict[str, Any]) -> NvmlResult:
    """:func:`cudadoctor.probes.nvml_calls.query_nvml`'s answer as a record."""
    devices = tuple(NvmlDevice(**device) for device in plain.get("devices", ()))
    return NvmlResult(
        plain.get("driver_version"),
        plain.get("cuda_driver_version"),
        devices,
        plain.get("error"),
        tuple(plain.get("device_errors", ())),
    )


def libcuda_result(plain: dict[str, Any]) -> LibcudaResult:
    """:func:`cudadoctor.probes.nvml_calls.query_libcuda`'s answer as a record."""
    return LibcudaResult(**plain)
