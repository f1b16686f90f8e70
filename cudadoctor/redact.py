"""Redaction: what never leaves the machine in a report unless the user asks (``--no-redact``).

* GPU and MIG UUIDs and serial-number-like values are replaced (the probes never keep UUIDs,
  but a command's error text or a snapshot written by hand may hold one);
* values of environment variables whose names look secret (TOKEN, KEY, SECRET, PASSWORD …) are
  masked, and so are credentials inside URLs (``https://user:pass@mirror/simple``);
* the home directory shows as ``~``.

Redaction works on the encoded (JSON-ready) document, so every output format gets the same.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["MASK", "Redactor", "is_secret_name"]

MASK = "****"

_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|AUTH|(?:^|_)KEY(?:$|_)|APIKEY|_PAT$|COOKIE", re.IGNORECASE
)
_UUID = re.compile(r"\b(GPU|MIG)-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b")
_URL_CREDENTIALS = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<cred>[^/@\s:]+(?::[^/@\s]*)?)@")


def is_secret_name(name: str) -> bool:
    """True for variable names whose values must not be shown (``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``)."""
    return bool(_SECRET_NAME.search(name))


class Redactor:
    """Rewrites strings in an encoded document."""

    def __init__(self, homes: Iterable[str] = ()) -> None:
        # Longest first so /home/user/project is not half-replaced by a shorter home.
        self.homes = sorted(
            {h.rstrip("/") for h in homes if h and h.rstrip("/") not in ("", "/")}, key=len, reverse=True
        )

    @classmethod
    def for_this_user(cls) -> Redactor:
        homes = [os.path.expanduser("~")]
        if os.environ.get("HOME"):
            homes.append(os.environ["HOME"])
        return cls(homes)

    def text(self, value: str) -> str:
        value = _UUID.sub(lambda m: f"{m.group(1)}-<redacted>", value)
        value = _URL_CREDENTIALS.sub(lambda m: f"{m.group('scheme')}{MASK}@", value)
        for home in self.homes:
            value = re.sub(re.escape(home) + r"(?=/|$|[\s:;,\"'])", "~", value)
        return value

    def document(self, data: Any, *, key: str | None = None) -> Any:
        """A copy of ``data`` with every string redacted and secret-named values masked."""
        if isinstance(data, dict):
            if isinstance(data.get("name"), str) and "value" in data and is_secret_name(data["name"]):
                masked = dict(data)
                masked["value"] = MASK
                return {k: (v if k in ("name", "value") else self.document(v, key=k)) for k, v in masked.items()}
            return {
                k: (MASK if isinstance(v, str) and is_secret_name(k) else self.document(v, key=k))
                for k, v in data.items()
            }
        if isinstance(data, list):
            return [self.document(v, key=key) for v in data]
        if isinstance(data, str):
            return self.text(data)
        return data
