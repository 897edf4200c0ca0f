"""Incremental by content: the parse cache and the up-to-date state, on real repos."""

from __future__ import annotations

import os
import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reconciler.core.model import Decision

from .conftest import (
    NOW,
    QUEUED_CLUSTER_POLICY,
    REPO_ROOT,
    STATE,
    commit_all,
    fleetq,
    git,
    make_fleet_repo,
    member_cluster,
    no_state,
    one_leaf_tree,
    placements,
    priority_classes,
    pytorchjob,
    rev,
    run_reconcile,
    with_priority,
    write_files,
)

TREE = one_leaf_tree("64", "256Gi", leaf_max_extra=', kube-queue/max-jobs: "3"')
PRIORITIES = priority_classes(high=1000)


def fleet(tmp_path: Path) -> Path:
    return make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": TREE, "policy.yaml": QUEUED_CLUSTER_POLICY,
        "clusters/c1.yaml": member_cluster("c1", cpu="64", memory="256Gi"),
        **{f"jobs/j{i}.yaml": pytorchjob(f"j{i}") for i in range(4)}})


def reconciled_from_scratch(path: Path, full: Path, base: str) -> str | None:
    """The state tree of ``path``'s source commit reconciled from state ``base``
    in a copy at ``full`` with no cache (so with nothing settled)."""
    shutil.copytree(path, full)
    shutil.rmtree(full / ".git" / "fleetq")
    git(full, "update-ref", f"refs/heads/{STATE}", base)
    run_reconcile(full, use_cache=False)
    return rev(full, f"{STATE}^{{tree}}")


def cache_dirs(path: Path) -> list[Path]:
    return sorted((path / ".git" / "fleetq").glob("cache-v*"))


def test_cache_lives_in_the_git_dir_and_changes_nothing(tmp_path: Path) -> None:
    path = fleet(tmp_path)
    first = run_reconcile(path)
    assert first.commit is not None
    (cache,) = cache_dirs(path)
    assert list(cache.glob("jobs-*.pickle"))
    assert (cache / f"state-{first.commit}.pickle").is_file()
    assert git(path, "status", "--porcelain") == ""  # nothing in the work tree

    # One more job: read from the cache for the old files, parsed for the new one.
    write_files(path, {"jobs/j9.yaml": pytorchjob("j9")})
    commit_all(path, "one more job")
    with_cache = run_reconcile(path)
    tree_with_cache = rev(path, f"{STATE}^{{tree}}")

    # The same reconcile with no cache at all gives the same state, byte for byte.
    shutil.rmtree(path / ".git" / "fleetq")
    git(path, "update-ref", f"refs/heads/{STATE}", first.commit)
    without_cache = run_reconcile(path, use_cache=False)
    assert rev(path, f"{STATE}^{{tree}}") == tree_with_cache
    assert with_cache.commit is not None and without_cache.commit is not None
    assert set(placements(path)) == {f"default/j{i}" for i in (0, 1, 2, 3, 9)}


def test_a_changed_file_is_parsed_again(tmp_path: Path) -> None:
    path = fleet(tmp_path)
    run_reconcile(path)
    write_files(path, {"jobs/j0.yaml": pytorchjob("j0", cpu="2")})
    commit_all(path, "bigger j0")
    run_reconcile(path)
    assert placements(path)["default/j0"]["requests"]["cpu"] == "4"  # master 2 + worker 2


def test_a_damaged_cache_is_dropped_not_trusted(tmp_path: Path) -> None:
    path = fleet(tmp_path)
    run_reconcile(path)
    (cache,) = cache_dirs(path)
    for shard in cache.glob("jobs-*.pickle"):
        shard.write_bytes(b"not a pickle")
    for state in cache.glob("state-*.pickle"):
        state.write_bytes(b"\x80\x05garbage")
    write_files(path, {"jobs/j5.yaml": pytorchjob("j5")})
    commit_all(path, "j5")
    outcome = run_reconcile(path)
    assert outcome.commit is not None
    assert set(placements(path)) == {f"default/j{i}" for i in (0, 1, 2, 3, 5)}


def test_a_cache_file_of_another_layout_is_dropped_not_trusted(tmp_path: Path) -> None:
    """A pickle that reads, but not as parsed jobs (another program's, a hand
    edit): dropped, as a damaged one is, not a traceback."""
    path = fleet(tmp_path)
    run_reconcile(path)
    (cache,) = cache_dirs(path)
    shards = sorted(cache.glob("jobs-*.pickle"))
    shards[0].write_bytes(pickle.dumps({"x": [1, 2]}))
    shards[-1].write_bytes(pickle.dumps([("a", "b")]))
    write_files(path, {"jobs/j5.yaml": pytorchjob("j5")})
    commit_all(path, "j5")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert set(placements(path)) == {f"default/j{i}" for i in (0, 1, 2, 3, 5)}
    assert all(pickle.loads(s.read_bytes()) != {"x": [1, 2]}
               for s in cache.glob("jobs-*.pickle"))


def test_a_cache_of_another_format_is_removed(tmp_path: Path) -> None:
    path = fleet(tmp_path)
    old = path / ".git" / "fleetq" / "cache-v0-0.0.1"
    old.mkdir(parents=True)
    (old / "jobs.pickle").write_bytes(b"old")
    run_reconcile(path)
    assert old not in cache_dirs(path)
    assert len(cache_dirs(path)) == 1


