"""The README says what the code does: its checks table is the registry's."""

from __future__ import annotations

import os
import re

from cudadoctor.catalog import check_table

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")


def test_readme_checks_table_is_generated_from_the_registry():
    with open(README, encoding="utf-8") as handle:
        text = handle.read()
    match = re.search(r"<!-- checks table:[^\n]*-->\n(.*?)<!-- end of checks table -->", text, flags=re.DOTALL)
    assert match, "the README lost its checks-table markers"
    assert match.group(1) == check_table(), "regenerate it: cudadoctor list-checks --format markdown"
