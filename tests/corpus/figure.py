"""Print the corpus figure: per failure class, the cases diagnosed out of the total, and the healthy
configurations that stay clean.

A case counts as diagnosed when every expected code is reported at the expected severity with a fix, every
pip/uv command printed for those codes verifies against compat data (tests/corpus/fixcheck.py), and the
printed fix is equivalent to the thread's accepted one: compared mechanically where that holds a pip/uv
install, else as the case records it (``fix_equivalent`` with its ``fix_note``, judged on the printed text
``fix_judged`` names). The codes-only count is shown beside it.

    python -m tests.corpus.figure            # the table
    python -m tests.corpus.figure --missed   # and every case still missed, with what was reported
    python -m tests.corpus.figure --why      # and, per class, the cases whose symptom `why` names the cause of
"""

from __future__ import annotations

import argparse
import collections
import os
import sys

from cudadoctor.data import CompatMatrix
from tests.corpus.builder import case_paths, load_case
from tests.corpus.fixcheck import compare, counts, fix_equivalent
from tests.corpus.replay import replay


def _share(part: int, total: int) -> str:
    return f"{part} / {total} ({100 * part // max(total, 1)} %)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missed", action="store_true", help="list every missed case")
    parser.add_argument("--why", action="store_true", help="add why's figure: the symptom as written, on the replay")
    args = parser.parse_args()
    matrix = CompatMatrix()
    #: per class: [diagnosed with the accepted fix, codes only, total, why names the cause]
    per_class: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0, 0])
    missed: list[str] = []
    #: [mechanically compared, of those equivalent, judged by record, of those equivalent]
    tally = [0, 0, 0, 0]
    for path in case_paths("cases"):
        case = load_case(path)
        outcome = replay(case, matrix)
        counted, reason = counts(case, outcome, matrix)
        judged = 0 if compare(case, outcome, matrix)[0] is not None else 2
        tally[judged] += 1
        tally[judged + 1] += bool(fix_equivalent(case, outcome, matrix))
        row = per_class[case["case"]["class"]]
        row[0] += counted
        row[1] += outcome.diagnosed
        row[2] += 1
        if args.why:
            from tests.corpus.why_replay import why_on

            row[3] += why_on(case, outcome, matrix).named
        if not counted:
            missed.append(f"{case['case']['id']}: {reason}")
    clean = dirty = 0
    for path in case_paths("healthy"):
        outcome = replay(load_case(path), matrix)
        if outcome.errors:
            dirty += 1
            missed.append(f"healthy {os.path.basename(os.path.dirname(path))}: {', '.join(outcome.errors)}")
        else:
            clean += 1
    why = args.why
    head = "| class | diagnosed, with the accepted fix | codes only |" + (" why names the cause |" if why else "")
    print(head + "\n" + "| --- " * (4 if why else 3) + "|")
    for name, (ok, codes, total, named) in sorted(per_class.items()):
        print(f"| {name} | {ok} / {total} | {codes} / {total} |" + (f" {named} / {total} |" if why else ""))
    ok, codes, total, named = (sum(r[i] for r in per_class.values()) for i in range(4))
    line = f"| **all cases** | **{_share(ok, total)}** | {_share(codes, total)} |"
    print(line + (f" {_share(named, total)} |" if why else ""))
    print(f"| healthy configurations without an error | {clean} / {clean + dirty} | |" + (" |" if why else ""))
    print(
        f"\nAccepted fixes holding a pip/uv install, compared with the printed ones: {tally[0]}, equivalent: "
        f"{tally[1]}; the others, judged per case against the printed fix: {tally[2]}, equivalent: {tally[3]}."
    )
    if args.missed:
        print("\n" + "\n".join(missed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
