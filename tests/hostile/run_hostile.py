#!/usr/bin/env python3
"""An independent run of hostile inputs against cudadoctor (issue #14's "Done when"), stdlib only.

Every input is built under a fresh temporary directory; each command runs as a subprocess with a
30 s timeout (a timeout is a hang). For each input it records the exit code, the wall time, whether
the output holds a traceback or "internal error", whether a pre-existing file was modified, and
whether a gate that must fail passed (fail-open: exit 0 where exit 1 is due; when only
``--fail-on-unknown`` makes it fail, that is noted, not counted).

Run from the repository root:  python tests/hostile/run_hostile.py [-k SUBSTRING] [--keep]
Not part of the pytest suite. Loopback-only HTTP servers, bounded loops, every server stopped.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURE = os.path.join(REPO, "tests", "fixtures", "h200", "tree")
SITE = "/opt/torch/.venv/lib/python3.12/site-packages"
TIMEOUT = 30.0
HUGE = "9" * 5000
GATE = ["--assume-driver", "580.159.04", "--require", "torch>=99"]  # exit 1 on the clean image
IS_ROOT = os.geteuid() == 0


@dataclass
class Spec:
    argv: list[str]
    must_fail: bool = False  #: a gate that must exit 1 (exit 0 is fail-open)
    ok_exits: tuple[int, ...] = (0, 1, 2)
    watch: list[str] = field(default_factory=list)  #: pre-existing files that must not change
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    check: Callable[[subprocess.CompletedProcess[str]], str] | None = None  #: extra judgement: "" = fine
    cleanup: Callable[[], None] | None = None
    close_stdout: bool = False  #: start cudadoctor with its stdout closed (``>&-``)


CASES: list[tuple[str, str, Callable[[str], Spec]]] = []


def case(group: str, name: str) -> Callable[[Callable[[str], Spec]], Callable[[str], Spec]]:
    def deco(fn: Callable[[str], Spec]) -> Callable[[str], Spec]:
        CASES.append((group, name, fn))
        return fn

    return deco


# --- building blocks ---------------------------------------------------------------------------------


def put(root: str, path: str, data: bytes | str) -> str:
    full = os.path.join(root, path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    if os.path.lexists(full) and not os.path.isdir(full):
        os.unlink(full)
    with open(full, "wb") as handle:
        handle.write(data.encode() if isinstance(data, str) else data)
    return full


def link(root: str, path: str, target: str) -> None:
    full = os.path.join(root, path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    if os.path.lexists(full):
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full)
        else:
            os.unlink(full)
    os.symlink(target, full)


def replace_with(root: str, path: str, kind: str) -> str:
    """Replace the file at ``path`` by a directory, a FIFO, a char device (/dev/zero's numbers) or a socket."""
    full = os.path.join(root, path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    if os.path.lexists(full):
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full)
        else:
            os.unlink(full)
    if kind == "dir":
        os.makedirs(os.path.join(full, "sub"))
    elif kind == "fifo":
        os.mkfifo(full)
    elif kind == "zero":
        if IS_ROOT:
            os.mknod(full, stat.S_IFCHR | 0o666, os.makedev(1, 5))
        else:
            os.symlink("/dev/zero", full)
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        here = os.getcwd()
        os.chdir(os.path.dirname(full))  # a short relative name: AF_UNIX paths are limited to 107 bytes
        try:
            sock.bind(os.path.basename(full))
        finally:
            os.chdir(here)
            sock.close()
    return full


def base_image(tmp: str) -> tuple[str, str]:
    """(root, env file) of the captured H200 container: clean, CD901 is the only thing a gate fails on."""
    root = os.path.join(tmp, "root")
    shutil.copytree(FIXTURE, root, symlinks=True)
    put(root, "/etc/os-release", 'PRETTY_NAME="Ubuntu 24.04.3 LTS"\nNAME="Ubuntu"\nVERSION_ID="24.04"\nID=ubuntu\n')
    put(
        root, "/opt/torch/.venv/pyvenv.cfg", "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.3\n"
    )
    link(root, "/opt/torch/.venv/bin/python3", "/usr/bin/python3.12")
    put(root, "/usr/bin/python3.12", b"")
    env = os.path.join(tmp, "image.env")
    with open(env, "w") as handle:
        handle.write(
            "PATH=/opt/torch/.venv/bin:/usr/local/cuda/bin:/usr/bin:/bin\nVIRTUAL_ENV=/opt/torch/.venv\n"
            "LD_LIBRARY_PATH=/usr/local/nvidia/lib64\nHOME=/root\n"
        )
    return root, env


def image(tmp: str, *extra: str, gate: list[str] | None = None) -> Spec:
    root, env = base_image(tmp)
    return Spec(["check", "--root", root, "--env-file", env, *(GATE if gate is None else gate), *extra], must_fail=True)


def torch_metadata(tmp: str, more: str) -> Spec:
    """The image with torch 2.11.0's METADATA replaced by its three header lines and ``more``."""
    spec = image(tmp)
    put(
        spec.argv[2],
        f"{SITE}/torch-2.11.0.dist-info/METADATA",
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0\n" + more,
    )
    return spec


def elf(
    needed: list[str] = (),  # type: ignore[assignment]
    runpath: list[str] = (),  # type: ignore[assignment]
    *,
    phnum: int | None = None,
    phoff: int | None = None,
    strtab: int | None = None,
    strsz: int | None = None,
    e_type: int = 3,
    verneed_loop: bool = False,
    big_endian: bool = False,
    truncate: int | None = None,
    machine: int = 62,
) -> bytes:
    """A minimal ELF64 shared object (one PT_LOAD, one PT_DYNAMIC), with knobs to make it hostile."""
    end = ">" if big_endian else "<"
    strings = bytearray(b"\0")

    def add(text: str) -> int:
        off = len(strings)
        strings.extend(text.encode() + b"\0")
        return off

    tags = [(1, add(n)) for n in needed]
    if runpath:
        tags.append((29, add(":".join(runpath))))
    str_off = 64 + 2 * 56
    ver = bytearray()
    if verneed_loop:
        f = add("libcudart.so.13")
        ver += struct.pack(end + "HHIII", 1, 1, f, 16, 0)  # vn_next 0 but vna_next points to itself
        ver += struct.pack(end + "IHHII", 0, 0, 2, add("libcudart.so.13"), 0)
    ver_off = (str_off + len(strings) + 7) & ~7
    dyn_off = (ver_off + len(ver) + 7) & ~7
    tags += [(5, str_off if strtab is None else strtab), (10, len(strings) if strsz is None else strsz)]
    if verneed_loop:
        tags += [(0x6FFFFFFE, ver_off), (0x6FFFFFFF, 10**9)]
    tags.append((0, 0))
    dyn = b"".join(struct.pack(end + "qQ", t, v) for t, v in tags)
    total = dyn_off + len(dyn)
    ident = b"\x7fELF" + bytes([2, 2 if big_endian else 1, 1, 0]) + bytes(8)
    hdr = ident + struct.pack(
        end + "HHIQQQIHHHHHH",
        e_type,
        machine,
        1,
        0,
        64 if phoff is None else phoff,
        0,
        0,
        64,
        56,
        2 if phnum is None else phnum,
        64,
        0,
        0,
    )
    load = struct.pack(end + "IIQQQQQQ", 1, 5, 0, 0, 0, total, total, 0x1000)
    dph = struct.pack(end + "IIQQQQQQ", 2, 6, dyn_off, dyn_off, dyn_off, len(dyn), len(dyn), 8)
    body = bytearray(hdr + load + dph + strings)
    body += bytes(ver_off - len(body)) + ver
    body += bytes(dyn_off - len(body)) + dyn
    return bytes(body[:truncate] if truncate is not None else body)


def snapshot_of(tmp: str) -> dict:
    """A snapshot of the clean image with a loader view (one ELF needing libcudart), made by cudadoctor."""
    root, env = base_image(os.path.join(tmp, "snapsrc"))
    put(
        root,
        f"{SITE}/torch/lib/libtorch_cuda.so",
        elf(["libcudart.so.13", "libnccl.so.2"], ["$ORIGIN/../../nvidia/cu13/lib"]),
    )
    put(root, f"{SITE}/nvidia/cu13/lib/libcudart.so.13", elf())
    out = os.path.join(tmp, "snap.json")
    proc = run_cd(["snapshot", "--root", root, "--env-file", env, "-o", out], tmp, {})
    if proc.returncode != 0:
        raise RuntimeError("could not make the base snapshot: " + proc.stderr[-500:])
    with open(out) as handle:
        return json.load(handle)


def write_json(path: str, doc: object) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        json.dump(doc, handle)
    return path


def from_snapshot(tmp: str, edit: Callable[[dict], object], *, must_fail: bool = True, extra: list[str] = ()) -> Spec:  # type: ignore[assignment]
    doc = snapshot_of(tmp)
    result = edit(doc["facts"])
    if isinstance(result, dict):  # an edit that replaces the whole document returns it
        doc = result
    path = write_json(os.path.join(tmp, "hostile.json"), doc)
    gate = ["--require", "torch>=99"] if must_fail else []
    return Spec(["check", "--from", path, *gate, *extra], must_fail=must_fail)


# --- image roots --------------------------------------------------------------------------------------


@case("root", "symlink-farm-2000-links-chained-in-site-packages")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    root = spec.argv[2]
    for i in range(2000):
        link(root, f"{SITE}/farm{i}.so", f"farm{(i + 1) % 2000}.so")
        link(root, f"{SITE}/d{i}", f"d{(i * 7 + 3) % 2000}")
    return spec


@case("root", "site-packages-nvidia-is-a-link-to-image-top")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    link(spec.argv[2], f"{SITE}/nvidia", "/")
    return spec


@case("root", "site-packages-nvidia-lib-dirs-link-upwards-in-a-cycle")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    root = spec.argv[2]
    for i in range(50):
        link(root, f"{SITE}/nvidia/c{i}/lib", "../..")
        link(root, f"{SITE}/nvidia/c{i}/x", "../../..")
    return spec


@case("root", "directories-200-deep-under-nvidia-and-torch")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    root = spec.argv[2]
    for top in ("nvidia/deep", "torch/deep"):
        path = os.path.join(root, SITE.lstrip("/"), top, *(["d"] * 200))
        os.makedirs(path)
        with open(os.path.join(path, "libcudart.so.13"), "wb") as handle:
            handle.write(elf(["libcudart.so.13"]))
    return spec


@case("root", "30000-dist-info-directories-without-metadata")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    site = os.path.join(spec.argv[2], SITE.lstrip("/"))
    for i in range(30000):
        os.mkdir(os.path.join(site, f"pkg{i}-1.0.dist-info"))
    return spec


@case("root", "torch-metadata-utf16-with-bom")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    put(
        spec.argv[2],
        f"{SITE}/torch-2.11.0.dist-info/METADATA",
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0\n".encode("utf-16"),
    )
    return spec


@case("root", "torch-metadata-10MB-header-line")
def _(tmp: str) -> Spec:
    return torch_metadata(tmp, "Summary: " + "x" * (10 << 20) + "\n")


@case("root", "torch-metadata-100000-requires-dist")
def _(tmp: str) -> Spec:
    lines = "".join(
        f"Requires-Dist: nvidia-pkg{i}-cu13==13.0.{i}; platform_system == 'Linux'\n" for i in range(100_000)
    )
    return torch_metadata(tmp, lines)


@case("root", "requires-dist-marker-nested-5000-parens-in-torch")
def _(tmp: str) -> Spec:
    marker = "(" * 5000 + 'python_version > "3"' + ")" * 5000
    return torch_metadata(tmp, f"Requires-Dist: nvidia-cudnn-cu13==9.19.0.56; {marker}\n")


@case("root", "requires-dist-marker-nested-5000-parens-in-nvidia-wheel")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    marker = "(" * 5000 + 'extra == "x"' + ")" * 5000
    put(
        spec.argv[2],
        f"{SITE}/nvidia_evil_cu13-1.0.dist-info/METADATA",
        f"Metadata-Version: 2.1\nName: nvidia-evil-cu13\nVersion: 1.0\nRequires-Dist: foo; {marker}\n",
    )
    return spec


@case("root", "requires-dist-marker-20000-or-clauses")
def _(tmp: str) -> Spec:
    marker = " or ".join(['python_version == "3.1"'] * 20000)
    return torch_metadata(tmp, f"Requires-Dist: nvidia-nccl-cu13==2.28.9; {marker}\n")


@case("root", "requires-dist-unterminated-and-odd-markers")
def _(tmp: str) -> Spec:
    odd = [
        'foo; extra == "',
        "foo; python_version ~= '3.*'",
        "foo;;;",
        "[[[",
        "foo @ file:///etc/passwd ; os_name == 'x' and",
        "nvidia-cudnn-cu13 (>=" + HUGE + ")",
    ]
    return torch_metadata(tmp, "".join(f"Requires-Dist: {o}\n" for o in odd))


@case("root", "torch-metadata-name-is-a-path-and-fullwidth-version")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    put(
        spec.argv[2],
        f"{SITE}/nvidia_x_cu13-1.0.dist-info/METADATA",
        "Metadata-Version: 2.1\nName: ../../../etc/passwd\nVersion: \uff12.\uff16\n",
    )
    put(
        spec.argv[2],
        f"{SITE}/nvidia_y_cu13-\u0662.0.dist-info/METADATA",
        "Metadata-Version: 2.1\nName: nvidia-y-cu13\nVersion: \u0662.0\n",
    )
    return spec


@case("root", "torch-metadata-is-a-char-device-zero")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    replace_with(spec.argv[2], f"{SITE}/torch-2.11.0.dist-info/METADATA", "zero")
    return spec


@case("root", "nvidia-metadata-is-a-unix-socket")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    replace_with(spec.argv[2], f"{SITE}/nvidia_nccl_cu13-2.28.9.dist-info/METADATA", "socket")
    return spec


@case("root", "torch-version-py-1M-lines-and-nul")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    put(
        spec.argv[2],
        f"{SITE}/torch/version.py",
        "x = 1\n" * 1_000_000 + "__version__ = '2.11.0\x00+cu130'\ncuda = '13.0'\n",
    )
    return spec


@case("root", "torch-version-py-symlink-to-dev-zero-outside")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    link(spec.argv[2], f"{SITE}/torch/version.py", "/dev/zero")
    return spec


def _elf_case(name: str, data: Callable[[], bytes], where: str = f"{SITE}/torch/lib/libtorch_cuda.so") -> None:
    @case("elf", name)
    def _(tmp: str) -> Spec:
        spec = image(tmp)
        put(spec.argv[2], where, data())
        return spec


_elf_case("elf-phnum-65535", lambda: elf(["libcudart.so.13"], phnum=65535))
_elf_case("elf-phoff-past-end", lambda: elf(["libcudart.so.13"], phoff=2**63 - 1))
_elf_case("elf-strtab-past-end", lambda: elf(["libcudart.so.13"], strtab=2**62))
_elf_case("elf-strsz-2-to-63", lambda: elf(["libcudart.so.13"], strsz=2**63 - 1))
_elf_case("elf-verneed-count-1e9-self-loop", lambda: elf(["libcudart.so.13"], verneed_loop=True))
_elf_case("elf-big-endian", lambda: elf(["libcudart.so.13"], big_endian=True))
_elf_case("elf-truncated-mid-dynamic", lambda: elf(["libcudart.so.13", "libnccl.so.2"], truncate=200))
_elf_case("elf-e-type-exec", lambda: elf(["libcudart.so.13"], e_type=2))
_elf_case("elf-8000-distinct-cuda-needed", lambda: elf([f"libcudart.so.{i}" for i in range(8000)]))
_elf_case("elf-needed-with-path-escape", lambda: elf(["../../../../../../etc/libcudart.so.13", "/etc/libnccl.so.2"]))
_elf_case(
    "elf-runpath-4000-origin-entries",
    lambda: elf(
        ["libcudart.so.13", "libcublas.so.13", "libnccl.so.2"], [f"$ORIGIN/{'../' * (i % 40)}x{i}" for i in range(4000)]
    ),
)
_elf_case(
    "elf-needed-non-utf8-and-escapes",
    lambda: elf(["libcudart.so.13\x1b[2J", "libnccl.so.2\udcff".encode("utf-8", "surrogateescape").decode("latin-1")]),
)


@case("elf", "elf-500-objects-each-needing-200-sonames")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    blob = elf([f"libcublas.so.{i}" for i in range(200)], ["$ORIGIN", "$ORIGIN/.."] * 20)
    for i in range(500):
        put(spec.argv[2], f"{SITE}/pkg{i}/libx.so", blob)
    return spec


@case("elf", "elf-so-is-a-fifo-and-a-device")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    replace_with(spec.argv[2], f"{SITE}/torch/lib/libtorch_cuda.so", "fifo")
    replace_with(spec.argv[2], f"{SITE}/nvidia/cu13/lib/libcudart.so.13", "zero")
    put(spec.argv[2], f"{SITE}/torch/lib/libc10_cuda.so", elf(["libcudart.so.13"]))
    return spec


def _ldcache(entries: list[tuple[str, str]], *, nlibs: int | None = None, strtab_off: int = 0, pad: int = 0) -> bytes:
    head = b"glibc-ld.so.cache1.1"
    body = bytearray()
    strings = bytearray()
    base = 48 + 24 * len(entries)
    rows = []
    for key, value in entries:
        k = base + len(strings) + strtab_off
        strings += key.encode() + b"\0"
        v = base + len(strings) + strtab_off
        strings += value.encode() + b"\0"
        rows.append(struct.pack("<iIIIQ", 0x0303, k, v, 0, 0))
    body += head + struct.pack("<III", len(entries) if nlibs is None else nlibs, len(strings), 0) + bytes(16)
    body += b"".join(rows) + strings + bytes(pad)
    return bytes(body)


def _ldcache_case(name: str, data: Callable[[], bytes]) -> None:
    @case("ldcache", name)
    def _(tmp: str) -> Spec:
        spec = image(tmp)
        put(spec.argv[2], f"{SITE}/torch/lib/libtorch_cuda.so", elf(["libcudart.so.13"]))
        put(spec.argv[2], "/etc/ld.so.cache", data())
        return spec


_ldcache_case(
    "ldcache-nlibs-2-to-32", lambda: _ldcache([("libcudart.so.13", "/usr/lib/libcudart.so.13")], nlibs=2**32 - 1)
)
_ldcache_case(
    "ldcache-string-offsets-negative-and-past-end", lambda: _ldcache([("libcudart.so.13", "/x")], strtab_off=2**31)
)
_ldcache_case("ldcache-path-escapes-root", lambda: _ldcache([("libcudart.so.13", "/../../../../../../etc/passwd")] * 3))
_ldcache_case("ldcache-200000-entries", lambda: _ldcache([(f"libcudart.so.{i}", f"/l/{i}") for i in range(200_000)]))
_ldcache_case("ldcache-magic-only", lambda: b"glibc-ld.so.cache1.1")
_ldcache_case("ldcache-old-format-garbage", lambda: b"ld.so-1.7.0" + b"\xff" * 4096)


@case("ldcache", "ldcache-is-fifo-device-and-loop")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    root = spec.argv[2]
    put(root, f"{SITE}/torch/lib/libtorch_cuda.so", elf(["libcudart.so.13"]))
    replace_with(root, "/etc/ld.so.cache", "fifo")
    replace_with(root, "/etc/ld.so.conf", "zero")
    link(root, "/etc/ld.so.conf.d", "/etc/ld.so.conf.d")
    return spec


@case("ldcache", "ld-so-conf-include-glob-over-symlink-loop")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    root = spec.argv[2]
    for i in range(8):
        link(root, f"/loop{i}", "/")
    put(root, "/etc/ld.so.conf", "include /*/*/*/*/*/*/*/*/*.conf\n/*/*/*/*/*/*/*/*\n")
    put(root, f"{SITE}/torch/lib/libtorch_cuda.so", elf(["libcudart.so.13"]))
    return spec


@case("root", "ld-library-path-50000-entries-with-elf-needs")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    put(spec.argv[2], f"{SITE}/torch/lib/libtorch_cuda.so", elf([f"libcublas.so.{i}" for i in range(100)]))
    with open(spec.argv[4], "a") as handle:
        handle.write("LD_LIBRARY_PATH=" + ":".join(f"/p{i}" for i in range(50000)) + "\n")
        handle.write("LD_PRELOAD=" + " ".join(f"libcudart.so.{i}" for i in range(5000)) + "\n")
    return spec


@case("root", "proc-gpus-10000-entries-information-dirs")
def _(tmp: str) -> Spec:
    spec = image(tmp, gate=["--require", "torch>=99"])
    for i in range(10000):
        replace_with(
            spec.argv[2], f"/proc/driver/nvidia/gpus/0000:{i:04x}:00.0/information", "dir" if i % 2 else "zero"
        )
    return spec


@case("root", "proc-version-char-device-and-sys-version-socket")
def _(tmp: str) -> Spec:
    spec = image(tmp, gate=["--require", "driver>=999"])
    replace_with(spec.argv[2], "/proc/driver/nvidia/version", "zero")
    replace_with(spec.argv[2], "/sys/module/nvidia/version", "socket")
    return spec


@case("root", "proc-driver-nvidia-is-a-symlink-loop")
def _(tmp: str) -> Spec:
    spec = image(tmp, gate=["--require", "driver>=999"])
    shutil.rmtree(os.path.join(spec.argv[2], "proc/driver/nvidia"))
    link(spec.argv[2], "/proc/driver/nvidia", "nvidia")
    return spec


@case("root", "os-release-symlink-to-itself-and-10MB-dpkg")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    link(spec.argv[2], "/etc/os-release", "os-release")
    put(
        spec.argv[2], "/var/lib/dpkg/status", ("Package: x\nVersion: 1\n" + "Description: " + "y" * (10 << 20) + "\n\n")
    )
    return spec


@case("root", "pyvenv-cfg-device-and-venv-is-a-loop")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    replace_with(spec.argv[2], "/opt/torch/.venv/pyvenv.cfg", "zero")
    link(spec.argv[2], "/opt/torch/.venv/lib/python3.13", "python3.13")
    return spec


@case("root", "virtual-env-points-to-root-of-image")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    with open(spec.argv[4], "a") as handle:
        handle.write("VIRTUAL_ENV=/\nPYTHONPATH=" + ":".join(["/", "/..", "/../..", "//"] * 1000) + "\n")
    return spec


@case("root", "root-is-a-file-not-a-directory")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    path = put(tmp, "rootfile", b"not a dir")
    spec.argv[2] = path
    spec.must_fail = False
    return spec


@case("root", "root-is-a-symlink-loop")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    os.symlink("loop", os.path.join(tmp, "loop"))
    spec.argv[2] = os.path.join(tmp, "loop")
    spec.must_fail = False
    return spec


# --- env files ----------------------------------------------------------------------------------------


def _envfile_case(name: str, data: Callable[[], bytes], must_fail: bool = True) -> None:
    @case("envfile", name)
    def _(tmp: str) -> Spec:
        spec = image(tmp)
        with open(spec.argv[4], "wb") as handle:
            handle.write(b"VIRTUAL_ENV=/opt/torch/.venv\n" + data())
        spec.must_fail = must_fail
        return spec


_envfile_case("envfile-crlf-and-export-prefix", lambda: b"export LD_LIBRARY_PATH=/x\r\nCUDA_VISIBLE_DEVICES=0\r\n")
_envfile_case("envfile-nul-bytes-and-invalid-utf8-key", lambda: b"A\x00B=1\n\xff\xfe=2\nNCCL_DEBUG=\x00\n")
_envfile_case("envfile-200000-lines", lambda: b"".join(b"K%d=v\n" % i for i in range(200_000)))
_envfile_case("envfile-key-only-equals-and-dup-virtual-env", lambda: b"=\n==\n=x\nVIRTUAL_ENV=\nVIRTUAL_ENV=/nowhere\n")
_envfile_case(
    "envfile-nvidia-require-5000-clauses",
    lambda: (
        b"NVIDIA_REQUIRE_CUDA="
        + b" ".join(b"brand=tesla,driver>=%d,driver<%d" % (i, i + 1) for i in range(5000))
        + b"\n"
    ),
)
_envfile_case(
    "envfile-cuda-visible-devices-200000-dups", lambda: b"CUDA_VISIBLE_DEVICES=" + b",".join([b"0"] * 200_000) + b"\n"
)


@case("envfile", "envfile-is-a-symlink-to-dev-zero")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    os.unlink(spec.argv[4])
    os.symlink("/dev/zero", spec.argv[4])
    spec.must_fail = False
    return spec


# --- snapshots ----------------------------------------------------------------------------------------


def _snap_case(name: str, edit: Callable[[dict], object], must_fail: bool = True, extra: tuple[str, ...] = ()) -> None:
    @case("snapshot", name)
    def _(tmp: str) -> Spec:
        return from_snapshot(tmp, edit, must_fail=must_fail, extra=list(extra))


def _set(path: str, value: object) -> Callable[[dict], None]:
    def edit(facts: dict) -> None:
        keys = path.split(".")
        target = facts
        for k in keys[:-1]:
            target = target[int(k)] if isinstance(target, list) else target.setdefault(k, {})
        target[keys[-1]] = value

    return edit


_snap_case("snap-loader-a-string", _set("loader", "x" * 1000))
_snap_case("snap-loader-needs-wrong-typed", _set("loader.needs", [1, None, {"soname": 5}, ["a"]]))
_snap_case(
    "snap-loader-needs-100000",
    lambda f: f["loader"].__setitem__("needs", f["loader"]["needs"] * 100_000) if f.get("loader") else None,
)
_snap_case(
    "snap-loader-loaded-version-5000-digits",
    lambda f: (
        [
            n.get("loaded", {}).__setitem__("version", HUGE)
            for n in (f.get("loader") or {}).get("needs", [])
            if isinstance(n.get("loaded"), dict)
        ]
        and None
    ),
)
_snap_case("snap-health-wrong-typed", _set("health", {"gpus": "x", "xids": 5, "nccl": [None], "errors": {"a": 1}}))
_snap_case("snap-health-list-of-nan", _set("health", [float("nan"), float("inf")]))
_snap_case(
    "snap-errors-crashed-wrong-types",
    _set("errors", [{"crashed": "yes", "probe": 5, "message": None}, {"crashed": True}, "x", 7]),
)
_snap_case(
    "snap-errors-crashed-packages-probe",
    _set("errors", [{"crashed": True, "probe": "packages", "message": "boom", "source": None}]),
)
_snap_case(
    "snap-errors-200000",
    _set("errors", [{"crashed": False, "probe": "driver", "message": "m", "source": None}] * 200_000),
)
_snap_case(
    "snap-gpus-60000-same-uuid-escape-names",
    _set(
        "gpus",
        [
            {
                "index": i,
                "name": "NVIDIA H200\x1b]0;t\x07\n\u2713 No issues",
                "compute_capability": "9.0",
                "uuid": "GPU-0",
                "memory_mib": -1,
                "mig_mode": "Disabled",
                "brand": "NVIDIA",
                "pci_bus_id": "x",
                "source": {"kind": "api", "where": "nvml"},
            }
            for i in range(60000)
        ],
    ),
)
_snap_case(
    "snap-gpu-cc-and-memory-odd-numbers",
    _set(
        "gpus",
        [
            {
                "index": True,
                "name": "H200",
                "compute_capability": "9." + HUGE,
                "memory_mib": 1e308,
                "mig_mode": None,
                "brand": "NVIDIA",
                "pci_bus_id": None,
                "source": None,
            }
        ],
    ),
)
_snap_case("snap-driver-version-with-newline-forgery", _set("driver.version", "580.159.04\n\u2713 No issues found"))
_snap_case("snap-torch-version-with-escapes", _set("packages.torch.version", "99.0\x1b[2J"))
_snap_case(
    "snap-packages-50000-entries",
    lambda f: f["packages"].update({f"p{i}": dict(f["packages"]["torch"], name=f"p{i}") for i in range(50000)}),
)


def _mode_weird(f: dict) -> None:
    f["mode"] = "\x00weird"


_snap_case("snap-mode-unknown-and-schema-bool", _mode_weird)
_snap_case("snap-runtime-wrong-typed", _set("runtime", {"devices": "x", "frameworks": [1, 2], "cuinit": {"rc": "x"}}))
_snap_case(
    "snap-report-kind-with-hostile-findings",
    lambda f: {
        "kind": "cudadoctor-report",
        "schema_version": 2,
        "facts": f,
        "findings": [{"code": 5, "status": {}}] * 10,
    },
)


# --- compare -----------------------------------------------------------------------------------------


def _nodes(tmp: str, count: int = 4) -> tuple[str, dict]:
    doc = snapshot_of(tmp)
    nodes = os.path.join(tmp, "nodes")
    for i in range(count):
        write_json(os.path.join(nodes, f"n{i}.json"), doc)
    return nodes, doc


def _compare_case(
    name: str, build: Callable[[str, str, dict], list[str] | None], must_fail: bool = False, extra: tuple[str, ...] = ()
) -> None:
    @case("compare", name)
    def _(tmp: str) -> Spec:
        nodes, doc = _nodes(tmp)
        more = build(tmp, nodes, doc) or []
        return Spec(["compare", nodes, *more, *extra], must_fail=must_fail)


def _bad_node(value_path: str, value: object) -> Callable[[str, str, dict], None]:
    def build(tmp: str, nodes: str, doc: dict) -> None:
        bad = json.loads(json.dumps(doc))
        _set(value_path, value)(bad["facts"])
        write_json(os.path.join(nodes, "bad.json"), bad)

    return build


_compare_case("compare-gpus-an-integer", _bad_node("gpus", 5), must_fail=True)
_compare_case("compare-nccl-an-integer", _bad_node("nccl", 7), must_fail=True)
_compare_case("compare-host-env-an-integer", _bad_node("host.env", 3), must_fail=True)
_compare_case("compare-packages-torch-a-list", _bad_node("packages.torch", [1]), must_fail=False)


def _driver_and_name(tmp: str, nodes: str, doc: dict) -> None:
    """Both changes on one node (applying two _bad_node builders would keep only the second)."""
    bad = json.loads(json.dumps(doc))
    _set("driver.kernel_module.version", "470.1.1")(bad["facts"])
    _set("gpus.0.name", "NVIDIA H200\u200b")(bad["facts"])
    write_json(os.path.join(nodes, "bad.json"), bad)


_compare_case("compare-driver-branch-differs-and-gpu-name-has-zero-width", _driver_and_name, must_fail=True)


@case("compare", "compare-one-node-lost-its-driver-and-gpus")
def _(tmp: str) -> Spec:
    nodes, doc = _nodes(tmp, 3)
    lost = json.loads(json.dumps(doc))
    lost["facts"]["gpus"] = []
    lost["facts"]["driver"] = None
    lost["facts"]["errors"] = [
        {"crashed": False, "probe": "driver", "message": "no NVIDIA driver found", "source": None}
    ]
    write_json(os.path.join(nodes, "lost.json"), lost)
    return Spec(["compare", nodes], must_fail=True)


@case("compare", "compare-600-nodes-parallel-one-wrong-typed")
def _(tmp: str) -> Spec:
    nodes, doc = _nodes(tmp, 600)
    bad = json.loads(json.dumps(doc))
    bad["facts"]["gpus"] = 5
    write_json(os.path.join(nodes, "n300.json"), bad)
    return Spec(["compare", nodes], must_fail=True)


@case("compare", "compare-same-node-names-in-two-dirs-one-differs")
def _(tmp: str) -> Spec:
    nodes, doc = _nodes(tmp, 3)
    other = os.path.join(tmp, "other")
    bad = json.loads(json.dumps(doc))
    bad["facts"]["nccl"][0]["version"] = "2.18.1"
    write_json(os.path.join(other, "n0.json"), bad)
    return Spec(["compare", nodes, other, os.path.join(nodes, "n0.json")], must_fail=True)


@case("compare", "compare-dir-with-fifo-loop-dir-and-devnull-json")
def _(tmp: str) -> Spec:
    nodes, _doc = _nodes(tmp, 2)
    os.mkfifo(os.path.join(nodes, "fifo.json"))
    os.symlink("loop.json", os.path.join(nodes, "loop.json"))
    os.symlink("/dev/null", os.path.join(nodes, "null.json"))
    os.mkdir(os.path.join(nodes, "dir.json"))
    return Spec(["compare", nodes])


@case("compare", "compare-nodes-facts-empty-and-null")
def _(tmp: str) -> Spec:
    nodes, _doc = _nodes(tmp, 3)
    write_json(os.path.join(nodes, "empty.json"), {"kind": "cudadoctor-facts", "schema_version": 2, "facts": {}})
    return Spec(["compare", nodes], must_fail=True)


@case("compare", "compare-5000-tiny-nodes")
def _(tmp: str) -> Spec:
    nodes = os.path.join(tmp, "nodes")
    for i in range(5000):
        write_json(
            os.path.join(nodes, f"node{i}.json"),
            {
                "kind": "cudadoctor-facts",
                "facts": {"gpus": [{"name": "H200"}] * (i % 3), "driver": {"version": f"{500 + i % 2}.1"}},
            },
        )
    return Spec(["compare", nodes], must_fail=True)


# issue #27's compare classes: duplicate votes, echoed huge fields and counts, envelopes check --from refuses,
# control characters and Markdown from nodes; issue #32's "compare what loads"


@case("compare", "compare-one-file-named-three-times-in-a-1-vs-1-tie")
def _(tmp: str) -> Spec:
    nodes, doc = _nodes(tmp, 1)
    other = json.loads(json.dumps(doc))
    other["facts"]["nccl"] = [{**c, "version": "2.18.1"} for c in other["facts"].get("nccl") or []] or [
        {
            "library": "nccl",
            "version": "2.18.1",
            "origin": "pip",
            "path": "/x",
            "source": {"kind": "file", "where": "/x"},
        }
    ]
    odd = write_json(os.path.join(tmp, "odd", "n9.json"), other)
    first = os.path.join(nodes, "n0.json")
    return Spec(
        ["compare", first, odd, first, first, "-f", "json"],
        must_fail=True,  # no majority: exit 1, but no node named
        check=lambda p: "" if '"outliers": []' in p.stdout else "a file named three times outvoted another",
    )


def _output_under(limit: int) -> Callable[[subprocess.CompletedProcess[str]], str]:
    return lambda p: (
        "" if len(p.stdout) + len(p.stderr) < limit else f"{len(p.stdout) + len(p.stderr):,} bytes of output"
    )


@case("compare", "compare-a-20-mb-gpu-name")
def _(tmp: str) -> Spec:
    nodes, doc = _nodes(tmp)
    _bad_node("gpus.0.name", "H" * 20_000_000)(tmp, nodes, doc)
    return Spec(["compare", nodes], must_fail=True, check=_output_under(20_000))


@case("compare", "compare-a-report-of-a-million-findings")
def _(tmp: str) -> Spec:
    nodes, doc = _nodes(tmp, 3)
    report = json.loads(json.dumps(doc))
    report["kind"] = "cudadoctor-report"
    report["findings"] = [{"code": f"CD{i % 1000:03d}", "status": "fail"} for i in range(1_000_000)]
    write_json(os.path.join(nodes, "many.json"), report)
    return Spec(["compare", nodes], must_fail=True, check=_output_under(20_000))


@case("compare", "compare-schema-version-from-the-future")
def _(tmp: str) -> Spec:
    nodes, doc = _nodes(tmp, 3)
    write_json(os.path.join(nodes, "new.json"), {**doc, "schema_version": 99})
    return Spec(["compare", nodes], ok_exits=(2,))


@case("compare", "compare-file-names-with-escapes-and-newlines")
def _(tmp: str) -> Spec:
    nodes, doc = _nodes(tmp, 3)
    odd = json.loads(json.dumps(doc))
    odd["facts"]["gpus"] = []
    write_json(os.path.join(nodes, "n\x1b]0;pwned\x07\n\u2713 all agree.json".encode().decode("unicode_escape")), odd)
    return Spec(
        ["compare", nodes],
        must_fail=True,
        check=lambda p: "a control character reached the terminal" if any(c in p.stdout for c in "\x1b\x07") else "",
    )


@case("compare", "compare-markdown-html-and-pipes-from-an-image")
def _(tmp: str) -> Spec:
    nodes, doc = _nodes(tmp, 3)
    odd = json.loads(json.dumps(doc))
    odd["facts"]["host"]["env"].append(
        {"name": "NCCL_NET_PLUGIN", "value": "x | <img src=x onerror=alert(1)> @team", "claims": None}
    )
    write_json(os.path.join(nodes, "odd|<b>.json"), odd)
    return Spec(
        ["compare", nodes, "-f", "markdown"],
        must_fail=True,
        check=lambda p: (
            "raw HTML or a mention in the Markdown"
            if "<img" in p.stdout or "<b>" in p.stdout or " @team" in p.stdout
            else ""
        ),
    )


@case("compare", "compare-one-node-preloads-another-nccl")
def _(tmp: str) -> Spec:
    nodes, doc = _nodes(tmp, 3)
    odd = json.loads(json.dumps(doc))
    odd["facts"]["nccl"] = [
        {
            "library": "nccl",
            "version": "2.28.9",
            "origin": "pip",
            "path": "/v/nvidia_nccl_cu13-2.28.9.dist-info",
            "source": {"kind": "file", "where": "/v"},
            "lib_paths": ["/v/nvidia/nccl/lib/libnccl.so.2"],
        },
        {
            "library": "nccl",
            "version": "2.28.3",
            "origin": "system",
            "path": "/usr/include/nccl.h",
            "source": {"kind": "file", "where": "/usr/include/nccl.h"},
            "lib_paths": ["/lib/x86_64-linux-gnu/libnccl.so.2"],
        },
    ]
    for d in (doc, odd):
        d["facts"]["nccl"] = odd["facts"]["nccl"]
    for i in range(3):
        write_json(os.path.join(nodes, f"n{i}.json"), {**doc, "facts": {**doc["facts"], "loader": None}})
    odd["facts"]["loader"] = None
    odd["facts"]["host"]["env"].append(
        {"name": "LD_PRELOAD", "value": "/usr/lib/x86_64-linux-gnu/libnccl.so.2", "claims": None}
    )
    write_json(os.path.join(nodes, "odd.json"), odd)
    return Spec(["compare", nodes], must_fail=True,
                check=lambda p: "" if "unset LD_PRELOAD" in p.stdout else "the node preloading NCCL got no fix")  # fmt: skip


@case("compare", "baseline-100000-unknown-keys")
def _(tmp: str) -> Spec:
    nodes, _doc = _nodes(tmp, 3)
    baseline = write_json(os.path.join(tmp, "b.json"), {f"k{i}\x1b[2J": "x" for i in range(100_000)})
    return Spec(["compare", nodes, "--baseline", baseline], ok_exits=(2,), check=_output_under(2_000))


@case("compare", "expect-hosts-a-trillion-names")
def _(tmp: str) -> Spec:
    nodes, _doc = _nodes(tmp, 3)
    return Spec(["compare", nodes, "--expect-hosts", "n[0-999999999999]"], ok_exits=(2,), check=_output_under(2_000))


@case("compare", "expect-hosts-a-file-with-a-10-mb-name")
def _(tmp: str) -> Spec:
    nodes, _doc = _nodes(tmp, 3)
    hosts = put(tmp, "hosts", "n[0-2]\n" + "x" * 10_000_000 + "\x1b[2J\n")
    return Spec(["compare", nodes, "--expect-hosts", hosts], ok_exits=(2,), check=_output_under(2_000))


def _baseline_case(name: str, data: Callable[[str], str]) -> None:
    @case("compare", name)
    def _(tmp: str) -> Spec:
        nodes, _doc = _nodes(tmp, 3)
        return Spec(["compare", nodes, "--baseline", data(tmp)])


_baseline_case("baseline-a-json-list", lambda t: write_json(os.path.join(t, "b.json"), [1, 2]))
_baseline_case(
    "baseline-dict-values-and-huge",
    lambda t: write_json(os.path.join(t, "b.json"), {"nccl": {"a": [1]}, "driver_branch": HUGE * 100}),
)
_baseline_case(
    "baseline-nested-200000-deep", lambda t: put(t, "b.json", '{"nccl":' + "[" * 200000 + "]" * 200000 + "}")
)


def _fifo(t: str) -> str:
    path = os.path.join(t, "b.json")
    os.mkfifo(path)
    return path


_baseline_case("baseline-is-a-fifo", _fifo)
_baseline_case(
    "baseline-facts-wrong-typed-report",
    lambda t: write_json(
        os.path.join(t, "b.json"), {"kind": "cudadoctor-facts", "facts": {"gpus": 1, "nccl": "x", "host": []}}
    ),
)


# --- --output targets ---------------------------------------------------------------------------------


def _output_case(name: str, target: Callable[[str], tuple[str, list[str]]], ok: tuple[int, ...] = (0, 1, 2)) -> None:
    @case("output", name)
    def _(tmp: str) -> Spec:
        doc = snapshot_of(tmp)
        snap = write_json(os.path.join(tmp, "s.json"), doc)
        out, watch = target(tmp)
        return Spec(["check", "--from", snap, "-f", "json", "-o", out], ok_exits=ok, watch=watch)


def _out_link_to_other_file(tmp: str) -> tuple[str, list[str]]:
    os.makedirs(os.path.join(tmp, "victim"))
    victim = put(tmp, "victim/important.txt", "keep me\n")
    os.symlink(os.path.join(tmp, "victim"), os.path.join(tmp, "outdir"))
    return os.path.join(tmp, "outdir", "important.txt", "x.json"), [victim]


def _out_fifo_no_reader(tmp: str) -> tuple[str, list[str]]:
    path = os.path.join(tmp, "out.fifo")
    os.mkfifo(path)
    return path, []


def _out_dangling(tmp: str) -> tuple[str, list[str]]:
    os.symlink(os.path.join(tmp, "nowhere", "deeper", "r.json"), os.path.join(tmp, "dangling.json"))
    return os.path.join(tmp, "dangling.json"), []


def _out_hardlink(tmp: str) -> tuple[str, list[str]]:
    original = put(tmp, "orig.txt", "orig\n")
    os.link(original, os.path.join(tmp, "hard.json"))
    return os.path.join(tmp, "hard.json"), []


def _out_socket(tmp: str) -> tuple[str, list[str]]:
    return replace_with(tmp, "/out.sock", "socket"), []


def _out_long(tmp: str) -> tuple[str, list[str]]:
    return os.path.join(tmp, *(["d" * 250] * 20), "r.json"), []


def _out_in_proc(tmp: str) -> tuple[str, list[str]]:
    return "/proc/self/status", []


def _out_newline_name(tmp: str) -> tuple[str, list[str]]:
    return os.path.join(tmp, "r\n\u2713 ok\x1b[2J.json"), []


_output_case("output-path-through-a-file-used-as-dir", _out_link_to_other_file)
_output_case("output-fifo-with-no-reader", _out_fifo_no_reader)
_output_case("output-dangling-symlink-into-missing-dirs", _out_dangling)
_output_case("output-hardlinked-file", _out_hardlink)
_output_case("output-unix-socket", _out_socket)
_output_case("output-path-longer-than-path-max", _out_long)
_output_case("output-into-proc-self-status", _out_in_proc)
_output_case("output-name-with-newline-and-escapes", _out_newline_name)


# --- settings in parent directories --------------------------------------------------------------------


def _settings_case(name: str, fname: str, data: bytes, must_fail: bool = True) -> None:
    @case("settings", name)
    def _(tmp: str) -> Spec:
        spec = image(tmp)
        parent = os.path.join(tmp, "proj")
        work = os.path.join(parent, "a", "b", "c")
        os.makedirs(work)
        put(parent, fname, data)
        spec.cwd = work
        spec.must_fail = must_fail
        return spec


_settings_case("settings-dotfile-select-nothing-matching", ".cudadoctor.toml", b'select = ["CD0000"]\n')
_settings_case("settings-dotfile-keys-with-escapes", ".cudadoctor.toml", b'"\\u001b[2Jfail-on" = "never"\n')
_settings_case("settings-dotfile-is-a-fifo", ".cudadoctor.toml", b"")
_settings_case(
    "settings-pyproject-cudadoctor-is-an-array-of-tables", "pyproject.toml", b"[[tool.cudadoctor]]\nfail-on='never'\n"
)
_settings_case(
    "settings-pyproject-require-5000-digit-version",
    "pyproject.toml",
    b'[tool.cudadoctor]\nrequire = ["torch>=' + HUGE.encode() + b'", "driver>=' + HUGE.encode() + b'"]\n',
)
_settings_case(
    "settings-dotfile-10000-ignores-not-matching",
    ".cudadoctor.toml",
    b"ignore = [" + b",".join(b'"CD%05d"' % (i + 10000) for i in range(10000)) + b"]\n",
)


@case("settings", "settings-dotfile-fifo-really")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    parent = os.path.join(tmp, "proj")
    work = os.path.join(parent, "w")
    os.makedirs(work)
    os.mkfifo(os.path.join(parent, ".cudadoctor.toml"))
    spec.cwd = work
    spec.must_fail = False
    return spec


# --- suggest --------------------------------------------------------------------------------------------


def _suggest_case(name: str, *args: str) -> None:
    @case("suggest", name)
    def _(tmp: str) -> Spec:
        return Spec(["suggest", "--no-probe", *args])


_suggest_case("suggest-target-10000-chars", "--target", "torch" + ">=1" * 3000)
_suggest_case("suggest-target-url-and-marker", "--target", "torch @ file:///etc/passwd ; python_version > '3'")
_suggest_case("suggest-target-arbitrary-equality", "--target", "torch===\x1b[2J", "--python", "3.12")
_suggest_case("suggest-target-impossible-range", "torch>=2.6,<2.6", "--python", "3.12", "--driver", "580")
_suggest_case("suggest-gpu-1000-flags", *[a for i in range(1000) for a in ("--gpu", f"sm_{i}")], "--python", "3.12")
_suggest_case("suggest-gpu-escape-name", "--gpu", "RTX\x1b]0;x\x07 4090\n", "--python", "3.12")
_suggest_case("suggest-gpu-cc-huge", "--gpu", "9." + HUGE, "--python", "3.12")
_suggest_case("suggest-driver-negative-and-huge", "--driver", "-1." + HUGE, "--python", "3.12")
_suggest_case("suggest-python-3-alone-and-cuda-nan", "--python", "3", "--cuda", "nan")
_suggest_case("suggest-cuda-0-and-platform-odd", "--cuda", "0.0", "--platform", "linux-\x1b[2Jx86", "--python", "3.12")
_suggest_case(
    "suggest-format-dockerfile-with-escapes-target",
    "vllm",
    "--gpu",
    "H200",
    "--driver",
    "580\n",
    "--python",
    "3.12",
    "-f",
    "dockerfile",
)


# --- update against a hostile loopback server -----------------------------------------------------------


class HostileServer:
    """A raw-socket server on 127.0.0.1 answering every request with ``respond(conn, request_line)``."""

    def __init__(self, respond: Callable[[socket.socket, str, int], None]) -> None:
        self.respond = respond
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.5)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.served = 0
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.stop.is_set() and self.served < 200:  # bounded
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.served += 1
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        try:
            data = b""
            while b"\r\n\r\n" not in data and len(data) < 65536:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
            line = data.split(b"\r\n", 1)[0].decode("latin-1")
            self.respond(conn, line, self.port)
        except OSError:
            pass
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


