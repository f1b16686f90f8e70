"""Regenerate the PyPI-derived fields of compat/vllm.toml.

Usage:
    python compat/tools/vllm_from_pypi.py [--min 0.4.0] [--json]

For every vLLM release >= --min (default 0.4.0) this reads
  https://pypi.org/pypi/vllm/json                       (release list, files, per-file requires_python)
  https://files.pythonhosted.org/<path>/<wheel>.metadata (PEP 658 core metadata of each Linux x86_64 wheel)
and prints, newest first, the fields `version`, `torch`, `requires_python`, `python` (plus `abi3`,
the wheel filenames and every nvidia-* / torch-family Requires-Dist line) as TOML fragments, or as
JSON with --json. Fields that need another source (cuda, min_compute_capability, other_cuda_index)
are not produced here. Standard library only; nothing runs at import.
"""

from __future__ import annotations

import argparse
import email.parser
import json
import re
import struct
import sys
import urllib.error
import urllib.parse
import urllib.request
import zlib

PYPI_JSON = "https://pypi.org/pypi/{name}/json"
FILES_HOST = "https://files.pythonhosted.org/"
_WHEEL_RE = re.compile(
    r"^(?P<name>[^-]+)-(?P<ver>[^-]+)(?:-(?P<build>\d[^-]*))?-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$"
)
_TORCH_FAMILY = ("torch", "torchvision", "torchaudio", "xformers", "flashinfer-python", "triton")


