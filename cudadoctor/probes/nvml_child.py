"""The helper process of a live ``check``: libcuda and NVML queried apart from the doctor's own process.

:func:`cudadoctor.probes.native.start_early` runs ``python -S -I -c <bootstrap> <package root> <0|1>``: an
interpreter without site-packages (so none of their ``.pth`` start-up hooks run) that imports only this
module, :mod:`cudadoctor.probes.nvml_calls`, the NVML binding and, with ``1``, the health query. It prints one
JSON object, ``{"libcuda": …, "nvml": …, "health": …}``, the answers the probes would have got in-process.

Why a process: NVML's init loads libcuda and allocates ~13.5 MB (18 MB of resident memory in all, measured on
an H200), more than the rest of a ``check``; in a helper that memory is never the doctor's, the calls run on
another core while the checks are imported, and a driver call that never returns is ended by killing the helper.
"""

from __future__ import annotations

import json
import sys

__all__ = ["BOOTSTRAP", "main"]

#: The ``-c`` program: the package's root comes first on the path, then this module runs.
BOOTSTRAP = (
    "import sys; sys.path.insert(0, sys.argv[1]); from cudadoctor.probes.nvml_child import main; main(sys.argv[2:])"
)


def main(argv: list[str]) -> None:
    """Print the answers; ``argv[0] == "1"`` adds NVML's health answers."""
    from cudadoctor.probes.nvml_calls import query_libcuda, query_nvml

    # libcuda first: NVML's init loads libcuda too, and the path reported must be the one dlopen picked.
    out: dict[str, object] = {"libcuda": query_libcuda(), "nvml": query_nvml()}
    if argv[:1] == ["1"]:
        from cudadoctor.probes.nvml_health import query_health

        out["health"] = query_health()
    sys.stdout.write(json.dumps(out))
    sys.stdout.flush()
