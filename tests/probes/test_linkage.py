"""The loader's view over image roots laid out like real installs, with ELF files written at test time."""

from __future__ import annotations

import os

import pytest

from cudadoctor.probes import interpreter, linkage, packages, scancache
from tests.conftest import make_ctx
from tests.elfwriter import shared_object

SITE = "/opt/venv/lib/python3.12/site-packages"


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(interpreter, "site_paths", lambda ctx: (SITE,))
    return tmp_path / "root"


def put(root, path: str, data: bytes | str = b"") -> None:
    full = root / path.lstrip("/")
    full.parent.mkdir(parents=True, exist_ok=True)
    full.write_bytes(data.encode() if isinstance(data, str) else data)


def link(root, path: str, target: str) -> None:
    full = root / path.lstrip("/")
    full.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, full)


def dist(root, name: str, version: str) -> None:
    put(root, f"{SITE}/{name.replace('-', '_')}-{version}.dist-info/METADATA", f"Name: {name}\nVersion: {version}\n")


def torch_cu124(root) -> None:
    """torch 2.5.1's layout: libtorch_cuda.so with RUNPATH into the nvidia wheels, and the wheels' libraries."""
    dist(root, "torch", "2.5.1")
    runpath = ["$ORIGIN/../../nvidia/cudnn/lib", "$ORIGIN/../../nvidia/cusparse/lib", "$ORIGIN"]
    put(
        root, f"{SITE}/torch/lib/libtorch_cuda.so", shared_object(["libcudnn.so.9", "libcusparse.so.12"], None, runpath)
    )
    dist(root, "nvidia-cudnn-cu12", "9.1.0.70")
    put(root, f"{SITE}/nvidia/cudnn/lib/libcudnn.so.9")
    dist(root, "nvidia-cusparse-cu12", "12.3.1.170")
    runpath = ["$ORIGIN/../../nvjitlink/lib", "$ORIGIN"]
    put(root, f"{SITE}/nvidia/cusparse/lib/libcusparse.so.12", shared_object(["libnvJitLink.so.12"], None, runpath))
    dist(root, "nvidia-nvjitlink-cu12", "12.4.127")
    put(root, f"{SITE}/nvidia/nvjitlink/lib/libnvJitLink.so.12")


def toolkit_12_2(root) -> None:
    put(root, "/usr/local/cuda-12.2/lib64/libnvJitLink.so.12.2.140")
    link(root, "/usr/local/cuda-12.2/lib64/libnvJitLink.so.12", "libnvJitLink.so.12.2.140")


def view(root, env=None):
    ctx = make_ctx(root=str(root), env=env or {})
    return linkage.probe_loader_view(ctx), ctx


def need(result, package, soname):
    return next(n for n in result.needs if n.package == package and n.soname == soname)


def test_the_wheels_runpath_wins_without_ld_library_path(root):
    torch_cu124(root)
    toolkit_12_2(root)
    result, _ctx = view(root)
    jit = need(result, "nvidia-cusparse-cu12", "libnvJitLink.so.12")
    assert jit.loaded is not None and jit.loaded.via == "RUNPATH"
    assert jit.loaded.distribution == "nvidia-nvjitlink-cu12" and str(jit.loaded.version) == "12.4.127"
    cudnn = need(result, "torch", "libcudnn.so.9")
    assert cudnn.loaded is not None and str(cudnn.loaded.version) == "9.1.0.70"
    assert "ld.so.conf" in result.cache  # no cache file in this root


def test_ld_library_path_shadows_the_wheel(root):
    torch_cu124(root)
    toolkit_12_2(root)
    result, _ctx = view(root, {"LD_LIBRARY_PATH": "/usr/local/cuda-12.2/lib64"})
    jit = need(result, "nvidia-cusparse-cu12", "libnvJitLink.so.12")
    assert jit.loaded is not None and jit.loaded.via == "LD_LIBRARY_PATH" and str(jit.loaded.version) == "12.2.140"
    assert [(s.distribution, str(s.version)) for s in jit.shadowed] == [("nvidia-nvjitlink-cu12", "12.4.127")]


def test_ld_preload_wins_over_everything(root):
    torch_cu124(root)
    put(root, "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.0.0")
    result, _ctx = view(root, {"LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.0.0"})
    cudnn = need(result, "torch", "libcudnn.so.9")
    assert cudnn.loaded is not None and cudnn.loaded.via == "LD_PRELOAD"
    assert [f.path for f in result.preloaded] == ["/usr/lib/x86_64-linux-gnu/libcudnn.so.9.0.0"]


