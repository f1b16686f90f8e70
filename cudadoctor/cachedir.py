"""Where cudadoctor keeps what it remembers between runs, and how a file there is written: a tiny, standard-library
module, so checking for a cache is free and the ``python -S`` helpers can import it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping

__all__ = ["CACHE_FILE", "cache_file", "default_cache_dir", "tighten", "write_private"]

#: The file `cudadoctor update` writes in the cache directory.
CACHE_FILE = "index-releases.json"


def default_cache_dir(env: Mapping[str, str] | None = None) -> str:
    """``$XDG_CACHE_HOME/cudadoctor``, else ``~/.cache/cudadoctor`` (XDG: a relative value is ignored)."""
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        home = env.get("HOME") or os.path.expanduser("~")
        base = os.path.join(home, ".cache")
    return os.path.join(base, "cudadoctor")


def cache_file(cache_dir: str | None = None) -> str:
    return os.path.join(cache_dir or default_cache_dir(), CACHE_FILE)


def write_private(path: str, text: str) -> bool:
    """Put ``text`` at ``path`` atomically, readable by this user only; False (and nothing left behind) when it
    cannot be written (a read-only home: the next run computes it again).

    A temporary file beside it, created with ``O_EXCL | O_NOFOLLOW`` and mode 0600 (a planted file or link is never
    written through; not :mod:`tempfile`, whose import costs milliseconds on every run), then :func:`os.replace`.
    The directory is created 0700; one of this user's that others may write (made under ``umask 002`` by an older
    version) is made so that they cannot, since what is in it is read only when nobody else could have written it
    (:func:`cudadoctor.fileread.read_file` ``private``).
    """
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        tighten(os.path.dirname(path))
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return False
    return True


def tighten(directory: str) -> None:
    """Take group and other write permission off ``directory`` when it is this user's (never another's)."""
    with contextlib.suppress(OSError):
        info = os.stat(directory)
        if info.st_mode & 0o022 and info.st_uid == getattr(os, "getuid", lambda: -1)():
            os.chmod(directory, info.st_mode & 0o7755)
