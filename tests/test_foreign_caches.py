"""Issue #27: no cache is trusted that another user owns or others may write, nor one in such a directory.

A poisoned ``elf-scan.json`` (mode 666, or another user's) turned CD304 from fail to ok. Every cache read goes
through ``read_file(private=True)``: the scan cache, the parsed compat tables, the update cache and the memo.
Files are given to another user with ``os.chown`` where the tests run as root; the mode cases run everywhere.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cudadoctor.cachedir import write_private
from cudadoctor.data import compiled
from cudadoctor.fileread import read_file
from cudadoctor.probes import interpreter, linkage
from cudadoctor.update.cache import CACHE_FILE, load_cache
from tests.conftest import make_ctx
from tests.elfwriter import shared_object

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
OTHER_UID = 4242


def _other_owner(path: Path) -> None:
    os.chown(path, OTHER_UID, -1)


def _world_writable(path: Path) -> None:
    path.chmod(0o666)


def _group_writable_dir(path: Path) -> None:
    path.parent.chmod(0o775)


def _others_dir(path: Path) -> None:
    os.chown(path.parent, OTHER_UID, -1)


FOREIGN: list[tuple[str, Callable[[Path], None]]] = [
    ("mode 666", _world_writable),
    ("a group-writable directory", _group_writable_dir),
    pytest.param("another user's", _other_owner, marks=ROOT_ONLY),  # type: ignore[list-item]
    pytest.param("in another user's directory", _others_dir, marks=ROOT_ONLY),  # type: ignore[list-item]
]


@pytest.mark.parametrize(("what", "make_foreign"), FOREIGN)
def test_a_private_read_refuses_what_others_could_have_written(tmp_path: Path, what: str, make_foreign) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    target = cache / "x.json"
    assert write_private(str(target), "{}")
    assert read_file(str(target), 100, private=True) == b"{}"
    make_foreign(target)
    with pytest.raises(PermissionError, match="not this user's private file"):
        read_file(str(target), 100, private=True)


SITE = "/opt/venv/lib/python3.12/site-packages"


@pytest.mark.parametrize(("what", "make_foreign"), FOREIGN)
def test_a_poisoned_scan_cache_does_not_hide_a_missing_library(tmp_path: Path, monkeypatch, what, make_foreign):
    """The scan cache rewritten to say torch's library needs nothing, then made foreign: the need is still seen."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(interpreter, "site_paths", lambda ctx: (SITE,))
    root = tmp_path / "root"
    lib = root / SITE.lstrip("/") / "torch" / "lib" / "libtorch_cuda.so"
    lib.parent.mkdir(parents=True)
    lib.write_bytes(shared_object(["libcudart.so.12"]))
    info = root / SITE.lstrip("/") / "torch-2.5.1.dist-info" / "METADATA"
    info.parent.mkdir()
    info.write_text("Name: torch\nVersion: 2.5.1\n")

    def needs() -> list[str]:
        view = linkage.probe_loader_view(make_ctx(root=str(root)))
        return [n.soname for n in view.needs] if view is not None else []

    assert needs() == ["libcudart.so.12"]
    scan = tmp_path / "xdg" / "cudadoctor" / "elf-scan.json"
    data = json.loads(scan.read_text())
    data["files"] = {path: [key, None] for path, (key, _slim) in data["files"].items()}  # "needs nothing"
    scan.write_text(json.dumps(data))
    assert needs() == []  # the poison works while the file is this user's own ...
    make_foreign(scan)
    assert needs() == ["libcudart.so.12"]  # ... and is ignored once anyone else could have written it


TOML = 'version = 1\n[meta]\nupdated = 2026-11-30\nsources = [{ id = "a", read = 2026-11-01 }]\n'


@pytest.mark.parametrize(("what", "make_foreign"), FOREIGN)
def test_a_foreign_parsed_compat_table_is_parsed_again(tmp_path: Path, what: str, make_foreign) -> None:
    table = tmp_path / "demo.toml"
    table.write_text(TOML, encoding="utf-8")
    compiled.store(str(table), tomllib.loads(TOML))
    assert compiled.load_cached(str(table)) is not None
    make_foreign(Path(compiled._where(str(table))))
    assert compiled.load_cached(str(table)) is None


@pytest.mark.parametrize(("what", "make_foreign"), FOREIGN)
def test_a_foreign_update_cache_is_not_used(tmp_path: Path, what: str, make_foreign) -> None:
    from tests.test_update import _valid_doc

    cache = tmp_path / "cache"
    cache.mkdir(mode=0o755)
    (cache / CACHE_FILE).write_text(json.dumps(_valid_doc()))
    (cache / CACHE_FILE).chmod(0o644)
    assert load_cache(str(cache))[0] is not None
    make_foreign(cache / CACHE_FILE)
    data, warning = load_cache(str(cache))
    assert data is None and warning is not None and "not this user's private file" in warning


def test_the_writer_takes_others_write_permission_off_its_own_directory(tmp_path: Path) -> None:
    """A cache directory made group-writable (umask 002 before the directory was private) would make every cache
    unreadable for good: the writer tightens it, so the next run uses what it wrote."""
    cache = tmp_path / "cudadoctor"
    cache.mkdir()
    cache.chmod(0o775)
    assert write_private(str(cache / "x.json"), "{}")
    assert cache.stat().st_mode & 0o777 == 0o755
    assert read_file(str(cache / "x.json"), 10, private=True) == b"{}"
