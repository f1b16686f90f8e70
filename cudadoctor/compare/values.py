"""What ``compare`` compares on each node, and how strictly.

Values are read straight from a snapshot's or report's JSON document (``facts``), never by decoding
the whole model: a fleet of 10,000 reports must compare in seconds. Every value read goes through the
codec's decoder for its model type and every list read is bounded as ``check --from`` bounds it
(:func:`cudadoctor.facts.codec.decode_fast`, ``MAX_ITEMS``), so a value ``check --from`` refuses is refused
here too; a node holding one is named, not counted as agreeing. Each compared fact has a policy:

* ``match``: every node of a pool must have the same value (the NCCL, cuDNN, cuBLAS and libcuda that load
  and the NCCL network plugin, NVML answering for the GPUs, the torch build and its CUDA variant, the CUDA
  runtime major, Python X.Y);
* ``branch``: the same driver branch (the major number: 550.54.15 and 550.90.07 are one branch);
* ``fewer``: the GPU count: a node with fewer GPUs than the majority of its pool has lost some;
* ``pool``: not judged but splitting nodes into pools compared separately (GPU model, MIG layout);
* ``fleet``: judged across every node before pools.

"That loads" is runtime truth where the document has it: the library file each framework's child process
mapped (``check --deep`` reports), else the copy ``LD_PRELOAD`` or the loader's search puts first (the
loader view of a snapshot, or the ``LD_PRELOAD`` variable), else the copy a framework pins.
"""

from __future__ import annotations

import enum
import functools
import posixpath
import re
import shlex
import types
import typing
import unicodedata
from collections.abc import Mapping
from dataclasses import field
from typing import Any

from cudadoctor.errors import SnapshotError
from cudadoctor.facts.codec import MAX_ITEMS, decode_fast, field_types
from cudadoctor.record import record

__all__ = ["FACTS", "MAX_ITEMS", "MAX_TEXT", "CompareFact", "Policy", "Reading", "node_values", "read_node"]

#: The longest text compared or shown: a GPU name, a version, a path is far shorter; a 60 MB "version" is
#: input to refuse (it would be echoed into every output, issue #27), not to compare.
MAX_TEXT = 512


class Policy(str, enum.Enum):
    MATCH = "match"
    BRANCH = "branch"
    POOL = "pool"
    FLEET = "fleet"
    FEWER = "fewer"


@record
class CompareFact:
    """A fact compare reads: its key, its title and the policy that judges a difference in it."""

    key: str
    title: str
    policy: Policy


FACTS: tuple[CompareFact, ...] = (
    CompareFact("gpu_model", "GPU model", Policy.POOL),
    # judged across the whole fleet, before pools: a node that lost its driver or GPUs would otherwise be a
    # pool of its own, and its own majority
    CompareFact("gpus_visible", "GPUs and driver visible", Policy.FLEET),
    # judged within the pool of its model: a node that lost one of its 8 GPUs would otherwise be a pool of
    # its own (7x), and pass
    CompareFact("gpu_count", "GPU count", Policy.FEWER),
    CompareFact("mig_layout", "MIG layout", Policy.POOL),
    # a node whose GPUs were found only by nvidia-smi or /proc while its peers' NVML answered: monitoring,
    # health checks and DCGM see nothing there
    CompareFact("nvml", "NVML answers", Policy.MATCH),
    CompareFact("driver_branch", "driver branch", Policy.BRANCH),
    CompareFact("driver", "driver version", Policy.MATCH),
    CompareFact("nccl", "NCCL that loads", Policy.MATCH),
    CompareFact("nccl_net_plugin", "NCCL network plugin", Policy.MATCH),
    CompareFact("torch", "torch build", Policy.MATCH),
    CompareFact("cuda_runtime_major", "CUDA runtime major", Policy.MATCH),
    CompareFact("cudnn", "cuDNN that loads", Policy.MATCH),
    CompareFact("cublas", "cuBLAS that loads", Policy.MATCH),
    CompareFact("libcuda", "libcuda that loads", Policy.MATCH),
    CompareFact("python", "Python", Policy.MATCH),
)

#: The driver's patch version may differ within a branch without harm (rolling upgrades); it is shown
#: but only the branch is judged, so ``driver`` is informational unless a baseline pins it.
INFORMATIONAL = frozenset({"driver"})


