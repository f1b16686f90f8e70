"""The command-line conventions users expect (issue #13): -h, "did you mean", one vocabulary for the host,
a quiet end on a closed pipe, --python validated, assumed facts shown as assumed, --require judged as a job
would need it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from cudadoctor.app import build_report
from cudadoctor.assume import apply_assumptions
from cudadoctor.checks.engine import run_checks
from cudadoctor.cli import app
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.codec import facts_from_json
from cudadoctor.facts.model import EnvVar, ProbeError
from cudadoctor.report.options import RenderOptions
from cudadoctor.report.text import render_text

SNAPSHOT = os.path.join(os.path.dirname(__file__), "fixtures", "h200-device", "snapshot.json")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
cli = CliRunner()


def run(*args: str):
    return cli.invoke(app, list(args))


def _h200():
    with open(SNAPSHOT, encoding="utf-8") as handle:
        return facts_from_json(handle.read(), origin=SNAPSHOT)


# --- -h and did you mean -----------------------------------------------------------------------------


@pytest.mark.parametrize("args", [["-h"], ["check", "-h"], ["suggest", "-h"], ["update", "-h"]])
def test_short_help(args):
    result = run(*args)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Usage:") and result.stdout == run(*args[:-1], "--help").stdout


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["chek"], "Did you mean 'check'?"),
        (["suggest", "-t", "trch", "--no-probe"], "did you mean 'torch'?"),
        (["explain", "CD9011"], "did you mean 'CD901'?"),
        (["check", "--from", SNAPSHOT, "--ignore", "requirments-met"], "did you mean 'requirements-met'?"),
        (["check", "--from", SNAPSHOT, "--gpu", "H1000"], "did you mean 'H100'?"),
        (["suggest", "-t", "torch", "--no-probe", "--gpu", "RTX 4900"], "did you mean 'RTX 4090'?"),
    ],
)
def test_did_you_mean(args, hint):
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert hint in result.stderr


def test_no_guess_for_a_name_far_from_any():
    result = run("check", "--from", SNAPSHOT, "--gpu", "Voodoo 3")
    assert result.exit_code == 2 and "did you mean" not in result.stderr


# --- one vocabulary for the host ----------------------------------------------------------------------


def test_driver_and_gpu_mean_the_same_in_check_and_suggest():
    new = run("check", "--from", SNAPSHOT, "--driver", "535.104.05", "--gpu", "H100", "-f", "json")
    old = run("check", "--from", SNAPSHOT, "--assume-driver", "535.104.05", "--assume-gpu", "H100", "-f", "json")
    assert new.exit_code == old.exit_code
    assert json.loads(new.stdout)["facts"]["driver"] == json.loads(old.stdout)["facts"]["driver"]
    assert json.loads(new.stdout)["facts"]["driver"]["version"] == "535.104.05"
    plan = ["suggest", "-t", "torch", "--no-probe", "-f", "json"]
    a = run(*plan, "--driver", "535.104.05", "--gpu", "H100")
    b = run(*plan, "--assume-driver", "535.104.05", "--assume-gpu", "H100")
    assert a.exit_code == b.exit_code == 0, a.output + b.output
    assert a.stdout == b.stdout and "535.104.05" in a.stdout


# --- a closed pipe ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args", [["list-checks"], ["check", "--from", SNAPSHOT, "-v"], ["--version"], ["suggest", "--help"]]
)
def test_closed_pipe_ends_quietly(args):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte, as after `| head -1` has read its line
    env = dict(os.environ, PYTHONPATH=REPO)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "cudadoctor", *args], stdout=write_end, stderr=subprocess.PIPE, env=env, timeout=60
        )
    finally:
        os.close(write_end)
    assert proc.stderr == b""
    assert proc.returncode == 141  # as a process ended by SIGPIPE: 128 + 13


@pytest.mark.parametrize(
    "args", [["list-checks"], ["check", "--from", SNAPSHOT], ["explain", "CD304"], ["--version"], ["compare", "--help"]]
)
def test_closed_stdout_ends_quietly_as_a_closed_pipe(args):
    """Issue #27: stdout closed before the start (`>&-`, Python's sys.stdout is None) was "internal error:
    'NoneType' object has no attribute 'flush'", exit 3; typer's own output (--help, --version) ended 1 on EPIPE."""
    proc = _with_closed(">&-", args)
    assert proc.stderr == b""
    assert proc.returncode == 141


def _with_closed(redirect: str, args: list[str]) -> subprocess.CompletedProcess[bytes]:
    """cudadoctor started by a shell with one stream closed (``>&-`` or ``2>&-``), as a user's shell does it."""
    env = dict(os.environ, PYTHONPATH=REPO)
    script = f'"$0" -m cudadoctor "$@" {redirect}'
    argv = ["/bin/sh", "-c", script, sys.executable, *args]
    return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, env=env, timeout=60)


def test_closed_stderr_keeps_errors_off_stdout():
    proc = _with_closed("2>&-", ["check", "--from", "/nonexistent"])
    assert proc.returncode == 2 and proc.stdout == b""


# --- --python -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("/nonexistent/python", "no such file"),
        ("/etc/hostname", "not a Python interpreter"),
        ("3.11", "not a version"),
    ],
)
def test_python_option_is_validated(value, message):
    result = run("check", "--python", value)
    assert result.exit_code == 2, result.output
    assert message in result.stderr and "No issues found" not in result.stdout


