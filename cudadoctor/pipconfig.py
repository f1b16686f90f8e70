"""Which package index ``cudadoctor update`` reads: the one pip would use, found the way pip finds it.

Order, most important first (pip's ``configuration.py`` and ``cli/parser.py``):

1. ``--index-url`` given to cudadoctor;
2. ``PIP_INDEX_URL``;
3. pip's configuration files. Files are merged, later overriding earlier: global
   (``$XDG_CONFIG_DIRS``/pip/pip.conf, default ``/etc/xdg/pip/pip.conf``, then ``/etc/pip.conf``),
   user (``~/.pip/pip.conf``, then ``$XDG_CONFIG_HOME``/pip/pip.conf, skipped when
   ``PIP_CONFIG_FILE`` names an existing file), site (``$VIRTUAL_ENV/pip.conf``), then
   ``PIP_CONFIG_FILE``. ``PIP_CONFIG_FILE=/dev/null`` turns files off. In the merged result an
   ``[install] index-url`` beats a ``[global]`` one wherever each came from, as in pip;
4. https://pypi.org/simple/.

A file that cannot be read or parsed is skipped and the reason kept in
:attr:`IndexConfig.problems` (pip itself would refuse to run). Index URLs may carry credentials
(``https://user:token@mirror/simple``): :func:`redacted` is the only form ever shown or stored.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import field

from cudadoctor.fileread import read_file
from cudadoctor.record import record
from cudadoctor.redact import MASK, is_secret_name

__all__ = ["PYPI_SIMPLE", "IndexConfig", "config_files", "configured_index", "redacted"]

#: pip's default index.
PYPI_SIMPLE = "https://pypi.org/simple/"

#: A config file larger than this is not a pip config file.
_MAX_CONFIG_BYTES = 1 << 20

_SECRET_QUERY = re.compile(r"signature|^sig$|^pass$|^pwd$", re.IGNORECASE)
#: user-info up to the last ``@`` of the word: ``user:tok/en@host`` (an unencoded ``/``, ``#``, ``?`` or ``@``
#: in a password) is split by urlsplit at the ``/`` and would otherwise be shown whole.
_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<cred>[^/@\s:]*:\S*@|[^/@\s:]+@)")


@record
class IndexConfig:
    """The index to read and where that choice came from."""

    #: the URL as configured, credentials included (for the HTTP client only; show :attr:`display`)
    url: str
    #: ``--index-url``, ``PIP_INDEX_URL``, ``/etc/pip.conf [global] index-url`` or ``default``
    source: str
    #: config files skipped and why, e.g. ``/etc/pip.conf: not a valid config file (line 3); skipped``
    problems: tuple[str, ...] = field(default=())

    @property
    def display(self) -> str:
        """The URL with credentials masked."""
        return redacted(self.url)

    def __repr__(self) -> str:  # never show credentials, not even in a traceback
        return f"IndexConfig(url={self.display!r}, source={self.source!r}, problems={self.problems!r})"


def redacted(url: str) -> str:
    """``url`` with credentials masked: the user-info part and secret-looking query values.

    ``https://user:tok@mirror.example/simple/?token=abc`` → ``https://****@mirror.example/simple/?token=****``.
    Text that is not a URL comes back with any ``scheme://user@`` part masked.
    """
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit  # only where a URL is shown

    try:
        parts = urlsplit(url)
    except ValueError:
        return _USERINFO.sub(lambda m: f"{m.group('scheme')}{MASK}@", url)
    if not parts.scheme or not parts.netloc:
        return _USERINFO.sub(lambda m: f"{m.group('scheme')}{MASK}@", url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rpartition('@')[2]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_secret_query(k) for k, _ in pairs):
            query = urlencode([(k, MASK if _secret_query(k) else v) for k, v in pairs], safe="*")
    return _USERINFO.sub(
        lambda m: f"{m.group('scheme')}{MASK}@", urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    )


def _secret_query(name: str) -> bool:
    """Query parameters that carry credentials: ``token=``, ``X-Amz-Signature=``, ``sig=`` …"""
    return is_secret_name(name) or bool(_SECRET_QUERY.search(name))


def config_files(env: Mapping[str, str], *, prefix: str | None = None) -> list[tuple[str, str]]:
    """pip's config files as ``(kind, path)``, lowest priority first; missing files included.

    :param env: the environment (``HOME``, ``XDG_CONFIG_DIRS``, ``XDG_CONFIG_HOME``, ``VIRTUAL_ENV``,
        ``PIP_CONFIG_FILE``)
    :param prefix: the target environment's ``sys.prefix`` for the site file; default ``$VIRTUAL_ENV``
    """
    env_file = env.get("PIP_CONFIG_FILE")
    if env_file == os.devnull:
        return []
    home = env.get("HOME") or os.path.expanduser("~")
    xdg_dirs = env.get("XDG_CONFIG_DIRS", "")
    if not xdg_dirs.strip():
        xdg_dirs = "/etc/xdg"
    files = [("global", os.path.join(d, "pip", "pip.conf")) for d in xdg_dirs.split(os.pathsep) if d]
    files.append(("global", "/etc/pip.conf"))
    if not (env_file and os.path.exists(env_file)):
        xdg_home = env.get("XDG_CONFIG_HOME", "")
        if not xdg_home.strip():
            xdg_home = os.path.join(home, ".config")
        files.append(("user", os.path.join(home, ".pip", "pip.conf")))
        files.append(("user", os.path.join(xdg_home, "pip", "pip.conf")))
    site = prefix if prefix is not None else env.get("VIRTUAL_ENV")
    if site:
        files.append(("site", os.path.join(site, "pip.conf")))
    if env_file:
        files.append(("env", env_file))
    return files


def configured_index(env: Mapping[str, str], *, explicit: str | None = None, prefix: str | None = None) -> IndexConfig:
    """The index pip would install from, and why.

    :param env: the environment to read (``os.environ`` in the CLI)
    :param explicit: ``--index-url`` from the command line; wins over everything
    :param prefix: the target environment's prefix for pip's site config file (default ``$VIRTUAL_ENV``)
    :return: an :class:`IndexConfig`; never raises for a bad config file
    """
    problems: list[str] = []
    merged: dict[tuple[str, str], tuple[str, str]] = {}  # (section, key) -> (value, path)
    for _kind, path in config_files(env, prefix=prefix):
        values = _read_config(path, problems)
        for (section, key), value in values.items():
            merged[(section, key)] = (value, path)
    if explicit is not None and explicit.strip():
        return IndexConfig(explicit.strip(), "--index-url", tuple(problems))
    from_env = env.get("PIP_INDEX_URL", "").strip()
    if from_env:
        return IndexConfig(from_env, "PIP_INDEX_URL", tuple(problems))
    # pip applies [global], then the command's section ([install]), so [install] wins.
    for section in ("install", "global"):
        if (section, "index-url") in merged:
            value, path = merged[(section, "index-url")]
            return IndexConfig(value, f"{path} [{section}] index-url", tuple(problems))
    return IndexConfig(PYPI_SIMPLE, "default", tuple(problems))


def _read_config(path: str, problems: list[str]) -> dict[tuple[str, str], str]:
    """The non-empty ``index-url`` values of one file by (section, key); {} when absent or unusable."""
    try:
        raw = read_file(path, _MAX_CONFIG_BYTES + 1)  # a FIFO here hung `update`: regular files only
    except FileNotFoundError:
        return {}
    except IsADirectoryError:
        problems.append(f"{path}: is a directory; skipped")
        return {}
    except OSError as exc:
        problems.append(f"{path}: cannot read ({exc.strerror or exc}); skipped")
        return {}
    if len(raw) > _MAX_CONFIG_BYTES:
        problems.append(f"{path}: larger than 1 MiB, not a pip config file; skipped")
        return {}
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        problems.append(f"{path}: not UTF-8 text; skipped")
        return {}
    import configparser  # only where a config file exists (most machines have none)

    # RawConfigParser as pip uses: no interpolation, so a %-encoded password stays as written.
    parser = configparser.RawConfigParser(strict=False)
    try:
        parser.read_string(text, source=path)
    except configparser.Error as exc:
        line = getattr(exc, "lineno", None)
        where = f" (line {line})" if line else ""
        problems.append(f"{path}: not a valid config file{where}: {type(exc).__name__}; skipped")
        return {}
    found: dict[tuple[str, str], str] = {}
    for section in parser.sections():
        for key, value in parser.items(section):
            name = key.lower().replace("_", "-")
            name = name[2:] if name.startswith("--") else name
            if name == "index-url" and value and value.strip():
                found[(section, name)] = value.strip()
    return found