@record
class Reading:
    """One node's document as compare reads it."""

    values: dict[str, str | None]
    #: fact -> the command that undoes, on this node, what made another copy load (LD_PRELOAD, LD_LIBRARY_PATH)
    fixes: dict[str, str] = field(default_factory=dict)
    #: the first value the reader refused (wrong type, not a version, too long, too many items); None: all read
    problem: str | None = None
    collected_at: str | None = None  #: when the facts were gathered (ISO 8601), as the document says


# --- reading through the model's types --------------------------------------------------------------------


def _strip_optional(tp: Any) -> Any:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        options = [t for t in typing.get_args(tp) if t is not type(None)]
        return options[0] if len(options) == 1 else Any
    return tp


@functools.cache
def _type_at(path: tuple[str, ...]) -> Any:
    """The model type of the value at ``path`` under ``facts`` (``#`` stands for any list index or dict key)."""
    tp: Any = None
    for key in path:
        if tp is None:
            tp = field_types()[key]
            continue
        tp = _strip_optional(tp)
        origin = typing.get_origin(tp)
        if origin is tuple:
            tp = typing.get_args(tp)[0]
        elif origin is dict:
            tp = typing.get_args(tp)[1]
        else:
            tp = field_types(tp)[key]
    return _strip_optional(tp)  # a null is absent before any decoding: the value, when there, has this type


def _dotted(path: tuple[str | int, ...]) -> str:
    out = "facts"
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else f".{key}" if key.isprintable() else f"[{key!r}]"
    return out


#: (model type, JSON text) -> the value the decoder built from it (versions, enums), across the nodes of one run
_DECODED: dict[tuple[Any, str], Any] = {}
_DECODED_MAX = 4096
_TEXTS: dict[Any, str] = {}  #: a decoded value -> its text, likewise


class _At:
    """An object or list item of the facts, where reads start: its path (for messages), the same path with ``#``
    for indexes and dict keys (its model type), and the JSON value itself."""

    __slots__ = ("path", "raw", "typed")

    def __init__(self, path: tuple[str | int, ...], typed: tuple[str, ...], raw: Any) -> None:
        self.path, self.typed, self.raw = path, typed, raw


_ROOT_TYPED: tuple[str, ...] = ()


