"""The body of ``cudadoctor why``: read the error, run check as ``check`` runs, answer, print."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from cudadoctor.commands import CheckOptions, check_request, render_report
from cudadoctor.errors import UsageError

__all__ = ["why_command"]


def why_command(error: Sequence[str], file: str | None, options: CheckOptions, output_format: str) -> int:
    """Recognise ``error`` (the arguments, joined by newlines) or the log ``file`` (``-``: standard input), run
    the checks and print the answer; the exit code is check's."""
    from cudadoctor.app import run_check, stderr_notice
    from cudadoctor.data import CompatMatrix
    from cudadoctor.report.json import report_document
    from cudadoctor.why.decide import Verdict, diagnose
    from cudadoctor.why.matching import recognise
    from cudadoctor.why.reading import from_argument, from_file
    from cudadoctor.why.render import Context, render_json, render_text

    if bool(error) == (file is not None):
        raise UsageError('why: give the error text, or --file LOG (- for standard input): cudadoctor why "<error>"')
    text = from_file(file) if file is not None else from_argument("\n".join(error))
    matrix = CompatMatrix()
    matches = recognise(text.lines, matrix.error_messages)
    report = run_check(check_request(options), stderr_notice)
    examined = report.facts.health is not None
    answer = diagnose(matches, report.findings, matrix.error_causes, deep=options.deep, health=examined)
    context = Context(
        text=text,
        sources=matrix.error_sources,
        xids=matrix.xid_entries,
        cuda_errors={e.code: f"{e.name}: {e.summary}" for e in matrix.cuda_errors},
    )
    if output_format == "json":
        sys.stdout.write(render_json(answer, context, report_document(report)))
        return report.exit_code
    sys.stdout.write(render_text(answer, context))
    if answer.verdict == Verdict.UNRECOGNISED:
        snapshot = options.from_file is not None
        sys.stdout.write(
            render_report(report, options.output_format, verbose=options.verbose, to_terminal=True, snapshot=snapshot)
        )
    return report.exit_code
