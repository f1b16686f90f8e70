"""cudadoctor compare: pools, majority and baseline, Slurm host lists, formats and exit codes."""

from __future__ import annotations

import copy
import datetime
import json
import os
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from cudadoctor.cli import app
from cudadoctor.compare.fold import expand, fold
from cudadoctor.compare.judge import Node, judge
from cudadoctor.compare.load import load_nodes
from cudadoctor.compare.nfd import PREFIX, feature_file, label_value
from cudadoctor.compare.values import node_values
from tests.conftest import fixture_text

H200 = json.loads(fixture_text("h200-device", "snapshot.json"))


def _write(directory: str, name: str, document: dict) -> str:
    os.makedirs(directory, exist_ok=True)
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
    # each node counted once (the fleet-wide pool and the pools by model hold them all: "1 of 8" was printed)
    assert "✗ 1 of 4 node(s) differ: gpu3" in result.stdout


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
    assert result.exit_code == 2 and "and 99,995 more" in result.stderr
    assert len(result.stderr) < 2000 and "\x1b" not in result.stderr


# --- one vote per node (issues #27 item 3, #32 item 6) ----------------------------------------------------------


def _json(args: list[str]) -> tuple[int, dict]:
    result = CliRunner().invoke(app, ["compare", *args, "-f", "json"])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def test_one_file_named_three_times_is_one_vote(tmp_path):
    """A 1-vs-1 tie made gpu002 "differ" when gpu001's file was named three times."""
    one = _write(str(tmp_path), "gpu001", H200)
    two = _write(str(tmp_path), "gpu002", _variant(nccl="2.21.5"))
    link = tmp_path / "alias.json"
    link.symlink_to(one)
    code, doc = _json([one, two, one, str(link)])
    assert doc["outliers"] == [] and doc["total"] == 2
    assert any("named 3 times, counted once" in note for note in doc["notes"])
    (pool,) = doc["pools"]
    assert [d["basis"] for d in pool["differences"]] == ["no majority"] and code == 1


def test_identical_reports_of_one_host_count_once_and_differing_ones_are_named(tmp_path):
    for i in range(1, 4):
        _write(str(tmp_path / "a"), f"n{i}", H200)
    _write(str(tmp_path / "b"), "n1", H200)  # the same node's report, copied into another directory
    code, doc = _json([str(tmp_path / "a"), str(tmp_path / "b")])
    assert code == 0 and doc["total"] == 3 and doc["outliers"] == []
    assert any("n1: identical reports" in note for note in doc["notes"])
    _write(str(tmp_path / "b"), "n2", _variant(nccl="2.21.5"))  # n2's second report says something else
    code, doc = _json([str(tmp_path / "a"), str(tmp_path / "b")])
    assert code == 1 and doc["outliers"] == ["n2"] and doc["total"] == 3
    assert [(f["reason"], f["nodes"]) for f in doc["flags"]] == [("several reports that differ", "n2")]


@pytest.mark.parametrize(
    ("names", "folded"),
    [
        ([f"gpu{i:03d}" for i in range(1, 201)], "gpu[001-200]"),
        (["gpu099", "gpu100"], "gpu[099-100]"),
        (["gpu9", "gpu10"], "gpu[9-10]"),
        (["gpu01", "gpu001", "gpu100"], "gpu01,gpu[001,100]"),
    ],
)
def test_names_fold_across_a_digit_width_boundary(names, folded):
    assert fold(names) == folded
    assert expand(folded) == sorted(set(names), key=lambda n: expand(folded).index(n))


@pytest.mark.parametrize(
    ("expression", "names"),
    [
        ("gpu[098-101]", ["gpu098", "gpu099", "gpu100", "gpu101"]),
        ("a[1-2]b[01-02],login", ["a1b01", "a1b02", "a2b01", "a2b02", "login"]),
        ("x1 x1,x2", ["x1", "x2"]),
    ],
)
def test_host_lists_expand_as_slurm_reads_them(expression, names):
    assert expand(expression) == names


