"""CD302 on the copies the loader's view sees beyond one soname: cuDNN's sub-libraries, the cuDNN torch 1.x
ships in torch/lib, a wheel file another CUDA variant overwrote, and a wheel directory listed too late on
LD_LIBRARY_PATH. The real H200 snapshot, changed one fact at a time; sonames and versions are real ones
(the threads in tests/corpus/cases)."""

from __future__ import annotations

from dataclasses import replace

from packaging.version import Version

from cudadoctor.checks.findings import Status
from cudadoctor.facts.model import InstalledPackage, LibraryCopy, LinkedFile, LoaderView, NeededLibrary, SubLibrary
from cudadoctor.probes.collect import live_context
from cudadoctor.probes.linkage import cudnn_siblings
from cudadoctor.testing import run_check
from tests.checks.conftest import with_env

SITE = "/opt/venv/lib/python3.12/site-packages"
WHEEL = f"{SITE}/nvidia/cudnn/lib"
SYSTEM = "/usr/lib/x86_64-linux-gnu"


def _shim_need(
    major: int, wheel_version: str, system_version: str, names: dict[str, tuple[bool, bool]]
) -> NeededLibrary:
    """torch needing libcudnn.so.<major> from the wheel, with sub-libraries {soname: (beside, on the loader's path)}."""
    shim = LinkedFile(f"{WHEEL}/libcudnn.so.{major}", "RUNPATH", Version(wheel_version), f"nvidia-cudnn-cu{major + 4}")
    subs = tuple(
        SubLibrary(
            name,
            LinkedFile(f"{WHEEL}/{name}", f"beside libcudnn.so.{major}", Version(wheel_version)) if beside else None,
            LinkedFile(f"{SYSTEM}/{name}", "ld.so.cache", Version(system_version)) if searched else None,
        )
        for name, (beside, searched) in names.items()
    )
    return NeededLibrary("torch", f"{SITE}/torch/lib/libtorch_cuda.so", f"libcudnn.so.{major}", shim, (), (), (), subs)


CUDNN8 = ("libcudnn_ops_infer.so.8", "libcudnn_cnn_infer.so.8", "libcudnn_cnn_train.so.8")
CUDNN9 = ("libcudnn_graph.so.9", "libcudnn_ops.so.9", "libcudnn_engines_precompiled.so.9")


def test_cudnn8_shim_takes_the_system_sub_libraries(h200):
    """pytorch/pytorch#119989: the wheel's cuDNN 8.9.2 shim loads the system 8.9.7 sub-libraries first."""
    need = _shim_need(8, "8.9.2.26", "8.9.7", dict.fromkeys(CUDNN8, (True, True)))
    finding = run_check("CD302", replace(h200, loader=LoaderView(needs=(need,))))
    assert finding.status is Status.FAIL
    assert "cuDNN 8.9.2.26" in finding.message and "libcudnn_cnn_train.so.8" in finding.message
    assert f"{SYSTEM} (cuDNN 8.9.7, ld.so.cache)" in finding.message
    assert finding.remediation is not None
    assert f"export LD_LIBRARY_PATH={WHEEL}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}" in finding.remediation.commands


def test_cudnn8_sub_libraries_of_the_same_release_are_not_mixed(h200):
    need = _shim_need(8, "8.9.7.29", "8.9.7", dict.fromkeys(CUDNN8, (True, True)))
    assert run_check("CD302", replace(h200, loader=LoaderView(needs=(need,)))).status is Status.OK


def test_cudnn9_prefers_its_own_directory(h200):
    """cuDNN 9 loads the copies beside its shim first: a system cuDNN 9.14 on the cache path is not used."""
    need = _shim_need(9, "9.19.0.56", "9.14.0", dict.fromkeys(CUDNN9, (True, True)))
    assert run_check("CD302", replace(h200, loader=LoaderView(needs=(need,)))).status is Status.OK


def test_cudnn_9_20_falls_through_to_the_system_tensor_ir_engine(h200):
    """pytorch/pytorch#188892: the 9.20.0.48 wheel lacks libcudnn_engines_tensor_ir.so.9, its graph library loads
    it by name, and the system 9.23 copy is taken."""
    names = dict.fromkeys(CUDNN9, (True, True)) | {"libcudnn_engines_tensor_ir.so.9": (False, True)}
    finding = run_check("CD302", replace(h200, loader=LoaderView(needs=(_shim_need(9, "9.20.0.48", "9.23.0", names),))))
    assert finding.status is Status.FAIL
    assert "libcudnn_engines_tensor_ir.so.9" in finding.message and "libcudnn_graph.so.9" not in finding.message
    # The wheel's directory does not hold it: putting it first would not help, so no such command is offered.
    assert finding.remediation is not None and not any("nvidia/cudnn/lib$" in c for c in finding.remediation.commands)


