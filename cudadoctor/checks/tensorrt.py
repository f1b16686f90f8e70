"""CD6xx: TensorRT."""

# CD601  the cuDNN that TensorRT's libnvinfer will open is not an older cuDNN minor than the one the release
#        was built with

from __future__ import annotations

import posixpath
import re

from packaging.version import Version

from cudadoctor.checks._base import CannotJudge, Check, NotApplicable
from cudadoctor.checks.findings import Problem, Remediation, Status
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import InstalledPackage, LoaderView, NeededLibrary
from cudadoctor.facts.requires import exact_pins
from cudadoctor.fixes import Install, Pin
from cudadoctor.fixes.build import pip
from cudadoctor.record import record

__all__ = ["CD601", "cudnn_minor_older"]


#: TensorRT's distributions on PyPI (compat/tensorrt.toml ``packages``): tensorrt, tensorrt-libs, tensorrt-cu12-libs …
_TENSORRT = re.compile(r"^tensorrt(?:-cu\d+)?(?:-libs)?$")


def cudnn_minor_older(built: Version, loaded: Version) -> bool:
    """A cuDNN of the same major but an older minor than the one an application was built against.

    cuDNN's API compatibility (https://docs.nvidia.com/deeplearning/cudnn/latest/developer/forward-compatibility.html):
    patch releases x.y.* serve each other, a minor release serves applications built against the same or an
    earlier minor, and an application built against x.z is not guaranteed to work with x.y when z > y.
    Another major is another soname (``libcudnn.so.8`` / ``.so.9``), which the loader's view resolves separately.
    """
    return loaded.major == built.major and loaded.release[:2] < built.release[:2]


def _nvinfer_cudnn(loader: LoaderView | None) -> list[NeededLibrary]:
    """The cuDNN shims TensorRT's libnvinfer opens by name (compat/runtime_libraries.toml ``load`` rows)."""
    return [
        n
        for n in (loader.needs if loader else ())
        if n.soname.startswith("libcudnn.so.") and posixpath.basename(n.needer).startswith("libnvinfer")
    ]


@record
class _Judged:
    """What one libnvinfer's cuDNN came to: a problem (with its fix command, if any), or why it could not be judged,
    or neither (fine, or CD304's: resolves nowhere)."""

    problem: str | None = None
    fix: str | None = None
    unjudged: str | None = None


def _judge(need: NeededLibrary, packages: dict[str, InstalledPackage], matrix: CompatMatrix) -> _Judged:
    trt = packages.get(need.package)
    row = matrix.tensorrt_release(trt.version) if trt is not None else None
    label = f"{need.package} {trt.version}" if trt is not None else need.package
    loaded = need.loaded
    if loaded is None:
        return _Judged()  # resolves nowhere: CD304's finding
    if row is None or row.cudnn is None:
        return _Judged(unjudged=f"the cuDNN {label} was built with (not in compat/tensorrt.toml)")
    if loaded.version is None:
        return _Judged(unjudged=f"the version of the cuDNN {label} will load ({loaded.path})")
    if not cudnn_minor_older(row.cudnn, loaded.version):
        return _Judged()
    pin = _pinned_by(loaded.distribution, packages) if loaded.distribution else None
    text = (
        f"{label}'s {posixpath.basename(need.needer)} will open {need.soname} {loaded.version} from "
        f"{posixpath.dirname(loaded.path)} ({loaded.distribution or loaded.via}"
        + (f", pinned by {pin}" if pin else "")
        + f"); TensorRT {row.trt_build or row.version} was built with cuDNN {row.cudnn}, and an older cuDNN minor is "
        f"not guaranteed to serve it (TensorRT logs 'TensorRT was linked against cuDNN {row.cudnn} but loaded cuDNN "
        f"{loaded.version.major}.{loaded.version.minor}.{loaded.version.micro}')"
    )
    # The pip command that upgrades the loaded cuDNN wheel, unless another package pins it (then that package's
    # release decides, and the text says so).
    built = row.cudnn
    fix = None
    if loaded.distribution is not None and pin is None:
        wanted = Pin(loaded.distribution, f">={built.major}.{built.minor},<{built.major + 1}")
        fix = pip(Install((wanted,), upgrade=True))
    return _Judged(problem=text, fix=fix)


