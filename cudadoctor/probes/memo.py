"""The file probes' memo: their facts from the last run, reused while nothing they read has changed.

The probes that only read files (pip's CUDA wheels, cuDNN, NCCL, TensorRT, the loader's view, the
Python packages: ``Probe.memo`` in :mod:`cudadoctor.probes.registry`) are pure functions of what they read: file
contents, directory listings, whether a path exists, link targets, environment variables, this interpreter's
``sys.path``, and the compat data. With torch installed they take ~70 ms of a ``check`` on an H200 (measured),
most of it Python deciding which file ld.so would load, not the reading.

So each run records every answer those probes got (:class:`RecordingFS`, :class:`RecordingEnv`, the ELF
scan cache's stats) and stores their facts beside the record. The next run asks the same questions again,
cheaply — a stat for a file read (its inode, size, modification and change times), a listing's checksum,
a variable's value — and reuses the facts when every answer is the same; one different answer and the
probes run as before. A probe that asks a command, NVML or libcuda anything (``--python`` runs the
interpreter) is live by nature: its run is never stored. ``CUDADOCTOR_NO_CACHE=1`` turns the memo off.

On the live machine the questions are asked again by a helper process started with the NVML one
(:func:`start_replay`: ``python -S -I``, the standard library and this module only), on another core while the
checks are imported; the doctor then only reads the facts back. Without the helper's answer it asks itself.

The memo is JSON in the user cache (``~/.cache/cudadoctor/probes-*.json``, mode 0600), its facts in the
snapshot's form, read back by the snapshot's strict decoder (:mod:`cudadoctor.facts.codec`). It is read only
when this user owns it and nobody else may write it; anything unexpected in it is a miss.
"""

from __future__ import annotations

import json
import os
import sys
import zlib
from collections.abc import Mapping

from cudadoctor.cachedir import default_cache_dir, write_private
from cudadoctor.fileread import read_file
from cudadoctor.rootfs import MAX_READ_BYTES, RootFS

TYPE_CHECKING = False  # not typing's: the replay helper (python -S) never imports typing (mypy knows the name)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from cudadoctor.runner import StartedCommand


__all__ = [
    "DISABLE_VAR",
    "Memo",
    "RecordingEnv",
    "RecordingFS",
    "enabled",
    "file_key",
    "load",
    "memo_path",
    "replay",
    "save",
]

#: Set to a non-empty value other than ``0``: the file probes run every time.
DISABLE_VAR = "CUDADOCTOR_NO_CACHE"

_FORMAT = 4
#: A memo larger than this is not ours (an H200 with torch, vLLM and JAX: ~60 KB).
_MAX_BYTES = 8 << 20
#: Observations kept at most: a tree so large that asking again costs what probing does is not memoised.
_MAX_OBSERVATIONS = 50_000

#: What an answer is when the question raised: the errno (or the exception's name), so that EACCES after
#: ENOENT is a change.
_ERROR = "!"


def enabled(env: Mapping[str, str]) -> bool:
    """Whether the memo is used (``CUDADOCTOR_NO_CACHE`` unset, empty or ``0``)."""
    return env.get(DISABLE_VAR, "") in ("", "0")


def _failure(exc: BaseException) -> tuple[str, object]:
    return (_ERROR, getattr(exc, "errno", None) or type(exc).__name__)


def _stat(host: str, pick: Callable[[os.stat_result], object]) -> object:
    """``pick`` of the file's stat, or the failure as :func:`replay` will see it."""
    try:
        info = os.stat(host)
    except (OSError, ValueError) as exc:
        return _failure(exc)
    return pick(info)


def file_key(info: os.stat_result, *, directory: bool = False) -> tuple[int, ...]:
    """What stands for a file's content (a directory's listing): it changes whenever the file is written, replaced
    or touched. The change time is in it because no user can set it back: :func:`os.utime` restores a modification
    time and moves the change time to now (inode(7), https://man7.org/linux/man-pages/man7/inode.7.html); the
    device and inode tell a file renamed over another. The ELF scan cache keys on the same tuple."""
    if directory:
        return (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_ctime_ns)
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _signature(host: str) -> object:
    """What stands for a file's content (:func:`file_key`), or the failure."""
    return _stat(host, file_key)


