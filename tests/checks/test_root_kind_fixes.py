"""The fixes that depend on the root's kind: a host is rebooted, an image loses its baked driver, and no command
that removes a driver library is ever printed for a host (issue #28, item 3).

Roots are fake trees under ``/img`` (pyfakefs), probed as ``--root`` probes them; live machines are laid out by the
corpus builder (tests/corpus/builder.py), which writes a case's machine the way real ones are.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from pyfakefs.fake_filesystem_unittest import Patcher

from cudadoctor.assume import apply_assumptions, apply_root_kind
from cudadoctor.checks.engine import run_checks
from cudadoctor.checks.findings import Finding, Status
from cudadoctor.checks.hostfix import RELOAD_MODULES
from cudadoctor.data import CompatMatrix
from cudadoctor.errors import InvalidValue
from cudadoctor.facts.codec import facts_from_json, facts_to_json
from cudadoctor.facts.model import Facts
from cudadoctor.probes.collect import collect_facts
from tests.conftest import make_ctx
from tests.corpus.builder import build, case_paths, load_case
from tests.corpus.replay import replay

MATRIX = CompatMatrix()
LIB = "/usr/lib/x86_64-linux-gnu"
KERNEL = "/boot/vmlinuz-6.8.0-45-generic"


def _root_facts(files: dict[str, str], *, assume: str | None = "550.90.07", env: dict[str, str] | None = None) -> Facts:
    """Facts of a root holding ``files`` and a driver 550.107.02 in the multiarch directory, the host's driver
    assumed (``--assume-driver``)."""
    with Patcher() as patcher:
        assert patcher.fs is not None
        patcher.fs.create_file("/img/etc/os-release", contents='PRETTY_NAME="Ubuntu 24.04.1 LTS"\nNAME="Ubuntu"\n')
        patcher.fs.create_file(f"/img{LIB}/libcuda.so.550.107.02")
        patcher.fs.create_symlink(f"/img{LIB}/libcuda.so.1", "libcuda.so.550.107.02")
        patcher.fs.create_file(f"/img{LIB}/libnvidia-ml.so.550.107.02")
        for path, text in files.items():
            patcher.fs.create_file("/img" + path, contents=text)
        facts = collect_facts(make_ctx(root="/img", env=env))
    return apply_assumptions(facts, driver=assume) if assume else facts


def _cd101(facts: Facts) -> Finding:
    (finding,) = run_checks(facts, MATRIX, select=("CD101",))
    return finding


def _commands(findings: tuple[Finding, ...] | list[Finding]) -> list[str]:
    return [c for f in findings if f.remediation for c in f.remediation.commands]


def _removes_a_library(command: str) -> bool:
    return any(word == "rm" for word in command.replace("&&", " ").replace(";", " ").split())


def test_mounted_host_disk_gets_a_reboot_never_a_removal():
    facts = _root_facts({KERNEL: ""})
    assert facts.root_kind is not None and facts.root_kind.kind == "host"
    assert facts.root_kind.source is not None and facts.root_kind.source.where == KERNEL
    finding = _cd101(facts)
    assert finding.status is Status.FAIL
    assert finding.remediation is not None and finding.remediation.commands == ("sudo reboot",)
    assert RELOAD_MODULES in finding.remediation.text
    assert finding.evidence["root"] == f"host (file: {KERNEL})"


def test_reloading_the_modules_loads_nvidia_even_when_one_named_was_not_loaded():
    """modprobe -r exits non-zero for a named module that is not loaded (no nvidia_drm on a headless server): the
    load must not hang on its success, or the pasted line leaves nvidia unloaded."""
    unload, load = RELOAD_MODULES.split("; ")
    assert unload == "sudo modprobe -r nvidia_uvm nvidia_drm nvidia_modeset nvidia"
    assert load == "sudo modprobe nvidia"


def test_exported_image_gets_its_baked_driver_removed():
    finding = _cd101(_root_facts({"/.dockerenv": ""}))
    assert finding.status is Status.FAIL
    assert finding.remediation is not None
    assert finding.remediation.commands == (f"rm -f {LIB}/lib*.so.550.107.02 && ldconfig",)
    assert finding.evidence["root"] == "image (file: /.dockerenv)"


def test_a_root_without_markers_is_taken_for_a_host_and_says_so():
    finding = _cd101(_root_facts({}))
    assert finding.remediation is not None and finding.remediation.commands == ("sudo reboot",)
    assert "no marker of a container or of a host" in finding.remediation.text
    assert "--root-kind image" in finding.remediation.text


def test_contradicting_markers_remove_nothing():
    finding = _cd101(_root_facts({"/.dockerenv": "", KERNEL: ""}))
    assert finding.remediation is not None and not any(map(_removes_a_library, finding.remediation.commands))
    assert "markers disagree (image: /.dockerenv, host: /boot/vmlinuz-6.8.0-45-generic)" in finding.remediation.text


def test_root_kind_flag_overrides_the_markers_both_ways():
    unmarked = _root_facts({})
    image = apply_root_kind(unmarked, "image")
    assert image.root_kind is not None and str(image.root_kind.source) == "assumed: --root-kind image"
    assert _commands([_cd101(image)]) == [f"rm -f {LIB}/lib*.so.550.107.02 && ldconfig"]
    host = apply_root_kind(_root_facts({"/.dockerenv": ""}), "host")
    assert _commands([_cd101(host)]) == ["sudo reboot"]
    assert host.root_kind is not None and [str(m.source) for m in host.root_kind.markers] == ["file: /.dockerenv"]
    assert apply_root_kind(unmarked, "auto") == unmarked
    with pytest.raises(InvalidValue):
        apply_root_kind(unmarked, "vm")


def test_the_kind_survives_a_snapshot_and_an_old_snapshot_removes_nothing():
    facts = _root_facts({"/.dockerenv": ""})
    assert facts_from_json(facts_to_json(facts)).root_kind == facts.root_kind
    old = replace(facts, root_kind=None)  # written before the fact existed
    finding = _cd101(facts_from_json(facts_to_json(old)))
    assert finding.remediation is not None and finding.remediation.commands == ("sudo reboot",)
    assert "the root's kind was not recorded (a snapshot of an older cudadoctor" in finding.remediation.text


def _live(container: str, version: str, userspace: str, os_name: str = "Ubuntu 22.04") -> tuple[Finding, ...]:
    case = {
        "case": {"id": "fixture"},
        "env": {
            "os": os_name,
            "container": container,
            "driver": {"version": version, "userspace": userspace},
            "gpus": [{"name": "NVIDIA GeForce RTX 4090"}],
        },
    }
    return replay(case, MATRIX).findings


def test_live_host_upgraded_without_a_reboot_is_rebooted():
    (finding,) = [f for f in _live("none", "550.90.07", "550.107.02") if f.code == "CD101"]
    assert finding.status is Status.FAIL
    assert finding.remediation is not None and finding.remediation.commands == ("sudo reboot",)
    assert "(550.107.02)" in finding.remediation.text


def test_live_host_whose_module_is_the_newer_gets_the_matching_user_space():
    """A reboot keeps the older libraries: the fix is the user-space driver of the module's version."""
    (finding,) = [f for f in _live("none", "550.107.02", "550.90.07") if f.code == "CD101"]
    assert finding.remediation is not None and finding.remediation.commands == ()
    assert "install the user-space driver of version 550.107.02" in finding.remediation.text.lower()
    assert "Ubuntu's libnvidia-compute-550 and nvidia-utils-550 packages at 550.107.02" in finding.remediation.text
    (rocky,) = [f for f in _live("none", "550.107.02", "550.90.07", "Rocky 9") if f.code == "CD101"]
    assert rocky.remediation is not None and "libnvidia-compute" not in rocky.remediation.text
    assert "the distribution's driver packages at that version" in rocky.remediation.text


