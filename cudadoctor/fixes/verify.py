"""Whether a fix command works: it names a version, build, index and Python the compat data has, pip would
change something given what is installed, and it keeps the pins of the installed packages it does not move
(:mod:`cudadoctor.fixes.pins`; principle 10: a fix is a command that works).

:func:`verify` is pure over the command model, the :class:`~cudadoctor.data.CompatMatrix` and the installed
versions. Each finding is a *problem* (the command names something the data says does not exist, or would
do nothing) or *could not verify* (the data has no release list for a package it names): the second is
never counted as verified.

pip's rules it follows: a public specifier is satisfied by any local version (``==2.1.0`` by ``2.1.0+cpu``,
https://packaging.python.org/en/latest/specifications/version-specifiers/#local-version-identifiers), and an
installed distribution that satisfies the requirement is kept ("Requirement already satisfied") unless
``--force-reinstall`` or ``-U`` is given (https://pip.pypa.io/en/stable/cli/pip_install/).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.facts.names import canonical_name
from cudadoctor.fixes.model import Command, Install, Pin, Steps, Uninstall
from cudadoctor.fixes.pins import broken_pins, pin_spec, pin_version
from cudadoctor.fixes.releases import (
    TORCH_STABLE,
    index_variant,
    known_source,
    known_versions,
    package_builds,
    package_indexes,
    torch_build_source,
    wheel_pythons,
)
from cudadoctor.record import record

__all__ = ["Verification", "changes", "satisfied", "verify"]

#: published with each torch release, on the same indexes
_COMPANIONS = ("torchvision", "torchaudio")


@record
class Verification:
    """What :func:`verify` found in one command: problems, and what the data could not confirm."""

    problems: tuple[str, ...] = ()
    unverified: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems and not self.unverified


def satisfied(pin: Pin, installed: Mapping[str, Version]) -> bool:
    """Whether pip would keep what is installed for this pin ("Requirement already satisfied")."""
    have = installed.get(canonical_name(pin.name))
    if have is None:
        return False
    if pin.url is not None:
        return pin_version(pin) == have
    spec = pin_spec(pin)
    return spec is not None and spec.contains(have, prereleases=True)


def changes(command: Install, installed: Mapping[str, Version]) -> bool:
    """Whether pip would change anything: a pin not satisfied, an extra (it may bring packages), or a
    forced reinstall or upgrade."""
    if command.force_reinstall or command.upgrade:
        return True
    return any(p.extras or not satisfied(p, installed) for p in command.pins)


def _release_problems(matrix: CompatMatrix, pin: Pin, installed: Mapping[str, Version]) -> tuple[list[str], list[str]]:
    """Whether some release of the pin's package the data lists, or the installed one, matches it."""
    known = known_versions(matrix, pin.name)
    if known is None:
        return [], [f"{pin.name}: compat data has no release list"]
    if not pin.spec and pin.url is None:
        return [], []
    wanted = pin_version(pin)
    spec = SpecifierSet(f"=={wanted.public}") if wanted is not None else pin_spec(pin)
    have = installed.get(canonical_name(pin.name))
    known = (*known, Version(have.public)) if have is not None else known  # what is installed was released
    if spec is None:
        return [f"{pin.text}: not a version specifier pip reads"], []
    if not any(spec.contains(v, prereleases=True) for v in known):
        return [f"{pin.text}: no such release of {pin.name} in compat data"], []
    return [], []


