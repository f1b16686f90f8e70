"""compat/gpu_devices.toml (NVIDIA's open kernel modules README, Compatible GPUs): names resolve, compute
capabilities agree with compat/gpus.toml, and CD114's rule reads the listing per driver branch."""

from __future__ import annotations

import pytest

from cudadoctor.data import CompatMatrix
from cudadoctor.data.load import load_table
from cudadoctor.facts.model import DriverVersion
from cudadoctor.gpu_models import (
    device_models,
    devices_named,
    gpu_segment,
    load_models,
    lookup,
    model_named,
    normalise,
    parse_gpu_spec,
)
from cudadoctor.rules.driver import device_listing, driver_supports_gpu

M = CompatMatrix()
DEVICES = M.gpu_devices
CURATED = M.gpu_models
ALL = load_models()


def test_the_table_validates_and_is_not_empty() -> None:
    rows = load_table("gpu_devices", validate=True).rows("device")
    assert len(rows) == len(DEVICES) > 300
    assert len({d.pci for d in DEVICES}) > 250


def test_listed_from_is_one_ascending_release_per_branch() -> None:
    for device in DEVICES:
        majors = [t.major for t in device.listed_from]
        assert device.listed_from, device
        assert majors == sorted(set(majors)), device


def test_cc_model_is_what_gpus_toml_answers() -> None:
    for device in (d for d in DEVICES if d.cc_model is not None):
        model = lookup(device.name, CURATED)
        assert model is not None and model.name == device.cc_model, device
        assert model.compute_capability == device.compute_capability, device


def test_rows_without_cc_model_are_not_answered_by_gpus_toml() -> None:
    # A gpus.toml record added later for one of them makes its row stale: run compat/tools/gpu_devices_from_ogkm.py.
    stale = [d.name for d in DEVICES if d.cc_model is None and lookup(d.name, CURATED) is not None]
    assert stale == []


def test_every_inferred_value_says_its_rule_and_nothing_else_is_unsourced() -> None:
    for device in DEVICES:
        if device.compute_capability is None:
            assert device.inferred is None and device.cc_model is None
        else:
            assert (device.cc_model is None) != (device.inferred is None), device


def test_an_inferred_block_never_contradicts_a_named_row() -> None:
    # The rule's premise, over the whole table: each 256-ID block of named rows has one compute capability.
    blocks: dict[str, set[str]] = {}
    for device in DEVICES:
        if device.compute_capability is not None:
            blocks.setdefault(device.pci[:2], set()).add(device.compute_capability)
    assert {k: v for k, v in blocks.items() if len(v) > 1} == {}


def test_every_device_name_resolves_once_or_is_refused_by_name() -> None:
    for name in sorted({d.name for d in DEVICES}):
        _resolves_once_or_is_refused(name)


def _resolves_once_or_is_refused(name: str) -> None:
    ccs = {d.compute_capability for d in DEVICES if normalise(d.name) == normalise(name)}
    if ccs == {None}:
        # Unknown, named as such; or a variant of a model (SUPER, Ti, Max-Q …) that takes the base model's value
        # by gpu_models' prefix rule (compat/gpus.SOURCES.md, "How aliases work with the prefix rule").
        try:
            base = parse_gpu_spec(name, ALL)
        except ValueError as exc:
            assert "is in NVIDIA's device list, but no source gives its compute" in str(exc)
            return
        base_tokens = normalise(base.name)
        assert normalise(name)[: len(base_tokens)] == base_tokens != normalise(name)
        return
    assert len(ccs - {None}) == 1, ccs
    assert parse_gpu_spec(name, ALL).compute_capability == (ccs - {None}).pop()


def test_device_models_add_only_names_gpus_toml_lacks() -> None:
    extra = device_models(M)
    assert extra and all(lookup(m.name, CURATED) is None for m in extra)
    assert all(m.inferred and m.source == "nvidia-ogkm-readme" for m in extra)
    assert len({normalise(m.name) for m in extra}) == len(extra)


def test_model_named_is_lookup_in_every_model() -> None:
    """model_named builds only the device rows naming a GPU's first word; it answers as the whole table does for
    every name either table lists, as a driver prints it, with a suffix, and as another chip ("... A")."""
    aliases = sorted({alias for m in CURATED for alias in (m.name, *m.aliases)})
    spellings = sorted({d.name for d in DEVICES}) + [f"NVIDIA {a} 80GB" for a in aliases] + [f"{a} A" for a in aliases]
    spellings += ["", "NVIDIA", "Tesla", "Unknown GPU 9000", "RTX 3050 A Laptop GPU"]
    assert [model_named(n) for n in spellings] == [lookup(n, ALL) for n in spellings]