class _Reader:
    """The facts compare reads, each value decoded as ``check --from`` decodes it; the first refusal is kept.

    A read names a path from the facts (``r.text("driver", "version")``) or from an item another read returned
    (``r.text(gpu, "name")``, ``gpu`` from ``r.items("gpus")``).
    """

    def __init__(self, facts: Mapping[str, Any]) -> None:
        self.root = _At((), _ROOT_TYPED, facts)
        self.problem: str | None = None
        self.env: dict[str, str | None] | None = None  #: host.env by name, read once
        self.preload: list[str] | None = None  #: LD_PRELOAD's entries, split once
        self.dirs: dict[_At, set[str]] = {}  #: a library copy's directories, once read
        self.lists: dict[tuple[Any, ...], list[_At]] = {}  #: items() by where they were asked, once read
        #: (framework, mapped file, its short name) of every GPU framework's child process (check --deep)
        self.mapped: list[tuple[_At, _At, Any]] | None = None

    def _refuse(self, message: str) -> None:
        if self.problem is None:
            self.problem = message

    def _find(self, args: tuple[Any, ...]) -> tuple[Any, _At, tuple[Any, ...]]:
        """(the JSON value at ``args``, where the path started, the keys after it); the value None when absent."""
        first = args[0]
        start, keys = (first, args[1:]) if first.__class__ is _At else (self.root, args)
        raw = start.raw
        for key in keys:
            if raw.__class__ is not dict:
                self._refuse(f"{_dotted((*start.path, *keys))}: its parent is not an object")
                return None, start, keys
            raw = raw.get(key)
            if raw is None:
                break
        return raw, start, keys

    def present(self, *path: Any) -> bool:
        return self._find(path)[0] is not None

    def value(self, *path: Any) -> Any:
        """The value at ``path`` decoded to its model type (a Version, a str …), None when absent or refused."""
        first = path[0]
        if first.__class__ is _At and len(path) == 2 and first.raw.__class__ is dict:
            start, keys = first, (path[1],)  # the common read: a field of a list's item
            raw = first.raw.get(path[1])
        else:
            raw, start, keys = self._find(path)
        if raw is None:
            return None
        tp = _type_at(start.typed + keys)
        if raw.__class__ is str:
            if tp is str:  # what the decoder does for a text field, without its dispatch
                return raw if len(raw) <= MAX_TEXT else self._too_long(start, keys, raw)
            known = _DECODED.get((tp, raw))  # a fleet's nodes hold the same versions: each is parsed once
            if known is not None:
                return known
        try:
            try:
                value = decode_fast(tp, raw, "", max_items=MAX_ITEMS)
            except SnapshotError:  # decoded again only to name the path in the message
                value = decode_fast(tp, raw, _dotted((*start.path, *keys)), max_items=MAX_ITEMS)
        except SnapshotError as exc:
            self._refuse(str(exc))
            return None
        except RecursionError:
            self._refuse(f"{_dotted((*start.path, *keys))}: nested too deeply")
            return None
        if isinstance(value, str) and len(value) > MAX_TEXT:
            return self._too_long(start, keys, value)
        if raw.__class__ is str and len(raw) <= MAX_TEXT:
            if len(_DECODED) >= _DECODED_MAX:
                _DECODED.clear()
            _DECODED[(tp, raw)] = value
        return value

    def _too_long(self, start: _At, keys: tuple[Any, ...], value: str) -> None:
        where = _dotted((*start.path, *keys))
        self._refuse(f"{where}: {len(value):,} characters, more than compare reads ({MAX_TEXT})")

    def text(self, *path: Any) -> str | None:
        value = self.value(*path)
        if value is None or value.__class__ is str:
            return _clean(value) if value is not None else None
        shown = _TEXTS.get(value)  # str(Version) costs as much as parsing it
        if shown is None:
            if len(_TEXTS) >= _DECODED_MAX:
                _TEXTS.clear()
            shown = _TEXTS[value] = _clean(str(value)) or ""
        return shown or None

    def items(self, *path: Any) -> list[_At]:
        """A list's items (the list bounded as ``check --from`` bounds it); [] when absent."""
        known = self.lists.get(path)
        if known is not None:
            return known
        raw, start, keys = self._find(path)
        out: list[_At] = []
        if raw is None:
            pass
        elif raw.__class__ is not list:
            self._refuse(f"{_dotted((*start.path, *keys))}: expected a list")
        elif len(raw) > MAX_ITEMS:
            where = _dotted((*start.path, *keys))
            self._refuse(f"{where}: {len(raw):,} items, more than any machine has ({MAX_ITEMS:,})")
        else:
            base, typed = (*start.path, *keys), (*start.typed, *keys, "#")
            out = [_At((*base, i), typed, item) for i, item in enumerate(raw)]
        self.lists[path] = out
        return out

    def entry(self, path: tuple[str, ...], key: str) -> _At | None:
        """A dict's entry ``key`` (the dict bounded), None when absent."""
        raw, start, keys = self._find(path)
        if raw is None:
            return None
        if raw.__class__ is not dict:
            self._refuse(f"{_dotted((*start.path, *keys))}: expected an object")
            return None
        if len(raw) > MAX_ITEMS:
            where = _dotted((*start.path, *keys))
            self._refuse(f"{where}: {len(raw):,} entries, more than any machine has ({MAX_ITEMS:,})")
            return None
        value = raw.get(key)
        return _At((*path, key), (*path, "#"), value) if value is not None else None


def _clean(value: str) -> str | None:
    # a name is compared as people read it: zero-width and other format characters, and runs of spaces,
    # must not put two nodes with the same GPU or version into two groups
    if value.isascii() and value.isprintable() and "  " not in value:
        return value.strip() or None
    cleaned = " ".join("".join(c for c in unicodedata.normalize("NFKC", value) if c.isprintable()).split())
    return cleaned or None


# --- the facts ----------------------------------------------------------------------------------------------


