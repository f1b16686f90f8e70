"""The README's table of twelve everyday machines (issue #12), from real runs of ``suggest``.

Each row is ``cudadoctor suggest torch --no-probe --python 3.12`` with the machine's flags (the command the
table shows), beside what ``uv pip install torch --torch-backend=auto`` picks there by uv's rules
(:mod:`cudadoctor.suggest.uv_auto`), and why they differ, worked out from the two answers. tests/test_readme.py
keeps the README in step; regenerate with ``python -m tests.everyday_machines``.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import replace

from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.planning import HostFlags, constraints, plan
from cudadoctor.suggest import Constraints, Plan, Suggestion, suggest_torch
from cudadoctor.suggest.uv_auto import UvPick, uv_auto_pick

#: (name, flags after ``suggest torch --no-probe --python 3.12``)
MACHINES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("CPU laptop", ("--gpu", "none")),
    ("Apple M-series", ("--gpu", "Apple M2")),
    ("MI300X", ("--gpu", "MI300X")),
    ("Jetson Orin", ("--gpu", "Jetson AGX Orin", "--platform", "linux-aarch64")),
    ("GTX 1080 Ti on 580", ("--gpu", "GTX 1080 Ti", "--driver", "580")),
    ("RTX 3090 on 470", ("--gpu", "RTX 3090", "--driver", "470")),
    ("RTX 4090 on 550", ("--gpu", "RTX 4090", "--driver", "550")),
    ("RTX 5090 on 570", ("--gpu", "RTX 5090", "--driver", "570")),
    ("H100 on 535", ("--gpu", "H100", "--driver", "535")),
    ("H200 on 580", ("--gpu", "H200", "--driver", "580")),
    ("B200 on 570", ("--gpu", "B200", "--driver", "570")),
    ("GB200 on 580", ("--gpu", "GB200", "--driver", "580", "--platform", "linux-aarch64")),
)
PYTHON = "3.12"

START = "<!-- everyday machines table: python -m tests.everyday_machines -->\n"
END = "<!-- end of everyday machines table -->"


def host_flags(flags: tuple[str, ...]) -> HostFlags:
    """The HostFlags the CLI builds from these flags."""
    given = dict(zip(flags[::2], flags[1::2], strict=True))
    gpu = given.get("--gpu")
    return HostFlags(
        driver=given.get("--driver"), gpus=(gpu,) if gpu else (), python=PYTHON,
        platform=given.get("--platform"), probe=False,
    )  # fmt: skip


def plan_label(p: Plan) -> str:
    version = p.packages[0][1]
    if p.variant == "pypi" and p.cuda is not None:
        return f"torch {version} (PyPI, CUDA {p.cuda})"
    if p.variant == "pypi":
        return f"torch {version} (PyPI" + (", MPS)" if "MPS" in " ".join(p.why) else ")")
    return f"torch {version} (CPU index)" if p.variant == "cpu" else f"torch {version} {p.variant}"


def _cudadoctor(s: Suggestion) -> str:
    if s.plans:
        return plan_label(s.plans[0])
    first = s.excluded[0]
    return f"nothing fits ({first.rule}: {first.observed})"


def _uv(pick: UvPick) -> str:
    return pick.label + (" ✗" if pick.problems else "")


def _same(p: Plan, pick: UvPick) -> bool:
    return pick.version is not None and p.packages[0][1] == str(pick.version) and p.variant == pick.index


def _cudadoctor_on(m: CompatMatrix, c: Constraints, pick: UvPick) -> str:
    """What cudadoctor says of uv's pick: why it leaves it out, or why it ranks it below its own plan."""
    there = suggest_torch(m, replace(c, wanted_variant=pick.index), f"torch=={pick.version}")
    if there.plans:
        unverified = [cav for cav in there.plans[0].caveats if "architecture list" in cav or "inferred" in cav]
        if unverified:
            return f"both run; cudadoctor ranks builds with a verified GPU list first ({unverified[0]})"
        return "both run; cudadoctor ranks its build first"
    found = next((e for e in there.excluded if e.rule != "variant"), None)
    return f"cudadoctor leaves it out: {found.rule}: {found.observed}" if found else "cudadoctor leaves it out"


def why(m: CompatMatrix, c: Constraints, s: Suggestion, pick: UvPick) -> str:
    """Why cudadoctor's plan and uv's pick differ, from the two answers."""
    if pick.version is None:
        return f"uv: {pick.note}"
    if pick.problems:
        rule, observed, required = pick.problems[0]
        return f"uv's pick does not run here ({rule}): {observed}; requires {required}"
    if not s.plans:
        return "cudadoctor plans nothing here"
    top = s.plans[0]
    if _same(top, pick):
        return "same build" + (f"; {pick.note}" if pick.note else "")
    planned = Version(top.packages[0][1])
    if pick.version < planned and c.accelerator == "rocm" and pick.note:
        return f"uv: {pick.note}"  # its ROCm table, not the index order, keeps it from the newer build
    if pick.version < planned:
        return (
            f"uv takes the first index with a torch for this machine ({pick.index}: newest {pick.version} in compat "
            "data), though newer releases are on later indexes; cudadoctor ranks every build of every release"
        )
    index = m.torch_variants.get(pick.index)
    uv_cuda = index.cuda if index is not None else None
    if c.driver_cuda is not None and uv_cuda is not None and uv_cuda > c.driver_cuda >= (top.cuda or uv_cuda):
        return (
            f"same release; cudadoctor prefers CUDA {top.cuda}, which the driver supports natively, to {uv_cuda} "
            "by minor-version compatibility"
        )
    return _cudadoctor_on(m, c, pick)


def row(m: CompatMatrix, name: str, flags: tuple[str, ...]) -> tuple[str, ...]:
    hf = host_flags(flags)
    s, c = plan("torch", hf)
    pick = uv_auto_pick(m, constraints(m, hf))
    shown = " ".join(f"'{f}'" if " " in f else f for f in flags)
    return name, f"`{shown}`", _cudadoctor(s), _uv(pick), why(m, c, s, pick)


def table() -> str:
    """The README section between the markers."""
    m = CompatMatrix(cache_dir=False)
    lines = [
        "| Machine | flags | cudadoctor plans | uv `--torch-backend=auto` | Why they differ |",
        "|---|---|---|---|---|",
    ]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row(m, n, f)) + " |" for n, f in MACHINES]
    return "\n".join(lines) + "\n"


def readme_section(text: str) -> str | None:
    match = re.search(re.escape(START) + r"(.*?)" + re.escape(END), text, flags=re.DOTALL)
    return match.group(1) if match else None


def main() -> int:
    """Print the table, or with ``--write README.md`` replace it there (shipped data only, never the user's
    `cudadoctor update` cache: XDG_CACHE_HOME points at an empty directory)."""
    import tempfile

    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="everyday-")
    if sys.argv[1:2] == ["--write"]:
        path = sys.argv[2]
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        old = readme_section(text)
        if old is None:
            print(f"{path}: no everyday-machines markers", file=sys.stderr)
            return 1
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text.replace(START + old + END, START + table() + END))
        return 0
    sys.stdout.write(table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
