"""Write compat/gpu_devices.toml from the "Compatible GPUs" table of NVIDIA's open GPU kernel modules README.

How to run (standard library, git, and cudadoctor importable from this checkout):

    git clone --bare https://github.com/NVIDIA/open-gpu-kernel-modules ogkm.git
    python3 compat/tools/gpu_devices_from_ogkm.py ogkm.git > compat/gpu_devices.toml

The README of every release tag (https://github.com/NVIDIA/open-gpu-kernel-modules/blob/<tag>/README.md
#compatible-gpus) lists product name, PCI device ID and, where the name depends on it, the subsystem vendor and
device ID. For each row this records, per driver branch, the first release of that branch whose README lists it
(``listed_from``): a listing proves support from that release on within its branch; a branch absent from the
list is not proven either way (the table is not a complete support list: Tesla T4 appears only from 575.51.02).

Compute capability: from compat/gpus.toml when the name resolves there (``cc_model``); else *inferred* from
the device-ID block (the ID's upper three hex digits), when every named-resolved row of that block resolves to
one compute capability and the name does not mark another chip (gpu_models' rule); else left out.
Nothing runs at import.
"""

from __future__ import annotations

import collections
import datetime
import re
import subprocess
import sys
from collections.abc import Mapping

_ROW = re.compile(r"^\|\s*(.+?)\s*\|\s*([0-9A-F]{4})(?: ([0-9A-F]{4}) ([0-9A-F]{4}))?\s*\|\s*$")
_TAG = re.compile(r"^[0-9]+\.[0-9]+(?:\.[0-9]+)?$")


def _key(tag: str) -> tuple[int, ...]:
    return tuple(int(p) for p in tag.split("."))


