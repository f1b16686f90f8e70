"""Print the corpus figure: per failure class, the cases diagnosed out of the total, and the healthy
configurations that stay clean.

A case counts as diagnosed when every expected code is reported at the expected severity with a fix, every
pip/uv command printed for those codes verifies against compat data (tests/corpus/fixcheck.py), and the
printed fix is the thread's accepted one where that holds a pip/uv install (compared mechanically, or as
the case records it in ``fix_equivalent``, with its ``fix_note``). The codes-only count is shown beside it.

    python -m tests.corpus.figure            # the table
    python -m tests.corpus.figure --missed   # and every case still missed, with what was reported
"""

from __future__ import annotations

import argparse
import collections
import os
import sys

from cudadoctor.data import CompatMatrix
from tests.corpus.builder import case_paths, load_case
from tests.corpus.fixcheck import compare, counts
from tests.corpus.replay import replay


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missed", action="store_true", help="list every missed case")
    args = parser.parse_args()
    matrix = CompatMatrix()
    per_class: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
    missed: list[str] = []
    compared = equivalent = 0
    for path in case_paths("cases"):
        case = load_case(path)
        outcome = replay(case, matrix)
        counted, why = counts(case, outcome, matrix)
        mechanical = compare(case, outcome, matrix)[0]
        compared += mechanical is not None
        equivalent += bool(mechanical) or bool(case["case"].get("fix_equivalent"))
        row = per_class[case["case"]["class"]]
        row[2] += 1
        row[1] += outcome.diagnosed
        row[0] += counted
        if not counted:
            missed.append(f"{case['case']['id']}: {why}")
    clean = dirty = 0
    for path in case_paths("healthy"):
        outcome = replay(load_case(path), matrix)
        if outcome.errors:
            dirty += 1
            missed.append(f"healthy {os.path.basename(os.path.dirname(path))}: {', '.join(outcome.errors)}")
        else:
            clean += 1
    print("| class | diagnosed, with the accepted fix | codes only |\n| --- | --- | --- |")
    for name, (ok, codes, total) in sorted(per_class.items()):
        print(f"| {name} | {ok} / {total} | {codes} / {total} |")
    ok = sum(r[0] for r in per_class.values())
    codes = sum(r[1] for r in per_class.values())
    total = sum(r[2] for r in per_class.values())
    share = f"{100 * ok // max(total, 1)} %"
    print(f"| **all cases** | **{ok} / {total} ({share})** | {codes} / {total} ({100 * codes // max(total, 1)} %) |")
    print(f"| healthy configurations without an error | {clean} / {clean + dirty} | |")
    print(f"\nAccepted fixes holding a pip/uv install, compared with the printed ones: {compared}; ", end="")
    print(f"equivalent: {equivalent} (the others are not compared).")
    if args.missed:
        print("\n" + "\n".join(missed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
