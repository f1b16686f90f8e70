"""The loader's view of cuDNN's sub-libraries and of a wheel file that another CUDA variant overwrote, over image
roots laid out like real installs (ELF files written at test time)."""

from __future__ import annotations

import base64
import hashlib

import pytest

from cudadoctor.probes import interpreter
from tests.elfwriter import shared_object
from tests.probes.test_linkage import SITE, dist, link, need, put, view

SYSTEM = "/usr/lib/x86_64-linux-gnu"


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(interpreter, "site_paths", lambda ctx: (SITE,))
    return tmp_path / "root"


def torch_cudnn8(root) -> None:
    """torch 2.1.2's libtorch_cuda.so needing libcudnn.so.8 from nvidia-cudnn-cu12 8.9.2.26, whose shim keeps the
    six cuDNN 8 sub-libraries beside it; the libcudnn8 apt package's 8.9.7 in the multiarch directory."""
    dist(root, "torch", "2.1.2")
    put(
        root,
        f"{SITE}/torch/lib/libtorch_cuda.so",
        shared_object(["libcudnn.so.8"], None, ["$ORIGIN/../../nvidia/cudnn/lib"]),
    )
    dist(root, "nvidia-cudnn-cu12", "8.9.2.26")
    parts = ("ops_infer", "ops_train", "cnn_infer", "cnn_train", "adv_infer", "adv_train")
    for name in ("libcudnn.so.8", *(f"libcudnn_{p}.so.8" for p in parts)):
        put(root, f"{SITE}/nvidia/cudnn/lib/{name}")
    for stem in ("libcudnn", *(f"libcudnn_{p}" for p in parts)):
        put(root, f"{SYSTEM}/{stem}.so.8.9.7")
        link(root, f"{SYSTEM}/{stem}.so.8", f"{stem}.so.8.9.7")
    put(root, "/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n")
    put(root, "/etc/ld.so.conf.d/x86_64-linux-gnu.conf", f"{SYSTEM}\n")


def test_each_sub_library_beside_the_shim_and_on_the_loaders_path(root):
    torch_cudnn8(root)
    result, _ctx = view(root)
    cudnn = need(result, "torch", "libcudnn.so.8")
    assert cudnn.loaded is not None and str(cudnn.loaded.version) == "8.9.2.26"
    subs = {s.soname: s for s in cudnn.sublibraries}
    assert len(subs) == 6
    cnn = subs["libcudnn_cnn_train.so.8"]
    assert cnn.beside is not None and cnn.beside.path == f"{SITE}/nvidia/cudnn/lib/libcudnn_cnn_train.so.8"
    assert str(cnn.beside.version) == "8.9.2.26" and cnn.beside.distribution == "nvidia-cudnn-cu12"
    assert cnn.searched is not None and cnn.searched.path == f"{SYSTEM}/libcudnn_cnn_train.so.8"
    assert cnn.searched.via == "ld.so.conf" and str(cnn.searched.version) == "8.9.7"


def test_a_sub_library_only_the_system_has(root):
    """pytorch/pytorch#188892: the nvidia-cudnn-cu13 9.20.0.48 wheel lacks libcudnn_engines_tensor_ir.so.9, which
    a cuDNN 9.23 elsewhere on the loader's path has."""
    dist(root, "torch", "2.12.1")
    put(
        root,
        f"{SITE}/torch/lib/libtorch_cuda.so",
        shared_object(["libcudnn.so.9"], None, ["$ORIGIN/../../nvidia/cudnn/lib"]),
    )
    dist(root, "nvidia-cudnn-cu13", "9.20.0.48")
    for name in ("libcudnn.so.9", "libcudnn_graph.so.9", "libcudnn_ops.so.9"):
        put(root, f"{SITE}/nvidia/cudnn/lib/{name}")
    put(root, "/opt/cudnn/lib/libcudnn_engines_tensor_ir.so.9.23.0")
    link(root, "/opt/cudnn/lib/libcudnn_engines_tensor_ir.so.9", "libcudnn_engines_tensor_ir.so.9.23.0")
    result, _ctx = view(root, {"LD_LIBRARY_PATH": "/opt/cudnn/lib"})
    subs = {s.soname: s for s in need(result, "torch", "libcudnn.so.9").sublibraries}
    tensor_ir = subs["libcudnn_engines_tensor_ir.so.9"]
    assert tensor_ir.beside is None
    assert tensor_ir.searched is not None and tensor_ir.searched.via == "LD_LIBRARY_PATH"
    assert str(tensor_ir.searched.version) == "9.23.0"
    assert subs["libcudnn_graph.so.9"].searched is None  # only beside the shim


def test_no_sub_libraries_for_other_libraries(root):
    torch_cudnn8(root)
    result, _ctx = view(root)
    assert all(not n.sublibraries for n in result.needs if n.soname != "libcudnn.so.8")


