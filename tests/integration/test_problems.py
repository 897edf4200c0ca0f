"""Bad input is reported as path:line and never stops the rest of the fleet."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler import pipeline
from reconciler.core.cycle import queue_order
from reconciler.core.model import Decision, Phase
from reconciler.fleet.inputs import FleetInputs
from reconciler.fleet.jobs import JobSource
from reconciler.pipeline import queue_jumps
from tests.builders import job, policy, quota_tree_yaml

from .conftest import (
    NOW,
    QUEUED_CLUSTER_POLICY,
    RENDERED_SEED,
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
    pytorchjob,
    reconciled_template,
    rev,
    run_reconcile,
    seed_fleet_files,
    state_show,
    state_yaml,
    with_priority,
    write_files,
)

BROKEN_YAML = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: broken: yes
  namespace: default
spec: {}
"""
BROKEN_YAML_LINE = 4


def _bad_inputs() -> dict[str, str]:
    return {
        "jobs/default/broken.yaml": BROKEN_YAML,
        "jobs/default/two.yaml": pytorchjob("two", replicas_text='"two"'),
        "jobs/default/lots.yaml": pytorchjob("lots", cpu="lots"),
        "jobs/default/fine.yaml": pytorchjob("fine"),
    }


def test_bad_files_are_reported_with_path_and_line_and_the_rest_reconciles(
        tmp_path: Path) -> None:
    files = {**seed_fleet_files(), **_bad_inputs()}
    path = make_fleet_repo(tmp_path / "fleet", files)
    two_line = line_of(files["jobs/default/two.yaml"], 'replicas: "two"')
    lots_line = line_of(files["jobs/default/lots.yaml"], '"lots"')

    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T11:00:00Z")
    assert proc.returncode == 0, proc.stderr
    assert f"jobs/default/broken.yaml:{BROKEN_YAML_LINE}:" in proc.stderr
    assert f"jobs/default/two.yaml:{two_line}:" in proc.stderr
    assert f"jobs/default/lots.yaml:{lots_line}:" in proc.stderr

    items = placements(path)
    # Every other job is still reconciled: same enqueue time, so name order decides
    # which of the two valid jobs takes child-2's single job slot (max-jobs 1).
    assert items["default/fine"]["phase"] == "Admitted"
    assert items["default/pytorch-test"]["phase"] == "Queued"
    assert items["default/pytorch-test"]["position"] == 1
    assert items["default/two"]["phase"] == "Invalid"
    assert f"jobs/default/two.yaml:{two_line}" in items["default/two"]["reason"]
    assert "replicas" in items["default/two"]["reason"]
    assert items["default/lots"]["phase"] == "Invalid"
    assert f"jobs/default/lots.yaml:{lots_line}" in items["default/lots"]["reason"]
    assert "lots" in items["default/lots"]["reason"]
    assert state_show(path, "clusters/cf-hz-a/default/pytorchjob-fine.yaml") is not None

    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"jobs/default/broken.yaml:{BROKEN_YAML_LINE}: error" in proc.stdout
    assert f"jobs/default/two.yaml:{two_line}: error" in proc.stdout
    assert f"jobs/default/lots.yaml:{lots_line}: error" in proc.stdout
    assert "fine.yaml" not in proc.stdout
    assert "pytorch-test.yaml" not in proc.stdout