def _send(conn: socket.socket, data: bytes, stop_after: float = 20.0) -> None:
    start = time.monotonic()
    view = memoryview(data)
    while view and time.monotonic() - start < stop_after:
        sent = conn.send(view[:65536])
        view = view[sent:]


def _resp(status: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
    head = f"HTTP/1.1 {status}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
    return head.encode("latin-1") + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body


def _update_case(
    name: str,
    respond: Callable[[socket.socket, str, int], None],
    check: Callable[[subprocess.CompletedProcess[str]], str] | None = None,
) -> None:
    @case("update", name)
    def _(tmp: str) -> Spec:
        server = HostileServer(respond)
        cache = os.path.join(tmp, "cache")
        os.makedirs(cache)
        marker = put(cache, "index-releases.json.keep", "pre-existing\n")
        old = put(cache, "index-releases.json", '{"format": 1, "projects": {}}')
        return Spec(
            [
                "update",
                "--index-url",
                f"http://127.0.0.1:{server.port}/simple/",
                "--cache-dir",
                cache,
                "--limit",
                "3",
                "torch",
            ],
            ok_exits=(0, 1, 2, 3),  # 3: a failed refresh (README), one line, the old cache kept
            watch=[marker, old],
            env={"PIP_CONFIG_FILE": os.devnull, "NO_PROXY": "*", "no_proxy": "*"},
            check=check,
            cleanup=server.close,
        )


def _huge_header(conn: socket.socket, line: str, port: int) -> None:
    _send(conn, b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * (8 << 20) + b"\r\n\r\n")


def _endless_headers(conn: socket.socket, line: str, port: int) -> None:
    head = b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(200_000))
    _send(conn, head, stop_after=20)


