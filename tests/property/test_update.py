"""``cudadoctor update``'s parsers (PEP 691 JSON and PEP 503 HTML index pages, core metadata) and the
pip configuration it reads the index from (:mod:`cudadoctor.pipconfig`)."""

from __future__ import annotations

import html
import json
import os
import string
import tempfile
from urllib.parse import urlsplit

from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version

from cudadoctor.pipconfig import configured_index, redacted
from cudadoctor.update import IndexFile, UpdateError, parse_core_metadata, parse_simple_html, parse_simple_json
from tests.property.strategies import (
    any_text,
    assert_one_line,
    fixture_text,
    json_values,
    line_free_text,
    mutated,
    mutated_json,
    pep440_versions,
    property_settings,
)

#: Examples per parser (each property of a parser runs this many).
EXAMPLES = {
    "parse_simple_json": 100,
    "parse_simple_html": 100,
    "parse_core_metadata": 100,
    "pipconfig.redacted": 150,
    "pipconfig.configured_index": 50,
}

_JSON_PAGE = fixture_text("update", "vllm.simple.json")
_HTML_PAGE = fixture_text("update", "vllm.simple.html")
_METADATA = fixture_text("update", "metadata", "vllm-0.9.2-cp38-abi3-manylinux1_x86_64.whl.metadata")
_BASES = st.sampled_from(["", "https://pypi.org/simple/vllm/", "http://user:tok@mirror.example:8080/simple/vllm/"])


def _bytes(seed: str) -> st.SearchStrategy[bytes]:
    return st.one_of(st.binary(max_size=300), any_text().map(str.encode), mutated(seed).map(str.encode))


def _check_files(files: list[IndexFile]) -> None:
    for f in files:
        assert f.filename and "/" not in f.filename and ".." not in f.filename and f.filename.isprintable()
        parts = urlsplit(f.url)
        assert parts.scheme in ("http", "https") and parts.netloc and not parts.fragment


def _read_page(parse: object, data: bytes, base: str) -> None:
    try:
        files = parse(data, base_url=base)  # type: ignore[operator]
    except UpdateError as exc:
        assert_one_line(exc)
    else:
        _check_files(files)


# --- PEP 691 JSON ---------------------------------------------------------------------------------


@property_settings(EXAMPLES["parse_simple_json"])
@given(
    st.one_of(
        _bytes(_JSON_PAGE),
        json_values().map(lambda v: json.dumps(v).encode()),
        mutated_json(json.loads(_JSON_PAGE), max_edits=4).map(lambda v: json.dumps(v).encode()),
    ),
    _BASES,
)
def test_parse_simple_json_any_input(data: bytes, base: str) -> None:
    _read_page(parse_simple_json, data, base)


_FILENAMES = st.builds(
    "{}-{}{}".format,
    st.sampled_from(["vllm", "torch", "nvidia_cudnn_cu13"]),
    pep440_versions(),
    st.sampled_from([".tar.gz", "-cp312-cp312-manylinux_2_28_x86_64.whl", "-py3-none-any.whl"]),
)
_DIGESTS = st.dictionaries(st.sampled_from(["sha256", "md5"]), st.text(string.hexdigits, min_size=1, max_size=64))


@property_settings(EXAMPLES["parse_simple_json"])
@given(
    st.lists(
        st.tuples(
            _FILENAMES,
            _DIGESTS,
            st.none() | st.sampled_from([">=3.9", "<3.13,>=3.9", ">=3.10"]),
            st.booleans() | line_free_text(min_size=1, max_size=20),
            st.none() | st.booleans() | _DIGESTS,
        ),
        max_size=5,
    ),
    st.booleans(),
)
def test_parse_simple_json_round_trip(entries: list[tuple], relative: bool) -> None:
    base = "https://pypi.org/simple/vllm/"
    files = []
    for filename, hashes, requires, yanked, core in entries:
        entry = {
            "filename": filename,
            "url": f"../../files/{filename}" if relative else f"https://f.example/{filename}",
        }
        entry.update({"hashes": hashes, "requires-python": requires, "yanked": yanked, "core-metadata": core})
        files.append(entry)
    data = json.dumps({"meta": {"api-version": "1.1"}, "name": "vllm", "files": files}).encode()
    parsed = parse_simple_json(data, base_url=base)
    assert [f.filename for f in parsed] == [e[0] for e in entries]
    for f, (filename, hashes, requires, yanked, core) in zip(parsed, entries, strict=True):
        assert f.url == (f"https://pypi.org/files/{filename}" if relative else f"https://f.example/{filename}")
        assert (dict(f.hashes), f.requires_python, f.core_metadata) == (hashes, requires, core)
        assert f.yanked == yanked


# --- PEP 503 HTML ---------------------------------------------------------------------------------


_HTML_SNIPPETS = st.sampled_from(
    ['<a href="', '">', "</a>", "<base href=", "<meta name=pypi:repository-version content=", "http://[", "&lt;", "#"]
)


@property_settings(EXAMPLES["parse_simple_html"])
@given(
    st.one_of(
        _bytes(_HTML_PAGE),
        st.lists(st.one_of(_HTML_SNIPPETS, any_text(10)), max_size=12).map(lambda p: "".join(p).encode()),
    ),
    _BASES,
)
def test_parse_simple_html_any_input(data: bytes, base: str) -> None:
    _read_page(parse_simple_html, data, base)


