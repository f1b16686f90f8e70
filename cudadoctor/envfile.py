"""Reading an image's environment from a Docker-style env file (``--env-file``).

The format is Docker's ``--env-file``: one ``KEY=VALUE`` per line, ``#`` starts a comment line,
blank lines are skipped, the value is taken literally (no quotes are removed, nothing is
expanded). A bare ``KEY`` line means "take it from the host" to Docker; an image audit must not
use the host's facts, so such lines are reported and ignored.
"""

from __future__ import annotations

import re

from cudadoctor.errors import UsageError

__all__ = ["parse_env_file", "read_env_file"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


def parse_env_file(text: str) -> tuple[dict[str, str], list[str]]:
    """(variables, warnings) from env-file text. Raises UsageError on a malformed line."""
    env: dict[str, str] = {}
    warnings: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.lstrip()
        if not line or line.startswith("#"):
            continue
        name, sep, value = line.partition("=")
        if not _NAME.match(name):
            raise UsageError(f"env file line {number}: {name[:40]!r} is not a variable name")
        if not sep:
            warnings.append(f"env file line {number}: {name} has no value; ignored (host values are not used)")
            continue
        env[name] = value
    return env, warnings


def read_env_file(path: str) -> tuple[dict[str, str], list[str]]:
    try:
        with open(path, "rb") as handle:
            data = handle.read(4 << 20)
    except OSError as exc:
        raise UsageError(f"cannot read env file {path}: {exc.strerror or exc}") from None
    return parse_env_file(data.decode("utf-8", errors="replace"))
