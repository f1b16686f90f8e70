"""Facts for check tests: the real H200 machine's snapshot, changed one fact at a time."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cudadoctor.facts.codec import facts_from_json
from cudadoctor.facts.model import EnvVar, Facts
from tests.conftest import fixture_text


@pytest.fixture(scope="session")
def h200() -> Facts:
    """The facts cudadoctor read on the real H200 (tests/fixtures/h200-device/snapshot.json)."""
    return facts_from_json(fixture_text("h200-device", "snapshot.json"))


def with_env(facts: Facts, **values: str | None) -> Facts:
    """The facts with host environment variables set (or removed, for None)."""
    env = [v for v in facts.host.env if v.name not in values]
    env += [EnvVar(k, v) for k, v in values.items() if v is not None]
    return replace(facts, host=replace(facts.host, env=tuple(env)))
