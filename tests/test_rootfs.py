"""RootFS: paths inside an image root, links followed within it, bounded reads."""

from __future__ import annotations

import errno
import os

import pytest

from cudadoctor.rootfs import RootFS


@pytest.fixture
def image(tmp_path):
    root = tmp_path / "img"
    (root / "usr/local/cuda-13.0").mkdir(parents=True)
    (root / "usr/local/cuda-13.0/version.json").write_text("{}")
    (root / "etc/alternatives").mkdir(parents=True)
    os.symlink("/etc/alternatives/cuda", root / "usr/local/cuda")
    os.symlink("/usr/local/cuda-13.0", root / "etc/alternatives/cuda")
    return RootFS(str(root))


def test_absolute_links_stay_inside_the_root(image):
    assert image.resolve("/usr/local/cuda") == "/usr/local/cuda-13.0"
    assert image.is_file("/usr/local/cuda/version.json")
    assert image.read_text("/usr/local/cuda/version.json") == "{}"


def test_host_path_cannot_climb_out_of_the_root(image):
    assert image.host_path("/../../etc/passwd") == image.root + "/etc/passwd"


def test_link_pointing_outside_is_reinterpreted_inside(tmp_path):
    root = tmp_path / "img"
    root.mkdir()
    os.symlink("/etc/hostname", root / "leak")
    fs = RootFS(str(root))
    assert fs.resolve("/leak") == "/etc/hostname"
    assert not fs.exists("/leak")  # the host's /etc/hostname is never read


def test_symlink_loop_raises_eloop(tmp_path):
    root = tmp_path / "img"
    root.mkdir()
    os.symlink("/b", root / "a")
    os.symlink("/a", root / "b")
    with pytest.raises(OSError) as info:
        RootFS(str(root)).resolve("/a/x")
    assert info.value.errno == errno.ELOOP
    fs = RootFS(str(root))
    assert fs.glob("/a", "*") == []
    assert not fs.exists("/a") and not fs.is_file("/a/x") and not fs.is_dir("/b")


def test_reads_are_bounded(tmp_path):
    (tmp_path / "big").write_bytes(b"x" * 5000)
    assert len(RootFS(str(tmp_path)).read_text("/big", limit=100)) == 100


def test_undecodable_bytes_are_replaced(tmp_path):
    (tmp_path / "bin").write_bytes(b"580\xff\xfe")
    assert RootFS(str(tmp_path)).read_text("/bin").startswith("580")


def test_live_root_uses_real_paths():
    fs = RootFS("/")
    assert fs.is_live
    assert fs.host_path("/proc/version") == "/proc/version"
