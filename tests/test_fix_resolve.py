"""Printed torch commands resolved by pip itself: ``pip install --dry-run --report`` against a local PEP 503
index built from compat/torch.toml (https://peps.python.org/pep-0503/), one index for PyPI and one per
variant of PyTorch's own (``/whl/cu118``), each wheel an empty one named and tagged as the real one is
(``torch-2.1.0+cu118-cp310-cp310-manylinux_2_17_x86_64.whl`` with its METADATA; a companion's METADATA
pins its torch), and a links page for the 1.x builds compat/torch.toml's ``[[install_form]]`` puts on one.
A command that names a version, build or index the data does not have fails to resolve;
so does the verifier's answer disagreeing with pip's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import DriverVersion
from cudadoctor.fixes import Install, Pin, render
from cudadoctor.fixes.parse import parse
from cudadoctor.fixes.releases import torch_build_source
from cudadoctor.fixes.torch import torch_build_install
from cudadoctor.fixes.verify import verify
from cudadoctor.suggest import Constraints, Gpu
from cudadoctor.suggest.torch import suggest_torch

pytestmark = pytest.mark.slow

M = CompatMatrix(cache_dir=False)
PYTHON = "3.10"
#: the Pythons the local index has wheels for: 3.10 (torch 1.11 and newer), 3.9 (the 1.x links pages)
PYTHONS = ("3.9", "3.10")


def _tag(python: str) -> str:
    digits = python.replace(".", "")
    return f"cp{digits}-cp{digits}-manylinux_2_17_x86_64"


def _wheel(files: Path, name: str, version: str, python: str, requires: tuple[str, ...] = ()) -> str:
    filename = f"{name}-{version}-{_tag(python)}.whl"
    info = f"{name}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    with zipfile.ZipFile(files / filename, "w") as wheel:
        wheel.writestr(f"{info}/METADATA", metadata)
        wheel.writestr(
            f"{info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {_tag(python)}\n"
        )
        wheel.writestr(f"{info}/RECORD", "")
    return filename


def _index(root: Path, wheels: dict[str, list[str]]) -> None:
    for name, filenames in wheels.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        links = "".join(f'<a href="../../files/{f}">{f}</a>' for f in filenames)
        (root / name / "index.html").write_text(f"<html><body>{links}</body></html>")


@pytest.fixture(scope="module")
def indexes(tmp_path_factory: pytest.TempPathFactory) -> dict[str | None, str]:
    """index or links-page URL as printed (None: PyPI) -> the local copy's file:// URL."""
    root = tmp_path_factory.mktemp("index")
    files = root / "files"
    files.mkdir()
    per_source: dict[str | None, dict[str, list[str]]] = {None: {}}
    links_pages: set[str] = set()
    for release in M.torch_releases:
        pythons = [p for p in PYTHONS if p in release.python]
        if not pythons:
            continue
        builds: list[tuple[str | None, str, tuple[str, ...]]] = [(None, "", ())]  # PyPI: no local version
        for tag in release.variants:
            source = torch_build_source(M, release, tag)
            if source is not None and source.url is not None:
                builds.append((source.url, tag, source.local_tag))
                if source.option == "find-links":
                    links_pages.add(source.url)
        for url, tag, tagged in builds:
            wheels = per_source.setdefault(url, {})
            for name in ("torch", "torchvision", "torchaudio"):
                version = release.version if name == "torch" else getattr(release, name)
                if version is None:
                    continue
                local = f"+{tag}" if name in tagged else ""
                requires = () if name == "torch" else (f"torch=={release.version}",)
                made = [_wheel(files, name, f"{version}{local}", p, requires) for p in pythons]
                wheels.setdefault(name, []).extend(made)
    out: dict[str | None, str] = {}
    for number, (url, wheels) in enumerate(per_source.items()):
        if url in links_pages:  # a links page (pip's -f): one HTML file of wheel links
            page = root / f"links{number}.html"
            links = "".join(f'<a href="files/{f}">{f}</a>' for names in wheels.values() for f in names)
            page.write_text(f"<html><body>{links}</body></html>")
            out[url] = page.as_uri()
        else:
            _index(root / f"simple{number}", wheels)
            out[url] = (root / f"simple{number}").as_uri()
    return out