def _gpus(r: _Reader) -> dict[str, str | None]:
    gpus = r.items("gpus")
    names = sorted({name for g in gpus if (name := r.text(g, "name"))})
    mig = [g for g in gpus if r.value(g, "mig_mode") == "Enabled"]
    sources = {r.value(g, "source", "where") for g in gpus}
    return {
        "nvml": ("yes" if sources == {"nvml"} else "no") if gpus else None,
        "gpu_model": " + ".join(names) if names else None,
        "gpu_count": str(len(gpus)),
        "mig_layout": f"{len(mig)} GPU(s) in MIG mode" if mig else "MIG off",
    }


def _canon_dir(path: str) -> str:
    """A file's directory comparable across the usual aliases (a merged /usr: /usr/lib is /lib; a venv's lib64)."""
    directory = posixpath.dirname(posixpath.normpath(path))
    if directory.startswith("/usr/lib"):
        directory = directory[len("/usr") :]
    return directory.replace("/lib64/python", "/lib/python")


class _Copy(typing.NamedTuple):
    version: str | None
    origin: str
    item: _At  #: the LibraryCopy in the facts, to read its library files when needed
    directory: str | None = None  #: canonical directory of its library files, when known without reading them


def _copies(r: _Reader, library: str) -> list[_Copy]:
    """The installed copies of ``nccl`` / ``cudnn`` (LibraryCopy) or ``cublas`` (a CUDA wheel component)."""
    out: list[_Copy] = []
    if library in ("nccl", "cudnn"):
        for c in r.items(library):
            out.append(_Copy(r.text(c, "version"), r.text(c, "origin") or "unknown", c))
    elif library == "cublas":
        for c in r.items("cuda_wheels", "components"):
            raw = c.raw
            if raw.__class__ is dict and not str(raw.get("distribution")).startswith("nvidia-cublas"):
                continue  # only the cuBLAS wheel's fields are decoded
            name = r.text(c, "distribution") or ""
            lib_dir = r.text(c, "lib_dir")
            if name.startswith("nvidia-cublas"):
                out.append(_Copy(r.text(c, "version"), "pip", c, _canon_dir(f"{lib_dir}/x") if lib_dir else ""))
    return out


def _copy_at(r: _Reader, copies: list[_Copy], path: str) -> _Copy | None:
    """The copy whose library files are in ``path``'s directory (read only when a loaded file is matched)."""
    here = _canon_dir(path)
    for copy in copies:
        if copy.directory is not None:
            if copy.directory == here:
                return copy
        else:
            dirs = r.dirs.get(copy.item)
            if dirs is None:
                dirs = r.dirs[copy.item] = {
                    _canon_dir(p) for lp in r.items(copy.item, "lib_paths") if (p := r.text(lp))
                }
            if here in dirs:
                return copy
    return None


def _shown(version: str | None, origin: str) -> str:
    return f"{version or 'unknown version'} ({origin})"


_SONAME = {"nccl": "libnccl.so", "cudnn": "libcudnn.so", "cublas": "libcublas.so", "libcuda": "libcuda.so"}
_MAPPED = {"nccl": "nccl", "cudnn": "cudnn", "cublas": "cublas", "libcuda": "cuda"}
_MAPPED_NAMES = frozenset(_MAPPED.values())


_ENV_READ = frozenset({"LD_PRELOAD", "LD_LIBRARY_PATH", "NCCL_NET_PLUGIN", "NCCL_NET"})


def _env(r: _Reader, name: str) -> str | None:
    if r.env is None:
        r.env = {}
        for var in r.items("host", "env"):
            raw = var.raw
            # only the variables compare reads are decoded (a node's env holds dozens)
            if raw.__class__ is not dict or raw.get("name") in _ENV_READ:
                key = r.value(var, "name")
                if isinstance(key, str) and key not in r.env:
                    r.env[key] = r.value(var, "value")
    return r.env.get(name)


def _preload_entries(r: _Reader) -> list[str]:
    if r.preload is None:
        value = _env(r, "LD_PRELOAD")
        # ld.so(8): LD_PRELOAD is a list separated by spaces or colons
        r.preload = [e for e in re.split(r"[\s:]+", value) if e][:MAX_ITEMS] if value else []
    return r.preload


