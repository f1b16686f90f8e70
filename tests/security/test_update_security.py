"""``cudadoctor update``: credentials of the index URL are never printed, and nothing is written
outside the cache directory.

Against the local index server of tests/test_update.py (127.0.0.1 only; its loopback guard is used
here too). What tests/test_update.py already covers is not repeated: the parsers' refusal of unsafe
file names, and the previous cache left byte for byte after each kind of failure inside the cache
directory. Added here: index URLs whose credentials urlsplit cannot see (an unencoded ``/``, ``#``
or ``@`` in the password), every outcome and every place the URL can come from, a real child
process; the whole directory *around* the cache checked after hostile pages; a cache file or
directory that is a symbolic link; an interrupt while writing.
"""

# ruff: noqa: S105 - every "password" here is a planted fake, looked for in the output

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cudadoctor import update
from cudadoctor.cli import app
from cudadoctor.update import CACHE_FILE, UpdateError, orchestrate, refresh, validate_index_document
from tests.test_update import (  # the server and the no-internet guard of the update tests
    IndexServer,
    _loopback_only,  # noqa: F401 - an autouse fixture, active in this module once imported
    fixture_json,
    reply,
)

pytestmark = pytest.mark.slow  # child processes against a local index server

REPO = Path(__file__).resolve().parents[2]

#: index URL shapes; {pw} is the secret, {host} the server
SHAPES = {
    "user-password": "http://alice:{pw}@{host}/simple/",
    "at-in-password": "http://alice:{pw}@x@{host}/simple/",
    "slash-in-password": "http://alice:{pw}/x@{host}/simple/",
    "hash-in-password": "http://alice:{pw}#x@{host}/simple/",
    "percent-encoded": "http://alice:{pw}%2Fx%40y@{host}/simple/",
    "token-as-user": "http://{pw}@{host}/simple/",
    "token-in-query": "http://{host}/simple/?token={pw}",
}
OUTCOMES = ("ok", "401", "not-found", "refused", "bad-json")
SECRET = "PLANTEDindexpw"


@pytest.fixture
def server() -> Iterator[IndexServer]:
    srv = IndexServer()
    try:
        yield srv
    finally:
        srv.close()


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's own HTTP client, without retries (a refused connection fails at once)."""

    class Quick(update.HttpFetcher):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(timeout=(2.0, 2.0), retries=0, **kwargs)

    monkeypatch.setattr(orchestrate, "HttpFetcher", Quick)


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PIP_INDEX_URL", "PIP_CONFIG_FILE", "VIRTUAL_ENV", "XDG_CONFIG_HOME", "CUDADOCTOR_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "no-xdg"))


def _serve(server: IndexServer, outcome: str) -> str:
    """Set the server up for ``outcome``; the host:port to put in the URL."""
    if outcome == "ok":
        server.serve_json("vllm")
    elif outcome == "401":
        server.routes["/simple/vllm/"] = reply(b"", 401)
    elif outcome == "bad-json":
        server.routes["/simple/vllm/"] = reply(b"{not json", ctype="application/vnd.pypi.simple.v1+json")
    elif outcome == "refused":
        import socket

        with socket.socket() as sock:  # a port nothing listens on
            sock.bind(("127.0.0.1", 0))
            return f"127.0.0.1:{sock.getsockname()[1]}"
    return f"127.0.0.1:{server.httpd.server_address[1]}"


def _assert_no_credentials(stdout: str, stderr: str, cache_dir: Path) -> None:
    assert SECRET not in stdout + stderr
    assert "Traceback" not in stderr
    cache = cache_dir / CACHE_FILE
    if cache.exists():
        assert SECRET.encode() not in cache.read_bytes()


