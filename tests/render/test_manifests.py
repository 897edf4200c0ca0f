"""A job as ``render_job`` sends it to a member cluster, and the PodGroups beside it."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from reconciler.core.model import Decision, JobKey, MemberCluster, Phase, PodSetCount
from reconciler.render.manifests import dump, keep_spec, render_job

POD = {"spec": {"containers": [{"name": "c", "image": "x"}]}}


def pod() -> dict[str, Any]:
    """A pod template of its own: ``render_job`` changes the job it is given."""
    return copy.deepcopy(POD)


def decision(kind: str, api_version: str, name: str, *pod_sets: tuple[str, int]) -> Decision:
    return Decision(JobKey(api_version.split("/")[0], kind, "default", name), Phase.ADMITTED,
                    "2026-11-29T10:00:00Z", api_version=api_version, path=f"jobs/{name}.yaml",
                    quota="root/team", cluster="m-a",
                    pod_sets=tuple(PodSetCount(n, r) for n, r in pod_sets))


def ray_on_existing_cluster() -> dict[str, Any]:
    return {"apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": "on-existing"},
            "spec": {"entrypoint": "python x.py",
                     "clusterSelector": {"ray.io/cluster": "raycluster-kuberay"}}}


@pytest.mark.parametrize("dialect", ["scheduler-plugins", "volcano"])
def test_a_job_with_no_pods_of_its_own_has_no_pod_group(dialect: str) -> None:
    """A RayJob on an existing RayCluster makes no pods: a PodGroup of it would
    have minMember 0, which scheduler-plugins' CRD refuses (minimum 1) and a
    gang of nothing to wait for in Volcano."""
    obj, groups = render_job(ray_on_existing_cluster(),
                             decision("RayJob", "ray.io/v1", "on-existing"),
                             MemberCluster("m-a", gang_dialect=dialect), None)
    assert groups == []
    assert obj["spec"]["clusterSelector"] == {"ray.io/cluster": "raycluster-kuberay"}


@pytest.mark.parametrize("dialect", ["scheduler-plugins", "volcano"])
def test_a_job_with_pods_has_its_pod_group(dialect: str) -> None:
    job = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "p"},
           "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2, "template": pod()}}}}
    _, groups = render_job(job, decision("PyTorchJob", "kubeflow.org/v1", "p", ("worker", 2)),
                           MemberCluster("m-a", gang_dialect=dialect), None)
    assert [g["spec"]["minMember"] for g in groups] == [2]


FOREIGN = {"labels": {"pod-group.scheduling.sigs.k8s.io/name": "other",
                      "pod-group.scheduling.sigs.k8s.io/min-available": "9",
                      "scheduling.x-k8s.io/pod-group": "other",
                      "kueue.x-k8s.io/queue-name": "other", "app": "train"},
           "annotations": {"scheduling.k8s.io/group-name": "other", "note": "kept"}}
OWN = {"ack": {"pod-group.scheduling.sigs.k8s.io/name": "p",
               "pod-group.scheduling.sigs.k8s.io/min-available": "3"},
       "scheduler-plugins": {"scheduling.x-k8s.io/pod-group": "p"},
       "volcano": {"scheduling.k8s.io/group-name": "p"},
       "kueue": {"kueue.x-k8s.io/queue-name": "team"}}


@pytest.mark.parametrize("dialect", ["ack", "scheduler-plugins", "volcano", "kueue"])
def test_the_gang_keys_of_other_dialects_are_taken_off_the_pod_templates(dialect: str) -> None:
    """A job file copied from a cluster of another gang scheduler: its pods
    named another group beside the one fleetq set (a Master in two groups),
    on the pod templates that carried them. Only the cluster's own dialect's
    keys stay, with fleetq's values; other labels and annotations stay. So
    does Volcano's schedulerName on volcano clusters alone; another stays."""
    master = pod()
    master["metadata"] = copy.deepcopy(FOREIGN)
    master["spec"]["schedulerName"] = "volcano"
    worker = pod()
    worker["spec"]["schedulerName"] = "my-scheduler"
    job = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "p"},
           "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": master},
                                            "Worker": {"replicas": 2, "template": worker}}}}
    obj, _ = render_job(job, decision("PyTorchJob", "kubeflow.org/v1", "p", ("master", 1),
                                      ("worker", 2)),
                        MemberCluster("m-a", gang_dialect=dialect), None)
    specs = obj["spec"]["pytorchReplicaSpecs"]
    assert specs["Master"]["template"]["spec"].get("schedulerName") == (
        "volcano" if dialect == "volcano" else None)
    assert specs["Worker"]["template"]["spec"]["schedulerName"] == (
        "volcano" if dialect == "volcano" else "my-scheduler")
    gang_keys = {k for keys in OWN.values() for k in keys}
    for role in ("Master", "Worker"):
        meta = specs[role]["template"].get("metadata", {})
        keys = {**meta.get("labels", {}), **meta.get("annotations", {})}
        assert {k: v for k, v in keys.items() if k in gang_keys} == OWN[dialect], (role, keys)
    master_meta = specs["Master"]["template"]["metadata"]
    assert master_meta["labels"]["app"] == "train"
    assert master_meta["annotations"]["note"] == "kept"


