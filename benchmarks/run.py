"""The reconcile benchmark: the parse floor and fleetq side by side, in one run.

For a synthetic fleet (``benchmarks.generate``) it times, each in a fresh
process so that peak memory (RSS) is per phase (``fleetq reconcile`` is the
command itself, timed from the process's start to its end, as a CI job, a cron
job or a git hook runs it):

1. floor: read every job blob with one ``git cat-file --batch`` and parse it
   with libyaml (``yaml.load_all`` with ``CSafeLoader``): no tool can read the
   fleet faster than this;
2. cold: ``fleetq reconcile`` with no state branch and no cache;
3. warm: the same again, with nothing changed (must make no commit);
4. incremental: after one new job is pushed;
5. quota: after a one-line change of one leaf's max in the quota tree;
6. watching: the state and ``main`` set back to where the cold reconcile left
   them, ``fleetq watch`` (``pipeline.watch``) started there, and the same two
   pushes made again (``main`` moved to the new job's commit, then to the
   quota change's). Each is timed from the push to the round's end (the state
   commit), and must give the same state commit as ``fleetq reconcile`` did;
7. the commands people read the fleet with, as new processes, with the cache
   the watch left: ``fleetq status`` (the table of every job) and ``fleetq
   explain`` of the new job (why it waits: the fleet decided from the state).

Every process reads fleetq's compiled bytecode, written beforehand where it is
missing (``pushes.compiled``), as an installed fleetq does.

It prints a table with seconds, ratio to the floor, jobs/second and peak RSS,
and with ``--write`` puts it into ``BENCHMARKS.md`` with the command used.

    python -m benchmarks.run --jobs 100000 --clusters 100 --nodes 50 --leaves 200 --write
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.generate import add_job, change_quota_line, generate_fleet
from benchmarks.pushes import NOW, STATE, WRITTEN, command, compiled, reconcile_command

ROOT = Path(__file__).resolve().parents[1]

_FLOOR = r"""
import json, resource, subprocess, sys, time, yaml
repo = sys.argv[1]
t = time.perf_counter()
out = subprocess.run(["git", "ls-tree", "-r", "-z", "main"], cwd=repo, capture_output=True,
                     check=True).stdout
shas = []
for rec in out.split(b"\0"):
    if rec:
        meta, path = rec.split(b"\t", 1)
        if path.startswith(b"jobs/"):
            shas.append(meta.split()[2])
proc = subprocess.Popen(["git", "cat-file", "--batch"], cwd=repo, stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE)
import threading
def feed():
    proc.stdin.write(b"".join(s + b"\n" for s in shas)); proc.stdin.close()
threading.Thread(target=feed, daemon=True).start()
docs = 0
for _ in shas:
    size = int(proc.stdout.readline().split()[2])
    data = proc.stdout.read(size); proc.stdout.read(1)
    for doc in yaml.load_all(data, Loader=yaml.CSafeLoader):
        docs += 1
