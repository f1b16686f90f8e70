"""The first run's ELF scan, spread over helper processes while the doctor imports its checks.

A run whose file probes' memo holds takes the loader's view from it (:mod:`.memo`). The first run (an empty user
cache) lists every package directory at the depths wheels use and reads the dynamic section of every shared
object: on the H200 image (torch, JAX and NVIDIA's wheels) 1,091 directories and 599 objects, about 75 ms of the
loader view's 105 ms, on one core, while the other fifteen wait. Listings and dynamic sections are pure functions
of the files (:mod:`.scancache` keys them by mtime, and by size and mtime), so a few helpers — ``python -S -I``,
the standard library and cudadoctor's scan modules only — started with the command read them, each for a share of
the packages, and the loader view's :class:`~.scancache.ScanCache` adopts their answers as if from its cache file.
It still stats every directory it lists, so anything changed since a helper looked is read again; a helper that
fails or is late costs only its own work, which the doctor then does itself.

Started only by the fast ``check`` and ``suggest`` of this machine (no ``--root``, ``--from`` or ``--python``),
only while there is neither a memo nor a scan cache (the first run), and only with a second CPU. A run that finds
its memo imports nothing of this but :func:`start`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cudadoctor.runner import StartedCommand

__all__ = ["PRESCAN_BOOTSTRAP", "helpers_for", "prescan_main", "site_dirs", "start", "stop", "take"]

PRESCAN_BOOTSTRAP = "; ".join(
    (
        "import sys",
        "sys.path.append(sys.argv[1])",
        "from cudadoctor.probes.prescan import prescan_main",
        "prescan_main(sys.argv[2:])",
    )
)
#: Helpers at most: four share the H200 image's scan evenly enough; more cost more starts than they save.
MAX_HELPERS = 4
#: Seconds the doctor waits for the helpers (together ~20 ms on an H200) before reading the files itself.
TIMEOUT = 2.0
#: Shared objects a helper reads at most (the loader view's own bound).
_LIMIT = 5000

_STARTED: list[StartedCommand] = []


def helpers_for(cpus: int) -> int:
    """How many helpers to start on a machine with ``cpus`` usable CPUs: none on one (they would only take turns
    with the doctor), else one fewer than the CPUs, at most :data:`MAX_HELPERS`."""
    return max(0, min(MAX_HELPERS, cpus - 1))


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))  # a container's or taskset's share, not the host's count
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def site_dirs(path: list[str], env: Mapping[str, str]) -> list[str]:
    """The site directories the loader view will most likely scan: this interpreter's, and the active virtual or
    conda environment's (the packages probe's default target). A guess is enough: a directory missed is scanned
    by the doctor, one too many costs a helper's time."""
    candidates = [p for p in path if os.path.basename(p.rstrip("/")) in ("site-packages", "dist-packages")]
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        lib = os.path.join(env.get(variable, ""), "lib")
        try:
            names = sorted(os.listdir(lib)) if lib.startswith("/") else []
        except OSError:
            names = []
        candidates += [os.path.join(lib, n, "site-packages") for n in names if n.startswith("python3")]
    out: list[str] = []
    for candidate in candidates:
        real = os.path.realpath(candidate)
        if real not in out and os.path.isdir(real):
            out.append(real)
    return out


def start(env: Mapping[str, str], path: list[str] | None = None) -> None:
    """Start the helpers for a first run of this machine's ``check`` (nothing when the scan cache exists);
    ``path``: where the site directories are looked for (``sys.path``)."""
    from cudadoctor.probes.memo import enabled, memo_path

    if getattr(sys, "frozen", False) or not sys.executable:
        return
    if enabled(env) and os.path.exists(memo_path("/")):
        return  # a later run: the memo most likely holds the whole view
    from cudadoctor.probes.scancache import cache_path

    if os.path.exists(cache_path()):
        return  # the scan cache has the answers
    parts = helpers_for(_cpus())
    sites = site_dirs(sys.path if path is None else path, env) if parts else []
    if not sites:
        return
    from cudadoctor.runner import StartedCommand, start_command

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for part in range(parts):
        started = start_command([sys.executable, "-S", "-I", "-c", PRESCAN_BOOTSTRAP, root, str(part), str(parts),
                                 *sites])  # fmt: skip
        if isinstance(started, StartedCommand):
            _STARTED.append(started)


def prescan_main(argv: list[str]) -> None:
    """The helper: ``<part> <parts> <site>...``; print the listings and dynamic sections of its share as JSON."""
    from cudadoctor.probes import scancache

    try:
        part, parts = int(argv[0]), int(argv[1])
    except (IndexError, ValueError):
        return
    cache = scancache.ScanCache(load=False)
    for site in argv[2:]:
        found, _more = scancache.site_objects(cache, site, _LIMIT, part, parts)
        for rel in found:
            cache.dynamic(f"{site}/{rel}")
    sys.stdout.write(json.dumps({"dirs": cache.dirs, "files": cache.files}, separators=(",", ":")))


def take() -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The helpers' listings and dynamic sections, together; None when none was started. A helper that failed,
    is late or said something else adds nothing."""
    if not _STARTED:
        return None
    dirs: dict[str, Any] = {}
    files: dict[str, Any] = {}
    while _STARTED:
        result = _STARTED.pop(0).result(TIMEOUT)
        try:
            document = json.loads(result.stdout) if result.ok else None
        except (ValueError, RecursionError):
            document = None
        if isinstance(document, dict):
            if isinstance(document.get("dirs"), dict):
                dirs.update(document["dirs"])
            if isinstance(document.get("files"), dict):
                files.update(document["files"])
    return dirs, files


def stop() -> None:
    """End helpers whose answers nobody took (a command that never reached the loader view)."""
    while _STARTED:
        _STARTED.pop().stop()