def test_a_sub_library_the_release_does_not_load_is_not_judged(h200):
    """9.19 is not known to load the tensor_ir engine (compat/libraries.toml): a system copy of it is harmless."""
    names = dict.fromkeys(CUDNN9, (True, True)) | {"libcudnn_engines_tensor_ir.so.9": (False, True)}
    need = _shim_need(9, "9.19.0.56", "9.23.0", names)
    assert run_check("CD302", replace(h200, loader=LoaderView(needs=(need,)))).status is Status.OK


# --- torch 1.x's bundled cuDNN -------------------------------------------------------------------------


def _torch112(h200):
    torch = replace(h200.packages["torch"], version=Version("1.12.0+cu113"), cuda_variant="cu113", requires=())
    return {**h200.packages, "torch": torch}


def _bundled_view(loaded_version: str) -> LoaderView:
    loaded = LinkedFile(
        "/public/apps/cudnn/v8.0.3.33-cuda.11.0/cuda/lib64/libcudnn.so.8", "LD_LIBRARY_PATH", Version(loaded_version)
    )
    bundled = LinkedFile(f"{SITE}/torch/lib/libcudnn.so.8", "RUNPATH", None, None, "torch")
    need = NeededLibrary("torch", f"{SITE}/torch/lib/libtorch_cuda.so", "libcudnn.so.8", loaded, (bundled,))
    return LoaderView(needs=(need,))


def test_an_older_cudnn_on_ld_library_path_hides_torch_1_12s_bundled_one(h200):
    """pytorch/pytorch#80637: torch 1.12.0+cu113 ships cuDNN 8.3.2 in torch/lib; LD_LIBRARY_PATH's 8.0.3 wins."""
    finding = run_check("CD302", replace(h200, packages=_torch112(h200), loader=_bundled_view("8.0.3")))
    assert finding.status is Status.FAIL
    assert "8.0.3" in finding.message and "cuDNN 8.3.2.44 torch 1.12.0+cu113 ships" in finding.message
    assert finding.remediation is not None
    assert "grep -vx '/public/apps/cudnn/v8.0.3.33-cuda.11.0/cuda/lib64'" in finding.remediation.commands[0]


def test_a_newer_cudnn_before_torch_lib_is_not_reported(h200):
    """torch accepts a runtime cuDNN of the same major and a newer minor (torch/backends/cudnn/__init__.py)."""
    facts = replace(h200, packages=_torch112(h200), loader=_bundled_view("8.4.1"))
    assert run_check("CD302", facts).status is Status.OK


# --- a wheel file overwritten by another CUDA variant ---------------------------------------------------


def _nccl_facts(h200, owner: str, version: str):
    torch = replace(h200.packages["torch"], requires=('nvidia-nccl-cu12 (==2.19.3) ; platform_system == "Linux"',))
    extra = {
        n: InstalledPackage(n, Version(v), SITE, h200.packages["torch"].source)
        for n, v in (("nvidia-nccl-cu12", "2.19.3"), ("nvidia-nccl-cu11", "2.14.3"))
    }
    loaded = LinkedFile(f"{SITE}/nvidia/nccl/lib/libnccl.so.2", "RUNPATH", Version(version), owner)
    need = NeededLibrary("torch", f"{SITE}/torch/lib/libtorch_cuda.so", "libnccl.so.2", loaded)
    return replace(h200, packages={**h200.packages, **extra, "torch": torch}, loader=LoaderView(needs=(need,)))


def test_nccl_cu11_installed_over_torchs_nccl_cu12(h200):
    """VichyTong/CodeJudge#2: nvidia-nccl-cu11 2.14.3 overwrote the libnccl.so.2 of the nvidia-nccl-cu12 2.19.3 pin."""
    finding = run_check("CD302", _nccl_facts(h200, "nvidia-nccl-cu11", "2.14.3"))
    assert finding.status is Status.FAIL
    assert "nvidia-nccl-cu11 2.14.3's, installed over the nvidia-nccl-cu12 2.19.3 that torch pins" in finding.message
    assert finding.remediation is not None
    assert finding.remediation.commands[0] == (
        "python -m pip uninstall -y nvidia-nccl-cu11 && python -m pip install --force-reinstall --no-deps "
        "nvidia-nccl-cu12==2.19.3"
    )


