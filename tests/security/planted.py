"""A hostile image root and the means to run cudadoctor against it in a child process.

Every executable and every Python file planted here would leave a marker file behind if it were
run or imported; the tests assert that no marker appears and that the facts still come out.
The child runs cudadoctor under an import guard that records any attempt to import a GPU framework
and, at exit, any module loaded from the image root.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

FRAMEWORKS = ("torch", "vllm", "tensorflow", "jax", "jaxlib", "tensorrt", "cupy", "flash_attn", "xformers")

SITE = "/opt/venv/lib/python3.12/site-packages"
TORCH_VERSION = "2.5.1+cu124"
TOOLKIT_VERSION = "12.4.131"
IMAGE_PATH = "/opt/venv/bin:/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin"

#: Run as ``python -c GUARD <root> <report> <cudadoctor args…>``.
GUARD = r"""
import atexit, os, sys
BLOCKED = set(FRAMEWORKS_PLACEHOLDER)
ROOT = os.path.realpath(sys.argv[1])
REPORT = sys.argv[2]
def record(line):
    with open(REPORT, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")
class Guard:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            record("import " + name)
            raise ImportError("blocked by the test: " + name)
        return None
sys.meta_path.insert(0, Guard())
def inside(path):
    return bool(path) and os.path.realpath(path).startswith(ROOT + os.sep)
def at_exit():
    for name, module in list(sys.modules.items()):
        if inside(getattr(module, "__file__", None) or ""):
            record("loaded " + name)
    for entry in sys.path:
        if inside(entry):
            record("sys.path " + entry)
atexit.register(at_exit)
sys.argv = ["cudadoctor", *sys.argv[3:]]
from cudadoctor.cli import main
main()
""".replace("FRAMEWORKS_PLACEHOLDER", repr(FRAMEWORKS))


@dataclass
class Image:
    root: Path
    env_file: Path
    markers: Path
    host_bin: Path  #: planted commands put first on the child's own PATH
    report: Path  #: what the import guard recorded

    def marks(self) -> list[str]:
        found = sorted(os.listdir(self.markers))
        if self.report.exists():
            found += [f"guard: {line}" for line in self.report.read_text().splitlines()]
        return found


def _write(path: Path, text: str, *, executable: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _script(markers: Path, name: str, output: str = "") -> str:
    return f"#!/bin/sh\necho ran >> '{markers / name}'\n{output}"


def _python(markers: Path, name: str) -> str:
    return f"open({str(markers / name)!r}, 'a').write('executed\\n')\n"


def build_image(base: Path, env: dict[str, str] | None = None) -> Image:
    """A small image root full of traps, its env file, and a directory of trapped host commands."""
    root, markers, host_bin = base / "rootfs", base / "markers", base / "host-bin"
    for d in (root, markers, host_bin):
        d.mkdir(parents=True, exist_ok=True)
    nvcc_output = f"echo 'Cuda compilation tools, release 12.4, V{TOOLKIT_VERSION}'\n"
    # the toolkit: a version file to read, an nvcc that must never run
    _write(root / "usr/local/cuda-12.4/version.json", json.dumps({"cuda_cudart": {"version": TOOLKIT_VERSION}}))
    _write(root / "usr/local/cuda-12.4/bin/nvcc", _script(markers, "image-nvcc", nvcc_output), executable=True)
    (root / "usr/local/cuda").symlink_to("cuda-12.4")
    # commands on the image's PATH
    for name in ("nvidia-smi", "ldconfig", "python3", "python", "uname"):
        _write(root / "usr/local/bin" / name, _script(markers, f"image-{name}"), executable=True)
    _write(root / "sbin/ldconfig", _script(markers, "image-sbin-ldconfig"), executable=True)
    # the venv: its interpreter, pyvenv.cfg, and site-packages full of code that runs on import/startup
    _write(
        root / "opt/venv/pyvenv.cfg", "home = /usr/local/bin\ninclude-system-site-packages = false\nversion = 3.12.3\n"
    )
    _write(root / "opt/venv/bin/python3", _script(markers, "image-venv-python3"), executable=True)
    site = root / SITE.lstrip("/")
    _write(site / "sitecustomize.py", _python(markers, "image-sitecustomize"))
    _write(site / "usercustomize.py", _python(markers, "image-usercustomize"))
    _write(site / "zz-evil.pth", f"import os; {_python(markers, 'image-pth').strip()}\n")
    _write(site / "torch/__init__.py", _python(markers, "image-torch-init"))
    _write(
        site / "torch/version.py",
        _python(markers, "image-torch-version-py")
        + f"__version__ = '{TORCH_VERSION}'\ndebug = False\ncuda: Optional[str] = '12.4'\n"
        "git_version = 'a8d6afb511a69687bbb2b7e88a3cf67917e1697e'\nhip: Optional[str] = None\n",
    )
    _write(
        site / f"torch-{TORCH_VERSION}.dist-info/METADATA",
        f"Metadata-Version: 2.1\nName: torch\nVersion: {TORCH_VERSION}\nRequires-Python: >=3.8.0\n"
        'Requires-Dist: nvidia-cudnn-cu12==9.1.0.70; platform_system == "Linux" and platform_machine == "x86_64"\n',
    )
    _write(site / f"torch-{TORCH_VERSION}.dist-info/entry_points.txt", "[console_scripts]\ntorchrun = torch:main\n")
    _write(site / "vllm/__init__.py", _python(markers, "image-vllm-init"))
    _write(site / "vllm-0.6.3.dist-info/METADATA", "Metadata-Version: 2.1\nName: vllm\nVersion: 0.6.3\n")
    _write(root / "etc/os-release", 'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\n')
    (root / "usr/lib/x86_64-linux-gnu").mkdir(parents=True, exist_ok=True)
    # commands that a careless implementation might look up on the host's PATH
    for name in ("nvcc", "nvidia-smi", "ldconfig", "python3", "python", "uname", "gcc", "cc", "ld", "objdump"):
        _write(host_bin / name, _script(markers, f"host-{name}"), executable=True)
    env_file = base / "image.env"
    values = {"PATH": IMAGE_PATH, "CUDA_HOME": "/usr/local/cuda", **(env or {})}
    env_file.write_text("".join(f"{k}={v}\n" for k, v in values.items()), encoding="utf-8")
    return Image(root, env_file, markers, host_bin, base / "guard.txt")


def child_env(image: Image, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDADOCTOR", "PYTHON", "VIRTUAL_ENV", "CONDA"))}
    env["PATH"] = f"{image.host_bin}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
    env["PYTHONPATH"] = str(REPO)
    env["NO_COLOR"] = "1"
    env.update(extra)
    return env


def run_guarded(
    image: Image, *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``cudadoctor ARGS`` in a child process of this interpreter, under the import guard."""
    return subprocess.run(
        [sys.executable, "-c", GUARD, str(image.root), str(image.report), *args],
        cwd=cwd,
        env=env if env is not None else child_env(image),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
