"""Secrets never reach an output, in any format, from any source.

Planted: HF_TOKEN, AWS_SECRET_ACCESS_KEY, GITHUB_TOKEN, WANDB_API_KEY, a collected secret-named
variable (NCCL_NET_PLUGIN_AUTH_TOKEN), a password inside PIP_INDEX_URL and inside LD_LIBRARY_PATH /
LIBRARY_PATH values (one with an unencoded ``/`` and ``@``), GPU and MIG UUIDs (in
CUDA_VISIBLE_DEVICES and in error messages), ``NAME=secret`` inside error text, and the user's home
directory in paths. Sources: an image root with ``--env-file``, a snapshot with ``--from``, and this
machine (in process, ``os.environ`` monkeypatched, its runner and NVML faked). Outputs: text,
text -v, json, github, markdown, snapshot, and ``--output`` files of every format with the summary
the terminal gets. ``--no-redact`` shows the home directory and nothing else.
"""

# ruff: noqa: S105 - every "password" here is a planted fake, looked for in the output

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cudadoctor.cli import app
from cudadoctor.probes import collect, runtime
from cudadoctor.probes.native import LibcudaResult, NvmlResult
from cudadoctor.runner import CommandResult
from tests.security.planted import build_image

HOME_NAME = "homeuser-PLANTED"
UUID = "GPU-5f1c2d3e-aaaa-4bbb-8ccc-d0d1d2d3d4d5"
MIG_UUID = "MIG-9e8d7c6b-eeee-4fff-8aaa-b0b1b2b3b4b5"
SECRETS = {
    "HF_TOKEN": "hf_PLANTEDhuggingface0123456789abcdef",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnPLANTED/K7MDENG+bPxRfiCYEXAMPLEKEY",
    "GITHUB_TOKEN": "ghp_PLANTEDgithub0123456789abcdefghij",
    "WANDB_API_KEY": "PLANTEDwandb0123456789abcdef01234567",
    "NCCL_NET_PLUGIN_AUTH_TOKEN": "PLANTEDncclauthtoken",  # collected (NCCL_ prefix): masked by its name
}
PIP_PASSWORD = "PLANTEDpippass"
LD_PASSWORD = "PLANTEDldpass"
ODD_PASSWORD = "PLANTED/sl@sh"  # unencoded / and @: urlsplit alone would show it
#: what must appear in no output
NEEDLES = (
    *SECRETS.values(),
    PIP_PASSWORD,
    LD_PASSWORD,
    "PLANTED/sl",
    "sl@sh",
    "5f1c2d3e",
    "d0d1d2d3d4d5",
    "9e8d7c6b",
    "b0b1b2b3b4b5",
    HOME_NAME,
)

cli = CliRunner()


def image_env(home: str) -> dict[str, str]:
    return {
        **SECRETS,
        "PIP_INDEX_URL": f"https://alice:{PIP_PASSWORD}@pypi.example/simple",
        "LD_LIBRARY_PATH": f"/usr/local/cuda/lib64:https://bob:{LD_PASSWORD}@libs.example/lib:{home}/lib",
        "LIBRARY_PATH": f"{home}/.local/lib:https://carol:{ODD_PASSWORD}@libs.example/x",
        "CUDA_VISIBLE_DEVICES": UUID,
        "NVIDIA_VISIBLE_DEVICES": f"{UUID},{MIG_UUID}",
        "PYTHONPATH": f"{home}/src",
    }


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home" / HOME_NAME
    path.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(path))
    monkeypatch.delenv("CUDADOCTOR_DEBUG", raising=False)
    return path


Invoke = Callable[[Sequence[str]], tuple[int, str, str]]


