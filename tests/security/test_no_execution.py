"""Nothing from a scanned image root or a snapshot is executed or imported, and the facts still come out.

The image (``planted.build_image``) has an executable ``nvcc``, ``python3`` and ``nvidia-smi`` on its
PATH, a venv whose site-packages holds ``sitecustomize.py``, ``usercustomize.py``, a ``.pth`` with
an import line, and a ``torch/version.py`` and ``torch/__init__.py`` that would each leave a marker
file if run. The same commands are planted first on the child's own PATH. cudadoctor runs as
``python -m cudadoctor`` would, in a child process, under a guard that records any attempt to
import a GPU framework and any module loaded from the image root.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.security.planted import GUARD, SITE, TOOLKIT_VERSION, TORCH_VERSION, Image, build_image, run_guarded

pytestmark = pytest.mark.slow  # each test runs cudadoctor in a child interpreter


@pytest.fixture
def image(tmp_path: Path) -> Image:
    return build_image(tmp_path)


def _facts_of(stdout: str) -> dict:
    return json.loads(stdout)["facts"]


def _assert_image_facts(facts: dict) -> None:
    torch = facts["packages"]["torch"]
    assert torch["version"] == TORCH_VERSION
    assert torch["torch_build"]["version"] == TORCH_VERSION and torch["torch_build"]["cuda"] == "12.4"
    assert torch["torch_build"]["source"] == {"kind": "file", "where": f"{SITE}/torch/version.py"}
    assert torch["cuda_build"] == "12.4"
    assert facts["packages"]["vllm"]["version"] == "0.6.3"
    assert facts["python"]["executable"] == "/opt/venv/bin/python3" and facts["python"]["kind"] == "venv"
    assert [t["version"] for t in facts["toolkits"]] == [TOOLKIT_VERSION]
    assert facts["nvcc"]["path"] == "/usr/local/cuda/bin/nvcc" and facts["nvcc"]["version"] is None
    assert facts["host"]["distro"] == "Ubuntu 22.04.4 LTS"


@pytest.mark.parametrize(
    "args",
    [
        ("check", "--format", "json"),
        ("check", "-v"),
        ("check", "--format", "markdown"),
        ("check", "--format", "github"),
        ("check", "--format", "json", "--python", "/opt/venv/bin/python3"),
        ("check", "--format", "json", "--python", "/usr/local/bin/python3", "--assume-driver", "550.54.15"),
        ("snapshot",),
    ],
    ids=["json", "verbose", "markdown", "github", "python-flag-venv", "python-flag-system", "snapshot"],
)
def test_an_image_root_is_read_never_run(image: Image, tmp_path: Path, args: tuple[str, ...]) -> None:
    result = run_guarded(image, *args, "--root", str(image.root), "--env-file", str(image.env_file), cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr
    assert image.marks() == []
    if args[0] == "snapshot":
        _assert_image_facts(json.loads(result.stdout)["facts"])
    elif "json" in args and "--python" not in args:
        _assert_image_facts(_facts_of(result.stdout))
    elif "-v" in args:
        assert TORCH_VERSION in result.stdout and "/usr/local/cuda/bin/nvcc" in result.stdout


def test_the_python_flag_into_an_image_is_read_from_its_layout(image: Image, tmp_path: Path) -> None:
    result = run_guarded(
        image, "check", "--format", "json", "--root", str(image.root), "--env-file", str(image.env_file),
        "--python", "/opt/venv/bin/python3", cwd=tmp_path,
    )  # fmt: skip
    facts = _facts_of(result.stdout)
    assert facts["python"]["executable"] == "/opt/venv/bin/python3" and facts["python"]["chosen_by"] == "--python"
    assert facts["packages"]["torch"]["torch_build"]["version"] == TORCH_VERSION
    assert image.marks() == []


def test_deep_is_refused_for_an_image_root(image: Image, tmp_path: Path) -> None:
    result = run_guarded(image, "check", "--deep", "--root", str(image.root), cwd=tmp_path)
    assert result.returncode == 2 and "cannot be combined with --root" in result.stderr
    assert image.marks() == []


def _hostile_snapshot(image: Image, tmp_path: Path) -> Path:
    """The image's snapshot, rewritten to point at the trapped host commands."""
    result = run_guarded(image, "snapshot", "--root", str(image.root), "--env-file", str(image.env_file), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    facts = doc["facts"]
    facts["mode"] = "live"
    facts["python"]["executable"] = str(image.host_bin / "python3")
    facts["python"]["site_paths"] = [str(image.root / SITE.lstrip("/"))]
    facts["nvcc"]["path"] = str(image.host_bin / "nvcc")
    facts["host"]["env"].append({"name": "PATH", "value": str(image.host_bin), "claims": None})
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert image.marks() == []
    return path


@pytest.mark.parametrize(
    "args",
    [
        ("check", "--format", "json"),
        ("check", "-v"),
        ("check", "--format", "markdown"),
        ("check", "--format", "github"),
        ("check", "--format", "json", "--python", "PLANTED"),
        ("check", "--format", "json", "--assume-driver", "550.54.15", "--assume-gpu", "H100"),
    ],
    ids=["json", "verbose", "markdown", "github", "python-flag", "assumed-host"],
)
def test_a_snapshot_is_data_never_run(image: Image, tmp_path: Path, args: tuple[str, ...]) -> None:
    snapshot = _hostile_snapshot(image, tmp_path)
    args = tuple(str(image.host_bin / "python3") if a == "PLANTED" else a for a in args)
    result = run_guarded(image, *args, "--from", str(snapshot), cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr
    assert image.marks() == []
    if "json" in args:
        facts = _facts_of(result.stdout)
        assert facts["packages"]["torch"]["torch_build"]["version"] == TORCH_VERSION
        assert facts["nvcc"]["path"].endswith("/host-bin/nvcc")


def test_the_traps_and_the_guard_do_catch_execution(image: Image, tmp_path: Path) -> None:
    """Running the planted nvcc, importing the image's torch, or importing any framework leaves marks."""
    subprocess.run([str(image.root / "usr/local/cuda/bin/nvcc"), "--version"], check=True, capture_output=True)
    site = str(image.root / SITE.lstrip("/"))
    subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {site!r}); import torch.version"], check=False
    )
    guarded = (
        GUARD.split("sys.argv = ")[0] + f"import sys\nsys.path.insert(0, {site!r})\nimport usercustomize\nimport jax\n"
    )
    subprocess.run(
        [sys.executable, "-c", guarded, str(image.root), str(image.report)], check=False, capture_output=True
    )
    assert image.marks() == [
        "image-nvcc",
        "image-torch-init",
        "image-torch-version-py",
        "image-usercustomize",
        "guard: import jax",
        "guard: loaded usercustomize",
        "guard: sys.path " + site,
    ]
