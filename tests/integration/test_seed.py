"""The seed manifests of ../shared/seed-manifests, verbatim, in a real fleet repo."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.gitops.repo import FleetRepo
from reconciler.pipeline import compute

from .conftest import (
    NOW,
    RENDERED_SEED,
    SeedFleet,
    commit_all,
    make_fleet_repo,
    member_cluster,
    placements,
    pytorchjob,
    run_reconcile,
    seed,
    seed_fleet_files,
    state_files,
    state_show,
    state_yaml,
    when,
    write_files,
)

ACK_GANG_LABELS = ("pod-group.scheduling.sigs.k8s.io/name",
                   "pod-group.scheduling.sigs.k8s.io/min-available")
RENDERED = RENDERED_SEED


def _strip_fleetq_additions(manifest: dict[str, Any]) -> dict[str, Any]:
    """The rendered job minus what fleetq adds, to compare with the source."""
    out = copy.deepcopy(manifest)
    labels = out["metadata"].get("labels") or {}
    for key in list(labels):
        if key.startswith("fleetq.io/") or key == "quota.scheduling.alibabacloud.com/name":
            del labels[key]
    annotations = out["metadata"].get("annotations") or {}
    for key in list(annotations):
        if key.startswith("fleetq.io/"):
            del annotations[key]
    if not annotations:
        out["metadata"].pop("annotations", None)
    for spec in out["spec"]["pytorchReplicaSpecs"].values():
        pod_labels = spec["template"]["metadata"]["labels"]
        for key in ACK_GANG_LABELS:
            pod_labels.pop(key, None)
    return out


def test_seed_pytorchjob_is_admitted_and_rendered_with_ack_gang_labels(
        seed_fleet: SeedFleet) -> None:
    outcome = seed_fleet.reconcile()
    assert outcome.commit is not None
    assert [p for p in outcome.computed.problems if p.severity == "error"] == []

    item = placements(seed_fleet.path)["default/pytorch-test"]
    assert item["job"] == {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                           "namespace": "default", "name": "pytorch-test"}
    assert item["source"]["path"] == "jobs/default/pytorch-test.yaml"
    assert item["quota"] == "root/child-2"
    assert item["phase"] == "Admitted"
    assert item["cluster"] == "cf-hz-a"
    assert item["podSets"] == [{"name": "master", "replicas": 1},
                               {"name": "worker", "replicas": 2}]
    # Master: requests cpu 10m (limits 3 ignored: requests are set); Worker: 2 x (2, 2Gi).
    assert item["requests"]["cpu"] == "4010m"
    assert item["requests"]["memory"] == "4Gi"
    assert str(item["requests"]["pods"]) == "3"
    assert str(item["requests"]["kube-queue/max-jobs"]) == "1"
    assert item["admittedAt"] == NOW

    text = state_show(seed_fleet.path, RENDERED)
    assert text is not None, f"{RENDERED} missing; state has {state_files(seed_fleet.path)}"
    rendered = yaml.safe_load(text)
    labels = rendered["metadata"]["labels"]
    assert labels["fleetq.io/managed-by"] == "fleetq"
    assert labels["fleetq.io/cluster"] == "cf-hz-a"
    assert "fleetq.io/quota" in labels
    assert "child-2" in labels["fleetq.io/quota"]
    assert "child-2" in labels["quota.scheduling.alibabacloud.com/name"]
    for role in ("Master", "Worker"):
        pod_labels = rendered["spec"]["pytorchReplicaSpecs"][role]["template"]["metadata"][
            "labels"]
        assert pod_labels["pod-group.scheduling.sigs.k8s.io/min-available"] == "3", role
        assert pod_labels["pod-group.scheduling.sigs.k8s.io/name"] == "pytorch-test", role
        assert pod_labels["app"] == "pytorchjob", role
    # Apart from fleetq's labels the rendered job is the source manifest, its
    # cleanPodPolicy where the training operator's CRD has it (in runPolicy).
    source = yaml.safe_load(seed("ack-fleet-pytorchjob.yaml"))
    source["spec"]["runPolicy"] = {"cleanPodPolicy": source["spec"].pop("cleanPodPolicy")}
    assert _strip_fleetq_additions(rendered) == source

    kustomization = state_yaml(seed_fleet.path, "clusters/cf-hz-a/kustomization.yaml")
    others = sorted(p.removeprefix("clusters/cf-hz-a/") for p in state_files(seed_fleet.path)
                    if p.startswith("clusters/cf-hz-a/")
                    and p != "clusters/cf-hz-a/kustomization.yaml")
    assert RENDERED.removeprefix("clusters/cf-hz-a/") in others
    assert kustomization["resources"] == others


def test_second_pytorchjob_queues_behind_max_jobs(seed_fleet: SeedFleet) -> None:
    seed_fleet.reconcile()
    write_files(seed_fleet.path, {"jobs/default/pytorch-second.yaml": pytorchjob(
        "pytorch-second", workers=1)})
    commit_all(seed_fleet.path, "second job", date="2026-11-29T10:30:00Z")
    outcome = seed_fleet.reconcile("2026-11-29T11:30:00Z")
    assert outcome.commit is not None

    items = placements(seed_fleet.path)
    assert items["default/pytorch-test"]["phase"] == "Admitted"
    second = items["default/pytorch-second"]
    assert second["phase"] == "Queued"
    assert second["position"] == 1
    assert second["quota"] == "root/child-2"
    assert "kube-queue/max-jobs" in second["reason"]
    assert "cluster" not in second
    assert not any("pytorch-second" in p for p in state_files(seed_fleet.path))


RAYJOB_POLICY = """\
apiVersion: policy.one.alibabacloud.com/v1alpha1
kind: ClusterPropagationPolicy
metadata:
  name: rayjobs
