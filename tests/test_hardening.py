"""Issue #14: one regression test (or a few) per cause an adversarial review found in v0.1.

Each test names its cause by number. All run on the real disk (FIFOs, symlinks, devices cannot be
made under pyfakefs) and finish in well under a second; the end-to-end variants of the same
inputs are in the fault suite (tests/faults/envs.py, the ``issue-14`` group).
"""

from __future__ import annotations

import http.server
import json
import os
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest

from cudadoctor.checks.findings import Status
from cudadoctor.checks.visible import parse_visible_devices
from cudadoctor.envfile import parse_env_file
from cudadoctor.errors import UsageError
from cudadoctor.facts.codec import facts_from_json
from cudadoctor.output import write_text
from cudadoctor.probes import host, interpreter, loader, packages
from cudadoctor.rootfs import RootFS
from cudadoctor.testing import run_check
from tests.conftest import fixture_text, make_ctx

HUGE = "9" * 5000  #: more digits than int() reads from text (4,300)
SITE = "/venv/lib/python3.12/site-packages"


def finishes(call: Callable[[], Any], seconds: float = 5.0) -> Any:
    """``call()``'s result; the test fails (instead of hanging) when it takes longer than ``seconds``."""
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(_outcome(call)), daemon=True)
    thread.start()
    thread.join(seconds)
    assert box, f"still running after {seconds} s (a hang)"
    kind, value = box[0]
    if kind == "raised":
        raise value
    return value


def _outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "returned", call()
    except BaseException as exc:  # handed back to the test thread
        return "raised", exc


def put(root: Any, path: str, data: str | bytes) -> str:
    full = os.path.join(str(root), path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "wb") as handle:
        handle.write(data.encode() if isinstance(data, str) else data)
    return full


def fifo(root: Any, path: str) -> str:
    full = os.path.join(str(root), path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    os.mkfifo(full)
    return full


def dist(root: Any, name: str, version: str, extra: str = "") -> None:
    stem = f"{name.replace('-', '_')}-1.0"
    put(root, f"{SITE}/{stem}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{extra}")


def venv(root: Any) -> dict[str, str]:
    put(root, "/venv/pyvenv.cfg", "home = /usr/bin\nversion = 3.12.3\n")
    put(root, "/venv/bin/python3", "")
    return {"VIRTUAL_ENV": "/venv", "PATH": "/venv/bin:/usr/bin"}


# --- 1 and 2: --output never replaces what is not a regular file, never follows a planted link ------------


def test_1_output_writes_through_a_device_a_link_and_a_fifo(tmp_path) -> None:
    write_text(os.devnull, "report\n")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    target = tmp_path / "real.txt"
    target.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    write_text(str(link), "report\n")
    assert link.is_symlink() and target.read_text() == "report\n"
    pipe = fifo(tmp_path, "pipe")
    got: list[bytes] = []

    def read() -> None:
        with open(pipe, "rb") as handle:
            got.append(handle.read())

    reader = threading.Thread(target=read)
    reader.start()
    finishes(lambda: write_text(pipe, "report\n"))
    reader.join(5)
    assert got == [b"report\n"] and stat.S_ISFIFO(os.lstat(pipe).st_mode)


def test_2_output_temp_file_is_unpredictable_and_exclusive(tmp_path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    out = tmp_path / "r.json"
    for name in (f"r.json.tmp{os.getpid()}", f"r.json.tmp{os.getpid()}.tmp"):
        (tmp_path / name).symlink_to(victim)  # planted where v0.1 wrote its temp file
    write_text(str(out), "{}\n")
    assert out.read_text() == "{}\n" and victim.read_text() == "precious"
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".cudadoctor-")]  # no temp file left behind


# --- 3: a probe that partly fails keeps its other facts; unknown never passes as ok ---------------------