def test_the_pinned_variant_owning_its_file_is_fine(h200):
    assert run_check("CD302", _nccl_facts(h200, "nvidia-nccl-cu12", "2.19.3")).status is Status.OK


# --- the wheel's directory listed after an older copy on LD_LIBRARY_PATH --------------------------------


def _tf_facts(h200, ld_library_path: str):
    conda = "/opt/conda/envs/tf/lib/python3.10/site-packages/nvidia/cudnn/lib"
    source = h200.cudnn[0].source
    copies = (
        LibraryCopy("cudnn", Version("8.6.0.163"), "pip", "x.dist-info", source, "nvidia-cudnn-cu11", 11,
                    (f"{conda}/libcudnn.so.8",)),
        LibraryCopy("cudnn", Version("8.1.1"), "toolkit", "/usr/local/cuda-11.2/lib64/libcudnn.so.8", source, None,
                    None, ("/usr/local/cuda-11.2/lib64/libcudnn.so.8.1.1",)),
    )  # fmt: skip
    return replace(with_env(h200, LD_LIBRARY_PATH=ld_library_path.replace("$W", conda)), cudnn=copies, loader=None)


def test_system_cudnn_listed_before_the_wheels_directory(h200):
    """tensorflow/tensorflow#60750: the guide's activation script appended the wheel's directory."""
    finding = run_check("CD302", _tf_facts(h200, "/usr/local/cuda-11.2/lib64:/opt/conda/envs/tf/lib/:$W"))
    assert finding.status is Status.FAIL
    assert "cuDNN 8.1.1 in /usr/local/cuda-11.2/lib64 comes before the nvidia-cudnn-cu11 8.6.0.163" in finding.message
    assert finding.remediation is not None
    assert finding.remediation.commands == (
        "export LD_LIBRARY_PATH=/opt/conda/envs/tf/lib/python3.10/site-packages/nvidia/cudnn/lib:$LD_LIBRARY_PATH",
    )


def test_the_wheels_directory_first_is_fine(h200):
    assert run_check("CD302", _tf_facts(h200, "$W:/usr/local/cuda-11.2/lib64")).status is Status.OK


def _sibling_need(major: int, wheel_version: str, system_version: str, *, beside: bool) -> NeededLibrary:
    """The wheel's libcudnn_adv.so.N needing libcudnn_graph.so.N, with a system cuDNN first on LD_LIBRARY_PATH."""
    graph = f"libcudnn_graph.so.{major}" if major >= 9 else f"libcudnn_ops_infer.so.{major}"
    adv = f"libcudnn_adv.so.{major}" if major >= 9 else f"libcudnn_adv_infer.so.{major}"
    dist = f"nvidia-cudnn-cu{major + 4}"
    system = LinkedFile(f"{SYSTEM}/{graph}", "LD_LIBRARY_PATH", Version(system_version))
    wheel = LinkedFile(f"{WHEEL}/{graph}", "RUNPATH", Version(wheel_version), dist)
    hidden = (wheel,) if beside else (replace(wheel, path=f"{SITE}/elsewhere/{graph}"),)
    # the loader's view as the probe leaves it: cuDNN's own-directory rule applied (probes/linkage.py)
    (resolved,) = cudnn_siblings(
        live_context(health=False), [NeededLibrary(dist, f"{WHEEL}/{adv}", graph, system, hidden)]
    )
    return resolved


def test_cudnn9_sub_library_needing_its_sibling_gets_the_sibling(h200):
    """Measured on the H200 (LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu, system cuDNN 9.14, the cu13 wheel's 9.19):
    the wheel's libcudnn_adv.so.9 needs libcudnn_graph.so.9, which cuDNN 9 already loaded from its own directory,
    so the older system copy never loads — no error (it was a false alarm on the real machine)."""
    need = _sibling_need(9, "9.19.0.56", "9.14.0", beside=True)
    assert run_check("CD302", replace(h200, loader=LoaderView(needs=(need,)))).status is not Status.FAIL