def _fix(r: _Reader, path: str, soname: str) -> str | None:
    """The command that stops ``path`` from winning on this node: LD_PRELOAD without its entry, or
    LD_LIBRARY_PATH without its directory; None when neither put it first."""
    preload = _preload_entries(r)
    kept = [e for e in preload if not posixpath.basename(e).startswith(soname)]
    if len(kept) < len(preload):
        return f"export LD_PRELOAD={shlex.quote(' '.join(kept))}" if kept else "unset LD_PRELOAD"
    search = [e for e in (_env(r, "LD_LIBRARY_PATH") or "").split(":") if e][:MAX_ITEMS]
    here = _canon_dir(path)
    kept = [e for e in search if _canon_dir(f"{e}/x") != here]
    if len(kept) < len(search):
        return f"export LD_LIBRARY_PATH={shlex.quote(':'.join(kept))}" if kept else "unset LD_LIBRARY_PATH"
    return None


def _overridden(library: str, origin: str) -> bool:
    """Whether a copy of this origin loads only because something put it first: the libcuda of a compat or
    stub directory, a library from outside the wheels a framework pins."""
    return origin in ("compat", "stub") if library == "libcuda" else origin != "pip"


def _joined(seen: Mapping[str, str | None]) -> tuple[str | None, str | None]:
    """(every copy seen loading, as one value; the first fix among them); (None, None) when none was seen."""
    if not seen:
        return None, None
    fixes = [f for f in seen.values() if f]
    return "; ".join(sorted(seen)), (fixes[0] if fixes else None)


def _mapped(r: _Reader, library: str, copies: list[_Copy]) -> tuple[str | None, str | None]:
    """(value, fix) from the files the frameworks' child processes mapped (check --deep); (None, None) without."""
    if r.mapped is None:
        r.mapped = [
            (fw, lib, r.value(lib, "name"))
            for fw in r.items("runtime", "frameworks")
            if r.value(fw, "gpu_build") is not False
            for lib in r.items(fw, "libraries")
            # only the libraries compared are decoded (a framework maps a dozen more)
            if (raw := lib.raw).__class__ is not dict or raw.get("name") in _MAPPED_NAMES
        ]
    seen: dict[str, str | None] = {}
    for fw, lib, name in r.mapped:
        if name == _MAPPED[library] and (path := r.text(lib, "path")) is not None:
            copy = _copy_at(r, copies, path)
            origin = r.text(lib, "origin") or "unknown"
            if library == "libcuda":
                value = f"{origin} {r.text(lib, 'suffix')}" if origin == "compat" else origin
            elif copy is not None:
                value, origin = _shown(copy.version, copy.origin), copy.origin
            else:
                reported = r.text(fw, library) if library in ("nccl", "cudnn") else None
                value = _shown(reported or r.text(lib, "suffix"), origin)
            seen.setdefault(value, _fix(r, path, _SONAME[library]) if _overridden(library, origin) else None)
    return _joined(seen)


def _loader_view(r: _Reader, library: str, copies: list[_Copy]) -> tuple[str | None, str | None]:
    """(value, fix) from the loader view of a snapshot: what LD_PRELOAD forces in, else what a framework's
    need resolves to; (None, None) without one."""
    soname = _SONAME[library]
    preloaded: list[tuple[str, str | None]] = []
    if r.present("loader"):
        for f in r.items("loader", "preloaded"):
            if (path := r.text(f, "path")) and posixpath.basename(path).startswith(soname):
                preloaded.append((path, r.text(f, "version")))
    else:  # an older snapshot without the loader view: the variable itself
        preloaded = [(e, None) for e in _preload_entries(r) if posixpath.basename(e).startswith(soname)]
    if preloaded:
        path, version = preloaded[0]
        copy = _copy_at(r, copies, path)
        value = _shown(copy.version if copy else version, copy.origin if copy else "LD_PRELOAD")
        return value, _fix(r, path, soname)
    seen: dict[str, str | None] = {}
    for need in r.items("loader", "needs"):
        package = r.text(need, "package") or ""
        if package.startswith("nvidia-") or not (r.text(need, "soname") or "").startswith(soname):
            continue
        path = r.text(need, "loaded", "path")
        if path is None:
            continue
        copy = _copy_at(r, copies, path)
        via = r.text(need, "loaded", "via") or ""
        origin = copy.origin if copy else ("pip" if r.text(need, "loaded", "distribution") else via)
        value = _shown(copy.version if copy else r.text(need, "loaded", "version"), origin)
        overridden = via in ("LD_LIBRARY_PATH", "LD_PRELOAD") and _overridden(library, origin)
        seen.setdefault(value, _fix(r, path, soname) if overridden else None)
    return _joined(seen)


