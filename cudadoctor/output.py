"""Writing a report to ``--output PATH`` without clobbering what is there.

A regular file (or a new path) is replaced atomically: the text goes to a temporary file created
exclusively, with an unpredictable name, in the target's directory (:func:`tempfile.mkstemp`, which opens
with ``O_EXCL`` and so never follows a planted link), then :func:`os.replace` puts it in place; a failure
removes the temporary file. Anything else — a device such as ``/dev/stdout`` or ``/dev/null``, a FIFO, a
symbolic link — is written through, as a shell redirection would, so it is never replaced by a file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys

from cudadoctor.errors import UsageError

__all__ = ["flush_stdout", "output_failure", "write_text"]


def _is_replaceable(path: str) -> bool:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return True
    return stat.S_ISREG(mode)


def _write_through(path: str, text: str) -> None:
    # O_NONBLOCK on open: a FIFO nobody reads fails at once (ENXIO) instead of waiting forever (fifo(7));
    # the write itself then blocks as any writer's does.
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    os.set_blocking(fd, True)
    with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as handle:
        handle.write(text)


def _replace_atomically(path: str, text: str) -> None:
    import tempfile  # here: every run flushes stdout through this module, few write a file

    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".cudadoctor-", suffix=".tmp", dir=directory)
    try:
        # errors="replace": a name or value that is not UTF-8 (a surrogate escape) must not lose the report.
        with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def write_text(path: str, text: str) -> None:
    """Write ``text`` to ``path``: atomically for a regular file or a new path, through for anything else."""
    try:
        if _is_replaceable(path):
            _replace_atomically(path, text)
        else:
            _write_through(path, text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


#: Errors of a write that say the output has nowhere to go (a full disk, a quota, a dead device):
#: a problem of where the report was sent, not a bug (exit 2 with one line, never "internal error").
_OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS})


def output_failure(exc: BaseException) -> str | None:
    """One line for an exception that is a failed write of the output (stdout on a full disk); else None."""
    if isinstance(exc, OSError) and exc.errno in _OUTPUT_ERRNOS:
        return f"cannot write the output: {exc.strerror or os.strerror(exc.errno or 0)}"
    return None


def flush_stdout() -> None:
    """Flush standard output now, so a failed write surfaces where it is reported as one line (not at
    interpreter exit, where Python prints an "Exception ignored" block and exits 120)."""
    with contextlib.suppress(ValueError):  # stdout already closed
        sys.stdout.flush()
