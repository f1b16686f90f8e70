"""The README's and examples/' recipes, run with their exact command lines.

There is no Docker engine here, so the Dockerfile's pre-flight RUN line runs against a root
filesystem shaped like the image (a venv at /opt/venv with torch 2.5.1 from PyPI and the CUDA 12
wheels it pins — METADATA as published on PyPI), with ``--root`` and the image's ENV as an env
file: exactly what the RUN line sees inside the build, minus the GPU it never has.
"""

from __future__ import annotations

import json
import os
import re
import shlex

import pytest
from typer.testing import CliRunner

from cudadoctor.checks import ALL_CHECKS, HEALTH_PREFIXES
from cudadoctor.cli import app
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import DriverVersion
from cudadoctor.rules.branches import branch_status
from tests.conftest import fixture_path, fixture_text

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "examples")


def _read(name: str) -> str:
    with open(os.path.join(EXAMPLES, name), encoding="utf-8") as handle:
        return handle.read()


def _dockerfile_preflight() -> tuple[list[str], dict[str, str], dict[str, str]]:
    """(cudadoctor argv of the pre-flight RUN line, ENV of the image, ARG defaults)."""
    text = _read("Dockerfile").replace("\\\n", " ")
    (line,) = [ln for ln in text.splitlines() if ln.startswith("RUN") and "cudadoctor check" in ln]
    command = line.split("&&")[0].removeprefix("RUN").strip()
    env = dict(re.findall(r"(\w+)=(\S+)", " ".join(ln for ln in text.splitlines() if ln.startswith("ENV "))))
    args = dict(re.findall(r"^ARG (\w+)=(\S+)$", text, flags=re.MULTILINE))
    argv = shlex.split(command)
    assert argv[0].endswith("cudadoctor")
    return argv[1:], env, args


