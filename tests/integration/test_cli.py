"""The command line as a user runs it: demo, status, exit codes."""

from __future__ import annotations

import gc
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler import cli

from .conftest import (
    AUTHOR,
    NOW,
    QUEUED_CLUSTER_POLICY,
    REPO_ROOT,
    STATE,
    SeedFleet,
    batchjob,
    commit_all,
    fleetq,
    git,
    line_of,
    make_fleet_repo,
    member_cluster,
    no_state,
    one_leaf_tree,
    placements,
    pytorchjob,
    reconciled_template,
    rev,
    state_yaml,
    with_priority,
    write_files,
)

# DESIGN §4: the fields of a placements item (and of each `status -o json` item).
ALWAYS = {"job", "source", "priority", "enqueuedAt", "phase", "reason"}


def test_demo_runs_the_whole_loop(tmp_path: Path) -> None:
    proc = fleetq("demo", "--now", NOW, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines()]
    phases = {word for row in rows for word in row}
    assert {"Admitted", "Queued", "Inadmissible"} <= phases
    assert "committed" in proc.stdout
    assert "clusters/" in proc.stdout and "kustomization.yaml" in proc.stdout
    # The demo works in a temporary repo and leaves nothing behind where it was run.
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_demo_json_and_yaml_output_is_the_items_alone(tmp_path: Path, output: str) -> None:
    """stdout is one document a program can read (`| jq`); the lines for people
    go to stderr."""
    proc = fleetq("demo", "--now", NOW, "-o", output, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    items = json.loads(proc.stdout) if output == "json" else yaml.safe_load(proc.stdout)
    assert {i["phase"] for i in items} >= {"Admitted", "Queued", "Inadmissible"}
    assert "committed" in proc.stderr and "kustomization.yaml" in proc.stderr


def _queued_seed(seed_fleet: SeedFleet) -> None:
    seed_fleet.reconcile()
    write_files(seed_fleet.path, {"jobs/default/pytorch-second.yaml": pytorchjob(
        "pytorch-second")})
    commit_all(seed_fleet.path, "second job", date="2026-11-29T10:30:00Z")
    proc = fleetq("reconcile", "--repo", str(seed_fleet.path), "--now", "2026-11-29T11:30:00Z")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("committed ")


def test_status_json_and_yaml(seed_fleet: SeedFleet) -> None:
    _queued_seed(seed_fleet)
    proc = fleetq("status", "--repo", str(seed_fleet.path), "-o", "json")
    assert proc.returncode == 0, proc.stderr
    items = json.loads(proc.stdout)
    by_name = {i["job"]["name"]: i for i in items}
    assert set(by_name) == {"pytorch-test", "pytorch-second"}
    for item in items:
        assert set(item) >= ALWAYS, item
        assert set(item["job"]) == {"apiVersion", "kind", "namespace", "name"}
        assert set(item["source"]) == {"path", "blob"}
        assert re.fullmatch(r"[0-9a-f]{40}", item["source"]["blob"])
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", item["enqueuedAt"])
        assert item["quota"] == "root/child-2"
        assert isinstance(item["priority"], int)
        assert isinstance(item["reason"], str) and item["reason"]
    admitted = by_name["pytorch-test"]
    assert admitted["phase"] == "Admitted"
    assert admitted["cluster"] == "cf-hz-a"
    assert admitted["podSets"] == [{"name": "master", "replicas": 1},
                                   {"name": "worker", "replicas": 2}]
    assert admitted["requests"]["cpu"] == "4010m"
    assert admitted["requests"]["memory"] == "4Gi"
    assert str(admitted["requests"]["pods"]) == "3"
    assert str(admitted["requests"]["kube-queue/max-jobs"]) == "1"
    assert admitted["admittedAt"] == NOW
    assert "position" not in admitted
    queued = by_name["pytorch-second"]
    assert queued["phase"] == "Queued"
    assert queued["position"] == 1
    assert "cluster" not in queued and "admittedAt" not in queued

    # The blob is the job file's blob in the source commit.
    blob = git(seed_fleet.path, "rev-parse", "HEAD:jobs/default/pytorch-test.yaml").strip()
    assert admitted["source"]["blob"] == blob

    proc = fleetq("status", "--repo", str(seed_fleet.path), "-o", "yaml")
    assert proc.returncode == 0, proc.stderr
    assert yaml.safe_load(proc.stdout) == items

    proc = fleetq("status", "--repo", str(seed_fleet.path))
    assert proc.returncode == 0
    assert "pytorch-test" in proc.stdout and "Queued" in proc.stdout

    proc = fleetq("status", "--repo", str(seed_fleet.path), "--phase", "queued", "-o", "json")
    assert [i["job"]["name"] for i in json.loads(proc.stdout)] == ["pytorch-second"]
    proc = fleetq("status", "--repo", str(seed_fleet.path), "--phase", "queud")
    assert proc.returncode == 2 and proc.stdout == ""
    assert ("'queud' is no phase: one of Admitted, Queued, Inadmissible, Invalid, Finished, "
            "Failed") in proc.stderr


def test_status_says_what_its_filters_found_nothing_in(seed_fleet: SeedFleet) -> None:
    """As ``kubectl get -n x`` says "No resources found in x namespace.": the
    filters named, and, when no job at all is in the namespace asked for (a
    typo, most likely), the namespaces that have jobs, the closest first."""
    repo = str(seed_fleet.path)
    assert fleetq("reconcile", "--repo", repo, "--now", NOW).returncode == 0
    cases = {("-n", "defualt"): "No jobs in namespace defualt (did you mean default?): the "
                                "jobs are in default.",
             ("-n", "DEFAULT"): "No jobs in namespace DEFAULT (did you mean default?): the "
                                "jobs are in default.",
             # (a job the filters leave out is not missing: as kubectl get -l says)
             ("--phase", "failed", "default/pytorch-test"): "No jobs in phase Failed.",
             ("-n", "default", "--phase", "failed"): "No jobs in phase Failed in namespace "
                                                     "default.",
             ("--phase", "failed"): "No jobs in phase Failed.",
             ("-n", "prod", "--phase", "queued"): "No jobs in phase Queued in namespace prod, "
                                                  "which has no job at all: the jobs are in "
                                                  "default."}
    for args, said in cases.items():
        proc = fleetq("status", "--repo", repo, *args)
        # (on stderr, as kubectl says it: the table has no line)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", said + "\n"), args
    proc = fleetq("status", "--repo", repo, "-n", "prod", "-o", "json")
    assert (proc.returncode, json.loads(proc.stdout)) == (0, [])  # (data: nothing else)
    # a NAME with -n is the job of that namespace (kubectl get NAME -n x): none there
    proc = fleetq("status", "--repo", repo, "-n", "defualt", "pytorch-test")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert ("no job named 'pytorch-test' on fleetq/state (did you mean "
            "PyTorchJob/default/pytorch-test?)") in proc.stderr, proc.stderr


def test_status_of_a_cluster_and_of_a_quota(tmp_path: Path) -> None:
    """``status --cluster`` lists what runs on a member cluster, ``--quota`` the
    jobs of a quota and those under it, as ``queue --quota`` names it."""
    path = reconciled_template(tmp_path)
    every = json.loads(fleetq("status", "--repo", str(path), "-o", "json").stdout)

    def names(*args: str) -> list[str]:
        proc = fleetq("status", "--repo", str(path), "-o", "json", *args)
        assert proc.returncode == 0, proc.stderr
        return [i["job"]["name"] for i in json.loads(proc.stdout)]

    assert names("--cluster", "gpu-hz-a") == [
        i["job"]["name"] for i in every if i.get("cluster") == "gpu-hz-a"] == [
        "video-mae-pretrain"]
    video = [i["job"]["name"] for i in every if i["quota"] == "root/algorithm/video"]
    assert len(video) == 5
    assert names("--quota", "video") == names("--quota", "root/algorithm/video") == \
        names("--quota", "algorithm-video") == video
    assert sorted(names("--quota", "algorithm", "--phase", "queued")) == [
        "embedding-eval-ray", "tokenizer-ablation"]
    assert names("--quota", "video", "--cluster", "gpu-hz-a") == ["video-mae-pretrain"]
    cases = {("--cluster", "cpu-sh-c"): "No jobs on cluster cpu-sh-c.",
             ("--quota", "interns", "--cluster", "gpu-hz-a"): "No jobs in quota interns on "
                                                              "cluster gpu-hz-a."}
    for args, said in cases.items():
        proc = fleetq("status", "--repo", str(path), *args)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", said + "\n"), args
    proc = fleetq("status", "--repo", str(path), "--quota", "nope")
    assert proc.returncode == 2 and "--quota 'nope' names no quota" in proc.stderr
    # a cluster the state has none of is a usage error, as a quota of none is (it
    # exited 0, a script taking the empty list for an idle cluster)
    proc = fleetq("status", "--repo", str(path), "--cluster", "gpu-hz", "-o", "json")
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", "fleetq: --cluster 'gpu-hz' names no member cluster of the state (did you mean "
        "gpu-hz-a?); its clusters are cpu-sh-c, gpu-bj-b, gpu-hz-a\n")
    # a job of no quota (its namespace on no leaf) is in no quota named "None"
    (path / "jobs/orphan.yaml").write_text((path / "jobs/text/tokenizer-ablation.yaml").read_text(
        ).replace("namespace: text", "namespace: nobody"))
    commit_all(path, "a job of no quota")
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    for command in ("status", "queue"):
        proc = fleetq(command, "--repo", str(path), "--quota", "None")
        assert proc.returncode == 2 and "--quota 'None' names no quota" in proc.stderr, command


def test_a_job_is_on_each_cluster_it_has_a_copy_on() -> None:
    item = {"cluster": "a", "copies": ["b"], "keptOn": ["c"]}
    assert [c for c in "abcd" if cli._on_cluster(item, c)] == ["a", "b", "c"]
    assert not cli._on_cluster({"phase": "Queued"}, "a")


def test_reconcile_output_json_matches_status(seed_fleet: SeedFleet) -> None:
    proc = fleetq("reconcile", "--repo", str(seed_fleet.path), "--now", NOW, "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("committed ")  # (stdout: the document alone)
    status = fleetq("status", "--repo", str(seed_fleet.path), "-o", "json")
    assert json.loads(proc.stdout) == json.loads(status.stdout)
    again = fleetq("reconcile", "--repo", str(seed_fleet.path), "--now", NOW, "-o", "yaml")
    assert again.returncode == 0 and again.stderr.startswith("no change: "), again.stderr
    assert yaml.safe_load(again.stdout) == json.loads(status.stdout)


def test_reconcile_output_wide_is_the_wide_table_status_prints(seed_fleet: SeedFleet) -> None:
    """The README's ``-o wide`` of every command that prints data: reconcile
    refused it."""
    write_files(seed_fleet.path, {"jobs/default/pytorch-second.yaml": pytorchjob(
        "pytorch-second", cpu="30")})
    commit_all(seed_fleet.path, "second job")
    proc = fleetq("reconcile", "--repo", str(seed_fleet.path), "--now", NOW, "-o", "wide")
    assert proc.returncode == 0, proc.stderr
    said, _, table = proc.stdout.partition("\n")
    assert said.startswith("committed "), said
    status = fleetq("status", "--repo", str(seed_fleet.path), "-o", "wide")
    assert table == status.stdout
    reason = placements(seed_fleet.path)["default/pytorch-second"]["reason"]
    assert len(reason) > 60 and reason in table, (reason, table)


@pytest.mark.parametrize("command", [["validate"], ["plan"], ["explain", "pytorch-test"]])
def test_output_wide_is_refused_by_the_commands_that_list_no_jobs(
        seed_fleet: SeedFleet, command: list[str]) -> None:
    """validate, plan and explain took ``-o wide`` and printed their table as
    it was: a user asking for whole reasons got the cut ones, with no word."""
    seed_fleet.reconcile(NOW)
    proc = fleetq(*command, "--repo", str(seed_fleet.path), "-o", "wide")
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout
    assert "invalid choice: 'wide' (choose from 'table', 'json', 'yaml')" in proc.stderr
    assert fleetq(*command, "--repo", str(seed_fleet.path)).returncode == 0


def test_status_of_named_jobs_lists_those_alone(seed_fleet: SeedFleet) -> None:
    """As ``kubectl get NAME``: each as NAME, NAMESPACE/NAME or KIND/NAMESPACE/NAME;
    a name no job has is an error naming it (exit 2)."""
    write_files(seed_fleet.path, {"jobs/default/pytorch-second.yaml": pytorchjob(
        "pytorch-second", cpu="30")})
    commit_all(seed_fleet.path, "second job")
    seed_fleet.reconcile(NOW)
    for names in (["pytorch-second"], ["default/pytorch-second"],
                  ["pytorchjob/default/pytorch-second"]):
        proc = fleetq("status", "--repo", str(seed_fleet.path), "-o", "json", *names)
        assert proc.returncode == 0, proc.stderr
        assert [i["job"]["name"] for i in json.loads(proc.stdout)] == ["pytorch-second"]
    proc = fleetq("status", "--repo", str(seed_fleet.path), "pytorch-second", "pytorch-test")
    assert [row.split()[1] for row in proc.stdout.splitlines()[1:]] == [
        "pytorch-second", "pytorch-test"]
    proc = fleetq("status", "--repo", str(seed_fleet.path), "pytorch-test", "other/x")
    assert proc.returncode == 2 and "no job named 'other/x' on fleetq/state" in proc.stderr
    assert [row.split()[1] for row in proc.stdout.splitlines()[1:]] == ["pytorch-test"]
    proc = fleetq("status", "--repo", str(seed_fleet.path), "other/x", "-o", "json")
    assert proc.returncode == 2 and proc.stdout == ""  # (none found: nothing listed)


def test_status_of_a_job_committed_and_not_reconciled_says_what_to_run(tmp_path: Path) -> None:
    """It said only that the state branch has no such job, as of a typo."""
    path = reconciled_template(tmp_path)
    proc = fleetq("status", "--repo", str(path), "brand-new")
    assert proc.returncode == 2 and proc.stderr.endswith("`fleetq status` lists them\n")
    job = (path / "jobs/text/llm-sft-hotfix.yaml").read_text()
    write_files(path, {"jobs/text/brand-new.yaml": job.replace("llm-sft-hotfix", "brand-new")})
    head = commit_all(path, "a new job")
    proc = fleetq("status", "--repo", str(path), "brand-new")
    assert proc.returncode == 2 and proc.stderr.endswith(
        f"`fleetq status` lists them; HEAD ({head[:12]}) is not reconciled yet, and may have "
        f"it: `fleetq reconcile` decides it, `fleetq explain brand-new` tells what it would "
        f"decide\n"), proc.stderr
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    assert fleetq("status", "--repo", str(path), "brand-new").returncode == 0
    # (a commit decided with no change to the state: HEAD is reconciled, the name a typo)
    write_files(path, {"NOTES.md": "a note\n"})
    commit_all(path, "a note")
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    proc = fleetq("status", "--repo", str(path), "brand-nwe")
    assert proc.returncode == 2 and "not reconciled yet" not in proc.stderr, proc.stderr


def test_status_of_a_name_with_n_names_the_job_of_that_namespace(tmp_path: Path) -> None:
    """``status -n NS NAME`` is ``NS/NAME``, as ``kubectl get NAME -n NS`` and
    ``explain -n`` take it. A job of another namespace was looked for in every
    namespace, then filtered out: nothing listed, exit 0."""
    path = str(reconciled_template(tmp_path))
    proc = fleetq("status", "--repo", path, "-n", "text", "intern-mnist", "-o", "json")
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stdout
    assert ("fleetq: no job named 'intern-mnist' on fleetq/state (did you mean "
            "PyTorchJob/interns/intern-mnist?)") in proc.stderr, proc.stderr
    proc = fleetq("status", "--repo", path, "-n", "text", "tokenizer-ablation", "intern-mnist",
                  "-o", "json")
    assert proc.returncode == 2 and "no job named 'intern-mnist'" in proc.stderr
    assert [i["job"]["name"] for i in json.loads(proc.stdout)] == ["tokenizer-ablation"]
    proc = fleetq("status", "--repo", path, "-n", "text", "pytorchjob/video/video-mae-pretrain")
    assert proc.returncode == 2 and ("'pytorchjob/video/video-mae-pretrain' names namespace "
                                     "'video', and -n 'text': give one") in proc.stderr
    for args in (["-n", "interns", "intern-mnist"], ["-n", "interns", "pytorchjob/intern-mnist"],
                 ["pytorchjob/intern-mnist"]):
        proc = fleetq("status", "--repo", path, "-o", "json", *args)
        assert proc.returncode == 0, (args, proc.stderr)
        assert [i["job"]["name"] for i in json.loads(proc.stdout)] == ["intern-mnist"], args


@pytest.mark.parametrize("command", [["status"], ["validate"], ["reconcile", "--now", NOW],
                                     ["status", "-o", "json"]])
def test_not_a_git_repo_is_exit_2(tmp_path: Path, command: list[str]) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "fleet.yaml").write_text("apiVersion: fleetq.io/v1alpha1\nkind: Fleet\n")
    proc = fleetq(command[0], "--repo", str(plain), *command[1:], cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "not inside a git repository" in proc.stderr or "git" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_mistyped_command_line_is_told_as_what_it_is(seed_fleet: SeedFleet,
                                                        tmp_path: Path) -> None:
    """An option the command does not take, with that command's usage (not
    the list of commands); a --repo that is not there, a --source that names
    nothing, and a repository with no commit yet, each told as such."""
    repo = str(seed_fleet.path)
    proc = fleetq("status", "--repo", repo, "--bogus")
    assert proc.returncode == 2 and proc.stderr.startswith("usage: fleetq status "), proc.stderr
    assert "unrecognized arguments: --bogus" in proc.stderr
    proc = fleetq("--repo", repo, "status")  # (an option before the command)
    assert proc.returncode == 2 and "unrecognized arguments: --repo (the command comes first: " \
        "fleetq COMMAND --repo ...)" in proc.stderr, proc.stderr
    missing = tmp_path / "nowhere"
    proc = fleetq("status", "--repo", str(missing))
    assert proc.returncode == 2 and f"{missing}: no such directory" in proc.stderr
    proc = fleetq("status", "--repo", "")
    assert proc.returncode == 2 and "--repo '' names no folder" in proc.stderr, proc.stderr
    proc = fleetq("plan", "--repo", repo, "--source", "mian", "--now", NOW)
    assert proc.returncode == 2, proc.stderr
    assert "source revision 'mian' does not exist here (did you mean main?): no branch, tag " \
           "or commit of that name" in proc.stderr and "commit the fleet repo first" \
        not in proc.stderr, proc.stderr
    empty = tmp_path / "empty"
    git(tmp_path, "init", "-q", str(empty))
    proc = fleetq("reconcile", "--repo", str(empty), "--now", NOW)
    assert proc.returncode == 2 and "the repository has no commit yet; commit the fleet repo " \
        "first" in proc.stderr, proc.stderr


def test_validate_with_the_state_branch_checked_out_is_refused(seed_fleet: SeedFleet) -> None:
    """It checked the rendered state as a fleet: errors of every PodGroup and
    Kustomization, and of a fleet.yaml that is not there."""
    seed_fleet.reconcile()
    git(seed_fleet.path, "checkout", "-q", STATE)
    proc = fleetq("validate", "--repo", str(seed_fleet.path))
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout
    assert "is a state commit, written by fleetq (the state branch is checked out): check " \
           "out the source branch" in proc.stderr, proc.stderr


def test_a_fleet_of_jobs_and_no_member_cluster_is_warned_of(tmp_path: Path) -> None:
    """Every job Inadmissible for want of a cluster: validate warns (one
    warning, not one a job), and explain says that, not that a policy's
    clusterAffinity selects none."""
    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": one_leaf_tree("8", "32Gi"), "policy.yaml": QUEUED_CLUSTER_POLICY,
        "jobs/a.yaml": pytorchjob("a"), "jobs/b.yaml": pytorchjob("b")})
    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("warning") == 1 + 1, proc.stdout  # (the summary line's count)
    assert "clusters/: warning: the fleet has no MemberCluster fleetq reads, so its 2 jobs " \
           "can run nowhere" in proc.stdout
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    proc = fleetq("explain", "--repo", str(path), "a")
    assert "Reason: the fleet has no MemberCluster to run it on; add one" in proc.stdout, \
        proc.stdout


