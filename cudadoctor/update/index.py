"""Index pages: the files a simple repository lists for a project, from PEP 691 JSON or PEP 503 HTML.

PEP 691 (https://peps.python.org/pep-0691/) is asked for first; mirrors that serve only PEP 503
HTML (https://peps.python.org/pep-0503/) are read too. Both give the same :class:`IndexFile`
values, with the PEP 658/714 core-metadata flag (https://peps.python.org/pep-0658/,
https://peps.python.org/pep-0714/) and PEP 592 yanking (https://peps.python.org/pep-0592/).
Every file name and URL is checked before it is kept: a name with a path in it, or a URL that is
not http(s), refuses the whole page.

Index page shapes, verbatim from pypi.org (2026-11-30, see tests/fixtures/update/)::

    {"meta":{"api-version":"1.1",…},"name":"vllm","files":[{"filename":"vllm-0.9.2-cp38-abi3-manylinux1_x86_64.whl",
     "hashes":{"sha256":"f3c5…"},"requires-python":"<3.13,>=3.9","url":"https://files.pythonhosted.org/…","yanked":false},…]}

    <a href="https://files.pythonhosted.org/…/vllm-0.9.2.tar.gz#sha256=6b0d…"
       data-requires-python="&lt;3.13,&gt;=3.9">vllm-0.9.2.tar.gz</a><br/>
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from cudadoctor.pipconfig import redacted
from cudadoctor.record import record
from cudadoctor.update.errors import UpdateError
from cudadoctor.update.names import is_http_url, is_safe_filename

__all__ = ["IndexFile", "parse_index_page", "parse_simple_html", "parse_simple_json"]


@record
class IndexFile:
    """One file listed on a package's index page."""

    filename: str  #: checked: no path separator, no ``..``
    url: str  #: absolute http(s) URL, fragment removed
    hashes: Mapping[str, str] = field(default_factory=dict)
    requires_python: str | None = None
    #: False, True, or the reason given
    yanked: bool | str = False
    #: PEP 658/714: None when the index does not say, False when it says none, True or {algo: digest} when served
    core_metadata: bool | Mapping[str, str] | None = None

    @property
    def metadata_url(self) -> str:
        """Where PEP 658 puts this file's core metadata: the file URL with ``.metadata`` appended."""
        parts = urlsplit(self.url)
        return urlunsplit((parts.scheme, parts.netloc, parts.path + ".metadata", parts.query, ""))


def _checked(where: str, filename: Any, url: Any, base_url: str) -> tuple[str, str]:
    """The file name and absolute URL of an index entry, or :class:`UpdateError` for anything unsafe."""
    if not isinstance(filename, str) or not is_safe_filename(filename):
        raise UpdateError(f"{where}: file name {str(filename)[:80]!r} is not a plain file name; refusing this index")
    if not isinstance(url, str) or not url:
        raise UpdateError(f"{where}: {filename}: url: expected a non-empty string")
    try:
        absolute = urljoin(base_url, url.strip()) if base_url else url.strip()
    except ValueError as exc:
        raise UpdateError(f"{where}: {filename}: bad URL") from exc
    if not is_http_url(absolute):
        raise UpdateError(f"{where}: {filename}: URL {redacted(absolute)[:120]!r} is not http(s); refusing this index")
    parts = urlsplit(absolute)
    return filename, urlunsplit((parts.scheme, parts.netloc, parts.path, parts.query, ""))


def _hash_fragment(url: str) -> dict[str, str]:
    fragment = urlsplit(url).fragment
    algo, sep, digest = fragment.partition("=")
    return {algo: digest} if sep and algo and digest else {}


def parse_simple_json(data: bytes, *, base_url: str = "") -> list[IndexFile]:
    """The files of a PEP 691 JSON project page.

    Parse, e.g. (pypi.org/simple/vllm/, trimmed)::

        {"meta":{"api-version":"1.1"},"name":"vllm","files":[{"filename":"vllm-0.9.2.tar.gz",
         "hashes":{"sha256":"6b0d…"},"requires-python":"<3.13,>=3.9","url":"https://files.pythonhosted.org/…",
         "yanked":false}]}

    :param base_url: the page's URL, for relative file URLs and messages
    :raises UpdateError: not JSON, an unsupported API version, a wrong type, an unsafe file name or URL
    """
    where = f"index page {redacted(base_url)}" if base_url else "index page"
    files = _json_files(data, where)
    return [_json_file(f"{where}: files[{i}]", entry, base_url) for i, entry in enumerate(files)]


