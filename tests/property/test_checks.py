"""Parsers inside checks: ``--require`` assertions and ``CUDA_VISIBLE_DEVICES``."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet

from cudadoctor.checks.meta import parse_assertion
from cudadoctor.checks.visible import parse_visible_devices
from cudadoctor.errors import UsageError
from tests.property.strategies import any_text, assert_one_line, mutated, numberish, pep440_versions, property_settings

#: Examples per parser (each property of a parser runs this many).
EXAMPLES = {"parse_assertion": 150, "parse_visible_devices": 200}

_OPS = st.sampled_from(["==", ">=", "<=", "!=", "~=", ">", "<"])
_PACKAGES = st.sampled_from(
    [
        "torch",
        "vllm",
        "jax",
        "cuda-python",
        "cuda_bindings",
        "driverkit",
        "cudatoolkit",
        "nvidia-cudnn-cu13",
        "Flash_Attn",
    ]
)


@property_settings(EXAMPLES["parse_assertion"])
@given(
    st.one_of(
        any_text(40),
        st.builds("{}{}{}".format, _PACKAGES | st.sampled_from(["cuda", "driver", "CUDA"]), _OPS, pep440_versions()),
    ).flatmap(lambda s: st.one_of(st.just(s), mutated(s)))
)
def test_parse_assertion_any_text(text: str) -> None:
    try:
        assertion = parse_assertion(text)
    except UsageError as exc:
        assert_one_line(exc)
    else:
        assert assertion.name and assertion.name == assertion.name.lower()
        assert isinstance(assertion.specifier, SpecifierSet)


@property_settings(EXAMPLES["parse_assertion"])
@given(st.sampled_from(["cuda", "driver", "Cuda", "DRIVER"]), _OPS, pep440_versions(), st.sampled_from(["", " "]))
def test_parse_assertion_special_round_trip(name: str, op: str, version: str, space: str) -> None:
    if op == "~=":
        version = "12.4"  # ~= needs two release parts
    elif op not in ("==", "!="):
        version = version.partition("+")[0]  # a local tag is allowed with == and != only
    assertion = parse_assertion(f"{name}{space}{op}{version}")
    assert assertion.name == name.lower()
    assert assertion.specifier == SpecifierSet(f"{op}{version}")


@property_settings(EXAMPLES["parse_assertion"])
@given(_PACKAGES, st.none() | st.tuples(_OPS, st.integers(0, 99), st.integers(0, 99)))
def test_parse_assertion_package_round_trip(name: str, spec: tuple[str, int, int] | None) -> None:
    specifier = f"{spec[0]}{spec[1]}.{spec[2]}" if spec else ""
    assertion = parse_assertion(f"{name}{specifier}")
    assert assertion.name == name.lower().replace("_", "-")  # packages that start like cuda/driver too
    assert assertion.specifier == SpecifierSet(specifier)


@property_settings(EXAMPLES["parse_visible_devices"])
@given(
    st.one_of(
        any_text(30),
        st.lists(st.one_of(numberish(), st.sampled_from(["GPU-1a2b", "MIG-3c", "-1", "", " 0 "])), max_size=6).map(
            ",".join
        ),
    ),
    st.integers(0, 16),
)
def test_parse_visible_devices_any_value(value: str, count: int) -> None:
    visible = parse_visible_devices(value, count)
    if visible is not None:
        indices = [int(v) for v in visible]
        assert all(0 <= i < count for i in indices)  # never an index past the GPUs present
        assert len(set(indices)) == len(indices) <= count


@property_settings(EXAMPLES["parse_visible_devices"])
@given(st.integers(1, 16).flatmap(lambda n: st.tuples(st.just(n), st.permutations(range(n)), st.integers(0, n))))
def test_parse_visible_devices_round_trip(case: tuple[int, list[int], int]) -> None:
    count, order, keep = case
    wanted = [str(i) for i in order[:keep]]
    assert parse_visible_devices(",".join(wanted), count) == wanted
    # CUDA stops at the first invalid entry
    assert parse_visible_devices(",".join([*wanted, str(count), "0"]), count) == wanted