def test_validate_on_a_clean_repo_exits_zero(seed_fleet: SeedFleet) -> None:
    proc = fleetq("validate", "--repo", str(seed_fleet.path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 error(s)" in proc.stdout
    proc = fleetq("validate", "--repo", str(seed_fleet.path), "-o", "json")
    assert proc.returncode == 0
    assert proc.stdout.strip() == "[]"


def _admit_seed_then_queue_second(seed_fleet: SeedFleet) -> None:
    """pytorch-test admitted at 11:00; pytorch-second (committed later) queued behind it."""
    seed_fleet.reconcile("2026-11-29T11:00:00Z")
    write_files(seed_fleet.path,
                {"jobs/default/pytorch-second.yaml": pytorchjob("pytorch-second")})
    commit_all(seed_fleet.path, "second job", date="2026-11-29T11:05:00Z")
    seed_fleet.reconcile("2026-11-29T11:10:00Z")


def _break_yaml(text: str) -> str:
    return text.replace("  name: pytorch-test\n  namespace: default\n",
                        "  name: pytorch-test: oops\n  namespace: default\n", 1)


def _break_quantity(text: str) -> str:
    return text.replace('cpu: "10m"', 'cpu: "ten millicores"', 1)


def _drop_name(text: str) -> str:
    return text.replace("  name: pytorch-test\n", "  nme: pytorch-test\n", 1)


def _namespace_as_list(text: str) -> str:
    return text.replace("  namespace: default\n", "  namespace: [default]\n", 1)


def _metadata_as_list(text: str) -> str:
    return text.replace("metadata:\n", "metadata: []\nxmetadata:\n", 1)


def _wrong_group(text: str) -> str:
    """A PyTorchJob under Ray's group: no kind of any tool, so a mistake, not
    another tool's job to leave alone (and the job to delete)."""
    return text.replace("apiVersion: kubeflow.org/v1\n", "apiVersion: ray.io/v1\n", 1)


# (no name to the third to fifth, the kind to the last: which job the file now
# defines, it does not say, so the one that ran from it stays)
@pytest.mark.parametrize("breaker", [_break_yaml, _break_quantity, _drop_name,
                                     _namespace_as_list, _metadata_as_list, _wrong_group],
                         ids=["yaml", "quantity", "no name", "namespace list", "metadata list",
                              "group"])
def test_admitted_job_whose_file_turns_invalid_keeps_its_placement(
        seed_fleet: SeedFleet, breaker: object) -> None:
    path = seed_fleet.path
    _admit_seed_then_queue_second(seed_fleet)
    before = placements(path)
    assert before["default/pytorch-test"]["phase"] == "Admitted"
    assert before["default/pytorch-second"]["phase"] == "Queued"
    rendered_before = state_show(path, RENDERED_SEED)
    assert rendered_before is not None

    job_file = path / "jobs/default/pytorch-test.yaml"
    good = job_file.read_text()
    broken = breaker(good)  # type: ignore[operator]
    assert broken != good
    job_file.write_text(broken)
    commit_all(path, "break pytorch-test", date="2026-11-29T11:30:00Z")
    outcome = seed_fleet.reconcile("2026-11-29T12:00:00Z")
    assert any(p.path == "jobs/default/pytorch-test.yaml" and p.severity == "error"
               for p in outcome.computed.problems), outcome.computed.problems

    items = placements(path)
    kept = items["default/pytorch-test"]
    assert kept["phase"] == "Admitted"
    assert kept["cluster"] == "cf-hz-a"
    assert kept["admittedAt"] == "2026-11-29T11:00:00Z"
    assert kept["enqueuedAt"] == before["default/pytorch-test"]["enqueuedAt"]
    assert kept.get("sourceInvalid") is True
    assert "invalid" in kept["reason"].lower() or "jobs/default/pytorch-test.yaml" in \
        kept["reason"]
    assert kept["podSets"] == before["default/pytorch-test"]["podSets"]
    assert kept["requests"] == before["default/pytorch-test"]["requests"]
    # Its last good rendering is kept byte for byte, and it still holds its quota.
    assert state_show(path, RENDERED_SEED) == rendered_before
    assert items["default/pytorch-second"]["phase"] == "Queued"

    # Fixing the file clears the flag; the job stays where it runs.
    job_file.write_text(good)
    commit_all(path, "fix pytorch-test", date="2026-11-29T12:30:00Z")
    seed_fleet.reconcile("2026-11-29T13:00:00Z")
    fixed = placements(path)["default/pytorch-test"]
    assert fixed["phase"] == "Admitted"
    assert fixed["cluster"] == "cf-hz-a"
    assert fixed["admittedAt"] == "2026-11-29T11:00:00Z"
    assert "sourceInvalid" not in fixed
    assert state_show(path, RENDERED_SEED) == rendered_before


def test_a_queued_job_whose_file_breaks_stays_flagged_and_keeps_its_place(
        seed_fleet: SeedFleet) -> None:
    """It vanished from the state while its file was broken, and came back as
    a new job once fixed: enqueued anew, behind the jobs pushed meanwhile."""
    path = seed_fleet.path
    _admit_seed_then_queue_second(seed_fleet)
    before = placements(path)["default/pytorch-second"]
    assert (before["phase"], before["enqueuedAt"]) == ("Queued", "2026-11-29T11:05:00Z")
    job_file = path / "jobs/default/pytorch-second.yaml"
    good = job_file.read_text()
    job_file.write_text(good + "oops: [\n")
    commit_all(path, "break pytorch-second", date="2026-11-29T11:20:00Z")
    seed_fleet.reconcile("2026-11-29T11:30:00Z")
    kept = placements(path)["default/pytorch-second"]
    assert (kept["phase"], kept["enqueuedAt"], kept["quota"]) == (
        "Invalid", "2026-11-29T11:05:00Z", before["quota"]), kept
    assert kept["reason"].startswith("source is invalid (jobs/default/pytorch-second.yaml:")
    assert kept["reason"].endswith("it keeps its enqueue time (2026-11-29T11:05:00Z), so its "
                                   "place in its queue, until it is fixed"), kept["reason"]
    # another job comes meanwhile; the fixed one is ahead of it again
    write_files(path, {"jobs/default/pytorch-third.yaml": pytorchjob("pytorch-third")})
    commit_all(path, "third job", date="2026-11-29T11:40:00Z")
    seed_fleet.reconcile("2026-11-29T11:50:00Z")
    assert placements(path)["default/pytorch-second"] == kept  # (a fixed point)
    job_file.write_text(good)
    commit_all(path, "fix pytorch-second", date="2026-11-29T12:00:00Z")
    seed_fleet.reconcile("2026-11-29T12:10:00Z")
    items = placements(path)
    assert (items["default/pytorch-second"]["phase"], items["default/pytorch-second"][
        "enqueuedAt"], items["default/pytorch-second"]["position"]) == (
        "Queued", "2026-11-29T11:05:00Z", 1)
    assert items["default/pytorch-third"]["position"] == 2


def test_deleted_admitted_job_leaves_and_the_next_one_is_admitted(
        seed_fleet: SeedFleet) -> None:
    path = seed_fleet.path
    _admit_seed_then_queue_second(seed_fleet)
    assert placements(path)["default/pytorch-second"]["phase"] == "Queued"

    (path / "jobs/default/pytorch-test.yaml").unlink()
    commit_all(path, "pytorch-test done", date="2026-11-29T11:30:00Z")
    outcome = seed_fleet.reconcile("2026-11-29T12:00:00Z")
    assert outcome.commit is not None

    items = placements(path)
    assert "default/pytorch-test" not in items
    second = items["default/pytorch-second"]
    assert second["phase"] == "Admitted"
    assert second["cluster"] == "cf-hz-a"
    assert second["admittedAt"] == "2026-11-29T12:00:00Z"
    assert state_show(path, RENDERED_SEED) is None
    assert state_show(path, "clusters/cf-hz-a/default/pytorchjob-pytorch-second.yaml")
    kustomization = state_show(path, "clusters/cf-hz-a/kustomization.yaml") or ""
    assert "pytorch-test" not in kustomization
    assert "default/pytorchjob-pytorch-second.yaml" in kustomization
    message = git(path, "log", "-1", "--format=%B", "fleetq/state")
    assert "pytorch-test" in message  # the change is described in the commit message


BROKEN_TREE = """\
apiVersion: scheduling.sigs.k8s.io/v1beta1
kind: ElasticQuotaTree
metadata: {name: elasticquotatree, namespace: kube-system
spec: [
"""


@pytest.mark.parametrize("cache", [True, False], ids=["cache", "no-cache"])
def test_a_quota_tree_or_member_cluster_file_that_breaks_leaves_the_fleet_as_it_was(
        tmp_path: Path, cache: bool) -> None:
    """A typo in a file that defines the fleet (here the quota tree, then a
    member cluster) is reported as path:line, and the fleet goes on with the
    file's last good version: no job is evicted, no cluster folder goes (a
    GitOps sync would prune what runs), and jobs pushed meanwhile are decided
    as the fleet would decide them once it is fixed."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    no_cache = () if cache else ("--no-cache",)

    def reconcile() -> str:
        proc = fleetq("reconcile", "--repo", str(path), "--now", NOW, *no_cache)
        assert proc.returncode == 0, proc.stderr
        return proc.stderr

    def state_tree() -> str:
        return git(path, "rev-parse", "fleetq/state^{tree}").strip()

    reconcile()
    good = state_tree()
    admitted_on_hz = [key for key, item in placements(path).items()
                      if item.get("cluster") == "gpu-hz-a"]
    assert admitted_on_hz  # (the case this is about: a job runs on the cluster that breaks)

    write_files(path, {"quota/elasticquotatree.yaml": BROKEN_TREE})
    commit_all(path, "a broken quota tree")
    said = reconcile()
    assert "quota/elasticquotatree.yaml:4: error: not valid YAML" in said, said
    assert "quota/elasticquotatree.yaml: warning: the fleet goes on with this file's last " \
           "good version" in said
    assert state_tree() == good
    checked = fleetq("validate", "--repo", str(path))
    assert checked.returncode == 1 and "quota/elasticquotatree.yaml:4:" in checked.stdout
    # checked as the fleet goes on: with the tree's last good version (its jobs
    # were told there was no quota tree at all)
    assert "quota/elasticquotatree.yaml: warning: the fleet goes on with this file's last " \
           "good version" in checked.stdout
    assert checked.stdout.count("error:") == 1, checked.stdout

    cluster_file = path / "clusters/gpu-hz-a.yaml"
    cluster_text = cluster_file.read_text()
    cluster_file.write_text(cluster_text.replace('cpu: "96"', 'cpu: "lots"', 1))
    job = (path / "jobs/text/tokenizer-ablation.yaml").read_text()
    write_files(path, {"jobs/text/pushed-meanwhile.yaml": job.replace(
        "name: tokenizer-ablation", "name: pushed-meanwhile", 1)})
    commit_all(path, "a typo in a cluster, and a new job")
    said = reconcile()
    typo_line = line_of(cluster_text, 'cpu: "96"')
    assert f"clusters/gpu-hz-a.yaml:{typo_line}: error: spec.nodes[0].allocatable.cpu: " \
           "'lots' is not a Kubernetes quantity" in said, said
    items = placements(path)
    assert all(items[key]["cluster"] == "gpu-hz-a" for key in admitted_on_hz)
    assert items["text/pushed-meanwhile"]["phase"] == "Queued"
    assert git(path, "diff", "--stat", f"{good}", "fleetq/state", "--", "clusters/").strip() \
        == ""  # every cluster's files as they were

    # Broken otherwise: the last good version is older than the state's source.
    cluster_file.write_text(cluster_text.replace('cpu: "96"', "cpu: [", 1))
    commit_all(path, "another typo")
    said = reconcile()
    assert "clusters/gpu-hz-a.yaml:" in said and "last good version" in said, said
    assert all(placements(path)[key]["cluster"] == "gpu-hz-a" for key in admitted_on_hz)

    # Fixed: the decisions a reconcile of the fixed fleet makes from nothing
    # (but for the times: enqueued and admitted then).
    cluster_file.write_text(cluster_text)
    git(path, "checkout", "HEAD~3", "--", "quota/elasticquotatree.yaml")
    commit_all(path, "fixed")
    said = reconcile()
    assert "error" not in said and "last good version" not in said, said

    def decisions() -> dict[str, dict[str, object]]:
        return {key: {k: v for k, v in item.items() if k not in ("enqueuedAt", "admittedAt")}
                for key, item in placements(path).items()}

    fixed = decisions()
    git(path, "branch", "-D", "fleetq/state")
    reconcile()
    assert decisions() == fixed


def test_a_first_reconcile_goes_on_with_a_broken_files_last_good_version(
        tmp_path: Path) -> None:
    """No state yet, and a member cluster's file broke in the last commit: the
    first reconcile reads its version of the commit before, as every reconcile
    after it does (they find it in the source's commits), not the fleet
    without that cluster, only to move its jobs back at the next push. A
    shallow clone that cannot tell stops (exit 2) and names the fetch;
    ``validate`` there tells the file's errors, and why it goes on with it."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    cluster_file = path / "clusters/gpu-hz-a.yaml"
    cluster_text = cluster_file.read_text()
    cluster_file.write_text(cluster_text.replace('cpu: "96"', 'cpu: "lots"', 1))
    commit_all(path, "a typo in a cluster")
    checked = fleetq("validate", "--repo", str(path))
    assert checked.returncode == 1, checked.stdout + checked.stderr
    told = "clusters/gpu-hz-a.yaml: warning: the fleet goes on with this file's last good version"
    assert told in checked.stdout, checked.stdout
    explained = fleetq("explain", "video-mae-pretrain", "--repo", str(path))
    assert explained.returncode == 0 and told in explained.stderr, explained.stderr
    assert "the fleet has 1 error(s), which fleetq validate tells" in explained.stderr
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0 and told in proc.stderr, proc.stderr
    first = placements(path)
    assert any(item.get("cluster") == "gpu-hz-a" for item in first.values()), first
    # what the next reconcile decides of the same files, from that state: nothing new
    (path / "README.md").write_text("# a fleet\n")
    commit_all(path, "a README")
    again = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert again.returncode == 0 and told in again.stderr, again.stderr
    assert placements(path) == first

    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{path}", "shallow")
    shallow = tmp_path / "shallow"
    proc = fleetq("reconcile", "--repo", str(shallow), "--now", NOW)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "clusters/gpu-hz-a.yaml is broken and its last good version may be in the " \
           "source's earlier commits, which this shallow clone lacks" in proc.stderr, proc.stderr
    assert "git fetch --unshallow" in proc.stderr
    assert git(shallow, "branch", "--list", "fleetq/state").strip() == ""  # nothing written
    # a check goes on with the file as it is, and says why
    checked = fleetq("validate", "--repo", str(shallow))
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "clusters/gpu-hz-a.yaml: warning: this shallow clone's history of it ends at " \
           in checked.stdout, checked.stdout
    assert "clusters/gpu-hz-a.yaml:22: error: spec.nodes[0].allocatable.cpu: 'lots'" \
        in checked.stdout
    # explain reads the state, which this clone did not fetch: it says so, rather than
    # explain what a first reconcile would decide; with the state, it needs the history
    # reconcile needs
    explained = fleetq("explain", "video-mae-pretrain", "--repo", str(shallow))
    fetch = "git fetch origin fleetq/state:refs/remotes/origin/fleetq/state"
    assert explained.returncode == 2 and f"nor a copy of origin's, which has one " \
        f"({rev(path, 'fleetq/state')[:12]}): fetch it ({fetch}), and run again" \
        in explained.stderr, explained.stderr
    git(shallow, *fetch.split()[1:])
    explained = fleetq("explain", "video-mae-pretrain", "--repo", str(shallow))
    assert explained.returncode == 2 and "clusters/gpu-hz-a.yaml is broken and its last good " \
        "version is in the source commits the state was made from, which this shallow clone " \
        "lacks" in explained.stderr, explained.stderr
    git(shallow, "update-ref", "-d", "refs/remotes/origin/fleetq/state")  # (as cloned)
    git(shallow, "fetch", "-q", "--unshallow", "origin")
    proc = fleetq("reconcile", "--repo", str(shallow), "--now", NOW)
    assert proc.returncode == 0 and told in proc.stderr, proc.stderr
    assert placements(shallow) == first


NEVER_GOOD = {"a misspelt max": ("          nvidia.com/gpu: 12\n        max:",
                                  "          nvidia.com/gpu: 12\n        mxa:"),
              "not YAML": ("          nvidia.com/gpu: 12\n        max:",
                           "          nvidia.com/gpu: 12\n        max: ["),
              "a tree in the wrong namespace": ("namespace: kube-system", "namespace: quota")}
NEVER_GOOD_REASON = ("the ElasticQuotaTree in quota/elasticquotatree.yaml has errors and no "
                     "earlier version without them (fleetq validate tells them), and its policy ")


@pytest.mark.parametrize("damage", sorted(NEVER_GOOD))
def test_a_quota_tree_with_errors_in_every_version_admits_no_job_against_it(
        tmp_path: Path, damage: str) -> None:
    """A quota tree broken since its first commit has no last good version. It
    was used as it was: the text leaf's max misspelt left the leaf unlimited,
    and all four of its jobs ran, past its two job slots. (A tree that did not
    parse told its jobs "no ElasticQuotaTree in the fleet"; one in the wrong
    namespace, the same.) Now no job that queues is admitted, each told why;
    fixed, the tree admits as written."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    tree_file = path / "quota/elasticquotatree.yaml"
    good = tree_file.read_text()
    was, now = NEVER_GOOD[damage]
    assert was in good
    tree_file.write_text(good.replace(was, now, 1))
    git(path, "commit", "-q", "--amend", "-am", "a fleet, its quota tree broken")
    assert git(path, "rev-list", "--count", "HEAD").strip() == "1"
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    items = placements(path)
    assert {item["phase"] for item in items.values()} == {"Invalid"}, items
    assert all(NEVER_GOOD_REASON in item["reason"] for item in items.values()), items
    checked = fleetq("validate", "--repo", str(path))
    assert checked.returncode == 1
    assert ("jobs/text/tokenizer-ablation.yaml:4: error: " + NEVER_GOOD_REASON +
            "ClusterPropagationPolicy ") in checked.stdout, checked.stdout
    tree_file.write_text(good)
    commit_all(path, "the tree fixed")
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    phases = [item["phase"] for key, item in placements(path).items()
              if key.startswith("text/")]
    assert sorted(phases) == ["Admitted", "Admitted", "Queued", "Queued"], phases


def test_jobs_running_under_a_new_quota_tree_file_never_good_stay_where_they_run(
        tmp_path: Path) -> None:
    """The tree rewritten into a new file (no history: no last good version)
    with its text leaf's max misspelt: what ran stays where it runs, flagged;
    the jobs that waited are not admitted past the tree as it was."""
    path = reconciled_template(tmp_path)
    before = placements(path)
    tree = yaml.safe_load((path / "quota/elasticquotatree.yaml").read_text())
    text_leaf = tree["spec"]["root"]["children"][0]["children"][1]
    assert text_leaf["name"] == "text"
    text_leaf["mxa"] = text_leaf.pop("max")
    git(path, "rm", "-q", "quota/elasticquotatree.yaml")
    write_files(path, {"quota/tree.yaml": yaml.safe_dump(tree, default_flow_style=True)})
    commit_all(path, "the tree in one file of its own")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    after = placements(path)
    for key, item in before.items():
        if item["phase"] == "Admitted":
            assert after[key]["phase"] == "Admitted" and \
                after[key]["cluster"] == item["cluster"], (key, after[key])
            assert "the ElasticQuotaTree in quota/tree.yaml has errors" in after[key]["reason"]
        elif item["phase"] == "Queued":
            assert after[key]["phase"] == "Invalid", (key, after[key])


@pytest.mark.parametrize("state", [False, True], ids=["first reconcile", "with a state"])
def test_a_new_file_copied_from_another_and_broken_has_no_last_good_version(
        tmp_path: Path, state: bool) -> None:
    """A new member cluster's file made from an old one's, broken from its
    first commit: git log --follow takes the old file for its past (a copy),
    and its version was read as the new file's last good one: the old
    cluster was then defined twice, and left out, its jobs moved."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    if state:
        assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    old = (path / "clusters/gpu-hz-a.yaml").read_text()
    write_files(path, {"clusters/gpu-new.yaml": old.replace("name: gpu-hz-a", "name: gpu-new")
                       .replace("resourceReservation:", "resourceReservaton:")})
    commit_all(path, "a new cluster, broken")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert "clusters/gpu-new.yaml" in proc.stderr and "did you mean spec.resourceReservation" \
        in proc.stderr, proc.stderr
    assert "last good version" not in proc.stderr and "also defined" not in proc.stderr, \
        proc.stderr
    assert any(item.get("cluster") == "gpu-hz-a" for item in placements(path).values())


@pytest.mark.parametrize("damage", ["not YAML", "a damaged item", "no placements.yaml",
                                    "items not a list", "empty", "a list"])
def test_a_state_commit_that_does_not_read_back_stops_every_command_and_loses_nothing(
        tmp_path: Path, damage: str) -> None:
    """placements.yaml edited by hand on the state branch: going on from no state
    would move or evict every job that runs and forget its times; nothing is
    written until the branch is pointed back at a good commit."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    good = git(path, "rev-parse", "fleetq/state").strip()
    text = git(path, "show", "fleetq/state:placements.yaml")
    worktree = tmp_path / "state"
    git(path, "worktree", "add", "-q", str(worktree), "fleetq/state")
    if damage == "no placements.yaml":
        git(worktree, "rm", "-q", "placements.yaml")
    else:
        (worktree / "placements.yaml").write_text({
            "not YAML": text.replace("items:", "items: [", 1),
            "a damaged item": text.replace("phase: Admitted", "phase: Sleeping", 1),
            "items not a list": text.replace("items:", "items: 3\nfoo:", 1),
            "empty": "",
            "a list": "- a\n- b\n"}[damage])
    git(worktree, "commit", "-qam", "edited by hand")
    git(path, "worktree", "remove", "--force", str(worktree))
    damaged = git(path, "rev-parse", "fleetq/state").strip()
    write_files(path, {"jobs/text/later.yaml": (path / "jobs/text/tokenizer-ablation.yaml")
                       .read_text().replace("name: tokenizer-ablation", "name: later", 1)})
    commit_all(path, "a job pushed since")

    for command in (["reconcile", "--now", NOW], ["plan", "--now", NOW], ["explain", "later"],
                    ["status"], ["queue"], ["status", "--no-cache"]):
        proc = fleetq(*command, "--repo", str(path))
        assert proc.returncode == 2, (command, proc.stdout, proc.stderr)
        assert (f"the state commit {damaged[:12]} cannot be read back (placements.yaml"
                in proc.stderr or (command[0] == "reconcile" and f"its head {damaged[:12]} "
                                   "has no Fleet-Source-Commit trailer" in proc.stderr)), \
            proc.stderr
        assert "git update-ref" in proc.stderr
    assert git(path, "rev-parse", "fleetq/state").strip() == damaged

    git(path, "update-ref", "refs/heads/fleetq/state", good)
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    assert placements(path)["text/later"]["phase"] == "Queued"


def _admitted_by_hand(tmp_path: Path) -> tuple[Path, str, str, Path]:
    """The template fleet reconciled, and its state branch checked out in a work
    tree with a queued job marked Admitted in placements.yaml, not committed:
    the fleet, fleetq's state commit, the job and the work tree."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    good = git(path, "rev-parse", "fleetq/state").strip()
    queued = next(key for key, item in placements(path).items() if item["phase"] == "Queued")
    worktree = tmp_path / "state"
    git(path, "worktree", "add", "-q", str(worktree), "fleetq/state")
    text = (worktree / "placements.yaml").read_text()
    at = text.index(f"name: {queued.split('/')[1]}}}")
    (worktree / "placements.yaml").write_text(
        text[:at] + text[at:].replace("phase: Queued", "phase: Admitted", 1))
    return path, good, queued, worktree


@pytest.mark.parametrize("how", ["amended", "message copied", "trailer dropped"])
def test_a_state_commit_edited_by_hand_with_fleetqs_trailers_is_refused(
        tmp_path: Path, how: str) -> None:
    """A queued job marked Admitted by hand in placements.yaml, the commit
    amended (or committed with fleetq's message copied: ``git commit -C``; or
    amended with the trailer that names its tree taken out), so that it keeps
    fleetq's trailers: read as the state, the job would be rendered to its
    cluster past its quota, and kept there. Every reconcile stops (exit 2),
    naming fleetq's last commit to put back (the one amended, from the
    branch's reflog); the commands that read the state warn; nothing is
    written."""
    path, good, queued, worktree = _admitted_by_hand(tmp_path)
    if how == "amended":
        git(worktree, "commit", "-q", "--amend", "-a", "--no-edit")
    elif how == "message copied":
        git(worktree, "commit", "-q", "-a", "-C", "HEAD")
    else:
        message = git(worktree, "log", "-1", "--format=%B")
        assert "\nFleet-State-Tree: " in message
        git(worktree, "commit", "-q", "--amend", "-a", "-m",
            re.sub(r"\nFleet-State-Tree: \w+", "", message))
    git(path, "worktree", "remove", "--force", str(worktree))
    edited = git(path, "rev-parse", "fleetq/state").strip()
    assert "Fleet-Source-Commit: " in git(path, "log", "-1", "--format=%B", edited)

    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"the state branch 'fleetq/state' is at {edited[:12]}, which was edited by hand: " \
           "its files are not those fleetq committed" in proc.stderr, proc.stderr
    assert f"put it back at fleetq's last commit (git update-ref refs/heads/fleetq/state " \
           f"{good[:12]})" in proc.stderr, proc.stderr
    assert git(path, "rev-parse", "fleetq/state").strip() == edited
    status = fleetq("status", "--repo", str(path))
    assert status.returncode == 0 and "fleetq: warning: reading the state branch " \
        f"fleetq/state at {edited[:12]}, which was edited by hand" in status.stderr, status.stderr

    git(path, "update-ref", "refs/heads/fleetq/state", good)
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0 and "edited by hand" not in proc.stderr, proc.stderr
    assert placements(path)[queued]["phase"] == "Queued"


def test_a_commit_of_peoples_on_the_state_branch_is_read_with_a_warning(
        tmp_path: Path) -> None:
    """A queued job marked Admitted by hand, committed with a message of its
    own (no trailer of fleetq's): reconcile refuses the branch, while status,
    queue, explain and plan read it as fleetq's decisions, with no word."""
    path, good, queued, worktree = _admitted_by_hand(tmp_path)
    git(worktree, "commit", "-q", "-a", "-m", "let it run")
    git(path, "worktree", "remove", "--force", str(worktree))
    by_hand = git(path, "rev-parse", "fleetq/state").strip()

    warning = (f"fleetq: warning: reading the state branch fleetq/state at {by_hand[:12]}, "
               f"which fleetq did not write (it has no Fleet-Source-Commit trailer): its files "
               f"may not be fleetq's decisions (a job admitted there by hand would run past its "
               f"quota), and reconcile refuses it: put it back at fleetq's last commit (git "
               f"update-ref refs/heads/fleetq/state {good[:12]}), and change the fleet in its "
               f"source\n")
    for command in (["status"], ["queue"], ["explain", queued.split("/")[1], "--now", NOW],
                    ["plan", "--now", NOW]):
        proc = fleetq(*command, "--repo", str(path))
        assert proc.returncode == 0 and proc.stderr.startswith(warning), (command, proc.stderr)
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 2 and "was not written by fleetq" in proc.stderr, proc.stderr
    git(path, "update-ref", "refs/heads/fleetq/state", good)
    proc = fleetq("status", "--repo", str(path))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    # (a branch of people's named as the state: no commit of fleetq's to put it back at,
    # and no update-ref that would reset their work)
    git(path, "branch", "feature", "main")
    for command in (["status"], ["queue"], ["explain", queued.split("/")[1], "--now", NOW]):
        proc = fleetq(*command, "--state-branch", "feature", "--repo", str(path))
        assert proc.returncode == 2 and proc.stderr.startswith(
            "fleetq: the branch 'feature' holds no state of fleetq's (its head "), proc.stderr
        assert "update-ref" not in proc.stderr and "e.g. fleetq/state" in proc.stderr


def _cluster_files(path: Path) -> str:
    return git(path, "ls-tree", "-r", "fleetq/state", "--", "clusters/")


def _break(path: Path, name: str, old: str, new: str) -> str:
    """Replace ``old`` by ``new`` in the fleet's file ``name``, commit, reconcile:
    the file's last good version is read, and said so. Its stderr."""
    text = (path / name).read_text()
    assert old in text
    write_files(path, {name: text.replace(old, new, 1)})
    commit_all(path, f"a mistake in {name}")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert f"{name}: warning: the fleet goes on with this file's last good version" \
        in proc.stderr, proc.stderr
    return proc.stderr


@pytest.mark.parametrize(("edit", "said"), [
    (("quota/elasticquotatree.yaml", "namespace: kube-system", "namespace: default"),
     "quota/elasticquotatree.yaml:19: error: ElasticQuotaTree in namespace 'default' takes "
     "no effect"),
    (("quota/elasticquotatree.yaml", "scheduling.sigs.k8s.io/v1beta1",
      "scheduling.sigs.k8s.io/v1alpha1"),
     "error: scheduling.sigs.k8s.io/v1alpha1 ElasticQuotaTree is not a kind fleetq reads: "
     "did you mean scheduling.sigs.k8s.io/v1beta1 ElasticQuotaTree?"),
    (("quota/elasticquotatree.yaml", "- name: interns", "- name: text"),
     "quota name 'text' is used twice"),
    (("policies/fleet-default.yaml", "kind: ClusterPropagationPolicy",
      "kind: ClusterPropagationPolcy"),
     "ClusterPropagationPolcy is not a kind fleetq reads: did you mean"),
    (("priorityclasses.yaml", "kind: PriorityClass", "kind: PriorityClas"),
     "PriorityClas is not a kind fleetq reads: did you mean scheduling.k8s.io/v1 "
     "PriorityClass?"),
    (("clusters/gpu-bj-b.yaml", "apiVersion: fleetq.io/v1alpha1\n", ""),
     "clusters/gpu-bj-b.yaml:4: error: document has no apiVersion or kind"),
    (("clusters/gpu-bj-b.yaml", "\nspec:", "\nspc:"),
     "clusters/gpu-bj-b.yaml:4: error: spec is missing: a MemberCluster's spec holds its nodes"),
    (("clusters/gpu-bj-b.yaml", "gangDialect:", "gangDialekt:"),
     "error: spec.gangDialekt is not a field of MemberCluster: did you mean spec.gangDialect?"),
    (("clusters/gpu-bj-b.yaml", "apiVersion: fleetq.io/v1alpha1", "apiVersion: v1"),
     "v1 MemberCluster is not a kind fleetq reads: did you mean fleetq.io/v1alpha1 "
     "MemberCluster?"),
])
def test_a_mistake_that_still_parses_in_a_file_that_defines_the_fleet_evicts_nothing(
        tmp_path: Path, edit: tuple[str, str, str], said: str) -> None:
    """The quota tree in the wrong namespace or under an old apiVersion, a quota
    name twice, a kind misspelt: the file is read as it last was, with the
    error told, and every job stays where it runs."""
    path = reconciled_template(tmp_path)
    before, files = placements(path), _cluster_files(path)
    said_now = _break(path, *edit)
    assert said in said_now, said_now
    assert placements(path) == before and _cluster_files(path) == files


def test_a_broken_files_last_good_version_from_a_commit_that_changed_nothing_stays_read(
        tmp_path: Path) -> None:
    """interns' max cut to 12 cpu changes no decision (no state commit); then a
    new job and a typo in the tree: the reconcile reads the tree as the cut
    made it (the newest version that builds), and commits. The next reads,
    with no cache (plan, a fresh clone), looked in the state commits' sources
    alone, found the template's 64 cpu, and would admit the new job that the
    state keeps waiting."""
    path = reconciled_template(tmp_path)
    tree = "quota/elasticquotatree.yaml"
    cut = (path / tree).read_text().replace("      max:\n        cpu: 64\n",
                                             "      max:\n        cpu: 12\n", 1)
    assert cut != (path / tree).read_text()
    write_files(path, {tree: cut})
    commit_all(path, "interns max 12")
    assert "no change" in fleetq("reconcile", "--repo", str(path), "--now", NOW).stdout
    intern = (path / "jobs/interns/intern-mnist.yaml").read_text()
    write_files(path, {"jobs/interns/intern-two.yaml": intern.replace(
        "name: intern-mnist", "name: intern-two"), tree: cut + "  broken: [\n"})
    commit_all(path, "a job and a typo")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert placements(path)["interns/intern-two"]["phase"] == "Queued"
    used = re.search(r"last good version \(blob (\w+)\)", proc.stderr)
    assert used is not None, proc.stderr
    again = fleetq("plan", "--no-cache", "--exit-code", "--repo", str(path), "--now", NOW)
    assert again.returncode == 0, again.stdout  # (no change)
    assert f"last good version (blob {used.group(1)})" in again.stdout, again.stdout


def test_an_admitted_job_whose_priority_class_goes_keeps_its_placement(tmp_path: Path) -> None:
    """Step 1 finds it invalid (a named class that does not exist): it keeps
    running where it runs, flagged, as a job whose own file broke does; a
    queued one is invalid."""
    path = reconciled_template(tmp_path)
    before = placements(path)
    assert before["text/llama-lora-sft"]["phase"] == "Admitted"
    assert before["text/tokenizer-ablation"]["phase"] == "Queued"
    git(path, "rm", "-q", "priorityclasses.yaml")
    commit_all(path, "no priority classes")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert "PriorityClass 'high' does not exist" in proc.stderr
    after = placements(path)
    kept = after["text/llama-lora-sft"]
    assert (kept["phase"], kept["cluster"], kept.get("sourceInvalid")) == \
        ("Admitted", before["text/llama-lora-sft"]["cluster"], True), kept
    assert "PriorityClass 'high' does not exist" in kept["reason"]
    assert after["text/tokenizer-ablation"]["phase"] == "Invalid"
    assert git(path, "diff", "--stat", "fleetq/state~1", "fleetq/state", "--",
               f"clusters/{kept['cluster']}/text/pytorchjob-llama-lora-sft.yaml") == ""


def test_a_file_renamed_and_broken_at_once_is_read_as_it_last_was(tmp_path: Path) -> None:
    """Its last good version is under its old name: found as git finds renames."""
    path = reconciled_template(tmp_path)
    before, files = placements(path), _cluster_files(path)
    git(path, "mv", "clusters/gpu-bj-b.yaml", "clusters/bj.yaml")
    _break(path, "clusters/bj.yaml", "resourceReservation: false", "resourceReservation: [false")
    assert placements(path) == before and _cluster_files(path) == files
    # A state made while it is broken (a job pushed), then the file edited again:
    # its last good version is two state commits back, under its old name.
    write_files(path, {"jobs/text/later.yaml": (path / "jobs/text/tokenizer-ablation.yaml")
                       .read_text().replace("name: tokenizer-ablation", "name: later", 1)})
    commit_all(path, "a job")
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    write_files(path, {"clusters/bj.yaml": (path / "clusters/bj.yaml").read_text() + "# x\n"})
    commit_all(path, "edited again, still broken")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert "clusters/bj.yaml: warning: the fleet goes on" in proc.stderr, proc.stderr
    after = placements(path)
    assert {k: (v["phase"], v.get("cluster")) for k, v in after.items() if k in before} == \
        {k: (v["phase"], v.get("cluster")) for k, v in before.items()}
    assert any(v.get("cluster") == "gpu-bj-b" for v in after.values())


def test_a_job_file_renamed_and_broken_at_once_keeps_its_jobs_as_they_were(
        tmp_path: Path) -> None:
    """A job's file renamed with a typo in the same commit: its running job was
    deleted from its cluster (the renamed file was no file the state had), and
    its waiting job left the state, to come back as a new one, behind the
    jobs pushed since. Both stay as those of a file that breaks do, named by
    the file they moved to; fixed, they are where they were."""
    path = reconciled_template(tmp_path)
    before = placements(path)
    mae, tok = "video/video-mae-pretrain", "text/tokenizer-ablation"
    assert (before[mae]["phase"], before[tok]["phase"]) == ("Admitted", "Queued")
    git(path, "mv", "jobs/video/video-mae-pretrain.yaml", "jobs/video/mae.yaml")
    git(path, "mv", "jobs/text/tokenizer-ablation.yaml", "jobs/text/tok.yaml")
    for name in ("jobs/video/mae.yaml", "jobs/text/tok.yaml"):
        text = (path / name).read_text()
        assert "restartPolicy: OnFailure" in text
        write_files(path, {name: text.replace("restartPolicy: OnFailure",
                                              "restartPolicy: [OnFailure", 1)})
    commit_all(path, "renamed, and a typo")
    assert "R" in git(path, "show", "--name-status", "--format=", "HEAD").split()[0]
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    items = placements(path)
    assert (items[mae]["phase"], items[mae]["cluster"], items[mae]["admittedAt"]) == (
        "Admitted", before[mae]["cluster"], before[mae]["admittedAt"])
    assert items[mae]["reason"].startswith("source is invalid (jobs/video/mae.yaml:"), \
        items[mae]["reason"]
    assert items[mae]["source"]["path"] == "jobs/video/mae.yaml"
    assert (items[tok]["phase"], items[tok]["enqueuedAt"]) == (
        "Invalid", before[tok]["enqueuedAt"])
    rendered = f"clusters/{before[mae]['cluster']}/video/pytorchjob-video-mae-pretrain.yaml"
    assert state_show(path, rendered)
    # (and so on: a reconcile of another push keeps them, from the file they moved to)
    kept = placements(path)
    write_files(path, {"README.md": "another push\n"})
    commit_all(path, "another push")
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    assert {k: placements(path)[k] for k in (mae, tok)} == {k: kept[k] for k in (mae, tok)}
    for name in ("jobs/video/mae.yaml", "jobs/text/tok.yaml"):
        write_files(path, {name: (path / name).read_text().replace(
            "restartPolicy: [OnFailure", "restartPolicy: OnFailure", 1)})
    commit_all(path, "fixed")
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    items = placements(path)
    assert (items[mae]["phase"], items[mae]["admittedAt"], items[mae]["source"]["path"]) == (
        "Admitted", before[mae]["admittedAt"], "jobs/video/mae.yaml")
    assert (items[tok]["phase"], items[tok]["enqueuedAt"], items[tok]["position"]) == (
        "Queued", before[tok]["enqueuedAt"], before[tok]["position"])
    # a job deleted beside a new file made from the same template, broken, is no job moved
    # (git pairs the two by likeness): it is deleted
    hotfix = "text/llm-sft-hotfix"
    text = (path / "jobs/text/llm-sft-hotfix.yaml").read_text()
    git(path, "rm", "-q", "jobs/text/llm-sft-hotfix.yaml")
    write_files(path, {"jobs/text/llm-sft-v2.yaml": text.replace(
        "name: llm-sft-hotfix", "name: llm-sft-v2", 1).replace(
        "restartPolicy: OnFailure", "restartPolicy: [OnFailure", 1)})
    commit_all(path, "a v2, with a typo")
    assert "R" in git(path, "diff", "-M", "--name-status", "HEAD~1", "HEAD")
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    assert hotfix not in placements(path)


def test_a_running_job_named_by_its_files_path_warns_when_the_file_moves(
        tmp_path: Path) -> None:
    """A RayJob named by generateName hashes its file's path into its name:
    a file moved (a tidy-up) deleted the running job and ran a new one from
    the start, with no word but the plan's two lines. The plan and the
    reconcile warn at the moved file, with the name to keep; a file moved
    again with a metadata.name is no new job, and nothing is said."""
    path = reconciled_template(tmp_path)
    before = placements(path)
    ran = next(k for k, v in before.items() if k.startswith("video/video-frame-stats-"))
    assert before[ran]["phase"] == "Admitted"
    git(path, "mv", "jobs/video/video-frame-stats.yaml", "jobs/video/frame-stats.yaml")
    commit_all(path, "tidy up")
    plan = fleetq("plan", "--repo", str(path), "--now", NOW)
    said = (f"is named by its metadata.generateName and its file's path: moved from "
            f"jobs/video/video-frame-stats.yaml, it is a new job, and RayJob {ran}, which ran on "
            f"{before[ran]['cluster']}, is deleted there, the new one run from the start; to "
            f"keep it running, give it metadata.name: {ran.split('/')[1]}, or move the file "
            f"back")
    assert "jobs/video/frame-stats.yaml:" in plan.stdout and said in plan.stdout, plan.stdout
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0 and said in proc.stderr, proc.stderr
    text = (path / "jobs/video/frame-stats.yaml").read_text()
    assert "generateName: video-frame-stats-" in text
    write_files(path, {"jobs/video/frame-stats.yaml": text.replace(
        "generateName: video-frame-stats-", "name: frame-stats", 1)})
    commit_all(path, "named")
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    git(path, "mv", "jobs/video/frame-stats.yaml", "jobs/video/stats.yaml")
    commit_all(path, "moved again")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0 and "generateName" not in proc.stderr, proc.stderr
    assert placements(path)["video/frame-stats"]["phase"] == "Admitted"
    # two jobs of one prefix in one file: each told, with its own name (by its place)
    one = (path / "jobs/platform/dataset-shard-index.yaml").read_text().replace(
        "name: dataset-shard-index", "generateName: gx-", 1)
    write_files(path, {"jobs/platform/two.yaml": f"{one}---\n{one}"})
    commit_all(path, "two of a prefix")
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    ran = sorted(k.split("/")[1] for k, v in placements(path).items()
                 if k.startswith("platform/gx-") and v["phase"] == "Admitted")
    assert len(ran) == 2
    git(path, "mv", "jobs/platform/two.yaml", "jobs/platform/pair.yaml")
    commit_all(path, "moved")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    told = sorted(re.findall(r"give it metadata.name: (gx-\w+)", proc.stderr))
    assert told == ran, proc.stderr


@pytest.mark.parametrize("patches", [1, 12])
def test_a_fleet_with_no_state_finds_a_broken_files_last_good_version_across_renames(
        tmp_path: Path, patches: int) -> None:
    """No state yet (a first reconcile, a check): a broken file's versions are
    read from the source's history, followed back across a rename (git mv,
    then broken) and another commit before it; a file that never built has
    none. With a few broken files each history is walked alone; with more,
    the changes of every file are listed once (one git log for all), and the
    same is found."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    git(path, "mv", "clusters/gpu-bj-b.yaml", "clusters/bj.yaml")
    commit_all(path, "renamed")
    write_files(path, {"README.md": "another commit\n"})
    commit_all(path, "a commit of no fleet file")
    text = (path / "clusters/bj.yaml").read_text()
    write_files(path, {"clusters/bj.yaml": text.replace("resourceReservation: false",
                                                        "resourceReservation: [false", 1),
                       **{f"a-patches/p{i:02d}.yaml": "- op: replace\n  path: /spec/replicas\n"
                          f"  value: {i}\n" for i in range(patches)}})
    commit_all(path, "broken, and patches")
    trace = tmp_path / "git-trace"
    proc = fleetq("validate", "--repo", str(path), env={"GIT_TRACE": str(trace)})
    assert proc.returncode == 1, proc.stdout
    said = proc.stdout + proc.stderr
    assert "clusters/bj.yaml: warning: the fleet goes on with this file's last good version" \
        in said, said
    assert "a-patches/p00.yaml:1: error:" in said, said
    assert "a-patches/p00.yaml: warning: the fleet goes on" not in said
    walks = [line for line in trace.read_text().splitlines() if " git log " in line]
    listed = [line for line in walks if "--name-status" in line]
    assert len(listed) == (patches + 1 > 8), walks  # (the 9th file asked lists them all)
    assert len(walks) - len(listed) == min(patches + 1, 8), walks
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert any(v.get("cluster") == "gpu-bj-b" for v in placements(path).values())


def test_an_admitted_job_whose_configmap_does_not_build_is_warned_of(tmp_path: Path) -> None:
    """A new job with its ConfigMap, which the API server would refuse: the
    ConfigMap is an error and is not sent, and the job was admitted, its
    reason "admitted to ...", its pods never to start for the missing
    volume. It is warned of at the job, naming the ConfigMap's error; once
    fixed, nothing is."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    text = (path / "jobs/video/video-frame-stats.yaml").read_text()
    two = (text.replace("generateName: video-frame-stats-", "generateName: frames-two-")
           .replace("video-frame-stats-code", "frames-two-code"))
    broken = two.replace("data:\n  frame_stats.py: |", "data:\n  retries: 3\n  frame_stats.py: |")
    assert broken != two
    write_files(path, {"jobs/video/frames-two.yaml": broken})
    commit_all(path, "another job, its ConfigMap broken")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    error = line_of(broken, "retries: 3")
    item = next(v for k, v in placements(path).items() if k.startswith("video/frames-two-"))
    assert item["phase"] == "Admitted", item
    said = (f"jobs/video/frames-two.yaml:{line_of(broken, 'generateName: ')}: warning: RayJob "
            f"video/{item['job']['name']} is admitted to {item['cluster']}, but the ConfigMap "
            f"frames-two-code its pods use does not build (jobs/video/frames-two.yaml:{error}), "
            f"so it is not sent")
    assert said in proc.stderr, proc.stderr
    write_files(path, {"jobs/video/frames-two.yaml": two})
    commit_all(path, "fixed")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert "does not build" not in proc.stderr, proc.stderr


def test_a_fleet_yaml_that_breaks_keeps_the_state_on_its_branch(tmp_path: Path) -> None:
    """spec.stateBranch is read from the newest version of fleet.yaml that
    parses: a typo started a new state on the default branch, while Argo CD
    or Flux followed the old one."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    fleet_yaml = (path / "fleet.yaml").read_text()
    write_files(path, {"fleet.yaml": fleet_yaml.replace("stateBranch: fleetq/state",
                                                        "stateBranch: ops/state")})
    commit_all(path, "the state on ops/state")
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    before = placements(path, "ops/state")
    _break(path, "fleet.yaml", "placementStrategy: binpack", "placementStrategy: [binpack")
    assert rev(path, "fleetq/state") is None
    git(path, "checkout", "HEAD~1", "--", "fleet.yaml")  # (fixed; then misspelt)
    said = _break(path, "fleet.yaml", "stateBranch: ops/state", "stateBrnch: ops/state")
    assert "spec.stateBrnch is not a field of Fleet: did you mean spec.stateBranch?" in said
    assert rev(path, "fleetq/state") is None and placements(path, "ops/state") == before
    # No version of it parses: nothing is written, and it says why.
    bad = make_fleet_repo(tmp_path / "bad", {"fleet.yaml": "spec: [\n"})
    proc = fleetq("reconcile", "--repo", str(bad), "--now", NOW)
    assert proc.returncode == 2 and "no earlier version of fleet.yaml parses" in proc.stderr
    # (given on the command line, where the state goes needs none of it)
    proc = fleetq("reconcile", "--repo", str(bad), "--now", NOW, "--remote", "",
                  "--state-branch", "ops/state")
    assert proc.returncode == 0 and rev(bad, "ops/state") is not None, proc.stderr


def test_a_new_file_defining_a_running_job_again_takes_nothing_over(tmp_path: Path) -> None:
    """``jobs/text/a-copy.yaml`` (sorting before the running job's own file)
    defines ``llama-lora-sft`` again, changed: neither file is used; the
    running job keeps its place and its rendered manifest, flagged; a job
    defined twice that never ran is Invalid. Renaming one clears it."""
    path = reconciled_template(tmp_path)
    before = placements(path)["text/llama-lora-sft"]
    assert before["phase"] == "Admitted"
    own = (path / "jobs/text/llama-lora-sft.yaml").read_text()
    rendered = f"clusters/{before['cluster']}/text/pytorchjob-llama-lora-sft.yaml"
    was = state_show(path, rendered)
    changed = own.replace("pytorch/pytorch:2.3.1", "pytorch/pytorch:9.9.9")
    assert changed != own
    write_files(path, {"jobs/text/a-copy.yaml": changed,
                       "jobs/text/b-tokenizer.yaml":
                           (path / "jobs/text/tokenizer-ablation.yaml").read_text()})
    commit_all(path, "copies")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    named = line_of(own, "name: llama-lora-sft")  # (each told at its name)
    assert f"jobs/text/llama-lora-sft.yaml:{named}: error: PyTorchJob text/llama-lora-sft is " \
           f"also defined at jobs/text/a-copy.yaml:{named};" in proc.stderr, proc.stderr
    after = placements(path)
    kept = after["text/llama-lora-sft"]
    assert (kept["phase"], kept["cluster"], kept.get("sourceInvalid")) == \
        ("Admitted", before["cluster"], True), kept
    assert "is defined more than once (see the errors of fleetq validate)" in kept["reason"]
    assert state_show(path, rendered) == was
    assert after["text/tokenizer-ablation"]["phase"] == "Invalid"
    # renamed: the copy is a job of its own, and the running one is as it was
    write_files(path, {"jobs/text/a-copy.yaml": own.replace("llama-lora-sft", "lora-2")})
    git(path, "rm", "-q", "jobs/text/b-tokenizer.yaml")
    commit_all(path, "renamed")
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    again = placements(path)
    assert again["text/llama-lora-sft"]["cluster"] == before["cluster"]
    assert "sourceInvalid" not in again["text/llama-lora-sft"]
    assert "text/lora-2" in again and again["text/tokenizer-ablation"]["phase"] == "Queued"


@pytest.mark.parametrize(("broken", "which"), [
    (("\n  name: llama-lora-sft\n", "\n\tname: llama-lora-sft\n"), "breaks"),  # (not YAML)
    (('cpu: "16"', 'cpu: "-16"'), "holds it with a mistake")])  # (YAML, and invalid)
@pytest.mark.parametrize("cache", ["cache", "no cache"])
def test_a_new_file_takes_no_job_over_whose_own_file_breaks_in_the_same_commit(
        tmp_path: Path, cache: str, broken: tuple[str, str], which: str) -> None:
    """The running job's own file broke (not YAML, or with a mistake) as a
    new file defined the job again, changed: the new file was read as the
    job's, and its image sent. The new file is told as a second definition;
    the job keeps running as it was sent, flagged. Once its file is fixed,
    both are told as a job defined twice; with the copy removed, the job is
    as it was."""
    path = reconciled_template(tmp_path)
    flags = ["--no-cache"] if cache == "no cache" else []
    before = placements(path)["text/llama-lora-sft"]
    rendered = f"clusters/{before['cluster']}/text/pytorchjob-llama-lora-sft.yaml"
    was = state_show(path, rendered)
    own = (path / "jobs/text/llama-lora-sft.yaml").read_text()
    copy = own.replace("pytorch/pytorch:2.3.1", "evil.example.com/miner:9")
    assert copy != own and broken[0] in own
    write_files(path, {"jobs/text/zz-takeover.yaml": copy, "jobs/text/llama-lora-sft.yaml":
                       own.replace(broken[0], broken[1], 1)})
    commit_all(path, "a copy, and the job's own file broken")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW, *flags)
    assert proc.returncode == 0, proc.stderr
    named = line_of(own, "name: llama-lora-sft")
    assert (f"jobs/text/zz-takeover.yaml:{named}: error: PyTorchJob text/llama-lora-sft is also "
            f"defined at jobs/text/llama-lora-sft.yaml, as far as fleetq knows: it was read "
            f"from there, which {which} now, and a new file takes no job over; fix "
            f"jobs/text/llama-lora-sft.yaml, or rename this one") in proc.stderr, proc.stderr
    kept = placements(path)["text/llama-lora-sft"]
    assert (kept["phase"], kept["cluster"], kept["source"]["path"], kept.get("sourceInvalid")) \
        == ("Admitted", before["cluster"], "jobs/text/llama-lora-sft.yaml", True), kept
    assert state_show(path, rendered) == was
    write_files(path, {"jobs/text/llama-lora-sft.yaml": own})
    commit_all(path, "fixed")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW, *flags)
    assert "PyTorchJob text/llama-lora-sft is also defined at" in proc.stderr, proc.stderr
    assert state_show(path, rendered) == was
    git(path, "rm", "-q", "jobs/text/zz-takeover.yaml")
    commit_all(path, "the copy removed")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW, *flags)
    assert proc.returncode == 0 and "error" not in proc.stderr, proc.stderr
    assert "sourceInvalid" not in placements(path)["text/llama-lora-sft"]
    assert state_show(path, rendered) == was


@pytest.mark.parametrize("cache", ["cache", "no cache"])
def test_a_job_whose_file_is_emptied_stays_until_the_file_is_deleted(
        tmp_path: Path, cache: str) -> None:
    """A running job's file emptied (an editor's accident, a bad merge), or
    left with comments alone, deleted the job from its cluster with no word,
    where a file that breaks keeps its jobs. The job stays as it was sent,
    flagged, and the file is an error saying how to delete it; deleting the
    file deletes it. A job moved to another file as its old one is emptied
    has moved: nothing is told."""
    path = reconciled_template(tmp_path)
    flags = ["--no-cache"] if cache == "no cache" else []
    before = placements(path)
    rendered = {key: f"clusters/{before[key]['cluster']}/{key.split('/')[0]}/pytorchjob-"
                     f"{key.split('/')[1]}.yaml" for key in ("text/llama-lora-sft",
                                                             "video/video-mae-pretrain")}
    was = {key: state_show(path, file) for key, file in rendered.items()}
    mae = (path / "jobs/video/video-mae-pretrain.yaml").read_text()
    write_files(path, {"jobs/text/llama-lora-sft.yaml": "",
                       "jobs/video/video-mae-pretrain.yaml": "# nothing here\n"})
    commit_all(path, "emptied")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW, *flags)
    assert proc.returncode == 0, proc.stderr
    for file, key in (("jobs/text/llama-lora-sft.yaml", "PyTorchJob text/llama-lora-sft"),
                      ("jobs/video/video-mae-pretrain.yaml",
                       "PyTorchJob video/video-mae-pretrain")):
        assert (f"{file}: error: it holds no document now, and the state has 1 job(s) from it "
                f"({key}): they stay as they were; delete the file to delete them") \
            in proc.stderr, proc.stderr
    after = placements(path)
    for key, file in rendered.items():
        assert (after[key]["phase"], after[key]["cluster"], after[key].get("sourceInvalid")) == \
            ("Admitted", before[key]["cluster"], True), after[key]
        assert state_show(path, file) == was[key]
    # moved: the job in a file of its own, the old one left empty
    write_files(path, {"jobs/video/moved.yaml": mae})
    git(path, "rm", "-q", "jobs/text/llama-lora-sft.yaml")
    commit_all(path, "one moved, one deleted")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW, *flags)
    assert proc.returncode == 0 and "no document" not in proc.stderr, proc.stderr
    after = placements(path)
    assert "text/llama-lora-sft" not in after
    assert after["video/video-mae-pretrain"]["source"]["path"] == "jobs/video/moved.yaml"
    assert "sourceInvalid" not in after["video/video-mae-pretrain"]


def test_an_invalid_copy_of_a_job_is_told_as_a_second_definition_before_it_is_fixed(
        tmp_path: Path) -> None:
    """A running job's file copied with a mistake was told only by its
    mistake: the fix then made the job one defined twice, flagged. Now the
    copy is told at its name as a second definition at once; so is an
    invalid copy of an invalid job, and none of a job named nowhere else.
    The running job stays as it runs. Told again from the cache."""
    path = reconciled_template(tmp_path)
    before = placements(path)["text/llama-lora-sft"]
    own = (path / "jobs/text/llama-lora-sft.yaml").read_text()
    bad = own.replace("replicas: 1", "replicas: -1")
    assert bad != own
    other = (path / "jobs/text/tokenizer-ablation.yaml").read_text().replace(
        "tokenizer-ablation", "lonely").replace("replicas: 1", "replicas: -1")
    write_files(path, {"jobs/text/z-copy.yaml": bad, "jobs/text/x-bad.yaml": bad.replace(
        "llama-lora-sft", "twin"), "jobs/text/y-bad.yaml": bad.replace("llama-lora-sft", "twin"),
        "jobs/text/lonely.yaml": other})
    commit_all(path, "an invalid copy")
    named = line_of(own, "name: llama-lora-sft")
    said = (f"jobs/text/z-copy.yaml:{named}: error: PyTorchJob text/llama-lora-sft is also "
            f"defined at jobs/text/llama-lora-sft.yaml:{named}; once this one is fixed, the job "
            f"is defined twice")
    twin = (f"jobs/text/y-bad.yaml:{named}: error: PyTorchJob text/twin is also defined at "
            f"jobs/text/x-bad.yaml:{named}; once this one is fixed")
    for command in (("validate",), ("reconcile", "--now", NOW)):
        proc = fleetq(*command, "--repo", str(path))
        assert said in proc.stderr + proc.stdout, (command, proc.stderr + proc.stdout)
        assert twin in proc.stderr + proc.stdout
        assert proc.stdout.count("is also defined") + proc.stderr.count("is also defined") == 2
    after = placements(path)["text/llama-lora-sft"]
    assert (after["phase"], after["cluster"], after.get("sourceInvalid")) == \
        ("Admitted", before["cluster"], None)
    # the next reconcile patches the fleet read from the cache: told again
    write_files(path, {"jobs/text/lonely.yaml": other.replace("replicas: -1", "replicas: 1")})
    commit_all(path, "one fixed")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0 and said in proc.stderr and twin in proc.stderr, proc.stderr
    assert placements(path)["text/lonely"]["phase"] != "Invalid"


@pytest.mark.parametrize("cache", ["cache", "no cache"])
def test_a_running_job_whose_file_turns_invalid_keeps_what_it_was_sent_with(
        tmp_path: Path, cache: str) -> None:
    """The template's RayJob ``video-frame-stats`` runs with the ConfigMap of
    its code (same file, ``propagateDeps``). A request that is no quantity
    makes the job invalid while the file still parses: the job keeps its
    placement, and its ConfigMap stays on the cluster with it (the job's
    manifest as the state rendered it names it), with a cache or without, even
    once the ConfigMap's document is deleted too; fixing the file renders it
    again."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    flags = ["--no-cache"] if cache == "no cache" else []
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, *flags).returncode == 0
    (key, item), = [(k, i) for k, i in placements(path).items()
                    if k.startswith("video/video-frame-stats")]
    folder = f"clusters/{item['cluster']}/video/"
    config = folder + "configmap-video-frame-stats-code.yaml"
    sent = {f: state_show(path, f) for f in git(path, "ls-tree", "-r", "--name-only",
                                                 "fleetq/state").split()
            if f.startswith(folder)}
    assert config in sent and len(sent) >= 4, sent  # the job, its PodGroup, ConfigMap, Namespace

    source = path / "jobs/video/video-frame-stats.yaml"
    good = source.read_text()
    bad = good.replace('requests: {cpu: "2"', 'requests: {cpu: "1x2"', 1)
    assert bad != good
    source.write_text(bad)
    commit_all(path, "a request that is no quantity")
    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T11:10:00Z", *flags)
    assert proc.returncode == 0 and "jobs/video/video-frame-stats.yaml:" in proc.stderr
    assert placements(path)[key]["sourceInvalid"] is True
    assert {f: state_show(path, f) for f in sent} == sent
    assert fleetq("plan", "--repo", str(path), "--exit-code",
                  "--now", "2026-11-29T11:10:00Z", *flags).returncode == 0

    source.write_text(bad.split("\n---\n")[0] + "\n")  # (the ConfigMap's document goes too)
    assert "kind: ConfigMap" in bad and "kind: ConfigMap" not in source.read_text()
    commit_all(path, "and no ConfigMap")
    assert fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T11:20:00Z",
                  *flags).returncode == 0
    assert {f: state_show(path, f) for f in sent} == sent

    source.write_text(good)
    commit_all(path, "fixed")
    assert fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T11:30:00Z",
                  *flags).returncode == 0
    assert "sourceInvalid" not in placements(path)[key]
    assert {f: state_show(path, f) for f in sent} == sent


