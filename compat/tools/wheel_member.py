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
import zipfile

# The HTTP helpers are torch_from_pypi's (this folder is on sys.path when either script runs).
from torch_from_pypi import SIMPLE, _RangeFile, _request


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
