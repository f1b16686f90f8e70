"""Tests for cudadoctor.probes.loader: ld.so.conf parsing, the search order, finding library files."""

from __future__ import annotations

import pytest
from pyfakefs.fake_filesystem import FakeFilesystem

from cudadoctor.probes import loader
from tests.conftest import fixture_path, make_ctx

#: LD_LIBRARY_PATH of the H200 capture (capture.txt, the env section).
H200_LD_LIBRARY_PATH = "/usr/local/nvidia/lib64:/usr/local/nvidia/lib"


def add_h200_etc(fs: FakeFilesystem, root: str = "") -> None:
    """/etc/ld.so.conf and ld.so.conf.d as the H200 capture records them (tests/fixtures/libraries/README.md)."""
    fs.add_real_directory(fixture_path("libraries", "h200-etc"), target_path=f"{root}/etc")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("include /etc/ld.so.conf.d/*.conf\n\n", ([], ["/etc/ld.so.conf.d/*.conf"])),
        ("/usr/local/cuda/targets/x86_64-linux/lib\n", (["/usr/local/cuda/targets/x86_64-linux/lib"], [])),
        (
            "# Multiarch support\n/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu  # trailing\n",
            (["/usr/local/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu"], []),
        ),
        ("include\t/a/*.conf /b/*.conf\nhwcap 0 nosegneg\n", ([], ["/a/*.conf", "/b/*.conf"])),
        ("/usr/X11R6/lib=libc5, /opt/lib /usr/lib32\n", (["/usr/X11R6/lib", "/opt/lib", "/usr/lib32"], [])),
        ("/srv/include/lib\n", (["/srv/include/lib"], [])),
        ("", ([], [])),
        ("   \n# only a comment\n", ([], [])),
    ],
    ids=["include", "one-dir", "comments", "tab-and-hwcap", "old-syntax", "dir-named-include", "empty", "blank"],
)
def test_parse_ld_so_conf(text: str, expected: tuple[list[str], list[str]]) -> None:
    assert loader.parse_ld_so_conf(text) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (H200_LD_LIBRARY_PATH, ("/usr/local/nvidia/lib64", "/usr/local/nvidia/lib")),
        ("/a::/b;/c:", ("/a", "/b", "/c")),
        ("", ()),
        (None, ()),
    ],
    ids=["h200", "separators-and-empties", "empty", "unset"],
)
def test_ld_library_path(value: str | None, expected: tuple[str, ...]) -> None:
    assert loader.ld_library_path(value) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("libcudnn.so.9.14.0", "9.14.0"),
        ("/usr/lib/x86_64-linux-gnu/libnccl.so.2", "2"),
        ("libcuda.so.580.159.04", "580.159.04"),
        ("libcudnn.so", None),
        ("libcudart_static.a", None),
        ("libnvrtc-builtins.so.13.0", "13.0"),
        ("libcudnn.so.9.bak", None),
    ],
    ids=["full", "soname", "driver", "dev-link", "static", "builtins", "backup"],
)
def test_soname_version(name: str, expected: str | None) -> None:
    assert loader.soname_version(name) == expected


def test_default_dirs() -> None:
    assert loader.default_dirs("x86_64")[:2] == ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu")
    assert loader.default_dirs("riscv64") == ("/lib64", "/usr/lib64", "/lib", "/usr/lib")


H200_SEARCH_ORDER = (
    # LD_LIBRARY_PATH first
    "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",
    # then ld.so.conf.d/*.conf in name order
    "/usr/local/cuda/targets/x86_64-linux/lib",  # 000_cuda.conf
    "/usr/local/cuda-13/targets/x86_64-linux/lib",  # 987_cuda-13.conf (gds-13-0.conf: comment only)
    "/usr/local/lib",  # libc.conf
    "/usr/local/cuda/lib64",  # nvidia.conf
    "/usr/local/lib/x86_64-linux-gnu",  # x86_64-linux-gnu.conf
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    # then the built-in directories not already listed
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
)


def test_search_dirs_h200(fs: FakeFilesystem) -> None:
    add_h200_etc(fs)
    ctx = make_ctx(env={"LD_LIBRARY_PATH": H200_LD_LIBRARY_PATH})
    assert loader.search_dirs(ctx) == H200_SEARCH_ORDER


def test_search_dirs_h200_image_root(fs: FakeFilesystem) -> None:
    add_h200_etc(fs, root="/img")
    fs.create_file("/etc/ld.so.conf", contents="/host/only/lib\n")  # the host's file must not leak in
    ctx = make_ctx(root="/img", env={"LD_LIBRARY_PATH": H200_LD_LIBRARY_PATH})
    assert loader.search_dirs(ctx) == H200_SEARCH_ORDER


