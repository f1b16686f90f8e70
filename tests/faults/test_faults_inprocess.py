"""Fault injection, in-process: every broken environment collected, judged and rendered without a crash.

Each fault of :data:`tests.faults.envs.FAULTS` is collected as a *live* machine (the broken H200 tree
copied into pyfakefs, with fake NVML / libcuda answers and a fake nvidia-smi), or as an image root
on the real disk for trees too large for pyfakefs; then the checks run and both renderers (text and
JSON) produce the report. The contract: no crashed check, the exit code the CLI would give, a
reason that names what broke, and every category of the report still there.
"""

from __future__ import annotations

import json
import os
import stat
import time

import pytest
from typer.testing import CliRunner

from cudadoctor import cli
from cudadoctor.app import read_snapshot
from cudadoctor.data import CompatMatrix
from cudadoctor.data import load as compat_load
from cudadoctor.errors import SnapshotError
from cudadoctor.facts.codec import facts_from_json
from cudadoctor.probes import driver, loader
from cudadoctor.probes.collect import collect_facts
from cudadoctor.probes.context import ProbeContext
from cudadoctor.rootfs import RootFS
from cudadoctor.runner import SubprocessRunner
from tests.conftest import FakeNative, make_ctx
from tests.faults.envs import (
    CACHE_FAULTS,
    CATEGORY_TITLES,
    COMPAT_FAULTS,
    ENV_FILE_FAULTS,
    FAULTS,
    NVML_MISSING,
    SNAPSHOT_FAULTS,
    Fault,
    assert_expected,
    assert_report_intact,
    collect_live,
    env_file_text,
    fresh_tree,
    judge,
    observations,
)

cli_runner = CliRunner()


# --- every broken environment -------------------------------------------------------------------------


@pytest.mark.parametrize("fault", FAULTS, ids=[f.id for f in FAULTS])
def test_fault_in_process(fault: Fault, h200_image_env: dict[str, str], fault_tree, live_facts) -> None:  # type: ignore[no-untyped-def]
    if fault.inprocess_root:
        tree = fault_tree(fault)
        start = time.perf_counter()
        ctx = make_ctx(
            root=tree, env=fault.env(dict(h200_image_env)), runner=fault.runner(), native=fault.fake_native()
        )
        facts = collect_facts(ctx)
        collected = time.perf_counter() - start
        exit_code, expected = fault.root_exit_code, fault.root_expect
    else:
        facts, collected = live_facts(fault)
        exit_code, expected = fault.exit_code, fault.expect
    start = time.perf_counter()
    findings, got_exit, text, verbose, doc = judge(facts)
    elapsed = collected + time.perf_counter() - start
    assert_report_intact(facts, findings, text, verbose, doc)
    assert_expected(fault.id, observations(facts, findings), expected)
    assert got_exit == exit_code, observations(facts, findings)
    assert doc["exit_code"] == exit_code
    assert elapsed < fault.max_seconds, f"{fault.id}: {elapsed:.2f} s"


def test_unreadable_file_is_a_reason_even_as_root(h200_template: str, h200_image_env: dict[str, str], tmp_path):
    """chmod 000 does not stop root: pyfakefs plays a normal user, so the permission fault still bites."""
    fault = next(f for f in FAULTS if f.id == "proc-version-unreadable-chmod-000")
    tree = fresh_tree(h200_template, str(tmp_path / "root"), fault)
    assert stat.S_IMODE(os.stat(tree + "/proc/driver/nvidia/version").st_mode) == 0
    facts = collect_live(tree, dict(h200_image_env), fault)
    assert [(e.probe, e.source) for e in facts.errors] == [("driver", "/proc/driver/nvidia/version")]
    assert facts.driver is not None
    assert str(facts.driver.version) == "580.159.04"  # /sys/module/nvidia/version and NVML still say it


# --- nvidia-smi that really hangs ---------------------------------------------------------------------


