"""The typer-free fast path of ``cudadoctor check`` builds exactly the options typer builds."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from cudadoctor import cli
from cudadoctor.commands import CheckOptions
from cudadoctor.entry import fast_check_options

FAST_FORMS = [
    ["check"],
    ["check", "--no-health"],
    ["check", "-v"],
    ["check", "--verbose", "--strict"],
    ["check", "--fail-on-unknown", "--no-redact"],
    ["check", "-f", "json"],
    ["check", "--format", "markdown", "--no-health"],
    ["check", "--format=github", "-v"],
    ["check", "-f", "json", "-f", "text"],
    ["check", "-f", "slurm"],
    ["check", "--format", "npd", "--strict"],
    ["check", "--format=health-json"],
    ["check", "--root-kind", "host"],
    ["check", "--root-kind=image", "-f", "json"],
    ["check", "--no-health", "--root-kind", "auto"],
]


def _typer_options(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> CheckOptions:
    seen: list[CheckOptions] = []

    def capture(options: CheckOptions) -> int:
        seen.append(options)
        return 0

    monkeypatch.setattr(cli, "check_command", capture)
    result = CliRunner().invoke(cli.app, argv)
    assert result.exit_code == 0, result.output
    (options,) = seen
    return options


@pytest.mark.parametrize("argv", FAST_FORMS, ids=" ".join)
def test_fast_path_options_equal_typer(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert fast_check_options(argv) == _typer_options(argv, monkeypatch)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["suggest"],
        ["check", "-h"],
        ["check", "--help"],
        ["check", "--bogus"],
        ["check", "-f", "xml"],
        ["check", "-f"],
        ["check", "--format="],
        ["check", "--root", "/tmp"],
        ["check", "--root-kind"],
        ["check", "--root-kind", "vm"],
        ["check", "--root-kind=", "-v"],
        ["check", "--select", "CD1"],
        ["--version"],
    ],
    ids=lambda a: " ".join(a) or "(none)",
)
def test_other_forms_go_to_typer(argv: list[str]) -> None:
    assert fast_check_options(argv) is None


@pytest.mark.parametrize(
    ("argv", "patched"),
    [
        (["check", "--no-health"], "check_command = lambda options: 0"),
        (["suggest", "torch"], "suggest_command = lambda *a, **k: 0"),
    ],
    ids=["check", "suggest"],
)
def test_fast_path_never_imports_typer(argv: list[str], patched: str) -> None:
    """The point of the fast path: ``cudadoctor check`` and ``suggest TARGET`` run without typer or click loaded, and
    without the cyclic garbage collector (one report, then exit: ~9 ms of a warm check)."""
    program = (
        "import gc, sys\n"
        "import cudadoctor.commands as c\n"
        f"c.{patched}\n"
        f"sys.argv = ['cudadoctor', *{argv!r}]\n"
        "from cudadoctor.entry import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    print(exc.code, 'typer' in sys.modules, 'click' in sys.modules, gc.isenabled())\n"
    )
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["0", "False", "False", "False"]


def test_fast_path_errors_exit_like_typer_path(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cudadoctor error on the fast path is one line and its exit code, as through typer."""
    from cudadoctor import entry
    from cudadoctor.errors import UsageError

    def fail(options: CheckOptions) -> int:
        raise UsageError("the env file is unreadable")

    started: list[bool] = []
    monkeypatch.setattr("cudadoctor.commands.check_command", fail)
    monkeypatch.setattr("cudadoctor.probes.native.start_early", lambda *, health: started.append(health))
    monkeypatch.setattr(sys, "argv", ["cudadoctor", "check"])
    with pytest.raises(SystemExit) as exit_info:
        entry.main()
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == "cudadoctor: error: the env file is unreadable"
    assert started == [True]  # the NVML queries were started before the checks were imported


def test_the_command_exits_hard_with_its_code_and_all_its_output(tmp_path) -> None:
    """``python -m cudadoctor check`` ends with os._exit after flushing: the same output and exit code as the
    ordinary exit (a report to a pipe, and a usage error's exit 2 from an invalid settings file)."""
    hard = subprocess.run(
        [sys.executable, "-m", "cudadoctor", "check", "--no-health", "-f", "json"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    soft = subprocess.run(
        [sys.executable, "-c", "import sys; from cudadoctor.entry import main; sys.argv[1:] = "
         "['check', '--no-health', '-f', 'json']; main()"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert hard.returncode == soft.returncode
    assert hard.stdout.endswith("}\n") and len(hard.stdout) > 1000
    (tmp_path / ".cudadoctor.toml").write_text("this is not toml = = =\n", encoding="utf-8")
    broken = subprocess.run(
        [sys.executable, "-m", "cudadoctor", "check"], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert broken.returncode == 2
    assert broken.stderr.startswith("cudadoctor: error:") and "not valid TOML" in broken.stderr


@pytest.mark.parametrize(
    ("argv", "parsed"),
    [
        (["suggest", "torch"], ("torch", "text", False)),
        (["suggest", "--target", "vllm", "-f", "json"], ("vllm", "json", False)),
        (["suggest", "--target=jax", "--format=commands", "-v"], ("jax", "commands", True)),
        (["suggest", "-t", "torch>=2.6", "--format", "dockerfile"], ("torch>=2.6", "dockerfile", False)),
        (["suggest"], None),
        (["suggest", "torch", "vllm"], None),
        (["suggest", "torch", "--target", "vllm"], None),
        (["suggest", "torch", "--driver", "535"], None),
        (["suggest", "torch", "--gpu", "H100"], None),
        (["suggest", "torch", "--no-probe"], None),
        (["suggest", "--format", "markdown", "torch"], None),
        (["suggest", "--matrix", "torch"], None),
        (["suggest", "-t"], None),
        (["suggest", "-t=torch"], None),
        (["suggest", "--target=", "torch"], None),  # an empty value is typer's to refuse, not the next word
        (["suggest", "torch", "--format=", "json"], None),
        (["suggest", "torch", "-f", "yaml"], None),
        (["check", "torch"], None),
    ],
)
def test_fast_suggest_takes_only_the_common_forms(argv: list[str], parsed) -> None:
    from cudadoctor.entry import fast_suggest_args

    assert fast_suggest_args(argv) == parsed


@pytest.mark.parametrize(
    "args",
    [
        ["suggest", "torch"],
        ["suggest", "--target", "vllm", "-f", "json"],
        ["suggest", "jax", "--format=commands", "-v"],
        ["suggest", "torch==1.0.0", "-f", "dockerfile"],
        ["suggest", "nonsense"],
        ["suggest", "--target=", "torch"],
    ],
    ids=" ".join,
)
def test_fast_suggest_prints_and_exits_as_typer_does(args: list[str], tmp_path) -> None:
    """The fast path and typer run one suggest_command: same output, errors and exit code."""
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path), NO_COLOR="1")
    fast = subprocess.run(
        [sys.executable, "-m", "cudadoctor", *args], capture_output=True, text=True, timeout=120, env=env
    )
    program = "import sys; sys.argv = ['cudadoctor', *sys.argv[1:]]; from cudadoctor.cli import main; main()"
    slow = subprocess.run([sys.executable, "-c", program, *args], capture_output=True, text=True, timeout=120, env=env)
    assert (fast.returncode, fast.stdout, fast.stderr) == (slow.returncode, slow.stdout, slow.stderr)
    assert fast.stdout or fast.stderr
