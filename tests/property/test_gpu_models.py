"""GPU model names: :func:`normalise`, :func:`lookup` and ``--assume-gpu`` (:func:`parse_gpu_spec`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cudadoctor.gpu_models import load_models, lookup, normalise, parse_gpu_spec
from tests.property.strategies import any_text, assert_one_line, mutated, numberish, property_settings

#: Examples per parser (each property of a parser runs this many).
EXAMPLES = {"normalise": 150, "lookup": 100, "parse_gpu_spec": 150}

_TABLE = load_models()
_ALIASES = st.sampled_from(sorted({a for m in _TABLE for a in (m.name, *m.aliases)}))
_CCS = sorted({m.compute_capability for m in _TABLE})
_NAMES = st.one_of(
    any_text(40),
    _ALIASES,
    _ALIASES.flatmap(mutated),
    st.builds(
        lambda prefix, alias, suffix: f"{prefix}{alias}{suffix}",
        st.sampled_from(["", "NVIDIA ", "NVIDIA GeForce ", "Tesla ", "nvidia_"]),
        _ALIASES,
        st.sampled_from(["", " 80GB HBM3", "-SXM4-80GB", " PCIe", "_NVL"]),
    ),
)


@property_settings(EXAMPLES["normalise"])
@given(_NAMES)
def test_normalise_any_text(name: str) -> None:
    tokens = normalise(name)
    assert all(t and t == t.lower() and t not in ("nvidia", "geforce", "tesla", "quadro") for t in tokens)
    assert normalise(" ".join(tokens)) == tokens


@property_settings(EXAMPLES["lookup"])
@given(_NAMES)
def test_lookup_any_text(name: str) -> None:
    model = lookup(name, _TABLE)
    if model is not None:
        tokens = normalise(name)
        # the model matched by a whole-token prefix of the name
        assert any(tokens[: len(normalise(a))] == normalise(a) for a in (model.name, *model.aliases))


@property_settings(EXAMPLES["lookup"])
@given(_ALIASES, st.sampled_from(["", "NVIDIA ", "NVIDIA GeForce "]), st.sampled_from(["", " 80GB HBM3", "-PCIE"]))
def test_lookup_finds_every_alias(alias: str, prefix: str, suffix: str) -> None:
    model = lookup(f"{prefix}{alias}{suffix}", _TABLE)
    assert model is not None
    # the longest matching alias wins: one at least as long as this one
    assert max(len(normalise(a)) for a in (model.name, *model.aliases)) >= len(normalise(alias))


@property_settings(EXAMPLES["parse_gpu_spec"])
@given(st.one_of(_NAMES, numberish(), st.builds("sm_{}{}".format, numberish(), st.sampled_from(["", "a", "f", "x"]))))
def test_parse_gpu_spec_any_text(spec: str) -> None:
    try:
        model = parse_gpu_spec(spec, _TABLE)
    except ValueError as exc:
        assert_one_line(exc)
    else:
        assert model.compute_capability in _CCS


@property_settings(EXAMPLES["parse_gpu_spec"])
@given(st.sampled_from(_CCS), st.sampled_from(["{}.{}", "sm_{}{}", "SM_{}{}a", "compute_{}{}f", " {}.{} "]))
def test_parse_gpu_spec_round_trip(cc: str, form: str) -> None:
    major, minor = cc.split(".")
    assert parse_gpu_spec(form.format(major, minor), _TABLE).compute_capability == cc


@property_settings(EXAMPLES["lookup"])
@given(_ALIASES, st.sampled_from([" A Laptop GPU", " A", "-A"]))
def test_an_a_after_a_model_name_is_never_that_model(alias: str, suffix: str) -> None:
    # "RTX 3050 A Laptop GPU" is another chip than "RTX 3050": no alias directly followed by "a" matches.
    model = lookup(f"{alias}{suffix}", _TABLE)
    if model is not None:
        tokens = normalise(f"{alias}{suffix}")
        # it matched through an alias that the name continues past with something other than "a"
        aliases = [normalise(a) for a in (model.name, *model.aliases)]
        assert any(tokens[: len(a)] == a and tokens[len(a) : len(a) + 1] != ("a",) for a in aliases)
