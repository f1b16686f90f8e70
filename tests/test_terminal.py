"""Terminal conventions as pip, uv and git have them (issue #30): --color/--no-color anywhere, NO_COLOR,
FORCE_COLOR, TERM=dumb, -V, shell completion, wrapping at the terminal's width, ASCII stand-ins that keep every
mark distinct, errors on stderr, a compact suggest."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from cudadoctor import __version__
from cudadoctor.cli import app
from cudadoctor.commands import take_color_options
from cudadoctor.errors import UsageError
from cudadoctor.report.options import RenderOptions
from cudadoctor.report.text import render_text
from cudadoctor.terminal import ASCII_ERRORS, ColorMode, color_mode, set_color_mode, wants_color
from tests.test_cli_conventions import _h200

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SNAPSHOT = os.path.join(REPO, "tests", "fixtures", "h200-device", "snapshot.json")


@pytest.fixture(autouse=True)
def _auto_mode():
    set_color_mode(ColorMode.AUTO)
    yield
    set_color_mode(ColorMode.AUTO)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


# --- colour ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "tty", "expected"),
    [
        ({}, True, True),
        ({}, False, False),
        ({"NO_COLOR": "1"}, True, False),
        ({"NO_COLOR": ""}, True, True),  # no-color.org: set to the empty string is not set
        ({"TERM": "dumb"}, True, False),
        ({"FORCE_COLOR": "1"}, False, True),
        ({"FORCE_COLOR": ""}, False, False),
        ({"CLICOLOR_FORCE": "1"}, False, True),
        ({"CLICOLOR_FORCE": "0"}, False, False),
        ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False, False),  # NO_COLOR wins, as in uv
        ({"FORCE_COLOR": "1", "TERM": "dumb"}, False, True),
    ],
)
def test_auto_colour_follows_the_environment(env, tty, expected):
    stream = _Tty() if tty else io.StringIO()
    assert wants_color(stream, env) is expected


@pytest.mark.parametrize(("mode", "expected"), [(ColorMode.ALWAYS, True), (ColorMode.NEVER, False)])
def test_an_explicit_mode_overrides_the_environment(mode, expected):
    assert wants_color(io.StringIO(), {"NO_COLOR": "1"} if expected else {"FORCE_COLOR": "1"}, mode) is expected


@pytest.mark.parametrize(
    ("argv", "rest", "mode"),
    [
        (["check", "--no-color"], ["check"], ColorMode.NEVER),
        (["--color", "always", "check", "-v"], ["check", "-v"], ColorMode.ALWAYS),
        (["check", "--color=never", "-f", "json"], ["check", "-f", "json"], ColorMode.NEVER),
        (["--color", "never", "check", "--color", "ALWAYS"], ["check"], ColorMode.ALWAYS),  # the last one wins
        (["why", "--", "--no-color"], ["why", "--", "--no-color"], ColorMode.AUTO),  # past -- is an argument
    ],
)
def test_colour_options_are_taken_anywhere(argv, rest, mode):
    assert take_color_options(argv) == rest
    assert color_mode() is mode


@pytest.mark.parametrize("argv", [["check", "--color", "blue"], ["check", "--color"], ["--color="]])
def test_a_bad_colour_is_a_usage_error(argv):
    with pytest.raises(UsageError, match="expected auto, always or never"):
        take_color_options(argv)


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE")}
    full.update(env or {})
    encoding = full.get("PYTHONIOENCODING", "utf-8")
    return subprocess.run(
        [sys.executable, "-m", "cudadoctor", *args],
        capture_output=True, text=True, encoding=encoding, env=full, cwd=REPO, timeout=60,
    )  # fmt: skip


def test_colour_on_a_pipe_only_when_forced():
    plain = _run("check", "--from", SNAPSHOT)
    forced = _run("check", "--from", SNAPSHOT, "--color", "always")
    by_env = _run("--color", "auto", "check", "--from", SNAPSHOT, env={"FORCE_COLOR": "1"})
    assert plain.returncode == forced.returncode == by_env.returncode == 0
    assert "\x1b[" not in plain.stdout
    assert "\x1b[32m[✓]" in forced.stdout
    assert by_env.stdout == forced.stdout


def _on_a_terminal(*args: str, env: dict[str, str]) -> str:
    """The output of ``cudadoctor ARGS`` run on a pseudo-terminal."""
    main, secondary = pty.openpty()
    full = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE")}
    full.update(env)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cudadoctor", *args], stdout=secondary, stderr=subprocess.DEVNULL, env=full, cwd=REPO
    )
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=60)
    os.close(main)
    return b"".join(chunks).decode("utf-8", "replace")


def test_a_terminal_gets_colour_unless_told_otherwise():
    assert "\x1b[" in _on_a_terminal("check", "--from", SNAPSHOT, env={"TERM": "xterm"})
    assert "\x1b[" not in _on_a_terminal("check", "--from", SNAPSHOT, env={"TERM": "dumb"})
    assert "\x1b[" not in _on_a_terminal("check", "--from", SNAPSHOT, env={"TERM": "xterm", "NO_COLOR": "1"})
    assert "\x1b[" not in _on_a_terminal("check", "--no-color", "--from", SNAPSHOT, env={"TERM": "xterm"})


def test_a_terminal_wraps_findings_but_never_a_command():
    text = _on_a_terminal(
        "check", "--from", SNAPSHOT, "--driver", "535.104.05", env={"TERM": "dumb", "COLUMNS": "72"}
    ).replace("\r\n", "\n")
    lines = text.splitlines()
    assert any(line.lstrip().startswith("$ ") and len(line) > 72 for line in lines) or all(
        len(line) <= 72 for line in lines if line.lstrip().startswith("$ ")
    )
    findings = [line for line in lines if line.startswith("    ") and not line.lstrip().startswith("$ ")]
    assert findings, text
    # a finding's text wraps at spaces, so only a single word longer than the room (a URL) may pass the edge
    assert all(len(line) <= 72 or " " not in line.strip() for line in findings), text


# --- the text report's wrapping (in process) -----------------------------------------------------------------


def _report_535():
    from cudadoctor.app import build_report
    from cudadoctor.assume import apply_assumptions
    from cudadoctor.checks.engine import run_checks
    from cudadoctor.data import CompatMatrix

    facts = apply_assumptions(_h200(), driver="535.104.05")
    matrix = CompatMatrix()
    return build_report(facts, run_checks(facts, matrix), matrix)


def test_width_wraps_finding_lines_under_their_indent():
    report = _report_535()
    wide = render_text(report, RenderOptions())
    narrow = render_text(report, RenderOptions(width=60))
    assert max(len(line) for line in wide.splitlines()) > 60
    assert len(narrow.splitlines()) > len(wide.splitlines())
    for line in narrow.splitlines():
        if len(line) > 60 and not line.lstrip().startswith("$ "):
            # wrapped at spaces: only one word longer than the room (a URL) passes the edge
            assert " " not in line.strip(), line
    # the words are the same, only the line breaks differ
    assert narrow.split() == wide.split()
    commands = [line for line in wide.splitlines() if line.lstrip().startswith("$ ")]
    assert commands and all(c in narrow.splitlines() for c in commands)


# --- ASCII stand-ins ---------------------------------------------------------------------------------------


def test_ascii_stand_ins_keep_every_mark_distinct():
    marks = "[✓] [✗] [!] [?] [-] • ✓ ✗"
    shown = marks.encode("ascii", ASCII_ERRORS).decode("ascii")
    assert shown == "[+] [x] [!] [?] [-] * + x"
    assert "\udcff".encode("ascii", ASCII_ERRORS) == b"?"  # a surrogate escape from a non-UTF-8 name


def test_an_ascii_terminal_never_shows_an_error_as_could_not_judge():
    broken = _run("check", "--from", SNAPSHOT, "--driver", "535.104.05", env={"PYTHONIOENCODING": "ascii"})
    assert broken.returncode == 1
    assert broken.stdout.isascii()
    assert "[x] NVIDIA driver" in broken.stdout
    assert "x cudadoctor found 1 error" in broken.stdout
    healthy = _run("check", "--from", SNAPSHOT, env={"PYTHONIOENCODING": "latin-1"})
    assert "[+] GPUs" in healthy.stdout and "[?]" not in healthy.stdout


# --- -V, completion, errors on stderr ---------------------------------------------------------------------


def test_dash_capital_v_prints_the_version():
    result = _run("-V")
    assert result.returncode == 0 and result.stdout.strip() == f"cudadoctor {__version__}"


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish", "powershell"])
def test_completion_prints_a_script_that_names_the_protocol(shell):
    result = _run("completion", shell)
    assert result.returncode == 0
    assert "_CUDADOCTOR_COMPLETE" in result.stdout and "cudadoctor" in result.stdout


def test_completion_answers_a_shell_that_asks():
    env = {"_CUDADOCTOR_COMPLETE": "complete_bash", "COMP_WORDS": "cudadoctor ch", "COMP_CWORD": "1"}
    assert _run(env=env).stdout.split() == ["check"]
    env = {"_CUDADOCTOR_COMPLETE": "complete_bash", "COMP_WORDS": "cudadoctor check --format ", "COMP_CWORD": "3"}
    assert {"text", "json", "markdown"} <= set(_run(env=env).stdout.split())


def test_completion_of_an_unknown_shell_is_a_usage_error():
    result = _run("completion", "tcsh")
    assert result.returncode == 2 and result.stdout == ""


def test_usage_that_could_not_look_says_so_on_stderr(monkeypatch):
    import cudadoctor.usage

    monkeypatch.setattr(cudadoctor.usage, "usage_command", lambda *a: ("Could not judge GPU use: no NVML\n", 3))
    result = CliRunner().invoke(app, ["usage"])
    assert result.exit_code == 3
    assert result.stdout == "" and "Could not judge GPU use" in result.stderr


# --- suggest, compact by default ------------------------------------------------------------------------------


def test_suggest_shows_the_first_plan_whole_and_one_line_for_the_others():
    args = ("suggest", "--target", "vllm", "--gpu", "H100", "--driver", "550.54.15", "--python", "3.11")
    compact, verbose = _run(*args), _run(*args, "-v")
    assert compact.returncode == verbose.returncode == 0
    plans = compact.stdout.count("\nPlan ")
    assert plans >= 2 and verbose.stdout.count("\nPlan ") == plans
    assert compact.stdout.count("  why: ") < verbose.stdout.count("  why: ")
    first = compact.stdout.split("\nPlan 2")[0]
    assert first in verbose.stdout  # the first plan is whole
    assert "-v shows the reasons" in compact.stdout
    # every plan still has its install command
    assert compact.stdout.count("$ python -m pip install") == plans
