"""The real H200 machine's facts, for the consistency tests (as tests/checks has them)."""

from __future__ import annotations

import pytest

from cudadoctor.facts.codec import facts_from_json
from cudadoctor.facts.model import Facts
from tests.conftest import fixture_text


@pytest.fixture(scope="session")
def h200() -> Facts:
    return facts_from_json(fixture_text("h200-device", "snapshot.json"))
