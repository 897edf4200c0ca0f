"""The benchmark itself, on a small synthetic fleet: its phases run, and a
``fleetq watch`` given the same pushes commits the same states as ``fleetq
reconcile`` did."""

from __future__ import annotations

from pathlib import Path

from benchmarks.generate import generate_fleet
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