def test_3_crafted_dpkg_status_keeps_nvidia_require_and_cd701_fails(tmp_path) -> None:
    put(tmp_path, "/var/lib/dpkg/status", f"Package: libc6\nStatus: install ok installed\nVersion: {HUGE}.1-0\n\n")
    put(tmp_path, "/lib64/ld-linux-x86-64.so.2", "")
    ctx = make_ctx(root=str(tmp_path), env={"NVIDIA_REQUIRE_CUDA": "cuda>=99.0"})
    info = host.probe_host(ctx)
    assert info.glibc is None
    assert [e.name for e in info.env] == ["NVIDIA_REQUIRE_CUDA"]
    doc = json.loads(fixture_text("h200-device", "snapshot.json"))
    facts = facts_from_json(json.dumps(doc))
    facts = replace(facts, host=replace(facts.host, env=info.env))
    assert run_check("CD701", facts).status is Status.FAIL


def test_3_a_failing_part_of_a_probe_is_a_recorded_fact(tmp_path, monkeypatch) -> None:
    def broken(ctx: Any, arch: str) -> None:
        raise RuntimeError("unforeseen")

    monkeypatch.setattr(host, "_image_glibc", broken)
    ctx = make_ctx(root=str(tmp_path), env={"NVIDIA_REQUIRE_CUDA": "cuda>=99.0"})
    info = host.probe_host(ctx)
    assert [e.name for e in info.env] == ["NVIDIA_REQUIRE_CUDA"]
    assert [e.message for e in ctx.errors] == ["could not read the C library: RuntimeError: unforeseen"]
    assert not any(e.crashed for e in ctx.errors)


def test_3_one_crafted_nvidia_metadata_does_not_hide_torch(tmp_path) -> None:
    env = venv(tmp_path)
    dist(tmp_path, "torch", "2.11.0+cu130")
    dist(tmp_path, "nvidia-evil-cu13", HUGE)
    dist(tmp_path, "nvidia-marker-cu13", "1.0", f'Requires-Dist: foo; python_version > "{HUGE}"\n')
    ctx = make_ctx(root=str(tmp_path), env=env)
    found = packages.probe_packages(ctx)
    assert "torch" in found and str(found["torch"].version) == "2.11.0+cu130"
    assert "nvidia-marker-cu13" in found
    assert any("nvidia-evil-cu13: invalid version" in e.message for e in ctx.errors)


def test_3_cd701_unknown_condition_is_not_ok() -> None:
    facts = facts_from_json(fixture_text("h200-device", "snapshot.json"))
    assert facts.driver is not None
    facts = replace(facts, driver=replace(facts.driver, cuda_api=None))
    env = (*facts.host.env, replace(facts.host.env[0], name="NVIDIA_REQUIRE_CUDA", value="cuda>=99.0"))
    finding = run_check("CD701", replace(facts, host=replace(facts.host, env=env)))
    assert finding.status is Status.UNKNOWN


# --- 4: parser gaps: huge numbers, deep JSON, NUL bytes -----------------------------------------------------


@pytest.mark.parametrize(
    ("path", "data"),
    [
        ("/usr/local/cuda/version.json", "[" * 100_000 + "]" * 100_000),
        ("/usr/local/cuda/version.json", '{"cuda": {"version": "' + HUGE + '"}}'),
        ("/venv/pyvenv.cfg", f"home = /usr/bin\nversion = {HUGE}.1\n"),
        (f"{SITE}/torch/version.py", f"__version__ = '{HUGE}'\ncuda = '{HUGE}.0'\n"),
        ("/opt/conda/conda-meta/cudnn-9.0-h0.json", "[" * 100_000 + "]" * 100_000),
        ("/etc/ld.so.conf", "/opt/a\x00b/lib\ninclude /etc/x\x00y/*.conf\n"),
    ],
    ids=["version-json-deep", "version-json-huge", "pyvenv-huge", "version-py-huge", "conda-meta-deep", "ld-so-nul"],
)
def test_4_parser_gaps_do_not_crash_a_probe(tmp_path, path: str, data: str) -> None:
    from cudadoctor.probes.collect import collect_facts

    env = venv(tmp_path)
    dist(tmp_path, "torch", "2.11.0")
    put(tmp_path, path, data)
    ctx = make_ctx(root=str(tmp_path), env={**env, "CONDA_PREFIX": "/opt/conda", "LD_LIBRARY_PATH": "/x\x00y"})
    facts = finishes(lambda: collect_facts(ctx), 20)
    assert not [e.message for e in facts.errors if e.crashed or "crashed" in e.message]


