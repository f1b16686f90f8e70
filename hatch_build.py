"""Wheel build hook: ship each compat/ table parsed, as JSON beside its TOML (:mod:`cudadoctor.data.compiled`).

``pip install`` runs nothing of ours after unpacking, so without this the first ``cudadoctor check`` after an
install parses the TOML tables (pure-Python ``tomllib``, tens of milliseconds); with it, that run reads JSON like
every later one. The TOML stays the source: each copy names the size and CRC-32 of the bytes it was parsed from,
and a copy that does not match its TOML is ignored at run time.
Hatchling's build hook interface: https://hatch.pypa.io/latest/plugins/build-hook/reference/
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the build environment of Python 3.10 has tomli (pyproject's build requires)
    import tomli as tomllib


def _compiled(root: str) -> Any:
    """cudadoctor/data/compiled.py of the tree being built (its imports are the standard library and two
    stdlib-only modules), without importing the rest of cudadoctor into the build environment."""
    sys.path.insert(0, root)
    try:
        spec = importlib.util.spec_from_file_location(
            "_cudadoctor_compiled", os.path.join(root, "cudadoctor", "data", "compiled.py")
        )
        if spec is None or spec.loader is None:
            raise RuntimeError("cudadoctor/data/compiled.py is missing from the tree being built")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(root)


class CompatJsonHook(BuildHookInterface):  # type: ignore[type-arg, misc, unused-ignore]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        compiled = _compiled(self.root)
        self._out = tempfile.mkdtemp(prefix="cudadoctor-compat-json-")
        source_dir = os.path.join(self.root, "compat")
        for name in sorted(os.listdir(source_dir)):
            if not name.endswith(".toml"):
                continue
            with open(os.path.join(source_dir, name), "rb") as handle:
                source = handle.read()
            try:
                text = compiled.prebuilt_text(source, tomllib.loads(source.decode("utf-8")))
            except TypeError:
                continue  # a value JSON cannot hold: that table is parsed at run time
            target = os.path.join(self._out, os.path.basename(compiled.prebuilt_path(name)))
            with open(target, "w", encoding="utf-8") as handle:
                handle.write(text)
            build_data["force_include"][target] = f"cudadoctor/compat/{os.path.basename(target)}"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        out = getattr(self, "_out", None)
        if out:
            shutil.rmtree(out, ignore_errors=True)
