"""Read what compat/triton.toml holds from PyPI: the ptxas each triton wheel bundles, and the triton torch pins.

How to run (needs network access to pypi.org and files.pythonhosted.org; standard library only):

    python3 compat/tools/triton_from_pypi.py ptxas 3.3.1 3.9.0        # bundled ptxas versions, per release
    python3 compat/tools/triton_from_pypi.py pins 2.7.1 2.15.0         # torch's Requires-Dist triton line

``ptxas`` decompresses each ``bin/ptxas*`` member of the release's cp311 manylinux x86_64 wheel (HTTP range
requests: the zip's central directory and that member only, ~10-20 MB each) and prints the "Cuda compilation
tools, release X.Y, VX.Y.Z" strings in it, with their offsets; nothing is executed. ``pins`` reads
``torch-<v>.dist-info/METADATA`` of torch's cp311 manylinux x86_64 wheel. The wheel's URL is printed first (the
row's evidence). Nothing runs at import.
"""

from __future__ import annotations

import argparse
import re
import sys

# The HTTP helpers are wheel_member's (this folder is on sys.path when the script runs).
from wheel_member import find_wheel, open_wheel

_WHEEL = r"cp311-cp311-manylinux.*x86_64\.whl$"
_RELEASE = re.compile(rb"Cuda compilation tools, release \d+\.\d+, V[\d.]+")


def ptxas(version: str) -> None:
    file = find_wheel("triton", version, _WHEEL)
    print("# wheel:", file["url"].split("#")[0])
    with open_wheel(file) as zf:
        for info in zf.infolist():
            if re.search(r"/bin/ptxas(-blackwell)?$", info.filename):
                data = zf.read(info.filename)
                found = sorted({(m.start(), m.group().decode()) for m in _RELEASE.finditer(data)})
                for offset, text in found:
                    print(version, info.filename, len(data), offset, text)


def pins(version: str) -> None:
    file = find_wheel("torch", version, _WHEEL)
    print("# wheel:", file["url"].split("#")[0])
    with open_wheel(file) as zf:
        meta = zf.read(f"torch-{version}.dist-info/METADATA").decode("utf-8")
    lines = [line.split(":", 1)[1].strip() for line in meta.splitlines() if line.startswith("Requires-Dist:")]
    print(version, [line for line in lines if "triton" in line])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("ptxas", "pins"))
    parser.add_argument("versions", nargs="+")
    args = parser.parse_args(argv)
    for version in args.versions:
        (ptxas if args.what == "ptxas" else pins)(version)
    return 0


if __name__ == "__main__":
    sys.exit(main())