def invoke(args: Sequence[str]) -> tuple[int, str, str]:
    result = cli.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def all_outputs(base: Sequence[str], out: Path, *, snapshot: bool = True, run: Invoke = invoke) -> dict[str, str]:
    """Every output cudadoctor can give for these facts: label -> text."""
    out.mkdir(exist_ok=True)
    commands = {
        "text": ["check"],
        "text -v": ["check", "-v"],
        "json": ["check", "--format", "json"],
        "github": ["check", "--format", "github"],
        "markdown": ["check", "--format", "markdown"],
    }
    if snapshot:
        commands["snapshot"] = ["snapshot"]
    texts: dict[str, str] = {}
    for label, args in commands.items():
        code, stdout, stderr = run([*args, *base])
        assert code in (0, 1), (label, stdout, stderr)
        texts[label] = stdout + stderr
    for fmt in ("text", "json", "github", "markdown"):
        path = out / f"report.{fmt}"
        code, stdout, stderr = run(["check", "-v", "--format", fmt, "--output", str(path), *base])
        assert code in (0, 1), (fmt, stdout, stderr)
        texts[f"--output {fmt}: terminal"] = stdout + stderr
        texts[f"--output {fmt}: file"] = path.read_text(encoding="utf-8")
    if snapshot:
        path = out / "snapshot.json"
        code, stdout, stderr = run(["snapshot", "--output", str(path), *base])
        assert code == 0, stderr
        texts["snapshot --output: terminal"] = stdout + stderr
        texts["snapshot --output: file"] = path.read_text(encoding="utf-8")
    return texts


def leaks(texts: Mapping[str, str], home: Path, extra: Sequence[str] = ()) -> list[tuple[str, str]]:
    needles = (*NEEDLES, str(home), *extra)
    return [(label, needle) for label, text in texts.items() for needle in needles if needle in text]


def env_values(facts: dict) -> dict[str, str]:
    return {v["name"]: v["value"] for v in facts["host"]["env"]}


# --- an image root and its env file -----------------------------------------------------------------


def _image(home: Path) -> tuple[Path, Path]:
    image = build_image(home / "work", env=image_env(str(home)))
    return image.root, image.env_file


def test_image_root_outputs_hold_no_secret(home: Path, tmp_path: Path) -> None:
    root, env_file = _image(home)
    base = ["--root", str(root), "--env-file", str(env_file)]
    texts = all_outputs(base, tmp_path / "out")
    assert leaks(texts, home) == []
    # … and the planted values were really read, then masked
    facts = json.loads(texts["--output json: file"])["facts"]
    assert facts["mode"] == "root:~/work/rootfs"
    env = env_values(facts)
    assert env["NCCL_NET_PLUGIN_AUTH_TOKEN"] == "****"
    assert env["LD_LIBRARY_PATH"] == "/usr/local/cuda/lib64:https://****@libs.example/lib:~/lib"
    assert env["LIBRARY_PATH"] == "~/.local/lib:https://****@libs.example/x"
    assert env["CUDA_VISIBLE_DEVICES"] == "GPU-<redacted>"
    assert env["NVIDIA_VISIBLE_DEVICES"] == "GPU-<redacted>,MIG-<redacted>"
    assert facts["visible"]["cuda_visible_devices"] == "GPU-<redacted>"
    assert "NCCL_NET_PLUGIN_AUTH_TOKEN=****" in texts["text -v"]


def test_image_root_with_no_redact_shows_the_home_directory_and_nothing_else(home: Path, tmp_path: Path) -> None:
    root, env_file = _image(home)
    base = ["--root", str(root), "--env-file", str(env_file), "--no-redact"]
    texts = {label: text for label, text in all_outputs(base, tmp_path / "out").items() if "markdown" not in label}
    assert [(label, n) for label, n in leaks(texts, home) if n not in (str(home), HOME_NAME)] == []
    facts = json.loads(texts["--output json: file"])["facts"]
    assert facts["mode"] == f"root:{home}/work/rootfs"
    env = env_values(facts)
    assert env["LD_LIBRARY_PATH"] == f"/usr/local/cuda/lib64:https://****@libs.example/lib:{home}/lib"
    assert env["NCCL_NET_PLUGIN_AUTH_TOKEN"] == "****"
    assert env["CUDA_VISIBLE_DEVICES"] == "GPU-<redacted>"
    snapshot = json.loads(texts["snapshot --output: file"])["facts"]
    assert snapshot["mode"] == f"root:{home}/work/rootfs"