@pytest.mark.parametrize(
    "expression",
    ["gpu[1-", "gpu]", "gpu[3-1]", "gpu[a]", "gpu[1-9999999999]", "g[" + "9" * 5000 + "]", "n1," + "x" * 2000],
)
def test_a_bad_host_list_is_a_usage_error_of_one_short_line(tmp_path, expression):
    _write(str(tmp_path), "gpu1", H200)
    result = CliRunner().invoke(app, ["compare", str(tmp_path), "--expect-hosts", expression])
    assert result.exit_code == 2 and len(result.stderr) < 300 and result.stderr.count("\n") <= 2


def _gpus(count: int) -> dict:
    doc = copy.deepcopy(H200)
    first = doc["facts"]["gpus"][0]
    doc["facts"]["gpus"] = [{**first, "index": i, "pci_bus_id": f"00000000:{i:02x}:00.0"} for i in range(count)]
    return doc


def test_a_node_that_lost_one_of_its_eight_gpus_is_named_not_a_pool_of_its_own(tmp_path):
    for i in range(1, 5):
        _write(str(tmp_path), f"gpu{i:03d}", _gpus(7 if i == 3 else 8))
    _write(str(tmp_path), "gpu005", _gpus(16))  # more GPUs than its peers: another machine, not a lost GPU
    code, doc = _json([str(tmp_path)])
    assert code == 1 and doc["outliers"] == ["gpu003"]
    (pool,) = doc["pools"]
    (diff,) = pool["differences"]
    assert (diff["fact"], diff["expected"], diff["reason"]) == ("gpu_count", "8", "fewer GPUs than its peers")


def test_a_node_without_a_report_and_a_stale_report_are_named(tmp_path):
    for i in range(1, 4):
        _write(str(tmp_path), f"gpu{i:03d}", H200)  # collected 2026-11-30T01:55:42Z
    old = copy.deepcopy(H200)
    old["facts"]["collected_at"] = "2026-11-20T01:55:42+00:00"
    _write(str(tmp_path), "gpu004", old)
    hosts = tmp_path / "hosts"
    hosts.write_text("# the partition\ngpu[001-004]\ngpu099  # spare\n")
    result = CliRunner().invoke(app, ["compare", str(tmp_path), "--expect-hosts", str(hosts), "--max-age", "30d"])
    assert result.exit_code == 1 and "✗ no report: 1 node(s) gpu099" in result.stdout
    assert "gpu004" not in result.stdout  # 30 days: not stale yet, whatever today is (the fixture is of 2026-11-30)
    code, doc = _json([str(tmp_path), "--expect-hosts", "gpu[001-005]", "--max-age", "1h"])
    flags = {f["reason"]: f["nodes"] for f in doc["flags"]}
    assert flags == {"no report": "gpu005", "report older than 1h": "gpu[001-004]"} and doc["total"] == 5
    assert code == 1 and doc["pools"] == []  # the stale nodes do not vote


def test_max_age_counts_from_now(tmp_path):
    import datetime as dt

    from cudadoctor.compare.judge import judge
    from cudadoctor.compare.load import load_nodes

    fresh, stale = copy.deepcopy(H200), copy.deepcopy(H200)
    now = dt.datetime(2026, 11, 30, 3, 0, tzinfo=dt.timezone.utc)
    fresh["facts"]["collected_at"] = "2026-11-30T02:30:00+00:00"
    stale["facts"]["collected_at"] = "2026-11-30T01:30:00Z"
    paths = [_write(str(tmp_path), "fresh", fresh), _write(str(tmp_path), "stale", stale)]
    verdict = judge(list(load_nodes(paths)), max_age=3600, now=now)
    assert [(f.reason, f.nodes) for f in verdict.flags] == [("report older than 1h", ("stale",))]


@pytest.mark.parametrize("age", ["0", "-1", "2w", "1.5h", ""])
def test_a_bad_max_age_is_a_usage_error(tmp_path, age):
    _write(str(tmp_path), "n1", H200)
    assert CliRunner().invoke(app, ["compare", str(tmp_path), "--max-age", age]).exit_code == 2


