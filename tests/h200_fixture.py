"""The real H200 machine of ``tests/fixtures/h200`` rebuilt as a file tree, plus its command outputs.

Built from the capture of a real H200 in tests/fixtures/h200:
the small files as found (``tree/``), the library file names found on disk (``LIBRARY_PATHS.txt``,
the ``find`` section of ``capture.txt``), the environment (``env`` section of capture.txt) and the
layout facts recorded on the same machine (the ``/usr/local/cuda`` alternatives links, the
``ld.so.conf.d`` files, ``cuda.h``). Library files are empty: probes read versions from names.
Where the capture did not record a link's target (``/usr/lib/libcuda.so.1``) the comment says so.

``build_tree(prefix)`` works with plain ``os`` calls, so it builds under pyfakefs (prefix ``/``)
or in a real temporary directory (an image root for ``--root``).
"""

from __future__ import annotations

import os
import re

from cudadoctor.probes.native import LibcudaResult, NvmlDevice, NvmlResult
from tests.conftest import FakeRunner, fixture_path, fixture_text

SITE = "/opt/torch/.venv/lib/python3.12/site-packages"

#: nvidia-smi query the probes run, and what the H200 printed for it (capture.txt, same columns).
SMI_QUERY = (
    "nvidia-smi",
    "--query-gpu=index,name,pci.bus_id,driver_version,compute_cap,memory.total,mig.mode.current",
    "--format=csv,noheader,nounits",
)
SMI_OUTPUT = "0, NVIDIA H200, 00000000:00:06.0, 580.159.04, 9.0, 143771, Disabled\n"

NVCC_OUTPUT = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Wed_Aug_20_01:58:59_PM_PDT_2025
Cuda compilation tools, release 13.0, V13.0.88
Build cuda_13.0.r13.0/compiler.36424714_0
"""

#: NVML's answers on the H200 (capture.txt: nvmlSystemGetDriverVersion, ..._CudaDriverVersion_v2).
NVML = NvmlResult(
    driver_version="580.159.04",
    cuda_driver_version=13000,
    devices=(NvmlDevice(0, "NVIDIA H200", "9.0", 143771, "Disabled", "00000000:00:06.0", "NVIDIA"),),
)
LIBCUDA = LibcudaResult(path="/usr/local/nvidia/lib64/libcuda.so.580.159.04", returncode=0, version=13000)

_LINKS = {
    # Debian alternatives chain of the apt toolkit (recorded on the H200).
    "/usr/local/cuda": "/etc/alternatives/cuda",
    "/etc/alternatives/cuda": "/usr/local/cuda-13.0",
    "/usr/local/cuda-13": "/etc/alternatives/cuda-13",
    "/etc/alternatives/cuda-13": "/usr/local/cuda-13.0",
    "/usr/local/cuda-13.0/lib64": "targets/x86_64-linux/lib",
    "/usr/local/cuda-13.0/include": "targets/x86_64-linux/include",
    # capture.txt `ls -la /usr/local/cuda/compat`.
    "/usr/local/cuda-13.0/compat/libcuda.so": "libcuda.so.1",
    "/usr/local/cuda-13.0/compat/libcuda.so.1": "libcuda.so.580.95.05",
    # Host driver mounted at /usr/local/nvidia (capture mountinfo); SONAME links as the driver installs them.
    "/usr/local/nvidia/lib64/libcuda.so.1": "libcuda.so.580.159.04",
    "/usr/local/nvidia/lib64/libcuda.so": "libcuda.so.1",
    "/usr/local/nvidia/lib64/libnvidia-ml.so.1": "libnvidia-ml.so.580.159.04",
    "/usr/local/nvidia/lib64/libnvidia-ml.so": "libnvidia-ml.so.1",
    # The capture lists /usr/lib/libcuda.so{,.1} but not where they point; the host's copy is assumed.
    "/usr/lib/libcuda.so.1": "/usr/local/nvidia/lib64/libcuda.so.580.159.04",
    "/usr/lib/libcuda.so": "libcuda.so.1",
    "/usr/lib/libnvidia-ml.so.1": "/usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04",
    "/usr/lib/libnvidia-ml.so": "libnvidia-ml.so.1",
}

_FILES = {
    # cuda.h and cuda_runtime_api.h version macros (recorded on the H200).
    "/usr/local/cuda-13.0/targets/x86_64-linux/include/cuda.h": "#define CUDA_VERSION 13000\n",
    "/usr/local/cuda-13.0/targets/x86_64-linux/include/cuda_runtime_api.h": "#define CUDART_VERSION  13000\n",
    "/usr/local/cuda-13.0/bin/nvcc": "",
    # Loader config (recorded on the H200; tests/fixtures/libraries/README.md).
    "/etc/ld.so.conf": "include /etc/ld.so.conf.d/*.conf\n",
    "/etc/ld.so.conf.d/000_cuda.conf": "/usr/local/cuda/targets/x86_64-linux/lib\n",
    "/etc/ld.so.conf.d/987_cuda-13.conf": "/usr/local/cuda-13/targets/x86_64-linux/lib\n",
    "/etc/ld.so.conf.d/nvidia.conf": "/usr/local/cuda/lib64\n",
    "/.dockerenv": "",
    # Device nodes (capture.txt, `ls -la /dev | grep nvidia`): character devices there, empty files here.
    "/dev/nvidia0": "",
    "/dev/nvidiactl": "",
    "/dev/nvidia-uvm": "",
    "/dev/nvidia-uvm-tools": "",
    "/proc/1/cgroup": "0::/process_api/core\n",
    f"{SITE}/../../../pyvenv.cfg": "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.3\n",
    "/opt/torch/.venv/bin/python3": "",
}


def capture_section(title_prefix: str) -> str:
    """The output of one ``===== command`` section of capture.txt, without its ``[rc=N]`` line."""
    text = fixture_text("h200", "capture.txt")
    for block in text.split("\n===== ")[1:]:
        head, _, body = block.partition("\n")
        if head.startswith(title_prefix):
            return re.sub(r"\[rc=\d+\]\s*$", "", body)
    raise KeyError(title_prefix)


def h200_env() -> dict[str, str]:
    """The container's environment as captured (``env | grep …``), plus VIRTUAL_ENV of its venv."""
    env = {}
    for line in capture_section("env | grep").splitlines():
        name, sep, value = line.partition("=")
        if sep:
            env[name] = value
    env["VIRTUAL_ENV"] = "/opt/torch/.venv"
    env["HOME"] = "/root"
    return env


