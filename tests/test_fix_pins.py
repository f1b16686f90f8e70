"""cudadoctor.fixes.pins: a printed command that breaks another installed package's pin is a problem (and the gate
withholds it, naming that package), unless the same command also moves the pinning package (issue #28)."""

from __future__ import annotations

import dataclasses

from packaging.version import Version

from cudadoctor.checks.findings import Remediation
from cudadoctor.checks.gate import WITHHELD, withhold_unworkable
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.codec import facts_from_json
from cudadoctor.fixes import Install, Pin, Steps, Uninstall
from cudadoctor.fixes.pins import broken_pins
from cudadoctor.fixes.verify import verify
from tests.conftest import fixture_text

M = CompatMatrix()
# torch 2.3.1's own Requires-Dist line (PyPI's METADATA; tests/corpus/cases/onnxruntime-22198-…/case.toml)
TORCH_CUDNN = 'nvidia-cudnn-cu12 (==8.9.2.26) ; platform_system == "Linux" and platform_machine == "x86_64"'
INSTALLED = {
    "torch": Version("2.3.1"),
    "nvidia-cudnn-cu12": Version("8.9.2.26"),
    "nvidia-cublas-cu12": Version("12.1.3.1"),
    "onnxruntime-gpu": Version("1.19.2"),
}
REQUIRES: dict[str, tuple[str, ...]] = {"torch": (TORCH_CUDNN,)}


def _pins(command: Install | Uninstall | Steps, requires: dict[str, tuple[str, ...]] = REQUIRES) -> list[str]:
    return broken_pins(command, requires, INSTALLED, M)


def test_installing_another_major_of_a_pinned_wheel_breaks_the_pin():
    command = Install((Pin("nvidia-cudnn-cu12", "==9.*"),))
    problems = verify(command, M, INSTALLED, requires=REQUIRES).problems
    assert [p for p in problems if "torch 2.3.1's pin nvidia-cudnn-cu12==8.9.2.26" in p], problems
    assert verify(command, M, INSTALLED).problems == ()  # without the Requires-Dist facts it is not judged


def test_a_command_that_also_moves_the_pinning_package_is_not_a_conflict():
    command = Install((Pin("nvidia-cudnn-cu12", "==9.*"), Pin.exact("torch", "2.4.1")))
    assert _pins(command) == []
    assert _pins(Steps((Uninstall(("torch",)), Install((Pin("nvidia-cudnn-cu12", "==9.*"),))))) == []


def test_the_pinned_version_itself_and_a_range_holding_it_keep_the_pin():
    assert _pins(Install((Pin.exact("nvidia-cudnn-cu12", "8.9.2.26"),), force_reinstall=True)) == []
    # installed 8.9.2.26 satisfies ==8.*: pip keeps it, nothing moves
    assert _pins(Install((Pin("nvidia-cudnn-cu12", "==8.*"),))) == []


def test_a_range_pip_resolves_to_the_newest_listed_release_breaks_an_exact_pin():
    # -U takes the newest 8.x compat data lists, not the 8.9.2.26 torch pins
    problems = _pins(Install((Pin("nvidia-cudnn-cu12", "==8.*"),), upgrade=True))
    assert len(problems) == 1 and "torch 2.3.1's pin" in problems[0]


def test_a_range_without_a_release_list_breaks_only_an_exact_pin_it_excludes():
    requires = {"torch": ('nvidia-cublas-cu12 (==12.1.3.1) ; platform_system == "Linux"',)}
    assert _pins(Install((Pin("nvidia-cublas-cu12", "==11.*"),)), requires)
    assert _pins(Install((Pin("nvidia-cublas-cu12", ">=12.1"),)), requires) == []


def test_removing_a_required_distribution_is_a_conflict():
    problems = _pins(Uninstall(("nvidia-cudnn-cu12",)))
    assert problems == ["it removes nvidia-cudnn-cu12, which torch 2.3.1 requires (nvidia-cudnn-cu12==8.9.2.26)"]
    # removed and put back at the pinned version: the pin holds
    steps = Steps((Uninstall(("nvidia-cudnn-cu12",)), Install((Pin.exact("nvidia-cudnn-cu12", "8.9.2.26"),))))
    assert _pins(steps) == []


def test_a_line_of_an_extra_pins_nothing():
    requires = {"onnxruntime-gpu": ('nvidia-cudnn-cu12<9; extra == "cudnn"',)}
    assert _pins(Install((Pin.exact("nvidia-cudnn-cu12", "9.1.0.70"),)), requires) == []
    requires = {"onnxruntime-gpu": ("nvidia-cudnn-cu12<9",)}
    assert _pins(Install((Pin.exact("nvidia-cudnn-cu12", "9.1.0.70"),)), requires)


def test_a_pin_not_met_before_the_command_is_not_broken_by_it():
    # onnxruntime-gpu's cuDNN 9 is unmet already (CD401's finding); a command that leaves it so breaks nothing
    requires = {"onnxruntime-gpu": ("nvidia-cudnn-cu12~=9.0",)}
    assert _pins(Install((Pin.exact("nvidia-cudnn-cu12", "8.9.7.29"),)), requires) == []
    assert _pins(Uninstall(("nvidia-cufft-cu12",)), {"torch": ("nvidia-cufft-cu12==11.0.2.54",)}) == []  # not installed