def _redirect_file(conn: socket.socket, line: str, port: int) -> None:
    _send(conn, _resp("302 Found", [("Location", "file:///etc/passwd")], b""))


def _redirect_loop(conn: socket.socket, line: str, port: int) -> None:
    path = line.split(" ")[1] if " " in line else "/"
    _send(conn, _resp("301 Moved", [("Location", f"http://127.0.0.1:{port}{path}x")], b""))


def _gzip_bomb(conn: socket.socket, line: str, port: int) -> None:
    bomb = gzip.compress(b"\0" * (256 << 20), 9)
    _send(
        conn,
        _resp("200 OK", [("Content-Type", "application/vnd.pypi.simple.v1+json"), ("Content-Encoding", "gzip")], bomb),
    )


def _deep_json(conn: socket.socket, line: str, port: int) -> None:
    body = b'{"meta":{"api-version":"1.1"},"files":' + b"[" * 500_000 + b"]" * 500_000 + b"}"
    _send(conn, _resp("200 OK", [("Content-Type", "application/vnd.pypi.simple.v1+json")], body))


def _hostile_index(conn: socket.socket, line: str, port: int) -> None:
    if line.split(" ")[1].endswith(".metadata"):
        meta = (
            "Metadata-Version: 2.1\nName: torch\nVersion: "
            + HUGE
            + "\nRequires-Dist: nvidia-cudnn-cu13 =="
            + HUGE
            + "; "
            + "(" * 3000
            + 'python_version>"3"'
            + ")" * 3000
            + "\nRequires-Python: >="
            + HUGE
            + "\n"
        ).encode()
        _send(conn, _resp("200 OK", [("Content-Type", "text/plain")], meta))
        return
    files = [
        {
            "filename": f"torch-{v}-cp312-cp312-manylinux_2_28_x86_64.whl",
            "url": f"/f/{i}.whl",
            "hashes": {},
            "core-metadata": True,
            "requires-python": ">=3." + HUGE,
        }
        for i, v in enumerate(["2.99.0+cu999", HUGE + ".0", "2.6.0\x1b[2J", "../../../x"])
    ]
    files.append({"filename": 5, "url": None})
    body = json.dumps({"meta": {"api-version": "1.1"}, "name": "torch", "files": files, "versions": [HUGE]}).encode()
    _send(conn, _resp("200 OK", [("Content-Type", "application/vnd.pypi.simple.v1+json")], body))