def test_live_container_with_a_baked_driver_removes_it():
    (finding,) = [f for f in _live("docker", "440.33.01", "455.32.00") if f.code == "CD101"]
    assert finding.remediation is not None
    assert finding.remediation.commands == (f"rm -f {LIB}/lib*.so.455.32.00 && ldconfig",)


def test_live_container_whose_driver_files_are_the_hosts_mounts_reboots_the_host():
    """The host was upgraded without a reboot; its new libcuda is bind-mounted in: removing it inside the
    container fails (a mount point) and would not be the fix."""
    machine = build({"env": {"container": "docker", "driver": {"version": "550.90.07", "userspace": "550.107.02"},
                             "gpus": [{"name": "NVIDIA GeForce RTX 4090"}]}})  # fmt: skip
    mounted = f"{LIB}/libcuda.so.550.107.02"
    machine.files["/proc/self/mountinfo"] = f"612 590 259:1 {mounted} {mounted} ro,nosuid - ext4 /dev/root rw\n"
    with Patcher() as patcher:
        assert patcher.fs is not None
        machine.write("/")
        facts = collect_facts(make_ctx(env=machine.env, runner=machine.runner, native=machine.native))
    finding = _cd101(facts)
    assert finding.remediation is not None and finding.remediation.commands == ()
    assert "Reboot the host (not the container)" in finding.remediation.text


