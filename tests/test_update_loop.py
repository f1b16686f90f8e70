"""`cudadoctor update` closes the loop: releases no compat data knows, read from a local index, are planned.

A local index on 127.0.0.1 serves a torch 2.99.0 (CUDA 13.0 pins) and a vLLM 0.99.0 that pins it; `update`
reads them into a temporary cache, and `suggest` and the checks then use them with what they inherit from
curated releases (torch's arch list, vLLM's minimum compute capability), labelled *inferred* with the reason.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from packaging.version import Version
from typer.testing import CliRunner

from cudadoctor.checks.findings import Status
from cudadoctor.cli import app
from cudadoctor.data import CompatMatrix
from cudadoctor.data.indexed import inherit_vllm_floor
from cudadoctor.facts.codec import facts_from_json
from cudadoctor.facts.model import Facts, GpuInfo, InstalledPackage, Source, SourceKind
from cudadoctor.testing import run_check
from tests.conftest import fixture_text
from tests.test_update import IndexServer, _loopback_only, reply  # noqa: F401 - the autouse loopback guard

TORCH = "2.99.0"
VLLM = "0.99.0"
TORCH_WHEEL = f"torch-{TORCH}-cp312-cp312-manylinux_2_28_x86_64.whl"
VLLM_WHEEL = f"vllm-{VLLM}-cp38-abi3-manylinux_2_31_x86_64.whl"
TORCH_METADATA = f"""Metadata-Version: 2.4
Name: torch
Version: {TORCH}
Requires-Python: >=3.10
Requires-Dist: filelock
Requires-Dist: nvidia-cuda-runtime==13.0.96; platform_system == "Linux"
Requires-Dist: nvidia-cudnn-cu13==9.13.0.50; platform_system == "Linux"

""".encode()
VLLM_METADATA = f"""Metadata-Version: 2.4
Name: vllm
Version: {VLLM}
Requires-Python: >=3.10
Requires-Dist: torch=={TORCH}
Requires-Dist: numpy

""".encode()
ASSUMED = Source(SourceKind.ASSUMED, "test")


def _serve(server: IndexServer, name: str, wheel: str, metadata: bytes, requires_python: str) -> None:
    """A PEP 691 page for ``name`` with one wheel and its PEP 658 metadata file."""
    path = f"/packages/{name}/{wheel}"
    entry = {
        "filename": wheel,
        "url": server.base + path,
        "hashes": {"sha256": hashlib.sha256(wheel.encode()).hexdigest()},
        "requires-python": requires_python,
        "core-metadata": {"sha256": hashlib.sha256(metadata).hexdigest()},
        "yanked": False,
    }
    page = {"meta": {"api-version": "1.1"}, "name": name, "files": [entry]}
    server.routes[f"/simple/{name}/"] = reply(json.dumps(page).encode(), ctype="application/vnd.pypi.simple.v1+json")
    server.routes[path + ".metadata"] = reply(metadata)


@pytest.fixture
def cache(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The `cudadoctor update` cache after reading the local index (the default cache: XDG_CACHE_HOME)."""
    server = IndexServer()
    try:
        _serve(server, "torch", TORCH_WHEEL, TORCH_METADATA, ">=3.10")
        _serve(server, "vllm", VLLM_WHEEL, VLLM_METADATA, ">=3.10")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
        monkeypatch.setenv("PIP_INDEX_URL", server.index)
        target = os.path.join(str(tmp_path), "cudadoctor")
        result = CliRunner().invoke(app, ["update", "torch", "vllm", "--cache-dir", target])
        assert result.exit_code == 0, result.output
        assert "2 new release record(s)" in result.stdout
        yield target
    finally:
        server.close()


@pytest.fixture(scope="module")
def h200() -> Facts:
    """The facts cudadoctor read on the real H200 (tests/fixtures/h200-device/snapshot.json)."""
    return facts_from_json(fixture_text("h200-device", "snapshot.json"))


def _suggest(target: str, gpu: str = "H200", *, exit_code: int = 0) -> dict[str, Any]:
    args = ["suggest", target, "--no-probe", "--gpu", gpu, "--driver", "580.95.05", "--python", "3.12"]
    result = CliRunner().invoke(app, [*args, "--format", "json"])
    assert result.exit_code == exit_code, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def test_the_derived_rows_inherit_and_say_from_where(cache: str) -> None:
    matrix = CompatMatrix(cache_dir=cache)
    torch = matrix.torch_release(Version(TORCH))
    vllm = matrix.vllm_release(Version(VLLM))
    assert torch is not None and vllm is not None
    assert torch.derived and torch.pypi_default_cuda == Version("13.0")
    curated_cu130 = matrix.torch_arch_list(Version("2.14.1"), "cu130")
    assert curated_cu130 and torch.inherited_archs == curated_cu130
    assert torch.inherited == "the cu130 GPU targets of torch 2.14.1, the newest earlier release that has them"
    assert matrix.torch_arch_list_or_inherited(Version(TORCH), "cu130") == (curated_cu130, torch.inherited)
    assert matrix.torch_arch_list_or_inherited(Version(TORCH), "cu126") == (None, "")  # only its own variant
    newest = max((v for v in CompatMatrix(cache_dir=False).vllm_releases), key=lambda v: v.version)
    assert newest.min_compute_capability is not None
    assert vllm.min_compute_capability == newest.min_compute_capability
    assert vllm.inherited == (
        f"minimum compute capability {newest.min_compute_capability} of vLLM {newest.version}, "
        "the newest curated release before it"
    )