def test_python_option_a_plain_directory_is_refused(tmp_path):
    result = run("snapshot", "--python", str(tmp_path))
    assert result.exit_code == 2 and "without bin/python" in result.stderr


def test_python_option_a_venv_directory_means_its_interpreter(tmp_path):
    from cudadoctor.pythonarg import resolve_python

    (tmp_path / "bin").mkdir()
    os.symlink(sys.executable, tmp_path / "bin" / "python")
    assert resolve_python(str(tmp_path)) == os.path.join(str(tmp_path), "bin/python")
    assert resolve_python(str(tmp_path / "bin" / "python")) == str(tmp_path / "bin" / "python")


# --- how the report says things -----------------------------------------------------------------------


def _text(facts, *, verbose=False, snapshot=False, requirements=()):
    matrix = CompatMatrix()
    findings = run_checks(facts, matrix, requirements=requirements)
    report = build_report(facts, findings, matrix)
    return render_text(report, RenderOptions(verbose=verbose, from_snapshot=snapshot))


def test_assumed_driver_is_shown_as_assumed_not_as_unreadable():
    # A build stage: no driver here, and the target host's driver given on the command line.
    facts = replace(_h200(), driver=None, errors=(ProbeError("driver", "no NVIDIA driver found"),))
    text = _text(apply_assumptions(facts, driver="580.95.05"))
    line = next(x for x in text.splitlines() if "NVIDIA driver" in x)
    assert line.startswith("[✓]") and "(assumed: --assume-driver)" in line
    assert "could not read" not in text
    assert "not read here: no NVIDIA driver found" in _text(apply_assumptions(facts, driver="580.95.05"), verbose=True)


def test_a_run_that_assumes_nothing_does_not_import_the_assumptions():
    code = (
        "import sys; from cudadoctor.app import FactSource, gather; "
        f"gather(FactSource(from_file={SNAPSHOT!r}), print); print('cudadoctor.assume' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split()[-1:] == ["False"]


def test_verbose_snapshot_says_it_is_a_snapshot():
    result = run("check", "--from", SNAPSHOT, "-v")
    assert "(a snapshot)" in result.stdout.splitlines()[0] and "(live)" not in result.stdout


def test_long_values_are_folded_in_verbose():
    long_value = "cuda>=13.0 " + " ".join(f"brand=tesla,driver>={n},driver<{n + 1}" for n in range(500, 600))
    facts = _h200()
    facts = replace(facts, host=replace(facts.host, env=(EnvVar("NVIDIA_REQUIRE_CUDA", long_value),)))
    text = _text(facts, verbose=True)
    line = next(x for x in text.splitlines() if "NVIDIA_REQUIRE_CUDA=" in x)
    assert len(line) < 400 and "more characters; --format json has all" in line


def test_require_has_its_own_category():
    text = _text(_h200(), requirements=("torch>=99",))
    assert "[✗] Requirements (--require): not all met" in text
    assert "CD901" in text.split("Requirements (--require)")[1]
    assert "CD901" not in text.split("Requirements (--require)")[0]
    assert "Requirements" not in _text(_h200())  # no --require, no category


def test_require_a_misspelt_package_is_never_a_pip_command():
    text = _text(_h200(), requirements=("torhc>=2.5", "flubberwidget"))
    assert "pip install" not in text
    assert "did you mean 'torch'?" in text and "'flubberwidget' is not a package cudadoctor knows" in text
    known = _text(_h200(), requirements=("vllm>=0.9",))
    assert "$ python -m pip install 'vllm>=0.9'" in known


def test_require_prints_no_install_compat_data_says_has_no_wheel():
    # torch 2.1.0 has no wheel for the H200's Python 3.12 (compat/torch.toml): `pip install torch==2.1.0` would
    # fail there ("No matching distribution"), so no command is printed and the text says why
    findings = {f.code: f for f in run_checks(_h200(), CompatMatrix(), requirements=("torch==2.1.0",))}
    remediation = findings["CD901"].remediation
    assert remediation is not None and remediation.commands == ()
    assert "torch 2.1.0 has no wheel for Python 3.12" in remediation.text


@pytest.mark.parametrize(
    ("driver", "requirement", "met"),
    [
        ("535.104.05", "cuda>=12.4", True),  # CUDA 12.2 driver: 12.4 code runs by minor-version compatibility
        ("535.104.05", "cuda>=13.0", False),  # a new major needs a new driver
        ("535.104.05", "cuda==11.8", True),  # older CUDA code runs on a newer driver
        ("450.80.02", "cuda>=12.0", False),  # below CUDA 12's floor (525.60.13)
    ],
)
def test_require_cuda_means_this_machine_runs_that_code(driver, requirement, met):
    facts = apply_assumptions(_h200(), driver=driver)
    findings = {f.code: f for f in run_checks(facts, CompatMatrix(), requirements=(requirement,))}
    assert (findings["CD901"].status.value == "ok") is met, findings["CD901"]


def test_an_error_naming_a_path_with_escapes_stays_one_inert_line(tmp_path):
    """Issue #27: an error line carried the path as given: ESC and a newline reached the terminal and forged a line."""
    bad = str(tmp_path / "x\x1b[2J\nforged line")
    proc = subprocess.run(
        [sys.executable, "-m", "cudadoctor", "check", "--from", bad],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=REPO),
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "\x1b" not in proc.stderr and "\\x1b[2J\\nforged line" in proc.stderr
