"""The expected inventory of ``compare``: which nodes must have a report (``--expect-hosts``) and how old
one may be (``--max-age``)."""

from __future__ import annotations

import os
import re

from cudadoctor.compare.fold import HostlistError, expand
from cudadoctor.errors import UsageError
from cudadoctor.fileread import read_named_file

__all__ = ["expected_gpus", "expected_hosts", "parse_age"]

_AGE = re.compile(r"^(\d{1,9})([smhd]?)$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
#: A host file is one name or host list a line; more than this is not a host file.
_HOSTS_FILE_LIMIT = 16 << 20


def parse_age(text: str) -> float:
    """``--max-age``: seconds, or a number with ``s``, ``m``, ``h`` or ``d`` (``90m``, ``2h``)."""
    match = _AGE.match(text.strip())
    if match is None or int(match.group(1)) == 0:
        raise UsageError(
            f"--max-age {text[:40]!r}: expected a positive number of seconds, or one with s, m, h or d (2h)"
        )
    return float(int(match.group(1)) * _UNITS[match.group(2)])


def expected_hosts(text: str) -> list[str]:
    """``--expect-hosts``: a Slurm host list (``gpu[001-098]``, as ``scontrol show hostnames`` reads it), or
    a file of names or host lists, one a line (``#`` starts a comment)."""
    if os.path.isfile(text):
        data = read_named_file(text, _HOSTS_FILE_LIMIT, "a list of host names", UsageError)
        lines = data.decode("utf-8", errors="replace").splitlines()
        expression = ",".join(line.split("#", 1)[0].strip() for line in lines)
        origin = f"--expect-hosts {text}"
    else:
        expression, origin = text, "--expect-hosts"
    try:
        hosts = expand(expression)
    except HostlistError as exc:
        raise UsageError(f"{origin}: {exc}") from None
    if not hosts:
        raise UsageError(f"{origin}: names no host")
    return hosts


_GPUS = re.compile(r"^(\d{1,4})\s*[xX×]\s*(\S.{0,62})$")


def expected_gpus(specs: list[str]) -> list[tuple[int, str]]:
    """``--expect-gpus 8xH100`` (repeatable, one per kind of node): each node whose GPU model names ``H100``
    must have 8 of them; a node whose model no spec names, or with fewer, is named."""
    out: list[tuple[int, str]] = []
    for spec in specs:
        match = _GPUS.match(spec.strip())
        if match is None or int(match.group(1)) == 0:
            raise UsageError(f"--expect-gpus {spec[:40]!r}: expected COUNTxMODEL (8xH100)")
        out.append((int(match.group(1)), match.group(2).strip()))
    return out
