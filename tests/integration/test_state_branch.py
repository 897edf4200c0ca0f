"""The state branch: one commit per change, determinism, identity, trailer, enqueue times."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.pipeline import STATE_FORMAT, TREE_NAMED_FROM

from .conftest import (
    NOW,
    QUEUED_CLUSTER_POLICY,
    STATE,
    SeedFleet,
    batchjob,
    commit_all,
    fleetq,
    git,
    line_of,
    make_fleet_repo,
    member_cluster,
    one_leaf_tree,
    placements,
    priority_classes,
    push_template_job,
    pytorchjob,
    reconciled_template,
    rev,
    seed_fleet_files,
    state_show,
    state_yaml,
    when,
    write_files,
)


def test_no_source_change_makes_no_commit(seed_fleet: SeedFleet) -> None:
    first = seed_fleet.reconcile()
    assert first.commit is not None
    head = rev(seed_fleet.path, STATE)
    assert head == first.commit
    # Later clock, same source: admittedAt and enqueuedAt are kept, so nothing changes.
    again = seed_fleet.reconcile("2026-11-29T12:00:00Z")
    assert again.commit is None
    assert rev(seed_fleet.path, STATE) == head
    proc = fleetq("reconcile", "--repo", str(seed_fleet.path), "--now", "2026-11-29T13:00:00Z")
    assert proc.returncode == 0, proc.stderr
    assert "no change" in proc.stdout
    assert rev(seed_fleet.path, STATE) == head
    assert git(seed_fleet.path, "rev-list", "--count", STATE).strip() == "1"


def test_two_fresh_repos_give_byte_identical_state_trees(tmp_path: Path) -> None:
    files = seed_fleet_files()
    files["jobs/default/pytorch-second.yaml"] = pytorchjob("pytorch-second", workers=3)
    trees = []
    for name in ("one", "two"):
        path = make_fleet_repo(tmp_path / name, files)
        proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
        assert proc.returncode == 0, proc.stderr
        trees.append(git(path, "rev-parse", f"{STATE}^{{tree}}").strip())
        # The commit itself is deterministic too (identity, clock, message).
        trees.append(git(path, "rev-parse", STATE).strip())
    assert trees[0] == trees[2]
    assert trees[1] == trees[3]


def _status_is_clean(path: Path) -> None:
    assert git(path, "status", "--porcelain", "--untracked-files=all") == ""


def test_commit_identity_trailer_and_untouched_work_tree(seed_fleet: SeedFleet,
                                                         clean_git_env: Path) -> None:
    path = seed_fleet.path
    source = git(path, "rev-parse", "HEAD").strip()
    index_before = (path / ".git" / "index").read_bytes()
    # No identity anywhere: HOME is an empty folder, no system config, no GIT_* variables.
    assert not any(clean_git_env.iterdir())
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr

    message = git(path, "log", "-1", "--format=%B", STATE).rstrip("\n")
    assert message.splitlines()[-1] == f"Fleet-Source-Commit: {source}"
    assert git(path, "log", "-1", "--format=%cn <%ce>", STATE).strip() == \
        "fleetq <fleetq@localhost>"
    assert git(path, "log", "-1", "--format=%ct", STATE).strip() == \
        str(int(when(NOW).timestamp()))
    # The fleet repo's work tree, index and HEAD are untouched.
    assert git(path, "rev-parse", "HEAD").strip() == source
    assert git(path, "symbolic-ref", "--short", "HEAD").strip() == "main"
    _status_is_clean(path)
    assert (path / ".git" / "index").read_bytes() == index_before
    assert not (path / "placements.yaml").exists()
    assert not (path / "clusters" / "cf-hz-a" / "kustomization.yaml").exists()

    # GIT_COMMITTER_NAME / GIT_COMMITTER_EMAIL override the default identity.
    write_files(path, {"jobs/default/pytorch-second.yaml": pytorchjob("pytorch-second")})
    source2 = commit_all(path, "second job", date="2026-11-29T10:30:00Z")
    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T11:30:00Z",
                  env={"GIT_COMMITTER_NAME": "CI Bot", "GIT_COMMITTER_EMAIL": "ci@example.org"})
    assert proc.returncode == 0, proc.stderr
    assert git(path, "log", "-1", "--format=%cn <%ce>", STATE).strip() == \
        "CI Bot <ci@example.org>"
    message = git(path, "log", "-1", "--format=%B", STATE).rstrip("\n")
    assert message.splitlines()[-1] == f"Fleet-Source-Commit: {source2}"
    assert git(path, "rev-parse", f"{STATE}^").strip() != ""
    _status_is_clean(path)
    assert git(path, "rev-parse", "HEAD").strip() == source2


def test_fleet_yaml_committer_is_used(tmp_path: Path) -> None:
    files = seed_fleet_files()
    files["fleet.yaml"] = (
        "apiVersion: fleetq.io/v1alpha1\nkind: Fleet\nmetadata: {name: fleet}\n"
        "spec:\n  committer: {name: Fleet Robot, email: robot@fleet.example}\n")
    path = make_fleet_repo(tmp_path / "fleet", files)
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == "" or "error" not in proc.stderr
    assert git(path, "log", "-1", "--format=%cn <%ce>", STATE).strip() == \
        "Fleet Robot <robot@fleet.example>"


def test_a_committer_git_cannot_write_is_refused_and_the_state_stays_readable(
        tmp_path: Path) -> None:
    """A name with a newline or an angle bracket (fleet.yaml's, or a
    GIT_COMMITTER_* variable's) was written into the state commit as it was:
    a commit git cannot read, on which every later command stopped with a
    Python traceback. fleet.yaml's is an error at its line (its last good
    version is used); a variable's stops the command, nothing written; and a
    malformed commit already there is told, with the fix, not a traceback."""
    files = seed_fleet_files()
    fleet = ("apiVersion: fleetq.io/v1alpha1\nkind: Fleet\nmetadata: {name: fleet}\n"
             "spec:\n  committer:\n    name: Fleet Robot\n    email: robot@fleet.example\n")
    files["fleet.yaml"] = fleet
    path = make_fleet_repo(tmp_path / "fleet", files)
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    write_files(path, {"fleet.yaml": fleet.replace("name: Fleet Robot", 'name: "bob\\nx"'),
                       "jobs/default/b.yaml": pytorchjob("b")})
    commit_all(path, "a committer with a newline, and a job")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert "fleet.yaml:6: error: spec.committer.name 'bob\\nx' holds '\\n', which git cannot " \
        "write in a commit's committer (its line is: name <email> time); take it out" \
        in proc.stderr, proc.stderr
    assert git(path, "log", "-1", "--format=%cn <%ce>", STATE).strip() == \
        "Fleet Robot <robot@fleet.example>"  # (fleet.yaml's last good version)
    git(path, "fsck", "--no-dangling")  # (check=True: fails on a malformed commit)
    head = rev(path, STATE)
    write_files(path, {"jobs/default/c.yaml": pytorchjob("c")})
    commit_all(path, "another job")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW,
                  env={"GIT_COMMITTER_NAME": "Eve <eve@example.org>"})
    assert proc.returncode == 2 and rev(path, STATE) == head, proc.stderr
    assert "fleetq: GIT_COMMITTER_NAME 'Eve <eve@example.org>' holds '<'" in proc.stderr
    # (a commit git cannot read, made by another tool, at the head of the state branch)
    tree = git(path, "rev-parse", f"{STATE}^{{tree}}").strip()
    bad = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--literally", "--stdin"], cwd=path,
        input=f"tree {tree}\nparent {head}\nauthor bob\nx <b@c> 1 +0000\ncommitter bob\nx "
              f"<b@c> 1 +0000\n\nby hand\n", capture_output=True, text=True, check=True
    ).stdout.strip()
    git(path, "update-ref", f"refs/heads/{STATE}", bad)
    for command in ("status", "reconcile"):
        proc = fleetq(command, "--repo", str(path), "--now", NOW) if command == "reconcile" \
            else fleetq(command, "--repo", str(path))
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert f"commit {bad[:12]} is malformed" in proc.stderr, proc.stderr
        assert f"git update-ref refs/heads/BRANCH {bad[:12]}^" in proc.stderr


def test_enqueue_and_admission_times_are_kept(seed_fleet: SeedFleet) -> None:
    path = seed_fleet.path  # pytorch-test committed at 10:00
    seed_fleet.reconcile("2026-11-29T11:00:00Z")
    first = placements(path)["default/pytorch-test"]
    assert first["enqueuedAt"] == "2026-11-29T10:00:00Z"
    assert first["admittedAt"] == "2026-11-29T11:00:00Z"

    # b is committed at 10:20 but that commit is never reconciled; the next one (10:40)
    # is the first reconciled commit containing it. c carries its own creationTimestamp.
    write_files(path, {"jobs/default/b.yaml": pytorchjob("b")})
    commit_all(path, "add b", date="2026-11-29T10:20:00Z")
    c_manifest = pytorchjob("c").replace(
        "  namespace: default\n",
        "  namespace: default\n  creationTimestamp: \"2026-11-28T08:00:00Z\"\n")
    write_files(path, {"jobs/default/c.yaml": c_manifest})
    # An edit of pytorch-test does not move its place in the queue.
    pt = path / "jobs/default/pytorch-test.yaml"
    pt.write_text(pt.read_text().replace("app: pytorchjob\n  name:",
                                         "app: pytorchjob\n    team: seed\n  name:", 1))
    commit_all(path, "add c, label pytorch-test", date="2026-11-29T10:40:00Z")
    out = seed_fleet.reconcile("2026-11-29T12:00:00Z")
    assert out.commit is not None
    items = placements(path)
    assert items["default/pytorch-test"]["enqueuedAt"] == "2026-11-29T10:00:00Z"
    assert items["default/pytorch-test"]["admittedAt"] == "2026-11-29T11:00:00Z"
    assert items["default/pytorch-test"]["phase"] == "Admitted"
    assert items["default/b"]["enqueuedAt"] == "2026-11-29T10:40:00Z"
    assert items["default/c"]["enqueuedAt"] == "2026-11-28T08:00:00Z"
    # c was created earliest, so it heads the queue (max-jobs 1 holds both b and c).
    assert items["default/c"]["position"] == 1
    assert items["default/b"]["position"] == 2

    # Later commits and reconciles keep every time.
    write_files(path, {"jobs/default/d.yaml": pytorchjob("d")})
    commit_all(path, "add d", date="2026-11-29T13:00:00Z")
    seed_fleet.reconcile("2026-11-29T14:00:00Z")
    items = placements(path)
    assert items["default/pytorch-test"]["enqueuedAt"] == "2026-11-29T10:00:00Z"
    assert items["default/pytorch-test"]["admittedAt"] == "2026-11-29T11:00:00Z"
    assert items["default/b"]["enqueuedAt"] == "2026-11-29T10:40:00Z"
    assert items["default/d"]["enqueuedAt"] == "2026-11-29T13:00:00Z"


@pytest.mark.parametrize("bad_now", [
    "yesterday", "2026-13-01T00:00:00Z",
    # (a traceback: out of Python's range in UTC, or once fleetq adds to it)
    "0001-01-01T00:00:00+08:00", "9999-12-31T23:59:59Z", "1969-12-31T23:59:59Z"])
def test_bad_now_is_a_usage_error(seed_fleet: SeedFleet, bad_now: str) -> None:
    proc = fleetq("reconcile", "--repo", str(seed_fleet.path), "--now", bad_now)
    assert proc.returncode == 2
    assert proc.stderr.startswith("fleetq: --now ") and "Traceback" not in proc.stderr
    assert state_show(seed_fleet.path, "placements.yaml") is None


FLEET_SETTINGS = """\
apiVersion: fleetq.io/v1alpha1
kind: Fleet
metadata: {name: fleet}
spec:
  stateBranch: fleet/rendered
  exclude:
  - "docs/**"
