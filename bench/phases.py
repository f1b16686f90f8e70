"""One ``cudadoctor check`` in phases, timed in this process; prints one JSON object.

Run by ``bench/bench_check.py`` in a fresh interpreter per run (imports are only cold once per
process): ``imports`` (everything a live text ``check`` imports: its typer-free entry, as the command runs it,
with NVML's and the memo's helpers started first as the command starts them), ``probes`` (gathering the facts:
from the file probes' memo when nothing they read changed, cudadoctor/probes/memo.py), ``checks`` (the
compat data and every check), ``render`` (the text report). ``--from FILE`` replays a snapshot instead of
probing; ``--print`` also prints the report. The phases call the functions ``cudadoctor check`` calls, in its
order.
"""

from __future__ import annotations

import contextlib
import gc
import json
import sys
import time
from typing import Any


def main(argv: list[str]) -> int:
    snapshot = argv[argv.index("--from") + 1] if "--from" in argv else None
    marks = [time.perf_counter()]

    from cudadoctor.entry import Helpers  # check's common forms never import typer: cudadoctor/entry.py

    gc.disable()  # as the command does (cudadoctor/entry.py _probing)

    helpers = Helpers(health=True) if snapshot is None else contextlib.nullcontext()
    with helpers:  # as the command does, started before it imports the checks
        text, facts = _phases(snapshot, marks)
    names = ("imports", "probes", "checks", "render")
    phases = {name: round(marks[i + 1] - marks[i], 5) for i, name in enumerate(names)}
    if "--print" in argv:
        print(text, end="")
    print(json.dumps({"phases": phases, "probe_timings": facts.timings, "chars": len(text)}))
    return 0


def _phases(snapshot: str | None, marks: list[float]) -> tuple[str, Any]:
    from cudadoctor.app import FactSource, build_report, gather
    from cudadoctor.checks import selected
    from cudadoctor.checks.engine import run_checks
    from cudadoctor.data import CompatMatrix
    from cudadoctor.report import Format
    from cudadoctor.report.options import RenderOptions
    from cudadoctor.report.render import render

    marks.append(time.perf_counter())
    facts = gather(FactSource(from_file=snapshot), lambda _message: None)
    marks.append(time.perf_counter())
    matrix = CompatMatrix()
    findings = tuple(run_checks(facts, matrix, select=selected((), ())))
    report = build_report(facts, findings, matrix)
    marks.append(time.perf_counter())
    text = render(report, Format.TEXT, RenderOptions(verbose=False, color=False))
    marks.append(time.perf_counter())
    return text, facts


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