@pytest.mark.parametrize("dialect", ["ack", "scheduler-plugins", "volcano", "kueue"])
def test_a_job_s_own_kueue_queue_goes_only_to_kueue_clusters(dialect: str) -> None:
    """A job file copied from a kueue cluster kept its ``queue-name`` label
    (or the annotation, its older form) on a cluster of another dialect,
    where a Kueue would suspend it until a LocalQueue of that name admitted
    it. On a kueue cluster the label is the job's quota's; the annotation,
    which Kueue reads where the label is not set, goes nowhere."""
    job = pytorchjob()
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "other", "app": "train"}
    job["metadata"]["annotations"] = {"kueue.x-k8s.io/queue-name": "other", "note": "kept"}
    template = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]
    template["metadata"] = {"annotations": {"kueue.x-k8s.io/queue-name": "other", "n": "kept"}}
    obj, _ = render_job(job, decision("PyTorchJob", "kubeflow.org/v1", "p", ("worker", 1)),
                        MemberCluster("m-a", gang_dialect=dialect), None)
    labels, annotations = obj["metadata"]["labels"], obj["metadata"]["annotations"]
    assert labels.get("kueue.x-k8s.io/queue-name") == ("team" if dialect == "kueue" else None)
    assert (labels["app"], annotations["note"]) == ("train", "kept")
    assert "kueue.x-k8s.io/queue-name" not in annotations
    rendered = obj["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["metadata"]
    assert "kueue.x-k8s.io/queue-name" not in rendered["annotations"]  # (on the pod templates
    assert rendered["annotations"]["n"] == "kept"                      # too)


def mpijob(api_version: str, policy: str | None, workers: int = 2) -> dict[str, Any]:
    spec: dict[str, Any] = {"mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": pod()},
                                                "Worker": {"replicas": workers,
                                                           "template": pod()}}}
    if policy is not None:
        spec["launcherCreationPolicy"] = policy
    return {"apiVersion": api_version, "kind": "MPIJob", "metadata": {"name": "m"},
            "spec": spec}


