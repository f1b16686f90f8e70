"""The facts JSON: round trip, strict reading, documented schema."""

from __future__ import annotations

import dataclasses
import json
import os
import re

import pytest
from packaging.version import Version

from cudadoctor.errors import SnapshotError
from cudadoctor.facts import model
from cudadoctor.facts.codec import SNAPSHOT_KIND, facts_from_json, facts_to_json, redact_facts
from cudadoctor.facts.model import (
    DriverInfo,
    DriverReading,
    DriverVersion,
    EnvVar,
    Facts,
    GpuInfo,
    HostInfo,
    InstalledPackage,
    Source,
    SourceKind,
)
from cudadoctor.redact import Redactor

SRC = Source(SourceKind.FILE, "/sys/module/nvidia/version")


def sample() -> Facts:
    return Facts(
        host=HostInfo(os="Linux", arch="x86_64", env=(EnvVar("HF_TOKEN", "hf_secret"),)),
        driver=DriverInfo(
            version=DriverVersion("580.159.04"),
            cuda_api=Version("13.0"),
            readings=(DriverReading(SRC, version=DriverVersion("580.159.04")),),
        ),
        gpus=(GpuInfo(0, "NVIDIA H200", "9.0", Source(SourceKind.API, "nvml"), memory_mib=143771),),
        packages={
            "torch": InstalledPackage(
                "torch",
                Version("2.11.0"),
                "/site",
                Source(SourceKind.METADATA, "/site/x"),
                cuda_variant="cu130",
                cuda_build="13.0",
            )
        },
    )


def test_round_trip_is_exact():
    facts = sample()
    again = facts_from_json(facts_to_json(facts), origin="f.json")
    assert again == facts  # mode stays how the facts were gathered ("live"), not where they were read


def test_driver_versions_keep_their_leading_zeros():
    # PEP 440 would print 580.159.4; NVIDIA writes (and names files) 580.159.04.
    text = facts_to_json(sample())
    assert '"version": "580.159.04"' in text
    again = facts_from_json(text)
    assert str(again.driver.version) == "580.159.04"
    assert isinstance(again.driver.readings[0].version, DriverVersion)
    assert again.driver.version == Version("580.159.4")


def test_unknown_fields_are_ignored():
    doc = json.loads(facts_to_json(sample()))
    doc["facts"]["gpus"][0]["future_field"] = 1
    doc["facts"]["new_section"] = {}
    assert facts_from_json(json.dumps(doc)).gpus[0].name == "NVIDIA H200"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "not JSON"),
        ("{", "not JSON"),
        ("[]", "not a cudadoctor snapshot"),
        ('{"kind": "other"}', "not a cudadoctor snapshot"),
        (json.dumps({"kind": SNAPSHOT_KIND}), "schema_version missing"),
        (json.dumps({"kind": SNAPSHOT_KIND, "schema_version": 99, "facts": {}}), "upgrade cudadoctor"),
        (json.dumps({"kind": SNAPSHOT_KIND, "schema_version": 1, "facts": {}}), "facts.host: missing"),
        (
            json.dumps({"kind": SNAPSHOT_KIND, "schema_version": 1, "facts": {"host": {"os": 1, "arch": "x"}}}),
            "facts.host.os: expected a string",
        ),
        ("[" * 100000 + "]" * 100000, "nested too deeply"),
    ],
    ids=["empty", "truncated", "list", "other-kind", "no-schema", "future-schema", "no-host", "wrong-type", "deep"],
)
def test_bad_documents_give_one_clear_line(text, message):
    with pytest.raises(SnapshotError, match=re.escape(message)) as info:
        facts_from_json(text, origin="bad.json")
    assert "\n" not in str(info.value)
    assert str(info.value).startswith("bad.json: ")


def test_bad_version_and_enum():
    doc = json.loads(facts_to_json(sample()))
    doc["facts"]["driver"]["version"] = "five-eighty"
    with pytest.raises(SnapshotError, match=r"facts.driver.version: 'five-eighty' is not a version"):
        facts_from_json(json.dumps(doc))
    doc = json.loads(facts_to_json(sample()))
    doc["facts"]["gpus"][0]["source"]["kind"] = "guess"
    with pytest.raises(SnapshotError, match=r"facts.gpus\[0\].source.kind"):
        facts_from_json(json.dumps(doc))


def test_redact_facts_masks_secret_env_values():
    out = redact_facts(sample(), Redactor(()))
    assert out.host.env[0].value == "****"
    assert out.driver == sample().driver


def test_every_model_field_is_documented():
    with open(os.path.join(os.path.dirname(__file__), "..", "docs", "facts-schema.md"), encoding="utf-8") as f:
        doc = f.read()
    missing = []
    for name in model.__all__:
        cls = getattr(model, name)
        if dataclasses.is_dataclass(cls) and cls is not model.FactSpec:  # a declaration, never serialised
            missing += [
                f"{name}.{f.name}"
                for f in dataclasses.fields(cls)
                if not f.name.startswith("_") and f"`{f.name}`" not in doc
            ]
    assert missing == []


def test_the_top_level_schema_table_is_the_registry():
    """docs/facts-schema.md's "Facts (top level)" table is generated from the fact declarations."""
    from cudadoctor.facts.registry import schema_table

    with open(os.path.join(os.path.dirname(__file__), "..", "docs", "facts-schema.md"), encoding="utf-8") as f:
        doc = f.read()
    assert schema_table() in doc


def test_the_fast_decoder_builds_what_decode_builds_and_refuses_what_it_refuses() -> None:
    """decode_fast gives decode's facts for a real snapshot, and decode's exact error for every spoiled one."""
    import copy
    import json as _json
    from pathlib import Path

    from cudadoctor.errors import SnapshotError
    from cudadoctor.facts.codec import decode, decode_fast
    from cudadoctor.facts.model import Facts

    raw = _json.loads((Path(__file__).parent / "fixtures/h200-device/snapshot.json").read_text())["facts"]
    assert decode_fast(Facts, raw, "facts") == decode(Facts, raw, "facts")
    spoilers = [
        lambda f: f.__setitem__("gpus", {}),
        lambda f: f["gpus"][0].__setitem__("index", "0"),
        lambda f: f["gpus"][0].__setitem__("index", True),
        lambda f: f["gpus"][0].pop("name"),
        lambda f: f["driver"].__setitem__("version", 580),
        lambda f: f["packages"]["torch"].__setitem__("version", "not a version"),
        lambda f: f["packages"]["torch"]["source"].__setitem__("kind", "nonsense"),
        lambda f: f.__setitem__("packages", [1]),
        lambda f: f["gpus"][0].__setitem__("memory_mib", "big"),
    ]
    for spoil in spoilers:
        facts = copy.deepcopy(raw)
        spoil(facts)
        with pytest.raises(SnapshotError) as slow:
            decode(Facts, facts, "facts")
        with pytest.raises(SnapshotError) as fast:
            decode_fast(Facts, facts, "facts")
        assert str(fast.value) == str(slow.value)
    many = copy.deepcopy(raw)
    many["gpus"] = many["gpus"] * 10_001
    with pytest.raises(SnapshotError, match=r"facts.gpus: 10001 items, more than any machine has \(10000\)"):
        decode_fast(Facts, many, "facts", max_items=10_000)