# --- bounded input, accepted as check --from accepts it (issue #27 items 5 and 7) ----------------------------------


def _nodes(tmp_path, count: int = 3) -> None:
    for i in range(count):
        _write(str(tmp_path), f"n{i}", H200)


def test_a_huge_field_is_refused_not_echoed(tmp_path):
    """A 60 MB GPU name was echoed into 62 MB of output."""
    _nodes(tmp_path)
    _write(str(tmp_path), "big", _variant(gpu="H" * 5_000_000))
    result = CliRunner().invoke(app, ["compare", str(tmp_path)])
    assert result.exit_code == 1 and len(result.stdout) < 2000, len(result.stdout)
    assert "report refused: facts.gpus[0].name: 5,000,000 characters" in result.stdout


def test_a_million_findings_are_refused_unparsed(tmp_path):
    """1 M findings took 831 MiB: the document is refused before it is parsed, its node named."""
    _nodes(tmp_path)
    report = copy.deepcopy(H200)
    report["kind"] = "cudadoctor-report"
    report["findings"] = [{"code": "CD104", "status": "fail"}] * 250_000
    _write(str(tmp_path), "many", report)
    code, doc = _json([str(tmp_path)])
    assert code == 1 and doc["outliers"] == ["many"] and "CD104" not in doc["findings"]
    assert doc["flags"][0]["reason"].startswith("report refused: more than 200,000 objects")


@pytest.mark.parametrize(
    ("findings", "why"),
    [
        ([{"code": "CD104", "status": "fail"}] * 10_001, "findings: 10,001 items"),
        ([{"code": "CD104\nfake ✓ line", "status": "fail"}], "findings[0]: not a check's code and status"),
        ([{"code": "CD104", "status": "x" * 100}], "findings[0]: not a check's code and status"),
    ],
)
def test_findings_are_bounded_and_must_be_check_codes(tmp_path, findings, why):
    _nodes(tmp_path)
    report = copy.deepcopy(H200)
    report["kind"] = "cudadoctor-report"
    report["findings"] = findings
    _write(str(tmp_path), "odd", report)
    code, doc = _json([str(tmp_path)])
    assert code == 1 and doc["outliers"] == ["odd"] and doc["findings"] == {}
    assert why in doc["flags"][0]["reason"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"schema_version": 99}, "written with facts schema 99"),
        ({"schema_version": "1"}, "schema_version missing or not an integer"),
        ({"schema_version": None}, "schema_version missing or not an integer"),
    ],
)
def test_the_envelope_is_checked_as_check_from_checks_it(tmp_path, change, message):
    _nodes(tmp_path)
    _write(str(tmp_path), "odd", {**H200, **change})
    result = CliRunner().invoke(app, ["compare", str(tmp_path)])
    assert result.exit_code == 2 and message in result.stderr
    from cudadoctor.app import read_snapshot
    from cudadoctor.errors import SnapshotError

    with pytest.raises(SnapshotError, match=message.split(" ")[0]):
        read_snapshot(str(tmp_path / "odd.json"))


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        (("nccl", 0, "version"), "9" * 5000, "facts.nccl[0].version"),
        (("nccl", 0, "version"), "not a version", "facts.nccl[0].version: 'not a version' is not a version"),
        (("driver", "kernel_module", "version"), 580, "facts.driver.kernel_module.version"),
        (("gpus",), [{"index": 0}] * 10_001, "facts.gpus: 10,001 items"),
        (("host", "env"), 7, "facts.host.env: expected a list"),
    ],
)
def test_a_value_check_from_refuses_is_refused(tmp_path, field, value, why):
    _nodes(tmp_path)
    odd = copy.deepcopy(H200)
    parent = odd["facts"]
    for key in field[:-1]:
        parent = parent[key]
    parent[field[-1]] = value
    _write(str(tmp_path), "odd", odd)
    code, doc = _json([str(tmp_path)])
    assert code == 1 and doc["outliers"] == ["odd"], doc
    assert doc["flags"][0]["reason"].startswith(f"report refused: {why}")
    from cudadoctor.app import read_snapshot
    from cudadoctor.errors import SnapshotError

    with pytest.raises(SnapshotError):  # check --from refuses the same document
        read_snapshot(str(tmp_path / "odd.json"))


