"""Several writers push the state branch to one bare remote: lease, fetch, recompute, retry."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from reconciler.gitops.repo import FleetRepo, GitError
from reconciler.pipeline import reconcile

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
    one_leaf_tree,
    pytorchjob,
    rev,
    seed_fleet_files,
    when,
    write_files,
)


def _origin_with_clones(tmp_path: Path, names: list[str]) -> tuple[Path, dict[str, Path]]:
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    seed_repo = make_fleet_repo(tmp_path / "seed", seed_fleet_files())
    git(seed_repo, "remote", "add", "origin", str(origin))
    git(seed_repo, "push", "-q", "origin", "main")
    clones = {}
    for name in names:
        git(tmp_path, "clone", "-q", str(origin), name)
        clones[name] = tmp_path / name
    return origin, clones


def _remote_history(origin: Path) -> list[list[str]]:
    """``[commit, parents...]`` of the remote state branch, newest first."""
    out = git(origin, "rev-list", "--parents", STATE)
    return [line.split() for line in out.splitlines() if line]


def _trailer(repo: Path, commit: str) -> str:
    last = git(repo, "log", "-1", "--format=%B", commit).rstrip("\n").splitlines()[-1]
    assert last.startswith("Fleet-Source-Commit: "), last
    return last.removeprefix("Fleet-Source-Commit: ")


def _remote_placements(origin: Path, rev: str = STATE) -> dict[str, object]:
    data = yaml.safe_load(git(origin, "show", f"{rev}:placements.yaml"))
    assert isinstance(data, dict)
    return data


def test_stale_writer_fetches_recomputes_and_retries(tmp_path: Path) -> None:
    origin, clones = _origin_with_clones(tmp_path, ["a", "b"])
    a, b = clones["a"], clones["b"]
    source_a = git(a, "rev-parse", "HEAD").strip()
    # B's source has one more job than A's.
    write_files(b, {"jobs/default/b-job.yaml": pytorchjob("b-job")})
    source_b = commit_all(b, "add b-job", date="2026-11-29T10:30:00Z")
    git(b, "push", "-q", "origin", "main")  # (a state is pushed from pushed commits only)

    outcomes = {}
    log: list[str] = []

    def b_progress(message: str) -> None:
        log.append(message)
        # B has fetched the (absent) state head and is deciding: A pushes first.
        if message == "scheduling" and "a" not in outcomes:
            outcomes["a"] = reconcile(FleetRepo(a), remote="origin",
                                      now=when("2026-11-29T11:00:00Z"))

    outcomes["b"] = reconcile(FleetRepo(b), remote="origin", now=when("2026-11-29T11:05:00Z"),
                              progress=b_progress)
    out_a, out_b = outcomes["a"], outcomes["b"]
    assert out_a.commit is not None and out_a.attempts == 1
    assert out_b.commit is not None
    assert out_b.attempts > 1, log
    assert any("recomputing" in m for m in log), log

    history = _remote_history(origin)
    assert [h[0] for h in history] == [out_b.commit, out_a.commit]
    assert history[0][1:] == [out_a.commit]  # linear: B's commit sits on A's
    assert history[1][1:] == []
    assert _trailer(origin, out_b.commit) == source_b
    assert _trailer(origin, out_a.commit) == source_a
    # The local state refs follow what each pushed.
    assert git(b, "rev-parse", STATE).strip() == out_b.commit
    assert git(a, "rev-parse", STATE).strip() == out_a.commit

    data = _remote_placements(origin)
    assert _trailer(origin, STATE) == source_b
    items = {i["job"]["name"]: i for i in data["items"]}  # type: ignore[attr-defined]
    assert set(items) == {"pytorch-test", "b-job"}
    # B recomputed on top of A's state: pytorch-test keeps A's admission time.
    assert items["pytorch-test"]["phase"] == "Admitted"
    assert items["pytorch-test"]["admittedAt"] == "2026-11-29T11:00:00Z"
    assert items["b-job"]["phase"] == "Queued"
    assert git(origin, "show", f"{STATE}:clusters/cf-hz-a/default/pytorchjob-pytorch-test.yaml")


def test_concurrent_writers_keep_a_linear_history_and_lose_nothing(tmp_path: Path) -> None:
    names = ["w1", "w2", "w3", "w4"]
    origin, clones = _origin_with_clones(tmp_path, names)
    sources = {}
    for i, name in enumerate(names):
        write_files(clones[name], {f"jobs/default/{name}.yaml": pytorchjob(name)})
        sources[name] = commit_all(clones[name], f"add {name}",
                                   date=f"2026-11-29T10:1{i}:00Z")
        git(clones[name], "push", "-q", "origin", f"HEAD:refs/heads/{name}")

    env = dict(os.environ)
    procs = {
        name: subprocess.Popen(
            [sys.executable, "-m", "reconciler.cli", "reconcile", "--repo", str(clones[name]),
             "--remote", "origin", "--now", "2026-11-29T11:00:00Z", "-q"],
            cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name in names}
    results = {name: p.communicate(timeout=60) for name, p in procs.items()}
    for name, p in procs.items():
        assert p.returncode == 0, (name, results[name])
        assert "committed" in results[name][0], (name, results[name])

    history = _remote_history(origin)
    # Linear: one root, every other commit has exactly its predecessor as parent.
    assert len(history) == len(names)
    for newer, older in itertools.pairwise(history):
        assert newer[1:] == [older[0]]
    assert history[-1][1:] == []
    # No update lost: every writer's source is in the history, once.
    trailers = [_trailer(origin, h[0]) for h in history]
    assert sorted(trailers) == sorted(sources.values())
    # Each writer's local state ref is its own pushed commit.
    pushed = {git(clones[name], "rev-parse", STATE).strip() for name in names}
    assert pushed == {h[0] for h in history}

    # The tip reflects the source of the last writer.
    tip_source = trailers[0]
    writer = next(n for n, s in sources.items() if s == tip_source)
    data = _remote_placements(origin)
    assert _trailer(origin, STATE) == tip_source
    names_at_tip = {i["job"]["name"] for i in data["items"]}  # type: ignore[attr-defined]
    assert names_at_tip == {"pytorch-test", writer}


def test_the_remote_named_in_fleet_yaml_is_the_default(tmp_path: Path) -> None:
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    fleet_yaml = ("apiVersion: fleetq.io/v1alpha1\nkind: Fleet\nmetadata: {name: fleet}\n"
                  "spec:\n  remote: origin\n")
    dev = make_fleet_repo(tmp_path / "dev", {
        "fleet.yaml": fleet_yaml, "quota.yaml": one_leaf_tree("8", "64Gi"),
        "policy.yaml": QUEUED_CLUSTER_POLICY, "clusters/c1.yaml": member_cluster("c1"),
        "jobs/a.yaml": pytorchjob("a")})
    git(dev, "remote", "add", "origin", str(origin))
    git(dev, "push", "-q", "origin", "main")

    local = fleetq("reconcile", "--repo", str(dev), "--now", NOW, "--remote", "")
    assert local.returncode == 0, local.stderr
    assert rev(dev, STATE) is not None and rev(origin, STATE) is None  # '' stays local

    git(dev, "update-ref", "-d", f"refs/heads/{STATE}")
    pushed = fleetq("reconcile", "--repo", str(dev), "--now", NOW)
    assert pushed.returncode == 0, pushed.stderr
    assert rev(origin, STATE) == rev(dev, STATE) is not None

    state = rev(origin, STATE) or ""
    git(dev, "update-ref", "-d", f"refs/heads/{STATE}")  # plan must read origin's
    write_files(dev, {"jobs/b.yaml": pytorchjob("b")})
    commit_all(dev, "b")
    plan = fleetq("plan", "--repo", str(dev), "--now", NOW, "--exit-code")
    assert plan.returncode == 1, plan.stderr
    assert f"onto {STATE} ({state[:12]})" in plan.stdout
    assert "default/b" in plan.stdout and "default/a" not in plan.stdout  # a is as it was


def test_a_clone_that_finds_the_remote_state_up_to_date_has_it_locally(tmp_path: Path) -> None:
    """``status`` reads the local state branch: a reconcile with a remote leaves
    it at the remote's state even when it has nothing to commit, in a fresh
    clone (no local branch yet) and in one whose branch is behind."""
    origin, clones = _origin_with_clones(tmp_path, ["a", "b"])
    a, b = clones["a"], clones["b"]
    first = fleetq("reconcile", "--repo", str(a), "--now", NOW, "--remote", "origin")
    assert first.returncode == 0, first.stderr
    assert rev(a, STATE) == rev(origin, STATE) is not None
    fresh = fleetq("reconcile", "--repo", str(b), "--now", NOW, "--remote", "origin", "-q")
    assert fresh.returncode == 0, fresh.stderr
    assert fresh.stdout.startswith("no change:"), fresh.stdout
    assert rev(b, STATE) == rev(origin, STATE)
    status = fleetq("status", "--repo", str(b))
    assert status.returncode == 0 and "pytorch-test" in status.stdout, status.stderr

    # A adds a job and pushes its state; B pulls the source and finds it up to date.
    write_files(a, {"jobs/default/later.yaml": pytorchjob("later")})
    commit_all(a, "add later", date="2026-11-29T10:30:00Z")
    git(a, "push", "-q", "origin", "main")
    assert fleetq("reconcile", "--repo", str(a), "--now", NOW, "--remote", "origin").returncode == 0
    old = rev(b, STATE)
    git(b, "pull", "-q", "origin", "main")
    behind = fleetq("reconcile", "--repo", str(b), "--now", NOW, "--remote", "origin", "-q")
    assert behind.returncode == 0 and behind.stdout.startswith("no change:"), behind.stdout
    assert rev(b, STATE) == rev(origin, STATE) != old
    assert "later" in fleetq("status", "--repo", str(b)).stdout
    assert old is not None and old in git(b, "reflog", "show", "--format=%H", STATE)  # kept


def test_a_reconcile_of_an_older_commit_does_not_roll_the_state_back(tmp_path: Path) -> None:
    """Two pipelines that end in the wrong order: the one of the older commit
    finds the state made from a later one and leaves it, in a clone from
    before the later commit was pushed too (it fetches that commit)."""
    origin, clones = _origin_with_clones(tmp_path, ["a", "b"])
    a, b = clones["a"], clones["b"]
    old_source = git(b, "rev-parse", "HEAD").strip()
    write_files(a, {"jobs/default/newer-job.yaml": pytorchjob("newer-job")})
    new_source = commit_all(a, "newer job", date="2026-11-29T10:30:00Z")
    git(a, "push", "-q", "origin", "main")
    assert fleetq("reconcile", "--repo", str(a), "--now", NOW, "--remote", "origin",
                  "-q").returncode == 0
    state = rev(origin, STATE)

    stale = fleetq("reconcile", "--repo", str(b), "--now", NOW, "--remote", "origin", "-q")
    assert stale.returncode == 0, stale.stderr
    assert stale.stdout.startswith(f"no change: {STATE} is made from {new_source[:12]}, a "
                                   f"later commit than {old_source[:12]}"), stale.stdout
    assert rev(origin, STATE) == state == rev(b, STATE)
    items = _remote_placements(origin)["items"]
    assert isinstance(items, list) and "newer-job" in {i["job"]["name"] for i in items}

    # In one repository: an older revision named on purpose is not reconciled either.
    again = fleetq("reconcile", "--repo", str(a), "--now", NOW, "--remote", "origin",
                   "--source", "HEAD~1", "-q")
    assert again.returncode == 0 and "would roll it back" in again.stdout, again.stdout
    assert rev(origin, STATE) == state


def test_a_late_pipeline_of_a_commit_reverted_since_does_not_bring_it_back(
        tmp_path: Path) -> None:
    """A job pushed and reverted at once. The revert's pipeline ends first and
    changes nothing: it decides as the state, made from before the job, was
    made, so no commit names the revert. The job's pipeline, ending after,
    found the state made from an older commit than its own, and ran the
    reverted job. Its commit is an older one of main, which went on past it:
    nothing is done, and it says so."""
    origin, clones = _origin_with_clones(tmp_path, ["a", "ci"])
    a, ci = clones["a"], clones["ci"]
    assert fleetq("reconcile", "--repo", str(a), "--now", NOW, "--remote", "origin",
                  "-q").returncode == 0
    state = rev(origin, STATE)
    write_files(a, {"jobs/default/oops.yaml": pytorchjob("oops")})
    added = commit_all(a, "a job by mistake", date="2026-11-29T10:30:00Z")
    git(a, "revert", "--no-edit", "HEAD")
    reverted = git(a, "rev-parse", "HEAD").strip()
    git(a, "push", "-q", "origin", "main")
    first = fleetq("reconcile", "--repo", str(a), "--now", NOW, "--remote", "origin", "-q")
    assert first.returncode == 0 and first.stdout.startswith("no change:"), first.stdout
    assert rev(origin, STATE) == state

    git(ci, "fetch", "-q", "origin")
    git(ci, "checkout", "-q", added)  # (as a runner checks out the commit it runs for)
    late = fleetq("reconcile", "--repo", str(ci), "--now", NOW, "--remote", "origin", "-q")
    assert late.returncode == 0, late.stderr
    assert late.stdout.startswith(
        f"no change: {added[:12]} is an older commit of origin/main, which has gone on to "
        f"{reverted[:12]}: reconciling {added[:12]} would undo what came after it"), late.stdout
    assert rev(origin, STATE) == state
    items = _remote_placements(origin)["items"]
    assert isinstance(items, list) and "oops" not in {i["job"]["name"] for i in items}
    # the head of a branch is reconciled as ever, here the commit it went on to
    git(ci, "checkout", "-q", "main")
    git(ci, "merge", "-q", "--ff-only", "origin/main")
    head = fleetq("reconcile", "--repo", str(ci), "--now", NOW, "--remote", "origin", "-q")
    assert head.returncode == 0 and head.stdout.startswith(
        f"no change: {STATE} is up to date with {reverted[:12]}"), head.stdout


def test_a_writer_that_loses_the_race_decides_again_at_the_time_it_does(
        tmp_path: Path) -> None:
    """On the machine's clock, a slow reconcile that lost the push to a quick
    one begun after it decided again at its own start: before the state it
    goes on from, so it warned that the clock was wrong and dated its
    admissions a second after that state."""
    import time

    origin, clones = _origin_with_clones(tmp_path, ["a", "b"])
    a, b = clones["a"], clones["b"]
    write_files(b, {"jobs/default/b-job.yaml": pytorchjob("b-job")})
    commit_all(b, "add b-job", date="2026-11-29T10:30:00Z")
    git(b, "push", "-q", "origin", "main")
    outcomes = {}

    def b_progress(message: str) -> None:
        if message == "scheduling" and "a" not in outcomes:
            time.sleep(1.1)  # (A begins a second later: its state is dated after B began)
            outcomes["a"] = reconcile(FleetRepo(a), remote="origin")

    out_b = reconcile(FleetRepo(b), remote="origin", progress=b_progress)
    out_a = outcomes["a"]
    assert out_a.commit is not None and out_b.commit is not None and out_b.attempts > 1
    assert out_b.computed is not None
    assert not [p for p in out_b.computed.problems if "clock" in p.message], \
        out_b.computed.problems
    won = git(origin, "log", "-1", "--format=%cI", out_a.commit).strip()
    then = git(origin, "log", "-1", "--format=%cI", out_b.commit).strip()
    assert when(then) >= when(won), (then, won)
    assert _remote_placements(origin)["items"]  # (B's, on A's)


def test_a_late_pipeline_in_a_clone_behind_is_not_told_the_branch_was_reset(
        tmp_path: Path) -> None:
    """Two pipelines that end in the wrong order, the late one in a clone made
    before the later push (as a CI runner checks out its commit): nothing was
    reset, though no branch of that clone has the commit the state was made
    from. It was told to commit on a branch that had been reset back."""
    origin, clones = _origin_with_clones(tmp_path, ["late"])
    seed = tmp_path / "seed"
    write_files(seed, {"jobs/default/later.yaml": pytorchjob("later")})
    newer = commit_all(seed, "a later job", date="2026-11-29T10:30:00Z")
    git(seed, "push", "-q", "origin", "main")
    git(tmp_path, "clone", "-q", str(origin), "fast")
    assert fleetq("reconcile", "--repo", str(tmp_path / "fast"), "--remote", "origin",
                  "--now", NOW, "-q").returncode == 0
    state = rev(origin, STATE)
    proc = fleetq("reconcile", "--repo", str(clones["late"]), "--remote", "origin",
                  "--now", NOW, "-o", "none")
    assert proc.returncode == 0, proc.stderr
    older = rev(clones["late"], "HEAD")
    assert older is not None
    assert proc.stdout.startswith(
        f"no change: {STATE} is made from {newer[:12]}, a later commit than {older[:12]}, "
        f"which no branch of this clone has: reconciling {older[:12]} would roll the state "
        f"back. If this clone is only behind (fetched before that commit was pushed: a late "
        f"run), there is nothing to do"), proc.stdout
    assert rev(origin, STATE) == state


def test_a_remote_that_refuses_the_push_is_told_at_once_not_retried_as_a_race(
        tmp_path: Path) -> None:
    """A pre-receive hook (or a protected branch's rules) declines the state
    branch: the push fails for that, said with the remote's words and the fix,
    exit 2, after one try; the remote keeps no state branch."""
    origin, clones = _origin_with_clones(tmp_path, ["ci"])
    hook = origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'GH006: Protected branch update failed' >&2\nexit 1\n")
    hook.chmod(0o755)
    proc = fleetq("reconcile", "--repo", str(clones["ci"]), "--remote", "origin",
                  "--now", NOW)
    assert proc.returncode == 2, proc.stderr
    assert "origin refused the push of the state branch fleetq/state" in proc.stderr
    assert "GH006: Protected branch update failed" in proc.stderr
    assert "kept moving" not in proc.stderr and "Traceback" not in proc.stderr
    assert rev(origin, STATE) is None


def test_a_remote_that_refuses_the_push_for_its_limits_is_told_not_retried_as_a_race(
        tmp_path: Path) -> None:
    """A remote whose limit refuses the pack ("[remote rejected] (unpacker
    error)", with no hook that "declined"): the push was taken for a lost race,
    decided again eight times, and told as a state branch that "kept moving",
    which it never did. It is told with the remote's words, exit 2."""
    origin, clones = _origin_with_clones(tmp_path, ["ci"])
    git(origin, "config", "receive.maxInputSize", "200")
    proc = fleetq("reconcile", "--repo", str(clones["ci"]), "--remote", "origin",
                  "--now", NOW)
    assert proc.returncode == 2, proc.stderr
    assert "origin refused the push of the state branch fleetq/state" in proc.stderr
    assert "unpacker error" in proc.stderr and "lift the limit the remote names" in proc.stderr
    assert "kept moving" not in proc.stderr and "Traceback" not in proc.stderr
    assert rev(origin, STATE) is None
    git(origin, "config", "--unset", "receive.maxInputSize")
    proc = fleetq("reconcile", "--repo", str(clones["ci"]), "--remote", "origin",
                  "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert rev(origin, STATE) == rev(clones["ci"], STATE)


def test_a_lock_file_left_on_the_remote_is_told_with_the_remotes_words_and_the_fix(
        tmp_path: Path) -> None:
    """A push killed on the remote leaves its lock file there: every later
    push is refused as if another writer held the branch, and fleetq gave up
    saying only that the state branch "kept moving", which it never did.
    The remote's last answer, naming the file, is told with the fix."""
    origin, clones = _origin_with_clones(tmp_path, ["ci"])
    assert fleetq("reconcile", "--repo", str(clones["ci"]), "--remote", "origin",
                  "--now", NOW, "-q").returncode == 0
    state = rev(origin, STATE)
    lock = origin / "refs" / "heads" / "fleetq" / "state.lock"
    lock.write_text("")
    seed = clones["ci"]
    write_files(seed, {"jobs/late.yaml": pytorchjob("late")})
    commit_all(seed, "a later job")
    git(seed, "push", "-q", "origin", "HEAD:main")
    proc = fleetq("reconcile", "--repo", str(seed), "--remote", "origin", "--now", NOW)
    assert proc.returncode == 2, proc.stderr
    assert ("gave up after 8 attempts to push the state branch, the last of them refused by "
            "the remote as if another writer held the branch:") in proc.stderr, proc.stderr
    assert "kept moving" not in proc.stderr  # (it never moved)
    assert "state.lock" in proc.stderr, proc.stderr
    assert ("a lock file left on the remote (named above, by a push that was killed) stops "
            "every push: remove it there") in proc.stderr, proc.stderr
    assert rev(origin, STATE) == state
    lock.unlink()
    proc = fleetq("reconcile", "--repo", str(seed), "--remote", "origin", "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert rev(origin, STATE) != state


def test_a_state_branch_renamed_is_moved_from_the_remotes_copy_when_this_clones_is_behind(
        tmp_path: Path) -> None:
    """fleet.yaml's stateBranch renamed in a clone whose own copy of the state
    is behind the remote's (another clone reconciled since): renaming this
    clone's branch, as fleetq advised, went on from the older state, and
    what came after (jobs that finished, reports) was lost with no word. The
    advice names the remote's copy, and followed, the state goes on from it."""
    origin, clones = _origin_with_clones(tmp_path, ["a", "b"])
    a, b = clones["a"], clones["b"]
    assert fleetq("reconcile", "--repo", str(a), "--remote", "origin", "--now", NOW,
                  "-q").returncode == 0
    write_files(b, {"jobs/late.yaml": pytorchjob("late")})
    commit_all(b, "a later job")
    git(b, "push", "-q", "origin", "HEAD:main")
    assert fleetq("reconcile", "--repo", str(b), "--remote", "origin", "--now", NOW,
                  "-q").returncode == 0
    newer = rev(origin, STATE)
    git(a, "pull", "-q", "origin", "main")
    assert rev(a, STATE) != newer  # (this clone's own copy is behind)
    write_files(a, {"fleet.yaml": "apiVersion: fleetq.io/v1alpha1\nkind: Fleet\n"
                                  "metadata: {name: fleet}\nspec:\n  stateBranch: fleetq/moved\n"})
    commit_all(a, "another state branch")
    git(a, "push", "-q", "origin", "HEAD:main")
    proc = fleetq("reconcile", "--repo", str(a), "--remote", "origin", "--now", NOW)
    assert proc.returncode == 2, proc.stdout
    assert f"but origin/{STATE} holds this fleet's state" in proc.stderr, proc.stderr
    move = (f"git fetch origin && git push origin refs/remotes/origin/{STATE}:"
            f"refs/heads/fleetq/moved")
    assert move in proc.stderr, proc.stderr
    assert f"this clone's {STATE} is not origin's, so do not rename it" in proc.stderr
    git(a, "fetch", "-q", "origin")
    git(a, "push", "-q", "origin", f"refs/remotes/origin/{STATE}:refs/heads/fleetq/moved")
    proc = fleetq("reconcile", "--repo", str(a), "--remote", "origin", "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    moved = rev(origin, "fleetq/moved")
    assert moved is not None and newer is not None
    assert git(origin, "merge-base", newer, moved).strip() == newer  # (carried on from it)


def test_a_state_branch_renamed_while_another_remote_alone_holds_the_state_is_told_the_fix(
        tmp_path: Path) -> None:
    """The state is on a remote other than the one the reconcile writes to,
    and not in this clone: the advice looked for this clone's copy, and the
    command ended in a traceback (StopIteration)."""
    _, clones = _origin_with_clones(tmp_path, ["a"])
    a = clones["a"]
    upstream = tmp_path / "upstream.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(upstream))
    git(a, "remote", "add", "upstream", str(upstream))
    git(a, "push", "-q", "upstream", "HEAD:main")
    assert fleetq("reconcile", "--repo", str(a), "--remote", "upstream", "--now", NOW,
                  "-q").returncode == 0
    git(a, "branch", "-D", "-q", STATE)
    write_files(a, {"fleet.yaml": "apiVersion: fleetq.io/v1alpha1\nkind: Fleet\n"
                                  "metadata: {name: fleet}\nspec:\n  stateBranch: fleetq/moved\n"})
    commit_all(a, "another state branch")
    git(a, "push", "-q", "origin", "HEAD:main")
    for remote, fix in (("origin", f"git fetch upstream && git push origin refs/remotes/"
                                   f"upstream/{STATE}:refs/heads/fleetq/moved"),
                        ("", f"git fetch upstream && git branch fleetq/moved refs/remotes/"
                             f"upstream/{STATE}")):
        proc = fleetq("reconcile", "--repo", str(a), "--remote", remote, "--now", NOW)
        assert proc.returncode == 2, proc.stdout
        assert "Traceback" not in proc.stderr, proc.stderr
        assert f"but upstream/{STATE} holds this fleet's state" in proc.stderr, proc.stderr
        assert fix in proc.stderr, proc.stderr


def test_a_sha256_repository_is_told_it_is_not_one_fleetq_reads(tmp_path: Path) -> None:
    """git ls-tree failed with "Not a valid object name": fleetq names its
    objects by SHA-1 ids."""
    path = tmp_path / "fleet"
    path.mkdir()
    git(path, "init", "-q", "--object-format=sha256", "-b", "main")
    write_files(path, {"jobs/a.yaml": pytorchjob("a")})
    commit_all(path, "a job")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(
        f"fleetq: {path} is a repository of sha256 object ids, which fleetq does not read or "
        f"write"), proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_fetch_that_meets_another_fetchs_lock_waits_for_it(tmp_path: Path) -> None:
    """Two reconciles of one clone at once fetch the same branch: one of them
    found the remote's copy locked by the other ("cannot lock ref"), and
    failed with exit 2. It waits for the other, as git's own writers do; a
    lock no git lets go is told after that."""
    import threading

    origin, clones = _origin_with_clones(tmp_path, ["ci"])
    repo = FleetRepo(clones["ci"])
    lock = clones["ci"] / ".git" / "refs" / "remotes" / "origin" / "main.lock"
    seed = tmp_path / "seed"
    for turn in range(2):  # (a push each time: the fetch has the remote's copy to move)
        git(seed, "commit", "-q", "--allow-empty", "-m", f"push {turn}")
        git(seed, "push", "-q", "origin", "main")
        lock.write_text("")
        if turn == 0:
            threading.Timer(0.5, lock.unlink).start()  # (the other fetch is done)
            assert repo.fetch("origin", "main") == rev(origin, "main")
    try:
        repo.fetch("origin", "main")
    except GitError as exc:
        assert "cannot lock ref" in str(exc) and "main.lock" in str(exc), exc
    else:
        raise AssertionError("a lock no git lets go was not told")


def test_a_lock_left_by_a_stopped_git_is_told_with_the_fix(tmp_path: Path) -> None:
    """``<ref>.lock`` left behind (a git killed while it moved the state branch):
    git cannot move it, though no other writer did; fleetq says so and names the
    lock file, exit 2, and nothing changes; once it is deleted, the reconcile runs."""
    _, clones = _origin_with_clones(tmp_path, ["here"])
    repo = clones["here"]
    assert fleetq("reconcile", "--repo", str(repo), "--now", NOW).returncode == 0
    before = rev(repo, STATE)
    write_files(repo, {"jobs/another.yaml": pytorchjob("another")})
    commit_all(repo, "another job")
    lock = repo / ".git" / "refs" / "heads" / "fleetq" / "state.lock"
    lock.write_text("")
    proc = fleetq("reconcile", "--repo", str(repo), "--now", NOW)
    assert proc.returncode == 2, proc.stderr
    assert f"git could not move refs/heads/{STATE}" in proc.stderr
    assert "no other writer moved it" in proc.stderr and "state.lock" in proc.stderr
    assert "delete that lock file" in proc.stderr and "kept moving" not in proc.stderr
    assert rev(repo, STATE) == before
    lock.unlink()
    assert fleetq("reconcile", "--repo", str(repo), "--now", NOW).returncode == 0
    assert rev(repo, STATE) != before


def test_a_lock_on_the_local_state_branch_after_the_push_says_the_push_is_done(
        tmp_path: Path) -> None:
    """The push went through and only the local copy could not move: it was
    told as a failure, exit 2, with no word that the remote has the state."""
    origin, clones = _origin_with_clones(tmp_path, ["ci"])
    repo = clones["ci"]
    assert fleetq("reconcile", "--repo", str(repo), "--remote", "origin", "--now", NOW,
                  "-q").returncode == 0
    write_files(repo, {"jobs/another.yaml": pytorchjob("another")})
    commit_all(repo, "another job")
    git(repo, "push", "-q", "origin", "HEAD:main")
    lock = repo / ".git" / "refs" / "heads" / "fleetq" / "state.lock"
    lock.write_text("")
    proc = fleetq("reconcile", "--repo", str(repo), "--remote", "origin", "--now", NOW)
    assert proc.returncode == 2, proc.stderr
    pushed = rev(origin, STATE)
    assert pushed is not None and pushed != rev(repo, STATE)
    assert f"fleetq: pushed {pushed[:12]} to {STATE} on origin, which the clusters sync from; " \
           f"but the local {STATE} stays behind: git could not move" in proc.stderr, proc.stderr
    lock.unlink()
    proc = fleetq("reconcile", "--repo", str(repo), "--remote", "origin", "--now", NOW)
    assert proc.returncode == 0 and rev(repo, STATE) == pushed == rev(origin, STATE), proc.stderr


def test_a_remote_state_branch_pushed_over_by_hand_is_refused_with_the_fix(
        tmp_path: Path) -> None:
    """Another branch force-pushed onto the remote's state branch: read as the
    state it holds none. reconcile, plan and report refuse it (exit 2), naming
    the push that puts fleetq's last state back; done, reconcile runs again."""
    _, clones = _origin_with_clones(tmp_path, ["ci", "other"])
    ci = clones["ci"]
    assert fleetq("reconcile", "--repo", str(ci), "--remote", "origin",
                  "--now", NOW).returncode == 0
    good = rev(ci, STATE)
    git(clones["other"], "push", "-q", "--force", "origin", f"main:refs/heads/{STATE}")
    fix = f"git push --force origin {good[:12]}:refs/heads/{STATE}"
    for command in (["reconcile"], ["plan"], ["report", "--cluster", "cf-hz-a"]):
        proc = subprocess.run(
            [sys.executable, "-m", "reconciler.cli", *command, "--repo", str(ci),
             "--remote", "origin", "--now", NOW], input="apiVersion: v1\nkind: List\nitems: []\n",
            capture_output=True, text=True, cwd=REPO_ROOT, check=False, timeout=60)
        assert proc.returncode == 2, (command, proc.stdout, proc.stderr)
        assert "which fleetq did not write" in proc.stderr and fix in proc.stderr, proc.stderr
    assert rev(ci, STATE) == good  # (nothing moved here either)
    git(ci, "push", "-q", "--force", "origin", f"{good}:refs/heads/{STATE}")
    assert fleetq("reconcile", "--repo", str(ci), "--remote", "origin",
                  "--now", NOW).returncode == 0


def test_a_remote_state_branch_built_on_by_hand_is_put_back_at_fleetqs_last_commit_there(
        tmp_path: Path) -> None:
    """A commit of people's pushed onto the remote's state branch, over a
    report another clone recorded there: the fix reconcile named put back
    this clone's last state, and the report was lost with no word. It names
    fleetq's last commit on the remote's branch, under the one pushed."""
    origin, clones = _origin_with_clones(tmp_path, ["ci", "ops", "other"])
    ci = clones["ci"]
    assert fleetq("reconcile", "--repo", str(ci), "--remote", "origin",
                  "--now", NOW).returncode == 0
    proc = subprocess.run(
        [sys.executable, "-m", "reconciler.cli", "report", "--cluster", "cf-hz-a", "--repo",
         str(clones["ops"]), "--remote", "origin", "--now", NOW],
        input="apiVersion: v1\nkind: List\nitems: []\n", capture_output=True, text=True,
        cwd=REPO_ROOT, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    reported = rev(origin, STATE)
    assert reported is not None and reported != rev(ci, STATE)
    other = clones["other"]
    git(other, "fetch", "-q", "origin")
    git(other, "checkout", "-q", "-b", "notes", f"origin/{STATE}")
    write_files(other, {"NOTES.md": "notes\n"})
    by_hand = commit_all(other, "notes")
    git(other, "push", "-q", "origin", f"HEAD:refs/heads/{STATE}")

    proc = fleetq("reconcile", "--repo", str(ci), "--remote", "origin", "--now", NOW)
    fix = (f"git push --force-with-lease={STATE}:{by_hand[:12]} origin "
           f"{reported[:12]}:refs/heads/{STATE}")
    assert proc.returncode == 2 and f": {fix} (fleetq's last commit there, under " \
        f"{by_hand[:12]}); then run again" in proc.stderr, proc.stderr
    git(ci, *fix.split()[1:])
    proc = fleetq("reconcile", "--repo", str(ci), "--remote", "origin", "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert git(origin, "merge-base", "--is-ancestor", reported, STATE) == ""
    kept = git(origin, "ls-tree", "-r", reported, "--", "inventory/", "status/")
    assert "cf-hz-a" in kept and git(origin, "ls-tree", "-r", STATE, "--", "inventory/",
                                     "status/") == kept


def test_read_commands_in_a_fresh_clone_read_the_remote_state(tmp_path: Path) -> None:
    """A CI runner's fresh clone has ``origin/fleetq/state`` but no local state
    branch: status and plan read that copy (and say so), rather than telling
    that there is no state, and planning every job as new."""
    _, clones = _origin_with_clones(tmp_path, ["ci", "fresh"])
    assert fleetq("reconcile", "--repo", str(clones["ci"]), "--remote", "origin",
                  "--now", NOW).returncode == 0
    fresh = clones["fresh"]
    git(fresh, "fetch", "-q", "origin")
    assert rev(fresh, STATE) is None
    status = fleetq("status", "--repo", str(fresh), "-o", "json")
    assert status.returncode == 0, status.stderr
    assert f"reading origin/{STATE} as git last fetched it" in status.stderr
    assert [i["job"]["name"] for i in json.loads(status.stdout)] == [
        i["job"]["name"] for i in _remote_placements(tmp_path / "origin.git")["items"]]
    plan = fleetq("plan", "--repo", str(fresh), "--now", NOW, "--exit-code")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "No changes" in plan.stdout
    # a reconcile there without --remote does not start the state anew beside it
    proc = fleetq("reconcile", "--repo", str(fresh), "--now", NOW)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"but origin/{STATE} holds fleetq's state" in proc.stderr
    assert "--remote origin" in proc.stderr and rev(fresh, STATE) is None
    git(fresh, "branch", STATE, f"origin/{STATE}")
    proc = fleetq("reconcile", "--repo", str(fresh), "--now", NOW)
    assert proc.returncode == 0 and "up to date" in proc.stdout + proc.stderr, proc.stderr


def test_a_remote_state_branch_deleted_is_not_started_anew_over_this_clones_state(
        tmp_path: Path) -> None:
    """The remote's state branch deleted while this clone has fleetq's state:
    starting anew there would evict or move every running job and forget their
    times; refused (exit 2) with both ways on. Pushed back, the state goes on
    from it; deleted here too, it starts anew on purpose."""
    _, clones = _origin_with_clones(tmp_path, ["ci", "other"])
    ci = clones["ci"]
    assert fleetq("reconcile", "--repo", str(ci), "--remote", "origin",
                  "--now", NOW).returncode == 0
    good = rev(ci, STATE)
    git(clones["other"], "push", "-q", "origin", f":refs/heads/{STATE}")
    write_files(ci, {"jobs/another.yaml": pytorchjob("another")})
    commit_all(ci, "another job")
    git(ci, "push", "-q", "origin", "main")
    proc = fleetq("reconcile", "--repo", str(ci), "--remote", "origin", "--now", NOW)
    assert proc.returncode == 2, proc.stderr
    assert f"origin has no state branch {STATE}, but this clone has" in proc.stderr
    assert f"git push origin {STATE}" in proc.stderr and f"git branch -D {STATE}" in proc.stderr
    assert rev(ci, STATE) == good
    git(ci, "push", "-q", "origin", STATE)
    assert fleetq("reconcile", "--repo", str(ci), "--remote", "origin",
                  "--now", NOW).returncode == 0
    assert git(ci, "rev-parse", f"{STATE}^").strip() == good


def test_a_remote_state_branch_rewound_is_not_built_on(tmp_path: Path) -> None:
    """The remote's state branch set back to an older state (a force-push): built
    on, the state forked, and when the jobs since were enqueued and admitted was
    forgotten; refused (exit 2) with both ways on, as git refuses a push that is
    no fast-forward."""
    _, clones = _origin_with_clones(tmp_path, ["ci"])
    ci = clones["ci"]

    def reconcile_ci(now: str) -> subprocess.CompletedProcess[str]:
        return fleetq("reconcile", "--repo", str(ci), "--remote", "origin", "--now", now)

    assert reconcile_ci(NOW).returncode == 0
    first = rev(ci, STATE)
    write_files(ci, {"jobs/default/early.yaml": pytorchjob("early")})
    commit_all(ci, "early job", date="2026-11-29T10:30:00Z")
    git(ci, "push", "-q", "origin", "main")
    assert reconcile_ci("2026-11-29T11:00:00Z").returncode == 0
    good = rev(ci, STATE)
    git(ci, "push", "-q", "--force", "origin", f"{first}:refs/heads/{STATE}")  # (by hand)
    write_files(ci, {"jobs/default/later.yaml": pytorchjob("later")})
    commit_all(ci, "later job", date="2026-11-29T11:30:00Z")
    git(ci, "push", "-q", "origin", "main")
    proc = reconcile_ci("2026-11-29T12:00:00Z")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"is at {first[:12]}, which is behind this clone's {STATE} ({good[:12]})" in \
        proc.stderr, proc.stderr
    push_back = f"git push --force-with-lease={STATE}:{first[:12]} origin {good[:12]}:refs/" \
                f"heads/{STATE}"
    assert push_back in proc.stderr and f"git branch -f {STATE} origin/{STATE}" in proc.stderr
    assert rev(ci, STATE) == good  # (not reset to the remote's)
    git(ci, *push_back.split()[1:])  # (the fix it names)
    assert reconcile_ci("2026-11-29T12:00:00Z").returncode == 0
    assert git(ci, "rev-parse", f"{STATE}^").strip() == good
    items = {i["job"]["name"]: i for i in _remote_placements(tmp_path / "origin.git")["items"]}
    assert items["early"]["enqueuedAt"] == "2026-11-29T10:30:00Z"  # (kept)


def test_the_local_state_branch_only_moves_forward(tmp_path: Path) -> None:
    """Two reconciles of one clone at once: the one that pushed first, and
    finished last, set the local state branch back to its older commit, so
    status, queue and explain read a state the remote had left behind."""
    _, clones = _origin_with_clones(tmp_path, ["ci"])
    ci = clones["ci"]
    assert fleetq("reconcile", "--repo", str(ci), "--now", NOW).returncode == 0
    older = rev(ci, STATE)
    write_files(ci, {"jobs/default/newer.yaml": pytorchjob("newer")})
    commit_all(ci, "newer job", date="2026-11-29T10:30:00Z")
    assert fleetq("reconcile", "--repo", str(ci), "--now", NOW).returncode == 0
    newer = rev(ci, STATE)
    repo = FleetRepo(ci)
    repo.advance_ref(f"refs/heads/{STATE}", older)  # (as the slower reconcile would)
    assert rev(ci, STATE) == newer
    git(ci, "update-ref", f"refs/heads/{STATE}", older)
    repo.advance_ref(f"refs/heads/{STATE}", newer)
    assert rev(ci, STATE) == newer
    git(ci, "update-ref", "-d", "refs/remotes/origin/x")
    repo.advance_ref("refs/remotes/origin/x", older)  # (absent: set)
    assert rev(ci, "origin/x") == older


def test_status_tells_a_local_state_branch_behind_its_remote_copy(tmp_path: Path) -> None:
    """As git status tells a branch behind its upstream: it read the older
    state without a word."""
    _, clones = _origin_with_clones(tmp_path, ["a", "b"])
    a, b = clones["a"], clones["b"]
    assert fleetq("reconcile", "--repo", str(a), "--remote", "origin", "--now", NOW
                  ).returncode == 0
    assert fleetq("reconcile", "--repo", str(b), "--remote", "origin", "--now", NOW
                  ).returncode == 0
    write_files(a, {"jobs/default/newer.yaml": pytorchjob("newer")})
    commit_all(a, "newer job", date="2026-11-29T10:30:00Z")
    git(a, "push", "-q", "origin", "main")
    assert fleetq("reconcile", "--repo", str(a), "--remote", "origin", "--now", NOW
                  ).returncode == 0
    git(b, "fetch", "-q", "origin")
    status = fleetq("status", "--repo", str(b))
    assert status.returncode == 0 and "newer" not in status.stdout
    assert f"fleetq: {STATE} is behind origin/{STATE} ({rev(a, STATE)[:12]})" in \
        status.stderr, status.stderr
    assert "; run fleetq reconcile --remote origin to bring it up to date" in status.stderr
    # plan reads the remote's state itself, with --remote: it is told so
    planned = fleetq("plan", "--repo", str(b), "--now", NOW)
    assert f"fleetq: {STATE} is behind origin/{STATE}" in planned.stderr
    told = "; fleetq plan --remote origin plans against origin's state (it fetches it first)"
    assert told in planned.stderr, planned.stderr
    assert fleetq("reconcile", "--repo", str(b), "--remote", "origin", "--now", NOW
                  ).returncode == 0
    status = fleetq("status", "--repo", str(b))
    assert "newer" in status.stdout and "is behind" not in status.stderr


def test_a_shallow_clone_that_lacks_a_broken_files_last_good_version_says_so(
        tmp_path: Path) -> None:
    """A CI checkout of depth 1 found no last good version of a broken quota
    tree (its source commits are not there) and decided the fleet without one:
    every queued job invalid. It stops (exit 2) and names the fetch."""
    origin, clones = _origin_with_clones(tmp_path, ["ci"])
    ci = clones["ci"]
    assert fleetq("reconcile", "--repo", str(ci), "--remote", "origin", "--now", NOW
                  ).returncode == 0
    tree_file = ci / "seed" / "ack-fleet-elasticquotatree.yaml"
    if not tree_file.exists():
        tree_file = next(p for p in ci.rglob("*.yaml") if "ElasticQuotaTree" in p.read_text())
    tree_file.write_text(tree_file.read_text() + "  broken: [\n")
    commit_all(ci, "a typo in the quota tree", date="2026-11-29T10:30:00Z")
    git(ci, "push", "-q", "origin", "main")
    assert fleetq("reconcile", "--repo", str(ci), "--remote", "origin", "--now", NOW
                  ).returncode == 0
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{origin}", "shallow")
    shallow = tmp_path / "shallow"
    plan = fleetq("plan", "--repo", str(shallow), "--remote", "origin", "--now", NOW)
    assert plan.returncode == 2, plan.stdout + plan.stderr
    named = str(tree_file.relative_to(ci))
    assert f"fleetq: {named} is broken and its last good version is in the source commits " \
           "the state was made from, which this shallow clone lacks" in plan.stderr and \
        "git fetch --unshallow" in plan.stderr, plan.stderr
    git(shallow, "fetch", "-q", "--unshallow", "origin")
    plan = fleetq("plan", "--repo", str(shallow), "--remote", "origin", "--now", NOW,
                  "--exit-code")
    assert plan.returncode == 0 and "No changes" in plan.stdout, plan.stdout + plan.stderr


def test_a_reconcile_with_no_remote_behind_the_remotes_copy_of_the_state_says_so(
        tmp_path: Path) -> None:
    """A clone whose local state branch is behind the remote's copy (fetched,
    not taken), reconciled with --remote '': it went on from the local one,
    forgetting the states made since, with no word until the next reconcile
    with the remote refused. It says so, and what to run."""
    _, clones = _origin_with_clones(tmp_path, ["a", "b"])
    a, b = clones["a"], clones["b"]
    assert fleetq("reconcile", "--repo", str(a), "--remote", "origin", "--now", NOW
                  ).returncode == 0
    git(b, "fetch", "-q", "origin")
    git(b, "branch", STATE, f"origin/{STATE}")
    write_files(a, {"jobs/default/later.yaml": pytorchjob("later")})
    commit_all(a, "a later job")
    git(a, "push", "-q", "origin", "main")
    assert fleetq("reconcile", "--repo", str(a), "--remote", "origin", "--now", NOW
                  ).returncode == 0
    git(b, "fetch", "-q", "origin")
    git(b, "merge", "-q", "--ff-only", "origin/main")
    head = rev(b, f"origin/{STATE}")
    assert head != rev(b, STATE)
    local = fleetq("reconcile", "--repo", str(b), "--remote", "", "--now", NOW)
    assert local.returncode == 0, local.stderr
    assert (f"{STATE}: warning: origin/{STATE} ({head[:12]}, as git last fetched it) holds "
            f"states the local {STATE} (") in local.stderr, local.stderr
    assert "reconcile with --remote origin" in local.stderr
    # (up to date with the remote's copy: nothing said)
    git(b, "branch", "-f", STATE, f"origin/{STATE}")
    again = fleetq("reconcile", "--repo", str(b), "--remote", "", "--now", NOW)
    assert again.returncode == 0 and "as git last fetched it" not in again.stderr, again.stderr


def test_a_reconcile_that_lost_the_race_says_so(tmp_path: Path) -> None:
    """Its push was refused as another reconcile's came first; it fetched and
    decided again, and said so only on a terminal, in a line wiped at once."""
    origin, clones = _origin_with_clones(tmp_path, ["a", "b"])
    a, b = clones["a"], clones["b"]
    pushing, go = tmp_path / "a-is-pushing", tmp_path / "go"
    hook = origin / "hooks" / "pre-receive"
    # the first push waits in the hook until told to go on (B pushes meanwhile)
    hook.write_text(f"#!/bin/sh\nif [ ! -e {pushing} ]; then\n  touch {pushing}\n"
                    f"  while [ ! -e {go} ]; do sleep 0.05; done\nfi\nexit 0\n")
    hook.chmod(0o755)
    slow = subprocess.Popen(
        [sys.executable, "-m", "reconciler.cli", "reconcile", "--repo", str(a), "--remote",
         "origin", "--now", "2026-11-29T11:00:00Z", "-o", "none"],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(1200):
            if pushing.exists() or slow.poll() is not None:
                break
            subprocess.run(["sleep", "0.05"], check=True)
        assert pushing.exists(), slow.communicate()
        first = fleetq("reconcile", "--repo", str(b), "--remote", "origin", "--now",
                       "2026-11-29T11:05:00Z", "-o", "none")
        assert first.returncode == 0 and "committed" in first.stdout, first.stderr
        assert "moved meanwhile" not in first.stderr
    finally:
        go.touch()
        _, err = slow.communicate(timeout=60)
    assert slow.returncode == 0, err
    assert "fleetq: the state branch moved meanwhile (another reconcile or a report wrote " \
           "it): decided again from its new head, 2 attempts in all" in err, err
    assert rev(a, STATE) == rev(origin, STATE)


def test_a_state_is_not_pushed_from_a_commit_the_remote_lacks(tmp_path: Path) -> None:
    """A job committed and not pushed, reconciled with --remote: the next
    runner, reconciling the remote's main, could not fetch the state's source
    and would undo the job's admission without a word. Refused (exit 2) with
    the push that puts it right, on a branch and from a detached HEAD; a commit
    whose copy here is stale but the remote has, goes on after one fetch."""
    origin, clones = _origin_with_clones(tmp_path, ["ci", "other"])
    ci, other = clones["ci"], clones["other"]
    write_files(ci, {"jobs/default/local-only.yaml": pytorchjob("local-only")})
    local = commit_all(ci, "local job")

    def reconcile_ci(*extra: str) -> subprocess.CompletedProcess[str]:
        return fleetq("reconcile", "--repo", str(ci), "--remote", "origin", "--now", NOW,
                      *extra)

    proc = reconcile_ci()
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"the source commit {local[:12]} (HEAD) is on no branch of origin" in proc.stderr
    assert "Push it first (git push origin main)" in proc.stderr, proc.stderr
    assert rev(origin, STATE) is None and rev(ci, STATE) is None  # (nothing pushed, nothing kept)
    git(ci, "checkout", "-q", "--detach")
    detached = reconcile_ci()
    assert detached.returncode == 2
    assert f"git push origin {local[:12]}:refs/heads/<branch>" in detached.stderr
    # Pushed from another clone: this clone's copy of origin/main is stale, and
    # one fetch finds it there.
    git(ci, "push", "-q", str(tmp_path / "origin.git"), "HEAD:refs/heads/main")
    git(ci, "update-ref", "refs/remotes/origin/main", f"{local}~1")
    assert reconcile_ci().returncode == 0
    assert _trailer(origin, STATE) == local
    assert rev(ci, "origin/main") == local
    # Without a remote, the state stays in the clone: nothing to refuse.
    write_files(other, {"jobs/default/mine.yaml": pytorchjob("mine")})
    commit_all(other, "my job")
    assert fleetq("reconcile", "--repo", str(other), "--remote", "", "--now",
                  NOW).returncode == 0
    assert rev(other, STATE) is not None and _trailer(other, STATE) != local


def test_a_report_recorded_without_remote_is_named_as_such(tmp_path: Path) -> None:
    """The README's ``kubectl get ... | fleetq report`` in a clone of a fleet
    with no spec.remote: the next reconcile --remote refused its commit as one
    "made by a reconcile without --remote"."""
    _, clones = _origin_with_clones(tmp_path, ["ci"])
    ci = clones["ci"]
    assert fleetq("reconcile", "--repo", str(ci), "--remote", "origin",
                  "--now", NOW).returncode == 0
    proc = subprocess.run(
        [sys.executable, "-m", "reconciler.cli", "report", "--cluster", "cf-hz-a", "--repo",
         str(ci), "--remote", "", "--now", NOW], input="apiVersion: v1\nkind: List\nitems: []\n",
        capture_output=True, text=True, cwd=REPO_ROOT, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    proc = fleetq("reconcile", "--repo", str(ci), "--remote", "origin", "--now", NOW)
    assert proc.returncode == 2 and "never pushed there (made by fleetq report without " \
        "--remote)" in proc.stderr, proc.stderr


def test_a_local_state_never_pushed_is_told_to_be_dropped_not_forced_over_the_remote(
        tmp_path: Path) -> None:
    """A clone that reconciled without --remote holds state commits the
    remote never had: not a remote rewound, so the fix is not to force this
    clone's over the remote's newer one (which the clusters run), but to take
    the remote's; behind it, to drop them or push them as they are."""
    origin, clones = _origin_with_clones(tmp_path, ["ci", "other"])
    ci, other = clones["ci"], clones["other"]

    def reconcile(clone: Path, remote: str = "origin") -> subprocess.CompletedProcess[str]:
        return fleetq("reconcile", "--repo", str(clone), "--remote", remote, "--now", NOW)

    def add_job(clone: Path, name: str) -> None:
        git(clone, "pull", "-q", "--ff-only", "origin", "main")
        write_files(clone, {f"jobs/default/{name}.yaml": pytorchjob(name)})
        commit_all(clone, name)
        git(clone, "push", "-q", "origin", "main")

    assert reconcile(ci).returncode == 0
    add_job(ci, "local-only")
    assert reconcile(ci, "").returncode == 0  # (kept in this clone)
    local = rev(ci, STATE)
    behind = reconcile(ci)
    assert behind.returncode == 2
    assert f"lacks 1 state commit of this clone's ({local[:12]}), never pushed there (made by " \
           f"fleetq reconcile without --remote)" in behind.stderr, behind.stderr
    assert f"git branch -f {STATE} origin/{STATE}" in behind.stderr
    assert f"git push origin {STATE})" in behind.stderr and "--force" not in behind.stderr

    add_job(other, "elsewhere")
    assert reconcile(other).returncode == 0
    theirs = rev(origin, STATE)
    forked = reconcile(ci)
    assert forked.returncode == 2
    assert f"this clone's {STATE} ({local[:12]}) has 1 state commit never pushed to origin" in \
        forked.stderr, forked.stderr
    assert "--force" not in forked.stderr and "rewound" not in forked.stderr
    assert rev(ci, STATE) == local and rev(origin, STATE) == theirs  # (nothing moved)
    git(ci, "branch", "-f", STATE, f"origin/{STATE}")  # (the fix it names)
    assert reconcile(ci).returncode == 0
    assert rev(origin, STATE) == theirs == rev(ci, STATE)  # (its main is older: no change)
    # A local state made from a commit origin lacks: publishing it is not offered.
    git(ci, "pull", "-q", "--ff-only", "origin", "main")
    write_files(ci, {"jobs/default/unpushed.yaml": pytorchjob("unpushed")})
    unpushed = commit_all(ci, "not pushed")
    assert reconcile(ci, "").returncode == 0
    proc = reconcile(ci)
    assert proc.returncode == 2 and f"they are made from {unpushed[:12]}, which is on no " \
        f"branch of origin" in proc.stderr and "git push" not in proc.stderr, proc.stderr


def test_plan_in_a_pull_requests_clone_fetches_the_commit_the_state_was_made_from(
        tmp_path: Path) -> None:
    """A CI checkout of a pull request's branch alone lacks the main commit the
    state was made from: plan --remote fetches it to tell whether the branch
    has it (here it does not, and the plan would undo main's new job); a
    shallow checkout's history cannot tell, and the plan says so."""
    origin, clones = _origin_with_clones(tmp_path, ["ci"])
    ci = clones["ci"]
    git(ci, "checkout", "-q", "-b", "pr")  # (branched before main's new job)
    write_files(ci, {"jobs/default/on-pr.yaml": pytorchjob("on-pr")})
    commit_all(ci, "a job of the pull request")
    git(ci, "push", "-q", "origin", "pr")
    git(ci, "checkout", "-q", "main")
    write_files(ci, {"jobs/default/on-main.yaml": pytorchjob("on-main")})
    made_from = commit_all(ci, "a job on main")
    git(ci, "push", "-q", "origin", "main")
    assert fleetq("reconcile", "--repo", str(ci), "--remote", "origin",
                  "--now", NOW).returncode == 0
    full = tmp_path / "pr-only"
    shallow = tmp_path / "pr-shallow"
    git(tmp_path, "clone", "-q", "--single-branch", "--branch", "pr", f"file://{origin}",
        str(full))  # (file://: a local path would copy every object)
    git(tmp_path, "clone", "-q", "--depth", "1", "--branch", "pr", f"file://{origin}",
        str(shallow))

    def plan(clone: Path, *extra: str) -> subprocess.CompletedProcess[str]:
        return fleetq("plan", "--repo", str(clone), "--remote", "origin", "--now", NOW, *extra)

    # Such a clone fetched no state branch: status says where it is, not to reconcile;
    # plan and explain do not read it as no state (every job planned as new), but stop.
    fetch = f"git fetch origin {STATE}:refs/remotes/origin/{STATE}"
    state = rev(origin, STATE)
    assert state is not None
    for command in (["status"], ["queue"], ["plan"], ["explain", "on-main"]):
        now = ["--now", NOW] if command[0] in ("plan", "explain") else []
        proc = fleetq(*command, "--repo", str(shallow), *now)
        assert proc.returncode == 2 and proc.stdout == "", (command, proc.stdout, proc.stderr)
        also = ", or plan with --remote origin" if command == ["plan"] else ""
        assert f"fleetq: no branch {STATE!r} here, nor a copy of origin's, which has one " \
               f"({state[:12]}): fetch it ({fetch}){also}, and run again\n" == proc.stderr, \
            (command, proc.stderr)
    git(shallow, *fetch.split()[1:])
    status = fleetq("status", "--repo", str(shallow))
    assert status.returncode == 0 and "on-main" in status.stdout, status.stderr

    got = json.loads(plan(full, "-o", "json").stdout)
    assert got["stateSource"] == {"commit": made_from, "contained": False}
    text = plan(full).stdout
    assert f"Note: HEAD lacks {made_from[:12]}, the commit the state was made from" in text
    assert "delete PyTorchJob default/on-main" in text, text
    got = json.loads(plan(shallow, "-o", "json").stdout)
    assert got["stateSource"] == {"commit": made_from, "contained": None}
    text = plan(shallow).stdout
    assert f"Note: the state is made from {made_from[:12]}, which is not in the history this " \
           f"clone has of HEAD" in text and "git fetch --unshallow" in text, text
    git(shallow, "fetch", "-q", "--unshallow")
    got = json.loads(plan(shallow, "-o", "json").stdout)
    assert got["stateSource"] == {"commit": made_from, "contained": False}


def test_a_state_made_from_a_commit_dropped_by_a_force_push_is_warned_of(
        tmp_path: Path) -> None:
    """main force-pushed back over the commit the state was made from (and the
    remote's garbage collected): the next runner cannot fetch it, decides from
    main as it is, and says why the dropped commit's job leaves the clusters."""
    origin, clones = _origin_with_clones(tmp_path, ["ci", "runner"])
    ci, runner = clones["ci"], clones["runner"]
    write_files(ci, {"jobs/default/dropped.yaml": pytorchjob("dropped")})
    dropped = commit_all(ci, "a job, pushed and then dropped")
    git(ci, "push", "-q", "origin", "main")
    assert fleetq("reconcile", "--repo", str(ci), "--remote", "origin",
                  "--now", NOW).returncode == 0
    git(ci, "push", "-q", "--force", "origin", f"{dropped}~1:refs/heads/main")
    git(origin, "reflog", "expire", "--expire=now", "--all")
    git(origin, "gc", "-q", "--prune=now")
    git(runner, "pull", "-q", "--ff-only", "origin", "main")
    proc = fleetq("reconcile", "--repo", str(runner), "--remote", "origin", "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert (f"{STATE}: warning: the state was made from {dropped[:12]}, a commit neither this "
            f"clone nor origin has: dropped from the source's history (a force-push) or never "
            f"pushed") in proc.stderr, proc.stderr
    assert "default/dropped" not in {f"{i['job']['namespace']}/{i['job']['name']}"
                                     for i in _remote_placements(origin)["items"]}
    again = fleetq("reconcile", "--repo", str(runner), "--remote", "origin", "--now", NOW)
    assert again.returncode == 0 and "warning" not in again.stderr  # (said once)


def test_a_source_on_a_branch_the_remote_deleted_or_not_its_default_is_told(
        tmp_path: Path) -> None:
    """This clone's copy of origin/feat still holds the commit after feat was
    deleted there: the remote's branches are fetched before the check, and the
    push refused. On a feature branch origin has, the state is pushed with a
    warning that main's next reconcile will not go on from it."""
    origin, clones = _origin_with_clones(tmp_path, ["ci", "other"])
    ci = clones["ci"]
    git(ci, "checkout", "-q", "-b", "feat")
    write_files(ci, {"jobs/default/feat.yaml": pytorchjob("feat")})
    feat = commit_all(ci, "a feature")
    git(ci, "push", "-q", "origin", "feat")
    git(clones["other"], "push", "-q", "origin", "--delete", "feat")
    assert rev(ci, "origin/feat") == feat  # (the stale copy)
    proc = fleetq("reconcile", "--repo", str(ci), "--remote", "origin", "--now", NOW)
    assert proc.returncode == 2 and "is on no branch of origin" in proc.stderr, proc.stderr
    assert rev(ci, "origin/feat") is None and rev(origin, STATE) is None
    git(ci, "push", "-q", "origin", "feat")
    proc = fleetq("reconcile", "--repo", str(ci), "--remote", "origin", "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("committed ") and " and pushed it to origin from " in \
        proc.stdout, proc.stdout
    assert (f"{STATE}: warning: the source commit {feat[:12]} is on feat of origin, not on "
            f"its default branch main") in proc.stderr, proc.stderr


def test_the_remote_is_named_and_its_branch_read_as_it_is_now(tmp_path: Path) -> None:
    """--remote given a URL said git's "invalid refspec"; --source origin/main
    with --remote origin read the branch as git last fetched it."""
    origin, clones = _origin_with_clones(tmp_path, ["ci", "other"])
    ci, other = clones["ci"], clones["other"]
    proc = fleetq("reconcile", "--repo", str(ci), "--remote", f"file://{origin}", "--now", NOW)
    assert proc.returncode == 2 and f"--remote names 'file://{origin}', which is no remote " \
        f"of this repository (this repository has origin)" in proc.stderr, proc.stderr
    write_files(other, {"jobs/default/later.yaml": pytorchjob("later")})
    later = commit_all(other, "a later job")
    git(other, "push", "-q", "origin", "main")
    proc = fleetq("reconcile", "--repo", str(ci), "--remote", "origin", "--source",
                  "origin/main", "--now", NOW)
    assert proc.returncode == 0 and later[:12] in proc.stdout, proc.stdout
    assert _trailer(origin, STATE) == later
    proc = fleetq("reconcile", "--repo", str(ci), "--remote", "origin", "--source",
                  "origin/feat", "--now", NOW)
    assert proc.returncode == 2 and "origin has no branch 'feat' (as git last fetched it): " \
        "push it (git push -u origin feat), or name another with --source" in proc.stderr, \
        proc.stderr


def test_the_states_of_two_clones_after_a_rewind_are_told_apart(tmp_path: Path) -> None:
    """origin's state set back, then built on by another clone: this clone is
    told to take origin's (which the clusters run), not first to force its own
    over it. A force-push of main the remote still keeps the commit of (it is
    fetchable) is warned of as one the remote's gc dropped."""
    origin, clones = _origin_with_clones(tmp_path, ["a", "b"])
    a, b = clones["a"], clones["b"]

    def reconcile(clone: Path) -> subprocess.CompletedProcess[str]:
        return fleetq("reconcile", "--repo", str(clone), "--remote", "origin", "--now", NOW)

    assert reconcile(a).returncode == 0
    write_files(a, {"jobs/default/second.yaml": pytorchjob("second")})
    dropped = commit_all(a, "second")
    git(a, "push", "-q", "origin", "main")
    assert reconcile(a).returncode == 0
    mine = rev(a, STATE)
    git(a, "push", "-q", "--force", "origin", f"{STATE}~1:refs/heads/{STATE}")
    git(b, "pull", "-q", "--ff-only", "origin", "main")
    write_files(b, {"jobs/default/third.yaml": pytorchjob("third")})
    commit_all(b, "third")
    git(b, "push", "-q", "origin", "main")
    assert reconcile(b).returncode == 0
    theirs = rev(origin, STATE)
    proc = reconcile(a)
    assert proc.returncode == 2, proc.stderr
    assert (f"has gone on from an older state than this clone's ({mine[:12]}): it was set "
            f"back, then built on by another reconcile. The clusters run origin's: take it "
            f"here (git branch -f {STATE} origin/{STATE})") in proc.stderr, proc.stderr
    assert rev(origin, STATE) == theirs
    # main set back over `dropped` (origin keeps the object: no gc has run)
    git(b, "push", "-q", "--force", "origin", f"{dropped}~1:refs/heads/main")
    fresh = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", str(origin), str(fresh))
    write_files(fresh, {"jobs/default/fourth.yaml": pytorchjob("fourth")})
    commit_all(fresh, "fourth")
    git(fresh, "push", "-q", "origin", "main")
    proc = reconcile(fresh)
    assert proc.returncode == 0, proc.stderr
    assert "warning: the state was made from " in proc.stderr and "that the history of " \
        in proc.stderr and "lacks (a force-push of the source branch" in proc.stderr, proc.stderr


def test_a_remote_state_commit_edited_by_hand_is_refused(tmp_path: Path) -> None:
    """The remote's state branch pushed over with fleetq's commit amended (a
    rendered job file edited): every clone that reconciles against it stops,
    naming the push that puts fleetq's last commit back, and pushes nothing."""
    origin, clones = _origin_with_clones(tmp_path, ["a", "b"])
    a, b = clones["a"], clones["b"]
    assert fleetq("reconcile", "--repo", str(a), "--remote", "origin", "--now", NOW
                  ).returncode == 0
    good = rev(origin, STATE)
    git(b, "fetch", "-q", "origin", f"{STATE.removeprefix('refs/heads/')}")
    worktree = tmp_path / "state"
    git(b, "worktree", "add", "-q", "-b", "edit", str(worktree), "FETCH_HEAD")
    rendered = next(p for p in sorted((worktree / "clusters").rglob("*.yaml"))
                    if "replicas: " in p.read_text())
    rendered.write_text(rendered.read_text().replace("replicas: ", "replicas: 1", 1))
    git(worktree, "commit", "-q", "--amend", "-a", "--no-edit")
    git(worktree, "push", "-q", "--force", "origin", f"edit:{STATE}")
    edited = rev(origin, STATE)
    assert edited != good
    proc = fleetq("reconcile", "--repo", str(a), "--remote", "origin", "--now", NOW)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"the state branch fleetq/state on origin is at {edited[:12]}, which was edited " \
           "by hand" in proc.stderr, proc.stderr
    # (this clone's state, which the amended commit replaced)
    assert f"git push --force origin {good[:12]}:refs/heads/fleetq/state" in proc.stderr
    assert rev(origin, STATE) == edited
    git(a, "push", "-q", "--force", "origin", f"{good}:{STATE}")
    assert fleetq("reconcile", "--repo", str(a), "--remote", "origin", "--now", NOW
                  ).returncode == 0


def test_a_runners_clone_with_no_state_branch_does_not_start_a_deleted_remote_state_anew(
        tmp_path: Path) -> None:
    """A CI runner's clone has no state branch of its own, only what it read of
    the remote's: when the remote's is deleted, the fetch drops its copy, and
    the state was started anew there and pushed, every running job moved or
    evicted and its times forgotten. The state it last read is kept where no
    fetch prunes it; the reconcile is refused (exit 2) with both ways on."""
    origin, clones = _origin_with_clones(tmp_path, ["ci", "other"])
    ci = clones["ci"]
    assert fleetq("reconcile", "--repo", str(ci), "--remote", "origin",
                  "--now", NOW).returncode == 0
    good = rev(origin, STATE)
    git(ci, "branch", "-D", "fleetq/state")  # (as a runner's fresh checkout has none)
    git(clones["other"], "push", "-q", "origin", f":refs/heads/{STATE}")
    for _ in range(2):  # (refused again: the fetch dropped origin/fleetq/state)
        proc = fleetq("reconcile", "--repo", str(ci), "--remote", "origin", "--now", NOW)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert f"origin has no state branch fleetq/state, but it had fleetq's state when " \
               f"this clone last read it ({good[:12]}" in proc.stderr, proc.stderr
        assert git(origin, "branch", "--list", "fleetq/state").strip() == ""
    git(ci, "push", "-q", "origin", f"{good}:refs/heads/{STATE}")
    assert fleetq("reconcile", "--repo", str(ci), "--remote", "origin",
                  "--now", NOW).returncode == 0
    # started anew on purpose: forgotten as told
    git(clones["other"], "push", "-q", "origin", f":refs/heads/{STATE}")
    git(ci, "branch", "-D", "fleetq/state")
    proc = fleetq("reconcile", "--repo", str(ci), "--remote", "origin", "--now", NOW)
    assert proc.returncode == 2
    git(ci, "update-ref", "-d", "refs/fleetq/seen/origin/fleetq/state")
    proc = fleetq("reconcile", "--repo", str(ci), "--remote", "origin", "--now", NOW)
    assert proc.returncode == 0, proc.stderr
