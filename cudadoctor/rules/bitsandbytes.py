"""Which native library an installed bitsandbytes loads, and whether its package ships it.

bitsandbytes is a Python package around one native library that it loads with ``ctypes`` by full path from its
own directory (``libbitsandbytes_cuda121.so``). From 0.40.1 the name comes from ``torch.version.cuda``
(``12.1`` -> ``cuda121``), from 0.40.1.post1 the ``BNB_CUDA_VERSION`` variable may name another one, before 0.45.0
GPUs below compute capability 7.5 get the ``_nocublaslt`` variant, and from 0.50.0 a missing exact version falls
back to the nearest one of the same CUDA major. A name the wheel does not ship loads ``libbitsandbytes_cpu.so``
("CUDA Setup failed despite GPU being available", up to 0.45.x) or nothing (0.46.0 and later: "Configured CUDA
binary not found"). Each release's behaviour is a ``[[selection]]`` row of compat/bitsandbytes.toml, read from
the wheels' ``cuda_setup/main.py`` / ``cextension.py`` / ``cuda_specs.py``; this module only applies it.
Documented by bitsandbytes at https://huggingface.co/docs/bitsandbytes/main/nonpytorchcuda (the override).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence

from packaging.version import Version

from cudadoctor.data.rows import BitsandbytesSelection, BitsandbytesWheel
from cudadoctor.facts.model import NeededLibrary
from cudadoctor.record import record
from cudadoctor.rules.verdict import Verdict, cannot_judge, fails, fits

__all__ = [
    "JETSON_SOURCE",
    "BnbLoad",
    "bnb_library",
    "bnb_native",
    "cuda_tag",
    "library_cuda",
    "pypi_wheel_on_jetson",
    "release_for_cuda",
]

RULE = "bitsandbytes-library"
#: bitsandbytes' aarch64 wheels on PyPI are built against the server-ARM (SBSA) CUDA toolkit, not Jetson's L4T CUDA;
#: on Jetson (Orin, Xavier, Thor on CUDA 12) they fail at the first kernel ("Error named symbol not found",
#: bitsandbytes#1930); the maintainers' answer is a build on the device or Jetson AI Lab's index (docs PR #1941).
JETSON_SOURCE = "https://github.com/bitsandbytes-foundation/bitsandbytes/pull/1941"
_LIBRARY = re.compile(r"^libbitsandbytes_cuda(\d+)(_nocublaslt)?\.so$")
_CPU = "libbitsandbytes_cpu.so"


def library_cuda(name: str) -> Version | None:
    """The CUDA version a library's name stands for: the last digit is the minor (``cuda121`` -> 12.1,
    ``cuda102`` -> 10.2, ``cuda130`` -> 13.0), as bitsandbytes writes ``f"{major}{minor}"``; None for
    ``libbitsandbytes_cpu.so``, the ROCm and XPU libraries."""
    match = _LIBRARY.match(name)
    if match is None or len(match.group(1)) < 2:
        return None
    digits = match.group(1)
    return Version(f"{digits[:-1]}.{digits[-1]}")


def cuda_tag(cuda: Version) -> str:
    """``12.1`` -> ``121``: how bitsandbytes writes torch.version.cuda into the library name."""
    return f"{cuda.major}{cuda.minor}"


def bnb_native(need: NeededLibrary) -> bool:
    """A need of one of bitsandbytes' native libraries: the package ships one per CUDA version and loads only
    one of them, so the others' needs are not the environment's (judged by CD437 for the one it loads)."""
    return need.package == "bitsandbytes" and posixpath.basename(need.needer).startswith("libbitsandbytes_")


@record
class BnbLoad:
    """What one bitsandbytes release does on this machine."""

    wanted: str  #: the file name it looks for
    by: str  #: what chose it (``torch's CUDA 12.1``, ``BNB_CUDA_VERSION=124``)
    loads: str | None = None  #: the file it loads; None when it loads no CUDA library
    fallback: str | None = None  #: what it loads instead of a missing one (``libbitsandbytes_cpu.so``), if anything
    nearest: bool = False  #: ``loads`` is the nearest version of the same CUDA major, not the exact one


def _override_name(selection: BitsandbytesSelection, name: str, value: str) -> str:
    """The name a release builds from torch's name and the override's value (its ``override_form``)."""
    form = selection.override_form
    if form == "slice":
        return name[:-6] + value + ".so"
    if form == "strip":
        stem = name[: -len(".so")].rstrip("0123456789")
        return f"{stem}{value}.so"
    if form == "substitute":
        return re.sub(r"cuda\d+", f"cuda{value}", name, count=1)
    return f"libbitsandbytes_cuda{value}.so"


def _nearest(libraries: Iterable[str], cuda: Version) -> str | None:
    """0.50.0's fallback: the newest shipped version of the same major not newer than ``cuda``, else the
    oldest newer one of that major."""
    same = sorted(
        (v, n) for n in libraries if (v := library_cuda(n)) is not None and v.major == cuda.major and "_no" not in n
    )
    older = [n for v, n in same if v <= cuda]
    newer = [n for v, n in same if v > cuda]
    return older[-1] if older else newer[0] if newer else None


def _variant(selection: BitsandbytesSelection, highest_cc: str | None) -> str | None:
    """``_nocublaslt`` below the row's compute capability, ``""`` otherwise; None when that is unknown."""
    if selection.nocublaslt_below is None:
        return ""
    if highest_cc is None:
        return None
    below = Version(highest_cc) < Version(selection.nocublaslt_below)
    return "_nocublaslt" if below else ""


