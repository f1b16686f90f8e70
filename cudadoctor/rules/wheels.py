"""Does a release publish wheels for this Python version and platform.

A wheel's tags say which CPython versions it installs on (https://packaging.python.org/en/latest/specifications/platform-compatibility-tags/):
``cp312`` one version, ``cp38-abi3`` 3.8 and every newer one; ``Requires-Python``
(https://packaging.python.org/en/latest/specifications/core-metadata/#requires-python) bounds them all.
The Python versions of each release are in compat/torch.toml, compat/vllm.toml and compat/ecosystem.toml
(TensorFlow), read from the wheel file names on PyPI.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Protocol

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudadoctor.data.rows import TensorflowRelease, TorchRelease, VllmRelease
from cudadoctor.rules.verdict import Verdict, cannot_judge, fails, fits

__all__ = [
    "PLATFORMS",
    "PlatformWheels",
    "free_threaded",
    "freethreaded_has_wheels",
    "platform_pythons",
    "python_has_wheels",
    "release_has_wheels",
    "tensorflow_has_wheels",
    "torch_has_wheels",
    "vllm_has_wheels",
    "wheel_platform",
]

#: The platforms compat data has wheels for.
PLATFORMS = ("linux-x86_64", "linux-aarch64", "windows", "macos-arm64")


def wheel_platform(os: str | None, arch: str | None) -> str:
    """The wheel platform of a host (``linux-x86_64`` when nothing is known)."""
    if os == "Windows":
        return "windows"
    if os == "Darwin" and arch in ("aarch64", "arm64"):
        return "macos-arm64"
    return "linux-aarch64" if arch in ("aarch64", "arm64") else "linux-x86_64"


def _short(version: Version) -> str:
    return f"{version.major}.{version.minor}"


def python_has_wheels(
    python: Version,
    *,
    pythons: tuple[str, ...] = (),
    requires_python: SpecifierSet | None = None,
    abi3: bool = False,
) -> Verdict[str]:
    """Do wheels tagged for ``pythons`` (``abi3``: the first is a floor), within ``requires_python``, install?

    Could not judge when the data has neither the wheels' Python versions nor a Requires-Python. A problem's
    ``detail`` says what excludes it: ``requires-python``, ``abi3`` (the floor) or ``tags``.
    """
    observed = f"Python {_short(python)}"
    if requires_python is not None and not requires_python.contains(python, prereleases=True):
        return fails("python", observed, str(requires_python), "requires-python")
    if abi3 and pythons:
        floor = tuple(int(p) for p in pythons[0].split("."))
        if (python.major, python.minor) < floor:
            return fails("python", observed, f">={pythons[0]} (abi3)", "abi3")
        return fits("python", f"abi3 wheels for Python {pythons[0]} and newer")
    if pythons:
        if _short(python) not in pythons:
            return fails("python", observed, ", ".join(pythons), "tags")
        return fits("python", f"wheels for Python {_short(python)}")
    if requires_python is not None:
        return fits("python", f"Requires-Python {requires_python}")
    return cannot_judge("python", "the Python versions of its wheels", observed)


class PlatformWheels(Protocol):
    """A release row with the CPython versions of its PyPI wheels per platform (torch, TensorFlow)."""

    @property
    def version(self) -> Version: ...
    @property
    def python(self) -> tuple[str, ...]: ...
    @property
    def python_aarch64(self) -> tuple[str, ...]: ...
    @property
    def python_macos_arm64(self) -> tuple[str, ...]: ...
    @property
    def python_windows(self) -> tuple[str, ...]: ...
    @property
    def requires_python(self) -> SpecifierSet | None: ...


def platform_pythons(release: PlatformWheels, platform: str) -> tuple[str, ...]:
    """The CPython versions of a release's wheels on one platform (``python`` is manylinux x86_64)."""
    by_platform = {
        "linux-aarch64": release.python_aarch64,
        "macos-arm64": release.python_macos_arm64,
        "windows": release.python_windows,
    }
    return by_platform.get(platform, release.python)


def release_has_wheels(release: PlatformWheels, python: Version, platform: str) -> Verdict[str]:
    """Wheels on ``platform`` for ``python``: the platform's tags; without them, only a Requires-Python excluding it.

    No tags for the platform is otherwise not judged: PyPI may lack them while the project's own index has
    them (torch's Windows wheels before 1.7.0 were on download.pytorch.org only).
    """
    pythons = platform_pythons(release, platform)
    if pythons:
        return python_has_wheels(python, pythons=pythons)
    requires = release.requires_python
    if requires is not None and not requires.contains(python, prereleases=True):
        return python_has_wheels(python, requires_python=requires)
    return cannot_judge("python", f"the Python versions of its {platform} wheels", f"Python {_short(python)}")


def torch_has_wheels(release: TorchRelease, python: Version, platform: str) -> Verdict[str]:
    """Does this torch release have wheels for ``python`` on ``platform`` (compat/torch.toml)?"""
    return release_has_wheels(release, python, platform)


def tensorflow_has_wheels(release: TensorflowRelease, python: Version, platform: str) -> Verdict[str]:
    """Does this TensorFlow release have wheels for ``python`` on ``platform`` (compat/ecosystem.toml)?"""
    return release_has_wheels(release, python, platform)


def vllm_has_wheels(release: VllmRelease, python: Version) -> Verdict[str]:
    """Does this vLLM release have wheels for ``python`` (compat/vllm.toml: its tags and Requires-Python)?"""
    return python_has_wheels(python, pythons=release.python, requires_python=release.requires_python, abi3=release.abi3)


#: CPython's POSIX install schemes put site-packages in ``lib/python{py_version_short}{abi_thread}``, where
#: ``abi_thread`` is ``t`` for a free-threaded build (CPython Lib/sysconfig/__init__.py, 3.13 and later;
#: https://docs.python.org/3/library/sysconfig.html#installation-paths).
_SITE_DIR = re.compile(r"[/\\]python3\.\d+(t?)[/\\]site-packages$")


def free_threaded(site_paths: Iterable[str]) -> bool | None:
    """Is the interpreter a free-threaded build, going by its site-packages directories? None: they do not say
    (Windows' ``Lib\\site-packages``, or directories that disagree)."""
    flags = {m.group(1) == "t" for path in site_paths if (m := _SITE_DIR.search(path.rstrip("/\\")))}
    return flags.pop() if len(flags) == 1 else None


def freethreaded_has_wheels(release: TorchRelease, python: Version) -> Verdict[str]:
    """Does this torch release have free-threaded wheels (ABI ``cp313t``) for ``python``?

    compat/torch.toml ``python_freethreaded``: the same on every platform for every release read. A free-threaded
    interpreter installs only those (the ``cpXY`` wheels are built for the GIL ABI). A problem's ``required``
    lists the ``X.Yt`` versions it has, or says it has none.
    """
    short = _short(python)
    if short in release.python_freethreaded:
        return fits("python", f"free-threaded wheels for Python {short}t")
    required = ", ".join(f"{p}t" for p in release.python_freethreaded) or "none (no free-threaded wheels)"
    return fails("python", f"Python {short}t (free-threaded)", required, "free-threaded")