def _library_paths() -> list[str]:
    paths = set(fixture_text("h200", "LIBRARY_PATHS.txt").split())
    for line in capture_section("find /").splitlines():
        if line.startswith("/"):
            paths.add(line.strip())
    return sorted(paths)


def _write(prefix: str, path: str, content: str | bytes = "") -> None:
    full = os.path.normpath(prefix + path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    mode = "wb" if isinstance(content, bytes) else "w"
    with open(full, mode) as handle:
        handle.write(content)


def build_tree(prefix: str = "/") -> None:
    """Create the H200 machine's files under ``prefix``."""
    prefix = prefix.rstrip("/")
    src = fixture_path("h200", "tree")
    real_files: dict[str, bytes] = {}
    for directory, _dirs, files in os.walk(src):
        for name in files:
            full = os.path.join(directory, name)
            with open(full, "rb") as handle:
                real_files["/" + os.path.relpath(full, src)] = handle.read()
    os_release = capture_section("uname -a").split("\n", 1)[1]
    os_release = "\n".join(line for line in os_release.splitlines() if "=" in line) + "\n"
    for path, data in real_files.items():
        _write(prefix, path, data)
    for path, content in _FILES.items():
        _write(prefix, os.path.normpath(path), content)
    _write(prefix, "/etc/os-release", os_release)
    for link, target in _LINKS.items():
        full = prefix + link
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if not os.path.lexists(full):
            os.symlink(target, full)
    for path in _library_paths():
        full = prefix + path
        if not os.path.lexists(full):
            # cudnn_version_v9.h is the versioned twin of cudnn_version.h (both in the pip wheel on the H200).
            twin = path.replace("cudnn_version_v9.h", "cudnn_version.h")
            _write(prefix, path, real_files.get(twin, b"") if twin != path else "")


def h200_runner() -> FakeRunner:
    runner = FakeRunner()
    runner.add(SMI_QUERY, SMI_OUTPUT)
    runner.add(("/usr/local/cuda/bin/nvcc", "--version"), NVCC_OUTPUT)
    return runner
