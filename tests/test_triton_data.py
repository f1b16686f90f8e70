"""compat/triton.toml hangs together: every torch release it names is one compat/torch.toml knows, each triton row
that bundles a second ptxas names its file, variable and threshold, and the queries find rows by public version."""

from __future__ import annotations

from packaging.version import Version

from cudadoctor.data import CompatMatrix

MATRIX = CompatMatrix(cache_dir=False)


def test_every_pinning_torch_is_a_known_release_pinning_one_triton() -> None:
    known = {r.version for r in MATRIX.torch_releases}
    named = [t for row in MATRIX.triton_releases for t in row.torch]
    assert named and set(named) <= known, sorted(set(named) - known)
    assert len(named) == len(set(named)), "a torch release pins one triton"


def test_second_ptxas_fields_come_together() -> None:
    for row in MATRIX.triton_releases:
        second = (row.ptxas_blackwell, row.ptxas_blackwell_file, row.ptxas_blackwell_env, row.blackwell_from)
        assert all(v is None for v in second) or all(v is not None for v in second), row.version
        layout = "triton/third_party/cuda/bin/" if row.version.major == 2 else "triton/backends/nvidia/bin/"
        assert row.ptxas_file.startswith(layout), row.version
        assert (row.libcuda_lookup == "whereis") == (row.libcuda_cache_match is None), row.version


def test_queries_take_the_public_version() -> None:
    row = MATRIX.triton_pinned_by(Version("2.7.1+cu128"))
    assert row is not None and row.version == Version("3.3.1") and row.ptxas_blackwell == Version("12.8.61")
    assert MATRIX.triton_release(Version("3.0.0")) is not None
    assert MATRIX.triton_release(Version("1.1.1")) is None