"""


def test_fleet_yaml_state_branch_and_exclude(tmp_path: Path) -> None:
    files = seed_fleet_files()
    files["fleet.yaml"] = FLEET_SETTINGS
    # Would be a broken job if it were read.
    files["docs/example-job.yaml"] = pytorchjob("doc-example", replicas_text='"two"')
    path = make_fleet_repo(tmp_path / "fleet", files)
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert "docs/" not in proc.stderr
    assert rev(path, "fleet/rendered") is not None
    assert rev(path, STATE) is None
    items = placements(path, "fleet/rendered")
    assert set(items) == {"default/pytorch-test"}

    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 0, proc.stdout
    # status reads the state branch fleet.yaml names, like reconcile writes it.
    proc = fleetq("status", "--repo", str(path), "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert '"pytorch-test"' in proc.stdout
    # A state branch mistyped, or the default one fleet.yaml no longer names:
    # not "run reconcile" (which would start a second state), but where it is.
    for wrong in ("fleet/rendred", STATE):
        proc = fleetq("status", "--repo", str(path), "--state-branch", wrong)
        assert (proc.returncode, proc.stdout) == (2, ""), proc.stdout
        assert (f"no state branch {wrong!r}; the state here is on fleet/rendered: "
                f"--state-branch fleet/rendered reads it") in proc.stderr, proc.stderr
    # The closest of several; in a clone (a CI runner's), the remote's copies; and
    # plan, which goes on from no state, says so too.
    git(path, "branch", "a-backup", "fleet/rendered")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(path), str(clone))
    for where, listed in ((path, "a-backup, fleet/rendered"),
                          (clone, "origin/a-backup (as git last fetched it), "
                                  "origin/fleet/rendered (as git last fetched it)")):
        said = (f"no state branch 'fleet/rendred'; the state here is on {listed}: "
                f"--state-branch fleet/rendered reads it")
        for command in ("status", "plan"):
            proc = fleetq(command, "--repo", str(where), "--state-branch", "fleet/rendred")
            assert said in proc.stderr, (command, proc.stderr)
            assert "git fetch" not in proc.stderr and "run `fleetq reconcile`" not in proc.stderr


def test_a_state_branch_renamed_in_fleet_yaml_does_not_start_the_state_over(
        tmp_path: Path) -> None:
    """fleet.yaml's stateBranch edited: a first reconcile there would forget the
    state on the branch named before (its jobs that finished would run again);
    refused, saying how to move it, or to start over all the same."""
    path = reconciled_template(tmp_path)
    head = rev(path, STATE)
    fleet_yaml = (path / "fleet.yaml").read_text(encoding="utf-8")
    assert f"stateBranch: {STATE}" in fleet_yaml
    write_files(path, {"fleet.yaml": fleet_yaml.replace(f"stateBranch: {STATE}",
                                                        "stateBranch: fleetq/moved")})
    commit_all(path, "another state branch")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 2, proc.stdout
    assert (f"fleetq: no state branch 'fleetq/moved' yet, but {STATE} holds this fleet's "
            f"state") in proc.stderr
    assert f"git branch -m {STATE} fleetq/moved" in proc.stderr
    assert "fleetq reconcile --state-branch fleetq/moved" in proc.stderr
    assert rev(path, "fleetq/moved") is None and rev(path, STATE) == head
    git(path, "branch", "-m", STATE, "fleetq/moved")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert git(path, "merge-base", str(head), "fleetq/moved").strip() == head  # (carried on)
    # named on the command line: a new state, as asked
    git(path, "branch", "-m", "fleetq/moved", STATE)
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW,
                  "--state-branch", "fleetq/moved")
    assert proc.returncode == 0, proc.stderr
    assert rev(path, "fleetq/moved") is not None


@pytest.mark.parametrize(("how", "said"), [
    (["--state-branch", "main"], "is the source branch (HEAD)"),
    (["--state-branch", "main", "--source", "main"], "is the source branch (main)"),
    (["--state-branch", "bad..name"], "is not a valid branch name"),
    (["--state-branch", "has space"], "is not a valid branch name"),
    (["--state-branch", "HEAD"], "is not a valid branch name"),
    (["--state-branch", "refs/heads/main"], "is not a valid branch name"),
    (["--state-branch", "FETCH_HEAD"], "is not a valid branch name"),
    (["--state-branch", "heads/x"], "is not a valid branch name"),
    (["--state-branch", "origin/state"], "reads as a branch of the remote 'origin'"),
    (["--state-branch", "main/state"], "git has the branch 'main', and a branch cannot be"),
    ("fleet.yaml", "is the source branch (HEAD)"),
])
def test_a_state_branch_fleetq_may_not_write_is_refused(
        tmp_path: Path, how: list[str] | str, said: str) -> None:
    """The source branch (its files would be replaced by the rendered state),
    the branch checked out, or no branch name at all: refused, nothing written."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    if how == "fleet.yaml":
        fleet_yaml = (path / "fleet.yaml").read_text()
        assert "stateBranch: fleetq/state" in fleet_yaml
        write_files(path, {"fleet.yaml": fleet_yaml.replace("stateBranch: fleetq/state",
                                                            "stateBranch: main")})
        commit_all(path, "the state on main")
    git(path, "remote", "add", "origin", str(tmp_path / "nowhere.git"))
    before = git(path, "for-each-ref").splitlines()
    for command in ("reconcile", "watch"):  # (a watch stops at once: it never could write)
        proc = fleetq(command, "--repo", str(path), *([] if how == "fleet.yaml" else how),
                      timeout=30)
        # (a watch follows the branch checked out when it starts: it names it)
        told = said.replace("(HEAD)", "(main)") if command == "watch" else said
        assert proc.returncode == 2 and told in proc.stderr, proc.stderr
        assert "spec.stateBranch" in proc.stderr and "Traceback" not in proc.stderr
    assert git(path, "for-each-ref").splitlines() == before
    assert git(path, "status", "--porcelain") == ""


