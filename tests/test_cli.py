"""The command line, end to end: formats, exit codes, one-line errors, image roots, snapshots."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from cudadoctor.cli import app
from tests.h200_fixture import build_tree, h200_env

cli = CliRunner()


@pytest.fixture(scope="module")
def h200_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("h200") / "rootfs"
    root.mkdir()
    build_tree(str(root))
    env_file = root.parent / "image.env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in h200_env().items() if k != "VIRTUAL_ENV"))
    return str(root), str(env_file)


def run(*args: str):
    return cli.invoke(app, list(args))


def test_root_audit_reads_the_image_and_runs_nothing(h200_root):
    root, env_file = h200_root
    result = run("check", "--root", root, "--env-file", env_file, "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    facts = doc["facts"]
    assert doc["kind"] == "cudadoctor-report" and doc["schema_version"] == 2
    assert facts["mode"].startswith("root:")
    # No host facts: no driver calls and no commands; the GPU comes from the image's own /proc copy.
    assert all(r["source"]["kind"] == "file" for r in facts["driver"]["readings"])
    assert [(g["name"], g["compute_capability"], g["source"]["kind"]) for g in facts["gpus"]] == [
        ("NVIDIA H200", "9.0", "file")
    ]
    versions = sorted(c["version"] for c in facts["cudnn"])
    assert versions == ["9.14.0", "9.19.0.56"]
    assert facts["python"]["prefix"] == "/opt/torch/.venv"
    assert facts["packages"]["torch"]["cuda_build"] == "13.0"
    assert {s["category"]: s["status"] for s in doc["summary"]}["tensorrt"] == "absent"


def test_assumed_host_for_an_image(h200_root):
    root, env_file = h200_root
    result = run(
        "check",
        "--root",
        root,
        "--env-file",
        env_file,
        "--assume-driver",
        "550.54.15",
        "--assume-gpu",
        "H100",
        "--assume-gpu",
        "sm_89",
        "--format",
        "json",
    )
    # The image's torch is built for CUDA 13: a 550 driver (CUDA 12.4) cannot run it.
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    facts = doc["facts"]
    # (CD701 cannot tell: the image allows driver 550 with cuda-compat on some brands, and an
    # assumed GPU has no brand.)
    assert [f["code"] for f in doc["findings"] if f["status"] == "fail"] == ["CD111"]
    assert facts["driver"]["version"] == "550.54.15"
    assert facts["driver"]["cuda_api"] == "12.4"
    assert facts["driver"]["readings"][0]["source"] == {"kind": "assumed", "where": "--assume-driver"}
    assert [(g["name"], g["compute_capability"]) for g in facts["gpus"]] == [("H100", "9.0"), ("sm_89", "8.9")]


def test_text_report_is_one_line_per_category(h200_root):
    root, env_file = h200_root
    result = run("check", "--root", root, "--env-file", env_file)
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if line.startswith("[")]
    titles = [line.split("]", 1)[1].split(":", 1)[0].strip() for line in lines]
    assert titles == [
        "Host",
        "NVIDIA driver",
        "GPUs",
        "CUDA toolkit",
        "CUDA from pip wheels",
        "cuDNN",
        "NCCL",
        "TensorRT",
        "Python packages",
    ]
    assert "9.19.0.56 (pip nvidia-cudnn-cu13 pinned by torch)" in result.stdout  # torch 2.11 pins it
    verbose = run("check", "--root", root, "--env-file", env_file, "-v").stdout
    assert len(verbose.splitlines()) > len(result.stdout.splitlines())
    assert "(file: " in verbose or "(metadata: " in verbose


def test_snapshot_and_replay(h200_root, tmp_path):
    root, env_file = h200_root
    out = tmp_path / "facts.json"
    result = run("snapshot", "--root", root, "--env-file", env_file, "-o", str(out))
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["kind"] == "cudadoctor-facts"
    replay = run("check", "--from", str(out), "--format", "json")
    assert replay.exit_code == 0, replay.output
    original = json.loads(out.read_text())["facts"]
    again = json.loads(replay.stdout)["facts"]
    assert again["cudnn"] == original["cudnn"]
    assert again["mode"] == original["mode"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "not JSON"),
        (b"\xff\xfe garbage", "not UTF-8"),
        (b'{"kind": "cudadoctor-facts", "schema_version": 1, "facts": {"host": 3}}', "facts.host: expected an object"),
        (b"[1, 2]", "not a cudadoctor snapshot"),
    ],
    ids=["empty", "binary", "wrong-type", "foreign"],
)
def test_bad_snapshot_is_one_line_and_exit_2(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    result = run("check", "--from", str(path))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_missing_snapshot(tmp_path):
    result = run("check", "--from", str(tmp_path / "nope.json"))
    assert result.exit_code == 2
    assert "cannot read" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--env-file", "x.env"], "use it with --root"),
        (["--root", "/nonexistent-root-dir"], "not a directory"),
        (["--from", "a.json", "--root", "/"], "cannot be combined"),
        (["--assume-driver", "latest"], "expected a driver version"),
        (["--assume-gpu", "Voodoo 5"], "--assume-gpu 'Voodoo 5'"),
    ],
    ids=["env-without-root", "bad-root", "from-and-root", "bad-driver", "bad-gpu"],
)
def test_usage_errors_exit_2_with_one_line(args, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = (
        run("check", *args, "--root", str(tmp_path))
        if "--root" not in args and "--env-file" not in args and "--from" not in args
        else run("check", *args)
    )
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_redaction_by_default_and_no_redact(h200_root, tmp_path):
    root, _ = h200_root
    env_file = tmp_path / "secret.env"
    env_file.write_text("HF_TOKEN=hf_plantedsecret\nPATH=/usr/bin\nNCCL_IB_HCA=mlx5\nCUDA_HOME=/usr/local/cuda\n")
    redacted = run("check", "--root", root, "--env-file", str(env_file), "--format", "json").stdout
    assert "hf_plantedsecret" not in redacted


def test_version_and_help():
    assert run("--version").stdout.startswith("cudadoctor ")
    helptext = run("check", "--help").stdout
    for flag in ("--format", "--from", "--root", "--env-file", "--assume-driver", "--assume-gpu", "--python"):
        assert flag in helptext


def _device_snapshot(tmp_path, **env: str) -> str:
    """The real H200 snapshot with environment variables added."""
    from tests.conftest import fixture_text

    doc = json.loads(fixture_text("h200-device", "snapshot.json"))
    doc["facts"]["host"]["env"] += [{"name": k, "value": v, "claims": None} for k, v in env.items()]
    if "CUDA_VISIBLE_DEVICES" in env:
        doc["facts"]["visible"]["cuda_visible_devices"] = env["CUDA_VISIBLE_DEVICES"]
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_healthy_machine_exits_0_with_no_issues():
    from tests.conftest import fixture_path

    result = run("check", "--from", fixture_path("h200-device", "snapshot.json"))
    assert result.exit_code == 0, result.output
    assert "No issues found" in result.stdout


def test_a_failing_check_exits_1_and_prints_the_fix(tmp_path):
    result = run("check", "--from", _device_snapshot(tmp_path, CUDA_VISIBLE_DEVICES=""))
    assert result.exit_code == 1
    assert "[✗] GPUs:" in result.stdout
    assert "CD104 CUDA_VISIBLE_DEVICES='' hides all 1 GPU(s)" in result.stdout
    assert "$ unset CUDA_VISIBLE_DEVICES" in result.stdout
    assert re.search(r"cudadoctor found 1 error in 1 category \(\d+ passed · \d+ not applicable\)\.", result.stdout)
    doc = json.loads(run("check", "--from", _device_snapshot(tmp_path, CUDA_VISIBLE_DEVICES=""), "-f", "json").stdout)
    assert doc["exit_code"] == 1
    failed = [f for f in doc["findings"] if f["status"] == "fail"]
    assert [(f["code"], f["category"]) for f in failed] == [("CD104", "gpus")]
    assert failed[0]["remediation"]["commands"][0] == "unset CUDA_VISIBLE_DEVICES"


def test_ignore_and_strict(tmp_path):
    snap = _device_snapshot(tmp_path, CUDA_VISIBLE_DEVICES="")
    assert run("check", "--from", snap, "--ignore", "CD104").exit_code == 0
    assert run("check", "--from", snap, "--ignore", "visible-devices-not-empty").exit_code == 0
    warn = _device_snapshot(tmp_path, NVIDIA_DISABLE_REQUIRES="1")
    assert run("check", "--from", warn).exit_code == 0
    assert run("check", "--from", warn, "--strict").exit_code == 1


def test_unknown_code_is_a_usage_error(tmp_path):
    result = run("check", "--select", "CD999")
    assert result.exit_code == 2
    assert "no check has this code" in result.stderr


def test_explain_and_list_checks():
    text = run("explain", "CD102").stdout
    for section in ("What it checks:", "Why it matters:", "How to fix:"):
        assert section in text
    doc = json.loads(run("explain", "no-stub-libcuda", "--format", "json").stdout)
    assert doc["code"] == "CD103" and set(doc["sections"]) == {"What it checks", "Why it matters", "How to fix"}
    listing = json.loads(run("list-checks", "--format", "json").stdout)["checks"]
    assert [c["code"] for c in listing] == sorted(c["code"] for c in listing)
    assert run("explain", "CD1").exit_code == 2


def test_output_file_gets_the_report_and_the_terminal_the_summary(tmp_path):
    from tests.conftest import fixture_path

    out = tmp_path / "report.json"
    result = run("check", "--from", fixture_path("h200-device", "snapshot.json"), "-f", "json", "-o", str(out))
    assert result.exit_code == 0
    assert json.loads(out.read_text())["kind"] == "cudadoctor-report"
    assert result.stdout.startswith("cudadoctor summary")
    assert f"wrote the json report to {out}" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--require", "torch>>2"], "--require 'torch>>2'"),
        (["--require", "cuda>=twelve"], "is not a version specifier"),
        (["--fail-on", "sometimes"], "--fail-on 'sometimes'"),
    ],
)
def test_bad_gate_options_are_usage_errors(args, message):
    result = run("check", *args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_fail_on_never_reports_but_passes(tmp_path):
    snap = _device_snapshot(tmp_path, CUDA_VISIBLE_DEVICES="")
    result = run("check", "--from", snap, "--fail-on", "never")
    assert result.exit_code == 0
    assert "CD104" in result.stdout


def test_nccl_needs_deep():
    result = run("check", "--nccl")
    assert result.exit_code == 2 and "use it with --deep" in result.stderr