def test_an_up_to_date_state_is_not_recomputed(tmp_path: Path) -> None:
    path = fleet(tmp_path)
    first = run_reconcile(path)
    message = git(path, "log", "-1", "--format=%B", STATE).strip().splitlines()
    source = rev(path, "HEAD")
    assert message[-1] == f"Fleet-Source-Commit: {source}"
    assert f"Fleet-Source-Tree: {rev(path, 'HEAD^{tree}')}" in message
    again = run_reconcile(path, now="2027-01-01T00:00:00Z")
    assert again.computed is None and again.commit is None
    assert again.source is not None and again.source.sha == source
    assert rev(path, STATE) == first.commit
    # A new source commit with the same tree is up to date too.
    git(path, "commit", "--allow-empty", "-q", "-m", "empty")
    assert run_reconcile(path).computed is None
    # A commit that changes a file fleetq does not read is computed, and changes nothing.
    write_files(path, {"NOTES.md": "notes\n"})
    commit_all(path, "notes")
    third = run_reconcile(path)
    assert third.computed is not None and third.commit is None
    assert rev(path, STATE) == first.commit


def test_a_push_that_changes_no_decision_is_decided_once(tmp_path: Path) -> None:
    """No commit records that the state holds a source tree whose push changed
    no decision; the cache does, and a reconcile of that tree from that state
    again is up to date, telling what deciding it told."""
    path = fleet(tmp_path)
    first = run_reconcile(path)
    write_files(path, {"NOTES.md": "notes\n"})
    commit_all(path, "notes")
    decided = run_reconcile(path)
    assert decided.computed is not None and decided.commit is None
    again = run_reconcile(path, now="2026-12-01T00:00:00Z")
    assert again.computed is None and again.commit is None and again.problems == []
    assert again.source is not None and again.source.sha == rev(path, "HEAD")
    assert rev(path, STATE) == first.commit
    # Without the cache, it is decided again (and still changes nothing).
    assert run_reconcile(path, use_cache=False).computed is not None
    # A job written as JSON is not read, and told of: no decision changes, and a
    # reconcile of that tree again tells the same, without deciding again.
    write_files(path, {"jobs/j8.json": '{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob"}'})
    commit_all(path, "a job as JSON")
    told = []
    for _ in range(2):
        proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
        assert proc.returncode == 0, proc.stderr
        told.append((proc.stdout.splitlines()[0], proc.stderr))
    assert "jobs/j8.json:" in told[0][1] and told[1][1] == told[0][1]
    assert told[0][0].startswith("no change: ") and "up to date" not in told[0][0]
    assert told[1][0] == f"no change: {STATE} is up to date with {rev(path, 'HEAD')[:12]}"
    assert rev(path, STATE) == first.commit
    # Another state commit (a new job admitted): that tree is decided from it anew,
    # and a reconcile of it again tells what the one that committed told.
    write_files(path, {"jobs/j9.yaml": pytorchjob("j9")})
    commit_all(path, "one more job")
    told = []
    for _ in range(2):
        proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
        assert proc.returncode == 0, proc.stderr
        told.append((proc.stdout.splitlines()[0], proc.stderr))
    assert told[0][0].startswith("committed ") and "jobs/j8.json:" in told[0][1]
    assert told[1] == (f"no change: {STATE} is up to date with {rev(path, 'HEAD')[:12]}",
                       told[0][1])
    assert run_reconcile(path).computed is None


def test_parsing_in_two_processes_gives_the_same_state(tmp_path: Path, monkeypatch) -> None:
    """Many new files are parsed by two processes; the state is the same byte for byte,
    and a bad file in either half is reported as it is by one process."""
    from reconciler import pipeline

    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": TREE, "policy.yaml": QUEUED_CLUSTER_POLICY,
        "clusters/c1.yaml": member_cluster("c1", cpu="64", memory="256Gi"),
        **{f"jobs/j{i:02}.yaml": pytorchjob(f"j{i:02}") for i in range(24)},
        "jobs/broken.yaml": "kind: [unclosed\n",
        "jobs/zz-bad.yaml": pytorchjob("zz-bad").replace("replicas: 1", "replicas: -1", 1)})
    calls: list[int] = []
    real = pipeline.parse_in_parallel

    def counted(repo, entries, *rest):  # the real function, counted
        calls.append(len(entries))
        return real(repo, entries, *rest)

    monkeypatch.setattr(pipeline, "parse_in_parallel", counted)
    monkeypatch.setattr(pipeline, "PARALLEL_MIN_FILES", 10)
    parallel = run_reconcile(path, use_cache=False)
    assert calls == [29]  # every YAML file but fleet.yaml: 24 jobs, 2 bad, 3 others
    tree = rev(path, f"{STATE}^{{tree}}")
    message = git(path, "log", "-1", "--format=%B", STATE)

    monkeypatch.setattr(pipeline, "PARALLEL_MIN_FILES", 10_000)
    no_state(path)
    single = run_reconcile(path, use_cache=False)
    assert calls == [29]
    assert rev(path, f"{STATE}^{{tree}}") == tree
    assert git(path, "log", "-1", "--format=%B", STATE) == message
    assert parallel.computed is not None and single.computed is not None
    assert parallel.computed.problems == single.computed.problems
    assert any(p.path == "jobs/broken.yaml" for p in single.computed.problems)
    assert any(p.path == "jobs/zz-bad.yaml" for p in single.computed.problems)


