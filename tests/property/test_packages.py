"""The packages probe's parsers: pyvenv.cfg, dist-info directory names, METADATA, requires.txt,
torch/version.py, and the CUDA variant read from a version's local tag or a distribution's name."""

from __future__ import annotations

import re
import string

from hypothesis import given
from hypothesis import strategies as st
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from cudadoctor.probes.interpreter import parse_pyvenv_cfg
from cudadoctor.probes.packages import (
    canonical_name,
    cuda_variant_from_local,
    cuda_variant_from_name,
    parse_dist_dirname,
    parse_metadata,
    parse_requires_txt,
    parse_torch_version_py,
)
from tests.property.strategies import (
    any_text,
    fixture_text,
    line_free_text,
    mutated,
    pep440_versions,
    property_settings,
)

#: Examples per parser (each property of a parser runs this many).
EXAMPLES = {
    "parse_pyvenv_cfg": 150,
    "parse_dist_dirname": 150,
    "parse_metadata": 150,
    "parse_requires_txt": 100,
    "parse_torch_version_py": 150,
    "cuda_variant_from_local": 150,
    "cuda_variant_from_name": 150,
}

_PYVENV = "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.3\nexecutable = /usr/bin/python3.12\n"
_METADATA = fixture_text("packages", "cu124", "site-packages", "torch-2.5.1+cu124.dist-info", "METADATA")
_VERSION_PY = fixture_text("packages", "cu124", "site-packages", "torch", "version.py")
_REQUIRES = 'numpy>=1.20\n[:sys_platform == "linux"]\nnvidia-cuda-runtime-cu12==12.1.105\n[dev]\npytest\n'
_DIST_NAMES = st.lists(
    st.text(string.ascii_letters + string.digits, min_size=1, max_size=8), min_size=1, max_size=4
).flatmap(
    lambda parts: st.lists(st.sampled_from("_."), min_size=len(parts) - 1, max_size=len(parts) - 1).map(
        lambda seps: parts[0] + "".join(s + p for s, p in zip(seps, parts[1:], strict=True))
    )
)


# --- pyvenv.cfg -----------------------------------------------------------------------------------


@property_settings(EXAMPLES["parse_pyvenv_cfg"])
@given(st.one_of(any_text(), mutated(_PYVENV)))
def test_parse_pyvenv_cfg_any_text(text: str) -> None:
    for key, value in parse_pyvenv_cfg(text).items():
        assert key and key == key.strip() and key == key.lower() and value == value.strip()


@property_settings(EXAMPLES["parse_pyvenv_cfg"])
@given(
    st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9_-]{0,20}", fullmatch=True),
        line_free_text(max_size=30),
        max_size=6,
    ),
    st.sampled_from(["{} = {}", "{}={}", "  {}  =\t{}  "]),
)
def test_parse_pyvenv_cfg_round_trip(values: dict[str, str], form: str) -> None:
    text = "".join(
        form.format(key.upper() if i % 2 else key, value) + "\n" for i, (key, value) in enumerate(values.items())
    )
    assert parse_pyvenv_cfg(text) == {key: value.strip() for key, value in values.items()}


# --- dist-info directory names --------------------------------------------------------------------


@property_settings(EXAMPLES["parse_dist_dirname"])
@given(
    st.one_of(
        any_text(60),
        any_text(40).map(lambda s: s + ".dist-info"),
        st.builds(lambda a, b: f"{a}-{b}.egg-info", any_text(20), any_text(20)),
    )
)
def test_parse_dist_dirname_any_text(dirname: str) -> None:
    parsed = parse_dist_dirname(dirname)
    if parsed is not None:
        name, version = parsed
        assert name and name == canonical_name(name)
        assert version is None or (version[0].isdigit() and "-" not in version)


@property_settings(EXAMPLES["parse_dist_dirname"])
@given(_DIST_NAMES, pep440_versions(), st.sampled_from(["dist-info", "egg-info", "egg-info-py"]))
def test_parse_dist_dirname_round_trip(name: str, version: str, kind: str) -> None:
    dirname = f"{name}-{version}-py3.12.egg-info" if kind == "egg-info-py" else f"{name}-{version}.{kind}"
    assert parse_dist_dirname(dirname) == (canonicalize_name(name), version)
    assert canonical_name(name) == canonicalize_name(name)