@pytest.mark.parametrize(("api_version", "policy", "workers", "gang"), [
    ("kubeflow.org/v2beta1", "WaitForWorkersReady", 2, 2),  # (the launcher comes later)
    ("kubeflow.org/v2beta1", "WaitForWorkersReady", 0, 1),  # (no workers to wait for)
    ("kubeflow.org/v2beta1", "AtStartup", 2, 3),
    ("kubeflow.org/v2beta1", None, 2, 3),
    ("kubeflow.org/v1", "WaitForWorkersReady", 2, 3),  # (the training operator has no such)
])
@pytest.mark.parametrize("dialect", ["ack", "scheduler-plugins", "volcano"])
def test_an_mpi_launcher_made_once_the_workers_are_ready_is_left_out_of_the_gang(
        api_version: str, policy: str | None, workers: int, gang: int, dialect: str) -> None:
    """Under launcherCreationPolicy: WaitForWorkersReady the MPI operator makes
    the launcher once the workers are ready: a gang that counted it waited for
    it, and the workers for the gang, for ever (kubeflow/mpi-operator#608)."""
    obj, groups = render_job(
        mpijob(api_version, policy, workers),
        decision("MPIJob", api_version, "m", ("launcher", 1), ("worker", workers)),
        MemberCluster("m-a", gang_dialect=dialect), None)
    if dialect == "ack":
        labels = [ref["template"]["metadata"]["labels"]
                  for ref in obj["spec"]["mpiReplicaSpecs"].values()]
        assert {x["pod-group.scheduling.sigs.k8s.io/min-available"] for x in labels} == {
            str(gang)}
    else:
        assert [g["spec"]["minMember"] for g in groups] == [gang]


def pytorchjob(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "p"},
            "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 1, "template": pod()}},
                     **spec}}


@pytest.mark.parametrize(("spec", "run_policy"), [
    ({"cleanPodPolicy": "None"}, {"cleanPodPolicy": "None"}),
    ({"cleanPodPolicy": "All", "runPolicy": {"suspend": True}},
     {"suspend": False, "cleanPodPolicy": "All"}),
    ({"cleanPodPolicy": "All", "runPolicy": {"cleanPodPolicy": "Running"}},
     {"cleanPodPolicy": "Running"}),
])
def test_a_pytorchjob_s_clean_pod_policy_at_the_top_of_its_spec_goes_to_its_run_policy(
        spec: dict[str, Any], run_policy: dict[str, Any]) -> None:
    """The PyTorch operator's v1 took ``spec.cleanPodPolicy`` (the ACK One
    seed job still has it); the training operator's CRD has it in
    ``spec.runPolicy`` only, and the API server would drop it (or refuse the
    object, under strict field validation). Where ``runPolicy`` says one, that
    one holds, as on the cluster."""
    obj, _ = render_job(pytorchjob(**spec),
                        decision("PyTorchJob", "kubeflow.org/v1", "p", ("worker", 1)),
                        MemberCluster("m-a"), None)
    assert "cleanPodPolicy" not in obj["spec"]
    assert obj["spec"]["runPolicy"] == run_policy


def test_an_mpijob_v1_keeps_its_clean_pod_policy_where_its_crd_has_it() -> None:
    job = {"apiVersion": "kubeflow.org/v1", "kind": "MPIJob", "metadata": {"name": "m"},
           "spec": {"cleanPodPolicy": "Running",
                    "mpiReplicaSpecs": {"Launcher": {"template": pod()}}}}
    obj, _ = render_job(job, decision("MPIJob", "kubeflow.org/v1", "m", ("launcher", 1)),
                        MemberCluster("m-a"), None)
    assert obj["spec"]["cleanPodPolicy"] == "Running"
    assert "runPolicy" not in obj["spec"]


