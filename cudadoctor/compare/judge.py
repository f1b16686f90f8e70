"""Judging a fleet: nodes split into pools by the pool keys, each fact against a baseline or the majority.

The majority of a pool is the value more than half of its nodes share. With no such value there is no
outlier to name: the report says so ("no majority") and lists the groups instead. A baseline (a node's
report, or expected values) replaces the majority: every node that differs from it is named.

Some nodes are named for what they are, not by a vote (a :class:`Flag`): a node with no report where
``--expect-hosts`` expects one, a report older than ``--max-age``, a report the reader refused, two reports
of one node that differ. Such a node does not vote. A node is one host: the same file named twice, or two
identical reports of one host, count once (a note says so).
"""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import field

from cudadoctor.compare.fold import fold
from cudadoctor.compare.values import FACTS, INFORMATIONAL, Policy
from cudadoctor.record import record

__all__ = ["Difference", "Flag", "Node", "Pool", "Verdict", "judge"]


@record
class Node:
    """One node of the fleet: its fact values, the worst status of each of its checks, and its fixes."""

    name: str
    values: Mapping[str, str | None]
    #: check code -> worst status on this node (from a JSON report; empty for a snapshot)
    findings: Mapping[str, str] = field(default_factory=dict)
    #: fact -> the command that makes this node load what its peers load (values.Reading.fixes)
    fixes: Mapping[str, str] = field(default_factory=dict)
    problem: str | None = None  #: why the reader refused the report; None: read
    collected_at: str | None = None  #: ISO 8601, as the document says
    source: str = ""  #: the file it was read from


@record
class Difference:
    """One fact on which some nodes of a pool differ."""

    fact: str
    title: str
    expected: str | None  #: the baseline's or the majority's value; None when there is no majority
    #: value -> the nodes that have it (the expected value's nodes included)
    groups: Mapping[str | None, tuple[str, ...]]
    outliers: tuple[str, ...]  #: the nodes that differ from ``expected`` (none without a majority)
    basis: str  #: ``baseline`` / ``majority`` / ``no majority``
    reason: str = ""  #: what is wrong with the outliers, where the value alone does not say
    #: command -> the outliers it fixes (each outlier's own fix for this fact)
    fixes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@record
class Pool:
    """The nodes that share one key (the values that decide a pool), and how they differ from the rest."""

    key: Mapping[str, str | None]
    nodes: tuple[str, ...]
    differences: tuple[Difference, ...]


@record
class Flag:
    """Nodes named for what they are, not by a vote."""

    reason: str
    nodes: tuple[str, ...]


@record
class Verdict:
    """What compare concludes: the pools, every problem a node's report holds, the flags and the notes."""

    pools: tuple[Pool, ...]
    #: check code -> (status, nodes) for every problem a node's report holds
    findings: Mapping[str, Mapping[str, tuple[str, ...]]]
    flags: tuple[Flag, ...] = ()
    notes: tuple[str, ...] = ()  #: what was counted once, what was not expected
    total: int = 0  #: distinct nodes: those with a report and those expected without one

    @property
    def outliers(self) -> tuple[str, ...]:
        found = {n for p in self.pools for d in p.differences for n in d.outliers}
        found.update(n for f in self.flags for n in f.nodes)
        return tuple(sorted(found))

    @property
    def undecided(self) -> tuple[Difference, ...]:
        return tuple(d for p in self.pools for d in p.differences if d.basis == "no majority")


def _count(value: str | None) -> int:
    return int(value) if value and value.isdigit() else 0