def _listing(names: list[str]) -> tuple[int, int]:
    return len(names), zlib.crc32("\0".join(names).encode("utf-8", "surrogateescape"))


# --- the questions, asked live (RecordingFS) and asked again (replay) ------------------------------------------


def _ask(fs: RootFS, kind: str, path: str, extra: int) -> tuple[object, object]:
    """(what the probe gets, what is remembered of it) for one question of ``kind`` about ``path``."""
    try:
        if kind == "listdir":
            names = RootFS.listdir(fs, path)
            return names, _listing(names)
        if kind == "read":
            # The signature first: a file written between the two is taken as changed on the next run.
            signature = _signature(fs._followed(path))
            data = RootFS.read_bytes(fs, path, extra)
            return data, signature
        value = _QUESTIONS[kind](fs, path)
        return value, value
    except (OSError, ValueError) as exc:
        return exc, _failure(exc)


_QUESTIONS: dict[str, Callable[[RootFS, str], object]] = {
    "exists": RootFS.exists,
    "is_file": RootFS.is_file,
    "is_dir": RootFS.is_dir,
    "is_symlink": RootFS.is_symlink,
    "is_char_device": RootFS.is_char_device,
    "identity": RootFS.identity,
    "readlink": RootFS.readlink,
    "resolve": RootFS.resolve,
    "size": RootFS.size,
}


class Memo:
    """One run's record of the answers the file probes got."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, str, int], object] = {}
        #: a probe asked something no file answers (a command, NVML): this run is not stored
        self.tainted: str | None = None
        #: one question got two answers within the run (something changed meanwhile): not stored either
        self.unstable = False

    def observe(self, kind: str, path: str, answer: object, extra: int = 0) -> None:
        """Remember ``answer`` (an exception: its errno, as :func:`replay` will see it) to ``kind`` of ``path``."""
        if isinstance(answer, BaseException):
            answer = _failure(answer)
        key = (kind, path, extra)
        before = self.seen.setdefault(key, answer)
        if before != answer:
            self.unstable = True

    def taint(self, why: str) -> None:
        self.tainted = self.tainted or why

    def storable(self) -> bool:
        return self.tainted is None and not self.unstable and len(self.seen) <= _MAX_OBSERVATIONS


def _question(kind: str) -> Callable[[RecordingFS, str], Any]:
    """The :class:`RootFS` method ``kind`` of a :class:`RecordingFS`: asked, remembered, answered."""

    def asked(self: RecordingFS, path: str) -> Any:
        return self._asked(kind, path)

    asked.__name__ = kind
    return asked


class RecordingFS(RootFS):
    """A :class:`RootFS` that remembers every answer it gives, for :func:`replay`: each question of ``_QUESTIONS``
    and ``listdir`` (``glob`` and ``read_text`` ask through them)."""

    def __init__(self, root: str, memo: Memo) -> None:
        super().__init__(root)
        self.memo = memo

    def _asked(self, kind: str, path: str, extra: int = 0) -> Any:
        value, remembered = _ask(self, kind, path, extra)
        self.memo.observe(kind, path, remembered, extra)
        if isinstance(value, BaseException):
            raise value
        return value

    def read_bytes(self, path: str, limit: int = MAX_READ_BYTES) -> bytes:
        return self._asked("read", path, limit)  # type: ignore[no-any-return]


for _kind in (*_QUESTIONS, "listdir"):
    setattr(RecordingFS, _kind, _question(_kind))


def stat_answer(kind: str, host: str) -> object:
    """The ELF scan cache's questions (:mod:`cudadoctor.probes.scancache`), about this machine's disk: a
    directory's :func:`file_key` (``mtime``, its listing) and a file's (``sig``), as the scan cache keys on them."""
    if kind == "mtime":
        return _stat(host, lambda info: file_key(info, directory=True))
    return _stat(host, file_key)


class RecordingEnv(Mapping[str, str]):
    """The examined environment's variables, remembering which ones were read (all of them when iterated)."""

    def __init__(self, env: Mapping[str, str], memo: Memo) -> None:
        self._env = env
        self._memo = memo

    def __getitem__(self, key: str) -> str:
        value = self._env.get(key)
        self._memo.observe("env", key, _variable(value))
        if value is None:
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[str]:
        self._memo.observe("environ", "", _environ(self._env))
        return iter(self._env)

    def __len__(self) -> int:
        self._memo.observe("environ", "", _environ(self._env))
        return len(self._env)


