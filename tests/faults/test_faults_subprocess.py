"""Fault injection, end to end: ``python -m cudadoctor check`` as a real process on every broken environment.

File and environment faults are audited as an image root (``check --root TREE --env-file FILE``);
faults in NVML, libcuda or nvidia-smi, which an image audit never touches, are collected in-process
on a live machine (pyfakefs) and the snapshot is replayed with ``check --from``. Every run is made
in text and in JSON, under a timeout, and held to the contract: the expected exit code, no
traceback, stdout that is valid UTF-8, stderr that is only cudadoctor's own one-line messages, every
category in the report, and the reason for the fault in the JSON report.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from cudadoctor.data import load as compat_load
from cudadoctor.facts.codec import facts_to_json
from cudadoctor.output import write_text
from tests.faults.envs import (
    CACHE_FAULTS,
    CATEGORY_KEYS,
    COMPAT_FAULTS,
    CONTROLS,
    ENV_FILE_FAULTS,
    FAULTS,
    SNAPSHOT_FAULTS,
    Fault,
    assert_categories,
    assert_expected,
    env_file_text,
    fresh_tree,
    json_observations,
)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: Seconds one cudadoctor process may take before it counts as hung.
TIMEOUT = 60


@dataclass(frozen=True)
class Run:
    argv: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: bytes
    seconds: float

    @property
    def out(self) -> str:
        return self.stdout.decode("utf-8")  # strict: a report is valid UTF-8 whatever it read

    @property
    def err(self) -> str:
        return self.stderr.decode("utf-8", errors="replace")


def _environ(tmp_path, **extra: str) -> dict[str, str]:
    """A small, fixed environment: this checkout first on the path, a private HOME and cache."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path / "home"),
        "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
        "PYTHONPATH": REPO,
        "LANG": "C.UTF-8",
    }
    env.update(extra)
    return env


def _start(args: list[str], env: dict[str, str] | dict[bytes, bytes], cwd: str) -> tuple[subprocess.Popen, float]:
    argv = [sys.executable, "-m", "cudadoctor", *args]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd)  # type: ignore[arg-type]
    return proc, time.perf_counter()


def _finish(proc: subprocess.Popen, started: float) -> Run:
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"cudadoctor hung (> {TIMEOUT} s): {proc.args!r}")
    return Run(tuple(proc.args), proc.returncode, out, err, time.perf_counter() - started)  # type: ignore[arg-type]


def cudadoctor(*args: str, tmp_path, env: dict | None = None) -> Run:  # type: ignore[type-arg]
    """One ``python -m cudadoctor`` run, in ``tmp_path`` (no project settings above it)."""
    return _finish(*_start(list(args), env or _environ(tmp_path), str(tmp_path)))


def text_and_json(*args: str, tmp_path, env: dict | None = None, parallel: bool = True) -> tuple[Run, Run]:  # type: ignore[type-arg]
    """The same check in text and in JSON; both at once unless ``parallel`` is False (timed runs)."""
    env = env or _environ(tmp_path)
    if not parallel:
        return cudadoctor(*args, tmp_path=tmp_path, env=env), cudadoctor(
            *args, "-f", "json", tmp_path=tmp_path, env=env
        )
    text = _start(list(args), env, str(tmp_path))
    js = _start([*args, "-f", "json"], env, str(tmp_path))
    return _finish(*text), _finish(*js)


def assert_clean(run: Run) -> None:
    """No traceback, no internal error, valid UTF-8 out, and only cudadoctor's own lines on stderr."""
    out, err = run.out, run.err
    assert "Traceback" not in out + err, err
    assert not CONTROLS.search(out), f"a control character reached the report: {CONTROLS.search(out)}"
    assert "internal error" not in err, err
    for line in err.splitlines():
        assert line.startswith("cudadoctor: "), f"stray stderr line: {line!r}"


def assert_report(text: Run, js: Run, exit_code: int) -> dict:  # type: ignore[type-arg]
    """Both renderings made, with the exit code; returns the JSON report."""
    for run in (text, js):
        assert_clean(run)
        assert run.returncode == exit_code, (run.argv, run.returncode, run.err, run.out[-2000:])
    assert_categories(text.out)
    doc = json.loads(js.out)
    assert tuple(s["category"] for s in doc["summary"]) == CATEGORY_KEYS
    assert doc["exit_code"] == exit_code
    crashed = [f for f in doc["findings"] if f["status"] == "error"]
    assert not crashed, crashed
    assert not [e for e in doc["facts"]["errors"] if "probe crashed" in e["message"]]
    return doc


