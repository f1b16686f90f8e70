"""``compare``'s verdict as text, JSON and Markdown (pure functions of the verdict)."""

from __future__ import annotations

import json
from collections.abc import Callable

from cudadoctor.compare.fold import fold
from cudadoctor.compare.judge import Difference, Pool, Verdict

__all__ = ["FORMATS", "exit_code"]

COMPARE_KIND = "cudadoctor-compare"


def exit_code(verdict: Verdict) -> int:
    """1 when a node differs, no majority could be found, or a node's report holds an error; else 0."""
    errors = any(status in ("fail", "error") for by in verdict.findings.values() for status in by)
    return 1 if verdict.outliers or verdict.undecided or errors else 0


def _pool_title(pool: Pool) -> str:
    if "fleet" in pool.key:
        return f"all {len(pool.nodes)} node(s)"
    model = pool.key.get("gpu_model") or "no GPU"
    return f"{len(pool.nodes)} node(s) with {pool.key.get('gpu_count')}× {model}, {pool.key.get('mig_layout')}"


def _difference_lines(diff: Difference) -> list[str]:
    if diff.basis == "no majority":
        head = f"  ? {diff.title}: no majority, no outlier named —"
    else:
        expected = diff.expected or "(none)"
        head = f"  ✗ {diff.title}: expected {expected} ({diff.basis}); differs on {fold(diff.outliers)}"
    lines = [head]
    for value, nodes in sorted(diff.groups.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"      {value or '(none)'}: {len(nodes)} node(s) {fold(nodes)}")
    return lines


def render_text(verdict: Verdict) -> str:
    out: list[str] = []
    for pool in verdict.pools:
        out.append(f"Pool: {_pool_title(pool)}: {fold(pool.nodes)}")
        if not pool.differences:
            out.append("  ✓ every compared fact matches")
        for diff in pool.differences:
            out.extend(_difference_lines(diff))
    for code, by in verdict.findings.items():
        for status, nodes in by.items():
            out.append(f"{code} {status} on {len(nodes)} node(s): {fold(nodes)}")
    total = sum(len(p.nodes) for p in verdict.pools)
    if verdict.outliers:
        out.append(f"✗ {len(verdict.outliers)} of {total} node(s) differ: {fold(verdict.outliers)}")
    elif verdict.undecided:
        out.append(f"? {total} node(s): some facts have no majority; no outlier can be named")
    else:
        out.append(f"✓ {total} node(s) agree on every compared fact")
    return "\n".join(out) + "\n"


def _difference_doc(diff: Difference) -> dict[str, object]:
    return {
        "fact": diff.fact,
        "expected": diff.expected,
        "basis": diff.basis,
        "outliers": list(diff.outliers),
        "outliers_folded": fold(diff.outliers),
        "groups": [{"value": v, "nodes": fold(n), "count": len(n)} for v, n in diff.groups.items()],
    }


def _pool_doc(pool: Pool) -> dict[str, object]:
    return {
        "key": dict(pool.key),
        "nodes": fold(pool.nodes),
        "count": len(pool.nodes),
        "differences": [_difference_doc(d) for d in pool.differences],
    }


def render_json(verdict: Verdict) -> str:
    doc = {
        "kind": COMPARE_KIND,
        "schema_version": 1,
        "pools": [_pool_doc(p) for p in verdict.pools],
        "findings": {c: {s: fold(n) for s, n in by.items()} for c, by in verdict.findings.items()},
        "outliers": list(verdict.outliers),
        "exit_code": exit_code(verdict),
    }
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(verdict: Verdict) -> str:
    out = ["## cudadoctor compare", ""]
    for pool in verdict.pools:
        out += [f"### {_cell(_pool_title(pool))}", "", f"Nodes: `{fold(pool.nodes)}`", ""]
        if not pool.differences:
            out += ["Every compared fact matches.", ""]
            continue
        out += ["| fact | expected | differs on | values |", "| --- | --- | --- | --- |"]
        for d in pool.differences:
            values = "; ".join(f"{v or '(none)'}: `{fold(n)}`" for v, n in d.groups.items())
            expected = f"{d.expected} ({d.basis})" if d.expected else "no majority"
            out.append(f"| {d.title} | {_cell(expected)} | `{fold(d.outliers)}` | {_cell(values)} |")
        out.append("")
    return "\n".join(out)


FORMATS: dict[str, Callable[[Verdict], str]] = {"text": render_text, "json": render_json, "markdown": render_markdown}
