"""The ctranslate2 release that fits a machine (cudadoctor/rules/ctranslate2.py over compat/ecosystem.toml)."""

from __future__ import annotations

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudadoctor.data import CompatMatrix
from cudadoctor.rules.ctranslate2 import ctranslate2_fitting, ctranslate2_pins

MATRIX = CompatMatrix(cache_dir=False)


def test_cuda_11_takes_the_last_3_x_release():
    assert ctranslate2_fitting(MATRIX, lambda c: c.major == 11, Version("4.5.0")) == Version("3.24.0")


def test_cudnn_8_on_cuda_12_takes_4_4_0():
    fit = ctranslate2_fitting(MATRIX, lambda c: c.major == 12, Version("4.5.0"), cudnn_majors={8})
    # 4.6.3 and later bundle no cuDNN, so they fit a cuDNN 8 machine too: the newest wins
    assert fit == Version("4.8.5")
    capped = ctranslate2_fitting(
        MATRIX, lambda c: c.major == 12 and c < Version("12.8"), Version("4.5.0"), cudnn_majors={8}
    )
    assert capped == Version("4.4.0")


def test_a_dependents_pin_is_kept():
    pins = [SpecifierSet("<4,>=3.10")]
    # CUDA 12 only: every fitting release is 4.x, which the pin refuses, and none is older than 3.14.0
    assert ctranslate2_fitting(MATRIX, lambda c: c.major == 12, Version("3.14.0"), pins) is None
    # CUDA 11 only with faster-whisper 1.x's pin >=4.0: no release (3.24.0 would break the pin; the gate withholds it)
    assert ctranslate2_fitting(MATRIX, lambda c: c.major == 11, Version("4.1.0"), [SpecifierSet(">=4.0,<5")]) is None
    assert ctranslate2_fitting(MATRIX, lambda c: c.major == 11, Version("4.1.0")) == Version("3.24.0")


def test_the_installed_release_is_no_fix():
    assert ctranslate2_fitting(MATRIX, lambda c: c.major == 11, Version("3.24.0")) is None


def test_pins_are_read_from_requires_dist_lines():
    pins = ctranslate2_pins([("ctranslate2 (<4,>=3.10)", "tokenizers<1,>=0.13"), ("ctranslate2>=4.0",)])
    assert [str(p) for p in pins] == ["<4,>=3.10", ">=4.0"]


def test_a_release_without_files_is_in_the_range_around_it():
    row = MATRIX.ctranslate2_range(Version("4.3.0"))  # no files on PyPI; 4.2.1 and 4.3.1 are CUDA 12 / cuDNN 8
    assert row is not None and row.cudnn_major == 8
    assert MATRIX.ctranslate2_range(Version("2.24.0")) is None