def _pinned_by(distribution: str, packages: dict[str, InstalledPackage]) -> str | None:
    """The installed package that pins ``distribution`` exactly (torch's ``nvidia-cudnn-cu11==8.5.0.96``)."""
    return next((pkg.name for pkg in packages.values() if distribution in exact_pins(pkg)), None)


class CD601(Check):
    """The cuDNN TensorRT will load is not an older cuDNN minor than the one the release was built with.

    What it checks: from the loader's view, the cuDNN that TensorRT's libnvinfer opens by name at run time
    (``libcudnn.so.8`` for the tensorrt 8.5 wheels, compat/runtime_libraries.toml), resolved through
    LD_LIBRARY_PATH, libnvinfer's own RUNPATH and the copies a framework already loaded (torch preloads its pinned
    cuDNN), against the cuDNN of the release's support matrix (compat/tensorrt.toml ``cudnn``). A cuDNN of the same
    major but an older minor is a warning; a patch difference is fine. Could not judge when the release is not in
    the data.

    Why it matters: cuDNN serves applications built against the same or an older minor only; TensorRT then logs
    "TensorRT was linked against cuDNN 8.6.0 but loaded cuDNN 8.5.0". It often runs (NVIDIA/TensorRT#3534), but
    failures with an older cuDNN have been reported ("Could not initialize cudnn, please check cudnn
    installation"), and the copy is usually a framework's pin (torch 1.13 and 2.0 pin cuDNN 8.5.0.96), not a choice.

    How to fix: install a cuDNN of that major at least as new as the build's where libnvinfer finds it first
    (the pip wheel in its RUNPATH, ``nvidia/cudnn/lib``), or a TensorRT release built with the cuDNN you have.
    """

    name = "tensorrt-cudnn-not-older-than-its-build"
    category = "tensorrt"
    severity = Status.WARN

    def check(
        self, packages: dict[str, InstalledPackage], matrix: CompatMatrix, loader: LoaderView | None = None
    ) -> Problem | None:
        needs = _nvinfer_cudnn(loader)
        with_needs = {need.package for need in needs}
        unread = sorted(
            f"{p.name} {p.version}"
            for n, p in packages.items()
            # a metapackage ships no object: nothing to open cuDNN
            if _TENSORRT.match(n) and n not in with_needs and not matrix.installs_no_objects(n, p.version)
        )
        if not needs and not unread:
            raise NotApplicable("no TensorRT package installed")
        problems: list[str] = []
        unjudged: list[str] = []
        commands: list[str] = []
        evidence: dict[str, str] = {}
        for need in needs:
            judged = _judge(need, packages, matrix)
            if judged.unjudged:
                unjudged.append(judged.unjudged)
            if judged.problem and need.loaded is not None:
                problems.append(judged.problem)
                commands += [judged.fix] if judged.fix else []
                evidence[f"{need.package}: {need.soname}"] = f"{need.loaded.path} ({need.loaded.via})"
        if unread:  # a TensorRT package beside the judged one, whose libnvinfer's cuDNN the data does not say
            unjudged.append(
                f"which cuDNN the libnvinfer of {', '.join(unread)} opens (not in compat/runtime_libraries.toml)"
            )
        if not problems:
            if unjudged:
                raise CannotJudge("; ".join(sorted(set(unjudged))))
            return None
        return Problem(
            "; ".join(problems),
            evidence,
            Remediation(
                "Install a cuDNN of the same major at least as new as the one TensorRT was built with, where "
                "libnvinfer finds it first; where a framework pins the older cuDNN, upgrade that framework to a "
                "release pinning a newer one, or install the TensorRT release built for the cuDNN you have.",
                tuple(dict.fromkeys(commands)),
            ),
        )
