"""Libraries opened by name at run time (compat/runtime_libraries.toml): the table, the loader view's
``dlopen`` needs, and CD303 / CD304 on them."""

from __future__ import annotations

import fnmatch
from dataclasses import replace

import pytest
from packaging.version import Version

from cudadoctor.checks.findings import Status
from cudadoctor.checks.loader import wheel_dir
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import InstalledPackage, LinkedFile, LoaderView, NeededLibrary, Source, SourceKind
from cudadoctor.probes import interpreter
from cudadoctor.testing import run_check
from tests.elfwriter import shared_object
from tests.probes.test_linkage import SITE, dist, need, put, view

MATRIX = CompatMatrix(cache_dir=False)
CT2 = f"{SITE}/ctranslate2.libs"


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A machine's tree directory whose one site directory is SITE (as tests/probes/test_linkage.py's root)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(interpreter, "site_paths", lambda ctx: (SITE,))
    return tmp_path / "tree"


# --- the table -------------------------------------------------------------------------------------


def test_the_rows_of_a_release_say_what_it_opens():
    rows = MATRIX.runtime_loads_for("ctranslate2", Version("4.4.0"), "x86_64")
    assert {s for r in rows for s in r.sonames} == {
        "libcublas.so.12",
        "libcudnn_ops_infer.so.8",
        "libcudnn_cnn_infer.so.8",
    }
    assert [str(r.cuda_build) for r in rows if r.cuda_build] == ["12.2"]
    assert {s for r in MATRIX.runtime_loads_for("ctranslate2", Version("3.10.0"), "x86_64") for s in r.sonames} >= {
        "libcublas.so.11"
    }


def test_other_machines_and_unread_releases_have_no_rows():
    assert MATRIX.runtime_loads_for("ctranslate2", Version("4.4.0"), "aarch64") == ()  # CPU-only wheels
    assert MATRIX.runtime_loads_for("ctranslate2", Version("2.24.0"), "x86_64") == ()
    assert MATRIX.runtime_loads_for("ctranslate2", Version("9.0.0"), "x86_64") == ()
    assert MATRIX.runtime_loads_for("torch", Version("2.4.0"), "x86_64") == ()


def test_each_rows_object_as_read_matches_its_glob():
    for row in MATRIX.runtime_loads:
        assert fnmatch.fnmatchcase(row.object_read, row.object), row.object_read
        assert all(s.startswith("lib") and ".so." in s for s in row.sonames)


# --- the loader view ----------------------------------------------------------------------------------


def ct2(tree, version: str = "4.4.0", elf: bytes | None = None) -> None:
    dist(tree, "ctranslate2", version)
    put(
        tree, f"{CT2}/libctranslate2-d3638643.so.{version}", shared_object([], "libctranslate2") if elf is None else elf
    )
    put(tree, f"{CT2}/libcudnn-463fd6d5.so.8.9.7", shared_object([], "libcudnn-463fd6d5.so.8.9.7"))


def test_cublas_opened_by_name_resolves_through_ld_library_path(tree):
    ct2(tree)
    put(tree, "/usr/local/cuda-12.4/lib64/libcublas.so.12")
    result, _ctx = view(tree, {"LD_LIBRARY_PATH": "/usr/local/cuda-12.4/lib64"})
    cublas = need(result, "ctranslate2", "libcublas.so.12")
    assert cublas.how == "dlopen" and not cublas.optional
    assert cublas.loaded is not None and cublas.loaded.via == "LD_LIBRARY_PATH"
    assert cublas.needer.startswith(f"{CT2}/libctranslate2-")


def test_cudnn_sublibraries_are_optional_without_faster_whisper(tree):
    ct2(tree)
    result, _ctx = view(tree)
    assert need(result, "ctranslate2", "libcudnn_ops_infer.so.8").optional
    dist(tree, "faster-whisper", "1.0.3")
    result, _ctx = view(tree)
    ops = need(result, "ctranslate2", "libcudnn_ops_infer.so.8")
    assert not ops.optional and ops.loaded is None


def test_another_major_is_named_when_none_resolves(tree):
    ct2(tree, "4.1.0")
    put(tree, "/usr/local/cuda-11.8/lib64/libcublas.so.11")
    result, _ctx = view(tree, {"LD_LIBRARY_PATH": "/usr/local/cuda-11.8/lib64"})
    cublas = need(result, "ctranslate2", "libcublas.so.12")
    assert cublas.loaded is None and cublas.other_majors == ("/usr/local/cuda-11.8/lib64/libcublas.so.11",)


def test_a_garbled_object_and_a_garbled_version_do_not_break_the_view(tree):
    ct2(tree, elf=b"\x7fELF not really")  # the file is there, its dynamic section is not readable
    result, _ctx = view(tree)
    assert need(result, "ctranslate2", "libcublas.so.12").loaded is None
    put(tree, f"{SITE}/ctranslate2-4.4.0.dist-info/METADATA", "")  # replaced below by a bad version
    (tree / SITE.lstrip("/") / "ctranslate2-4.4.0.dist-info").rename(
        tree / SITE.lstrip("/") / "ctranslate2-x.y.dist-info"
    )
    result, _ctx = view(tree)
    assert result is None or all(n.package != "ctranslate2" for n in result.needs)


