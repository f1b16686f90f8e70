"""``Redactor.text`` runs each pattern only where its text occurs; it must mask exactly as running them all does."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from cudadoctor import redact
from cudadoctor.redact import MASK, Redactor, is_secret_name
from tests.property.strategies import property_settings

_PIECES = st.sampled_from([
    "GPU-", "MIG-", "0123abcd-", "4567-", "89ab-cdef-", "0123456789ab", "://", "https", "user:pa@ss@", "@",
    "host/simple", "=", "HF_TOKEN", "KEY", "x", " ", "/home/alice", "/home/alice.old", "/", ":", ".", "-",
])  # fmt: skip
_TEXT = st.lists(_PIECES, max_size=14).map("".join)


def _every_pattern(redactor: Redactor, value: str, secrets: list[str]) -> str:
    """The masking with no shortcut: every pattern over every string (the oracle)."""
    for secret in secrets:
        value = value.replace(secret, MASK)
    value = redact._UUID.sub(lambda m: f"{m.group(1)}-<redacted>", value)
    value = redact._URL_CREDENTIALS.sub(lambda m: f"{m.group('scheme')}{MASK}@", value)
    value = redact._ASSIGNMENT.sub(lambda m: f"{m['name']}={MASK}" if is_secret_name(m["name"]) else m[0], value)
    for home in redactor.homes:
        value = re.sub(r"(?<![\w.-])" + re.escape(home) + r"(?![\w.-])", "~", value)
    return value


@given(value=_TEXT, secrets=st.lists(st.sampled_from(["secret-value", "pa@ss", "alice"]), max_size=2, unique=True))
@property_settings(500)
def test_text_masks_as_every_pattern_would(value: str, secrets: list[str]) -> None:
    redactor = Redactor(["/home/alice"])
    assert redactor.text(value, secrets) == _every_pattern(redactor, value, secrets)


def test_the_shortcuts_still_mask() -> None:
    redactor = Redactor(["/home/alice"])
    text = "GPU-0123abcd-4567-89ab-cdef-0123456789ab https://u:p@host/x HF_TOKEN=abcdef /home/alice/x"
    assert redactor.text(text) == f"GPU-<redacted> https://{MASK}@host/x HF_TOKEN={MASK} ~/x"
