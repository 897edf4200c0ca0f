"""Where the time of one ``fleetq reconcile`` goes, step by step.

Runs ``fleetq reconcile`` of a fleet repo (as the command runs it: a new
process, the cyclic collector off) with the fleetq of any checkout, each of its
steps timed on the wall clock, and prints them as a Markdown table, in the
order they first ran, each step's parts indented under it::

    python -m benchmarks.steps FLEET [--cold] [--fleetq CHECKOUT ...] [--repeat N]

``--cold`` deletes the state branch and the cache first (a first reconcile).
Several checkouts (``--fleetq`` again) run in turn, each from the same state
branch and cache, a column each: two heads side by side in the same minutes.
To time a push, keep a fleet (``benchmarks.run --keep DIR``), set its state
branch to a state of an older commit, and ``main`` to the pushed one. The
steps are timed by wrapping the functions that do them, so the times hold the
cost of the wrappers too (a few microseconds per call: those named here run a
few times per reconcile). A step a checkout does not have is left out.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from benchmarks.pushes import NOW, STATE, WRITTEN, fleetq_env

ROOT = Path(__file__).resolve().parent.parent

# (depth, module, owner or "", function, what it does)
STEPS = [
    (0, "reconciler.pipeline", "", "up_to_date", "is the state up to date?"),
    (0, "reconciler.pipeline", "", "compute", "read and decide"),
    (1, "reconciler.fleet.cache", "Cache", "load_jobs", "load the parsed jobs (cache)"),
    (1, "reconciler.fleet.cache", "Cache", "_saved_inputs", "load the fleet read last (cache)"),
    (1, "reconciler.pipeline", "", "read_inputs", "read the source commit"),
    (2, "reconciler.pipeline", "", "read_source", "list, read and parse its files"),
    (2, "reconciler.pipeline", "", "read_fleet", "build the fleet of them"),
    (1, "reconciler.fleet.cache", "Cache", "load_state", "load the state's decisions (cache)"),
    (1, "reconciler.pipeline", "", "_settled", "find the settled jobs"),
    (1, "reconciler.pipeline", "", "reconcile_cycle", "the cycle"),
    (2, "reconciler.core.cycle", "", "_left_out", "leave settled jobs out"),
    (2, "reconciler.core.cycle", "_Cycle", "resolve", "1: resolve"),
    (2, "reconciler.core.cycle", "_Cycle", "snapshot", "2: put admitted jobs back"),
    (2, "reconciler.core.cycle", "_Cycle", "admit_queued", "5: admit queued jobs (passes)"),
    (2, "reconciler.core.cycle", "_Cycle", "result", "6: positions and reasons"),
    (1, "reconciler.pipeline", "", "render_placements_reusing", "placements.yaml"),
    (1, "reconciler.pipeline", "", "render_state", "render the clusters' files"),
    (1, "reconciler.pipeline", "", "describe_changes", "describe the changes"),
    (0, "reconciler.gitops.repo", "FleetRepo", "write_tree", "write the state tree"),
    (0, "reconciler.pipeline", "", "commit_message", "the commit message"),
    (0, "reconciler.gitops.repo", "FleetRepo", "write_commit", "write the commit"),
    (0, "reconciler.pipeline", "", "_save_cache", "save the cache"),
    (1, "reconciler.fleet.cache", "Cache", "save_jobs", "the parsed jobs"),
    (1, "reconciler.fleet.cache", "Cache", "save_inputs", "the fleet read"),
    (1, "reconciler.fleet.cache", "Cache", "save_state", "the state's decisions"),
]

# In a child with the chosen checkout's fleetq: the command, its steps timed.
TIMED = """
import gc, importlib, json, os, sys, time
started = time.perf_counter()
gc.disable()
from reconciler import cli
imported = time.perf_counter() - started
steps = json.loads(sys.argv[1])
spent, order = {}, []

def timed(label, f):
    def g(*a, **k):
        if label not in spent:  # (listed in the order the steps first start)
            order.append(label)
            spent[label] = 0.0
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            spent[label] += time.perf_counter() - t
    return g

