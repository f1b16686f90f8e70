"""A printed pip/uv command read back into the model: how the verifier and the tests judge the commands a
report carries (they are strings there), including any not built through :mod:`cudadoctor.fixes.build`.

:func:`parse` answers None for a line that is no pip/uv command (``sudo reboot``, ``export …``) and raises
:class:`UnreadCommand` for a pip/uv command it cannot read exactly (an option the model does not have):
such a command cannot be verified, and is reported, never skipped.
"""

from __future__ import annotations

import posixpath
import re
import shlex

from cudadoctor.fixes.model import Command, Install, Pin, Steps, Uninstall

__all__ = ["UnreadCommand", "parse", "parse_pin"]

_HEADS: dict[tuple[str, ...], str] = {
    ("python", "-m", "pip"): "pip",
    ("python3", "-m", "pip"): "pip",
    ("pip",): "pip",
    ("pip3",): "pip",
    ("uv", "pip"): "uv",
}
_FLAGS = {
    "-U": "upgrade",
    "--upgrade": "upgrade",
    "--force-reinstall": "force_reinstall",
    "--reinstall": "force_reinstall",
    "--no-deps": "no_deps",
    "--no-build-isolation": "no_build_isolation",
    "--no-cache-dir": "no_cache_dir",
    "--no-cache": "no_cache_dir",
}
_VALUED = {"--index-url": "index_url", "-i": "index_url", "--extra-index-url": "extra", "-f": "links",
           "--find-links": "links"}  # fmt: skip
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_REQ = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[([A-Za-z0-9_,.-]+)\])?\s*(.*)$")
#: a wheel's file name: name-version(-build)?-python-abi-platform.whl (PEP 427)
_WHEEL = re.compile(r"^([^-]+)-([^-]+)-")


class UnreadCommand(ValueError):
    """A pip/uv command with something the model cannot hold."""


def parse_pin(text: str) -> Pin:
    """``'jax[cuda12]>=0.4'`` -> Pin; a wheel URL -> Pin with its name and ``==version``."""
    if "://" in text:
        match = _WHEEL.match(posixpath.basename(text))
        if not match or not text.endswith(".whl"):
            raise UnreadCommand(f"not a wheel URL: {text}")
        return Pin(match.group(1).replace("_", "-").lower(), "", (), text)
    match = _REQ.match(text)
    if not match or ";" in text or "@" in text:
        raise UnreadCommand(f"not a requirement: {text}")
    extras = tuple(e for e in (match.group(2) or "").split(",") if e)
    return Pin(match.group(1), match.group(3).replace(" ", ""), extras)


def _head(words: list[str]) -> tuple[str, list[str]] | None:
    for head, tool in _HEADS.items():
        if tuple(words[: len(head)]) == head:
            return tool, words[len(head) :]
    return None


def _one(words: list[str]) -> Install | Uninstall | None:
    env = []
    while words and _ENV.match(words[0]):
        name, _sep, value = words.pop(0).partition("=")
        env.append((name, value))
    found = _head(words)
    if found is None:
        return None
    tool, rest = found
    if (tool == "uv" and rest[:1] == ["uninstall"]) or rest[:1] == ["uninstall"]:
        names = tuple(w for w in rest[1:] if w != "-y")
        if not names or any(n.startswith("-") for n in names):
            raise UnreadCommand(" ".join(words))
        return Uninstall(names, "uv" if tool == "uv" else "pip")
    if rest[:1] != ["install"]:
        raise UnreadCommand(" ".join(words))
    flags: dict[str, bool] = {}
    valued: dict[str, list[str]] = {"index_url": [], "extra": [], "links": []}
    pins: list[Pin] = []
    items = iter(rest[1:])
    for word in items:
        if word in _FLAGS:
            flags[_FLAGS[word]] = True
        elif word in _VALUED:
            valued[_VALUED[word]].append(next(items, ""))
        elif word.startswith("-"):
            raise UnreadCommand(f"an option the model does not have: {word}")
        else:
            pins.append(parse_pin(word))
    if not pins or len(valued["index_url"]) > 1:
        raise UnreadCommand(" ".join(words))
    return Install(
        tuple(pins),
        valued["index_url"][0] if valued["index_url"] else None,
        tuple(valued["extra"]),
        tuple(valued["links"]),
        **flags,
        env=tuple(env),
        tool="uv" if tool == "uv" else "pip",
    )


def parse(line: str) -> Command | None:
    """The command a printed line holds; None when it is no pip/uv command."""
    try:
        parts = [shlex.split(part) for part in line.split(" && ")]
    except ValueError:
        return None
    steps = [_one(words) for words in parts]
    if all(step is None for step in steps):
        return None
    if any(step is None for step in steps):
        raise UnreadCommand(f"a pip command chained with another: {line}")
    found = tuple(s for s in steps if s is not None)
    return found[0] if len(found) == 1 else Steps(found)
