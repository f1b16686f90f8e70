"""The queries over data that no check reads yet (flash-attn, xformers, NGC, libraries, images, forward compat)."""

from __future__ import annotations

from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.data.rows import FlashAttnExclusion, FlashAttnRelease

M = CompatMatrix(False)


def test_flash_attn_wheels_are_the_product_of_the_lists_less_the_exclusions():
    row = FlashAttnRelease(
        version=Version("2.8.3"),
        wheels_torch=("2.4.0", "2.8.0"),
        wheels_python=("3.12", "3.13"),
        wheels_cuda_tag=("cu12",),
        wheels_cxx11abi=("FALSE", "TRUE"),
        wheels_excluded=(FlashAttnExclusion(torch_version="2.4.0", python_version="3.13"),),
    )
    names = [w.filename for w in M.flash_attn_wheels(row)]
    assert len(names) == 6
    assert "flash_attn-2.8.3+cu12torch2.8cxx11abiTRUE-cp313-cp313-linux_x86_64.whl" in names
    assert not any("torch2.4" in n and "cp313" in n for n in names)


def test_xformers_pins_select_releases_for_a_torch():
    found = M.xformers_for_torch(Version("2.9.0+cu128"))
    assert found and all(r.torch is not None and r.torch.contains("2.9.0") for r in found)
    assert M.xformers_for_torch(Version("1.0")) == ()


def test_libraries_pinned_by_torch_and_their_wheels():
    cudnn, nccl = M.pinned_by_torch(Version("2.11.0+cu130"))
    assert str(cudnn.version) == "9.19.0.56" and str(nccl.version) == "2.28.9"
    assert M.library_wheel(cudnn, 13, "x86_64") == "nvidia-cudnn-cu13==9.19.0.56"
    assert M.library_wheel(cudnn, 11, "x86_64") is None
    assert M.cudnn_release(Version("9.19.0")) is cudnn


def test_ngc_images_and_forward_compat():
    image = M.ngc_pytorch_image("20.02")
    assert image is not None and M.ngc_pytorch_drivers(image)[0] == "440.33.01"
    setup = M.forward_compat_setup(Version("12.4"))
    assert setup is not None and setup["package"] == "cuda-compat-12-4"
    assert setup["install_dir"] == "/usr/local/cuda-12.4/compat"
    assert M.forward_compat_setup(Version("9.2")) is None
    assert M.forward_compat_runs_on(Version("99.0"), 580) is None


def test_image_references():
    assert M.vllm_image_reference(Version("0.11.0")) == "docker.io/vllm/vllm-openai:v0.11.0"
    assert M.pytorch_image_tag(Version("2.5.1"), Version("12.4"), 9, "devel") == "2.5.1-cuda12.4-cudnn9-devel"
    tag = M.nvidia_cuda_tags[0]
    assert f"nvcr.io/nvidia/cuda:{tag.tag}" in M.nvidia_cuda_references(tag)
    assert M.nvidia_cuda_has(flavour="runtime") and not M.nvidia_cuda_has(latest=True)


def test_driver_branch_windows_and_error_records():
    assert M.driver_branch_cuda_major(570) == 12
    assert M.driver_branch_cuda_major(580) == 13
    assert any(e.code == 35 for e in M.cuda_errors_for_check("CD111"))
    assert M.minor_compat_limits(13)


def test_cudnn_sub_libraries_and_where_the_shim_looks_first():
    matrix = CompatMatrix(cache_dir=False)
    assert matrix.cudnn_own_directory_first(8) is False and matrix.cudnn_own_directory_first(9) is True
    assert matrix.cudnn_own_directory_first(7) is None
    eight = matrix.cudnn_sublibraries_loaded(Version("8.9.2.26"))
    assert eight is not None and "libcudnn_cnn_train.so.8" in eight and len(eight) == 6
    assert "libcudnn_engines_tensor_ir.so.9" in (matrix.cudnn_sublibraries_loaded(Version("9.20.0.48")) or ())
    assert "libcudnn_engines_tensor_ir.so.9" not in (matrix.cudnn_sublibraries_shipped(Version("9.20.0.48")) or ())
    assert "libcudnn_engines_tensor_ir.so.9" in (matrix.cudnn_sublibraries_shipped(Version("9.23.2")) or ())
    assert "libcudnn_engines_tensor_ir.so.9" not in (matrix.cudnn_sublibraries_loaded(Version("9.19.0.56")) or ())
    assert matrix.cudnn_sublibraries_loaded(Version("7.6.5")) is None


def test_torch_1_x_bundled_cudnn():
    matrix = CompatMatrix(cache_dir=False)
    row = matrix.torch_bundled_cudnn(Version("1.12.0+cu113"), "cu113")
    assert row is not None and row.cudnn == Version("8.3.2.44") and "libcudnn_ops_infer.so.8" in row.files
    assert matrix.torch_bundled_cudnn(Version("1.12.1"), "cu102") is None  # cuDNN linked statically
    assert matrix.torch_bundled_cudnn(Version("2.1.2"), "cu121") is None  # the nvidia-cudnn wheel instead
