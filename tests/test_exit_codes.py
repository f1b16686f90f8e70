"""The README's one exit-code table, held to the commands: every cell that names an outcome has a case here that
runs the command and gets that code (issue #30)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SNAPSHOT = os.path.join(REPO, "tests", "fixtures", "h200-device", "snapshot.json")
REPORT = os.path.join(REPO, "tests", "fixtures", "h200-device", "check.json")

#: (README column, code) -> the arguments of a run that must exit with it; "{tmp}" is a fresh directory.
CASES: dict[tuple[str, int], list[str]] = {
    ("check", 0): ["check", "--from", SNAPSHOT],
    ("check", 1): ["check", "--from", SNAPSHOT, "--driver", "535.104.05"],
    ("check", 2): ["check", "--from", "{tmp}/missing.json"],
    ("suggest", 0): ["suggest", "--target", "torch", "--gpu", "H100", "--driver", "580.65.06", "--python", "3.12"],
    ("suggest", 1): ["suggest", "--target", "torch==1.10.1", "--gpu", "RTX 3090", "--python", "3.11"],
    ("suggest", 2): ["suggest", "--target", "torch", "--gpu", "H1OO"],
    ("compare", 0): ["compare", SNAPSHOT, REPORT],
    ("compare", 1): ["compare", SNAPSHOT, REPORT, "{tmp}/old-driver.json"],
    ("compare", 2): ["compare", SNAPSHOT, "{tmp}/garbage.json"],
    ("usage", 2): ["usage", "--sample", "-1"],
    ("others", 0): ["explain", "CD101"],
    ("others", 2): ["completion", "tcsh"],
}


def _readme_cells() -> set[tuple[str, int]]:
    """(column, code) of every cell of the README's exit-code table that names an outcome (not '—' or empty)."""
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as handle:
        text = handle.read()
    table = text[text.index("### Exit codes") :].split("\n\n")[2]
    rows = [line for line in table.splitlines() if re.match(r"\| \d+ \|", line)]
    columns = ["check", "suggest", "compare", "usage", "others"]
    cells = set()
    for row in rows:
        parts = [p.strip() for p in re.split(r"(?<!\\)\|", row)[1:-1]]
        code = int(parts[0])
        for name, cell in zip(columns, parts[1:], strict=False):
            if cell and cell != "—" and code in (0, 1, 2):  # 3 is a bug or a missing driver; 141 a closed pipe
                cells.add((name, code))
    return cells


#: Cells no machine without a GPU can show: `usage` shows GPUs only where NVML answers (tests/test_usage.py
#: holds its rendering on recorded NVML answers).
NEEDS_A_GPU = {("usage", 0)}


def test_every_outcome_in_the_table_has_a_case():
    cells = _readme_cells()
    assert len(cells) >= 10
    assert cells - set(CASES) == NEEDS_A_GPU
    assert set(CASES) <= cells  # and no case for an outcome the table does not name


def _prepare(tmp: str) -> None:
    with open(os.path.join(tmp, "garbage.json"), "w", encoding="utf-8") as handle:
        handle.write("{not json")
    with open(SNAPSHOT, encoding="utf-8") as handle:
        snapshot = json.load(handle)
    text = json.dumps(snapshot).replace("580.159.04", "570.86.15")  # one node on another driver
    with open(os.path.join(tmp, "old-driver.json"), "w", encoding="utf-8") as handle:
        handle.write(text)


@pytest.mark.parametrize(("cell", "args"), sorted(CASES.items()), ids=[f"{c}-{n}" for c, n in sorted(CASES)])
def test_the_command_exits_as_the_table_says(cell, args, tmp_path):
    _prepare(str(tmp_path))
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    result = subprocess.run(
        [sys.executable, "-m", "cudadoctor", *argv], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert result.returncode == cell[1], (argv, result.stdout[-2000:], result.stderr[-2000:])
    if cell[1] == 2:
        assert result.stderr.strip() and "Traceback" not in result.stderr