def _variable(value: str | None) -> int | None:
    """What is kept of a variable's value: its CRC-32, never the value (a secret may sit in any variable)."""
    return None if value is None else zlib.crc32(value.encode("utf-8", "surrogateescape"))


def _environ(env: Mapping[str, str]) -> int:
    return zlib.crc32("\0".join(f"{k}={v}" for k, v in sorted(env.items())).encode("utf-8", "surrogateescape"))


class Tainting:
    """A runner, NVML or health source for the file probes: used, it marks the run as not storable."""

    def __init__(self, inner: object, memo: Memo, what: str) -> None:
        self._inner, self._memo, self._what = inner, memo, what

    def __getattr__(self, name: str) -> Any:
        self._memo.taint(self._what)
        return getattr(self._inner, name)


# --- what else the probes depend on ------------------------------------------------------------------------------


def _tree(directory: str) -> tuple[tuple[str, int, int], ...]:
    """(name, size, mtime) of a directory's files: cudadoctor's own code and data, so that an upgrade or an
    edited checkout is never answered from a memo written by other code."""
    try:
        with os.scandir(directory) as entries:
            found = [(e.name, (info := e.stat()).st_size, info.st_mtime_ns) for e in entries if e.is_file()]
    except OSError:
        return ()
    return tuple(sorted(found))


def run_key(root: str, machine: str, system: str, python: str | None) -> tuple[Any, ...]:
    """Everything the file probes depend on that they do not ask the file system or the environment for:
    this interpreter (its ``sys.path`` as the packages probe reads it: without the script's directory, so that
    ``cudadoctor`` and ``python -m cudadoctor`` share one memo), the examined root and CPU, cudadoctor's code
    and compat data, and ``packaging`` (it parses the versions)."""
    import packaging

    from cudadoctor import __version__
    from cudadoctor.cachedir import cache_file
    from cudadoctor.probes.context import own_sys_path

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return (
        _FORMAT,
        __version__,
        sys.version,
        sys.executable,
        sys.prefix,
        sys.base_prefix,
        tuple(own_sys_path()),
        os.path.isdir(os.path.join(sys.prefix, "conda-meta")),
        root,
        machine,
        system,
        python,
        packaging.__version__,
        # the code the file probes run: their own modules, the facts they build, and the compat queries they ask
        tuple(_tree(os.path.join(package, sub)) for sub in ("", "facts", "probes", "data")),
        _tree(os.path.join(package, "compat")),
        _tree(os.path.join(os.path.dirname(package), "compat")),
        _signature(cache_file()),
    )


# --- where it is kept --------------------------------------------------------------------------------------


def memo_path(root: str) -> str:
    """One memo per interpreter and examined root: two virtual environments used in turn keep one each."""
    where = f"{sys.executable}\0{sys.prefix}\0{root}".encode("utf-8", "surrogateescape")
    return os.path.join(default_cache_dir(), f"probes-{zlib.crc32(where):08x}.json")


def _read_own(path: str) -> bytes | None:
    """The file's bytes when this user owns it and nobody else may write it (no link followed), else None."""
    try:
        raw = read_file(path, _MAX_BYTES + 1, private=True)
    except OSError:
        return None
    return raw if len(raw) <= _MAX_BYTES else None


