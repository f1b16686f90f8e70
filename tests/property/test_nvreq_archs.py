"""``NVIDIA_REQUIRE_*`` expressions (:mod:`cudadoctor.nvreq`) and GPU code targets (:mod:`cudadoctor.rules.archs`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cudadoctor.data import CompatMatrix
from cudadoctor.nvreq import Condition, RequirementError, evaluate, parse_requirement
from cudadoctor.rules.archs import covers, parse_target
from tests.property.strategies import any_text, assert_one_line, mutated, numberish, property_settings

#: Examples per parser (each property of a parser runs this many).
EXAMPLES = {
    "nvreq.parse_requirement": 150,
    "nvreq.evaluate": 150,
    "archs.parse_target": 150,
    "archs.covers": 150,
}

_OPS = ["=", "!=", "<", "<=", ">", ">="]
_VERSIONS = st.lists(st.integers(0, 999), min_size=1, max_size=3).map(lambda p: ".".join(map(str, p)))
_BRANDS = st.sampled_from(["tesla", "geforce", "quadro", "nvidia", "nvidiartx", "titan", "unknown"])


@st.composite
def conditions(draw: st.DrawFn, props: tuple[str, ...] = ("cuda", "driver", "arch", "brand")) -> Condition:
    prop = draw(st.sampled_from(props))
    if prop == "brand":
        return Condition(prop, draw(st.sampled_from(["=", "!="])), draw(_BRANDS))
    return Condition(prop, draw(st.sampled_from(_OPS)), draw(_VERSIONS))


_REQUIREMENTS = st.lists(st.lists(conditions(), min_size=1, max_size=4), max_size=4)


def render(alternatives: list[list[Condition]], upper: bool = False) -> str:
    """The requirement language: conditions joined by commas, alternatives by spaces."""
    return " ".join(
        ",".join(f"{c.prop.upper() if upper else c.prop}{c.op}{c.value}" for c in conds) for conds in alternatives
    )


def _parse(text: str) -> list[list[Condition]] | None:
    try:
        return parse_requirement(text)
    except RequirementError as exc:
        assert_one_line(exc)
        return None


# --- parse_requirement ----------------------------------------------------------------------------


@property_settings(EXAMPLES["nvreq.parse_requirement"])
@given(
    st.one_of(
        any_text(),
        _REQUIREMENTS.map(render).flatmap(mutated),
        st.builds(
            lambda p, o, v: f"{p}{o}{v}",
            st.sampled_from(["cuda", "driver", "arch"]),
            st.sampled_from(_OPS),
            numberish(),
        ),
    )
)
def test_parse_requirement_any_text(text: str) -> None:
    alternatives = _parse(text)
    if alternatives is None:
        return
    for conds in alternatives:
        for cond in conds:
            assert cond.prop in ("cuda", "driver", "arch", "brand") and cond.op in _OPS
        # whatever parses can be evaluated, with any facts
        assert evaluate(alternatives, {"cuda": "13.0", "driver": "580.159.04", "arch": "9.0", "brand": "tesla"}) in (
            True,
            False,
            None,
        )


@property_settings(EXAMPLES["nvreq.parse_requirement"])
@given(_REQUIREMENTS, st.booleans())
def test_parse_requirement_round_trip(alternatives: list[list[Condition]], upper: bool) -> None:
    text = render(alternatives, upper)
    assert parse_requirement(text) == alternatives
    assert parse_requirement(f"  {text.replace(' ', '   ')}\t") == alternatives


# --- evaluate -------------------------------------------------------------------------------------

_RANK = {False: 0, None: 1, True: 2}
_DRIVERS = st.tuples(st.integers(0, 999), st.integers(0, 999), st.integers(0, 99))


@st.composite
def _monotone_requirements(draw: st.DrawFn) -> list[list[Condition]]:
    """Requirements whose driver conditions are all ``driver>=X`` or ``driver>X``."""
    alternatives = draw(
        st.lists(st.lists(conditions(("cuda", "arch", "brand", "driver")), min_size=1, max_size=4), max_size=4)
    )
    return [
        [Condition(c.prop, draw(st.sampled_from([">=", ">"])), c.value) if c.prop == "driver" else c for c in conds]
        for conds in alternatives
    ]


@property_settings(EXAMPLES["nvreq.evaluate"])
@given(
    _monotone_requirements(),
    _DRIVERS,
    _DRIVERS,
    st.none() | _VERSIONS,
    st.none() | _VERSIONS,
    st.none() | _BRANDS,
    st.booleans(),
)
def test_evaluate_is_monotone_in_the_driver(
    alternatives: list[list[Condition]],
    a: tuple[int, int, int],
    b: tuple[int, int, int],
    cuda: str | None,
    arch: str | None,
    brand: str | None,
    no_gpu: bool,
) -> None:
    low, high = sorted([a, b])
    results = []
    for driver in (low, high):
        facts = {"cuda": cuda, "driver": ".".join(map(str, driver)), "arch": arch, "brand": brand}
        if no_gpu:
            facts["_no_gpu"] = "1"
        results.append(evaluate(alternatives, facts))
    assert _RANK[results[0]] <= _RANK[results[1]], (low, high, results)


@property_settings(EXAMPLES["nvreq.evaluate"])
@given(_VERSIONS, _VERSIONS)
def test_evaluate_ignores_trailing_zeros(a: str, b: str) -> None:
    # "cuda>=12.0" and "cuda>=12" are the same condition (libnvidia-container compares dotted versions).
    for op in _OPS:
        req = parse_requirement(f"driver{op}{b}")
        assert (
            evaluate(req, {"driver": a})
            == evaluate(req, {"driver": a + ".0"})
            == evaluate(parse_requirement(f"driver{op}{b}.0"), {"driver": a})
        )


# --- archs ----------------------------------------------------------------------------------------

_KINDS = st.sampled_from(["sm", "compute"])
_SUFFIXES = st.sampled_from(["", "a", "f"])
_CC = st.tuples(st.integers(1, 15), st.integers(0, 9))


def _target(kind: str, major: int, minor: int, suffix: str = "") -> str:
    return f"{kind}_{major}{minor}{suffix}"


_TARGETS = st.builds(_target, _KINDS, st.integers(1, 15), st.integers(0, 9), _SUFFIXES)
_FAMILIES = {a.compute_capability: a.family_runs_on for a in CompatMatrix().gpu_archs.values() if a.family_runs_on}


@property_settings(EXAMPLES["archs.parse_target"])
@given(st.one_of(any_text(20), _TARGETS.flatmap(mutated)))
def test_parse_target_any_text(text: str) -> None:
    parsed = parse_target(text)
    if parsed is not None:
        kind, major, minor, suffix = parsed
        assert kind in ("sm", "compute") and suffix in ("", "a", "f") and 0 <= minor <= 9 and major >= 0


@property_settings(EXAMPLES["archs.parse_target"])
@given(_KINDS, _CC, _SUFFIXES, st.booleans())
def test_parse_target_round_trip(kind: str, cc: tuple[int, int], suffix: str, shout: bool) -> None:
    text = _target(kind, *cc, suffix)
    assert parse_target(f" {text.upper() if shout else text} ") == (kind, *cc, suffix)


@property_settings(EXAMPLES["archs.covers"])
@given(st.lists(st.one_of(_TARGETS, any_text(10)), max_size=8), st.one_of(any_text(8), _CC.map("{0[0]}.{0[1]}".format)))
def test_covers_any_input(targets: list[str], cc: str) -> None:
    found = covers(targets, cc, _FAMILIES)
    assert found is None or found in targets


@property_settings(EXAMPLES["archs.covers"])
@given(_CC, st.integers(0, 9), st.lists(_TARGETS, max_size=6), st.booleans())
def test_a_cubin_covers_its_own_major_only(
    cc: tuple[int, int], gpu_minor: int, others: list[str], families: bool
) -> None:
    major, minor = cc
    cubin = _target("sm", major, minor)
    table = _FAMILIES if families else None
    # sm_XY runs on X.Y (and on X.Z for Z >= Y) whatever else is in the list ...
    assert covers([*others, cubin], f"{major}.{minor}", table) is not None
    assert covers([cubin], f"{major}.{minor}", table) == cubin
    assert covers([cubin], f"{major}.{gpu_minor}", table) == (cubin if gpu_minor >= minor else None)
    # ... and never on another major.
    for other_major in {major - 1, major + 1, major + 10} - {0}:
        assert covers([cubin], f"{other_major}.{gpu_minor}", table) is None


@property_settings(EXAMPLES["archs.covers"])
@given(st.lists(_TARGETS.filter(lambda t: t.startswith("sm_")), max_size=8), _CC)
def test_a_cubin_found_has_the_gpus_major(targets: list[str], cc: tuple[int, int]) -> None:
    found = covers(targets, f"{cc[0]}.{cc[1]}", _FAMILIES)
    if found is not None:
        parsed = parse_target(found)
        assert parsed is not None and parsed[1] == cc[0]


@property_settings(EXAMPLES["archs.covers"])
@given(_CC, _CC)
def test_ptx_covers_every_later_gpu(ptx: tuple[int, int], gpu: tuple[int, int]) -> None:
    assert covers([_target("compute", *ptx)], f"{gpu[0]}.{gpu[1]}") == (
        _target("compute", *ptx) if ptx <= gpu else None
    )


@property_settings(EXAMPLES["nvreq.evaluate"])
@given(
    _REQUIREMENTS,
    st.dictionaries(
        st.sampled_from(["cuda", "driver", "arch", "brand", "_no_gpu"]),
        st.none() | _VERSIONS | any_text(10) | numberish(),
    ),
)
def test_evaluate_any_facts(alternatives: list[list[Condition]], facts: dict[str, str | None]) -> None:
    # Facts can come from a snapshot (--from): a compute capability "9.0a", or anything at all.
    assert evaluate(alternatives, facts) in (True, False, None)
