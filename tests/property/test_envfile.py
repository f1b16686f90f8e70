"""``--env-file``: Docker's env-file format."""

from __future__ import annotations

import string

from hypothesis import given
from hypothesis import strategies as st

from cudadoctor.envfile import parse_env_file
from cudadoctor.errors import UsageError
from tests.property.strategies import any_text, assert_one_line, line_free_text, mutated, property_settings

#: Examples per parser (each property of a parser runs this many).
EXAMPLES = {"parse_env_file": 200}

_SEED = (
    "PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/bin\nCUDA_VERSION=13.0.2\n# a comment\n\n"
    "NVIDIA_REQUIRE_CUDA=cuda>=13.0 brand=tesla,driver>=535,driver<536\nLD_LIBRARY_PATH=/usr/local/nvidia/lib64\n"
    "HOST_ONLY\n"
)
_NAMES = st.builds(
    lambda head, tail: head + tail,
    st.sampled_from(string.ascii_letters + "_"),
    st.text(string.ascii_letters + string.digits + "_.-", max_size=15),
)


@property_settings(EXAMPLES["parse_env_file"])
@given(st.one_of(any_text(), mutated(_SEED)))
def test_parse_env_file_any_text(text: str) -> None:
    try:
        env, warnings = parse_env_file(text)
    except UsageError as exc:
        assert_one_line(exc)
        return
    assert all(name and "=" not in name for name in env)
    for warning in warnings:
        assert len(warning.splitlines()) == 1


@property_settings(EXAMPLES["parse_env_file"])
@given(
    st.dictionaries(_NAMES, line_free_text(max_size=40), max_size=8),
    st.lists(_NAMES, max_size=3, unique=True),
    st.sampled_from(["", "  ", "\t"]),
)
def test_parse_env_file_round_trip(env: dict[str, str], bare: list[str], indent: str) -> None:
    lines = ["# exported with docker inspect", ""]
    lines += [f"{indent}{name}={value}" for name, value in env.items()]
    lines += [name for name in bare if name not in env]
    parsed, warnings = parse_env_file("\n".join(lines) + "\n")
    assert parsed == env  # values are literal: quotes, spaces and '=' are kept
    assert len(warnings) == len([name for name in bare if name not in env])