def test_a_dependency_deleted_under_a_running_job_stays_with_it_and_is_warned_of(
        tmp_path: Path) -> None:
    """The template's RayJob ``video-frame-stats`` runs with the ConfigMap of
    its code. The ConfigMap's document is deleted while the job still mounts
    it: the cluster would delete it under the job, whose pods would then not
    start again. It stays as it was sent, with a warning at the job's line;
    defined again, it is rendered from its file, and it goes with the job."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    (key, item), = [(k, i) for k, i in placements(path).items()
                    if k.startswith("video/video-frame-stats")]
    config = f"clusters/{item['cluster']}/video/configmap-video-frame-stats-code.yaml"
    was = state_show(path, config)
    assert was is not None
    source = path / "jobs/video/video-frame-stats.yaml"
    good = source.read_text()
    source.write_text(good.split("\n---\n")[0] + "\n")
    commit_all(path, "no ConfigMap")
    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T11:10:00Z")
    assert proc.returncode == 0, proc.stderr
    warned = [line for line in proc.stderr.splitlines() if "video-frame-stats-code" in line]
    assert warned == [
        f"jobs/video/video-frame-stats.yaml:{line_of(good, 'kind: RayJob') - 1}: warning: "
        f"ConfigMap 'video-frame-stats-code', which the job RayJob {key} names, is defined "
        f"by no file of the fleet now: it stays on "
        f"{item['cluster']} as it was sent, while the job runs there (else the cluster would "
        f"delete it under the job's pods); define it again, or remove it from the job"], \
        proc.stderr
    assert placements(path)[key]["phase"] == "Admitted"
    assert state_show(path, config) == was

    source.write_text(good)
    commit_all(path, "the ConfigMap again")
    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T11:20:00Z")
    assert proc.returncode == 0 and "video-frame-stats-code" not in proc.stderr, proc.stderr
    assert state_show(path, config) == was
    git(path, "rm", "-q", "jobs/video/video-frame-stats.yaml")
    commit_all(path, "no job")
    assert fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T11:30:00Z"
                  ).returncode == 0
    assert state_show(path, config) is None


def test_jobs_of_two_kinds_with_one_name_share_no_gang(tmp_path: Path) -> None:
    """A PyTorchJob ``mnist`` runs; a batch Job ``mnist`` in the same namespace
    would share its gang (the PodGroup and gang labels are named by the job's
    name). Both are errors; the PyTorchJob keeps its place and its files, the
    Job is not placed, and the state is a fixed point."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    write_files(path, {"jobs/interns/mnist.yaml": pytorchjob("mnist", namespace="interns")})
    commit_all(path, "mnist")
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    item = placements(path)["interns/mnist"]
    assert item["phase"] == "Admitted"
    folder = f"clusters/{item['cluster']}/interns/"
    before = {f: state_show(path, f) for f in git(path, "ls-tree", "-r", "--name-only",
                                                   "fleetq/state").split() if "mnist" in f}
    assert folder + "pytorchjob-mnist.yaml" in before

    write_files(path, {"jobs/interns/mnist-job.yaml": """\
apiVersion: batch/v1
kind: Job
metadata: {name: mnist, namespace: interns}
spec:
  template:
    spec:
      containers: [{name: main, image: busybox, resources: {requests: {cpu: "1"}}}]
      restartPolicy: Never
"""})
    commit_all(path, "a Job named mnist too")
    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 1
    # each told at its name
    named = line_of((path / "jobs/interns/mnist.yaml").read_text(), "name: mnist")
    assert ("jobs/interns/mnist-job.yaml:3: error: Job interns/mnist shares its namespace and "
            f"name with the PyTorchJob at jobs/interns/mnist.yaml:{named}: ") in proc.stdout
    assert f"jobs/interns/mnist.yaml:{named}: error: PyTorchJob interns/mnist shares its " \
           "namespace and name with the Job at jobs/interns/mnist-job.yaml:3: " \
        in proc.stdout, proc.stdout
    assert fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T11:10:00Z"
                  ).returncode == 0
    phases = {i["job"]["kind"]: (i["phase"], i.get("sourceInvalid", False))
              for i in yaml.safe_load(state_show(path, "placements.yaml") or "")["items"]
              if i["job"]["name"] == "mnist"}
    assert phases == {"PyTorchJob": ("Admitted", True), "Job": ("Invalid", False)}
    # (its reason, which status and explain show, names the line validate does)
    reasons = {i["job"]["kind"]: i["reason"]
               for i in yaml.safe_load(state_show(path, "placements.yaml") or "")["items"]
               if i["job"]["name"] == "mnist"}
    assert reasons["Job"].startswith("jobs/interns/mnist-job.yaml:3: Job interns/mnist shares")
    after = {f: state_show(path, f) for f in git(path, "ls-tree", "-r", "--name-only",
                                                  "fleetq/state").split() if "mnist" in f}
    assert after == before
    assert fleetq("plan", "--repo", str(path), "--exit-code",
                  "--now", "2026-11-29T11:10:00Z").returncode == 0


