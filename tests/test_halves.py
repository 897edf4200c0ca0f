"""Work split in two processes: the same result as in one, even when the other fails."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from reconciler.halves import in_two


def squares(items: Sequence[int]) -> list[int]:
    return [i * i for i in items]


def test_each_half_is_done_once_and_in_order() -> None:
    parent = os.getpid()
    done_where: list[tuple[int, int]] = []

    def work(items: Sequence[int]) -> list[tuple[int, int]]:
        here = [(os.getpid(), i) for i in items]
        done_where.extend(here)  # (only this process's list: the other's is its own copy)
        return here

    mine, theirs = in_two(work, list(range(9)))
    assert [i for _, i in mine + theirs] == list(range(9))
    assert {pid for pid, _ in mine} == {parent}
    assert {pid for pid, _ in theirs} != {parent}  # done by the forked process
    assert done_where == mine  # this process did its half only


def test_a_failing_forked_process_has_its_half_done_here() -> None:
    parent = os.getpid()

    def work(items: Sequence[int]) -> list[int]:
        if os.getpid() != parent:
            os._exit(3)  # the forked process dies before it sends anything
        return squares(items)

    assert in_two(work, list(range(7))) == ([0, 1, 4], [9, 16, 25, 36])


def test_a_forked_process_that_raises_has_its_half_done_here() -> None:
    parent = os.getpid()

    def work(items: Sequence[int]) -> list[int]:
        if os.getpid() != parent:
            raise RuntimeError("the forked half fails")
        return squares(items)

    assert in_two(work, [5, 6, 7]) == ([25], [36, 49])


def test_the_halves_split_where_asked() -> None:
    assert in_two(squares, [1, 2, 3, 4, 5], at=4) == ([1, 4, 9, 16], [25])
    assert in_two(squares, [1, 2, 3, 4, 5], at=1) == ([1], [4, 9, 16, 25])


STOPPED_HERE = """
import os, sys
from reconciler.halves import in_two
parent = os.getpid()
def work(items):
    if os.getpid() != parent:
        open(sys.argv[1], "w").write(str(os.getpid()))
        return b"x" * (64 << 20)  # (far more than a pipe holds)
    import time
    while not os.path.exists(sys.argv[1]):
        time.sleep(0.01)
    if sys.argv[2] == "raise":
        raise KeyboardInterrupt  # (Ctrl-C here, while the other half is sent)
    os.kill(os.getpid(), 9)  # (killed here)
try:
    in_two(work, list(range(4)))
except KeyboardInterrupt:
    print("stopped")
"""


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as fh:  # (a zombie: ended, not yet reaped)
        return fh.read().rsplit(")", 1)[1].split()[0] == "Z"


@pytest.mark.parametrize("how", ["raise", "killed"])
def test_a_stopped_parent_leaves_no_forked_process_behind(tmp_path: Path, how: str) -> None:
    """Stopped while the other process sends its half (Ctrl-C, SIGTERM, or
    killed): it used to wait for ever, each for the other, or the forked one
    blocked for ever writing to a pipe nobody read."""
    pid_file = tmp_path / "worker.pid"
    proc = subprocess.run([sys.executable, "-c", STOPPED_HERE, str(pid_file), how],
                          capture_output=True, text=True, timeout=60, check=False)
    if how == "raise":
        assert proc.returncode == 0 and proc.stdout == "stopped\n", proc.stderr
    else:
        assert proc.returncode == -9
    worker = int(pid_file.read_text())
    deadline = time.monotonic() + 20
    while not _gone(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(worker), f"the forked process {worker} is still there"


KILLED_WHILE_IT_WORKS = """
import os, sys, time
from reconciler.halves import in_two
parent = os.getpid()
def work(items):
    if os.getpid() != parent:
        with open(sys.argv[1] + ".part", "w") as out:  # (whole when it is there)
            out.write(str(os.getpid()))
        os.replace(sys.argv[1] + ".part", sys.argv[1])
        time.sleep(60)  # (a long half: the parent is killed meanwhile)
        return items
    while not os.path.exists(sys.argv[1]):
        time.sleep(0.01)
    os.kill(os.getpid(), 9)
in_two(work, list(range(4)))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl(PR_SET_PDEATHSIG)")
def test_a_killed_parent_takes_its_forked_process_with_it(tmp_path: Path) -> None:
    """``kill -9`` of a reconcile (a CI job cancelled) while the other half is
    still at work: that process ends at once, quietly, rather than working on
    for nobody and then printing a BrokenPipeError into the job's log."""
    pid_file = tmp_path / "worker.pid"
    with subprocess.Popen([sys.executable, "-c", KILLED_WHILE_IT_WORKS, str(pid_file)],
                          stderr=subprocess.PIPE, text=True) as proc:
        assert proc.wait(timeout=60) == -9
        worker = int(pid_file.read_text())
        deadline = time.monotonic() + 10
        while not _gone(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(worker), f"the forked process {worker} works on"
        assert proc.stderr is not None and "Traceback" not in proc.stderr.read()