def test_cudnn8_sub_library_needing_its_sibling_takes_the_older_copy(h200):
    """cuDNN 8 searches the loader's path first (pytorch/pytorch#119989): the older system copy does load."""
    need = _sibling_need(8, "8.9.2.26", "8.9.0", beside=True)
    assert run_check("CD302", replace(h200, loader=LoaderView(needs=(need,)))).status is Status.FAIL


def test_cudnn9_sibling_rule_needs_the_sibling_beside_it(h200):
    """Without a copy beside the needer, nothing was loaded from its own directory: the older copy loads."""
    need = _sibling_need(9, "9.19.0.56", "9.14.0", beside=False)
    assert run_check("CD302", replace(h200, loader=LoaderView(needs=(need,)))).status is Status.FAIL


def _torch_rpath_needs() -> LoaderView:
    """torch 2.11's libtorch_cuda.so needs, resolved through its DT_RPATH to its pinned wheels (readelf, H200)."""
    torch_lib = "/opt/torch/.venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so"
    wheels = "/opt/torch/.venv/lib/python3.12/site-packages/nvidia"
    cudnn = LinkedFile(f"{wheels}/cudnn/lib/libcudnn.so.9", "RPATH", Version("9.19.0.56"), "nvidia-cudnn-cu13")
    nccl = LinkedFile(f"{wheels}/nccl/lib/libnccl.so.2", "RPATH", Version("2.28.9"), "nvidia-nccl-cu13")
    hidden = LinkedFile("/usr/lib/x86_64-linux-gnu/libcudnn.so.9", "LD_LIBRARY_PATH", Version("9.14.0"))
    return LoaderView(
        needs=(
            NeededLibrary("torch", torch_lib, "libcudnn.so.9", cudnn, (hidden,)),
            NeededLibrary("torch", torch_lib, "libnccl.so.2", nccl, ()),
        )
    )


def test_a_system_copy_on_ld_library_path_does_not_beat_torchs_rpath(h200):
    """Measured on the H200: LD_LIBRARY_PATH=/lib/x86_64-linux-gnu (system cuDNN 9.14, NCCL 2.28.3) leaves torch 2.11
    on its pinned 9.19 / 2.28.9 wheels, because its libraries carry DT_RPATH: the directory guess must not warn."""
    facts = with_env(h200, LD_LIBRARY_PATH="/lib/x86_64-linux-gnu:/usr/local/cuda/lib64")
    assert run_check("CD302", facts).status is Status.WARN  # without the loader's view: only the directory guess
    assert run_check("CD302", replace(facts, loader=_torch_rpath_needs())).status is Status.OK


def test_a_cudnn_release_outside_the_data_is_not_passed(h200):
    """A shim whose sub-library rule compat/libraries.toml does not hold (a cuDNN 10 no table knows): CD302 could not
    judge that part, it does not say OK."""
    need = _shim_need(10, "10.0.0", "10.0.0", {"libcudnn_graph.so.10": (True, True)})
    finding = run_check("CD302", replace(h200, loader=LoaderView(needs=(need,))))
    assert finding.status is Status.UNKNOWN
    assert "the sub-libraries cuDNN 10.0.0 loads (not in compat/libraries.toml)" in finding.reason


def test_torch_bundled_cudnn_outside_the_data_is_not_passed(h200):
    """torch/lib holds a cuDNN of a torch release compat/torch.toml has no bundled_cudnn row for."""
    torch = InstalledPackage(
        "torch", Version("1.7.1+cu110"), SITE, h200.packages["torch"].source, cuda_variant="cu110", cuda_build="11.0"
    )
    bundled = LinkedFile(f"{SITE}/torch/lib/libcudnn.so.8", "RUNPATH", None, None, "torch")
    loaded = LinkedFile("/usr/lib/x86_64-linux-gnu/libcudnn.so.8", "LD_LIBRARY_PATH", Version("8.0.5"))
    need = NeededLibrary("torch", f"{SITE}/torch/lib/libtorch_cuda.so", "libcudnn.so.8", loaded, (bundled,))
    facts = replace(h200, loader=LoaderView(needs=(need,)), packages={**h200.packages, "torch": torch})
    finding = run_check("CD302", facts)
    assert finding.status is Status.UNKNOWN
    assert "the cuDNN torch 1.7.1+cu110 bundles in torch/lib (not in compat/torch.toml)" in finding.reason
