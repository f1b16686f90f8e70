"""compat/companions.toml against compat/torch.toml, and the one companion rule suggest and the fixes ask."""

from __future__ import annotations

import pytest
from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.fixes.releases import known_versions
from cudadoctor.rules.companions import companion_fits_torch, companion_for_torch
from cudadoctor.suggest.install import torch_pins

MATRIX = CompatMatrix(cache_dir=False)


@pytest.mark.parametrize("name", ["torchvision", "torchaudio"])
def test_every_torch_release_pairing_is_admitted_by_the_companions_requirement(name):
    # torch.toml pairs each torch release with a companion; that release's wheel must accept the torch
    for release in MATRIX.torch_releases:
        paired = companion_for_torch(release, name)
        if paired is None or release.derived is not None:
            continue
        row = MATRIX.companion_release(name, paired)
        assert row is not None, f"{name} {paired} (paired with torch {release.version}) is not in companions.toml"
        assert row.torch is None or row.torch.contains(release.version), (name, paired, release.version)


@pytest.mark.parametrize("name", ["torchvision", "torchaudio"])
def test_every_exact_pin_names_a_torch_release_in_the_data(name):
    torch = {r.version for r in MATRIX.torch_releases}
    for row in MATRIX.companion_releases(name):
        pins = [s.version for s in row.torch or () if s.operator == "==" and not s.version.endswith(".*")]
        for pin in pins:
            assert Version(pin) in torch, f"{name} {row.version} pins torch {pin}, which compat/torch.toml lacks"


def test_companion_releases_span_the_torch_1x_era_to_today():
    vision = [r.version for r in MATRIX.companion_releases("torchvision")]
    audio = [r.version for r in MATRIX.companion_releases("torchaudio")]
    assert min(vision) <= Version("0.4.0") and max(vision) >= Version("0.29.0")
    assert min(audio) <= Version("0.3.0") and max(audio) >= Version("2.11.0")
    assert vision == sorted(vision, reverse=True) and audio == sorted(audio, reverse=True)


def test_every_torch_2_release_has_its_triton_requirement():
    tritons = {r.version: r.triton for r in MATRIX.torch_tritons}
    for release in MATRIX.torch_releases:
        if release.version >= Version("2.0.0") and release.derived is None and not release.version.is_prerelease:
            assert release.version in tritons, f"torch {release.version}: no triton requirement"
    assert tritons[Version("2.5.1")].contains("3.1.0") and not tritons[Version("2.5.1")].contains("3.2.0")
    assert Version("3.6.0") in (known_versions(MATRIX, "triton") or ())


def test_suggest_plans_the_companions_the_rule_names():
    for release in MATRIX.torch_releases:
        pins = dict(torch_pins(release))
        assert pins["torchvision"] == str(companion_for_torch(release, "torchvision") or "")
        assert pins.get("torchaudio") == (str(v) if (v := companion_for_torch(release, "torchaudio")) else None)


def test_every_paired_companion_fits_the_torch_it_is_paired_with():
    # the rule check asks (CD422) agrees with the pairing suggest plans: no plan is flagged by the check
    for release in MATRIX.torch_releases:
        for name in ("torchvision", "torchaudio"):
            paired = companion_for_torch(release, name)
            if paired is None or release.derived is not None:
                continue
            verdict = companion_fits_torch(MATRIX, name, paired, (), release.version)
            assert verdict.is_ok, (name, paired, release.version, verdict)
