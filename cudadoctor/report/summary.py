"""Arranging facts into the report's categories: one line each, details underneath.

This module decides *what* a report says about each component (driver, GPUs, toolkit …); the
renderers only decide how it looks. It holds no judgement of compatibility: a category is marked
``ok`` when its facts were read, ``absent`` when the component is not installed, and ``warn``
when a probe could not read something (the reason is shown).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import field

from packaging.version import Version

from cudadoctor.checks.findings import Finding, Status
from cudadoctor.facts.derive import gpu_evidence
from cudadoctor.facts.model import Facts, HostInfo, InstalledPackage, LibraryCopy, ProbeError, Source, SourceKind
from cudadoctor.facts.registry import category_of_error
from cudadoctor.record import mutable_record, record

__all__ = ["Category", "Line", "Mark", "categories"]


class Mark(str, enum.Enum):
    OK = "ok"  #: found, and every check about it that applied passed
    UNKNOWN = "unknown"  #: found, but a check about it could not judge it (never shown as ok)
    WARN = "warn"
    FAIL = "fail"
    ABSENT = "absent"


_MARK_RANK = {Mark.ABSENT: 0, Mark.OK: 0, Mark.UNKNOWN: 1, Mark.WARN: 2, Mark.FAIL: 3}
_FINDING_MARK = {Status.UNKNOWN: Mark.UNKNOWN, Status.WARN: Mark.WARN, Status.FAIL: Mark.FAIL, Status.ERROR: Mark.FAIL}


@record
class Line:
    """One detail under a category."""

    text: str
    level: str = "info"  #: ``info`` (shown with -v), ``warn`` or ``fail`` (always shown)
    source: str | None = None
    #: commands that fix it, printed in full under the line
    commands: tuple[str, ...] = ()


@mutable_record
class Category:
    """One part of the summary (the driver, the GPUs …): its title, headline, mark and lines."""

    key: str
    title: str
    headline: str
    mark: Mark = Mark.OK
    lines: list[Line] = field(default_factory=list)


#: Frameworks named in the Python category's headline, in this order, when installed.
_HEADLINE_PACKAGES = ("torch", "vllm", "jax", "tensorflow", "tensorrt", "cupy", "onnxruntime-gpu")


def _src(source: Source | None) -> str | None:
    return str(source) if source else None


def _v(version: Version | None) -> str:
    return str(version) if version is not None else "unknown"


#: The root's kind as the host category says it (probes/origin.py decides it; checks/hostfix.py acts on it).
_ROOT_KINDS = {
    "host": "root: a host's own system (a driver fix reboots it, never deletes a library; --root-kind overrides)",
    "image": "root: a container image (a driver fix removes the libraries baked into it; --root-kind overrides)",
    "unknown": "root: unknown, taken for a host (a driver fix deletes nothing; --root-kind host|image says which)",
}


def _host(facts: Facts) -> Category:
    h = facts.host
    parts = [h.distro or h.os, h.arch]
    host_root = facts.root_kind is not None and facts.root_kind.kind == "host"  # a host's disk under --root, say
    if h.container and h.container.in_container and not host_root:
        parts.append(f"in a container ({h.container.runtime or 'unknown runtime'})")
    if h.wsl:
        parts.append("WSL2")
    if facts.platform is not None:
        parts.append(f"on {facts.platform.name}")
    if h.apple_silicon:
        parts.append("Apple Silicon: GPU work runs on Metal (MPS / MLX), not CUDA")
    if h.jetson_l4t and h.jetson_l4t.startswith("R38"):  # JetPack 7: aligned with SBSA (cudadoctor.planning)
        parts.append(f"NVIDIA Jetson (L4T {h.jetson_l4t}, JetPack 7): SBSA, the same CUDA 13 as Arm servers")
    elif h.jetson_l4t:
        parts.append(f"NVIDIA Jetson (L4T {h.jetson_l4t}): CUDA comes with JetPack, not from PyPI's server wheels")
    if h.rocm_version or h.amdgpu_driver:
        rocm = f"ROCm {h.rocm_version}" if h.rocm_version else "ROCm not found"
        parts.append(f"AMD GPU stack ({rocm}{', amdgpu driver loaded' if h.amdgpu_driver else ''})")
    if h.intel_gpus or h.intel_gpu_driver:
        parts.append(_intel(h))
    cat = Category("host", "Host", ", ".join(p for p in parts if p))
    if h.kernel:
        cat.lines.append(Line(f"kernel {h.kernel}"))
    if h.glibc:
        cat.lines.append(Line(f"glibc {h.glibc}"))
    if h.container and h.container.markers:
        cat.lines.append(Line("container markers: " + ", ".join(h.container.markers)))
    if facts.root_kind is not None:
        cat.lines.append(Line(_ROOT_KINDS.get(facts.root_kind.kind, facts.root_kind.kind),
                              source=_src(facts.root_kind.source)))  # fmt: skip
    if facts.platform is not None:
        cat.lines.append(
            Line(f"{facts.platform.name}: the NVIDIA driver is the platform's", source=_src(facts.platform.source))
        )
    for var in h.env:
        cat.lines.append(Line(f"{var.name}={var.value}", source=f"env: {var.name}"))
    return cat


def _intel(h: HostInfo) -> str:
    """The Intel GPUs: discrete ones get PyTorch's XPU builds (``suggest``), an integrated one alone CPU builds."""
    from cudadoctor.facts.derive import intel_gpu_discrete

    discrete = [g for g in h.intel_gpus if intel_gpu_discrete(g)]
    driver = f", driver {h.intel_gpu_driver}" if h.intel_gpu_driver else ""
    if discrete:
        return f"Intel GPU ({', '.join(discrete)}{driver}): torch runs on it through PyTorch's XPU builds"
    if h.intel_gpus:
        return f"integrated Intel GPU only ({', '.join(h.intel_gpus)}{driver})"
    return f"Intel GPU driver {h.intel_gpu_driver} loaded (no Intel display device read under /sys/class/drm)"