def read_tables(git_dir: str) -> tuple[list[str], dict[tuple[str, str, str], list[str]]]:
    """The release tags (ascending) and, per (name, device, subsystem), the tags whose README lists it."""
    git = ["git", "-C", git_dir]  # git from PATH: a maintainer's tool, run by hand
    out = subprocess.run([*git, "tag"], check=True, capture_output=True, text=True).stdout
    tags = sorted((t for t in out.split() if _TAG.match(t)), key=_key)
    rows: dict[tuple[str, str, str], list[str]] = collections.defaultdict(list)
    for tag in tags:
        readme = subprocess.run(
            [*git, "show", f"{tag}:README.md"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        for line in readme.splitlines():
            m = _ROW.match(line)
            if m:
                sub = f"{m[3]} {m[4]}" if m[3] else ""
                rows[(m[1], m[2], sub)].append(tag)
    return tags, rows


def first_per_branch(listed: list[str]) -> tuple[str, ...]:
    """The first listing release of each branch (a Linux driver's major is its branch)."""
    first: dict[str, str] = {}
    for tag in sorted(listed, key=_key):
        first.setdefault(tag.split(".")[0], tag)
    return tuple(first.values())


def infer(
    grouped: Mapping[tuple[str, str, tuple[str, ...]], list[str]], named: Mapping[str, str]
) -> dict[str, tuple[str, str]]:
    """Device ID (or, for the last rule, product name) -> (compute capability, the rule), for rows not named in
    compat/gpus.toml. Rules, in order: the 16-ID block (upper three hex digits) whose named rows all have one
    compute capability; else the 256-ID block (upper two) whose named rows, at least two, all have one; else
    another row of the same product name that has one."""
    blocks: dict[str, dict[str, list[str]]] = collections.defaultdict(lambda: collections.defaultdict(list))
    for name, device, _l in grouped:
        if name in named:
            for size in (3, 2):
                blocks[device[:size]][named[name]].append(f"{name} {device}")
    out: dict[str, tuple[str, str]] = {}
    for name, device, _l in grouped:
        if name in named:
            continue
        for size, least in ((3, 1), (2, 2)):
            ccs = blocks.get(device[:size], {})
            if len(ccs) == 1 and len(next(iter(ccs.values()))) >= least:
                cc, rows = next(iter(ccs.items()))
                span = device[:size] + "x" * (4 - size)
                out[device] = (
                    cc,
                    (
                        f"device-ID block {span}: every row of it named in compat/gpus.toml ({len(rows)}) has {cc}, "
                        f"e.g. {rows[0]}"
                    ),
                )
                break
    for name, device, _l in grouped:
        if name not in named and device in out:
            out.setdefault(name, (out[device][0], f"the same product name as device {device} ({out[device][1]})"))
    return out


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main(git_dir: str) -> None:
    from cudadoctor import gpu_models
    from cudadoctor.data import CompatMatrix

    curated = CompatMatrix(cache_dir=False).gpu_models
    tags, rows = read_tables(git_dir)
    grouped: dict[tuple[str, str, tuple[str, ...]], list[str]] = collections.defaultdict(list)
    for (name, device, sub), listed in rows.items():
        grouped[(name, device, first_per_branch(listed))].append(sub)

    named = {name: model for name, _d, _l in grouped if (model := gpu_models.lookup(name, curated)) is not None}
    inferred = infer(grouped, {name: model.compute_capability for name, model in named.items()})
    today = datetime.date.today().isoformat()  # the day the READMEs were read and the table written
    print("# NVIDIA GPU devices by PCI ID: product name as the driver prints it, the driver releases that list it,")
    print("# compute capability. Data only; generated by compat/tools/gpu_devices_from_ogkm.py (do not edit by hand:")
    print("# run it again). Method and gaps: compat/notes/gpu-devices.md.")
    print('[meta]\nschema = 1\nkind = "gpu-devices"')
    print('covers = "NVIDIA GPUs (Turing and newer) of the open kernel modules\' Compatible GPUs table, releases '
          f'{tags[0]} to {tags[-1]}: PCI device and subsystem ID, name, first listing release per branch, compute '
          'capability (from compat/gpus.toml or inferred from the device-ID block)"')  # fmt: skip
    print(f"updated = {today}\n")
    print("[[meta.sources]]")
    print('id = "nvidia-ogkm-readme"')
    print('url = "https://github.com/NVIDIA/open-gpu-kernel-modules/blob/main/README.md#compatible-gpus"')
    print(f"read = {today}")
    print(f'what = "NVIDIA open GPU kernel modules README, Compatible GPUs table (product name, PCI device ID, '
          f'subsystem vendor and device ID) at every one of the {len(tags)} release tags {tags[0]} to {tags[-1]} '
          '(https://github.com/NVIDIA/open-gpu-kernel-modules/blob/<tag>/README.md#compatible-gpus)"')  # fmt: skip
    print('via = "git snapshot of github.com/NVIDIA/open-gpu-kernel-modules; README.md read at each tag with git '
          'show by compat/tools/gpu_devices_from_ogkm.py"')  # fmt: skip
    left_out: list[str] = []
    for (name, device, listed), subs in sorted(grouped.items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2])):
        print("\n[[device]]")
        print(f"pci = {_q(device)}")
        clean = sorted(s for s in subs if s)
        if clean:
            print("subsystems = [" + ", ".join(_q(s) for s in clean) + "]")
        print(f"name = {_q(name)}")
        print("listed_from = [" + ", ".join(_q(t) for t in listed) + "]")
        if name in named:
            print(f"compute_capability = {_q(named[name].compute_capability)}")
            print(f"cc_model = {_q(named[name].name)}")
        elif device in inferred or name in inferred:
            cc, why = inferred.get(device) or inferred[name]
            print(f"compute_capability = {_q(cc)}")
            print(f"inferred = {_q(why)}")
        else:
            left_out.append(f"{name} ({device})")
        print('source = "nvidia-ogkm-readme"')
    for line in left_out:
        print(f"# no compute capability: {line}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1])
