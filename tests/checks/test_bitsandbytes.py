"""bitsandbytes' native libraries (compat/bitsandbytes.toml), the rule that picks one (cudadoctor/rules/bitsandbytes.py)
and CD435-CD437 on the real H200's facts with the packages changed."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from packaging.version import Version

from cudadoctor.checks.findings import Status
from cudadoctor.data import CompatMatrix
from cudadoctor.data.load import load_table
from cudadoctor.facts.model import Facts, InstalledPackage, LinkedFile, LoaderView, NeededLibrary, Source, SourceKind
from cudadoctor.fixes.machine import verify_on
from cudadoctor.fixes.parse import parse
from cudadoctor.rules.bitsandbytes import bnb_library, bnb_native, library_cuda, release_for_cuda
from cudadoctor.testing import run_check
from tests.checks.conftest import with_env

MATRIX = CompatMatrix(cache_dir=False)
SITE = "/opt/venv/lib/python3.12/site-packages"
_OTHER = re.compile(r"^libbitsandbytes_(cpu|rocm\d+|xpu\d*)\.so$")


def _wheel(version: str, arch: str = "x86_64"):
    wheel = MATRIX.bitsandbytes_wheel(Version(version), arch)
    assert wheel is not None
    return wheel


def _pick(version: str, cuda: str, override: str | None = None, cc: str | None = "9.0"):
    selection = MATRIX.bitsandbytes_selection(Version(version))
    assert selection is not None
    return bnb_library(selection, _wheel(version), Version(cuda), override, cc)


# --- the data ------------------------------------------------------------------------------------------


def test_every_library_listed_maps_to_a_cuda_version_or_is_the_cpu_rocm_or_xpu_one():
    for wheel in MATRIX.bitsandbytes_wheels:
        assert wheel.libraries, wheel.wheel
        for name in wheel.libraries:
            assert library_cuda(name) is not None or _OTHER.match(name), (wheel.wheel, name)


def test_every_cuda_library_has_its_needs_read_and_its_cudart_is_its_cuda_major():
    for wheel in MATRIX.bitsandbytes_wheels:
        for name in wheel.libraries:
            cuda = library_cuda(name)
            if cuda is None:
                continue
            needed = MATRIX.bitsandbytes_needed(name, wheel.version, wheel.arch)
            assert needed is not None, (wheel.wheel, name)
            cudart = [s for s in needed if s.startswith("libcudart.so.")]
            # libcudart.so.10.2, .11.0, .12, .13: CUDA 10 numbered its soname by minor, 11 by .0, later by major
            assert len(cudart) == 1 and cudart[0].split(".so.")[1].split(".")[0] == str(cuda.major), (name, needed)


def test_every_wheel_version_has_one_selection_and_every_record_cites_a_listed_source():
    for wheel in MATRIX.bitsandbytes_wheels:
        assert MATRIX.bitsandbytes_selection(wheel.version) is not None, wheel.version
    table = load_table("bitsandbytes", validate=True)
    ids = {s["id"] for s in table.data["meta"]["sources"]}
    assert all(s["url"].startswith("https://") for s in table.data["meta"]["sources"])
    for key in ("wheel", "needed", "selection"):
        for record in table.data[key]:
            assert set(record.get("sources", [record.get("source")])) <= ids


def test_the_wheels_read_from_pypi():
    assert _wheel("0.43.3").libraries.count("libbitsandbytes_cuda121.so") == 1
    assert "libbitsandbytes_cuda128.so" not in _wheel("0.45.2").libraries
    assert "libbitsandbytes_cuda128.so" in _wheel("0.45.3").libraries
    assert "libbitsandbytes_cuda129.so" in _wheel("0.46.1").libraries
    assert "libbitsandbytes_cpu.so" not in _wheel("0.45.4").libraries  # that release shipped none
    assert MATRIX.bitsandbytes_wheel(Version("0.45.5"), "aarch64") is None  # aarch64 wheels from 0.46.0
    assert _wheel("0.42.0").wheel.endswith("-py3-none-any.whl") and _wheel("0.42.0").arch == "x86_64"
    assert MATRIX.bitsandbytes_needed("libbitsandbytes_cuda121.so", Version("0.43.1"), "x86_64") == (
        "libcublas.so.12", "libcublasLt.so.12", "libcudart.so.12", "libcusparse.so.12",
    )  # fmt: skip


# --- the rule ------------------------------------------------------------------------------------------


def test_library_names_are_major_and_one_digit_minor():
    assert library_cuda("libbitsandbytes_cuda121.so") == Version("12.1")
    assert library_cuda("libbitsandbytes_cuda102_nocublaslt.so") == Version("10.2")
    assert library_cuda("libbitsandbytes_cuda130.so") == Version("13.0")
    assert library_cuda("libbitsandbytes_cpu.so") is None
    assert library_cuda("libbitsandbytes_rocm64.so") is None


def test_a_release_without_torchs_cuda_falls_back_to_its_cpu_library_or_fails():
    old = _pick("0.45.2", "12.8")
    assert old.is_problem and old.detail is not None
    assert old.detail.wanted == "libbitsandbytes_cuda128.so" and old.detail.fallback == "libbitsandbytes_cpu.so"
    new = _pick("0.46.0", "12.9")
    assert new.is_problem and new.detail is not None and new.detail.fallback is None
    assert _pick("0.45.3", "12.8").is_ok


def test_from_0_50_a_missing_minor_takes_the_nearest_of_its_major():
    near = _pick("0.50.0", "12.9")
    assert near.is_ok and near.detail is not None and near.detail.loads == "libbitsandbytes_cuda128.so"
    assert _pick("0.50.0", "12.0").detail.loads == "libbitsandbytes_cuda121.so"  # no older one: the next newer
    assert _pick("0.50.0", "11.7").detail.loads == "libbitsandbytes_cuda118.so"
    assert _pick("0.49.2", "13.1").is_problem


def test_below_compute_capability_7_5_the_nocublaslt_library_until_0_45():
    assert _pick("0.44.1", "12.1", cc="7.0").detail.loads == "libbitsandbytes_cuda121_nocublaslt.so"
    assert _pick("0.45.0", "12.1", cc="7.0").detail.loads == "libbitsandbytes_cuda121.so"
    unknown = _pick("0.44.1", "12.1", cc=None)  # both variants shipped: the answer is the same
    assert unknown.is_ok
    assert _pick("0.42.0", "12.4", cc="7.0").detail.wanted == "libbitsandbytes_cuda124_nocublaslt.so"


def test_the_override_forms_of_each_era():
    assert _pick("0.42.0", "12.1", "118").detail.loads == "libbitsandbytes_cuda118.so"  # slice
    # slicing "_nocublaslt.so" leaves "..._nocubla": no such file, so no override helps a V100 there (PR #1318)
    assert _pick("0.42.0", "12.4", "123", cc="7.0").detail.wanted == "libbitsandbytes_cuda124_nocubla123.so"
    assert _pick("0.43.3", "12.4", "124", cc="7.0").detail.wanted == "libbitsandbytes_cuda124_nocublaslt124.so"
    assert _pick("0.43.1", "12.1", "118").detail.loads == "libbitsandbytes_cuda118.so"  # strip
    assert _pick("0.44.1", "12.1", "118", cc="7.0").detail.loads == "libbitsandbytes_cuda118_nocublaslt.so"
    assert _pick("0.45.5", "12.8", "126").detail.loads == "libbitsandbytes_cuda126.so"  # substitute
    assert _pick("0.45.5", "12.8", "").is_ok  # an empty value is ignored before 0.50
    assert _pick("0.50.0", "12.8", "").is_problem  # 0.50 raises on anything but digits
    assert _pick("0.50.0", "12.8", "127").is_problem  # no nearest fallback for an override
    assert _pick("0.40.1", "12.1", "118").detail.loads == "libbitsandbytes_cuda121.so"  # no override yet


def test_releases_before_0_40_1_pick_by_libcudart_and_are_not_judged():
    assert _pick("0.39.1", "12.1").is_unknown
    assert "libcudart.so" in _pick("0.40.0.post4", "12.1").missing


def test_the_release_to_install_is_the_first_newer_one_that_loads_torchs_cuda():
    wheels = [w for w in MATRIX.bitsandbytes_wheels if w.arch == "x86_64"]
    selections = {w.version: s for w in wheels if (s := MATRIX.bitsandbytes_selection(w.version))}

    def pick(installed: str, cuda: str, torch: str, python: str = "3.12") -> str | None:
        found = release_for_cuda(
            wheels, selections, Version(cuda), Version(torch), Version(python), "9.0", Version(installed)
        )
        return str(found.version) if found else None

    assert pick("0.46.0", "12.9", "2.8.0+cu129") == "0.46.1"
    assert pick("0.45.0", "12.8", "2.7.0+cu128") == "0.45.3"
    assert pick("0.42.0", "12.4", "2.4.0") == "0.43.1"
    assert pick("0.49.2", "13.1", "2.10.0") == "0.50.0"
    assert pick("0.48.0", "11.6", "1.13.1+cu116") is None  # no release since 0.40.1 ships CUDA 11.6


def test_bitsandbytes_native_needs_are_told_apart():
    copy = LinkedFile("/x/libcudart.so.11.0", "LD_LIBRARY_PATH")
    assert bnb_native(NeededLibrary("bitsandbytes", f"{SITE}/bitsandbytes/libbitsandbytes_cuda118.so", "a", copy))
    assert not bnb_native(NeededLibrary("torch", f"{SITE}/torch/lib/libtorch_cuda.so", "a", copy))


# --- the checks -----------------------------------------------------------------------------------------


def _package(name: str, version: str, **kw: object) -> InstalledPackage:
    return InstalledPackage(name, Version(version), SITE, Source(SourceKind.FILE, f"{SITE}/{name}"), **kw)  # type: ignore[arg-type]


def _facts(h200: Facts, bnb: str, torch: str, cuda: str | None, **env: str | None) -> Facts:
    torch_pkg = _package(
        "torch", torch, cuda_variant=("cu" + cuda.replace(".", "")) if cuda else "cpu", cuda_build=cuda,
        cuda_variant_source="torch/version.py",
    )  # fmt: skip
    packages = {**h200.packages, "torch": torch_pkg, "bitsandbytes": _package("bitsandbytes", bnb, installer="pip")}
    return with_env(replace(h200, packages=packages), **env)


def test_cd435_torch_cuda_shipped_is_ok(h200):
    assert run_check("CD435", _facts(h200, "0.45.3", "2.7.0+cu128", "12.8")).status is Status.OK


def test_cd435_torch_cuda_not_shipped_names_the_first_release_that_ships_it(h200):
    facts = _facts(h200, "0.46.0", "2.8.0+cu129", "12.9")
    finding = run_check("CD435", facts)
    assert finding.status is Status.FAIL
    assert "libbitsandbytes_cuda129.so" in finding.message and "Configured CUDA binary not found" in finding.message
    assert finding.remediation is not None
    assert finding.remediation.commands == ("python -m pip install bitsandbytes==0.46.1",)
    assert "set BNB_CUDA_VERSION=128" in finding.remediation.text  # the same-major workaround, as text
    assert verify_on(parse(finding.remediation.commands[0]), MATRIX, facts).ok


def test_cd435_cpu_fallback_is_named(h200):
    finding = run_check("CD435", _facts(h200, "0.45.0", "2.7.0+cu128", "12.8"))
    assert finding.status is Status.FAIL and "libbitsandbytes_cpu.so instead" in finding.message
    assert finding.remediation.commands == ("python -m pip install bitsandbytes==0.45.3",)


def test_cd435_no_release_for_that_cuda_says_so_without_a_command(h200):
    finding = run_check("CD435", _facts(h200, "0.42.0", "1.13.1+cu116", "11.6"))
    assert finding.status is Status.FAIL and finding.remediation.commands == ()
    assert "No bitsandbytes release" in finding.remediation.text


def test_cd435_not_applicable_and_could_not_judge(h200):
    assert run_check("CD435", _facts(h200, "0.45.3", "2.7.0+cpu", None)).status is Status.NOT_APPLICABLE
    no_gpu = _facts(h200, "0.45.0", "2.7.0+cu128", "12.8")
    no_gpu = replace(no_gpu, gpus=(), health=None, visible=replace(no_gpu.visible, device_nodes=()))
    assert run_check("CD435", no_gpu).status is Status.NOT_APPLICABLE
    assert run_check("CD435", _facts(h200, "0.39.1", "2.0.1+cu118", "11.8")).status is Status.UNKNOWN
    source_build = run_check("CD435", _facts(h200, "0.44.0.dev0", "2.4.0+cu124", "12.4"))
    assert source_build.status is Status.UNKNOWN and "not in compat/bitsandbytes.toml" in source_build.reason
    unknown_torch = replace(_facts(h200, "0.45.3", "2.7.0", "12.8"))
    unknown_torch.packages["torch"] = replace(unknown_torch.packages["torch"], cuda_variant=None, cuda_build=None)
    assert run_check("CD435", unknown_torch).status is Status.UNKNOWN
    for installer in ("conda", None):  # conda-forge's own build; an egg: not the PyPI wheel's libraries
        other = _facts(h200, "0.45.0", "2.7.0+cu128", "12.8")
        other.packages["bitsandbytes"] = replace(other.packages["bitsandbytes"], installer=installer)
        assert run_check("CD435", other).status is Status.UNKNOWN
    overridden = _facts(h200, "0.45.0", "2.7.0+cu128", "12.8", BNB_CUDA_VERSION="126")
    assert run_check("CD435", overridden).status is Status.NOT_APPLICABLE


def test_cd435_an_x86_only_wheel_on_aarch64(h200):
    facts = _facts(h200, "0.42.0", "2.4.0", "12.4")
    facts = replace(facts, host=replace(facts.host, arch="aarch64"))
    finding = run_check("CD435", facts)
    assert finding.status is Status.FAIL and "built for x86_64, not aarch64" in finding.message
    assert finding.remediation.commands == ("python -m pip install bitsandbytes==0.46.0",)


def test_cd436_override_naming_a_shipped_library_is_ok_and_a_missing_one_fails(h200):
    ok = _facts(h200, "0.45.5", "2.7.0+cu128", "12.8", BNB_CUDA_VERSION="126")
    assert run_check("CD436", ok).status is Status.OK
    bad = _facts(h200, "0.45.5", "2.7.0+cu128", "12.8", BNB_CUDA_VERSION="127")
    finding = run_check("CD436", bad)
    assert finding.status is Status.FAIL and "libbitsandbytes_cuda127.so" in finding.message
    assert finding.remediation.commands == ("unset BNB_CUDA_VERSION",)
    neither = run_check("CD436", _facts(h200, "0.45.2", "2.7.0+cu128", "12.8", BNB_CUDA_VERSION="127"))
    assert neither.remediation.commands == ("unset BNB_CUDA_VERSION", "python -m pip install bitsandbytes==0.45.3")
    empty = run_check("CD436", _facts(h200, "0.50.0", "2.7.0+cu128", "12.8", BNB_CUDA_VERSION=""))
    assert empty.status is Status.FAIL and "digits only" in empty.message


def test_cd436_not_applicable(h200):
    assert run_check("CD436", _facts(h200, "0.45.5", "2.7.0+cu128", "12.8")).status is Status.NOT_APPLICABLE
    old = _facts(h200, "0.40.1", "2.0.1+cu118", "11.8", BNB_CUDA_VERSION="117")
    assert run_check("CD436", old).status is Status.NOT_APPLICABLE  # read from 0.40.1.post1
    empty = _facts(h200, "0.45.5", "2.7.0+cu128", "12.8", BNB_CUDA_VERSION="")
    assert run_check("CD436", empty).status is Status.NOT_APPLICABLE


def _need(package: str, needer: str, soname: str, loaded: str | None) -> NeededLibrary:
    copy = LinkedFile(loaded, "RUNPATH") if loaded else None
    return NeededLibrary(package, needer, soname, copy)


def _loader(*needs: NeededLibrary) -> LoaderView:
    return LoaderView(needs=needs, cache="/etc/ld.so.cache (10 entries)")


_TORCH = f"{SITE}/torch/lib/libtorch_cuda.so"
_BNB = f"{SITE}/bitsandbytes/libbitsandbytes_cuda128.so"
_CUSPARSE = f"{SITE}/nvidia/cusparse/lib/libcusparse.so.12"


def test_cd437_needs_loaded_by_torch_are_met(h200):
    loader = _loader(
        _need("torch", _TORCH, "libcudart.so.12", f"{SITE}/nvidia/cuda_runtime/lib/libcudart.so.12"),
        _need("torch", _TORCH, "libcublas.so.12", f"{SITE}/nvidia/cublas/lib/libcublas.so.12"),
        _need("torch", _TORCH, "libcublasLt.so.12", f"{SITE}/nvidia/cublas/lib/libcublasLt.so.12"),
        _need("torch", _TORCH, "libcusparse.so.12", _CUSPARSE),
        _need("nvidia-cusparse-cu12", _CUSPARSE, "libnvJitLink.so.12", f"{SITE}/nvidia/nvjitlink/lib/x.so"),
        *(_need("bitsandbytes", _BNB, s, None) for s in ("libcudart.so.12", "libcublas.so.12", "libnvJitLink.so.12")),
    )
    facts = replace(_facts(h200, "0.45.3", "2.7.0+cu128", "12.8"), loader=loader)
    assert run_check("CD437", facts).status is Status.OK


def test_cd437_another_major_through_the_override_fails_with_unset(h200):
    bnb118 = f"{SITE}/bitsandbytes/libbitsandbytes_cuda118.so"
    loader = _loader(
        _need("torch", _TORCH, "libcudart.so.12", f"{SITE}/nvidia/cuda_runtime/lib/libcudart.so.12"),
        *(_need("bitsandbytes", bnb118, s, None) for s in ("libcudart.so.11.0", "libcublas.so.11")),
        _need("bitsandbytes", bnb118, "libcublasLt.so.11", None),
    )
    facts = replace(_facts(h200, "0.45.5", "2.7.0+cu128", "12.8", BNB_CUDA_VERSION="118"), loader=loader)
    finding = run_check("CD437", facts)
    assert finding.status is Status.FAIL and "libcudart.so.11.0" in finding.message
    assert finding.remediation.commands == ("unset BNB_CUDA_VERSION",)


def test_cd437_missing_libraries_without_override_name_the_wheel_and_directory(h200):
    bnb121 = f"{SITE}/bitsandbytes/libbitsandbytes_cuda121.so"
    loader = _loader(*(_need("bitsandbytes", bnb121, s, None) for s in ("libcudart.so.12", "libcusparse.so.12")))
    facts = replace(_facts(h200, "0.42.0", "2.1.0+cu121", "12.1"), loader=loader)
    finding = run_check("CD437", facts)
    assert finding.status is Status.FAIL
    assert "python -m pip install nvidia-cusparse-cu12" in finding.remediation.commands
    assert f"export LD_LIBRARY_PATH={SITE}/nvidia/cusparse/lib:$LD_LIBRARY_PATH" in finding.remediation.commands


def test_cd437_could_not_judge_without_the_loader_view_or_a_need(h200):
    facts = _facts(h200, "0.45.3", "2.7.0+cu128", "12.8")
    assert run_check("CD437", replace(facts, loader=None)).status is Status.UNKNOWN
    partial = _loader(_need("bitsandbytes", _BNB, "libcudart.so.12", "/usr/lib/libcudart.so.12"))
    finding = run_check("CD437", replace(facts, loader=partial))
    assert finding.status is Status.UNKNOWN and "libcublas.so.12" in finding.reason


def test_cd437_not_applicable_when_nothing_loads(h200):
    facts = replace(_facts(h200, "0.46.0", "2.8.0+cu129", "12.9"), loader=_loader())
    assert run_check("CD437", facts).status is Status.NOT_APPLICABLE


@pytest.mark.parametrize("code", ["CD435", "CD436", "CD437"])
def test_not_applicable_without_bitsandbytes(h200, code):
    assert run_check(code, h200).status is Status.NOT_APPLICABLE


def _jetson(facts: Facts, l4t: str) -> Facts:
    return replace(facts, host=replace(facts.host, arch="aarch64", jetson_l4t=l4t))


def test_cd435_a_pypi_aarch64_wheel_on_jetson_fails_without_a_pypi_command(h200):
    facts = _jetson(_facts(h200, "0.46.1", "2.5.0a0+872d972e41.nv24.08", "12.6"), "R36.4.3")
    finding = run_check("CD435", facts)
    assert finding.status is Status.FAIL and "server ARM (SBSA)" in finding.message
    assert finding.remediation.commands == () and "pull/1941" in finding.remediation.text
    assert run_check("CD437", facts).status is Status.NOT_APPLICABLE
    newer = _jetson(_facts(h200, "0.50.2", "2.10.0", "13.0"), "R38.2.0")  # JetPack 7: not named by the note
    assert run_check("CD435", newer).status is Status.UNKNOWN


def test_cd435_the_x86_wheel_on_a_jetson_points_to_a_build_on_the_device(h200):
    facts = _jetson(_facts(h200, "0.42.0", "2.0.0+nv23.05", "11.4"), "R35.4.1")
    finding = run_check("CD435", facts)
    assert finding.status is Status.FAIL and "built for x86_64, not aarch64" in finding.message
    assert finding.remediation.commands == () and "on the device" in finding.remediation.text


def test_cd303_cd304_leave_the_unused_per_cuda_libraries_to_cd437(h200):
    """bitsandbytes 0.45 ships libraries for CUDA 11.7 to 12.6 and loads one: the CUDA 11 needs of the others are
    no environment's problem (the healthy corpus configuration failed CD304 on them before)."""
    bnb117 = f"{SITE}/bitsandbytes/libbitsandbytes_cuda117.so"
    need = NeededLibrary("bitsandbytes", bnb117, "libcudart.so.11.0", None, other_majors=(f"{SITE}/x/libcudart.so.12",))
    facts = replace(_facts(h200, "0.45.3", "2.7.0+cu128", "12.8"), loader=_loader(need))
    assert run_check("CD304", facts).status is not Status.FAIL
    assert run_check("CD303", facts).status is not Status.FAIL