def test_the_state_branch_checked_out_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    assert fleetq("reconcile", "--repo", str(path), "-q").returncode == 0
    git(path, "checkout", "-q", STATE)
    proc = fleetq("reconcile", "--repo", str(path), "--source", "main", "--now", NOW)
    assert proc.returncode == 2 and "is checked out in" in proc.stderr, proc.stderr


def test_the_state_branch_checked_out_unborn_is_refused(tmp_path: Path) -> None:
    """``git checkout --orphan fleetq/state``: fleetq wrote it, and the next
    ``git commit`` put the fleet's source files on it."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    git(path, "checkout", "-q", "--orphan", STATE)
    proc = fleetq("reconcile", "--repo", str(path), "--source", "main", "--now", NOW)
    assert proc.returncode == 2 and "is checked out in" in proc.stderr, proc.stderr
    assert rev(path, STATE) is None


def test_a_branch_fleetq_did_not_write_or_a_state_commit_as_source_is_refused(
        tmp_path: Path) -> None:
    """Another branch named as the state (on a detached HEAD, say), a state
    branch checked out in a linked work tree, a state commit given as the
    source (which evicted every job): refused, nothing written."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    assert fleetq("reconcile", "--repo", str(path), "-q").returncode == 0
    git(path, "branch", "-q", "other")
    git(path, "checkout", "-q", "--detach")
    refs = git(path, "for-each-ref").splitlines()
    proc = fleetq("reconcile", "--repo", str(path), "--state-branch", "main")
    assert proc.returncode == 2 and "the branch 'main' was not written by fleetq" in proc.stderr
    state = git(path, "rev-parse", STATE).strip()
    for command in ("reconcile", "plan", "explain", "watch"):
        proc = fleetq(command, *(["later"] if command == "explain" else []), "--repo",
                      str(path), "--source", state, timeout=30)
        assert proc.returncode == 2 and "is a state commit" in proc.stderr, proc.stderr
    # the state branch named as the source: its commit is told, not the branch clash
    proc = fleetq("reconcile", "--repo", str(path), "--source", STATE, "--state-branch", STATE)
    assert proc.returncode == 2 and "is a state commit" in proc.stderr, proc.stderr
    git(path, "worktree", "add", "-q", str(tmp_path / "state"), STATE)
    proc = fleetq("reconcile", "--repo", str(path), "--source", "main")
    # (the fix is not to name another state branch, as fleetq/state is the one to keep)
    assert proc.returncode == 2 and proc.stderr == (
        f"fleetq: the state branch '{STATE}' is checked out in {tmp_path / 'state'}: fleetq "
        f"writes it (people edit the source branch); check out another branch there (or "
        f"remove that work tree: git worktree remove {tmp_path / 'state'})\n"), proc.stderr
    assert git(path, "for-each-ref").splitlines() == refs


def test_a_job_whose_requests_outgrow_its_cluster_moves_and_the_state_is_a_fixed_point(
        tmp_path: Path) -> None:
    """The template's ``llm-sft-hotfix`` runs on gpu-bj-b with 2 GPUs per pod. At
    7 it no longer fits there: it moves (preempting a lower-priority job of its
    quota) and the commit message says why; ``plan --exit-code`` right after
    finds nothing to do. At 40 no quota takes it: it leaves its cluster, and
    again the state is a fixed point."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    assert fleetq("reconcile", "--repo", str(path), "--now", "2026-12-04T10:00:00Z").returncode == 0
    assert placements(path)["text/llm-sft-hotfix"]["cluster"] == "gpu-bj-b"
    source = path / "jobs/text/llm-sft-hotfix.yaml"
    for gpus, now, line in (
            ("7", "2026-12-04T10:05:00Z",
             "move PyTorchJob text/llm-sft-hotfix from gpu-bj-b -> gpu-hz-a (master 1, "
             "worker 1): its "
             "requests changed and no longer fit where it ran (gpu-bj-b: free nvidia.com/gpu "
             "4 < 14 requested)"),
            ("40", "2026-12-04T10:10:00Z",
             "remove PyTorchJob text/llm-sft-hotfix from gpu-hz-a: inadmissible; its requests "
             "changed and no longer fit where it ran (gpu-hz-a: free nvidia.com/gpu 24 < 80 "
             "requested)")):
        text = source.read_text()
        source.write_text(re.sub(r'nvidia.com/gpu: "\d+"', f'nvidia.com/gpu: "{gpus}"', text))
        commit_all(path, f"{gpus} GPUs")
        assert fleetq("reconcile", "--repo", str(path), "--now", now).returncode == 0
        assert line in git(path, "log", "-1", "--format=%B", "fleetq/state")
        assert "requests changed" not in placements(path)["text/llm-sft-hotfix"]["reason"]
        proc = fleetq("plan", "--repo", str(path), "--exit-code", "--now", now)
        assert proc.returncode == 0, proc.stdout


def test_a_source_branch_reset_back_says_how_to_reconcile_it(tmp_path: Path) -> None:
    """The state made from a commit no branch has any more (the source branch
    reset, or force-pushed, back): it was told to revert, with nothing to revert."""
    path = reconciled_template(tmp_path)
    push_template_job(path, "mistake")
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    git(path, "reset", "-q", "--hard", "HEAD~1")
    back = rev(path, "HEAD")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW, "-o", "none")
    assert proc.returncode == 0, proc.stderr
    assert "which no branch of this clone has: reconciling " in proc.stdout, proc.stdout
    assert "if the source branch was reset or force-pushed back to " \
           f"{back[:12]}, commit on it (git commit --allow-empty will do)" in proc.stdout, \
        proc.stdout
    git(path, "commit", "-q", "--allow-empty", "-m", "reconcile the reset")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW, "-o", "none")
    assert proc.returncode == 0 and proc.stdout.startswith("committed"), proc.stdout
    assert "text/mistake" not in placements(path)


def test_a_state_of_the_format_before_is_decided_and_rendered_again(tmp_path: Path) -> None:
    """A state made by the fleetq before (its ``Fleet-Format`` trailer one less) is
    not up to date for this one, though made from the same source: it is
    decided and rendered again. That fleetq sent a job written suspended to a
    kueue cluster with ``suspend: false``, which Kueue's webhook sets back; it
    goes now with no suspend (Kueue's admission lifts it)."""
    job = ("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: default}\n"
           "spec:\n  suspend: true\n  parallelism: 2\n  template:\n    spec:\n"
           "      restartPolicy: Never\n      containers:\n      - name: c\n        image: x\n"
           "        resources: {requests: {cpu: '1', memory: 1Gi}}\n")
    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": one_leaf_tree("64", "256Gi"), "policy.yaml": QUEUED_CLUSTER_POLICY,
        "clusters/m-a.yaml": member_cluster("m-a", dialect="kueue"), "jobs/j.yaml": job})
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    rendered = "clusters/m-a/default/job-j.yaml"
    made = state_show(path, rendered)
    assert made is not None and "suspend" not in made
    # the state as the fleetq before made it, from the same source
    old = made.replace("spec:\n", "spec:\n  suspend: false\n", 1)
    assert old != made
    message = git(path, "log", "-1", "--format=%B", STATE)
    now = STATE_FORMAT.split()[0]
    assert f"\nFleet-Format: {now} fleetq/" in message
    index = {"GIT_INDEX_FILE": str(tmp_path / "index")}
    git(path, "read-tree", STATE, env=index)
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=path, input=old,
                          capture_output=True, text=True, check=True).stdout.strip()
    git(path, "update-index", "--cacheinfo", f"100644,{blob},{rendered}", env=index)
    tree = git(path, "write-tree", env=index).strip()
    commit = subprocess.run(
        ["git", "commit-tree", tree, "-p", STATE], cwd=path, capture_output=True, text=True,
        check=True,
        # (naming its tree in the Fleet-State-Tree trailer as that fleetq did, from the
        # format that added it on; without it, before)
        input=re.sub(r"\nFleet-State-Tree: \w+",
                     f"\nFleet-State-Tree: {tree}" if int(now) - 1 >= TREE_NAMED_FROM else "",
                     message.replace(f"\nFleet-Format: {now} ",
                                     f"\nFleet-Format: {int(now) - 1} ")),
        env=dict(os.environ, GIT_AUTHOR_NAME="fleetq", GIT_AUTHOR_EMAIL="fleetq@localhost",
                 GIT_COMMITTER_NAME="fleetq", GIT_COMMITTER_EMAIL="fleetq@localhost"),
    ).stdout.strip()
    git(path, "update-ref", f"refs/heads/{STATE}", commit)
    assert state_show(path, rendered) == old
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert "no change" not in proc.stdout
    assert state_show(path, rendered) == made
    assert f"\nFleet-Format: {now} fleetq/" in git(path, "log", "-1", "--format=%B", STATE)
    again = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert "no change" in again.stdout, again.stdout


