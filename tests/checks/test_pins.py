"""exact_pins: the one reader of Requires-Dist pins that CD302 and CD601 share."""

from __future__ import annotations

from packaging.version import Version

from cudadoctor.facts.model import InstalledPackage, Source, SourceKind
from cudadoctor.facts.requires import exact_pins


def _pkg(*requires: str) -> InstalledPackage:
    return InstalledPackage("x", Version("1.0"), "/s", Source(SourceKind.METADATA, "/s"), requires=requires)


def test_pins_are_the_name_then_double_equals() -> None:
    pkg = _pkg(
        'nvidia-cudnn-cu11==8.5.0.96; platform_system == "Linux"',
        "nvidia_nccl_cu12 (==2.21.5)",
        'nvidia-cudnn-cu12~=9.0; extra == "cudnn"',
        "nvidia-cublas-cu12>=12.1; platform_machine == 'x86_64'",
        "filelock",
    )
    assert exact_pins(pkg) == {"nvidia-cudnn-cu11": "8.5.0.96", "nvidia-nccl-cu12": "2.21.5"}


def test_a_hostile_version_in_requires_dist_is_skipped_not_a_crash() -> None:
    """A 5,000-digit pin (past int()'s limit) in metadata: neither reader raises, and CD401's requirement walk skips
    the line (the specifier text is bounded where it is read, cudadoctor.bounded.parse_specifier)."""
    from cudadoctor.checks.packages import unmet_requirements
    from cudadoctor.facts.requires import name_and_specifier, read_requirement

    line = "torch==1" + "0" * 5000
    assert name_and_specifier(line) is None and read_requirement(line) is None
    torch = InstalledPackage("torch", Version("2.5.1"), "/s", Source(SourceKind.METADATA, "/s"))
    assert unmet_requirements({"torch": torch, "vllm": _pkg(line)}) == []
