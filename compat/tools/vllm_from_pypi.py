"""Regenerate the PyPI-derived fields of compat/vllm.toml.

Usage:
    python compat/tools/vllm_from_pypi.py [--min 0.4.0] [--json] [--no-elf] [--no-torch] [--no-build]

For every vLLM release >= --min (default 0.4.0) this reads, from PyPI only:
  * https://pypi.org/pypi/vllm/json - release list, files and per-file requires_python;
  * the core metadata of every Linux x86_64 wheel - the PEP 658 sidecar (<wheel>.metadata) when
    the index serves one, otherwise <name>.dist-info/METADATA read out of the wheel with HTTP range
    requests (no full download);
  * unless --no-elf: the first megabytes of vllm/_C*.so (abi3, cpython-tagged or _C_stable_libtorch),
    inflated, and the libcudart.so.N names found there (the DT_NEEDED strings: CUDA major linked);
  * unless --no-torch: https://pypi.org/pypi/torch/json and the metadata of one Linux x86_64 torch
    wheel per pinned torch version, for the CUDA runtime pin that wheel carries;
  * unless --no-build: the release's sdist (streamed; setup.py, .buildkite/release-pipeline.yaml and
    the CUDA install docs kept) and vllm/envs.py from the wheel. From 0.6.2 on setup.py appends
    +cuXYZ to the version of every build whose nvcc differs from the main CUDA version (setup.py
    MAIN_CUDA_VERSION, later the VLLM_MAIN_CUDA_VERSION default in vllm/envs.py, unless the pipeline
    step overrides it), so the suffix-less PyPI wheel is the x86_64 pipeline build with that CUDA
    version: `cuda`. `min_compute_capability` is the release's own docs statement.
It prints, newest first, `version`, `torch`, `requires_python`, `python`, `abi3`, `linux_x86_64_tag`,
`cuda_major_linked`, `cuda`, `min_compute_capability`, `torch_pypi_cuda_pin` as TOML fragments (or
everything, with the raw pipeline/docs facts, as JSON with --json). `other_cuda*`, docs-page facts for
releases without docs in their sdist, and notes are not produced: they need the cross-checks described in
compat/notes/vllm-tensorrt-libraries.md. Standard library only; nothing runs at import.
"""

from __future__ import annotations

import argparse
import email.parser
import json
import re
import struct
import sys
import tarfile
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
_EXT_RE = re.compile(r"vllm/_C(?:_stable_libtorch)?\.(?:abi3|cpython-\d+-x86_64-linux-gnu)\.so")
_UA = {"User-Agent": "cudadoctor-compat-tool"}


def _open(url: str, headers: dict[str, str], timeout: int):
    if not url.startswith("https://"):
        raise ValueError(f"refusing non-https URL: {url}")
    req = urllib.request.Request(url, headers=headers)  # noqa: S310 - https only, checked above
    return urllib.request.urlopen(req, timeout=timeout)  # noqa: S310


def _get(url: str) -> bytes:
    with _open(url, _UA, 60) as resp:
        return resp.read()


def _range(url: str, spec: str) -> bytes:
    with _open(url, {**_UA, "Range": "bytes=" + spec}, 120) as resp:
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
    rest = url[url.index("packages/") + len("packages/") :]
    if rest.startswith("packages/"):
        rest = rest[len("packages/") :]
    return [absolute, FILES_HOST + "packages/" + rest]


def _zip_entries(url: str) -> list[tuple[str, int, int, int]]:
    """(name, method, compressed size, local header offset) for every member of a remote zip."""
    tail = _range(url, "-1048576")
    eocd = tail.rfind(b"PK\x05\x06")
    if eocd < 0:
        raise ValueError("no end-of-central-directory record")
    cd_size, cd_off = struct.unpack("<II", tail[eocd + 12 : eocd + 20])
    if 0xFFFFFFFF in (cd_size, cd_off):
        z64 = tail.rfind(b"PK\x06\x06")
        cd_size, cd_off = struct.unpack("<QQ", tail[z64 + 40 : z64 + 56])
    cd = _range(url, f"{cd_off}-{cd_off + cd_size - 1}")
    out, pos = [], 0
    while pos < len(cd) and cd[pos : pos + 4] == b"PK\x01\x02":
        (method,) = struct.unpack("<H", cd[pos + 10 : pos + 12])
        csize, usize = struct.unpack("<II", cd[pos + 20 : pos + 28])
        nlen, elen, clen = struct.unpack("<HHH", cd[pos + 28 : pos + 34])
        (loff,) = struct.unpack("<I", cd[pos + 42 : pos + 46])
        name = cd[pos + 46 : pos + 46 + nlen].decode("utf-8", "replace")
        extra = cd[pos + 46 + nlen : pos + 46 + nlen + elen]
        i = 0
        while i + 4 <= len(extra):  # zip64 extended information
            hid, hlen = struct.unpack("<HH", extra[i : i + 4])
            body, j = extra[i + 4 : i + 4 + hlen], 0
            if hid == 1:
                if usize == 0xFFFFFFFF:
                    (usize,) = struct.unpack("<Q", body[j : j + 8])
                    j += 8
                if csize == 0xFFFFFFFF:
                    (csize,) = struct.unpack("<Q", body[j : j + 8])
                    j += 8
                if loff == 0xFFFFFFFF:
                    (loff,) = struct.unpack("<Q", body[j : j + 8])
            i += 4 + hlen
        out.append((name, method, csize, loff))
        pos += 46 + nlen + elen + clen
    return out


