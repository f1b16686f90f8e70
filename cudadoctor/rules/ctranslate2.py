"""The ctranslate2 release that fits a machine: the newest whose wheels' CUDA (and cuDNN) majors it has.

ctranslate2's PyPI wheels are built for one CUDA per release range and open cuBLAS of that major (and, up to 4.6.2,
cuDNN through a bundled shim) by name at run time (compat/ecosystem.toml ``[[ctranslate2]]``, read from the
wheels; https://github.com/OpenNMT/CTranslate2/blob/master/CHANGELOG.md: 4.0.0 moved to CUDA 12, 4.5.0 to
cuDNN 9). A machine whose driver or libraries stay on CUDA 11 or cuDNN 8 takes the last release built for them
(3.24.0 for CUDA 11, 4.4.0 for cuDNN 8), which is also what CTranslate2's own answers recommend
(https://github.com/OpenNMT/CTranslate2/issues/1842).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudadoctor.data import CompatMatrix

__all__ = ["ctranslate2_fitting", "ctranslate2_pins"]


def ctranslate2_fitting(
    matrix: CompatMatrix,
    cuda_fits: Callable[[Version], bool],
    installed: Version,
    pins: Sequence[SpecifierSet] = (),
    cudnn_majors: Collection[int] = (),
) -> Version | None:
    """The newest ctranslate2 release whose CUDA ``cuda_fits`` accepts (and, with ``cudnn_majors``, whose bundled
    cuDNN shim opens one of them; a release bundling none needs none) and that the installed packages' ``pins`` on
    ctranslate2 allow; None when nothing allowed fits or the fit is ``installed``. faster-whisper's README tells CUDA
    11 users to downgrade to 3.24.0 although faster-whisper 1.x requires ctranslate2>=4, but a command that breaks
    an installed package's pin is withheld (cudadoctor/fixes/pins.py), so such a release is not offered."""
    fitting: list[Version] = []
    for row in matrix.ctranslate2_ranges:
        if not cuda_fits(row.cuda):
            continue
        if cudnn_majors and row.cudnn_major is not None and row.cudnn_major not in cudnn_majors:
            continue
        fitting += [Version(v) for v in row.releases]
    allowed = [v for v in fitting if all(p.contains(v, prereleases=True) for p in pins)]
    public = Version(installed.public)
    best = max(allowed, default=None)
    return best if best != public else None


def ctranslate2_pins(requires: Iterable[tuple[str, ...]]) -> list[SpecifierSet]:
    """The specifiers on ctranslate2 in the installed packages' Requires-Dist lines (one tuple per package)."""
    from cudadoctor.facts.requires import read_requirement

    pins = []
    for lines in requires:
        for line in lines:
            read = read_requirement(line)
            if read is not None and read[0] == "ctranslate2" and str(read[1]):
                pins.append(read[1])
    return pins