def test_a_baseline_of_many_unknown_facts_gives_a_short_error(tmp_path):
    """100 k unknown keys printed a 789 KB error."""
    _nodes(tmp_path, 1)
    bad = tmp_path / "b.json"
    bad.write_text(json.dumps({f"key{i}": "x" for i in range(100_000)}))
    result = CliRunner().invoke(app, ["compare", str(tmp_path / "n0.json"), "--baseline", str(bad)])
    assert result.exit_code == 2 and len(result.stderr) < 1000 and "and 99,995 more" in result.stderr


# --- what a node supplies is escaped (issue #27 item 7) -----------------------------------------------------------


def test_control_characters_of_a_file_name_do_not_reach_the_terminal(tmp_path):
    _nodes(tmp_path)
    _write(str(tmp_path), "gpu9\x1b[2J\n✓ 4 node(s) agree", _variant(nccl="2.21.5"))
    result = CliRunner().invoke(app, ["compare", str(tmp_path)])
    assert result.exit_code == 1 and "\x1b" not in result.stdout
    assert "gpu9\\x1b[2J\\n✓ 4 node(s) agree" in result.stdout
    assert not any(line.startswith("✓") for line in result.stdout.splitlines())


def test_markdown_and_html_from_a_node_are_escaped_in_the_table(tmp_path):
    _nodes(tmp_path)
    _write(str(tmp_path), "odd|<b>x", _variant(plugin="libnccl-net.so | <img src=x onerror=alert(1)> @admin"))
    result = CliRunner().invoke(app, ["compare", str(tmp_path), "-f", "markdown"])
    table = [line for line in result.stdout.splitlines() if line.startswith("| NCCL network plugin")]
    assert len(table) == 1 and table[0].count(" | ") == 4  # five cells: no stray column separator
    assert "<img" not in result.stdout and "<b>" not in result.stdout and "@admin" not in result.stdout
    assert "&lt;img src=x onerror=alert(1)&gt;" in result.stdout and "&#64;admin" in result.stdout


# --- compare what loads (issue #32 item 1) ------------------------------------------------------------------------
# The H200 of the fixtures has the 2.28.9 wheel torch pins and the image's system NCCL 2.28.3 in
# /usr/lib/x86_64-linux-gnu; one node of four preloads the system one.

SYSTEM_NCCL = "/usr/lib/x86_64-linux-gnu/libnccl.so.2"
DEEP = json.loads(fixture_text("h200-deep", "deep-healthy.json"))


def _preloading(document: dict, *, deep: bool) -> dict:
    doc = copy.deepcopy(document)
    doc["facts"]["host"]["env"].append({"name": "LD_PRELOAD", "value": SYSTEM_NCCL, "claims": None})
    if deep:  # what the frameworks' child processes mapped and reported, as they do under that LD_PRELOAD
        for fw in doc["facts"]["runtime"]["frameworks"]:
            fw["nccl"] = "2.28.3"
            for lib in fw["libraries"]:
                if lib["name"] == "nccl":
                    lib.update(path=f"{SYSTEM_NCCL}.28.3", origin="system")
        doc["findings"].append({"code": "CD804", "status": "warn"})
    return doc


@pytest.mark.parametrize("deep", [False, True], ids=["snapshots", "deep-reports"])
def test_a_node_preloading_another_nccl_is_named_with_its_fix(tmp_path, deep):
    """It said "✓ 4 node(s) agree on every compared fact" and exited 0."""
    base = DEEP if deep else H200
    for i in range(1, 5):
        _write(str(tmp_path), f"gpu{i:03d}", _preloading(base, deep=deep) if i == 3 else base)
    result = CliRunner().invoke(app, ["compare", str(tmp_path)])
    assert result.exit_code == 1, result.stdout
    assert "✗ NCCL that loads: expected 2.28.9 (pip) (majority); differs on gpu003" in result.stdout
    assert "      2.28.3 (system): 1 node(s) gpu003" in result.stdout
    assert "      fix on gpu003: unset LD_PRELOAD" in result.stdout
    assert "✗ 1 of 4 node(s) differ: gpu003" in result.stdout


