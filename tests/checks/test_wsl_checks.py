"""CD132 (libcuda copies in the WSL2 driver store) and CD134 (libnvdxgdmal.so.1 in a container on a 555+
Windows driver), on the real H200 capture turned into a WSL2 machine one fact at a time."""

from __future__ import annotations

from dataclasses import replace

from packaging.version import Version

from cudadoctor.assume import apply_assumptions
from cudadoctor.checks.findings import Status
from cudadoctor.facts.model import (
    ContainerInfo,
    DriverVersion,
    Facts,
    InstalledPackage,
    LibcudaFile,
    LibcudaResolution,
    LibraryCopy,
    Source,
    SourceKind,
)
from cudadoctor.rules.wsl import unversioned_libcuda_found
from cudadoctor.testing import run_check

_STORE = ("libcuda.so", "libcuda.so.1", "libcuda.so.1.1", "libdxcore.so", "libnvidia-ml.so.1")


def _wsl(facts: Facts, *, copies: bool = True, driver: str = "560.94", store: tuple[str, ...] = _STORE,
         container: bool = False, searched: bool = True) -> Facts:  # fmt: skip
    """A WSL2 machine: the driver store with libcuda copies (or libcuda.so.1.1 reached through links)."""
    names = ("libcuda.so", "libcuda.so.1", "libcuda.so.1.1") if copies else ("libcuda.so.1.1",)
    files = tuple(LibcudaFile(f"/usr/lib/wsl/lib/{n}", None, "wsl", searched) for n in names)
    assert facts.driver is not None
    drv = replace(facts.driver, version=DriverVersion(driver), kernel_module=None, libcuda_files=files, wsl=True,
                  wsl_libraries=store)  # fmt: skip
    markers = ("/.dockerenv",) if container else ()
    host = replace(facts.host, wsl=True, container=ContainerInfo(container, "docker" if container else None, markers))
    return replace(facts, driver=drv, host=host)


def test_not_wsl_is_not_applicable(h200):
    assert run_check("CD132", h200).status is Status.NOT_APPLICABLE
    assert run_check("CD134", h200).status is Status.NOT_APPLICABLE


def test_cd132_copies_warn_with_the_mklink_workaround(h200):
    finding = run_check("CD132", _wsl(h200))
    assert finding.status is Status.WARN
    assert "libcuda.so and libcuda.so.1" in finding.message
    assert finding.remediation is not None and "mklink libcuda.so.1 libcuda.so.1.1" in finding.remediation.commands[0]


def test_cd132_links_are_fine(h200):
    assert run_check("CD132", _wsl(h200, copies=False)).status is Status.OK


def test_cd132_cannot_judge_without_a_libcuda_file(h200):
    facts = _wsl(h200)
    facts = replace(facts, driver=replace(facts.driver, libcuda_files=()))
    assert run_check("CD132", facts).status is Status.UNKNOWN


def test_cd134_container_on_555_without_dxgdmal_fails(h200):
    finding = run_check("CD134", _wsl(h200, driver="555.85", container=True))
    assert finding.status is Status.FAIL
    assert "libnvdxgdmal.so.1" in finding.message and "1.14.4" in finding.remediation.text  # type: ignore[union-attr]
    assert "4.31.0" in finding.remediation.text  # type: ignore[union-attr]


def test_cd134_container_with_dxgdmal_mapped_is_fine(h200):
    facts = _wsl(h200, driver="560.94", container=True, store=(*_STORE, "libnvdxgdmal.so.1"))
    assert run_check("CD134", facts).status is Status.OK


def test_cd134_older_driver_or_the_distribution_itself_is_not_applicable(h200):
    assert run_check("CD134", _wsl(h200, driver="552.22", container=True)).status is Status.NOT_APPLICABLE
    assert run_check("CD134", _wsl(h200, driver="560.94")).status is Status.NOT_APPLICABLE


def test_cd134_cannot_judge_without_the_driver_version(h200):
    facts = _wsl(h200, container=True)
    facts = replace(facts, driver=replace(facts.driver, version=None))
    assert run_check("CD134", facts).status is Status.UNKNOWN


# --- CD133 ------------------------------------------------------------------------------------------


def test_cd133_driver_store_on_the_search_path_is_fine(h200):
    assert (
        run_check("CD133", replace(_wsl(h200), driver=replace(_wsl(h200).driver, loaded_libcuda=None))).status
        is Status.OK
    )


def test_cd133_driver_store_not_searched_fails_with_ld_wsl_conf(h200):
    facts = _wsl(h200, searched=False)
    facts = replace(facts, driver=replace(facts.driver, loaded_libcuda=None))
    finding = run_check("CD133", facts)
    assert finding.status is Status.FAIL
    assert finding.remediation is not None and finding.remediation.commands[-1] == "sudo ldconfig"
    assert "ld.wsl.conf" in finding.remediation.commands[0]


def test_cd133_a_loaded_libcuda_is_found(h200):
    facts = _wsl(h200, searched=False)
    facts = replace(facts, driver=replace(facts.driver, loaded_libcuda="/usr/lib/wsl/lib/libcuda.so.1"))
    assert run_check("CD133", facts).status is Status.OK


def test_cd133_container_or_no_libcuda_read(h200):
    assert run_check("CD133", _wsl(h200, searched=False, container=True)).status is Status.NOT_APPLICABLE
    facts = _wsl(h200)
    assert run_check("CD133", replace(facts, driver=replace(facts.driver, libcuda_files=()))).status is Status.UNKNOWN


