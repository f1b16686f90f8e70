"""Reading the error text: an argument, a file or standard input, bounded, never executed.

A job log can be gigabytes; the lines that explain a failure are near its end (the traceback) and sometimes
near its start (the library's first warning). So at most :data:`HEAD_BYTES` from the start and
:data:`TAIL_BYTES` from the end are kept, and the reader says how much it skipped. A stream (standard input,
a FIFO) is read to its end or to :data:`STREAM_LIMIT`, keeping the same head and tail. Each line is cut to
:data:`LINE_CHARS` characters before any pattern sees it, so matching time is bounded by the text kept.
"""

from __future__ import annotations

import os
import stat
import sys
from collections import deque
from collections.abc import Iterable

from cudadoctor.errors import UsageError
from cudadoctor.fileread import RegularFile, safe_path, stream_chunks
from cudadoctor.record import record

__all__ = ["HEAD_BYTES", "LINE_CHARS", "TAIL_BYTES", "ErrorText", "from_argument", "from_bytes", "from_file"]

HEAD_BYTES = 1 << 20  #: kept from the start of a long log
TAIL_BYTES = 3 << 20  #: kept from its end
STREAM_LIMIT = 256 << 20  #: a stream is not read past this (``yes | cudadoctor why -`` ends)
LINE_CHARS = 4096  #: a line is cut here before matching
ARGUMENT_CHARS = 1 << 20  #: an error given on the command line


@record
class ErrorText:
    """The text to recognise, and what reading it left out."""

    lines: tuple[str, ...]  #: the lines kept, each at most LINE_CHARS long
    origin: str  #: ``argument``, ``standard input`` or the file's path
    read_bytes: int  #: bytes read (or characters of an argument)
    skipped_bytes: int = 0  #: bytes between the head and the tail that were not read
    cut_lines: int = 0  #: lines longer than LINE_CHARS, cut
    stopped: bool = False  #: a stream was not read to its end (STREAM_LIMIT)

    @property
    def notes(self) -> tuple[str, ...]:
        """What was not looked at, in words."""
        notes = []
        if self.skipped_bytes:
            notes.append(
                f"skipped {self.skipped_bytes} bytes in the middle of {self.origin}: read its first "
                f"{HEAD_BYTES >> 20} MiB and last {TAIL_BYTES >> 20} MiB"
            )
        if self.stopped:
            notes.append(f"stopped reading {self.origin} after {STREAM_LIMIT >> 20} MiB: its end was not read")
        if self.cut_lines:
            notes.append(f"{self.cut_lines} line(s) longer than {LINE_CHARS} characters were cut")
        return tuple(notes)


def from_bytes(
    data: bytes, origin: str, *, read: int | None = None, skipped: int = 0, stopped: bool = False
) -> ErrorText:
    """Lines of ``data`` (UTF-8, undecodable bytes replaced), each cut to LINE_CHARS."""
    text = data.decode("utf-8", errors="replace")
    lines = []
    cut = 0
    for line in text.splitlines():
        if len(line) > LINE_CHARS:
            cut += 1
            line = line[:LINE_CHARS]
        lines.append(line)
    return ErrorText(tuple(lines), origin, len(data) if read is None else read, skipped, cut, stopped)


def from_argument(text: str) -> ErrorText:
    """The error as given on the command line (several arguments are joined by newlines by the caller)."""
    kept = text[:ARGUMENT_CHARS]
    return from_bytes(kept.encode("utf-8", errors="surrogateescape"), "the argument", read=len(text),
                      skipped=len(text) - len(kept))  # fmt: skip


def from_file(path: str) -> ErrorText:
    """A log file, or standard input for ``-``; a usage error when it cannot be read."""
    if path == "-":
        stdin = sys.stdin.buffer
        return _from_stream(iter(lambda: stdin.read(1 << 20), b""), "standard input")
    try:
        info = os.stat(safe_path(path))
        if stat.S_ISFIFO(info.st_mode) or stat.S_ISCHR(info.st_mode):  # --file <(journalctl -k)
            return _from_stream(stream_chunks(path), path)
        with RegularFile(path) as handle:
            size = info.st_size
            if size <= HEAD_BYTES + TAIL_BYTES:
                return from_bytes(handle.read(0, size), path)
            head = handle.read(0, HEAD_BYTES)
            tail = handle.read(size - TAIL_BYTES, TAIL_BYTES)
    except OSError as exc:
        raise UsageError(f"--file {path}: cannot read: {exc.strerror or exc}") from None
    return from_bytes(_join(head, tail), path, read=len(head) + len(tail), skipped=size - len(head) - len(tail))


def _join(head: bytes, tail: bytes) -> bytes:
    """Head and tail as whole lines: the partial line at each cut is dropped."""
    head = head[: head.rfind(b"\n") + 1] if b"\n" in head else head
    tail = tail[tail.find(b"\n") + 1 :] if b"\n" in tail else tail
    return head + tail


def _from_stream(chunks: Iterable[bytes], origin: str) -> ErrorText:
    head = bytearray()
    tail: deque[bytes] = deque()
    tail_size = total = 0
    stopped = False
    for chunk in chunks:
        total += len(chunk)
        if len(head) < HEAD_BYTES:
            take = HEAD_BYTES - len(head)
            head += chunk[:take]
            chunk = chunk[take:]
        if chunk:
            tail.append(chunk)
            tail_size += len(chunk)
            while tail_size - len(tail[0]) >= TAIL_BYTES:
                tail_size -= len(tail.popleft())
        if total >= STREAM_LIMIT:
            stopped = True
            break
    rest = b"".join(tail)[-TAIL_BYTES:]
    skipped = total - len(head) - len(rest)
    if not skipped:
        return from_bytes(bytes(head) + rest, origin, read=total, stopped=stopped)
    kept = _join(bytes(head), rest)
    return from_bytes(kept, origin, read=len(head) + len(rest), skipped=skipped, stopped=stopped)