def _torch_build_problems(
    matrix: CompatMatrix, pin: Pin, command: Install, python: Version | None, platform: str
) -> list[str]:
    """torch: the release has the build the command takes from where it takes it, for this Python."""
    version = pin_version(pin)
    release = matrix.torch_release(version) if version is not None else None
    if version is None or release is None:
        return []  # no release: named by _release_problems
    problems: list[str] = []
    local = version.local
    named = [u.rstrip("/") for u in (command.index_url, *command.extra_index_urls, *command.find_links) if u]
    if local:
        source = torch_build_source(matrix, release, local)
        if source is None or source.url is None:
            problems.append(f"{pin.text}: compat data lists no {local} build of torch {release.version}")
        elif source.url not in named and not (TORCH_STABLE in named and source.option == "find-links"):
            problems.append(f"{pin.text}: the +{local} build is not on {', '.join(named) or 'PyPI'}")
    elif command.index_url and (tag := index_variant(matrix, command.index_url)) and tag not in release.variants:
        known = ", ".join(release.variants) or "none listed"
        problems.append(f"{pin.text} from {command.index_url}: torch {release.version}'s builds there: {known}")
    aarch64 = platform == "linux-aarch64"
    linux = platform in ("linux-x86_64", "linux-aarch64")
    if python is not None and linux and not matrix.torch_publishes_for_python(release, python, aarch64=aarch64):
        problems.append(f"torch {release.version} has no wheel for Python {python.major}.{python.minor}")
    return problems


def _python_problems(matrix: CompatMatrix, pin: Pin, python: Version | None, platform: str) -> list[str]:
    """A release whose wheels the data says do not install on this Python (its tags, its Requires-Python)."""
    from cudadoctor.rules.wheels import python_has_wheels

    version = pin_version(pin)
    found = wheel_pythons(matrix, pin.name, Version(version.public), platform) if version and python else None
    if found is None or python is None:
        return []
    pythons, requires, abi3 = found
    verdict = python_has_wheels(python, pythons=pythons, requires_python=requires, abi3=abi3)
    if not verdict.is_problem:
        return []
    return [f"{pin.text}: no wheel for Python {python.major}.{python.minor} ({verdict.required})"]


def _companion_problems(matrix: CompatMatrix, pin: Pin, command: Install) -> list[str]:
    """torchvision/torchaudio from PyTorch's index: the release paired with a torch that has that build
    (*inferred*: the companions are published on the same indexes as the torch they pair with)."""
    version = pin_version(pin)
    tag = index_variant(matrix, command.index_url) if command.index_url else None
    if version is None or tag is None:
        return []
    paired = [r for r in matrix.torch_releases if getattr(r, pin.name) == Version(version.public)]
    if paired and not any(tag in r.variants for r in paired):
        return [f"{pin.text}: no torch paired with it has a {tag} build in compat data"]
    return []


def _and_cuda_problems(matrix: CompatMatrix, pin: Pin) -> list[str]:
    """``tensorflow[and-cuda]==X`` where the data says pip cannot resolve X's extra (2.15.0 pins a
    tensorrt-libs PyPI does not have, tensorflow/tensorflow#66517)."""
    version = pin_version(pin)
    row = next((r for r in matrix.tensorflow_releases if version is not None and r.version == version), None)
    if row is not None and row.and_cuda_resolves is False:
        return [f"{pin.text}: pip cannot resolve its [and-cuda] extra (a pin PyPI lacks; compat/ecosystem.toml)"]
    return []


def _build_index_problems(matrix: CompatMatrix, pin: Pin, command: Install) -> list[str]:
    """A release taken from an index compat data lists builds of that package on: it has a build there."""
    url = (command.index_url or "").rstrip("/")
    version = pin_version(pin)
    if not url or package_indexes(matrix).get(url) != canonical_name(pin.name) or version is None:
        return []
    there = {b.version for b in package_builds(matrix, pin.name) if (b.index_url or "").rstrip("/") == url}
    return [] if Version(version.public) in there else [f"{pin.text}: compat data lists no build of it on {url}"]


def _llama_cpp_problems(matrix: CompatMatrix, pin: Pin, command: Install) -> list[str]:
    """llama-cpp-python from one of its CUDA wheel indexes: that index lists the release
    (compat/llama_cpp.toml); without one pip builds the sdist, so the command must say how (CMAKE_ARGS)."""
    version = pin_version(pin)
    named = {u.rstrip("/") for u in (command.index_url, *command.extra_index_urls) if u}
    indexes = [i for i in matrix.llama_cpp_indexes if i.url in named]
    if version is not None and indexes and not any(str(version.public) in i.releases for i in indexes):
        return [f"{pin.text}: {', '.join(i.url for i in indexes)} lists no such release"]
    pypi = matrix.llama_cpp_pypi
    if not indexes and not dict(command.env).get("CMAKE_ARGS") and pypi is not None and pypi.sdist_only:
        return [f"{pin.text}: PyPI has only the sdist; without CMAKE_ARGS pip builds it without CUDA"]
    return []