def test_what_the_api_server_set_on_a_job_read_from_a_cluster_is_not_sent() -> None:
    """A job from ``kubectl get -o yaml`` carries what the server set: its
    resourceVersion makes the create fail, its ownerReferences (another
    cluster's uid) have it deleted by the garbage collector; neither is sent,
    nor its status or kubectl's last-applied copy. Its creationTimestamp, its
    enqueue time, stays (the server sets it anew)."""
    job = pytorchjob()
    job["metadata"].update({
        "uid": "0c4b9f1e", "resourceVersion": "4711", "generation": 3,
        "creationTimestamp": "2026-11-01T08:00:00Z", "selfLink": "/apis/x",
        "managedFields": [{"manager": "kubectl"}],
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "o", "uid": "u"}],
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}",
                        "team/owner": "text"}})
    job["status"] = {"conditions": [{"type": "Running", "status": "True"}]}
    obj, _ = render_job(job, decision("PyTorchJob", "kubeflow.org/v1", "p", ("worker", 1)),
                        MemberCluster("m-a"), None)
    assert "status" not in obj
    meta = obj["metadata"]
    assert not {"uid", "resourceVersion", "generation", "selfLink", "managedFields",
                "ownerReferences"} & set(meta), meta
    assert meta["creationTimestamp"] == "2026-11-01T08:00:00Z"
    assert meta["annotations"]["team/owner"] == "text"
    assert "kubectl.kubernetes.io/last-applied-configuration" not in meta["annotations"]


@pytest.mark.parametrize("manual", [None, False, True])
def test_a_batch_job_read_from_a_cluster_goes_without_the_selector_made_for_it_there(
        manual: bool | None) -> None:
    """``kubectl get job -o yaml`` writes the selector the API server made of
    the job's uid there, and the labels it put on the pod template: a create
    refuses them ("`selector` not auto-generated"), so the job held its quota
    and never ran. They go unless the job chose its own (``manualSelector``)."""
    uid = "8d9ae5a3-5f13-4b39-9a41-2f5f3e1c7b10"
    made = {"batch.kubernetes.io/controller-uid": uid, "controller-uid": uid,
            "batch.kubernetes.io/job-name": "pi", "job-name": "pi"}
    template = pod()
    template["metadata"] = {"labels": {**made, "app": "pi"}}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi", "uid": uid},
           "spec": {"parallelism": 1, "template": template,
                    "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}},
                    **({} if manual is None else {"manualSelector": manual})}}
    obj, _ = render_job(job, decision("Job", "batch/v1", "pi", ("main", 1)),
                        MemberCluster("m-a"), None)
    labels = obj["spec"]["template"]["metadata"]["labels"]
    if manual:
        assert obj["spec"]["selector"] == {"matchLabels": {
            "batch.kubernetes.io/controller-uid": uid}}
        assert {k: labels[k] for k in made} == made
    else:
        assert "selector" not in obj["spec"] and not set(made) & set(labels), obj["spec"]
    assert labels["app"] == "pi"


SUSPENDED = [  # (a job written suspended, as Kube Queue and Kueue's old docs have it)
    ({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
      "spec": {"suspend": True, "parallelism": 2, "template": pod()}},
     ("main", 2), ("spec",)),
    ({"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "r"},
      "spec": {"suspend": True, "entrypoint": "python x.py",
               "shutdownAfterJobFinishes": True,
               "rayClusterSpec": {"headGroupSpec": {"template": pod()}}}},
     ("head", 1), ("spec",)),
    ({**pytorchjob(runPolicy={"suspend": True, "backoffLimit": 3})},
     ("worker", 1), ("spec", "runPolicy")),
    ({"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": "m"},
      "spec": {"runPolicy": {"suspend": True},
               "mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": pod()}}}},
     ("launcher", 1), ("spec", "runPolicy")),
]


@pytest.mark.parametrize(("job", "pod_set", "where"), SUSPENDED,
                         ids=[s[0]["kind"] for s in SUSPENDED])