def test_many_new_parsed_jobs_are_saved_by_a_forked_process_the_same(
        tmp_path: Path, monkeypatch, forks: list[int]) -> None:
    """A reconcile that parsed many new files has a forked process write them to
    the cache while the cycle runs: the same shard files, byte for byte, as
    written at the end; and that process has ended when the reconcile returns."""
    import os

    from reconciler.fleet import cache as cache_module

    files = {f"jobs/j{i:02}.yaml": pytorchjob(f"j{i:02}") for i in range(24)}
    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": TREE, "policy.yaml": QUEUED_CLUSTER_POLICY,
        "clusters/c1.yaml": member_cluster("c1", cpu="64", memory="256Gi"), **files})

    def shards() -> dict[str, bytes]:
        (cache,) = cache_dirs(path)
        return {p.name: p.read_bytes() for p in sorted(cache.glob("jobs-*.pickle"))}

    monkeypatch.setattr(cache_module, "BEHIND_MIN_ENTRIES", 10)
    behind = run_reconcile(path)
    assert len(forks) == 1
    with pytest.raises(ChildProcessError):  # waited for already
        os.waitpid(forks[0], os.WNOHANG)
    written_behind = shards()
    assert len(written_behind) >= 8  # 24 jobs spread over the shards

    shutil.rmtree(path / ".git" / "fleetq")
    no_state(path)
    monkeypatch.setattr(cache_module, "BEHIND_MIN_ENTRIES", 10_000)
    at_the_end = run_reconcile(path)
    assert len(forks) == 1
    assert shards() == written_behind
    assert behind.commit == at_the_end.commit

    # Files deleted and many added: the forked process drops the stale entries too.
    monkeypatch.setattr(cache_module, "BEHIND_MIN_ENTRIES", 10)
    git(path, "rm", "-q", "jobs/j00.yaml", "jobs/j01.yaml")
    write_files(path, {f"jobs/k{i:02}.yaml": pytorchjob(f"k{i:02}") for i in range(12)})
    commit_all(path, "two jobs gone, twelve new")
    run_reconcile(path)
    assert len(forks) == 2
    listed = git(path, "ls-tree", "-r", "HEAD", "jobs/").splitlines()
    fleet_files = {(line.split()[2], line.split("\t")[1]) for line in listed}
    (cache,) = cache_dirs(path)
    cached = {k for shard in cache.glob("jobs-*.pickle")
              for k in pickle.loads(shard.read_bytes())}
    assert cached == fleet_files


def test_shards_a_forked_process_failed_to_write_are_written_at_the_end(
        tmp_path: Path, monkeypatch) -> None:
    """The forked writer fails (its folder cannot be made): every shard is written
    by the reconciling process when it saves the cache."""
    from reconciler.fleet import cache as cache_module
    from reconciler.fleet.cache import Cache

    monkeypatch.setattr(cache_module, "BEHIND_MIN_ENTRIES", 4)
    cache = Cache(tmp_path / "git")
    entries = {(f"{i:02x}" + "0" * 38, f"jobs/j{i}.yaml"): [] for i in range(0, 240, 40)}
    for (blob, file), entry in entries.items():
        cache.put_job_entry(blob, file, entry)
    good = cache.dir
    (tmp_path / "not-a-folder").write_text("")
    cache.dir = tmp_path / "not-a-folder" / "cache"
    keep = {file: blob for blob, file in entries}
    cache.save_jobs_behind(keep)
    assert cache._behind is not None
    cache.dir = good
    cache.save_jobs(keep)  # waits for it, finds it failed, writes every shard
    assert cache._behind is None
    written = {k: v for shard in good.glob("jobs-*.pickle")
               for k, v in pickle.loads(shard.read_bytes()).items()}
    assert written == entries


def test_a_new_job_rewrites_only_its_shard_of_the_cache(tmp_path: Path) -> None:
    path = fleet(tmp_path)
    run_reconcile(path)
    (cache,) = cache_dirs(path)
    before = {p.name: p.stat().st_ino for p in cache.glob("jobs-*.pickle")}
    assert len(before) >= 2  # four jobs and three other files spread over shards
    write_files(path, {"jobs/j7.yaml": pytorchjob("j7")})
    commit_all(path, "j7")
    run_reconcile(path)
    blob = rev(path, "HEAD:jobs/j7.yaml")
    assert blob is not None
    after = {p.name: p.stat().st_ino for p in cache.glob("jobs-*.pickle")}
    rewritten = {name for name, ino in after.items() if before.get(name) != ino}
    assert rewritten == {f"jobs-{blob[:2]}.pickle"}


def test_the_jobs_of_files_no_longer_in_the_fleet_are_dropped_from_the_cache(
        tmp_path: Path) -> None:
    """A changed, a deleted and a moved job file: the cache keeps one entry for
    each jobs-only file of the fleet, under its blob and path now."""
    from reconciler.fleet.cache import Cache
    from reconciler.gitops.repo import FleetRepo

    path = fleet(tmp_path)
    run_reconcile(path)

    def entries() -> set[tuple[str, str]]:
        cache = Cache(FleetRepo(path).git_dir)
        cache.load_jobs()
        return {k for shard in cache.shards.values() for k in shard}

    def jobs_files() -> set[tuple[str, str]]:
        listed = git(path, "ls-tree", "-r", "HEAD", "jobs/").splitlines()
        return {(line.split()[2], line.split("\t")[1]) for line in listed}

    assert entries() == jobs_files()
    write_files(path, {"jobs/j0.yaml": pytorchjob("j0", cpu="3"),
                       "jobs/moved/j2.yaml": pytorchjob("j2")})
    git(path, "rm", "-q", "jobs/j1.yaml", "jobs/j2.yaml")
    commit_all(path, "change, delete, move")
    run_reconcile(path)
    assert entries() == jobs_files()


