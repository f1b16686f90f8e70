"""The library probe's parsers: C headers (cudnn_version.h, nccl.h, NvInferVersion.h), dist-info METADATA
and conda-meta records."""

from __future__ import annotations

import json
import string

from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version

from cudadoctor.probes.libraries import (
    parse_c_defines,
    parse_conda_meta,
    parse_cudnn_version_header,
    parse_dist_metadata,
    parse_nccl_header,
    parse_nvinfer_version_header,
)
from tests.property.strategies import (
    any_text,
    fixture_text,
    json_values,
    line_free_text,
    mutated,
    mutated_json,
    numberish,
    pep440_versions,
    property_settings,
)

#: Examples per parser (each property of a parser runs this many).
EXAMPLES = {
    "parse_c_defines": 150,
    "parse_cudnn_version_header": 150,
    "parse_nccl_header": 150,
    "parse_nvinfer_version_header": 150,
    "parse_dist_metadata": 150,
    "parse_conda_meta": 100,
}

_CUDNN_SEED = fixture_text("libraries", "cudnn-7.6.5.h")
_NVINFER_SEEDS = [fixture_text("libraries", name) for name in ("NvInferVersion-10.14.h", "NvInferVersion-10.0.1.h")]
_NCCL_SEED = (
    '#define NCCL_MAJOR 2\n#define NCCL_MINOR 28\n#define NCCL_PATCH 3\n#define NCCL_SUFFIX ""\n\n'
    "#define NCCL_VERSION_CODE 22803\n#define NCCL_VERSION(X,Y,Z) ((X) <= 2 && (Y) <= 8) ? (X) * 1000 : (X) * 10000\n"
)
_CONDA_SEED = json.loads(fixture_text("libraries", "conda-meta-cudnn-9.3.0.75.json"))
_METADATA_SEED = fixture_text("packages", "cu124", "site-packages", "torch-2.5.1+cu124.dist-info", "METADATA")

_IDENT = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True)
_NUMBERS = st.integers(0, 10**6)
#: How a header may spell a number: 9, (9), 9U, 9UL, ( 9 ).
_SPELLINGS = st.sampled_from(["{}", "({})", "{}U", "{}UL", "( {} )", "{}L"])
_TRAILERS = st.sampled_from(["", "  ", " // comment", " /* c */", "\t//!< TensorRT major version."])


def _junk_header() -> st.SearchStrategy[str]:
    """A header-like text: #define lines with random names and number-ish values, and junk lines."""
    line = st.one_of(
        st.builds(
            lambda ws, name, value, tail: f"{ws}#{ws}define {name} {value}{tail}",
            st.sampled_from(["", " ", "\t"]),
            st.sampled_from(["CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL", "NCCL_VERSION_CODE", "NCCL_MAJOR"])
            | st.sampled_from(["NV_TENSORRT_MAJOR", "NV_TENSORRT_MINOR", "NV_TENSORRT_PATCH", "NV_TENSORRT_BUILD"])
            | _IDENT,
            st.one_of(numberish(), _IDENT, any_text(10), _SPELLINGS.flatmap(lambda s: numberish().map(s.format))),
            _TRAILERS,
        ),
        any_text(30),
    )
    return st.lists(line, max_size=12).map("\n".join)


def _header_inputs(*seeds: str) -> st.SearchStrategy[str]:
    return st.one_of(any_text(), _junk_header(), st.sampled_from(seeds).flatmap(mutated))


# --- parse_c_defines ------------------------------------------------------------------------------


@property_settings(EXAMPLES["parse_c_defines"])
@given(_header_inputs(_CUDNN_SEED, _NCCL_SEED, *_NVINFER_SEEDS))
def test_parse_c_defines_any_text(text: str) -> None:
    defines = parse_c_defines(text)
    for name, value in defines.items():
        assert name and value == value.strip() and "\n" not in value


_VALUES = st.text(alphabet=string.ascii_letters + string.digits + "_ ()+*<>?:&|\"'.,-", max_size=30).filter(
    lambda v: "//" not in v and "/*" not in v
)


@property_settings(EXAMPLES["parse_c_defines"])
@given(st.dictionaries(_IDENT, _VALUES, max_size=6), _TRAILERS)
def test_parse_c_defines_round_trip(macros: dict[str, str], trailer: str) -> None:
    text = "#pragma once\n" + "".join(f"#define {name} {value}{trailer}\n" for name, value in macros.items())
    assert parse_c_defines(text) == {name: value.strip() for name, value in macros.items()}


# --- cudnn_version.h ------------------------------------------------------------------------------


@property_settings(EXAMPLES["parse_cudnn_version_header"])
@given(_header_inputs(_CUDNN_SEED))
def test_parse_cudnn_version_header_any_text(text: str) -> None:
    version = parse_cudnn_version_header(text)
    assert version is None or isinstance(version, Version)


@property_settings(EXAMPLES["parse_cudnn_version_header"])
@given(st.tuples(_NUMBERS, _NUMBERS, _NUMBERS), st.tuples(_SPELLINGS, _SPELLINGS, _SPELLINGS), _TRAILERS)
def test_parse_cudnn_version_header_round_trip(
    numbers: tuple[int, int, int], spellings: tuple[str, str, str], trailer: str
) -> None:
    names = ("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL")
    lines = [f"#define {n} {s.format(v)}{trailer}" for n, s, v in zip(names, spellings, numbers, strict=True)]
    text = "#ifndef CUDNN_VERSION_H_\n" + "\n".join(lines) + "\n#define CUDNN_VERSION (CUDNN_MAJOR * 10000)\n"
    assert parse_cudnn_version_header(text) == Version(".".join(map(str, numbers)))


