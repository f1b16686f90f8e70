"""``suggest --matrix`` (issue #12, item 8): every cell is what ``suggest`` plans or excludes, checked cell by cell."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cudadoctor.cli import app
from cudadoctor.data import CompatMatrix
from cudadoctor.planning import PLANNERS, HostFlags, constraints_for, plan
from cudadoctor.suggest import Constraints, Plan
from cudadoctor.suggest.matrix import Cell, FitMatrix, build_of, fit_matrix

M = CompatMatrix()

#: everyday machines of issue #12: (driver branch, GPU, Python)
MACHINES = {
    "RTX 4090 on 550": ("550", "RTX 4090", "3.12"),
    "H100 on 535": ("535", "H100", "3.11"),
    "B200 on 570": ("570", "B200", "3.12"),
    "GTX 1080 Ti on 580": ("580", "GTX 1080 Ti", "3.12"),
}
TARGETS = ("torch", "vllm", "jax", "tensorrt")


def _machine(name: str) -> HostFlags:
    driver, gpu, python = MACHINES[name]
    return HostFlags(driver=driver, gpus=(gpu,), python=python, probe=False)


def _c(name: str) -> Constraints:
    return constraints_for(M, _machine(name), None)


def _key(p: Plan) -> tuple[str, str]:
    return p.packages[0][1], build_of(p)


def _matrix(machine: str, target: str) -> FitMatrix:
    return fit_matrix(M, _c(machine), target, PLANNERS[target])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_every_cell_is_what_suggest_plans_or_excludes(machine: str, target: str) -> None:
    c = _c(machine)
    everything = PLANNERS[target](M, c, limit=10_000)
    planned = {_key(p): p for p in everything.plans}
    excluded = {(e.rule, e.observed, e.required) for e in everything.excluded}
    m = _matrix(machine, target)
    fitting = {}
    for row in m.rows:
        for cell in row.cells:
            if cell.fits:
                assert cell.plan is not None and not cell.reasons
                fitting[(row.version, cell.build)] = cell.plan
            else:  # excluded: suggest plans nothing for it, and gives these very reasons
                assert (row.version, cell.build) not in planned
                assert cell.reasons, (row.version, cell.build)
                assert {(e.rule, e.observed, e.required) for e in cell.reasons} <= excluded
        assert all((e.rule, e.observed, e.required) in excluded for e in row.reasons)
    # the cells that fit are exactly the plans suggest makes, plan for plan
    assert fitting.keys() == planned.keys()
    assert all(fitting[k].commands == planned[k].commands for k in planned)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_ranked_cells_are_the_plans_suggest_shows_in_order(machine: str, target: str) -> None:
    shown, _c2 = plan(target, _machine(machine))
    m = _matrix(machine, target)
    ranked = {cell.rank: (row.version, cell.build) for row in m.rows for cell in row.cells if cell.rank}
    assert ranked == {n: _key(p) for n, p in enumerate(shown.plans, start=1)}


def _cell(m: FitMatrix, version: str, build: str) -> Cell:
    row = next(r for r in m.rows if r.version == version)
    return next(c for c in row.cells if c.build == build)


@pytest.mark.parametrize(
    ("machine", "version", "build"),
    [
        ("RTX 4090 on 550", "2.14.1", "cu126"),
        ("RTX 4090 on 550", "2.14.1", "cu130"),
        ("B200 on 570", "2.7.1", "cu118"),
        ("B200 on 570", "2.7.1", "cu128"),
        ("GTX 1080 Ti on 580", "2.11.0", "cu128"),
        ("GTX 1080 Ti on 580", "2.11.0", "cu126"),
        ("H100 on 535", "2.9.0", "cu130"),
        ("H100 on 535", "2.9.0", "cu128"),
    ],
)
def test_a_cell_is_what_suggest_answers_for_that_build(machine: str, version: str, build: str) -> None:
    """The cell and `cudadoctor suggest 'torch==X+cuYYY'` on the same machine agree."""
    cell = _cell(_matrix(machine, "torch"), version, build)
    one, _c2 = plan(f"torch=={version}+{build}", _machine(machine))
    assert cell.fits == bool(one.plans)
    if cell.fits:
        assert cell.plan is not None and cell.plan.commands == one.plans[0].commands
    else:
        assert set(cell.reasons) == {e for e in one.excluded if e.rule != "variant"}


def test_the_verdicts_users_expect_on_four_machines() -> None:
    """What the data says, read cell by cell: CUDA 13 needs R580; Blackwell needs sm_100 (CUDA 12.8 builds);
    Pascal left CUDA 13 and the sm_75+ builds."""
    rtx4090 = _matrix("RTX 4090 on 550", "torch")
    assert _cell(rtx4090, "2.14.1", "cu126").rank == 1
    assert {e.rule for e in _cell(rtx4090, "2.14.1", "cu130").reasons} == {"driver-floor"}
    b200 = _matrix("B200 on 570", "torch")
    assert _cell(b200, "2.7.1", "cu128").fits
    assert {e.rule for e in _cell(b200, "2.7.1", "cu118").reasons} == {"cuda-predates-arch"}  # CUDA 11.8 < sm_100
    pascal = _matrix("GTX 1080 Ti on 580", "torch")
    assert _cell(pascal, "2.11.0", "cu126").fits
    assert {e.rule for e in _cell(pascal, "2.11.0", "cu130").reasons} >= {"gpu-arch-list"}
    h100 = _matrix("H100 on 535", "torch")
    assert {e.rule for e in _cell(h100, "2.9.0", "cu130").reasons} == {"driver-floor"}
    assert _cell(h100, "2.9.0", "cu128").fits  # minor-version compatibility: 535 runs CUDA 12.x builds


def test_columns_run_from_the_oldest_cuda_and_rows_from_the_newest_release() -> None:
    m = _matrix("RTX 4090 on 550", "torch")
    cudas = [b for b in m.builds if b.startswith("cu")]
    assert cudas == sorted(cudas, key=lambda b: (int(b[2:-1]), int(b[-1])))  # cu90 … cu132: one-digit minor
    versions = [row.version for row in m.rows]
    assert versions[0] == str(max(r.version for r in M.torch_releases))


def test_a_requirement_narrows_the_rows() -> None:
    m = fit_matrix(M, _c("H100 on 535"), "torch", PLANNERS["torch"], "torch>=2.9,<2.12")
    assert [row.version for row in m.rows] == ["2.11.0", "2.10.0", "2.9.1", "2.9.0"]


def test_a_cpu_only_machine_lays_out_the_cpu_builds_suggest_plans() -> None:
    c = constraints_for(M, HostFlags(python="3.12", probe=False), None)
    c = Constraints(python=c.python, accelerator="cpu")
    m = fit_matrix(M, c, "torch", PLANNERS["torch"])
    assert m.builds == ("cpu",)
    top = PLANNERS["torch"](M, c).plans[0]
    assert _cell(m, top.packages[0][1], "cpu").rank == 1
    # a release without a CPU build in data: the row says why, over the whole row
    assert all(row.reasons for row in m.rows if not row.cells)


def _cli(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, ["suggest", "--no-probe", "--driver", "550", "--gpu", "RTX 4090", *args])


def test_cli_text_table_has_a_legend_and_numbered_reasons() -> None:
    result = _cli("torch", "--matrix", "--python", "3.12")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    header = next(line for line in lines if line.startswith("release"))
    assert "cu126" in header and "cu130" in header
    row = next(line for line in lines if line.startswith("2.14.1 "))
    assert "✓ 1" in row and "✗ driver [" in row
    assert any(line.startswith("[1] driver-floor: driver 550.54.14; requires") for line in lines)
    assert "older release(s) not shown" in result.output  # the table shows the newest twelve without -v


def test_cli_markdown_puts_each_reason_in_its_cell() -> None:
    result = _cli("torch>=2.13", "--matrix", "--python", "3.12", "-f", "markdown")
    assert result.exit_code == 0, result.output
    rows = [line for line in result.output.splitlines() if line.startswith("| ")]
    header = rows[0].strip("| ").split(" | ")
    assert all(line.count("|") == len(header) + 1 for line in rows)
    row = next(line for line in rows if line.startswith("| 2.14.1 "))
    assert "✓ (plan 1)" in row and "✗ driver-floor: driver 550.54.14; requires driver >= 580" in row


def test_cli_json_has_every_cell_with_its_plan_or_reasons() -> None:
    result = _cli("vllm", "--matrix", "--python", "3.12", "-f", "json")
    doc = json.loads(result.output)
    assert doc["kind"] == "cudadoctor-suggest-matrix"
    rows = doc["matrix"]["rows"]
    assert len(rows) == len(M.vllm_releases)  # JSON is never cut short
    for row in rows:
        for cell in row["cells"]:
            assert cell["fits"] == (cell["plan"] is not None)
            assert cell["fits"] or cell["reasons"]


def test_cli_matrix_refuses_formats_it_has_no_table_for() -> None:
    assert _cli("torch", "--matrix", "-f", "dockerfile").exit_code == 2
    assert _cli("torch", "-f", "markdown").exit_code == 2
    assert _cli("torch==2.13.0+cu126", "--matrix").exit_code == 2


def test_cli_matrix_exits_1_when_no_cell_fits() -> None:
    result = CliRunner().invoke(
        app, ["suggest", "--no-probe", "--driver", "470", "--gpu", "B200", "torch>=2.9", "--matrix"]
    )
    assert result.exit_code == 1
    assert "✓" not in result.output.split("\n\n")[1]
