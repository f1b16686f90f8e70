"""The benchmark runs and prints its breakdown (a smoke test: no timing is asserted; figures vary by machine)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SNAPSHOT = os.path.join(REPO, "tests", "fixtures", "h200-device", "snapshot.json")


def test_bench_prints_the_breakdown():
    proc = subprocess.run(
        [sys.executable, os.path.join(REPO, "bench", "bench_check.py"), "--runs", "1", "--from", SNAPSHOT],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    for part in (
        "interpreter start",
        "imports",
        "probes",
        "checks",
        "render",
        "cudadoctor check",
        "cudadoctor check, cold",
    ):
        assert re.search(rf"^{part} +\d+\.\d{{3}}s$", proc.stdout, re.MULTILINE), (part, proc.stdout)
    assert re.search(r"^check max RSS +\d+\.\d MiB$", proc.stdout, re.MULTILINE)
    assert "collect_env" in proc.stdout  # measured where torch is installed, else said why not


def test_phases_are_the_same_steps_as_the_command():
    """bench/phases.py gives the report ``check --from`` prints (so its phases time the real work)."""
    env = dict(os.environ, PYTHONPATH=REPO, NO_COLOR="1")
    phases = subprocess.run(
        [sys.executable, os.path.join(REPO, "bench", "phases.py"), "--from", SNAPSHOT, "--print"],
        capture_output=True, text=True, timeout=120, env=env, check=True,
    ).stdout  # fmt: skip
    command = subprocess.run(
        [sys.executable, "-m", "cudadoctor", "check", "--from", SNAPSHOT],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    ).stdout  # fmt: skip
    assert phases.split("\n{")[0] == command.rstrip("\n")


def test_suggest_bench_prints_each_command_and_the_aim():
    proc = subprocess.run(
        [sys.executable, os.path.join(REPO, "bench", "bench_suggest.py"), "--runs", "1"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^torch --matrix, GTX 1080 Ti on 580 +\d+\.\d{3}s$", proc.stdout, re.MULTILINE), proc.stdout
    assert re.search(r"^slowest \d+\.\d{3}s; aim 0\.3s: (met|missed)$", proc.stdout, re.MULTILINE)
