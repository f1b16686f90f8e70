"""cudadoctor compare: pools, majority and baseline, Slurm host lists, formats and exit codes."""

from __future__ import annotations

import copy
import datetime
import json
import os

import pytest
from typer.testing import CliRunner

from cudadoctor.cli import app
from cudadoctor.compare.fold import fold
from cudadoctor.compare.judge import Node, judge
from cudadoctor.compare.load import load_nodes
from cudadoctor.compare.nfd import PREFIX, feature_file, label_value
from cudadoctor.compare.values import node_values
from tests.conftest import fixture_text

H200 = json.loads(fixture_text("h200-device", "snapshot.json"))


def _write(directory: str, name: str, document: dict) -> str:
    path = os.path.join(directory, f"{name}.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(document, handle)
    return path


def _variant(**changes) -> dict:
    """The real H200 snapshot with a few facts changed (``nccl``, ``driver``, ``gpu``, ``plugin``)."""
    doc = copy.deepcopy(H200)
    facts = doc["facts"]
    if "nccl" in changes:
        facts["nccl"][0]["version"] = changes["nccl"]
    if "driver" in changes:  # the agreed version and the loaded kernel module's, as a real snapshot has both
        facts["driver"]["version"] = changes["driver"]
        facts["driver"]["kernel_module"]["version"] = changes["driver"]
    if "gpu" in changes:
        facts["gpus"][0]["name"] = changes["gpu"]
    if "plugin" in changes:
        facts["host"]["env"].append({"name": "NCCL_NET_PLUGIN", "value": changes["plugin"], "claims": None})
    return doc


@pytest.mark.parametrize(
    ("names", "folded"),
    [
        ([f"gpu{i:03d}" for i in range(1, 98)] + ["gpu099"], "gpu[001-097,099]"),
        (["node1", "node2", "node10"], "node[1-2,10]"),
        (["a", "gpu01", "b"], "a,gpu01,b"),
        (["gpu01", "gpu001"], "gpu01,gpu001"),
        ([], ""),
    ],
)
def test_node_names_fold_as_slurm_writes_them(names, folded):
    assert fold(names) == folded


def test_values_read_from_the_real_snapshot():
    values = node_values(H200["facts"])
    assert values["gpu_model"] == "NVIDIA H200" and values["gpu_count"] == "1"
    assert values["nccl"] == "2.28.9 (pip)" and values["cudnn"] == "9.19.0.56 (pip)"
    assert values["driver_branch"] == "580" and values["python"] == "3.12" and values["cuda_runtime_major"] == "13"
    assert values["torch"] == "2.11.0+cu130"


def test_the_majority_names_the_odd_node_and_the_fact(tmp_path):
    for i in range(1, 6):
        _write(str(tmp_path), f"gpu{i:03d}", _variant(nccl="2.21.5") if i == 4 else H200)
    result = CliRunner().invoke(app, ["compare", str(tmp_path), "-f", "json"])
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    (pool,) = doc["pools"]
    (diff,) = pool["differences"]
    assert (diff["fact"], diff["expected"], diff["outliers"]) == ("nccl", "2.28.9 (pip)", ["gpu004"])


def test_no_majority_names_no_outlier():
    a = Node("n1", node_values(H200["facts"]))
    b = Node("n2", node_values(_variant(plugin="libnccl-net-ofi.so")["facts"]))
    verdict = judge([a, b])
    assert verdict.outliers == ()
    assert [d.basis for d in verdict.undecided] == ["no majority"]


def test_pools_are_compared_separately():
    nodes = [Node(f"h{i}", node_values(H200["facts"])) for i in range(3)]
    nodes += [Node(f"b{i}", node_values(_variant(gpu="NVIDIA B200", driver="575.51.03")["facts"])) for i in range(2)]
    verdict = judge(nodes)
    assert len(verdict.pools) == 2 and verdict.outliers == ()


def test_a_rolling_driver_upgrade_within_a_branch_is_not_a_difference_but_another_branch_is():
    same = [Node(f"n{i}", node_values(_variant(driver=f"580.{i}5.0{i}")["facts"])) for i in range(3)]
    assert judge(same).outliers == ()
    other = [*same, Node("old", node_values(_variant(driver="570.86.10")["facts"]))]
    assert judge(other).outliers == ("old",)


def test_a_baseline_replaces_the_majority(tmp_path):
    for i in range(1, 4):
        _write(str(tmp_path / ""), f"n{i}", _variant(nccl="2.21.5"))
    expected = tmp_path / "expected.json"
    expected.write_text(json.dumps({"nccl": "2.28.9 (pip)"}))
    nodes = tmp_path
    result = CliRunner().invoke(app, ["compare", str(nodes / "n1.json"), str(nodes / "n2.json"), str(nodes / "n3.json"),
                                      "--baseline", str(expected)])  # fmt: skip
    assert result.exit_code == 1
    assert "expected 2.28.9 (pip) (baseline); differs on n[1-3]" in result.stdout


def test_findings_of_reports_are_aggregated(tmp_path):
    report = copy.deepcopy(H200)
    report["kind"] = "cudadoctor-report"
    report["findings"] = [{"code": "CD104", "status": "fail"}, {"code": "CD111", "status": "ok"}]
    _write(str(tmp_path), "gpu1", report)
    _write(str(tmp_path), "gpu2", H200)
    result = CliRunner().invoke(app, ["compare", str(tmp_path)])
    assert result.exit_code == 1
    assert "CD104 fail on 1 node(s): gpu1" in result.stdout and "CD111" not in result.stdout


def test_all_agree_exits_zero_in_every_format(tmp_path):
    for i in range(3):
        _write(str(tmp_path), f"gpu{i}", H200)
    for fmt in ("text", "json", "markdown"):
        result = CliRunner().invoke(app, ["compare", str(tmp_path), "-f", fmt])
        assert result.exit_code == 0, result.output
    assert "✓ 3 node(s) agree" in CliRunner().invoke(app, ["compare", str(tmp_path)]).stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [("not json", "not JSON"), ('{"kind": "other"}', "not a cudadoctor snapshot or report")],
)
def test_bad_input_is_a_usage_error(tmp_path, content, message):
    (tmp_path / "x.json").write_text(content)
    result = CliRunner().invoke(app, ["compare", str(tmp_path)])
    assert result.exit_code == 2 and message in result.stderr


