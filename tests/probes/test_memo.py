"""The file probes' memo (cudadoctor.probes.memo): a second run over an unchanged tree reuses the facts, and any
change to what the probes read gives exactly the facts a run without the memo gives.

The tree is the real H200's layout (tests/h200_fixture.py) as an image root, with real ELF files written at test
time where the loader's view needs them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from cudadoctor.facts.model import Facts
from cudadoctor.probes import memo
from cudadoctor.probes.collect import collect_facts, live_context, root_context
from cudadoctor.probes.context import ProbeContext
from cudadoctor.runner import CommandResult, helper_bootstrap, helper_command
from tests.conftest import FakeRunner
from tests.elfwriter import shared_object
from tests.h200_fixture import SITE, build_tree, h200_env

MEMOISED = ("cuda_wheels", "cudnn", "nccl", "tensorrt", "loader", "python", "packages")


def put(root: Path, path: str, data: bytes | str = b"") -> Path:
    full = root / path.lstrip("/")
    full.parent.mkdir(parents=True, exist_ok=True)
    full.write_bytes(data.encode() if isinstance(data, str) else data)
    return full


@pytest.fixture
def root(tmp_path: Path) -> Path:
    tree = tmp_path / "root"
    build_tree(str(tree))
    # The H200's torch links cuDNN and cuSPARSE through RUNPATHs into the nvidia wheels (its real layout).
    runpath = ["$ORIGIN/../../nvidia/cudnn/lib", "$ORIGIN/../../nvidia/cu13/lib", "$ORIGIN"]
    torch_cuda = shared_object(["libcudnn.so.9", "libcusparse.so.12"], None, runpath)
    put(tree, f"{SITE}/torch/lib/libtorch_cuda.so", torch_cuda)
    return tree


def context(root: Path, env: dict[str, str] | None = None, **kw: object) -> ProbeContext:
    ctx = root_context(str(root), h200_env() if env is None else env, **kw)  # type: ignore[arg-type]
    ctx.memo = True
    return ctx


def plain(facts: Facts) -> Facts:
    """The facts without what differs between any two runs (when, how long)."""
    return dataclasses.replace(facts, timings={}, collected_at="")


def fresh(root: Path, env: dict[str, str] | None = None) -> Facts:
    ctx = context(root, env)
    ctx.memo = False
    return plain(collect_facts(ctx))


def test_a_second_run_over_an_unchanged_tree_reuses_the_facts(root: Path) -> None:
    first = collect_facts(context(root))
    assert "memo" not in first.timings
    assert first.packages and first.loader is not None and first.cudnn  # the probes found the H200's stack
    second = collect_facts(context(root))
    assert "memo" in second.timings
    assert all(second.timings[name] == 0.0 for name in MEMOISED)
    assert plain(second) == plain(first) == fresh(root)
    assert os.stat(memo.memo_path(str(root))).st_mode & 0o777 == 0o600


def _add_distribution(root: Path) -> None:
    put(root, f"{SITE}/cupy_cuda12x-13.4.1.dist-info/METADATA", "Name: cupy-cuda12x\nVersion: 13.4.1\n")


def _same_size_same_mtime(root: Path) -> None:
    """torch's METADATA rewritten in place with another version of the same length, its mtime put back: only
    the change time tells."""
    path = next((root / SITE.lstrip("/")).glob("torch-*.dist-info")) / "METADATA"
    before = path.stat()
    text = path.read_text()
    path.write_text(text.replace("Version: 2.11.0", "Version: 2.11.9", 1))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns


def _remove_cudnn(root: Path) -> None:
    for lib in (root / SITE.lstrip("/") / "nvidia/cudnn/lib").glob("libcudnn.so*"):
        lib.unlink()


def _elf_needs_another_library(root: Path) -> None:
    put(root, f"{SITE}/fastkernels.libs/libfk-1a2b3c.so", shared_object(["libcublas.so.11"]))


def _relinked(root: Path) -> None:
    """A library file replaced by a link to another copy (what a conda or apt upgrade does)."""
    lib = next((root / SITE.lstrip("/") / "nvidia/cudnn/lib").glob("libcudnn.so.9*"))
    lib.unlink()
    os.symlink("/usr/lib/x86_64-linux-gnu/libcudnn.so.9", lib)


def _compat_libcuda(root: Path) -> None:
    """A cuda-compat libcuda appears (the driver probe's file part, kept in the memo too)."""
    toolkit = next(p for p in (root / "usr/local").glob("cuda-*") if p.is_dir() and not p.is_symlink())
    put(root, f"/usr/local/{toolkit.name}/compat/libcuda.so.590.10.01")


@pytest.mark.parametrize(
    "change",
    [_add_distribution, _same_size_same_mtime, _remove_cudnn, _elf_needs_another_library, _relinked, _compat_libcuda],
)
def test_any_change_to_what_the_probes_read_gives_the_facts_of_a_run_without_the_memo(root: Path, change) -> None:
    unchanged = plain(collect_facts(context(root)))
    change(root)
    assert fresh(root) != unchanged  # the change is one the facts show
    after = collect_facts(context(root))
    assert "memo" not in after.timings
    assert plain(after) == fresh(root)
    assert plain(collect_facts(context(root))) == fresh(root)  # and the new facts are what is kept now


def test_a_variable_the_probes_read_is_part_of_the_question(root: Path) -> None:
    env = h200_env()
    collect_facts(context(root, env))
    env["LD_LIBRARY_PATH"] = "/usr/local/cuda/lib64"
    after = collect_facts(context(root, env))
    assert "memo" not in after.timings
    assert plain(after) == fresh(root, env)
    assert "memo" in collect_facts(context(root, env)).timings


def test_a_variable_nobody_reads_does_not_matter(root: Path) -> None:
    env = h200_env()
    collect_facts(context(root, env))
    env["SOMETHING_ELSE"] = "1"
    assert "memo" in collect_facts(context(root, env)).timings


def test_a_run_that_asked_a_command_is_never_kept(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file probe that runs something (``--python`` on the live machine runs the interpreter): what it printed
    is no file, so the run is not stored."""
    from cudadoctor.probes import libraries

    def asks_a_command(ctx: ProbeContext) -> tuple[()]:
        ctx.runner.run(("ldconfig", "-p"))
        return ()

    with monkeypatch.context() as patched:
        patched.setattr(libraries, "probe_nccl", asks_a_command)
        collect_facts(context(root))
    assert not os.path.exists(memo.memo_path(str(root)))
    collect_facts(context(root))
    assert os.path.exists(memo.memo_path(str(root)))


def test_one_question_with_two_answers_in_a_run_is_not_kept() -> None:
    record = memo.Memo()
    record.observe("is_file", "/usr/lib/libcudnn.so.9", True)
    record.observe("is_file", "/usr/lib/libcudnn.so.9", True)
    assert record.storable()
    record.observe("is_file", "/usr/lib/libcudnn.so.9", False)
    assert not record.storable()


@pytest.mark.parametrize(
    "spoil",
    [
        lambda text: text[: len(text) // 2],  # truncated
        lambda text: "[]",
        lambda text: json.dumps({**json.loads(text), "format": 99}),
        lambda text: json.dumps({**json.loads(text), "parts": {}}),
        lambda text: json.dumps({**json.loads(text), "parts": {"driver.files": {"wsl": "yes"}}}),
        lambda text: json.dumps({**json.loads(text), "results": {**json.loads(text)["results"], "packages": 5}}),
        lambda text: json.dumps({**json.loads(text), "seen": [["rm -rf /", "/", 0, True]]}),
        lambda text: json.dumps({**json.loads(text), "errors": [{"probe": 1}]}),
    ],
)
def test_a_spoiled_memo_is_a_miss_never_a_crash(root: Path, spoil) -> None:
    collect_facts(context(root))
    where = Path(memo.memo_path(str(root)))
    where.write_text(spoil(where.read_text()))
    after = collect_facts(context(root))
    assert "memo" not in after.timings
    assert plain(after) == fresh(root)


def test_a_memo_others_may_write_or_a_link_is_never_read(root: Path, tmp_path: Path) -> None:
    collect_facts(context(root))
    where = Path(memo.memo_path(str(root)))
    where.chmod(0o666)
    assert "memo" not in collect_facts(context(root)).timings  # ignored, then written anew (0600)
    assert where.stat().st_mode & 0o777 == 0o600
    planted = tmp_path / "planted.json"
    planted.write_bytes(where.read_bytes())
    where.unlink()
    where.symlink_to(planted)
    assert memo.load(str(where), memo.run_key(str(root), "x86_64", "Linux", None)) is None


def test_another_cudadoctor_or_interpreter_never_reads_this_memo(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    collect_facts(context(root))
    monkeypatch.setattr("cudadoctor.__version__", "999.0")
    assert "memo" not in collect_facts(context(root)).timings
    monkeypatch.setattr("sys.path", ["/elsewhere", *__import__("sys").path])
    assert "memo" not in collect_facts(context(root)).timings


def test_cudadoctor_no_cache_turns_the_memo_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(memo.DISABLE_VAR, "1")
    assert not live_context(health=False).memo
    monkeypatch.setenv(memo.DISABLE_VAR, "0")
    assert live_context(health=False).memo


def test_the_tainting_wrapper_marks_the_run() -> None:
    record = memo.Memo()
    runner = memo.Tainting(FakeRunner({("true",): CommandResult(("true",), 0)}), record, "a command")
    assert record.storable()
    runner.run(("true",))
    assert not record.storable() and record.tainted == "a command"


# --- the replay helper (live machine) ----------------------------------------------------------------------------


def _helper(where: str) -> subprocess.CompletedProcess[str]:
    """The replay helper as a live ``check`` starts it (memo.start_replay)."""
    argv = helper_command("cudadoctor.probes.memo", "replay_main", where)
    assert argv is not None
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)


@pytest.mark.parametrize("dont_write", [True, False])
def test_a_helper_writes_bytecode_only_where_the_doctor_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dont_write: bool
) -> None:
    """``-I`` ignores PYTHONDONTWRITEBYTECODE: the helper wrote ``__pycache__`` into a package whose directories the
    memo of a source checkout watches, so the first replay after a change found them changed (the cause of
    test_the_helper_says_unchanged_with_the_files_checksum failing after each edit, or in a fresh checkout)."""
    copy = tmp_path / "cudadoctor"
    shutil.copytree(Path(memo.__file__).resolve().parents[1], copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(sys, "dont_write_bytecode", dont_write)
    argv = helper_command("cudadoctor.probes.memo", "replay_main", str(tmp_path / "none.json"))
    assert argv is not None
    argv[argv.index(str(Path(memo.__file__).resolve().parents[2]))] = str(tmp_path)  # the copy's package root
    subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    assert (copy / "probes" / "__pycache__").exists() is not dont_write


@pytest.fixture
def live_memo() -> Path:
    """The memo of a live run on this machine (the test's own cache directory)."""
    collect_facts(live_context(health=False))
    where = Path(memo.memo_path("/"))
    assert where.exists()
    return where


def test_the_helper_says_unchanged_with_the_files_checksum(live_memo: Path) -> None:
    out = _helper(str(live_memo)).stdout.split()
    assert out == ["1", str(zlib.crc32(live_memo.read_bytes()))]


def test_the_helper_says_changed_when_an_answer_differs(live_memo: Path) -> None:
    document = json.loads(live_memo.read_text())
    document["seen"].append(["env", "CUDADOCTOR_TEST_NEVER_SET", 0, 12345])  # the CRC of a value it does not have
    live_memo.write_text(json.dumps(document))
    assert _helper(str(live_memo)).stdout.split() == ["0", str(zlib.crc32(live_memo.read_bytes()))]


def test_the_helper_says_nothing_without_a_memo(tmp_path: Path) -> None:
    assert _helper(str(tmp_path / "none.json")).stdout == ""
    (tmp_path / "garbage.json").write_text("{")
    assert _helper(str(tmp_path / "garbage.json")).stdout == ""


def test_the_helper_imports_only_the_standard_library_and_the_file_access(live_memo: Path) -> None:
    root = str(Path(memo.__file__).resolve().parents[2])
    program = helper_bootstrap("cudadoctor.probes.memo", "replay_main") + "; print(' '.join(sorted(sys.modules)))"
    argv = [sys.executable, "-S", "-I", "-c", program, root, str(live_memo)]
    modules = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout.split()[2:]
    ours = {m for m in modules if m.startswith("cudadoctor")}
    assert ours == {
        "cudadoctor",
        "cudadoctor.cachedir",
        "cudadoctor.fileread",
        "cudadoctor.probes",
        "cudadoctor.probes.memo",
        "cudadoctor.rootfs",
    }
    assert not {"packaging", "typing"} & set(modules)


def test_a_live_run_takes_the_helpers_answer_instead_of_asking_again(
    live_memo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[int] = []

    def fake_replay(seen, fs, env):
        asked.append(1)
        return True

    monkeypatch.setattr(memo, "replay", fake_replay)
    memo.start_replay({})
    facts = collect_facts(live_context(health=False))
    assert "memo" in facts.timings and asked == []
    # A memo rewritten after the helper read it (another run): its answer is for other bytes, so asked here.
    memo.start_replay({})
    memo._STARTED[str(live_memo)].proc.wait(timeout=60)  # it has read the file
    live_memo.write_text(live_memo.read_text() + " ")
    facts = collect_facts(live_context(health=False))
    assert "memo" in facts.timings and asked == [1]


def test_a_helper_nobody_asks_is_stopped(live_memo: Path) -> None:
    memo.start_replay({})
    (started,) = memo._STARTED.values()
    memo.stop_replay()
    assert memo._STARTED == {}
    assert started.proc.wait(timeout=10) is not None


def test_no_helper_when_the_memo_is_off_or_absent(tmp_path: Path) -> None:
    memo.start_replay({memo.DISABLE_VAR: "1"})
    memo.start_replay({})  # no memo written yet in this test's cache
    assert memo._STARTED == {}


def test_the_command_and_python_m_share_one_memo(tmp_path: Path) -> None:
    """How cudadoctor was started (its script's directory or the working directory first on sys.path) is not a
    property of the environment: ``cudadoctor`` and ``python -m cudadoctor`` from anywhere reuse one memo."""
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    env.pop(memo.DISABLE_VAR, None)
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    run = [sys.executable, "-m", "cudadoctor", "snapshot", "-o", "facts.json"]
    subprocess.run(run, cwd=first, env=env, capture_output=True, timeout=120, check=True)
    program = "import sys; sys.argv = ['cudadoctor', *sys.argv[1:]]; from cudadoctor.cli import main; main()"
    subprocess.run(
        [sys.executable, "-c", program, "snapshot", "-o", "facts.json"],
        cwd=second,
        env=env,
        capture_output=True,
        timeout=120,
        check=True,
    )
    timings = [json.loads((d / "facts.json").read_text())["facts"]["timings"] for d in (first, second)]
    assert "memo" not in timings[0] and "memo" in timings[1]


def test_suggest_skips_the_toolkits_and_plans_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """``suggest`` never reads the toolkits: its facts leave them (and nvcc) unprobed, and its constraints are the
    ones the full facts give."""
    from cudadoctor.data import CompatMatrix
    from cudadoctor.planning import constraints_from_facts
    from cudadoctor.probes import toolkit

    ran: list[str] = []
    real = toolkit.probe_nvcc

    def fake_probe_nvcc(ctx):
        ran.append("nvcc")
        return real(ctx)

    monkeypatch.setattr(toolkit, "probe_nvcc", fake_probe_nvcc)
    full = collect_facts(live_context(health=False))
    assert ran
    ran.clear()
    partial = collect_facts(live_context(health=False), skip=("toolkits", "nvcc"))
    assert ran == [] and partial.toolkits == () and partial.nvcc is None
    matrix = CompatMatrix()
    assert constraints_from_facts(matrix, partial) == constraints_from_facts(matrix, full)


def test_no_variable_value_is_kept(root: Path) -> None:
    """The memo keeps a CRC of each variable the probes read, never its value (a token may sit in any of them)."""
    env = {**h200_env(), "LD_LIBRARY_PATH": "/opt/https-token-hunter2-secret/lib:/usr/local/cuda/lib64"}
    collect_facts(context(root, env))
    kept = Path(memo.memo_path(str(root))).read_text()
    entries = [item for item in json.loads(kept)["seen"] if item[0] == "env"]
    assert ["env", "LD_LIBRARY_PATH", 0, zlib.crc32(env["LD_LIBRARY_PATH"].encode())] in entries
    assert all(isinstance(answer, (int, type(None))) for *_, answer in entries)
    assert env["LD_LIBRARY_PATH"] not in kept


@pytest.mark.parametrize("sub", ["", "facts", "probes", "data"])
def test_edited_code_the_file_probes_run_is_another_key(sub: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The probes build facts (facts/), read files (probes/, the top-level helpers) and ask the compat queries (data/):
    a checkout edited in any of them never answers from a memo written by the old code."""
    before = memo.run_key("/", "x86_64", "Linux", None)
    package = os.path.dirname(os.path.dirname(os.path.abspath(memo.__file__)))
    edited = os.path.normpath(os.path.join(package, sub))
    real = memo._tree
    monkeypatch.setattr(
        memo, "_tree", lambda d: (*real(d), ("new.py", 1, 1)) if os.path.normpath(d) == edited else real(d)
    )
    assert memo.run_key("/", "x86_64", "Linux", None) != before


def test_a_first_run_lists_the_driver_files_once(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kept part is computed (recorded) before the driver's background probe starts, which then finds it
    answered: on an image root, as on a machine without NVML, that probe reaches it at once."""
    from cudadoctor.probes import driver

    calls: list[str] = []
    real = driver.driver_files

    def fake_driver_files(ctx):
        calls.append("x")
        return real(ctx)

    monkeypatch.setattr(driver, "driver_files", fake_driver_files)
    first = collect_facts(context(root))
    assert calls == ["x"] and "memo" not in first.timings
    assert "memo" in collect_facts(context(root)).timings and calls == ["x"]


def test_a_hit_imports_neither_the_packages_probe_nor_platform() -> None:
    """The run's key and context need this interpreter's sys.path and uname, not the packages probe's module nor the
    platform module (~3 ms of every warm check's imports between them)."""
    code = (
        "import sys; from cudadoctor.probes import context, memo; "
        "memo.run_key('/', 'x86_64', 'Linux', None); context.ProbeContext(); "
        "print(sorted({'cudadoctor.probes.packages', 'cudadoctor.probes.markers', 'platform'} & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"