def test_a_job_its_cluster_would_refuse_is_invalid_and_one_running_keeps_its_place(
        tmp_path: Path) -> None:
    """A PyTorchJob ``mnist`` runs; its containers are renamed, so the training
    operator's webhook would refuse it (it runs the job in the container
    named pytorch), and a batch Job ``sleep`` whose pods would restart Always
    is pushed beside it. ``validate`` names each mistake at its line; the
    running job keeps its place and the files it was sent with, and the new
    one is not placed."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    write_files(path, {"jobs/interns/mnist.yaml": pytorchjob("mnist", namespace="interns")})
    commit_all(path, "mnist")
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    assert placements(path)["interns/mnist"]["phase"] == "Admitted"
    before = {f: state_show(path, f) for f in git(path, "ls-tree", "-r", "--name-only",
                                                   "fleetq/state").split() if "mnist" in f}
    assert before

    write_files(path, {
        "jobs/interns/mnist.yaml": pytorchjob("mnist", namespace="interns").replace(
            "name: pytorch", "name: trainer"),
        "jobs/interns/sleep.yaml": batchjob("sleep", namespace="interns").replace(
            "      restartPolicy: Never\n", "")})
    commit_all(path, "a container renamed, a Job with no restart policy")
    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 1
    refused = ("none is named pytorch: the training operator runs the job in the container of "
               "that name, and its webhook refuses a replica without one; fix the manifest")
    for line, role in ((13, "Master"), (23, "Worker")):
        assert (f"jobs/interns/mnist.yaml:{line}: error: spec.pytorchReplicaSpecs.{role}."
                f"template.spec.containers: {refused}") in proc.stdout, proc.stdout
    assert ("jobs/interns/sleep.yaml:9: error: spec.template.spec.restartPolicy is missing: "
            "the API server refuses a Job whose pods would restart Always, a pod's default; set "
            "it to Never or OnFailure; fix the manifest") in proc.stdout, proc.stdout

    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    items = placements(path)
    assert (items["interns/mnist"]["phase"], items["interns/mnist"].get("sourceInvalid")) == (
        "Admitted", True)
    assert items["interns/sleep"]["phase"] == "Invalid"
    after = {f: state_show(path, f) for f in git(path, "ls-tree", "-r", "--name-only",
                                                  "fleetq/state").split() if "mnist" in f}
    assert after == before


def test_a_field_of_the_wrong_type_makes_a_job_invalid_and_a_misspelt_one_is_warned_of(
        tmp_path: Path) -> None:
    """A batch Job whose command is a string (the API server takes a list)
    is invalid, told at its line; one whose nodeSelector is misspelt runs,
    and is warned of at its line (its cluster would drop the field)."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    image = "        image: registry.example.com/train:v1\n"
    write_files(path, {
        "jobs/interns/typed.yaml": batchjob("typed", namespace="interns").replace(
            image, image + "        command: python train.py\n"),
        "jobs/interns/typo.yaml": batchjob("typo", namespace="interns").replace(
            "      restartPolicy: Never\n", "      restartPolicy: Never\n"
            "      nodeSelectr: {pool: cpu}\n")})
    commit_all(path, "two jobs")
    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 1
    lines = [line for line in proc.stdout.splitlines() if "jobs/interns/" in line]
    assert lines == [
        "jobs/interns/typed.yaml:14: error: spec.template.spec.containers[0].command must be "
        "a list, not a string 'python train.py': the API server refuses it; write it as a "
        "list, one item per line (- item); fix the manifest",
        "jobs/interns/typo.yaml:11: warning: spec.template.spec.nodeSelectr: PodSpec has no "
        "field 'nodeSelectr': the API server drops it (or refuses the job, under strict field "
        "validation); nodeSelector was meant, perhaps"], proc.stdout
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    items = placements(path)
    assert (items["interns/typed"]["phase"], items["interns/typo"]["phase"]) == (
        "Invalid", "Admitted")