def test_a_local_state_branch_set_back_or_deleted_is_warned_of_with_the_state_to_put_back(
        tmp_path: Path) -> None:
    """With no remote, a state branch set back (git branch -f) or deleted was
    gone on from as it was, with no word: the jobs admitted since were
    enqueued and admitted anew, at other times (with a remote, that is
    refused). Said, with the commit fleetq last wrote there."""
    path = reconciled_template(tmp_path)
    first = rev(path, STATE)
    push_template_job(path, "later")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0 and "warning: the state branch" not in proc.stderr, proc.stderr
    second = rev(path, STATE)
    assert first is not None and second is not None and first != second
    git(path, "branch", "-f", STATE, first)
    push_template_job(path, "another")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert (f"{STATE}: warning: the state branch {STATE} is at {first[:12]}, which is not "
            f"built on {second[:12]}, the state fleetq last wrote here") in proc.stderr, \
        proc.stderr
    assert f"put it back (git branch -f {STATE} {second[:12]})" in proc.stderr
    third = rev(path, STATE)
    assert third is not None
    git(path, "branch", "-D", STATE)
    push_template_job(path, "yet-another")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert (f"warning: the state branch {STATE} is gone from this clone, where fleetq last "
            f"wrote {third[:12]}") in proc.stderr, proc.stderr
    push_template_job(path, "and-one-more")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert "warning: the state branch" not in proc.stderr, proc.stderr  # (built on it)


def test_a_state_a_later_fleetq_made_is_not_decided_by_this_one(tmp_path: Path) -> None:
    """Runners upgraded one by one: a fleetq of an older state format decided a
    later one's state by its older rules, undoing what that one decided (and
    the later one undid that in turn). It stops, with nothing written."""
    path = reconciled_template(tmp_path)
    now = STATE_FORMAT.split()[0]
    message = git(path, "log", "-1", "--format=%B", STATE)
    later = message.replace(f"\nFleet-Format: {now} fleetq/",
                            f"\nFleet-Format: {int(now) + 1} fleetq/")
    assert later != message
    commit = subprocess.run(
        ["git", "commit-tree", f"{STATE}^{{tree}}", "-p", STATE], cwd=path, input=later,
        capture_output=True, text=True, check=True,
        env=dict(os.environ, GIT_AUTHOR_NAME="fleetq", GIT_AUTHOR_EMAIL="fleetq@localhost",
                 GIT_COMMITTER_NAME="fleetq", GIT_COMMITTER_EMAIL="fleetq@localhost"),
    ).stdout.strip()
    git(path, "update-ref", f"refs/heads/{STATE}", commit)
    push_template_job(path, "late")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 2, proc.stdout
    assert proc.stderr.startswith(
        f"fleetq: the state branch {STATE} is at {commit[:12]}, made by a later fleetq (state "
        f"format {int(now) + 1} fleetq/"), proc.stderr
    assert "run that fleetq here" in proc.stderr
    assert rev(path, STATE) == commit


@pytest.mark.parametrize("cache", [True, False])
def test_a_job_running_on_a_kueue_cluster_keeps_its_queue_when_its_quota_is_renamed(
        tmp_path: Path, cache: bool) -> None:
    """Kueue refuses to change the queue label of a job it admitted: renamed
    with its quota, the running job's manifest could not be applied (Argo CD's
    sync failed until it ended). It keeps the LocalQueue it runs under, with
    the cache or without (a fresh clone), and when it is edited; a job pushed
    after goes to the new one."""
    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": one_leaf_tree("64", "256Gi"), "policy.yaml": QUEUED_CLUSTER_POLICY,
        "clusters/m-a.yaml": member_cluster("m-a", dialect="kueue"),
        "jobs/run.yaml": pytorchjob("run")})
    no_cache = () if cache else ("--no-cache",)
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q", *no_cache
                  ).returncode == 0
    running = "clusters/m-a/default/pytorchjob-run.yaml"
    queue = "kueue.x-k8s.io/queue-name"

    def labels(file: str) -> tuple[str, str, set[str]]:
        obj = yaml.safe_load(state_show(path, file) or "")
        pods = {spec["template"]["metadata"]["labels"][queue]
                for spec in obj["spec"]["pytorchReplicaSpecs"].values()}
        return obj["metadata"]["labels"][queue], obj["metadata"]["labels"]["fleetq.io/quota"], \
            pods

    assert labels(running) == ("team", "team", {"team"})
    tree = path / "quota.yaml"
    tree.write_text(tree.read_text().replace("name: team", "name: research"))
    write_files(path, {"jobs/new.yaml": pytorchjob("new")})
    commit_all(path, "rename the quota")
    for now in ("2026-11-29T12:00:00Z", "2026-11-29T12:05:00Z"):  # (and again: it stays)
        proc = fleetq("reconcile", "--repo", str(path), "--now", now, *no_cache)
        assert proc.returncode == 0, proc.stderr
        assert placements(path)["default/run"]["quota"] == "root/research"
        assert labels(running) == ("team", "research", {"team"})
        assert labels("clusters/m-a/default/pytorchjob-new.yaml") == (
            "research", "research", {"research"})
    # an edit that changes nothing of where it runs keeps it too
    source = path / "jobs/run.yaml"
    source.write_text(source.read_text().replace("restartPolicy: Never",
                                                 "restartPolicy: OnFailure"))
    commit_all(path, "edit the running job")
    assert fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T12:10:00Z",
                  *no_cache).returncode == 0
    assert "OnFailure" in (state_show(path, running) or "")
    assert labels(running) == ("team", "research", {"team"})


WORKLOAD_PRIORITY_CLASSES = "---\n".join(
    f"apiVersion: kueue.x-k8s.io/v1beta1\nkind: WorkloadPriorityClass\n"
    f"metadata: {{name: {name}}}\nvalue: {value}\n" for name, value in (("low", 10),
                                                                     ("high", 1000)))
PRIORITY = "kueue.x-k8s.io/priority-class"
MAX_EXEC = "kueue.x-k8s.io/max-exec-time-seconds"


