"""The README says what the code does: its checks table is the registry's."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from cudadoctor.catalog import check_table

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")


def test_readme_checks_table_is_generated_from_the_registry():
    with open(README, encoding="utf-8") as handle:
        text = handle.read()
    match = re.search(r"<!-- checks table:[^\n]*-->\n(.*?)<!-- end of checks table -->", text, flags=re.DOTALL)
    assert match, "the README lost its checks-table markers"
    assert match.group(1) == check_table(), "regenerate it: cudadoctor list-checks --format markdown"


def _console_block(text: str, command: str) -> str:
    """The output lines of the README's ```console block whose first line is ``$ COMMAND`` (comment aside)."""
    start = text.index(f"```console\n$ {command}")
    body = text[text.index("\n", start + len("```console\n")) + 1 :]
    return body[: body.index("```\n")]


def test_readme_h200_example_is_the_captured_output():
    """The first example is the real H200's output as captured (issue #30: no hand-kept example output)."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as handle:
        readme = handle.read()
    with open(os.path.join(ROOT, "tests", "fixtures", "h200-device", "check-2026-12-04.txt"), encoding="utf-8") as f:
        captured = f.read()
    assert _console_block(readme, "cudadoctor check   # on a real H200 machine") == captured


#: ``$ cudadoctor check --from tests/fixtures/...`` blocks: their output is the command's, run here on the fixture.
_REPLAYED = re.compile(
    r"```console\n\$ cudadoctor (check --from tests/fixtures/[^\n#]*?)\s*(?:#[^\n]*)?\n(.*?)```\n", re.S
)


def test_readme_examples_replayed_from_fixtures_are_what_check_prints_today():
    with open(README, encoding="utf-8") as handle:
        blocks = _REPLAYED.findall(handle.read())
    assert len(blocks) >= 2
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "CLICOLOR_FORCE")}
    for command, shown in blocks:
        argv = [a.strip('"') for a in re.findall(r'"[^"]*"|\S+', command)]
        printed = subprocess.run(
            [sys.executable, "-m", "cudadoctor", *argv], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60
        )
        assert printed.returncode in (0, 1), printed.stderr
        assert shown == printed.stdout, f"README's example of `cudadoctor {command}` is stale: paste what it prints"