def test_4_bounded_helpers_raise_only_their_callers_errors() -> None:
    from packaging.requirements import InvalidRequirement
    from packaging.version import InvalidVersion

    from cudadoctor.bounded import loads_json, parse_int, parse_requirement, parse_version, version_or_none

    with pytest.raises(InvalidVersion):
        parse_version(HUGE)
    assert version_or_none("1." + "9" * 300) is None and version_or_none("2.11.0") is not None
    with pytest.raises(ValueError, match="longer than"):
        parse_int(HUGE)
    with pytest.raises(InvalidRequirement):
        parse_requirement(f"torch>={HUGE}")
    with pytest.raises(ValueError, match="nested too deeply"):
        loads_json("[" * 100 + "]" * 100)
    with pytest.raises(ValueError, match="nested too deeply"):
        loads_json("[" * 100_000 + "]" * 100_000)
    assert loads_json('{"a": [1, {"b": 2}]}') == {"a": [1, {"b": 2}]}


def test_4_a_nul_byte_in_a_path_is_an_oserror(tmp_path) -> None:
    fs = RootFS(str(tmp_path))
    with pytest.raises(OSError, match="NUL"):
        fs.read_text("/etc/a\x00b")
    assert not fs.exists("/a\x00b") and not fs.is_symlink("/a\x00b") and fs.identity("/a\x00b") is None
    live = RootFS("/")
    with pytest.raises(OSError, match="NUL"):
        live.resolve("/etc/a\x00b")


# --- 5: a FIFO where a file is expected never hangs ---------------------------------------------------------


def test_5_rootfs_never_opens_a_fifo(tmp_path) -> None:
    fifo(tmp_path, "/proc/driver/nvidia/version")
    fs = RootFS(str(tmp_path))
    with pytest.raises(OSError, match="FIFO"):
        finishes(lambda: fs.read_text("/proc/driver/nvidia/version"))


@pytest.mark.parametrize(
    "path", ["/etc/os-release", "/etc/ld.so.conf", "/venv/pyvenv.cfg", "/var/lib/dpkg/status", "METADATA", "INSTALLER"]
)
def test_5_probes_go_on_past_a_fifo(tmp_path, path: str) -> None:
    from cudadoctor.probes.collect import collect_facts

    env = venv(tmp_path)
    dist(tmp_path, "torch", "2.11.0")
    dist(tmp_path, "nvidia-nccl-cu13", "2.28.9")
    if path in ("METADATA", "INSTALLER"):
        path = f"{SITE}/nvidia_nccl_cu13-1.0.dist-info/{path}"
        if os.path.exists(os.path.join(str(tmp_path), path.lstrip("/"))):
            os.remove(os.path.join(str(tmp_path), path.lstrip("/")))
    elif os.path.exists(os.path.join(str(tmp_path), path.lstrip("/"))):
        os.remove(os.path.join(str(tmp_path), path.lstrip("/")))
    fifo(tmp_path, path)
    facts = finishes(lambda: collect_facts(make_ctx(root=str(tmp_path), env=env)), 20)
    assert "torch" in facts.packages


def test_5_local_state_fifos_are_skipped(tmp_path) -> None:
    from cudadoctor.cachedir import CACHE_FILE
    from cudadoctor.pipconfig import configured_index
    from cudadoctor.update.cache import load_cache

    fifo(tmp_path, f"/cache/{CACHE_FILE}")
    data, warning = finishes(lambda: load_cache(str(tmp_path / "cache")))
    assert data is None and warning is not None and "FIFO" in warning
    conf = fifo(tmp_path, "/pip.conf")
    config = finishes(lambda: configured_index({"PIP_CONFIG_FILE": conf, "HOME": str(tmp_path)}))
    assert any("FIFO" in p for p in config.problems)