def _resolve(
    command: str, indexes: dict[str | None, str], tmp: Path, python: str = PYTHON
) -> tuple[int, str, dict[str, str]]:
    """(pip's exit status, its error output, name -> version it would install) for a printed command."""
    parsed = parse(command)
    assert isinstance(parsed, Install), command
    named = [parsed.index_url, *parsed.extra_index_urls, *parsed.find_links]
    if any(u not in indexes for u in named):
        return 1, f"no local copy of an index of {command}", {}
    argv = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--disable-pip-version-check"]
    argv += ["--no-cache-dir", "--only-binary=:all:", "--python-version", python]
    argv += ["--platform", "manylinux_2_17_x86_64", "--target", str(tmp / "target"), "--report", str(tmp / "r.json")]
    argv += ["--index-url", indexes[parsed.index_url]]
    for url in parsed.extra_index_urls:
        argv += ["--extra-index-url", indexes[url]]
    for url in parsed.find_links:
        argv += ["--find-links", indexes[url]]
    argv += ["--no-deps"] * parsed.no_deps + [p.text for p in parsed.pins]
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)
    if done.returncode:
        return done.returncode, done.stderr, {}
    report = json.loads((tmp / "r.json").read_text())
    return 0, "", {i["metadata"]["name"]: i["metadata"]["version"] for i in report["install"]}


def _sample() -> list[tuple[str, str]]:
    """Commands cudadoctor prints: suggest's top torch plans on a few machines, and a check's torch build."""
    python = Version(PYTHON)
    machines = [
        Constraints(python=python),
        Constraints(python=python, driver=DriverVersion("470.82.01")),
        Constraints(python=python, driver=DriverVersion("535.104.05"), gpus=(Gpu("RTX 4090", "8.9", "--gpu"),)),
    ]
    out = [(p.commands[0], PYTHON) for c in machines for p in suggest_torch(M, c, limit=1).plans]
    # a check's torch builds: from an index, and 1.x ones from a links page or an extra index
    builds = [("2.1.0", "cu118", PYTHON), ("2.1.0", "cu121", PYTHON), ("1.12.1", "cu116", PYTHON)]
    builds += [("1.10.1", "cu111", "3.9"), ("1.9.0", "cu111", "3.9")]
    for version, variant, build_python in builds:
        release = M.torch_release(Version(version))
        assert release is not None
        command = torch_build_install(M, release, variant, {"torchvision": Version("0.1")})
        assert command is not None
        out.append((render(command), build_python))
    return out


def test_printed_commands_resolve_on_an_index_built_from_the_data(indexes, tmp_path):
    sample = _sample()
    assert len(sample) == 8
    assert any("-f " in command for command, _python in sample)  # the 1.x links pages are among them
    for command, python in sample:
        status, error, resolved = _resolve(command, indexes, tmp_path, python)
        assert status == 0, (command, error)
        parsed = parse(command)
        assert isinstance(parsed, Install)
        for pin in parsed.pins:
            if pin.version is not None:  # a public pin takes the index's build: compared without its local tag
                got, wanted = Version(resolved[pin.name]), Version(pin.version)
                assert (got if wanted.local else Version(got.public)) == wanted, (command, resolved)


def test_a_build_the_index_does_not_have_fails_there_and_in_the_verifier(indexes, tmp_path):
    # torch 2.1.0 was built for cu118 and cu121 (compat/torch.toml), not cu117, whose index has older releases
    url = M.torch_variants["cu117"].index_url
    missing = Install((Pin.exact("torch", "2.1.0+cu117"),), url)
    status, error, _resolved = _resolve(render(missing), indexes, tmp_path)
    assert status != 0 and "No matching distribution found for torch==2.1.0+cu117" in error
    assert verify(missing, M, {}, python=Version(PYTHON)).problems
