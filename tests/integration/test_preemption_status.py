"""A preemption on a real repo: the victim leaves its cluster folder in the same
commit, and `fleetq status` says who preempted it."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import (
    QUEUED_CLUSTER_POLICY,
    commit_all,
    fleetq,
    make_fleet_repo,
    member_cluster,
    one_leaf_tree,
    placements,
    priority_classes,
    pytorchjob,
    run_reconcile,
    state_files,
    with_priority,
    write_files,
)

TREE = one_leaf_tree("8", "32Gi")

PRIORITIES = priority_classes(low=10, high=1000)


def test_status_shows_who_preempted_a_job(tmp_path: Path) -> None:
    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": TREE, "policy.yaml": QUEUED_CLUSTER_POLICY, "priorities.yaml": PRIORITIES,
        "clusters/c1.yaml": member_cluster("c1", cpu="8", memory="32Gi"),
        "jobs/low.yaml": with_priority(pytorchjob("low", workers=3, cpu="2"), "low")})
    run_reconcile(path, now="2026-11-29T11:00:00Z")
    assert placements(path)["default/low"]["phase"] == "Admitted"
    assert "clusters/c1/default/pytorchjob-low.yaml" in state_files(path)

    write_files(path, {"jobs/high.yaml": with_priority(pytorchjob("high", workers=3, cpu="2"),
                                                       "high")})
    commit_all(path, "an urgent job", date="2026-11-29T11:30:00Z")
    outcome = run_reconcile(path, now="2026-11-29T12:00:00Z")
    assert outcome.commit is not None
    items = placements(path)
    low, high = items["default/low"], items["default/high"]
    assert high["phase"] == "Admitted" and high["cluster"] == "c1"
    assert low["phase"] == "Queued" and "cluster" not in low
    assert low["preemptedBy"] == "PyTorchJob default/high"
    assert low["preemptions"] == 1
    assert low["enqueuedAt"] == "2026-11-29T10:00:00Z"  # keeps its place in the queue
    assert low["preemptionReason"] == "its priority is lower, in the same quota"
    files = state_files(path)
    assert "clusters/c1/default/pytorchjob-low.yaml" not in files  # gone in the same commit
    assert "clusters/c1/default/pytorchjob-high.yaml" in files

    table = fleetq("status", "--repo", str(path))
    assert table.returncode == 0, table.stderr
    header, *rows = table.stdout.splitlines()
    assert "PREEMPTED-BY" in header
    row = next(r for r in rows if " low " in f" {r} ")
    assert "PyTorchJob default/high (x1)" in row
    data = json.loads(fleetq("status", "--repo", str(path), "-o", "json").stdout)
    by_name = {i["job"]["name"]: i for i in data}
    assert by_name["low"]["preemptedBy"] == "PyTorchJob default/high"

    # Reconciling again changes nothing: the victim waits, the record stays.
    assert run_reconcile(path, now="2026-11-29T13:00:00Z").commit is None
