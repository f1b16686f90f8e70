"""compare's worker processes die with it (issue #27 item 3, #32 item 6).

With more than 500 inputs compare parses in worker processes; a SIGTERM to compare left them running, holding
its stdout, so a reader of the pipe (``compare … | tee``, a scheduler's health script) hung until they finished.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import fixture_text

pytestmark = pytest.mark.slow  # starts compare and its workers as processes


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as handle:
                found.update(int(p) for p in handle.read().split())
        except OSError:
            pass
    return found


def _alive(pid: int) -> bool:
    """Running (a zombie has finished: only its exit status is left for whoever reaps it)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads /proc (Linux)")
def test_a_sigterm_to_compare_ends_its_workers_and_closes_its_output(tmp_path):
    document = json.loads(fixture_text("h200-device", "snapshot.json"))
    # slow to parse (150,000 objects the comparison does not read), so the workers are busy when the signal comes
    document["padding"] = [{"n": i} for i in range(150_000)]
    first = tmp_path / "gpu0000.json"
    first.write_text(json.dumps(document))
    for i in range(1, 800):  # hard links: 800 nodes (800 names) from one file's blocks
        os.link(first, tmp_path / f"gpu{i:04d}.json")
    proc = subprocess.Popen(
        [sys.executable, "-m", "cudadoctor", "compare", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=os.path.dirname(os.path.dirname(__file__)),
    )  # fmt: skip
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 30
        while not workers and time.monotonic() < deadline and proc.poll() is None:
            workers = _children(proc.pid)
            time.sleep(0.01)
        assert workers, "compare started no worker (or finished before one was seen)"
        time.sleep(0.2)
        workers |= _children(proc.pid)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
        # the pipe closes: every process holding its write end has gone
        assert proc.stdout is not None
        fd, closes = proc.stdout.fileno(), time.monotonic() + 5
        while True:  # read what is there until end of file, which comes only once no process holds the pipe
            ready, _, _ = select.select([fd], [], [], max(0.0, closes - time.monotonic()))
            assert ready, "compare's stdout stayed open after it was terminated"
            if not os.read(fd, 65536):
                break
        deadline = time.monotonic() + 5
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [w for w in workers if _alive(w)], "a worker outlived compare"
    finally:
        for pid in [proc.pid, *workers]:  # nothing left behind when the test fails
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()
