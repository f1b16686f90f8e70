"""Running commands: an argv list, no shell, always a timeout, never an exception for the caller.

Probes get a :class:`Runner`; tests inject a fake that maps argv tuples to canned outputs (real
subprocesses cannot run under pyfakefs). A command that is missing, times out or fails comes
back as a :class:`CommandResult` whose ``error`` says why.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from typing import Protocol

from cudadoctor.record import record

__all__ = [
    "DEFAULT_TIMEOUT",
    "CommandResult",
    "NullRunner",
    "Runner",
    "StartedCommand",
    "SubprocessRunner",
    "helper_bootstrap",
    "helper_command",
    "start_command",
]

#: Seconds a command may take unless the probe says otherwise.
DEFAULT_TIMEOUT = 10.0

#: Output kept from one command; more is cut (a runaway tool must not fill memory).
_MAX_OUTPUT = 4 << 20
#: How a command killed at its timeout is described (:attr:`CommandResult.timed_out` asks for it).
_TIMED_OUT = "timed out"


@record
class CommandResult:
    """What a command did."""

    argv: tuple[str, ...]
    returncode: int | None  #: None when it never ran or was killed
    stdout: str = ""
    stderr: str = ""
    #: why it did not produce a result: ``not found``, ``timed out after 10 s`` …; None on success
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.returncode == 0

    @property
    def timed_out(self) -> bool:
        """It ran past its timeout and was killed."""
        return self.error is not None and self.error.startswith(_TIMED_OUT)

    def describe(self) -> str:
        """One line saying why the command gave no usable output."""
        if self.error:
            return self.error
        detail = (self.stderr or self.stdout).strip().splitlines()
        tail = f": {detail[-1][:200]}" if detail else ""
        return f"exited with status {self.returncode}{tail}"


class Runner(Protocol):
    """Runs one command. Implementations never raise for a failing command."""

    def run(
        self, argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT, env: Mapping[str, str] | None = None
    ) -> CommandResult: ...


class SubprocessRunner:
    """Runs commands for real, in their own process group so a timeout kills the whole tree."""

    def run(
        self, argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT, env: Mapping[str, str] | None = None
    ) -> CommandResult:
        started = start_command(argv, env=env)
        return started if isinstance(started, CommandResult) else started.result(timeout)


class StartedCommand:
    """A command running in the background; :meth:`result` waits for it (once), with a timeout."""

    def __init__(self, argv: tuple[str, ...], proc: subprocess.Popen[bytes]) -> None:
        self.argv = argv
        self.proc = proc

    def stop(self) -> None:
        """Kill it with its process group if it is still running (its output is no longer wanted)."""
        if self.proc.poll() is None:
            _kill_group(self.proc)

    def result(self, timeout: float) -> CommandResult:
        """What it did; one that runs past ``timeout`` (from now) is killed with its process group."""
        out, err, error = _stream(self.proc, timeout)
        if error is not None:
            _kill_group(self.proc)
            return CommandResult(self.argv, None, error=error)
        return CommandResult(
            self.argv,
            self.proc.returncode,
            out.decode("utf-8", errors="replace"),
            err.decode("utf-8", errors="replace"),
        )


def helper_bootstrap(module: str, function: str) -> str:
    """The ``-c`` program of a cudadoctor helper process: the package's root (``argv[1]``) joins the path after the
    standard library, then ``module.function(argv[2:])`` runs."""
    return f"import sys; sys.path.append(sys.argv[1]); from {module} import {function}; {function}(sys.argv[2:])"


def helper_command(module: str, function: str, *args: str) -> list[str] | None:
    """``python -S -I [-B] -c <bootstrap> <package root> args…``: a helper that imports only what ``module`` imports
    (no site-packages, so none of their ``.pth`` start-up hooks), or None where no interpreter can be started (a
    frozen build).

    ``-I`` ignores ``PYTHONDONTWRITEBYTECODE``, so ``-B`` says it again when the doctor's own interpreter writes no
    bytecode: otherwise the helper wrote ``__pycache__`` into the package's directories, which the memo of a source
    checkout watches (its directories are on ``sys.path``), and the replay it was started for found them changed.
    """
    import sys

    if getattr(sys, "frozen", False) or not sys.executable:
        return None
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    flags = ["-S", "-I", "-B"] if sys.dont_write_bytecode else ["-S", "-I"]
    return [sys.executable, *flags, "-c", helper_bootstrap(module, function), root, *args]


def start_command(argv: Sequence[str], *, env: Mapping[str, str] | None = None) -> StartedCommand | CommandResult:
    """Start ``argv`` (no shell, its own process group, no stdin); the :class:`CommandResult` saying why when it
    could not be started."""
    args = tuple(argv)
    try:
        proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
    except FileNotFoundError:
        return CommandResult(args, None, error="not found")
    except OSError as exc:
        return CommandResult(args, None, error=f"could not start: {exc.strerror or exc}")
    return StartedCommand(args, proc)


def _stream(proc: subprocess.Popen[bytes], timeout: float) -> tuple[bytes, bytes, str | None]:
    """(stdout, stderr, why it was stopped) of a child read as it writes, never more than
    :data:`_MAX_OUTPUT` bytes of each: a tool that streams forever is killed at the cap, not
    buffered whole (``communicate()`` kept everything, 7.6 GB of it once)."""
    if proc.stdout is None or proc.stderr is None:  # pragma: no cover - both are always pipes here
        raise ValueError("the child's output is not piped")
    deadline = time.monotonic() + timeout
    kept: dict[int, list[bytes]] = {proc.stdout.fileno(): [], proc.stderr.fileno(): []}
    sizes = dict.fromkeys(kept, 0)
    with selectors.DefaultSelector() as selector:
        for pipe in (proc.stdout, proc.stderr):
            selector.register(pipe, selectors.EVENT_READ)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return b"", b"", f"{_TIMED_OUT} after {timeout:g} s"
            for key, _ in selector.select(left):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                kept[key.fd].append(chunk)
                sizes[key.fd] += len(chunk)
                if sizes[key.fd] > _MAX_OUTPUT:
                    return b"", b"", f"stopped: wrote more than {_MAX_OUTPUT >> 20} MiB of output"
    try:
        proc.wait(timeout=max(deadline - time.monotonic(), 0.01))
    except subprocess.TimeoutExpired:
        return b"", b"", f"{_TIMED_OUT} after {timeout:g} s"
    out, err = (b"".join(kept[pipe.fileno()]) for pipe in (proc.stdout, proc.stderr))
    proc.stdout.close()
    proc.stderr.close()
    return out, err, None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    for pipe in (proc.stdout, proc.stderr):  # never read what is left: it may be gigabytes
        if pipe is not None:
            pipe.close()
    with contextlib.suppress(subprocess.TimeoutExpired, OSError):
        proc.wait(timeout=2)


class NullRunner:
    """Runs nothing: used with ``--root`` (nothing from an image is ever executed) and ``--from``."""

    def __init__(self, reason: str = "commands are not run when examining an image root") -> None:
        self.reason = reason

    def run(
        self, argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT, env: Mapping[str, str] | None = None
    ) -> CommandResult:
        return CommandResult(tuple(argv), None, error=self.reason)
