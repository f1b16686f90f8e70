"""cudadoctor.fixes: the command model's rendering and reading back, the builders, and the verifier."""

from __future__ import annotations

import pytest
from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.data.rows import TorchRelease
from cudadoctor.fixes import Install, Pin, Steps, Uninstall, render
from cudadoctor.fixes.build import both_tools, taking_effect, uninstall_then_install
from cudadoctor.fixes.parse import UnreadCommand, parse
from cudadoctor.fixes.releases import TORCH_STABLE
from cudadoctor.fixes.torch import torch_build_install
from cudadoctor.fixes.verify import verify

M = CompatMatrix()
CU118 = "https://download.pytorch.org/whl/cu118"

COMMANDS = [
    Install((Pin.exact("torch", "2.1.0+cu118"), Pin.exact("torchvision", "0.16.0+cu118")), CU118),
    Install((Pin("jax", extras=("cuda12",)),), upgrade=True),
    Install((Pin("torch", ">=2.0"),), force_reinstall=True, no_deps=True),
    Install(
        (Pin.exact("flash-attn", "2.5.5"),), no_build_isolation=True, env=(("FLASH_ATTENTION_FORCE_BUILD", "TRUE"),)
    ),
    Install((Pin.exact("torch", "1.10.1+cu111"),), find_links=(TORCH_STABLE,)),
    Install((Pin.exact("xformers", "0.0.28.post1"),), extra_index_urls=(CU118,), tool="uv", force_reinstall=True),
    uninstall_then_install(("nvidia-nccl-cu11",), Install((Pin.exact("nvidia-nccl-cu12", "2.19.3"),))),
]


@pytest.mark.parametrize("command", COMMANDS, ids=render)
def test_a_rendered_command_reads_back_as_itself(command):
    assert parse(render(command)) == command


def test_rendering_quotes_only_what_a_shell_reads():
    assert render(COMMANDS[0]) == (
        f"python -m pip install torch==2.1.0+cu118 torchvision==0.16.0+cu118 --index-url {CU118}"
    )
    assert render(COMMANDS[1]) == "python -m pip install -U 'jax[cuda12]'"
    assert render(COMMANDS[2]) == "python -m pip install --force-reinstall --no-deps 'torch>=2.0'"


def test_uv_spells_its_own_options():
    pip, uv = both_tools(Install((Pin.exact("torch", "2.4.1"),), force_reinstall=True, no_cache_dir=True))
    assert pip == "python -m pip install --force-reinstall --no-cache-dir torch==2.4.1"
    assert uv == "uv pip install --reinstall --no-cache torch==2.4.1"
    assert render(Steps((Uninstall(("a",), "uv"),))) == "uv pip uninstall a"


def test_other_lines_are_no_command_and_unknown_options_are_not_read():
    assert parse("sudo reboot") is None and parse("export LD_LIBRARY_PATH=/x") is None
    with pytest.raises(UnreadCommand):
        parse("python -m pip install --pre torch")
    with pytest.raises(UnreadCommand):
        parse("python -m pip install torch && sudo reboot")


def test_a_pin_the_installed_local_build_satisfies_changes_nothing():
    # pip keeps 2.1.0+cpu for torch==2.1.0 (a public pin admits any local version)
    plain = Install((Pin.exact("torch", "2.1.0"),))
    installed = {"torch": Version("2.1.0+cpu")}
    assert any("change nothing" in p for p in verify(plain, M, installed).problems)
    forced = taking_effect(plain, installed, deps=True)
    assert forced.force_reinstall and not forced.no_deps
    assert verify(forced, M, installed).problems == ()
    assert taking_effect(plain, {"torch": Version("2.0.1")}) is plain  # another version: pip replaces it


def test_a_release_not_on_the_index_named_is_a_problem():
    missing = Install((Pin.exact("torch", "2.1.0"),), "https://download.pytorch.org/whl/cu117")
    assert verify(missing, M, {}).problems
    unknown = Install((Pin.exact("torch", "2.0.1"),), "https://download.pytorch.org/whl/cu122")
    assert any("no index compat data knows" in p for p in verify(unknown, M, {}).problems)
    tagged_on_pypi = Install((Pin.exact("torch", "2.1.0+cu118"),))
    assert any("not on PyPI" in p for p in verify(tagged_on_pypi, M, {}).problems)
    assert any("no such release" in p for p in verify(Install((Pin.exact("torch", "2.99.0"),)), M, {}).problems)


def test_a_python_without_wheels_is_a_problem():
    command = Install((Pin.exact("torch", "2.1.0"),))
    assert verify(command, M, {}, python=Version("3.11")).problems == ()
    assert verify(command, M, {}, python=Version("3.12")).problems


def test_a_package_without_a_release_list_is_could_not_verify():
    found = verify(Install((Pin("nvidia-cublas-cu12"),)), M, {})
    assert found.problems == () and found.unverified and not found.ok


