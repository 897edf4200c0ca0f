"""The scheduler alone: ``reconcile_cycle`` timed on a captured cycle input.

``capture`` reads a fleet repo as ``fleetq reconcile`` would (its source commit,
and its state branch and cache unless ``--cold``) and pickles the ``CycleInput``
the reconcile would decide, without deciding it. ``run`` times
``reconcile_cycle`` on such a pickle with the fleetq of any checkout (this one
by default), and prints the seconds and a hash of the decisions, so that two
heads are compared on the very same input and shown to decide the same::

    python -m benchmarks.cycle capture FLEET cold.pickle --cold
    python -m benchmarks.cycle run cold.pickle [--fleetq ../other-checkout] [--repeat 3]
    python -m benchmarks.cycle run incremental.pickle --ahead
    python -m benchmarks.cycle run cold.pickle --passes
    python -m benchmarks.cycle again cold.pickle

``--passes`` also prints each pass of step 5: its seconds, and the queued jobs
it asked (-1 for a checkout that does not count them), admitted and evicted.
``again`` decides the input, then decides it again from those decisions as
the next reconcile reads them back from ``placements.yaml``, and prints how
many decisions changed in anything but their reason: the state a cycle ends
with must be a fixed point (0).

Run two ``run`` commands at the same time (one per core) to compare two heads
in the same minute: the machine's speed moves from hour to hour.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from benchmarks.pushes import fleetq_env

ROOT = Path(__file__).resolve().parent.parent
NOW = "2026-01-02T00:00:00Z"

# Run in a child with the chosen checkout's fleetq: capture, then stop before deciding.
CAPTURE = """
import gc, pickle, sys
gc.disable()
from reconciler import pipeline
from reconciler.gitops.repo import FleetRepo
repo, out, cold = FleetRepo(sys.argv[1]), sys.argv[2], sys.argv[3] == "cold"

class Captured(Exception):
    pass

def capture(inp, *rest):  # (ahead, progress: as the checkout passes them)
    with open(out, "wb") as fh:
        pickle.dump(inp, fh, protocol=pickle.HIGHEST_PROTOCOL)
    raise Captured

pipeline.reconcile_cycle = capture
branch = pipeline.state_ref(pipeline.settings_branch(repo, "HEAD"))
try:
    pipeline.compute(repo, source_rev="HEAD", now=pipeline.parse_now(sys.argv[4]),
                     state_base=None if cold else repo.resolve(branch),
                     cache=None if cold else pipeline.Cache(repo.git_dir))
except Captured:
    pass
"""

RUN = """
import gc, hashlib, pickle, sys, time
from dataclasses import replace
gc.disable()
from reconciler.core import cycle
from reconciler.core.cycle import reconcile_cycle
with open(sys.argv[1], "rb") as fh:
    inp = pickle.load(fh)
ahead = sys.argv[3] == "ahead" and hasattr(cycle, "prepare")
if sys.argv[4] == "passes":
    admit_queued = cycle._Cycle.admit_queued

    def timed(state):
        before = (time.perf_counter(), len(state.admitted), state.evictions)
        admit_queued(state)
        print(f"pass\t{getattr(state, 'pass_label', '')}\t"
              f"{time.perf_counter() - before[0]:.6f}\t{getattr(state, '_asked', -1)}\t"
              f"{len(state.admitted) - before[1]}\t{state.evictions - before[2]}", flush=True)

    cycle._Cycle.admit_queued = timed
if ahead:  # the input the state's reconcile expected next: without the jobs new to it
    expected = replace(inp, jobs=tuple(j for j in inp.jobs if j.key in inp.prior),
                       settled=frozenset())
for _ in range(int(sys.argv[2])):
    prepared = cycle.prepare(expected) if ahead else None  # (not timed)
    started = time.perf_counter()
    result = reconcile_cycle(inp, prepared) if ahead else reconcile_cycle(inp)
    seconds = time.perf_counter() - started
    del prepared
    if ahead and not result.ahead:
        raise SystemExit("the steps done ahead were not taken up: the input changed more")
    digest = hashlib.sha256(repr(result.decisions).encode()).hexdigest()[:16]
    print(f"{seconds:.6f} {len(result.decisions)} {digest}", flush=True)
"""

# Decide, then decide again from the decisions read back as the next reconcile reads them.
AGAIN = """
import gc, pickle, sys
from dataclasses import replace
gc.disable()
from reconciler.core.cycle import reconcile_cycle
from reconciler.fleet.state import read_placements, render_placements
with open(sys.argv[1], "rb") as fh:
    inp = pickle.load(fh)
