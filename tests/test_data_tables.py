"""compat/: every shipped file validates against its row types; the loader reports every problem at once."""

from __future__ import annotations

import datetime
import glob
import os

import pytest
from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.data.load import compat_dir, load_table, validate_table
from cudadoctor.data.rows import LAYOUTS
from cudadoctor.errors import CompatDataError
from cudadoctor.facts.model import DriverVersion

FILES = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(compat_dir(), "*.toml")))


@pytest.mark.parametrize("name", FILES)
def test_shipped_file_is_valid(name):
    table = load_table(name, validate=True)
    assert table.kind in LAYOUTS
    assert table.updated <= datetime.date.today()


def _meta(**extra):
    return {
        "schema": 1,
        "kind": "cuda-toolkit-drivers",
        "covers": "x",
        "updated": datetime.date(2026, 1, 1),
        "sources": [{"id": "s", "url": "https://example.invalid"}],
        **extra,
    }


def test_every_problem_is_reported_with_file_record_and_field():
    data = {
        "meta": _meta(),
        "release": [
            {"version": "12.4.0", "min_driver_linux": "550.54.14", "source": "s"},
            {"version": "12.4.1", "min_driver_linux": "five-fifty", "source": "nope"},
            {"version": "banana", "flavour": "x"},
        ],
        "mystery": [],
    }
    problems = validate_table("compat/cuda.toml", data)
    assert "compat/cuda.toml: release[1].min_driver_linux: 'five-fifty' is not a driver version" in problems
    assert "compat/cuda.toml: release[1].source: 'nope' is not in meta.sources" in problems
    assert "compat/cuda.toml: release[2]: no source (every record names its evidence)" in problems
    assert "compat/cuda.toml: release[2].version: 'banana' is not a version" in problems
    assert "compat/cuda.toml: release[2].flavour: unknown field" in problems
    assert "compat/cuda.toml: mystery: not a known table for kind 'cuda-toolkit-drivers'" in problems


def test_a_torch_install_form_names_a_pip_option_that_exists():
    """The option is printed as ``--<option>`` in a fix's command: a misspelt one is refused when the table loads."""
    data = {
        "meta": {**_meta(), "kind": "torch-releases"},
        "install_form": [
            {"releases": "==1.10.1", "option": "find-link", "url": "u", "local_tag": ["torch"], "source": "s"},
            {"releases": ">=1.11", "option": "extra-index-url", "url": "u", "local_tag": ["torch"], "source": "s"},
        ],
    }
    problems = validate_table("t", data)
    assert problems == ["t: install_form[0].option: 'find-link' is not find-links or extra-index-url"]


def test_order_newest_first():
    data = {"meta": _meta(), "release": [{"version": "12.3.0", "source": "s"}, {"version": "12.4.0", "source": "s"}]}
    assert validate_table("f", data) == ["f: release: 12.3.0 is listed before 12.4.0; records go newest first"]


def test_meta_problems():
    assert validate_table("f", {}) == ["f: meta: missing [meta] block", "f: meta.kind: unknown kind None"]
    problems = validate_table("f", {"meta": {"kind": "gpu-models", "sources": []}})
    assert "f: meta.sources: needs at least one source" in problems
    assert "f: meta.updated: missing" in problems


def test_a_broken_file_is_one_compat_data_error(tmp_path, monkeypatch):
    (tmp_path / "cuda.toml").write_text("[meta]\nschema = 1\n[[release]\n")
    monkeypatch.setattr("cudadoctor.data.load.compat_dir", lambda: str(tmp_path))
    with pytest.raises(CompatDataError, match="not valid TOML"):
        load_table("cuda", validate=True)


# --- questions answered from cuda.toml -----------------------------------------------------------

M = CompatMatrix()


@pytest.mark.parametrize(
    ("driver", "cuda"),
    [
        ("580.159.04", "13.0"),
        ("550.54.15", "12.4"),
        ("550.54.14", "12.4"),
        ("535.104.05", "12.2"),
        ("470.82.01", "11.4"),
        ("450.51.05", "11.0"),
        ("450.36.06", "10.2"),
        ("410.48", "10.0"),
        ("396.54", "9.2"),
        ("346.46", "7.0"),
        ("340.29", None),
    ],
)
def test_cuda_a_driver_supports(driver, cuda):
    assert M.cuda_for_driver(DriverVersion(driver)) == (Version(cuda) if cuda else None)


def test_minor_version_compatibility_floors():
    assert str(M.minor_compat(12).min_driver_linux) == "525.60.13"
    assert str(M.minor_compat(13).min_driver_linux) == "580.65.06"
    assert M.minor_compat(7) is None


def test_min_driver_for_cuda():
    assert str(M.min_driver_for_cuda(Version("12.4"))) == "550.54.14"
    assert str(M.min_driver_for_cuda(Version("13.0"))) == "580.65.06"


# --- consistency across tables ------------------------------------------------------------------------


def test_every_vllm_torch_pin_exists_in_the_torch_table():
    versions = [t.version for t in M.torch_releases]
    missing = [
        f"vllm {r.version}: torch{r.torch}"
        for r in M.vllm_releases
        if r.torch is not None
        and r.version >= Version("0.4.0")
        and not any(r.torch.contains(v) for v in versions)
        # torch 2.0 is the oldest release the torch table covers (issue scope: 2.0 to newest)
        and not all(s.version < "2.0" for s in r.torch if s.operator == "==")
    ]
    assert missing == []


def test_every_torch_variant_cuda_is_in_the_driver_table():
    majors_minors = {(r.version.major, r.version.minor) for r in M.cuda_releases}
    for variant in M.torch_variants.values():
        if variant.cuda is not None:
            assert (variant.cuda.major, variant.cuda.minor) in majors_minors, variant.tag
    for release in M.torch_releases:
        for cuda in (release.pypi_default_cuda, release.pypi_aarch64_cuda):
            if cuda is not None:
                assert (cuda.major, cuda.minor) in majors_minors, release.version


def test_every_torch_release_variant_is_defined():
    for release in M.torch_releases:
        assert set(release.variants) <= set(M.torch_variants), release.version


def test_gpu_models_name_known_architectures():
    known = set(M.gpu_archs)
    unknown = {m.compute_capability for m in M.gpu_models} - known
    assert unknown == set()


def test_the_driver_lifecycle_names_every_segment_of_the_gpu_table():
    """rules/branches.py says "not applicable" for a GPU of a line the lifecycle does not cover: each line of
    compat/gpus.toml is therefore either covered or listed as unpublished (Jetson's "embedded" has its own answer),
    so a new line is a data decision, never a silent "not applicable"."""
    lifecycle = M.driver_lifecycle
    assert lifecycle is not None
    named = set(lifecycle.segments) | set(lifecycle.unpublished_segments) | {"embedded"}
    assert {m.segment for m in M.gpu_models} <= named
    assert not set(lifecycle.segments) & set(lifecycle.unpublished_segments)
