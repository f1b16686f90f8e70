"""Redaction: what never leaves the machine in a report unless the user asks (``--no-redact``).

* GPU and MIG UUIDs and serial-number-like values are replaced (the probes never keep UUIDs,
  but a command's error text or a snapshot written by hand may hold one);
* values of environment variables whose names look secret (TOKEN, KEY, SECRET, PASSWORD …) are
  masked, also where free text says ``NAME=value``, and so are credentials inside URLs
  (``https://user:pass@mirror/simple``, even with an unencoded ``@`` or ``/`` in the password);
* the home directory shows as ``~`` (the only part that ``--no-redact`` turns off: a redactor with
  no home directories still masks secrets and UUIDs).

Redaction works on the encoded (JSON-ready) document, so every output format gets the same.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["MASK", "Redactor", "is_secret_name"]

MASK = "****"

_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|AUTH|(?:^|_)KEY(?:$|_)|APIKEY|_PAT$|COOKIE", re.IGNORECASE
)
_UUID = re.compile(r"\b(GPU|MIG)-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b")
#: ``scheme://user:password@`` (the password up to the last ``@`` of the word: a token holding ``/`` or
#: ``@`` unencoded is still a password) or ``scheme://token@``.
_URL_CREDENTIALS = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<cred>[^/@\s:]*:\S*@|[^/@\s:]+@)")
#: ``NAME=value`` in free text (an error message, a child's stderr, a URL query); masked when NAME looks secret.
_ASSIGNMENT = re.compile(r"(?<!\w)(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?!=)(?P<value>[^\s&'\",;()<>\[\]{}]+)")
#: A secret shorter than this is masked where it stands but not searched for elsewhere (masking
#: every "1" or "true" in a report would wreck it).
_MIN_KNOWN_SECRET = 6


@functools.lru_cache(maxsize=4096)
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
        return cls(homes + [os.path.realpath(h) for h in homes])  # /home -> /nfs/home: both spellings

    def text(self, value: str, secrets: Sequence[str] = ()) -> str:
        """``value`` redacted; ``secrets`` (longest first) are masked wherever they appear in it."""
        for secret in secrets:
            value = value.replace(secret, MASK)
        # Each pattern runs only where the text it needs occurs: a report holds thousands of strings and few
        # hold a UUID, a URL or an assignment (the walk cost ~4 ms on an H200's facts before, measured).
        if "GPU-" in value or "MIG-" in value:
            value = _UUID.sub(lambda m: f"{m.group(1)}-<redacted>", value)
        if "://" in value and "@" in value:
            value = _URL_CREDENTIALS.sub(lambda m: f"{m.group('scheme')}{MASK}@", value)
        if "=" in value:
            value = _ASSIGNMENT.sub(lambda m: f"{m['name']}={MASK}" if is_secret_name(m["name"]) else m[0], value)
        for home in self.homes:  # a whole path component: not /data/home/alice, not /home/alice.old
            if home in value:
                value = re.sub(r"(?<![\w.-])" + re.escape(home) + r"(?![\w.-])", "~", value)
        return value

    def document(self, data: Any, *, key: str | None = None) -> Any:
        """A copy of ``data`` with every string redacted and secret-named values masked.

        A secret found anywhere in ``data`` (a secret-named value, a URL's password, ``NAME=value``)
        is masked wherever else it appears too: ``LD_LIBRARY_PATH`` split at ``:`` into the loader's
        directories cuts ``https://user:pass@host/lib`` into pieces that no pattern recognises.
        """
        return self._walk(data, _secrets(data))

    def changes(self, data: Any) -> bool:
        """Whether :meth:`document` would return anything other than an equal copy of ``data``: the same walk,
        building nothing (the facts of a healthy machine hold nothing to mask, and every run asks)."""
        return self._changes(data, _secrets(data))

    def _changes(self, data: Any, secrets: Sequence[str]) -> bool:
        if isinstance(data, dict):
            if isinstance(data.get("name"), str) and "value" in data and is_secret_name(data["name"]):
                if data["value"] != MASK:
                    return True
                return any(self._changes(v, secrets) for k, v in data.items() if k not in ("name", "value"))
            return any(
                (v != MASK) if isinstance(v, str) and is_secret_name(k) else self._changes(v, secrets)
                for k, v in data.items()
            )
        if isinstance(data, list):
            return any(self._changes(v, secrets) for v in data)
        if isinstance(data, str):
            return self.text(data, secrets) != data
        return False

    def _walk(self, data: Any, secrets: Sequence[str]) -> Any:
        if isinstance(data, dict):
            if isinstance(data.get("name"), str) and "value" in data and is_secret_name(data["name"]):
                masked = dict(data)
                masked["value"] = MASK
                return {k: (v if k in ("name", "value") else self._walk(v, secrets)) for k, v in masked.items()}
            return {
                k: (MASK if isinstance(v, str) and is_secret_name(k) else self._walk(v, secrets))
                for k, v in data.items()
            }
        if isinstance(data, list):
            return [self._walk(v, secrets) for v in data]
        if isinstance(data, str):
            return self.text(data, secrets)
        return data


def _secrets(data: Any) -> list[str]:
    """The secret values of an encoded document long enough to mask wherever they appear, longest first."""
    found: set[str] = set()
    _collect_secrets(data, found)
    return sorted((s for s in found if len(s) >= _MIN_KNOWN_SECRET), key=len, reverse=True)


def _collect_secrets(data: Any, found: set[str]) -> None:
    """Every secret value in an encoded document, as :meth:`Redactor.document` would mask it."""
    if isinstance(data, dict):
        named = data.get("name")
        for k, v in data.items():
            by_name = is_secret_name(k) or (k == "value" and isinstance(named, str) and is_secret_name(named))
            if isinstance(v, str) and by_name:
                found.add(v)
            else:
                _collect_secrets(v, found)
    elif isinstance(data, list):
        for v in data:
            _collect_secrets(v, found)
    elif isinstance(data, str):
        if "://" in data and "@" in data:
            for m in _URL_CREDENTIALS.finditer(data):
                user, sep, password = m["cred"][:-1].partition(":")
                found.add(password if sep else user)
        if "=" in data:
            found.update(m["value"] for m in _ASSIGNMENT.finditer(data) if is_secret_name(m["name"]))
