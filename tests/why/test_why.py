"""``cudadoctor why``: bounded reading, the decision from check's findings, and the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from typer.testing import CliRunner

from cudadoctor.checks.findings import Finding, Status
from cudadoctor.cli import app
from cudadoctor.data import CompatMatrix
from cudadoctor.why.decide import Verdict, diagnose
from cudadoctor.why.matching import recognise
from cudadoctor.why.reading import HEAD_BYTES, TAIL_BYTES, from_argument, from_file

MATRIX = CompatMatrix(cache_dir=False)
H200 = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "h200-deep", "deep-s1.json")


def _finding(code: str, status: Status) -> Finding:
    return Finding(code=code, name=code.lower(), category="driver", status=status, summary="", message=f"{code} msg")


def _answer(text: str, findings: list[Finding], *, deep: bool = False):  # type: ignore[no-untyped-def]
    matches = recognise(from_argument(text).lines, MATRIX.error_messages)
    return diagnose(matches, findings, MATRIX.error_causes, deep=deep, health=False)


INSUFFICIENT = "RuntimeError: CUDA driver version is insufficient for CUDA runtime version"


def test_the_cause_is_the_problem_finding_among_the_causes() -> None:
    findings = [_finding("CD111", Status.FAIL), _finding("CD120", Status.OK), _finding("CD102", Status.OK)]
    answer = _answer(INSUFFICIENT, [*findings, _finding("CD801", Status.NOT_APPLICABLE)])
    assert answer.verdict == Verdict.CAUSE
    assert answer.cause is not None and answer.cause.code == "CD111"


def test_a_problem_outside_the_causes_is_never_named() -> None:
    answer = _answer(INSUFFICIENT, [_finding("CD402", Status.FAIL), _finding("CD111", Status.OK),
                                    _finding("CD120", Status.OK), _finding("CD102", Status.OK)])  # fmt: skip
    assert answer.cause is None
    assert [f.code for f in answer.other_problems] == ["CD402"]


def test_could_not_judge_leaves_the_cause_open_with_what_decides() -> None:
    answer = _answer(INSUFFICIENT, [_finding("CD111", Status.UNKNOWN), _finding("CD120", Status.OK),
                                    _finding("CD102", Status.OK)])  # fmt: skip
    assert answer.verdict == Verdict.UNDECIDED
    assert answer.remaining[0].cause.id == "driver-too-old"
    assert answer.decide == answer.remaining[0].cause.decide


def test_runtime_checks_without_deep_stay_open_and_deep_rules_them_out() -> None:
    findings = [_finding("CD111", Status.OK), _finding("CD120", Status.OK), _finding("CD102", Status.OK),
                _finding("CD801", Status.NOT_APPLICABLE)]  # fmt: skip
    shallow = _answer(INSUFFICIENT, findings)
    assert shallow.verdict == Verdict.UNDECIDED and "--deep" in (shallow.decide or "")
    assert _answer(INSUFFICIENT, findings, deep=True).verdict == Verdict.RULED_OUT


def test_an_unknown_error_is_unrecognised() -> None:
    assert _answer("my cat sat on the keyboard", []).verdict == Verdict.UNRECOGNISED


def test_a_long_log_keeps_head_and_tail_and_says_what_it_skipped(tmp_path) -> None:  # type: ignore[no-untyped-def]
    log = tmp_path / "job.log"
    filler = b"step 1 loss 0.5\n" * ((HEAD_BYTES + TAIL_BYTES) // 16 + 100_000)
    log.write_bytes(b"start\n" + filler + b"Failed to initialize NVML: Driver/library version mismatch\n")
    text = from_file(str(log))
    assert text.skipped_bytes > 0 and text.lines[0] == "start"
    assert text.lines[-1].startswith("Failed to initialize NVML")
    assert "skipped" in text.notes[0]
    assert [m.message.id for m in recognise(text.lines, MATRIX.error_messages)] == ["nvml-driver-library-mismatch"]


def test_a_long_line_is_cut() -> None:
    text = from_argument("x" * 100_000)
    assert text.cut_lines == 1 and len(text.lines[0]) == 4096


def test_cli_names_the_cause_on_a_snapshot_as_json() -> None:
    result = CliRunner().invoke(app, ["why", "--from", H200, "-f", "json", INSUFFICIENT])
    document = json.loads(result.stdout)
    assert document["kind"] == "cudadoctor-why" and document["schema_version"] == 1
    assert document["recognised"][0]["id"] == "cuda-insufficient-driver"
    assert result.exit_code == document["report"]["exit_code"]
    # never more than check: the cause, when named, is one of the report's problems
    problems = {f["code"] for f in document["report"]["findings"] if f["status"] in ("fail", "warn")}
    assert document["cause"] is None or document["cause"]["code"] in problems


def test_cli_unrecognised_prints_checks_report() -> None:
    result = CliRunner().invoke(app, ["why", "--from", H200, "step 9 ok", "ValueError: bad shape", "done"])
    assert "does not recognise this error" in result.stdout
    assert "line 2: ValueError: bad shape" in result.stdout
    assert "cudadoctor summary" in result.stdout


def test_cli_text_is_sanitised() -> None:
    result = CliRunner().invoke(app, ["why", "--from", H200, "No CUDA GPUs are available \x1b]0;pwned\x07"])
    assert "\x1b" not in result.stdout and "\\x1b" in result.stdout


def test_cli_usage_errors() -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["why", "--from", H200]).exit_code == 2
    assert runner.invoke(app, ["why", "--from", H200, "--file", "x.log", "error"]).exit_code == 2
    assert runner.invoke(app, ["why", "--from", H200, "--file", "/nonexistent/job.log"]).exit_code == 2
    # why writes text or json: the parser refuses a report format before the body runs
    markdown = runner.invoke(app, ["why", "--from", H200, "-f", "markdown", INSUFFICIENT])
    assert markdown.exit_code == 2 and "markdown" in markdown.output


def test_cli_reads_standard_input() -> None:
    line = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1\n"
    result = CliRunner().invoke(app, ["why", "--from", H200, "--file", "-"], input=line)
    assert "Xid 79" in result.stdout


def test_check_imports_nothing_of_why_but_the_command_declaration() -> None:
    """check's speed: its fast path loads no module of why; through typer only the command's declaration."""
    program = (
        "import sys\n"
        "import cudadoctor.commands as c\n"
        "c.check_command = lambda options: 0\n"
        "sys.argv = ['cudadoctor', *sys.argv[1:]]\n"
        "from cudadoctor.entry import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    print(sorted(m for m in sys.modules if m.startswith('cudadoctor.why')))\n"
    )

    def loaded(*argv: str) -> str:
        run = subprocess.run([sys.executable, "-c", program, *argv], capture_output=True, text=True, timeout=60)
        return run.stdout.strip()

    assert loaded("check", "--no-health") == "[]"
    assert loaded("check", "--from", H200) == "['cudadoctor.why', 'cudadoctor.why.cli']"


def test_health_checks_not_examined_stay_open() -> None:
    xid = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus."
    health = [_finding(c, Status.NOT_APPLICABLE) for c in ("CD150", "CD151", "CD152", "CD153", "CD156", "CD160")]
    unexamined = _answer(xid, health)
    assert unexamined.verdict == Verdict.UNDECIDED
    assert unexamined.remaining[0].cause.id == "gpu-hardware"
    matches = recognise(from_argument(xid).lines, MATRIX.error_messages)
    examined = diagnose(matches, health, MATRIX.error_causes, deep=False, health=True)
    # examined and absent (no GPU at all): only the program-fault family, which no check decides, is left
    assert [s.cause.id for s in examined.remaining] == ["program-fault"]


def test_a_fifo_is_read_to_its_end_and_a_fifo_without_writer_ends(tmp_path) -> None:  # type: ignore[no-untyped-def]
    fifo = tmp_path / "kernel.log"
    os.mkfifo(fifo)
    lines = b"noise\n" * 1000 + b"NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"
    keeper = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # holds the pipe open while the writer fills it
    try:
        writer = os.open(fifo, os.O_WRONLY)
        os.write(writer, lines)
        os.close(writer)
        text = from_file(str(fifo))
    finally:
        os.close(keeper)
    assert text.lines[-1].startswith("NVRM: Xid") and text.read_bytes == len(lines)
    assert from_file(str(fifo)).lines == ()  # no writer: ends at once, never waits


def test_an_endless_stream_is_stopped_and_says_so(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from cudadoctor.why import reading

    monkeypatch.setattr(reading, "STREAM_LIMIT", 8 << 20)
    endless = iter(lambda: b"y\n" * (1 << 19), b"")
    text = reading._from_stream(endless, "standard input")
    assert text.stopped and text.skipped_bytes > 0
    assert any("stopped reading" in n for n in text.notes)
