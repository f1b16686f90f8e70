"""Project settings (``[tool.cudadoctor]`` / ``.cudadoctor.toml``): :func:`parse_settings` and the files."""

from __future__ import annotations

import os
import tempfile
from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

from cudadoctor.config import FAIL_ON, Settings, find_settings, parse_settings
from cudadoctor.errors import UsageError
from tests.property.strategies import any_text, assert_one_line, mutated, property_settings

#: Examples per parser (each property of a parser runs this many).
EXAMPLES = {"parse_settings": 150, "find_settings": 50}

_KEYS = st.sampled_from(["ignore", "select", "require", "fail-on"]) | st.text(max_size=10)
_TOML_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10) | st.sampled_from(FAIL_ON),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
_SEED = '[tool.cudadoctor]\nignore = ["CD104", "CD9"]\nrequire = ["torch>=2.6", "cuda>=12.4"]\nfail-on = "warning"\n'


def _check(read: Any) -> None:
    try:
        settings = read()
    except UsageError as exc:
        if len(str(exc).splitlines()) > 1 and "unknown setting" in str(exc):
            # Known config.py bug (outside this change): a quoted TOML key with a line break is named as
            # is; pinned by a strict xfail in test_regressions.py. Remove when that test passes.
            event("known config bug: a key with a line break in a message")
            return
        assert_one_line(exc)
    else:
        assert isinstance(settings, Settings)
        assert settings.fail_on in (None, *FAIL_ON)
        assert all(isinstance(s, str) for s in (*settings.ignore, *settings.select, *settings.require))


@property_settings(EXAMPLES["parse_settings"])
@given(st.dictionaries(_KEYS, _TOML_VALUES, max_size=5))
def test_parse_settings_any_table(table: dict[str, Any]) -> None:
    _check(lambda: parse_settings("/w/pyproject.toml", table))


@property_settings(EXAMPLES["parse_settings"])
@given(
    st.lists(st.text(max_size=8), max_size=4),
    st.lists(st.text(max_size=8), max_size=4),
    st.lists(st.text(max_size=8), max_size=4),
    st.none() | st.sampled_from(FAIL_ON),
)
def test_parse_settings_round_trip(
    ignore: list[str], select: list[str], require: list[str], fail_on: str | None
) -> None:
    table: dict[str, Any] = {"ignore": ignore, "select": select, "require": require}
    if fail_on is not None:
        table["fail-on"] = fail_on
    settings = parse_settings("/w/.cudadoctor.toml", table)
    assert (settings.ignore, settings.select, settings.require, settings.fail_on) == (
        tuple(ignore),
        tuple(select),
        tuple(require),
        fail_on,
    )


@property_settings(EXAMPLES["find_settings"])
@given(
    st.one_of(
        st.tuples(st.one_of(any_text(), mutated(_SEED)), st.just("pyproject.toml")),
        st.tuples(st.one_of(any_text(), mutated(_SEED.partition("\n")[2])), st.just(".cudadoctor.toml")),
    )
)
def test_find_settings_any_file(case: tuple[str, str]) -> None:
    text, name = case
    with tempfile.TemporaryDirectory() as directory:
        with open(os.path.join(directory, name), "w", encoding="utf-8") as handle:
            handle.write(text)
        _check(lambda: find_settings(directory))