def test_a_community_wheel_needing_another_major_resolves_nowhere(root):
    dist(root, "fastkernels", "0.3.1")  # any package: not on a list
    put(root, f"{SITE}/fastkernels.libs/libfk-1a2b3c.so", shared_object(["libcublas.so.11"]))
    put(root, "/usr/local/cuda-12.4/lib64/libcublas.so.12")
    result, _ctx = view(root)
    cublas = need(result, "fastkernels", "libcublas.so.11")
    assert cublas.loaded is None
    assert cublas.other_majors == ("/usr/local/cuda-12.4/lib64/libcublas.so.12",)


def test_the_ld_so_cache_is_used_when_present(root):
    from tests.probes.test_ldcache import X86, new_cache

    dist(root, "onnxruntime-gpu", "1.19.2")
    put(root, f"{SITE}/onnxruntime/capi/libonnxruntime_providers_cuda.so", shared_object(["libcudnn.so.9"]))
    put(root, "/opt/cudnn/lib/libcudnn.so.9.3.0")
    link(root, "/opt/cudnn/lib/libcudnn.so.9", "libcudnn.so.9.3.0")
    put(root, "/etc/ld.so.cache", new_cache([("libcudnn.so.9", "/opt/cudnn/lib/libcudnn.so.9", X86)]))
    result, _ctx = view(root)
    cudnn = need(result, "onnxruntime-gpu", "libcudnn.so.9")
    assert cudnn.loaded is not None and cudnn.loaded.via == "ld.so.cache" and str(cudnn.loaded.version) == "9.3.0"


def test_nothing_needing_cuda_is_no_view(root):
    dist(root, "numpy", "2.1.0")
    put(root, f"{SITE}/numpy/core/_multiarray.so", shared_object(["libc.so.6"]))
    put(root, f"{SITE}/numpy/core/not-elf.so", b"INPUT(-lfoo)\n")  # no ELF magic: ld.so loads no library from it
    assert view(root)[0] is None


def test_an_object_that_cannot_be_read_is_named_not_taken_as_needing_nothing(root):
    """Issue #27: a truncated object (ELF magic, then nothing) needs something unknown; the view says so."""
    dist(root, "numpy", "2.1.0")
    put(root, f"{SITE}/numpy/core/_multiarray.so", shared_object(["libc.so.6"]))
    put(root, f"{SITE}/numpy/core/broken.so", b"\x7fELF garbage")
    put(root, f"{SITE}/numpy/core/huge_runpath.so", shared_object(["libcudart.so.12"], runpath=["/x" * 3000]))
    result = view(root)[0]
    assert result is not None and result.needs == ()
    assert [u.split(": ", 1)[0] for u in result.unread] == [
        f"{SITE}/numpy/core/broken.so",
        f"{SITE}/numpy/core/huge_runpath.so",
    ]
    assert "truncated" in result.unread[0] and "unterminated string" in result.unread[1]
    assert view(root)[0] == result  # the second run, from the scan cache, says the same


def test_a_second_run_reads_no_elf_file(root, monkeypatch):
    torch_cu124(root)
    first, _ctx = view(root)
    calls = []
    real = scancache.read_dynamic

    def counting(path, size, relevant=None):
        calls.append(path)
        return real(path, size, relevant)

    monkeypatch.setattr(scancache, "read_dynamic", counting)
    second, _ctx = view(root)
    assert calls == [] and second == first
    # reinstalled as pip does it: a new file renamed over the old one (the directory's mtime changes)
    put(root, f"{SITE}/torch/lib/.libtorch_cuda.so.tmp", shared_object(["libnccl.so.2"]))
    lib = root / SITE.lstrip("/") / "torch" / "lib"
    os.replace(lib / ".libtorch_cuda.so.tmp", lib / "libtorch_cuda.so")
    third, _ctx = view(root)
    assert [os.path.basename(c) for c in calls] == ["libtorch_cuda.so"]
    assert any(n.soname == "libnccl.so.2" for n in third.needs)


def test_expand_origin():
    assert linkage.expand_origin("$ORIGIN/../../nvidia/cudnn/lib", "/s/torch/lib") == "/s/nvidia/cudnn/lib"
    assert linkage.expand_origin("${ORIGIN}", "/s/torch/lib") == "/s/torch/lib"


@pytest.mark.parametrize(
    ("text", "abi"),
    [('set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=0")\n', False),
     ('set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=1")\n', True), ("# nothing\n", None)],
)  # fmt: skip
def test_torch_cxx11_abi_from_torchconfig(text, abi):
    assert packages.parse_torch_cxx11_abi(text) is abi


