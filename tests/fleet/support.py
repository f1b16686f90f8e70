"""Helpers shared by the fleet recipe tests: a ``cudadoctor`` command for this checkout, fleet snapshots."""

from __future__ import annotations

import copy
import json
import os
import shlex
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(REPO, "examples")
H200_SNAPSHOT = os.path.join(REPO, "tests", "fixtures", "h200-device", "snapshot.json")


def cudadoctor_bin(directory: str) -> str:
    """A directory holding a ``cudadoctor`` command that runs this checkout with this interpreter.

    The recipes call ``cudadoctor`` by name, as a user's cluster would; the installed entry point may belong to
    another copy (or be absent), so the tests put this one first on PATH.
    """
    bindir = os.path.join(directory, "bin")
    os.makedirs(bindir, exist_ok=True)
    path = os.path.join(bindir, "cudadoctor")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(
            "#!/bin/sh\n"
            f"PYTHONPATH={shlex.quote(REPO)}${{PYTHONPATH:+:$PYTHONPATH}} "
            f'exec {shlex.quote(sys.executable)} -m cudadoctor "$@"\n'
        )
    os.chmod(path, 0o755)  # noqa: S103 - a command
    return bindir


def h200_snapshot(directory: str, name: str, *, cuda_visible_devices: str | None = None) -> str:
    """The real H200 snapshot (tests/fixtures/h200-device), optionally with CUDA_VISIBLE_DEVICES set."""
    with open(H200_SNAPSHOT, encoding="utf-8") as handle:
        document = json.load(handle)
    document = copy.deepcopy(document)
    if cuda_visible_devices is not None:
        document["facts"]["visible"]["cuda_visible_devices"] = cuda_visible_devices
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(document, handle)
    return path