def _read_member(url: str, entry: tuple[str, int, int, int], limit: int | None = None) -> bytes:
    """Inflate one member (or only its first `limit` compressed bytes)."""
    _, method, csize, loff = entry
    want = csize if limit is None else min(csize, limit)
    blob = _range(url, f"{loff}-{loff + 30 + 4096 + want}")
    nlen, elen = struct.unpack("<HH", blob[26:30])
    data = blob[30 + nlen + elen : 30 + nlen + elen + want]
    return zlib.decompressobj(-15).decompress(data) if method == 8 else data


def wheel_metadata(f: dict):
    """PEP 658 sidecar (<wheel>.metadata) when served, else METADATA read from the wheel itself."""
    raw, last = None, None
    for url in _file_urls(f):
        try:
            raw = _get(url + ".metadata").decode("utf-8", "replace")
            break
        except urllib.error.HTTPError as exc:
            last = exc
    if raw is None:
        for url in _file_urls(f):
            try:
                entry = next(e for e in _zip_entries(url) if re.fullmatch(r"[^/]+\.dist-info/METADATA", e[0]))
                raw = _read_member(url, entry).decode("utf-8", "replace")
                break
            except (urllib.error.URLError, ValueError, StopIteration) as exc:
                last = exc
    if raw is None:
        raise RuntimeError(f"no metadata for {f['filename']}: {last}")
    return email.parser.Parser().parsestr(raw, headersonly=True)


def linked_cudart(f: dict, nbytes: int = 8_000_000) -> list[str]:
    """libcudart.so.N names in the first `nbytes` (compressed) of the wheel's main extension module(s)."""
    url = _file_urls(f)[0]
    found: set[str] = set()
    for entry in _zip_entries(url):
        if _EXT_RE.fullmatch(entry[0]):
            raw = _read_member(url, entry, nbytes)
            found |= {m.decode() for m in re.findall(rb"libcudart\.so\.\d+", raw)}
    return sorted(found)


def _is_linux_x86_64(filename: str) -> bool:
    m = _WHEEL_RE.match(filename)
    return bool(m) and "x86_64" in m.group("plat") and "linux" in m.group("plat")


def _dep_name(line: str) -> str:
    return re.split(r"[ ;<>=!~\[(]", line, maxsplit=1)[0].lower().replace("_", "-")


def torch_cuda_pins(versions: set[str]) -> dict[str, str]:
    """torch version -> the CUDA runtime requirement of its Linux x86_64 PyPI wheel (as written)."""
    data = json.loads(_get(PYPI_JSON.format(name="torch")))
    out = {}
    for v in sorted(versions):
        wheels = [f for f in data["releases"].get(v, []) if _is_linux_x86_64(f["filename"])]
        if not wheels:
            continue
        md = wheel_metadata(wheels[0])
        for line in md.get_all("Requires-Dist") or []:
            name = _dep_name(line)
            if name in ("nvidia-cuda-runtime-cu11", "nvidia-cuda-runtime-cu12", "cuda-toolkit"):
                req = re.sub(r"[\s()]", "", line.split(";")[0])
                out[v] = re.sub(r"\[[^\]]*\]", "", req)  # drop extras: cuda-toolkit[cublas,...]==13.0.2
                break
    return out


_SDIST_WANT = re.compile(
    r"^[^/]+/(setup\.py|\.buildkite/release-pipeline\.yaml"
    r"|docs/.*(?:installation\.(?:rst|md)|installation/gpu[^/]*cuda[^/]*\.md|installation/gpu/cuda\.inc\.md))$"
)


