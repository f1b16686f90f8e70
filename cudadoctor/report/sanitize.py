"""Untrusted strings made safe for a report, at the renderer boundary.

Facts carry text from the examined machine (os-release, environment values, dist-info names, a
snapshot's GPU name). Written as is, an escape sequence clears the screen, moves the cursor or sets
the window title (ECMA-48 control functions, https://ecma-international.org/publications-and-standards/standards/ecma-48/),
a newline in a name forges a report line ("✓ No issues found"), and bidirectional overrides reorder
what is shown (CVE-2021-42574, https://trojansource.codes/). In Markdown, ``*``, ``[``, ``<`` and
``@name`` would format, link, inject HTML or mention someone.

* :func:`terminal`: every control, format and line-separator character written as a visible escape
  (``\\x1b``, ``\\n``, ``\\u202e``), so one fact stays one piece of one line;
* :func:`markdown`: :func:`terminal`, then Markdown's and HTML's special characters escaped and
  ``@`` written as ``&#64;`` (GitHub turns ``@name`` into a mention, never ``&#64;name``);
* :func:`code_fence`: a fence longer than any backtick run in a code block's text (CommonMark 0.31,
  "Fenced code blocks": the closing fence must be at least as long as the opening one,
  https://spec.commonmark.org/0.31.2/#fenced-code-blocks).
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["code_fence", "json_text", "markdown", "terminal"]

#: Unicode categories shown escaped: controls (Cc: C0, DEL, C1, ESC among them), format characters
#: (Cf: bidirectional overrides, zero-width characters), line and paragraph separators (Zl, Zp),
#: unassigned and surrogates (Cn, Cs: undecodable bytes held as surrogate escapes).
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cn", "Cs"})
_ASCII_SAFE = re.compile(r"[\x20-\x7e]*")
#: Inline Markdown (GFM) specials; no line of the report starts with a fact, so the line-start ones
#: (``#``, ``-``, ``+``, ``>``) cannot act once newlines are escaped.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "@": "&#64;", '"': "&quot;"}


def _visible(char: str) -> str:
    if unicodedata.category(char) not in _UNSAFE_CATEGORIES:
        return char
    code = ord(char)
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char)
    if named is not None:
        return named
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def terminal(text: str) -> str:
    """``text`` with every control, format and separator character shown as an escape."""
    if _ASCII_SAFE.fullmatch(text):  # the common case, without a per-character walk
        return text
    return "".join(_visible(char) for char in text)


def markdown(text: str) -> str:
    """``text`` safe inside a Markdown paragraph or table cell: nothing in it formats, links, injects
    HTML or mentions anyone."""
    safe = _MARKDOWN_SPECIAL.sub(r"\\\1", terminal(text))
    return "".join(_HTML.get(char, char) for char in safe)


def code_fence(lines: list[str] | tuple[str, ...]) -> str:
    """A backtick fence longer than any run of backticks in ``lines`` (at least three)."""
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    return "`" * max(3, longest + 1)


def _json_escape(char: str) -> str:
    return "".join(f"\\u{unit:04x}" for unit in _utf16_units(char))


def _utf16_units(char: str) -> list[int]:
    data = char.encode("utf-16-be", errors="surrogatepass")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def json_text(document: str) -> str:
    """A JSON document (as :func:`json.dumps` writes it with ``ensure_ascii=False``) with every
    control, format and separator character written as a ``\\uXXXX`` escape: the same JSON value,
    safe to ``cat`` to a terminal. Such characters can only stand inside strings, where the escape
    means the same character (RFC 8259 section 7, https://www.rfc-editor.org/rfc/rfc8259#section-7)."""
    if _ASCII_SAFE.fullmatch(document.replace("\n", "")):
        return document
    return "".join(
        char if char == "\n" or unicodedata.category(char) not in _UNSAFE_CATEGORIES else _json_escape(char)
        for char in document
    )