def test_hanging_nvidia_smi_is_killed_at_its_timeout(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one real subprocess: an nvidia-smi that sleeps (and starts a child that sleeps) is killed."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "nvidia-smi"
    script.write_text("#!/bin/sh\nsleep 30 &\nsleep 30\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    monkeypatch.setattr(driver, "SMI_TIMEOUT", 0.5)
    ctx = ProbeContext(
        fs=RootFS("/"),
        env={"PATH": str(bindir)},
        runner=SubprocessRunner(),
        native=FakeNative(NVML_MISSING),
    )
    start = time.perf_counter()
    facts = collect_facts(ctx)
    elapsed = time.perf_counter() - start
    assert elapsed < 5, elapsed
    # On a machine without a driver the reason is folded into "no NVIDIA driver found (…)".
    assert any(e.probe == "driver" and "nvidia-smi: timed out after 0.5 s" in e.message for e in facts.errors)
    findings, _exit, text, verbose, doc = judge(facts)
    assert_report_intact(facts, findings, text, verbose, doc)


# --- the loader's search path stays linear ------------------------------------------------------------


def test_a_huge_ld_library_path_is_deduplicated_in_linear_time() -> None:
    """A 1 MB LD_LIBRARY_PATH line (130,000 entries) hung the image audit: the dedupe was quadratic
    (30,000 entries took 4 s; linear, 20 ms)."""
    entries = [f"/d{i}" for i in range(30_000)]
    ctx = make_ctx(root="/nonexistent-root", env={"LD_LIBRARY_PATH": ":".join([*entries, *entries[:10]])})
    start = time.perf_counter()
    dirs = loader.search_dirs(ctx)
    assert time.perf_counter() - start < 1
    assert dirs[:3] == ("/d0", "/d1", "/d2") and len(dirs) == 30_000 + len(loader.default_dirs("x86_64"))


# --- snapshots ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", SNAPSHOT_FAULTS, ids=[c.id for c in SNAPSHOT_FAULTS])
def test_bad_snapshot_in_process(case, good_snapshot: bytes, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "snap.json")
    case.make(path, good_snapshot)
    with pytest.raises(SnapshotError) as info:
        read_snapshot(path)
    assert case.message in str(info.value)
    assert "\n" not in str(info.value)
    result = cli_runner.invoke(cli.app, ["check", "--from", path])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and case.message in result.stderr
    assert "Traceback" not in result.stderr


def test_good_snapshot_round_trips(good_snapshot: bytes) -> None:
    facts = facts_from_json(good_snapshot.decode())
    findings, exit_code, text, verbose, doc = judge(facts)
    assert_report_intact(facts, findings, text, verbose, doc)
    assert exit_code == 0


# --- the update cache --------------------------------------------------------------------------------


def _h200_report(h200_template: str, h200_image_env: dict[str, str]) -> tuple[int, str, dict]:
    facts = collect_facts(make_ctx(root=h200_template, env=h200_image_env))
    findings, exit_code, text, _verbose, doc = judge(facts)
    assert_report_intact(facts, findings, text, _verbose, doc)
    for volatile in ("collected_at", "timings"):
        doc["facts"].pop(volatile)
    return exit_code, text, doc


@pytest.mark.parametrize("case", CACHE_FAULTS, ids=[c.id for c in CACHE_FAULTS])
def test_corrupt_update_cache_falls_back_to_the_bundled_data(
    case, h200_template: str, h200_image_env: dict[str, str]
) -> None:  # type: ignore[no-untyped-def]
    baseline = _h200_report(h200_template, h200_image_env)
    cache_dir = os.path.join(os.environ["XDG_CACHE_HOME"], "cudadoctor")  # a fresh temporary (tests/conftest.py)
    case.make(cache_dir)
    assert CompatMatrix().index_data is None
    exit_code, _text, doc = _h200_report(h200_template, h200_image_env)
    # The rest of the report is intact: same exit code, same facts; only CD902 names the broken cache.
    assert exit_code == baseline[0] and doc["facts"] == baseline[2]["facts"]


def test_corrupt_update_cache_is_named_somewhere(h200_template: str, h200_image_env: dict[str, str]) -> None:
    cache_dir = os.path.join(os.environ["XDG_CACHE_HOME"], "cudadoctor")
    CACHE_FAULTS[0].make(cache_dir)
    _exit, text, doc = _h200_report(h200_template, h200_image_env)
    assert "index-releases.json" in text + json.dumps(doc)


# --- the compat tables -------------------------------------------------------------------------------


@pytest.fixture
def broken_compat(monkeypatch: pytest.MonkeyPatch, tmp_path):  # type: ignore[no-untyped-def]
    """Point compat_dir at a directory the test breaks (tables are cached per directory: nothing to forget)."""
    directory = tmp_path / "compat"
    real = compat_load.compat_dir()
    monkeypatch.setattr(compat_load, "compat_dir", lambda: str(directory))
    yield str(directory), real
    monkeypatch.undo()


@pytest.mark.parametrize("case", COMPAT_FAULTS, ids=[c.id for c in COMPAT_FAULTS])
def test_broken_compat_table_is_exit_3_and_one_line(
    case, broken_compat: tuple[str, str], h200_template: str, h200_image_env: dict[str, str], tmp_path
) -> None:  # type: ignore[no-untyped-def]
    directory, real = broken_compat
    case.make(directory, real=real)
    env_file = tmp_path / "image.env"
    env_file.write_text(env_file_text(h200_image_env))
    result = cli_runner.invoke(cli.app, ["check", "--root", h200_template, "--env-file", str(env_file)])
    assert "Traceback" not in result.output and "internal error" not in result.stderr
    if case.exit_code == 0:  # the GPU table alone: a recorded reason, and the report
        assert result.exit_code == 0, result.output
        assert case.message in result.stdout and result.stderr == ""
        assert all(f"] {title}:" in result.stdout for title in CATEGORY_TITLES)
        return
    assert result.exit_code == 3, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and case.message in lines[0], lines


# --- the env file ------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ENV_FILE_FAULTS, ids=[c.id for c in ENV_FILE_FAULTS])
def test_bad_env_file_is_exit_2_and_one_line(case, h200_template: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "image.env")
    case.make(path)
    result = cli_runner.invoke(cli.app, ["check", "--root", h200_template, "--env-file", path])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and case.message in lines[0], lines
    assert "Traceback" not in result.stderr
    assert "SECRETKEY" not in result.output
