"""The first run's scan spread over helper processes (probes/prescan.py): real helpers over real ELF files written
at test time; the loader view they feed is the one the doctor computes alone, and the doctor then reads no ELF file."""

from __future__ import annotations

import json
import os

import pytest

from cudadoctor.probes import linkage, packages, prescan, scancache
from tests.conftest import make_ctx
from tests.elfwriter import shared_object


def _put(path, data: bytes | str = b"") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A venv's site-packages as torch 2.5.1 with NVIDIA's wheels and a few other packages lay it out."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    site = tmp_path / "venv" / "lib" / "python3.12" / "site-packages"
    for name, version in (("torch", "2.5.1"), ("nvidia-cudnn-cu12", "9.1.0.70"), ("nvidia-cusparse-cu12", "12.3.1.170"),
                          ("nvidia-nvjitlink-cu12", "12.4.127"), ("numpy", "2.1.0")):  # fmt: skip
        _put(site / f"{name.replace('-', '_')}-{version}.dist-info" / "METADATA", f"Name: {name}\nVersion: {version}\n")
    runpath = ["$ORIGIN/../../nvidia/cudnn/lib", "$ORIGIN/../../nvidia/cusparse/lib", "$ORIGIN"]
    _put(site / "torch/lib/libtorch_cuda.so", shared_object(["libcudnn.so.9", "libcusparse.so.12", "libc.so.6"], None,
                                                            runpath))  # fmt: skip
    _put(site / "torch/_C.cpython-312-x86_64-linux-gnu.so", shared_object(["libtorch_python.so"]))
    _put(site / "nvidia/cudnn/lib/libcudnn.so.9", shared_object(["libc.so.6"], "libcudnn.so.9"))
    _put(site / "nvidia/cusparse/lib/libcusparse.so.12",
         shared_object(["libnvJitLink.so.12"], "libcusparse.so.12", ["$ORIGIN/../../nvjitlink/lib", "$ORIGIN"],
                       version_needs=[("libnvJitLink.so.12", ["libnvJitLink.so.12"])]))  # fmt: skip
    _put(site / "nvidia/nvjitlink/lib/libnvJitLink.so.12", shared_object([], "libnvJitLink.so.12"))
    for index in range(12):
        _put(site / f"numpy/_core/_multiarray_{index}.cpython-312-x86_64-linux-gnu.so", shared_object(["libm.so.6"]))
    _put(site / "numpy.libs/libscipy_openblas64_-ff651d7f.so", shared_object(["libgfortran.so.5"]))
    _put(site / "cffi_backend.cpython-312-x86_64-linux-gnu.so", shared_object(["libffi.so.8"]))
    _put(site / "numpy/tests/_fixture.so", shared_object(["libcublas.so.12"]))  # in tests/: never read
    monkeypatch.setattr(packages, "site_paths", lambda ctx: (str(site),))
    monkeypatch.setattr(prescan, "_cpus", lambda: 4)
    yield str(site)
    prescan.stop()


def _entries(capsys, site: str, part: int, parts: int) -> dict:
    prescan.prescan_main([str(part), str(parts), site])
    return json.loads(capsys.readouterr().out)


def test_the_parts_read_every_object_once(site, capsys):
    whole, more = scancache.site_objects(scancache.ScanCache(load=False), site, 5000)
    assert not more and "torch/lib/libtorch_cuda.so" in whole and "numpy/tests/_fixture.so" not in whole
    pieces = [scancache.site_objects(scancache.ScanCache(load=False), site, 5000, p, 3)[0] for p in range(3)]
    assert sorted(sum(pieces, [])) == sorted(whole) and all(pieces)
    alone = _entries(capsys, site, 0, 1)
    parts = [_entries(capsys, site, p, 3) for p in range(3)]
    assert {k: v for part in parts for k, v in part["files"].items()} == alone["files"]
    assert sum(len(part["files"]) for part in parts) == len(alone["files"]) == len(whole)
    assert {k: v for part in parts for k, v in part["dirs"].items()} == alone["dirs"]
    cuda = {k.removeprefix(site + "/"): v[1][0] for k, v in alone["files"].items() if v[1] is not None}
    assert cuda == {"torch/lib/libtorch_cuda.so": ["libcudnn.so.9", "libcusparse.so.12"],
                    "nvidia/cusparse/lib/libcusparse.so.12": ["libnvJitLink.so.12"]}  # fmt: skip


def test_helpers_read_the_first_runs_scan_and_the_doctor_reads_no_elf_file(site, monkeypatch, tmp_path):
    alone = linkage.probe_loader_view(make_ctx(env={}))
    assert alone is not None and any(n.soname == "libnvJitLink.so.12" for n in alone.needs)
    os.unlink(scancache.cache_path())  # a first run again
    prescan.start({}, [site, str(tmp_path / "elsewhere")])
    assert len(prescan._STARTED) == 3
    reads: list[str] = []
    real = scancache.read_dynamic
    monkeypatch.setattr(scancache, "read_dynamic", lambda path, *a: reads.append(path) or real(path, *a))
    helped = linkage.probe_loader_view(make_ctx(env={}))
    assert helped == alone and reads == []
    assert not prescan._STARTED  # taken


def test_a_later_run_starts_no_helper(site):
    linkage.probe_loader_view(make_ctx(env={}))  # writes the scan cache
    prescan.start({}, [site])
    assert prescan._STARTED == []


def test_one_cpu_starts_no_helper(site, monkeypatch):
    monkeypatch.setattr(prescan, "_cpus", lambda: 1)
    prescan.start({}, [site])
    assert prescan._STARTED == []
    assert [prescan.helpers_for(n) for n in (1, 2, 3, 8, 128)] == [0, 1, 2, 4, 4]


def test_a_helper_that_says_something_else_adds_nothing(site, monkeypatch):
    monkeypatch.setattr(prescan, "PRESCAN_BOOTSTRAP", 'import sys; sys.stdout.write(\'{"dirs": [1], "files": 5\')')
    alone_cache = scancache.cache_path()
    assert not os.path.exists(alone_cache)
    prescan.start({}, [site])
    assert prescan.take() == ({}, {})
    assert linkage.probe_loader_view(make_ctx(env={})) is not None


def test_site_dirs_guess_this_interpreters_and_the_active_environments(tmp_path):
    own = tmp_path / "own" / "lib" / "python3.11" / "site-packages"
    active = tmp_path / "active" / "lib" / "python3.12" / "site-packages"
    conda = tmp_path / "conda" / "lib" / "python3.10" / "site-packages"
    for directory in (own, active, conda, tmp_path / "own" / "lib" / "python3.11" / "lib-dynload"):
        directory.mkdir(parents=True)
    (tmp_path / "alias").symlink_to(own)
    path = [str(own), str(tmp_path / "alias"), str(tmp_path / "own/lib/python3.11/lib-dynload"), str(tmp_path / "no")]
    env = {"VIRTUAL_ENV": str(tmp_path / "active"), "CONDA_PREFIX": str(tmp_path / "conda")}
    assert prescan.site_dirs(path, env) == [str(own), str(active), str(conda)]
    assert prescan.site_dirs([], {"VIRTUAL_ENV": "relative/path"}) == []