def test_status_before_any_reconcile_is_exit_2(seed_fleet: SeedFleet) -> None:
    proc = fleetq("status", "--repo", str(seed_fleet.path))
    assert proc.returncode == 2
    assert "reconcile" in proc.stderr


def test_usage_error_is_exit_2() -> None:
    proc = fleetq("status", "-o", "xml")
    assert proc.returncode == 2
    proc = fleetq("no-such-command")
    assert proc.returncode == 2


def test_plan_shows_changes_without_committing(seed_fleet: SeedFleet) -> None:
    """DESIGN §5: `plan` takes --now; `plan --exit-code` exits 1 when there are changes."""
    proc = fleetq("plan", "--repo", str(seed_fleet.path), "--now", NOW, "--exit-code")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "pytorch-test" in proc.stdout
    assert rev(seed_fleet.path, STATE) is None  # nothing committed
    seed_fleet.reconcile()
    proc = fleetq("plan", "--repo", str(seed_fleet.path), "--now", NOW, "--exit-code")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_namespace_moved_to_another_quota_is_a_job_change_in_plan_and_commit(
        tmp_path: Path) -> None:
    """Its running job stays where it runs, under the other quota, whose label
    it carries on its cluster: a change a reviewer is told of, not "no job
    changes"."""
    path = reconciled_template(tmp_path)
    tree = path / "quota/elasticquotatree.yaml"
    text = tree.read_text()
    moved = text.replace("      namespaces:\n      - interns\n", "") \
        .replace("      - platform\n", "      - platform\n      - interns\n")
    assert moved.count("- interns") == 1 and moved != text
    tree.write_text(moved)
    commit_all(path, "interns under platform")
    line = ("change the quota of PyTorchJob interns/intern-mnist: root/interns -> "
            "root/platform (on ")
    planned = fleetq("plan", "--repo", str(path), "--now", NOW)
    assert planned.returncode == 0, planned.stderr
    assert f"\n  {line}" in planned.stdout, planned.stdout
    assert "(no job changes" not in planned.stdout
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    assert line in git(path, "log", "-1", "--format=%B", STATE)


def test_plan_counts_the_jobs_that_change_place_in_their_queue_or_priority(
        tmp_path: Path) -> None:
    """A push that changes no job's phase, cluster or quota but its priority,
    its place in the queue or its size: plan said "(no job changes ...)" and
    changed placements.yaml all the same. Each job is counted once."""
    path = reconciled_template(tmp_path)
    job = path / "jobs/text/tokenizer-ablation.yaml"
    job.write_text(job.read_text().replace("priorityClassName: low", "priorityClassName: normal"))
    commit_all(path, "tokenizer-ablation: normal")
    planned = fleetq("plan", "--repo", str(path), "--now", NOW)
    assert planned.returncode == 0, planned.stderr
    assert "\nJobs:\n  (1 job(s) change priority: PyTorchJob text/tokenizer-ablation)\n" \
        in planned.stdout, planned.stdout
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    git(path, "rm", "-q", "jobs/text/llama-lora-sft.yaml")  # (a job of its queue that runs)
    commit_all(path, "llama-lora-sft is done")
    data = json.loads(fleetq("plan", "--repo", str(path), "--now", NOW, "-o", "json").stdout)
    assert data["otherChanges"] == {"size": 0, "priority": 0, "position": 1, "reason": 0}, data
    planned = fleetq("plan", "--repo", str(path), "--now", NOW).stdout
    assert "\n  (1 job(s) change place in their queues (queued): PyTorchJob " \
           "text/tokenizer-ablation)\n" in planned, planned
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    assert placements(path)["text/tokenizer-ablation"]["phase"] == "Queued"
    head, found, tail = job.read_text().rpartition("replicas: 1")  # (its workers')
    assert found, tail
    job.write_text(f"{head}replicas: 2{tail}")
    commit_all(path, "a third worker")
    data = json.loads(fleetq("plan", "--repo", str(path), "--now", NOW, "-o", "json").stdout)
    assert data["otherChanges"] == {"size": 1, "priority": 0, "position": 0, "reason": 0}, data
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    data = json.loads(fleetq("plan", "--repo", str(path), "--now", NOW, "-o", "json").stdout)
    assert data["otherChanges"] == {"size": 0, "priority": 0, "position": 0, "reason": 0}, data


def test_plan_json_gives_each_job_that_changes_phase_cluster_or_quota_as_fields(
        seed_fleet: SeedFleet) -> None:
    """``changes`` are sentences for people; a pull request's bot had to parse
    them to tell which jobs a change admits. ``jobChanges`` gives each such
    job with its phase, cluster and quota before and after, as the reconcile
    then decides them."""
    seed_fleet.reconcile(NOW)
    path = seed_fleet.path
    was = placements(path)["default/pytorch-test"]
    assert was["phase"] == "Admitted", was
    write_files(path, {f"jobs/default/{name}.yaml": pytorchjob(name, cpu=cpu)
                       for name, cpu in (("small", "1"), ("huge", "9000"))})
    git(path, "rm", "-q", "jobs/default/pytorch-test.yaml")
    commit_all(path, "two jobs in, the seed's out")
    data = json.loads(fleetq("plan", "--repo", str(path), "--now", NOW, "-o", "json").stdout)
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    now = placements(path)

    def fields(item: dict[str, Any]) -> dict[str, Any]:
        return {"phase": item["phase"], "cluster": item.get("cluster"),
                "quota": item.get("quota"), "reason": item.get("reason")}

    assert data["jobChanges"] == [
        {"job": now[key]["job"], "before": None, "after": fields(now[key])}
        for key in ("default/huge", "default/small")] + [
        {"job": was["job"], "before": fields(was), "after": None}], data["jobChanges"]
    assert [c["after"]["phase"] for c in data["jobChanges"][:2]] == ["Inadmissible", "Admitted"]
    assert len(data["changes"]) == 3, data["changes"]
    again = json.loads(fleetq("plan", "--repo", str(path), "--now", NOW, "-o", "json").stdout)
    assert again["jobChanges"] == [] and again["changes"] == [], again