def _plain(value: object) -> object:
    """An answer as JSON gives it back (tuples become lists), so that a stored answer compares equal."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def load(path: str, key: tuple[Any, ...]) -> dict[str, Any] | None:
    """The stored run for ``key``: its ``seen`` questions (kind, path, extra, answer), ``results`` (each probe's
    facts in the snapshot's JSON form), ``errors`` (ProbeErrors in that form), ``parts``, and ``crc`` (of the
    file's bytes, to match the helper's answer); None when there is none."""
    raw = _read_own(path)
    if raw is None:
        return None
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError):  # a truncated, foreign or planted file: a miss
        return None
    if not isinstance(document, dict) or document.get("format") != _FORMAT or document.get("key") != _plain(key):
        return None
    if not isinstance(document.get("seen"), list) or not isinstance(document.get("results"), dict):
        return None
    if not isinstance(document.get("errors"), list):
        return None
    document["crc"] = zlib.crc32(raw)
    return document


def replay(seen: list[Any], fs: RootFS, env: Mapping[str, str]) -> bool:
    """Whether every question of a stored run gets the same answer now."""
    for item in seen:
        if not (isinstance(item, list) and len(item) == 4):
            return False
        kind, path, extra, answer = item
        if not isinstance(path, str) or not isinstance(extra, int):
            return False
        if kind == "env":
            now: object = _variable(env.get(path))
        elif kind == "environ":
            now = _environ(env)
        elif kind in ("mtime", "sig"):
            now = stat_answer(kind, path)
        elif kind == "read":
            try:
                now = _signature(fs._followed(path))
            except (OSError, ValueError) as exc:
                now = _failure(exc)
        elif kind in _QUESTIONS or kind == "listdir":
            now = _ask(fs, kind, path, extra)[1]
        else:
            return False  # a question this version does not know
        if _plain(now) != answer:
            return False
    return True


def save(
    path: str, key: tuple[Any, ...], memo: Memo, results: dict[str, Any], errors: list[Any], parts: dict[str, Any]
) -> None:
    """Store a run (atomically, mode 0600); ``results``, ``errors`` and ``parts`` (what background probes read
    from files alone) already in the snapshot's JSON form. Nothing happens when it cannot be written."""
    seen = [[kind, where, extra, _plain(answer)] for (kind, where, extra), answer in memo.seen.items()]
    document = {
        "format": _FORMAT,
        "key": _plain(key),
        "seen": seen,
        "results": results,
        "errors": errors,
        "parts": parts,
    }
    try:
        # dumps, not dump: only the one-shot form uses the C encoder (dump's pure-Python one takes twice as long)
        text = json.dumps(document, separators=(",", ":"))
    except (TypeError, ValueError):  # a value JSON cannot hold: probed every time
        return
    write_private(path, text)


# --- the replay helper ---------------------------------------------------------------------------------------

#: Seconds the doctor waits for the helper's answer before asking itself (a replay takes ~10 ms on an H200).
REPLAY_TIMEOUT = 5.0

_STARTED: dict[str, StartedCommand] = {}


def replay_main(argv: list[str]) -> None:
    """The helper: replay the live machine's memo at ``argv[0]`` and print ``<1|0> <crc32 of the file>`` (1: every
    answer unchanged); nothing when there is no memo to replay."""
    raw = _read_own(argv[0]) if argv else None
    if raw is None:
        return
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError):
        return
    if isinstance(document, dict) and isinstance(document.get("seen"), list):
        unchanged = replay(document["seen"], RootFS("/"), os.environ)
        sys.stdout.write(f"{int(unchanged)} {zlib.crc32(raw)}\n")


def start_replay(env: Mapping[str, str]) -> None:
    """Start the helper that replays the live machine's memo (a ``check`` of this machine, the memo on)."""
    if not enabled(env):
        return
    where = memo_path("/")
    if not os.path.exists(where):
        return  # the first run: nothing to replay
    from cudadoctor.runner import StartedCommand, helper_command, start_command

    argv = helper_command("cudadoctor.probes.memo", "replay_main", where)
    started = start_command(argv) if argv is not None else None
    if isinstance(started, StartedCommand):
        _STARTED[where] = started


def early_verdict(where: str) -> tuple[bool, int] | None:
    """The helper's answer for the memo at ``where``: (unchanged, crc32 of the file it read); None when no helper
    ran for it, or it failed or said nothing."""
    started = _STARTED.pop(where, None)
    if started is None:
        return None
    result = started.result(REPLAY_TIMEOUT)
    words = result.stdout.split() if result.ok else []
    if len(words) != 2 or words[0] not in ("0", "1") or not words[1].isdigit():
        return None
    return words[0] == "1", int(words[1])


def stop_replay() -> None:
    """End a helper whose answer nobody took (the command is finishing)."""
    while _STARTED:
        _STARTED.popitem()[1].stop()