def test_snapshots_and_deep_reports_of_one_fleet_compare_alike(tmp_path):
    _write(str(tmp_path), "gpu001", H200)
    _write(str(tmp_path), "gpu002", DEEP)
    _write(str(tmp_path), "gpu003", H200)
    _write(str(tmp_path), "gpu004", _preloading(DEEP, deep=True))
    code, doc = _json([str(tmp_path)])
    assert code == 1 and doc["outliers"] == ["gpu004"]
    (pool,) = doc["pools"]
    (diff,) = pool["differences"]
    assert diff["fixes"] == [{"command": "unset LD_PRELOAD", "nodes": "gpu004"}]


def test_the_fix_keeps_what_else_ld_preload_and_ld_library_path_hold(tmp_path):
    preload = copy.deepcopy(H200)
    preload["facts"]["host"]["env"].append(
        {"name": "LD_PRELOAD", "value": f"/opt/hook/libhook.so {SYSTEM_NCCL}", "claims": None}
    )
    for i in range(3):
        _write(str(tmp_path), f"n{i}", H200)
    _write(str(tmp_path), "odd", preload)
    code, doc = _json([str(tmp_path)])
    assert code == 1 and doc["pools"][0]["differences"][0]["fixes"] == [
        {"command": "export LD_PRELOAD=/opt/hook/libhook.so", "nodes": "odd"}
    ]


def test_the_loader_view_of_a_snapshot_says_which_copy_wins(tmp_path):
    """A snapshot with the loader view: torch's libnccl.so.2 need resolved through LD_LIBRARY_PATH."""
    odd = copy.deepcopy(H200)
    env = odd["facts"]["host"]["env"]
    ld = next(v for v in env if v["name"] == "LD_LIBRARY_PATH")
    ld["value"] = "/usr/lib/x86_64-linux-gnu:" + ld["value"]
    system = {"path": f"{SYSTEM_NCCL}.28.3", "via": "LD_LIBRARY_PATH", "version": "2.28.3"}
    odd["facts"]["loader"] = {
        "preloaded": [],
        "needs": [
            {
                "package": "torch",
                "needer": "/venv/torch/lib/libtorch_cuda.so",
                "soname": "libnccl.so.2",
                "loaded": system,
            }
        ],
        "cache": "",
        "scanned": 1,
    }
    for i in range(3):
        _write(str(tmp_path), f"n{i}", H200)
    _write(str(tmp_path), "odd", odd)
    code, doc = _json([str(tmp_path)])
    (diff,) = doc["pools"][0]["differences"]
    assert code == 1 and (diff["fact"], diff["outliers"]) == ("nccl", ["odd"])
    assert diff["fixes"] == [
        {"command": "export LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/nvidia/lib", "nodes": "odd"}
    ]


def test_a_node_loading_the_compat_libcuda_is_named(tmp_path):
    """deep-s1: LD_LIBRARY_PATH puts /usr/local/cuda/compat first; its child mapped the compat libcuda."""
    for i in range(3):
        _write(str(tmp_path), f"n{i}", DEEP)
    _write(str(tmp_path), "odd", json.loads(fixture_text("h200-deep", "deep-s1.json")))
    code, doc = _json([str(tmp_path)])
    (diff,) = doc["pools"][0]["differences"]
    assert code == 1 and (diff["fact"], diff["expected"], diff["outliers"]) == ("libcuda", "system", ["odd"])
    assert {g["value"] for g in diff["groups"]} == {"system", "compat 580.95.05"}