@pytest.mark.parametrize("dialect", ["ack", "scheduler-plugins", "volcano", "kueue"])
def test_a_suspended_job_is_sent_unsuspended_but_to_kueue_with_no_suspend_at_all(
        job: dict[str, Any], pod_set: tuple[str, int], where: tuple[str, ...],
        dialect: str) -> None:
    """fleetq admitted the job: it is sent with its suspension lifted. On a
    kueue cluster Kueue's webhook suspends it as it is made and its
    ClusterQueue's admission lifts that; a ``suspend: false`` sent there,
    Argo CD's self-heal would set back each time Kueue suspends the job (and
    a ``suspend: true`` would stop it once admitted), so none is sent. The
    rest of the field's mapping stays."""
    made = decision(job["kind"], job["apiVersion"], job["metadata"]["name"], pod_set)
    obj, _ = render_job(copy.deepcopy(job), made, MemberCluster("m-a", gang_dialect=dialect),
                        None)
    holder = obj
    for name in where:  # (on kueue, a run policy with nothing left goes too)
        holder = holder.get(name, {}) if dialect == "kueue" else holder[name]
    if dialect == "kueue":
        assert "suspend" not in holder
    else:
        assert holder["suspend"] is False
    if where[-1] == "runPolicy" and "backoffLimit" in job["spec"]["runPolicy"]:
        assert holder["backoffLimit"] == 3


def mpijob_v2(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": "m"},
            "spec": {"mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": pod()}},
                     **spec}}


@pytest.mark.parametrize(("job", "pod_set"), [
    (pytorchjob(runPolicy={"suspend": True}), ("worker", 1)),
    (pytorchjob(runPolicy={"suspend": False}), ("worker", 1)),
    (mpijob_v2(runPolicy={"suspend": True}), ("launcher", 1)),
], ids=["pytorchjob", "pytorchjob-unsuspended", "mpijob"])
def test_a_run_policy_that_held_its_suspend_alone_is_not_sent_to_kueue_empty(
        job: dict[str, Any], pod_set: tuple[str, int]) -> None:
    """On a kueue cluster the job goes with no ``suspend``: a run policy that
    held nothing else went as ``runPolicy: {}``, a field the source did not
    have. It goes with the suspend; one the source writes empty stays, and so
    does a run policy with more in it."""
    made = decision(job["kind"], job["apiVersion"], job["metadata"]["name"], pod_set)
    kueue = MemberCluster("m-a", gang_dialect="kueue")
    obj, _ = render_job(copy.deepcopy(job), made, kueue, None)
    assert "runPolicy" not in obj["spec"]
    assert b"{}" not in dump(obj)
    written = copy.deepcopy(job)
    written["spec"]["runPolicy"] = {}
    obj, _ = render_job(written, made, kueue, None)
    assert obj["spec"]["runPolicy"] == {}
    more = copy.deepcopy(job)
    more["spec"]["runPolicy"]["backoffLimit"] = 3
    obj, _ = render_job(more, made, kueue, None)
    assert obj["spec"]["runPolicy"] == {"backoffLimit": 3}