def test_relative_rpath_entries_are_not_searched(tree):
    ct2(tree, elf=shared_object([], "libctranslate2", rpath=["ctranslate2.libs"]))
    put(tree, f"{SITE}/ctranslate2.libs/libcublas.so.12")
    result, _ctx = view(tree)
    assert need(result, "ctranslate2", "libcublas.so.12").loaded is None


# --- CD303 and CD304 on them -------------------------------------------------------------------------


def _pkg(name: str, version: str) -> InstalledPackage:
    return InstalledPackage(name, Version(version), SITE, Source(SourceKind.METADATA, f"{SITE}/{name}"))


def _dlopen(soname: str, loaded: LinkedFile | None = None, others: tuple[str, ...] = (), optional: bool = False):
    needer = f"{CT2}/libctranslate2-d3638643.so.4.4.0"
    return NeededLibrary("ctranslate2", needer, soname, loaded, (), others, (), how="dlopen", optional=optional)


def test_cd303_fails_for_a_cuda_major_that_is_not_installed(h200):
    view_ = LoaderView(needs=(_dlopen("libcublas.so.12", None, ("/usr/local/cuda-13.1/lib64/libcublas.so.13",)),))
    installed = {**h200.packages, "ctranslate2": _pkg("ctranslate2", "4.7.1")}
    finding = run_check("CD303", replace(h200, loader=view_, packages=installed))
    assert finding.status is Status.FAIL
    assert "ctranslate2 4.7.1 was built for CUDA 12 (libcublas.so.12), but only CUDA 13" in finding.message
    assert finding.remediation is not None
    assert finding.remediation.commands == (
        "python -m pip install nvidia-cublas-cu12",
        f"export LD_LIBRARY_PATH={SITE}/nvidia/cublas/lib:$LD_LIBRARY_PATH",
    )


def test_cd303_warns_for_an_optional_library(h200):
    view_ = LoaderView(needs=(_dlopen("libcublas.so.12", None, ("/x/libcublas.so.13",), optional=True),))
    assert run_check("CD303", replace(h200, loader=view_)).status is Status.WARN


def test_cd304_fails_when_only_a_wheel_off_the_search_path_has_it_and_nothing_loads_it_first(h200):
    """TensorFlow 2.16.1 with its own pip cuDNN, tensorflow/tensorflow#63362: nothing else loads from that wheel."""
    copy = LinkedFile(f"{SITE}/nvidia/cublas/lib/libcublas.so.12", "wheel, off this object's search path",
                      Version("12.1.3.1"), "nvidia-cublas-cu12")  # fmt: skip
    finding = run_check("CD304", replace(h200, loader=LoaderView(needs=(_dlopen("libcublas.so.12", copy),))))
    assert finding.status is Status.FAIL
    assert "no installed package loads libcublas.so.12 first" in (finding.message or "")
    assert finding.remediation is not None
    assert finding.remediation.commands == (f"export LD_LIBRARY_PATH={SITE}/nvidia/cublas/lib:$LD_LIBRARY_PATH",)


def test_cd304_warns_when_another_package_loads_from_that_wheel_first(h200):
    """torch links the same wheel's libcublas through its RUNPATH: CTranslate2's dlopen finds it once torch is
    imported (the faster-whisper maintainers' tested setup): import order, a warning."""
    path = f"{SITE}/nvidia/cublas/lib/libcublas.so.12"
    copy = LinkedFile(path, "wheel, off this object's search path", Version("12.1.3.1"), "nvidia-cublas-cu12")
    torch_copy = LinkedFile(path, "RUNPATH", Version("12.1.3.1"), "nvidia-cublas-cu12")
    torch_need = NeededLibrary("torch", f"{SITE}/torch/lib/libtorch_cuda.so", "libcublas.so.12", torch_copy)
    view_ = LoaderView(needs=(_dlopen("libcublas.so.12", copy), torch_need))
    finding = run_check("CD304", replace(h200, loader=view_))
    assert finding.status is Status.WARN
    assert "import that one first" in (finding.message or "")


def test_cd304_skips_an_optional_library_that_resolves_nowhere(h200):
    view_ = LoaderView(needs=(_dlopen("libcudnn_ops_infer.so.8", optional=True),))
    assert run_check("CD304", replace(h200, loader=view_)).status is Status.OK


def test_wheel_dir():
    assert wheel_dir(f"{CT2}/x.so", "nvidia-cudnn-cu12==8.*") == f"{SITE}/nvidia/cudnn/lib"
    assert wheel_dir(f"{CT2}/x.so", "nvidia-cublas") == f"{SITE}/nvidia/cu13/lib"
    assert wheel_dir("/opt/x.so", "nvidia-cublas-cu12") is None


def test_cd304_could_not_judge_a_release_the_table_does_not_cover(h200):
    """ctranslate2 is known to open cuBLAS/cuDNN by name, but not what a release outside
    compat/runtime_libraries.toml opens: could not judge, never not-applicable or OK."""
    installed = {**h200.packages, "ctranslate2": _pkg("ctranslate2", "99.0.0")}
    finding = run_check("CD304", replace(h200, loader=None, packages=installed))
    assert finding.status is Status.UNKNOWN
    assert "the libraries ctranslate2 99.0.0 opens by name (not in compat/runtime_libraries.toml)" in finding.reason
    covered = {**h200.packages, "ctranslate2": _pkg("ctranslate2", "4.7.1")}
    assert run_check("CD304", replace(h200, loader=None, packages=covered)).status is Status.NOT_APPLICABLE