def test_an_incremental_reconcile_counts_unchanged_queued_jobs_as_settled(
        tmp_path: Path, monkeypatch) -> None:
    """After a pushed job, the jobs the state queued are not tried again unless
    something could help them; the state is the one a full reconcile makes."""
    from reconciler import pipeline

    path = fleet(tmp_path)  # kube-queue/max-jobs 3: four jobs, one waits
    first = run_reconcile(path)
    assert first.commit is not None
    seen: list[frozenset] = []
    real = pipeline._settled

    def spy(*args):
        got = real(*args)
        seen.append(got)
        return got

    monkeypatch.setattr(pipeline, "_settled", spy)
    write_files(path, {"jobs/j8.yaml": pytorchjob("j8")})
    commit_all(path, "j8")
    run_reconcile(path)
    assert [sorted(k.name for k in s) for s in seen] == [["j3"]]
    incremental = rev(path, f"{STATE}^{{tree}}")

    # A change to a file that is not jobs-only (the quota tree) settles nothing.
    write_files(path, {"quota.yaml": TREE.replace('"3"', '"2"')})
    commit_all(path, "fewer jobs")
    run_reconcile(path)
    assert seen[-1] == frozenset()

    shutil.rmtree(path / ".git" / "fleetq")
    git(path, "update-ref", f"refs/heads/{STATE}", first.commit)
    git(path, "reset", "-q", "--hard", "HEAD~1")
    run_reconcile(path, use_cache=False)
    assert rev(path, f"{STATE}^{{tree}}") == incremental


def test_an_unchanged_job_is_not_rendered_again(tmp_path: Path, monkeypatch) -> None:
    """The previous state's file of a job made from the same inputs is reused
    as is; the state tree is the one a full reconcile writes."""
    from reconciler.render import manifests

    path = fleet(tmp_path)
    first = run_reconcile(path)
    assert first.commit is not None
    rendered: list[str] = []
    real = manifests.render_job

    def counted(manifest, decision, cluster, tree, *rest):
        rendered.append(decision.key.name)
        return real(manifest, decision, cluster, tree, *rest)

    monkeypatch.setattr(manifests, "render_job", counted)
    write_files(path, {"jobs/j1.yaml": pytorchjob("j1", cpu="2")})  # j1 changes
    commit_all(path, "bigger j1")
    run_reconcile(path)
    assert rendered == ["j1"]  # j0 and j2 run as before: their files are reused
    incremental = rev(path, f"{STATE}^{{tree}}")

    rendered.clear()
    shutil.rmtree(path / ".git" / "fleetq")
    git(path, "update-ref", f"refs/heads/{STATE}", first.commit)
    run_reconcile(path, use_cache=False)
    assert sorted(rendered) == ["j0", "j1", "j2"]
    assert rev(path, f"{STATE}^{{tree}}") == incremental


def test_settled_jobs_are_left_out_of_a_cycle_until_it_admits_or_evicts(
        tmp_path: Path, monkeypatch) -> None:
    """A push that helps no waiting job: the jobs the state queued keep their
    decisions without being resolved again, their positions are counted again,
    and the state is the one a full reconcile makes. When the cycle admits or
    evicts, they are taken in there and then (tests/conftest.py checks every
    such cycle against one with them in from the start)."""
    from reconciler.core import cycle

    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": TREE, "policy.yaml": QUEUED_CLUSTER_POLICY, "priorities.yaml": PRIORITIES,
        "clusters/c1.yaml": member_cluster("c1", cpu="64", memory="256Gi"),
        **{f"jobs/j{i}.yaml": pytorchjob(f"j{i}") for i in range(6)}})
    first = run_reconcile(path)  # kube-queue/max-jobs 3: j3, j4 and j5 wait
    assert first.commit is not None
    assert {k: v.get("position") for k, v in placements(path).items()
            if v["phase"] == "Queued"} == {"default/j3": 1, "default/j4": 2, "default/j5": 3}
    left_out: list[list[str]] = []
    taken_in: list[bool] = []  # in a pass (into its queues), or before any
    real_run, real_take = cycle._run, cycle._Cycle._take_in_left_out

    def run(inp, out, *state):
        left_out.append(sorted(k.name for k in out))
        return real_run(inp, out, *state)

    def take(self):
        taken_in.append(self._trying is not None)
        return real_take(self)

    monkeypatch.setattr(cycle, "_run", run)
    monkeypatch.setattr(cycle._Cycle, "_take_in_left_out", take)
    git(path, "rm", "-q", "jobs/j4.yaml")
    write_files(path, {"jobs/j9.yaml": pytorchjob("j9")})
    commit_all(path, "j9 for j4")
    run_reconcile(path)
    assert left_out[0] == ["j3", "j5"] and taken_in == []
    assert {k: (v["phase"], v.get("position")) for k, v in placements(path).items()} == {
        "default/j0": ("Admitted", None), "default/j1": ("Admitted", None),
        "default/j2": ("Admitted", None), "default/j3": ("Queued", 1),
        "default/j5": ("Queued", 2), "default/j9": ("Queued", 3)}
    quick = rev(path, f"{STATE}^{{tree}}")

    def from_scratch(name: str, base: str) -> str | None:
        return reconciled_from_scratch(path, tmp_path / name, base)

    assert from_scratch("full", first.commit) == quick

    # A finished job frees a place: the jobs left out are taken in at once (an
    # admitted job is gone, so they would not be parked), and j3 runs.
    left_out.clear()
    base = rev(path, STATE)
    assert base is not None
    git(path, "rm", "-q", "jobs/j0.yaml")
    write_files(path, {"jobs/jz.yaml": pytorchjob("jz")})
    commit_all(path, "j0 is done")
    run_reconcile(path)
    assert left_out[0] == ["j3", "j5", "j9"] and taken_in == [False]
    assert placements(path)["default/j3"]["phase"] == "Admitted"
    assert placements(path)["default/jz"]["position"] == 3
    assert from_scratch("full2", base) == rev(path, f"{STATE}^{{tree}}")

    # An urgent job preempts one that runs: taken in during the pass, behind it.
    left_out.clear()
    taken_in.clear()
    base = rev(path, STATE)
    assert base is not None
    write_files(path, {"jobs/urgent.yaml": with_priority(pytorchjob("urgent"), "high")})
    commit_all(path, "urgent")
    run_reconcile(path)
    assert left_out[0] == ["j5", "j9", "jz"] and taken_in == [True]
    items = placements(path)
    assert items["default/urgent"]["phase"] == "Admitted"
    assert sum(v["phase"] == "Admitted" for v in items.values()) == 3
    assert from_scratch("full3", base) == rev(path, f"{STATE}^{{tree}}")