def _wheel(root, name: str, version: str, content: bytes) -> None:
    """pip's install of one NCCL wheel: the library file (overwriting any) and RECORD with its sha256 and size."""
    put(root, f"{SITE}/nvidia/nccl/lib/libnccl.so.2", content)
    digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=").decode()
    info = f"{name.replace('-', '_')}-{version}.dist-info"
    dist(root, name, version)
    put(
        root, f"{SITE}/{info}/RECORD", f"nvidia/nccl/lib/libnccl.so.2,sha256={digest},{len(content)}\n{info}/RECORD,,\n"
    )


def _torch_nccl(root) -> None:
    dist(root, "torch", "2.2.0")
    put(
        root,
        f"{SITE}/torch/lib/libtorch_cuda.so",
        shared_object(["libnccl.so.2"], None, ["$ORIGIN/../../nvidia/nccl/lib"]),
    )


@pytest.mark.parametrize(
    ("first", "last"),
    [
        (("nvidia-nccl-cu12", "2.19.3", 30), ("nvidia-nccl-cu11", "2.14.3", 20)),
        (("nvidia-nccl-cu11", "2.14.3", 20), ("nvidia-nccl-cu12", "2.19.3", 30)),
    ],
    ids=["cu11-last", "cu12-last"],
)
def test_the_wheel_installed_last_owns_the_shared_file(root, first, last):
    """VichyTong/CodeJudge#2: nvidia-nccl-cu11 installed after torch's nvidia-nccl-cu12 overwrote libnccl.so.2;
    the other way round the file is cu12's though cu11 comes first by name."""
    _torch_nccl(root)
    for name, version, times in (first, last):
        _wheel(root, name, version, f"\x7fELF nccl {version}".encode("latin-1") * times)
    loaded = need(view(root)[0], "torch", "libnccl.so.2").loaded
    assert loaded is not None and loaded.distribution == last[0] and str(loaded.version) == last[1]


def test_without_records_the_name_decides(root):
    _torch_nccl(root)
    _wheel(root, "nvidia-nccl-cu11", "2.14.3", b"x" * 20)
    _wheel(root, "nvidia-nccl-cu12", "2.19.3", b"y" * 30)
    for name, version in (("nvidia_nccl_cu11", "2.14.3"), ("nvidia_nccl_cu12", "2.19.3")):
        (root / SITE.lstrip("/") / f"{name}-{version}.dist-info" / "RECORD").unlink()
    loaded = need(view(root)[0], "torch", "libnccl.so.2").loaded
    assert loaded is not None and loaded.distribution == "nvidia-nccl-cu11"


def _adv_needs_graph(root, major: int, wheel: str, system: str) -> None:
    """The wheel's cuDNN library needing its sibling (libcudnn_adv.so.9 -> libcudnn_graph.so.9; cuDNN 8's
    libcudnn_adv_infer.so.8 -> libcudnn_ops_infer.so.8), with an older system cuDNN first on LD_LIBRARY_PATH."""
    graph, adv = ("libcudnn_graph", "libcudnn_adv") if major >= 9 else ("libcudnn_ops_infer", "libcudnn_adv_infer")
    dist(root, f"nvidia-cudnn-cu{major + 4}", wheel)
    put(root, f"{SITE}/nvidia/cudnn/lib/{graph}.so.{major}")
    put(
        root,
        f"{SITE}/nvidia/cudnn/lib/{adv}.so.{major}",
        shared_object([f"{graph}.so.{major}"], f"{adv}.so.{major}", ["$ORIGIN"]),
    )
    put(root, f"{SYSTEM}/{graph}.so.{system}")
    link(root, f"{SYSTEM}/{graph}.so.{major}", f"{graph}.so.{system}")


@pytest.mark.parametrize(
    ("major", "wheel", "system", "sibling"), [(9, "9.19.0.56", "9.14.0", True), (8, "8.9.2.26", "8.9.0", False)]
)
def test_a_cudnn_library_gets_its_sibling_where_cudnn_loads_its_own_directory_first(
    root, major, wheel, system, sibling
):
    """cuDNN 9 loads its sub-libraries from its own directory first (compat/libraries.toml cudnn_loading,
    pytorch/pytorch#119989), so a sub-library's need of its sibling gets the wheel's copy, as measured on the H200
    with a system cuDNN 9.14 first on LD_LIBRARY_PATH; cuDNN 8 searches the loader's path, so the older copy loads."""
    _adv_needs_graph(root, major, wheel, system)
    graph = "libcudnn_graph" if major >= 9 else "libcudnn_ops_infer"
    result, _ctx = view(root, {"LD_LIBRARY_PATH": SYSTEM})
    got = need(result, f"nvidia-cudnn-cu{major + 4}", f"{graph}.so.{major}")
    assert got.loaded is not None
    if sibling:
        assert got.loaded.path == f"{SITE}/nvidia/cudnn/lib/{graph}.so.{major}"
        assert got.loaded.via == "loaded by cuDNN from its own directory"
        assert any(f.path == f"{SYSTEM}/{graph}.so.{major}" for f in got.shadowed)
    else:
        assert got.loaded.path == f"{SYSTEM}/{graph}.so.{major}" and got.loaded.via == "LD_LIBRARY_PATH"
