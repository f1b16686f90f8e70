"""Print the corpus figure: per failure class, the cases diagnosed (expected codes at the expected
severity, with a fix) out of the total, and the healthy configurations that stay clean.

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
from tests.corpus.replay import replay


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missed", action="store_true", help="list every missed case")
    parser.add_argument("--why", action="store_true", help="add why's figure: the symptom as written, on the replay")
    args = parser.parse_args()
    matrix = CompatMatrix()
    per_class: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
    missed: list[str] = []
    for path in case_paths("cases"):
        case = load_case(path)
        outcome = replay(case, matrix)
        row = per_class[case["case"]["class"]]
        row[1] += 1
        row[0] += outcome.diagnosed
        if args.why:
            from tests.corpus.why_replay import why_on

            row[2] += why_on(case, outcome, matrix).named
        if not outcome.diagnosed:
            reported = ", ".join(outcome.errors) or "no error"
            missed.append(f"{case['case']['id']}: expected {', '.join(outcome.missing)}; reported {reported}")
    clean = dirty = 0
    for path in case_paths("healthy"):
        outcome = replay(load_case(path), matrix)
        if outcome.errors:
            dirty += 1
            missed.append(f"healthy {os.path.basename(os.path.dirname(path))}: {', '.join(outcome.errors)}")
        else:
            clean += 1
    why = args.why
    print("| class | diagnosed |" + (" why names the cause |\n| --- | --- | --- |" if why else "\n| --- | --- |"))
    for name, (ok, total, named) in sorted(per_class.items()):
        print(f"| {name} | {ok} / {total} |" + (f" {named} / {total} |" if why else ""))
    ok = sum(r[0] for r in per_class.values())
    total = sum(r[1] for r in per_class.values())
    named = sum(r[2] for r in per_class.values())
    line = f"| **all cases** | **{ok} / {total} ({100 * ok // max(total, 1)} %)** |"
    print(line + (f" **{named} / {total} ({100 * named // max(total, 1)} %)** |" if why else ""))
    print(f"| healthy configurations without an error | {clean} / {clean + dirty} |" + (" |" if why else ""))
    if args.missed:
        print("\n" + "\n".join(missed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
