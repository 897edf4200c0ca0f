"""The benchmark itself, on a small synthetic fleet: its phases run, and a
``fleetq watch`` given the same pushes commits the same states as ``fleetq
reconcile`` did."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.generate import add_job, generate_fleet
from benchmarks.history import ROOT, timed
from benchmarks.history import main as history_main
from benchmarks.run import run, table


def test_the_benchmark_runs_and_watch_commits_what_reconcile_did(tmp_path: Path) -> None:
    repo = tmp_path / "fleet"
    generate_fleet(repo, jobs=300, clusters=4, nodes_per_cluster=4, leaf_quotas=8, seed=3)
    phases = {p.name: p for p in run(repo, 300)}
    assert phases["cold reconcile (no state, no cache)"].commit is not None
    assert phases["warm reconcile, no change"].commit is None
    assert phases["the quota change again"].commit is None
    incremental = phases["incremental: one new job"].commit
    assert incremental is not None
    assert phases["watching: the same new job"].commit == incremental
    assert phases["watching: the same quota change"].commit == \
        phases["quota tree: one-line change"].commit
    text = table(list(phases.values()), 300)
    assert text.count("\n") == len(phases) + 1 and "watching: the same new job" in text
    for name in ("status: every job", "explain: the new job"):  # they only read: no commit
        assert phases[name].seconds > 0 and f"| {name} |" in text
        assert next(line for line in text.splitlines() if f"| {name} |" in line).endswith(
            "| - |")


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

    from benchmarks.cycle import NOW, again, capture
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
    passes: list = []
    runs = run_cycle(cold, repeat=2, passes=passes)
    assert [(count, h) for _, count, h in runs] == [(120, digest(first.decisions))] * 2
    # each run's passes of step 5: every queued job admitted in one of them, and the
    # last one changed nothing (that is how the cycle knows it is done)
    assert len(passes) == 2 and passes[0][0][0] == "round 1, pass 1"
    admitted = sum(d.phase.value == "Admitted" for d in first.decisions)
    for each in passes:
        assert [p[0] for p in each] == [p[0] for p in passes[0]]
        assert sum(p[3] for p in each) == admitted > 0
        assert each[-1][3:] == (0, 0) and all(p[2] >= p[3] for p in each)

    add_job(repo, index=121)  # decided from the state and the cache
    warm = tmp_path / "warm.pickle"
    capture(repo, warm, cold=False)
    second = reconcile(FleetRepo(repo), now=parse_now(NOW))
    assert second.commit is not None
    ((seconds, count, h),) = run_cycle(warm)
    assert (count, h) == (121, digest(second.decisions)) and seconds >= 0
    ((seconds, count, h),) = run_cycle(warm, ahead=True)  # the same, with steps done ahead
    assert (count, h) == (121, digest(second.decisions)) and seconds >= 0
    # decided again from its own decisions, read back as the state: a fixed point
    count, changed, names, first_admitted, then = again(cold)
    assert (count, changed, names) == (120, 0, []) and first_admitted == then == admitted


def test_the_steps_of_a_reconcile_are_timed_and_it_commits_as_the_command(
        tmp_path: Path) -> None:
    """``benchmarks.steps``: a cold reconcile and a push, each step timed, make the
    commits ``fleetq reconcile`` makes; a step runs inside the one it is part of."""
    import subprocess

    from benchmarks.pushes import STATE
    from benchmarks.steps import STEPS, main, steps, table

    repo = tmp_path / "fleet"
    generate_fleet(repo, jobs=150, clusters=3, nodes_per_cluster=3, leaf_quotas=6, seed=7)
    root = Path(__file__).resolve().parents[2]
    cold = steps(repo, root)
    names = [STEPS[i][3] for i, _ in cold["spent"]]  # type: ignore[union-attr]
    assert names[:2] == ["up_to_date", "compute"]
    assert {"read_source", "reconcile_cycle", "render_state", "write_tree", "write_commit",
            "_save_cache", "save_state"} <= set(names)
    assert "load_state" not in names  # cold: no state to load
    spent = dict(cold["spent"])  # type: ignore[arg-type]
    index = {STEPS[i][3]: i for i in spent}
    assert spent[index["read_source"]] <= spent[index["compute"]]
    assert spent[index["reconcile_cycle"]] <= spent[index["compute"]]
    committed = subprocess.run(["git", "-C", str(repo), "rev-parse", STATE],
                               capture_output=True, text=True, check=True).stdout.strip()

    # The same cold reconcile by the command: the same commit.
    subprocess.run(["git", "-C", str(repo), "update-ref", "-d", STATE], check=True)
    subprocess.run([sys.executable, "-m", "reconciler.cli", "reconcile", "--repo", str(repo),
                    "--now", "2026-01-02T00:00:00Z", "-q", "--no-cache"], check=True, cwd=root)
    assert subprocess.run(["git", "-C", str(repo), "rev-parse", STATE], capture_output=True,
                          text=True, check=True).stdout.strip() == committed

    add_job(repo, index=151)
    push = steps(repo, root)
    pushed = [STEPS[i][3] for i, _ in push["spent"]]  # type: ignore[union-attr]
    assert "load_state" in pushed and "read_source" not in pushed  # patched from the cache
    text = table([("push", push), ("cold", cold)])
    lines = text.splitlines()
    assert lines[0] == "| step | push | cold |"
    assert any(line.startswith("| › load the state's decisions") and line.endswith(" | - |")
               for line in lines)  # run by the push only
    # From scratch, twice in turn, as the command line runs it: a column each, and the
    # state branch where a cold reconcile leaves it.
    assert main([str(repo), "--cold", "--fleetq", str(root), "--fleetq", str(root)]) == 0
    assert subprocess.run(["git", "-C", str(repo), "rev-parse", STATE], capture_output=True,
                          text=True, check=True).stdout.strip() == committed_again(repo, root)


def committed_again(repo: Path, root: Path) -> str:
    """The state commit a cold ``fleetq reconcile`` of ``repo``'s source makes (in a
    copy of it)."""
    import shutil
    import subprocess

    from benchmarks.pushes import STATE

    copy = repo.parent / "copy"
    shutil.copytree(repo, copy)
    subprocess.run(["git", "-C", str(copy), "update-ref", "-d", STATE], check=True)
    subprocess.run([sys.executable, "-m", "reconciler.cli", "reconcile", "--repo", str(copy),
                    "--now", "2026-01-02T00:00:00Z", "-q", "--no-cache"], check=True, cwd=root)
    return subprocess.run(["git", "-C", str(copy), "rev-parse", STATE], capture_output=True,
                          text=True, check=True).stdout.strip()


def test_the_history_benchmark_builds_its_fleet_and_every_patch_is_told(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The fleet it times has the history it says (its commits, a move) and
    the patch files, each an error fleetq tells; the table names the
    checkout, with the same problems as itself."""
    repo = tmp_path / "fleet"
    assert history_main([str(repo), "--commits", "30", "--broken", "5", "--moved", "40",
                         "--repeat", "1"]) == 0
    log = subprocess.run(["git", "-C", str(repo), "log", "--oneline"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert len(log) == 1 + 30 + 1 + 1
    _, out = timed(repo, ROOT)
    told = json.loads(out)
    assert sorted(p["path"] for p in told if p["path"].startswith("patches/")) == [
        f"patches/p{i:04d}.yaml" for i in range(5)]
    assert all(p["severity"] == "error" for p in told if p["path"].startswith("patches/"))
    table = capsys.readouterr().out
    assert "30 commits, 40 files moved, 5 patch files" in table
    assert f"| {ROOT} | " in table and table.rstrip().endswith("| 1.00 | yes |")