first = reconcile_cycle(inp)
prior, problems = read_placements(render_placements(first.decisions))
assert not problems, problems[:3]
again = reconcile_cycle(replace(inp, prior=prior, settled=frozenset()))
was = {d.key: replace(d, reason="") for d in first.decisions}
changed = sorted(str(d.key) for d in again.decisions if replace(d, reason="") != was.get(d.key))
admitted = [sum(d.phase.value == "Admitted" for d in r.decisions) for r in (first, again)]
print(len(first.decisions), len(changed), *admitted)
print("\\n".join(changed[:5]))
"""


def again(captured: Path, *, fleetq: Path = ROOT) -> tuple[int, int, list[str], int, int]:
    """The number of decisions of a captured input; of those that change when it
    is decided again from them (read back from ``placements.yaml``: the next
    reconcile with nothing changed), and the first 5 of them; and the jobs
    admitted the first time and the second."""
    lines = _child(AGAIN, fleetq, str(captured.resolve())).stdout.splitlines()
    count, changed, first, second = (int(x) for x in lines[0].split())
    return count, changed, [line for line in lines[1:] if line], first, second


def _child(script: str, fleetq: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", script, *args], cwd=fleetq, check=True,
                          env=fleetq_env(fleetq), text=True, stdout=subprocess.PIPE)


def capture(fleet: Path, out: Path, *, cold: bool, fleetq: Path = ROOT) -> None:
    """Pickle the cycle input a reconcile of ``fleet``'s HEAD would decide."""
    out.unlink(missing_ok=True)
    _child(CAPTURE, fleetq, str(fleet.resolve()), str(out.resolve()),
           "cold" if cold else "state", NOW)
    if not out.exists():
        raise SystemExit(f"{fleet}: no cycle input was captured")


# A pass of step 5: its name (round and pass), seconds, and the queued jobs it
# asked, admitted and evicted (admitted: the change in admitted jobs, so a pass
# whose victims outnumber its admissions counts fewer than none).
Pass = tuple[str, float, int, int, int]


def run(captured: Path, *, repeat: int = 1, fleetq: Path = ROOT,
        ahead: bool = False, passes: list[list[Pass]] | None = None
        ) -> list[tuple[float, int, str]]:
    """(seconds, decisions, hash of the decisions) of each run of the cycle;
    with ``ahead``, steps 1-2 of the jobs the prior admitted done ahead (by a
    fleetq that has ``prepare``), on the input without the jobs the prior does
    not hold, as a watch does them before a push of new job files; not timed.
    ``passes``: given, each run's passes of step 5 are appended to it."""
    done = _child(RUN, fleetq, str(captured.resolve()), str(repeat),
                  "ahead" if ahead else "whole", "passes" if passes is not None else "")
    out = []
    these: list[Pass] = []
    for line in done.stdout.splitlines():
        if line.startswith("pass\t"):
            _, name, seconds, asked, admitted, evicted = line.split("\t")
            name = name or f"pass {len(these) + 1}"  # (a checkout that does not name them)
            these.append((name, float(seconds), int(asked), int(admitted), int(evicted)))
            continue
        seconds, count, digest = line.split()
        out.append((float(seconds), int(count), digest))
        if passes is not None:
            passes.append(these)
            these = []
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("capture", help="pickle the cycle input of a fleet repo's HEAD")
    p.add_argument("fleet", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--cold", action="store_true", help="no state, no cache (else both)")
    p = sub.add_parser("run", help="time reconcile_cycle on a captured input")
    p.add_argument("captured", type=Path)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--ahead", action="store_true",
                   help="steps 1-2 of the jobs admitted before done ahead, untimed, as a "
                        "watch does them before a push of new jobs")
    p.add_argument("--passes", action="store_true",
                   help="also print each pass of step 5: seconds, jobs asked, admitted "
                        "and evicted")
    p = sub.add_parser("again", help="decide a captured input, then again from its "
                       "decisions: how many change (a fixed point: none)")
    p.add_argument("captured", type=Path)
    for p in sub.choices.values():
        p.add_argument("--fleetq", type=Path, default=ROOT,
                       help="the checkout whose fleetq runs (default: this one)")
    args = parser.parse_args(argv)
    fleetq = args.fleetq.resolve()
    if args.command == "capture":
        capture(args.fleet, args.out, cold=args.cold, fleetq=fleetq)
        print(f"captured {args.out} ({args.out.stat().st_size:,} bytes)")
        return 0
    if args.command == "again":
        count, changed, names, first, second = again(args.captured, fleetq=fleetq)
        print(f"{count} decisions, {changed} changed when decided again from them "
              f"({first} admitted, then {second})  (fleetq of {fleetq})")
        for name in names:
            print(f"  {name}")
        return 0 if not changed else 1
    passes: list[list[Pass]] | None = [] if args.passes else None
    runs = run(args.captured, repeat=args.repeat, fleetq=fleetq, ahead=args.ahead,
               passes=passes)
    for i, (seconds, count, digest) in enumerate(runs):
        print(f"cycle {seconds:.2f} s  {count} decisions  {digest}  (fleetq of {fleetq})")
        for name, took, asked, admitted, evicted in passes[i] if passes is not None else ():
            print(f"  {name}: {took:.2f} s, {asked} queued jobs asked, {admitted} admitted, "
                  f"{evicted} evicted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
