"""``--python``: which interpreter's packages ``check`` examines, validated before anything is probed.

A missing path, a directory that is not an environment, or a file that is not an interpreter is a usage
error (exit 2): examining nothing and printing "No issues found" would be a false all-clear. Nothing is
run to decide: a name and a file type are enough (``python``, ``python3.12``, ``pypy3`` …). A virtual
environment or conda directory stands for its interpreter (``bin/python``).
"""

from __future__ import annotations

import os
import re

from cudadoctor.errors import UsageError

__all__ = ["resolve_python"]

#: Interpreter file names: CPython (python, python3, python3.12, python3.13t) and PyPy.
_INTERPRETER = re.compile(r"^(python|pypy)(\d+(\.\d+)?)?[dmt]?$")
#: Where an environment directory keeps its interpreter (venv, virtualenv, conda).
_IN_ENV = ("bin/python", "bin/python3")
_VERSION = re.compile(r"^\d+(\.\d+)*$")


def _looks_like_interpreter(path: str) -> bool:
    names = {os.path.basename(path), os.path.basename(os.path.realpath(path))}
    return any(_INTERPRETER.match(name) for name in names)


def resolve_python(path: str, root: str | None = None) -> str:
    """The interpreter ``--python path`` names (as seen inside ``root`` when given), or UsageError."""
    where = os.path.join(root, path.lstrip("/")) if root is not None else path
    if _VERSION.match(path) and not os.path.exists(where):
        raise UsageError(
            f"--python {path!r}: check takes an interpreter's path (e.g. /usr/bin/python{path} or a venv "
            f"directory), not a version; `suggest --python {path}` plans for a version"
        )
    if os.path.isdir(where):
        for rel in _IN_ENV:
            if os.path.isfile(os.path.join(where, rel)):
                return os.path.join(path, rel)
        raise UsageError(f"--python {path}: a directory without bin/python (not a virtualenv or conda env)")
    if not os.path.exists(where):
        raise UsageError(f"--python {path}: no such file")
    if not os.path.isfile(where) or not _looks_like_interpreter(where):
        raise UsageError(f"--python {path}: not a Python interpreter (expected a file named python, python3.X …)")
    return path
