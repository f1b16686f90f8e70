"""The toolkit probe's parsers: version.json, version.txt, cuda.h and ``nvcc --version``."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version

from cudadoctor.probes.toolkit import (
    VERSION_JSON_KEYS,
    parse_cuda_h,
    parse_nvcc_version,
    parse_version_json,
    parse_version_txt,
)
from tests.property.strategies import (
    any_text,
    cuda_versions,
    fixture_text,
    json_values,
    mutated,
    mutated_json,
    numberish,
    pep440_versions,
    property_settings,
)

#: Examples per parser (each property of a parser runs this many).
EXAMPLES = {
    "parse_version_json": 100,
    "parse_version_txt": 150,
    "parse_cuda_h": 150,
    "parse_nvcc_version": 150,
}

_JSON_SEEDS = [
    json.loads(fixture_text("toolkit", name))
    for name in ("version-13.3.1.json", "version-12.6-sdk-only.json", "version-11.8.json")
]
_NVCC_SEEDS = [fixture_text("toolkit", f"nvcc-{v}.txt") for v in ("10.1", "11.8", "13.0")]


# --- version.json ---------------------------------------------------------------------------------


def _check_json(text: str) -> None:
    found = parse_version_json(text)
    if found is not None:
        version, key = found
        assert isinstance(version, Version) and key in VERSION_JSON_KEYS


@property_settings(EXAMPLES["parse_version_json"])
@given(st.one_of(any_text(), st.sampled_from(_JSON_SEEDS).flatmap(mutated_json).map(json.dumps)))
def test_parse_version_json_any_input(text: str) -> None:
    _check_json(text)


@property_settings(EXAMPLES["parse_version_json"])
@given(st.sampled_from([json.dumps(s, indent=3) for s in _JSON_SEEDS]).flatmap(mutated))
def test_parse_version_json_mutated_text(text: str) -> None:
    _check_json(text)


_ENTRY_VERSIONS = st.one_of(pep440_versions(), numberish(), st.text(max_size=8), json_values(3))


@property_settings(EXAMPLES["parse_version_json"])
@given(st.dictionaries(st.sampled_from([*VERSION_JSON_KEYS, "cuda_cccl", "nvidia_driver"]), _ENTRY_VERSIONS))
def test_parse_version_json_first_valid_key_wins(entries: dict[str, object]) -> None:
    doc = {key: {"name": key, "version": value} for key, value in entries.items()}
    expected = None
    for key in VERSION_JSON_KEYS:
        value = entries.get(key)
        if isinstance(value, str):
            try:
                expected = (Version(value.strip()), key)
            except ValueError:
                continue
            break
    assert parse_version_json(json.dumps(doc, indent=3)) == expected


# --- version.txt ----------------------------------------------------------------------------------


@property_settings(EXAMPLES["parse_version_txt"])
@given(st.one_of(any_text(), mutated(fixture_text("toolkit", "version-9.0.txt"))))
def test_parse_version_txt_any_text(text: str) -> None:
    version = parse_version_txt(text)
    assert version is None or isinstance(version, Version)


@property_settings(EXAMPLES["parse_version_txt"])
@given(st.lists(numberish(), min_size=2, max_size=4).map(".".join), st.sampled_from(["", "\n", "  \n"]))
def test_parse_version_txt_near_valid(version: str, end: str) -> None:
    parsed = parse_version_txt(f"CUDA Version {version}{end}")
    assert parsed is None or isinstance(parsed, Version)


@property_settings(EXAMPLES["parse_version_txt"])
@given(st.lists(st.integers(0, 10**6), min_size=2, max_size=4))
def test_parse_version_txt_round_trip(parts: list[int]) -> None:
    text = ".".join(map(str, parts))
    assert parse_version_txt(f"CUDA Version {text}\n") == Version(text)


# --- cuda.h ---------------------------------------------------------------------------------------


@property_settings(EXAMPLES["parse_cuda_h"])
@given(st.one_of(any_text(), mutated(fixture_text("toolkit", "cuda-13.0.h"))))
def test_parse_cuda_h_any_text(text: str) -> None:
    version = parse_cuda_h(text)
    assert version is None or isinstance(version, Version)


@property_settings(EXAMPLES["parse_cuda_h"])
@given(numberish(), st.text(alphabet=" \t/*abc", max_size=6))
def test_parse_cuda_h_near_valid(number: str, junk: str) -> None:
    version = parse_cuda_h(f"#ifndef X\n#  define CUDA_VERSION {number}{junk}\n#endif\n")
    assert version is None or isinstance(version, Version)


@property_settings(EXAMPLES["parse_cuda_h"])
@given(
    cuda_versions(), st.sampled_from(["#define", "# define", "  #\tdefine"]), st.sampled_from(["", " /* x */", "\n"])
)
def test_parse_cuda_h_round_trip(version: tuple[int, int], define: str, tail: str) -> None:
    major, minor = version
    text = f"/* header */\n{define} CUDA_VERSION {major * 1000 + minor * 10}{tail}\n"
    assert parse_cuda_h(text) == Version(f"{major}.{minor}")


# --- nvcc --version -------------------------------------------------------------------------------


@property_settings(EXAMPLES["parse_nvcc_version"])
@given(st.one_of(any_text(), st.sampled_from(_NVCC_SEEDS).flatmap(mutated)))
def test_parse_nvcc_version_any_text(text: str) -> None:
    found = parse_nvcc_version(text)
    if found is not None:
        assert all(isinstance(v, Version) for v in found)


@property_settings(EXAMPLES["parse_nvcc_version"])
@given(numberish(), numberish(), st.lists(numberish(), min_size=1, max_size=3).map(".".join))
def test_parse_nvcc_version_near_valid(major: str, minor: str, full: str) -> None:
    found = parse_nvcc_version(f"Cuda compilation tools, release {major}.{minor}, V{full}\n")
    if found is not None:
        assert all(isinstance(v, Version) for v in found)


@property_settings(EXAMPLES["parse_nvcc_version"])
@given(cuda_versions(), st.integers(0, 10**5), st.booleans())
def test_parse_nvcc_version_round_trip(version: tuple[int, int], patch: int, build_line: bool) -> None:
    major, minor = version
    text = (
        "nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\n"
        f"Cuda compilation tools, release {major}.{minor}, V{major}.{minor}.{patch}\n"
        + (f"Build cuda_{major}.{minor}.r{major}.{minor}/compiler.36424714_0\n" if build_line else "")
    )
    assert parse_nvcc_version(text) == (Version(f"{major}.{minor}"), Version(f"{major}.{minor}.{patch}"))