def test_search_dirs_is_cached(fs: FakeFilesystem) -> None:
    fs.create_file("/etc/ld.so.conf", contents="/first\n")
    ctx = make_ctx()
    first = loader.search_dirs(ctx)
    fs.remove_object("/etc/ld.so.conf")
    assert loader.search_dirs(ctx) is first
    assert first[0] == "/first"


def test_search_dirs_without_ld_so_conf(fs: FakeFilesystem) -> None:
    ctx = make_ctx(env={"LD_LIBRARY_PATH": "/opt/x/lib/:/opt/x/lib"}, machine="aarch64")
    assert loader.search_dirs(ctx) == (
        "/opt/x/lib",
        "/lib/aarch64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/lib64",
        "/usr/lib64",
        "/lib",
        "/usr/lib",
    )


def test_relative_and_recursive_includes(fs: FakeFilesystem) -> None:
    fs.create_file("/etc/ld.so.conf", contents="include conf.d/*.conf\n/after\n")
    fs.create_file("/etc/conf.d/a.conf", contents="/from-a\ninclude /etc/ld.so.conf\ninclude /etc/conf.d/a.conf\n")
    fs.create_file("/etc/conf.d/b.conf", contents="/from-b\n")
    fs.create_file("/etc/conf.d/b.conf.disabled", contents="/never\n")
    dirs = loader.search_dirs(make_ctx())
    assert dirs[:3] == ("/from-a", "/from-b", "/after")
    assert "/never" not in dirs


def test_unreadable_and_binary_conf_files(fs: FakeFilesystem) -> None:
    fs.create_file("/etc/ld.so.conf", contents="include /etc/ld.so.conf.d/*.conf\n")
    fs.create_file("/etc/ld.so.conf.d/a.conf", contents="\x00\x01\x02\n/ok\n")
    fs.create_dir("/etc/ld.so.conf.d/b.conf")  # a directory where a file should be
    dirs = loader.search_dirs(make_ctx())
    assert "/ok" in dirs


# --- find_in_dirs ---------------------------------------------------------------------------------


def _h200_nccl(fs: FakeFilesystem, root: str = "") -> None:
    """/lib -> usr/lib (Ubuntu 24.04 merges /usr) and NCCL's apt files as LIBRARY_PATHS.txt lists them."""
    lib = f"{root}/usr/lib/x86_64-linux-gnu"
    fs.create_file(f"{lib}/libnccl.so.2.28.3")
    fs.create_symlink(f"{lib}/libnccl.so.2", "libnccl.so.2.28.3")
    fs.create_symlink(f"{lib}/libnccl.so", "libnccl.so.2")
    fs.create_symlink(f"{root}/lib", "usr/lib")


@pytest.mark.parametrize("root", ["", "/img"], ids=["live", "image-root"])
def test_find_in_dirs_merged_usr(fs: FakeFilesystem, root: str) -> None:
    _h200_nccl(fs, root)
    ctx = make_ctx(root=root or "/")
    dirs = ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/missing"]
    assert loader.find_in_dirs(ctx, dirs, "libnccl.so.*") == [
        "/lib/x86_64-linux-gnu/libnccl.so.2",
        "/lib/x86_64-linux-gnu/libnccl.so.2.28.3",
    ]


def test_find_in_dirs_link_loop_and_dangling_link(fs: FakeFilesystem) -> None:
    _h200_nccl(fs, "/img")
    lib = "/img/usr/lib/x86_64-linux-gnu"
    fs.create_symlink(f"{lib}/libnccl.so.2.18.1", "libnccl.so.2.18.1")  # a loop
    fs.create_symlink(f"{lib}/libnccl.so.2.19.0", "/nowhere/libnccl.so.2.19.0")  # dangling
    ctx = make_ctx(root="/img")
    found = loader.find_in_dirs(ctx, ["/usr/lib/x86_64-linux-gnu"], "libnccl.so.*")
    assert found == [
        "/usr/lib/x86_64-linux-gnu/libnccl.so.2",
        "/usr/lib/x86_64-linux-gnu/libnccl.so.2.19.0",
        "/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3",
    ]
    assert not ctx.fs.is_file("/usr/lib/x86_64-linux-gnu/libnccl.so.2.19.0")


def test_parse_ld_so_conf_entries_keeps_order() -> None:
    text = "/before\ninclude conf.d/*.conf\n/after\n"
    assert loader.parse_ld_so_conf_entries(text) == [
        ("dir", "/before"),
        ("include", "conf.d/*.conf"),
        ("dir", "/after"),
    ]