proc.wait()
print(json.dumps({"seconds": time.perf_counter() - t, "docs": docs,
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""

_WATCH = r"""
import json, queue, resource, subprocess, sys, threading, time
from reconciler.gitops.repo import FleetRepo
from reconciler.pipeline import parse_now, watch
repo, now, pushes = sys.argv[1], sys.argv[2], sys.argv[3:]
rounds, stop, idle = queue.Queue(), threading.Event(), threading.Event()
thread = threading.Thread(target=watch, daemon=True, kwargs=dict(
    repo=FleetRepo(repo), stop=stop, report=rounds.put, now=parse_now(now),
    interval=3600.0, idle=idle.set))  # woken by the push itself
thread.start()
start = rounds.get()
assert start.error is None and start.outcome.computed is None, start.error  # up to date
out = []
for sha in pushes:
    idle.wait()  # a push comes while the watch waits (it reads the state up to date first)
    idle.clear()
    t = time.perf_counter()
    subprocess.run(["git", "update-ref", "refs/heads/main", sha], cwd=repo, check=True)
    done = rounds.get()
    assert done.error is None, done.error
    out.append({"seconds": time.perf_counter() - t, "commit": done.outcome.commit,
                "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss})
    del done  # (it holds the whole fleet: not kept through the next round)
stop.set()
thread.join()
print(json.dumps(out))
"""


@dataclass
class Phase:
    name: str
    seconds: float
    rss_kib: int
    commit: str | None = None
    commits: bool = True  # a reconcile (else a command that only reads: no commit column)


def _child(script: str, *args: str) -> Any:
    compiled(ROOT)
    proc = subprocess.run([sys.executable, "-c", script, *args], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark phase failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _phase(name: str, script: str, *args: str) -> Phase:
    return _as_phase(name, _child(script, *args))


def _as_phase(name: str, r: dict[str, object]) -> Phase:
    commit = r.get("commit")
    return Phase(name, float(str(r["seconds"])), int(str(r["rss"])),
                 str(commit) if commit else None)


def _reconcile(name: str, repo: Path) -> Phase:
    """The ``fleetq reconcile`` command, as users run it (``pushes.reconcile_command``);
    its commit is the state branch's new one, if it moved."""
    before = _rev_if_any(repo, STATE)
    seconds, rss = reconcile_command(repo, ROOT)
    after = _rev(repo, STATE)
    return Phase(name, seconds, rss, after if after != before else None)


def run(repo: Path, jobs: int) -> list[Phase]:
    phases = [_phase("floor: cat-file --batch + libyaml", _FLOOR, str(repo))]
    cache = repo / ".git" / "fleetq"
    shutil.rmtree(cache, ignore_errors=True)
    for ref in (STATE, WRITTEN):
        subprocess.run(["git", "update-ref", "-d", ref], cwd=repo, check=False)
    phases.append(_reconcile("cold reconcile (no state, no cache)", repo))
    phases.append(_reconcile("warm reconcile, no change", repo))
    cold_state = _rev(repo, STATE)
    before = _rev(repo, "refs/heads/main")
    pushed = add_job(repo, index=jobs + 1)
    phases.append(_reconcile("incremental: one new job", repo))
    quota = change_quota_line(repo)
    phases.append(_reconcile("quota tree: one-line change", repo))
    phases.append(_reconcile("the quota change again", repo))
    # The same two pushes again, from the same state, to one fleetq watch
    for ref, sha in (("refs/heads/main", before), (STATE, cold_state), (WRITTEN, cold_state)):
        subprocess.run(["git", "update-ref", ref, sha], cwd=repo, check=True)
    # (the reconciles above noted the quota change decided: the watch decides it, as
    # a watch that ran alone would)
    for noted in cache.glob("cache-*/unchanged.pickle"):
        noted.unlink()
    job, tree = _child(_WATCH, str(repo), NOW, pushed, quota)
    phases.append(_as_phase("watching: the same new job", job))
    phases.append(_as_phase("watching: the same quota change", tree))
    for name, args in (("status: every job", ("status",)),
                       ("explain: the new job", ("explain", _job_of(repo, pushed),
                                                 "--now", NOW))):
        seconds, rss = command(repo, ROOT, *args)
        phases.append(Phase(name, seconds, rss, commits=False))
    return phases


def _job_of(repo: Path, commit: str) -> str:
    """``namespace/name`` of the job ``add_job`` committed as ``commit``
    (``jobs/<namespace>/<name>.yaml``)."""
    path = subprocess.run(["git", "diff-tree", "--no-commit-id", "--name-only", "-r", commit],
                          cwd=repo, capture_output=True, text=True, check=True).stdout.split()[0]
    _, namespace, file = path.split("/")
    return f"{namespace}/{file.rsplit('.', 1)[0]}"


def _rev(repo: Path, ref: str) -> str:
    got = _rev_if_any(repo, ref)
    if got is None:
        raise SystemExit(f"benchmark: {ref} is missing in {repo}")
    return got


def _rev_if_any(repo: Path, ref: str) -> str | None:
    return subprocess.run(["git", "rev-parse", "--verify", "-q", ref], cwd=repo,
                          capture_output=True, text=True, check=False).stdout.strip() or None


def table(phases: list[Phase], jobs: int) -> str:
    floor = phases[0].seconds
    lines = ["| phase | seconds | × floor | jobs/s | peak RSS | commit |",
             "|---|---:|---:|---:|---:|---|"]
    for p in phases:
        commit = "-" if p.name.startswith("floor") or not p.commits else \
            (p.commit[:12] if p.commit else "none")
        lines.append(f"| {p.name} | {p.seconds:.2f} | {p.seconds / floor:.2f} | "
                     f"{jobs / p.seconds:,.0f} | {p.rss_kib / 1024:,.0f} MiB | {commit} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--leaves", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, default=None, help="build the fleet here, keep it")
    parser.add_argument("--write", action="store_true", help="add the table to BENCHMARKS.md")
    args = parser.parse_args(argv)
    tmp = None
    if args.keep is not None:
        repo = args.keep
    else:
        tmp = tempfile.mkdtemp(prefix="fleetq-bench-")
        repo = Path(tmp) / "fleet"
    try:
        t = time.perf_counter()
        generate_fleet(repo, jobs=args.jobs, clusters=args.clusters,
                       nodes_per_cluster=args.nodes, leaf_quotas=args.leaves, seed=args.seed)
        print(f"generated {args.jobs} jobs, {args.clusters} clusters x {args.nodes} nodes, "
              f"{args.leaves} leaf quotas in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        phases = run(repo, args.jobs)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    command = (f"python -m benchmarks.run --jobs {args.jobs} --clusters {args.clusters} "
               f"--nodes {args.nodes} --leaves {args.leaves}")
    text = table(phases, args.jobs)
    print(text)
    if args.write:
        header = (f"\n## {args.jobs:,} jobs, {args.clusters} clusters × {args.nodes} nodes, "
                  f"{args.leaves} leaf quotas\n\n`{command}` on {platform.machine()}, "
                  f"{os.cpu_count()} cores, Python {platform.python_version()}\n\n")
        path = ROOT / "BENCHMARKS.md"
        existing = path.read_text() if path.exists() else "# Benchmarks\n"
        path.write_text(existing.rstrip("\n") + "\n" + header + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