def test_plan_tells_a_reviewer_why_new_jobs_wait_and_of_a_max_lowered_below_use(
        tmp_path: Path) -> None:
    """A pull request's plan said "inadmissible PyTorchJob text/big-one" and
    no more: why it would wait was for ``explain``, after the merge. And a
    max lowered below what runs under it planned "No changes", the quota over
    its max told nowhere."""
    path = reconciled_template(tmp_path)
    git(path, "checkout", "-q", "-b", "pr")
    big = (path / "jobs/text/tokenizer-ablation.yaml").read_text() \
        .replace("name: tokenizer-ablation", "name: big-one")
    assert 'nvidia.com/gpu: "1"' in big
    write_files(path, {"jobs/text/big-one.yaml": big.replace('nvidia.com/gpu: "1"',
                                                             'nvidia.com/gpu: "32"')})
    commit_all(path, "a job too big for its quota")
    proc = fleetq("plan", "--repo", str(path), "--source", "pr", "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert ("\nWhy they wait:\n  PyTorchJob text/big-one: quota root/algorithm/text "
            "nvidia.com/gpu: ") in proc.stdout, proc.stdout
    data = json.loads(fleetq("plan", "--repo", str(path), "--source", "pr", "--now", NOW,
                             "-o", "json").stdout)
    [change] = data["jobChanges"]
    assert change["after"]["phase"] == "Inadmissible"
    assert change["after"]["reason"].startswith("quota root/algorithm/text nvidia.com/gpu: ")
    git(path, "checkout", "-q", "main")
    git(path, "checkout", "-q", "-b", "shrink")
    tree = path / "quota/elasticquotatree.yaml"
    text = tree.read_text()
    at = text.index("- name: interns")
    assert "cpu: 64\n" in text[at:]
    shrunk = text[:at] + text[at:].replace("cpu: 64\n", "cpu: 4\n", 1)
    tree.write_text(shrunk)
    commit_all(path, "interns: 4 cpu")
    proc = fleetq("plan", "--repo", str(path), "--source", "shrink", "--now", NOW)
    line = shrunk[:shrunk.index("cpu: 4\n", at)].count("\n") + 1
    said = (f"quota/elasticquotatree.yaml:{line}: warning: "
            f"quota root/interns: the jobs that run under it use cpu ")
    assert said in proc.stdout and ", above its max 4: they run on (a lowered max evicts no " \
        "job), and no job asking for cpu is admitted under it until they use less" \
        in proc.stdout, proc.stdout
    assert "No changes. The state branch is up to date." in proc.stdout
    git(path, "checkout", "-q", "main")
    proc = fleetq("plan", "--repo", str(path), "--now", NOW)
    assert "above its max" not in proc.stdout, proc.stdout


def test_plan_of_a_branch_that_lacks_the_state_source_says_so(tmp_path: Path) -> None:
    """A pull request's branch made before the commit the state was made from:
    its plan is of reconciling it as it is (main's new job deleted), and says
    so; rebased, it no longer does."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    git(path, "branch", "pr")
    intern = (path / "jobs/interns/intern-mnist.yaml").read_text()
    write_files(path, {"jobs/interns/intern-mnist-2.yaml":
                       intern.replace("name: intern-mnist", "name: intern-mnist-2")})
    commit_all(path, "a second intern job")
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    made_from = rev(path, "main")
    git(path, "checkout", "-q", "pr")
    write_files(path, {"jobs/interns/intern-mnist-3.yaml":
                       intern.replace("name: intern-mnist", "name: intern-mnist-3")})
    commit_all(path, "a third one")
    proc = fleetq("plan", "--repo", str(path), "--source", "pr", "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert f"Note: pr lacks {made_from[:12]}, the commit the state was made from" \
        in proc.stdout
    assert "delete PyTorchJob interns/intern-mnist-2" in proc.stdout, proc.stdout
    got = json.loads(fleetq("plan", "--repo", str(path), "--source", "pr", "--now", NOW,
                            "-o", "json").stdout)
    assert got["stateSource"] == {"commit": made_from, "contained": False}
    git(path, "rebase", "-q", "main")
    proc = fleetq("plan", "--repo", str(path), "--source", "pr", "--now", NOW)
    assert "Note:" not in proc.stdout and "delete" not in proc.stdout, proc.stdout
    got = json.loads(fleetq("plan", "--repo", str(path), "--source", "pr", "--now", NOW,
                            "-o", "json").stdout)
    assert got["stateSource"] == {"commit": made_from, "contained": True}


def test_a_state_made_from_another_branch_says_how_to_reconcile_the_source_again(
        tmp_path: Path) -> None:
    """A feature branch reconciled by mistake: main, older than it, is not
    reconciled (that would look like a late pipeline rolling the state back),
    and fleetq says whose commit the state is made from and how to go on; plan
    says a reconcile makes no change. A new commit on main is reconciled."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    git(path, "checkout", "-q", "-b", "feature")
    intern = (path / "jobs/interns/intern-mnist.yaml").read_text()
    write_files(path, {"jobs/interns/unmerged.yaml":
                       intern.replace("name: intern-mnist", "name: unmerged")})
    commit_all(path, "not merged")
    git(path, "checkout", "-q", "main")
    assert fleetq("reconcile", "--repo", str(path), "--source", "feature",
                  "--now", NOW).returncode == 0
    assert "unmerged" in {i["job"]["name"] for i in placements(path).values()}
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert "of the branch 'feature', not of 'main'" in proc.stdout + proc.stderr
    assert "git commit --allow-empty" in proc.stdout + proc.stderr
    proc = fleetq("plan", "--repo", str(path), "--now", NOW, "--exit-code")
    assert "fleetq reconcile of it makes no change" in proc.stdout, proc.stdout
    assert "delete PyTorchJob interns/unmerged" in proc.stdout  # (what it would change)
    # (--exit-code gates on what a reconcile would do: nothing here)
    assert proc.returncode == 0, proc.stdout
    got = json.loads(fleetq("plan", "--repo", str(path), "--now", NOW, "-o", "json").stdout)
    assert (got["changed"], got["rollsBack"]) == (True, True), got
    git(path, "commit", "-q", "--allow-empty", "-m", "main again")
    proc = fleetq("plan", "--repo", str(path), "--now", NOW, "--exit-code")
    assert proc.returncode == 1 and "makes no change" not in proc.stdout, proc.stdout
    assert json.loads(fleetq("plan", "--repo", str(path), "--now", NOW, "-o",
                             "json").stdout)["rollsBack"] is False
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0 and "committed" in proc.stdout + proc.stderr
    assert "unmerged" not in {i["job"]["name"] for i in placements(path).values()}


