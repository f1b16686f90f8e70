"""Where `cudadoctor update` keeps what it reads: a tiny module, so checking for the cache is free."""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["CACHE_FILE", "cache_file", "default_cache_dir"]

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
