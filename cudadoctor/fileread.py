"""Reading one file without ever blocking on it: the one reader every file read goes through.

``open()`` on a FIFO waits for a writer forever, and ``open()`` on a device may do anything; a
planted FIFO where cudadoctor expects ``/proc/driver/nvidia/version``, a METADATA file, the update
cache or a pip config hung the tool before. :func:`read_file` opens with ``O_NONBLOCK`` (which
makes opening a FIFO return at once), asks ``fstat`` what it opened and reads only a regular file,
at most ``limit`` bytes of it. ``O_NOCTTY`` keeps a terminal device from becoming the controlling
terminal. See open(2) on ``O_NONBLOCK`` for FIFOs: https://man7.org/linux/man-pages/man2/open.2.html
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator

__all__ = ["NotRegularFile", "foreign", "read_file", "read_named_file", "safe_path", "stream_chunks"]

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotRegularFile(OSError):
    """The path names a FIFO, a device or a socket: nothing cudadoctor reads is one."""


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_file(path: str, limit: int, *, allow_stream: bool = False, private: bool = False, tail: bool = False) -> bytes:
    """At most ``limit`` bytes of the regular file at ``path`` (its last ``limit`` bytes with ``tail``).

    Raises :class:`OSError`: ``IsADirectoryError`` for a directory, :class:`NotRegularFile` for a
    FIFO, device or socket (never waiting on it), the open's own error otherwise; ``ValueError``
    never (a path with a NUL byte is an ``OSError`` too). ``allow_stream`` admits a FIFO or a
    character device the *user* named on the command line (``--env-file <(docker inspect …)``),
    read blocking, as any tool reads its named input. ``private``: only a file this user owns and nobody else may
    write, in a directory likewise, reached without following a link (what cudadoctor itself kept and will trust);
    ``PermissionError`` otherwise.
    """
    fd = os.open(safe_path(path), _FLAGS | (getattr(os, "O_NOFOLLOW", 0) if private else 0))
    try:
        info = os.fstat(fd)
        mode = info.st_mode
        if private:
            _require_private(path, info)
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        if not stat.S_ISREG(mode):
            if not (allow_stream and (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode))):
                raise NotRegularFile(errno.EINVAL, f"{_kind(mode)}, not a regular file", path)
            os.set_blocking(fd, True)
        elif tail and info.st_size > limit:
            os.lseek(fd, info.st_size - limit, os.SEEK_SET)  # a log's newest lines are at its end
        return _read_up_to(fd, limit)
    finally:
        os.close(fd)


def foreign(info: os.stat_result) -> str | None:
    """Why a file or directory with this stat is not this user's own (another owner, or others may write it), or
    None when it is; where there are no user ids (not POSIX), only the mode counts. As git refuses a repository
    another user owns (safe.directory, https://git-scm.com/docs/git-config)."""
    getuid = getattr(os, "getuid", None)
    if getuid is not None and info.st_uid != getuid():
        return f"owned by user {info.st_uid}, not this user ({getuid()})"
    if info.st_mode & 0o022:
        return f"writable by others (mode {stat.S_IMODE(info.st_mode):o})"
    return None


def _require_private(path: str, info: os.stat_result) -> None:
    """``PermissionError`` unless the file and the directory holding it are this user's own and nobody else may
    write them: a cache another user could have written (a poisoned scan cache turned CD304 from fail to ok) is
    never trusted."""
    why = foreign(info)
    if why is None:
        try:
            why = foreign(os.stat(os.path.dirname(os.path.abspath(path))))
        except OSError as exc:
            why = f"its directory cannot be examined ({exc.strerror or exc})"
        else:
            why = f"its directory is {why}" if why else None
    if why is not None:
        raise PermissionError(errno.EACCES, f"not this user's private file: {why}", path)


def stream_chunks(path: str, size: int = 1 << 20) -> Iterator[bytes]:
    """The chunks of a FIFO or character device the user named (``why --file <(journalctl -k)``), read blocking
    until its writer closes it; too long a stream is the caller's to stop. Anything else raises
    :class:`NotRegularFile` (a regular file is read with :func:`read_file` or :class:`RegularFile`). Opened as
    :func:`read_file` opens, so a FIFO without a writer ends at once instead of waiting."""
    fd = os.open(safe_path(path), _FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):
            raise NotRegularFile(errno.EINVAL, f"{_kind(mode)}, not a stream", path)
        os.set_blocking(fd, True)
        while chunk := os.read(fd, size):
            yield chunk
    finally:
        os.close(fd)


class RegularFile:
    """Byte ranges of a regular file, for formats read in pieces (the ELF headers of a gigabyte library).

    Opened as :func:`read_file` opens (non-blocking, regular files only, never a FIFO); use it as a
    context manager so the descriptor is closed.
    """

    def __init__(self, path: str) -> None:
        fd = os.open(safe_path(path), _FLAGS)
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise NotRegularFile(errno.EINVAL, f"{_kind(mode)}, not a regular file", path)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset`` (fewer at the end of the file), unbuffered: the ELF reader asks for whole
        blocks itself. (``lseek`` and ``read``, not ``pread``: pyfakefs, which the tests build machines in, has no
        ``pread``.)"""
        os.lseek(self._fd, offset, os.SEEK_SET)
        return _read_up_to(self._fd, length)

    def __enter__(self) -> RegularFile:
        return self

    def __exit__(self, *_exc: object) -> None:
        os.close(self._fd)


def _read_up_to(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_named_file(path: str, limit: int, what: str, error: type[Exception], *, allow_stream: bool = False) -> bytes:
    """A file the user named (a settings file, a snapshot, a report), at most ``limit`` bytes; ``error`` with
    one line when it cannot be read or is larger (``what`` names what it should have been)."""
    try:
        data = read_file(path, limit + 1, allow_stream=allow_stream)
    except OSError as exc:
        raise error(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise error(f"{path}: larger than {_size(limit)}, not {what}")
    return data


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit} bytes"


def safe_path(path: str) -> str:
    """``path`` unchanged; ``OSError`` (EINVAL) when it holds a NUL byte, which ``os`` calls reject
    with ``ValueError`` (a NUL reaches a path from ld.so.conf, an env value or a link target)."""
    if "\0" in path:
        raise OSError(errno.EINVAL, "path contains a NUL byte", path.replace("\0", "\\0")[:200])
    return path