def _pinned(copies: list[_Copy]) -> str | None:
    """The copy a framework loads when nothing overrides it: the pip wheel a framework pins when there is one,
    else the first other copy. torch and JAX load the cuDNN and NCCL of the nvidia-* wheels they pin before
    anything on the loader's path (their preload of the wheels' libraries), so a pip copy wins when present."""
    known = [c for c in copies if c.version]
    pip = [c for c in known if c.origin == "pip"]
    chosen = (pip or known)[:1]
    return _shown(chosen[0].version, chosen[0].origin) if chosen else None


def _libcuda(r: _Reader) -> str | None:
    """The libcuda the loader picked (a snapshot): ``system``/``driver`` for the driver's own, ``compat X`` for a
    forward-compatibility copy, ``stub``; the driver's version is judged by the branch."""
    loaded = r.text("driver", "loaded_libcuda")
    if loaded is None:
        loaded = next(
            (
                r.text(x, "real")
                for x in r.items("driver", "resolved_libcuda")
                if r.value(x, "soname") == "libcuda.so.1"
            ),
            None,
        )
    if loaded is None:
        return None
    for f in r.items("driver", "libcuda_files"):
        if r.text(f, "path") == loaded:
            kind = r.text(f, "kind") or "unknown"
            return "system" if kind == "driver" else f"compat {r.text(f, 'version')}" if kind == "compat" else kind
    return "system"


def _library(r: _Reader, library: str, fixes: dict[str, str]) -> str | None:
    copies = _copies(r, library)
    value, fix = _mapped(r, library, copies)
    if value is None and library != "libcuda":
        value, fix = _loader_view(r, library, copies)
    if value is None:
        value = _libcuda(r) if library == "libcuda" else _pinned(copies)
    if fix is not None:
        fixes[library] = fix
    return value


def _torch(r: _Reader) -> str | None:
    torch = r.entry(("packages",), "torch")
    if torch is None:
        return None
    build = r.text(torch, "torch_build", "version") or r.text(torch, "version")
    variant = r.text(torch, "cuda_variant")
    return f"{build} ({variant})" if build and variant and "+" not in build else build


def _cuda_major(r: _Reader) -> str | None:
    runtime = r.text("cuda_wheels", "runtime_version")
    if runtime is None and (torch := r.entry(("packages",), "torch")) is not None:
        runtime = r.text(torch, "cuda_build")
    return runtime.split(".")[0] if runtime else None


def read_node(facts: Mapping[str, Any]) -> Reading:
    """Every compared fact of one node, as text (None: the node does not have it), with its fixes.

    The driver is the loaded kernel module's version where it was read (what runs), else the agreed one.
    """
    r = _Reader(facts)
    driver = r.text("driver", "kernel_module", "version") or r.text("driver", "version")
    python = r.text("python", "version")
    fixes: dict[str, str] = {}
    gpus = _gpus(r)
    values: dict[str, str | None] = {
        **gpus,
        "gpus_visible": "yes" if r.items("gpus") and r.present("driver") else "no",
        "driver": driver,
        "driver_branch": driver.split(".")[0] if driver else None,
        "nccl": _library(r, "nccl", fixes),
        "nccl_net_plugin": _clean(_env(r, "NCCL_NET_PLUGIN") or _env(r, "NCCL_NET") or ""),
        "torch": _torch(r),
        "cuda_runtime_major": _cuda_major(r),
        "cudnn": _library(r, "cudnn", fixes),
        "cublas": _library(r, "cublas", fixes),
        "libcuda": _library(r, "libcuda", fixes),
        "python": ".".join(python.split(".")[:2]) if python else None,
    }
    collected = r.value("collected_at")
    return Reading(values, fixes, r.problem, collected if isinstance(collected, str) else None)


def node_values(facts: Mapping[str, Any]) -> dict[str, str | None]:
    """:func:`read_node`'s values alone."""
    return read_node(facts).values
