"""torch 1.x plans (issue #28 item 2): the builds PyTorch's previous-versions page lists, installed the way it
says (``-f …torch_stable.html`` / ``--extra-index-url``), a pinned release kept when a build of it fits, and the
nearest release or Python named when none does."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib
from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.fixes import Install
from cudadoctor.fixes.machine import installed_versions
from cudadoctor.fixes.parse import parse
from cudadoctor.fixes.verify import changes
from cudadoctor.suggest import suggest_torch
from cudadoctor.suggest.torch import nearest_fitting, pinned_release
from cudadoctor.suggest.upgrades import with_upgrades
from tests.corpus.replay import replay
from tests.machines import described

M = CompatMatrix()
RTX_3090 = ("RTX 3090", "8.6")


def test_pinned_1_10_1_on_rtx_3090_gets_its_cu111_build_from_the_find_links_page():
    s = suggest_torch(M, described("535.104.05", RTX_3090, python="3.9"), "torch==1.10.1")
    assert s.plans, s.advice
    top = s.plans[0]
    assert top.commands[0] == (
        "python -m pip install torch==1.10.1+cu111 torchvision==0.11.2+cu111 torchaudio==0.10.1 "
        "-f https://download.pytorch.org/whl/cu111/torch_stable.html"
    )
    assert top.index_option == "find-links" and top.variant == "cu111"
    # the PyPI wheel (CUDA 10.2, sm_37 to sm_70) is excluded by its arch list, not planned
    assert any(e.rule == "gpu-arch-list" and "PyPI" in e.candidate for e in s.excluded)


def test_1_11_to_1_13_builds_use_the_extra_index_and_older_ones_the_shared_page():
    c = described("535.104.05", RTX_3090, python="3.8")
    cu116 = suggest_torch(M, c, "torch==1.12.1").plans[0]
    assert cu116.commands[0].endswith(
        "torch==1.12.1+cu116 torchvision==0.13.1+cu116 torchaudio==0.12.1 "
        "--extra-index-url https://download.pytorch.org/whl/cu116"
    )
    cu110 = suggest_torch(M, c, "torch==1.7.1").plans[0]
    assert cu110.commands[0].endswith(
        "torch==1.7.1+cu110 torchvision==0.8.2+cu110 torchaudio==0.7.2 -f https://download.pytorch.org/whl/torch_stable.html"
    )
    assert any("sm_80" in w for w in cu110.why)  # its arch list (pytorch/builder) covers the 8.6 GPU


def test_a_release_without_a_fitting_build_says_why_and_names_the_nearest_release_that_fits():
    s = suggest_torch(M, described("535.104.05", RTX_3090, python="3.8"), "torch==1.6.0")
    assert not s.plans
    assert any(a.startswith("no torch 1.6.0 build in compat data has GPU code for RTX 3090") for a in s.advice)
    nearest = [a for a in s.advice if a.startswith("the nearest release that fits")]
    assert nearest and "torch 1.7.0 +cu110" in nearest[0]
    assert nearest[0].endswith("-f https://download.pytorch.org/whl/torch_stable.html")
    assert {e.rule for e in s.excluded} == {"cuda-predates-arch"}  # cu92, cu101 and PyPI's cu102: CUDA < 11.0


def test_the_nearest_release_is_one_of_the_pinned_series_first():
    c = described("535.104.05", RTX_3090, python="3.8")
    nearest = nearest_fitting(M, c, Version("1.10.2"))  # no build of 1.10.2 but PyPI's cu102 in data
    assert nearest is not None and nearest.packages[0] == ("torch", "1.10.1+cu111")  # not 1.11.0, as near in order


def test_a_python_the_pinned_release_has_no_wheels_for_names_the_nearest_python_that_has():
    c = described("535.104.05", RTX_3090, python="3.11")
    s = with_upgrades(M, c, suggest_torch, "torch==1.10.1")
    assert not s.plans
    assert any(e.rule == "python" and "3.6, 3.7, 3.8, 3.9" in e.required for e in s.excluded)
    assert "to unlock a plan: Python 3.9 -> torch 1.10.1+cu111" in s.advice
    assert "torch 1.10.1 has no wheels for Python 3.11" in s.advice
    # or keep the Python: the nearest release with cp311 wheels that fits (1.11 and 1.12 have none)
    assert any(a.startswith("the nearest release that fits: torch 1.13.0 from PyPI") for a in s.advice)
    assert [u.value for u in s.upgrades] == ["3.9"]


def test_every_1x_build_without_an_index_url_has_an_install_form():
    """A release's CUDA variant that has neither an index URL nor an [[install_form]] could not be planned."""
    for release in M.torch_releases:
        for tag in release.variants:
            variant = M.torch_variants[tag]
            if variant.cuda is not None and variant.index_url is None:
                assert M.torch_install_form(release.version) is not None, (release.version, tag)
    assert M.torch_install_form(Version("2.0.0")) is None  # 2.x: the variant's --index-url