def _kueue_labels(path: Path, file: str) -> dict[str, str]:
    """The labels Kueue reads of a rendered job (its WorkloadPriorityClass and
    its maximum run time), as the state branch has them."""
    labels = yaml.safe_load(state_show(path, file) or "")["metadata"]["labels"]
    return {k: v for k, v in labels.items() if k in (PRIORITY, MAX_EXEC)}


def _told_by_reconcile(path: Path, now: str, no_cache: tuple[str, ...]) -> str:
    """What a reconcile at ``now`` tells (plan's words, when it finds the state
    made from this source already: it told them then)."""
    proc = fleetq("reconcile", "--repo", str(path), "--now", now, *no_cache)
    assert proc.returncode == 0, proc.stderr
    if "no change" in proc.stdout:
        return fleetq("plan", "--repo", str(path), "--now", now, *no_cache).stdout
    return proc.stderr


@pytest.mark.parametrize("cache", [True, False])
def test_a_job_running_on_a_kueue_cluster_keeps_the_labels_kueue_refuses_to_change(
        tmp_path: Path, cache: bool) -> None:
    """Kueue's webhook refuses to change the WorkloadPriorityClass label and the
    maximum run time of a job it runs: edited in git, the running job's
    manifest could not be applied (Argo CD's sync failed until it ended). It
    keeps them as it was sent with them, told at the edited line as a change
    that takes effect when it runs again, with the cache or without, and when
    it is edited again; fleetq orders it by the class it names now. A job that
    was waiting is sent with the edit."""
    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": one_leaf_tree("3", "256Gi"), "policy.yaml": QUEUED_CLUSTER_POLICY,
        "priorities.yaml": WORKLOAD_PRIORITY_CLASSES,
        "clusters/m-a.yaml": member_cluster("m-a", dialect="kueue"),
        "jobs/run.yaml": pytorchjob("run", labels={PRIORITY: "low"}),
        "jobs/wait.yaml": pytorchjob("wait", labels={PRIORITY: "low"})})
    no_cache = () if cache else ("--no-cache",)
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q", *no_cache
                  ).returncode == 0
    running = "clusters/m-a/default/pytorchjob-run.yaml"
    assert placements(path)["default/wait"]["phase"] == "Queued"
    assert _kueue_labels(path, running) == {PRIORITY: "low"}
    edited = pytorchjob("run", labels={PRIORITY: "high", MAX_EXEC: "3600"})
    tree = path / "quota.yaml"
    tree.write_text(tree.read_text().replace('"3"', '"4"'))  # (room for the waiting job)
    write_files(path, {"jobs/run.yaml": edited,
                       "jobs/wait.yaml": pytorchjob("wait", labels={PRIORITY: "high",
                                                                    MAX_EXEC: "3600"})})
    commit_all(path, "raise the jobs' priority, limit their time")
    told = [f"jobs/run.yaml:{line_of(edited, PRIORITY)}: warning: label {PRIORITY} "
            f"changed to \"high\" takes effect when PyTorchJob default/run runs again: "
            f"Kueue refuses to change it while the job runs, so on m-a it keeps \"low\"",
            f"jobs/run.yaml:{line_of(edited, MAX_EXEC)}: warning: label {MAX_EXEC} set "
            f"to \"3600\" takes effect when PyTorchJob default/run runs again: Kueue "
            f"refuses to change it while the job runs, so on m-a it stays without it"]
    for now in ("2026-11-29T12:00:00Z", "2026-11-29T12:05:00Z"):  # (and again: it stays)
        said = _told_by_reconcile(path, now, no_cache)
        assert _kueue_labels(path, running) == {PRIORITY: "low"}
        for line in told:
            assert line in said, said
        assert placements(path)["default/run"]["priority"] == 1000
        assert _kueue_labels(path, "clusters/m-a/default/pytorchjob-wait.yaml") == {
            PRIORITY: "high", MAX_EXEC: "3600"}
    # an edit that changes nothing of the labels keeps them too
    source = path / "jobs/run.yaml"
    source.write_text(source.read_text().replace("restartPolicy: Never",
                                                 "restartPolicy: OnFailure"))
    commit_all(path, "edit the running job")
    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T12:10:00Z",
                  *no_cache)
    assert proc.returncode == 0, proc.stderr
    assert "OnFailure" in (state_show(path, running) or "")
    assert _kueue_labels(path, running) == {PRIORITY: "low"}
    # back as it was sent: nothing is told
    write_files(path, {"jobs/run.yaml": pytorchjob("run", labels={PRIORITY: "low"})})
    commit_all(path, "as it was")
    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T12:15:00Z",
                  *no_cache)
    assert proc.returncode == 0, proc.stderr
    assert "takes effect when" not in proc.stderr, proc.stderr
    assert _kueue_labels(path, running) == {PRIORITY: "low"}


def test_a_job_running_on_another_dialect_takes_its_edited_kueue_labels(
        tmp_path: Path) -> None:
    """Off kueue clusters the Kueue labels are the job's own, sent as edited."""
    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": one_leaf_tree("64", "256Gi"), "policy.yaml": QUEUED_CLUSTER_POLICY,
        "priorities.yaml": WORKLOAD_PRIORITY_CLASSES,
        "clusters/m-a.yaml": member_cluster("m-a", dialect="ack"),
        "jobs/run.yaml": pytorchjob("run", labels={PRIORITY: "low", MAX_EXEC: "60"})})
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    running = "clusters/m-a/default/pytorchjob-run.yaml"
    assert _kueue_labels(path, running) == {PRIORITY: "low", MAX_EXEC: "60"}
    write_files(path, {"jobs/run.yaml": pytorchjob("run", labels={PRIORITY: "high"})})
    commit_all(path, "raise its priority")
    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T12:00:00Z")
    assert proc.returncode == 0, proc.stderr
    assert "takes effect when" not in proc.stderr, proc.stderr
    assert _kueue_labels(path, running) == {PRIORITY: "high"}


def _job_spec(path: Path, file: str) -> dict[str, Any]:
    return yaml.safe_load(state_show(path, file) or "")["spec"]


@pytest.mark.parametrize(("dialect", "cache"), [("ack", True), ("ack", False),
                                                ("kueue", True), ("kueue", False)])
def test_a_batch_job_running_on_a_cluster_keeps_the_spec_it_was_made_with(
        tmp_path: Path, dialect: str, cache: bool) -> None:
    """The API server refuses to change a batch Job's pod template (and its
    selector, completions, ...) once it is made: edited in git, the running
    Job's manifest could not be applied (Argo CD's sync failed until it
    ended). It keeps them as it was sent with them, told at the edited line as
    a change that takes effect when it runs again, with the cache or without,
    and when reconciled again; what may change (its activeDeadlineSeconds)
    goes as edited. A Job that was waiting is sent as edited."""
    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": one_leaf_tree("3", "256Gi"), "policy.yaml": QUEUED_CLUSTER_POLICY,
        "clusters/m-a.yaml": member_cluster("m-a", dialect=dialect),
        "jobs/run.yaml": batchjob("run", parallelism=2),
        "jobs/wait.yaml": batchjob("wait", cpu="2")})
    no_cache = () if cache else ("--no-cache",)
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q", *no_cache
                  ).returncode == 0
    running, waiting = "clusters/m-a/default/job-run.yaml", "clusters/m-a/default/job-wait.yaml"
    assert placements(path)["default/wait"]["phase"] == "Queued"
    template = _job_spec(path, running)["template"]
    assert template["spec"]["containers"][0]["image"].endswith(":v1")
    edited = batchjob("run", parallelism=2, image="registry.example.com/train:v2",
                      spec_extra="  activeDeadlineSeconds: 600\n")
    tree = path / "quota.yaml"
    tree.write_text(tree.read_text().replace('"3"', '"4"'))  # (room for the waiting job)
    write_files(path, {"jobs/run.yaml": edited, "jobs/wait.yaml": batchjob(
        "wait", cpu="2", image="registry.example.com/train:v2")})
    commit_all(path, "a new image")
    told = (f"jobs/run.yaml:{line_of(edited, 'template:')}: warning: spec.template changed "
            f"takes effect when Job default/run runs again (under a new name, or placed "
            f"anew): the API server refuses to change it once the Job is made, so on m-a "
            f"it keeps the one it was sent with")
    for now in ("2026-11-29T12:00:00Z", "2026-11-29T12:05:00Z"):  # (and again: it stays)
        proc = fleetq("reconcile", "--repo", str(path), "--now", now, *no_cache)
        assert proc.returncode == 0, proc.stderr
        spec = _job_spec(path, running)
        assert spec["template"] == template
        assert spec["activeDeadlineSeconds"] == 600
        said = proc.stderr
        if "no change" in proc.stdout:  # (the state was made from this source: told then)
            said = fleetq("plan", "--repo", str(path), "--now", now, *no_cache).stdout
        assert told in said, said
        assert placements(path)["default/wait"]["phase"] == "Admitted"
        assert _job_spec(path, waiting)["template"]["spec"]["containers"][0][
            "image"].endswith(":v2")
    # back as it was sent: nothing is told
    write_files(path, {"jobs/run.yaml": batchjob("run", parallelism=2)})
    commit_all(path, "as it was")
    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T12:10:00Z",
                  *no_cache)
    assert proc.returncode == 0, proc.stderr
    assert "takes effect when" not in proc.stderr, proc.stderr
    assert _job_spec(path, running)["template"] == template


