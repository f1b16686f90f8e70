"""CD102/CD103/CD105 judged from the loader model's resolution of libcuda (no live answer: an image root)."""

from __future__ import annotations

import os
from dataclasses import replace

from cudadoctor.checks.findings import Status
from cudadoctor.facts.model import DriverInfo, DriverVersion, GpuInfo, Source, SourceKind
from cudadoctor.probes.driver import find_libcuda_files, resolve_libcuda
from cudadoctor.testing import run_check
from tests.checks.conftest import with_env
from tests.conftest import make_ctx

COMPAT_DIR = "/usr/local/cuda-12.4/compat"
LIB = "/usr/lib/x86_64-linux-gnu"


def _image(tmp_path, compat: str = "550.54.15", stub_link: bool = False) -> str:
    """An nvidia/cuda-like root: cuda-compat files, the toolkit's stubs, and ld.so.conf with no cache."""
    root = str(tmp_path)
    for d in (COMPAT_DIR, "/usr/local/cuda-12.4/lib64/stubs", "/etc/ld.so.conf.d", LIB):
        os.makedirs(root + d, exist_ok=True)
    open(f"{root}{COMPAT_DIR}/libcuda.so.{compat}", "w").close()
    os.symlink(f"libcuda.so.{compat}", f"{root}{COMPAT_DIR}/libcuda.so.1")
    open(f"{root}/usr/local/cuda-12.4/lib64/stubs/libcuda.so", "w").close()
    if stub_link:  # TensorFlow's GPU Dockerfile links libcuda.so.1 to the stub
        os.symlink("libcuda.so", f"{root}/usr/local/cuda-12.4/lib64/stubs/libcuda.so.1")
    os.symlink("cuda-12.4", f"{root}/usr/local/cuda")
    with open(f"{root}/etc/ld.so.conf", "w") as f:
        f.write("include /etc/ld.so.conf.d/*.conf\n")
    return root


def _driver(root: str, env: dict[str, str], version: str | None) -> DriverInfo:
    ctx = make_ctx(root=root, env=env)

    return DriverInfo(
        version=DriverVersion(version) if version else None,
        cuda_api=None,
        libcuda_files=find_libcuda_files(ctx),
        resolved_libcuda=resolve_libcuda(ctx),
    )


def _facts(h200, driver: DriverInfo, env: dict[str, str], gpus: tuple[GpuInfo, ...] | None = None):
    facts = replace(h200, driver=driver, gpus=h200.gpus if gpus is None else gpus)
    return with_env(facts, **env)


def test_resolution_follows_ld_library_path_to_the_compat_copy(tmp_path):
    root = _image(tmp_path)
    hits = resolve_libcuda(make_ctx(root=root, env={"LD_LIBRARY_PATH": "/usr/local/cuda/compat"}))
    assert [(h.soname, h.path, h.real, h.via) for h in hits] == [
        ("libcuda.so.1", "/usr/local/cuda/compat/libcuda.so.1", f"{COMPAT_DIR}/libcuda.so.550.54.15", "LD_LIBRARY_PATH")
    ]


def test_cd102_compat_older_than_assumed_host_driver_fails(tmp_path, h200):
    env = {"LD_LIBRARY_PATH": "/usr/local/cuda/compat"}
    finding = run_check("CD102", _facts(h200, _driver(_image(tmp_path), env, "570.133.20"), env))
    assert finding.status is Status.FAIL
    assert "550.54.15 is older than the kernel module 570.133.20" in finding.message
    assert "loader model" in finding.evidence["loader picks"]
    assert finding.remediation.commands == ("unset LD_LIBRARY_PATH",)


def test_cd102_compat_off_the_loader_path_is_ok(tmp_path, h200):
    """The nvidia/cuda images keep compat/ off the loader path: healthy."""
    finding = run_check("CD102", _facts(h200, _driver(_image(tmp_path), {}, "570.133.20"), {}))
    assert finding.status is Status.OK