def test_the_gate_withholds_a_command_breaking_a_pin_and_names_the_package():
    # the H200's own environment: torch 2.11.0 pins nvidia-cudnn-cu13==9.19.0.56 and torchvision 0.26.0 pins
    # torch==2.11.0 (tests/fixtures/h200-device/snapshot.json)
    facts = facts_from_json(fixture_text("h200-device", "snapshot.json"))
    cudnn = Remediation("Install it.", ("python -m pip install nvidia-cudnn-cu13==9.28.0.42", "sudo reboot"))
    gated = withhold_unworkable(cudnn, M, facts)
    assert gated is not None and gated.commands == ("sudo reboot",)
    assert WITHHELD in gated.text and "torch 2.11.0's pin nvidia-cudnn-cu13==9.19.0.56" in gated.text
    torch = Remediation("Install it.", ("python -m pip install torch==2.9.0",))
    gated = withhold_unworkable(torch, M, facts)
    assert gated is not None and "torchvision 0.26.0's pin torch==2.11.0" in gated.text
    both = Remediation("Install it.", ("python -m pip install torch==2.9.0 torchvision==0.24.0 torchaudio==2.9.0",))
    assert withhold_unworkable(both, M, facts) is both


def test_only_the_facts_requires_are_read():
    # a package with no Requires-Dist facts pins nothing, whatever its name
    facts = facts_from_json(fixture_text("h200-device", "snapshot.json"))
    torch = dataclasses.replace(facts.packages["torch"], requires=())
    bare = dataclasses.replace(facts, packages={**facts.packages, "torch": torch})
    cudnn = Remediation("Install it.", ("python -m pip install nvidia-cudnn-cu13==9.28.0.42",))
    assert withhold_unworkable(cudnn, M, bare) is cudnn


# --- the fix at the source: CD304 installs what the pins allow (cudadoctor/checks/wheelfix.py) ---------------------


def _package(name: str, version: str, requires: tuple[str, ...] = ()):
    from cudadoctor.facts.model import InstalledPackage
    from cudadoctor.facts.source import Source, SourceKind

    source = Source(SourceKind.METADATA, f"/site/{name}.dist-info/METADATA")
    return InstalledPackage(name, Version(version), "/site", source, requires=requires)


def test_a_missing_wheel_is_installed_at_the_version_an_installed_package_pins():
    from cudadoctor.checks.wheelfix import pinned_wheel

    packages = {"torch": _package("torch", "2.1.2", ('nvidia-nccl-cu12 (==2.18.1) ; platform_system == "Linux"',))}
    assert pinned_wheel("nvidia-nccl-cu12", packages).wheel == "nvidia-nccl-cu12==2.18.1"
    assert pinned_wheel("nvidia-cudnn-cu12==8.*", packages).wheel == "nvidia-cudnn-cu12==8.*"  # not pinned: as asked
    pins_8 = {"torch": _package("torch", "2.3.1", (TORCH_CUDNN,))}
    other = pinned_wheel("nvidia-cudnn-cu12==9.*", pins_8)
    assert (other.owner, other.pinned) == ("torch 2.3.1", "nvidia-cudnn-cu12==8.9.2.26")


def test_the_build_that_fits_a_pinned_library_comes_from_the_data():
    from cudadoctor.fixes.releases import fitting_build

    cudnn8 = fitting_build(M, "onnxruntime-gpu", 12, "cudnn", 8)  # PyPI's 1.18.0 is CUDA 11.8: the CUDA 12 feed's
    assert cudnn8 is not None and str(cudnn8.version) == "1.18.0" and "onnxruntime-cuda-12" in str(cudnn8.index_url)
    cudnn9 = fitting_build(M, "onnxruntime-gpu", 12, "cudnn", 9)
    assert cudnn9 is not None and cudnn9.index_url is None and cudnn9.version >= Version("1.19")
    assert fitting_build(M, "onnxruntime-gpu", 12, "cudnn", 7) is None
    assert fitting_build(M, "ctranslate2", 12, "cudnn", 8) is None  # no builds listed: no guess


def test_a_build_from_the_feed_is_verified_against_the_builds_listed_there():
    feed = fitting_build_url()
    assert verify(Install((Pin.exact("onnxruntime-gpu", "1.18.0"),), feed), M, INSTALLED).problems == ()
    found = verify(Install((Pin.exact("onnxruntime-gpu", "1.19.2"),), feed), M, {}).problems
    assert any("lists no build of it on" in p for p in found)


def fitting_build_url() -> str:
    from cudadoctor.fixes.releases import fitting_build

    build = fitting_build(M, "onnxruntime-gpu", 12, "cudnn", 8)
    assert build is not None and build.index_url is not None
    return build.index_url


def test_cd304_on_onnxruntime_22198_names_the_build_that_fits_torchs_cudnn():
    # onnxruntime-gpu 1.19.2 needs cuDNN 9; torch 2.3.1 pins cuDNN 8: the thread's fix, not a cuDNN 9 wheel
    from tests.corpus.builder import case_paths, load_case
    from tests.corpus.replay import replay

    path = next(p for p in case_paths("cases") if "onnxruntime-22198" in p)
    finding = next(f for f in replay(load_case(path), M).findings if f.code == "CD304")
    assert finding.remediation is not None
    command = f"python -m pip install onnxruntime-gpu==1.18.0 --index-url {fitting_build_url()}"
    assert finding.remediation.commands == (command,)
    assert "torch 2.3.1 pins nvidia-cudnn-cu12==8.9.2.26" in finding.remediation.text
    assert WITHHELD not in finding.remediation.text