def _image_root(tmp_path) -> str:
    """The app stage of examples/Dockerfile: /opt/venv with torch 2.5.1 and its pinned CUDA wheels."""
    root = tmp_path / "rootfs"
    site = root / "opt/venv/lib/python3.11/site-packages"
    (root / "opt/venv/bin").mkdir(parents=True)
    (root / "opt/venv/bin/python").write_text("")
    (root / "opt/venv/pyvenv.cfg").write_text(
        "home = /usr/local/bin\ninclude-system-site-packages = false\nversion = 3.11.10\n"
    )
    (root / "usr/lib/x86_64-linux-gnu").mkdir(parents=True)
    metadata = fixture_text("recipes", "torch-2.5.1.METADATA")
    dist = site / "torch-2.5.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(metadata)
    # What `pip install torch==2.5.1` brings along: every wheel it pins (nvidia-*, triton).
    pinned = r"^Requires-Dist: (nvidia-[\w-]+|triton) \(==([\d.]+)\)"
    for name, version in re.findall(pinned, metadata, flags=re.MULTILINE):
        wheel = site / f"{name.replace('-', '_')}-{version}.dist-info"
        wheel.mkdir()
        (wheel / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    # triton's bundled ptxas (compat/triton.toml ptxas_file), and python:3.11-slim's own headers (its interpreter is
    # built from source into /usr/local, include/ kept); the slim image has no C compiler.
    (site / "triton/backends/nvidia/bin").mkdir(parents=True)
    (site / "triton/backends/nvidia/bin/ptxas").write_text("")
    (root / "usr/local/include/python3.11").mkdir(parents=True)
    (root / "usr/local/include/python3.11/Python.h").write_text("")
    return str(root)


def _run(argv: list[str], *extra: str):
    return CliRunner().invoke(app, [*argv, *extra])


@pytest.fixture
def image(tmp_path):
    root = _image_root(tmp_path)
    argv, env, args = _dockerfile_preflight()
    env_file = tmp_path / "image.env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    return root, str(env_file), argv, args


def _expand(argv: list[str], args: dict[str, str]) -> list[str]:
    return [re.sub(r"\$(\w+)", lambda m: args[m.group(1)], a) for a in argv]


def test_dockerfile_preflight_passes_for_the_documented_host(image):
    root, env_file, argv, args = image
    result = _run(_expand(argv, args), "--root", root, "--env-file", env_file, "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    torch = doc["facts"]["packages"]["torch"]
    assert (torch["version"], torch["cuda_build"]) == ("2.5.1", "12.4")
    assert {f["code"]: f["status"] for f in doc["findings"]}["CD901"] == "ok"


def test_dockerfile_preflight_fails_the_build_for_an_old_host_driver(image):
    root, env_file, argv, args = image
    result = _run(_expand(argv, {**args, "HOST_DRIVER": "470.82.01"}), "--root", root, "--env-file", env_file)
    assert result.exit_code == 1
    assert "CD111 driver 470.82.01 supports CUDA 11.4 and is too old for torch 2.5.1" in result.stdout
    assert "CD901 required but not met: cuda>=12.4 (the driver supports CUDA 11.4;" in result.stdout


def test_dockerfile_preflight_passes_on_a_535_host_that_runs_cuda_12_4_code(image):
    """torch cu124 runs on a 535 driver (CUDA 12.2) by minor-version compatibility; so does the pre-flight."""
    root, env_file, argv, args = image
    result = _run(_expand(argv, {**args, "HOST_DRIVER": "535.104.05"}), "--root", root, "--env-file", env_file)
    assert result.exit_code == 0, result.output
    assert "Requirements (--require): all met" in result.stdout


def _is_cudadoctor_project(directory: str) -> bool:
    import tomllib

    with open(os.path.join(directory, "pyproject.toml"), "rb") as handle:
        return tomllib.load(handle)["project"]["name"] == "cudadoctor"


def test_examples_install_cudadoctor_from_the_checkout():
    """cudadoctor is not on the package index: each example installs the checkout it is built from."""
    repo = os.path.dirname(EXAMPLES)
    docker = _read("Dockerfile")
    (copy,) = re.findall(r"^COPY (\S+) (\S+)$", docker, flags=re.MULTILINE)
    (install,) = [ln for ln in docker.splitlines() if ln.startswith("RUN") and "/opt/cudadoctor/bin/pip install" in ln]
    target = shlex.split(install.split("&&")[-1])[-1]
    assert target == copy[1] and copy[0] == "."  # the build context, which the usage line says is the checkout
    assert "docker build -f examples/Dockerfile" in docker and _is_cudadoctor_project(repo)
    workflow = _read("github-actions.yml")
    (line,) = re.findall(r"^\s*- run: (python -m pip install .*)$", workflow, flags=re.MULTILINE)
    assert shlex.split(line)[-1] == "." and "actions/checkout" in workflow
    installs = [ln.split("pip install", 1)[1] for ln in (docker + workflow).splitlines() if "pip install" in ln]
    assert installs and all("cudadoctor" not in shlex.split(args) for args in installs)  # never from the index


def test_dockerfile_preflight_fails_when_torch_is_missing(image, tmp_path):
    _root, env_file, argv, args = image
    empty = tmp_path / "empty"
    (empty / "opt/venv/lib/python3.11/site-packages").mkdir(parents=True)
    result = _run(_expand(argv, args), "--root", str(empty), "--env-file", env_file)
    assert result.exit_code == 1
    assert "torch>=2.5 (found: nothing)" in result.stdout


def _workflow_commands() -> list[list[str]]:
    text = _read("github-actions.yml")
    return [shlex.split(m) for m in re.findall(r"^\s*- run: (cudadoctor check .*)$", text, flags=re.MULTILINE)]


def test_github_workflow_commands(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    snapshot = fixture_path("h200-device", "snapshot.json")
    annotate, markdown = _workflow_commands()
    result = _run(annotate[1:], "--from", snapshot)
    assert result.exit_code == 0, result.output
    assert re.search(r"cudadoctor: no issues found \(\d+ passed · \d+ not applicable\)$", result.stdout.strip())
    result = _run(markdown[1:], "--from", snapshot)
    assert result.exit_code == 0
    report = (tmp_path / "cudadoctor-report.md").read_text()
    assert report.startswith("## cudadoctor report")
    assert "| ✅ | NVIDIA driver | 580.159.04 (open kernel module), supports CUDA 13.0 |" in report


def test_github_annotations_for_a_problem(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    doc = json.loads(fixture_text("h200-device", "snapshot.json"))
    doc["facts"]["visible"]["cuda_visible_devices"] = ""
    snap = tmp_path / "s.json"
    snap.write_text(json.dumps(doc))
    annotate = _workflow_commands()[0]
    result = _run(annotate[1:], "--from", str(snap))
    assert result.exit_code == 1
    (line,) = [ln for ln in result.stdout.splitlines() if ln.startswith("::")]
    assert line.startswith("::error title=cudadoctor CD104 visible-devices-not-empty::CUDA_VISIBLE_DEVICES=''")
    assert "%0AFix: " in line and "\n" not in line


def test_github_gate_fails_when_a_check_could_not_judge(tmp_path, monkeypatch):
    """Issue #14: the pre-flight fails closed. A fact no check can judge (a CUDA build that is no
    version) makes the annotate step exit 1, where it passed before as "no issues"."""
    monkeypatch.chdir(tmp_path)
    doc = json.loads(fixture_text("h200-device", "snapshot.json"))
    torch = doc["facts"]["packages"]["torch"]
    torch["cuda_build"] = "9" * 5000
    torch["torch_build"] = None
    snap = tmp_path / "s.json"
    snap.write_text(json.dumps(doc))
    annotate = _workflow_commands()[0]
    assert "--fail-on-unknown" in annotate
    result = _run(annotate[1:], "--from", str(snap))
    assert result.exit_code == 1, result.output
    assert "::notice title=cudadoctor CD111" in result.stdout


def test_project_settings_ignore_and_require(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    doc = json.loads(fixture_text("h200-device", "snapshot.json"))
    doc["facts"]["visible"]["cuda_visible_devices"] = ""
    snap = tmp_path / "s.json"
    snap.write_text(json.dumps(doc))
    (tmp_path / "pyproject.toml").write_text('[tool.cudadoctor]\nignore = ["CD104"]\nrequire = ["vllm"]\n')
    result = _run(["check", "--from", str(snap)])
    assert result.exit_code == 1
    assert "CD104" not in result.stdout
    assert "CD901 required but not met: vllm (found: nothing)" in result.stdout
    (tmp_path / ".cudadoctor.toml").write_text('ignore = ["CD1", "CD9"]\nfail-on = "warning"\n')
    assert _run(["check", "--from", str(snap)]).exit_code == 0
    (tmp_path / ".cudadoctor.toml").write_text('fail_on = "warning"\n')
    bad = _run(["check", "--from", str(snap)])
    assert bad.exit_code == 2 and "unknown setting(s) fail_on" in bad.stderr


@pytest.mark.parametrize(
    "driver",
    ["550.54.15", "535.104.05"],  # CUDA 12.4 natively; 12.2 + minor-version compatibility for a cu124 build
    ids=["native", "minor-version-compatibility"],
)
def test_a_healthy_cuda12_machine_has_no_errors_or_warnings(image, driver):
    root, env_file, _argv, _args = image
    result = _run(
        ["check"],
        "--root",
        root,
        "--env-file",
        env_file,
        "--assume-driver",
        driver,
        "--assume-gpu",
        "H100",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["facts"]["packages"]["torch"]["cuda_build"] == "12.4"
    statuses = {f["code"]: f["status"] for f in doc["findings"]}
    # CD115 judges the branch's end of life on the day the test runs (R535 and R550 ended in 2026, compat/cuda.toml
    # driver_branch): a warning then, never an error.
    ended = branch_status(CompatMatrix(), DriverVersion(driver).major).is_problem
    assert statuses.pop("CD115") == ("warn" if ended else "ok")
    # python:3.11-slim has no C compiler: Triton cannot build its launcher there, so torch.compile on the GPU fails
    # (a warning: torch itself runs).
    assert statuses.pop("CD212") == "warn"
    # Every other check passes; these do not apply to an image judged with --root, or could not be judged.
    assert {code for code, status in statuses.items() if status != "ok"} == HEALTHY_IMAGE_SKIPS | HEALTHY_IMAGE_UNKNOWN
    assert {statuses[code] for code in HEALTHY_IMAGE_SKIPS} == {"not-applicable"}
    assert all(statuses[code] == "unknown" for code in HEALTHY_IMAGE_UNKNOWN)
    assert statuses["CD111"] == "ok"


#: The checks that skip on a healthy CUDA 12 image judged with --root and an assumed driver and GPU, and why.
HEALTHY_IMAGE_SKIPS = {
    "CD101",  # the user-space driver against the kernel module: judged only on the machine itself
    "CD120",  # a running container's devices: an image root has none by nature
    "CD130",
    "CD131",  # no GPU in MIG mode
    "CD132",
    "CD133",
    "CD134",
    "CD135",  # not WSL2
    "CD137",  # an image root: no PCI bus of its own, so no nvidia_module fact
    "CD201",
    "CD202",  # the image has no toolkit to build extensions with
    "CD210",  # the driver's libcuda comes from the host when the container starts
    "CD303",  # no CuPy or TensorRT installed
    "CD304",
    "CD306",
    "CD307",  # the recipe's library files are empty: no shared object needs a CUDA library
    "CD403",  # no JAX CUDA plugin installed
    "CD440",
    "CD441",  # no llama-cpp-python installed
    "CD420",  # no flash-attn installed
    "CD421",  # no xformers installed
    "CD422",
    "CD423",  # no torchvision or torchaudio installed
    "CD424",  # no FlashInfer build installed
    "CD425",  # fewer than two CuPy packages
    "CD430",
    "CD431",  # no onnxruntime-gpu installed
    "CD432",
    "CD433",  # no TensorFlow installed
    "CD434",  # no paddlepaddle-gpu installed
    "CD435",
    "CD436",
    "CD437",  # no bitsandbytes installed
    "CD501",  # no vLLM installed
    "CD601",  # no TensorRT installed
    "CD701",  # the image sets no NVIDIA_REQUIRE_* variable
    "CD801",
    "CD802",
    "CD803",
    "CD804",
    "CD805",
    "CD806",  # runtime probes run only with --deep
    "CD901",  # no --require given
    # GPU health (CD150-CD199, DCGM's diagnostic among them) is examined only on the machine itself
    *(code for code in ALL_CHECKS if code.startswith(HEALTH_PREFIXES)),
}

#: The checks that could not judge it: their data does not cover this release. (CD114 judges the H100 on R535 and
#: R550: NVIDIA's open kernel modules README lists every H100 from 535.43.02 and 550.40.07, compat/gpu_devices.toml.)
HEALTHY_IMAGE_UNKNOWN: set[str] = set()