def _retry_after_nan(conn: socket.socket, line: str, port: int) -> None:
    _send(conn, _resp("503 Busy", [("Retry-After", "99999999999999999999")], b""))


def _content_length_lies(conn: socket.socket, line: str, port: int) -> None:
    _send(
        conn,
        b'HTTP/1.1 200 OK\r\nContent-Type: application/vnd.pypi.simple.v1+json\r\nContent-Length: 100000\r\n\r\n{"files":[',
    )


def _http09_garbage(conn: socket.socket, line: str, port: int) -> None:
    _send(conn, b"\x00\xff" * 5000 + b"\r\n\r\n")


def _continue_flood(conn: socket.socket, line: str, port: int) -> None:
    _send(conn, b"HTTP/1.1 100 Continue\r\n\r\n" * 100_000, stop_after=20)


_update_case("update-8MB-header-line", _huge_header)
_update_case("update-200000-header-lines", _endless_headers)
_update_case("update-redirect-to-file-scheme", _redirect_file)
_update_case("update-redirect-loop-growing-url", _redirect_loop)
_update_case("update-gzip-bomb-256MB", _gzip_bomb)
_update_case("update-json-500000-deep", _deep_json)
_update_case("update-index-and-metadata-with-5000-digit-versions", _hostile_index)
_update_case("update-503-with-20-digit-retry-after", _retry_after_nan)
_update_case("update-content-length-lies-then-close", _content_length_lies)
_update_case("update-binary-garbage-not-http", _http09_garbage)
_update_case("update-100-continue-flood", _continue_flood)


