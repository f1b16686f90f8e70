"""Judging a fleet: nodes split into pools by the pool keys, each fact against a baseline or the majority.

The majority of a pool is the value more than half of its nodes share. With no such value there is no
outlier to name: the report says so ("no majority") and lists the groups instead. A baseline (a node's
report, or expected values) replaces the majority: every node that differs from it is named.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import field

from cudadoctor.compare.values import FACTS, INFORMATIONAL, Policy
from cudadoctor.record import record

__all__ = ["Difference", "Node", "Pool", "Verdict", "judge"]


@record
class Node:
    name: str
    values: Mapping[str, str | None]
    #: check code -> worst status on this node (from a JSON report; empty for a snapshot)
    findings: Mapping[str, str] = field(default_factory=dict)


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


@record
class Pool:
    key: Mapping[str, str | None]
    nodes: tuple[str, ...]
    differences: tuple[Difference, ...]


@record
class Verdict:
    pools: tuple[Pool, ...]
    #: check code -> (status, nodes) for every problem a node's report holds
    findings: Mapping[str, Mapping[str, tuple[str, ...]]]

    @property
    def outliers(self) -> tuple[str, ...]:
        found = {n for p in self.pools for d in p.differences for n in d.outliers}
        return tuple(sorted(found))

    @property
    def undecided(self) -> tuple[Difference, ...]:
        return tuple(d for p in self.pools for d in p.differences if d.basis == "no majority")


def _difference(
    fact: str, title: str, nodes: Sequence[Node], baseline: Mapping[str, str | None] | None
) -> Difference | None:
    groups: dict[str | None, list[str]] = {}
    for node in nodes:
        groups.setdefault(node.values.get(fact), []).append(node.name)
    if baseline is not None and fact in baseline:
        expected = baseline[fact]
        outliers = tuple(n for value, names in groups.items() if value != expected for n in names)
        if not outliers:
            return None
        return Difference(fact, title, expected, {k: tuple(v) for k, v in groups.items()}, outliers, "baseline")
    if len(groups) <= 1:
        return None
    counts = Counter({value: len(names) for value, names in groups.items()})
    (top, top_count), *_ = counts.most_common(1)
    if top_count * 2 <= len(nodes):
        return Difference(fact, title, None, {k: tuple(v) for k, v in groups.items()}, (), "no majority")
    outliers = tuple(n for value, names in groups.items() if value != top for n in names)
    return Difference(fact, title, top, {k: tuple(v) for k, v in groups.items()}, outliers, "majority")


def _pools(nodes: Sequence[Node]) -> dict[tuple[str | None, ...], list[Node]]:
    keys = [f.key for f in FACTS if f.policy is Policy.POOL]
    pools: dict[tuple[str | None, ...], list[Node]] = {}
    for node in nodes:
        pools.setdefault(tuple(node.values.get(k) for k in keys), []).append(node)
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
        if fact.policy is Policy.FLEET and (diff := _difference(fact.key, fact.title, nodes, baseline)) is not None
    ]
    return [Pool({"fleet": "every node"}, tuple(n.name for n in nodes), tuple(differences))] if differences else []


def judge(nodes: Sequence[Node], baseline: Mapping[str, str | None] | None = None) -> Verdict:
    """Every pool's differences, and the findings of every node aggregated by code."""
    keys = [f.key for f in FACTS if f.policy is Policy.POOL]
    pools = _fleet_pool(nodes, baseline)
    for key, members in _pools(nodes).items():
        differences = []
        for fact in FACTS:
            if fact.policy in (Policy.POOL, Policy.FLEET):
                continue
            if fact.key in INFORMATIONAL and not (baseline and fact.key in baseline):
                continue
            diff = _difference(fact.key, fact.title, members, baseline)
            if diff is not None:
                differences.append(diff)
        pools.append(Pool(dict(zip(keys, key, strict=True)), tuple(n.name for n in members), tuple(differences)))
    return Verdict(tuple(pools), _findings(nodes))