def _case(name: str) -> dict[str, object]:
    return tomllib.loads(Path(f"tests/corpus/cases/{name}/case.toml").read_text())


@pytest.mark.parametrize(
    ("case", "code", "command"),
    [
        # the thread's fix: torch==1.10.1+cu111 from torch_stable.html (the pinned release kept)
        (
            "wpfs-3-a100-torch1101-cu102",
            "CD113",
            "torch==1.10.1+cu111 torchvision==0.11.2+cu111 torchaudio==0.10.1 -f ",
        ),
        (
            "dinet-100-rtx3090-torch171-cu101",
            "CD113",
            "torch==1.7.1+cu110 torchvision==0.8.2+cu110 torchaudio==0.7.2 -f ",
        ),
        ("evadb-471-a40-torch-cu102", "CD113", "torch==1.12.1+cu116 torchvision==0.13.1+cu116 torchaudio==0.12.1 --ex"),
        # 1.13 has no sm_90 build: the nearest release that has one (the thread: torch>=2.0 from cu118)
        ("pytorch-90761-h100-sm90-cu117", "CD113", "torch==2.0.0 torchvision==0.15.1 torchaudio==2.0.1 --index-url "),
        # driver 470 and torch 2.1.2+cu121 (CD111): the same release's cu118 build, not the newest torch
        ("GPT-SoVITS-83-torch-too-new-for-driver-470", "CD111", "torch==2.1.2+cu118 torchvision==0.16.2+cu118 "),
        # a GTX 1060 and torch 2.14.0+cu130, whose CUDA dropped Pascal (CD112): 2.14.0's cu126 build
        ("autoforge-59-gtx1060-torch214-cu130", "CD112", "torch==2.14.0+cu126 torchvision==0.29.0+cu126 --index"),
        # a conda CPU build of 1.9.0: the thread's pip line to the letter, forced over the installed 1.9.0
        ("HOISTFormer-3-conda-installs-cpu-pytorch", "CD402", "torch==1.9.0+cu111 torchvision==0.10.0+cu111 "),
    ],
)
def test_a_checks_torch_fix_keeps_the_users_release_when_a_build_of_it_fits(case: str, code: str, command: str) -> None:
    outcome = replay(_case(case), M)
    finding = next(f for f in outcome.findings if f.code == code)
    assert finding.remediation is not None
    printed = finding.remediation.commands[0]
    assert printed.startswith("python -m pip install " + command)
    # pip changes something: a +cu111 pin is not met by 1.9.0 (conda's CPU build), a forced reinstall where it is
    parsed = parse(printed)
    assert outcome.facts is not None and isinstance(parsed, Install)
    assert changes(parsed, installed_versions(outcome.facts.packages))


def test_only_an_exact_pin_counts_as_a_pinned_release():
    assert pinned_release("torch==1.10.1") == Version("1.10.1")
    assert pinned_release("torch>=1.10") is None
    assert pinned_release("torch==1.10.*") is None
    assert pinned_release("") is None
