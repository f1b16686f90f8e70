"""The wheel ships compat/ inside the package, and an installed wheel finds it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile

import pytest

pytestmark = pytest.mark.slow  # builds a wheel with pip and imports it in a child interpreter

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), REPO],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if proc.returncode != 0 and "No module named 'hatchling'" in proc.stderr:
        pytest.skip("hatchling is not installed (pip install -e '.[test]')")
    assert proc.returncode == 0, proc.stderr
    (path,) = out.glob("cudadoctor-*.whl")
    return path


def _install(wheel, tmp_path):
    """The wheel installed as pip installs it, into ``tmp_path/site``."""
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return target


def test_wheel_carries_every_compat_file_unchanged(wheel):
    compat = os.path.join(REPO, "compat")
    with zipfile.ZipFile(wheel) as zf:
        for directory, _dirs, files in os.walk(compat):
            for name in files:
                path = os.path.join(directory, name)
                rel = os.path.relpath(path, compat).replace(os.sep, "/")
                with open(path, "rb") as handle:
                    assert zf.read(f"cudadoctor/compat/{rel}") == handle.read(), rel


def test_installed_wheel_finds_its_compat_data(wheel, tmp_path):
    target = _install(wheel, tmp_path)
    code = (
        "from cudadoctor.data.load import compat_dir, load_table; "
        "print(compat_dir()); print(len(load_table('gpus').rows('gpu')))"
    )
    proc = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(target)!r}); {code}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=str(tmp_path),
    )
    where, count = proc.stdout.split()
    assert where == str(target / "cudadoctor" / "compat")
    assert int(count) > 50


def test_wheel_ships_each_table_parsed_and_the_first_run_parses_no_toml(wheel, tmp_path):
    """hatch_build.py: compat/<name>.json beside each table; an installed wheel's very first load (an empty user
    cache) imports no TOML parser and gets what the TOML parses to; a TOML edited in place is parsed again."""
    with zipfile.ZipFile(wheel) as zf:
        shipped = {n for n in zf.namelist() if n.startswith("cudadoctor/compat/") and n.count("/") == 2}
    tables = {n[len("cudadoctor/compat/") : -len(".toml")] for n in shipped if n.endswith(".toml")}
    assert tables and {f"cudadoctor/compat/{t}.json" for t in tables} <= shipped
    target = _install(wheel, tmp_path)
    code = (
        "import json, sys, tomllib; del sys.modules['tomllib']; from cudadoctor.data.load import load_table; "
        "names = sys.argv[1].split(','); tables = {n: load_table(n).data for n in names}; "
        "print(json.dumps(['tomllib' in sys.modules, {n: t['meta']['kind'] for n, t in tables.items()}]))"
    )
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH=str(target))
    run = [sys.executable, "-c", code, ",".join(sorted(tables))]
    first = subprocess.run(run, capture_output=True, text=True, timeout=60, check=True, cwd=str(tmp_path), env=env)
    parsed_toml, kinds = json.loads(first.stdout)
    assert parsed_toml is False and set(kinds) == tables
    assert not (tmp_path / "cache" / "cudadoctor" / "compat").exists()  # nothing needed caching
    gpus = target / "cudadoctor" / "compat" / "gpus.toml"
    gpus.write_text(gpus.read_text(encoding="utf-8") + "\n# edited after the install\n", encoding="utf-8")
    again = subprocess.run(run, capture_output=True, text=True, timeout=60, check=True, cwd=str(tmp_path), env=env)
    assert json.loads(again.stdout)[0] is True  # the stale copy was ignored: the TOML was parsed


def test_installed_wheel_runs_its_deep_children_by_path(wheel, tmp_path):
    """check --deep runs cudadoctor/probes/children/*.py by file path: they must ship, and run from there."""
    target = _install(wheel, tmp_path)
    code = (
        "from cudadoctor.probes import runtime; "
        "print(runtime.DRIVER_CHILD); print(runtime.FRAMEWORK_CHILD); print(runtime.NCCL_CHILD)"
    )
    proc = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(target)!r}); {code}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=str(tmp_path),
    )
    children = proc.stdout.split()
    assert [os.path.dirname(c) for c in children] == [str(target / "cudadoctor" / "probes" / "children")] * 3
    assert all(os.path.isfile(c) for c in children)
    # the driver-API child runs from the installed copy, without cudadoctor on its path
    run = subprocess.run([sys.executable, "-I", children[0]], capture_output=True, text=True, timeout=60, check=True)
    assert '"probe": "driver"' in run.stdout
