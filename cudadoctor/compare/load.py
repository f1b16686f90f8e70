"""Reading the node documents: snapshots (``cudadoctor snapshot``) or JSON reports (``check -f json``).

A node's name is its file's name without ``.json`` (``srun … snapshot -o reports/%N.json`` names files
by Slurm node): a document holds no host name (cudadoctor keeps none), so the file name is the node's
identity. A file named twice (or reached through a link) is read once. Each file is read whole (at most
the size ``check --from`` reads), its envelope checked as ``check --from`` checks it (kind,
schema_version), reduced to the compared values and dropped, so memory stays flat however many nodes
there are.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from cudadoctor.checks.findings import Status
from cudadoctor.compare.judge import Node
from cudadoctor.compare.values import FACTS, MAX_ITEMS, MAX_TEXT, Policy, read_node
from cudadoctor.errors import SnapshotError, UsageError
from cudadoctor.facts.codec import SNAPSHOT_LIMIT, check_envelope
from cudadoctor.fileread import read_file, read_named_file
from cudadoctor.report.sanitize import terminal

__all__ = ["baseline_values", "load_nodes", "node_files"]

_KINDS = ("cudadoctor-facts", "cudadoctor-report")
#: statuses of a report's findings that are problems, kept per node
_PROBLEMS = ("fail", "warn", "error", "unknown")
#: Every status a report's finding may hold: the current ones (checks.findings.Status) and "skip", the name of
#: not-applicable in reports before schema 2 (tests/fixtures/h200-deep/deep-s1.json).
_STATUSES = frozenset({s.value for s in Status} | {"skip"})
_CODE = re.compile(r"^CD\d{3}$")
#: Objects and lists one document may open before it is parsed: a real report holds a few thousand; a
#: report of a million findings would take most of a GiB to parse (issue #27), so it is refused unparsed.
MAX_CONTAINERS = 200_000


class _Refused(UsageError):
    """A document over a bound: its node is named with the reason, the other nodes are still compared."""


def node_files(paths: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the ``*.json`` files named, directories expanded (sorted, not recursive), each real file once;
    notes on the files named more than once)."""
    found: list[tuple[str, str]] = []  # (as named, real path)
    for path in paths:
        if os.path.isdir(path):
            real_dir = os.path.realpath(path)  # once a directory: only links among its entries need resolving
            with os.scandir(path) as entries:
                listed = sorted(
                    (
                        os.path.join(path, e.name),
                        os.path.realpath(e.path) if e.is_symlink() else os.path.join(real_dir, e.name),
                    )
                    for e in entries
                    if e.name.endswith(".json")
                )
            found.extend(listed)
        elif os.path.isfile(path):
            found.append((path, os.path.realpath(path)))
        else:
            raise UsageError(f"{path}: no such file or directory")
    if not found:
        raise UsageError("no node reports found (*.json files written by cudadoctor snapshot or check -f json)")
    seen: dict[str, str] = {}
    repeated: dict[str, int] = {}
    unique: list[str] = []
    for path, real in found:
        if real in seen:
            repeated[seen[real]] = repeated.get(seen[real], 1) + 1
            continue
        seen[real] = path
        unique.append(path)
    notes = [f"{path} named {count} times, counted once" for path, count in list(repeated.items())[:5]]
    if len(repeated) > 5:
        notes.append(f"{len(repeated) - 5} more file(s) named more than once, each counted once")
    return unique, notes


def _document(path: str, *, kinds: tuple[str, ...] = _KINDS, origin: str | None = None) -> dict[str, Any]:
    """The JSON object of ``path``: of one of ``kinds`` (any object where empty); a snapshot's or report's envelope
    checked as ``check --from`` checks it, its errors naming ``origin`` (the path by default)."""
    data = read_named_file(path, SNAPSHOT_LIMIT, "a cudadoctor report", UsageError)
    # every object or list takes two bytes at least: a smaller file cannot hold too many (and is not counted)
    if len(data) > 2 * MAX_CONTAINERS and data.count(b"{") + data.count(b"[") > MAX_CONTAINERS:
        raise _Refused(f"more than {MAX_CONTAINERS:,} objects and lists, more than any report holds")
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        raise UsageError(f"{path}: not JSON") from None
    if not isinstance(document, dict) or (kinds and document.get("kind") not in kinds):
        raise UsageError(f"{path}: not a cudadoctor snapshot or report")
    if document.get("kind") in _KINDS:
        try:
            check_envelope(document, origin or path)
        except SnapshotError as exc:
            raise UsageError(str(exc)) from None
    return document


