"""Core metadata (a wheel's METADATA file, served beside it per PEP 658): parse it and check its hash.

PEP 658 (https://peps.python.org/pep-0658/) serves ``<wheel url>.metadata``, a few KB, so a
refresh never downloads a wheel. The file is RFC 822 headers (the core metadata specification,
https://packaging.python.org/en/latest/specifications/core-metadata/); only the fields the doctor
needs are kept.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from email.parser import Parser
from email.policy import compat32

from packaging.version import Version

from cudadoctor.pipconfig import redacted
from cudadoctor.record import record
from cudadoctor.update.errors import UpdateError

__all__ = ["CoreMetadata", "MetadataRead", "parse_core_metadata", "verify_metadata"]


@record
class CoreMetadata:
    """The fields of a wheel's METADATA file that a refresh keeps."""

    name: str
    version: str
    requires_python: str | None
    requires_dist: tuple[str, ...]


@record
class MetadataRead:
    """Core metadata and where it was read."""

    url: str  #: the ``.metadata`` URL (credentials masked)
    wheel: str  #: the wheel it describes
    metadata: CoreMetadata


def parse_core_metadata(data: bytes, *, where: str = "core metadata") -> CoreMetadata:
    """Name, Version, Requires-Python and Requires-Dist of a METADATA file (RFC 822 headers).

    Parse, e.g. (torch 2.5.1's wheel, trimmed)::

        Metadata-Version: 2.1
        Name: torch
        Version: 2.5.1
        Requires-Python: >=3.8.0
        Requires-Dist: nvidia-cuda-runtime-cu12 (==12.4.127) ; platform_system == "Linux" and platform_machine …

    :raises UpdateError: no Name or Version header, or a Version that is not PEP 440
    """
    text = data.decode("utf-8", errors="replace")
    message = Parser(policy=compat32).parsestr(text, headersonly=True)

    def one(key: str) -> str | None:
        value = message.get(key)
        return " ".join(str(value).split()) or None if value is not None else None

    name, version = one("Name"), one("Version")
    if not name or not version:
        raise UpdateError(f"{where}: no Name or Version header; not a METADATA file")
    try:
        Version(version)
    except ValueError:  # InvalidVersion, or a number past int()'s 4300-digit limit
        raise UpdateError(f"{where}: Version {version[:60]!r} is not a PEP 440 version") from None
    requires = tuple(re.sub(r"\s*\n\s*", " ", str(v)).strip() for v in message.get_all("Requires-Dist") or ())
    return CoreMetadata(name, version, one("Requires-Python"), tuple(r for r in requires if r))


def verify_metadata(body: bytes, core: bool | Mapping[str, str] | None, url: str) -> None:
    """Refuse a metadata file whose hash differs from the one its index entry declares (PEP 658).

    The first algorithm this Python guarantees is checked; an entry with no usable hash is accepted.

    :raises UpdateError: the body does not match
    """
    if not isinstance(core, Mapping):
        return
    for algo, digest in core.items():
        if algo in hashlib.algorithms_guaranteed:
            if hashlib.new(algo, body).hexdigest() != digest.lower():
                raise UpdateError(f"{redacted(url)}: does not match its {algo} in the index; refusing it")
            return