# --- local state: the user cache ---------------------------------------------------------------------


@case("cache", "scan-cache-poisoned-dir-listing-wrong-typed")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    root = spec.argv[2]
    put(root, f"{SITE}/torch/lib/libtorch_cuda.so", elf(["libcudart.so.13"]))
    cache = os.path.join(tmp, "xdg", "cudadoctor")
    os.makedirs(cache)
    site = os.path.join(root, SITE.lstrip("/"))
    dirs = {}
    for d in (site, os.path.join(site, "torch"), os.path.join(site, "torch", "lib")):
        dirs[d] = [os.stat(d).st_mtime_ns, 5, None]
    write_json(os.path.join(cache, "elf-scan.json"), {"format": 1, "files": {"x": 1}, "dirs": dirs})
    for fmt in (2, 3):
        write_json(os.path.join(cache, f"elf-scan-{fmt}.json"), {"format": fmt, "files": {}, "dirs": dirs})
    spec.env = {"XDG_CACHE_HOME": os.path.join(tmp, "xdg")}
    return spec


@case("cache", "scan-cache-nested-200000-deep-and-fifo-tmp")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    put(spec.argv[2], f"{SITE}/torch/lib/libtorch_cuda.so", elf(["libcudart.so.13"]))
    cache = os.path.join(tmp, "xdg", "cudadoctor")
    os.makedirs(cache)
    for name in ("elf-scan.json", "scan-cache.json", "elf-scan-cache.json"):
        put(cache, name, "[" * 200_000 + "]" * 200_000)
    spec.env = {"XDG_CACHE_HOME": os.path.join(tmp, "xdg")}
    return spec