# --- nccl.h ---------------------------------------------------------------------------------------


@property_settings(EXAMPLES["parse_nccl_header"])
@given(_header_inputs(_NCCL_SEED))
def test_parse_nccl_header_any_text(text: str) -> None:
    version = parse_nccl_header(text)
    assert version is None or isinstance(version, Version)


@property_settings(EXAMPLES["parse_nccl_header"])
@given(st.tuples(_NUMBERS, _NUMBERS, _NUMBERS))
def test_parse_nccl_header_macros_round_trip(numbers: tuple[int, int, int]) -> None:
    x, y, z = numbers
    text = f'#define NCCL_MAJOR {x}\n#define NCCL_MINOR {y}\n#define NCCL_PATCH {z}\n#define NCCL_SUFFIX ""\n'
    assert parse_nccl_header(text) == Version(f"{x}.{y}.{z}")


@property_settings(EXAMPLES["parse_nccl_header"])
@given(st.integers(1, 99), st.integers(0, 99), st.integers(0, 99))
def test_parse_nccl_header_code_round_trip(x: int, y: int, z: int) -> None:
    # NCCL_VERSION(X,Y,Z): X * 10000 + Y * 100 + Z from NCCL 2.9 on.
    assert parse_nccl_header(f"#define NCCL_VERSION_CODE {x * 10000 + y * 100 + z}\n") == Version(f"{x}.{y}.{z}")


@property_settings(EXAMPLES["parse_nccl_header"])
@given(st.integers(1, 9), st.integers(0, 9), st.integers(0, 99))
def test_parse_nccl_header_old_code_round_trip(x: int, y: int, z: int) -> None:
    # Before 2.9: X * 1000 + Y * 100 + Z.
    assert parse_nccl_header(f"#define NCCL_VERSION_CODE {x * 1000 + y * 100 + z}\n") == Version(f"{x}.{y}.{z}")


# --- NvInferVersion.h -----------------------------------------------------------------------------


@property_settings(EXAMPLES["parse_nvinfer_version_header"])
@given(_header_inputs(*_NVINFER_SEEDS))
def test_parse_nvinfer_version_header_any_text(text: str) -> None:
    version = parse_nvinfer_version_header(text)
    assert version is None or isinstance(version, Version)


@property_settings(EXAMPLES["parse_nvinfer_version_header"])
@given(st.tuples(_NUMBERS, _NUMBERS, _NUMBERS), st.none() | _NUMBERS, st.booleans())
def test_parse_nvinfer_version_header_round_trip(
    numbers: tuple[int, int, int], build: int | None, indirect: bool
) -> None:
    parts = ["MAJOR", "MINOR", "PATCH"] + (["BUILD"] if build is not None else [])
    values = [*numbers, *([build] if build is not None else [])]
    lines = []
    for part, value in zip(parts, values, strict=True):
        if indirect:  # TensorRT 10.14: the numbers sit one macro away
            lines.append(f"#define TRT_{part}_ENTERPRISE {value}")
            lines.append(f"#define NV_TENSORRT_{part} TRT_{part}_ENTERPRISE //!< TensorRT {part.lower()} version.")
        else:
            lines.append(f"#define NV_TENSORRT_{part} {value} //!< TensorRT {part.lower()} version.")
    expected = ".".join(map(str, values))
    assert parse_nvinfer_version_header("\n".join(lines) + "\n") == Version(expected)


# --- dist-info METADATA ---------------------------------------------------------------------------


@property_settings(EXAMPLES["parse_dist_metadata"])
@given(st.one_of(any_text(), mutated(_METADATA_SEED)))
def test_parse_dist_metadata_any_text(text: str) -> None:
    name, version = parse_dist_metadata(text)
    for value in (name, version):
        assert value is None or (value and value == value.strip() and len(value.splitlines()) == 1)


_HEADER_VALUE = line_free_text(min_size=1, max_size=30).filter(lambda s: s.strip())


@property_settings(EXAMPLES["parse_dist_metadata"])
@given(_HEADER_VALUE, pep440_versions(), st.sampled_from(["Name", "name", "NAME"]), st.booleans())
def test_parse_dist_metadata_round_trip(name: str, version: str, key: str, body: bool) -> None:
    text = f"Metadata-Version: 2.4\n{key}: {name}\nVersion: {version}\nSummary: x\n"
    if body:
        text += "\nName: not-this\nVersion: 0\n"
    assert parse_dist_metadata(text) == (name.strip(), version)


# --- conda-meta -----------------------------------------------------------------------------------


@property_settings(EXAMPLES["parse_conda_meta"])
@given(
    st.one_of(
        any_text(),
        json_values().map(json.dumps),
        mutated_json(_CONDA_SEED).map(json.dumps),
        st.builds(lambda v: json.dumps({"name": "cudnn", "version": v}), numberish()),
        mutated(json.dumps(_CONDA_SEED)),
    )
)
def test_parse_conda_meta_any_text(text: str) -> None:
    found = parse_conda_meta(text)
    if found is not None:
        name, version = found
        assert isinstance(name, str) and isinstance(version, Version)


@property_settings(EXAMPLES["parse_conda_meta"])
@given(st.text(max_size=20), pep440_versions(), st.dictionaries(st.text(max_size=5), json_values(3), max_size=3))
def test_parse_conda_meta_round_trip(name: str, version: str, extra: dict[str, object]) -> None:
    record = {**extra, "name": name, "version": version, "build": "h93bb076_0"}
    assert parse_conda_meta(json.dumps(record)) == (name, Version(version))
