"""Work split in two: half of it in a forked process, at the same time.

A large reconcile has long single-threaded steps over independent items
(parsing 100,000 job files, formatting 100,000 items of ``placements.yaml``)
on a machine with more than one core. ``in_two`` runs such a step on the
first half of its items here and on the second half in a forked process,
which sends back its result pickled. The forked process shares the values
built so far (copy on write), so nothing is sent to it.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent ends
T = TypeVar("T")
R = TypeVar("R")


def two_cores() -> bool:
    """More than one core, and ``fork`` on this platform."""
    return (os.cpu_count() or 1) > 1 and hasattr(os, "fork")


def in_two(work: Callable[[Sequence[T]], R], items: Sequence[T],
           at: int | None = None) -> tuple[R, R]:
    """``(work(first half), work(second half))``, the second done by a forked
    process meanwhile; the halves split at item ``at`` (default: the middle).
    Where fork is not available, or the other process fails for any reason
    (its result is lost, never half-read), the second half is done here after
    the first: the same result, later."""
    import multiprocessing  # (here: a small fleet's commands never split work)

    half = len(items) // 2 if at is None else at
    mine, theirs = items[:half], items[half:]
    try:
        context = multiprocessing.get_context("fork")
    except ValueError:  # pragma: no cover - no fork on this platform
        return work(mine), work(theirs)
    receive, send = context.Pipe(duplex=False)
    worker = context.Process(target=_worker, args=(work, theirs, send, receive, os.getpid()),
                             daemon=True)
    worker.start()
    send.close()
    got: list[R] = []  # the other half's result, once received whole
    finished = False
    try:
        done_here = work(mine)
        with contextlib.suppress(EOFError, OSError, pickle.UnpicklingError):
            got.append(pickle.loads(receive.recv_bytes()))
        finished = True
    finally:
        receive.close()
        if not finished:  # (stopped: Ctrl-C, SIGTERM, an error) its half is not wanted
            worker.kill()
        worker.join()
    if not got or worker.exitcode != 0:
        return done_here, work(theirs)
    return done_here, got[0]


def _worker(work: Callable[[Sequence[T]], R], items: Sequence[T], send: Connection,
            receive: Connection, parent: int) -> None:
    # Its copy of the reading end, closed: should the parent end without reading
    # (killed), sending fails at once, rather than waiting for a reader for ever.
    receive.close()
    # Ctrl-C or SIGTERM to the process group ends it quietly: the parent, which
    # gets them too, stops it anyway.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _end_with(parent)
    try:
        send.send_bytes(pickle.dumps(work(items), protocol=pickle.HIGHEST_PROTOCOL))
    except OSError:  # (the parent ended, killed: nobody reads, and nobody is told)
        os._exit(1)
    finally:
        send.close()


def _end_with(parent: int) -> None:
    """Have this forked process killed when its parent ends (Linux), as the
    parent, killed (``kill -9``, a CI job cancelled), cannot stop it: its work
    is not wanted. (Elsewhere it ends once it has done its half.)"""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # (it ended before that was set)
        os._exit(1)
