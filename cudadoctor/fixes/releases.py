"""What the compat data says is published: the releases of a package (with their Pythons), and where each
build of a torch release is (PyTorch's index of its variant, a 1.x links page or extra index, PyPI). Read by
:mod:`~cudadoctor.fixes.verify` and by the builders."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from cudadoctor.data import CompatMatrix
from cudadoctor.data.rows import OnnxruntimeRelease, TorchRelease
from cudadoctor.facts.names import canonical_name
from cudadoctor.record import record

__all__ = [
    "TORCH_STABLE",
    "PackageBuild",
    "TorchSource",
    "fitting_build",
    "index_variant",
    "known_source",
    "known_versions",
    "package_builds",
    "package_indexes",
    "torch_build_source",
    "wheel_pythons",
]

#: the single page of links to every old build (``-f``), as the previous-versions page writes the 1.x commands:
#: https://pytorch.org/get-started/previous-versions/
TORCH_STABLE = "https://download.pytorch.org/whl/torch_stable.html"


def _versions(items: Iterable[object]) -> tuple[Version, ...]:
    out = []
    for item in items:
        try:
            out.append(Version(str(item)))
        except InvalidVersion:
            continue
    return tuple(out)


def _pinned(wheels: Iterable[str], name: str) -> list[str]:
    """``nvidia-cudnn-cu13==9.17.0.29`` lines of ``name``: their versions."""
    return [w.split("==", 1)[1] for w in wheels if w.split("==", 1)[0] == name and "==" in w]


def known_versions(matrix: CompatMatrix, name: str) -> tuple[Version, ...] | None:
    """The releases of ``name`` the compat data lists (public versions); None: it has no release list."""
    name = canonical_name(name)
    torch = matrix.torch_releases
    lists: dict[str, Callable[[], Iterable[object]]] = {
        "torch": lambda: [r.version for r in torch],
        "torchvision": lambda: [r.version for r in matrix.companion_releases("torchvision")],
        "torchaudio": lambda: [r.version for r in matrix.companion_releases("torchaudio")],
        # the triton releases torch pins exactly (compat/companions.toml; ``~=3.9.0`` names no one release)
        "triton": lambda: [s.version for r in matrix.torch_tritons for s in r.triton if s.operator == "=="],
        "vllm": lambda: [r.version for r in matrix.vllm_releases],
        "flash-attn": lambda: [r.version for r in matrix.flash_attn_releases],
        "xformers": lambda: [r.version for r in matrix.xformers_releases],
        "jax": lambda: [r.version for r in matrix.jax_releases],
        "tensorflow": lambda: [r.version for r in matrix.tensorflow_releases],
        "onnxruntime-gpu": lambda: [r.version for r in matrix.onnxruntime_releases],
        "paddlepaddle-gpu": lambda: [r.version for r in matrix.paddle_releases],
        "bitsandbytes": lambda: sorted({w.version for w in matrix.bitsandbytes_wheels}),
    }
    if name in lists:
        return _versions(lists[name]())
    flashinfer = matrix.flashinfer_package(name) if name.startswith("flashinfer-") else None
    if flashinfer is not None and flashinfer.pypi_versions:
        return flashinfer.pypi_versions
    if name == "llama-cpp-python":
        pypi = matrix.llama_cpp_pypi  # every release is an sdist there; the CUDA indexes hold a subset of them
        return _versions(pypi.releases) if pypi is not None else None
    if name == "ctranslate2":
        return _versions(v for r in matrix.ctranslate2_ranges for v in r.releases)
    if name == "tensorrt" or re.fullmatch(r"tensorrt-cu\d+", name):
        return _versions(r.version for r in matrix.tensorrt_releases if name == "tensorrt" or name in r.packages)
    cupy = matrix.cupy_package(name)
    if cupy is not None:
        return _versions(v for v in (cupy.first_version, cupy.last_version) if v is not None)
    if re.fullmatch(r"nvidia-(cudnn|nccl)-cu\d+", name):
        rows = matrix.cudnn_releases if "cudnn" in name else matrix.nccl_releases
        return _versions(v for r in rows for v in _pinned(r.wheels, name))
    return None


def wheel_pythons(
    matrix: CompatMatrix, name: str, version: Version, platform: str
) -> tuple[tuple[str, ...], SpecifierSet | None, bool] | None:
    """(the CPython versions of a release's wheels, its Requires-Python, whether they are abi3) for the
    packages whose releases the data lists with them; the wheel list only for Linux x86_64, the platform the
    lists are read for. None: the data says neither."""
    name = canonical_name(name)
    linux = platform == "linux-x86_64"
    if name == "vllm" and (vllm := matrix.vllm_release(version)) is not None:
        return (vllm.python if linux else ()), vllm.requires_python, vllm.abi3
    if name == "tensorflow":
        tf = next((r for r in matrix.tensorflow_releases if r.version == version), None)
        return ((tf.python if linux else ()), tf.requires_python, False) if tf is not None else None
    rows: dict[str, Iterable[Any]] = {
        "xformers": matrix.xformers_releases,
        "jax": matrix.jax_releases,
        "onnxruntime-gpu": matrix.onnxruntime_releases,
        "flash-attn": matrix.flash_attn_releases,
        "bitsandbytes": matrix.bitsandbytes_wheels,  # py3-none wheels: Requires-Python is the whole answer
    }
    row = next((r for r in rows.get(name, ()) if r.version == version), None)
    if row is None:
        return None
    # onnxruntime-gpu's rows list its wheels' CPython versions (1.24.1 declares >=3.10 but has no cp310 wheel)
    pythons = row.python if linux and isinstance(row, OnnxruntimeRelease) else ()
    return pythons, row.requires_python, False


def index_variant(matrix: CompatMatrix, url: str) -> str | None:
    """The torch variant whose index or links page ``url`` is (``cu121``): a ``[[variant]]``'s own index, or an
    ``[[install_form]]`` URL filled with a variant's tag; None when it is none the data knows."""
    url = url.rstrip("/")
    for variant in matrix.torch_variants.values():
        if variant.index_url == url or url in _form_urls(matrix, variant.tag):
            return variant.tag
    return None


def _form_urls(matrix: CompatMatrix, tag: str) -> set[str]:
    return {form.url.format(tag=tag) for form in matrix.torch_install_forms}


def known_source(matrix: CompatMatrix, url: str) -> bool:
    """Whether compat data names ``url`` as a place torch builds (or llama-cpp-python's CUDA wheels) are
    published."""
    if any(url.rstrip("/") == i.url for i in matrix.llama_cpp_indexes):
        return True
    return url.rstrip("/") == TORCH_STABLE or index_variant(matrix, url) is not None


@record
class TorchSource:
    """Where one build of a torch release is published, and how pip is told so."""

    option: str  #: ``index-url``, ``extra-index-url``, ``find-links``, or ``pypi`` (no option)
    url: str | None = None
    #: the packages pinned with the build's ``+variant`` local version (PyTorch's 1.x commands leave torchaudio
    #: untagged); none on PyPI
    local_tag: tuple[str, ...] = ("torch", "torchvision", "torchaudio")


def torch_build_source(matrix: CompatMatrix, release: TorchRelease, variant: str) -> TorchSource | None:
    """Where the ``variant`` build of a torch release is published; None when the data has no such build.

    PyPI's wheel is the release's default build (``pypi_default_cuda``), without a local version; PyTorch's
    own index of each variant the release lists has the ``+variant`` wheels; a variant without an index of its
    own (the 1.x builds) installs as the release's ``[[install_form]]`` says (``-f`` a links page, or an extra
    index)."""
    row = matrix.torch_variants.get(variant)
    if variant in release.variants:
        if row is not None and row.index_url:
            return TorchSource("index-url", row.index_url)
        form = matrix.torch_install_form(release.version)
        if form is not None:
            return TorchSource(form.option, form.url.format(tag=variant), form.local_tag)
    default = release.pypi_default_cuda
    if default is not None and variant == f"cu{default.major}{default.minor}":
        return TorchSource("pypi", local_tag=())
    return None


@record
class PackageBuild:
    """One build of a release of a package: the CUDA major it was built for, the majors of the libraries it loads
    (``("cudnn", 8)``), and the index that has it (None: PyPI)."""

    version: Version
    cuda_major: int
    libraries: tuple[tuple[str, int], ...] = ()
    index_url: str | None = None


def _major(text: str) -> int | None:
    head = text.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def _onnxruntime_builds(matrix: CompatMatrix) -> list[PackageBuild]:
    """onnxruntime-gpu: each release's PyPI wheel, and the builds the CUDA EP page lists on another index."""
    out = []
    for row in matrix.onnxruntime_releases:
        if row.cuda_major is not None:
            cudnn = (("cudnn", row.cudnn_major),) if row.cudnn_major is not None else ()
            out.append(PackageBuild(row.version, row.cuda_major, cudnn))
        for build in row.docs_builds:
            cuda, cudnn_major = _major(build.cuda), _major(build.cudnn)
            if build.index and cuda is not None and cudnn_major is not None:
                out.append(PackageBuild(row.version, cuda, (("cudnn", cudnn_major),), build.index))
    return out


#: the packages whose builds compat data lists with what each loads, and where each is
_BUILDS = {"onnxruntime-gpu": _onnxruntime_builds}


def package_builds(matrix: CompatMatrix, name: str) -> tuple[PackageBuild, ...]:
    """The builds of ``name``'s releases compat data lists with the CUDA and library majors they need; empty for a
    package it lists none of."""
    reader = _BUILDS.get(canonical_name(name))
    return tuple(reader(matrix)) if reader is not None else ()


def package_indexes(matrix: CompatMatrix) -> dict[str, str]:
    """Index URL (without a trailing ``/``) -> the package compat data lists builds of there, other than PyPI."""
    return {b.index_url.rstrip("/"): name for name in _BUILDS for b in package_builds(matrix, name) if b.index_url}


def fitting_build(matrix: CompatMatrix, name: str, cuda_major: int, library: str, major: int) -> PackageBuild | None:
    """The newest build of ``name`` for CUDA ``cuda_major`` that loads ``library`` of ``major`` (cuDNN 8 where
    another package pins cuDNN 8), PyPI's where a release has it on both; None when compat data lists none."""
    fits = [b for b in package_builds(matrix, name) if b.cuda_major == cuda_major and (library, major) in b.libraries]
    return max(fits, key=lambda b: (b.version, b.index_url is None), default=None)