def test_a_small_change_saves_only_the_decisions_that_changed(tmp_path: Path,
                                                              monkeypatch) -> None:
    """The cached decisions of a state after a push are what changed since the
    state before it; they read back as the state's placements.yaml, the chain
    is cut short after MAX_DELTAS, and a lost link means reading the file."""
    import pickle

    from reconciler.fleet import cache as cache_mod
    from reconciler.fleet.cache import Cache
    from reconciler.fleet.state import read_placements

    monkeypatch.setattr(cache_mod, "DELTA_SHARE", 2)  # a tiny fleet: half may change
    monkeypatch.setattr(cache_mod, "MAX_DELTAS", 2)
    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": TREE, "policy.yaml": QUEUED_CLUSTER_POLICY,
        "clusters/c1.yaml": member_cluster("c1", cpu="64", memory="256Gi"),
        **{f"jobs/j{i}.yaml": pytorchjob(f"j{i}") for i in range(8)}})
    commits = [run_reconcile(path).commit]

    def saved() -> dict[str, dict]:
        (cache,) = cache_dirs(path)
        return {p.name[len("state-"):-len(".pickle")]: pickle.loads(p.read_bytes())
                for p in cache.glob("state-*.pickle")}

    for i in range(3):
        write_files(path, {f"jobs/k{i}.yaml": pytorchjob(f"k{i}")})
        commit_all(path, f"k{i}")
        commits.append(run_reconcile(path).commit)
        files = saved()
        newest = files[commits[-1]]
        git_prior, _ = read_placements(
            git(path, "show", f"{commits[-1]}:placements.yaml").encode())
        loaded = Cache(path / ".git").load_state(commits[-1])
        assert loaded is not None
        assert {k: was for k, (was, _) in loaded[0].items()} == git_prior
        if i < 2:  # one queued job more: its decision and no other's
            assert newest["base"] == commits[-2]
            assert [k.name for k in newest["changed"]] == [f"k{i}"]
            assert set(files) == set(commits[:i + 2])  # the chain back to the whole file
        else:  # MAX_DELTAS reached: whole again, and the chain is dropped
            assert "placements" in newest and set(files) == {commits[-1]}

    # A commit that changes no decision makes no state commit and saves nothing again.
    (cache,) = cache_dirs(path)
    before = {p.name: p.stat().st_ino for p in cache.glob("state-*.pickle")}
    write_files(path, {"docs/notes.yaml": "# not a manifest\n"})
    commit_all(path, "notes")
    assert run_reconcile(path).commit is None
    assert {p.name: p.stat().st_ino for p in cache.glob("state-*.pickle")} == before

    # A lost link: the state is read from placements.yaml, and the next save is whole.
    write_files(path, {"jobs/k9.yaml": pytorchjob("k9")})
    commit_all(path, "k9")
    commits.append(run_reconcile(path).commit)
    assert saved()[commits[-1]]["base"] == commits[-2]
    (cache,) = cache_dirs(path)
    (cache / f"state-{commits[-2]}.pickle").unlink()
    assert Cache(path / ".git").load_state(commits[-1]) is None
    write_files(path, {"jobs/k10.yaml": pytorchjob("k10")})
    commit_all(path, "k10")
    commits.append(run_reconcile(path).commit)
    assert "placements" in saved()[commits[-1]]
    assert "k10" in {p.split("/")[1] for p in placements(path)}


def test_the_commit_message_names_the_jobs_deleted_and_only_those(tmp_path: Path) -> None:
    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": TREE, "policy.yaml": QUEUED_CLUSTER_POLICY, "priorities.yaml": PRIORITIES,
        "clusters/c1.yaml": member_cluster("c1", cpu="64", memory="256Gi"),
        **{f"jobs/j{i}.yaml": pytorchjob(f"j{i}") for i in range(6)}})
    run_reconcile(path)  # kube-queue/max-jobs 3: j3, j4 and j5 wait
    write_files(path, {"jobs/j9.yaml": pytorchjob("j9")})
    commit_all(path, "j9")
    run_reconcile(path)
    lines = git(path, "log", "-1", "--format=%B", STATE).splitlines()
    assert lines[2:4] == ["queued PyTorchJob default/j9", ""]
    git(path, "rm", "-q", "jobs/j1.yaml", "jobs/j4.yaml")
    commit_all(path, "j1 and j4 are done")
    run_reconcile(path)
    lines = git(path, "log", "-1", "--format=%B", STATE).splitlines()
    assert lines[2:lines.index("", 2)] == [
        "admit PyTorchJob default/j3 -> c1 (master 1, worker 1)",
        "delete PyTorchJob default/j1 from c1", "delete PyTorchJob default/j4"]