def test_cd102_without_a_host_driver_cannot_judge(tmp_path, h200):
    env = {"LD_LIBRARY_PATH": "/usr/local/cuda/compat"}
    finding = run_check("CD102", _facts(h200, _driver(_image(tmp_path), env, None), env))
    assert finding.status is Status.UNKNOWN
    assert "--assume-driver" in (finding.reason or finding.message)


def test_cd105_forward_compat_on_geforce_fails_and_on_h200_passes(tmp_path, h200):
    env = {"LD_LIBRARY_PATH": "/usr/local/cuda/compat"}
    driver = _driver(_image(tmp_path, compat="575.57.08"), env, "570.211.01")
    geforce = (GpuInfo(0, "NVIDIA GeForce RTX 3060", "8.6", Source(SourceKind.ASSUMED, "--assume-gpu")),)
    finding = run_check("CD105", _facts(h200, driver, env, geforce))
    assert finding.status is Status.FAIL and "804" in finding.message
    assert run_check("CD105", _facts(h200, driver, env)).status is Status.OK
    unknown = run_check("CD105", _facts(h200, driver, env, ()))
    assert unknown.status is Status.UNKNOWN


def test_cd105_without_forward_compat_is_ok(tmp_path, h200):
    driver = _driver(_image(tmp_path, compat="575.57.08"), {}, "570.211.01")
    assert run_check("CD105", _facts(h200, driver, {})).status is Status.OK


def test_cd103_stubs_dir_first_gives_libcuda_so_the_stub(tmp_path, h200):
    root = _image(tmp_path)
    open(f"{root}{LIB}/libcuda.so.535.171.04", "w").close()
    os.symlink("libcuda.so.535.171.04", f"{root}{LIB}/libcuda.so.1")
    os.symlink("libcuda.so.1", f"{root}{LIB}/libcuda.so")
    env = {"LD_LIBRARY_PATH": "/usr/local/cuda/lib64/stubs:/usr/local/cuda/lib64"}
    driver = _driver(root, env, "535.171.04")
    picks = {h.soname: h for h in driver.resolved_libcuda}
    assert picks["libcuda.so.1"].real == f"{LIB}/libcuda.so.535.171.04"  # the stub dir has no libcuda.so.1
    finding = run_check("CD103", _facts(h200, driver, env))
    assert finding.status is Status.FAIL and "dlopen" in finding.message
    assert finding.remediation.commands == ("export LD_LIBRARY_PATH=/usr/local/cuda/lib64",)


def test_cd103_stubs_in_ld_so_conf_with_a_libcuda_so_1_link(tmp_path, h200):
    root = _image(tmp_path, stub_link=True)
    with open(f"{root}/etc/ld.so.conf.d/z-cuda-stubs.conf", "w") as f:
        f.write("/usr/local/cuda/lib64/stubs\n")
    driver = _driver(root, {}, "515.65.01")  # no driver injected: only the stub answers libcuda.so.1
    finding = run_check("CD103", _facts(h200, driver, {}))
    assert finding.status is Status.FAIL and "libcuda.so.1" in finding.message
    assert finding.remediation.commands[0].endswith("/etc/ld.so.conf /etc/ld.so.conf.d/*.conf && ldconfig")


def test_cd103_stubs_only_in_library_path_is_ok(tmp_path, h200):
    env = {"LIBRARY_PATH": "/usr/local/cuda/lib64/stubs"}
    assert run_check("CD103", _facts(h200, _driver(_image(tmp_path), env, "550.54.15"), env)).status is Status.OK


def test_live_answer_comes_first(tmp_path, h200):
    """A live cuDriverGetVersion answer outranks the model (CD102 stays a warning when the host copy loaded)."""
    env = {"LD_LIBRARY_PATH": "/usr/local/cuda/compat"}
    driver = replace(_driver(_image(tmp_path), env, "570.133.20"), loaded_libcuda=f"{LIB}/libcuda.so.570.133.20")
    assert run_check("CD102", _facts(h200, driver, env)).status is Status.WARN
