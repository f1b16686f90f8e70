"""``cudadoctor suggest driver``: the driver branches that run every GPU, by the rules `check` asks (CD114's
``driver_supports_gpu``, the data center lifecycle of CD115), with the distribution's install command."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest
from typer.testing import CliRunner

from cudadoctor.checks.engine import run_checks
from cudadoctor.checks.findings import Status
from cudadoctor.cli import app
from cudadoctor.data import CompatMatrix
from cudadoctor.planning import HostFlags, driver_plan
from cudadoctor.suggest.constraints import Gpu
from cudadoctor.suggest.driver import install_commands, suggest_driver
from tests.checks.test_kernel_module import _facts, _machine

MATRIX = CompatMatrix()
DAY = datetime.date(2026, 12, 4)  # R580 and R620 long-term, R595 production; R535 and R570 ended
RTX_5090 = Gpu("NVIDIA GeForce RTX 5090", "12.0", "--gpu", "geforce")
K80 = Gpu("Tesla K80", "3.7", "--gpu", "datacenter")
GTX_1080 = Gpu("NVIDIA GeForce GTX 1080", "6.1", "--gpu", "geforce")


def _run(*args: str) -> Any:
    return CliRunner().invoke(app, ["suggest", "driver", "--no-probe", *args])


def test_a_blackwell_gpu_gets_the_oldest_supported_long_term_branch_with_the_open_module() -> None:
    plan = suggest_driver(MATRIX, [RTX_5090], "Ubuntu 24.04.1 LTS", DAY)
    assert plan.flavor == "open"
    assert plan.best is not None and plan.best.branch == 580 and plan.best.release == "580.65.06"
    assert plan.best.commands == (("Ubuntu", "sudo apt install nvidia-driver-580-open"),)
    assert [o.branch for o in plan.options if o.fits] == [580, 620, 595]
    assert all(o.commands == () for o in plan.options[1:])  # only the branch to install has a command


def test_a_kepler_gpu_is_offered_its_legacy_branch_and_no_supported_one() -> None:
    plan = suggest_driver(MATRIX, [K80], "Ubuntu 22.04", DAY)
    assert plan.best is None and plan.flavor == "proprietary"
    first = plan.options[0]
    assert (first.branch, first.fits, first.supported) == (470, True, False)
    assert first.commands == ()  # Ubuntu's nvidia-driver-470 is a transitional package to 535 now
    r580 = next(o for o in plan.options if o.branch == 580)
    assert r580.fits is False and "R470 or older" in r580.why
    assert any("no supported branch" in a for a in plan.advice)


def test_a_pascal_and_a_blackwell_gpu_have_no_one_module_to_share() -> None:
    plan = suggest_driver(MATRIX, [GTX_1080, RTX_5090], None, DAY)
    assert plan.flavor == "" and plan.best is None
    assert all(o.commands == () for o in plan.options)
    assert next(o for o in plan.options if o.branch == 595).fits is False  # R595 dropped Pascal


@pytest.mark.parametrize(
    ("distro", "flavor", "expected"),
    [
        ("Ubuntu 24.04.1 LTS", "either", (("Ubuntu", "sudo apt install nvidia-driver-580"),)),
        (
            "Debian GNU/Linux 12 (bookworm)",
            "open",
            (("Debian (NVIDIA's CUDA repository)", "sudo apt install cuda-drivers-580"),),
        ),
        (
            "Rocky Linux 9.4 (Blue Onyx)",
            "proprietary",
            (("RHEL 8/9 (NVIDIA's CUDA repository)", "sudo dnf module install nvidia-driver:580-dkms"),),
        ),
        ("Rocky Linux 10.0", "open", ()),  # no DNF module streams there
        ("Arch Linux", "open", ()),
        ("Ubuntu 24.04", "", ()),  # no one flavour for the GPUs
    ],
)
def test_install_commands_are_the_distributions_own(distro: str, flavor: str, expected: tuple[Any, ...]) -> None:
    assert install_commands(580, flavor, distro) == expected


def test_the_cli_plans_for_named_gpus_and_exits_1_without_a_supported_branch() -> None:
    result = _run("--gpu", "A10G")
    assert result.exit_code == 0, result.output
    assert "GPUs (--gpu): NVIDIA A10G" in result.stdout and "* R580" in result.stdout
    kepler = _run("--gpu", "K80", "--format", "json")
    assert kepler.exit_code == 1
    doc = json.loads(kepler.stdout)
    assert doc["kind"] == "cudadoctor-driver-plan" and doc["plan"]["options"][0]["branch"] == 470
    assert _run("--gpu", "A10G", "--format", "dockerfile").exit_code == 2
    assert CliRunner().invoke(app, ["suggest", "--target", "driver", "--matrix", "--no-probe"]).exit_code == 2


def test_a_machine_whose_driver_is_not_loaded_is_planned_from_the_pci_bus_as_cd136_advises(fs: Any) -> None:
    """The GPU comes from the PCI bus; the branch suggest installs is the one CD136 names (one rule set)."""
    _machine(fs, device="0x2b85", dep="updates/dkms/nvidia.ko.zst:\n", libcuda="550.127.05")
    facts = _facts()
    fs.pause()
    plan, origin = driver_plan(HostFlags(), lambda: facts)
    assert origin == "the PCI bus" and plan.gpus == ("NVIDIA GeForce RTX 5090",)
    assert plan.best is not None and plan.best.commands[0][0] == "Ubuntu"
    (cd136,) = run_checks(facts, MATRIX, select=("CD136",))
    assert cd136.status is Status.FAIL and cd136.remediation is not None
    assert cd136.remediation.commands == (plan.best.commands[0][1], "sudo reboot")