def test_an_uninstall_first_makes_the_install_count():
    steps = uninstall_then_install(("nvidia-nccl-cu11",), Install((Pin.exact("nvidia-nccl-cu12", "2.19.3"),)))
    installed = {"nvidia-nccl-cu11": Version("2.19.3"), "nvidia-nccl-cu12": Version("2.19.3")}
    assert any("change nothing" in p for p in verify(steps, M, installed).problems)
    forced = uninstall_then_install(("nvidia-nccl-cu11",), taking_effect(steps.steps[1], installed))  # type: ignore[arg-type]
    assert verify(forced, M, installed).problems == ()


def test_torch_builds_come_from_where_the_data_says():
    release = M.torch_release(Version("2.1.0"))
    assert release is not None
    assert render(torch_build_install(M, release, "cu118", {})) == (  # type: ignore[arg-type]
        f"python -m pip install torch==2.1.0+cu118 --index-url {CU118}"
    )
    assert torch_build_install(M, release, "cu117", {}) is None
    pypi_only = TorchRelease(Version("2.1.0"), python=("3.10",), pypi_default_cuda=Version("12.1"))
    pypi = torch_build_install(M, pypi_only, "cu121", {"torch": Version("2.1.0+cu118")})
    assert pypi is not None and pypi.index_url is None and pypi.force_reinstall  # 2.1.0+cu118 satisfies ==2.1.0
    # 1.x builds install as compat/torch.toml's [[install_form]] says: 1.10.1 from its variant's links page,
    # 1.9.0 from the one page of every build; torchaudio untagged, as PyTorch's own commands write it
    old = M.torch_release(Version("1.10.1"))
    assert old is not None
    links = torch_build_install(M, old, "cu111", {"torchaudio": Version("0.10.0")})
    assert links is not None and render(links) == (
        "python -m pip install torch==1.10.1+cu111 torchaudio==0.10.1 "
        "-f https://download.pytorch.org/whl/cu111/torch_stable.html"
    )
    assert verify(links, M, {}, python=Version("3.9")).problems == ()
    older = M.torch_release(Version("1.9.0"))
    assert older is not None
    stable = torch_build_install(M, older, "cu111", {})
    assert stable is not None and stable.find_links == (TORCH_STABLE,)


def test_a_release_without_wheels_for_the_python_is_a_problem():
    # tensorflow 2.15.0's Linux wheels are for CPython 3.9 to 3.11 (compat/ecosystem.toml): none installs on 3.12;
    # vllm 0.6.3's one abi3 wheel installs on any Python from 3.8
    command = Install((Pin.exact("tensorflow", "2.15.0"),))
    assert verify(command, M, {}, python=Version("3.11")).problems == ()
    assert any("no wheel for Python 3.12" in p for p in verify(command, M, {}, python=Version("3.12")).problems)
    assert verify(Install((Pin.exact("vllm", "0.6.3"),)), M, {}, python=Version("3.13")).problems == ()


def test_the_gate_withholds_a_command_that_cannot_work_and_says_why():
    # the H200 runs Python 3.12, for which torch 2.1.0 has no wheel: the command is withheld, the rest kept
    from cudadoctor.checks.findings import Remediation
    from cudadoctor.checks.gate import WITHHELD, withhold_unworkable
    from cudadoctor.facts.codec import facts_from_json
    from tests.conftest import fixture_text

    facts = facts_from_json(fixture_text("h200-device", "snapshot.json"))
    remediation = Remediation("Install it.", ("python -m pip install torch==2.1.0", "sudo reboot"))
    gated = withhold_unworkable(remediation, M, facts)
    assert gated is not None and gated.commands == ("sudo reboot",)
    assert WITHHELD in gated.text and "torch 2.1.0 has no wheel for Python 3.12" in gated.text
    # torch with the torchvision and torchaudio it pairs with: theirs pin torch==2.11.0 (tests/test_fix_pins.py)
    fine = Remediation("Install it.", ("python -m pip install torch==2.2.0 torchvision==0.17.0 torchaudio==2.2.0",))
    assert withhold_unworkable(fine, M, facts) is fine


def test_suggest_plans_no_tensorflow_without_a_wheel_for_the_python():
    # tensorflow 2.19.0's Linux wheels stop at CPython 3.12 (compat/ecosystem.toml `python`), though its
    # Requires-Python (>=3.9) admits 3.13: the planner read only the latter (found by verifying its commands)
    from cudadoctor.suggest import Constraints
    from cudadoctor.suggest.per_major import suggest_tensorflow

    plans = suggest_tensorflow(M, Constraints(python=Version("3.13")), limit=10).plans
    for plan in plans:
        for line in plan.commands:
            command = parse(line)
            assert command is not None and verify(command, M, {}, python=Version("3.13")).problems == ()
    assert "2.19.0" not in {version for _name, version in (p.packages[0] for p in plans)}