@pytest.mark.usefixtures("quick", "clean_env")
@pytest.mark.parametrize("outcome", OUTCOMES)
@pytest.mark.parametrize("shape", list(SHAPES))
def test_update_never_prints_index_credentials(
    shape: str, outcome: str, server: IndexServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = SHAPES[shape].format(pw=SECRET, host=_serve(server, outcome))
    monkeypatch.setenv("PIP_INDEX_URL", url)
    result = CliRunner().invoke(app, ["update", "vllm", "--cache-dir", str(tmp_path / "cache"), "--limit", "2"])
    assert result.exit_code in (0, 3), result.output
    _assert_no_credentials(result.stdout, result.stderr, tmp_path / "cache")
    if shape != "token-in-query":
        assert "****@" in result.stderr  # the index is named, masked
    if result.exit_code == 3:
        assert len([line for line in result.stderr.splitlines() if "error" in line]) == 1


@pytest.mark.usefixtures("quick", "clean_env")
@pytest.mark.parametrize("source", ["--index-url", "PIP_INDEX_URL", "PIP_CONFIG_FILE", "user pip.conf"])
@pytest.mark.parametrize("outcome", ["ok", "401"])
def test_every_source_of_the_index_url_is_masked(
    source: str, outcome: str, server: IndexServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = SHAPES["slash-in-password"].format(pw=SECRET, host=_serve(server, outcome))
    url = url.replace(f"{SECRET}/x", SECRET)  # a URL requests can use: the outcome really happens
    args = ["update", "vllm", "--cache-dir", str(tmp_path / "cache"), "--limit", "2"]
    if source == "--index-url":
        args += ["--index-url", url]
    elif source == "PIP_INDEX_URL":
        monkeypatch.setenv("PIP_INDEX_URL", url)
    else:
        conf = (
            tmp_path / "home" / ".config" / "pip" / "pip.conf" if source == "user pip.conf" else tmp_path / "pip.conf"
        )
        conf.parent.mkdir(parents=True, exist_ok=True)
        conf.write_text(f"[global]\nindex-url = {url}\n")
        if source == "PIP_CONFIG_FILE":
            monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    result = CliRunner().invoke(app, args)
    assert result.exit_code == (0 if outcome == "ok" else 3), result.output
    _assert_no_credentials(result.stdout, result.stderr, tmp_path / "cache")
    assert "****@127.0.0.1" in result.stderr
    assert (server.auth[0] or "").startswith("Basic ")  # the index page was asked for with the credentials


@pytest.mark.parametrize("shape", ["user-password", "slash-in-password", "at-in-password"])
def test_update_in_a_child_process_prints_no_credentials(shape: str, server: IndexServer, tmp_path: Path) -> None:
    """What a terminal or a CI log really gets: ``python -m cudadoctor update``, stdout and stderr."""
    url = SHAPES[shape].format(pw=SECRET, host=_serve(server, "ok"))
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "CUDADOCTOR", "HTTP", "HTTPS", "ALL_PROXY"))
    }
    env |= {"PIP_INDEX_URL": url, "PIP_CONFIG_FILE": os.devnull, "NO_PROXY": "127.0.0.1", "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-m", "cudadoctor", "update", "vllm", "--cache-dir", str(tmp_path / "cache"), "--limit", "2"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode in (0, 3), proc.stderr
    _assert_no_credentials(proc.stdout, proc.stderr, tmp_path / "cache")
    assert "****@127.0.0.1" in proc.stderr


# --- nothing is written outside the cache directory -------------------------------------------------


def tree_state(top: Path) -> dict[str, Any]:
    """Every entry under ``top`` (links not followed): its kind and content or target."""
    state: dict[str, Any] = {}
    for directory, dirs, files in os.walk(top):
        for name in dirs + files:
            path = Path(directory) / name
            rel = str(path.relative_to(top))
            if path.is_symlink():
                state[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                state[rel] = ("dir",)
            else:
                state[rel] = ("file", path.read_bytes(), path.stat().st_mode)
    return state


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    """A directory around the cache holding files an escaping write could hit."""
    top = tmp_path / "sandbox"
    (top / "cache").mkdir(parents=True)
    (top / "victim.txt").write_text("precious\n")
    (top / "elsewhere").mkdir()
    (top / "elsewhere" / "keep.txt").write_text("also precious\n")
    return top


def _page(server: IndexServer, **changes: Any) -> bytes:
    doc = json.loads(server.local(json.dumps(fixture_json("vllm.simple.json"))))
    doc["files"][-1].update(changes)
    return json.dumps(doc).encode()


HOSTILE = {
    "dotdot-name": lambda s: (_page(s, filename="../../victim.txt"), "application/vnd.pypi.simple.v1+json"),
    "absolute-name": lambda s: (
        _page(s, filename="/tmp/evil-0.9.2-py3-none-any.whl"),
        "application/vnd.pypi.simple.v1+json",
    ),
    "nul-in-name": lambda s: (_page(s, filename="vllm-0.9.2\x00.whl"), "application/vnd.pypi.simple.v1+json"),
    "html-encoded-dotdot-url": lambda s: (b'<a href="/files/%2E%2E%2F%2E%2E%2Fvictim.txt"></a>', "text/html"),
    "html-backslash-text": lambda s: (b'<a href="/x/evil-1.0.tar.gz">..\\..\\victim.txt</a>', "text/html"),
    "html-absolute-text": lambda s: (b'<a href="/x/evil-1.0.tar.gz">/etc/evil-1.0.tar.gz</a>', "text/html"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_index_pages_write_nothing_anywhere(case: str, server: IndexServer, sandbox: Path) -> None:
    cache = sandbox / "cache"
    server.serve_json("vllm")
    refresh(["vllm"], index=server.index, cache_dir=str(cache), limit=2)
    before = tree_state(sandbox)
    body, ctype = HOSTILE[case](server)
    server.routes["/simple/vllm/"] = reply(body, ctype=ctype)
    with pytest.raises(UpdateError, match="refusing this index"):
        refresh(["vllm"], index=server.index, cache_dir=str(cache), limit=2)
    assert tree_state(sandbox) == before


@pytest.mark.parametrize(
    "names", [["../victim"], ["/etc/passwd"], ["vllm/../../victim"], ["a\\b"], ["."], [""]], ids=str
)
def test_package_names_that_are_paths_are_refused_before_any_request(
    names: list[str], server: IndexServer, sandbox: Path
) -> None:
    before = tree_state(sandbox)
    with pytest.raises(UpdateError, match="not a package name"):
        refresh(names, index=server.index, cache_dir=str(sandbox / "cache"))
    assert server.hits == {} and tree_state(sandbox) == before


def test_index_urls_with_dot_segments_only_touch_the_cache_file(server: IndexServer, sandbox: Path) -> None:
    """Odd but acceptable pages (URLs climbing out of the index, a file named like the cache) still
    write nothing but the cache file."""
    server.serve_json("vllm")
    doc = json.loads(_page(server))
    doc["files"].append({**doc["files"][-1], "filename": CACHE_FILE, "url": server.base + "/a/../../../victim.txt"})
    server.routes["/simple/vllm/"] = reply(json.dumps(doc).encode(), ctype="application/vnd.pypi.simple.v1+json")
    before = tree_state(sandbox)
    refresh(["vllm"], index=server.index, cache_dir=str(sandbox / "cache"), limit=2)
    after = tree_state(sandbox)
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    assert changed == {f"cache/{CACHE_FILE}"}
    assert validate_index_document(json.loads((sandbox / "cache" / CACHE_FILE).read_bytes())) == []


def test_a_cache_file_that_is_a_symlink_is_replaced_not_followed(server: IndexServer, sandbox: Path) -> None:
    link = sandbox / "cache" / CACHE_FILE
    link.symlink_to("../victim.txt")
    server.serve_json("vllm")
    result = refresh(["vllm"], index=server.index, cache_dir=str(sandbox / "cache"), limit=2)
    assert (sandbox / "victim.txt").read_text() == "precious\n"
    assert not link.is_symlink() and validate_index_document(json.loads(link.read_bytes())) == []
    assert any("starting afresh" in w for w in result.warnings)  # the victim was read as a (bad) cache, no more
    assert sorted(os.listdir(sandbox / "cache")) == [CACHE_FILE]


def test_a_failed_update_leaves_a_symlinked_cache_file_and_its_target_alone(server: IndexServer, sandbox: Path) -> None:
    link = sandbox / "cache" / CACHE_FILE
    link.symlink_to("../victim.txt")
    before = tree_state(sandbox)
    server.routes["/simple/vllm/"] = reply(b"{not json", ctype="application/vnd.pypi.simple.v1+json")
    with pytest.raises(UpdateError):
        refresh(["vllm"], index=server.index, cache_dir=str(sandbox / "cache"), limit=2)
    assert tree_state(sandbox) == before


def test_a_cache_dir_that_is_a_symlink_is_written_through_and_nothing_else(server: IndexServer, sandbox: Path) -> None:
    """A cache directory given as a link (a cache on another disk) is used as that directory: the
    one file written is the cache file inside it; the link and the other files stay."""
    link = sandbox / "cache-link"
    link.symlink_to("elsewhere")
    before = tree_state(sandbox)
    server.serve_json("vllm")
    result = refresh(["vllm"], index=server.index, cache_dir=str(link), limit=2)
    after = tree_state(sandbox)
    assert result.cache_path == str(link / CACHE_FILE)
    assert {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)} == {f"elsewhere/{CACHE_FILE}"}


def test_a_dangling_cache_dir_link_is_refused_and_not_created(server: IndexServer, sandbox: Path) -> None:
    link = sandbox / "cache-link"
    link.symlink_to("elsewhere/missing/deeper")
    server.serve_json("vllm")
    before = tree_state(sandbox)
    with pytest.raises(UpdateError, match="cannot write the cache"):
        refresh(["vllm"], index=server.index, cache_dir=str(link), limit=2)
    assert tree_state(sandbox) == before


def test_an_interrupt_while_writing_leaves_the_old_cache_and_no_temporary_file(
    server: IndexServer, sandbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = sandbox / "cache"
    server.serve_json("vllm", keep=lambda f: "-0.9.2" not in f["filename"])
    refresh(["vllm"], index=server.index, cache_dir=str(cache), limit=2)
    before = tree_state(sandbox)
    server.serve_json("vllm")  # a new release: the refresh would write

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        refresh(["vllm"], index=server.index, cache_dir=str(cache), limit=2)
    assert tree_state(sandbox) == before


def test_cli_refusal_of_a_hostile_index_is_one_line_without_credentials(server: IndexServer, sandbox: Path) -> None:
    cache = sandbox / "cache"
    url = server.index.replace("http://", f"http://alice:{SECRET}@")
    server.serve_json("vllm")
    runner = CliRunner()
    assert (
        runner.invoke(app, ["update", "vllm", "--cache-dir", str(cache), "--index-url", url, "--limit", "2"]).exit_code
        == 0
    )
    before = tree_state(sandbox)
    server.routes["/simple/vllm/"] = reply(_page(server, filename="../../victim.txt"), ctype="application/json")
    result = runner.invoke(app, ["update", "vllm", "--cache-dir", str(cache), "--index-url", url, "--limit", "2"])
    assert result.exit_code == 3
    errors = [line for line in result.stderr.splitlines() if line.startswith("cudadoctor: error:")]
    assert len(errors) == 1 and "refusing this index" in errors[0]
    _assert_no_credentials(result.stdout, result.stderr, cache)
    assert tree_state(sandbox) == before
