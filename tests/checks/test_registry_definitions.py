"""Every check definition is well formed: its code, docstring sections, name and fact parameters."""

from __future__ import annotations

import gc

from cudadoctor.checks import ALL_CHECKS, definition_problems
from cudadoctor.checks._base import Check


def test_every_check_definition_is_valid() -> None:
    assert definition_problems() == []


def test_the_registry_holds_every_check_class() -> None:
    assert len(ALL_CHECKS) > 50
    assert all(code == type(check).__name__ for code, check in ALL_CHECKS.items())


def test_broken_definitions_are_found() -> None:
    """A check without its docstring sections, and one asking for a fact that does not exist, are reported."""

    class CD998(Check):
        """Healthy."""

        name = "no-sections"

        def check(self, host: object) -> None: ...

    class CD999(Check):
        """Healthy.

        What it checks: a.
        Why it matters: b.
        How to fix: c.
        """

        name = "unknown-fact"

        def check(self, no_such_fact: object) -> None: ...

    problems = definition_problems()
    assert any(p.startswith("CD998: docstring lacks sections") for p in problems)
    assert "CD999: parameter 'no_such_fact' names no registered fact" in problems
    del CD998, CD999
    gc.collect()  # the throwaway classes leave Check's subclass list for the tests that follow
    assert definition_problems() == []