def test_the_nfd_feature_file_of_a_refused_report_is_not_written(tmp_path, capsys):
    """Its values were read as none: the feature file said healthy=true."""
    from cudadoctor.compare.nfd import main

    report = copy.deepcopy(H200)
    report["kind"] = "cudadoctor-report"
    report["findings"] = [{"code": "CD104", "status": "fail"}] * 10_001
    path = _write(str(tmp_path), "gpu7", report)
    assert main([path]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "findings: 10,001 items" in err


def test_a_200_node_fleet_names_exactly_its_odd_nodes(tmp_path):
    """Issue #32's synthetic fleet: 200 eight-GPU nodes built from the H200 snapshot, one node per fault."""
    import datetime as dt

    from cudadoctor.compare.judge import judge
    from cudadoctor.compare.load import load_nodes, node_files

    healthy = _gpus(8)
    old_branch, lost, stale = _gpus(8), copy.deepcopy(healthy), copy.deepcopy(healthy)
    old_branch["facts"]["driver"] = _variant(driver="570.86.10")["facts"]["driver"]
    lost["facts"]["gpus"], lost["facts"]["driver"] = [], None
    stale["facts"]["collected_at"] = "2026-11-29T01:55:42+00:00"
    faults = {
        "gpu017": _preloading(healthy, deep=False),  # loads the system NCCL through LD_PRELOAD
        "gpu042": old_branch,  # a driver branch left behind
        "gpu099": lost,  # lost its driver and GPUs
        "gpu100": _gpus(7),  # lost one of its eight GPUs
        "gpu150": stale,  # a report a day and more old
    }
    for i in range(1, 201):
        name = f"gpu{i:03d}"
        if name != "gpu123":  # no report
            _write(str(tmp_path / "reports"), name, faults.get(name, healthy))
    _write(str(tmp_path / "other"), "gpu007", _variant(nccl="2.21.5"))  # a second, differing report of gpu007
    reports = str(tmp_path / "reports")
    files, notes = node_files([reports, str(tmp_path / "other"), os.path.join(reports, "gpu001.json")])
    now = dt.datetime(2026, 11, 30, 3, 0, tzinfo=dt.timezone.utc)
    hosts = expand("gpu[001-200]")
    verdict = judge(list(load_nodes(files)), expected_hosts=hosts, max_age=86400, now=now, notes=notes)
    assert verdict.outliers == ("gpu007", "gpu017", "gpu042", "gpu099", "gpu100", "gpu123", "gpu150")
    assert verdict.total == 200
    reasons = {d.fact: d.reason or d.outliers for p in verdict.pools for d in p.differences}
    assert reasons == {
        "gpus_visible": ("gpu099",),
        "gpu_count": "fewer GPUs than its peers",
        "driver_branch": ("gpu042",),
        "nccl": ("gpu017",),
    }
    flags = {f.reason: f.nodes for f in verdict.flags}
    assert flags == {
        "several reports that differ": ("gpu007",),
        "report older than 1d": ("gpu150",),
        "no report": ("gpu123",),
    }
    (pool,) = [p for p in verdict.pools if p.key.get("gpu_model") == "NVIDIA H200"]
    assert fold(pool.nodes) == "gpu[001-006,008-098,100-122,124-149,151-200]"
    fixes = {c: n for p in verdict.pools for d in p.differences for c, n in d.fixes.items()}
    assert fixes == {"unset LD_PRELOAD": ("gpu017",)}


def test_expect_gpus_replaces_the_majority(tmp_path):
    """Half the nodes lost a GPU: no majority says which count is right; --expect-gpus does."""
    for i in range(1, 5):
        _write(str(tmp_path), f"gpu{i}", _gpus(7 if i > 2 else 8))
    _write(str(tmp_path), "b1", _variant(gpu="NVIDIA B200"))
    code, doc = _json([str(tmp_path), "--expect-gpus", "8xH200", "--expect-gpus", "1 x B200"])
    flags = {f["reason"]: f["nodes"] for f in doc["flags"]}
    assert code == 1 and flags == {"fewer GPUs than expected (7 of 8 NVIDIA H200)": "gpu[3-4]"}
    code, doc = _json([str(tmp_path), "--expect-gpus", "8xH200"])
    flags = {f["reason"]: f["nodes"] for f in doc["flags"]}
    assert flags["GPU model NVIDIA B200 not expected (8xH200)"] == "b1" and len(flags) == 2
    # two kinds of H200 node: 4 and 8 GPUs; 7 is neither (one lost), 16 is another machine
    _write(str(tmp_path), "big", _gpus(16))
    _write(str(tmp_path), "half", _gpus(4))
    code, doc = _json([str(tmp_path), "--expect-gpus", "8xH200", "--expect-gpus", "4xH200", "--expect-gpus", "1xB200"])
    assert {f["reason"]: f["nodes"] for f in doc["flags"]} == {
        "fewer GPUs than expected (7 of 8 NVIDIA H200)": "gpu[3-4]"
    }


@pytest.mark.parametrize("spec", ["H100", "0xH100", "8x", "x8"])
def test_a_bad_expect_gpus_is_a_usage_error(tmp_path, spec):
    _write(str(tmp_path), "n1", H200)
    assert CliRunner().invoke(app, ["compare", str(tmp_path), "--expect-gpus", spec]).exit_code == 2


def test_a_node_whose_nvml_does_not_answer_is_named(tmp_path):
    """Its GPUs were found through /proc (NVML unreachable): its peers' NVML answered."""
    for i in range(3):
        _write(str(tmp_path), f"n{i}", H200)
    odd = copy.deepcopy(H200)
    odd["facts"]["gpus"][0]["source"] = {"kind": "file", "where": "/proc/driver/nvidia/gpus/0000:00:06.0/information"}
    _write(str(tmp_path), "odd", odd)
    code, doc = _json([str(tmp_path)])
    (diff,) = doc["pools"][0]["differences"]
    assert code == 1 and (diff["fact"], diff["expected"], diff["outliers"]) == ("nvml", "yes", ["odd"])


def test_real_h200_deep_reports_one_node_preloading_the_system_nccl(tmp_path):
    """Issue #32 item 7, on reports the real H200 gave (2026-12-04, `check --deep -f json`, once plain and once
    with LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libnccl.so.2): four nodes, one loading NCCL 2.28.3 instead of the
    2.28.9 wheel torch pins. Today's reports hold "not-applicable" and "unknown" findings, which compare refused
    as "not a check's code and status" before the statuses were read from checks.findings.Status."""
    plain = json.loads(fixture_text("h200-deep", "deep-2026-12-04.json"))
    preload = json.loads(fixture_text("h200-deep", "deep-2026-12-04-ld-preload-nccl.json"))
    assert {f["status"] for f in plain["findings"]} >= {"ok", "not-applicable"}
    for n in (1, 2, 3):
        _write(str(tmp_path), f"gpu00{n}", plain)
    _write(str(tmp_path), "gpu004", preload)
    result = CliRunner().invoke(app, ["compare", *sorted(str(p) for p in tmp_path.iterdir())])
    assert result.exit_code == 1, result.output
    assert "refused" not in result.output
    assert "NCCL that loads" in result.output and "differs on gpu004" in result.output
    assert "fix on gpu004: unset LD_PRELOAD" in result.output
    assert "1 of 4 node(s) differ: gpu004" in result.output
    agree = CliRunner().invoke(app, ["compare", *sorted(str(p) for p in tmp_path.iterdir() if "gpu004" not in p.name)])
    assert agree.exit_code == 0, agree.output


def test_expected_hosts_are_read_a_few_times_not_once_per_node() -> None:
    """--expect-hosts is gathered into a set once: made again for each node, 20,000 nodes took 18 s to judge."""

    class Counted(list[str]):
        passes = 0

        def __iter__(self) -> Iterator[str]:
            Counted.passes += 1
            return super().__iter__()

    names = [f"gpu{i:03d}" for i in range(200)]
    nodes = [Node(n, {"gpu_model": "H100", "gpu_count": "8"}) for n in [*names[:150], "login1"]]
    verdict = judge(nodes, expected_hosts=Counted(names))
    assert Counted.passes <= 2
    assert verdict.total == 201 and {f.reason: len(f.nodes) for f in verdict.flags} == {"no report": 50}
    assert any("login1" in note for note in verdict.notes)