def _findings(document: Mapping[str, Any]) -> tuple[dict[str, str], str | None]:
    """(code -> status of every problem the report holds, why its findings were refused)."""
    findings = document.get("findings")
    if findings is None:
        return {}, None
    if not isinstance(findings, list):
        return {}, "findings: expected a list"
    if len(findings) > MAX_ITEMS:
        return {}, f"findings: {len(findings):,} items, more than cudadoctor has checks ({MAX_ITEMS:,})"
    found: dict[str, str] = {}
    for i, finding in enumerate(findings):
        code = finding.get("code") if isinstance(finding, dict) else None
        status = finding.get("status") if isinstance(finding, dict) else None
        if not isinstance(code, str) or not _CODE.match(code) or status not in _STATUSES:
            return {}, f"findings[{i}]: not a check's code and status"
        if status in _PROBLEMS:
            found[code] = status
    return found, None


def _name(path: str) -> str:
    name = os.path.basename(path)
    return name[:-5] if name.endswith(".json") else name


def _node(path: str) -> Node:
    try:
        document = _document(path)
    except _Refused as exc:
        return Node(_name(path), {}, problem=str(exc), source=path)
    facts = document.get("facts")
    if not isinstance(facts, dict):
        raise UsageError(f"{path}: no facts")
    reading = read_node(facts)
    findings, refused = _findings(document)
    name = _name(path)
    if len(name) > MAX_TEXT:
        refused = refused or f"a file name of {len(name):,} characters"
    return Node(name, reading.values, findings, reading.fixes, reading.problem or refused, reading.collected_at, path)


#: Below this many files one process reads them all; above, parsing (most of the cost) is spread over the CPUs.
_PARALLEL_FROM = 500


def _chunk(paths: Sequence[str]) -> list[Node]:
    return [_node(p) for p in paths]


def _orphaned(parent: int) -> None:
    """End this worker once its parent has gone (the kernel gives an orphan a new parent at once)."""
    while os.getppid() == parent:
        time.sleep(_WATCH_SECONDS)
    os._exit(1)


#: How often a worker looks whether compare (or the forkserver that started it) is still there.
_WATCH_SECONDS = 0.25


def _parent_of(pid: int) -> int | None:
    """The parent of process ``pid`` (/proc/PID/stat, proc(5)); None where that cannot be read."""
    try:
        stat = read_file(f"/proc/{pid}/stat", 4096)
        return int(stat.rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _worker_start(compare: int) -> None:
    """In each worker: die with compare, and hold none of its output.

    A worker outlived a SIGTERM to compare and kept its stdout open, so a reader of that pipe hung (issue
    #27). Workers print nothing (results and errors travel back pickled), so their standard streams become
    /dev/null: even a worker that lingers holds no pipe of compare's. And each watches its parent: compare
    where workers are forked, else the forkserver (Python 3.14's default), which exits when compare does;
    once it is gone the worker's parent changes (reparenting happens at the parent's exit, before anyone
    reaps it: exit(2), https://man7.org/linux/man-pages/man2/exit.2.html) and the worker exits.
    """
    parent = os.getppid()
    if parent != compare and _parent_of(parent) not in (compare, None):
        os._exit(1)  # compare went before this worker started: it was given another parent already
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    import threading

    threading.Thread(target=_orphaned, args=(parent,), name="cudadoctor-orphan-watch", daemon=True).start()


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
    with ProcessPoolExecutor(workers, initializer=_worker_start, initargs=(os.getpid(),)) as pool:
        for nodes in pool.map(_chunk, chunks):
            yield from nodes


def baseline_values(path: str) -> dict[str, str | None]:
    """Expected values: those of a node's snapshot or report, or a JSON object ``{fact: value}`` naming some of
    the judged facts (``{"nccl": "2.28.9 (pip)", "driver_branch": "580"}``)."""
    document = _document(path, kinds=(), origin=f"--baseline {path}")
    judged = {f.key for f in FACTS if f.policy is not Policy.POOL}
    if document.get("kind") in _KINDS and isinstance(document.get("facts"), dict):
        reading = read_node(document["facts"])
        if reading.problem is not None:
            raise UsageError(f"--baseline {path}: {reading.problem}")
        return {k: v for k, v in reading.values.items() if k in judged}
    unknown = sorted(set(document) - judged)
    if unknown or not document:
        known = ", ".join(sorted(judged))
        shown = ", ".join(terminal(k[:40]) for k in unknown[:5])
        shown += f" and {len(unknown) - 5:,} more" if len(unknown) > 5 else ""
        raise UsageError(f"--baseline {path}: unknown fact(s) {shown or '(none given)'}; known: {known}")
    values = {k: str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v for k, v in document.items()}
    bad = [k for k, v in values.items() if v is not None and (not isinstance(v, str) or len(v) > MAX_TEXT)]
    if bad:
        raise UsageError(f"--baseline {path}: {bad[0]}: expected a text of at most {MAX_TEXT} characters")
    return values
