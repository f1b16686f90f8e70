"""The live root's cached realpath answers exactly as os.path.realpath, links and all."""

from __future__ import annotations

import os
from pathlib import Path

from cudadoctor.rootfs import RootFS


def test_cached_realpath_equals_realpath(tmp_path: Path) -> None:
    d = str(tmp_path)
    os.makedirs(f"{d}/a/b/c")
    os.symlink(f"{d}/a/b", f"{d}/link")
    os.symlink("c", f"{d}/a/b/rel")
    os.symlink(f"{d}/loop1", f"{d}/loop2")
    os.symlink(f"{d}/loop2", f"{d}/loop1")
    Path(f"{d}/a/b/c/f").write_text("", encoding="utf-8")
    os.symlink("../c/f", f"{d}/a/b/c/g")
    os.symlink("/", f"{d}/rootlink")
    paths = [
        f"{d}/link/c/f", f"{d}/link/rel/f", f"{d}/a/b/c/g", f"{d}/missing/x", f"{d}/link/../a", f"{d}/loop1/x",
        f"{d}/a//b/./c", "/", "relative/x", f"{d}/link/rel/../c/g", "/usr/lib/../bin", f"{d}/rootlink/usr",
        f"{d}/link/", "//usr//lib/", "/" + "x/" * 3000, f"{d}/link/c/f/.",
    ]  # fmt: skip
    fs = RootFS("/")
    for _ in range(2):  # the second round answers from the cache
        assert [fs.resolve(p) for p in paths] == [os.path.realpath(p) for p in paths]


def test_a_link_changed_between_runs_is_seen_by_a_new_root(tmp_path: Path) -> None:
    """The cache lives as long as one RootFS (one run): a new run sees the link's new target."""
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    os.symlink(tmp_path / "one", tmp_path / "cur")
    assert RootFS("/").resolve(f"{tmp_path}/cur/x") == f"{tmp_path}/one/x"
    os.unlink(tmp_path / "cur")
    os.symlink(tmp_path / "two", tmp_path / "cur")
    assert RootFS("/").resolve(f"{tmp_path}/cur/x") == f"{tmp_path}/two/x"


def test_a_directory_is_listed_once_per_run(tmp_path: Path) -> None:
    """Listings are kept for the run (one RootFS): callers get their own copy; a new run lists again."""
    (tmp_path / "libcudnn.so.9").write_text("", encoding="utf-8")
    fs = RootFS("/")
    first = fs.listdir(str(tmp_path))
    first.append("changed-by-a-caller")
    (tmp_path / "libnccl.so.2").write_text("", encoding="utf-8")
    assert fs.listdir(str(tmp_path)) == ["libcudnn.so.9"]
    assert fs.glob(str(tmp_path), "libcudnn*") == [f"{tmp_path}/libcudnn.so.9"]
    assert RootFS("/").glob(str(tmp_path), "lib*.so.*") == [f"{tmp_path}/libcudnn.so.9", f"{tmp_path}/libnccl.so.2"]
