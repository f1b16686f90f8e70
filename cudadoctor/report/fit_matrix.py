"""Rendering ``suggest --matrix`` (:class:`~cudadoctor.suggest.matrix.FitMatrix`): a terminal table, Markdown, JSON.

The terminal table keeps cells short (the rule's word and a footnote number; the footnotes below give each
reason in full); Markdown puts each reason in its cell, for an issue or a README; JSON has every cell's plan
and exclusions.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from cudadoctor.facts.codec import encode
from cudadoctor.report.suggestion import assumptions, constraints_line
from cudadoctor.suggest import Constraints, Exclusion
from cudadoctor.suggest.matrix import Cell, FitMatrix, MatrixRow

__all__ = ["MATRIX_KIND", "SHOWN_ROWS", "render_matrix_json", "render_matrix_markdown", "render_matrix_text"]

MATRIX_KIND = "cudadoctor-suggest-matrix"

#: rows the table and Markdown show unless verbose (newest first)
SHOWN_ROWS = 12

#: a word for each rule, for the terminal table's cells
_WORDS = {
    "driver-floor": "driver",
    "driver-too-old-for-gpu": "driver",
    "gpu-arch-list": "GPU",
    "cuda-dropped-arch": "GPU",
    "cuda-predates-arch": "GPU",
    "vllm-min-compute-capability": "GPU",
    "python": "Python",
    "cuda-ceiling": "--cuda",
}

_NOT_BUILT = "-"


def _legend(where: str) -> str:
    fits = "✓ fits (✓ 1: the plan suggest shows first)"
    return f"{fits}; ✗ does not fit ({where}); {_NOT_BUILT}: no such build in compat data"


def _reason(e: Exclusion) -> str:
    return f"{e.rule}: {e.observed}; requires {e.required}"


def _shown(m: FitMatrix, verbose: bool) -> tuple[FitMatrix, list[str]]:
    """The matrix cut to the newest rows (unless verbose), with the columns those rows have."""
    if verbose or len(m.rows) <= SHOWN_ROWS:
        return m, []
    hidden = len(m.rows) - SHOWN_ROWS
    oldest = m.rows[SHOWN_ROWS - 1].version
    note = f"{hidden} older release(s) not shown: -v shows them, or name a range ('{m.target}<{oldest}')"
    rows = m.rows[:SHOWN_ROWS]
    used = {cell.build for row in rows for cell in row.cells}
    return replace(m, rows=rows, builds=tuple(b for b in m.builds if b in used)), [note]


def _header(m: FitMatrix, c: Constraints) -> list[str]:
    return [f"cudadoctor suggest {m.requirement} --matrix", f"for: {constraints_line(c)}"]


def _text_cell(cell: Cell | None, footnotes: dict[str, int]) -> str:
    if cell is None:
        return _NOT_BUILT
    if cell.fits:
        return "✓" + (f" {cell.rank}" if cell.rank else "")
    numbers = [footnotes.setdefault(_reason(e), len(footnotes) + 1) for e in cell.reasons]
    words = ",".join(dict.fromkeys(_WORDS.get(e.rule, e.rule) for e in cell.reasons))
    return f"✗ {words} [{','.join(str(n) for n in dict.fromkeys(numbers))}]"


def _row_cells(m: FitMatrix, row: MatrixRow) -> list[Cell | None]:
    by_build = {cell.build: cell for cell in row.cells}
    return [by_build.get(build) for build in m.builds]


def render_matrix_text(m: FitMatrix, c: Constraints, *, verbose: bool = False) -> str:
    """The matrix as an aligned terminal table, a legend, and the reasons as numbered footnotes."""
    m, notes = _shown(m, verbose)
    footnotes: dict[str, int] = {}
    table = [["release", *m.builds]]
    for row in m.rows:
        cells = [_text_cell(cell, footnotes) for cell in _row_cells(m, row)]
        if row.reasons:  # nothing laid out for this release: its reasons span the row
            numbers = [footnotes.setdefault(_reason(e), len(footnotes) + 1) for e in row.reasons]
            cells = [f"✗ [{','.join(str(n) for n in dict.fromkeys(numbers))}]"] + [""] * (len(m.builds) - 1)
        table.append([row.version, *cells])
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    out = _header(m, c) + [f"note: {n}" for n in (*assumptions(c), *m.notes, *notes)]
    out += ["", *("  ".join(t.ljust(w) for t, w in zip(line, widths, strict=True)).rstrip() for line in table)]
    out += ["", _legend("reasons below")]
    out += [f"[{n}] {text}" for text, n in footnotes.items()]
    return "\n".join(out) + "\n"


def _markdown_cell(cell: Cell | None) -> str:
    if cell is None:
        return _NOT_BUILT
    if cell.fits:
        return "✓" + (f" (plan {cell.rank})" if cell.rank else "")
    return "✗ " + "<br>".join(_reason(e).replace("|", "\\|") for e in cell.reasons)


def render_matrix_markdown(m: FitMatrix, c: Constraints, *, verbose: bool = False) -> str:
    """The matrix as a GitHub Markdown table, each excluded cell with its reasons in full."""
    m, notes = _shown(m, verbose)
    out = [f"**`cudadoctor suggest {m.requirement} --matrix`** for {constraints_line(c)}", ""]
    out += [f"| release | {' | '.join(m.builds)} |", "|---|" + "---|" * len(m.builds)]
    for row in m.rows:
        cells = [_markdown_cell(cell) for cell in _row_cells(m, row)]
        if row.reasons:
            cells = [_markdown_cell(Cell("", None, row.reasons))] + [""] * (len(m.builds) - 1)
        out.append(f"| {row.version} | {' | '.join(cells)} |")
    out += ["", _legend("rule: observed; requirement")]
    out += [f"- note: {n}" for n in (*assumptions(c), *m.notes, *notes)]
    return "\n".join(out) + "\n"


def _json_cell(cell: Cell) -> dict[str, Any]:
    return {
        "build": cell.build,
        "fits": cell.fits,
        "rank": cell.rank,
        "plan": encode(cell.plan),
        "reasons": encode(cell.reasons),
    }


def render_matrix_json(m: FitMatrix, c: Constraints) -> str:
    """Every row and cell: ``fits``, the plan ``suggest`` makes for it, or its exclusions."""
    rows = [
        {"version": row.version, "cells": [_json_cell(cell) for cell in row.cells], "reasons": encode(row.reasons)}
        for row in m.rows
    ]
    matrix = {"target": m.target, "requirement": m.requirement, "builds": list(m.builds), "rows": rows}
    doc = {"kind": MATRIX_KIND, "schema_version": 1, "constraints": encode(c), "matrix": matrix, "notes": list(m.notes)}
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