def test_a_running_batch_job_whose_clusters_dialect_changed_is_told_so_not_as_an_edit(
        tmp_path: Path) -> None:
    """The cluster's gangDialect changed while a batch Job runs there: its pod
    template keeps the old dialect's gang labels (the API server refuses the
    change), and the warning said "spec.template changed" at the template's
    line of a job file nobody edited."""
    job = batchjob("run", parallelism=2)
    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": one_leaf_tree("8", "256Gi"), "policy.yaml": QUEUED_CLUSTER_POLICY,
        "clusters/m-a.yaml": member_cluster("m-a", dialect="ack"), "jobs/run.yaml": job})
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    running = "clusters/m-a/default/job-run.yaml"
    template = _job_spec(path, running)["template"]
    write_files(path, {"clusters/m-a.yaml": member_cluster("m-a", dialect="volcano")})
    commit_all(path, "volcano now")
    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T12:00:00Z")
    assert proc.returncode == 0, proc.stderr
    assert (f"jobs/run.yaml:{line_of(job, 'name: run')}: warning: Job default/run runs on m-a "
            f"with the gang labels of the dialect it was sent with, not those of the "
            f"cluster's gangDialect now") in proc.stderr, proc.stderr
    assert "spec.template changed" not in proc.stderr, proc.stderr
    assert _job_spec(path, running)["template"] == template


@pytest.mark.parametrize("cache", [True, False])
def test_a_running_pytorchjob_whose_requests_are_lowered_is_counted_as_its_pods_hold_them(
        tmp_path: Path, cache: bool) -> None:
    """The training operator makes no pod anew when a PyTorchJob's pod templates
    change: lowered in git, its running pods keep the requests they started
    with, and the room the source frees is not there. fleetq counts each pod
    as the larger of the two while it runs where it was admitted, sends that
    in an annotation (read back: the state sent later says the new requests),
    and warns; raised back above, the job counts as its source asks."""
    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": one_leaf_tree("16", "256Gi"), "policy.yaml": QUEUED_CLUSTER_POLICY,
        "clusters/m-a.yaml": member_cluster("m-a", cpu="8"),
        "jobs/run.yaml": pytorchjob("run", workers=2, cpu="2")})
    no_cache = () if cache else ("--no-cache",)
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q", *no_cache
                  ).returncode == 0
    running = "clusters/m-a/default/pytorchjob-run.yaml"
    lowered = pytorchjob("run", workers=2, cpu="1")
    write_files(path, {"jobs/run.yaml": lowered, "jobs/wait.yaml": pytorchjob("wait", cpu="2")})
    commit_all(path, "less cpu, and another job")
    told = (f"jobs/run.yaml:{line_of(lowered, 'name: run')}: warning: PyTorchJob default/run "
            f"runs on m-a with pods that hold more than its source asks for now")
    for now in ("2026-11-29T12:00:00Z", "2026-11-29T12:05:00Z"):  # (and again: it stays)
        proc = fleetq("reconcile", "--repo", str(path), "--now", now, *no_cache)
        assert proc.returncode == 0, proc.stderr
        said = proc.stderr
        if "no change" in proc.stdout:  # (the state was made from this source: told then)
            said = fleetq("plan", "--repo", str(path), "--now", now, *no_cache).stdout
        assert told in said, said
        run, wait = placements(path)["default/run"], placements(path)["default/wait"]
        # (6 cpu its three pods hold, not the 3 its source asks for: the 8 cpu node
        # has no room for the other job's 4)
        assert run["phase"] == "Admitted" and run["requests"]["cpu"] == "6", run
        assert wait["phase"] == "Queued", wait
        sent = state_yaml(path, running)
        assert json.loads(sent["metadata"]["annotations"]["fleetq.io/pods-counted-with"]) == {
            "master": {"cpu": "2", "memory": "1Gi"}, "worker": {"cpu": "2", "memory": "1Gi"}}
        worker = sent["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
        assert worker["containers"][0]["resources"]["requests"]["cpu"] == "1"  # (as edited)
    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T12:10:00Z",
                  *no_cache)
    assert proc.returncode == 0 and "no change" in proc.stdout, proc.stdout
    # raised above what its pods hold: counted as its source asks, no annotation (one the
    # source writes is fleetq's own: taken off)
    raised = pytorchjob("run", workers=2, cpu="2500m").replace(
        "  namespace: default\n",
        "  namespace: default\n  annotations:\n"
        "    fleetq.io/pods-counted-with: '{\"worker\": {\"cpu\": \"9\"}}'\n", 1)
    assert "pods-counted-with" in raised
    write_files(path, {"jobs/run.yaml": raised})
    commit_all(path, "more cpu")
    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T12:15:00Z",
                  *no_cache)
    assert proc.returncode == 0, proc.stderr
    assert "hold more than its source" not in proc.stderr, proc.stderr
    run = placements(path)["default/run"]
    assert run["phase"] == "Admitted" and run["requests"]["cpu"] == "7500m", run
    sent = state_yaml(path, running)
    assert "fleetq.io/pods-counted-with" not in (sent["metadata"].get("annotations") or {})


@pytest.mark.parametrize(("dialect", "cache"), [("volcano", True), ("volcano", False),
                                                ("kueue", True)])
def test_a_running_batch_job_counts_the_pod_template_it_keeps_not_its_edited_one(
        tmp_path: Path, dialect: str, cache: bool) -> None:
    """A running batch Job whose pods' requests are edited keeps the template it
    was sent with (the API server refuses the change), so its pods on the
    cluster go on using what they were made with: that is what fleetq counts,
    or it would admit a job into room the cluster does not have (lowered), or
    take the running job off for requests it does not use (raised). The
    requests it counts are those placements.yaml gives, and the state is a
    fixed point."""
    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": one_leaf_tree("6", "256Gi"), "policy.yaml": QUEUED_CLUSTER_POLICY,
        "clusters/m-a.yaml": member_cluster("m-a", cpu="8", dialect=dialect),
        "jobs/run.yaml": batchjob("run", parallelism=2, cpu="2")})
    no_cache = () if cache else ("--no-cache",)
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q", *no_cache
                  ).returncode == 0
    running = "clusters/m-a/default/job-run.yaml"
    template = _job_spec(path, running)["template"]
    # lowered: 2 cpu counted, the 3 of the new job would fit the quota's 6; 4 run
    write_files(path, {"jobs/run.yaml": batchjob("run", parallelism=2, cpu="1"),
                       "jobs/wait.yaml": batchjob("wait", cpu="3")})
    commit_all(path, "less cpu, and another job")
    for now in ("2026-11-29T12:00:00Z", "2026-11-29T12:05:00Z"):
        proc = fleetq("reconcile", "--repo", str(path), "--now", now, *no_cache)
        assert proc.returncode == 0, proc.stderr
        assert _job_spec(path, running)["template"] == template
        run, wait = placements(path)["default/run"], placements(path)["default/wait"]
        assert run["phase"] == "Admitted" and run["requests"]["cpu"] == "4", run
        assert wait["phase"] == "Queued", wait
        assert "quota" in wait["reason"], wait
    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T12:10:00Z",
                  *no_cache)
    assert proc.returncode == 0 and "no change" in proc.stdout, proc.stdout
    proc = fleetq("explain", "--repo", str(path), "run", "--now", "2026-11-29T12:10:00Z",
                  *no_cache)
    assert proc.returncode == 0, proc.stderr
    assert ("- counted as it runs on m-a, as it was sent there: cpu 4 (its source asks for "
            "cpu 2 now, which takes effect when it runs again: placed anew, or under a new "
            "name)") in proc.stdout.splitlines(), proc.stdout
    # raised past the cluster's room: it runs on as it was sent, counted so
    write_files(path, {"jobs/run.yaml": batchjob("run", parallelism=2, cpu="5")})
    commit_all(path, "more cpu")
    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T12:15:00Z",
                  *no_cache)
    assert proc.returncode == 0, proc.stderr
    run = placements(path)["default/run"]
    assert run["phase"] == "Admitted" and run["requests"]["cpu"] == "4", run
    assert _job_spec(path, running)["template"] == template
    assert placements(path)["default/wait"]["phase"] == "Queued"
    # once it is gone, the edited job runs anew as written
    (path / "jobs/run.yaml").unlink()
    commit_all(path, "run deleted")
    assert fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T12:20:00Z",
                  *no_cache).returncode == 0
    assert placements(path)["default/wait"]["phase"] == "Admitted"


