"""Tests for cudadoctor.gpu_models: name normalising, token-prefix lookup, ``--assume-gpu`` specs,
and validating the table (the test subset in tests/fixtures/gpus, and the bundled compat/gpus.toml)."""

from __future__ import annotations

import sys

import pytest

from cudadoctor.data.load import parse_table
from cudadoctor.errors import CompatDataError
from cudadoctor.gpu_models import GpuModel, load_models, lookup, normalise, parse_gpu_spec
from tests.conftest import fixture_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

RAW_TABLE = tomllib.loads(fixture_text("gpus", "gpus.toml"))
TABLE = parse_table("gpus", RAW_TABLE).rows("gpu")


@pytest.mark.parametrize(
    ("name", "tokens"),
    [
        ("NVIDIA H200", ("h200",)),
        ("NVIDIA GeForce RTX 4090", ("rtx", "4090")),
        ("Tesla V100-SXM2-16GB", ("v100", "sxm2", "16gb")),
        ("NVIDIA A100-SXM4-80GB", ("a100", "sxm4", "80gb")),
        ("Quadro RTX 8000", ("rtx", "8000")),
        ("NVIDIA RTX 4000 SFF Ada Generation", ("rtx", "4000", "sff", "ada", "generation")),
        ("  nvidia_h100  pcie ", ("h100", "pcie")),
        ("", ()),
        ("NVIDIA", ()),
    ],
    ids=[
        "h200",
        "geforce",
        "tesla-dashes",
        "a100",
        "quadro",
        "ada-generation",
        "underscores-spaces",
        "empty",
        "only-noise",
    ],
)
def test_normalise(name: str, tokens: tuple[str, ...]) -> None:
    assert normalise(name) == tokens


@pytest.mark.parametrize(
    ("name", "model", "cc"),
    [
        ("NVIDIA H200", "H200", "9.0"),
        ("NVIDIA H100 80GB HBM3", "H100", "9.0"),
        ("NVIDIA H100 PCIe", "H100", "9.0"),
        ("NVIDIA GeForce RTX 4090", "RTX 4090", "8.9"),
        ("NVIDIA GeForce RTX 4090 D", "RTX 4090", "8.9"),
        ("Tesla V100-SXM2-16GB", "V100", "7.0"),
        ("NVIDIA A100-SXM4-80GB", "A100", "8.0"),
        ("Tesla T4", "T4", "7.5"),
        ("NVIDIA L4", "L4", "8.9"),
        ("NVIDIA L40S", "L40S", "8.9"),
        ("NVIDIA RTX 4000 SFF Ada Generation", "RTX 4000 SFF Ada", "8.9"),
        ("NVIDIA RTX 4000 Ada Generation", "RTX 4000 Ada", "8.9"),
        ("Orin (nvgpu)", None, None),
        ("NVIDIA L40", None, None),
        ("NVIDIA RTX 4000", None, None),
        ("NVIDIA H", None, None),
        ("", None, None),
    ],
    ids=[
        "h200",
        "h100-hbm3",
        "h100-pcie",
        "rtx-4090",
        "rtx-4090-d",
        "v100-sxm2",
        "a100-sxm4",
        "t4",
        "l4",
        "l40s-not-l4",
        "sff-ada-longest",
        "ada",
        "orin-bare-not-in-subset",
        "l40-whole-tokens",
        "alias-longer-than-name",
        "partial-token",
        "empty",
    ],
)
def test_lookup(name: str, model: str | None, cc: str | None) -> None:
    found = lookup(name, TABLE)
    assert (found.name if found else None, found.compute_capability if found else None) == (model, cc)


def test_lookup_returns_the_whole_record() -> None:
    found = lookup("NVIDIA H200", TABLE)
    assert found == GpuModel("H200", "9.0", "Hopper", "datacenter", "nvidia-cuda-gpus", ("H200", "H200 NVL"))


def test_lookup_first_record_wins_a_tie() -> None:
    table = (GpuModel("First", "8.6", aliases=("X 1",)), GpuModel("Second", "8.9", aliases=("X 1",)))
    found = lookup("NVIDIA X 1", table)
    assert found is not None and found.name == "First"