def two_leaf_tree(qa_max_jobs: str, qb_min_cpu: str = "32") -> str:
    """qa (namespace team-a) and qb (team-b) share the root's 64 CPUs; each runs
    at most two jobs at a time."""
    return ("apiVersion: scheduling.sigs.k8s.io/v1beta1\nkind: ElasticQuotaTree\n"
            "metadata: {name: elasticquotatree, namespace: kube-system}\n"
            "spec:\n  root:\n    name: root\n"
            '    min: {cpu: "64", memory: 256Gi}\n    max: {cpu: "64", memory: 256Gi}\n'
            "    children:\n"
            '    - name: qa\n      min: {cpu: "32", memory: 128Gi}\n'
            f'      max: {{cpu: "64", memory: 256Gi, kube-queue/max-jobs: "{qa_max_jobs}"}}\n'
            "      namespaces: [team-a]\n"
            f'    - name: qb\n      min: {{cpu: "{qb_min_cpu}", memory: 128Gi}}\n'
            '      max: {cpu: "64", memory: 256Gi, kube-queue/max-jobs: "2"}\n'
            "      namespaces: [team-b]\n")


def test_a_change_of_quota_max_values_settles_the_jobs_of_the_other_quotas(
        tmp_path: Path, monkeypatch) -> None:
    """Raising qa's max lets a2 run; qb's waiting jobs failed last time on limits
    that did not change, so they are settled (left out until the cycle admits,
    which it does here). A changed min, or another file changed beside the
    tree, settles nothing. Each state is the one a full reconcile makes."""
    from reconciler import pipeline

    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": two_leaf_tree("2"), "policy.yaml": QUEUED_CLUSTER_POLICY,
        "clusters/c1.yaml": member_cluster("c1", cpu="64", memory="256Gi"),
        **{f"jobs/{t}{i}.yaml": pytorchjob(f"{t}{i}", namespace=f"team-{t}")
           for t in "ab" for i in range(4)}})
    first = run_reconcile(path)
    assert first.commit is not None
    assert sorted(k for k, v in placements(path).items() if v["phase"] == "Queued") == [
        "team-a/a2", "team-a/a3", "team-b/b2", "team-b/b3"]
    seen: list[list[str]] = []
    real = pipeline._settled

    def spy(*args):
        got = real(*args)
        seen.append(sorted(k.name for k in got))
        return got

    monkeypatch.setattr(pipeline, "_settled", spy)

    def from_scratch(name: str, base: str) -> str | None:
        return reconciled_from_scratch(path, tmp_path / name, base)

    write_files(path, {"quota.yaml": two_leaf_tree("3")})
    commit_all(path, "qa runs three jobs")
    run_reconcile(path)
    assert seen == [["b2", "b3"]]
    assert {k: v["phase"] for k, v in placements(path).items()
            if k.startswith("team-a/")} == {"team-a/a0": "Admitted", "team-a/a1": "Admitted",
                                           "team-a/a2": "Admitted", "team-a/a3": "Queued"}
    assert from_scratch("full-max", first.commit) == rev(path, f"{STATE}^{{tree}}")

    base = rev(path, STATE)
    assert base is not None
    write_files(path, {"quota.yaml": two_leaf_tree("3", qb_min_cpu="16")})
    commit_all(path, "qb guarantees less")
    run_reconcile(path)
    assert seen[-1] == []
    assert from_scratch("full-min", base) == rev(path, f"{STATE}^{{tree}}")

    write_files(path, {"quota.yaml": two_leaf_tree("4", qb_min_cpu="16"),
                       "clusters/c1.yaml": member_cluster("c1", cpu="60", memory="256Gi")})
    commit_all(path, "qa runs four jobs, on a smaller cluster")
    run_reconcile(path)
    assert seen[-1] == []

    # A max change that binds nothing makes no commit; the next push is compared
    # with the tree the state was made from (kept with that state), not with the
    # one read last: qa's jobs are still not settled, qb's are.
    state = rev(path, STATE)
    write_files(path, {"quota.yaml": two_leaf_tree("4", qb_min_cpu="16").replace(
        '{cpu: "64", memory: 256Gi, kube-queue/max-jobs: "4"}',
        '{cpu: "63", memory: 256Gi, kube-queue/max-jobs: "4"}')})
    commit_all(path, "qa may use a CPU less")
    assert run_reconcile(path).commit is None and rev(path, STATE) == state
    write_files(path, {"jobs/b9.yaml": pytorchjob("b9", namespace="team-b")})
    commit_all(path, "b9")
    run_reconcile(path)
    assert seen[-1] == ["b2", "b3"]
    assert state is not None and from_scratch("full-later", state) == rev(path, f"{STATE}^{{tree}}")

    # The same with one cache kept across the reconciles, as fleetq watch keeps it:
    # a push that commits, a max change that does not, then a push.
    from reconciler.fleet.cache import Cache

    kept = Cache(path / ".git")
    write_files(path, {"jobs/b8.yaml": pytorchjob("b8", namespace="team-b")})
    commit_all(path, "b8")
    assert run_reconcile(path, cache=kept).commit is not None
    state = rev(path, STATE)
    write_files(path, {"quota.yaml": two_leaf_tree("4", qb_min_cpu="16").replace(
        '{cpu: "64", memory: 256Gi, kube-queue/max-jobs: "4"}',
        '{cpu: "62", memory: 256Gi, kube-queue/max-jobs: "4"}')})
    commit_all(path, "qa may use two CPUs less")
    assert run_reconcile(path, cache=kept).commit is None and rev(path, STATE) == state
    write_files(path, {"jobs/b7.yaml": pytorchjob("b7", namespace="team-b")})
    commit_all(path, "b7")
    run_reconcile(path, cache=kept)
    assert seen[-1] == ["b2", "b3", "b8", "b9"]
    assert state is not None and from_scratch("full-kept", state) == rev(path, f"{STATE}^{{tree}}")