def test_the_scan_cache_keeps_only_what_the_scan_reads(tmp_path, monkeypatch):
    """A listing keeps shared objects and subdirectories (not __pycache__): a site-packages tree's tens of
    thousands of other names stay out of the cache every run reads."""
    from cudadoctor.probes import scancache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    site = tmp_path / "site"
    for name in ("libcudnn.so.9", "libfoo.so", "_C.cpython-312-x86_64-linux-gnu.so", "module.py", "data.json"):
        (site / "pkg").mkdir(parents=True, exist_ok=True)
        (site / "pkg" / name).write_bytes(b"")
    for sub in ("__pycache__", "lib", "include"):
        (site / "pkg" / sub).mkdir()
    cache = scancache.ScanCache()
    files, subdirs = cache.listing(str(site / "pkg"))
    assert files == ["_C.cpython-312-x86_64-linux-gnu.so", "libcudnn.so.9", "libfoo.so"]
    assert subdirs == ["include", "lib"]
    cache.save()
    again = scancache.ScanCache().listing(str(site / "pkg"))
    assert again == (files, subdirs)


def test_the_openers_runpath_is_read_inside_an_image_root(tmp_path) -> None:
    """An image's absolute link is followed inside the image, never to the host's file of that name (review)."""
    from cudadoctor.probes import linkage
    from cudadoctor.probes.context import ProbeContext
    from cudadoctor.rootfs import RootFS
    from tests.elfwriter import shared_object

    host_lib = tmp_path / "host" / "libnvinfer.so.8"
    host_lib.parent.mkdir()
    host_lib.write_bytes(shared_object(soname="libnvinfer.so.8", runpath=["/host/only"]))
    image = tmp_path / "image"
    inside = image / str(host_lib).lstrip("/")  # the same absolute path, inside the image
    inside.parent.mkdir(parents=True)
    inside.write_bytes(shared_object(soname="libnvinfer.so.8", runpath=["$ORIGIN/../nvidia/cudnn/lib"]))
    link = image / "site" / "tensorrt_libs" / "libnvinfer.so.8"
    link.parent.mkdir(parents=True)
    link.symlink_to(host_lib)  # absolute: names a path that exists on the host too
    ctx = ProbeContext(fs=RootFS(str(image)))
    dyn = linkage._opener_dynamic(ctx, "/site/tensorrt_libs/libnvinfer.so.8", scancache.ScanCache())
    assert dyn.runpath == ("$ORIGIN/../nvidia/cudnn/lib",)


# --- issue #27 ------------------------------------------------------------------------------------------


def _torch_needing_cudart(root, runpath=("$ORIGIN/../../nvidia/cuda_runtime/lib",)) -> None:
    dist(root, "torch", "2.5.1")
    put(root, f"{SITE}/torch/lib/libtorch_cuda.so", shared_object(["libcudart.so.12"], None, list(runpath)))
    dist(root, "nvidia-cuda-runtime-cu12", "12.4.127")


def test_a_library_built_for_another_cpu_is_skipped_as_ld_so_skips_it(root):
    """An aarch64 libcudart in an x86-64 image is not "found": ld.so skips it and searches on (issue #27)."""
    _torch_needing_cudart(root)
    put(root, f"{SITE}/nvidia/cuda_runtime/lib/libcudart.so.12", shared_object(soname="libcudart.so.12", machine=183))
    result, _ctx = view(root)
    cudart = need(result, "torch", "libcudart.so.12")
    assert cudart.loaded is None
    assert cudart.foreign == (f"{SITE}/nvidia/cuda_runtime/lib/libcudart.so.12 (for AArch64)",)
    # an x86-64 copy later in the search order is the one loaded
    put(root, "/usr/local/cuda/lib64/libcudart.so.12", shared_object(soname="libcudart.so.12"))
    result, _ctx = view(root, {"LD_LIBRARY_PATH": "/usr/local/cuda/lib64"})
    # LD_LIBRARY_PATH comes before RUNPATH: the x86-64 copy loads, the foreign one is named as skipped
    assert need(result, "torch", "libcudart.so.12").loaded.path == "/usr/local/cuda/lib64/libcudart.so.12"
    put(root, "/usr/local/cuda/lib64/libcudart.so.12", shared_object(soname="libcudart.so.12", machine=183))
    put(root, f"{SITE}/nvidia/cuda_runtime/lib/libcudart.so.12", shared_object(soname="libcudart.so.12"))
    cudart = need(view(root, {"LD_LIBRARY_PATH": "/usr/local/cuda/lib64"})[0], "torch", "libcudart.so.12")
    assert cudart.loaded.path == f"{SITE}/nvidia/cuda_runtime/lib/libcudart.so.12"
    assert cudart.foreign == ("/usr/local/cuda/lib64/libcudart.so.12 (for AArch64)",)