# --- every broken environment ---------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """One fault's ``check`` process: its arguments, where its JSON report goes, and what it must show."""

    fault: Fault
    args: tuple[str, ...]
    report: str
    cwd: str
    exit_code: int
    expected: tuple[str, ...]


def _job(fault: Fault, image_env: dict[str, str], fault_tree, live_facts, tmp_path) -> Job:  # type: ignore[no-untyped-def]
    # One process renders both: the JSON report to a file (-o), the text summary to stdout.
    report = str(tmp_path / "report.json")
    if fault.native:
        # NVML, libcuda and nvidia-smi exist only on a live machine: collect it in-process, replay the facts.
        snapshot = str(tmp_path / "facts.json")
        write_text(snapshot, facts_to_json(live_facts(fault)[0]) + "\n")  # as `cudadoctor snapshot -o`
        args: tuple[str, ...] = ("check", "--from", snapshot, "-f", "json", "-o", report)
        return Job(fault, args, report, str(tmp_path), fault.exit_code, fault.expect)
    tree = fault_tree(fault)
    env_file = tmp_path / "image.env"
    env = fault.env(dict(image_env))
    env_file.write_bytes(fault.env_file if fault.env_file is not None else env_file_text(env).encode())
    args = ("check", "--root", tree, "--env-file", str(env_file), "-f", "json", "-o", report)
    return Job(fault, args, report, str(tmp_path), fault.root_exit_code, fault.root_expect)


def _skipped(fault: Fault) -> str | None:
    if fault.needs_non_root and not fault.native and os.geteuid() == 0:
        return "chmod 000 does not stop root; the in-process run covers it (pyfakefs plays a normal user)"
    return None


@pytest.fixture(scope="module")
def fault_runs(request, h200_image_env: dict[str, str], fault_tree, live_facts, tmp_path_factory):  # type: ignore[no-untyped-def]
    """Every selected fault's process, run up front: timed faults alone, the others side by side (the
    processes wait on nothing, so a 2-core machine runs two at once). Returns {fault id: (job, run)}."""
    wanted = {
        item.callspec.params["fault"].id
        for item in request.session.items
        if item.originalname == "test_fault_subprocess"
    }
    jobs = [
        _job(f, h200_image_env, fault_tree, live_facts, tmp_path_factory.mktemp(f.id))
        for f in FAULTS
        if f.id in wanted and _skipped(f) is None
    ]  # all prepared (pyfakefs included) before any process starts

    def run(job: Job) -> tuple[Job, Run]:
        return job, cudadoctor(*job.args, tmp_path=Path(job.cwd))

    timed = [run(job) for job in jobs if job.fault.max_seconds < 5]
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        rest = list(pool.map(run, [job for job in jobs if job.fault.max_seconds >= 5]))
    return {job.fault.id: (job, result) for job, result in [*timed, *rest]}


@pytest.mark.parametrize("fault", FAULTS, ids=[f.id for f in FAULTS])
def test_fault_subprocess(fault: Fault, fault_runs) -> None:  # type: ignore[no-untyped-def]
    if reason := _skipped(fault):
        pytest.skip(reason)
    job, run = fault_runs[fault.id]
    with open(job.report, "rb") as handle:
        report = handle.read()
    text = Run(run.argv, run.returncode, run.stdout, b"", run.seconds)
    js = Run(run.argv, run.returncode, report, b"", run.seconds)
    assert run.err.strip().splitlines()[-1] == f"cudadoctor: wrote the json report to {job.report}", run.err
    assert_clean(run)
    doc = assert_report(text, js, job.exit_code)
    assert_expected(fault.id, json_observations(doc), job.expected)
    assert run.seconds < fault.max_seconds, f"{fault.id}: {run.seconds:.2f} s"


