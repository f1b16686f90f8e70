"""The body of ``cudadoctor compare``: the nodes' files read, judged against the expectations given, rendered."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["compare_command"]


def compare_command(
    paths: Sequence[str],
    *,
    baseline: str | None,
    expect_hosts: str | None,
    expect_gpus: Sequence[str] | None,
    max_age: str | None,
    output_format: str,
) -> tuple[str, int]:
    """The verdict on the nodes of ``paths`` (files or directories of them) in ``output_format``, and its exit code
    (0 all agree, 1 a node differs, is missing or stale)."""
    from cudadoctor.compare.inventory import expected_gpus, expected_hosts, parse_age
    from cudadoctor.compare.judge import judge
    from cudadoctor.compare.load import baseline_values, load_nodes, node_files
    from cudadoctor.compare.render import FORMATS, exit_code

    expected = baseline_values(baseline) if baseline is not None else None
    hosts = expected_hosts(expect_hosts) if expect_hosts is not None else None
    age = parse_age(max_age) if max_age is not None else None
    files, notes = node_files(paths)
    gpus = expected_gpus(list(expect_gpus)) if expect_gpus else None
    verdict = judge(
        list(load_nodes(files)), expected, expected_hosts=hosts, max_age=age, notes=notes, expected_gpus=gpus
    )
    return FORMATS[output_format](verdict), exit_code(verdict)
