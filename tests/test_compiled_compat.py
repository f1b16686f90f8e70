"""The parsed-compat cache: used when the file is unchanged, ignored when stale or planted."""

from __future__ import annotations

import datetime
import json
import os
import sys
from pathlib import Path

import pytest

from cudadoctor.data import compiled
from cudadoctor.data.load import compat_dir

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TOML = 'version = 1\n[meta]\nupdated = 2026-11-30\nsources = [{ id = "a", read = 2026-11-01 }]\n'


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "demo.toml"
    path.write_text(TOML, encoding="utf-8")
    return path


def test_roundtrip_keeps_dates(table: Path) -> None:
    data = tomllib.loads(TOML)
    assert compiled.load_cached(str(table)) is None
    compiled.store(str(table), data)
    again = compiled.load_cached(str(table))
    assert again == data
    assert again is not None and again["meta"]["updated"] == datetime.date(2026, 11, 30)


def test_an_edited_file_is_parsed_again(table: Path) -> None:
    compiled.store(str(table), tomllib.loads(TOML))
    table.write_text(TOML + "extra = 2\n", encoding="utf-8")
    assert compiled.load_cached(str(table)) is None


def test_same_size_new_mtime_is_stale(table: Path) -> None:
    compiled.store(str(table), tomllib.loads(TOML))
    info = table.stat()
    os.utime(table, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))
    assert compiled.load_cached(str(table)) is None


@pytest.mark.parametrize(
    "content",
    ["not json", "[1, 2]", '{"key": 1, "data": {}}', "[" * 100_000, '{"key": null}'],
    ids=["garbage", "list", "foreign-key", "deep", "no-data"],
)
def test_planted_or_foreign_cache_is_ignored(table: Path, content: str) -> None:
    where = Path(compiled._where(str(table)))
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(content, encoding="utf-8")
    assert compiled.load_cached(str(table)) is None


def test_unwritable_cache_is_harmless(table: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    compiled.store(str(table), tomllib.loads(TOML))  # cannot create a directory under a file: no error
    assert compiled.load_cached(str(table)) is None


def test_shipped_tables_load_the_same_from_the_cache() -> None:
    """Every compat file gives the same data parsed from TOML as from its cached copy."""
    for name in sorted(os.listdir(compat_dir())):
        if not name.endswith(".toml"):
            continue
        path = os.path.join(compat_dir(), name)
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
        compiled.store(path, data)
        assert compiled.load_cached(path) == data, name
        cached = json.loads(Path(compiled._where(path)).read_text(encoding="utf-8"))
        assert cached["key"][1] == os.path.abspath(path)


def test_two_installs_keep_their_own_copies(tmp_path: Path) -> None:
    """Two virtual environments' compat/ tables of one name, used in turn, are both answered from the cache."""
    tables = []
    for install in ("venv-a", "venv-b"):
        table = tmp_path / install / "compat" / "torch.toml"
        table.parent.mkdir(parents=True)
        table.write_text(f'install = "{install}"\n' + TOML, encoding="utf-8")
        compiled.store(str(table), tomllib.loads(table.read_text(encoding="utf-8")))
        tables.append(table)
    assert compiled._where(str(tables[0])) != compiled._where(str(tables[1]))
    for table in tables:
        cached = compiled.load_cached(str(table))
        assert cached is not None and cached["install"] == table.parent.parent.name


def test_the_copy_of_the_previous_layout_is_removed(table: Path) -> None:
    """One file per table name (before per-installation copies) is never read again: writing the new copy removes it."""
    legacy = Path(compiled._where(str(table))).parent / "demo.json"
    legacy.parent.mkdir(parents=True, exist_ok=True)
    legacy.write_text('{"key": [], "data": {}}', encoding="utf-8")
    compiled.store(str(table), tomllib.loads(TOML))
    assert not legacy.exists()
    assert compiled.load_cached(str(table)) is not None


def test_shipped_copy_is_used_only_for_the_bytes_it_was_made_from(table: Path) -> None:
    source = table.read_bytes()
    Path(compiled.prebuilt_path(str(table))).write_text(
        compiled.prebuilt_text(source, tomllib.loads(TOML)), encoding="utf-8"
    )
    shipped = compiled.load_prebuilt(str(table))
    assert shipped == tomllib.loads(TOML) and shipped["meta"]["updated"] == datetime.date(2026, 11, 30)
    # edited to the same size (a digit changed): the CRC tells
    table.write_text(TOML.replace("version = 1", "version = 2"), encoding="utf-8")
    assert compiled.load_prebuilt(str(table)) is None


@pytest.mark.parametrize("content", ["", "garbage", "[]", '{"toml": [1, 2, 3]}', "[" * 100_000])
def test_planted_or_foreign_shipped_copy_is_ignored(table: Path, content: str) -> None:
    Path(compiled.prebuilt_path(str(table))).write_text(content, encoding="utf-8")
    assert compiled.load_prebuilt(str(table)) is None


def test_no_shipped_copy_for_a_table_json_cannot_hold() -> None:
    with pytest.raises(TypeError):
        compiled.prebuilt_text(b"t = 07:32:00", {"t": datetime.time(7, 32)})


def test_a_same_size_edit_with_its_mtime_restored_is_parsed_again(table: Path) -> None:
    """Issue #27: the key held size and mtime only; os.utime restores a mtime, never a change time."""
    compiled.store(str(table), tomllib.loads(TOML))
    before = table.stat()
    table.write_text(TOML.replace("2026-11-30", "2026-11-29"), encoding="utf-8")
    os.utime(table, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert table.stat().st_size == before.st_size and table.stat().st_mtime_ns == before.st_mtime_ns
    assert compiled.load_cached(str(table)) is None