def _difference(
    fact: str, title: str, nodes: Sequence[Node], baseline: Mapping[str, str | None] | None, policy: Policy
) -> Difference | None:
    groups: dict[str | None, list[str]] = {}
    for node in nodes:
        groups.setdefault(node.values.get(fact), []).append(node.name)
    frozen = {k: tuple(v) for k, v in groups.items()}
    if baseline is not None and fact in baseline:
        expected, basis = baseline[fact], "baseline"
    else:
        if len(groups) <= 1:
            return None
        counts = Counter({value: len(names) for value, names in groups.items()})
        (top, top_count), *_ = counts.most_common(1)
        if top_count * 2 <= len(nodes):
            return Difference(fact, title, None, frozen, (), "no majority")
        expected, basis = top, "majority"
    if policy is Policy.FEWER:  # more GPUs than the peers is another machine, not a lost GPU
        odd = [v for v in groups if _count(v) < _count(expected)]
        reason = "fewer GPUs than its peers"
    else:
        odd, reason = [v for v in groups if v != expected], ""
    outliers = tuple(n for value in odd for n in groups[value])
    if not outliers:
        return None
    by_name = {n.name: n for n in nodes}
    fixes: dict[str, list[str]] = {}
    for name in outliers:
        command = by_name[name].fixes.get(fact)
        if command:
            fixes.setdefault(command, []).append(name)
    return Difference(fact, title, expected, frozen, outliers, basis, reason, {c: tuple(n) for c, n in fixes.items()})


#: The facts that split nodes into pools (GPU model, MIG layout), in the order a pool's key holds them.
_POOL_KEYS = tuple(f.key for f in FACTS if f.policy is Policy.POOL)


def _pools(nodes: Sequence[Node]) -> dict[tuple[str | None, ...], list[Node]]:
    pools: dict[tuple[str | None, ...], list[Node]] = {}
    for node in nodes:
        pools.setdefault(tuple(node.values.get(k) for k in _POOL_KEYS), []).append(node)
    return pools


def _findings(nodes: Sequence[Node]) -> dict[str, dict[str, tuple[str, ...]]]:
    found: dict[str, dict[str, list[str]]] = {}
    for node in nodes:
        for code, status in node.findings.items():
            found.setdefault(code, {}).setdefault(status, []).append(node.name)
    return {code: {s: tuple(n) for s, n in by.items()} for code, by in sorted(found.items())}


def _fleet_pool(nodes: Sequence[Node], baseline: Mapping[str, str | None] | None) -> list[Pool]:
    """The facts judged across every node before pools (a node without GPUs or driver is an outlier)."""
    differences = [
        diff
        for fact in FACTS
        if fact.policy is Policy.FLEET
        and (diff := _difference(fact.key, fact.title, nodes, baseline, fact.policy)) is not None
    ]
    return [Pool({"fleet": "every node"}, tuple(n.name for n in nodes), tuple(differences))] if differences else []


def _same(a: Node, b: Node) -> bool:
    """Two reports of one node that say the same in everything compare reads."""
    return (a.values, a.findings, a.fixes, a.problem) == (b.values, b.findings, b.fixes, b.problem)


def _hosts(nodes: Sequence[Node]) -> tuple[list[Node], dict[str, list[str]], list[str]]:
    """One node per host name: (nodes, reason -> names of conflicting ones, notes on what was counted once)."""
    by_name: dict[str, list[Node]] = {}
    for node in nodes:
        by_name.setdefault(node.name, []).append(node)
    kept: list[Node] = []
    identical: list[str] = []
    differing: list[tuple[str, list[Node]]] = []
    for name, reports in by_name.items():
        if len(reports) == 1:
            kept.append(reports[0])
        elif all(_same(reports[0], other) for other in reports[1:]):
            # the newest of identical reports: its age is the node's
            kept.append(max(reports, key=lambda n: n.collected_at or ""))
            identical.append(name)
        else:
            kept.append(reports[0])
            differing.append((name, reports))
    notes = [f"{fold(identical)}: identical reports of one node in several files, counted once"] if identical else []
    for name, reports in differing[:_SHOWN]:
        notes.append(f"{name}: reports that differ: {', '.join(r.source for r in reports[:_SHOWN])}")
    flags = {"several reports that differ": [name for name, _ in differing]} if differing else {}
    return kept, flags, notes


#: At most this many conflicting nodes (and files of each) are listed in the notes; the flag names them all.
_SHOWN = 5