def sdist_files(f: dict) -> dict[str, str]:
    """Stream one sdist and keep setup.py, the release pipeline and the CUDA install docs (path -> text)."""
    out = {}
    with _open(_file_urls(f)[0], _UA, 600) as resp, tarfile.open(fileobj=resp, mode="r|gz") as tf:
        for m in tf:
            if m.isfile() and _SDIST_WANT.match(m.name):
                out[m.name.split("/", 1)[1]] = tf.extractfile(m).read().decode("utf-8", "replace")
    return out


def _wheel_envs_main_cuda(f: dict) -> str | None:
    url = _file_urls(f)[0]
    entry = next((e for e in _zip_entries(url) if e[0] == "vllm/envs.py"), None)
    if entry is None:
        return None
    text = _read_member(url, entry).decode("utf-8", "replace")
    m = re.search(
        r'"VLLM_MAIN_CUDA_VERSION":\s*lambda:\s*\(?\s*os\.getenv\("VLLM_MAIN_CUDA_VERSION", ""\)\.lower\(\)'
        r'\s*or\s*"([0-9.]+)"',
        text,
    )
    return m.group(1) if m else None


def _pipeline_builds(text: str) -> list[dict]:
    """Wheel build steps of .buildkite/release-pipeline.yaml: label, arch, CUDA_VERSION, VLLM_MAIN_CUDA_VERSION."""
    builds = []
    for step in re.split(r"\n\s*- (?:label|group|block):", text):
        label = step.strip().split("\n")[0].strip().strip('"')
        cuda = re.findall(r"CUDA_VERSION=([0-9.]+)", step)
        if "wheel" not in label.lower() or not cuda or not label.lower().startswith("build"):
            continue
        main = re.findall(r"VLLM_MAIN_CUDA_VERSION=([0-9.]+)", step)
        arch = "aarch64" if re.search(r"arm64|aarch64", label, re.I) else "x86_64"
        builds.append(
            {
                "label": label,
                "arch": arch,
                "cuda": ".".join(cuda[0].split(".")[:2]),
                "main_override": main[0] if main else None,
            }
        )
    return builds


def build_info(files: list[dict], wheel: dict | None) -> dict:
    """CUDA of the default (no +cuXYZ suffix) Linux x86_64 build, docs facts, from the release's own sdist/wheel."""
    sd = [f for f in files if f["packagetype"] == "sdist"]
    if not sd:
        return {}
    src = sdist_files(sd[0])
    info: dict = {}
    setup = src.get("setup.py", "")
    suffix_active = bool(re.search(r"^\s+version \+= f\"\{sep\}cu\{cuda_version_str\}\"", setup, re.M))
    m = re.search(r'^MAIN_CUDA_VERSION\s*=\s*"([0-9.]+)"', setup, re.M)
    main = m.group(1) if m else (_wheel_envs_main_cuda(wheel) if wheel else None)
    info["main_cuda_default"] = main
    builds = _pipeline_builds(src.get(".buildkite/release-pipeline.yaml", ""))
    info["pipeline_builds"] = builds
    x86 = [b for b in builds if b["arch"] == "x86_64"]
    if suffix_active and main and any(b["cuda"] == (b["main_override"] or main) for b in x86):
        info["default_x86_64_cuda"] = next(b["cuda"] for b in x86 if b["cuda"] == (b["main_override"] or main))
    info["nondefault_x86_64_cuda"] = sorted({b["cuda"] for b in x86 if b["cuda"] != (b["main_override"] or main)})
    docs = "\n".join(v for k, v in sorted(src.items()) if k.startswith("docs/"))
    cc = sorted(set(re.findall(r"compute capability ([0-9.]+) or higher", docs)))
    info["docs_min_cc"] = cc[0] if len(cc) == 1 else None
    info["docs_compiled_with"] = sorted(set(re.findall(r"binaries are compiled (?:with|on) CUDA ([0-9.]+)", docs)))
    also = re.findall(r"We also provide vLLM binaries compiled with ([^\n:]*)", docs)
    info["docs_also_cuda"] = sorted(set(re.findall(r"([0-9]+\.[0-9]+)", also[0]))) if also else []
    gh = r"https://github\.com/vllm-project/vllm/releases/download/[^\s\"'`]+"
    info["docs_wheel_url"] = sorted(set(re.findall(gh, docs)))
    idx = r"--extra-index-url\s+\"?(https://download\.pytorch\.org/whl/cu[^\s\"`]+)"
    info["docs_torch_index"] = sorted(set(re.findall(idx, docs)))
    return info