def test_plan_of_an_older_commit_of_a_branch_that_went_on_says_a_reconcile_changes_nothing(
        tmp_path: Path) -> None:
    """B adds a job, C after it changes nothing (no state commit): the state is
    made from A. A reconcile of B makes no change (main went on past it), but
    plan --exit-code of B exited 1, with no word of that."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    intern = (path / "jobs/interns/intern-mnist.yaml").read_text()
    write_files(path, {"jobs/interns/b.yaml": intern.replace("name: intern-mnist", "name: b")})
    b = commit_all(path, "B: a job")
    git(path, "commit", "-q", "--allow-empty", "-m", "C: nothing")
    proc = fleetq("reconcile", "--repo", str(path), "--source", b, "--now", NOW)
    assert proc.returncode == 0 and proc.stdout.startswith("no change: "), proc.stdout
    proc = fleetq("plan", "--repo", str(path), "--source", b, "--now", NOW, "--exit-code")
    assert proc.returncode == 0, proc.stdout
    assert (f"Note: {b[:12]} is an older commit of 'main', which went on past it to "
            f"{rev(path, 'main')[:12]}: fleetq reconcile of it makes no change") in proc.stdout
    got = json.loads(fleetq("plan", "--repo", str(path), "--source", b, "--now", NOW,
                            "-o", "json").stdout)
    assert (got["changed"], got["rollsBack"]) == (True, True), got
    proc = fleetq("plan", "--repo", str(path), "--now", NOW, "--exit-code")  # (C: B's job)
    assert proc.returncode == 1 and "Note:" not in proc.stdout, proc.stdout


def test_queue_lists_waiting_jobs_in_order(seed_fleet: SeedFleet) -> None:
    """The template README's `fleetq queue`: what is waiting, in order."""
    _queued_seed(seed_fleet)
    proc = fleetq("queue", "--repo", str(seed_fleet.path), "-o", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    items = json.loads(proc.stdout)
    assert [i["job"]["name"] for i in items] == ["pytorch-second"]


def test_queue_of_a_quota_takes_its_name_or_path_and_the_quotas_under_it(
        tmp_path: Path) -> None:
    """``--quota video`` listed nothing (only ``root/...`` paths matched), as
    did a quota that does not exist, with exit 0: both looked like an empty
    queue. A team's name lists the queues under it; a wrong name is a usage
    error naming the quotas."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    queued = {i["quota"] for i in placements(path).values() if i["phase"] == "Queued"}
    assert queued == {"root/algorithm/text"}

    def names(quota: str) -> list[str]:
        proc = fleetq("queue", "--repo", str(path), "--quota", quota, "-o", "json")
        assert proc.returncode == 0, proc.stderr
        return [i["job"]["name"] for i in json.loads(proc.stdout)]

    everything = names("root")
    assert len(everything) == 2
    for quota in ("text", "root/algorithm/text", "algorithm/text", "algorithm", "root/algorithm",
                  "algorithm-text", "root-algorithm-text"):  # (as a quota label names it)
        assert names(quota) == everything, quota
    for quota in ("video", "root/algorithm/video", "interns"):
        assert names(quota) == [], quota
        proc = fleetq("queue", "--repo", str(path), "--quota", quota)
        # (an empty queue is no line of the table: `fleetq queue | wc -l` counts none)
        assert (proc.returncode, proc.stdout, proc.stderr) == (
            0, "", f"No queued jobs in quota {quota}.\n"), quota
    for quota in ("vid", "algo/text", "nope"):
        proc = fleetq("queue", "--repo", str(path), "--quota", quota)
        assert proc.returncode == 2, proc.stdout
        assert (f"--quota {quota!r} names no quota of the ElasticQuotaTree; name a quota or its "
                f"path: root, root/algorithm, root/algorithm/text") in proc.stderr


def test_queue_of_a_namespace_lists_its_waiting_jobs_as_status_n_does(tmp_path: Path) -> None:
    """``queue -n`` took no namespace (a usage error), where ``status -n``
    and ``explain -n`` do: the queued jobs of that namespace, and, when none
    is, the same words status says, with the namespace meant."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    queued = {(i["job"]["namespace"], i["job"]["name"])
              for i in placements(path).values() if i["phase"] == "Queued"}
    assert {space for space, _ in queued} == {"text"}

    proc = fleetq("queue", "--repo", str(path), "-n", "text", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert {(i["job"]["namespace"], i["job"]["name"]) for i in json.loads(proc.stdout)} == queued
    proc = fleetq("queue", "--repo", str(path), "--namespace", "text")
    assert proc.returncode == 0 and len(proc.stdout.splitlines()) == 1 + len(queued)
    cases = {("-n", "video"): "No queued jobs in namespace video.",
             ("-n", "txt"): "No queued jobs in namespace txt, which has no job at all (did you "
                            "mean text?): the jobs are in interns, platform, text, video.",
             ("-n", "video", "--quota", "text"): "No queued jobs in namespace video in quota "
                                                 "text."}
    for args, said in cases.items():
        proc = fleetq("queue", "--repo", str(path), *args)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", said + "\n"), args
    proc = fleetq("queue", "--repo", str(path), "-n", "video", "-o", "json")
    assert (proc.returncode, json.loads(proc.stdout)) == (0, [])


def test_explain_names_the_class_that_gives_the_priority_it_advises(tmp_path: Path) -> None:
    """"a priority above 1000 would let it preempt" left the user to find a
    class above 1000, or to learn that none is: the lowest that gives one is
    named (a WorkloadPriorityClass by its label, when no PriorityClass does),
    or that the fleet has none."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0

    def advice() -> str:
        proc = fleetq("explain", "--repo", str(path), "text/tokenizer-ablation")
        assert proc.returncode == 0, proc.stderr
        [line] = [x for x in proc.stdout.splitlines() if "a priority above" in x]
        return line.split("would let it preempt ", 1)[1]

    assert advice() == ("1 of them (WorkloadPriorityClass urgent has 2000, by the job's label "
                        "kueue.x-k8s.io/priority-class)")
    classes = (path / "priorityclasses.yaml").read_text()
    write_files(path, {"priorityclasses.yaml": classes + (
        "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: top}\n"
        "value: 1500\n")})
    commit_all(path, "a class above high")
    assert advice() == "1 of them (PriorityClass top has 1500)"
    # (a job whose label names its WorkloadPriorityClass: that decides its priority,
    # whatever PriorityClass its pods name)
    job = path / "jobs/text/tokenizer-ablation.yaml"
    unlabelled = job.read_text()
    job.write_text(unlabelled.replace("  labels:\n", "  labels:\n    kueue.x-k8s.io/priority-"
                                                   "class: backfill\n", 1))
    write_files(path, {"priorityclasses.yaml": (path / "priorityclasses.yaml").read_text() + (
        "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: WorkloadPriorityClass\nmetadata: "
        "{name: backfill}\nvalue: 10\n")})
    commit_all(path, "the job's priority by its label")
    assert advice() == ("1 of them (WorkloadPriorityClass urgent has 2000, named by the job's "
                        "label kueue.x-k8s.io/priority-class)")
    write_files(path, {"priorityclasses.yaml": classes.replace("name: urgent", "name: backfill")
                       .replace("value: 2000", "value: 10") + (
        "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: top}\n"
        "value: 1500\n")})
    commit_all(path, "no WorkloadPriorityClass above it")
    assert advice() == ("1 of them (PriorityClass top has 1500: name it in its pods, and take "
                        "off the job's label kueue.x-k8s.io/priority-class, which decides its "
                        "priority now)")
    job.write_text(unlabelled)
    commit_all(path, "its priority by its pods' class again")
    write_files(path, {"priorityclasses.yaml": classes.split("---\n# Set on the job itself")[0]})
    # (an edit not committed is not read: explain says so, lest it look tried)
    proc = fleetq("explain", "--repo", str(path), "text/tokenizer-ablation")
    assert ("fleetq: the work tree has 1 change(s) not committed (priorityclasses.yaml); "
            "explain reads HEAD, without them") in proc.stderr, proc.stderr
    commit_all(path, "no class above high")
    assert advice() == "1 of them (no PriorityClass of the fleet has one: add one)"
    (path / "notes.txt").write_text("a file fleetq reads not\n")
    proc = fleetq("explain", "--repo", str(path), "text/tokenizer-ablation")
    assert "not committed" not in proc.stderr


def test_a_job_not_yet_committed_is_told_by_reconcile_plan_and_explain(tmp_path: Path) -> None:
    """A new job written and not committed: reconcile said the state was up to
    date, plan that nothing changed, explain that no job has its name and that
    a file had errors (another one): none said the work tree holds it."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    job = (path / "jobs/text/llm-sft-hotfix.yaml").read_text()
    write_files(path, {"jobs/text/new-one.yaml": job.replace("llm-sft-hotfix", "new-one")})
    told = ("fleetq: the work tree has 1 change(s) not committed (jobs/text/new-one.yaml); {} "
            "reads HEAD, without them (commit them to have them {}; fleetq validate checks them "
            "first)\n")
    for command, done, code in (("reconcile", "reconciled", 0), ("plan", "planned", 0),
                                ("explain", "explained", 2)):
        args = [command, "--now", NOW] + (["new-one"] if command == "explain" else [])
        proc = fleetq(*args, "--repo", str(path))
        assert proc.returncode == code, (command, proc.stdout, proc.stderr)
        assert proc.stderr.endswith(told.format(command, done)), (command, proc.stderr)
    commit_all(path, "the new job")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0 and proc.stdout.startswith("committed "), proc.stdout
    assert "not committed" not in proc.stderr, proc.stderr
    # (a file fleet.yaml excludes, as the template's docs/ the README says to fill in)
    with (path / "docs/flux.yaml").open("a") as docs:
        docs.write("# filled in\n")
    for command in ("reconcile", "plan"):
        proc = fleetq(command, "--now", NOW, "--repo", str(path))
        assert proc.returncode == 0 and "not committed" not in proc.stderr, proc.stderr


def test_a_branch_reconciled_ahead_of_the_branch_the_state_is_made_from_is_warned_of(
        tmp_path: Path) -> None:
    """A pull request's branch checked out and reconciled (the source is the
    branch checked out): its unreviewed quota change went to the clusters with
    no word. It is reconciled, as the source branch may move, with a warning;
    on the branch the state is made from, none."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    made_from = rev(path, "main")
    # (a branch made at main's head, which main goes on from: main is no pull request)
    git(path, "branch", "wip-later")
    write_files(path, {"NOTES.md": "a note on main\n"})
    commit_all(path, "a change on main")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    git(path, "checkout", "-q", "-b", "raise-text")
    write_files(path, {"NOTES.md": "a note\n"})
    commit_all(path, "a change of the pull request")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q")
    assert proc.returncode == 0 and proc.stderr == (
        f"fleetq: warning: reconciling the branch 'raise-text', made off 'main', while the "
        f"state is made from {made_from[:12]} of 'main', which lacks the commits of "
        f"'raise-text': they go to the clusters before they are merged; to reconcile 'main', "
        f"check it out or give --source main\n"), proc.stderr
    git(path, "checkout", "-q", "main")
    git(path, "merge", "-q", "--ff-only", "raise-text")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_validate_tells_a_remote_fleet_yaml_names_that_the_repository_lacks(
        tmp_path: Path) -> None:
    """validate passed it, and every reconcile then stopped (exit 2)."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    text = (path / "fleet.yaml").read_text()
    assert "  # remote: origin\n" in text
    write_files(path, {"fleet.yaml": text.replace("  # remote: origin\n", "  remote: origin\n")})
    commit_all(path, "push the state to origin")
    line = line_of((path / "fleet.yaml").read_text(), "  remote: origin")
    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 1 and (
        f"fleet.yaml:{line}: error: spec.remote names 'origin', which is no remote of this "
        f"repository: add it (git remote add origin URL), or remove spec.remote to keep the "
        f"state in this clone (or give --remote '' to each command)") in proc.stdout, proc.stdout
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 2 and "or give --remote '' to keep the state in this clone" in \
        proc.stderr, proc.stderr
    git(tmp_path, "init", "-q", "--bare", str(tmp_path / "origin.git"))
    git(path, "remote", "add", "origin", str(tmp_path / "origin.git"))
    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 0 and "spec.remote" not in proc.stdout, proc.stdout


def test_a_remote_read_from_fleet_yamls_last_version_that_builds_is_said_so(
        tmp_path: Path) -> None:
    """fleet.yaml names a remote the clone lacks; the next commit takes it out
    and misspells the placement strategy: reconcile stopped on the remote,
    which the file no longer names, and said nothing of the version it read it
    from, nor of the mistake to fix."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    text = (path / "fleet.yaml").read_text()
    write_files(path, {"fleet.yaml": text.replace("  # remote: origin\n", "  remote: nosuch\n")})
    named = commit_all(path, "a remote")
    write_files(path, {"fleet.yaml": text.replace("binpack\n", "packbin\n", 1)})
    commit_all(path, "no remote, and a typo")
    line = line_of((path / "fleet.yaml").read_text(), "packbin")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(
        f"fleetq: fleet.yaml at HEAD does not build (fleet.yaml:{line}: error: "
        f"spec.placementStrategy: placement strategy 'packbin' is not binpack or spread): its "
        f"state branch and remote are read from its version of commit {named[:12]}, the last "
        f"that does\nfleetq: fleet.yaml's spec.remote names 'nosuch'"), proc.stderr
    write_files(path, {"fleet.yaml": text})
    commit_all(path, "fixed")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0 and "does not build" not in proc.stderr, proc.stderr


def test_the_template_readmes_deploy_steps_push_the_state(tmp_path: Path) -> None:
    """Followed as written after a first reconcile here, step 1 ended in exit 2:
    it did not say to push the state branch fleetq had made in this clone."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    readme = (path / "README.md").read_text()
    assert "`git push origin fleetq/state` if you have reconciled here already" in readme
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    git(path, "remote", "add", "origin", str(origin))
    git(path, "push", "-q", "-u", "origin", "main")
    git(path, "push", "-q", "origin", "fleetq/state")
    text = (path / "fleet.yaml").read_text()
    write_files(path, {"fleet.yaml": text.replace("  # remote: origin\n", "  remote: origin\n")})
    commit_all(path, "push the state to origin")
    git(path, "push", "-q", "origin", "main")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    job = (path / "jobs/text/llm-sft-hotfix.yaml").read_text()
    write_files(path, {"jobs/text/next.yaml": job.replace("llm-sft-hotfix", "next")})
    commit_all(path, "a job")
    git(path, "push", "-q", "origin", "main")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0 and "pushed it to origin" in proc.stdout, proc.stdout + proc.stderr
    assert rev(origin, "fleetq/state") == rev(path, "fleetq/state")


def test_init_creates_a_fleet_repo_that_validates_and_reconciles(tmp_path: Path) -> None:
    target = tmp_path / "my-fleet"
    proc = fleetq("init", str(target))
    assert proc.returncode == 0, proc.stderr
    assert git(target, "symbolic-ref", "--short", "HEAD").strip() == "main"
    assert git(target, "status", "--porcelain") == ""
    proc = fleetq("validate", "--repo", str(target))
    assert proc.returncode == 0, proc.stdout
    proc = fleetq("reconcile", "--repo", str(target), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    phases = {i["phase"] for i in placements(target).values()}
    assert {"Admitted", "Queued", "Inadmissible"} <= phases
    proc = fleetq("init", str(target))
    assert proc.returncode == 2  # not empty


@pytest.mark.parametrize(("config", "who"), [
    ("[user]\n\tname = Ada Lovelace\n\temail = ada@example.org\n",
     "Ada Lovelace <ada@example.org>"),
    ("", "fleetq init <fleetq@localhost>")])
def test_init_commits_as_the_person_and_without_an_identity_still_commits(
        tmp_path: Path, config: str, who: str) -> None:
    """It committed as "fleetq demo" whoever ran it."""
    (tmp_path / "gitconfig").write_text(config)
    target = tmp_path / "my fleet"
    proc = fleetq("init", str(target), env={"GIT_CONFIG_GLOBAL": str(tmp_path / "gitconfig"),
                                            "GIT_CONFIG_NOSYSTEM": "1"})
    assert proc.returncode == 0, proc.stderr
    assert git(target, "log", "-1", "--format=%an <%ae>|%cn <%ce>").strip() == f"{who}|{who}"
    assert f"next: cd '{target}' && fleetq validate" in proc.stdout, proc.stdout


def test_init_makes_a_sha1_repository_whatever_gits_default(tmp_path: Path) -> None:
    """With git's default object format sha256 (GIT_DEFAULT_HASH, or
    init.defaultObjectFormat from git 2.46), init made a repository every next
    command then refused."""
    env = {"GIT_DEFAULT_HASH": "sha256"}
    target = tmp_path / "fleet"
    assert fleetq("init", str(target), env=env).returncode == 0
    assert git(target, "rev-parse", "--show-object-format").strip() == "sha1"
    proc = fleetq("validate", "--repo", str(target), env=env)
    assert proc.returncode == 0, proc.stderr


def test_init_without_git_says_how_to_commit_first_and_validate_then(tmp_path: Path) -> None:
    """Its hint began with ``fleetq validate``, which reads a git repository,
    and did not quote a path with a space."""
    target = tmp_path / "my fleet"
    proc = fleetq("init", "--no-git", str(target))
    assert proc.returncode == 0, proc.stderr
    assert not (target / ".git").exists()
    hint = proc.stdout.splitlines()[-1]
    assert hint.startswith(f"next: cd '{target}' && git init --object-format=sha1 -b main && "
                           f"git add -A && "), hint
    steps = hint.removeprefix(f"next: cd '{target}' && ")
    done = subprocess.run(steps, shell=True, cwd=target, capture_output=True, text=True,
                          env={**os.environ, **AUTHOR, "PATH": f"{Path(sys.executable).parent}"
                               f"{os.pathsep}{os.environ['PATH']}"}, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (target / ".git").is_dir() and git(target, "status", "--porcelain") == ""


@pytest.mark.parametrize(("where", "said"), [
    ("a-file", "a-file is a file; fleetq init needs a new or empty folder"),
    ("a-file/fleet", "could not create a fleet repo at {tmp}/a-file/fleet: Not a directory"),
    ("team/fleets/gpu", "could not create a fleet repo at {tmp}/team/fleets/gpu: "),
])
def test_init_where_no_folder_can_be_made_is_a_usage_error(
        tmp_path: Path, where: str, said: str) -> None:
    """It printed a Python traceback (NotADirectoryError); nothing is left
    behind and the file in the way is untouched."""
    (tmp_path / "a-file").write_text("mine\n")
    hooks = tmp_path / "hooks"  # (git itself refuses the commit, once the folders are made)
    hooks.mkdir()
    (hooks / "pre-commit").write_text("#!/bin/sh\nexit 1\n")
    (hooks / "pre-commit").chmod(0o755)
    config = tmp_path / "gitconfig"
    config.write_text(f"[core]\n\thooksPath = {hooks}\n")
    proc = fleetq("init", str(tmp_path / where), env={"GIT_CONFIG_GLOBAL": str(config)})
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert said.format(tmp=tmp_path) in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "gitconfig", "hooks"]
    assert (tmp_path / "a-file").read_text() == "mine\n"


def test_init_whose_commit_fails_leaves_nothing_behind(tmp_path: Path) -> None:
    """git failing half-way (here: a template that commits nothing it can
    write, as with a full disk) leaves neither a folder nor a repo behind."""
    objects = tmp_path / "objects-not-writable"
    objects.write_text("")  # (a file where git's object folder should be)
    target = tmp_path / "fleet"
    proc = fleetq("init", str(target), env={"GIT_OBJECT_DIRECTORY": str(objects)})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"could not create a fleet repo at {target}: " in proc.stderr
    assert not target.exists()


def test_validate_checks_the_work_tree_before_it_is_committed(tmp_path: Path) -> None:
    """``fleetq validate`` before ``git commit`` (a pre-commit hook, a person
    checking an edit) checks the files as they are on disk, new ones not yet
    added included, and leaves git's index, branches and HEAD as they were;
    ``--source REV`` checks that commit."""
    target = tmp_path / "fleet"
    assert fleetq("init", str(target)).returncode == 0
    head = git(target, "rev-parse", "HEAD").strip()
    write_files(target, {"jobs/new.yaml": "kind: PyTorchJob\nmetadata: [\n",
                         "jobs/ignored.yaml": "{{ not yaml\n", ".gitignore": "ignored.yaml\n"})
    git(target, "add", ".gitignore")  # (staged: the temporary index starts from git's)
    status = git(target, "status", "--porcelain")
    proc = fleetq("validate", "--repo", str(target))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "jobs/new.yaml:2: error: not valid YAML" in proc.stdout  # (where `[` opens)
    assert "ignored.yaml" not in proc.stdout
    assert "(the work tree, with changes not committed)" in proc.stdout
    assert git(target, "status", "--porcelain") == status
    assert git(target, "rev-parse", "HEAD").strip() == head
    assert git(target, "for-each-ref", "--format=%(refname)").split() == ["refs/heads/main"]
    proc = fleetq("validate", "--repo", str(target), "--source", "HEAD")
    assert proc.returncode == 0, proc.stdout
    assert "work tree" not in proc.stdout
    git(target, "reset", "-q")
    for name in ("jobs/new.yaml", "jobs/ignored.yaml", ".gitignore"):
        (target / name).unlink()
    proc = fleetq("validate", "--repo", str(target))  # (the work tree as HEAD: HEAD)
    assert proc.returncode == 0 and "work tree" not in proc.stdout, proc.stdout
    # before the first commit
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q", "-b", "main")
    write_files(fresh, {p: (target / p).read_text()
                        for p in ("fleet.yaml", "quota/elasticquotatree.yaml")})
    proc = fleetq("validate", "--repo", str(fresh))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "(the work tree, with changes not committed)" in proc.stdout


def test_validate_writes_nothing_into_the_repository(tmp_path: Path) -> None:
    """The work tree is checked with a temporary index and object folder: an
    immutable .git (read-only, another user's) is no obstacle (it printed a
    traceback), and the blobs of files never committed do not pile up there."""
    target = tmp_path / "fleet"
    assert fleetq("init", str(target)).returncode == 0
    write_files(target, {"jobs/new.yaml": "kind: PyTorchJob\nmetadata: [\n"})
    before = sorted(str(p.relative_to(target)) for p in (target / ".git").rglob("*"))
    locked = subprocess.run(["chattr", "+i", str(target / ".git")], capture_output=True,
                            check=False)
    try:
        proc = fleetq("validate", "--repo", str(target), "--no-cache")
    finally:
        if locked.returncode == 0:
            subprocess.run(["chattr", "-i", str(target / ".git")], check=True)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "jobs/new.yaml:2: error: not valid YAML" in proc.stdout  # (where `[` opens)
    assert "(the work tree, with changes not committed)" in proc.stdout
    assert sorted(str(p.relative_to(target)) for p in (target / ".git").rglob("*")) == before


def test_validate_where_the_work_tree_cannot_be_read_checks_head_and_says_so(
        tmp_path: Path) -> None:
    """A repository with no commit inside the work tree: git cannot add it;
    the commit is checked, and validate says the work tree was not."""
    target = tmp_path / "fleet"
    assert fleetq("init", str(target)).returncode == 0
    git(target / "jobs", "init", "-q", "nested")
    proc = fleetq("validate", "--repo", str(target))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert "the work tree could not be read (" in proc.stderr and "checking HEAD" in proc.stderr
    assert "work tree" not in proc.stdout


def test_now_without_a_time_zone_is_refused(seed_fleet: SeedFleet) -> None:
    """RFC 3339 has no local times: ``--now 2026-11-29T11:00:00`` used to be
    read as UTC, which on a clock eight hours ahead enqueues and ages every
    job eight hours off."""
    proc = fleetq("reconcile", "--repo", str(seed_fleet.path), "--now", "2026-11-29T11:00:00")
    assert proc.returncode == 2
    assert "has no time zone; add Z for UTC or an offset" in proc.stderr
    assert "2026-11-29T11:00:00Z" in proc.stderr
    assert git(seed_fleet.path, "rev-parse", "--verify", "--quiet", STATE, check=False) == ""
    proc = fleetq("plan", "--repo", str(seed_fleet.path), "--now", "2026-11-29T19:00:00+08:00")
    assert proc.returncode == 0, proc.stderr
    # a date alone, an empty $NOW, ISO 8601's other forms: not RFC 3339 (the hint for a
    # date alone used to be refused in turn)
    for text in ("2026-11-29", "", "20261129T110000Z", "2026-W48-7T11:00Z", "2026-13-01T00:00:00Z"):
        proc = fleetq("plan", "--repo", str(seed_fleet.path), "--now", text)
        assert proc.returncode == 2, (text, proc.stdout)
        assert (f"--now {text!r} is not an RFC 3339 time: a date and a time of day with a zone, "
                f"e.g. 2026-11-29T11:00:00Z") in proc.stderr
    for text in ("2026-11-29t11:00:00z", "2026-11-29 11:00:00Z"):
        assert fleetq("plan", "--repo", str(seed_fleet.path), "--now", text).returncode == 0


# Libraries a command imports only when it uses them: on a small fleet, starting
# the process is most of a command's time.
LATE = ("jinja2", "watchdog", "multiprocessing")


def _run_and_list_late(cwd: Path, *args: str) -> tuple[int, set[str]]:
    """Run the command in a new process; its exit code and the ``LATE``
    libraries imported by its end."""
    code = ("import sys\nfrom reconciler import cli\ncode = cli.main(sys.argv[1:])\n"
            f"print(code, *sorted(m for m in {LATE!r} if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.splitlines()[-1].split()
    return int(last[0]), set(last[1:])


def test_a_command_imports_jinja2_watchdog_and_multiprocessing_only_when_it_uses_them(
        tmp_path: Path) -> None:
    target = tmp_path / "fleet"
    assert fleetq("init", str(target)).returncode == 0
    assert _run_and_list_late(target, "validate") == (0, set())
    # a commit: its message is rendered from a Jinja2 template (a small fleet's
    # work is never split between two processes)
    assert _run_and_list_late(target, "reconcile", "--now", NOW) == (0, {"jinja2"})
    assert git(target, "rev-parse", "--verify", "--quiet", STATE).strip()
    for args in (["status"], ["queue"], ["explain", "tokenizer-ablation"],
                 ["reconcile", "--now", NOW]):  # (no change: no commit)
        assert _run_and_list_late(target, *args) == (0, set()), args


def test_progress_goes_to_a_terminal_only(seed_fleet: SeedFleet) -> None:
    """Progress lines are written to stderr when it is a terminal, never to a pipe."""
    import os
    import pty
    import subprocess
    import sys

    from .conftest import REPO_ROOT

    piped = fleetq("reconcile", "--repo", str(seed_fleet.path), "--now", NOW)
    assert piped.returncode == 0, piped.stderr
    assert "scheduling" not in piped.stderr and "\r" not in piped.stderr

    no_state(seed_fleet.path)
    leader, follower = pty.openpty()
    proc = subprocess.run(
        [sys.executable, "-m", "reconciler.cli", "reconcile", "--repo", str(seed_fleet.path),
         "--now", NOW], cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=follower, timeout=60,
        check=False, env=dict(os.environ, COLUMNS="24"))
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed: all read
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert proc.returncode == 0
    text = shown.decode()
    for step in ("reading source commit", "scheduling", "rendering", "writing the state tree"):
        assert step in text, text
    assert text.endswith("\r\x1b[K")  # the last line is cleared: the terminal is left clean
    # (each line within the terminal's 24 columns: wrapped, its first part would stay)
    lines = [line.removeprefix("\x1b[K") for line in text.split("\r")]
    assert max(len(line) for line in lines) <= 23, lines
    assert any(line.endswith("…") for line in lines), lines
    assert "admitted" in proc.stdout.decode()  # the summary still goes to stdout


def test_the_command_ends_with_its_output_flushed_and_every_object_written(
        seed_fleet: SeedFleet) -> None:
    """``run`` ends the process without freeing what the command built: its
    output must be out, and objects written by another thread in the repo
    (here every blob, as if each were large) before it ends."""
    script = ("import sys, reconciler.gitops.repo as r, reconciler.cli as c\n"
              "r.BEHIND_MIN_BYTES = 1\nc.run()\n")

    def command(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", script, *args], cwd=REPO_ROOT,
                              env=_buffered(), capture_output=True, text=True, timeout=60,
                              check=False)

    proc = command("reconcile", "--repo", str(seed_fleet.path), "--now", NOW, "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("committed ")
    assert [i["job"]["name"] for i in json.loads(proc.stdout)] == ["pytorch-test"]
    assert proc.stdout.endswith("]\n")  # (the last write too)
    fsck = subprocess.run(["git", "fsck", "--full", "--no-dangling"], cwd=seed_fleet.path,
                          capture_output=True, text=True, check=False)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    assert placements(seed_fleet.path)["default/pytorch-test"]["phase"] == "Admitted"
    failed = command("status", "--repo", str(seed_fleet.path / "nowhere"))
    assert failed.returncode == 2 and "Traceback" not in failed.stderr, failed.stderr


def test_output_cut_short_by_a_closed_pipe_is_no_error(seed_fleet: SeedFleet) -> None:
    seed_fleet.reconcile()
    child = subprocess.Popen([sys.executable, "-m", "reconciler.cli", "status", "--repo",
                              str(seed_fleet.path), "-o", "yaml"], cwd=REPO_ROOT,
                             env=_buffered(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # as `fleetq status | head -0` would
    err = child.stderr.read().decode()
    assert child.wait(timeout=60) == 0, err
    assert "Traceback" not in err and "Exception ignored" not in err


@pytest.mark.parametrize(("args", "stream", "code"), [
    (("validate", "-o", "json"), "stdout", 1), (("validate",), "stderr", 1),
    (("plan", "--exit-code", "-o", "json"), "stdout", 1), (("status",), "stdout", 0)])
def test_output_cut_short_by_a_closed_pipe_keeps_the_exit_code(
        seed_fleet: SeedFleet, args: tuple[str, ...], stream: str, code: int) -> None:
    """`set -o pipefail; fleetq validate | head -1` in CI: a closed pipe made
    every command exit 0, so a broken fleet (or a plan with changes) passed."""
    seed_fleet.reconcile()
    # (more output than a stream's buffer holds: it is written before the command ends)
    write_files(seed_fleet.path, {f"jobs/default/broken-{i:03}.yaml": "kind: [\n"
                                  for i in range(300)})
    write_files(seed_fleet.path, {f"jobs/default/new-{i:03}.yaml": pytorchjob(f"new-{i:03}")
                                  for i in range(300)})
    commit_all(seed_fleet.path, "broken files, and new jobs")
    pipe = {stream: subprocess.PIPE}
    child = subprocess.Popen([sys.executable, "-m", "reconciler.cli", *args, "--repo",
                              str(seed_fleet.path), *(("--now", NOW) if "plan" in args else ())],
                             cwd=REPO_ROOT, env=_buffered(), **pipe,  # type: ignore[call-overload]
                             **{("stderr" if stream == "stdout" else "stdout"): subprocess.PIPE})
    closed, other = (child.stdout, child.stderr) if stream == "stdout" else \
        (child.stderr, child.stdout)
    assert closed is not None and other is not None
    closed.close()  # as `| head -0` would
    said = other.read().decode()
    assert child.wait(timeout=60) == code, said
    assert "Traceback" not in said and "Exception ignored" not in said


def _buffered() -> dict[str, str]:
    """The environment, with Python's output buffered as it is by default."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def test_main_in_process_keeps_nothing_to_the_end(seed_fleet: SeedFleet) -> None:
    """Only ``run`` (the ``fleetq`` command) leaves values to the end of the
    process; ``main`` called in a long-lived process frees them as usual."""
    assert cli.main(["reconcile", "--repo", str(seed_fleet.path), "--now", NOW, "-q",
                     "-o", "none"]) == 0
    assert cli._KEPT == []
    assert gc.isenabled()


def test_explain_tells_why_a_job_waits_as_text_and_json(seed_fleet: SeedFleet) -> None:
    _queued_seed(seed_fleet)
    repo = str(seed_fleet.path)
    status = json.loads(fleetq("status", "--repo", repo, "-o", "json").stdout)
    item = next(i for i in status if i["job"]["name"] == "pytorch-second")
    reason = item["reason"]
    proc = fleetq("explain", "pytorch-second", "--repo", repo, "--now", "2026-11-29T11:30:00Z")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "PyTorchJob default/pytorch-second is Queued, position 1 in queue " \
                       "root/child-2."
    assert lines[1] == f"Reason: {reason}"  # the reason the state branch shows
    assert len(lines) > 2 and all(line.startswith("- ") for line in lines[2:]), lines
    proc = fleetq("explain", "default/pytorch-second", "--repo", repo, "-o", "json",
                  "--now", "2026-11-29T11:30:00Z")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    # one level: the job's item as `status -o json` lists it, and what explain says of it
    assert out == {**item, "explanation": lines}
    assert out["job"] == {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                          "namespace": "default", "name": "pytorch-second"}
    assert list(out)[:2] == ["job", "source"] and list(out)[-1] == "explanation"
    proc = fleetq("explain", "default/pytorch-second", "--repo", repo, "-o", "yaml",
                  "--now", "2026-11-29T11:30:00Z")
    assert proc.returncode == 0 and yaml.safe_load(proc.stdout) == out, proc.stderr


def test_commands_that_print_data_give_the_same_document_as_json_and_yaml(
        seed_fleet: SeedFleet) -> None:
    """``-o json`` and ``-o yaml`` are the same data, stdout holding the
    document alone, for every command that takes them."""
    _queued_seed(seed_fleet)
    repo = str(seed_fleet.path)
    for command in (["validate"], ["plan", "--now", NOW], ["status"], ["queue"],
                    ["explain", "pytorch-second", "--now", NOW]):
        as_json = fleetq(*command, "--repo", repo, "-o", "json")
        as_yaml = fleetq(*command, "--repo", repo, "-o", "yaml")
        assert as_json.returncode == as_yaml.returncode == 0, as_json.stderr + as_yaml.stderr
        assert json.loads(as_json.stdout) == yaml.safe_load(as_yaml.stdout), command
        assert as_yaml.stdout.strip() and not as_yaml.stdout.startswith("{"), command


def test_demo_tells_a_bad_now_before_it_does_anything() -> None:
    proc = fleetq("demo", "--now", "garbage")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("fleetq: --now 'garbage' is not an RFC 3339 time"), proc.stderr


def test_demo_has_no_repo_option() -> None:
    """The demo always runs on the bundled template, in a temporary repo."""
    proc = fleetq("demo", "--repo", "/tmp/anywhere")
    assert proc.returncode == 2 and "unrecognized arguments: --repo" in proc.stderr
    assert "--repo" not in fleetq("demo", "--help").stdout


def test_explain_of_a_job_whose_new_file_does_not_parse_names_the_file(
        seed_fleet: SeedFleet) -> None:
    """A job pushed with a YAML typo is in no decision (its file names no job
    fleetq can read): explain of it said only that no job has that name, and
    to look in `fleetq status`, which lists it neither. It names the file and
    its error; of another name, how many files hold no readable job."""
    repo = str(seed_fleet.path)
    typo = pytorchjob("typo").replace("  pytorchReplicaSpecs:\n", "  pytorchReplicaSpecs: [\n")
    write_files(seed_fleet.path, {"jobs/default/typo.yaml": typo})
    commit_all(seed_fleet.path, "a job with a typo")
    proc = fleetq("explain", "typo", "--repo", repo, "--now", NOW)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("fleetq: no job named 'typo' in ")
    assert ": jobs/default/typo.yaml names it, but fleetq cannot read it there (line " in \
        proc.stderr
    assert "not valid YAML" in proc.stderr, proc.stderr
    proc = fleetq("explain", "other", "--repo", repo, "--now", NOW)
    assert proc.returncode == 2 and "1 file there has errors, or jobs fleetq does not read" \
        in proc.stderr, proc.stderr
    # a later document of a file of several, a flow mapping, a job in JSON
    first, second = pytorchjob("first"), pytorchjob("second")
    write_files(seed_fleet.path, {
        "jobs/default/typo.yaml": first + "---\n" + second.replace(
            "  pytorchReplicaSpecs:\n", "  pytorchReplicaSpecs: [\n"),
        "jobs/default/flow.yaml": "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\n"
                                  "metadata: {name: flow, namespace: default\n",
        "jobs/default/as-json.json": json.dumps(yaml.safe_load(pytorchjob("as-json")))})
    commit_all(seed_fleet.path, "more typos")
    for name, path in (("second", "typo.yaml"), ("flow", "flow.yaml"),
                       ("as-json", "as-json.json")):
        proc = fleetq("explain", name, "--repo", repo, "--now", NOW)
        assert proc.returncode == 2 and f": jobs/default/{path} names it, but fleetq cannot " \
            f"read it there (line " in proc.stderr, proc.stderr


@pytest.mark.parametrize("name", [
    "pytorchjob/pytorch-test", "PyTorchJobs/pytorch-test", "pytorchjob.kubeflow.org/pytorch-test",
    "pytorchjobs.kubeflow.org/default/pytorch-test", "default/pytorch-test",
    "pytorchjobs.v1.kubeflow.org/pytorch-test"])
def test_a_job_is_named_as_kubectl_names_it(seed_fleet: SeedFleet, name: str) -> None:
    """``kubectl get pytorchjob/x``, plural kinds and kinds with their group
    named no job; ``-n`` was refused by explain."""
    seed_fleet.reconcile()
    repo = str(seed_fleet.path)
    for args in ((name,), ("-n", "default", name.rsplit("/", 1)[-1])):
        proc = fleetq("explain", *args, "--repo", repo, "--now", NOW)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith("PyTorchJob default/pytorch-test is Admitted"), proc.stdout
    proc = fleetq("status", name, "--repo", repo, "-o", "json")
    assert proc.returncode == 0, proc.stderr
    assert [i["job"]["name"] for i in json.loads(proc.stdout)] == ["pytorch-test"]
    # another API group, or another kind, names none
    for wrong in ("pytorchjob.ray.io/pytorch-test", "job.kubeflow.org/default/pytorch-test",
                  "rayjob/pytorch-test"):
        proc = fleetq("explain", wrong, "--repo", repo, "--now", NOW)
        assert proc.returncode == 2 and "no job named" in proc.stderr, (wrong, proc.stderr)


def test_a_name_that_names_no_job_is_told_the_closest(seed_fleet: SeedFleet) -> None:
    """A typo, or the generateName prefix a job was written with (the API
    server, and fleetq, add 5 characters to it)."""
    seed_fleet.reconcile()
    write_files(seed_fleet.path, {"jobs/default/gen.yaml": pytorchjob("x").replace(
        "  name: x\n", "  generateName: sweep-\n")})
    commit_all(seed_fleet.path, "a job named by its generateName")
    repo = str(seed_fleet.path)
    for command, name, meant in (
            ("explain", "pytorch-tset", "PyTorchJob/default/pytorch-test"),
            ("status", "pytorch-tset", "PyTorchJob/default/pytorch-test"),
            ("explain", "sweep-", "PyTorchJob/default/sweep-")):
        proc = fleetq(command, name, "--repo", repo, *(("--now", NOW) if command == "explain"
                                                        else ()))
        if command == "status":  # (the state still has the source before the new job)
            assert proc.returncode == 2 and f"(did you mean {meant}?)" in proc.stderr, \
                proc.stderr
            continue
        assert proc.returncode == 2 and f"(did you mean {meant}" in proc.stderr, proc.stderr
    proc = fleetq("explain", "nothing-like-it", "--repo", repo, "--now", NOW)
    assert proc.returncode == 2 and "did you mean" not in proc.stderr
    proc = fleetq("explain", "PYTORCH-TEST", "--repo", repo, "--now", NOW)  # (names are lower)
    assert proc.returncode == 2 and "(did you mean PyTorchJob/default/pytorch-test?)" in \
        proc.stderr, proc.stderr
    proc = fleetq("explain", "pytorchjob/default/pytorch-test", "-n", "other", "--repo", repo,
                  "--now", NOW)
    assert proc.returncode == 2 and "names namespace 'default', and -n 'other'" in proc.stderr


def test_explain_names_an_unknown_or_ambiguous_job_as_a_usage_error(
        seed_fleet: SeedFleet) -> None:
    repo = str(seed_fleet.path)
    proc = fleetq("explain", "no-such-job", "--repo", repo, "--now", NOW)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "no job named 'no-such-job'" in proc.stderr and "fleetq status" in proc.stderr
    write_files(seed_fleet.path, {"jobs/other/pytorch-test.yaml": pytorchjob(
        "pytorch-test", namespace="other")})
    commit_all(seed_fleet.path, "the same name in another namespace")
    proc = fleetq("explain", "pytorch-test", "--repo", repo, "--now", NOW)
    assert proc.returncode == 2, proc.stdout
    assert ("'pytorch-test' is ambiguous (PyTorchJob/default/pytorch-test, "
            "PyTorchJob/other/pytorch-test); name it as one of these (KIND/NAMESPACE/NAME)"
            ) in proc.stderr
    proc = fleetq("explain", "default/pytorch-test", "--repo", repo, "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert "\nPyTorchJob default/pytorch-test is Admitted on cf-hz-a." in "\n" + proc.stdout
    # a Job of the same name and namespace: the kind tells them apart (in any case)
    write_files(seed_fleet.path, {"jobs/default/batch.yaml": """\
apiVersion: batch/v1
kind: Job
metadata: {name: pytorch-test, namespace: default}
spec:
  template:
    spec:
      containers: [{name: main, image: busybox, resources: {requests: {cpu: "1"}}}]
"""})
    commit_all(seed_fleet.path, "a Job named as the PyTorchJob")
    proc = fleetq("explain", "default/pytorch-test", "--repo", repo, "--now", NOW)
    assert proc.returncode == 2 and "Job/default/pytorch-test" in proc.stderr
    for name, kind in (("pytorchjob/default/pytorch-test", "PyTorchJob"),
                       ("Job/default/pytorch-test", "Job")):
        proc = fleetq("explain", name, "--repo", repo, "--now", NOW)
        assert proc.returncode == 0, proc.stderr
        assert f"\n{kind} default/pytorch-test is " in "\n" + proc.stdout, proc.stdout
    proc = fleetq("explain", "a/b/c/d", "--repo", repo, "--now", NOW)
    assert proc.returncode == 2 and "KIND/NAMESPACE/NAME" in proc.stderr


def _forked(pid: int) -> list[int]:
    """The processes ``pid`` forked (not the git commands it runs, once they run)."""
    out = subprocess.run(["ps", "-o", "pid=,comm=", "--ppid", str(pid)], capture_output=True,
                         text=True, check=False).stdout
    return [int(line.split()[0]) for line in out.splitlines()
            if line.split() and line.split()[-1] != "git"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_reconcile_stopped_while_two_processes_parse_ends_at_once_and_writes_nothing(
        tmp_path: Path, sig: signal.Signals) -> None:
    """CI cancels a job with SIGTERM, a person with Ctrl-C: the reconcile ends
    (128 + the signal), its forked process with it, no traceback, no state
    commit; it used to wait for ever on its forked process."""
    from benchmarks.generate import generate_fleet

    repo = tmp_path / "fleet"
    # (enough files that the parse outlasts a loaded machine's delays before the signal)
    generate_fleet(repo, jobs=8000, clusters=4, nodes_per_cluster=4, leaf_quotas=8, seed=5)
    child = subprocess.Popen([sys.executable, "-m", "reconciler.cli", "reconcile", "--repo",
                              str(repo), "-q"], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    started = time.monotonic()
    forked: list[int] = []
    while not forked and child.poll() is None and time.monotonic() < started + 60:
        time.sleep(0.01)  # until it forks: the other half of the parse
        if seen := _forked(child.pid):  # (not a git command between fork and exec)
            time.sleep(0.2)
            forked = sorted(set(seen) & set(_forked(child.pid)))
    if not forked:
        child.kill()
        out, err = child.communicate()
        raise AssertionError(f"it forked no process to parse half of the files "
                             f"(it ended {child.returncode} after "
                             f"{time.monotonic() - started:.1f} s): {out}{err}")
    child.send_signal(sig)
    _, err = child.communicate(timeout=30)
    assert child.returncode == 128 + sig, err
    assert "fleetq: " in err and "Traceback" not in err, err
    for pid in forked:
        deadline = time.monotonic() + 10
        while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not os.path.exists(f"/proc/{pid}"), f"its forked process {pid} is still there"
    assert rev(repo, STATE) is None


def test_a_ctrl_c_while_fleetq_loads_is_told_as_an_interrupt_not_a_traceback() -> None:
    """Ctrl-C a moment after the command starts lands while Python imports
    fleetq: it printed a traceback from the imports. (The interrupt is raised
    at the import of one of fleetq's modules: the moment a person's Ctrl-C
    cannot be timed to.)"""
    interrupt = ("import sys\n"
                 "class Interrupt:\n"
                 "    @staticmethod\n"
                 "    def find_spec(name, path=None, target=None):\n"
                 "        if name == 'reconciler.core.explain':\n"
                 "            raise KeyboardInterrupt\n"
                 "sys.meta_path.insert(0, Interrupt)\n"
                 "sys.argv = ['fleetq', 'status']\n"
                 "from reconciler.command import main\n"
                 "main()\n")
    proc = subprocess.run([sys.executable, "-c", interrupt], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr == "\nfleetq: interrupted\n", proc.stderr
    installed = Path(sys.executable).parent / "fleetq"  # (the command pip made, if any)
    if installed.exists():
        assert "from reconciler.command import main" in installed.read_text()


def test_a_state_branch_people_work_on_is_told_by_validate_and_refused_by_every_command(
        tmp_path: Path) -> None:
    """``stateBranch: main`` (the source branch) passed validate; reconcile
    refused it, but status, queue, plan and explain said the state "cannot be
    read back" and advised ``git update-ref`` of it: a reset of the source
    branch. Validate tells it at its line; each command gives reconcile's
    refusal. A branch checked out in another work tree likewise."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    fleet_yaml = (path / "fleet.yaml").read_text()
    write_files(path, {"fleet.yaml": fleet_yaml.replace("stateBranch: fleetq/state",
                                                        "stateBranch: main")})
    commit_all(path, "the state on the source branch")
    head = rev(path, "main")
    line = next(n for n, text in enumerate(fleet_yaml.splitlines(), 1) if "stateBranch:" in text)
    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 1, proc.stdout
    assert (f"fleet.yaml:{line}: error: spec.stateBranch 'main' is the source branch (HEAD): "
            f"fleetq would replace its files with the rendered state; set spec.stateBranch "
            f"in fleet.yaml") in proc.stdout, proc.stdout
    refusal = "the state branch 'main' is the source branch (HEAD)"
    for command in (["reconcile", "--now", NOW], ["status"], ["queue"], ["plan", "--now", NOW],
                    ["explain", "tokenizer-ablation", "--now", NOW]):
        proc = fleetq(*command, "--repo", str(path))
        assert proc.returncode == 2 and refusal in proc.stderr, (command, proc.stderr)
        assert "update-ref" not in proc.stderr and "cannot be read back" not in proc.stderr
    assert rev(path, "main") == head

    git(path, "worktree", "add", "-q", "-b", "ops", str(tmp_path / "ops"))
    write_files(path, {"fleet.yaml": fleet_yaml.replace("stateBranch: fleetq/state",
                                                        "stateBranch: ops")})
    commit_all(path, "the state on a branch checked out")
    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 1 and (
        f"fleet.yaml:{line}: error: spec.stateBranch 'ops' is checked out in "
        f"{tmp_path / 'ops'}: fleetq writes it") in proc.stdout, proc.stdout
    for command in (["status"], ["plan", "--now", NOW]):
        proc = fleetq(*command, "--repo", str(path))
        assert proc.returncode == 2 and "'ops' is checked out in" in proc.stderr, proc.stderr
        assert "update-ref" not in proc.stderr

    # fleetq's own branch again: valid
    write_files(path, {"fleet.yaml": fleet_yaml})
    commit_all(path, "back to fleetq/state")
    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 0, proc.stdout


def test_queue_lists_jobs_placed_by_capacity_alone_after_the_queues(tmp_path: Path) -> None:
    """A job whose policy has no suspension.scheduling waits in no quota queue:
    ``fleetq queue`` lists it after the queues, as waiting by capacity."""
    def pinned(policy: str, to: str) -> str:
        return policy.replace("  placement:\n",
                              f"  placement:\n    clusterAffinity:\n      clusterNames: [{to}]\n")
    capacity = QUEUED_CLUSTER_POLICY.replace("name: queued-gang", "name: by-capacity").replace(
        "  suspension:\n    scheduling: true\n", "").replace(
        "kind: ClusterPropagationPolicy", "kind: PropagationPolicy").replace(
        "  name: by-capacity\n", "  name: by-capacity\n  namespace: sandbox\n")
    path = make_fleet_repo(tmp_path / "fleet", {
        "quota/tree.yaml": one_leaf_tree("64", "256Gi", namespaces="default, sandbox"),
        "clusters/c1.yaml": member_cluster("c1", cpu="6"),
        "clusters/c2.yaml": member_cluster("c2", cpu="6"),
        "policies/queued.yaml": pinned(QUEUED_CLUSTER_POLICY, "c2"),
        "policies/by-capacity.yaml": pinned(capacity, "c1"),
        **{f"jobs/{name}.yaml": pytorchjob(name, namespace=ns, cpu="2")
           for name, ns in (("cap-1", "sandbox"), ("cap-2", "sandbox"),
                            ("q-1", "default"), ("q-2", "default"))}})
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    proc = fleetq("queue", "--repo", str(path))
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines()[1:]]
    assert [(row[0], row[1]) for row in rows] == [("root/team", "1"), ("-", "(by")], proc.stdout
    assert rows[1][2:5] == ["capacity)", "-", "sandbox"], proc.stdout


def test_a_rendered_namespace_is_never_pruned_by_argo_cd_or_flux(tmp_path: Path) -> None:
    """A Namespace leaves a cluster's folder with the last job placed in it there;
    a sync that prunes must not delete it (and all else in it) from the cluster."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    text = git(path, "show", f"{STATE}:clusters/gpu-bj-b/interns/namespace-interns.yaml")
    meta = yaml.safe_load(text)["metadata"]
    assert meta["annotations"] == {"argocd.argoproj.io/sync-options": "Prune=false",
                                   "kustomize.toolkit.fluxcd.io/prune": "disabled"}
    assert meta["labels"]["fleetq.io/managed-by"] == "fleetq"


def test_every_member_cluster_keeps_its_folder_when_it_runs_nothing(tmp_path: Path) -> None:
    """An Argo CD or Flux application points at ``clusters/<cluster>/``: with no
    job there (none yet, or the last one deleted) the folder stays, with an empty
    kustomization, so the sync prunes what it deployed rather than failing on a
    path that is not there."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    empty = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n"
    files = git(path, "ls-tree", "-r", "--name-only", STATE).split()
    assert "clusters/cpu-sh-c/kustomization.yaml" in files  # (no job placed there)
    assert git(path, "show", f"{STATE}:clusters/cpu-sh-c/kustomization.yaml") == empty
    git(path, "rm", "-q", "-r", "jobs")
    commit_all(path, "every job deleted")
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    files = git(path, "ls-tree", "-r", "--name-only", STATE).split()
    assert sorted(f for f in files if f.startswith("clusters/")) == [
        f"clusters/{c}/kustomization.yaml" for c in ("cpu-sh-c", "gpu-bj-b", "gpu-hz-a")]
    assert git(path, "show", f"{STATE}:clusters/gpu-bj-b/kustomization.yaml") == empty


def test_explain_of_a_commit_not_reconciled_yet_says_so_and_what_the_state_says(
        tmp_path: Path) -> None:
    """explain decides from HEAD: with a job deleted and not reconciled yet,
    it said "Queued, position 1" as a fact while the state branch (and the
    clusters) still had it second. It says what the state says meanwhile."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    told = fleetq("explain", "--repo", str(path), "tokenizer-ablation", "--now", NOW).stdout
    assert told.startswith("Note: there is no state yet; this is what the first reconcile of ")
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    told = fleetq("explain", "--repo", str(path), "tokenizer-ablation", "--now", NOW).stdout
    assert told.startswith("PyTorchJob text/tokenizer-ablation is Queued, position 2 "), told
    git(path, "rm", "-q", "jobs/text/llama-lora-sft.yaml")
    sha = commit_all(path, "llama-lora-sft is done")
    told = fleetq("explain", "--repo", str(path), "tokenizer-ablation", "--now", NOW).stdout
    assert told.startswith(
        f"Note: {sha[:12]} is not reconciled yet: below is what a reconcile would decide; the "
        f"state branch says Queued, position 2 in queue root/algorithm/text, and that is what "
        f"the clusters run until fleetq reconcile runs.\n\nPyTorchJob text/tokenizer-ablation "
        f"is Queued, position 1 "), told
    data = json.loads(fleetq("explain", "--repo", str(path), "tokenizer-ablation", "--now", NOW,
                             "-o", "json").stdout)
    assert data["notReconciled"]["source"] == sha
    assert data["notReconciled"]["state"]["position"] == 2 and data["position"] == 1
    assert data["notReconciled"]["state"]["job"] == data["job"]
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    data = json.loads(fleetq("explain", "--repo", str(path), "tokenizer-ablation", "--now", NOW,
                             "-o", "json").stdout)
    assert "notReconciled" not in data and data["position"] == 1
    # a push that changes no decision makes no state commit: nothing to note
    write_files(path, {"README.md": "notes\n"})
    commit_all(path, "notes")
    assert "no change" in fleetq("reconcile", "--repo", str(path), "--now", NOW).stdout
    told = fleetq("explain", "--repo", str(path), "tokenizer-ablation", "--now", NOW).stdout
    assert told.startswith("PyTorchJob text/tokenizer-ablation is Queued, position 1 "), told
    # an older commit, reconciled before: said to be older, not "not reconciled yet"
    told = fleetq("explain", "--repo", str(path), "tokenizer-ablation", "--now", NOW,
                  "--source", "HEAD~2").stdout
    assert told.startswith(
        f"Note: {rev(path, 'HEAD~2')[:12]} is older than {rev(path, 'HEAD~1')[:12]}, the commit "
        f"the state branch was made from: below is what a reconcile of "
        f"{rev(path, 'HEAD~2')[:12]} would decide; the state branch says Queued, position 1 "
        f"in queue root/algorithm/text, and that is what the clusters run.\n\n"
        f"PyTorchJob text/tokenizer-ablation is Queued, position 2 "), told


def test_explain_of_a_job_deleted_and_not_reconciled_yet_says_what_the_next_reconcile_does(
        tmp_path: Path) -> None:
    """A job whose file is deleted runs on until the next reconcile: explain
    said "no job named" while `fleetq status` listed it on its cluster."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    items = json.loads(fleetq("status", "--repo", str(path), "-o", "json").stdout)
    running = next(i for i in items if i["phase"] == "Admitted")
    waiting = next(i for i in items if i["phase"] == "Queued")
    for item in (running, waiting):
        git(path, "rm", "-q", item["source"]["path"])
    sha = commit_all(path, "two jobs are gone")
    job = running["job"]
    proc = fleetq("explain", "--repo", str(path), job["name"], "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        f"{job['kind']} {job['namespace']}/{job['name']} is Admitted on {running['cluster']} on "
        f"the state branch, but no file of {sha[:12]} defines it any more: the next reconcile "
        f"deletes it from {running['cluster']}, and frees its quota and room there.",
        f"It was defined at {running['source']['path']} (blob "
        f"{running['source']['blob'][:12]}): to keep it, restore that file, as it was."]
    job = waiting["job"]
    data = json.loads(fleetq("explain", "--repo", str(path), job["name"], "--now", NOW,
                             "-o", "json").stdout)
    assert data == {**waiting, "explanation": data["explanation"]}
    assert data["explanation"][0].endswith(
        f"the next reconcile drops it from queue {waiting['quota']} (nothing of it runs).")
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    proc = fleetq("explain", "--repo", str(path), job["name"], "--now", NOW)
    assert proc.returncode == 2 and "no job named" in proc.stderr, proc.stderr


def test_a_commit_dated_ahead_of_the_clock_enqueues_its_jobs_when_seen(
        seed_fleet: SeedFleet) -> None:
    """A runner whose clock is behind the commit's date (or a --now before it):
    the job is enqueued when first seen, never admitted before it was enqueued."""
    assert fleetq("reconcile", "--repo", str(seed_fleet.path), "--now",
                  "2026-11-29T09:30:00Z").returncode == 0  # (the commit: 10:00)
    item = placements(seed_fleet.path)["default/pytorch-test"]
    assert item["phase"] == "Admitted", item
    assert item["enqueuedAt"] == item["admittedAt"] == "2026-11-29T09:30:00Z", item
    write_files(seed_fleet.path, {"jobs/default/pytorch-second.yaml": pytorchjob(
        "pytorch-second")})
    commit_all(seed_fleet.path, "second job")
    assert fleetq("reconcile", "--repo", str(seed_fleet.path), "--now",
                  "2026-11-29T09:45:00Z").returncode == 0
    assert placements(seed_fleet.path)["default/pytorch-second"]["position"] == 1
    # A clock behind the state's own time (a runner's clock behind the one that
    # wrote it): said, and a second after the state's time taken, so that a job
    # new now queues behind those queued before it, even one whose name sorts
    # first (a tie of enqueue times goes by name).
    path = seed_fleet.path
    write_files(path, {"jobs/default/a-later.yaml": pytorchjob("a-later")})
    commit_all(path, "a later job")
    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T09:43:00Z")
    assert proc.returncode == 0 and "fleetq/state: warning: the clock (2026-11-29T09:43:00Z) " \
        "is behind the time of the state it goes on from (2026-11-29T09:45:00Z): it decides " \
        "at 2026-11-29T09:45:01Z" in proc.stderr, proc.stderr
    got = placements(path)
    assert (got["default/pytorch-second"]["position"], got["default/a-later"]["position"],
            got["default/a-later"]["enqueuedAt"]) == (1, 2, "2026-11-29T09:45:01Z"), got
    assert _committed_at(path) == "2026-11-29T09:45:01"
    # A state dated more than 5 minutes ahead of the clock: a wrong clock wrote it
    # (one that would hold every later state at its time, if followed): the clock
    # is, and the state it makes is dated by it.
    write_files(path, {"jobs/default/b-later.yaml": pytorchjob("b-later")})
    commit_all(path, "another job")
    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T09:30:00Z")
    assert proc.returncode == 0 and "fleetq/state: warning: the state it goes on from is " \
        "dated 2026-11-29T09:45:01Z, more than 5 minutes ahead of the clock " \
        "(2026-11-29T09:30:00Z): taken as written by a wrong clock, it decides at " \
        "2026-11-29T09:30:00Z" in proc.stderr, proc.stderr
    assert placements(path)["default/b-later"]["enqueuedAt"] == "2026-11-29T09:30:00Z"
    assert _committed_at(path) == "2026-11-29T09:30:00"
    # plan, which decides as reconcile would, says so too
    proc = fleetq("plan", "--repo", str(path), "--now", "2026-11-29T09:29:00Z")
    assert proc.returncode == 0 and "fleetq/state: warning: the clock (2026-11-29T09:29:00Z) " \
        "is behind the time of the state it goes on from (2026-11-29T09:30:00Z): it decides " \
        "at 2026-11-29T09:30:01Z" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def _committed_at(path: Path) -> str:
    """The state's commit time, to the second, in UTC."""
    return git(path, "log", "-1", "--format=%cI", STATE).strip()[:19]


def test_a_job_file_whose_path_is_not_utf8_is_shown_as_git_shows_it(tmp_path: Path) -> None:
    """git takes any bytes in a path. A job file named in Latin-1 stopped
    ``-o json`` with a traceback (a surrogate escape no UTF-8 terminal takes;
    raw bytes, no valid JSON, where the locale lets them through), a job of
    ``generateName`` there stopped reconcile and validate, and placements.yaml
    and the rendered job held an escape of a lone surrogate, which YAML readers
    refuse (read back without the cache, the state was "damaged"). Every
    output writes such a path as git does (``core.quotePath``)."""
    latin = {name: os.fsdecode(f"jobs/{name}\xe9.yaml".encode("latin-1"))
             for name in ("cafe", "sweep", "bad", "broken")}
    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": one_leaf_tree("16", "64Gi"), "policy.yaml": QUEUED_CLUSTER_POLICY,
        "clusters/c1.yaml": member_cluster("c1", cpu="16", memory="64Gi"),
        latin["cafe"]: pytorchjob("cafe", cpu="6"),  # (admitted: the one queued waits)
        latin["sweep"]: pytorchjob("x", cpu="3").replace("  name: x\n", "  generateName: sweep-\n"),
        latin["bad"]: with_priority(pytorchjob("bad"), "no-such-class"),
        latin["broken"]: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [}\n"})
    quoted = {name: git(path, "ls-files", file).strip() for name, file in latin.items()}
    assert quoted["cafe"] == '"jobs/cafe\\351.yaml"'  # (as git shows it: core.quotePath)
    strict = {"PYTHONIOENCODING": "utf-8:strict"}  # (a terminal in a UTF-8 locale)

    def run(*args: str, code: int = 0) -> str:
        proc = fleetq(*args, "--repo", str(path), env=strict)
        assert (proc.returncode, "Traceback" in proc.stderr) == (code, False), proc.stderr
        return proc.stdout

    items = json.loads(run("reconcile", "--now", NOW, "-o", "json"))
    by_name = {i["job"]["name"][:5]: i for i in items}
    assert {n: i["source"]["path"] for n, i in by_name.items()} == {
        n: quoted[n] for n in ("cafe", "sweep", "bad")}
    assert by_name["bad"]["reason"].startswith(f"{quoted['bad']}:")
    assert json.loads(run("status", "-o", "json")) == items
    assert yaml.safe_load(run("status", "-o", "yaml")) == items
    # (placements.yaml read back, as a clone with no cache reads it: the escape of
    # the path's byte written before made it a state that could not be read back)
    assert json.loads(run("status", "-o", "json", "--no-cache")) == items
    assert by_name["sweep"]["phase"] == "Queued" and by_name["cafe"]["phase"] == "Admitted"
    assert "cafe" in run("status", "-o", "wide") and "sweep-" in run("queue")
    assert json.loads(run("queue", "-o", "json")) == yaml.safe_load(run("queue", "-o", "yaml"))
    explained = json.loads(run("explain", "cafe", "--now", NOW, "-o", "json"))
    assert explained["source"]["path"] == quoted["cafe"]
    assert yaml.safe_load(run("explain", "cafe", "--now", NOW, "-o", "yaml")) == explained
    problems = json.loads(run("validate", "-o", "json", code=1))
    assert {p["path"] for p in problems if p["severity"] == "error"} == {
        quoted["broken"], quoted["bad"]}
    assert yaml.safe_load(run("validate", "-o", "yaml", code=1)) == problems
    assert f"\n{quoted['broken']}:3: error: " in "\n" + run("validate", code=1)
    plan = json.loads(run("plan", "--now", NOW, "-o", "json"))
    assert plan["changed"] is False and plan == yaml.safe_load(run("plan", "--now", NOW,
                                                                   "-o", "yaml"))
    # the state branch's files: valid UTF-8 (read as text), the path as git shows it
    assert [i["source"]["path"] for i in state_yaml(path, "placements.yaml")["items"]] == [
        i["source"]["path"] for i in items]
    rendered = state_yaml(path, "clusters/c1/default/pytorchjob-cafe.yaml")
    assert rendered["metadata"]["annotations"]["fleetq.io/source"] == quoted["cafe"]


TAINTED = "  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]\n"
RULED_OUT = {  # case -> (the policy's placement lines, told, placement lines that fix it)
    "a taint it does not tolerate": (
        "", "it has taint dedicated=gpu:NoSchedule, which the policy does not tolerate (add "
        "{key: dedicated, operator: Equal, value: gpu, effect: NoSchedule} to its "
        "spec.placement.clusterTolerations)",
        "    clusterTolerations: [{key: dedicated, value: gpu, effect: NoSchedule}]\n"),
    "its clusterAffinity's names": (
        "    clusterAffinity: {clusterNames: [c1]}\n",
        "the policy's clusterAffinity.clusterNames (c1) does not name it (add it there)",
        "    clusterAffinity: {clusterNames: [c1, c2]}\n"),
}


@pytest.mark.parametrize("case", RULED_OUT)
def test_explain_names_a_cluster_with_room_its_policy_rules_out(tmp_path: Path,
                                                                 case: str) -> None:
    """c1, the one candidate, is full; c2, idle, is one the job's policy
    rules out (a taint it does not tolerate, or its clusterAffinity). Explain
    told c1's room alone; the policy changed as it now says, the next
    reconcile admits the job on c2."""
    placement, told, fixed = RULED_OUT[case]
    taints = TAINTED if not placement else ""

    def policy(lines: str) -> str:
        return QUEUED_CLUSTER_POLICY.replace("  placement:\n", f"  placement:\n{lines}")

    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": one_leaf_tree("64", "256Gi"), "policy.yaml": policy(placement),
        "clusters/c1.yaml": member_cluster("c1", cpu="4"),
        "clusters/c2.yaml": member_cluster("c2", cpu="4", extra=taints)})
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    write_files(path, {"jobs/run.yaml": batchjob("run", cpu="4")})
    commit_all(path)
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    write_files(path, {"jobs/wait.yaml": batchjob("wait", cpu="4")})
    commit_all(path)
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    assert placements(path)["default/run"]["cluster"] == "c1"
    assert placements(path)["default/wait"]["phase"] == "Queued"
    proc = fleetq("explain", "--repo", str(path), "wait", "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert (f"- cluster c2 has room for it now, but its policy ClusterPropagationPolicy "
            f"queued-gang rules it out: {told}") in proc.stdout.splitlines(), proc.stdout

    write_files(path, {"policy.yaml": policy(fixed)})
    commit_all(path)
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    assert placements(path)["default/wait"]["cluster"] == "c2"


def test_explain_names_no_cluster_where_the_pods_would_never_run(tmp_path: Path) -> None:
    """c2, ruled out by a taint, checks its free sum alone (no
    resourceReservation), and has 4 cpu free in two nodes of 2: the job's
    one 4-cpu pod never runs there. Explain told it to tolerate the taint,
    which places it there, its free sum the one fit now, to stay Pending
    (told in its reason): it tells c2 no more."""
    placement, _, fixed = RULED_OUT["a taint it does not tolerate"]

    def policy(lines: str) -> str:
        return QUEUED_CLUSTER_POLICY.replace("  placement:\n", f"  placement:\n{lines}")

    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": one_leaf_tree("64", "256Gi"), "policy.yaml": policy(placement),
        "clusters/c1.yaml": member_cluster("c1", cpu="4"),
        "clusters/c2.yaml": member_cluster("c2", cpu="2", nodes=2, reservation=False,
                                           extra=TAINTED),
        "jobs/run.yaml": batchjob("run", cpu="4")})
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    write_files(path, {"jobs/wait.yaml": batchjob("wait", cpu="4")})
    commit_all(path)
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    assert placements(path)["default/run"]["cluster"] == "c1"
    proc = fleetq("explain", "--repo", str(path), "wait", "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert "cluster c2" not in proc.stdout, proc.stdout
    write_files(path, {"policy.yaml": policy(fixed)})
    commit_all(path)
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    wait = placements(path)["default/wait"]
    assert (wait["phase"], wait["cluster"]) == ("Admitted", "c2")
    assert "but its pods may never run there: no node holds a main pod" in wait["reason"]


def test_an_installed_wheel_holds_the_fleet_template(tmp_path: Path) -> None:
    """``pip install .`` (not -e) left the template out: fleetq init and fleetq
    demo said it was not installed. The wheel holds every file of it, where
    ``template_dir`` looks."""
    source = tmp_path / "fleetq"  # (a copy: a build/ left in the checkout would be reused)
    shutil.copytree(REPO_ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                           str(tmp_path), str(source)], capture_output=True, text=True,
                          check=False, timeout=600)
    if proc.returncode != 0:
        pytest.skip(f"no wheel could be built here (its build needs setuptools from the "
                    f"package index): {proc.stderr.strip()[-300:]}")
    [wheel] = tmp_path.glob("fleetq-*.whl")
    template = REPO_ROOT / "fleet-repo-template"
    wanted = {f"reconciler/fleet-repo-template/{p.relative_to(template).as_posix()}"
              for p in template.rglob("*") if p.is_file()}
    with zipfile.ZipFile(wheel) as whl:
        held = set(whl.namelist())
    assert len(wanted) > 10 and wanted <= held, sorted(wanted - held)
    assert cli.template_dir().resolve() == template.resolve()