def test_jobs_named_by_generate_name_in_a_file_of_several_are_warned_of(
        tmp_path: Path) -> None:
    """Two batch Jobs with ``generateName: sweep-`` in one file: each is named
    by its place in the file, so each is warned of (deleting the first would
    give the second the first's name); a file of one such job is not."""
    doc = """\
apiVersion: batch/v1
kind: Job
metadata: {generateName: sweep-, namespace: platform}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: c, image: busybox, args: ["--lr=%s"], resources: {requests: {cpu: "1"}}}
"""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    write_files(path, {"jobs/platform/sweep.yaml": doc % "0.1" + "---\n" + doc % "0.01",
                       "jobs/platform/one.yaml": doc % "0.5"})
    commit_all(path, "a sweep")
    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 0, proc.stdout
    warned = [line for line in proc.stdout.splitlines() if "generateName" in line]
    assert [line.split(": warning: ")[0] for line in warned] == [  # (at their generateName)
        "jobs/platform/sweep.yaml:3", "jobs/platform/sweep.yaml:13"], proc.stdout
    assert all("give it a metadata.name" in line for line in warned)


def test_a_broken_file_goes_on_in_its_newest_good_version_not_the_states(
        tmp_path: Path) -> None:
    """gpu-hz-a gets a label no policy selects on, in a commit that changes no
    decision (no state commit); its file then breaks. The fleet goes on with
    the labelled version, the newest good one, not the one the state was made
    from."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    file = path / "clusters/gpu-hz-a.yaml"
    text = file.read_text()
    assert "    region: cn-hangzhou\n" in text
    file.write_text(text.replace("    region: cn-hangzhou\n",
                                 "    region: cn-hangzhou\n    owner: platform\n"))
    commit_all(path, "gpu-hz-a is the platform team's")
    one_node = git(path, "rev-parse", "HEAD:clusters/gpu-hz-a.yaml").strip()
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0 and "no change" in proc.stdout, proc.stdout
    file.write_text(file.read_text().replace("  gangDialect: ack\n",
                                             "  gangDialect: ack\n  gangDialect: ack\n"))
    commit_all(path, "a key twice")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert (f"clusters/gpu-hz-a.yaml: warning: the fleet goes on with this file's last good "
            f"version (blob {one_node[:12]})") in proc.stderr, proc.stderr


def test_a_symbolic_link_is_told_as_one(tmp_path: Path) -> None:
    """git stores a link as the path it points to: the error says so, not that
    the file is a string."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    (path / "jobs/text/linked.yaml").symlink_to("../video/video-mae-pretrain.yaml")
    commit_all(path, "a link")
    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 1
    assert ("jobs/text/linked.yaml:1: error: it holds only the path "
            "'../video/video-mae-pretrain.yaml': is it a symbolic link? fleetq reads what git "
            "stores for a link, the path it points to, not the file there") in proc.stdout
    (path / "jobs/text/dangling.yaml").symlink_to("nowhere")  # (told as "a string" before)
    commit_all(path, "a link to nothing")
    proc = fleetq("validate", "--repo", str(path))
    assert "jobs/text/dangling.yaml:1: error: it holds only the path 'nowhere': is it a " \
        "symbolic link?" in proc.stdout, proc.stdout


INTRUDERS = {  # a new file, sorting first, that defines again what the fleet has
    "configmap": ("jobs/aaa/dup-cm.yaml", """\
apiVersion: v1
kind: ConfigMap
metadata: {name: video-frame-stats-code, namespace: video}
data: {frame_stats.py: "print('not the real code')"}
""", "ConfigMap video/video-frame-stats-code is also defined at "
         "jobs/video/video-frame-stats.yaml:"),
    "member cluster": ("clusters/a-dup.yaml", """\
apiVersion: fleetq.io/v1alpha1
kind: MemberCluster
metadata: {name: gpu-bj-b}
spec:
  resourceReservation: false
  gangDialect: ack
  nodeGroups:
  - {name: big, count: 10, allocatable: {cpu: "128", memory: 1024Gi, nvidia.com/gpu: "8"}}
""", "MemberCluster gpu-bj-b is also defined at clusters/gpu-bj-b.yaml:"),
    "priority class": ("aa-team.yaml", """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 100000
globalDefault: true
""", "PriorityClass low is also defined at priorityclasses.yaml:"),
    "global default": ("aa-team.yaml", """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: team}
value: 100000
globalDefault: true
""", "PriorityClass team is globalDefault, as PriorityClass normal at priorityclasses.yaml:"),
    # (a fleet has one quota tree, whatever its name: a second took the fleet over)
    "quota tree": ("quota/aaa.yaml", quota_tree_yaml("{cpu: 10, memory: 10Gi}", """\
    - {name: all, max: {cpu: 10, memory: 10Gi}, min: {cpu: 10, memory: 10Gi},
       namespaces: [platform, text, video, interns]}
"""), "ElasticQuotaTree elasticquotatree is a second ElasticQuotaTree, beside "
         "ElasticQuotaTree elasticquotatree at quota/elasticquotatree.yaml:"),
}


@pytest.mark.parametrize("cache", ["cache", "no cache"])
@pytest.mark.parametrize("what", list(INTRUDERS))
def test_a_new_file_defining_what_the_fleet_has_again_takes_nothing_over(
        tmp_path: Path, what: str, cache: str) -> None:
    """A new file (its name sorting first) defines a running job's ConfigMap, a
    member cluster, a PriorityClass, or a second globalDefault PriorityClass:
    ``validate`` names both places and exits 1; ``reconcile`` says so on the new
    file, leaves it out and renders every cluster as it was (the running jobs'
    files, their ConfigMaps, PodGroups); ``plan --exit-code`` is 0 right after,
    and so on the next commit. Removing the file changes nothing."""
    path = reconciled_template(tmp_path)
    flags = ["--no-cache"] if cache == "no cache" else []
    was = _cluster_files(path)
    items = placements(path)
    name, text, said = INTRUDERS[what]
    # (told at the document, a second globalDefault at that line)
    at = line_of(text, "globalDefault") if what == "global default" else 1
    write_files(path, {name: text})
    commit_all(path, f"a new file: {what}")
    proc = fleetq("validate", "--repo", str(path), *flags)
    assert proc.returncode == 1, proc.stdout
    assert f"{name}:{at}: error: " in proc.stdout and said.split(" at ")[-1] in proc.stdout
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW, *flags)
    assert proc.returncode == 0, proc.stderr
    assert f"{name}:{at}: error: {said}" in proc.stderr
    assert "the fleet goes on with that one, and without this file" in proc.stderr
    assert _cluster_files(path) == was
    assert placements(path) == items
    assert fleetq("plan", "--repo", str(path), "--exit-code", "--now", NOW,
                  *flags).returncode == 0
    write_files(path, {"README.md": "another commit\n"})
    commit_all(path, "unrelated")
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, *flags).returncode == 0
    assert _cluster_files(path) == was and placements(path) == items
    git(path, "rm", "-q", name)
    commit_all(path, "removed")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW, *flags)
    assert proc.returncode == 0 and "error" not in proc.stderr, proc.stderr
    assert _cluster_files(path) == was