# --- 6: ld.so.conf include cycles through alias links --------------------------------------------------------


def test_6_include_cycle_through_aliases_is_linear(tmp_path) -> None:
    # f{i}.conf includes l{i}/*.conf and l{i} -> . : every path is new (d/l3/l7/f2.conf …), every file
    # the same. Deduplicated by name, the walk read N^4 files (16 files: 19 s); by (device, inode), N.
    n = 16
    put(tmp_path, "/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n")
    for i in range(n):
        put(tmp_path, f"/etc/ld.so.conf.d/f{i}.conf", f"/opt/lib{i}\ninclude l{i}/*.conf\n")
        os.symlink(".", str(tmp_path / f"etc/ld.so.conf.d/l{i}"))
    ctx = make_ctx(root=str(tmp_path))
    start = time.perf_counter()
    dirs = finishes(lambda: loader.search_dirs(ctx), 60)
    assert time.perf_counter() - start < 1
    assert {f"/opt/lib{i}" for i in range(n)} <= set(dirs)


# --- 7: update's deadline covers connect, headers and body -------------------------------------------------


@pytest.fixture
def trickle_server() -> Iterator[str]:
    """A local server that sends its headers (or body) at a few bytes a second, forever."""

    class Trickle(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            try:
                self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                if self.path.startswith("/body"):
                    self.wfile.write(b"Content-Length: 100000\r\n\r\n")
                while True:
                    self.wfile.write(b"X" if self.path.startswith("/body") else b"X-Slow: y\r\n")
                    self.wfile.flush()
                    time.sleep(0.05)
            except OSError:
                return

        def log_message(self, *args: Any) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("page", ["headers", "body"])
def test_7_a_trickling_index_is_given_up_at_the_deadline(trickle_server: str, page: str) -> None:
    from cudadoctor.update.errors import FetchError
    from cudadoctor.update.fetch import ACCEPT_INDEX, HttpFetcher

    with HttpFetcher(timeout=(2.0, 2.0), deadline=0.8, retries=2, sleep=lambda s: None) as fetch:
        start = time.perf_counter()
        with pytest.raises(FetchError, match=r"within 0\.8 s"):
            finishes(lambda: fetch(f"{trickle_server}/{page}", accept=ACCEPT_INDEX), 10)
        assert time.perf_counter() - start < 2


# --- 8: a runaway child is streamed with a cap and killed at it ----------------------------------------------


def test_8_a_runaway_child_is_killed_at_the_output_cap() -> None:
    import resource

    from cudadoctor.runner import SubprocessRunner

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = finishes(
        lambda: SubprocessRunner().run(
            [sys.executable, "-c", "import sys\nwhile 1: sys.stdout.write('x' * 65536)"], timeout=30
        ),
        30,
    )
    assert result.returncode is None and "more than 4 MiB" in (result.error or "")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 64 << 10  # KiB: far below the stream


# --- 9 and 13: the env file never echoes a value; a BOM is accepted -----------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "A=1\nSECRET=line one\nwJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
        "A=1\nwJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY\n",
        "AWS_SECRET_ACCESS_KEY wJalrXUtnFEMI/K7MDENG\n",
    ],
    ids=["continuation", "bare-token", "space-for-equals"],
)
def test_9_env_file_messages_never_show_values(text: str) -> None:
    try:
        _env, messages = parse_env_file(text)
    except UsageError as exc:
        messages = [str(exc)]
    assert messages
    for message in messages:
        assert "wJal" not in message and "EXAMPLEKEY" not in message
        assert "line " in message


def test_9_the_key_name_is_named() -> None:
    with pytest.raises(UsageError, match="line 1: AWS_SECRET_ACCESS_KEY is followed by a space"):
        parse_env_file("AWS_SECRET_ACCESS_KEY wJalrXUtnFEMI\n")


def test_13_env_file_with_a_bom() -> None:
    env, warnings = parse_env_file("\ufeffCUDA_VERSION=13.0.2\nPATH=/usr/bin\n")
    assert env == {"CUDA_VERSION": "13.0.2", "PATH": "/usr/bin"} and warnings == []


