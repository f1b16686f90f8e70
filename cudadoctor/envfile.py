"""Reading an image's environment from a Docker-style env file (``--env-file``).

The format is Docker's ``--env-file``: one ``KEY=VALUE`` per line, ``#`` starts a comment line,
blank lines are skipped, the value is taken literally (no quotes are removed, nothing is
expanded). A bare ``KEY`` line means "take it from the host" to Docker; an image audit must not
use the host's facts, so such lines are reported and ignored.
"""

from __future__ import annotations

import re

from cudadoctor.errors import UsageError
from cudadoctor.fileread import read_file

__all__ = ["parse_env_file", "read_env_file"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


def parse_env_file(text: str) -> tuple[dict[str, str], list[str]]:
    """(variables, warnings) from env-file text. Raises UsageError on a malformed line.

    Messages name line numbers and, where the line starts with a valid name, that name; they never
    show a value or a line's text: a stray continuation line of a multi-line value, a bare token or
    ``AWS_SECRET_ACCESS_KEY wJal…`` (a space for the ``=``) is usually a secret. A UTF-8 byte order
    mark before the first line is dropped, as Docker's own parser does
    (https://github.com/docker/cli/blob/master/pkg/kvfile/kvfile.go).
    """
    env: dict[str, str] = {}
    warnings: list[str] = []
    for number, raw in enumerate(text.removeprefix("\ufeff").splitlines(), start=1):
        line = raw.lstrip()
        if not line or line.startswith("#"):
            continue
        name, sep, value = line.partition("=")
        if not _NAME.match(name):
            why = _malformed(name)
            raise UsageError(f"env file line {number}: {why} (the line is not shown: it may hold a secret)")
        if not sep:
            warnings.append(f"env file line {number}: a name without '=VALUE'; ignored (host values are not used)")
            continue
        env[name] = value
    return env, warnings


def _malformed(name: str) -> str:
    """Why a line is no ``NAME=VALUE``, naming the variable only when the line starts with one."""
    first = name.split(maxsplit=1)[0] if name.split() else ""
    if _NAME.match(first) and first != name.rstrip():
        return f"{first} is followed by a space, not by '='"
    return "not a NAME=VALUE line"


def read_env_file(path: str) -> tuple[dict[str, str], list[str]]:
    try:
        # A user-named stream is read (``--env-file <(docker inspect …)``); never more than 4 MiB.
        data = read_file(path, 4 << 20, allow_stream=True)
    except OSError as exc:
        raise UsageError(f"cannot read env file {path}: {exc.strerror or exc}") from None
    return parse_env_file(data.decode("utf-8", errors="replace"))