def test_an_unreadable_file_as_root_is_still_a_reason(h200_template: str, h200_image_env, tmp_path) -> None:
    """Where chmod cannot stop root, a directory in the file's place does: the same 'cannot read' path."""
    fault = next(f for f in FAULTS if f.id == "proc-version-is-a-directory")
    tree = fresh_tree(h200_template, str(tmp_path / "root"), fault)
    env_file = tmp_path / "image.env"
    env_file.write_text(env_file_text(h200_image_env))
    text, js = text_and_json("check", "--root", tree, "--env-file", str(env_file), "-v", tmp_path=tmp_path)
    assert_report(text, js, 0)
    assert "could not read: cannot read: Is a directory (/proc/driver/nvidia/version)" in text.out


# --- snapshots -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", SNAPSHOT_FAULTS, ids=[c.id for c in SNAPSHOT_FAULTS])
def test_bad_snapshot_subprocess(case, good_snapshot: bytes, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "snap.json")
    case.make(path, good_snapshot)
    text, js = text_and_json("check", "--from", path, tmp_path=tmp_path)
    for run in (text, js):
        assert_clean(run)
        assert run.returncode == 2, (run.returncode, run.err)
        assert run.out == ""
        lines = run.err.strip().splitlines()
        assert len(lines) == 1 and case.message in lines[0], lines


# --- the update cache ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def clean_audit(h200_template: str, h200_image_env: dict[str, str], tmp_path_factory) -> tuple[str, str, str]:
    """(env file, text report, JSON report without volatile facts) of the intact H200 image."""
    tmp_path = tmp_path_factory.mktemp("clean-audit")
    env_file = tmp_path / "image.env"
    env_file.write_text(env_file_text(h200_image_env))
    text, js = text_and_json("check", "--root", h200_template, "--env-file", str(env_file), tmp_path=tmp_path)
    doc = assert_report(text, js, 0)
    return str(env_file), text.out, _stable(doc)


def _stable(doc: dict) -> str:  # type: ignore[type-arg]
    for volatile in ("collected_at", "timings"):
        doc["facts"].pop(volatile)
    return json.dumps(doc, sort_keys=True)


@pytest.mark.parametrize("case", CACHE_FAULTS, ids=[c.id for c in CACHE_FAULTS])
def test_corrupt_update_cache_subprocess(case, h200_template: str, clean_audit, tmp_path) -> None:  # type: ignore[no-untyped-def]
    env_file, _clean_text, clean_json = clean_audit
    env = _environ(tmp_path)
    case.make(os.path.join(env["XDG_CACHE_HOME"], "cudadoctor"))
    text, js = text_and_json("check", "--root", h200_template, "--env-file", env_file, tmp_path=tmp_path, env=env)
    doc = assert_report(text, js, 0)
    # The bundled data answers as if there were no cache; CD902 names the unusable cache (a warning).
    assert "CD902 the package-index cache cannot be used" in text.out
    facts = json.loads(_stable(doc))["facts"]
    assert facts == json.loads(clean_json)["facts"]
    assert text.err == js.err == ""


# --- the compat tables -------------------------------------------------------------------------------

#: cudadoctor with compat_dir pointed elsewhere: argv[1] is the directory, the rest cudadoctor's arguments.
_PATCHED_MAIN = (
    "import sys\n"
    "import cudadoctor.data.load as m\n"
    "directory = sys.argv.pop(1)\n"
    "m.compat_dir = lambda: directory\n"
    "sys.argv[0] = 'cudadoctor'\n"
    "from cudadoctor.cli import main\n"
    "main()\n"
)


@pytest.mark.parametrize("case", COMPAT_FAULTS, ids=[c.id for c in COMPAT_FAULTS])
def test_broken_compat_table_subprocess(case, h200_template: str, h200_image_env, tmp_path) -> None:  # type: ignore[no-untyped-def]
    directory = str(tmp_path / "compat")
    case.make(directory, real=compat_load.compat_dir())
    env_file = tmp_path / "image.env"
    env_file.write_text(env_file_text(h200_image_env))
    argv = [
        sys.executable,
        "-c",
        _PATCHED_MAIN,
        directory,
        "check",
        "--root",
        h200_template,
        "--env-file",
        str(env_file),
    ]
    proc = subprocess.run(argv, capture_output=True, env=_environ(tmp_path), cwd=str(tmp_path), timeout=TIMEOUT)
    run = Run(tuple(argv), proc.returncode, proc.stdout, proc.stderr, 0.0)
    assert_clean(run)
    if case.exit_code == 0:  # the GPU table alone: a recorded reason, and the report
        assert run.returncode == 0, run.err
        assert case.message in run.out
        assert_categories(run.out)
        return
    assert run.returncode == 3, (run.returncode, run.err, run.out)
    assert run.out == ""
    lines = run.err.strip().splitlines()
    assert len(lines) == 1 and case.message in lines[0], lines


