"""Releases read by `cudadoctor update` join the curated ones (curated wins; derived ones say so)."""

from __future__ import annotations

import json

from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import DriverVersion
from cudadoctor.suggest import Constraints, Gpu, suggest_torch, suggest_vllm


def _record(version: str, pins: list[str], *, python: list[str], abi3: bool = False, rp: str = ">=3.10") -> dict:
    return {
        "version": version, "requires_python": rp, "pins": pins, "python_tags": python, "abi3": abi3,
        "platforms": ["manylinux_x86_64"], "yanked": False, "wheel": f"x-{version}.whl", "metadata": "read",
        "metadata_url": f"https://files.example/x-{version}.whl.metadata", "fetched": "2027-01-15", "derived": True,
    }  # fmt: skip


def _cache(tmp_path) -> str:
    doc = {
        "kind": "cudadoctor-index-data",
        "schema_version": 1,
        "index": "https://pypi.org/simple/",
        "updated": "2027-01-15",
        "packages": {
            "torch": {"releases": {
                "2.16.0": _record("2.16.0", ['cuda-toolkit[cudart]==13.2.2; platform_system == "Linux"'],
                                  python=["cp311", "cp312", "cp313"]),
                # a curated release: the cache must not override it
                "2.11.0": _record("2.11.0", ["cuda-toolkit[cudart]==12.9.1"], python=["cp312"]),
            }},
            "vllm": {"releases": {
                "0.34.0": _record("0.34.0", ["torch==2.16.0"], python=["cp38"], abi3=True, rp="<3.15,>=3.11"),
            }},
        },
    }  # fmt: skip
    (tmp_path / "index-releases.json").write_text(json.dumps(doc))
    return str(tmp_path)


def test_derived_releases_join_and_curated_ones_win(tmp_path):
    m = CompatMatrix(_cache(tmp_path))
    newest = m.torch_releases[0]
    assert (str(newest.version), newest.pypi_default_cuda, newest.derived) == ("2.16.0", Version("13.2"), "2027-01-15")
    assert newest.python == ("3.11", "3.12", "3.13")
    curated = m.torch_release(Version("2.11.0"))
    assert curated.derived is None and curated.pypi_default_cuda == Version("13.0")
    assert str(m.vllm_releases[0].version) == "0.34.0" and m.vllm_releases[0].derived == "2027-01-15"


def test_suggest_uses_derived_releases_without_a_gpu_and_only_verified_data_with_one(tmp_path):
    m = CompatMatrix(_cache(tmp_path))
    c = Constraints(driver=DriverVersion("595.71.05"), driver_cuda=Version("13.2"), python=Version("3.12"))
    assert suggest_torch(m, c).plans[0].packages[0] == ("torch", "2.16.0")
    assert suggest_vllm(m, c).plans[0].packages == (("vllm", "0.34.0"),)
    with_gpu = Constraints(
        driver=c.driver, driver_cuda=c.driver_cuda, python=c.python, gpus=(Gpu("H100", "9.0", "--gpu"),)
    )
    # vLLM 0.34.0's minimum compute capability is not known for a derived release: not planned for a GPU.
    assert suggest_vllm(m, with_gpu).plans[0].packages != (("vllm", "0.34.0"),)


def test_a_corrupt_cache_is_ignored(tmp_path):
    (tmp_path / "index-releases.json").write_text("{not json")
    m = CompatMatrix(str(tmp_path))
    assert m.index_data is None
    assert str(m.torch_releases[0].version) == "2.15.0"
    assert CompatMatrix(False).index_data is None


def test_reports_state_the_index_data_date(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from cudadoctor.cli import app
    from tests.conftest import fixture_path

    cache = _cache(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path.parent / "xdg"))
    target = tmp_path.parent / "xdg" / "cudadoctor"
    target.mkdir(parents=True)
    (target / "index-releases.json").write_text((tmp_path / "index-releases.json").read_text())
    snapshot = fixture_path("h200-device", "snapshot.json")
    text = CliRunner().invoke(app, ["check", "--from", snapshot]).stdout
    assert "package-index data read 2027-01-15 (cudadoctor update)" in text
    doc = json.loads(CliRunner().invoke(app, ["check", "--from", snapshot, "-f", "json"]).stdout)
    assert (doc["compat_data_as_of"], doc["index_data_as_of"]) == ("2026-11-30", "2027-01-15")
    assert cache