def test_devices_named_answers_as_the_whole_table_does() -> None:
    """devices_named builds only the rows whose name holds every token of the GPU's name; it finds what a scan of
    the whole table finds (the names with exactly those tokens, else those beginning with them)."""
    aliases = sorted({alias for m in CURATED for alias in (m.name, *m.aliases)})
    spellings = sorted({d.name for d in DEVICES}) + aliases + [f"NVIDIA {a} 80GB" for a in aliases] + ["RTX", "A"]
    keyed = [(normalise(d.name), d) for d in DEVICES]
    for name in spellings:
        tokens = normalise(name)
        exact = tuple(d for key, d in keyed if key == tokens)
        expected = exact or tuple(d for key, d in keyed if tokens and key[: len(tokens)] == tokens)
        assert devices_named(M, tokens) == expected, name
    assert len(M.gpu_devices_naming("rtx", "4090")) < len(M.gpu_devices_naming("rtx")) / 10


def test_gpu_segment_is_the_segment_of_model_named_without_the_device_table() -> None:
    """gpu_segment reads compat/gpus.toml only; it answers as model_named does for every name either table lists."""
    aliases = sorted({alias for m in CURATED for alias in (m.name, *m.aliases)})
    spellings = sorted({d.name for d in DEVICES}) + [f"NVIDIA {a} 80GB" for a in aliases] + [f"{a} A" for a in aliases]
    spellings += ["", "NVIDIA", "Unknown GPU 9000", "RTX 3050 A Laptop GPU"]
    expected = [(m.segment if (m := model_named(n)) else None) for n in spellings]
    assert [gpu_segment(n) for n in spellings] == expected
    assert {"datacenter", "geforce", None} <= set(expected)


@pytest.mark.parametrize(
    ("spec", "cc", "inferred"),
    [
        ("A10G", "8.6", True),
        ("NVIDIA A10G", "8.6", True),
        ("GeForce GTX 1650", "7.5", True),
        ("NVIDIA GeForce GTX 1650 with Max-Q Design", "7.5", True),
        ("Quadro RTX 8000", "7.5", True),
        ("NVIDIA TITAN RTX", "7.5", True),
        ("NVIDIA H800", "9.0", True),
        ("Tesla T4", "7.5", False),
        ("L4", "8.9", False),
        ("L40S", "8.9", False),
        ("H20", "9.0", False),
        ("GeForce RTX 4060 Laptop GPU", "8.9", False),
    ],
)
def test_names_users_type_resolve(spec: str, cc: str, inferred: bool) -> None:
    model = parse_gpu_spec(spec, ALL)
    assert model.compute_capability == cc
    assert bool(model.inferred) is inferred


@pytest.mark.parametrize("spec", ["T4G", "GeForce GTX 1660"])
def test_names_without_a_sourced_value_stay_unknown(spec: str) -> None:
    with pytest.raises(ValueError, match="unknown GPU"):
        parse_gpu_spec(spec, ALL)


def test_device_for_prefers_the_subsystem_row() -> None:
    generic = M.device_for("1e04")
    assert generic is not None and generic.name == "NVIDIA GeForce RTX 2080 Ti"
    assert M.device_for("2236") is None  # listed only with its subsystem
    a10 = M.device_for("2236", "10DE 1482")
    assert a10 is not None and a10.name == "NVIDIA A10"
    a10g = M.device_for("2237", "10de 152f")
    assert a10g is not None and a10g.name == "NVIDIA A10G"
    assert M.device_for("0x2237") is None or M.device_for("0x2237") == M.device_for("2237")
    assert M.device_for("FFFF") is None


def test_device_for_builds_only_that_devices_rows() -> None:
    """CD136 names each GPU on the bus by its PCI ID: that builds its rows, not the whole device table."""
    fresh = CompatMatrix()
    a10g = fresh.device_for("2237", "10DE 152F")
    assert a10g is not None and a10g.name == "NVIDIA A10G"
    assert "gpu_devices" not in fresh.__dict__
    assert a10g == next(d for d in M.gpu_devices if d.pci == "2237" and "10DE 152F" in d.subsystems)