@pytest.mark.parametrize("mode", ["Indexed", "NonIndexed"])
def test_an_indexed_job_running_takes_completions_changed_with_its_parallelism(
        tmp_path: Path, mode: str) -> None:
    """The API server takes a running Indexed Job's completions changed in
    tandem with its parallelism (elastic Indexed Jobs): it was kept as sent,
    so the Job scaled to 3 pods kept 2 completions, while fleetq counted 3.
    Changed alone, or on a NonIndexed Job, it is kept as sent, and told."""
    def indexed(n: int, completions: int | None = None) -> str:
        return batchjob("run", parallelism=n, spec_extra=(
            f"  completions: {completions or n}\n  completionMode: {mode}\n"))

    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": one_leaf_tree("8", "256Gi"), "policy.yaml": QUEUED_CLUSTER_POLICY,
        # (a dialect whose pod template does not name the gang's size, as ack's labels do)
        "clusters/m-a.yaml": member_cluster("m-a", dialect="volcano"),
        "jobs/run.yaml": indexed(2)})
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    running = "clusters/m-a/default/job-run.yaml"
    assert _job_spec(path, running)["completions"] == 2
    write_files(path, {"jobs/run.yaml": indexed(3)})
    commit_all(path, "three")
    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T12:00:00Z")
    assert proc.returncode == 0, proc.stderr
    spec = _job_spec(path, running)
    assert placements(path)["default/run"]["phase"] == "Admitted"
    assert spec["parallelism"] == 3
    told = (f"jobs/run.yaml:{line_of(indexed(3), 'completions:')}: warning: spec.completions "
            f"changed takes effect when Job default/run runs again")
    if mode == "Indexed":
        assert spec["completions"] == 3 and "takes effect when" not in proc.stderr, proc.stderr
        edited = indexed(3, completions=5)  # (not in tandem: refused, so kept)
        write_files(path, {"jobs/run.yaml": edited})
        commit_all(path, "five completions")
        proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T12:05:00Z")
        assert proc.returncode == 0, proc.stderr
        assert _job_spec(path, running)["completions"] == 3
        assert told in proc.stderr, proc.stderr
    else:
        assert spec["completions"] == 2 and told in proc.stderr, proc.stderr


def test_a_running_job_scaled_on_an_ack_cluster_is_told_its_pods_keep_their_gang_size(
        tmp_path: Path) -> None:
    """On ack clusters a Job's pods carry its gang's size (a label of its pod
    template). Its parallelism edited while it runs, the template, which the
    API server refuses to change, is sent as it was: the warning said
    "spec.template changed", at the template's line, of an edit to
    parallelism. It says what keeps, at the line edited; an edit of the
    template itself is told as before."""
    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": one_leaf_tree("8", "256Gi"), "policy.yaml": QUEUED_CLUSTER_POLICY,
        "clusters/m-a.yaml": member_cluster("m-a"),
        "jobs/run.yaml": batchjob("run", parallelism=2)})
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    running = "clusters/m-a/default/job-run.yaml"
    labels = _job_spec(path, running)["template"]["metadata"]["labels"]
    assert labels["pod-group.scheduling.sigs.k8s.io/min-available"] == "2"
    scaled = batchjob("run", parallelism=3)
    write_files(path, {"jobs/run.yaml": scaled})
    commit_all(path, "three")
    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T12:00:00Z")
    assert proc.returncode == 0, proc.stderr
    spec = _job_spec(path, running)
    assert spec["parallelism"] == 3 and spec["template"]["metadata"]["labels"] == labels
    assert (f"jobs/run.yaml:{line_of(scaled, 'parallelism:')}: warning: the gang of Job "
            f"default/run is now of 3 pod(s): on m-a its pods keep label "
            f"pod-group.scheduling.sigs.k8s.io/min-available \"2\" until it runs again") \
        in proc.stderr, proc.stderr
    assert "spec.template changed" not in proc.stderr, proc.stderr
    imaged = batchjob("run", parallelism=3, image="registry.example.com/train:v2")
    write_files(path, {"jobs/run.yaml": imaged})
    commit_all(path, "and a new image")
    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T12:05:00Z")
    assert proc.returncode == 0, proc.stderr
    assert f"jobs/run.yaml:{line_of(imaged, 'template:')}: warning: spec.template changed" \
        in proc.stderr, proc.stderr


def test_a_batch_job_run_again_after_it_was_preempted_takes_its_edited_spec(
        tmp_path: Path) -> None:
    """A Job taken off its cluster is made anew when placed again: it goes as
    its source says now."""
    def prioritized(manifest: str, name: str) -> str:
        return manifest.replace("      restartPolicy:",
                                f"      priorityClassName: {name}\n      restartPolicy:")

    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": one_leaf_tree("4", "32Gi"), "policy.yaml": QUEUED_CLUSTER_POLICY,
        "priorities.yaml": priority_classes(low=10, high=1000),
        "clusters/m-a.yaml": member_cluster("m-a", cpu="4", memory="32Gi"),
        "jobs/run.yaml": prioritized(batchjob("run", parallelism=2, cpu="2"), "low")})
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    running = "clusters/m-a/default/job-run.yaml"
    write_files(path, {
        "jobs/run.yaml": prioritized(batchjob("run", parallelism=2, cpu="2",
                                              image="registry.example.com/train:v2"), "low"),
        "jobs/high.yaml": prioritized(batchjob("high", parallelism=2, cpu="2"), "high")})
    commit_all(path, "a new image, and an urgent job")
    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T12:00:00Z")
    assert proc.returncode == 0, proc.stderr
    assert placements(path)["default/run"]["phase"] == "Queued"
    assert "takes effect when" not in proc.stderr, proc.stderr
    (path / "jobs/high.yaml").unlink()
    commit_all(path, "the urgent job is done")
    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T12:05:00Z")
    assert proc.returncode == 0, proc.stderr
    assert placements(path)["default/run"]["phase"] == "Admitted"
    assert "takes effect when" not in proc.stderr, proc.stderr
    assert _job_spec(path, running)["template"]["spec"]["containers"][0][
        "image"].endswith(":v2")


EQUAL = "kueue.x-k8s.io/job-completions-equal-parallelism"
MIN = "kueue.x-k8s.io/job-min-parallelism"


def _kueue_job(path: Path, file: str) -> tuple[int | None, dict[str, str]]:
    """What Kueue's Job webhook reads of a rendered batch Job: its
    parallelism, and its annotations job-completions-equal-parallelism and
    job-min-parallelism, as the state branch has them."""
    obj = yaml.safe_load(state_show(path, file) or "")
    return obj["spec"].get("parallelism"), {
        k: v for k, v in obj["metadata"]["annotations"].items() if k in (EQUAL, MIN)}