@case("cache", "xdg-cache-home-is-a-file-and-home-unwritable")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    put(spec.argv[2], f"{SITE}/torch/lib/libtorch_cuda.so", elf(["libcudart.so.13"]))
    spec.env = {"XDG_CACHE_HOME": put(tmp, "xdgfile", "x"), "HOME": "/proc"}
    return spec


# --- issue #27: what could not be read is never "fine" ------------------------------------------------------
#
# The classes of the second adversarial round outside `compare`: the loader view's objects not read or left out, a
# library for another CPU, the ELF scan cache trusted when stale or foreign, a closed stdout, an index page with no
# link in it, unknown --baseline keys and escapes in the GitHub annotations. Each judges the outcome, not only that
# nothing crashed: CD304 must not be ok or not applicable where a need is unknown or unmet.


def _finding(proc: subprocess.CompletedProcess[str], code: str) -> dict[str, object]:
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        return {}
    return next((f for f in doc.get("findings", []) if isinstance(f, dict) and f.get("code") == code), {})


def _cd304_is(*allowed: str) -> Callable[[subprocess.CompletedProcess[str]], str]:
    def judge(proc: subprocess.CompletedProcess[str]) -> str:
        found = _finding(proc, "CD304")
        status = found.get("status")
        if status in allowed:
            return ""
        why = str(found.get("reason") or found.get("message") or "")[:160]
        return f"FAIL-OPEN: CD304 is {status!r}, expected {' or '.join(allowed)} ({why})"

    return judge