def test_a_kueue_job_with_no_queue_gets_no_empty_pod_template_metadata() -> None:
    """A job placed with no quota has no LocalQueue to name on a kueue
    cluster: nothing is added to its pod templates, and a template without
    ``metadata`` is sent without it, not with ``metadata: {}``."""
    made = dataclasses.replace(decision("PyTorchJob", "kubeflow.org/v1", "p", ("worker", 1)),
                               quota=None)
    obj, _ = render_job(pytorchjob(), made, MemberCluster("m-a", gang_dialect="kueue"), None)
    assert "metadata" not in obj["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]
    assert b"{}" not in dump(obj)


@pytest.mark.parametrize(("where", "said"), [
    ("pods", "high"), ("run policy", "urgent"), ("both", "high"), ("none", None)])
def test_a_volcano_pod_group_has_its_job_s_priority_class(where: str, said: str | None
                                                           ) -> None:
    """Volcano orders and preempts gangs by their PodGroup's priorityClassName
    (0 without one), as KubeRay's and the training operator's PodGroups have
    it: from the pods' priorityClassName, or the run policy's."""
    job = pytorchjob()
    pod_spec = copy.deepcopy(POD["spec"])
    if where in ("pods", "both"):
        pod_spec["priorityClassName"] = "high"
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"] = {"spec": pod_spec}
    if where in ("run policy", "both"):
        job["spec"]["runPolicy"] = {"schedulingPolicy": {"priorityClass": "urgent"}}
    _, groups = render_job(job, decision("PyTorchJob", "kubeflow.org/v1", "p", ("worker", 1)),
                           MemberCluster("m-a", gang_dialect="volcano"), None)
    [group] = groups
    assert group["spec"].get("priorityClassName") == said
    assert group["spec"]["minMember"] == 1


def test_the_queue_a_job_was_sent_with_is_read_from_its_labels_alone() -> None:
    """An annotation whose text reads as the queue label (a note of the
    move) made a running job's label look renamed already: it flipped."""
    from reconciler.render.manifests import KUEUE_QUEUE, metadata_labels

    job = pytorchjob()
    job["metadata"]["annotations"] = {
        "notes": "moved to\nkueue.x-k8s.io/queue-name: research\n"}
    obj, _ = render_job(job, decision("PyTorchJob", "kubeflow.org/v1", "p", ("worker", 1)),
                        MemberCluster("m-a", gang_dialect="kueue"), None, "team")
    rendered = dump(obj)
    assert b"\n      kueue.x-k8s.io/queue-name: research\n" in rendered
    assert (metadata_labels(rendered) or {})[KUEUE_QUEUE] == "team"
    assert metadata_labels(b"kind: x\n") is None


def test_a_job_running_on_a_kueue_cluster_goes_with_the_labels_it_was_sent_with() -> None:
    """The labels Kueue refuses to change on a running job go as it was sent
    with them (a label it went without is left out); off kueue clusters they
    are the job's own."""
    from reconciler.render.manifests import KEPT_WHILE_RUNNING

    priority, max_exec = KEPT_WHILE_RUNNING
    kept = {priority: "low", max_exec: None}
    for dialect, labels in (("kueue", {priority: "low"}),
                            ("ack", {priority: "high", max_exec: "60"})):
        job = pytorchjob()
        job["metadata"]["labels"] = {priority: "high", max_exec: "60"}
        obj, _ = render_job(job, decision("PyTorchJob", "kubeflow.org/v1", "p", ("worker", 1)),
                            MemberCluster("m-a", gang_dialect=dialect), None, None, kept)
        assert {k: v for k, v in obj["metadata"]["labels"].items()
                if k in KEPT_WHILE_RUNNING} == labels, dialect


@pytest.mark.parametrize(("sent", "now", "kept"), [
    ({"completionMode": "Indexed", "completions": 2}, {"completions": 3, "parallelism": 3}, []),
    ({"completionMode": "Indexed", "completions": 2}, {"completions": 1}, []),  # (1 unset)
    ({"completionMode": "Indexed", "completions": 2}, {"completions": 3, "parallelism": 4},
     ["completions"]),
    ({"completionMode": "Indexed", "completions": 2}, {"completions": "3", "parallelism": "3"},
     ["completions"]),
    ({"completions": 2}, {"completions": 3, "parallelism": 3}, ["completions"]),
    ({"completionMode": "NonIndexed", "completions": 2}, {"completions": 3, "parallelism": 3},
     ["completions"]),
])
def test_a_running_indexed_job_takes_completions_in_tandem_with_its_parallelism(
        sent: dict[str, Any], now: dict[str, Any], kept: list[str]) -> None:
    """The API server takes an Indexed Job's completions changed to equal its
    parallelism (elastic Indexed Jobs); any other change of them it refuses."""
    template = {"spec": {"containers": [{"name": "c", "image": "x"}]}}
    obj = {"spec": {**now, "template": template,
                    **({"completionMode": sent["completionMode"]}
                       if "completionMode" in sent else {})}}
    changed = keep_spec(obj, {**sent, "template": template})
    assert changed == kept
    assert obj["spec"]["completions"] == (sent["completions"] if kept else now["completions"])