def bnb_library(
    selection: BitsandbytesSelection,
    wheel: BitsandbytesWheel,
    torch_cuda: Version,
    override: str | None,
    highest_cc: str | None,
) -> Verdict[BnbLoad]:
    """The library a bitsandbytes release loads beside a CUDA torch on a GPU machine.

    :param torch_cuda: the installed torch's CUDA build (torch.version.cuda).
    :param override: the ``BNB_CUDA_VERSION`` value, None when unset.
    :param highest_cc: the highest compute capability among the GPUs, None when unknown.
    :return: ok with the library it loads; a problem (``detail.loads`` None) when the wheel does not ship the
        name it looks for; could not judge when the release picks by something the files do not say.
    """
    if selection.cuda_from != "torch":
        return cannot_judge(
            RULE,
            f"bitsandbytes {wheel.version} picks its library by the version of the first libcudart.so it finds "
            "(LD_LIBRARY_PATH, the conda prefix, /usr/local/cuda/lib64), not by torch's CUDA: not modelled",
        )
    variant = _variant(selection, highest_cc)
    if variant is None:
        plain = f"libbitsandbytes_cuda{cuda_tag(torch_cuda)}"
        if (f"{plain}.so" in wheel.libraries) != (f"{plain}_nocublaslt.so" in wheel.libraries):
            return cannot_judge(RULE, "the GPUs' compute capability (it picks the _nocublaslt library below 7.5)")
        variant = ""
    name = f"libbitsandbytes_cuda{cuda_tag(torch_cuda)}{variant}.so"
    by = f"torch's CUDA {torch_cuda}"
    overridden = selection.override is not None and override is not None
    if overridden and override is not None:
        if selection.override_digits_only and not override.isdigit():
            return fails(
                RULE,
                f"{selection.override}={override!r}",
                "digits only (bitsandbytes raises RuntimeError for any other value, an empty one included)",
                BnbLoad(f"{selection.override}={override!r}", f"{selection.override}={override!r}"),
            )
        if override:  # releases before 0.50 ignore an empty value
            name, by = _override_name(selection, name, override), f"{selection.override}={override}"
    fallback = _CPU if selection.when_missing == "cpu" and _CPU in wheel.libraries else None
    if name in wheel.libraries:
        return fits(RULE, f"ships {name}", BnbLoad(name, by, name))
    if selection.nearest_same_major and not (overridden and override):
        near = _nearest(wheel.libraries, torch_cuda)
        if near is not None:
            return fits(RULE, f"ships {near}, its nearest to CUDA {torch_cuda}", BnbLoad(name, by, near, nearest=True))
    shipped = sorted({v for n in wheel.libraries if (v := library_cuda(n)) is not None})
    return fails(
        RULE,
        f"bitsandbytes {wheel.version} looks for {name} ({by})",
        f"CUDA {', '.join(str(v) for v in shipped)}" if shipped else "no CUDA library",
        BnbLoad(name, by, None, fallback),
    )


def release_for_cuda(
    wheels: Sequence[BitsandbytesWheel],
    selection_of: dict[Version, BitsandbytesSelection],
    torch_cuda: Version,
    torch_version: Version,
    python: Version | None,
    highest_cc: str | None,
    installed: Version,
) -> BitsandbytesWheel | None:
    """The bitsandbytes release to install for this torch: the oldest one newer than ``installed`` whose wheel
    loads a library for torch's CUDA (with no override) and whose Requires-Dist torch and Requires-Python take
    what is installed; else the newest such release older than it. None when no release does."""
    fitting = []
    for wheel in wheels:
        selection = selection_of.get(wheel.version)
        if selection is None or wheel.version == installed:
            continue
        if wheel.requires_torch is not None and not wheel.requires_torch.contains(
            Version(torch_version.public), prereleases=True
        ):
            continue
        if python is not None and wheel.requires_python is not None and not wheel.requires_python.contains(python):
            continue
        if bnb_library(selection, wheel, torch_cuda, None, highest_cc).is_ok:
            fitting.append(wheel)
    newer = sorted((w for w in fitting if w.version > installed), key=lambda w: w.version)
    older = sorted((w for w in fitting if w.version < installed), key=lambda w: w.version)
    return newer[0] if newer else older[-1] if older else None


def pypi_wheel_on_jetson(l4t: str, torch_cuda: Version) -> Verdict[BnbLoad]:
    """Whether a bitsandbytes wheel from PyPI can run on a Jetson of this L4T release beside torch of this CUDA.

    Problem on L4T before R38 (JetPack 6 and older) with a CUDA 12 (or older) torch: PyPI's aarch64 wheels are SBSA
    builds (JETSON_SOURCE); could not judge otherwise (JetPack 7's L4T R38 is not named by that note).
    """
    match = re.match(r"^R(\d+)", l4t)
    if match is None or int(match.group(1)) >= 38 or torch_cuda.major > 12:
        return cannot_judge(RULE, f"whether PyPI's aarch64 (SBSA) bitsandbytes wheels run on Jetson L4T {l4t}")
    return fails(
        RULE,
        f"a PyPI bitsandbytes wheel on Jetson (L4T {l4t}, torch's CUDA {torch_cuda})",
        "a build for Jetson's L4T CUDA (on the device, or Jetson AI Lab's index)",
    )