@pytest.mark.parametrize("cache", ["cache", "no cache"])
def test_the_file_that_defined_an_object_first_keeps_it_however_long_ago(
        tmp_path: Path, cache: str) -> None:
    """Which of two files keeps a ConfigMap is decided by the newest source tree
    of the state where one alone defined it, however many state commits were
    made since from trees with both (each cluster's report makes one): the
    file that came second stays left out, with or without the cache."""
    path = reconciled_template(tmp_path)
    flags = ["--no-cache"] if cache == "no cache" else []
    name, text, said = INTRUDERS["configmap"]
    # (with a job that cannot be read: the state changes, and is made from this tree)
    write_files(path, {name: text, "jobs/default/lots.yaml": pytorchjob("lots", cpu="lots")})
    commit_all(path, "a new file: configmap")
    before = git(path, "rev-parse", STATE).strip()
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, *flags).returncode == 0
    state = git(path, "rev-parse", STATE).strip()
    assert state != before
    was = _cluster_files(path)
    message = git(path, "log", "-1", "--format=%B", state)
    tree = git(path, "rev-parse", f"{state}^{{tree}}").strip()
    for _ in range(100):  # (as reports would: the state's tree, made from the same source)
        state = git(path, "commit-tree", tree, "-p", state, "-m", message).strip()
    git(path, "update-ref", f"refs/heads/{STATE}", state)
    write_files(path, {"README.md": "another commit\n"})
    commit_all(path, "unrelated")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW, *flags)
    assert proc.returncode == 0, proc.stderr
    assert f"{name}:1: error: {said}" in proc.stderr
    assert "which defined it before this file did" in proc.stderr
    assert git(path, "rev-parse", STATE).strip() == state  # (nothing changed)
    assert _cluster_files(path) == was


def test_an_object_defined_in_two_files_from_the_start_counts_in_neither(
        tmp_path: Path) -> None:
    """The first reconcile knows no earlier fleet: neither MemberCluster
    counts (which would depend on the files' names); both places are errors
    saying which files to fix; the rest of the fleet reconciles."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    name, text, _ = INTRUDERS["member cluster"]
    write_files(path, {name: text})
    commit_all(path, "two of gpu-bj-b")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q")
    assert proc.returncode == 0, proc.stderr
    for here, there in ((name, "clusters/gpu-bj-b.yaml"), ("clusters/gpu-bj-b.yaml", name)):
        assert f"{here}:" in proc.stderr and f"MemberCluster gpu-bj-b is also defined at {there}:" \
            in proc.stderr
    assert "(in clusters/a-dup.yaml, clusters/gpu-bj-b.yaml)" in proc.stderr
    clusters = {i.get("cluster") for i in placements(path).values()}
    assert "gpu-bj-b" not in clusters and clusters - {None}


def test_two_quota_trees_from_the_start_count_in_neither(tmp_path: Path) -> None:
    """The second tree was told "only one is supported", and the first by
    the files' names was used as the fleet's. Neither counts now: each is an
    error naming the other, and each job that queues is Invalid, told why."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    name, text, _ = INTRUDERS["quota tree"]
    write_files(path, {name: text.replace("name: elasticquotatree", "name: other")})
    commit_all(path, "two quota trees")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q")
    assert proc.returncode == 0, proc.stderr
    assert f"{name}:1: error: ElasticQuotaTree other is one of 2 ElasticQuotaTrees, with " \
           f"ElasticQuotaTree elasticquotatree at quota/elasticquotatree.yaml:" in proc.stderr
    assert (": error: ElasticQuotaTree elasticquotatree is one of 2 ElasticQuotaTrees, with "
            f"ElasticQuotaTree other at {name}:1: a fleet has one, so none counts until all "
            f"but one are removed (in {name}, quota/elasticquotatree.yaml)") in proc.stderr
    items = placements(path).values()
    assert {i["phase"] for i in items} == {"Invalid"}
    assert all("the fleet has 2 ElasticQuotaTrees (in quota/aaa.yaml, "
               "quota/elasticquotatree.yaml), and none counts until all but one are removed"
               in i["reason"] for i in items)
    git(path, "rm", "-q", name)
    commit_all(path, "one quota tree")
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    assert "Invalid" not in {i["phase"] for i in placements(path).values()}


@pytest.mark.parametrize("weight", [".inf", ".nan", "0.0001"])
def test_a_quota_weight_that_is_no_usable_number_is_told_and_the_fleet_goes_on(
        tmp_path: Path, weight: str) -> None:
    """``weight: .inf`` crashed every command with an OverflowError, ``.nan``
    made the whole Fleet "malformed" at its first line, and ``0.0001`` was a
    weight of 0. Each is an error at its line; fleet.yaml is read as it last
    was, and reading older versions of it (where the state goes) cannot crash
    on one either."""
    path = reconciled_template(tmp_path)
    before = placements(path)
    said = _break(path, "fleet.yaml", "      weight: 2", f"      weight: {weight}")
    line = line_of((path / "fleet.yaml").read_text(), f"weight: {weight}")
    error = (f"fleet.yaml:{line}: error: spec.quotas.root/algorithm/video.weight must be a "
             f"finite number > 0")
    assert error in said and "Traceback" not in said, said
    assert placements(path) == before
    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 1 and error in proc.stdout, proc.stdout + proc.stderr
    for command in (["status"], ["queue"], ["plan", "--now", NOW],
                    ["explain", "tokenizer-ablation", "--now", NOW]):
        proc = fleetq(*command, "--repo", str(path))
        assert proc.returncode == 0, (command, proc.stderr)
    # fleet.yaml that does not parse: where the state goes is read from its history,
    # through the version with the bad weight, to the one before
    write_files(path, {"fleet.yaml": "spec: [\n"})
    commit_all(path, "broken")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert placements(path) == before


def test_each_binding_mistake_of_a_job_is_told_at_its_field_line_in_one_run(
        tmp_path: Path) -> None:
    """A quota label naming no quota, a WorkloadPriorityClass label naming no
    class and a priorityClassName naming none were told at the document's
    first line, and one a job (the next only once that was fixed). Each is
    told at its own line, at once; the same from the parsed-jobs cache."""
    path = reconciled_template(tmp_path)
    hotfix = "jobs/text/llm-sft-hotfix.yaml"
    ablation = "jobs/text/tokenizer-ablation.yaml"
    text = (path / hotfix).read_text()
    assert "quota.scheduling.alibabacloud.com/name: text" in text
    assert "kueue.x-k8s.io/priority-class: urgent" in text
    write_files(path, {
        hotfix: text.replace("quota.scheduling.alibabacloud.com/name: text",
                             "quota.scheduling.alibabacloud.com/name: nosuch")
                    .replace("priority-class: urgent", "priority-class: urgnet"),
        ablation: (path / ablation).read_text().replace("priorityClassName: low",
                                                        "priorityClassName: lwo")})
    commit_all(path, "three typos")
    hotfix_text, ablation_text = (path / hotfix).read_text(), (path / ablation).read_text()
    expected = [
        f"{hotfix}:{line_of(hotfix_text, 'priority-class: urgnet')}: error: "
        f"WorkloadPriorityClass 'urgnet' does not exist (did you mean urgent?); create it or "
        f"fix label kueue.x-k8s.io/priority-class",
        f"{hotfix}:{line_of(hotfix_text, 'name: nosuch')}: error: label "
        f"quota.scheduling.alibabacloud.com/name='nosuch' names no quota of the "
        f"ElasticQuotaTree",
        f"{ablation}:{line_of(ablation_text, 'priorityClassName: lwo')}: error: PriorityClass "
        f"'lwo' does not exist (did you mean low?); create it or fix priorityClassName",
    ]
    for _ in range(2):  # (the second from the cache)
        proc = fleetq("validate", "--repo", str(path))
        assert proc.returncode == 1
        for said in expected:
            assert said in proc.stdout, proc.stdout
        assert "3 error(s)" in proc.stdout, proc.stdout
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0 and all(said in proc.stderr for said in expected), proc.stderr
    reason = placements(path)["text/tokenizer-ablation"]["reason"]
    assert reason.startswith(f"{ablation}:{line_of(ablation_text, 'priorityClassName: lwo')}: "
                             f"PriorityClass 'lwo'"), reason


def test_a_job_that_names_no_namespace_is_told_so_at_its_metadata(tmp_path: Path) -> None:
    """A job with no namespace, on a tree listing no ``default``, was told
    "namespace 'default' is listed on no leaf quota" at its first line, as if
    it had named it. Each way it is written, and from the cache."""
    path = reconciled_template(tmp_path)
    job = "jobs/platform/dataset-shard-index.yaml"
    text = (path / job).read_text()
    assert "  namespace: platform\n" in text
    write_files(path, {
        job: text.replace("  namespace: platform\n", ""),
        "jobs/platform/flow.yaml": "apiVersion: batch/v1\nkind: Job\n"
        "metadata: {name: flow-job}\nspec: {template: {spec: {restartPolicy: Never, "
        "containers: [{name: c, image: busybox}]}}}\n",
        "jobs/platform/named.yaml": "apiVersion: batch/v1\nkind: Job\n"
        "metadata: {name: named-job, namespace: nowhere}\nspec: {template: {spec: {"
        "restartPolicy: Never, containers: [{name: c, image: busybox}]}}}\n"})
    commit_all(path, "no namespaces")
    unset = ("the job names no namespace, so it is in 'default', which is listed on no leaf "
             "quota; set its metadata.namespace to one a leaf lists (e.g. ")
    expected = [f"{job}:{line_of(text, 'metadata:')}: error: {unset}",
                f"jobs/platform/flow.yaml:3: error: {unset}",
                "jobs/platform/named.yaml:3: error: namespace 'nowhere' is listed on no leaf "
                "quota"]
    for _ in range(2):  # (the second from the cache)
        proc = fleetq("validate", "--repo", str(path))
        assert proc.returncode == 1
        for said in expected:
            assert said in proc.stdout, proc.stdout
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    reason = placements(path)["default/dataset-shard-index"]["reason"]
    assert reason.startswith(f"{job}:{line_of(text, 'metadata:')}: the job names no namespace"), \
        reason


def test_a_job_naming_a_priority_class_defined_twice_is_told_so(tmp_path: Path) -> None:
    """Both definitions of ``low`` are left out: the jobs naming it were told
    "PriorityClass 'low' does not exist; create it", while it was there twice."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    name, text, _ = INTRUDERS["priority class"]
    write_files(path, {name: text})
    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 1
    assert ("jobs/text/tokenizer-ablation.yaml:20: error: PriorityClass 'low' is defined more "
            "than once (see the errors of fleetq validate): none of them counts; remove or "
            "rename all but one") in proc.stdout
    assert "'low' does not exist" not in proc.stdout
    assert "PriorityClass 'high' does not exist" not in proc.stdout
    write_files(path, {name: text.replace("name: low", "name: lower")})
    proc = fleetq("validate", "--repo", str(path))
    assert "tokenizer-ablation" not in proc.stdout, proc.stdout


def test_a_policy_naming_a_cluster_the_fleet_lacks_is_warned_of(tmp_path: Path) -> None:
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    policy = (path / "policies/gang-queued.yaml").read_text()
    assert "  placement:\n    replicaScheduling:" in policy
    pinned = policy.replace(
        "  placement:\n    replicaScheduling:",
        "  placement:\n    clusterAffinity:\n      clusterNames: [gpu-hz-x]\n"
        "    replicaScheduling:")
    write_files(path, {"policies/gang-queued.yaml": pinned})
    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 0, proc.stdout
    line = line_of(pinned, "clusterAffinity:")
    assert (f"policies/gang-queued.yaml:{line}: warning: PropagationPolicy "
            f"interns/gang-queued: its clusterAffinity names gpu-hz-x, which is no "
            f"MemberCluster of the fleet (cpu-sh-c, gpu-bj-b, gpu-hz-a); fix the name or add "
            f"the cluster") in proc.stdout
    commit_all(path, "a cluster not there")
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    reasons = {i["reason"] for i in placements(path).values()
               if i["job"]["namespace"] == "interns"}
    assert reasons == {"no member cluster is a candidate for it under PropagationPolicy "
                       "interns/gang-queued: its clusterAffinity names gpu-hz-x, which is no "
                       "MemberCluster of the fleet"}


WORKFLOW = """\
name: validate
on:
  pull_request:
jobs:
  validate:
    runs-on: ubuntu-latest
    steps:
    - run: fleetq validate
