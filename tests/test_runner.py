"""SubprocessRunner: argv only, a timeout that kills the process group, errors as values."""

from __future__ import annotations

import sys
import time

from cudadoctor.runner import NullRunner, SubprocessRunner


def test_captures_output_and_status():
    result = SubprocessRunner().run([sys.executable, "-c", "import sys; print('hi'); sys.exit(3)"])
    assert result.returncode == 3
    assert result.stdout == "hi\n"
    assert not result.ok
    assert result.describe() == "exited with status 3: hi"


def test_missing_command_is_a_value_not_an_exception():
    result = SubprocessRunner().run(["/nonexistent/nvidia-smi"])
    assert result.error == "not found"
    assert result.returncode is None


def test_timeout_kills_the_whole_process_group():
    start = time.monotonic()
    # The child spawns a grandchild that would keep the pipe open; both must die at the timeout.
    code = (
        "import subprocess,sys,time; "
        "subprocess.Popen([sys.executable,'-c','import time; time.sleep(30)']); time.sleep(30)"
    )
    result = SubprocessRunner().run([sys.executable, "-c", code], timeout=0.5)
    assert result.error == "timed out after 0.5 s"
    assert time.monotonic() - start < 10


def test_no_shell_interpretation():
    result = SubprocessRunner().run(["echo", "$HOME; rm -rf /"])
    assert result.stdout.strip() == "$HOME; rm -rf /"


def test_null_runner_runs_nothing():
    result = NullRunner("image roots are never executed").run(["nvidia-smi"])
    assert result.error == "image roots are never executed"