def test_the_cached_decisions_share_the_values_they_repeat(tmp_path: Path,
                                                          monkeypatch) -> None:
    """Saved whole or as a change, the decisions of a state read back equal to its
    placements.yaml; in a file, each value they repeat (requests, times, reasons,
    names) is one object: what a large fleet's cache is read back faster for."""
    from reconciler.fleet import cache as cache_mod
    from reconciler.fleet.cache import Cache
    from reconciler.fleet.state import read_placements

    monkeypatch.setattr(cache_mod, "DELTA_SHARE", 2)  # a tiny fleet: the push is a change
    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": TREE, "policy.yaml": QUEUED_CLUSTER_POLICY,
        "clusters/c1.yaml": member_cluster("c1", cpu="64", memory="256Gi"),
        **{f"jobs/j{i}.yaml": pytorchjob(f"j{i}") for i in range(6)}})

    def loaded(commit: str | None) -> list[Decision]:
        assert commit is not None
        got = Cache(path / ".git").load_state(commit)  # (a new cache reads the files)
        assert got is not None
        prior, _ = read_placements(git(path, "show", f"{commit}:placements.yaml").encode())
        assert {k: was for k, (was, _) in got[0].items()} == prior
        return [was for was, _ in got[0].values()]

    whole = loaded(run_reconcile(path).commit)
    assert len(whole) == 6
    for field in ("requests", "enqueued_at", "reason", "quota", "policy", "pod_sets"):
        values = [getattr(d, field) for d in whole]
        assert len({id(v) for v in values}) == len({repr(v) for v in values}) < 6, field
    write_files(path, {"jobs/k.yaml": pytorchjob("k")})
    commit_all(path, "k")
    second = run_reconcile(path).commit
    (cache,) = cache_dirs(path)
    assert "changed" in pickle.loads((cache / f"state-{second}.pickle").read_bytes())
    assert len(loaded(second)) == 7


def test_a_cache_that_cannot_be_written_warns_and_the_reconcile_goes_on(
        tmp_path: Path, monkeypatch) -> None:
    """A file where the cache's folder goes: reconciles commit as without a cache
    (also when a forked process would write the parsed jobs), each with a
    warning that names the folder and the fix; once it is a folder again, the
    cache is written again."""
    from reconciler.fleet import cache as cache_module

    path = fleet(tmp_path)
    base = path / ".git" / "fleetq"
    base.mkdir()
    blocker = base / f"cache-v{cache_module.CACHE_FORMAT}-{cache_module.__version__}"
    blocker.write_text("not a folder\n")
    monkeypatch.setattr(cache_module, "BEHIND_MIN_ENTRIES", 2)
    first = run_reconcile(path)
    assert first.commit is not None and first.computed is not None
    warnings = [p for p in first.computed.problems if p.path == ".git/fleetq"]
    assert len(warnings) == 1 and warnings[0].severity == "warning"
    assert str(base) in warnings[0].message and "delete it" in warnings[0].message
    assert "every reconcile reads and decides the whole fleet" in warnings[0].message
    assert blocker.read_text() == "not a folder\n"  # left as it was

    write_files(path, {"jobs/j5.yaml": pytorchjob("j5")})
    commit_all(path, "j5")
    second = run_reconcile(path)
    assert second.commit is not None and second.computed is not None
    assert [p for p in second.computed.problems if p.path == ".git/fleetq"] == warnings
    assert set(placements(path)) == {f"default/j{i}" for i in (0, 1, 2, 3, 5)}

    # The same fleet from scratch without the cache decides the same.
    full = tmp_path / "full"
    assert reconciled_from_scratch(path, full, first.commit) == rev(path, f"{STATE}^{{tree}}")

    blocker.unlink()
    write_files(path, {"jobs/j6.yaml": pytorchjob("j6")})
    commit_all(path, "j6")
    third = run_reconcile(path)
    assert third.computed is not None
    assert not [p for p in third.computed.problems if p.path == ".git/fleetq"]
    (cache,) = cache_dirs(path)
    assert third.commit is not None and (cache / f"state-{third.commit}.pickle").is_file()