"""


@pytest.mark.parametrize(("name", "pattern"), [
    (".github/workflows/validate.yaml", ".github/**"),
    ("values.yml", "values.yml"),
])
def test_a_file_that_is_no_manifest_is_told_how_to_exclude(
        tmp_path: Path, name: str, pattern: str) -> None:
    """A CI workflow or a tool's settings in the fleet repo: the error names the
    pattern to exclude (the hidden folder it is in, or the file), and with it
    in fleet.yaml the fleet validates."""
    files = seed_fleet_files()
    files[name] = WORKFLOW
    path = make_fleet_repo(tmp_path / "fleet", files)
    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 1, proc.stdout
    said = (f"{name}:1: error: document has no apiVersion or kind; add both (e.g. apiVersion: "
            f"kubeflow.org/v1, kind: PyTorchJob), or, if the file is not a Kubernetes "
            f"manifest, exclude it in fleet.yaml (spec.exclude: ['{pattern}'])")
    assert said in proc.stdout + proc.stderr
    write_files(path, {"fleet.yaml": "apiVersion: fleetq.io/v1alpha1\nkind: Fleet\n"
                                     "metadata: {name: fleet}\n"
                                     f"spec: {{exclude: ['{pattern}']}}\n"})
    commit_all(path, "exclude it")
    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_plan_and_validate_give_a_problem_as_the_same_object(tmp_path: Path) -> None:
    """``-o json``: path, line, severity and message, for a script to read the
    same from both (plan gave each as a line of text)."""
    files = seed_fleet_files()
    files["jobs/default/broken.yaml"] = BROKEN_YAML
    path = make_fleet_repo(tmp_path / "fleet", files)
    checked = fleetq("validate", "--repo", str(path), "-o", "json")
    planned = fleetq("plan", "--repo", str(path), "--now", NOW, "-o", "json")
    assert planned.returncode == 0, planned.stderr
    told = [p for p in json.loads(checked.stdout) if p["path"] == "jobs/default/broken.yaml"]
    assert [(p["line"], p["severity"]) for p in told] == [(BROKEN_YAML_LINE, "error")]
    assert [p for p in json.loads(planned.stdout)["problems"]
            if p["path"] == "jobs/default/broken.yaml"] == told
    # a problem of a file as a whole names no line (text: "path: warning: ...")
    files["clusters/extra.YAML"] = "kind: MemberCluster\n"
    path = make_fleet_repo(tmp_path / "other", files)
    whole = [p for p in json.loads(fleetq("validate", "--repo", str(path), "-o", "json").stdout)
             if p["path"] == "clusters/extra.YAML"]
    assert len(whole) == 1 and whole[0]["line"] is None, whole
    said = fleetq("validate", "--repo", str(path)).stdout
    assert "clusters/extra.YAML: warning: " in said, said


def test_a_plan_that_changes_nothing_but_breaks_a_file_does_not_say_up_to_date(
        tmp_path: Path) -> None:
    """A pull request whose only change is a typo in the quota tree: the fleet
    goes on with the tree's last good version, so nothing changes, but the
    plan does not call that up to date."""
    path = reconciled_template(tmp_path)
    tree = path / "quota/elasticquotatree.yaml"
    text = tree.read_text()
    tree.write_text(text.replace("        max:\n          cpu: 320",
                                 "        mxa:\n          cpu: 320"))
    assert tree.read_text() != text
    commit_all(path, "a typo")
    planned = fleetq("plan", "--repo", str(path), "--now", NOW, "--exit-code")
    assert planned.returncode == 0, planned.stderr
    assert "is not a field of ElasticQuotaTree: did you mean" in planned.stdout
    assert "up to date" not in planned.stdout
    assert planned.stdout.rstrip().endswith(
        "No changes to the state, but 1 error(s) above: the fleet goes on as it was until "
        "they are fixed, and `fleetq validate` exits 1 until then."), planned.stdout
    assert fleetq("validate", "--repo", str(path)).returncode == 1


def test_a_policy_deleted_leaves_its_running_jobs_and_what_they_were_sent_with(
        tmp_path: Path) -> None:
    """The template's fleet-default policy placed five running jobs, one of them
    a RayJob sent with its ConfigMap: deleted, it pulled them all off their
    clusters. Now they run on, their files and the ConfigMap kept as they were
    (Karmada leaves a workload whose policy is deleted); the jobs that waited are
    Inadmissible; and with the policy back, the state is what it was."""
    path = reconciled_template(tmp_path)

    def cluster_files() -> set[str]:  # (each file of the state but placements.yaml, its blob)
        return {line for line in git(path, "ls-tree", "-r", STATE).splitlines()
                if not line.endswith("\tplacements.yaml")}

    before, tree = cluster_files(), rev(path, f"{STATE}^{{tree}}")
    running = {k for k, v in placements(path).items() if v["phase"] == "Admitted"
               and v["policy"] == "ClusterPropagationPolicy fleet-default"}
    assert len(running) == 5 and "video/video-frame-stats-55bdd" in running
    assert any("/configmap-video-frame-stats-code.yaml" in line for line in before)
    git(path, "rm", "-q", "policies/fleet-default.yaml")
    commit_all(path, "fleet-default deleted")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    items = placements(path)
    assert all(items[k]["phase"] == "Admitted" and "keeping the last good placement"
               in items[k]["reason"] for k in running)
    assert {k for k, v in items.items() if v["phase"] == "Inadmissible"} >= {
        "text/tokenizer-ablation", "text/embedding-eval-ray"}
    assert cluster_files() == before
    git(path, "revert", "--no-edit", "HEAD")
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    assert rev(path, f"{STATE}^{{tree}}") == tree


def _told_by_every_read(path: Path, said: str) -> list[str]:
    """What a reconcile patching the fleet from the last one's, validate, and a
    reconcile reading it whole print: each says ``said``."""
    outs = []
    for command in (["reconcile", "--now", NOW], ["validate"],
                    ["reconcile", "--now", NOW, "--no-cache"]):
        proc = fleetq(*command, "--repo", str(path))
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0 and said in out, out
        outs.append(out)
    return outs


def _read_once_renamed(path: Path, file: str, job: str) -> None:
    """The job of ``file``, not read as it is named, is read once it is renamed
    ``*.yaml`` (and nothing is said of it then)."""
    assert job not in placements(path)
    git(path, "mv", file, file.rpartition(".")[0] + ".yaml")
    commit_all(path, "renamed")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0 and f"{file}:" not in proc.stderr, proc.stderr
    assert placements(path)[job]["phase"] in ("Admitted", "Queued")


def test_a_kubernetes_object_in_json_is_told_not_read_until_renamed(tmp_path: Path) -> None:
    """``kubectl get -o json > job.json`` was passed over without a word, as was
    a job's YAML in a file named *.json; a tool's JSON (renovate.json, a
    broken one) is no concern of fleetq's. Told
    whether the fleet is read whole or patched from the last reconcile's, and
    read once renamed (JSON is YAML)."""
    path = make_fleet_repo(tmp_path / "fleet", seed_fleet_files())
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    manifest = yaml.safe_load(pytorchjob("as-json"))
    listed = {"apiVersion": "v1", "kind": "List", "items": [
        yaml.safe_load(pytorchjob(name)) for name in ("l1", "l2")]}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}
    api_list = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJobList",
                "items": [yaml.safe_load(pytorchjob("a1"))]}
    write_files(path, {"jobs/default/as-json.json": json.dumps(manifest, indent=2),
                       "jobs/default/api.json": json.dumps(api_list),
                       "jobs/default/listed.json": json.dumps(listed),
                       "jobs/default/empty.json": '{"apiVersion": "v1", "kind": "List", '
                                                  '"items": []}',
                       "deploy.json": json.dumps(deployment),
                       "renovate.json": '{"extends": ["config:base"]}',
                       "broken.json": "{not json",
                       "jobs/default/yaml.json": pytorchjob("as-yaml"),
                       "tool.json": "a: [1, 2]\n"})
    commit_all(path, "a job in JSON")
    yaml_said = ("jobs/default/yaml.json:1: warning: not read: it holds a file of YAML, not "
                 "JSON (PyTorchJob as-yaml), and fleetq reads files named *.yaml and *.yml; "
                 "rename it to jobs/default/yaml.yaml, or exclude it in fleet.yaml")
    for out in _told_by_every_read(path, yaml_said):
        assert "tool.json" not in out, out  # (YAML, of no object fleetq reads)
    listed_said = ("jobs/default/listed.json:1: warning: not read: it holds a List in JSON "
                   "(PyTorchJob l1, PyTorchJob l2), and fleetq reads files named *.yaml and "
                   "*.yml; rename it to jobs/default/listed.yaml (JSON is YAML)")
    assert listed_said in _told_by_every_read(path, listed_said)[0]
    api_said = ("jobs/default/api.json:1: warning: not read: it holds a PyTorchJobList in JSON "
                "(PyTorchJob a1), and fleetq reads YAML files (*.yaml, *.yml) of Kubernetes "
                "objects, or of v1 Lists of them: write its items as a v1 List")
    assert api_said in _told_by_every_read(path, api_said)[0]
    said = ("jobs/default/as-json.json:1: warning: not read: it holds a Kubernetes object in "
            "JSON (PyTorchJob as-json), and fleetq reads files named *.yaml and *.yml; rename "
            "it to jobs/default/as-json.yaml (JSON is YAML), or exclude it in fleet.yaml")
    for out in _told_by_every_read(path, said):
        assert "renovate" not in out and "broken.json" not in out, out
        assert "deploy.json" not in out and "empty.json" not in out, out  # (read by none)
    _read_once_renamed(path, "jobs/default/as-json.json", "default/as-json")
    _read_once_renamed(path, "jobs/default/listed.json", "default/l2")


def _listed(*items: str) -> str:
    """A v1 List of the given manifests, as ``kubectl get -o yaml`` writes one."""
    body = "".join("- " + item.replace("\n", "\n  ").rstrip() + "\n" for item in items)
    return f"apiVersion: v1\nkind: List\nmetadata: {{resourceVersion: \"\"}}\nitems:\n{body}"


def test_the_jobs_of_a_v1_list_are_read_each_as_a_document(tmp_path: Path) -> None:
    """``kubectl get pytorchjobs -o yaml > jobs.yaml`` (a v1 List), which
    ``kubectl apply`` and Argo CD take item by item: each job is read, queued
    and rendered as if written as a document of its own, from the List's file.
    An item without a kind is an error at its own line; the List's jobs then
    keep their places, and the rest of the fleet is reconciled."""
    path = make_fleet_repo(tmp_path / "fleet", seed_fleet_files())
    # (as kubectl writes them: with what the API server set, which is not sent)
    exported = [pytorchjob(name).replace(
        "  namespace: default\n", "  namespace: default\n  resourceVersion: \"4711\"\n"
        f"  uid: 5d0c-{name}\n") + "status:\n  conditions: []\n" for name in ("l1", "l2")]
    write_files(path, {"jobs/default/listed.yaml": _listed(*exported)})
    commit_all(path, "a List of jobs")
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0 and "listed" not in proc.stdout + proc.stderr, proc.stderr
    got = placements(path)
    for name in ("l1", "l2"):
        item = got[f"default/{name}"]
        assert item["source"]["path"] == "jobs/default/listed.yaml"
        assert item["phase"] in ("Admitted", "Queued"), item
    admitted = [i for i in got.values() if i["phase"] == "Admitted" and i["job"]["name"] in
                ("l1", "l2")]
    assert admitted, got
    for item in admitted:
        rendered = state_yaml(path, f"clusters/{item['cluster']}/default/pytorchjob-"
                                    f"{item['job']['name']}.yaml")
        assert rendered["kind"] == "PyTorchJob" and \
            rendered["metadata"]["name"] == item["job"]["name"]
        assert "status" not in rendered and "resourceVersion" not in rendered["metadata"]
        assert "uid" not in rendered["metadata"]
    before = {name: got[f"default/{name}"] for name in ("l1", "l2")}

    kindless = "apiVersion: kubeflow.org/v1\nmetadata: {name: l3, namespace: default}\n"
    write_files(path, {"jobs/default/listed.yaml": _listed(pytorchjob("l1"), pytorchjob("l2"),
                                                            kindless),
                       "jobs/default/alone.yaml": pytorchjob("alone")})
    commit_all(path, "a third item without its kind, and a job beside")
    lines = (path / "jobs/default/listed.yaml").read_text().splitlines()
    line = lines.index("- apiVersion: kubeflow.org/v1", 5 + len(lines) // 2) + 1
    said = (f"jobs/default/listed.yaml:{line}: error: item 3 of the List of document 1 has no "
            f"apiVersion or kind")
    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 1 and said in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert said in proc.stderr, proc.stderr
    got = placements(path)
    assert got["default/alone"]["phase"] in ("Admitted", "Queued")
    for name in ("l1", "l2"):  # (where they ran, they run on)
        assert (got[f"default/{name}"]["phase"], got[f"default/{name}"].get("cluster")) == (
            before[name]["phase"], before[name].get("cluster"))


def test_a_list_leaves_the_names_of_the_jobs_after_it_as_they_were(tmp_path: Path) -> None:
    """A job named by generateName takes its name from its place in its file:
    the documents after a List keep their places (the List's items do not
    count), so that a job running before Lists were read is not renamed (deleted
    and run again); each item of a List has a name of its own."""
    configmap = "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {}}}\ndata: {{a: b}}\n"
    generated = pytorchjob("x").replace("  name: x\n", "  generateName: gen-job-\n")
    text = _listed(configmap.format("c1"), configmap.format("c2"), generated) + "---\n" + \
        generated
    path = make_fleet_repo(tmp_path / "fleet", {**seed_fleet_files(),
                                                "jobs/default/gen.yaml": text})
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    names = {name for name in placements(path) if name.startswith("default/gen-job-")}
    seats = ("jobs/default/gen.yaml#1", "jobs/default/gen.yaml#0/3")
    assert names == {"default/gen-job-" + hashlib.sha256(seat.encode()).hexdigest()[:5]
                     for seat in seats}, names
    assert "deleting or moving a document (or a List's item) before it renames it" in \
        proc.stderr, proc.stderr
    # (told at its generateName)
    last = max(i for i, line in enumerate(text.splitlines(), start=1) if "generateName" in line)
    assert f"jobs/default/gen.yaml:{last}: warning: Job" in proc.stderr or \
        f"jobs/default/gen.yaml:{last}: warning: PyTorchJob" in proc.stderr, proc.stderr


def test_validate_warns_of_a_job_no_policy_selects_at_its_line(tmp_path: Path) -> None:
    """A kubeflow.org/v1 MPIJob in a fleet whose policy selects PyTorchJobs: every
    file read well, and validate passed it; the next reconcile left it
    Inadmissible, as no policy places it. Warned of where it is written."""
    mpijob = ("apiVersion: kubeflow.org/v1\nkind: MPIJob\nmetadata:\n  name: mnist\n"
              "  namespace: default\nspec:\n  mpiReplicaSpecs:\n    Launcher:\n"
              "      replicas: 1\n      template:\n        spec:\n          containers:\n"
              "          - name: l\n            image: x\n            resources:\n"
              "              requests: {cpu: \"1\"}\n")
    path = make_fleet_repo(tmp_path / "fleet", {**seed_fleet_files(),
                                                "jobs/default/mnist.yaml": "\n" + mpijob})
    said = ("jobs/default/mnist.yaml:2: warning: no PropagationPolicy or "
            "ClusterPropagationPolicy selects kubeflow.org/v1 MPIJob default/mnist; add one or "
            "set spec.defaultPolicy in fleet.yaml")
    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 0 and said in proc.stdout, proc.stdout + proc.stderr
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0 and said in proc.stderr, proc.stderr
    assert placements(path)["default/mnist"]["phase"] == "Inadmissible"


def test_a_yaml_file_named_in_capitals_is_told_not_read_until_renamed(tmp_path: Path) -> None:
    """``job.YAML`` was passed over without a word: its job never ran. Told
    whether the fleet is read whole or patched from the last reconcile's."""
    path = make_fleet_repo(tmp_path / "fleet", seed_fleet_files())
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    write_files(path, {"jobs/default/late.YAML": pytorchjob("late")})
    commit_all(path, "a job in capitals")
    said = ("jobs/default/late.YAML: warning: not read: fleetq reads files named *.yaml and "
            "*.yml, in lowercase; rename it to jobs/default/late.yaml (or exclude it in "
            "fleet.yaml)")
    _told_by_every_read(path, said)
    _read_once_renamed(path, "jobs/default/late.YAML", "default/late")


def test_quotas_guaranteed_more_than_the_clusters_hold_are_warned_of(tmp_path: Path) -> None:
    """The leaf's min of 16 cpu on a fleet of 8: a job within that min may wait
    with nothing to reclaim. Warned at the min's line; not for a root's min
    set large so as not to limit (the ACK documents' 999900 cpu), which
    guarantees nobody anything, nor for job slots."""
    path = make_fleet_repo(tmp_path / "fleet", {
        "clusters/c1.yaml": member_cluster("c1", cpu="8", memory="64Gi"),
        "quota.yaml": one_leaf_tree("16", "64Gi", leaf_max_extra=", kube-queue/max-jobs: 9"),
        "policy.yaml": QUEUED_CLUSTER_POLICY})
    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ("quota.yaml:11: warning: the quotas' mins guarantee cpu 16 in all (under quota "
            "root), more than the member clusters hold (8): they promise room that is not "
            "there") in proc.stdout, proc.stdout
    assert "memory" not in proc.stdout and proc.stdout.count("warning") == 2, proc.stdout
    write_files(path, {"quota.yaml": one_leaf_tree("8", "64Gi")})
    commit_all(path, "the fleet's size")
    proc = fleetq("validate", "--repo", str(path))
    assert "0 warning(s)" in proc.stdout, proc.stdout
    seed = make_fleet_repo(tmp_path / "seed", seed_fleet_files())
    proc = fleetq("validate", "--repo", str(seed))
    assert "guarantee" not in proc.stdout, proc.stdout


def _backdated(name: str, created: str) -> str:
    """A one-worker ``pytorchjob`` whose creationTimestamp is ``created``."""
    return pytorchjob(name).replace("metadata:\n", f"metadata:\n  creationTimestamp: {created}\n",
                                    1)


def _one_slot(tmp_path: Path, jobs: dict[str, str]) -> Path:
    """A fleet with room for one small job at a time, "running" admitted
    first, and ``jobs`` (path -> manifest) besides, in one queue."""
    return make_fleet_repo(tmp_path / "fleet", {
        "clusters/c1.yaml": member_cluster("c1", cpu="2", memory="8Gi"),
        "quota.yaml": one_leaf_tree("2", "8Gi"),
        "policy.yaml": QUEUED_CLUSTER_POLICY,
        "jobs/running.yaml": pytorchjob("running"), **jobs})


def _jumps(outcome: Any) -> list[str]:
    return [str(p) for p in outcome.computed.problems if "goes ahead of" in p.message]


