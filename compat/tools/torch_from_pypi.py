"""Regenerate the PyPI-derived fields of compat/torch.toml.

How to run (needs network access to pypi.org and files.pythonhosted.org; standard library only):

    python3 compat/tools/torch_from_pypi.py            # JSON report on stdout
    python3 compat/tools/torch_from_pypi.py --min 2.0.0 --out /tmp/torch_pypi.json
    python3 compat/tools/torch_from_pypi.py --check compat/torch.toml   # compare with the table; exit 1 on a difference

For every torch release >= --min it prints:
  python          CPython minor versions with a manylinux x86_64 wheel (from wheel file names)
  python_aarch64  the same for manylinux aarch64 wheels
  python_macos_arm64  the same for macOS arm64 wheels
  python_windows  the same for Windows amd64 wheels
  requires_python Requires-Python of the release's wheels
  pypi_default_cuda / pypi_default_evidence
                  CUDA major.minor of the manylinux x86_64 wheels, proven by their Requires-Dist pin on
                  nvidia-cuda-runtime-cuXX==A.B.C or cuda-toolkit[...]==A.B.C (every x86_64 wheel must agree)
  aarch64_cuda    the same for the manylinux aarch64 wheels (absent when they pin no CUDA runtime)
  torchvision / torchaudio
                  the release(s) of those packages whose Requires-Dist pins torch==<version>
and, under "without_exact_torch_pin", the torchvision/torchaudio releases whose torch requirement is a range
(or absent), which therefore match no single torch release by pin.

Where it reads: the PEP 691 JSON simple index (https://pypi.org/simple/<pkg>/) for file names,
and each wheel's METADATA file: first the PEP 658 "<wheel url>.metadata" file, and when that is not
served, the METADATA member of the wheel read with HTTP range requests (zip central directory only,
never the whole wheel). The per-version JSON API (https://pypi.org/pypi/<pkg>/<version>/json) would
give the same Requires-Dist, but it is not used because it is not always served.

Nothing runs at import; main() runs only when this file is executed as a script.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
import urllib.error
import urllib.request
import zipfile
from concurrent.futures import ThreadPoolExecutor

SIMPLE = "https://pypi.org/simple/{}/"
UA = "cudadoctor-compat-tools/1 (+stdlib urllib)"
TIMEOUT = 120
_VERBOSE = False

_WHEEL_RE = re.compile(r"^(?P<name>[^-]+)-(?P<ver>[^-]+)(-\d[^-]*)?-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$")
_CUDA_PIN_RE = re.compile(
    r"^(?P<pkg>nvidia-cuda-runtime(?:-cu\d+)?|cuda-toolkit)(?:\[[^\]]*\])?\s*==\s*(?P<ver>\d+\.\d+(?:\.\d+)*)"
)
_TORCH_PIN_RE = re.compile(r"^torch\s*==\s*(?P<ver>[0-9][0-9a-z.+]*)", re.I)


def _request(url: str, headers: dict[str, str] | None = None) -> bytes:
    if not url.startswith("https://"):
        raise ValueError(f"refusing a non-https URL: {url}")
    req = urllib.request.Request(url, headers={"User-Agent": UA, **(headers or {})})  # noqa: S310 - https only
    with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:  # noqa: S310 - https only
        return resp.read()


def vkey(v: str) -> tuple[int, ...]:
    """Sort key for plain release versions like 2.10.1 (no pre-releases on PyPI for torch)."""
    return tuple(int(p) for p in re.findall(r"\d+", v.split("+")[0])[:4])


def list_files(pkg: str) -> list[dict]:
    data = json.loads(_request(SIMPLE.format(pkg), {"Accept": "application/vnd.pypi.simple.v1+json"}))
    return data["files"]


class _RangeFile(io.RawIOBase):
    """Seekable read-only file over HTTP range requests (enough for zipfile to read one member)."""

    def __init__(self, url: str, size: int):
        self.url, self.size, self.pos = url, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = {0: offset, 1: self.pos + offset, 2: self.size + offset}[whence]
        return self.pos

    def read(self, n: int = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        if end <= self.pos:
            return b""
        data = _request(self.url, {"Range": f"bytes={self.pos}-{end - 1}"})
        if len(data) != end - self.pos:
            raise OSError(f"range request to {self.url} returned {len(data)} bytes, wanted {end - self.pos}")
        self.pos = end
        return data

    def readinto(self, b) -> int:  # type: ignore[override]
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)


def wheel_metadata(file: dict) -> str:
    url = file["url"].split("#")[0]
    if _VERBOSE:
        print("metadata:", file["filename"], file=sys.stderr, flush=True)
    try:
        return _request(url + ".metadata").decode("utf-8")
    except urllib.error.HTTPError as exc:
        if exc.code != 404:
            raise
    # The PEP 658 file is not served: read dist-info/METADATA out of the wheel itself.
    with zipfile.ZipFile(io.BufferedReader(_RangeFile(url, int(file["size"])), buffer_size=1 << 16)) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
        return zf.read(name).decode("utf-8")


def requires_dist(metadata: str) -> list[str]:
    return [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]


def _split_req(req: str) -> tuple[str, str]:
    """'name[x] (==1.2) ; marker' -> ('name[x]==1.2', 'marker'): old wheels write the version in parentheses."""
    spec, _, marker = req.partition(";")
    spec = re.sub(r"[()\s]", "", spec)
    return spec, marker.strip()


_CLAUSE_RE = re.compile(r"""^(?P<var>\w+)\s*(?P<op>==|!=)\s*(?P<q>['"])(?P<val>[^'"]*)(?P=q)$""")


def marker_applies(marker: str, env: dict[str, str]) -> bool:
    """Evaluate the simple markers torch uses (and/or of ==/!= clauses, no parentheses).

    env holds platform_system, platform_machine, sys_platform; 'extra' clauses are false (no extra asked).
    Anything else raises ValueError, so that a pin is never read under a marker that was not understood.
    """
    if not marker:
        return True
    if "(" in marker or ")" in marker:
        raise ValueError(f"marker not understood: {marker}")
    for alt in re.split(r"\s+or\s+", marker):
        ok = True
        for clause in re.split(r"\s+and\s+", alt.strip()):
            m = _CLAUSE_RE.match(clause.strip())
            if not m:
                raise ValueError(f"marker not understood: {marker}")
            var, op, val = m.group("var"), m.group("op"), m.group("val")
            if var == "extra":
                ok = False
                continue
            if var not in env:
                raise ValueError(f"marker not understood: {marker}")
            if (env[var] == val) != (op == "=="):
                ok = False
        if ok:
            return True
    return False


LINUX_ENV = {
    "x86_64": {"platform_system": "Linux", "platform_machine": "x86_64", "sys_platform": "linux"},
    "aarch64": {"platform_system": "Linux", "platform_machine": "aarch64", "sys_platform": "linux"},
}


def cuda_pin(reqs: list[str], env: dict[str, str]) -> tuple[str, str] | None:
    """(cuda major.minor, evidence) from the CUDA runtime pin that applies in env, or None."""
    for r in reqs:
        spec, marker = _split_req(r)
        m = _CUDA_PIN_RE.match(spec)
        if m and marker_applies(marker, env):
            parts = m.group("ver").split(".")
            return f"{parts[0]}.{parts[1]}", "Requires-Dist " + spec
    return None


def torch_pin(reqs: list[str]) -> str | None:
    """The exact torch==X pin, or None (a range such as torch>=2.11 is not a pin)."""
    for r in reqs:
        spec, _marker = _split_req(r)
        m = _TORCH_PIN_RE.match(spec)
        if m and not re.search(r"[,<>!~]", spec[m.end() :] or ""):
            return m.group("ver")
    return None


def torch_requirement(reqs: list[str]) -> str | None:
    """Any torch requirement as written (normalised), e.g. 'torch>=2.14.0'; None when torch is not required."""
    for r in reqs:
        spec, _marker = _split_req(r)
        if re.match(r"^torch(?![\w.-])", spec, re.I):
            return spec
    return None


def _wheels(files: list[dict], version: str) -> list[tuple[dict, re.Match]]:
    out = []
    for f in files:
        m = _WHEEL_RE.match(f["filename"])
        if m and m.group("ver") == version and not f.get("yanked"):
            out.append((f, m))
    return out


def _pyminor(tag: str) -> str | None:
    m = re.fullmatch(r"cp(\d)(\d+)", tag)
    return f"{m.group(1)}.{m.group(2)}" if m else None


def torch_release(files: list[dict], version: str, pool: ThreadPoolExecutor) -> dict:
    wheels = _wheels(files, version)
    rec: dict = {"version": version}
    for key, os_tag, arch in (
        ("python", "manylinux", "x86_64"), ("python_aarch64", "manylinux", "aarch64"),
        ("python_macos_arm64", "macosx", "arm64"), ("python_windows", "win", "amd64"),
    ):  # fmt: skip
        pys = {_pyminor(m.group("py")) for f, m in wheels if os_tag in m.group("plat") and arch in m.group("plat")}
        pys.discard(None)
        if pys:
            rec[key] = sorted(pys, key=vkey)
    rec["requires_python"] = sorted({f.get("requires-python") or "" for f, _ in wheels} - {""})
    for key, arch in (("pypi_default", "x86_64"), ("aarch64", "aarch64")):
        linux = [f for f, m in wheels if "manylinux" in m.group("plat") and arch in m.group("plat")]
        env = LINUX_ENV[arch]
        pins = list(pool.map(lambda f, env=env: cuda_pin(requires_dist(wheel_metadata(f)), env), linux))
        found = {p for p in pins if p}
        if len(found) == 1 and all(pins):
            cuda, evidence = found.pop()
            rec[f"{key}_cuda"] = cuda
            rec[f"{key}_evidence"] = evidence
        elif found:
            rec[f"{key}_disagreement"] = sorted(found)
        rec[f"{key}_wheels_read"] = len(linux)
    return rec


def companion_map(pkg: str, pool: ThreadPoolExecutor, min_torch: str) -> tuple[dict[str, list[str]], dict[str, str]]:
    """(torch version -> [pkg versions pinning it exactly], {pkg version: torch requirement} for those without
    an exact pin), from one wheel's METADATA per pkg version (a manylinux x86_64 wheel where there is one)."""
    files = list_files(pkg)
    by_ver: dict[str, dict] = {}
    for f in files:
        m = _WHEEL_RE.match(f["filename"])
        if not m or f.get("yanked"):
            continue
        v = m.group("ver")
        better = "manylinux" in m.group("plat") and "x86_64" in m.group("plat")
        if v not in by_ver or better:
            by_ver[v] = f
    vers = list(by_ver)
    reqs = list(pool.map(lambda v: requires_dist(wheel_metadata(by_ver[v])), vers))
    exact: dict[str, list[str]] = {}
    loose: dict[str, str] = {}
    for v, rq in zip(vers, reqs, strict=True):
        p = torch_pin(rq)
        if p and vkey(p) >= vkey(min_torch):
            exact.setdefault(p, []).append(v)
        elif not p and vkey(v) >= vkey(_LOOSE_FROM[pkg]):
            loose[v] = torch_requirement(rq) or "(no torch requirement)"
    return {k: sorted(v, key=vkey) for k, v in exact.items()}, dict(sorted(loose.items(), key=lambda kv: vkey(kv[0])))


# Companion releases at or after these versions are listed when they carry no exact torch pin.
_LOOSE_FROM = {"torchvision": "0.15.0", "torchaudio": "2.0.0"}


# torch.toml field -> key in this script's release records
_CHECKED = {
    "python": "python",
    "python_aarch64": "python_aarch64",
    "python_macos_arm64": "python_macos_arm64",
    "python_windows": "python_windows",
    "pypi_default_cuda": "pypi_default_cuda",
    "pypi_default_evidence": "pypi_default_evidence",
    "pypi_aarch64_cuda": "aarch64_cuda",
    "pypi_aarch64_evidence": "aarch64_evidence",
}


def check(toml_path: str, releases: list[dict]) -> int:
    """Print every difference between the table's PyPI-derived fields and what PyPI serves now; 1 if any."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    with open(toml_path, "rb") as fh:
        table = {r["version"]: r for r in tomllib.load(fh)["release"]}
    problems = []
    for rec in releases:
        row = table.get(rec["version"])
        if row is None:
            problems.append(f"{rec['version']}: on PyPI, not in the table")
            continue
        for field, key in _CHECKED.items():
            if row.get(field) != rec.get(key):
                problems.append(f"{rec['version']}: {field} table={row.get(field)!r} pypi={rec.get(key)!r}")
        rp = rec["requires_python"]
        if row.get("requires_python") != (rp[0] if len(rp) == 1 else rp):
            problems.append(f"{rec['version']}: requires_python table={row.get('requires_python')!r} pypi={rp!r}")
        for name in ("torchvision", "torchaudio"):
            want = rec.get(name)
            if want is None and "pypi-companion-range" in row.get("sources", []):
                continue  # a companion without an exact pin, sourced by hand (compat/notes/torch.md)
            if row.get(name) != (want[0] if want and len(want) == 1 else want):
                problems.append(f"{rec['version']}: {name} table={row.get(name)!r} pypi={want!r}")
    for version in sorted(set(table) - {r["version"] for r in releases}, key=vkey):
        problems.append(f"{version}: in the table, not on PyPI (or below --min)")
    for p in problems:
        print(p)
    print(f"{len(problems)} difference(s)")
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--min", default="2.0.0", help="oldest torch release to report (default 2.0.0)")
    ap.add_argument("--out", help="write the JSON here instead of stdout")
    ap.add_argument("-v", "--verbose", action="store_true", help="name each METADATA file read, on stderr")
    ap.add_argument("--check", metavar="TOML", help="compare the PyPI-derived fields of this torch.toml with PyPI")
    args = ap.parse_args(argv)
    global _VERBOSE
    _VERBOSE = args.verbose

    files = list_files("torch")
    versions = sorted(
        {
            m.group("ver")
            for f in files
            if (m := _WHEEL_RE.match(f["filename"]))
            and re.fullmatch(r"\d+\.\d+\.\d+", m.group("ver"))
            and vkey(m.group("ver")) >= vkey(args.min)
        },
        key=vkey,
        reverse=True,
    )
    with ThreadPoolExecutor(max_workers=8) as pool:
        releases = [torch_release(files, v, pool) for v in versions]
        tv, tv_loose = companion_map("torchvision", pool, args.min)
        ta, ta_loose = companion_map("torchaudio", pool, args.min)
    for r in releases:
        for name, mp in (("torchvision", tv), ("torchaudio", ta)):
            if r["version"] in mp:
                r[name] = mp[r["version"]]
    if args.check:
        return check(args.check, releases)
    text = json.dumps(
        {"releases": releases, "without_exact_torch_pin": {"torchvision": tv_loose, "torchaudio": ta_loose}}, indent=1
    )
    if args.out:
        with open(args.out, "w", encoding="ascii") as fh:
            fh.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