def test_markdown_is_redacted_even_with_no_redact(home: Path) -> None:
    root, env_file = _image(home)
    code, stdout, stderr = invoke(
        ["check", "--format", "markdown", "--no-redact", "--root", str(root), "--env-file", str(env_file)]
    )
    assert code in (0, 1)
    assert leaks({"markdown --no-redact": stdout + stderr}, home) == []
    assert "root:~/work/rootfs" in stdout


# --- a snapshot -----------------------------------------------------------------------------------


def _planted_snapshot(home: Path, tmp_path: Path) -> Path:
    """A real snapshot (of a clean image, unredacted), with secrets added where a hand-edited or a
    foreign cudadoctor's snapshot could hold them."""
    image = build_image(tmp_path / "clean")
    code, stdout, stderr = invoke(
        ["snapshot", "--no-redact", "--root", str(image.root), "--env-file", str(image.env_file)]
    )
    assert code == 0, stderr
    doc = json.loads(stdout)
    facts = doc["facts"]
    facts["mode"] = "live"
    facts["host"]["env"] += [{"name": k, "value": v, "claims": None} for k, v in image_env(str(home)).items()]
    facts["visible"]["cuda_visible_devices"] = UUID
    facts["python"]["executable"] = f"{home}/venv/bin/python3"
    facts["python"]["prefix"] = f"{home}/venv"
    facts["python"]["site_paths"] = [f"{home}/venv/lib/python3.12/site-packages"]
    facts["errors"] += [
        {"probe": "driver", "message": f"nvidia-smi: Unable to determine the device handle for {UUID}: Unknown Error",
         "source": "nvidia-smi"},
        {"probe": "gpus", "message": f"NVML: {MIG_UUID} is in use (HF_TOKEN={SECRETS['HF_TOKEN']})", "source": None},
        {"probe": "python", "message": f"could not run {home}/venv/bin/python3: GITHUB_TOKEN={SECRETS['GITHUB_TOKEN']} "
         f"AWS_SECRET_ACCESS_KEY={SECRETS['AWS_SECRET_ACCESS_KEY']}", "source": f"{home}/venv/bin/python3"},
        {"probe": "packages", "message": f"index https://alice:{ODD_PASSWORD}@pypi.example/simple: wandb "
         f"WANDB_API_KEY={SECRETS['WANDB_API_KEY']}", "source": f"{home}/.config/pip/pip.conf"},
    ]  # fmt: skip
    path = tmp_path / "planted-snapshot.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert SECRETS["HF_TOKEN"] in path.read_text(encoding="utf-8")
    return path


def test_snapshot_outputs_hold_no_secret(home: Path, tmp_path: Path) -> None:
    snapshot = _planted_snapshot(home, tmp_path)
    texts = all_outputs(["--from", str(snapshot)], tmp_path / "out", snapshot=False)
    assert leaks(texts, home) == []
    facts = json.loads(texts["--output json: file"])["facts"]
    env = env_values(facts)
    assert {name: env[name] for name in SECRETS} == dict.fromkeys(SECRETS, "****")
    assert env["PIP_INDEX_URL"] == "https://****@pypi.example/simple"
    assert facts["python"]["executable"] == "~/venv/bin/python3"
    messages = [e["message"] for e in facts["errors"]]
    assert "nvidia-smi: Unable to determine the device handle for GPU-<redacted>: Unknown Error" in messages
    assert "NVML: MIG-<redacted> is in use (HF_TOKEN=****)" in messages
    assert "could not run ~/venv/bin/python3: GITHUB_TOKEN=**** AWS_SECRET_ACCESS_KEY=****" in messages


def test_snapshot_with_no_redact_still_masks_secrets(home: Path, tmp_path: Path) -> None:
    snapshot = _planted_snapshot(home, tmp_path)
    texts = all_outputs(["--from", str(snapshot), "--no-redact"], tmp_path / "out", snapshot=False)
    texts = {label: text for label, text in texts.items() if "markdown" not in label}
    assert [(label, n) for label, n in leaks(texts, home) if n not in (str(home), HOME_NAME)] == []
    facts = json.loads(texts["--output json: file"])["facts"]
    assert facts["python"]["executable"] == f"{home}/venv/bin/python3"


