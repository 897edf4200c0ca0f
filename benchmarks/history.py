"""A fleet with a long history and many files that never build, checked cold.

A fleet repo may hold YAML files fleetq cannot read as Kubernetes objects
(kustomize patches, a folder of drafts): each is an error, whose last good
version fleetq looks for in the source's history. On a fresh clone (no
cache: a CI runner) that look is the whole of a ``fleetq validate``'s cost.
This builds such a fleet from the bundled template (``--commits`` commits
that change no fleet file, ``--moved`` other files moved in one commit, then
``--broken`` patch files) and times ``fleetq validate -o json`` with the
fleetq of each checkout, in turns, the cache deleted before each run; it
prints the seconds and whether each checkout told the same problems::

    python -m benchmarks.history DIR [--commits 1000] [--broken 300] [--moved 2000]
        [--fleetq CHECKOUT ...] [--repeat 3]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.pushes import fleetq_env

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "fleet-repo-template"
IDENTITY = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
            "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost"}


def _git(repo: Path, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], input=data, check=True,
                          capture_output=True, env=fleetq_env(ROOT) | IDENTITY).stdout


def build(repo: Path, commits: int, broken: int, moved: int) -> None:
    """The fleet: the template, ``commits`` commits of a README (one
    ``git fast-import``), ``moved`` files moved in one commit, ``broken``
    patch files in the last."""
    if repo.exists():
        shutil.rmtree(repo)
    shutil.copytree(TEMPLATE, repo)
    old = repo / "old"
    old.mkdir()
    for i in range(moved):
        (old / f"f{i}.txt").write_text(f"k: {i}\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "the fleet")
    stream = []
    for i in range(commits):
        text = f"x{i}\n".encode()
        stream.append(b"commit refs/heads/main\ncommitter bench <bench@localhost> "
                      + f"{1_700_000_000 + i} +0000\n".encode() + b"data 2\nc\n"
                      + (b"from refs/heads/main^0\n" if i == 0 else b"")
                      + f"M 644 inline README.md\ndata {len(text)}\n".encode() + text + b"\n")
    _git(repo, "fast-import", "--quiet", data=b"".join(stream))
    _git(repo, "reset", "-q", "--hard", "main")
    if moved:
        _git(repo, "mv", "old", "new")
        _git(repo, "commit", "-qm", f"move {moved} files")
    patches = repo / "patches"
    patches.mkdir()
    for i in range(broken):
        (patches / f"p{i:04d}.yaml").write_text(
            f"- op: replace\n  path: /spec/replicas\n  value: {i}\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", f"{broken} patches")


def timed(repo: Path, fleetq: Path) -> tuple[float, bytes]:
    shutil.rmtree(repo / ".git" / "fleetq", ignore_errors=True)
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "reconciler.cli", "validate", "-o", "json"],
                          cwd=repo, env=fleetq_env(fleetq), capture_output=True, check=False)
    return time.perf_counter() - started, proc.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.history",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--broken", type=int, default=300)
    parser.add_argument("--moved", type=int, default=2000)
    parser.add_argument("--fleetq", type=Path, action="append")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    checkouts = [c.resolve() for c in args.fleetq or [ROOT]]
    build(args.dir, args.commits, args.broken, args.moved)
    seconds: dict[Path, list[float]] = {c: [] for c in checkouts}
    told: dict[Path, bytes] = {}
    for _ in range(args.repeat):
        for checkout in checkouts:  # (in turns: the machine's speed moves)
            took, out = timed(args.dir, checkout)
            seconds[checkout].append(took)
            told[checkout] = out
    first = told[checkouts[0]]
    print(f"{args.commits} commits, {args.moved} files moved, {args.broken} patch files: "
          f"`fleetq validate -o json`, no cache\n")
    print("| checkout | seconds | mean | × first | same problems |")
    print("|---|---|---:|---:|---|")
    base = sum(seconds[checkouts[0]]) / len(seconds[checkouts[0]])
    for checkout in checkouts:
        runs = seconds[checkout]
        mean = sum(runs) / len(runs)
        print(f"| {checkout} | {', '.join(f'{s:.2f}' for s in runs)} | {mean:.2f} | "
              f"{mean / base:.2f} | {'yes' if told[checkout] == first else 'no'} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
