"""The whole probe layer on the real H200 machine (rebuilt under pyfakefs), against a golden facts JSON.

The tree, command outputs and NVML answers come from the capture (tests/h200_fixture.py). The
golden file is reviewed by hand: it must show what the real machine shows (driver 580.159.04 from
several sources, CUDA 13.0, an H200 with compute capability 9.0, toolkit 13.0 without version.json,
two cuDNN and two NCCL copies, torch 2.11.0+cu130, a container, the compat libcuda 580.95.05).
Refresh it with ``pytest tests/test_golden_h200.py --update-golden`` and review the diff.
"""

from __future__ import annotations

import json
import os

from cudadoctor.facts.codec import encode, facts_from_json, facts_to_json
from cudadoctor.probes.collect import collect_facts
from tests.conftest import FakeNative, make_ctx
from tests.h200_fixture import LIBCUDA, NVML, build_tree, h200_env, h200_runner

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "h200-facts.json")

#: Facts that describe the machine running the tests, not the capture.
_VOLATILE = ("collected_at", "timings", "tool_version")


def _normalised(facts) -> dict:
    data = encode(facts)
    for key in _VOLATILE:
        data.pop(key, None)
    data["host"]["kernel"] = data["host"]["glibc"] = None
    return data


def _golden_text() -> str:
    with open(GOLDEN, encoding="utf-8") as handle:
        return handle.read()


#: Read before any fake file system hides the real one.
GOLDEN_TEXT = _golden_text()


def test_h200_facts_match_the_golden_file(fs, update_golden):
    golden_text = GOLDEN_TEXT
    fs.add_real_directory(os.path.join(os.path.dirname(__file__), "fixtures", "h200"))
    build_tree("/")
    ctx = make_ctx(env=h200_env(), runner=h200_runner(), native=FakeNative(NVML, LIBCUDA))
    facts = collect_facts(ctx)
    got = _normalised(facts)
    if update_golden:
        fs.pause()
        with open(GOLDEN, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(got, indent=2, sort_keys=True) + "\n")
        fs.resume()
    else:
        assert got == json.loads(golden_text)
    # The facts the issue names, spelled out so a reviewer need not read the JSON.
    assert str(facts.driver.version) == "580.159.04"
    assert str(facts.driver.cuda_api) == "13.0"
    sources = {r.source.where for r in facts.driver.readings if r.version and str(r.version) == "580.159.04"}
    assert len(sources) >= 3, sources
    assert [(g.name, g.compute_capability) for g in facts.gpus] == [("NVIDIA H200", "9.0")]
    (toolkit,) = facts.toolkits
    assert str(toolkit.version) == "13.0" and "version.json" not in toolkit.source.where
    assert str(facts.nvcc.version) == "13.0.88"
    assert sorted((c.origin, str(c.version)) for c in facts.cudnn) == [("pip", "9.19.0.56"), ("system", "9.14.0")]
    assert sorted((c.origin, str(c.version)) for c in facts.nccl) == [("pip", "2.28.9"), ("system", "2.28.3")]
    torch = facts.packages["torch"]
    assert (str(torch.torch_build.version), torch.cuda_build) == ("2.11.0+cu130", "13.0")
    assert facts.host.container.in_container
    compat = [f for f in facts.driver.libcuda_files if f.kind == "compat"]
    assert [(str(f.version), f.on_search_path) for f in compat] == [("580.95.05", False)]
    assert facts.errors == ()
    # And the snapshot of these facts reads back to the same facts.
    assert _normalised(facts_from_json(facts_to_json(facts))) == got
