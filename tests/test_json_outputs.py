"""docs/json-outputs.md holds every JSON document's top-level fields: each command below is run and its fields
compared with the page's table for its kind (issue #30: suggest, compare, health-json and usage documented and
versioned like the check report)."""

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
SUGGEST = ["suggest", "--target", "torch", "--gpu", "H100", "--driver", "580.65.06", "--python", "3.12"]

#: kind -> a command that prints it (``usage`` prints its document whether NVML answers or not)
COMMANDS = {
    "cudadoctor-report": ["check", "--from", SNAPSHOT, "-f", "json"],
    "cudadoctor-facts": ["snapshot", "-o", "-"],
    "cudadoctor-suggestion": [*SUGGEST, "-f", "json"],
    "cudadoctor-suggest-matrix": [*SUGGEST, "--matrix", "-f", "json"],
    "cudadoctor-driver-plan": ["suggest", "driver", "--gpu", "H100", "--no-probe", "-f", "json"],
    "cudadoctor-compare": ["compare", SNAPSHOT, REPORT, "-f", "json"],
    "cudadoctor-node-health": ["check", "--from", SNAPSHOT, "-f", "health-json"],
    "cudadoctor-usage": ["usage", "--sample", "0", "-f", "json"],
    "cudadoctor-why": ["why", "CUDA driver version is insufficient", "--from", SNAPSHOT, "-f", "json"],
}


def _page() -> str:
    with open(os.path.join(REPO, "docs", "json-outputs.md"), encoding="utf-8") as handle:
        return handle.read()


def _documented() -> dict[str, tuple[int | None, set[str], set[str]]]:
    """kind -> (schema_version in the index table, every top-level field, those marked "when" (optional))."""
    page = _page()
    versions = {m[1]: int(m[2]) for m in re.finditer(r"^\| `(cudadoctor-[a-z-]+)` \| (\d+) \|", page, re.M)}
    out = {}
    for section in re.split(r"^## ", page, flags=re.M)[1:]:
        kind = re.match(r"`(cudadoctor-[a-z-]+)`", section)
        if kind is None:
            continue
        fields: set[str] = set()
        optional: set[str] = set()
        for row in re.finditer(r"^\| ((?:`[^`]+`(?:, )?)+) \| [^|]+ \| ([^\n]*)\|$", section, re.M):
            names = {n for n in re.findall(r"`([^`]+)`", row[1]) if "." not in n and "[" not in n}
            fields |= names
            if row[2].strip().startswith("when"):
                optional |= names
        out[kind[1]] = (versions.get(kind[1]), fields, optional)
    return out


def test_every_kind_in_the_index_has_its_section_and_a_command():
    documented = _documented()
    index = set(re.findall(r"^\| `(cudadoctor-[a-z-]+)` \|", _page(), re.M))
    assert index == set(documented) | {"cudadoctor-facts"} == set(COMMANDS)


@pytest.mark.parametrize("kind", sorted(COMMANDS))
def test_the_document_has_exactly_the_documented_fields(kind):
    result = subprocess.run(
        [sys.executable, "-m", "cudadoctor", *COMMANDS[kind]], capture_output=True, text=True, cwd=REPO, timeout=90
    )
    assert result.stdout, result.stderr[-2000:]
    document = json.loads(result.stdout)
    assert document["kind"] == kind
    if kind == "cudadoctor-facts":  # its fields are the facts schema's (docs/facts-schema.md, tests/test_codec.py)
        assert set(document) == {"kind", "schema_version", "facts"}
        return
    version, fields, optional = _documented()[kind]
    assert document["schema_version"] == version
    assert set(document) <= fields, f"undocumented: {sorted(set(document) - fields)}"
    assert fields - optional <= set(document), f"documented but missing: {sorted(fields - optional - set(document))}"