def _driver(facts: Facts) -> Category:
    d = facts.driver
    if d is None:
        return Category("driver", "NVIDIA driver", "not found", Mark.ABSENT)
    head = f"{_v(d.version)}"
    if d.kernel_module:
        head += f" ({d.kernel_module.flavour} kernel module)"
    head += f", supports CUDA {d.cuda_api}" if d.cuda_api else ", CUDA API version unknown"
    cat = Category("driver", "NVIDIA driver", head)
    for r in d.readings:
        said = []
        if r.version:
            said.append(f"driver {r.version}")
        if r.cuda_api:
            said.append(f"CUDA {r.cuda_api}")
        text = " and ".join(said) or "no version"
        if r.detail:
            text += f" ({r.detail})"
        cat.lines.append(Line(text, source=_src(r.source)))
    for f in d.libcuda_files:
        where = "on the loader's path" if f.on_search_path else "not on the loader's path"
        cat.lines.append(Line(f"libcuda {f.version or '(unversioned)'} [{f.kind}] {f.path} — {where}"))
    if d.loaded_libcuda:
        cat.lines.append(Line(f"the loader picks {d.loaded_libcuda} for libcuda.so.1"))
    return cat


def _gpus(facts: Facts) -> Category:
    gpus = facts.gpus
    evidence = gpu_evidence(gpus, facts.visible, facts.health) if not gpus else None
    if evidence is not None:  # no source named a model, but a device node or the PCI bus shows GPUs
        cat = Category("gpus", "GPUs", f"present, model unknown ({evidence.strongest()})", Mark.UNKNOWN)
    elif not gpus:
        cat = Category("gpus", "GPUs", "none found", Mark.ABSENT)
    else:
        names: dict[str, int] = {}
        for g in gpus:
            label = g.name + (f" (compute capability {g.compute_capability})" if g.compute_capability else "")
            names[label] = names.get(label, 0) + 1
        cat = Category("gpus", "GPUs", ", ".join(f"{n}× {label}" for label, n in names.items()))
        for g in gpus:
            extra = []
            if g.memory_mib:
                extra.append(f"{g.memory_mib} MiB")
            if g.mig_mode:
                shown = f", {g.mig_devices} MIG device(s)" if g.mig_devices is not None else ""
                extra.append(f"MIG {g.mig_mode}{shown}" + (f" ({g.mig_source.where})" if g.mig_source else ""))
            if g.pci_bus_id:
                extra.append(g.pci_bus_id)
            cc_src = f"; compute capability from {g.compute_capability_source}" if g.compute_capability_source else ""
            cat.lines.append(
                Line(
                    f"GPU {g.index}: {g.name}" + (f" ({', '.join(extra)})" if extra else "") + cc_src,
                    source=_src(g.source),
                )
            )
    v = facts.visible
    if v.cuda_visible_devices is not None:
        cat.lines.append(Line(f"CUDA_VISIBLE_DEVICES={v.cuda_visible_devices!r}", source="env: CUDA_VISIBLE_DEVICES"))
    if v.nvidia_visible_devices is not None:
        cat.lines.append(
            Line(f"NVIDIA_VISIBLE_DEVICES={v.nvidia_visible_devices!r}", source="env: NVIDIA_VISIBLE_DEVICES")
        )
    if v.device_nodes:
        cat.lines.append(Line("device nodes: " + " ".join(v.device_nodes)))
    return cat