@property_settings(EXAMPLES["parse_dist_dirname"])
@given(_DIST_NAMES)
def test_parse_dist_dirname_without_version(name: str) -> None:
    assert parse_dist_dirname(f"{name}.egg-info") == (canonicalize_name(name), None)


# --- METADATA -------------------------------------------------------------------------------------


@property_settings(EXAMPLES["parse_metadata"])
@given(st.one_of(any_text(), mutated(_METADATA)))
def test_parse_metadata_any_text(text: str) -> None:
    for key, values in parse_metadata(text).items():
        assert key == key.lower() and values
        assert all(isinstance(v, str) for v in values)


_HEADER_KEYS = st.sampled_from(["Name", "Version", "Requires-Dist", "Requires-Python", "Summary", "Provides-Extra"])
_HEADER_VALUES = line_free_text(max_size=30).map(str.strip).filter(lambda v: v == v.strip())


@property_settings(EXAMPLES["parse_metadata"])
@given(st.lists(st.tuples(_HEADER_KEYS, _HEADER_VALUES, st.lists(_HEADER_VALUES.filter(bool), max_size=2))))
def test_parse_metadata_round_trip(headers: list[tuple[str, str, list[str]]]) -> None:
    text = "Metadata-Version: 2.4\n"
    expected: dict[str, list[str]] = {"metadata-version": ["2.4"]}
    for key, value, continuations in headers:
        text += f"{key}: {value}\n" + "".join(f"        {c}\n" for c in continuations)
        expected.setdefault(key.lower(), []).append(" ".join([value, *continuations]) if continuations else value)
    text += "\nName: from-the-description\n"
    assert parse_metadata(text) == expected


# --- requires.txt ---------------------------------------------------------------------------------


@property_settings(EXAMPLES["parse_requires_txt"])
@given(st.one_of(any_text(), mutated(_REQUIRES)))
def test_parse_requires_txt_any_text(text: str) -> None:
    lines = [line.strip() for line in text.splitlines()]
    for out in parse_requires_txt(text):
        assert out.partition(";")[0] in lines or any(out.startswith(line) for line in lines if line)


_REQUIREMENTS = st.sampled_from(["numpy>=1.20", "nvidia-cuda-runtime-cu12==12.1.105", "pytest", "torch[extra]>2"])
_MARKERS = st.sampled_from(["", 'sys_platform == "linux"', 'python_version >= "3.10"', 'platform_machine != "x86_64"'])
_EXTRAS = st.sampled_from(["", "dev", "test", "cuda12"])


@property_settings(EXAMPLES["parse_requires_txt"])
@given(st.lists(st.tuples(_EXTRAS, _MARKERS, st.lists(_REQUIREMENTS, min_size=1, max_size=3)), max_size=4))
def test_parse_requires_txt_gives_valid_requirements(sections: list[tuple[str, str, list[str]]]) -> None:
    text = ""
    expected = []
    current = ""  # a section runs until the next [extra:marker] line
    for extra, marker, requirements in sections:
        if extra or marker:
            text += f"[{extra}{':' + marker if marker else ''}]\n"
            current = extra
        text += "".join(f"{r}\n" for r in requirements)
        expected += [(Requirement(r).name, current) for r in requirements]
    parsed = [Requirement(line) for line in parse_requires_txt(text)]
    assert [(r.name, r.marker is not None and 'extra == "' in str(r.marker)) for r in parsed] == [
        (name, bool(extra)) for name, extra in expected
    ]
    for req, (_name, extra) in zip(parsed, expected, strict=True):
        if extra:  # the section's extra is required, the other extras' are not
            assert req.marker is not None and req.marker.evaluate({"extra": extra}) in (True, False)


# --- torch/version.py -----------------------------------------------------------------------------


