"""Every citation is public: a URL, a compat source id that resolves to one, or a file of this repository.

Research notes that live outside the repository (a note's name and a "§" section number) cannot be opened by
a user or a reviewer, so no code, data, documentation or test may cite them, and no check may print one in its
``explain`` text. A claim that has no public source is written as the project's own measurement instead
(``measured on a real H200, tests/fixtures/h200-deep/deep-s1.json``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cudadoctor.cli import app

ROOT = Path(__file__).resolve().parent.parent

#: Where citations live: code, data, documentation, examples, the benchmark and the tests themselves.
SCANNED = ("cudadoctor", "compat", "docs", "examples", "bench", "tests", "README.md", "CONTRIBUTING.md")


def _private_names() -> list[str]:
    """The names of the notes beside the checkout (the folder the developers share, outside the repository),
    read from the disk rather than spelled here, so this test cites none of them itself."""
    shared = ROOT.parent / "shared"
    if not shared.is_dir():
        return []
    names = {p.stem for folder in shared.iterdir() if folder.is_dir() for p in folder.iterdir()}
    names |= {f"{shared.name}/{folder.name}" for folder in shared.iterdir() if folder.is_dir()}
    return sorted(n for n in names if "-" in n or "/" in n)  # hyphenated note names and folder paths


#: The notes' names, their folders, a generic note-name shape, and bare section numbers ("§12.2").
PRIVATE = re.compile("|".join([*map(re.escape, _private_names()), r"\b[a-z]+-anchors\b", r"§\s*\d"]))

SUFFIXES = {".py", ".toml", ".md", ".txt", ".json", ".conf", ".cfg", ".ini", ".yml", ".yaml", ".sh", ".h", ""}


def _files() -> list[Path]:
    found: list[Path] = []
    for name in SCANNED:
        path = ROOT / name
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found += [
                p
                for p in path.rglob("*")
                if p.is_file() and p.suffix in SUFFIXES and "__pycache__" not in p.parts and p != Path(__file__)
            ]
    return found


def test_no_file_cites_a_private_note():
    offenders = []
    for path in _files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if PRIVATE.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert offenders == [], "cite a public URL or a compat source id instead:\n" + "\n".join(offenders)


def test_the_scan_sees_the_trees_it_guards():
    files = {p.relative_to(ROOT).parts[0] for p in _files()}
    assert {"cudadoctor", "compat", "tests", "README.md"} <= files


def _codes() -> list[str]:
    result = CliRunner().invoke(app, ["list-checks", "-f", "json"])
    assert result.exit_code == 0, result.output
    return [row["code"] for row in json.loads(result.stdout)["checks"]]


@pytest.mark.parametrize("output_format", ["text", "json"])
def test_explain_text_of_every_check_cites_nothing_private(output_format: str):
    codes = _codes()
    assert len(codes) > 20
    offenders = []
    for code in codes:
        result = CliRunner().invoke(app, ["explain", code, "-f", output_format])
        assert result.exit_code == 0, (code, result.output)
        if match := PRIVATE.search(result.stdout):
            offenders.append(f"{code}: ...{result.stdout[max(0, match.start() - 40) : match.end() + 40]}...")
    assert offenders == []


def test_compat_sources_are_public_urls():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    for path in sorted((ROOT / "compat").glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        for source in data.get("meta", {}).get("sources", []):
            assert re.match(r"https?://", source["url"]), (path.name, source["id"], source["url"])
