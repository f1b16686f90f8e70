"""The runtime (``check --deep``) parsers: the marked JSON line, the driver-API child's and a framework
child's result, and import errors."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version

from cudadoctor.facts.runtime import DriverApiResult, FrameworkRuntime
from cudadoctor.probes.runtime import (
    MARKER,
    decode_cudnn_version,
    decode_nccl_version,
    parse_driver_output,
    parse_framework_output,
    parse_marked_json,
    parse_undefined_symbol,
)
from tests.property.strategies import (
    any_text,
    fixture_text,
    json_values,
    line_free_text,
    mutated,
    mutated_json,
    property_settings,
)

#: Examples per parser (each property of a parser runs this many).
EXAMPLES = {
    "parse_marked_json": 150,
    "parse_driver_output": 100,
    "parse_framework_output": 100,
    "parse_undefined_symbol": 150,
    "decode_cudnn_version": 150,
    "decode_nccl_version": 150,
}

_DRIVER_SEEDS = [
    fixture_text("runtime", f"driver-{name}.txt")
    for name in ("healthy-h200", "no-libcuda", "s1-compat-first", "s2-stub", "s3-no-visible-devices")
]
_FRAMEWORK_SEEDS = [
    (fixture_text("runtime", f"{name}.txt"), framework)
    for name, framework in (
        ("torch-healthy-h200", "torch"),
        ("torch-s1-compat-first", "torch"),
        ("vllm-undefined-symbol", "vllm"),
    )
]


def _payload(text: str) -> dict[str, object]:
    document = parse_marked_json(text)
    assert document is not None
    return document


def _marked(document: object, before: str = "banner\n") -> str:
    return f"{before}{MARKER}{json.dumps(document)}\n"


def _outputs(seeds: list[str]) -> st.SearchStrategy[str]:
    """Any text, a real child's output with random edits, and its result object with random values."""
    return st.one_of(
        any_text(),
        st.sampled_from(seeds).flatmap(mutated),
        st.sampled_from(seeds).flatmap(lambda s: mutated_json(_payload(s), max_edits=4)).map(_marked),
        json_values().map(lambda v: _marked(v, "")),
    )


# --- parse_marked_json ----------------------------------------------------------------------------


@property_settings(EXAMPLES["parse_marked_json"])
@given(st.one_of(any_text(), any_text().map(lambda s: MARKER + s)))
def test_parse_marked_json_any_text(text: str) -> None:
    assert parse_marked_json(text) is None or isinstance(parse_marked_json(text), dict)


@property_settings(EXAMPLES["parse_marked_json"])
@given(
    line_free_text(max_size=40).filter(lambda s: MARKER not in s),
    st.dictionaries(st.text(max_size=8), json_values(6), max_size=5),
    any_text(40),
)
def test_parse_marked_json_round_trip(before: str, document: dict[str, object], after: str) -> None:
    text = f"{MARKER}{{}}\nnoise\n{before}{MARKER}{json.dumps(document)}{after.replace(MARKER, '')}"
    assert parse_marked_json(text) == document  # the last marker wins; text after the object is ignored


# --- parse_driver_output --------------------------------------------------------------------------


@property_settings(EXAMPLES["parse_driver_output"])
@given(_outputs(_DRIVER_SEEDS))
def test_parse_driver_output_any_input(text: str) -> None:
    result = parse_driver_output(text)
    if result is not None:
        assert isinstance(result, DriverApiResult)
        assert result.cuda_api is None or isinstance(result.cuda_api, Version)
        for value in (result.version_rc, result.init_rc, result.device_count):
            assert value is None or (isinstance(value, int) and not isinstance(value, bool))
        assert all(isinstance(n, str) for n in result.device_nodes)
        assert all(lib.path.startswith("/") for lib in result.libraries)


@property_settings(EXAMPLES["parse_driver_output"])
@given(st.integers(1, 99), st.integers(0, 99), st.integers(-1, 999), st.integers(0, 16))
def test_parse_driver_output_round_trip(major: int, minor: int, init_rc: int, count: int) -> None:
    document = {
        "probe": "driver",
        "version_rc": 0,
        "version": major * 1000 + minor * 10,
        "init_rc": init_rc,
        "device_count": count,
        "devices": [{"index": i, "name": f"GPU {i}", "cc": "9.0"} for i in range(count)],
        "maps": ["/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04"],
    }
    result = parse_driver_output(_marked(document))
    assert result is not None
    assert result.cuda_api == Version(f"{major}.{minor}")
    assert (result.init_rc, result.device_count, len(result.devices)) == (init_rc, count, count)
    assert result.libcuda_path == "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04"


