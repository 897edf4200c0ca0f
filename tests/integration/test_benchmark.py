"""The benchmark itself, on a small synthetic fleet: its phases run, and a
``fleetq watch`` given the same pushes commits the same states as ``fleetq
reconcile`` did."""

from __future__ import annotations

import sys
from pathlib import Path

from benchmarks.generate import add_job, generate_fleet
from benchmarks.run import run, table


def test_the_benchmark_runs_and_watch_commits_what_reconcile_did(tmp_path: Path) -> None:
    repo = tmp_path / "fleet"
    generate_fleet(repo, jobs=300, clusters=4, nodes_per_cluster=4, leaf_quotas=8, seed=3)
    phases = {p.name: p for p in run(repo, 300)}
    assert phases["cold reconcile (no state, no cache)"].commit is not None
    assert phases["warm reconcile, no change"].commit is None
    incremental = phases["incremental: one new job"].commit
    assert incremental is not None
    assert phases["watching: the same new job"].commit == incremental
    assert phases["watching: the same quota change"].commit == \
        phases["quota tree: one-line change"].commit
    text = table(list(phases.values()), 300)
    assert text.count("\n") == len(phases) + 1 and "watching: the same new job" in text


def test_pushes_timed_both_ways_make_the_same_state_commits(tmp_path: Path) -> None:
    """``benchmarks.pushes``: the same pushes from the same state, by a new
    ``fleetq reconcile`` each and by one kept cache, give the same commits."""
    import subprocess

    from benchmarks.pushes import pushes

    repo = tmp_path / "fleet"
    generate_fleet(repo, jobs=200, clusters=3, nodes_per_cluster=3, leaf_quotas=6, seed=5)
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-m", "reconciler.cli", "reconcile", "--repo", str(repo),
                    "--now", "2026-01-02T00:00:00Z", "-q"], check=True, cwd=root)

    def head(ref: str) -> str:
        return subprocess.run(["git", "-C", str(repo), "rev-parse", ref], check=True,
                              capture_output=True, text=True).stdout.strip()

    base = head("main"), head("fleetq/state")
    each = pushes(repo, index=200, count=2, fleetq=root, kept=False)
    for ref, sha in zip(("refs/heads/main", "refs/heads/fleetq/state"), base, strict=True):
        subprocess.run(["git", "-C", str(repo), "update-ref", ref, sha], check=True)
    kept = pushes(repo, index=200, count=2, fleetq=root, kept=True)
    assert [c for _, _, c in each] == [c for _, _, c in kept]
    assert len({c for _, _, c in each}) == 2 and base[1] not in {c for _, _, c in each}
    assert all(seconds > 0 and peak > 0 for seconds, peak, _ in each + kept)


def test_the_captured_cycle_input_decides_what_the_reconcile_decided(tmp_path: Path) -> None:
    """``benchmarks.cycle``: the input captured from a fleet repo, cold and from its
    state, gives the decisions ``fleetq reconcile`` made there, run after run."""
    import hashlib

    from benchmarks.cycle import NOW, capture
    from benchmarks.cycle import run as run_cycle
    from reconciler.gitops.repo import FleetRepo
    from reconciler.pipeline import parse_now, reconcile

    repo = tmp_path / "fleet"
    generate_fleet(repo, jobs=120, clusters=3, nodes_per_cluster=3, leaf_quotas=6, seed=7)

    def digest(decisions: object) -> str:
        return hashlib.sha256(repr(decisions).encode()).hexdigest()[:16]

    cold = tmp_path / "cold.pickle"
    capture(repo, cold, cold=True)
    first = reconcile(FleetRepo(repo), now=parse_now(NOW))
    runs = run_cycle(cold, repeat=2)
    assert [(count, h) for _, count, h in runs] == [(120, digest(first.decisions))] * 2

    add_job(repo, index=121)  # decided from the state and the cache
    warm = tmp_path / "warm.pickle"
    capture(repo, warm, cold=False)
    second = reconcile(FleetRepo(repo), now=parse_now(NOW))
    assert second.commit is not None
    ((seconds, count, h),) = run_cycle(warm)
    assert (count, h) == (121, digest(second.decisions)) and seconds >= 0
    ((seconds, count, h),) = run_cycle(warm, ahead=True)  # the same, with steps done ahead
    assert (count, h) == (121, digest(second.decisions)) and seconds >= 0