def _toolkit(facts: Facts) -> Category:
    if not facts.toolkits and facts.nvcc is None:
        return Category("toolkit", "CUDA toolkit", "not installed (not needed to run pip wheels)", Mark.ABSENT)
    parts = [f"{_v(t.version)} at {t.root}" for t in facts.toolkits]
    if facts.nvcc:
        parts.append(f"nvcc {_v(facts.nvcc.version)} on PATH")
    cat = Category("toolkit", "CUDA toolkit", "; ".join(parts))
    for t in facts.toolkits:
        text = f"{t.root}: {_v(t.version)}"
        if t.real_path and t.real_path != t.root:
            text += f" (-> {t.real_path})"
        if t.found_via:
            text += f", found via {', '.join(t.found_via)}"
        if t.nvcc_version:
            text += f", nvcc {t.nvcc_version}"
        cat.lines.append(Line(text, source=_src(t.source)))
    if facts.nvcc:
        cat.lines.append(
            Line(
                f"nvcc {facts.nvcc.path}: release {facts.nvcc.release}, {_v(facts.nvcc.version)}",
                source=_src(facts.nvcc.source),
            )
        )
    return cat


def _loader_lines(facts: Facts) -> list[Line]:
    """The loader's view (-v): for each CUDA library a package needs, the copy that loads and what it hides."""
    view = facts.loader
    if view is None:
        return []
    head = f"loader's view: {len(view.needs)} CUDA libraries needed, {view.scanned} objects read; cache: {view.cache}"
    lines = [Line(head)]
    lines += [Line(f"  LD_PRELOAD {f.path}" + (f" {f.version}" if f.version else "")) for f in view.preloaded]
    for need in view.needs:
        loaded = need.loaded
        version = f", {loaded.version}" if loaded and loaded.version else ""
        where = f"{loaded.path} ({loaded.via}{version})" if loaded else "NOT FOUND"
        text = f"  {need.package}: {need.soname} -> {where}"
        if need.shadowed:
            hidden = (f"{s.path}{' ' + str(s.version) if s.version else ''}" for s in need.shadowed[:3])
            text += "; hides " + ", ".join(hidden)
        if need.foreign:  # ld.so skips them: named so that "NOT FOUND" beside a file there is not a riddle
            text += "; skips " + ", ".join(need.foreign[:3])
        lines.append(Line(text))
    if view.unread:
        total = max(view.unread_total, len(view.unread))
        lines.append(Line(f"  not read ({total}): " + "; ".join(view.unread[:3]) + ("; …" if total > 3 else "")))
    return lines


def _wheels(facts: Facts) -> Category:
    cat = _wheel_category(facts)
    cat.lines.extend(_loader_lines(facts))
    return cat


def _wheel_category(facts: Facts) -> Category:
    w = facts.cuda_wheels
    if w is None:
        return Category("wheels", "CUDA from pip wheels", "none installed", Mark.ABSENT)
    head = f"{w.layout} layout"
    if w.runtime_version:
        head += f", CUDA runtime {w.runtime_version}"
    if w.toolkit_meta:
        head += f", cuda-toolkit {w.toolkit_meta}"
    cat = Category("wheels", "CUDA from pip wheels", head)
    for c in w.components:
        cat.lines.append(
            Line(f"{c.distribution} {c.version}" + (f" in {c.lib_dir}" if c.lib_dir else ""), source=_src(c.source))
        )
    return cat


