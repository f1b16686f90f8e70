"""Read members of a wheel on PyPI without downloading the wheel (HTTP range requests on its zip).

How to run (needs network access to pypi.org and files.pythonhosted.org; standard library only):

    python3 compat/tools/wheel_member.py torch 2.10.0 --wheel 'cp312-.*manylinux.*x86_64' --list 'torch/__init__.py'
    python3 compat/tools/wheel_member.py torch 2.10.0 --wheel 'cp312-.*manylinux.*x86_64' --read torch/__init__.py
    python3 compat/tools/wheel_member.py tensorflow 2.17.0 --wheel 'cp311-.*manylinux.*x86_64' \
        --strings 'tensorflow/libtensorflow_framework.so.2' --grep 'lib[a-z_]+\\.so'

--list prints the members matching a glob with their sizes; --read prints one member (text);
--strings prints the NUL/non-printable-delimited strings (>= 4 characters) of one member, optionally only
those matching --grep, like strings(1). The wheel's URL is printed first (the row's evidence).

The file list comes from the PEP 691 JSON simple index (https://pypi.org/simple/<pkg>/); --wheel is a
regular expression on the wheel file name (the first match, in index order, is used). Only the zip central
directory and the asked member's bytes are transferred. Nothing runs at import.
"""

from __future__ import annotations

import argparse
import fnmatch
import io
import json
import re
import sys
import urllib.request
import zipfile

SIMPLE = "https://pypi.org/simple/{}/"
UA = "cudadoctor-compat-tools/1 (+stdlib urllib)"
TIMEOUT = 300


def _request(url: str, headers: dict[str, str] | None = None) -> bytes:
    if not url.startswith("https://"):
        raise ValueError(f"refusing a non-https URL: {url}")
    req = urllib.request.Request(url, headers={"User-Agent": UA, **(headers or {})})  # noqa: S310 - https only
    with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:  # noqa: S310 - https only
        return resp.read()


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


def find_wheel(pkg: str, version: str, pattern: str) -> dict:
    data = json.loads(_request(SIMPLE.format(pkg), {"Accept": "application/vnd.pypi.simple.v1+json"}))
    wanted = re.compile(pattern)
    prefix = re.sub(r"[-_.]+", "_", pkg).lower() + "-" + version + "-"
    for file in data["files"]:
        name = file["filename"]
        if name.endswith(".whl") and name.lower().startswith(prefix) and wanted.search(name):
            return file
    raise SystemExit(f"no wheel of {pkg} {version} matches {pattern!r}")


def open_wheel(file: dict) -> zipfile.ZipFile:
    url = file["url"].split("#")[0]
    return zipfile.ZipFile(io.BufferedReader(_RangeFile(url, int(file["size"])), buffer_size=1 << 20))


def strings(data: bytes, minimum: int = 4) -> list[str]:
    return [m.decode("ascii") for m in re.findall(rb"[\x20-\x7e]{%d,}" % minimum, data)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package")
    parser.add_argument("version")
    parser.add_argument("--wheel", default=r"manylinux.*x86_64", help="regex on the wheel file name")
    parser.add_argument("--list", metavar="GLOB")
    parser.add_argument("--read", metavar="MEMBER")
    parser.add_argument("--strings", metavar="MEMBER")
    parser.add_argument("--grep", metavar="REGEX")
    args = parser.parse_args(argv)
    file = find_wheel(args.package, args.version, args.wheel)
    print("# wheel:", file["url"].split("#")[0], file=sys.stderr)
    with open_wheel(file) as zf:
        if args.list:
            for info in zf.infolist():
                if fnmatch.fnmatchcase(info.filename, args.list):
                    print(info.file_size, info.filename)
        if args.read:
            sys.stdout.write(zf.read(args.read).decode("utf-8"))
        if args.strings:
            grep = re.compile(args.grep) if args.grep else None
            for text in strings(zf.read(args.strings)):
                if grep is None or grep.search(text):
                    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