def test_suggest_vllm_plans_the_new_release_labelled_inferred(cache: str) -> None:
    doc = _suggest(f"vllm=={VLLM}")
    plans = doc["suggestion"]["plans"]
    assert plans, doc
    plan = plans[0]
    assert ["vllm", VLLM] in [list(p) for p in plan["packages"]]
    caveats = " | ".join(plan["caveats"])
    assert "inferred: every GPU meets the minimum compute capability" in caveats
    assert "inferred: torch 2.99.0's GPU targets" in caveats and "torch 2.14.1" in caveats


def test_suggest_torch_plans_the_new_release_labelled_inferred(cache: str) -> None:
    doc = _suggest(f"torch=={TORCH}")
    plans = doc["suggestion"]["plans"]
    assert plans, doc
    caveats = " | ".join(plans[0]["caveats"])
    assert "inferred: GPU targets (" in caveats and "torch 2.14.1" in caveats


def test_an_inherited_arch_list_excludes_a_gpu_it_lacks_and_says_inferred(cache: str) -> None:
    # the cu130 list of 2.14.1 starts at sm_75: a GTX 1080 Ti (6.1) is not covered
    doc = _suggest(f"torch=={TORCH}", gpu="GTX 1080 Ti", exit_code=1)  # 1: no plan
    assert not doc["suggestion"]["plans"]
    [excluded] = doc["suggestion"]["excluded"]
    assert (excluded["candidate"], excluded["rule"]) == (f"torch {TORCH} from PyPI (CUDA 13.0)", "gpu-arch-list")
    why = "(inferred: the cu130 GPU targets of torch 2.14.1, the newest earlier release that has them)"
    assert excluded["required"].endswith(why)


def test_unpinned_suggest_ranks_verified_plans_first_and_names_the_new_release(cache: str) -> None:
    for target, version in (("vllm", VLLM), ("torch", TORCH)):
        doc = _suggest(target)["suggestion"]
        assert doc["plans"]
        assert not any("inferred" in c for c in doc["plans"][0]["caveats"]), doc["plans"][0]
        shown = {v for plan in doc["plans"] for name, v in plan["packages"] if name == target}
        noted = [n for n in doc["notes"] if n.startswith(f"{target} {version} (read from the package index")]
        assert version in shown or noted, doc["notes"]  # either planned or named, never silently dropped
        if noted:
            assert f"`cudadoctor suggest '{target}=={version}'`" in noted[0] and "inferred" in noted[0]


def _installed(h200: Any, torch: str, variant: str, extra: dict[str, InstalledPackage] | None = None) -> Any:
    site = "/opt/venv/lib/python3.12/site-packages"
    pkg = InstalledPackage("torch", Version(torch), site, ASSUMED, variant, "13.0")
    return replace(h200, packages={"torch": pkg, **(extra or {})})


def test_check_judges_an_installed_derived_release_with_what_it_inherits(cache: str, h200: Any) -> None:
    matrix = CompatMatrix(cache_dir=cache)
    site = "/opt/venv/lib/python3.12/site-packages"
    vllm = InstalledPackage("vllm", Version(VLLM), site, ASSUMED)
    facts = _installed(h200, f"{TORCH}+cu130", "cu130", {"vllm": vllm})
    assert run_check("CD113", facts, matrix).status is Status.OK  # H200 (9.0) is in the inherited list
    assert run_check("CD501", facts, matrix).status is Status.OK

    pascal = replace(facts, gpus=(GpuInfo(0, "NVIDIA GeForce GTX 1080 Ti", "6.1", ASSUMED),))
    finding = run_check("CD113", pascal, matrix)
    assert finding.status is Status.FAIL
    assert "inferred: its targets" in finding.message and "torch 2.14.1" in finding.message
    floor = run_check("CD501", pascal, matrix)
    assert floor.status is Status.FAIL
    assert "(inferred: minimum compute capability" in floor.message
    assert floor.evidence["vLLM"].startswith(f"{VLLM} (minimum ") and "inferred:" in floor.evidence["vLLM"]


def test_what_cannot_be_inherited_stays_could_not_judge(cache: str, h200: Any) -> None:
    # torch 2.99.0 cu126 is not the variant its PyPI wheel was built for: no list is inherited for it
    matrix = CompatMatrix(cache_dir=cache)
    finding = run_check("CD113", _installed(h200, f"{TORCH}+cu126", "cu126"), matrix)
    assert finding.status is Status.UNKNOWN and "no arch list for torch" in (finding.reason or "")


def test_without_the_cache_nothing_is_inherited(h200: Any) -> None:
    matrix = CompatMatrix(cache_dir=False)
    assert matrix.torch_release(Version(TORCH)) is None and matrix.vllm_release(Version(VLLM)) is None


def test_a_vllm_older_than_every_curated_floor_inherits_nothing(cache: str) -> None:
    vllm = CompatMatrix(cache_dir=cache).vllm_release(Version(VLLM))
    curated = CompatMatrix(cache_dir=False).vllm_releases
    assert vllm is not None and vllm.inherited
    older = replace(vllm, version=Version("0.0.0a1"), min_compute_capability=None, inherited=None)
    # no curated release before it: its floor stays unknown (CD501 could not judge), nothing is claimed
    alone = inherit_vllm_floor(older, curated)
    assert alone.min_compute_capability is None and alone.inherited is None
    assert inherit_vllm_floor(replace(older, version=Version(VLLM)), curated) == vllm