def _loader_case(name: str, build: Callable[[str], object], *allowed: str) -> None:
    @case("loader", name)
    def _(tmp: str) -> Spec:
        spec = image(tmp, "--format", "json")
        build(spec.argv[2])
        spec.check = _cd304_is(*(allowed or ("unknown",)))
        return spec


_TORCH_LIB = f"{SITE}/torch/lib/libtorch_cuda.so"
_loader_case("loader-truncated-object-is-unknown-not-not-applicable", lambda r: put(r, _TORCH_LIB, b"\x7fELF\x02\x01"))
_loader_case(
    "loader-lying-program-headers-is-unknown",
    lambda r: put(r, _TORCH_LIB, elf(["libcudart.so.13"], phoff=1 << 40)),
)
_loader_case(
    "loader-runpath-of-20000-bytes-is-unknown",
    lambda r: put(r, _TORCH_LIB, elf(["libcudart.so.13"], ["/opt/" + "x" * 20_000])),
)
_loader_case(
    "loader-truncated-object-beside-one-that-resolves",
    lambda r: (
        put(r, _TORCH_LIB, elf(["libcudart.so.13"], ["$ORIGIN/../../nvidia/cu13/lib"])),
        put(r, f"{SITE}/nvidia/cu13/lib/libcudart.so.13", elf()),
        put(r, f"{SITE}/torch/lib/libtorch_cuda_linalg.so", elf(["libcusolver.so.12"], truncate=100)),
    ),
)


def _many_objects(root: str) -> None:
    blob = elf(["libc.so.6"])
    for i in range(5001):
        put(root, f"{SITE}/manyobjects/lib{i}.so", blob)


_loader_case("loader-5001-objects-past-the-cap-is-unknown", _many_objects)
_loader_case(
    "loader-aarch64-libcudart-in-an-x86-64-image-is-not-found",
    lambda r: (
        put(r, _TORCH_LIB, elf(["libcudart.so.13"], ["$ORIGIN/../../nvidia/cu13/lib"])),
        put(r, f"{SITE}/nvidia/cu13/lib/libcudart.so.13", elf(machine=183)),
    ),
    "fail",
)


def _warm_then(tmp: str, spec: Spec, change: Callable[[str], None]) -> None:
    """Run the check once (the scan cache is written), then ``change`` the image or the cache."""
    run_cd(spec.argv, tmp, spec.env)
    change(spec.argv[2])


@case("cache", "scan-cache-same-size-replacement-with-mtime-restored")
def _(tmp: str) -> Spec:
    spec = image(tmp, "--format", "json")
    root = spec.argv[2]
    put(root, _TORCH_LIB, elf(["libcudart.so.13"], ["$ORIGIN/../../nvidia/cu13/lib"]))
    put(root, f"{SITE}/nvidia/cu13/lib/libcudart.so.13", elf())

    def swap(root: str) -> None:
        path = os.path.join(root, _TORCH_LIB.lstrip("/"))
        before = os.stat(path)
        with open(path, "r+b") as handle:  # in place, same size: libcudart.so.13 -> libcudart.so.93
            handle.write(elf(["libcudart.so.93"], ["$ORIGIN/../../nvidia/cu13/lib"]))
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))

    _warm_then(tmp, spec, swap)
    spec.check = _cd304_is("fail")
    return spec


