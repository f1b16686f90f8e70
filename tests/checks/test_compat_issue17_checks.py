"""CD404 reads compat/torch.toml's free-threaded wheel lists and the 1.x rows added for issue #17."""

from __future__ import annotations

from dataclasses import replace

from packaging.version import Version

from cudadoctor.checks.findings import Status
from cudadoctor.facts.model import InstalledPackage, Source, SourceKind
from cudadoctor.rules.wheels import free_threaded
from cudadoctor.testing import run_check

MD = Source(SourceKind.METADATA, "/site/x.dist-info/METADATA")


def _env(facts, python: str, site: str, torch: str):
    env = replace(facts.python, version=Version(python), site_paths=(site,))
    packages = dict(facts.packages, torch=InstalledPackage("torch", Version(torch), site, MD))
    return replace(facts, python=env, packages=packages)


def test_free_threaded_is_read_from_the_site_packages_directory():
    assert free_threaded(["/venv/lib/python3.13t/site-packages"]) is True
    assert free_threaded(["/venv/lib/python3.13/site-packages/"]) is False
    assert free_threaded([r"C:\Python313\Lib\site-packages"]) is None  # Windows does not name it
    assert free_threaded(["/a/lib/python3.13t/site-packages", "/b/lib/python3.13/site-packages"]) is None


def test_cd404_free_threaded_python_needs_torchs_free_threaded_wheels(h200):
    # torch 2.13.0 has cp314t wheels only; 2.12.0 had cp313t too; 2.6.0 had none (PyPI file names)
    site = "/venv/lib/python3.13t/site-packages"
    finding = run_check("CD404", _env(h200, "3.13.1", site, "2.13.0"))
    assert finding.status is Status.WARN
    assert "torch 2.13.0 has free-threaded wheels for Python 3.14t" in finding.message
    assert run_check("CD404", _env(h200, "3.13.1", site, "2.12.0")).status is Status.OK
    finding = run_check("CD404", _env(h200, "3.13.1", site, "2.6.0"))
    assert "torch 2.6.0 has no free-threaded wheels" in finding.message
    # the same release on the GIL build of 3.13 is fine: its cp313 wheels install
    assert run_check("CD404", _env(h200, "3.13.1", "/venv/lib/python3.13/site-packages", "2.13.0")).status is Status.OK


def test_cd404_judges_torch_1_x_releases_that_had_no_row(h200):
    # torch 1.9.0 had cp36-cp39 wheels on PyPI; Python 3.10 has none
    finding = run_check("CD404", _env(h200, "3.10.4", "/venv/lib/python3.10/site-packages", "1.9.0"))
    assert finding.status is Status.WARN
    assert "torch 1.9.0 has wheels for Python 3.6, 3.7, 3.8, 3.9" in finding.message