@pytest.mark.parametrize(
    ("spec", "name", "cc", "arch"),
    [
        ("H100", "H100", "9.0", "Hopper"),
        ("RTX 4090", "RTX 4090", "8.9", "Ada Lovelace"),
        ("NVIDIA GeForce RTX 4090", "RTX 4090", "8.9", "Ada Lovelace"),
        ("sm_89", "sm_89", "8.9", "Ada Lovelace"),
        ("sm_90a", "sm_90a", "9.0", "Hopper"),
        ("SM_90", "SM_90", "9.0", "Hopper"),
        ("compute_80", "compute_80", "8.0", "Ampere"),
        ("8.9", "8.9", "8.9", "Ada Lovelace"),
        (" 7.5 ", "7.5", "7.5", "Turing"),
        ("8.7", "8.7", "8.7", "Ampere"),
    ],
    ids=[
        "h100",
        "rtx-4090",
        "full-name",
        "sm",
        "sm-arch-specific",
        "upper-sm",
        "compute",
        "dotted",
        "padded",
        "orin",
    ],
)
def test_parse_gpu_spec(spec: str, name: str, cc: str, arch: str) -> None:
    model = parse_gpu_spec(spec, TABLE)
    assert (model.name, model.compute_capability, model.architecture) == (name, cc, arch)


def test_parse_gpu_spec_cc_with_several_architectures_has_none() -> None:
    table = (GpuModel("A", "8.6", "Ampere"), GpuModel("B", "8.6", "Other"))
    assert parse_gpu_spec("8.6", table).architecture is None


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("89", "'89' is ambiguous"),
        ("4090", "'4090' is ambiguous"),
        ("", "empty GPU name"),
        ("   ", "empty GPU name"),
        ("sm_99", "compute capability 9.9 is not in compat/gpus.toml (known: 7.0, 7.5, 8.0, 8.7, 8.9, 9.0)"),
        ("10.0", "compute capability 10.0 is not in compat/gpus.toml"),
        ("Zorblax 9000", "unknown GPU 'Zorblax 9000'"),
        ("sm_9", "unknown GPU 'sm_9'"),
        ("9.0.1", "unknown GPU '9.0.1'"),
    ],
    ids=[
        "bare-cc-digits",
        "bare-model-number",
        "empty",
        "blank",
        "unknown-sm",
        "unknown-cc",
        "unknown-name",
        "short-sm",
        "three-part",
    ],
)
def test_parse_gpu_spec_errors(spec: str, fragment: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_gpu_spec(spec, TABLE)
    message = str(caught.value)
    assert fragment in message
    assert "\n" not in message
    if "ambiguous" in message or "unknown" in message or "empty" in message:
        assert "'sm_89'" in message and "'8.9'" in message  # says how to spell it


def test_gpu_table_validation_reports_every_problem() -> None:
    raw = {
        "meta": RAW_TABLE["meta"],
        "gpu": [
            {"name": "Good", "aliases": [], "compute_capability": "9.0", "source": "nvidia-cuda-gpus"},
            {"aliases": [], "compute_capability": "9.0", "source": "nvidia-cuda-gpus"},
            {"name": "BadCC", "aliases": [], "compute_capability": "90", "source": "nvidia-cuda-gpus"},
            {"name": "BadAliases", "compute_capability": "9.0", "aliases": "H1", "source": "nvidia-cuda-gpus"},
            {"name": "Suffix", "aliases": [], "compute_capability": "9.0a", "source": "nvidia-cuda-gpus"},
            {"name": "  ", "aliases": [], "compute_capability": "9.0", "source": "nvidia-cuda-gpus"},
            "not a table",
        ],
    }
    with pytest.raises(CompatDataError) as caught:
        parse_table("gpus", raw)
    message = str(caught.value)
    assert "gpu[1].name: missing" in message
    assert "gpu[2].compute_capability: '90' is not a compute capability (\"X.Y\")" in message
    assert "gpu[3].aliases: expected a list" in message
    assert "gpu[4].compute_capability: '9.0a' is not a compute capability" in message
    assert "gpu[5].name: expected a non-empty string" in message
    assert "gpu[6]: expected a table" in message
    assert "gpu[0]" not in message


def test_gpu_table_empty_and_wrong_type() -> None:
    assert parse_table("gpus", {"meta": RAW_TABLE["meta"]}).rows("gpu") == ()
    with pytest.raises(CompatDataError, match=r"gpu: expected an array of tables"):
        parse_table("gpus", {"meta": RAW_TABLE["meta"], "gpu": {"name": "H200"}})


def test_subset_matches_bundled_table() -> None:
    # The fixture is a copy of compat/gpus.toml records; it must not drift from them.
    bundled = {m.name: m for m in load_models()}
    for model in TABLE:
        assert bundled[model.name] == model


def test_bundled_table_knows_the_captured_h200() -> None:
    model = lookup("NVIDIA H200", load_models())
    assert model is not None and model.compute_capability == "9.0"