def test_a_baseline_naming_unknown_facts_is_refused(tmp_path):
    _write(str(tmp_path), "n1", H200)
    bad = tmp_path / "b.json"
    bad.write_text(json.dumps({"ncll": "2.28.9"}))
    result = CliRunner().invoke(app, ["compare", str(tmp_path / "n1.json"), "--baseline", str(bad)])
    assert result.exit_code == 2 and "unknown fact(s) ncll" in result.stderr


@pytest.mark.parametrize(
    ("text", "value"),
    [("2.11.0+cu130", "2.11.0_cu130"), ("NVIDIA H200", "NVIDIA-H200"), ("(none)", "none"), ("x" * 70, "x" * 63)],
)
def test_label_values_hold_only_what_kubernetes_allows(text, value):
    assert label_value(text) == value


def test_the_nfd_feature_file_of_a_broken_node(tmp_path):
    report = copy.deepcopy(H200)
    report["kind"] = "cudadoctor-report"
    report["findings"] = [{"code": "CD104", "status": "fail"}, {"code": "CD210", "status": "warn"}]
    path = _write(str(tmp_path), "gpu7", report)
    (node,) = load_nodes([path])
    expires = datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    lines = feature_file(node.values, node.findings, expires=expires).splitlines()
    assert lines[0] == "# +expiry-time=2030-01-02T03:04:05Z"
    labels = dict(line.removeprefix(PREFIX).split("=") for line in lines[1:])
    assert labels["torch"] == "2.11.0_cu130" and labels["nccl"] == "2.28.9" and labels["nccl-origin"] == "pip"
    assert labels["healthy"] == "false" and labels["cd104"] == "fail" and labels["cd210"] == "warn"
    assert labels["gpu-model"] == "NVIDIA-H200" and "nccl-net-plugin" not in labels
    healthy = feature_file(node_values(H200["facts"]), {"CD210": "warn"})
    assert f"{PREFIX}healthy=true" in healthy.splitlines() and not healthy.startswith("#")


# --- regressions from the independent hostile run (issue #14) -------------------------------------------------


def test_a_node_that_lost_its_driver_and_gpus_is_named_not_a_pool_of_its_own(tmp_path):
    """It used to form a "0 x no GPU" pool, its own majority, and the fleet was reported as agreeing."""
    for i in range(3):
        _write(str(tmp_path), f"gpu{i}", H200)
    lost = copy.deepcopy(H200)
    lost["facts"]["gpus"], lost["facts"]["driver"] = [], None
    _write(str(tmp_path), "gpu3", lost)
    result = CliRunner().invoke(app, ["compare", str(tmp_path)])
    assert result.exit_code == 1
    assert "GPUs and driver visible: expected yes (majority); differs on gpu3" in result.stdout


@pytest.mark.parametrize("field", ["gpus", "nccl", "cudnn"])
def test_a_wrongly_typed_field_is_no_crash(tmp_path, field):
    for i in range(3):
        _write(str(tmp_path), f"n{i}", H200)
    bad = copy.deepcopy(H200)
    bad["facts"][field] = 5
    bad["facts"]["host"]["env"] = 7
    bad["findings"] = 3
    _write(str(tmp_path), "bad", bad)
    result = CliRunner().invoke(app, ["compare", str(tmp_path), "-f", "json"])
    assert result.exit_code == 1, result.output  # the odd node is named, nothing crashed
    assert "bad" in json.loads(result.stdout)["outliers"]


def test_invisible_characters_do_not_split_a_gpu_model(tmp_path):
    for i in range(3):
        _write(str(tmp_path), f"n{i}", H200)
    _write(str(tmp_path), "odd", _variant(gpu="NVIDIA H200\u200b", driver="470.82.01"))
    result = CliRunner().invoke(app, ["compare", str(tmp_path), "-f", "json"])
    assert result.exit_code == 1 and json.loads(result.stdout)["outliers"] == ["odd"]


def test_a_baseline_with_100000_unknown_keys_is_refused_in_one_bounded_line(tmp_path):
    """Issue #27: the error named every unknown key (789 KB for 100,000); now five, then a count."""
    _write(str(tmp_path), "n1", H200)
    bad = tmp_path / "b.json"
    bad.write_text(json.dumps({f"key{i:06d}\x1b[2J" + "x" * 200: 1 for i in range(100_000)}))
    result = CliRunner().invoke(app, ["compare", str(tmp_path / "n1.json"), "--baseline", str(bad)])
    assert result.exit_code == 2 and "and 99995 more" in result.stderr
    assert len(result.stderr) < 2000 and "\x1b" not in result.stderr