# --- the env file --------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ENV_FILE_FAULTS, ids=[c.id for c in ENV_FILE_FAULTS])
def test_bad_env_file_subprocess(case, h200_template: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "image.env")
    case.make(path)
    run = cudadoctor("check", "--root", h200_template, "--env-file", path, tmp_path=tmp_path)
    assert_clean(run)
    assert run.returncode == 2, run.err
    assert run.out == ""
    lines = run.err.strip().splitlines()
    assert len(lines) == 1 and case.message in lines[0], lines
    assert "SECRETKEY" not in run.err + run.out


# --- the live machine: what only a real process shows ---------------------------------------------------


def _nvml_loads() -> bool:
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return False
    return True


def test_environment_not_utf8_live(tmp_path) -> None:
    """os.environ holds undecodable bytes as surrogate escapes: the report is still valid UTF-8, on stdout
    and in a file (``--output`` failed with exit 3 before)."""
    env = {k.encode(): v.encode() for k, v in _environ(tmp_path).items()}
    env[b"LD_LIBRARY_PATH"] = b"/opt/\xff\xfe/lib:/usr/lib"
    env[b"NCCL_SOCKET_IFNAME"] = b"eth\xff"
    text, js = text_and_json("check", tmp_path=tmp_path, env=env)
    for run in (text, js):
        assert_clean(run)
        assert run.returncode in (0, 1), run.err
    doc = json.loads(js.out)
    values = {e["name"]: e["value"] for e in doc["facts"]["host"]["env"]}
    assert values["NCCL_SOCKET_IFNAME"].startswith("eth")
    out = tmp_path / "report.json"
    run = cudadoctor("check", "-f", "json", "-o", str(out), tmp_path=tmp_path, env=env)
    assert_clean(run)
    assert run.returncode in (0, 1), run.err
    json.loads(out.read_bytes().decode("utf-8"))


def test_terminal_that_cannot_show_the_marks_live(tmp_path) -> None:
    """An ASCII-only stdout (PYTHONIOENCODING=ascii, old locales): the report is printed, not exit 3."""
    run = cudadoctor("check", tmp_path=tmp_path, env=_environ(tmp_path, PYTHONIOENCODING="ascii"))
    assert_clean(run)
    assert run.returncode in (0, 1), run.err
    run.stdout.decode("ascii")
    assert_categories(run.out)


def test_home_and_path_unset_live(tmp_path) -> None:
    """No HOME (the redactor and the cache directory fall back to the password database) and no PATH."""
    env = {k: v for k, v in _environ(tmp_path).items() if k not in ("HOME", "PATH", "XDG_CACHE_HOME")}
    text, js = text_and_json("check", tmp_path=tmp_path, env=env)
    for run in (text, js):
        assert_clean(run)
        assert run.returncode in (0, 1), run.err
    assert_categories(text.out)
    assert tuple(s["category"] for s in json.loads(js.out)["summary"]) == CATEGORY_KEYS


@pytest.mark.skipif(_nvml_loads(), reason="NVML answers on this machine: nvidia-smi is never run")
def test_nvidia_smi_version_mismatch_live(tmp_path) -> None:
    """A real nvidia-smi on PATH that fails the way a driver upgrade without reboot makes it fail."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\necho 'Failed to initialize NVML: Driver/library version mismatch'\n"
        "echo 'NVML library version: 580.159'\nexit 18\n"
    )
    script.chmod(0o755)
    env = _environ(tmp_path, PATH=f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    text, js = text_and_json("check", tmp_path=tmp_path, env=env)
    for run in (text, js):
        assert_clean(run)
        assert run.returncode in (0, 1), run.err
    assert_categories(text.out)
    messages = [e["message"] for e in json.loads(js.out)["facts"]["errors"]]
    assert any("nvidia-smi: Failed to initialize NVML: Driver/library version mismatch" in m for m in messages)