def collect(
    name: str = "vllm", minimum: str = "0.4.0", elf: bool = True, torch: bool = True, build: bool = True
) -> list[dict]:
    data = json.loads(_get(PYPI_JSON.format(name=name)))
    out = []
    for ver, files in data["releases"].items():
        if not files or _version_key(ver) < _version_key(minimum):
            continue
        wheels = [f for f in files if f["packagetype"] == "bdist_wheel" and _is_linux_x86_64(f["filename"])]
        rpy = sorted({f["requires_python"] or "" for f in files})
        rec: dict = {"version": ver, "wheels": [], "requires_python": rpy}
        pythons, abi3, torch_pins, interesting, cudart = set(), False, set(), set(), set()
        for f in wheels:
            m = _WHEEL_RE.match(f["filename"])
            abi3 = abi3 or m.group("abi") == "abi3"
            for t in m.group("py").split("."):
                if t.startswith("cp"):
                    pythons.add(t[2] + "." + t[3:])
            md = wheel_metadata(f)
            for line in md.get_all("Requires-Dist") or []:
                dep = _dep_name(line)
                if dep == "torch" and "extra ==" not in line:
                    spec = line[len("torch") :].split(";")[0].strip().strip("()").replace(" ", "")
                    torch_pins.add(spec)
                if dep in _TORCH_FAMILY or dep.startswith("nvidia-"):
                    interesting.add(line)
            if elf:
                cudart |= set(linked_cudart(f))
            rec["wheels"].append(
                {
                    "filename": f["filename"],
                    "requires_python_metadata": md.get("Requires-Python"),
                    "upload_time": f["upload_time"],
                    "yanked": f["yanked"],
                }
            )
        rec["python"] = sorted(pythons, key=lambda s: tuple(int(x) for x in s.split(".")))
        rec["abi3"] = abi3
        rec["torch"] = sorted(torch_pins)
        rec["deps_of_interest"] = sorted(interesting)
        rec["cudart"] = sorted(cudart)
        if build:
            rec["build"] = build_info(files, wheels[0] if wheels else None)
        out.append(rec)
    if torch:
        pins = torch_cuda_pins({p[2:] for r in out for p in r["torch"] if p.startswith("==")})
        for r in out:
            if len(r["torch"]) == 1 and r["torch"][0][2:] in pins:
                r["torch_pypi_cuda_pin"] = pins[r["torch"][0][2:]]
    out.sort(key=lambda r: _version_key(r["version"]), reverse=True)
    return out


def _toml(recs: list[dict]) -> str:
    lines = []
    for r in recs:
        lines += ["[[release]]", f'version = "{r["version"]}"']
        if len(r["torch"]) == 1:
            lines.append(f'torch = "{r["torch"][0]}"')
        else:
            lines.append(f"# torch pins differ between wheels or are absent: {r['torch']}")
        if len(r["requires_python"]) == 1:
            lines.append(f'requires_python = "{r["requires_python"][0]}"')
        lines.append("python = [" + ", ".join(f'"{p}"' for p in r["python"]) + "]")
        lines.append(f"abi3 = {'true' if r['abi3'] else 'false'}")
        plats = sorted({_WHEEL_RE.match(w["filename"]).group("plat") for w in r["wheels"]})
        if len(plats) == 1:
            lines.append(f'linux_x86_64_tag = "{plats[0]}"')
        majors = sorted({int(s.rsplit(".", 1)[1]) for s in r.get("cudart", [])})
        if len(majors) == 1:
            lines.append(f"cuda_major_linked = {majors[0]}")
        if r.get("build", {}).get("default_x86_64_cuda"):
            lines.append(f'cuda = "{r["build"]["default_x86_64_cuda"]}"')
        if r.get("build", {}).get("docs_min_cc"):
            lines.append(f'min_compute_capability = "{r["build"]["docs_min_cc"]}"')
        if "torch_pypi_cuda_pin" in r:
            lines.append(f'torch_pypi_cuda_pin = "{r["torch_pypi_cuda_pin"]}"')
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min", default="0.4.0")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-elf", action="store_true", help="skip the libcudart scan of the extension module")
    ap.add_argument("--no-torch", action="store_true", help="skip the torch CUDA runtime pin lookup")
    ap.add_argument("--no-build", action="store_true", help="skip the sdist read (default CUDA build, docs facts)")
    args = ap.parse_args(argv)
    recs = collect("vllm", args.min, elf=not args.no_elf, torch=not args.no_torch, build=not args.no_build)
    sys.stdout.write(json.dumps(recs, indent=1) + "\n" if args.json else _toml(recs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