for i, (_, module, owner, name, _) in enumerate(steps):
    try:
        target = importlib.import_module(module)
        if owner:
            target = getattr(target, owner)
        f = getattr(target, name)
    except (ImportError, AttributeError):
        continue
    setattr(target, name, timed(i, f))
cli._ENDING = True  # as ``fleetq`` runs it (cli.run): what it built is never freed
t = time.perf_counter()
code = cli.main(sys.argv[2:])
total = time.perf_counter() - t
print(json.dumps({"imports": imported, "command": total, "code": code,
                  "spent": [[i, spent[i]] for i in order]}), flush=True)
os._exit(0)
"""


def steps(repo: Path, fleetq: Path) -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-c", TIMED, json.dumps(STEPS), "reconcile",
                           "--repo", str(repo), "--now", NOW, "-q"], env=fleetq_env(fleetq),
                          cwd=fleetq, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"fleetq reconcile failed:\n{proc.stderr}")
    got: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return got


def table(runs: list[tuple[str, dict[str, object]]]) -> str:
    """One column per run (its name over it), one row per step that any ran, in
    the order the steps first ran; a step's parts are marked under it (›)."""
    order: list[int] = []
    for _, got in runs:
        spent = got["spent"]
        assert isinstance(spent, list)
        for index, _ in spent:
            if index not in order:
                order.append(index)
    rows = ["| step | " + " | ".join(name for name, _ in runs) + " |",
            "|---|" + "---:|" * len(runs)]

    def row(label: str, values: Sequence[float | None]) -> str:
        cells = ["-" if v is None else f"{v:.2f}" for v in values]
        return f"| {label} | " + " | ".join(cells) + " |"

    rows.append(row("start the process and import fleetq",
                    [float(str(got["imports"])) for _, got in runs]))
    for index in order:
        depth, _, _, name, what = STEPS[index]
        values = [dict(got["spent"]).get(index) for _, got in runs]  # type: ignore[call-overload]
        rows.append(row(f"{'› ' * depth}{what} (`{name}`)", values))
    rest = []
    for _, got in runs:
        top = sum(seconds for index, seconds in got["spent"]  # type: ignore[attr-defined]
                  if STEPS[index][0] == 0)
        rest.append(float(str(got["command"])) - top)
    rows.append(row("the rest (fleet.yaml's settings, the summary line, ...)", rest))
    rows.append(row("the command, after its imports",
                    [float(str(got["command"])) for _, got in runs]))
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--fleetq", type=Path, action="append",
                        help="a checkout whose fleetq runs (default: this one); given more "
                        "than once, each runs in turn from the same state branch and cache")
    parser.add_argument("--cold", action="store_true",
                        help="delete the state branch and the cache first")
    parser.add_argument("--repeat", type=int, default=1, help="run them all this many times")
    args = parser.parse_args(argv)
    repo = args.repo.resolve()
    checkouts = [c.resolve() for c in args.fleetq or [ROOT]]
    cache = repo / ".git" / "fleetq"
    if args.cold:
        for ref in (STATE, WRITTEN):
            subprocess.run(["git", "-C", str(repo), "update-ref", "-d", ref],
                           check=False, capture_output=True)
        shutil.rmtree(cache, ignore_errors=True)
    state = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "-q", STATE],
                           capture_output=True, text=True, check=False).stdout.strip()
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        kept = Path(tmp) / "cache"
        if cache.exists():
            shutil.copytree(cache, kept)
        for _ in range(args.repeat):
            for checkout in checkouts:
                # each from the same state branch and cache
                shutil.rmtree(cache, ignore_errors=True)
                if kept.exists():
                    shutil.copytree(kept, cache)
                for ref in (STATE, WRITTEN):  # (as the clone that wrote it: see set_back_here)
                    subprocess.run(["git", "-C", str(repo), "update-ref",
                                    *([ref, state] if state else ["-d", ref])],
                                   check=False, capture_output=True)
                name = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short",
                                       "HEAD"], capture_output=True, text=True,
                                      check=False).stdout.strip() or checkout.name
                runs.append((f"`{name}`", steps(repo, checkout)))
    print(table(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