def test_a_long_reconcile_tells_how_far_parsing_and_scheduling_are(
        tmp_path: Path, monkeypatch, capfd) -> None:
    """Parsing in two processes is told in shares of this process's half (the
    other process tells nothing: nothing of it reaches the terminal), and the
    cycle's step 5 in jobs asked."""
    from reconciler import pipeline
    from reconciler.core import cycle

    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": TREE, "policy.yaml": QUEUED_CLUSTER_POLICY,
        "clusters/c1.yaml": member_cluster("c1", cpu="64", memory="256Gi"),
        **{f"jobs/j{i:02}.yaml": pytorchjob(f"j{i:02}") for i in range(24)}})
    monkeypatch.setattr(pipeline, "PARALLEL_MIN_FILES", 10)
    monkeypatch.setattr(pipeline, "PROGRESS_FILES", 4)
    monkeypatch.setattr(cycle, "PROGRESS_TRIES", 2)
    told: list[str] = []
    run_reconcile(path, use_cache=False, progress=told.append)
    parsing = [t for t in told if t.startswith("parsing 27 files in 2 processes")]
    assert parsing[0] == "parsing 27 files in 2 processes"  # then this process's 13
    assert parsing[1:] == [f"parsing 27 files in 2 processes: {100 * i // 13} %"
                           for i in (4, 8, 12)]
    assert any(t.startswith("scheduling: round 1, pass 1: 2 queued jobs asked, ") for t in told)
    assert told.index(parsing[-1]) < told.index("scheduling")
    out, err = capfd.readouterr()
    assert "parsing" not in out + err  # the forked half told nobody


def test_reconciles_run_at_once_in_one_clone_share_its_cache_safely(
        tmp_path: Path, monkeypatch) -> None:
    """A cron job and a git hook may reconcile the same clone at the same time:
    each push is committed once, as a reconcile with no cache commits it, and
    the cache they both read and write stays one that later reconciles take up."""
    from reconciler import pipeline

    path = fleet(tmp_path)
    assert run_reconcile(path).commit is not None
    env = {**os.environ, "GIT_AUTHOR_DATE": NOW, "GIT_COMMITTER_DATE": NOW}
    for push in range(3):
        base = rev(path, STATE)
        assert base is not None
        write_files(path, {f"jobs/new-{push}.yaml": pytorchjob(f"new-{push}", cpu="20")})
        commit_all(path, f"push {push}")
        runs = [subprocess.Popen(
            [sys.executable, "-m", "reconciler.cli", "reconcile", "--repo", str(path),
             "--now", NOW, "-q"], cwd=REPO_ROOT, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
        outputs = [run.communicate(timeout=120) for run in runs]
        assert [run.returncode for run in runs] == [0, 0, 0], outputs
        # (nothing on stderr but, from those that lost the race, that they did)
        assert all(re.fullmatch(r"(fleetq: the state branch moved meanwhile \(another "
                                r"reconcile or a report wrote it\): decided again from its "
                                r"new head, "
                                r"\d attempts in all\n)?", err) for _, err in outputs), outputs
        assert git(path, "rev-list", "--count", f"{base}..{STATE}").strip() == "1"
        tree = rev(path, f"{STATE}^{{tree}}")
        assert tree == reconciled_from_scratch(path, tmp_path / f"full-{push}", base)
        (cache,) = cache_dirs(path)
        assert not list(cache.glob(".tmp-*"))
    # The cache they left is taken up: the state's decisions and the parsed jobs
    # are there, so the jobs the state queued count as settled after one more push.
    base = rev(path, STATE)
    assert base is not None and (cache / f"state-{base}.pickle").is_file()
    queued = {k for k, item in placements(path).items() if item["phase"] == "Queued"}
    assert queued
    seen: list[frozenset] = []
    real = pipeline._settled
    monkeypatch.setattr(pipeline, "_settled", lambda *args: seen.append(real(*args)) or seen[-1])
    write_files(path, {"jobs/last.yaml": pytorchjob("last")})
    commit_all(path, "last push")
    run_reconcile(path)
    assert [{f"{k.namespace}/{k.name}" for k in s} for s in seen] == [queued]
    assert rev(path, f"{STATE}^{{tree}}") == reconciled_from_scratch(
        path, tmp_path / "full-last", base)


def test_an_exclude_pattern_leaving_the_fleet_without_clusters_is_told_from_the_cache_too(
        tmp_path: Path) -> None:
    """A pattern of spec.exclude that leaves the fleet with no member cluster
    is warned of (see ``inputs._excluded_all``), and files left out beside
    those the fleet reads (an example cluster in docs/) are not: the
    reconciles that read from the cache only the files that changed tell it
    as a full read does, when the cluster files go, and when a file left out
    changes."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    example = (path / "clusters/gpu-hz-a.yaml").read_text().replace("name: gpu-hz-a",
                                                                     "name: example")
    write_files(path, {"docs/example-cluster.yaml": example})
    commit_all(path, "an example cluster in docs/, which fleet.yaml excludes")

    def told() -> str:
        proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
        assert proc.returncode == 0, proc.stderr
        full = fleetq("validate", "--repo", str(path), "--no-cache")
        said = [x for x in proc.stderr.splitlines() if "spec.exclude's" in x]
        assert said == [x for x in full.stdout.splitlines() if "spec.exclude's" in x], said
        return "\n".join(said)

    assert told() == ""
    git(path, "rm", "-q", "clusters/cpu-sh-c.yaml", "clusters/gpu-bj-b.yaml",
        "clusters/gpu-hz-a.yaml")
    commit_all(path, "the clusters leave the fleet")
    assert "patterns leave the fleet with no member cluster" in told()
    write_files(path, {"docs/example-b.yaml": example.replace("name: example", "name: b")})
    commit_all(path, "another example")
    assert "'docs/**' leaves out docs/example-b.yaml, docs/example-cluster.yaml;" in told()