def test_a_creation_timestamp_ahead_of_the_clock_is_told_while_the_job_waits(
        tmp_path: Path) -> None:
    """A job dated a year ahead waited behind every job pushed in that year,
    with no word: its enqueue time is told as ahead of the clock, as long as
    it waits; one dated now is not told."""
    path = _one_slot(tmp_path, {
        "jobs/later.yaml": _backdated("later", "2027-11-29T11:00:00Z"),
        "jobs/now.yaml": _backdated("now", "2026-11-29T11:00:00Z")})
    outcome = run_reconcile(path, now="2026-11-29T11:00:00Z")
    told = [str(p) for p in outcome.computed.problems if "ahead of the clock" in p.message]
    assert told == [
        "jobs/later.yaml:4: warning: PyTorchJob default/later: metadata.creationTimestamp "
        "2027-11-29T11:00:00Z, its enqueue time, is ahead of the clock (2026-11-29T11:00:00Z): "
        "it waits behind every job enqueued until then; remove it (the job is enqueued when "
        "pushed) or set it to now"]
    assert placements(path)["default/later"]["phase"] == "Queued"
    write_files(path, {"jobs/pushed.yaml": pytorchjob("pushed")})
    commit_all(path, "a job of now", date="2026-11-29T12:00:00+00:00")
    outcome = run_reconcile(path, now="2026-11-29T12:00:00Z")
    assert [p.path for p in outcome.computed.problems
            if "ahead of the clock" in p.message] == ["jobs/later.yaml"]
    assert placements(path)["default/pushed"]["position"] < \
        placements(path)["default/later"]["position"]


def test_a_creation_timestamp_set_back_is_told_as_a_queue_jump(tmp_path: Path) -> None:
    # room for one job: "running" runs, "waiting" waits, both at the same priority
    path = _one_slot(tmp_path, {
        "jobs/waiting.yaml": pytorchjob("waiting")})
    first = run_reconcile(path)
    assert not _jumps(first)
    waiting_since = placements(path)["default/waiting"]["enqueuedAt"]
    # a new job dated before the one that waits goes ahead of it: told, at its line
    write_files(path, {"jobs/jumper.yaml": _backdated("jumper", "2020-01-01T00:00:00Z")})
    commit_all(path, "a job dated back", date="2026-11-29T12:00:00+00:00")
    told = _jumps(run_reconcile(path, now="2026-11-29T12:00:00Z"))
    assert told == [
        "jobs/jumper.yaml:4: warning: PyTorchJob default/jumper: metadata.creationTimestamp "
        "2020-01-01T00:00:00Z enqueues it before 2026-11-29T12:00:00Z, when it was pushed: it "
        "goes ahead of 1 job(s) waiting in queue root/team at its priority (PyTorchJob "
        "default/waiting); if that is not meant, set it to 2026-11-29T12:00:00Z"], told
    assert placements(path)["default/jumper"]["position"] == 1
    assert placements(path)["default/waiting"]["position"] == 2
    # told once: the next reconcile enqueues it where it now is
    write_files(path, {"jobs/later.yaml": pytorchjob("later")})
    commit_all(path, "a job of now", date="2026-11-29T13:00:00+00:00")
    assert not _jumps(run_reconcile(path, now="2026-11-29T13:00:00Z"))
    # an edit that sets a waiting job's time back is told with the time it had
    write_files(path, {"jobs/waiting.yaml": _backdated("waiting", "2019-06-01T00:00:00Z")})
    commit_all(path, "dated back", date="2026-11-29T14:00:00+00:00")
    told = _jumps(run_reconcile(path, now="2026-11-29T14:00:00Z"))
    assert len(told) == 1 and told[0].startswith(
        "jobs/waiting.yaml:4: warning: PyTorchJob default/waiting: metadata.creationTimestamp "
        f"2019-06-01T00:00:00Z enqueues it before {waiting_since}, when it was first enqueued: "
        "it goes ahead of 1 job(s) waiting in queue root/team at its priority (PyTorchJob "
        "default/jumper)"), told
    # a time that jumps no one (after every waiting job, or a higher priority's
    # queue of its own) is not told; nor is anything on a first reconcile
    write_files(path, {"jobs/last.yaml": _backdated("last", "2026-11-29T14:30:00Z")})
    commit_all(path, "a job dated after the others", date="2026-11-29T15:00:00+00:00")
    assert not _jumps(run_reconcile(path, now="2026-11-29T15:00:00Z"))
    git(path, "branch", "-D", "fleetq/state")
    assert not _jumps(run_reconcile(path, now="2026-11-29T15:00:00Z"))


def test_a_job_whose_commit_is_dated_before_the_jobs_waiting_is_told_as_a_queue_jump(
        tmp_path: Path) -> None:
    """A new job's enqueue time is its source commit's (DESIGN §3): one dated
    before a job that waits (a committer's clock behind) puts it ahead of
    that job. Told, with the time that keeps it behind; a commit dated after
    the waiting jobs tells nothing."""
    path = _one_slot(tmp_path, {"jobs/waiting.yaml": pytorchjob("waiting")})
    assert not _jumps(run_reconcile(path))
    write_files(path, {"jobs/early.yaml": pytorchjob("early")})
    commit_all(path, "a clock behind", date="2020-01-01T00:00:00+00:00")
    told = _jumps(run_reconcile(path, now="2026-11-29T12:00:00Z"))
    assert told == [
        "jobs/early.yaml:1: warning: PyTorchJob default/early: its source commit is dated "
        "2020-01-01T00:00:00Z, its enqueue time, before jobs queued before it was pushed (a "
        "committer's clock behind, or a commit made before theirs and pushed after them): it "
        "goes ahead of 1 job(s) waiting in queue root/team at its priority (PyTorchJob "
        "default/waiting); if that is not meant, set its metadata.creationTimestamp to "
        "2026-11-29T12:00:00Z"], told
    assert placements(path)["default/early"]["position"] == 1
    assert placements(path)["default/waiting"]["position"] == 2
    write_files(path, {"jobs/late.yaml": pytorchjob("late")})
    commit_all(path, "a clock right", date="2026-11-29T12:30:00+00:00")
    assert not _jumps(run_reconcile(path, now="2026-11-29T13:00:00Z"))


def test_a_queue_jump_past_a_job_just_preempted_does_not_call_it_waiting(
        tmp_path: Path) -> None:
    """A job dated back, pushed with one of a higher priority that preempts the
    job running, goes ahead of that job, back in its queue. It was said to go
    ahead of a job "waiting", which had run until this reconcile."""
    path = _one_slot(tmp_path, {"classes.yaml": priority_classes(urgent=1000)})
    assert not _jumps(run_reconcile(path))
    assert placements(path)["default/running"]["phase"] == "Admitted"
    write_files(path, {
        "jobs/urgent.yaml": with_priority(pytorchjob("urgent"), "urgent"),
        "jobs/jumper.yaml": _backdated("jumper", "2020-01-01T00:00:00Z")})
    commit_all(path, "an urgent job, and one dated back", date="2026-11-29T12:00:00+00:00")
    told = _jumps(run_reconcile(path, now="2026-11-29T12:00:00Z"))
    assert placements(path)["default/urgent"]["phase"] == "Admitted"
    assert placements(path)["default/running"]["phase"] == "Queued"
    assert told == [
        "jobs/jumper.yaml:4: warning: PyTorchJob default/jumper: metadata.creationTimestamp "
        "2020-01-01T00:00:00Z enqueues it before 2026-11-29T12:00:00Z, when it was pushed: it "
        "goes ahead of 1 job(s) waiting or just preempted in queue root/team at its priority "
        "(PyTorchJob default/running); if that is not meant, set it to 2026-11-29T12:00:00Z"], \
        told


def test_plan_tells_a_reviewer_of_a_queue_jump(tmp_path: Path) -> None:
    path = _one_slot(tmp_path, {
        "jobs/waiting.yaml": pytorchjob("waiting")})
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    git(path, "checkout", "-q", "-b", "pr")
    write_files(path, {"jobs/jumper.yaml": _backdated("jumper", "2020-01-01T00:00:00Z")})
    commit_all(path, "a job dated back", date="2026-11-29T10:30:00+00:00")
    proc = fleetq("plan", "--repo", str(path), "--source", "pr", "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert ("jobs/jumper.yaml:4: warning: PyTorchJob default/jumper: metadata.creationTimestamp "
            "2020-01-01T00:00:00Z enqueues it before") in proc.stdout, proc.stdout


def test_jobs_pushed_with_a_queue_jump_are_not_told_as_passed(tmp_path: Path) -> None:
    # "waiting" waits since the first reconcile; one push brings two jobs dated
    # back and one of now: each dated job passes "waiting" alone, as the others
    # were not waiting before it
    path = _one_slot(tmp_path, {
        "jobs/waiting.yaml": pytorchjob("waiting")})
    run_reconcile(path)
    write_files(path, {"jobs/early.yaml": _backdated("early", "2020-01-01T00:00:00Z"),
                       "jobs/later.yaml": _backdated("later", "2021-01-01T00:00:00Z"),
                       "jobs/a-now.yaml": pytorchjob("a-now")})
    commit_all(path, "jobs dated back", date="2026-11-29T12:00:00+00:00")
    told = _jumps(run_reconcile(path, now="2026-11-29T12:00:00Z"))
    assert [line.split(": ")[2] for line in told] == [
        "PyTorchJob default/early", "PyTorchJob default/later"], told
    assert all("goes ahead of 1 job(s) waiting in queue root/team at its priority "
               "(PyTorchJob default/waiting)" in line for line in told), told
    # an edit that sets back two waiting jobs at once, whose order stays, passes no one
    write_files(path, {"jobs/early.yaml": _backdated("early", "2019-01-01T00:00:00Z"),
                       "jobs/later.yaml": _backdated("later", "2019-06-01T00:00:00Z")})
    commit_all(path, "both dated further back", date="2026-11-29T13:00:00+00:00")
    assert not _jumps(run_reconcile(path, now="2026-11-29T13:00:00Z"))
    # ... and one set back before the other passes it
    write_files(path, {"jobs/later.yaml": _backdated("later", "2018-01-01T00:00:00Z")})
    commit_all(path, "later dated before early", date="2026-11-29T14:00:00+00:00")
    told = _jumps(run_reconcile(path, now="2026-11-29T14:00:00Z"))
    assert len(told) == 1 and told[0].split(": ")[2] == "PyTorchJob default/later", told
    assert told[0].endswith(
        "goes ahead of 1 job(s) waiting in queue root/team at its priority (PyTorchJob "
        "default/early); if that is not meant, set it to 2019-06-01T00:00:00Z"), told


def test_a_queue_jump_by_capacity_alone_is_told_among_the_jobs_so_placed(tmp_path: Path) -> None:
    # jobs of namespace "default" are placed by capacity alone (no
    # suspension.scheduling), those of "queued" wait in their quota's queue:
    # a job dated back passes the waiting jobs placed as it is, and no others
    capacity_only = QUEUED_CLUSTER_POLICY.replace(
        "  suspension:\n    scheduling: true\n", "")
    queued = QUEUED_CLUSTER_POLICY.replace(
        "ClusterPropagationPolicy\nmetadata:\n", "PropagationPolicy\nmetadata:\n"
        "  namespace: queued\n")
    path = make_fleet_repo(tmp_path / "fleet", {
        "clusters/c1.yaml": member_cluster("c1", cpu="2", memory="8Gi"),
        "quota.yaml": one_leaf_tree("8", "32Gi", namespaces="default, queued"),
        "policy.yaml": capacity_only + "---\n" + queued,
        "jobs/running.yaml": pytorchjob("running"),
        "jobs/waiting.yaml": pytorchjob("waiting"),
        "jobs/in-queue.yaml": pytorchjob("in-queue", namespace="queued")})
    run_reconcile(path)
    assert placements(path)["queued/in-queue"]["position"] == 1
    assert "position" not in placements(path)["default/waiting"]
    write_files(path, {
        "jobs/jumper.yaml": _backdated("jumper", "2020-01-01T00:00:00Z"),
        "jobs/q-jumper.yaml": _backdated("q-jumper", "2020-01-01T00:00:00Z").replace(
            "namespace: default", "namespace: queued")})
    commit_all(path, "jobs dated back", date="2026-11-29T12:00:00+00:00")
    told = _jumps(run_reconcile(path, now="2026-11-29T12:00:00Z"))
    assert [line.split(": ", 3)[3].split("; if")[0].split(": ", 1)[1] for line in told] == [
        "it goes ahead of 1 job(s) waiting at its priority to be placed by capacity alone "
        "(PyTorchJob default/waiting)",
        "it goes ahead of 1 job(s) waiting in queue root/team at its priority "
        "(PyTorchJob queued/in-queue)"], told


def test_queue_jumps_of_many_jobs_past_many_take_time_linear_in_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # 2,000 jobs dated back pushed to a queue of 4,000 that wait: each passes
    # every one of them, told with a count, the places in the queue compared as
    # a sort does (not once a pair: a fleet moved in from clusters took minutes)
    queued = policy("queued-gang").obj()
    waiting = [Decision(key=job(f"w{i:05d}").key(), phase=Phase.QUEUED,
                        enqueued_at="2026-11-29T10:00:00Z", quota="root/team",
                        policy=queued.ref) for i in range(4000)]
    moved = [job(f"m{i:05d}").created("2020-01-01T00:00:00Z").path("jobs/m.yaml").obj()
             for i in range(2000)]
    decisions = waiting + [Decision(key=j.key, phase=Phase.QUEUED, enqueued_at=j.created_at or "",
                                    quota="root/team", policy=queued.ref) for j in moved]
    inputs = FleetInputs(policies=[queued])
    inputs.jobs = {j.key: JobSource(job=j, deps=(), index=0) for j in moved}
    compared = 0

    class Counted(str):
        def __lt__(self, other: str) -> bool:
            nonlocal compared
            compared += 1
            return str.__lt__(self, other)

        def __gt__(self, other: str) -> bool:
            return Counted.__lt__(Counted(other), self)

    def counted(*args: Any) -> str:
        return Counted(queue_order(*args))

    monkeypatch.setattr(pipeline, "queue_order", counted)
    told = queue_jumps(decisions, inputs, {d.key: d for d in waiting}, "2026-11-29T12:00:00Z")
    assert len(told) == 2000 and all(
        "goes ahead of 4000 job(s) waiting in queue root/team at its priority (PyTorchJob "
        "default/w00000, PyTorchJob default/w00001, PyTorchJob default/w00002 and 3997 more)"
        in p.message for p in told), told[0]
    assert compared <= 30 * len(decisions), compared


def test_a_job_renamed_with_its_creation_timestamp_jumps_no_queue(tmp_path: Path) -> None:
    # "first" (dated back, as kubectl writes it) waits ahead of "second";
    # renamed with its time, it is where it was: no one is passed
    path = _one_slot(tmp_path, {
        "jobs/first.yaml": _backdated("first", "2026-11-29T10:30:00Z")})
    run_reconcile(path)
    write_files(path, {"jobs/second.yaml": pytorchjob("second")})
    commit_all(path, "a job of now", date="2026-11-29T12:00:00+00:00")
    run_reconcile(path, now="2026-11-29T12:00:00Z")
    assert placements(path)["default/first"]["position"] == 1
    git(path, "mv", "jobs/first.yaml", "jobs/renamed.yaml")
    write_files(path, {"jobs/renamed.yaml": _backdated("renamed", "2026-11-29T10:30:00Z")})
    commit_all(path, "first renamed", date="2026-11-29T13:00:00+00:00")
    assert not _jumps(run_reconcile(path, now="2026-11-29T13:00:00Z"))
    assert placements(path)["default/renamed"]["position"] == 1
    assert placements(path)["default/second"]["position"] == 2


def test_a_file_named_as_the_reports_folder_is_no_report(tmp_path: Path) -> None:
    """The clusters' reports (the folders status/ and inventory/) are inputs a
    state commit may gain after fleetq wrote it; a file of that name is not."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    worktree = tmp_path / "state"
    git(path, "worktree", "add", "-q", str(worktree), "fleetq/state")
    (worktree / "status").write_text("anything\n")
    git(worktree, "add", "status")
    git(worktree, "commit", "-q", "--amend", "--no-edit")
    git(path, "worktree", "remove", "--force", str(worktree))
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 2 and "which was edited by hand" in proc.stderr, proc.stderr
