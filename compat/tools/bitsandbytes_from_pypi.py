"""Print the [[wheel]] and [[needed]] records of compat/bitsandbytes.toml from PyPI (run by hand).

How to run (needs network access to pypi.org and files.pythonhosted.org; standard library only):

    python3 compat/tools/bitsandbytes_from_pypi.py --cache /tmp/bnb > /tmp/bnb/rows.toml

For every Linux wheel of bitsandbytes on PyPI (py3-none-any up to 0.42.0, manylinux x86_64 and aarch64 later):

* the native libraries it ships: the ``bitsandbytes/libbitsandbytes_*.so`` names of the zip central directory
  (read with HTTP range requests, the wheel is not downloaded);
* Requires-Dist torch and Requires-Python from its METADATA;
* for each distinct ``libbitsandbytes_cuda*.so`` (by the CRC-32 the central directory gives), the CUDA sonames
  it needs, and the ELF machine. A library's dynamic section lies near the end of the file, behind the fat
  binary, so reading it means inflating the whole member; its string table (.dynstr) lies in the first
  segment, so the tool inflates only the first MiB and takes the ``lib*.so*`` names found there, which are the
  DT_NEEDED entries, the verneed file names (also DT_NEEDED) and the object's own SONAME. Three libraries read
  whole (0.31.8 cuda102_nocublaslt, 0.41.1 cuda118_nocublaslt, 0.43.1 cuda121) gave the same names through
  the ELF parser of cudadoctor/probes/elf.py (compat/notes/bitsandbytes.md).

--cache DIR keeps the answers (JSON) so that a second run reads nothing again. Nothing runs at import.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import struct
import sys
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor

from torch_from_pypi import _RangeFile, _request, list_files

#: the C and C++ runtime: not CUDA, left out of ``needed``
_SYSTEM = re.compile(r"^lib(c|m|dl|rt|pthread|gcc_s|stdc\+\+|gomp)\.so\.\d+$")
_SONAME = re.compile(rb"lib[A-Za-z0-9_+-]+\.so(?:\.[0-9]+)*(?=\x00)")
_MACHINE = {62: "x86_64", 183: "aarch64"}


def _vkey(version: str) -> tuple[int, ...]:
    """0.40.1.post1 -> (0, 40, 1, 1, 1); 0.40.1 -> (0, 40, 1, 0, 0): post releases after their base."""
    base, _, post = version.partition(".post")
    parts = [int(p) for p in base.split(".")] + [0] * (3 - base.count(".") - 1)
    return (*parts, 1 if post else 0, int(post or 0))


def _members(file: dict) -> dict:
    url = file["url"].split("#")[0]
    with zipfile.ZipFile(io.BufferedReader(_RangeFile(url, int(file["size"])), buffer_size=1 << 16)) as zf:
        libs = [
            (i.filename, i.CRC, i.header_offset, i.compress_size)
            for i in zf.infolist()
            if re.fullmatch(r"bitsandbytes/libbitsandbytes_\w+\.so", i.filename)
        ]
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
        text = zf.read(meta).decode("utf-8")
    lines = [line.split(":", 1)[1].strip() for line in text.splitlines() if ":" in line]
    keys = [line.split(":", 1)[0] for line in text.splitlines() if ":" in line]
    fields = list(zip(keys, lines, strict=True))
    torch = [v for k, v in fields if k == "Requires-Dist" and re.match(r"torch\b", v) and "extra" not in v]
    python = [v for k, v in fields if k == "Requires-Python"]
    return {"url": url, "libs": libs, "torch": torch, "python": python}


def _head(url: str, offset: int, csize: int, want: int = 1 << 20) -> bytes:
    """The first ``want`` bytes of a deflated zip member, inflated from its local header on."""
    local = _request(url, {"Range": f"bytes={offset}-{offset + 29}"})
    start = offset + 30 + sum(struct.unpack("<HH", local[26:30]))
    inflate, out, pos = zlib.decompressobj(-15), b"", start
    while len(out) < want and pos < start + csize:
        chunk = _request(url, {"Range": f"bytes={pos}-{min(pos + (1 << 18), start + csize) - 1}"})
        pos += len(chunk)
        out += inflate.decompress(chunk)
    return out[:want]


def _needed(job: tuple[str, int, int]) -> dict:
    url, offset, csize = job
    head = _head(url, offset, csize)
    machine = struct.unpack_from("<H", head, 18)[0]
    names = sorted({m.decode() for m in _SONAME.findall(head)})
    return {"machine": _MACHINE.get(machine, str(machine)), "names": names}


def _cached(cache: str | None, name: str, make):  # type: ignore[no-untyped-def]
    path = os.path.join(cache, name) if cache else None
    if path and os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    value = make()
    if path:
        with open(path, "w") as f:
            json.dump(value, f)
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", metavar="DIR")
    args = parser.parse_args(argv)
    files = [
        f
        for f in list_files("bitsandbytes")
        if f["filename"].endswith(".whl") and re.search(r"-(any|manylinux_\w+_(x86_64|aarch64))\.whl$", f["filename"])
    ]
    wheels = _cached(args.cache, "bnb-wheels.json", lambda: {f["filename"]: _members(f) for f in files})
    jobs = {
        str(crc): (w["url"], offset, csize)
        for w in wheels.values()
        for name, crc, offset, csize in w["libs"]
        if "libbitsandbytes_cuda" in name
    }

    def read_all() -> dict:
        with ThreadPoolExecutor(6) as pool:
            return dict(zip(jobs, pool.map(_needed, jobs.values()), strict=True))

    needed = _cached(args.cache, "bnb-needed.json", read_all)
    rows = []  # (version, arch, wheel, libraries, torch, python)
    per_lib: dict[tuple[str, str], list[tuple[str, tuple[str, ...]]]] = {}
    for filename, w in wheels.items():
        version = filename.split("-")[1]
        libs = sorted(os.path.basename(n) for n, *_ in w["libs"])
        machines = {needed[str(crc)]["machine"] for n, crc, *_ in w["libs"] if str(crc) in needed}
        if len(machines) != 1:
            print(f"# {filename}: libraries for {sorted(machines)}: skipped", file=sys.stderr)
            continue
        arch = machines.pop()
        rows.append((version, arch, filename, libs, w["torch"], w["python"]))
        for name, crc, *_ in w["libs"]:
            if str(crc) in needed:
                own = os.path.basename(name)
                cuda = tuple(n for n in needed[str(crc)]["names"] if n != own and not _SYSTEM.match(n))
                per_lib.setdefault((own, arch), []).append((version, cuda))
    out = []
    for version, arch, filename, libs, torch, python in sorted(rows, key=lambda r: (_vkey(r[0]), r[1]), reverse=True):
        out.append("[[wheel]]")
        out.append(f'version = "{version}"\narch = "{arch}"\nwheel = "{filename}"')
        out.append("libraries = [" + ", ".join(f'"{n}"' for n in libs) + "]")
        if torch:
            spec = re.sub(r"^torch\s*", "", torch[0]).replace(" ", "")
            if spec:  # a bare "torch" pins nothing
                out.append(f'requires_torch = "{spec}"')
        if python:
            out.append(f'requires_python = "{python[0].replace(" ", "")}"')
        out.append('source = "pypi-bitsandbytes"\n')
    groups = []
    for (lib, arch), seen in per_lib.items():
        seen.sort(key=lambda s: _vkey(s[0]))
        run: list[tuple[str, tuple[str, ...]]] = []
        for version, cuda in seen:
            if run and run[-1][1] != cuda:
                groups.append((lib, arch, run))
                run = []
            run.append((version, cuda))
        groups.append((lib, arch, run))
    for lib, arch, run in sorted(groups, key=lambda g: (_vkey(g[2][-1][0]), g[1], g[0]), reverse=True):
        first, last = run[0][0], run[-1][0]
        versions = f"=={first}" if first == last else f">={first},<={last}"
        out.append(f'[[needed]]\nlibrary = "{lib}"\narch = "{arch}"\nversions = "{versions}"')
        out.append("sonames = [" + ", ".join(f'"{n}"' for n in run[0][1]) + "]")
        out.append('source = "pypi-bitsandbytes-elf"\n')
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