def _get(url: str) -> bytes:
    req = urllib.request.Request(url, headers={"User-Agent": "cudadoctor-compat-tool"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return resp.read()


def _version_key(v: str) -> tuple:
    parts = []
    for tok in re.split(r"[.]", re.sub(r"(rc|post|a|b|dev)", r".\1.", v)):
        if not tok:
            continue
        if tok.isdigit():
            parts.append((1, int(tok)))
        elif tok == "post":
            parts.append((2, 0))
        else:  # pre-release markers sort before the final release
            parts.append((0, 0))
    return tuple(parts)


def _file_urls(f: dict) -> list[str]:
    """Absolute URLs for a file entry: the URL as the JSON gives it (resolved), then files.pythonhosted.org."""
    url = f["url"]
    if url.startswith("http"):
        return [url]
    absolute = urllib.parse.urljoin(PYPI_JSON.format(name="x"), url)
    idx = url.index("packages/")
    rest = url[idx + len("packages/"):]
    if rest.startswith("packages/"):
        rest = rest[len("packages/"):]
    return [absolute, FILES_HOST + "packages/" + rest]


def _range(url: str, spec: str) -> bytes:
    req = urllib.request.Request(url, headers={"User-Agent": "cudadoctor-compat-tool", "Range": "bytes=" + spec})
    with urllib.request.urlopen(req, timeout=120) as resp:
        return resp.read()


def _metadata_from_zip(url: str) -> str:
    """Read <name>.dist-info/METADATA out of a remote wheel with HTTP range requests (no full download)."""
    tail = _range(url, "-262144")
    eocd = tail.rfind(b"PK\x05\x06")
    if eocd < 0:
        raise ValueError("no end-of-central-directory record")
    cd_size, cd_off = struct.unpack("<II", tail[eocd + 12:eocd + 20])
    cd = _range(url, f"{cd_off}-{cd_off + cd_size - 1}")
    pos = 0
    while pos < len(cd) and cd[pos:pos + 4] == b"PK\x01\x02":
        method, = struct.unpack("<H", cd[pos + 10:pos + 12])
        csize, = struct.unpack("<I", cd[pos + 20:pos + 24])
        nlen, elen, clen = struct.unpack("<HHH", cd[pos + 28:pos + 34])
        loff, = struct.unpack("<I", cd[pos + 42:pos + 46])
        name = cd[pos + 46:pos + 46 + nlen].decode("utf-8", "replace")
        pos += 46 + nlen + elen + clen
        if re.fullmatch(r"[^/]+\.dist-info/METADATA", name):
            blob = _range(url, f"{loff}-{loff + 30 + 1024 + csize}")
            lnlen, lelen = struct.unpack("<HH", blob[26:30])
            data = blob[30 + lnlen + lelen:30 + lnlen + lelen + csize]
            raw = zlib.decompress(data, -15) if method == 8 else data
            return raw.decode("utf-8", "replace")
    raise ValueError("no METADATA in wheel")


def wheel_metadata(f: dict):
    """PEP 658 sidecar (<wheel>.metadata) when served, else METADATA read from the wheel itself."""
    raw = None
    for url in _file_urls(f):
        try:
            raw = _get(url + ".metadata").decode("utf-8", "replace")
            break
        except urllib.error.HTTPError:
            continue
    if raw is None:
        last = None
        for url in _file_urls(f):
            try:
                raw = _metadata_from_zip(url)
                break
            except (urllib.error.URLError, ValueError) as exc:
                last = exc
        if raw is None:
            raise RuntimeError(f"no metadata for {f['filename']}: {last}")
    return email.parser.Parser().parsestr(raw, headersonly=True)


def _is_linux_x86_64(filename: str) -> bool:
    m = _WHEEL_RE.match(filename)
    return bool(m) and "x86_64" in m.group("plat") and "linux" in m.group("plat")


def collect(name: str = "vllm", minimum: str = "0.4.0") -> list[dict]:
    data = json.loads(_get(PYPI_JSON.format(name=name)))
    out = []
    for ver, files in data["releases"].items():
        if not files or _version_key(ver) < _version_key(minimum):
            continue
        wheels = [f for f in files if f["packagetype"] == "bdist_wheel" and _is_linux_x86_64(f["filename"])]
        rec: dict = {"version": ver, "wheels": [], "requires_python": sorted({f["requires_python"] or "" for f in files})}
        pythons, abi3, torch_pins, interesting = set(), False, set(), set()
        for f in wheels:
            m = _WHEEL_RE.match(f["filename"])
            tag, abi = m.group("py"), m.group("abi")
            abi3 = abi3 or abi == "abi3"
            for t in tag.split("."):
                if t.startswith("cp"):
                    pythons.add(t[2] + "." + t[3:])
            md = wheel_metadata(f)
            for line in md.get_all("Requires-Dist") or []:
                dep = re.split(r"[ ;<>=!~\[(]", line, maxsplit=1)[0].lower().replace("_", "-")
                if dep == "torch" and "extra ==" not in line:
                    torch_pins.add(line[len("torch"):].strip())
                if dep in _TORCH_FAMILY or dep.startswith("nvidia-"):
                    interesting.add(line)
            rec["wheels"].append(
                {"filename": f["filename"], "requires_python_metadata": md.get("Requires-Python"),
                 "upload_time": f["upload_time"], "yanked": f["yanked"]}
            )
        rec["python"] = sorted(pythons, key=lambda s: tuple(int(x) for x in s.split(".")))
        rec["abi3"] = abi3
        rec["torch"] = sorted(torch_pins)
        rec["deps_of_interest"] = sorted(interesting)
        out.append(rec)
    out.sort(key=lambda r: _version_key(r["version"]), reverse=True)
    return out


def _toml(recs: list[dict]) -> str:
    lines = []
    for r in recs:
        lines.append("[[release]]")
        lines.append(f'version = "{r["version"]}"')
        if len(r["torch"]) == 1:
            lines.append(f'torch = "{r["torch"][0]}"')
        else:
            lines.append(f"# torch pins differ between wheels or are absent: {r['torch']}")
        if len(r["requires_python"]) == 1:
            lines.append(f'requires_python = "{r["requires_python"][0]}"')
        lines.append("python = [" + ", ".join(f'"{p}"' for p in r["python"]) + "]")
        if r["abi3"]:
            lines.append("abi3 = true")
        lines.append(f"# wheels: {[w['filename'] for w in r['wheels']]}")
        lines.append(f"# deps: {r['deps_of_interest']}")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min", default="0.4.0")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    recs = collect("vllm", args.min)
    sys.stdout.write(json.dumps(recs, indent=1) + "\n" if args.json else _toml(recs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