def _whose(copy: LibraryCopy, packages: dict[str, InstalledPackage]) -> str:
    """`` bundled by torch`` / `` pinned by torch``: the package a copy belongs to, when one does."""
    if copy.bundled_by:
        return f" bundled by {copy.bundled_by}"
    wanted = copy.distribution
    pins = sorted(
        p.name for p in packages.values()
        if wanted and p.name != wanted and any(_requirement_name(r) == wanted for r in p.cuda_requires)
    )  # fmt: skip
    return f" pinned by {', '.join(pins)}" if pins else ""


def _requirement_name(line: str) -> str:
    return re.split(r"[\s;\[(<>=!~]", line.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _copies(
    key: str,
    title: str,
    copies: Iterable[LibraryCopy],
    absent: str,
    packages: dict[str, InstalledPackage] | None = None,
) -> Category:
    copies = list(copies)
    if not copies:
        return Category(key, title, absent, Mark.ABSENT)
    packages = packages or {}
    head = ", ".join(
        f"{_v(c.version)} ({c.origin}{' ' + c.distribution if c.distribution else ''}{_whose(c, packages)})"
        for c in copies
    )
    cat = Category(key, title, head)
    for c in copies:
        text = f"{_v(c.version)} {c.origin}{_whose(c, packages)}: {c.path}"
        if c.cuda_major:
            text += f" (for CUDA {c.cuda_major})"
        cat.lines.append(Line(text, source=_src(c.source)))
        cat.lines.extend(Line(f"  {p}") for p in c.lib_paths[:6])
    return cat


def _package_label(p: InstalledPackage) -> str:
    label = f"{p.name} {p.version}"
    if p.torch_build and p.torch_build.version and p.torch_build.version != p.version:
        label = f"{p.name} {p.torch_build.version}"
    if p.cuda_build:
        label += f" (CUDA {p.cuda_build})"
    elif p.cuda_variant:
        label += f" ({p.cuda_variant})"
    return label


def _python(facts: Facts) -> Category:
    py = facts.python
    if py is None and not facts.packages:
        return Category("python", "Python packages", "no Python environment found", Mark.ABSENT)
    shown = [_package_label(facts.packages[n]) for n in _HEADLINE_PACKAGES if n in facts.packages]
    env = f"Python {_v(py.version)} ({py.kind} {py.prefix or py.executable})" if py else "Python (interpreter unknown)"
    head = env + (": " + ", ".join(shown) if shown else ": no GPU framework installed")
    cat = Category("python", "Python packages", head)
    if py is not None:
        cat.lines.append(
            Line(f"interpreter {py.executable}, chosen by {py.chosen_by or 'default'}", source=_src(py.source))
        )
    for name in sorted(facts.packages):
        p = facts.packages[name]
        text = _package_label(p)
        if p.cuda_variant_source:
            text += f" — CUDA build from {p.cuda_variant_source}"
        cat.lines.append(Line(text, source=_src(p.source)))
    return cat


def _health(facts: Facts) -> Category:
    # Shown only when examined: --no-health, an image root and older snapshots have no health facts.
    h = facts.health
    if h is None:
        return Category("health", "GPU health", "not examined", Mark.ABSENT)
    if h.nvml_error and not h.gpus:
        cat = Category("health", "GPU health", f"NVML did not answer: {h.nvml_error}", Mark.UNKNOWN)
    else:
        took = f" in {h.query_ms:.0f} ms" if h.query_ms is not None else ""
        cat = Category("health", "GPU health", f"{len(h.gpus)} GPU(s) queried through NVML{took}")
    for g in h.gpus:
        parts = [f"GPU {g.index} {g.pci_bus_id or ''}".rstrip()]
        if g.ecc_current is not None:
            parts.append(f"ECC {'on' if g.ecc_current else 'off'}, {g.ecc_uncorrected_volatile} uncorrected")
        elif "ecc_mode" in g.unsupported:
            parts.append("no ECC on this SKU")
        if g.remap_pending is not None:
            parts.append(f"remap pending {'yes' if g.remap_pending else 'no'}")
        if g.pcie_width_current is not None:
            parts.append(f"PCIe gen {g.pcie_gen_current}/{g.pcie_gen_max} x{g.pcie_width_current}/{g.pcie_width_max}")
        if g.util_gpu_percent is not None:
            parts.append(f"utilization.gpu {g.util_gpu_percent} %")
        cat.lines.append(Line(", ".join(parts), source="api: NVML"))
    host = h.host
    if host.kernel_log_error:
        cat.lines.append(Line(f"kernel log not read: {host.kernel_log_error}"))
    else:
        cat.lines.append(Line(f"kernel log: {len(host.xids)} Xid line(s)", source="file: /dev/kmsg"))
    cat.lines.append(Line(f"PCI: {len(host.pci_functions)} NVIDIA GPU function(s), {host.nvswitches} NVSwitch(es)"))
    return cat


def categories(facts: Facts, findings: Iterable[Finding] = ()) -> list[Category]:
    """The report's categories, in display order, with probe errors and findings attached."""
    cats = [
        _host(facts),
        _driver(facts),
        _gpus(facts),
        *([_health(facts)] if facts.health is not None else []),
        _toolkit(facts),
        _wheels(facts),
        _copies("cudnn", "cuDNN", facts.cudnn, "not installed", facts.packages),
        _copies("nccl", "NCCL", facts.nccl, "not installed", facts.packages),
        _copies("tensorrt", "TensorRT", facts.tensorrt, "not installed"),
        _python(facts),
    ]
    findings = tuple(findings)
    asserted = [f for f in findings if f.category == "requirements" and f.status is not Status.NOT_APPLICABLE]
    if asserted:
        # --require states what this job needs: its verdict is its own line, not a detail of the host.
        met = all(f.status is Status.OK for f in asserted)
        cats.append(Category("requirements", "Requirements (--require)", "all met" if met else "not all met"))
    by_key = {c.key: c for c in cats}
    assumed = _assumed_keys(facts)
    for key in assumed:
        by_key[key].headline += f" (assumed: {assumed[key]})"
    for error in facts.errors:
        key = category_of_error(error.probe)
        if key in assumed:  # what the flag replaced could not be read here, as expected in a build stage
            by_key[key].lines.insert(0, Line(f"not read here: {error.message}", source=error.source))
            continue
        _attach(by_key.get(key, by_key["host"]), error)
    for finding in findings:
        _attach_finding(by_key.get(finding.category, by_key.get("gpus", by_key["host"])), finding)
    return cats


def _assumed_keys(facts: Facts) -> dict[str, str]:
    """The categories whose fact was given on the command line (``--assume-driver``, ``--assume-gpu``)."""
    keys: dict[str, str] = {}
    readings = facts.driver.readings if facts.driver else ()
    if readings and readings[0].source.kind is SourceKind.ASSUMED:
        keys["driver"] = readings[0].source.where
    if facts.gpus and all(g.source.kind is SourceKind.ASSUMED for g in facts.gpus):
        keys["gpus"] = facts.gpus[0].source.where.split()[0]
    return keys


def _attach_finding(cat: Category, finding: Finding) -> None:
    if finding.status in (Status.OK, Status.NOT_APPLICABLE):
        note = "ok" if finding.status is Status.OK else f"not applicable ({finding.reason})"
        cat.lines.append(Line(f"{finding.code} {note}: {finding.summary}"))
        return
    if finding.status is Status.UNKNOWN:
        cat.lines.append(Line(f"{finding.code} could not judge ({finding.reason}): {finding.summary}", level="unknown"))
        if cat.mark in (Mark.OK, Mark.ABSENT):
            cat.mark = Mark.UNKNOWN
        return
    level = "warn" if finding.status is Status.WARN else "fail"
    text = f"{finding.code} {finding.message}"
    commands: tuple[str, ...] = ()
    if finding.remediation:
        text += f" — {finding.remediation.text}"
        commands = finding.remediation.commands
    problems = [line for line in cat.lines if line.level != "info"]
    cat.lines.insert(len(problems), Line(text, level=level, commands=commands))
    mark = _FINDING_MARK[finding.status]
    if _MARK_RANK[mark] > _MARK_RANK[cat.mark] or cat.mark is Mark.ABSENT:
        cat.mark = mark


def _attach(cat: Category, error: ProbeError) -> None:
    # A component that is simply not installed explains its own missing sources: those reasons
    # are details (-v), not warnings. Where the component was found, an unreadable source is.
    if cat.mark is Mark.ABSENT:
        cat.lines.insert(0, Line(f"not read: {error.message}", source=error.source))
        return
    cat.lines.insert(0, Line(f"could not read: {error.message}", level="warn", source=error.source))
    if cat.mark is Mark.OK:
        cat.mark = Mark.WARN