# --- no driver library is ever removed on a host ---------------------------------------------------------------


#: The corpus classes whose checks read the driver (tests/corpus/README.md).
_DRIVER_CLASSES = ("driver-library-mismatch", "driver-too-old", "driver-too-old-for-gpu", "compat-libcuda",
                   "stub-libcuda", "container-without-gpus")  # fmt: skip


def _host_cases(classes: tuple[str, ...] | None) -> list[str]:
    """The corpus's cases on a host's own system (``container = "none"``) with an NVIDIA driver, of ``classes``."""
    found = []
    for path in case_paths("cases"):
        case = load_case(path)
        env = case["env"]
        wanted = classes is None or case["case"]["class"] in classes
        if wanted and env.get("container", "none") == "none" and env.get("driver"):
            found.append(path)
    return found


def _removals_on_hosts(classes: tuple[str, ...] | None) -> tuple[list[Finding], list[str]]:
    findings: list[Finding] = []
    for path in _host_cases(classes):
        findings += replay(load_case(path), MATRIX).findings
    for facts in (_root_facts({KERNEL: ""}), _root_facts({}), _root_facts({"/.dockerenv": "", KERNEL: ""})):
        findings += run_checks(facts, MATRIX)
        findings += run_checks(apply_root_kind(facts, "host"), MATRIX)
    return findings, [c for c in _commands(findings) if _removes_a_library(c)]


def test_no_driver_check_removes_a_driver_library_on_a_host():
    """Every check, over the corpus's hosts of the driver classes and the host roots above: not one command that
    removes a file."""
    findings, removals = _removals_on_hosts(_DRIVER_CLASSES)
    assert sum(f.code == "CD101" and f.status is Status.FAIL for f in findings) >= 6  # the mismatches were judged
    assert removals == []


@pytest.mark.slow
def test_no_check_removes_a_driver_library_on_any_host_of_the_corpus():
    findings, removals = _removals_on_hosts(None)
    assert len(findings) > 1000
    assert removals == []


def test_the_flag_on_the_command_line(tmp_path):
    """`check --root DIR --root-kind image`: the exported image without markers gets the removal; a bad value is a
    usage error."""
    import json

    from typer.testing import CliRunner

    from cudadoctor import cli

    lib = tmp_path / LIB.lstrip("/")
    lib.mkdir(parents=True)
    (lib / "libcuda.so.550.107.02").write_text("")
    (lib / "libcuda.so.1").symlink_to("libcuda.so.550.107.02")
    argv = ["check", "--root", str(tmp_path), "--assume-driver", "550.90.07", "--select", "CD101", "-f", "json"]
    commands = {}
    for kind in ("auto", "image"):
        result = CliRunner().invoke(cli.app, [*argv, "--root-kind", kind])
        (finding,) = json.loads(result.output)["findings"]
        commands[kind] = finding["remediation"]["commands"]
    assert commands == {"auto": ["sudo reboot"], "image": [f"rm -f {LIB}/lib*.so.550.107.02 && ldconfig"]}
    refused = CliRunner().invoke(cli.app, [*argv, "--root-kind", "vm"])
    assert refused.exit_code == 2 and "--root-kind" in refused.output


def _mismatch_cases() -> list[str]:
    return [p for p in case_paths("cases") if load_case(p)["case"]["class"] == "driver-library-mismatch"]


@pytest.mark.parametrize("path", _mismatch_cases(), ids=lambda p: p.split("/")[-2])
def test_each_mismatch_case_gets_the_fix_its_thread_accepted(path):
    """A host upgraded without a reboot is rebooted (the threads' fix); a driver installed inside a container is
    removed from it (DockerMonitor#42: uninstall the driver inside the container)."""
    case = load_case(path)
    (finding,) = [f for f in replay(case, MATRIX).findings if f.code == "CD101"]
    assert finding.remediation is not None
    if case["env"].get("container", "none") == "none":
        assert "reboot" in case["case"]["fix"]
        assert finding.remediation.commands == ("sudo reboot",)
        assert RELOAD_MODULES in finding.remediation.text
    else:
        assert "inside the container" in case["case"]["fix"]
        (command,) = finding.remediation.commands
        assert command.startswith("rm -f ") and command.endswith(" && ldconfig")


def test_a_host_disk_is_not_called_a_container():
    """Under --root every root carried the "image root" container marker; a host's disk is no container."""
    from cudadoctor.report.summary import categories

    host = next(c for c in categories(_root_facts({KERNEL: ""})) if c.key == "host")
    assert "container" not in host.headline
    image = next(c for c in categories(_root_facts({"/.dockerenv": ""})) if c.key == "host")
    assert "in a container" in image.headline