def _index_problems(matrix: CompatMatrix, command: Install) -> tuple[list[str], list[str]]:
    problems, unverified = [], []
    # the index plain ``tensorrt`` pulls from, NVIDIA's (compat/tensorrt.toml ``plain_tensorrt_index``)
    nvidia = {r.plain_tensorrt_index for r in matrix.tensorrt_releases if r.plain_tensorrt_index}
    others = package_indexes(matrix)  # onnxruntime-gpu's CUDA 12 feed
    for url in (command.index_url, *command.extra_index_urls):
        if url and not known_source(matrix, url) and url not in nvidia and url.rstrip("/") not in others:
            problems.append(f"{url}: no index compat data knows")
    for url in command.find_links:
        if not known_source(matrix, url):
            unverified.append(f"-f {url}: a links page compat data does not list")
    return problems, unverified


def _install(
    matrix: CompatMatrix, command: Install, installed: Mapping[str, Version], python: Version | None, platform: str
) -> Verification:
    problems, unverified = _index_problems(matrix, command)
    for pin in command.pins:
        found, unknown = _release_problems(matrix, pin, installed)
        problems += found
        unverified += unknown
        name = canonical_name(pin.name)
        if name == "torch":
            problems += _torch_build_problems(matrix, pin, command, python, platform)
        else:
            problems += _python_problems(matrix, pin, python, platform)
            problems += _build_index_problems(matrix, pin, command)
        if name in _COMPANIONS:
            problems += _companion_problems(matrix, pin, command)
        elif name == "tensorflow" and "and-cuda" in pin.extras:
            problems += _and_cuda_problems(matrix, pin)
        elif name == "llama-cpp-python":
            problems += _llama_cpp_problems(matrix, pin, command)
        elif name == "xformers" and command.index_url and (tag := index_variant(matrix, command.index_url)):
            version = pin_version(pin)
            row = matrix.xformers_release(Version(version.public)) if version else None
            if row is not None and tag not in matrix.xformers_indexes(row):
                problems.append(f"{pin.text}: xformers's README names no {tag} index for it")
    if not changes(command, installed):
        held = ", ".join(f"{p.name} {installed[canonical_name(p.name)]}" for p in command.pins)
        problems.append(f"pip would change nothing: {held} already satisfies it")
    return Verification(tuple(problems), tuple(unverified))


def verify(
    command: Command,
    matrix: CompatMatrix,
    installed: Mapping[str, Version],
    *,
    python: Version | None = None,
    platform: str = "linux-x86_64",
    requires: Mapping[str, Iterable[str]] | None = None,
) -> Verification:
    """Problems and unverifiable parts of a command, on a machine with ``installed`` (canonical name ->
    version), a Python and a platform (``linux-x86_64``, ``linux-aarch64``, ``windows``); with ``requires``
    (canonical name -> an installed package's Requires-Dist lines that apply), also a version another installed
    package's requirement excludes (:mod:`cudadoctor.fixes.pins`)."""
    steps = command.steps if isinstance(command, Steps) else (command,)
    have = dict(installed)
    problems: list[str] = []
    unverified: list[str] = []
    for step in steps:
        if isinstance(step, Uninstall):
            for name in step.names:
                if have.pop(canonical_name(name), None) is None:
                    problems.append(f"uninstall {name}: it is not installed")
            continue
        found = _install(matrix, step, have, python, platform)
        problems += found.problems
        unverified += found.unverified
        for pin in step.pins:
            if (version := pin_version(pin)) is not None:
                have[canonical_name(pin.name)] = version
    if requires:
        problems += broken_pins(command, requires, installed, matrix)
    return Verification(tuple(problems), tuple(unverified))