def _poisoned_scan_cache(tmp: str, make_foreign: Callable[[str], None]) -> Spec:
    spec = image(tmp, "--format", "json")
    put(spec.argv[2], _TORCH_LIB, elf(["libcudart.so.93"]))  # needs what nothing has: CD304 fails

    def poison(_root: str) -> None:
        where = os.path.join(tmp, "xdg", "cudadoctor", "elf-scan.json")
        with open(where) as handle:
            doc = json.load(handle)
        doc["files"] = {path: [entry[0], None] for path, entry in doc["files"].items()}  # "needs nothing"
        write_json(where, doc)
        make_foreign(where)

    _warm_then(tmp, spec, poison)
    spec.check = _cd304_is("fail")
    return spec


@case("cache", "scan-cache-poisoned-and-world-writable")
def _(tmp: str) -> Spec:
    return _poisoned_scan_cache(tmp, lambda path: os.chmod(path, 0o666))


@case("cache", "scan-cache-poisoned-in-a-group-writable-directory")
def _(tmp: str) -> Spec:
    return _poisoned_scan_cache(tmp, lambda path: os.chmod(os.path.dirname(path), 0o775))


if IS_ROOT:

    @case("cache", "scan-cache-poisoned-and-owned-by-another-user")
    def _(tmp: str) -> Spec:
        return _poisoned_scan_cache(tmp, lambda path: os.chown(path, 4242, 4242))


def _no_output_expected(proc: subprocess.CompletedProcess[str]) -> str:
    return (
        "" if proc.returncode == 141 and not proc.stderr.strip() else f"exit {proc.returncode}, {proc.stderr[-120:]!r}"
    )


@case("output", "stdout-closed-before-the-start")
def _(tmp: str) -> Spec:
    spec = image(tmp)
    spec.must_fail = False
    spec.ok_exits = (141,)
    spec.close_stdout = True
    spec.check = _no_output_expected
    return spec


@case("output", "github-annotations-with-escapes-in-names")
def _(tmp: str) -> Spec:
    spec = image(tmp, "--format", "github")
    put(spec.argv[2], f"{SITE}/evil\x1b]0;owned\x07\n/lib\x1b[2J.so", elf(["libcudart.so.93"]))

    def inert(proc: subprocess.CompletedProcess[str]) -> str:
        raw = sorted({c for c in proc.stdout if (ord(c) < 32 and c != "\n") or c == "\x7f"})
        return f"raw control characters in the output: {raw!r}" if raw else ""

    spec.check = inert
    return spec


def _linkless_page(conn: socket.socket, line: str, port: int) -> None:
    _send(conn, _resp("200 OK", [("Content-Type", "text/html")], b'<html><a href="' + b"x" * (4 << 20)))


def _says_why(proc: subprocess.CompletedProcess[str]) -> str:
    last = proc.stderr.strip().splitlines()[-1:] or [""]
    return "" if "without a single file link" in last[0] else f"said {last[0][:160]!r}"


_update_case("update-index-page-of-4MB-without-a-link", _linkless_page, _says_why)


# --- the runner ---------------------------------------------------------------------------------------


def run_cd(
    argv: list[str], cwd: str, env_extra: dict[str, str], close_stdout: bool = False
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDADOCTOR", "PIP_", "VIRTUAL_ENV", "CONDA"))}
    env.update(
        {
            "PYTHONPATH": REPO,
            "NO_COLOR": "1",
            "HOME": os.path.join(cwd, "home"),
            "XDG_CACHE_HOME": os.path.join(cwd, "xdg"),
        }
    )
    env.update(env_extra)
    return subprocess.run(
        [sys.executable, "-m", "cudadoctor", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
        preexec_fn=(lambda: os.close(1)) if close_stdout else None,  # in the child, before exec: `>&-`
    )


def fingerprint(path: str) -> tuple[object, ...]:
    try:
        st = os.lstat(path)
    except OSError as exc:
        return ("missing", exc.errno)
    digest = ""
    if stat.S_ISREG(st.st_mode):
        with open(path, "rb") as handle:
            digest = hashlib.sha256(handle.read()).hexdigest()
    return (stat.S_IFMT(st.st_mode), st.st_ino, digest)


def tree_fingerprint(root: str) -> dict[str, tuple[object, ...]]:
    out: dict[str, tuple[object, ...]] = {}
    for directory, dirs, files in os.walk(root):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(directory, d))]:
            full = os.path.join(directory, name)
            st = os.lstat(full)
            out[full] = (stat.S_IFMT(st.st_mode), st.st_ino, st.st_size, st.st_mtime_ns)
    return out


def run_one(group: str, name: str, build: Callable[[str], Spec], keep: bool) -> dict[str, Any]:
    tmp = tempfile.mkdtemp(prefix=f"hostile-{name[:40]}-")
    result: dict[str, Any] = {"group": group, "name": name, "tmp": tmp}
    spec: Spec | None = None
    try:
        spec = build(tmp)
        # everything built before the run must stay as it was (image roots, inputs, the watched files)
        before = tree_fingerprint(tmp)
        watched = {p: fingerprint(p) for p in spec.watch}
        cwd = spec.cwd or tmp
        start = time.monotonic()
        try:
            proc = run_cd(spec.argv, cwd, spec.env, spec.close_stdout)
            rc: int | str = proc.returncode
            out = proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as exc:
            rc, out, proc = "TIMEOUT", (str(exc.stdout or "") + str(exc.stderr or "")), None
        result["seconds"] = round(time.monotonic() - start, 2)
        result["rc"] = rc
        result["traceback"] = "Traceback (most recent call last)" in out or "internal error" in out
        after = tree_fingerprint(tmp)
        target = spec.argv[spec.argv.index("-o") + 1] if "-o" in spec.argv else None  # meant to be written
        changed = sorted(
            p
            for p in before
            if p != target and p in after and before[p] != after[p] and "/xdg/" not in p and "/cache/" not in p
        )
        removed = sorted(p for p in before if p not in after and "/xdg/" not in p and "/cache/" not in p)
        changed += [p for p, fp in watched.items() if fingerprint(p) != fp]
        result["clobbered"] = changed + removed
        problems = []
        if rc == "TIMEOUT":
            problems.append("hang (no exit within 30 s)")
        if result["traceback"]:
            problems.append("traceback / internal error")
        if rc not in spec.ok_exits and rc != "TIMEOUT":
            problems.append(f"exit {rc} not in {spec.ok_exits}")
        if changed or removed:
            problems.append(f"modified pre-existing file(s): {(changed + removed)[:3]}")
        note = ""
        if spec.must_fail and rc == 0:
            again = run_cd([*spec.argv, "--fail-on-unknown"], cwd, spec.env) if spec.argv[0] == "check" else None
            if again is not None and again.returncode == 1:
                note = "passes unless --fail-on-unknown"
            else:
                problems.append("FAIL-OPEN: the gate must fail (exit 1) but exited 0")
        if spec.check is not None and proc is not None:
            extra = spec.check(proc)
            if extra:
                problems.append(extra)
        result["problems"] = problems
        result["note"] = note
        result["last"] = [line for line in out.strip().splitlines() if line.strip()][-2:] if out.strip() else []
    except Exception as exc:  # the harness itself failed to build the input
        result.update(
            rc="-",
            seconds=0,
            traceback=False,
            clobbered=[],
            problems=[f"HARNESS: {type(exc).__name__}: {exc}"],
            note="",
            last=[],
        )
    finally:
        if spec is not None and spec.cleanup is not None:
            spec.cleanup()
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    result["argv"] = spec.argv if spec is not None else []
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only inputs whose name contains this")
    parser.add_argument("--keep", action="store_true", help="keep each input's temp dir (to reproduce)")
    parser.add_argument("--json", help="also write every result here")
    args = parser.parse_args()
    selected = [c for c in CASES if args.k in c[1]]
    results = []
    for group, name, build in selected:
        r = run_one(group, name, build, args.keep)
        results.append(r)
        mark = "FAIL" if r["problems"] else "held"
        print(
            f"{mark:4}  {group:8} {name:62} rc={r['rc']!s:7} {r['seconds']:6}s"
            f"  tb={'Y' if r['traceback'] else 'n'} clob={'Y' if r['clobbered'] else 'n'}"
            + (f"  [{r['note']}]" if r["note"] else ""),
            flush=True,
        )
        for problem in r["problems"]:
            print(f"        -> {problem}")
            for line in r["last"]:
                print(f"           | {line[:200]}")
    held = sum(1 for r in results if not r["problems"])
    print(f"\nTOTAL: {len(results)} tried, {held} held, {len(results) - held} failed")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=1, default=str)
    return 0 if held == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
