"""uv's automatic PyTorch backend, by its rules, judged by cudadoctor's (cudadoctor/suggest/uv_auto.py)."""

from __future__ import annotations

import pytest
from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.planning import HostFlags, constraints
from cudadoctor.suggest.uv_auto import uv_auto_indexes, uv_auto_pick

M = CompatMatrix(cache_dir=False)


def _c(*, driver: str | None = None, gpu: str, platform: str | None = None):
    return constraints(M, HostFlags(driver=driver, gpus=(gpu,), python="3.12", platform=platform, probe=False))


@pytest.mark.parametrize(
    ("driver", "first"),
    [("580.95.05", "cu132"), ("550.54.14", "cu129"), ("525.60.13", "cu129"), ("470.82.01", "cu118")],
)
def test_cuda_indexes_follow_the_minor_version_floors_newest_cuda_first(driver, first):
    indexes = uv_auto_indexes(M, _c(driver=driver, gpu="H100"))
    assert indexes[0] == first and indexes[-1] == "cpu"
    cudas = [M.torch_variants[t].cuda for t in indexes[:-1]]
    assert cudas == sorted(cudas, reverse=True)


def test_a_gtx_1080_ti_gets_a_build_without_its_code():
    """astral-sh/uv#14742: `--torch-backend=auto` on a GTX 1080 Ti installed a build without sm_61 ("no kernel
    image is available"); cudadoctor's rules say so of uv's pick."""
    pick = uv_auto_pick(M, _c(driver="580.95.05", gpu="GTX 1080 Ti"))
    assert pick.index == "cu132" and pick.problems
    assert pick.problems[0][0] == "gpu-arch-list" and "6.1" in pick.problems[0][1]


def test_uv_takes_the_first_index_with_a_torch_even_when_later_ones_are_newer():
    pick = uv_auto_pick(M, _c(driver="550.54.14", gpu="RTX 4090"))
    newest_cu126 = max(r.version for r in M.torch_releases if "cu126" in r.variants)
    assert pick.index == "cu129" and pick.version is not None and pick.version < newest_cu126
    assert not pick.problems


def test_machines_without_cuda():
    assert uv_auto_pick(M, _c(gpu="none")).index == "cpu"
    assert uv_auto_pick(M, _c(gpu="Apple M2")).version is None  # the CPU index's macOS wheels: not in data
    rocm = uv_auto_pick(M, _c(gpu="MI300X"))
    assert rocm.index.startswith("rocm") and rocm.version is not None and "rocm7.2" in rocm.note
    jetson = uv_auto_pick(M, _c(gpu="Jetson AGX Orin", platform="linux-aarch64"))
    assert jetson.version is None and "no JetPack build" in jetson.note
    assert Version("2.0") < (rocm.version or Version("0"))