@property_settings(EXAMPLES["parse_simple_html"])
@given(
    st.lists(
        st.tuples(
            _FILENAMES, st.none() | st.sampled_from([">=3.9", "<3.13,>=3.9"]), st.none() | line_free_text(max_size=10)
        ),
        max_size=5,
    ),
    st.booleans(),
)
def test_parse_simple_html_round_trip(entries: list[tuple[str, str | None, str | None]], text_in_anchor: bool) -> None:
    lines = ["<!DOCTYPE html><html><body>"]
    for filename, requires, yanked in entries:
        attrs = f' href="https://f.example/p/{filename}#sha256=ab12"'
        if requires is not None:
            attrs += f' data-requires-python="{html.escape(requires)}"'
        if yanked is not None:
            attrs += f' data-yanked="{html.escape(yanked)}"'
        lines.append(f"<a{attrs}>{filename if text_in_anchor else ''}</a><br/>")
    parsed = parse_simple_html(("\n".join(lines) + "</body></html>").encode(), base_url="https://pypi.org/simple/x/")
    assert [(f.filename, f.url, dict(f.hashes)) for f in parsed] == [
        (name, f"https://f.example/p/{name}", {"sha256": "ab12"}) for name, _, _ in entries
    ]
    for f, (_name, requires, yanked) in zip(parsed, entries, strict=True):
        assert f.requires_python == requires
        assert f.yanked == (False if yanked is None else (yanked or True))


# --- core metadata --------------------------------------------------------------------------------


@property_settings(EXAMPLES["parse_core_metadata"])
@given(_bytes(_METADATA))
def test_parse_core_metadata_any_input(data: bytes) -> None:
    try:
        meta = parse_core_metadata(data)
    except UpdateError as exc:
        assert_one_line(exc)
    else:
        Version(meta.version)
        # folded header lines are joined; RFC 822 breaks lines at CR and LF only
        assert meta.name and all(r and r == r.strip() and not set(r) & set("\r\n") for r in meta.requires_dist)


_HEADER_TEXT = st.text(string.ascii_letters + string.digits + "-_.<>=!~,;()[]\"' ", min_size=1, max_size=30).filter(
    lambda s: s.strip()
)


@property_settings(EXAMPLES["parse_core_metadata"])
@given(_HEADER_TEXT, pep440_versions(), st.none() | st.sampled_from([">=3.9", "<3.13,>=3.9"]), st.lists(_HEADER_TEXT))
def test_parse_core_metadata_round_trip(name: str, version: str, requires: str | None, dist: list[str]) -> None:
    text = f"Metadata-Version: 2.4\nName: {name}\nVersion: {version}\n"
    text += f"Requires-Python: {requires}\n" if requires else ""
    text += "".join(f"Requires-Dist: {d}\n" for d in dist) + "\nName: from the description\n"
    meta = parse_core_metadata(text.encode())
    assert (meta.name, meta.version, meta.requires_python) == (" ".join(name.split()), version, requires)
    assert meta.requires_dist == tuple(d.strip() for d in dist)


# --- pip's configuration --------------------------------------------------------------------------


@property_settings(EXAMPLES["pipconfig.redacted"])
@given(
    st.one_of(any_text(80), st.builds("https://{}:{}@{}/simple/?token={}".format, *[line_free_text(max_size=10)] * 4))
)
def test_redacted_any_text(url: str) -> None:
    assert isinstance(redacted(url), str)


@property_settings(EXAMPLES["pipconfig.redacted"])
@given(
    st.text(string.ascii_letters + string.digits, min_size=1, max_size=10),
    st.text(string.ascii_letters + string.digits + "-._~%!$", min_size=4, max_size=20),
)
def test_redacted_masks_the_password(user: str, password: str) -> None:
    shown = redacted(f"https://{user}:{password}@mirror.example/simple/?x=1")
    assert password not in shown.partition("@")[0] and shown.endswith("@mirror.example/simple/?x=1")


def _configured(text: str) -> object:
    with tempfile.TemporaryDirectory() as home:
        path = os.path.join(home, "pip.conf")
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as handle:
            handle.write(text)
        env = {"HOME": home, "XDG_CONFIG_DIRS": home, "XDG_CONFIG_HOME": home, "PIP_CONFIG_FILE": path}
        return configured_index(env)


@property_settings(EXAMPLES["pipconfig.configured_index"])
@given(
    st.one_of(
        any_text(),
        mutated(
            "[global]\nindex-url = https://mirror.example/simple/\n[install]\nindex_url=https://b.example/simple\n"
        ),
    )
)
def test_configured_index_any_file(text: str) -> None:
    config = _configured(text)
    assert config.url and config.source  # type: ignore[attr-defined]
    assert all(len(p.splitlines()) == 1 for p in config.problems)  # type: ignore[attr-defined]


@property_settings(EXAMPLES["pipconfig.configured_index"])
@given(st.sampled_from(["global", "install"]), st.sampled_from(["index-url", "index_url", "--index-url"]))
def test_configured_index_round_trip(section: str, key: str) -> None:
    config = _configured(f"[{section}]\n{key} = https://u:p@mirror.example/simple/\n")
    assert config.url == "https://u:p@mirror.example/simple/"  # type: ignore[attr-defined]
    assert config.source.endswith(f"[{section}] index-url")  # type: ignore[attr-defined]


def test_a_repository_version_with_a_line_break_stays_one_line() -> None:
    """Found by the property above (hypothesis): the page's own text went into the message unquoted."""
    from cudadoctor.update.errors import UpdateError
    from cudadoctor.update.index import parse_simple_html

    try:
        parse_simple_html(b'<meta name=pypi:repository-version content="\r">')
    except UpdateError as exc:
        assert len(str(exc).splitlines()) == 1
    try:
        parse_simple_html(b'<meta name=pypi:repository-version content="2.0">')
    except UpdateError as exc:
        assert str(exc) == "index page: simple API version '2.0' is not supported (1.x is)"
    else:
        raise AssertionError("a repository version 2.0 page was accepted")