def _json_files(data: bytes, where: str) -> list[Any]:
    """The ``files`` list of a PEP 691 page, after checking it is one of a version this client knows."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
        raise UpdateError(f"{where}: not valid JSON ({reason})") from None
    if not isinstance(doc, dict):
        raise UpdateError(f"{where}: expected a JSON object")
    meta = doc.get("meta")
    api = meta.get("api-version") if isinstance(meta, dict) else None
    if not isinstance(api, str) or not re.match(r"^\d+(\.\d+)*$", api):
        raise UpdateError(f"{where}: meta.api-version missing or not a version")
    if api.split(".")[0] != "1":  # PEP 691: a client must refuse a major version it does not know
        raise UpdateError(f"{where}: simple API version {api} is not supported (1.x is)")
    files = doc.get("files")
    if not isinstance(files, list):
        raise UpdateError(f"{where}: files: expected a list")
    return files


def _strings(value: Any) -> bool:
    """A JSON object of strings to strings."""
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def _json_file(at: str, entry: Any, base_url: str) -> IndexFile:
    """One entry of a PEP 691 ``files`` list, every field type-checked."""
    if not isinstance(entry, dict):
        raise UpdateError(f"{at}: expected an object")
    filename, url = _checked(at, entry.get("filename"), entry.get("url"), base_url)
    hashes = entry.get("hashes", {})
    if not _strings(hashes):
        raise UpdateError(f"{at}.hashes: expected an object of strings")
    requires_python = entry.get("requires-python")
    if requires_python is not None and not isinstance(requires_python, str):
        raise UpdateError(f"{at}.requires-python: expected a string")
    yanked = entry.get("yanked", False)
    if not isinstance(yanked, (bool, str)):
        raise UpdateError(f"{at}.yanked: expected true, false or a reason")
    # PEP 714 renamed the key; indexes that predate it still send the PEP 658 one
    key = "core-metadata" if "core-metadata" in entry else "data-dist-info-metadata"
    core = entry.get(key)
    if core is not None and not (isinstance(core, bool) or _strings(core)):
        raise UpdateError(f"{at}.{key}: expected true, false or an object of hashes")
    return IndexFile(
        filename,
        url,
        dict(hashes),
        (requires_python.strip() or None) if requires_python else None,
        yanked if isinstance(yanked, bool) else (yanked or True),
        dict(core) if isinstance(core, dict) else core,
    )


class _AnchorParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.anchors: list[tuple[dict[str, str | None], str]] = []
        self.base: str | None = None
        self.api_version: str | None = None
        self._open: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._open, self._text = dict(attrs), []
        elif tag == "base" and self.base is None:
            self.base = dict(attrs).get("href")
        elif tag == "meta":
            found = dict(attrs)
            if found.get("name") == "pypi:repository-version":
                self.api_version = found.get("content")

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._open is not None:
            self.anchors.append((self._open, "".join(self._text).strip()))
            self._open = None


def _html_core_metadata(value: str | None) -> bool | dict[str, str]:
    if value is None or value.strip().lower() in ("", "true"):
        return True
    if value.strip().lower() == "false":
        return False
    algo, sep, digest = value.strip().partition("=")
    return {algo: digest} if sep and algo and digest else True


def parse_simple_html(data: bytes, *, base_url: str = "") -> list[IndexFile]:
    """The files of a PEP 503 HTML project page (what mirrors without PEP 691 serve).

    Parse, e.g. (pypi.org/simple/vllm/ as text/html, one anchor)::

        <a href="https://files.pythonhosted.org/…/vllm-0.9.2.tar.gz#sha256=6b0d…"
           data-requires-python="&lt;3.13,&gt;=3.9">vllm-0.9.2.tar.gz</a><br/>

    ``data-core-metadata`` / ``data-dist-info-metadata`` (PEP 714/658) and ``data-yanked`` are read;
    the anchor text is the file name (PEP 503), the URL's last segment when the text is empty.

    :raises UpdateError: an unsupported repository version, an unsafe file name or URL
    """
    where = f"index page {redacted(base_url)}" if base_url else "index page"
    parser = _AnchorParser()
    try:
        parser.feed(data.decode("utf-8", errors="replace"))
        parser.close()
    except (AssertionError, ValueError) as exc:  # HTMLParser raises little, but a broken page must not crash
        raise UpdateError(f"{where}: not parseable HTML ({type(exc).__name__})") from None
    if parser.api_version and parser.api_version.split(".")[0] != "1":
        # the page's text, quoted: a value holding a line break must not break the one-line message
        raise UpdateError(f"{where}: simple API version {parser.api_version[:40]!r} is not supported (1.x is)")
    try:  # urljoin and urlsplit raise ValueError for a bad host part ("http://[x")
        base = urljoin(base_url, parser.base) if parser.base else base_url
    except ValueError:
        raise UpdateError(f"{where}: <base href> is not a URL") from None
    return [
        _html_file(f"{where}: link {i}", attrs, text, base)
        for i, (attrs, text) in enumerate(parser.anchors)
        if attrs.get("href")
    ]


def _html_file(at: str, attrs: dict[str, str | None], text: str, base: str) -> IndexFile:
    """One anchor of a PEP 503 page: its text is the file name, else the URL's last path segment."""
    href = attrs["href"] or ""
    try:
        name = text or unquote(urlsplit(href).path.rstrip("/").rpartition("/")[2])
    except ValueError:
        raise UpdateError(f"{at}: bad URL") from None
    filename, url = _checked(at, name, href, base)
    core_attr = "data-core-metadata" if "data-core-metadata" in attrs else "data-dist-info-metadata"
    # data-yanked without a value, or with an empty one, still means yanked
    yanked: bool | str = (attrs["data-yanked"] or True) if "data-yanked" in attrs else False
    return IndexFile(
        filename,
        url,
        _hash_fragment(href),
        (attrs.get("data-requires-python") or "").strip() or None,
        yanked,
        _html_core_metadata(attrs[core_attr]) if core_attr in attrs else None,
    )


def parse_index_page(data: bytes, *, base_url: str) -> list[IndexFile]:
    """JSON or HTML, told apart by the first character (the body is all a fetch returns)."""
    head = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if head in (b"{", b"["):
        return parse_simple_json(data, base_url=base_url)
    return parse_simple_html(data, base_url=base_url)