# --- CD135 ------------------------------------------------------------------------------------------

_SITE = "/home/user/miniconda3/envs/dev/lib/python3.8/site-packages"


def _opener(facts: Facts, *, via: str | None = "ld.so.conf", path: str = "/usr/lib/wsl/lib/libcuda.so",
            cuda_python: str | None = "11.6.0", cudnn: str | None = None) -> Facts:  # fmt: skip
    """A WSL2 machine where ``libcuda.so`` resolves ``via`` (None: nowhere), with cuda-python or a pip cuDNN."""
    packages = dict(facts.packages)
    if cuda_python:
        source = Source(SourceKind.METADATA, f"{_SITE}/cuda_python-{cuda_python}.dist-info")
        packages["cuda-python"] = InstalledPackage("cuda-python", Version(cuda_python), _SITE, source)
    copies: tuple[LibraryCopy, ...] = ()
    if cudnn:
        path_ = f"{_SITE}/nvidia_cudnn_cu11-{cudnn}.dist-info"
        copies = (LibraryCopy("cudnn", Version(cudnn), "pip", path_, Source(SourceKind.METADATA, path_),
                              "nvidia-cudnn-cu11"),)  # fmt: skip
    hits = () if via is None else (LibcudaResolution("libcuda.so", path, path, via),)
    wsl = _wsl(facts)
    assert wsl.driver is not None
    return replace(wsl, packages=packages, cudnn=copies, driver=replace(wsl.driver, resolved_libcuda=hits))


def test_cd135_cuda_python_11_6_0_fails_when_only_the_cache_could_find_libcuda_so(h200):
    finding = run_check("CD135", _opener(h200))
    assert finding.status is Status.FAIL
    assert "cuda-python 11.6.0" in finding.message and "libcuda.so" in finding.message
    assert finding.remediation is not None
    assert finding.remediation.commands == ("export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH",)
    assert "cuda_python-11.6.0" in finding.evidence["read from"]


def test_cd135_cudnn_8_5_wheel_fails_and_names_the_copy(h200):
    finding = run_check("CD135", _opener(h200, cuda_python=None, cudnn="8.5.0.96", via=None))
    assert finding.status is Status.FAIL
    assert "cuDNN 8.5.0.96 (nvidia-cudnn-cu11" in finding.message
    assert "libcudnn_cnn_infer.so.8" in finding.message


def test_cd135_ld_library_path_or_a_cache_entry_is_fine(h200):
    assert run_check("CD135", _opener(h200, via="LD_LIBRARY_PATH")).status is Status.OK
    assert run_check("CD135", _opener(h200, via="ld.so.cache")).status is Status.OK


def test_cd135_releases_that_open_libcuda_so_1_are_not_applicable(h200):
    # cuda-python 11.6.1 finds the driver store through dxcore; cuDNN 8.8+ and 9 open libcuda.so.1
    assert run_check("CD135", _opener(h200, cuda_python="11.6.1")).status is Status.NOT_APPLICABLE
    facts = _opener(h200, cuda_python=None, cudnn="8.9.2.26")
    assert run_check("CD135", facts).status is Status.NOT_APPLICABLE
    assert run_check("CD135", h200).status is Status.NOT_APPLICABLE  # not WSL2


def test_unversioned_libcuda_through_ld_so_conf_counts_only_as_a_link():
    copies = ["/usr/lib/wsl/lib/libcuda.so", "/usr/lib/wsl/lib/libcuda.so.1", "/usr/lib/wsl/lib/libcuda.so.1.1"]
    store = "/usr/lib/wsl/lib/libcuda.so"
    assert not unversioned_libcuda_found(store, "ld.so.conf", copies)
    assert unversioned_libcuda_found(store, "ld.so.conf", ["/usr/lib/wsl/lib/libcuda.so.1.1"])  # links
    assert unversioned_libcuda_found(store, "LD_LIBRARY_PATH", copies)
    assert not unversioned_libcuda_found(None, None, copies)


# --- --assume-driver on WSL2 (issue #28, 5) --------------------------------------------------------------


def _nvml_silent_in_a_wsl_container(h200: Facts) -> Facts:
    """A container on WSL2 whose NVML does not answer: the driver store is read, the Windows driver's version not."""
    facts = _wsl(h200, container=True)
    assert facts.driver is not None
    return replace(facts, driver=replace(facts.driver, version=None, cuda_api=None, readings=()))


def test_cd134_judges_an_assumed_windows_driver_with_the_store_it_read(h200):
    facts = _nvml_silent_in_a_wsl_container(h200)
    assert run_check("CD134", facts).status is Status.UNKNOWN  # the version is what it lacks
    assumed = apply_assumptions(facts, driver="560.94")
    assert assumed.driver is not None and assumed.driver.wsl_libraries == _STORE and assumed.driver.wsl
    finding = run_check("CD134", assumed)
    assert finding.status is Status.FAIL and "libnvdxgdmal.so.1" in finding.message
    mapped = apply_assumptions(_wsl(h200, container=True, store=(*_STORE, "libnvdxgdmal.so.1")), driver="560.94")
    assert run_check("CD134", mapped).status is Status.OK
    assert run_check("CD134", apply_assumptions(facts, driver="551.86")).status is Status.NOT_APPLICABLE


def test_assume_driver_keeps_the_wsl_store_for_cd132(h200):
    assert run_check("CD132", apply_assumptions(_wsl(h200), driver="560.94")).status is Status.WARN
