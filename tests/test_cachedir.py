"""cachedir.write_private: the one writer of the memo, the ELF scan cache and the parsed compat copies."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from cudadoctor.cachedir import write_private


def test_writes_atomically_for_this_user_only(tmp_path: Path) -> None:
    target = tmp_path / "new" / "memo.json"
    assert write_private(str(target), "{}\udcff")  # a surrogate escape (a non-UTF-8 name) is kept, not an error
    assert target.read_bytes() == b"{}\xff"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE(target.parent.stat().st_mode) == 0o700 & ~_umask()
    assert write_private(str(target), "[]") and target.read_text() == "[]"
    assert sorted(os.listdir(target.parent)) == ["memo.json"]


def test_a_planted_temporary_file_or_unwritable_place_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "memo.json"
    planted = Path(f"{target}.{os.getpid()}.tmp")
    planted.symlink_to(tmp_path / "victim")
    assert not write_private(str(target), "x")  # O_EXCL | O_NOFOLLOW: never written through
    assert not (tmp_path / "victim").exists() and not target.exists()
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert not write_private(str(blocker / "memo.json"), "x")


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
