"""Time pushes of new jobs to a fleet repo, as fleetq of any checkout reconciles them.

Each push is one new job committed on ``main`` (``generate.add_job``, deterministic:
the same index on the same commit gives the same commit), then reconciled either by
a new ``fleetq reconcile`` process (the default) or by one long-lived process that
keeps one ``Cache`` in memory across pushes, as ``fleetq watch`` does (``--kept``).
fleetq is imported from ``--fleetq`` (a checkout; this one by default), so two
checkouts can be timed side by side on the very same pushes::

    python -m benchmarks.pushes FLEET --index 900400 --count 3 --reset MAIN STATE \\
        [--kept] [--fleetq ../other-checkout]

``--reset`` first sets ``main`` and the state branch (``fleetq/state``) to the given
commits, so that every run starts from the same state (and its cache, when the runs
keep it). Prints one line per push: seconds, peak RSS of the reconciling process, and
the state commit made.
"""

from __future__ import annotations

import argparse
import compileall
import functools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.generate import add_job

ROOT = Path(__file__).resolve().parent.parent
NOW = "2026-01-02T00:00:00Z"
STATE = "refs/heads/fleetq/state"
WRITTEN = "refs/fleetq/written/fleetq/state"  # the state fleetq last wrote (``written_ref``)

# The long-lived reconciler of --kept: one line in per push, one line out.
# Between pushes it does what ``pipeline.watch`` does while it waits: it drops the
# outcome (which holds the whole fleet and the state's files), collects, and
# freezes what is left.
KEPT = """
import gc, resource, sys, time
from reconciler.fleet.cache import Cache
from reconciler.gitops.repo import FleetRepo
from reconciler.pipeline import parse_now, reconcile
repo = FleetRepo(sys.argv[1])
cache = Cache(repo.git_dir)
for _ in sys.stdin:
    started = time.perf_counter()
    out = reconcile(repo, now=parse_now(sys.argv[2]), cache=cache)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    commit = out.commit
    del out
    gc.collect()
    gc.freeze()
    print(f"{seconds:.2f} {peak} {commit or 'none'}", flush=True)
"""


def fleetq_env(fleetq: Path) -> dict[str, str]:
    """The environment of a process that imports the fleetq of checkout
    ``fleetq``, compiled (``compiled``)."""
    compiled(fleetq)
    return dict(os.environ, PYTHONPATH=str(fleetq))


@functools.cache
def compiled(fleetq: Path) -> None:
    """Write the bytecode of the fleetq of checkout ``fleetq`` where it is
    missing or stale, as installing a package does: each process timed then
    reads it rather than compiling the sources again (which costs as much as
    the rest of the imports, and happens in every process where writing
    bytecode is off, ``PYTHONDONTWRITEBYTECODE``)."""
    compileall.compile_dir(str(fleetq / "reconciler"), quiet=1)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def reconcile_command(repo: Path, fleetq: Path) -> tuple[float, int]:
    """``fleetq reconcile`` of ``repo`` as a new process, as a CI job, a cron job or a
    git hook runs it: seconds from its start to its end (its imports included) and
    the peak RSS in KiB of the largest of it and the parse workers it waited for."""
    return command(repo, fleetq, "reconcile", "--now", NOW, "-q")


def command(repo: Path, fleetq: Path, *args: str) -> tuple[float, int]:
    """``fleetq ARGS`` of ``repo`` as a new process, timed as ``reconcile_command``
    (its output is not kept)."""
    with tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "reconciler.cli", *args,
                                  "--repo", str(repo)],
                                 env=fleetq_env(fleetq), cwd=fleetq, stdout=subprocess.DEVNULL,
                                 stderr=errors)
        _, status, usage = os.wait4(child.pid, 0)  # (the largest of it and its children)
        seconds = time.perf_counter() - started
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            errors.seek(0)
            raise RuntimeError(f"fleetq {args[0]} failed ({code}):\n"
                               f"{errors.read().decode(errors='replace')}")
    return seconds, usage.ru_maxrss


def pushes(repo: Path, *, index: int, count: int, fleetq: Path, kept: bool
           ) -> list[tuple[float, int, str]]:
    """(seconds, peak RSS in MiB, state commit) of each push."""
    out = []
    worker = subprocess.Popen([sys.executable, "-c", KEPT, str(repo), NOW], env=fleetq_env(fleetq),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              cwd=fleetq) if kept else None
    try:
        for i in range(count):
            add_job(repo, index=index + i)
            if worker is not None:
                assert worker.stdin is not None and worker.stdout is not None
                worker.stdin.write("push\n")
                worker.stdin.flush()
                line = worker.stdout.readline().split()
                if len(line) != 3:
                    raise RuntimeError("the kept reconciler stopped; see its stderr")
                out.append((float(line[0]), int(line[1]), line[2]))
                continue
            seconds, peak = reconcile_command(repo, fleetq)
            out.append((seconds, peak // 1024, _git(repo, "rev-parse", STATE)))
    finally:
        if worker is not None:
            assert worker.stdin is not None
            worker.stdin.close()
            worker.wait()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("fleet", type=Path, help="a fleet repo (benchmarks.generate)")
    parser.add_argument("--index", type=int, required=True,
                        help="the first new job's index (beyond the fleet's jobs)")
    parser.add_argument("--count", type=int, default=3)
    parser.add_argument("--reset", nargs=2, metavar=("MAIN", "STATE"),
                        help="set main and the state branch to these commits first")
    parser.add_argument("--kept", action="store_true",
                        help="one process, one Cache kept across pushes (as fleetq watch)")
    parser.add_argument("--fleetq", type=Path, default=ROOT,
                        help="the checkout whose fleetq reconciles (default: this one)")
    args = parser.parse_args(argv)
    if args.reset:
        _git(args.fleet, "update-ref", "refs/heads/main", args.reset[0])
        _git(args.fleet, "update-ref", STATE, args.reset[1])
        _git(args.fleet, "update-ref", WRITTEN, args.reset[1])  # (see set_back_here)
    fleetq = args.fleetq.resolve()
    mode = "one kept Cache" if args.kept else "a new process each"
    print(f"{args.count} pushes to {args.fleet}, fleetq of {fleetq}, {mode}")
    for i, (seconds, peak, commit) in enumerate(pushes(
            args.fleet, index=args.index, count=args.count, fleetq=fleetq, kept=args.kept)):
        print(f"push {i}: {seconds:6.2f} s  {peak:5d} MiB  {commit[:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
