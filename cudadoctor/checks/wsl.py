"""CD132, CD134: the WSL2 driver store as ldconfig and CUDA in a container need it.

CD132  libcuda.so and libcuda.so.1 in /usr/lib/wsl/lib are links to libcuda.so.1.1 (warn)
CD133  the WSL2 distribution's loader searches /usr/lib/wsl/lib (ld.wsl.conf, or LD_LIBRARY_PATH)
CD134  a container on a Windows driver 555+ has libnvdxgdmal.so.1 mapped (NVIDIA Container Toolkit 1.14.4+)
CD135  what opens the unversioned libcuda.so (cuda-python 11.5-11.6.0, cuDNN 8.5-8.7) finds it on WSL2
The rules and their sources are in :mod:`cudadoctor.rules.wsl`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.facts.model import DriverInfo, HostInfo, InstalledPackage, LibraryCopy
from cudadoctor.rules.wsl import (
    DXGDMAL,
    DXGDMAL_DOCKER_DESKTOP,
    DXGDMAL_DRIVER_BRANCH,
    DXGDMAL_TOOLKIT,
    WSL_LIB,
    copied_libcuda_names,
    needs_dxgdmal,
    unversioned_libcuda_found,
)

if TYPE_CHECKING:
    from cudadoctor.data import CompatMatrix
    from cudadoctor.data.rows import DriverOpen

__all__ = ["CD132", "CD133", "CD134", "CD135"]


def _wsl_store(host: HostInfo, driver: DriverInfo) -> None:
    if not (host.wsl or driver.wsl) or not driver.wsl_libraries:
        raise NotApplicable(f"not WSL2, or no WSL2 driver store at {WSL_LIB}")


class CD132(Check):
    """libcuda.so and libcuda.so.1 in the WSL2 driver store are symbolic links to libcuda.so.1.1.

    What it checks: whether /usr/lib/wsl/lib holds libcuda.so and libcuda.so.1 as regular files (copies of
    libcuda.so.1.1, as the Windows driver installs them) rather than links.

    Why it matters: every ldconfig run (each apt or pacman install) prints "/usr/lib/wsl/lib/libcuda.so.1 is not
    a symbolic link", and the loader cache then holds only libcuda.so.1, so a library that opens the unversioned
    libcuda.so finds nothing unless LD_LIBRARY_PATH names /usr/lib/wsl/lib
    (https://github.com/microsoft/WSL/issues/5548).

    How to fix: replace the copies by links in the Windows folder behind the mount, from an administrator
    cmd.exe (cd C:\\Windows\\System32\\lxss\\lib, del libcuda.so libcuda.so.1, mklink libcuda.so libcuda.so.1.1,
    mklink libcuda.so.1 libcuda.so.1.1), then wsl --shutdown; a driver update restores the copies.
    """

    name = "wsl-libcuda-links"
    category = "driver"
    severity = Status.WARN

    def check(self, host: HostInfo, driver: DriverInfo) -> Problem | None:
        _wsl_store(host, driver)
        wsl_files = [f.path for f in driver.libcuda_files if f.kind == "wsl"]
        if not wsl_files:
            raise CannotJudge(f"no libcuda file was read in {WSL_LIB}")
        copies = copied_libcuda_names(wsl_files)
        if not copies:
            return None
        return Problem(
            f"{' and '.join(copies)} in {WSL_LIB} are copies of libcuda.so.1.1, not symbolic links: ldconfig warns "
            "'is not a symbolic link' and caches libcuda.so.1 only",
            {"libcuda files in the driver store": ", ".join(wsl_files)},
            Remediation(
                "Replace the copies with links in the Windows folder behind /usr/lib/wsl/lib (an administrator "
                "cmd.exe, not PowerShell), then restart WSL; a driver update brings the copies back. Meanwhile "
                "LD_LIBRARY_PATH=/usr/lib/wsl/lib lets libraries that open libcuda.so find it.",
                (
                    "cd /d C:\\Windows\\System32\\lxss\\lib && del libcuda.so libcuda.so.1 && "
                    "mklink libcuda.so libcuda.so.1.1 && mklink libcuda.so.1 libcuda.so.1.1",
                    "wsl --shutdown",
                ),
            ),
        )


class CD133(Check):
    """On WSL2 the dynamic loader searches the driver store /usr/lib/wsl/lib, where libcuda is.

    What it checks: on a WSL2 distribution (not a container), whether the libcuda files in /usr/lib/wsl/lib sit in
    a directory the loader searches: LD_LIBRARY_PATH or the ld.so.conf files behind its cache (WSL writes
    /etc/ld.so.conf.d/ld.wsl.conf). A libcuda the loader already loaded counts as found.

    Why it matters: WSL2 has no Linux driver; libcuda exists only in the driver store, so when the loader does not
    search it, CUDA finds no driver ("libcuda.so: cannot open shared object file", "Failed to dlopen libcuda.so")
    (https://docs.nvidia.com/cuda/wsl-user-guide/index.html).

    How to fix: list the directory for the loader and rebuild its cache (echo /usr/lib/wsl/lib | sudo tee
    /etc/ld.so.conf.d/ld.wsl.conf, then sudo ldconfig), or export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH.
    """

    name = "wsl-loader-finds-libcuda"
    category = "driver"

    def check(self, host: HostInfo, driver: DriverInfo) -> Problem | None:
        _wsl_store(host, driver)
        if host.container is not None and host.container.in_container:
            raise NotApplicable("in a container: the NVIDIA Container Toolkit updates the container's loader cache")
        wsl_files = [f for f in driver.libcuda_files if f.kind == "wsl"]
        if not wsl_files:
            raise CannotJudge(f"no libcuda file was read in {WSL_LIB}")
        if driver.loaded_libcuda or any(f.on_search_path for f in wsl_files):
            return None
        return Problem(
            f"libcuda is in {WSL_LIB}, but the dynamic loader does not search that directory (no ld.so.conf entry, "
            "not on LD_LIBRARY_PATH): CUDA finds no driver",
            {"libcuda files": ", ".join(f.path for f in wsl_files), "on the loader's search path": "no"},
            Remediation(
                "List the WSL2 driver store for the loader (the file WSL itself writes) and rebuild the cache.",
                (f"echo {WSL_LIB} | sudo tee /etc/ld.so.conf.d/ld.wsl.conf", "sudo ldconfig"),
            ),
        )


class CD134(Check):
    """A container on a WSL2 host with a Windows driver 555 or newer has libnvdxgdmal.so.1 mapped.

    What it checks: in a container on WSL2 whose driver is of branch 555 or newer, whether /usr/lib/wsl/lib
    holds libnvdxgdmal.so.1.

    Why it matters: Windows drivers 555.xx and newer add libnvdxgdmal.so.1; a container that lacks it fails CUDA
    initialisation with error 500 "named symbol not found" (CUDA_ERROR_NOT_FOUND). NVIDIA Container Toolkit
    releases before 1.14.4 (and Docker Desktop before 4.31.0) do not map it
    (https://github.com/NVIDIA/nvidia-container-toolkit/issues/520).

    How to fix: upgrade the NVIDIA Container Toolkit in the WSL2 distribution to 1.14.4 / 1.15.0 or newer and
    restart Docker; Docker Desktop users: update to 4.31.0 or newer.
    """

    name = "wsl-container-dxgdmal"
    category = "driver"

    def check(self, host: HostInfo, driver: DriverInfo) -> Problem | None:
        _wsl_store(host, driver)
        if host.container is None or not host.container.in_container:
            raise NotApplicable("not in a container: the WSL2 distribution maps the whole driver store")
        if driver.version is None:
            raise CannotJudge("the Windows driver version (NVML did not answer)")
        if not needs_dxgdmal(driver.version.major):
            raise NotApplicable(f"driver {driver.version} predates branch {DXGDMAL_DRIVER_BRANCH}: no {DXGDMAL}")
        if DXGDMAL in driver.wsl_libraries:
            return None
        return Problem(
            f"the Windows driver {driver.version} needs {DXGDMAL}, but this container's {WSL_LIB} lacks it: CUDA "
            "initialisation fails with error 500 (named symbol not found); NVIDIA Container Toolkit before "
            f"{DXGDMAL_TOOLKIT} does not map it",
            {"driver": str(driver.version), f"{WSL_LIB}": ", ".join(driver.wsl_libraries)},
            Remediation(
                "Upgrade the NVIDIA Container Toolkit in the WSL2 distribution (not in the image) to "
                f"{DXGDMAL_TOOLKIT} or newer and restart Docker; with Docker Desktop, update it to "
                f"{DXGDMAL_DOCKER_DESKTOP} or newer.",
                (
                    "sudo apt-get update && sudo apt-get install --only-upgrade nvidia-container-toolkit",
                    "sudo systemctl restart docker",
                ),
            ),
        )


def driver_openers(
    packages: dict[str, InstalledPackage], cudnn: tuple[LibraryCopy, ...], matrix: CompatMatrix
) -> list[tuple[str, DriverOpen]]:
    """(who, the row) for each installed package or cuDNN copy that opens the driver by its unversioned name."""
    found = [
        (f"{p.name} {p.version}", r) for p in packages.values() for r in matrix.driver_opens_for(p.name, p.version)
    ]
    for copy in cudnn:
        if copy.version is not None:
            owner = copy.distribution or copy.bundled_by or copy.origin
            found += [
                (f"cuDNN {copy.version} ({owner}, {copy.path})", r)
                for r in matrix.driver_opens_for("cudnn", copy.version)
            ]
    return found


class CD135(Check):
    """On WSL2, what opens the CUDA driver by its unversioned name libcuda.so finds it.

    What it checks: on WSL2, when an installed package opens the driver with dlopen("libcuda.so") rather than its
    soname libcuda.so.1 (cuda-python 11.5.0-11.6.0; cuDNN 8.5-8.7's libcudnn_cnn_infer, read from the wheels in
    compat/runtime_libraries.toml), whether the loader finds that name: LD_LIBRARY_PATH, a loader cache that holds
    it, or the driver store's libcuda.so as a link that ldconfig records.

    Why it matters: the Windows driver installs libcuda.so as a copy of libcuda.so.1.1, so ldconfig caches only
    libcuda.so.1 and /usr/lib/wsl/lib is on no other search path: the open fails with "RuntimeError: Failed to
    dlopen libcuda.so" (https://github.com/NVIDIA/cuda-python/issues/17) or "Could not load library
    libcudnn_cnn_infer.so.8. Error: libcuda.so: cannot open shared object file"
    (https://github.com/microsoft/WSL/issues/8587), while CUDA itself works.

    How to fix: export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH (the threads' fix), or upgrade the
    package to a release that opens libcuda.so.1 (cuda-python 11.6.1, cuDNN 8.8).
    """

    name = "wsl-unversioned-libcuda"
    category = "driver"

    def check(
        self,
        host: HostInfo,
        driver: DriverInfo,
        matrix: CompatMatrix,
        packages: dict[str, InstalledPackage] | None = None,
        cudnn: tuple[LibraryCopy, ...] = (),
    ) -> Problem | None:
        _wsl_store(host, driver)
        openers = driver_openers(packages or {}, cudnn, matrix)
        if not openers:
            raise NotApplicable("no installed package opens the driver as libcuda.so")
        wsl_files = [f.path for f in driver.libcuda_files if f.kind == "wsl"]
        hit = next((h for h in driver.resolved_libcuda if h.soname == "libcuda.so"), None)
        if unversioned_libcuda_found(hit.path if hit else None, hit.via if hit else None, wsl_files):
            return None
        who = "; ".join(f"{name} ({row.object_read} opens {row.opens})" for name, row in openers)
        return Problem(
            f"{who}; on WSL2 the loader cache holds libcuda.so.1 only and {WSL_LIB} is not on LD_LIBRARY_PATH, "
            "so that open fails ('Failed to dlopen libcuda.so' / 'libcuda.so: cannot open shared object file')",
            {
                "opens libcuda.so": who,
                "libcuda.so found by the loader": f"{hit.path} ({hit.via})" if hit else "nowhere",
                "read from": ", ".join(sorted({row.wheel_read for _n, row in openers})),
            },
            Remediation(
                "Put the WSL2 driver store on LD_LIBRARY_PATH (add the line to ~/.bashrc to keep it), or upgrade to a "
                "release that opens libcuda.so.1 (cuda-python 11.6.1 or newer, cuDNN 8.8 or newer).",
                (f"export LD_LIBRARY_PATH={WSL_LIB}:$LD_LIBRARY_PATH",),
            ),
        )
