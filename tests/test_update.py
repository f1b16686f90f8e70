"""cudadoctor.update: parsers on captured pypi.org responses, and refresh against a real HTTP server on 127.0.0.1.

The server serves tests/fixtures/update/ (PEP 691 JSON, PEP 503 HTML, two real .metadata files) with
``https://files.pythonhosted.org`` rewritten to its own address. Failures are injected per path;
after each one the previous cache must be byte-identical and no temporary file may be left behind.
No test reaches the internet: an autouse guard refuses any connection that is not to 127.0.0.1.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import itertools
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest

from cudadoctor import update
from cudadoctor.update import (
    ACCEPT_INDEX,
    CACHE_FILE,
    CoreMetadata,
    FetchError,
    HttpFetcher,
    MetadataRead,
    UpdateError,
    default_cache_dir,
    is_pin,
    load_cache,
    parse_core_metadata,
    parse_simple_html,
    parse_simple_json,
    refresh,
    release_records,
    validate_index_document,
)

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "update")
FILES_HOST = "https://files.pythonhosted.org"
DAY1 = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.timezone.utc)
DAY2 = datetime.datetime(2026, 12, 1, 8, 0, tzinfo=datetime.timezone.utc)
TORCH_META = "torch-2.5.1-cp311-cp311-manylinux1_x86_64.whl.metadata"
VLLM_META = "vllm-0.9.2-cp38-abi3-manylinux1_x86_64.whl.metadata"
CUDA_RUNTIME_PIN = 'nvidia-cuda-runtime-cu12 (==12.4.127) ; platform_system == "Linux" and platform_machine == "x86_64"'


def fixture_bytes(*parts: str) -> bytes:
    with open(os.path.join(HERE, *parts), "rb") as handle:
        return handle.read()


def fixture_json(name: str) -> dict[str, Any]:
    return json.loads(fixture_bytes(name))


# --- the no-internet guard ----------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every outgoing connection must go to 127.0.0.1; proxies from the environment are ignored."""
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    real_connect = socket.socket.connect

    def guarded(sock: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if host not in ("127.0.0.1", "::1"):
            raise AssertionError(f"a test tried to connect to {address!r}")
        return real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


# --- the local index server ---------------------------------------------------------------------------

Route = Callable[[BaseHTTPRequestHandler], None]


def _write(handler: BaseHTTPRequestHandler, data: bytes) -> None:
    try:
        handler.wfile.write(data)
        handler.wfile.flush()
    except OSError:  # the client gave up (timeout, size cap): expected in these tests
        pass


def reply(body: bytes, status: int = 200, ctype: str = "application/octet-stream", **headers: str) -> Route:
    def route(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", ctype)
        handler.send_header("Content-Length", str(len(body)))
        for key, value in headers.items():
            handler.send_header(key.replace("_", "-"), value)
        handler.end_headers()
        _write(handler, body)

    return route


def slow(seconds: float, then: Route) -> Route:
    def route(handler: BaseHTTPRequestHandler) -> None:
        time.sleep(seconds)
        then(handler)

    return route


def truncated(body: bytes) -> Route:
    """Declares the full length, sends half, closes."""

    def route(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        _write(handler, body[: len(body) // 2])
        handler.close_connection = True

    return route


def endless(megabytes: int, *, declare: bool = False) -> Route:
    """Streams ``megabytes`` MB with no Content-Length (or a truthful one when ``declare``); bounded."""

    def route(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
        if declare:
            handler.send_header("Content-Length", str(megabytes << 20))
        handler.end_headers()
        chunk = b" " * (1 << 16)
        for _ in range(megabytes * 16):
            try:
                handler.wfile.write(chunk)
            except OSError:
                return
        handler.close_connection = True

    return route


class IndexServer:
    """A ThreadingHTTPServer on 127.0.0.1:0 with per-path routes and hit counts."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.hits: Counter[str] = Counter()
        self.accepts: dict[str, str] = {}
        self.auth: list[str | None] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = urlsplit(self.path).path
                with outer._lock:
                    outer.hits[path] += 1
                    outer.accepts[path] = self.headers.get("Accept", "")
                    outer.auth.append(self.headers.get("Authorization"))
                outer.routes.get(path, reply(b"", 404))(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that hung up on a slow or huge response is what several tests do

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def index(self) -> str:
        return f"{self.base}/simple/"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

    def local(self, text: str) -> str:
        return text.replace(FILES_HOST, self.base)

    def serve_json(self, name: str, *, keep: Callable[[dict[str, Any]], bool] = lambda f: True, **edit: Any) -> None:
        """Serve the captured JSON page of ``name`` (files filtered by ``keep``) and its metadata files."""
        doc = fixture_json(f"{name}.simple.json")
        doc["files"] = [f for f in doc["files"] if keep(f)]
        for filename, changes in edit.get("file_changes", {}).items():
            for entry in doc["files"]:
                if entry["filename"] == filename:
                    entry.update(changes)
        body = self.local(json.dumps(doc)).encode()
        self.routes[f"/simple/{name}/"] = reply(body, ctype="application/vnd.pypi.simple.v1+json")
        self.serve_metadata(doc["files"])

    def serve_html(self, name: str) -> None:
        body = self.local(fixture_bytes(f"{name}.simple.html").decode()).encode()
        self.routes[f"/simple/{name}/"] = reply(body, ctype="text/html")
        self.serve_metadata(fixture_json(f"{name}.simple.json")["files"])

    def serve_metadata(self, files: list[dict[str, Any]]) -> None:
        available = set(os.listdir(os.path.join(HERE, "metadata")))
        for entry in files:
            name = entry["filename"] + ".metadata"
            if name in available:
                self.routes[self.metadata_path(entry["filename"])] = reply(fixture_bytes("metadata", name))

    def metadata_path(self, filename: str) -> str:
        for name in ("torch", "vllm"):
            for entry in fixture_json(f"{name}.simple.json")["files"]:
                if entry["filename"] == filename:
                    return urlsplit(entry["url"]).path + ".metadata"
        raise KeyError(filename)


@pytest.fixture
def server() -> Iterator[IndexServer]:
    srv = IndexServer()
    try:
        yield srv
    finally:
        srv.close()


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def fetcher(sleeps: list[float]) -> Iterator[HttpFetcher]:
    """The real HTTP client with short timeouts; backoff sleeps are recorded, not slept."""
    with HttpFetcher(timeout=(2.0, 2.0), deadline=10.0, retries=3, backoff=0.5, sleep=sleeps.append) as f:
        yield f


def cache_bytes(cache_dir: str) -> bytes:
    with open(os.path.join(cache_dir, CACHE_FILE), "rb") as handle:
        return handle.read()


def cache_doc(cache_dir: str) -> dict[str, Any]:
    return json.loads(cache_bytes(cache_dir))


def no_092(entry: dict[str, Any]) -> bool:
    return "-0.9.2" not in entry["filename"]


# --- parsers ------------------------------------------------------------------------------------------


def test_parse_simple_json_captured_vllm() -> None:
    files = parse_simple_json(fixture_bytes("vllm.simple.json"), base_url="https://pypi.org/simple/vllm/")
    by_name = {f.filename: f for f in files}
    assert len(files) == 8
    wheel = by_name["vllm-0.9.2-cp38-abi3-manylinux1_x86_64.whl"]
    assert wheel.url.startswith("https://files.pythonhosted.org/packages/f4/72/")
    assert wheel.metadata_url == wheel.url + ".metadata"
    assert wheel.requires_python == "<3.13,>=3.9"
    assert wheel.hashes["sha256"].startswith("f3c5da29")
    assert wheel.yanked is False
    assert wheel.core_metadata is None  # pypi.org did not declare it in this capture
    assert by_name["vllm-0.2.1-cp310-cp310-manylinux1_x86_64.whl"].yanked == "A bug in tensor parallelism support."


def test_parse_simple_html_matches_json() -> None:
    """The captured HTML and JSON pages of the same files give the same list."""
    base = "https://pypi.org/simple/vllm/"

    def key(f: update.IndexFile) -> tuple[Any, ...]:
        return (f.filename, f.url, dict(f.hashes), f.requires_python, f.yanked, f.core_metadata)

    from_json = sorted(map(key, parse_simple_json(fixture_bytes("vllm.simple.json"), base_url=base)))
    from_html = sorted(map(key, parse_simple_html(fixture_bytes("vllm.simple.html"), base_url=base)))
    assert from_html == from_json


def test_parse_simple_html_attributes_and_relative_urls() -> None:
    page = b"""<!DOCTYPE html><html><head><meta name="pypi:repository-version" content="1.1"></head><body>
    <a href="../../packages/torch-2.4.1%2Bcu121-cp311-cp311-linux_x86_64.whl#sha256=abc"
       data-requires-python="&gt;=3.8.0" data-dist-info-metadata="sha256=def"
       >torch-2.4.1+cu121-cp311-cp311-linux_x86_64.whl</a>
    <a href="/whl/torch-2.4.0-cp311-cp311-linux_x86_64.whl" data-core-metadata data-yanked
       >torch-2.4.0-cp311-cp311-linux_x86_64.whl</a>
    <a href="/whl/torch-2.3.0-cp311-cp311-linux_x86_64.whl" data-core-metadata="false" data-yanked="broken"></a>
    <a name="no-href">ignored</a>
    </body></html>"""
    files = parse_simple_html(page, base_url="https://mirror.example/whl/cu121/torch/")
    assert [f.filename for f in files] == [
        "torch-2.4.1+cu121-cp311-cp311-linux_x86_64.whl",
        "torch-2.4.0-cp311-cp311-linux_x86_64.whl",
        "torch-2.3.0-cp311-cp311-linux_x86_64.whl",  # from the URL: the anchor has no text
    ]
    first, second, third = files
    assert first.url == "https://mirror.example/whl/packages/torch-2.4.1%2Bcu121-cp311-cp311-linux_x86_64.whl"
    assert first.hashes == {"sha256": "abc"}
    assert first.requires_python == ">=3.8.0"
    assert first.core_metadata == {"sha256": "def"}
    assert second.core_metadata is True and second.yanked is True
    assert third.core_metadata is False and third.yanked == "broken"


_GOOD_FILE = {"filename": "x-1.0-py3-none-any.whl", "url": "https://h/x-1.0-py3-none-any.whl", "hashes": {}}


def _page(*files: Any, api: str = "1.1") -> bytes:
    return json.dumps({"meta": {"api-version": api}, "name": "x", "files": list(files)}).encode()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "not valid JSON"),
        (b'{"meta": {"api-version": "1.1"}, "files": [', "not valid JSON"),
        (b"\xff\xfe{}", "not valid JSON"),
        (b"[]", "expected a JSON object"),
        (b'{"files": []}', "api-version missing"),
        (_page(api="2.0"), "version 2.0 is not supported"),
        (json.dumps({"meta": {"api-version": "1.0"}, "files": {}}).encode(), "files: expected a list"),
        (_page("x"), r"files\[0\]: expected an object"),
        (_page({**_GOOD_FILE, "url": 5}), "url: expected a non-empty string"),
        (_page({**_GOOD_FILE, "filename": 7}), "not a plain file name"),
        (_page({**_GOOD_FILE, "hashes": []}), "hashes: expected an object"),
        (_page({**_GOOD_FILE, "yanked": 3}), "yanked: expected"),
        (_page({**_GOOD_FILE, "requires-python": 3.8}), "requires-python: expected a string"),
        (_page({**_GOOD_FILE, "core-metadata": "yes"}), "core-metadata: expected"),
        (_page({**_GOOD_FILE, "filename": "../../x-1.0-py3-none-any.whl"}), "not a plain file name"),
        (_page({**_GOOD_FILE, "filename": "sub/x-1.0-py3-none-any.whl"}), "not a plain file name"),
        (_page({**_GOOD_FILE, "filename": "sub\\x-1.0-py3-none-any.whl"}), "not a plain file name"),
        (_page({**_GOOD_FILE, "url": "file:///etc/passwd"}), "is not http"),
        (_page({**_GOOD_FILE, "url": "ftp://h/x.whl"}), "is not http"),
    ],
    ids=[
        "empty",
        "truncated",
        "not-utf8",
        "list",
        "no-meta",
        "api-2",
        "files-object",
        "file-string",
        "url-int",
        "filename-int",
        "hashes-list",
        "yanked-int",
        "requires-python-float",
        "core-metadata-string",
        "dotdot",
        "slash",
        "backslash",
        "file-scheme",
        "ftp-scheme",
    ],
)
def test_parse_simple_json_rejects(body: bytes, message: str) -> None:
    with pytest.raises(UpdateError, match=message):
        parse_simple_json(body, base_url="https://pypi.org/simple/x/")


@pytest.mark.parametrize(
    "anchor",
    [
        '<a href="https://h/a/b">../evil-1.0.tar.gz</a>',
        '<a href="https://h/evil-1.0.tar.gz">dir/evil-1.0.tar.gz</a>',
        '<a href="javascript:alert(1)">evil-1.0.tar.gz</a>',
    ],
    ids=["dotdot-text", "slash-text", "javascript-url"],
)
def test_parse_simple_html_rejects(anchor: str) -> None:
    with pytest.raises(UpdateError, match="refusing this index"):
        parse_simple_html(f"<html><body>{anchor}</body></html>".encode(), base_url="https://h/simple/evil/")


def test_parse_simple_html_refuses_unknown_major_version() -> None:
    page = b'<html><head><meta name="pypi:repository-version" content="2.0"></head></html>'
    with pytest.raises(UpdateError, match="not supported"):
        parse_simple_html(page)


def test_parse_simple_html_junk_gives_no_files() -> None:
    assert parse_simple_html(b"\x00\xff not html <<<") == []


def test_parse_core_metadata_captured_torch() -> None:
    meta = parse_core_metadata(fixture_bytes("metadata", TORCH_META))
    assert (meta.name, meta.version, meta.requires_python) == ("torch", "2.5.1", ">=3.8.0")
    assert CUDA_RUNTIME_PIN in meta.requires_dist
    assert len(meta.requires_dist) == 23


def test_parse_core_metadata_folded_and_missing() -> None:
    meta = parse_core_metadata(b"Name: x\nVersion: 1.0\nRequires-Dist: torch\n  (==2.5.1)\n\nbody: not a header\n")
    assert meta.requires_dist == ("torch (==2.5.1)",)
    assert meta.requires_python is None
    for junk, message in [(b"", "no Name or Version"), (b"Name: x\n", "no Name or Version")]:
        with pytest.raises(UpdateError, match=message):
            parse_core_metadata(junk)
    with pytest.raises(UpdateError, match="not a PEP 440 version"):
        parse_core_metadata(b"Name: x\nVersion: one\n")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("torch==2.7.0", True),
        ('xformers==0.0.30; platform_system == "Linux" and platform_machine == "x86_64"', True),
        (CUDA_RUNTIME_PIN, True),
        ("Triton (==3.1.0)", True),
        ("cuda-toolkit[cudart]==12.8.1", True),
        ("tensorrt_cu12_libs==10.3.0", True),
        ('jax-cuda12-plugin[with-cuda]<=0.4.35,>=0.4.35; extra == "cuda12"', True),
        ("jaxlib<=0.4.35,>=0.4.34", True),
        ("numpy>=1.26", False),
        ("torchmetrics", False),
        ("nvidia", False),
        ("", False),
    ],
)
def test_is_pin(line: str, expected: bool) -> None:
    assert is_pin(line) is expected


def test_release_records_from_captured_pages() -> None:
    torch_files = parse_simple_json(fixture_bytes("torch.simple.json"))
    meta = parse_core_metadata(fixture_bytes("metadata", TORCH_META))
    read = MetadataRead("https://h/t.whl.metadata", "torch-2.5.1-cp311-cp311-manylinux1_x86_64.whl", meta)
    records = release_records("torch", torch_files, {"2.5.1": read}, fetched=datetime.date(2026, 11, 30))
    rec = records["2.5.1"]
    assert rec.pins[0].startswith("nvidia-cuda-nvrtc-cu12 (==12.4.127)")
    assert CUDA_RUNTIME_PIN in rec.pins and len(rec.pins) == 13  # 12 nvidia-* and triton
    assert rec.python_tags == ("cp311", "cp313")
    assert rec.platforms == ("macosx_arm64", "manylinux_aarch64", "manylinux_x86_64", "win_amd64")
    assert (rec.abi3, rec.yanked, rec.metadata, rec.derived, rec.fetched) == (False, False, "read", True, "2026-11-30")

    vllm_files = parse_simple_json(fixture_bytes("vllm.simple.json"))
    records = release_records(
        "vllm",
        vllm_files,
        {"0.0.1": None, "0.2.1": None, "0.9.1": None, "9.9": None},
        fetched=datetime.date(2026, 1, 2),
    )
    assert set(records) == {"0.0.1", "0.2.1", "0.9.1"}  # 9.9 has no files
    assert (records["0.0.1"].metadata, records["0.0.1"].wheel, records["0.0.1"].platforms) == ("no-wheel", None, ())
    assert records["0.2.1"].yanked is True and records["0.2.1"].python_tags == ("cp310", "cp311")
    assert records["0.9.1"].abi3 is True and records["0.9.1"].metadata == "unavailable"
    assert records["0.9.1"].requires_python == "<3.13,>=3.9"  # from the index when no metadata was read


def test_release_records_refuses_metadata_of_another_release() -> None:
    files = parse_simple_json(fixture_bytes("vllm.simple.json"))
    wrong = MetadataRead("https://h/m", "w.whl", CoreMetadata("vllm", "0.9.1", None, ()))
    with pytest.raises(UpdateError, match=r"expected vllm 0\.9\.2"):
        release_records("vllm", files, {"0.9.2": wrong}, fetched=datetime.date(2026, 1, 1))


def test_default_cache_dir() -> None:
    assert default_cache_dir({"XDG_CACHE_HOME": "/x/cache", "HOME": "/h"}) == "/x/cache/cudadoctor"
    assert default_cache_dir({"XDG_CACHE_HOME": "relative", "HOME": "/h"}) == "/h/.cache/cudadoctor"
    assert default_cache_dir({"HOME": "/h"}) == "/h/.cache/cudadoctor"


def test_requests_is_not_imported_by_the_module() -> None:
    code = "import sys, cudadoctor.update; sys.exit('requests' in sys.modules)"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr


def test_reading_the_cache_loads_none_of_the_refresh_code(tmp_path: Any) -> None:
    """`check` reads the cache through data.indexed: requests and the fetching and parsing code never load."""
    code = """if True:
        import sys
        from cudadoctor.data.indexed import read_index_data
        data, warning = read_index_data(sys.argv[1])
        unwanted = ["requests", "cudadoctor.update.fetch", "cudadoctor.update.orchestrate",
                    "cudadoctor.update.index", "cudadoctor.update.metadata"]
        if data is None:
            unwanted.append("cudadoctor.update.cache")  # no cache file: not even the reader loads
        print(data is not None, warning, [m for m in unwanted if m in sys.modules])
    """
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    (tmp_path / "present").mkdir()
    (tmp_path / "present" / CACHE_FILE).write_text(json.dumps(_valid_doc()))
    for case, found in (("absent", False), ("present", True)):
        argv = [sys.executable, "-c", code, str(tmp_path / case)]
        proc = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=60, check=False)
        assert proc.stdout.split() == [str(found), "None", "[]"], (case, proc.stdout, proc.stderr)


def test_every_public_name_of_the_package_resolves() -> None:
    for name in update.__all__:
        assert getattr(update, name) is not None, name
    assert set(update.__all__) <= set(dir(update))
    with pytest.raises(AttributeError):
        update.no_such_name  # noqa: B018 - the lazy loader must refuse unknown names


# --- refresh against the local server -----------------------------------------------------------------


def test_refresh_success_json(server: IndexServer, fetcher: HttpFetcher, tmp_path: Any) -> None:
    server.serve_json("torch")
    server.serve_json("vllm")
    calls: list[tuple[int, int, str]] = []
    result = refresh(
        ["torch", "VLLM"],
        index=server.index,
        cache_dir=str(tmp_path),
        fetch=fetcher,
        progress=lambda done, total, label: calls.append((done, total, label)),
        now=lambda: DAY1,
    )
    doc = cache_doc(str(tmp_path))
    assert validate_index_document(doc) == []
    assert (doc["kind"], doc["schema_version"], doc["index"], doc["updated"]) == (
        "cudadoctor-index-data",
        1,
        server.index,
        "2026-11-30",
    )
    torch = doc["packages"]["torch"]["releases"]["2.5.1"]
    assert CUDA_RUNTIME_PIN in torch["pins"]
    assert torch["wheel"] == "torch-2.5.1-cp311-cp311-manylinux1_x86_64.whl"
    assert torch["metadata_url"] == server.base + server.metadata_path(torch["wheel"])
    vllm = doc["packages"]["vllm"]["releases"]
    assert list(vllm) == ["0.9.2", "0.9.1", "0.2.1", "0.0.1"]  # newest first
    assert vllm["0.9.2"]["pins"] == [
        "torch==2.7.0",
        "torchaudio==2.7.0",
        "torchvision==0.22.0",
        'xformers==0.0.30; platform_system == "Linux" and platform_machine == "x86_64"',
    ]
    assert vllm["0.9.2"]["requires_python"] == "<3.13,>=3.9" and vllm["0.9.2"]["abi3"] is True
    assert [vllm[v]["metadata"] for v in vllm] == ["read", "unavailable", "unavailable", "no-wheel"]

    # one metadata file per release, except where the best wheel's answered 404 (torch cp313, as on pypi.org)
    assert server.hits[server.metadata_path("torch-2.5.1-cp313-cp313-manylinux1_x86_64.whl")] == 1
    assert server.hits[server.metadata_path("torch-2.5.1-cp311-cp311-manylinux1_x86_64.whl")] == 1
    assert server.hits[server.metadata_path("torch-2.5.1-cp311-cp311-manylinux2014_aarch64.whl")] == 0
    assert server.accepts["/simple/torch/"] == ACCEPT_INDEX
    assert result.requests == sum(server.hits.values())
    assert {p.name: (p.found, p.releases, p.new, p.unavailable) for p in result.packages} == {
        "torch": (True, 1, 1, 0),
        "vllm": (True, 4, 4, 2),
    }
    assert result.cache_path == os.path.join(str(tmp_path), CACHE_FILE)
    assert os.listdir(tmp_path) == [CACHE_FILE]

    # progress: starts at 0, never goes back, ends complete; total grows once metadata is planned
    assert calls[0][:2] == (0, 2)
    assert all(a[0] <= b[0] for a, b in itertools.pairwise(calls))
    assert calls[-1][0] == calls[-1][1] == 2 + 4  # 2 pages, torch 2.5.1 and vllm 0.9.2 / 0.9.1 / 0.2.1

    data, warning = load_cache(str(tmp_path))
    assert warning is None and data is not None
    assert data.packages["vllm"]["0.9.2"].pins == tuple(vllm["0.9.2"]["pins"])
    assert data.updated == datetime.date(2026, 11, 30)


def test_refresh_html_only_mirror_gives_the_same_records(
    server: IndexServer, fetcher: HttpFetcher, tmp_path: Any
) -> None:
    server.serve_json("vllm")
    refresh(["vllm"], index=server.index, cache_dir=str(tmp_path / "json"), fetch=fetcher, now=lambda: DAY1)
    server.serve_html("vllm")
    refresh(["vllm"], index=server.index, cache_dir=str(tmp_path / "html"), fetch=fetcher, now=lambda: DAY1)
    assert cache_bytes(str(tmp_path / "json")) == cache_bytes(str(tmp_path / "html"))


def test_refresh_is_incremental(server: IndexServer, fetcher: HttpFetcher, tmp_path: Any) -> None:
    server.serve_json("torch")
    server.serve_json("vllm", keep=no_092)
    refresh(["torch", "vllm"], index=server.index, cache_dir=str(tmp_path), fetch=fetcher, now=lambda: DAY1)
    first = dict(server.hits)
    assert "0.9.2" not in cache_doc(str(tmp_path))["packages"]["vllm"]["releases"]

    server.serve_json("vllm")  # 0.9.2 is out
    result = refresh(["torch", "vllm"], index=server.index, cache_dir=str(tmp_path), fetch=fetcher, now=lambda: DAY2)
    second = {path: n - first.get(path, 0) for path, n in server.hits.items() if n - first.get(path, 0)}
    assert second == {
        "/simple/torch/": 1,
        "/simple/vllm/": 1,
        server.metadata_path("vllm-0.9.2-cp38-abi3-manylinux1_x86_64.whl"): 1,  # the new release
        # releases without metadata last time are tried again; torch 2.5.1 (read) is not
        server.metadata_path("vllm-0.9.1-cp38-abi3-manylinux1_x86_64.whl"): 1,
        server.metadata_path("vllm-0.2.1-cp311-cp311-manylinux1_x86_64.whl"): 1,
        server.metadata_path("vllm-0.2.1-cp310-cp310-manylinux1_x86_64.whl"): 1,
    }
    doc = cache_doc(str(tmp_path))
    assert doc["updated"] == "2026-12-01"
    assert doc["packages"]["torch"]["releases"]["2.5.1"]["fetched"] == "2026-11-30"  # kept from the first run
    assert doc["packages"]["vllm"]["releases"]["0.9.2"]["fetched"] == "2026-12-01"
    # 0.9.1 and 0.2.1 were re-read and are still without metadata: not news; 0.9.2 is.
    assert {p.name: p.new for p in result.packages} == {"torch": 0, "vllm": 1}


def test_refresh_limit_keeps_the_newest(server: IndexServer, fetcher: HttpFetcher, tmp_path: Any) -> None:
    server.serve_json("vllm")
    refresh(["vllm"], index=server.index, cache_dir=str(tmp_path), fetch=fetcher, limit=2, now=lambda: DAY1)
    assert list(cache_doc(str(tmp_path))["packages"]["vllm"]["releases"]) == ["0.9.2", "0.9.1"]


def test_refresh_missing_package_is_reported_not_fatal(
    server: IndexServer, fetcher: HttpFetcher, tmp_path: Any
) -> None:
    server.serve_json("torch")
    result = refresh(["torch", "no-such-wheel"], index=server.index, cache_dir=str(tmp_path), fetch=fetcher)
    assert {p.name: p.found for p in result.packages} == {"torch": True, "no-such-wheel": False}
    assert server.hits["/simple/no-such-wheel/"] == 1  # 404 is not retried
    assert list(cache_doc(str(tmp_path))["packages"]) == ["torch"]


def test_refresh_with_credentials_never_stores_or_shows_them(
    server: IndexServer, fetcher: HttpFetcher, tmp_path: Any
) -> None:
    server.serve_json("torch")
    index = server.index.replace("http://", "http://alice:s3cret@")
    refresh(["torch"], index=index, cache_dir=str(tmp_path), fetch=fetcher, now=lambda: DAY1)
    assert server.auth[0] == "Basic " + base64.b64encode(b"alice:s3cret").decode()
    raw = cache_bytes(str(tmp_path))
    assert b"s3cret" not in raw and b"alice" not in raw
    assert cache_doc(str(tmp_path))["index"] == server.index.replace("http://", "http://****@")
    with pytest.raises(UpdateError) as info:
        refresh(["nothing-here"], index=index, cache_dir=str(tmp_path), fetch=fetcher)
    assert "s3cret" not in str(info.value) and "****@" in str(info.value)


def test_refresh_with_the_default_fetcher(server: IndexServer, tmp_path: Any) -> None:
    server.serve_json("torch")
    result = refresh(["torch"], index=server.index, cache_dir=str(tmp_path), now=lambda: DAY1)
    assert result.packages[0].new == 1


def test_refresh_starts_afresh_over_a_corrupt_cache(server: IndexServer, fetcher: HttpFetcher, tmp_path: Any) -> None:
    (tmp_path / CACHE_FILE).write_text("{not json")
    server.serve_json("torch")
    result = refresh(["torch"], index=server.index, cache_dir=str(tmp_path), fetch=fetcher)
    assert any("not valid JSON" in w for w in result.warnings)
    assert validate_index_document(cache_doc(str(tmp_path))) == []


@pytest.mark.parametrize(
    ("index", "packages", "message"),
    [
        ("file:///srv/simple/", ["torch"], "not an http"),
        ("https://pypi.org/simple/", ["bad name!"], "not a package name"),
        ("https://pypi.org/simple/", [], "no packages"),
    ],
    ids=["file-index", "bad-name", "no-packages"],
)
def test_refresh_refuses_bad_arguments_before_any_request(
    index: str, packages: list[str], message: str, tmp_path: Any
) -> None:
    def fetch(url: str, *, accept: str) -> bytes:
        raise AssertionError("no request expected")

    with pytest.raises(UpdateError, match=message):
        refresh(packages, index=index, cache_dir=str(tmp_path), fetch=fetch)


# --- failures: the previous cache stays byte for byte -------------------------------------------------


def _json_route(doc: Any) -> Route:
    return reply(json.dumps(doc).encode(), ctype="application/vnd.pypi.simple.v1+json")


def _vllm_doc(server: IndexServer, **changes: Any) -> dict[str, Any]:
    doc = json.loads(server.local(json.dumps(fixture_json("vllm.simple.json"))))
    doc["files"][-1].update(changes)
    return doc


VLLM_092 = "vllm-0.9.2-cp38-abi3-manylinux1_x86_64.whl"

# name -> (break the server, expected message, {path: expected hits in the failing run})
Breaker = Callable[[IndexServer, HttpFetcher], None]


def _index(route: Callable[[IndexServer], Route]) -> Breaker:
    def apply(server: IndexServer, fetcher: HttpFetcher) -> None:
        server.routes["/simple/vllm/"] = route(server)

    return apply


def _new_release_metadata(route: Callable[[IndexServer], Route]) -> Breaker:
    def apply(server: IndexServer, fetcher: HttpFetcher) -> None:
        server.serve_json("vllm")
        server.routes[server.metadata_path(VLLM_092)] = route(server)

    return apply


def _short_timeout(server: IndexServer, fetcher: HttpFetcher) -> None:
    fetcher.timeout = (0.3, 0.3)
    fetcher.retries = 1
    server.routes["/simple/vllm/"] = slow(1.0, reply(b"{}"))


def _small_cap(server: IndexServer, fetcher: HttpFetcher) -> None:
    fetcher.index_limit = 1 << 20
    server.routes["/simple/vllm/"] = endless(4)


def _small_cap_declared(server: IndexServer, fetcher: HttpFetcher) -> None:
    fetcher.index_limit = 1 << 20
    server.routes["/simple/vllm/"] = endless(4, declare=True)


def _hash_mismatch(server: IndexServer, fetcher: HttpFetcher) -> None:
    server.serve_json("vllm", file_changes={VLLM_092: {"core-metadata": {"sha256": "0" * 64}}})


FAILURES: dict[str, tuple[Breaker, str, dict[str, int]]] = {
    "index-404-everywhere": (_index(lambda s: reply(b"", 404)), "none of the 2 package", {"/simple/vllm/": 1}),
    "index-500": (_index(lambda s: reply(b"oops", 500)), "HTTP 500 \\(after 4 attempts\\)", {"/simple/vllm/": 4}),
    "index-503-retry-after": (
        _index(lambda s: reply(b"", 503, Retry_After="0")),
        "HTTP 503 \\(after 4 attempts\\)",
        {"/simple/vllm/": 4},
    ),
    "index-429": (_index(lambda s: reply(b"", 429)), "HTTP 429", {"/simple/vllm/": 4}),
    "index-401": (
        _index(lambda s: reply(b"", 401)),
        "HTTP 401 \\(the index wants credentials\\)",
        {"/simple/vllm/": 1},
    ),
    "index-timeout": (_short_timeout, "timed out \\(after 2 attempts\\)", {"/simple/vllm/": 2}),
    "index-truncated": (
        _index(lambda s: truncated(s.local(fixture_bytes("vllm.simple.json").decode()).encode())),
        "(cut off|connection broke).*after 4 attempts",
        {"/simple/vllm/": 4},
    ),
    "index-huge-streamed": (_small_cap, "larger than the 1 MiB allowed", {"/simple/vllm/": 1}),
    "index-huge-declared": (_small_cap_declared, "more than the 1 MiB allowed", {"/simple/vllm/": 1}),
    "index-invalid-json": (
        _index(lambda s: reply(b'{"meta": {"api-version": "1.1"}, "files": [{', ctype="application/json")),
        "not valid JSON",
        {"/simple/vllm/": 1},
    ),
    "index-wrong-types": (
        _index(lambda s: _json_route({"meta": {"api-version": "1.1"}, "files": [{"filename": "x.whl", "url": 5}]})),
        "url: expected a non-empty string",
        {},
    ),
    "index-path-separator": (
        _index(lambda s: _json_route(_vllm_doc(s, filename="../../../evil-0.9.2-py3-none-any.whl"))),
        "not a plain file name",
        {},
    ),
    "index-file-scheme": (
        _index(lambda s: _json_route(_vllm_doc(s, url="file:///etc/passwd"))),
        "is not http",
        {},
    ),
    "index-html-path-separator": (
        _index(lambda s: reply(b'<a href="/x">..\\evil-1.0.tar.gz</a>', ctype="text/html")),
        "not a plain file name",
        {},
    ),
    "metadata-500": (
        _new_release_metadata(lambda s: reply(b"", 500)),
        "HTTP 500 \\(after 4 attempts\\)",
        {"/simple/vllm/": 1},
    ),
    "metadata-truncated": (
        _new_release_metadata(lambda s: truncated(fixture_bytes("metadata", VLLM_META))),
        "after 4 attempts",
        {},
    ),
    "metadata-huge": (_new_release_metadata(lambda s: endless(3)), "larger than the 1 MiB allowed", {}),
    "metadata-of-another-project": (
        _new_release_metadata(lambda s: reply(fixture_bytes("metadata", TORCH_META))),
        "metadata names torch 2.5.1, expected vllm 0.9.2",
        {},
    ),
    "metadata-not-metadata": (
        _new_release_metadata(lambda s: reply(b"<html>login</html>")),
        "no Name or Version header",
        {},
    ),
    "metadata-hash-mismatch": (_hash_mismatch, "does not match its sha256", {}),
}


@pytest.mark.parametrize("case", list(FAILURES))
def test_failure_leaves_the_previous_cache_intact(
    case: str, server: IndexServer, fetcher: HttpFetcher, sleeps: list[float], tmp_path: Any
) -> None:
    breaker, message, expected_hits = FAILURES[case]
    server.serve_json("torch")
    server.serve_json("vllm", keep=no_092)
    refresh(["torch", "vllm"], index=server.index, cache_dir=str(tmp_path), fetch=fetcher, now=lambda: DAY1)
    before = cache_bytes(str(tmp_path))
    if case == "index-404-everywhere":
        server.routes.pop("/simple/torch/")
    breaker(server, fetcher)
    server.hits.clear()
    sleeps.clear()

    with pytest.raises(UpdateError, match=message) as info:
        refresh(["torch", "vllm"], index=server.index, cache_dir=str(tmp_path), fetch=fetcher, now=lambda: DAY2)

    assert "\n" not in str(info.value)
    assert cache_bytes(str(tmp_path)) == before
    assert os.listdir(tmp_path) == [CACHE_FILE]  # no temporary file left behind
    for path, hits in expected_hits.items():
        assert server.hits[path] == hits, path
    if expected_hits.get("/simple/vllm/") == 4:
        wanted = [0.0] * 3 if case == "index-503-retry-after" else [0.5, 1.0, 2.0]  # exponential backoff
        assert sleeps == wanted


def test_write_failure_leaves_the_previous_cache_intact(
    server: IndexServer, fetcher: HttpFetcher, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.serve_json("torch")
    refresh(["torch"], index=server.index, cache_dir=str(tmp_path), fetch=fetcher, now=lambda: DAY1)
    before = cache_bytes(str(tmp_path))

    def fail(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(UpdateError, match="No space left on device"):
        refresh(["torch"], index=server.index, cache_dir=str(tmp_path), fetch=fetcher, now=lambda: DAY2)
    assert cache_bytes(str(tmp_path)) == before
    assert os.listdir(tmp_path) == [CACHE_FILE]


def test_cache_dir_that_is_a_file(server: IndexServer, fetcher: HttpFetcher, tmp_path: Any) -> None:
    server.serve_json("torch")
    blocker = tmp_path / "cache"
    blocker.write_text("not a directory")
    with pytest.raises(UpdateError, match="cannot write the cache"):
        refresh(["torch"], index=server.index, cache_dir=str(blocker), fetch=fetcher)
    assert blocker.read_text() == "not a directory"


def test_fetch_error_is_raised_for_404_without_retry(server: IndexServer, fetcher: HttpFetcher) -> None:
    with pytest.raises(FetchError) as info:
        fetcher(server.base + "/nothing", accept=ACCEPT_INDEX)
    assert info.value.status == 404
    assert server.hits["/nothing"] == 1


def test_metadata_hash_is_checked_when_declared(server: IndexServer, fetcher: HttpFetcher, tmp_path: Any) -> None:
    digest = hashlib.sha256(fixture_bytes("metadata", VLLM_META)).hexdigest()
    server.serve_json("vllm", file_changes={VLLM_092: {"core-metadata": {"sha256": digest}}})
    refresh(["vllm"], index=server.index, cache_dir=str(tmp_path), fetch=fetcher, now=lambda: DAY1)
    assert cache_doc(str(tmp_path))["packages"]["vllm"]["releases"]["0.9.2"]["metadata"] == "read"


def test_metadata_declared_absent_is_not_requested(server: IndexServer, fetcher: HttpFetcher, tmp_path: Any) -> None:
    server.serve_json("vllm", file_changes={VLLM_092: {"core-metadata": False}})
    refresh(["vllm"], index=server.index, cache_dir=str(tmp_path), fetch=fetcher, now=lambda: DAY1)
    assert server.hits[server.metadata_path(VLLM_092)] == 0
    assert cache_doc(str(tmp_path))["packages"]["vllm"]["releases"]["0.9.2"]["metadata"] == "unavailable"


# --- load_cache ---------------------------------------------------------------------------------------


def _valid_doc() -> dict[str, Any]:
    record = {
        "version": "2.5.1",
        "requires_python": ">=3.8.0",
        "pins": [CUDA_RUNTIME_PIN],
        "python_tags": ["cp311"],
        "abi3": False,
        "platforms": ["manylinux_x86_64"],
        "yanked": False,
        "wheel": "torch-2.5.1-cp311-cp311-manylinux1_x86_64.whl",
        "metadata": "read",
        "metadata_url": "https://files.example/torch.whl.metadata",
        "fetched": "2026-11-30",
        "derived": True,
    }
    return {
        "kind": "cudadoctor-index-data",
        "schema_version": 1,
        "index": "https://pypi.org/simple/",
        "updated": "2026-11-30",
        "packages": {"torch": {"releases": {"2.5.1": record}}},
    }


def _broken(path: str, value: Any) -> dict[str, Any]:
    doc = _valid_doc()
    *parents, last = path.split(".")
    target: Any = doc
    for part in parents:
        target = target[part]
    if value is KeyError:
        del target[last]
    else:
        target[last] = value
    return doc


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (_broken("kind", "something-else"), "kind"),
        (_broken("schema_version", 2), "schema_version"),
        (_broken("schema_version", True), "schema_version"),
        (_broken("index", "https://u:p@pypi.org/simple/"), "index"),
        (_broken("updated", "yesterday"), "updated"),
        (_broken("packages", []), "packages"),
        (_broken("extra", 1), "extra: unknown field"),
        ({**_valid_doc(), "packages": {"Torch": {"releases": {}}}}, "not a canonical project name"),
        ({**_valid_doc(), "packages": {"torch": {"releases": {"two": {}}}}}, "not a PEP 440 version"),
        ({**_valid_doc(), "packages": {"torch": {"releases": {"2.05": {}}}}}, "not normalized"),
    ],
    ids=[
        "kind",
        "schema-2",
        "schema-bool",
        "credentials",
        "date",
        "packages-list",
        "unknown-top",
        "name",
        "version",
        "normalized",
    ],
)
def test_validate_index_document_problems(doc: dict[str, Any], message: str) -> None:
    problems = validate_index_document(doc)
    assert problems and any(message in p for p in problems), problems


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("pins", ["numpy>=1"], "pins"),
        ("pins", "torch==2.5.1", "pins"),
        ("python_tags", ["cp3 11"], "python_tags"),
        ("abi3", "no", "abi3"),
        ("derived", False, "derived"),
        ("metadata", "maybe", "metadata"),
        ("metadata_url", "file:///etc/passwd", "metadata_url"),
        ("metadata_url", "https://u:p@h/m", "metadata_url"),
        ("wheel", "../x.whl", "wheel"),
        ("fetched", "2026-13-01", "fetched"),
        ("version", "2.5.0", "differs from its key"),
        ("requires_python", 3, "requires_python"),
        ("surprise", 1, "unknown field"),
    ],
)
def test_validate_index_document_record_problems(field: str, value: Any, message: str) -> None:
    doc = _valid_doc()
    doc["packages"]["torch"]["releases"]["2.5.1"][field] = value
    problems = validate_index_document(doc)
    assert any(message in p for p in problems), problems


def test_validate_index_document_accepts_the_valid_one() -> None:
    assert validate_index_document(_valid_doc()) == []


@pytest.mark.parametrize(
    "content",
    [b"", b"{", b"[]", b"\xff\xfe", json.dumps(_broken("schema_version", 99)).encode(), b"[" * 100000 + b"]" * 100000],
    ids=["empty", "cut", "list", "binary", "future-schema", "deep-nesting"],
)
def test_load_cache_tolerates_a_corrupt_cache(content: bytes, tmp_path: Any) -> None:
    (tmp_path / CACHE_FILE).write_bytes(content)
    data, warning = load_cache(str(tmp_path))
    assert data is None
    assert warning and str(tmp_path) in warning and "cudadoctor update" in warning


def test_load_cache_absent_and_unreadable(tmp_path: Any) -> None:
    assert load_cache(str(tmp_path / "nowhere")) == (None, None)
    (tmp_path / CACHE_FILE).mkdir()
    data, warning = load_cache(str(tmp_path))
    assert data is None and warning and "cannot read" in warning


def test_load_cache_round_trip(tmp_path: Any) -> None:
    (tmp_path / CACHE_FILE).write_text(json.dumps(_valid_doc()))
    data, warning = load_cache(str(tmp_path))
    assert warning is None and data is not None
    assert data.index == "https://pypi.org/simple/"
    assert data.packages["torch"]["2.5.1"].to_json() == _valid_doc()["packages"]["torch"]["releases"]["2.5.1"]


def test_the_loopback_guard_refuses_other_hosts() -> None:
    with socket.socket() as sock, pytest.raises(AssertionError, match="tried to connect"):
        sock.connect(("192.0.2.1", 443))  # TEST-NET-1: refused by the guard before any packet


# --- the command line -------------------------------------------------------------------------------


def test_cli_update_against_a_local_index(server: IndexServer, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from cudadoctor.cli import app

    server.serve_json("vllm")
    monkeypatch.setenv("PIP_INDEX_URL", f"http://user:s3cret@127.0.0.1:{server.httpd.server_address[1]}/simple/")
    result = CliRunner().invoke(app, ["update", "vllm", "--cache-dir", str(tmp_path), "--limit", "3"])
    assert result.exit_code == 0, result.output
    assert "new release record(s)" in result.stdout
    assert "s3cret" not in result.stdout + result.stderr
    assert cache_doc(str(tmp_path))["packages"]["vllm"]["releases"]


def test_cli_update_failure_is_one_line_and_keeps_the_cache(server: IndexServer, tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from cudadoctor.cli import app

    server.serve_json("vllm")
    runner = CliRunner()
    assert (
        runner.invoke(app, ["update", "vllm", "--cache-dir", str(tmp_path), "--index-url", server.index]).exit_code == 0
    )
    before = cache_bytes(str(tmp_path))
    server.routes["/simple/vllm/"] = reply(b"{not json", ctype="application/vnd.pypi.simple.v1+json")
    result = runner.invoke(app, ["update", "vllm", "--cache-dir", str(tmp_path), "--index-url", server.index])
    assert result.exit_code == 3
    errors = [line for line in result.stderr.splitlines() if line.startswith("cudadoctor: error:")]
    assert len(errors) == 1 and "not valid JSON" in errors[0] and "Traceback" not in result.stderr
    assert cache_bytes(str(tmp_path)) == before


def test_cli_update_of_an_unknown_package_is_a_usage_error(server: IndexServer, tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from cudadoctor.cli import app

    result = CliRunner().invoke(app, ["update", "trch", "--cache-dir", str(tmp_path), "--index-url", server.index])
    assert result.exit_code == 2, result.output
    assert "did you mean 'torch'?" in result.stderr
    assert not os.path.exists(os.path.join(str(tmp_path), CACHE_FILE))


def test_cli_update_names_a_missing_package_among_found_ones(server: IndexServer, tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from cudadoctor.cli import app

    server.serve_json("vllm")
    args = ["update", "vllm", "vlm", "--cache-dir", str(tmp_path), "--index-url", server.index, "--limit", "3"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "vlm: not on" in result.stderr and "did you mean 'vllm'?" in result.stderr
    assert cache_doc(str(tmp_path))["packages"]["vllm"]["releases"]  # what was found is kept


def test_cli_update_repeated_says_nothing_changed(server: IndexServer, tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from cudadoctor.cli import app

    server.serve_json("vllm")
    args = ["update", "vllm", "--cache-dir", str(tmp_path), "--index-url", server.index, "--limit", "5"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0 and "new release record(s)" in first.stdout, first.output
    second = CliRunner().invoke(app, args)
    assert second.exit_code == 0, second.output
    assert "nothing changed" in second.stdout and "new release record" not in second.stdout


def test_refresh_runs_a_small_pool_of_requests_at_once(server: IndexServer, tmp_path: Any) -> None:
    import inspect

    server.serve_json("vllm")
    seen: list[tuple[int, int]] = []
    result = refresh(
        ["vllm"], index=server.index, cache_dir=str(tmp_path), limit=5, progress=lambda d, t, _l: seen.append((d, t))
    )
    done = [d for d, _ in seen]
    assert result.new and done == sorted(done) and seen[-1][0] == seen[-1][1] > 1  # progress up to all tasks
    assert inspect.signature(refresh).parameters["workers"].default == 4


@pytest.mark.parametrize(
    "body",
    [b'<html><body><a href="' + b"x" * (1 << 20), b"<html><!-- " + b"y" * (1 << 20), b"<p>" * 30_000],
    ids=["unterminated-tag", "endless-comment", "no-link"],
)
def test_a_large_page_without_a_file_is_not_no_such_package(body: bytes, tmp_path: Any) -> None:
    """Issue #27: megabytes in which the parser finds no link were "none of the 1 package(s) were found on …"; a
    real project page without files is a few hundred bytes. One bounded line says what came back instead."""

    def fetch(url: str, *, accept: str) -> bytes:
        return body

    with pytest.raises(UpdateError, match="without a single file link") as info:
        refresh(["torch"], index="https://pypi.org/simple/", cache_dir=str(tmp_path), fetch=fetch)
    assert len(str(info.value)) < 300 and "found" not in str(info.value)
    empty = b"<!DOCTYPE html><html><head><title>Links for nothing</title></head><body></body></html>"
    with pytest.raises(UpdateError, match="none of the 1 package"):  # a real empty page still is "not found"
        refresh(["torch"], index="https://pypi.org/simple/", cache_dir=str(tmp_path), fetch=lambda u, accept: empty)