# --- 10: terminal and Markdown injection ------------------------------------------------------------------


def _report_with(distro: str, package: str) -> Any:
    from cudadoctor.app import build_report
    from cudadoctor.checks.engine import run_checks
    from cudadoctor.data import CompatMatrix

    facts = facts_from_json(fixture_text("h200-device", "snapshot.json"))
    torch = facts.packages["torch"]
    facts = replace(
        facts,
        host=replace(facts.host, distro=distro),
        packages={**facts.packages, package: replace(torch, name=package)},
    )
    findings = run_checks(facts, CompatMatrix())
    return build_report(facts, findings, CompatMatrix(), exit_code=0)


def test_10_text_report_shows_escapes_never_sends_them() -> None:
    from cudadoctor.report.options import RenderOptions
    from cudadoctor.report.text import render_text

    report = _report_with("Ubuntu\x1b[2J\x1b]0;owned\x07\u202e", "torch\n[✓] No issues found")
    for verbose in (False, True):
        text = render_text(report, RenderOptions(verbose=verbose))
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
        assert "\\x1b[2J" in text
        assert not [line for line in text.splitlines() if line.startswith("[✓] No issues found")]


def test_10_github_annotations_show_escapes_never_send_them() -> None:
    """Issue #27: the workflow-command renderer escaped only %, CR and LF: a package or file name holding ESC or BEL
    reached the log (and a terminal running `--format github`) raw."""
    from dataclasses import replace as with_

    from cudadoctor.checks.findings import Remediation, Status
    from cudadoctor.report.github import render_github
    from cudadoctor.report.options import RenderOptions

    report = _report_with("Ubuntu", "torch")
    evil = "pkg\x1b]0;owned\x07\x1b[2J\u202e"
    fix = Remediation(evil, (evil,))
    first = with_(report.findings[0], status=Status.FAIL, message=f"{evil} needs x", remediation=fix)
    second = with_(report.findings[1], status=Status.UNKNOWN, reason=evil)
    out = render_github(with_(report, findings=(first, second, *report.findings[2:])), RenderOptions())
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert out.count("pkg\\x1b]0;owned\\x07") == 4


def test_10_markdown_report_is_inert() -> None:
    from cudadoctor.report.markdown import render_markdown
    from cudadoctor.report.options import RenderOptions

    report = _report_with("<img src=x onerror=alert(1)> @octocat **bold** [x](http://evil)", "torch\n```\n@here")
    md = render_markdown(report, RenderOptions())
    prose, fence = [], None  # outside code blocks (inside one, nothing renders or mentions)
    for line in md.splitlines():
        if fence is None and line.startswith("```"):
            fence = line[: len(line) - len(line.lstrip("`"))]
        elif fence is not None and line == fence:
            fence = None
        elif fence is None:
            prose.append(line)
    text = "\n".join(prose)
    assert "<img" not in text and "@octocat" not in text and "@here" not in text
    assert "&lt;img" in text and "&#64;octocat" in text and "\\*\\*bold\\*\\*" in text
    assert "</details>" in prose  # the fence around the facts closed where it should, not earlier


# --- 11 and 12: bad input is a usage error; huge numbers never crash a check ---------------------------------


@pytest.mark.parametrize(
    "data",
    [b"\xff\xfe[tool.cudadoctor]\n", b"tool = 5\n", b"[tool]\ncudadoctor = 3\n", b"a = " + b"[" * 5000 + b"]" * 5000],
    ids=["not-utf8", "tool-not-a-table", "cudadoctor-not-a-table", "deep"],
)
def test_11_bad_pyproject_in_a_parent_is_a_usage_error_or_ignored(tmp_path, data: bytes) -> None:
    from cudadoctor.config import find_settings

    put(tmp_path, "/pyproject.toml", data)
    (tmp_path / "sub").mkdir()
    try:
        settings = find_settings(str(tmp_path / "sub"))
    except UsageError as exc:
        assert len(str(exc).splitlines()) == 1 and str(tmp_path) in str(exc)
    else:
        assert settings.path is None


