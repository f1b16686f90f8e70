"""Reading the node documents: snapshots (``cudadoctor snapshot``) or JSON reports (``check -f json``).

A node's name is its file's name without ``.json`` (``srun … snapshot -o reports/%N.json`` names files
by Slurm node). Each file is read whole (at most 64 MiB), parsed, reduced to the compared values and
dropped, so memory stays flat however many nodes there are.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from cudadoctor.compare.judge import Node
from cudadoctor.compare.values import FACTS, Policy, node_values
from cudadoctor.errors import UsageError
from cudadoctor.fileread import read_named_file

__all__ = ["baseline_values", "load_nodes", "node_files"]

_KINDS = ("cudadoctor-facts", "cudadoctor-report")
_LIMIT = 64 << 20
#: statuses of a report's findings that are problems, kept per node
_PROBLEMS = ("fail", "warn", "error", "unknown")


def node_files(paths: Sequence[str]) -> list[str]:
    """The ``*.json`` files named, directories expanded (sorted, not recursive)."""
    files: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            files.extend(sorted(os.path.join(path, n) for n in os.listdir(path) if n.endswith(".json")))
        elif os.path.isfile(path):
            files.append(path)
        else:
            raise UsageError(f"{path}: no such file or directory")
    if not files:
        raise UsageError("no node reports found (*.json files written by cudadoctor snapshot or check -f json)")
    return files


def _document(path: str, *, kinds: tuple[str, ...] = _KINDS) -> dict[str, Any]:
    data = read_named_file(path, _LIMIT, "a cudadoctor report", UsageError)
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        raise UsageError(f"{path}: not JSON") from None
    if not isinstance(document, dict) or (kinds and document.get("kind") not in kinds):
        raise UsageError(f"{path}: not a cudadoctor snapshot or report")
    return document


def _findings(document: Mapping[str, Any]) -> dict[str, str]:
    found: dict[str, str] = {}
    findings = document.get("findings")
    for finding in findings if isinstance(findings, list) else ():
        if isinstance(finding, Mapping) and finding.get("status") in _PROBLEMS and isinstance(finding.get("code"), str):
            found[finding["code"]] = str(finding["status"])
    return found


def _node(path: str) -> Node:
    document = _document(path)
    facts = document.get("facts")
    if not isinstance(facts, Mapping):
        raise UsageError(f"{path}: no facts")
    name = os.path.basename(path)
    return Node(name[:-5] if name.endswith(".json") else name, node_values(facts), _findings(document))


#: Below this many files one process reads them all; above, parsing (most of the cost) is spread over the CPUs.
_PARALLEL_FROM = 500


def _chunk(paths: Sequence[str]) -> list[Node]:
    return [_node(p) for p in paths]


def load_nodes(files: Sequence[str]) -> Iterator[Node]:
    """Every file's node, in order. A bad file is a usage error naming it, whichever process read it."""
    workers = min(os.cpu_count() or 1, 8)
    if len(files) < _PARALLEL_FROM or workers < 2:
        for path in files:
            yield _node(path)
        return
    from concurrent.futures import ProcessPoolExecutor

    size = -(-len(files) // (workers * 4))
    chunks = [files[i : i + size] for i in range(0, len(files), size)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for nodes in pool.map(_chunk, chunks):
            yield from nodes


def _named(keys: list[str], shown: int = 5) -> str:
    """The first ``shown`` keys (each cut to 60 characters, escapes made visible) and a count of the rest: 100,000
    unknown keys made a 789 KB error line (issue #27)."""
    from cudadoctor.report.sanitize import terminal

    named = ", ".join(terminal(k[:60] + ("…" if len(k) > 60 else "")) for k in keys[:shown])
    return named + (f" and {len(keys) - shown} more" if len(keys) > shown else "")


def baseline_values(path: str) -> dict[str, str | None]:
    """Expected values: those of a node's snapshot or report, or a JSON object ``{fact: value}`` naming some of
    the judged facts (``{"nccl": "2.28.9 (pip)", "driver_branch": "580"}``)."""
    document = _document(path, kinds=())
    judged = {f.key for f in FACTS if f.policy is not Policy.POOL}
    if document.get("kind") in _KINDS and isinstance(document.get("facts"), Mapping):
        values = node_values(document["facts"])
        return {k: v for k, v in values.items() if k in judged}
    unknown = sorted(set(document) - judged)
    if unknown or not document:
        known = ", ".join(sorted(judged))
        raise UsageError(f"--baseline {path}: unknown fact(s) {_named(unknown) or '(none given)'}; known: {known}")
    return {k: (str(v) if v is not None else None) for k, v in document.items()}