def _parse_time(text: str | None) -> datetime.datetime | None:
    if not text:
        return None
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=datetime.timezone.utc)


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def _gpus_short(node: Node, expected: Sequence[tuple[int, str]]) -> str | None:
    """Why a node does not have the GPUs ``--expect-gpus`` expects of its model; None when it has them."""
    model = node.values.get("gpu_model")
    count = _count(node.values.get("gpu_count"))
    kinds = ", ".join(f"{n}x{m}" for n, m in expected)
    if not model:
        return f"no GPU visible (expected {kinds})"
    wanted = [n for n, m in expected if m.casefold() in model.casefold()]
    if not wanted:
        return f"GPU model {model} not expected ({kinds})"
    if count in wanted or count > max(wanted):  # more than expected is another machine, not a lost GPU
        return None
    return f"fewer GPUs than expected ({count} of {min(n for n in wanted if n > count)} {model})"


def _flag_reports(
    kept: Sequence[Node],
    flagged: dict[str, list[str]],
    max_age: float | None,
    now: datetime.datetime | None,
    expected_gpus: Sequence[tuple[int, str]] | None,
) -> None:
    """Name, in ``flagged``, the nodes whose own report rules them out of the vote: refused, stale, or with fewer
    GPUs than ``--expect-gpus`` says."""
    for node in kept:
        if node.problem is not None:
            flagged.setdefault(f"report refused: {node.problem}", []).append(node.name)
    if max_age is not None:
        now = now or datetime.datetime.now(datetime.timezone.utc)
        for node in kept:
            moment = _parse_time(node.collected_at)
            if moment is None:
                flagged.setdefault("report without a readable collection time (--max-age)", []).append(node.name)
            elif (now - moment).total_seconds() > max_age:
                flagged.setdefault(f"report older than {_age(max_age)}", []).append(node.name)
    if expected_gpus is not None:
        for node in kept:
            if node.problem is None and (why := _gpus_short(node, expected_gpus)) is not None:
                flagged.setdefault(why, []).append(node.name)


def judge(
    nodes: Sequence[Node],
    baseline: Mapping[str, str | None] | None = None,
    *,
    expected_hosts: Collection[str] | None = None,
    max_age: float | None = None,
    now: datetime.datetime | None = None,
    notes: Sequence[str] = (),
    expected_gpus: Sequence[tuple[int, str]] | None = None,
) -> Verdict:
    """Every pool's differences, the nodes flagged, and the findings of every node aggregated by code.

    :param expected_hosts: the nodes that must have a report (``--expect-hosts``); None: whatever came
    :param max_age: seconds a report may be old (``--max-age``), against ``now``
    :param expected_gpus: (count, model) of each kind of node (``--expect-gpus 8xH100``), replacing the pool's
        majority as what a node's GPU count is judged against; None: the majority
    """
    kept, flagged, host_notes = _hosts(nodes)
    notes = [*notes, *host_notes]
    _flag_reports(kept, flagged, max_age, now, expected_gpus)
    names = {n.name for n in kept}
    missing: list[str] = []
    if expected_hosts is not None:
        missing = [h for h in expected_hosts if h not in names]
        if missing:
            flagged["no report"] = missing
        wanted = set(expected_hosts)  # once: a fleet of 10,000 nodes made it 10,000 times (18 s for 20,000)
        unexpected = [n.name for n in kept if n.name not in wanted]
        if unexpected:
            notes.append(f"{len(unexpected)} report(s) from node(s) --expect-hosts does not name: {fold(unexpected)}")
    named = {n for names_ in flagged.values() for n in names_}
    voters = [n for n in kept if n.name not in named]
    pools = _fleet_pool(voters, baseline)
    for key, members in _pools(voters).items():
        differences = []
        for fact in FACTS:
            if fact.policy in (Policy.POOL, Policy.FLEET):
                continue
            if fact.key in INFORMATIONAL and not (baseline and fact.key in baseline):
                continue
            if fact.policy is Policy.FEWER and expected_gpus is not None:
                continue  # judged against --expect-gpus above
            diff = _difference(fact.key, fact.title, members, baseline, fact.policy)
            if diff is not None:
                differences.append(diff)
        pools.append(Pool(dict(zip(_POOL_KEYS, key, strict=True)), tuple(n.name for n in members), tuple(differences)))
    flags = tuple(Flag(reason, tuple(n)) for reason, n in flagged.items())
    return Verdict(tuple(pools), _findings(kept), flags, tuple(notes), len(kept) + len(missing))