# --- this machine, in process -----------------------------------------------------------------------


class LeakyRunner:
    """Every command fails with a UUID and secrets in its output; the --deep driver child "reports" them."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.calls: list[tuple[str, ...]] = []

    def run(self, argv: Sequence[str], *, timeout: float = 10.0, env: Mapping[str, str] | None = None) -> CommandResult:
        args = tuple(argv)
        self.calls.append(args)
        noise = f"HF_TOKEN={SECRETS['HF_TOKEN']} via https://alice:{ODD_PASSWORD}@pypi.example/ in {self.home}/lib"
        if runtime.DRIVER_CHILD in args:
            result = {
                "probe": "driver",
                "device_nodes": [],
                "load_error": f"{self.home}/lib/libcuda.so.1 for {UUID}: {noise}",
                "maps": [f"{self.home}/lib/libcuda.so.1"],
            }
            return CommandResult(args, 0, runtime.MARKER + json.dumps(result) + "\n", noise + "\n")
        return CommandResult(args, 15, f"Unable to determine the device handle for {UUID}: {noise}\n", noise)


class LeakyNative:
    def __init__(self, home: Path) -> None:
        self.home = home

    def nvml(self) -> NvmlResult:
        return NvmlResult(error=f"NVML failed for {MIG_UUID} (GITHUB_TOKEN={SECRETS['GITHUB_TOKEN']})")

    def libcuda_version(self) -> LibcudaResult:
        return LibcudaResult(error=f"{self.home}/lib/libcuda.so.1: cannot open (AWS_SECRET_ACCESS_KEY="
                             f"{SECRETS['AWS_SECRET_ACCESS_KEY']})")  # fmt: skip


@pytest.fixture
def live(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LeakyRunner:
    bin_dir = home / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvcc").write_text("#!/bin/sh\nexit 1\n")  # found on PATH; the fake runner "runs" it
    for name, value in image_env(str(home)).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("VIRTUAL_ENV", f"{home}/gone-venv")  # a deleted environment: an error naming it
    monkeypatch.setenv("CUDA_HOME", f"{home}/cuda")
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    runner = LeakyRunner(home)
    monkeypatch.setattr(collect, "SubprocessRunner", lambda: runner)
    monkeypatch.setattr(collect, "RealNative", lambda: LeakyNative(home))
    return runner


def test_live_outputs_hold_no_secret(live: LeakyRunner, home: Path, tmp_path: Path) -> None:
    texts = all_outputs([], tmp_path / "out")
    for label, args in {
        "deep json": ["--format", "json"],
        "deep -v": ["-v"],
        "deep markdown": ["--format", "markdown"],
    }.items():
        code, stdout, stderr = invoke(["check", "--deep", "--timeout", "5", *args])
        assert code in (0, 1), stderr
        texts[label] = stdout + stderr
        texts[f"{label}: stdout"] = stdout
    assert leaks(texts, home) == []
    # the runner and NVML were really asked, and what they said is in the report, masked
    assert any(args[:1] == (f"{home}/bin/nvcc",) for args in live.calls)
    assert any(runtime.DRIVER_CHILD in args for args in live.calls)
    facts = json.loads(texts["deep json: stdout"])["facts"]
    assert facts["runtime"]["driver"]["load_error"].startswith("~/lib/libcuda.so.1 for GPU-<redacted>: HF_TOKEN=****")
    assert env_values(facts)["NCCL_NET_PLUGIN_AUTH_TOKEN"] == "****"
    messages = " | ".join(e["message"] for e in facts["errors"])
    assert "MIG-<redacted>" in messages and "GITHUB_TOKEN=****" in messages and "~/gone-venv" in messages


def test_live_no_redact_shows_the_home_directory_only(live: LeakyRunner, home: Path, tmp_path: Path) -> None:
    code, stdout, stderr = invoke(["check", "--deep", "--timeout", "5", "--format", "json", "--no-redact"])
    assert code in (0, 1), stderr
    assert str(home) in stdout
    assert [n for _, n in leaks({"json": stdout + stderr}, home) if n not in (str(home), HOME_NAME)] == []