# --- CD114's rule ---------------------------------------------------------------------------------------


def _verdict(driver: str, cc: str, gpu: str, *, windows: bool = False):  # type: ignore[no-untyped-def]
    return driver_supports_gpu(M, DriverVersion(driver), cc, gpu, windows=windows)


@pytest.mark.parametrize(
    ("driver", "cc", "gpu"),
    [
        ("550.54.15", "9.0", "NVIDIA H100 80GB HBM3"),
        ("535.104.05", "9.0", "H100"),
        ("535.104.05", "8.6", "NVIDIA A10G"),
        ("535.104.05", "8.9", "NVIDIA L4"),
        ("535.113.01", "8.9", "NVIDIA GeForce RTX 4090"),
        ("575.51.02", "7.5", "Tesla T4"),
    ],
)
def test_a_driver_of_a_branch_that_lists_the_gpu_supports_it(driver: str, cc: str, gpu: str) -> None:
    verdict = _verdict(driver, cc, gpu)
    assert verdict.is_ok and not verdict.inferred
    assert "open GPU kernel modules README" in verdict.basis and f"R{driver.split('.')[0]}" in verdict.basis


def test_the_listing_is_read_per_branch_never_as_a_problem() -> None:
    # Tesla T4 is listed only from 575.51.02, though it ran on far older drivers: not listed proves nothing.
    older = _verdict("550.54.15", "7.5", "Tesla T4")
    assert older.is_unknown and "listed from 575.51.02" in older.missing
    # An H100 on R470 (before any README lists it): could not judge, not a problem (no floor for Hopper).
    assert _verdict("470.82.01", "9.0", "NVIDIA H100 80GB HBM3").is_unknown


def test_a_release_before_the_first_listing_of_its_branch_is_not_proven() -> None:
    first = next(t for d in devices_named(M, normalise("NVIDIA A10G")) for t in d.listed_from if t.major == 535)
    assert _verdict(str(first), "8.6", "NVIDIA A10G").is_ok
    before = DriverVersion(f"{first.major}.{int(str(first).split('.')[1]) - 1}.01")
    assert device_listing(M, before, "NVIDIA A10G") is not None
    assert device_listing(M, before, "NVIDIA A10G").proof is None  # type: ignore[union-attr]


def test_a_branch_newer_than_the_table_is_inferred() -> None:
    verdict = _verdict("700.10.01", "8.9", "NVIDIA L4")
    assert verdict.is_ok and "newest branch" in verdict.inferred


def test_windows_driver_numbers_are_not_read_against_the_linux_listing() -> None:
    assert _verdict("551.61", "9.0", "NVIDIA H100 80GB HBM3", windows=True).is_unknown


def test_the_architecture_floor_and_the_legacy_cut_still_decide_first() -> None:
    assert _verdict("550.54.15", "10.0", "NVIDIA B200").is_problem
    assert _verdict("590.44.01", "6.1", "NVIDIA GeForce GTX 1080 Ti").is_problem


def test_the_readme_figure_is_the_tables() -> None:
    import os
    import re

    with open(os.path.join(os.path.dirname(__file__), "..", "README.md"), encoding="utf-8") as handle:
        text = " ".join(handle.read().split())
    named = {d.name for d in DEVICES}
    with_cc = {d.name for d in DEVICES if d.compute_capability}
    inferred = {d.name for d in DEVICES if d.inferred}
    figure = (
        f"maps {len(CURATED)} model names (with their aliases) to compute capability, and `compat/gpu_devices.toml` "
        f"knows {len({d.pci for d in DEVICES})} PCI device IDs under {len(named)} product names as the driver "
        f"prints them"
    )
    assert figure in text
    assert re.search(rf"\b{len(with_cc)} of them with a compute capability \({len(inferred)} \*inferred\*", text)


def test_suggest_says_where_an_inferred_compute_capability_comes_from() -> None:
    import json

    from typer.testing import CliRunner

    from cudadoctor.cli import app

    result = CliRunner().invoke(
        app, ["suggest", "--target", "torch", "--gpu", "A10G", "--driver", "535", "--no-probe", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    (gpu,) = json.loads(result.stdout)["constraints"]["gpus"]
    assert (gpu["name"], gpu["compute_capability"]) == ("NVIDIA A10G", "8.6")
    assert gpu["source"].startswith("--gpu (compute capability inferred: device-ID block 223x")