@property_settings(EXAMPLES["parse_torch_version_py"])
@given(st.one_of(any_text(), mutated(_VERSION_PY)))
def test_parse_torch_version_py_any_text(text: str) -> None:
    build = parse_torch_version_py(text)
    if build is not None:
        assert build.version is None or isinstance(build.version, Version)
        assert build.debug in (None, True, False)


_PY_STRINGS = st.text(alphabet=st.characters(exclude_characters="'\"\n\r\\"), max_size=20)


@property_settings(EXAMPLES["parse_torch_version_py"])
@given(
    pep440_versions(),
    st.none() | _PY_STRINGS,
    st.none() | _PY_STRINGS,
    st.booleans(),
    st.from_regex(r"[0-9a-f]{40}", fullmatch=True),
    st.sampled_from(["'{}'", '"{}"']),
    st.booleans(),
)
def test_parse_torch_version_py_round_trip(
    version: str, cuda: str | None, hip: str | None, debug: bool, git: str, quote: str, annotated: bool
) -> None:
    def literal(value: str | None) -> str:
        return "None" if value is None else quote.format(value)

    hint = ": Optional[str]" if annotated else ""
    text = (
        "from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
        f"__version__ = {literal(version)}\ndebug = {debug}\ncuda{hint} = {literal(cuda)}\n"
        f"git_version = {literal(git)}\nhip{hint} = {literal(hip)}\n"
    )
    build = parse_torch_version_py(text)
    assert build is not None
    assert build.version == Version(version)
    assert (build.cuda, build.hip, build.debug, build.git_version) == (cuda, hip, debug, git)


# --- CUDA variants --------------------------------------------------------------------------------


@property_settings(EXAMPLES["cuda_variant_from_local"])
@given(st.one_of(st.none(), any_text(20), pep440_versions().map(lambda v: Version(v).local)))
def test_cuda_variant_from_local_any_text(local: str | None) -> None:
    found = cuda_variant_from_local(local)
    if found is not None:
        variant, cuda = found
        assert variant and (cuda is None or re.fullmatch(r"\d+(\.\d)?", cuda))


@property_settings(EXAMPLES["cuda_variant_from_local"])
@given(pep440_versions().map(lambda v: v.partition("+")[0]), st.integers(1, 99), st.integers(0, 9))
def test_cuda_variant_from_local_tags(public: str, major: int, minor: int) -> None:
    # torch 2.5.1+cu124 -> cu124 / 12.4; the tag is read after PEP 440 normalisation.
    assert (
        cuda_variant_from_local(Version(f"{public}+cu{major}{minor}").local)
        == (
            f"cu{major}{minor}",
            f"{major}.{minor}",
        )
        or major * 10 + minor < 10
    )
    assert cuda_variant_from_local(Version(f"{public}+rocm{major}.{minor}").local) == (f"rocm{major}.{minor}", None)
    assert cuda_variant_from_local(Version(f"{public}+CPU.cxx11.abi").local) == ("cpu", None)


@property_settings(EXAMPLES["cuda_variant_from_name"])
@given(
    st.one_of(any_text(30), _DIST_NAMES.map(canonical_name), st.builds("{}-cu{}".format, _DIST_NAMES, st.integers()))
)
def test_cuda_variant_from_name_any_text(name: str) -> None:
    found = cuda_variant_from_name(name)
    if found is not None:
        variant, cuda = found
        assert variant and (cuda is None or cuda[0].isdigit())


@property_settings(EXAMPLES["cuda_variant_from_name"])
@given(st.integers(10, 13), st.integers(0, 9))
def test_cuda_variant_from_name_round_trip(major: int, minor: int) -> None:
    assert cuda_variant_from_name(f"cupy-cuda{major}x") == (f"cuda{major}x", str(major))
    assert cuda_variant_from_name(f"cupy-cuda{major}{minor}") == (f"cuda{major}{minor}", f"{major}.{minor}")
    assert cuda_variant_from_name(f"jax-cuda{major}-plugin") == (f"cuda{major}", str(major))
    assert cuda_variant_from_name(f"nvidia-cudnn-cu{major}") == (f"cu{major}", str(major))