spec:
  suspension:
    scheduling: true
  propagateDeps: true
  placement:
    replicaScheduling:
      replicaSchedulingType: Divided
      customSchedulingType: Gang
  resourceSelectors:
  - apiVersion: ray.io/v1
    kind: RayJob
"""


def _rayjob_files(job_path: str = "jobs/algorithm-text/rayjob.yaml") -> dict[str, str]:
    return {
        "quota/elasticquotatree.yaml": seed("ack-rayjob-elasticquotatree.yaml"),
        job_path: seed("ack-rayjob.yaml"),
        "policies/rayjobs.yaml": RAYJOB_POLICY,
        "clusters/c1.yaml": member_cluster("c1", cpu="64", memory="256Gi", nodes=2),
    }


def _rayjob_item(path: Path) -> dict[str, Any]:
    items = [i for i in placements(path).values() if i["job"]["kind"] == "RayJob"]
    assert len(items) == 1, items
    return items[0]


def test_seed_rayjob_gets_a_stable_name_and_is_inadmissible(tmp_path: Path) -> None:
    first = make_fleet_repo(tmp_path / "a", _rayjob_files())
    outcome = compute(FleetRepo(first), source_rev="HEAD", state_base=None, now=when(NOW))
    assert [p for p in outcome.problems if p.severity == "error"] == []
    run_reconcile(first)
    item = _rayjob_item(first)
    name = item["job"]["name"]
    assert re.fullmatch(r"rayjob-sample-[a-z0-9]{5}", name), name
    assert item["job"]["namespace"] == "algorithm-text"
    assert item["quota"] == "root/algorithm/video"
    assert item["podSets"] == [{"name": "head", "replicas": 1},
                               {"name": "small-group", "replicas": 30}]
    assert str(item["requests"]["cpu"]) == "31"
    assert str(item["requests"]["pods"]) == "31"
    assert item["phase"] == "Inadmissible"
    reason = item["reason"]
    assert "root/algorithm/video" in reason
    assert re.search(r"\bcpu\b", reason), reason
    assert re.search(r"\b31\b", reason), reason
    assert re.search(r"\b14\b", reason), reason
    # no job file anywhere: each cluster's folder holds its empty kustomization alone
    clusters_files = [p for p in state_files(first) if p.startswith("clusters/")]
    assert clusters_files and all(p.endswith("/kustomization.yaml") for p in clusters_files)
    assert all(state_show(first, p) == "apiVersion: kustomize.config.k8s.io/v1beta1\n"
               "kind: Kustomization\nresources: []\n" for p in clusters_files)

    # A later reconcile of a changed source keeps the name.
    write_files(first, {"notes/readme.yaml": "# nothing fleetq reads\n"})
    commit_all(first, "unrelated change", date="2026-11-29T10:10:00Z")
    run_reconcile(first, "2026-11-29T11:10:00Z")
    assert _rayjob_item(first)["job"]["name"] == name

    # A fresh repo with the same file at the same path: the same name.
    second = make_fleet_repo(tmp_path / "b", _rayjob_files())
    run_reconcile(second)
    assert _rayjob_item(second)["job"]["name"] == name

    # The name is a hash of the path: another path gives another name.
    third = make_fleet_repo(tmp_path / "c", _rayjob_files("jobs/other/rayjob.yaml"))
    run_reconcile(third)
    other = _rayjob_item(third)["job"]["name"]
    assert re.fullmatch(r"rayjob-sample-[a-z0-9]{5}", other)
    assert other != name


def test_non_queued_seed_policy_places_by_capacity_without_quota_check(
        tmp_path: Path) -> None:
    files = seed_fleet_files(policy="ack-fleet-policy-gang.yaml")
    # cf-hz-a (first by name) is too small for any job here (one 1-cpu node):
    # capacity alone decides, so they land on cf-sh-b.
    files["clusters/cf-hz-a.yaml"] = member_cluster("cf-hz-a", cpu="1", memory="8Gi")
    files["clusters/cf-sh-b.yaml"] = member_cluster("cf-sh-b", cpu="32", memory="128Gi")
    # child-2 allows one job at a time (kube-queue/max-jobs: 1), which only the queue
    # enforces: without suspension.scheduling both jobs are placed.
    files["jobs/default/pytorch-second.yaml"] = pytorchjob("pytorch-second", workers=1)
    # Too big for any cluster: not placed.
    files["jobs/default/pytorch-huge.yaml"] = pytorchjob("pytorch-huge", workers=1, cpu="64")
    path = make_fleet_repo(tmp_path / "fleet", files)
    outcome = run_reconcile(path)
    assert outcome.commit is not None
    items = placements(path)
    test_item = items["default/pytorch-test"]
    assert test_item["phase"] == "Admitted"
    assert test_item["cluster"] == "cf-sh-b"
    assert test_item["podSets"] == [{"name": "master", "replicas": 1},
                                    {"name": "worker", "replicas": 2}]
    assert items["default/pytorch-second"]["phase"] == "Admitted"
    assert items["default/pytorch-second"]["cluster"] == "cf-sh-b"
    huge = items["default/pytorch-huge"]
    assert huge["phase"] != "Admitted"
    assert "cluster" not in huge
    rendered = state_show(path, "clusters/cf-sh-b/default/pytorchjob-pytorch-test.yaml")
    assert rendered is not None
    pods = yaml.safe_load(rendered)["spec"]["pytorchReplicaSpecs"]
    for role in ("Master", "Worker"):
        assert pods[role]["template"]["metadata"]["labels"][
            "pod-group.scheduling.sigs.k8s.io/min-available"] == "3"
    assert [p for p in state_files(path) if p.startswith("clusters/cf-hz-a/")] == [
        "clusters/cf-hz-a/kustomization.yaml"]  # (its folder, with nothing in it)


def test_seed_rayjob_admitted_under_a_larger_quota_ships_its_configmap_unsuspended(
        tmp_path: Path) -> None:
    files = _rayjob_files()
    # Same tree, but video may use 40 cpu: the 31-cpu RayJob now fits.
    tree = files["quota/elasticquotatree.yaml"]
    assert tree.count("cpu: 14\n") == 1
    files["quota/elasticquotatree.yaml"] = tree.replace("cpu: 14\n", "cpu: 40\n")
    path = make_fleet_repo(tmp_path / "fleet", files)
    run_reconcile(path)
    item = _rayjob_item(path)
    assert item["phase"] == "Admitted", item["reason"]
    assert item["cluster"] == "c1"
    name = item["job"]["name"]
    base = "clusters/c1/algorithm-text"
    rendered = state_show(path, f"{base}/rayjob-{name}.yaml")
    assert rendered is not None, state_files(path)
    job = yaml.safe_load(rendered)
    assert job["metadata"]["name"] == name
    assert "generateName" not in job["metadata"]
    assert job["spec"].get("suspend") in (None, False)  # suspension lifted
    assert job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["replicas"] == 30
    for template in (job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"],
                     job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]):
        assert template["metadata"]["labels"][
            "pod-group.scheduling.sigs.k8s.io/min-available"] == "31"
    # propagateDeps: the ConfigMap goes with the job, and its Namespace too.
    config_map = state_show(path, f"{base}/configmap-ray-job-code-sample.yaml")
    assert config_map is not None, state_files(path)
    source_cm = list(yaml.safe_load_all(seed("ack-rayjob.yaml")))[1]
    assert yaml.safe_load(config_map)["data"] == source_cm["data"]
    namespace = state_show(path, f"{base}/namespace-algorithm-text.yaml")
    assert namespace is not None
    assert yaml.safe_load(namespace)["kind"] == "Namespace"
    kustomization = state_yaml(path, "clusters/c1/kustomization.yaml")
    assert kustomization["resources"] == sorted(
        p.removeprefix("clusters/c1/") for p in state_files(path)
        if p.startswith("clusters/c1/") and not p.endswith("kustomization.yaml"))


def test_a_policy_that_does_not_send_what_its_running_jobs_use_is_told(
        tmp_path: Path) -> None:
    """Without ``propagateDeps: true`` (as in Karmada) the ConfigMap the
    RayJob reads is not sent: its policy is told, so that the cluster's
    missing ConfigMap is no surprise. A job still waiting is not counted."""
    files = _rayjob_files()
    files["quota/elasticquotatree.yaml"] = files["quota/elasticquotatree.yaml"].replace(
        "cpu: 14\n", "cpu: 40\n")
    files["policies/rayjobs.yaml"] = RAYJOB_POLICY.replace("  propagateDeps: true\n", "")
    path = make_fleet_repo(tmp_path / "fleet", files)
    outcome = run_reconcile(path)
    item = _rayjob_item(path)
    assert item["phase"] == "Admitted", item["reason"]
    assert state_show(path, "clusters/c1/algorithm-text/configmap-ray-job-code-sample.yaml") \
        is None
    assert outcome.computed is not None
    told = [str(p) for p in outcome.computed.problems if p.path == "policies/rayjobs.yaml"]
    assert told == [
        f"policies/rayjobs.yaml:1: warning: ClusterPropagationPolicy rayjobs: RayJob "
        f"algorithm-text/{item['job']['name']} uses ConfigMap ray-job-code-sample, which the "
        f"fleet defines and this policy does not send, so the cluster must have them "
        f"already; to send them with the jobs, set spec.propagateDeps: true"]

    files["policies/rayjobs.yaml"] = RAYJOB_POLICY
    write_files(path, files)
    commit_all(path, "send what the jobs use")
    outcome = run_reconcile(path)
    assert outcome.computed is not None
    assert not [p for p in outcome.computed.problems if p.path == "policies/rayjobs.yaml"]
    assert state_show(path, "clusters/c1/algorithm-text/configmap-ray-job-code-sample.yaml")


def _pod_templates(job: dict[str, Any]) -> list[dict[str, Any]]:
    return [s["template"] for s in job["spec"]["pytorchReplicaSpecs"].values()]


@pytest.mark.parametrize("dialect", ["ack", "scheduler-plugins", "volcano", "kueue"])
def test_gang_dialect_of_the_member_cluster_is_rendered(tmp_path: Path, dialect: str) -> None:
    files = seed_fleet_files()
    files["clusters/cf-hz-a.yaml"] = member_cluster("cf-hz-a", cpu="32", memory="128Gi",
                                                    dialect=dialect)
    path = make_fleet_repo(tmp_path / "fleet", files)
    run_reconcile(path)
    job = yaml.safe_load(state_show(path, RENDERED) or "")
    templates = _pod_templates(job)
    assert len(templates) == 2
    pod_group = state_show(path, "clusters/cf-hz-a/default/podgroup-pytorch-test.yaml")
    if dialect == "ack":
        for t in templates:
            assert t["metadata"]["labels"]["pod-group.scheduling.sigs.k8s.io/name"] == \
                "pytorch-test"
            assert t["metadata"]["labels"][
                "pod-group.scheduling.sigs.k8s.io/min-available"] == "3"
    elif dialect == "scheduler-plugins":
        for t in templates:
            assert t["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "pytorch-test"
        assert pod_group is not None
        group = yaml.safe_load(pod_group)
        assert group["apiVersion"].startswith("scheduling.x-k8s.io/")
        assert group["kind"] == "PodGroup"
        assert group["spec"]["minMember"] == 3
    elif dialect == "volcano":
        for t in templates:
            assert t["spec"]["schedulerName"] == "volcano"
            assert t["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == \
                "pytorch-test"
        assert pod_group is not None
        group = yaml.safe_load(pod_group)
        assert group["apiVersion"].startswith("scheduling.volcano.sh/")
        assert group["spec"]["minMember"] == 3
    else:
        assert all("kueue.x-k8s.io/queue-name" in t["metadata"]["labels"] for t in templates) \
            or "kueue.x-k8s.io/queue-name" in job["metadata"]["labels"]
    kustomization = state_yaml(path, "clusters/cf-hz-a/kustomization.yaml")
    assert ("default/podgroup-pytorch-test.yaml" in kustomization["resources"]) == (
        pod_group is not None)


def _with_scheduling_policy(policy: str) -> str:
    """The seed PyTorchJob with ``runPolicy.schedulingPolicy`` ``policy``
    (a flow mapping), on the line after ``spec:``."""
    text = seed("ack-fleet-pytorchjob.yaml")
    head, rest = text.split("\nspec:\n", 1)
    return f"{head}\nspec:\n  runPolicy: {{schedulingPolicy: {policy}}}\n{rest}"


@pytest.mark.parametrize("dialect", ["ack", "scheduler-plugins", "volcano"])
def test_a_gang_minimum_and_a_volcano_queue_the_job_names_are_rendered(
        tmp_path: Path, dialect: str) -> None:
    """``runPolicy.schedulingPolicy.minAvailable`` is the gang's minimum
    (Kubeflow's operators make it a PodGroup's minMember) and ``queue`` a
    Volcano PodGroup's queue: both used to be dropped, the PodGroup asking
    for all 3 pods in Volcano's default queue."""
    files = seed_fleet_files()
    files["clusters/cf-hz-a.yaml"] = member_cluster("cf-hz-a", cpu="32", memory="128Gi",
                                                    dialect=dialect)
    files["jobs/default/pytorch-test.yaml"] = _with_scheduling_policy(
        "{minAvailable: 2, queue: training}")
    path = make_fleet_repo(tmp_path / "fleet", files)
    run_reconcile(path)
    assert placements(path)["default/pytorch-test"]["phase"] == "Admitted"
    job = yaml.safe_load(state_show(path, RENDERED) or "")
    pod_group = state_show(path, "clusters/cf-hz-a/default/podgroup-pytorch-test.yaml")
    if dialect == "ack":
        assert [t["metadata"]["labels"]["pod-group.scheduling.sigs.k8s.io/min-available"]
                for t in _pod_templates(job)] == ["2", "2"]
        assert pod_group is None
        return
    group = yaml.safe_load(pod_group or "")
    assert group["spec"]["minMember"] == 2
    assert group["spec"].get("queue") == ("training" if dialect == "volcano" else None)


@pytest.mark.parametrize("value", ["4", "0", "two"])
def test_a_gang_minimum_the_job_cannot_hold_is_an_error_at_its_line(
        tmp_path: Path, value: str) -> None:
    files = seed_fleet_files()
    files["jobs/default/pytorch-test.yaml"] = _with_scheduling_policy(f"{{minAvailable: {value}}}")
    path = make_fleet_repo(tmp_path / "fleet", files)
    outcome = run_reconcile(path)
    errors = [str(p) for p in outcome.computed.problems if p.severity == "error"]
    shown = repr(int(value)) if value.isdigit() else repr(value)
    assert errors == [
        f"jobs/default/pytorch-test.yaml:9: error: spec.runPolicy.schedulingPolicy.minAvailable "
        f"must be a whole number from 1 to 3 (the job's pods), not {shown}; fix the manifest"
    ], errors
    assert placements(path)["default/pytorch-test"]["phase"] == "Invalid"
