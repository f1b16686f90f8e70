"""The README's twelve everyday machines are what `suggest` and uv's rules answer today (issue #12)."""

from __future__ import annotations

import os

from tests.everyday_machines import END, START, readme_section, table

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")


def test_readme_everyday_machines_table_is_generated_from_real_runs():
    with open(README, encoding="utf-8") as handle:
        text = handle.read()
    section = readme_section(text)
    assert section is not None, f"the README lost its markers {START.strip()} ... {END}"
    assert section == table(), "regenerate it: python -m tests.everyday_machines --write README.md"
