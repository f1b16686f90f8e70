"""What a refresh accepts from an index as a name: project names, file names, URLs and pinned requirements.

Everything here is a pure predicate; the parsers and the cache validator share them so that what
may be written is exactly what may be read back.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from packaging.utils import canonicalize_name

__all__ = ["PROJECT_NAME", "TOKEN", "is_http_url", "is_pin", "is_safe_filename"]

#: A project name (PEP 508 ``identifier``, https://peps.python.org/pep-0508/#names).
PROJECT_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9._-]*[a-z0-9])?$", re.IGNORECASE)
#: A wheel tag part as the cache stores it (``cp312``, ``manylinux_x86_64``).
TOKEN = re.compile(r"^[a-z0-9_]{1,64}$")
# Requires-Dist lines kept as pins: frameworks, the CUDA wheels, and the packages refreshed by default.
_PIN_NAME = re.compile(
    r"^(?:torch|torchvision|torchaudio|triton|xformers|vllm|flash-attn|jax|jaxlib|jax-cuda\d+-(?:plugin|pjrt)"
    r"|nvidia-[a-z0-9-]+|cuda-toolkit|tensorrt[a-z0-9-]*|cupy-cuda[a-z0-9]+|onnxruntime-gpu)$"
)
_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")


def is_pin(requirement: str) -> bool:
    """Whether a Requires-Dist line names a framework or a CUDA wheel (``nvidia-*``, ``cuda-toolkit`` …)."""
    match = _REQ_NAME.match(requirement)
    if match is None:
        return False
    return bool(_PIN_NAME.match(canonicalize_name(match.group(1))))


def is_http_url(url: str) -> bool:
    """An absolute http(s) URL with a host."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def is_safe_filename(name: str) -> bool:
    """A plain file name: no path separator, no ``..``, printable, no surrounding blanks."""
    return (
        bool(name)
        and len(name) <= 255
        and "/" not in name
        and "\\" not in name
        and ".." not in name
        and name.isprintable()
        and name.strip() == name
    )