# --- parse_framework_output -----------------------------------------------------------------------


@property_settings(EXAMPLES["parse_framework_output"])
@given(st.sampled_from(_FRAMEWORK_SEEDS).flatmap(lambda seed: st.tuples(_outputs([seed[0]]), st.just(seed[1]))))
def test_parse_framework_output_any_input(case: tuple[str, str]) -> None:
    text, framework = case
    result = parse_framework_output(text, framework, framework)
    if result is not None:
        assert isinstance(result, FrameworkRuntime) and result.framework == framework
        for version in (result.version, result.cuda_runtime, result.cudnn, result.nccl, result.nccl_build):
            assert version is None or isinstance(version, Version)
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in result.reported.items())
        assert all(isinstance(a, str) for a in result.arch_list)
        assert result.gpu_op in (None, True, False)


@property_settings(EXAMPLES["parse_framework_output"])
@given(st.sampled_from(["torch", "jax", "cupy", "vllm"]), st.integers(9, 99), st.integers(0, 99), st.integers(0, 99))
def test_parse_framework_output_round_trip(framework: str, major: int, minor: int, patch: int) -> None:
    document = {
        "probe": "framework",
        "framework": framework,
        "imported": True,
        "gpu_op": True,
        "cudnn": major * 10000 + minor * 100 + patch,
        "nccl": [2, minor, patch],
        "arch_list": ["sm_90", 7],
    }
    result = parse_framework_output(_marked(document), framework, framework)
    assert result is not None
    assert result.cudnn == Version(f"{major}.{minor}.{patch}")
    assert result.nccl == Version(f"2.{minor}.{patch}")
    assert result.arch_list == ("sm_90",)
    assert parse_framework_output(_marked(document), "other", "other") is None


# --- import errors --------------------------------------------------------------------------------


@property_settings(EXAMPLES["parse_undefined_symbol"])
@given(any_text())
def test_parse_undefined_symbol_any_text(text: str) -> None:
    symbol = parse_undefined_symbol(text)
    assert symbol is None or (symbol and not any(c.isspace() for c in symbol))


@property_settings(EXAMPLES["parse_undefined_symbol"])
@given(st.from_regex(r"_Z[A-Za-z0-9_]{1,40}", fullmatch=True), st.sampled_from(["", "\n", ", version GLIBC", "'"]))
def test_parse_undefined_symbol_round_trip(symbol: str, tail: str) -> None:
    error = f"ImportError: /venv/lib/python3.12/site-packages/vllm/_C.abi3.so: undefined symbol: {symbol}{tail}"
    assert parse_undefined_symbol(error) == symbol


# --- cuDNN / NCCL version numbers -----------------------------------------------------------------


@property_settings(EXAMPLES["decode_cudnn_version"])
@given(json_values(6))
def test_decode_cudnn_version_any_value(value: object) -> None:
    version = decode_cudnn_version(value)
    assert version is None or isinstance(version, Version)


@property_settings(EXAMPLES["decode_cudnn_version"])
@given(st.integers(9, 99), st.integers(0, 99), st.integers(0, 99))
def test_decode_cudnn_version_round_trip(major: int, minor: int, patch: int) -> None:
    assert decode_cudnn_version(major * 10000 + minor * 100 + patch) == Version(f"{major}.{minor}.{patch}")
    assert decode_cudnn_version([major, minor, patch]) == Version(f"{major}.{minor}.{patch}")
    if minor < 10:  # cuDNN <= 8: major * 1000 + minor * 100 + patch
        assert decode_cudnn_version(8000 + minor * 100 + patch) == Version(f"8.{minor}.{patch}")


@property_settings(EXAMPLES["decode_nccl_version"])
@given(json_values(6))
def test_decode_nccl_version_any_value(value: object) -> None:
    version = decode_nccl_version(value)
    assert version is None or isinstance(version, Version)


@property_settings(EXAMPLES["decode_nccl_version"])
@given(st.integers(1, 99), st.integers(0, 99), st.integers(0, 99))
def test_decode_nccl_version_round_trip(x: int, y: int, z: int) -> None:
    assert decode_nccl_version(x * 10000 + y * 100 + z) == Version(f"{x}.{y}.{z}")
    assert decode_nccl_version((x, y, z)) == Version(f"{x}.{y}.{z}")