@pytest.mark.parametrize("cache", [True, False])
def test_a_batch_job_running_on_a_kueue_cluster_keeps_what_kueue_refuses_to_change(
        tmp_path: Path, cache: bool) -> None:
    """Kueue's Job webhook refuses to change, on a Job not suspended, whether
    its annotation job-completions-equal-parallelism is "true", and the
    parallelism of one made with job-min-parallelism (partial admission):
    edited in git, the running Job's manifest could not be applied (Argo CD's
    sync failed until it ended). It keeps them as it was sent with them, told
    at the edited line as a change that takes effect when it runs again, with
    the cache or without, and when edited again; its job-min-parallelism goes
    as edited. A Job that was waiting is sent as edited."""
    sent = {EQUAL: "true", MIN: "1"}
    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": one_leaf_tree("3", "256Gi"), "policy.yaml": QUEUED_CLUSTER_POLICY,
        "clusters/m-a.yaml": member_cluster("m-a", dialect="kueue"),
        "jobs/run.yaml": batchjob("run", parallelism=2, annotations=sent),
        "jobs/wait.yaml": batchjob("wait", cpu="2", annotations=sent)})
    no_cache = () if cache else ("--no-cache",)
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q", *no_cache
                  ).returncode == 0
    running, waiting = "clusters/m-a/default/job-run.yaml", "clusters/m-a/default/job-wait.yaml"
    assert placements(path)["default/wait"]["phase"] == "Queued"
    assert _kueue_job(path, running) == (2, sent)
    edits = {EQUAL: "false", MIN: "2"}
    edited = batchjob("run", parallelism=3, annotations=edits)
    tree = path / "quota.yaml"
    tree.write_text(tree.read_text().replace('"3"', '"6"'))  # (room for the waiting job)
    write_files(path, {"jobs/run.yaml": edited,
                       "jobs/wait.yaml": batchjob("wait", parallelism=2, annotations=edits)})
    commit_all(path, "partial admission from 2 pods, completions of their own")
    told = [f"jobs/run.yaml:{line_of(edited, EQUAL)}: warning: annotation {EQUAL} changed "
            f"to \"false\" takes effect when Job default/run runs again: Kueue refuses to "
            f"change it while the job runs, so on m-a it keeps \"true\"",
            f"jobs/run.yaml:{line_of(edited, '  parallelism:')}: warning: spec.parallelism "
            f"changed to 3 takes effect when Job default/run runs again: Kueue refuses to "
            f"change it while the job runs (it was sent with annotation {MIN}), so on m-a "
            f"it keeps 2"]
    for now in ("2026-11-29T12:00:00Z", "2026-11-29T12:05:00Z"):  # (and again: it stays)
        said = _told_by_reconcile(path, now, no_cache)
        assert _kueue_job(path, running) == (2, {EQUAL: "true", MIN: "2"})
        for line in told:
            assert line in said, said
        assert "default/wait runs again" not in said, said
        assert placements(path)["default/wait"]["phase"] == "Admitted"
        assert _kueue_job(path, waiting) == (2, edits)
    # an edit that changes nothing of them keeps them too
    write_files(path, {"jobs/run.yaml": batchjob(
        "run", parallelism=3, annotations=edits, spec_extra="  activeDeadlineSeconds: 600\n")})
    commit_all(path, "limit its time")
    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T12:10:00Z",
                  *no_cache)
    assert proc.returncode == 0, proc.stderr
    assert _job_spec(path, running)["activeDeadlineSeconds"] == 600
    assert _kueue_job(path, running) == (2, {EQUAL: "true", MIN: "2"})
    # back as it was sent: nothing is told
    write_files(path, {"jobs/run.yaml": batchjob("run", parallelism=2, annotations=sent)})
    commit_all(path, "as it was")
    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T12:15:00Z",
                  *no_cache)
    assert proc.returncode == 0, proc.stderr
    assert "takes effect when" not in proc.stderr, proc.stderr
    assert _kueue_job(path, running) == (2, sent)


@pytest.mark.parametrize("cache", [True, False])
def test_a_batch_job_running_on_a_kueue_cluster_counts_the_parallelism_it_keeps(
        tmp_path: Path, cache: bool) -> None:
    """Under partial admission a running Job keeps the parallelism it was sent
    with (Kueue refuses the change): its pods stay as many, and fleetq counts
    them so, not as its lowered source says, or it would admit a job into room
    the cluster does not have."""
    sent = {MIN: "1"}
    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": one_leaf_tree("6", "256Gi"), "policy.yaml": QUEUED_CLUSTER_POLICY,
        "clusters/m-a.yaml": member_cluster("m-a", dialect="kueue"),
        "jobs/run.yaml": batchjob("run", parallelism=4, annotations=sent)})
    no_cache = () if cache else ("--no-cache",)
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q", *no_cache
                  ).returncode == 0
    running = "clusters/m-a/default/job-run.yaml"
    write_files(path, {"jobs/run.yaml": batchjob("run", parallelism=2, annotations=sent),
                       "jobs/wait.yaml": batchjob("wait", cpu="3")})
    commit_all(path, "two pods, and another job")
    said = _told_by_reconcile(path, "2026-11-29T12:00:00Z", no_cache)
    assert "spec.parallelism changed to 2 takes effect when Job default/run runs again" \
        in said, said
    assert _kueue_job(path, running) == (4, sent)
    run, wait = placements(path)["default/run"], placements(path)["default/wait"]
    assert run["requests"]["cpu"] == "4" and run["podSets"] == [{"name": "main",
                                                                  "replicas": 4}], run
    assert wait["phase"] == "Queued", wait


def _pinned(dialect: str) -> str:
    """A policy placing the Jobs labelled ``to: <dialect>`` on the cluster ``m-<dialect>``."""
    return (f"apiVersion: policy.one.alibabacloud.com/v1alpha1\n"
            f"kind: ClusterPropagationPolicy\nmetadata: {{name: to-{dialect}}}\n"
            f"spec:\n  suspension: {{scheduling: true}}\n  placement:\n"
            f"    clusterAffinity: {{clusterNames: [m-{dialect}]}}\n"
            f"    replicaScheduling: {{replicaSchedulingType: Divided, "
            f"customSchedulingType: Gang}}\n"
            f"  resourceSelectors:\n  - {{apiVersion: batch/v1, kind: Job, "
            f"labelSelector: {{matchLabels: {{to: {dialect}}}}}}}\n")


def test_a_batch_job_running_on_another_dialect_takes_its_edited_parallelism(
        tmp_path: Path) -> None:
    """Off kueue clusters the parallelism of a running Job may change (the API
    server allows it) and Kueue's annotations are the Job's own: they go as
    edited, unlike those of the same Job running on a kueue cluster beside.
    (Not on an ack cluster: there its pods' gang label counts them, so a new
    parallelism changes its pod template, which it keeps as sent.)"""
    dialects = ("kueue", "scheduler-plugins")

    def jobs(parallelism: int, annotations: dict[str, str]) -> dict[str, str]:
        return {f"jobs/on-{d}.yaml": batchjob(f"on-{d}", parallelism=parallelism,
                                              labels={"to": d}, annotations=annotations)
                for d in dialects}

    def sent(dialect: str) -> tuple[int | None, dict[str, str]]:
        return _kueue_job(path, f"clusters/m-{dialect}/default/job-on-{dialect}.yaml")

    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": one_leaf_tree("64", "256Gi"),
        **{f"policies/{d}.yaml": _pinned(d) for d in dialects},
        **{f"clusters/m-{d}.yaml": member_cluster(f"m-{d}", dialect=d) for d in dialects},
        **jobs(2, {EQUAL: "true", MIN: "1"})})
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    assert sent("kueue") == sent("scheduler-plugins") == (2, {EQUAL: "true", MIN: "1"})
    write_files(path, jobs(4, {EQUAL: "false", MIN: "1"}))
    commit_all(path, "more pods at a time, completions of their own")
    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T12:00:00Z")
    assert proc.returncode == 0, proc.stderr
    assert sent("scheduler-plugins") == (4, {EQUAL: "false", MIN: "1"})
    assert "default/on-scheduler-plugins runs again" not in proc.stderr, proc.stderr
    assert sent("kueue") == (2, {EQUAL: "true", MIN: "1"})
    assert "default/on-kueue runs again" in proc.stderr, proc.stderr
