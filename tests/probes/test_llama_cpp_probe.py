"""llama-cpp-python's build read from its shared objects, over image roots laid out as its CMakeLists.txt installs
them (llama_cpp/ up to 0.2.79, llama_cpp/lib/ from 0.2.80), with ELF files written at test time."""

from __future__ import annotations

from cudadoctor.probes import llama_cpp
from cudadoctor.rules.llama_cpp import llama_cpp_cuda
from tests.conftest import make_ctx
from tests.elfwriter import shared_object
from tests.probes import test_linkage

# the site directory, the image root (site_paths pointed at SITE) and the file writer of the loader's tests
SITE, put, root = test_linkage.SITE, test_linkage.put, test_linkage.root


def dist(root, version: str) -> None:
    put(root, f"{SITE}/llama_cpp_python-{version}.dist-info/METADATA", f"Name: llama_cpp_python\nVersion: {version}\n")


def probe(root):
    return llama_cpp.probe_llama_cpp(make_ctx(root=str(root)))


def test_not_installed_is_none(root):
    put(root, f"{SITE}/numpy/__init__.py")
    assert probe(root) is None


def test_a_cuda_wheel_of_0_3_x_shows_its_cuda_backend_and_the_cuda_12_libraries(root):
    dist(root, "0.3.4")
    put(root, f"{SITE}/llama_cpp/lib/libllama.so", shared_object(["libggml.so"], "libllama.so"))
    put(root, f"{SITE}/llama_cpp/lib/libggml-cpu.so", shared_object(["libgomp.so.1"], "libggml-cpu.so"))
    needs = ["libcudart.so.12", "libcublas.so.12", "libcublasLt.so.12", "libcuda.so.1"]
    put(root, f"{SITE}/llama_cpp/lib/libggml-cuda.so", shared_object(needs, "libggml-cuda.so"))
    build = probe(root)
    assert build is not None
    assert build.objects == (
        "llama_cpp/lib/libggml-cpu.so",
        "llama_cpp/lib/libggml-cuda.so",
        "llama_cpp/lib/libllama.so",
    )
    assert build.cuda_needs == ("libcublas.so.12", "libcublasLt.so.12", "libcudart.so.12")
    assert llama_cpp_cuda(build) == (True, 12)


def test_a_cpu_build_of_0_2_x_needs_no_cuda_library(root):
    dist(root, "0.2.11")
    put(root, f"{SITE}/llama_cpp/libllama.so", shared_object(["libstdc++.so.6"], "libllama.so"))
    build = probe(root)
    assert build is not None and build.objects == ("llama_cpp/libllama.so",) and build.cuda_needs == ()
    assert llama_cpp_cuda(build) == (False, None)


def test_a_truncated_object_is_named_unread_and_decides_nothing(root):
    dist(root, "0.2.11")
    put(root, f"{SITE}/llama_cpp/libllama.so", shared_object(["libstdc++.so.6"], "libllama.so")[:80])
    build = probe(root)
    assert build is not None and build.unread and build.unread[0].startswith(f"{SITE}/llama_cpp/libllama.so")
    assert llama_cpp_cuda(build) == (None, None)