def test_11_stdout_on_a_full_disk_is_one_line_exit_2(tmp_path) -> None:
    import subprocess

    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "cudadoctor", "list-checks"], stdout=full, stderr=subprocess.PIPE, env=env,
            cwd=str(tmp_path), timeout=60,
        )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.decode().strip() == "cudadoctor: error: cannot write the output: No space left on device"


def test_12_huge_numbers_never_crash_a_check() -> None:
    from cudadoctor.checks.meta import parse_assertion
    from cudadoctor.errors import InvalidValue

    facts = facts_from_json(fixture_text("h200-device", "snapshot.json"))
    torch = replace(facts.packages["torch"], cuda_build=HUGE, torch_build=None)
    finding = run_check("CD111", replace(facts, packages={**facts.packages, "torch": torch}))
    assert finding.status is Status.UNKNOWN and "is not a CUDA version" in (finding.reason or "")
    env = (*facts.host.env, replace(facts.host.env[0], name="CUDA_VERSION", value=HUGE))
    assert run_check("CD703", replace(facts, host=replace(facts.host, env=env))).status is not Status.ERROR
    with pytest.raises(InvalidValue):
        parse_assertion(f"torch>={HUGE}")


# --- 14: linear costs ------------------------------------------------------------------------------------------


def test_14_visible_devices_duplicates_in_linear_time() -> None:
    start = time.perf_counter()
    assert len(parse_visible_devices(",".join(str(i) for i in range(60_000)), 60_000) or []) == 60_000
    assert time.perf_counter() - start < 2


@pytest.mark.slow
def test_14_pythonpath_dedup_in_linear_time(tmp_path) -> None:
    # Distinct existing directories: v0.1 checked each against the list of those kept (quadratic).
    # Four times the entries must cost about four times as much (quadratic: sixteen).
    n = 32_000
    for i in range(n):
        (tmp_path / f"d{i}").mkdir()

    def seconds(count: int) -> float:
        ctx = make_ctx(root=str(tmp_path), env={"PYTHONPATH": ":".join(f"/d{i}" for i in range(count))})
        start = time.perf_counter()
        assert len(interpreter._existing_dirs(ctx, interpreter._pythonpath(ctx))) == count
        return time.perf_counter() - start

    small = min(seconds(n // 4) for _ in range(2))
    assert seconds(n) < 8 * small + 0.2


# --- 5 (the rule itself): every file cudadoctor reads goes through the one reader ---------------------------


def test_5_no_module_opens_a_file_but_the_reader() -> None:
    """``open()`` is called only to write the report (output.py, which writes through to what the user
    named) and on /proc/self/maps, the process's own map that the kernel serves as a regular file."""
    import ast
    import pathlib

    import cudadoctor

    allowed = {("probes/nvml_calls.py", "'/proc/self/maps'")}  # output.py writes through os.open
    allowed |= {(f"probes/children/{n}.py", "'/proc/self/maps'") for n in ("framework", "driver_api", "nccl")}
    package = pathlib.Path(cudadoctor.__file__).parent
    found = set()
    for module in package.rglob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
                found.add((module.relative_to(package).as_posix(), ast.unparse(node.args[0])))
    assert found == allowed


def test_output_to_a_fifo_nobody_reads_fails_at_once(tmp_path) -> None:
    """Regression (independent hostile run): `-o FIFO` with no reader blocked forever."""
    import time

    from cudadoctor.errors import UsageError
    from cudadoctor.output import write_text

    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    start = time.monotonic()
    with pytest.raises(UsageError, match="cannot write"):
        write_text(str(fifo), "report\n")
    assert time.monotonic() - start < 5 and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_output_through_a_link_truncates_what_it_reaches(tmp_path) -> None:
    from cudadoctor.output import write_text

    target = tmp_path / "target.txt"
    target.write_text("a much longer earlier report\n")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    write_text(str(link), "short\n")
    assert target.read_text() == "short\n" and link.is_symlink()
