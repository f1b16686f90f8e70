"""``compare``'s verdict as text, JSON and Markdown (pure functions of the verdict).

What a node's document or file name supplies (a value, a node name, a fix, why a report was refused) is
untrusted: text escapes control characters and line breaks (:func:`cudadoctor.report.sanitize.terminal`),
Markdown escapes its own and HTML's specials as well (:func:`cudadoctor.report.sanitize.markdown`), as the
rest of ``report/`` does; JSON escapes them by itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from cudadoctor.compare.fold import fold
from cudadoctor.compare.judge import Difference, Pool, Verdict
from cudadoctor.report.sanitize import markdown, terminal

__all__ = ["FORMATS", "exit_code"]

COMPARE_KIND = "cudadoctor-compare"


def exit_code(verdict: Verdict) -> int:
    """1 when a node differs or is flagged, no majority could be found, or a node's report holds an error;
    else 0."""
    errors = any(status in ("fail", "error") for by in verdict.findings.values() for status in by)
    return 1 if verdict.outliers or verdict.undecided or errors else 0


def _pool_title(pool: Pool) -> str:
    if "fleet" in pool.key:
        return f"all {len(pool.nodes)} node(s)"
    model = pool.key.get("gpu_model") or "no GPU"
    return f"{len(pool.nodes)} node(s) with {model}, {pool.key.get('mig_layout')}"


def _head(diff: Difference) -> str:
    if diff.basis == "no majority":
        return f"{diff.title}: no majority, no outlier named"
    expected = diff.expected or "(none)"
    what = diff.reason or "differs"
    return f"{diff.title}: expected {expected} ({diff.basis}); {what} on {fold(diff.outliers)}"


def _difference_lines(diff: Difference) -> list[str]:
    lines = [f"  {'?' if diff.basis == 'no majority' else '✗'} {terminal(_head(diff))}"]
    for value, nodes in sorted(diff.groups.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"      {terminal(value or '(none)')}: {len(nodes)} node(s) {terminal(fold(nodes))}")
    for command, nodes in diff.fixes.items():
        lines.append(f"      fix on {terminal(fold(nodes))}: {terminal(command)}")
    return lines


def _total(verdict: Verdict) -> int:
    return verdict.total or len({n for p in verdict.pools for n in p.nodes})


def render_text(verdict: Verdict) -> str:
    out: list[str] = []
    for pool in verdict.pools:
        out.append(f"Pool: {terminal(_pool_title(pool))}: {terminal(fold(pool.nodes))}")
        if not pool.differences:
            out.append("  ✓ every compared fact matches")
        for diff in pool.differences:
            out.extend(_difference_lines(diff))
    for flag in verdict.flags:
        out.append(f"✗ {terminal(flag.reason)}: {len(flag.nodes)} node(s) {terminal(fold(flag.nodes))}")
    for code, by in verdict.findings.items():
        for status, nodes in by.items():
            out.append(f"{code} {status} on {len(nodes)} node(s): {terminal(fold(nodes))}")
    out += [f"note: {terminal(note)}" for note in verdict.notes]
    total = _total(verdict)
    if verdict.outliers:
        out.append(f"✗ {len(verdict.outliers)} of {total} node(s) differ: {terminal(fold(verdict.outliers))}")
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
        "reason": diff.reason or None,
        "outliers": list(diff.outliers),
        "outliers_folded": fold(diff.outliers),
        "groups": [{"value": v, "nodes": fold(n), "count": len(n)} for v, n in diff.groups.items()],
        "fixes": [{"command": c, "nodes": fold(n)} for c, n in diff.fixes.items()],
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
        # 2: pools keyed by GPU model and MIG layout only (the count is judged within), flags, notes, total,
        # each difference's reason and fixes
        "schema_version": 2,
        "pools": [_pool_doc(p) for p in verdict.pools],
        "flags": [{"reason": f.reason, "nodes": fold(f.nodes), "count": len(f.nodes)} for f in verdict.flags],
        "findings": {c: {s: fold(n) for s, n in by.items()} for c, by in verdict.findings.items()},
        "notes": list(verdict.notes),
        "outliers": list(verdict.outliers),
        "total": _total(verdict),
        "exit_code": exit_code(verdict),
    }
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def render_markdown(verdict: Verdict) -> str:
    out = ["## cudadoctor compare", ""]
    for pool in verdict.pools:
        out += [f"### {markdown(_pool_title(pool))}", "", f"Nodes: {markdown(fold(pool.nodes))}", ""]
        if not pool.differences:
            out += ["Every compared fact matches.", ""]
            continue
        out += ["| fact | expected | differs on | values | fix |", "| --- | --- | --- | --- | --- |"]
        for d in pool.differences:
            values = "; ".join(f"{markdown(v or '(none)')}: {markdown(fold(n))}" for v, n in d.groups.items())
            expected = f"{d.expected} ({d.basis})" if d.expected else "no majority"
            fixes = "; ".join(f"{markdown(fold(n))}: {markdown(c)}" for c, n in d.fixes.items())
            outliers = markdown(fold(d.outliers)) + (f" ({markdown(d.reason)})" if d.reason else "")
            out.append(f"| {markdown(d.title)} | {markdown(expected)} | {outliers} | {values} | {fixes} |")
        out.append("")
    if verdict.flags:
        out += ["| nodes | why |", "| --- | --- |"]
        out += [f"| {markdown(fold(f.nodes))} | {markdown(f.reason)} |" for f in verdict.flags]
        out.append("")
    out += [f"- {markdown(note)}" for note in verdict.notes]
    return "\n".join(out) + ("\n" if verdict.notes else "")


FORMATS: dict[str, Callable[[Verdict], str]] = {"text": render_text, "json": render_json, "markdown": render_markdown}