def test_the_examined_machines_cpu_decides_which_copy_is_foreign(root):
    _torch_needing_cudart(root)
    put(root, f"{SITE}/torch/lib/libtorch_cuda.so", shared_object(
        ["libcudart.so.12"], None, ["$ORIGIN/../../nvidia/cuda_runtime/lib"], machine=183))  # fmt: skip
    put(root, f"{SITE}/nvidia/cuda_runtime/lib/libcudart.so.12", shared_object(soname="libcudart.so.12", machine=183))
    ctx = make_ctx(root=str(root), machine="aarch64")
    cudart = need(linkage.probe_loader_view(ctx), "torch", "libcudart.so.12")
    assert cudart.loaded is not None and cudart.foreign == ()


def test_the_object_cap_is_named_in_the_view(root, monkeypatch):
    monkeypatch.setattr(linkage, "_MAX_OBJECTS", 3)
    for index in range(5):
        put(root, f"{SITE}/pkg/lib{index}.so", shared_object(["libc.so.6"]))
    dist(root, "pkg", "1.0")
    result, _ctx = view(root)
    assert result is not None and result.unread == (f"{SITE}: more than 3 shared objects; the rest were not read",)


def test_a_directory_that_cannot_be_listed_is_named(root, monkeypatch):
    dist(root, "pkg", "1.0")
    put(root, f"{SITE}/pkg/sub/lib.so", shared_object(["libcudart.so.12"]))
    denied = str(root / SITE.lstrip("/") / "pkg" / "sub")
    real = os.scandir

    def scandir(path):  # EACCES as for a mode-0 directory (root, who runs the tests here, lists any)
        if path == denied:
            raise PermissionError(13, "Permission denied", path)
        return real(path)

    monkeypatch.setattr(scancache.os, "scandir", scandir)
    result, _ctx = view(root)
    assert result is not None and result.unread == (f"{SITE}/pkg/sub: directory not listed (Permission denied)",)


@pytest.mark.parametrize("how", ["in place", "renamed over it"])
def test_a_same_size_replacement_with_its_mtime_restored_is_read_again(root, how):
    """Issue #27: the scan cache was keyed on (path, size, mtime), and a directory with an unchanged mtime was
    not even stat'ed: a library replaced by a same-size file, its (and its directory's) mtime set back, kept the
    old answer. The change time cannot be set back."""
    dist(root, "torch", "2.5.1")
    lib = root / SITE.lstrip("/") / "torch" / "lib"
    put(root, f"{SITE}/torch/lib/libtorch_cuda.so", shared_object(["libcudnn.so.9"]))
    before = (os.stat(lib / "libtorch_cuda.so"), os.stat(lib))
    assert [n.soname for n in view(root)[0].needs] == ["libcudnn.so.9"]
    replacement = shared_object(["libcudnn.so.8"])  # the same size: one digit differs
    assert len(replacement) == before[0].st_size
    if how == "in place":
        with open(lib / "libtorch_cuda.so", "r+b") as handle:
            handle.write(replacement)
    else:
        (lib / ".new").write_bytes(replacement)
        os.replace(lib / ".new", lib / "libtorch_cuda.so")
    os.utime(lib / "libtorch_cuda.so", ns=(before[0].st_atime_ns, before[0].st_mtime_ns))
    os.utime(lib, ns=(before[1].st_atime_ns, before[1].st_mtime_ns))
    assert os.stat(lib / "libtorch_cuda.so").st_mtime_ns == before[0].st_mtime_ns
    assert [n.soname for n in view(root)[0].needs] == ["libcudnn.so.8"]


def test_the_memo_asks_what_the_scan_cache_keys_on(tmp_path, monkeypatch):
    """The memo replays the scan cache's stats (probes/memo.py stat_answer): the same key, so a restored mtime is
    a change for both."""
    from cudadoctor.probes import memo

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    lib = tmp_path / "lib.so"
    lib.write_bytes(shared_object(["libcudart.so.12"]))
    seen: dict[tuple[str, str], object] = {}
    cache = scancache.ScanCache(observe=lambda kind, path, answer: seen.setdefault((kind, path), answer))
    cache.dynamic(str(lib))
    cache.listing(str(tmp_path))
    for (kind, path), answer in seen.items():
        assert memo.stat_answer(kind, path) == answer
    info = os.stat(lib)
    lib.write_bytes(shared_object(["libcudart.so.13"]))
    os.utime(lib, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert memo.stat_answer("sig", str(lib)) != seen[("sig", str(lib))]
