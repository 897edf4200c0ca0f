"""How each job kind counts its pods (``pod_templates``), as its operator creates them."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.jobkinds import kind_for
from reconciler.jobkinds.base import ManifestError

POD = {"spec": {"containers": [{"name": "c", "image": "x"}]}}


def rayjob(**group: Any) -> dict[str, Any]:
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "r"},
            "spec": {"rayClusterSpec": {
                "headGroupSpec": {"template": POD},
                "workerGroupSpecs": [{"groupName": "tpu", "template": POD, **group}]}}}


@pytest.mark.parametrize(("group", "pods"), [
    ({"replicas": 2}, 2),
    ({"replicas": 2, "numOfHosts": 4}, 8),  # a multi-host group: each replica is 4 pods
    ({"replicas": 3, "numOfHosts": 1}, 3),
    ({"replicas": 2, "numOfHosts": 4, "suspend": True}, 0),
    # KubeRay's GetWorkerGroupDesiredReplicas: replicas within minReplicas and
    # maxReplicas, each as the CRD defaults it (0, 0, 2147483647)
    ({}, 0),
    ({"minReplicas": 2}, 2),
    ({"replicas": 5, "maxReplicas": 2}, 2),
    ({"replicas": 1, "minReplicas": 3}, 3),
    ({"replicas": 1, "minReplicas": 3, "maxReplicas": 2}, 2),  # (crossed: the max)
    ({"replicas": 1, "minReplicas": 3, "numOfHosts": 2}, 6),
    ({"minReplicas": 3, "suspend": True}, 0),
])
def test_a_ray_worker_group_counts_the_workers_kuberay_starts_times_hosts(
        group: dict[str, Any], pods: int) -> None:
    """A gang of more pods than KubeRay starts would wait for them for ever; a
    group without replicas counted one worker KubeRay never starts."""
    ray = kind_for("ray.io/v1", "RayJob")
    assert ray is not None
    assert [(t.name, t.replicas) for t in ray.pod_templates(rayjob(**group))] == [
        ("head", 1), ("tpu", pods)]


@pytest.mark.parametrize(("mode", "head"), [
    (None, {"cpu": 1000, "memory": 2**30 * 1000}),
    ("K8sJobMode", {"cpu": 1000, "memory": 2**30 * 1000}),
    ("HTTPMode", {"cpu": 1000, "memory": 2**30 * 1000}),
    # KubeRay's submitter container in the head pod: requests 500m cpu and 200Mi
    ("SidecarMode", {"cpu": 1500, "memory": (2**30 + 200 * 2**20) * 1000}),
])
def test_a_sidecar_mode_rayjob_s_head_counts_the_submitter_container_kuberay_adds(
        mode: str | None, head: dict[str, int]) -> None:
    """Under SidecarMode KubeRay puts the job's submitter in the head pod, a
    container of 500m cpu and 200Mi its template does not show: a head placed
    on a node with room for its template alone stayed Pending, and the gang
    with it."""
    from reconciler.jobkinds.base import pod_set_requests

    ray = kind_for("ray.io/v1", "RayJob")
    assert ray is not None
    obj = rayjob(replicas=2)
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1",
                                                                        "memory": "1Gi"}}}
    obj["spec"]["rayClusterSpec"]["headGroupSpec"]["template"] = {
        "spec": {"containers": [container]}}
    if mode is not None:
        obj["spec"]["submissionMode"] = mode
    refs = ray.pod_templates(obj)
    assert [pod_set_requests(ref) for ref in refs[:1]] == [head]
    assert obj["spec"]["rayClusterSpec"]["headGroupSpec"]["template"] == {
        "spec": {"containers": [container]}}  # (sent as written: KubeRay adds it)


GIB = 2**30 * 1000  # (memory in thousandths of a byte, as fleetq counts it)


@pytest.mark.parametrize(("cluster", "mode", "head"), [
    ({}, None, {"cpu": 1000, "memory": GIB}),
    ({"enableInTreeAutoscaling": False}, None, {"cpu": 1000, "memory": GIB}),
    # KubeRay's autoscaler container in the head pod: 500m cpu and 512Mi
    ({"enableInTreeAutoscaling": True}, None, {"cpu": 1500, "memory": GIB * 3 // 2}),
    ({"enableInTreeAutoscaling": True, "autoscalerOptions": {"idleTimeoutSeconds": 60}},
     None, {"cpu": 1500, "memory": GIB * 3 // 2}),
    # its autoscalerOptions.resources replace those whole
    ({"enableInTreeAutoscaling": True, "autoscalerOptions": {"resources": {
        "requests": {"cpu": "4", "memory": "4Gi"}, "limits": {"cpu": "4", "memory": "4Gi"}}}},
     None, {"cpu": 5000, "memory": GIB * 5}),
    ({"enableInTreeAutoscaling": True, "autoscalerOptions": {"resources": {
        "limits": {"cpu": "2", "memory": "1Gi"}}}},  # (limits alone request the limits)
     None, {"cpu": 3000, "memory": GIB * 2}),
    ({"enableInTreeAutoscaling": True, "autoscalerOptions": {"resources": {}}},
     None, {"cpu": 1000, "memory": GIB}),
    ({"autoscalerOptions": {"resources": {"requests": {"cpu": "4"}}}},  # (no autoscaler)
     None, {"cpu": 1000, "memory": GIB}),
    # and the submitter's beside it under SidecarMode
    ({"enableInTreeAutoscaling": True}, "SidecarMode",
     {"cpu": 2000, "memory": GIB * 3 // 2 + 200 * 2**20 * 1000}),
])
def test_an_autoscaling_rayjob_s_head_counts_the_autoscaler_container_kuberay_adds(
        cluster: dict[str, Any], mode: str | None, head: dict[str, int]) -> None:
    """Under enableInTreeAutoscaling KubeRay adds the Ray autoscaler to the head
    pod, a container of 500m cpu and 512Mi (or of autoscalerOptions.resources):
    a head placed on a node with room for its template alone stays Pending,
    and its quota was charged less than it runs with."""
    from reconciler.jobkinds.base import pod_set_requests

    ray = kind_for("ray.io/v1", "RayJob")
    assert ray is not None
    obj = rayjob(replicas=2)
    obj["spec"]["rayClusterSpec"].update(cluster)
    obj["spec"]["rayClusterSpec"]["headGroupSpec"]["template"] = {"spec": {"containers": [
        {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}
    if mode is not None:
        obj["spec"]["submissionMode"] = mode
    assert pod_set_requests(ray.pod_templates(obj)[0]) == head


def test_autoscaler_resources_that_do_not_read_are_told_at_their_field() -> None:
    ray = kind_for("ray.io/v1", "RayJob")
    assert ray is not None
    obj = rayjob(replicas=1)
    obj["spec"]["rayClusterSpec"].update({"enableInTreeAutoscaling": True, "autoscalerOptions": {
        "resources": {"requests": {"cpu": "lots"}}}})
    with pytest.raises(ManifestError) as told:
        ray.pod_templates(obj)
    assert "spec.rayClusterSpec.autoscalerOptions.resources.requests.cpu" in str(told.value)


SUBMITTER_POD_SET = ("spec.rayClusterSpec.workerGroupSpecs holds 7 groups, more than 6 (its "
                     "Kueue workload holds 8 pod sets at most: the head's, the submitter Job's "
                     "under submissionMode K8sJobMode, the default, and one a group)")


@pytest.mark.parametrize(("spec", "cluster", "groups", "said"), [
    ({"shutdownAfterJobFinishes": True}, {}, 1, None),
    ({}, {}, 1, "spec.shutdownAfterJobFinishes must be true (its RayCluster would hold the "
                "quota after the job ends)"),
    ({"shutdownAfterJobFinishes": True, "clusterSelector": {"ray.io/cluster": "c"}}, {}, 1,
     "it may not run on an existing RayCluster (spec.clusterSelector)"),
    ({"shutdownAfterJobFinishes": True}, {"enableInTreeAutoscaling": True}, 1,
     "spec.rayClusterSpec.enableInTreeAutoscaling must not be true"),
    ({"shutdownAfterJobFinishes": True, "submissionMode": "HTTPMode"}, {}, 8,
     "spec.rayClusterSpec.workerGroupSpecs holds 8 groups, more than 7"),
    ({"shutdownAfterJobFinishes": True, "submissionMode": "HTTPMode"}, {}, 7, None),
    ({"shutdownAfterJobFinishes": True, "submissionMode": "SidecarMode"}, {}, 7, None),
    ({"shutdownAfterJobFinishes": True}, {}, 6, None),
    ({"shutdownAfterJobFinishes": True}, {}, 7, SUBMITTER_POD_SET),
    ({"shutdownAfterJobFinishes": True, "submissionMode": "K8sJobMode"}, {}, 7,
     SUBMITTER_POD_SET),
])
def test_a_rayjob_kueues_webhook_refuses_says_why_for_kueue_clusters(
        spec: dict[str, Any], cluster: dict[str, Any], groups: int, said: str | None) -> None:
    """Kueue refuses a RayJob it manages (its queue label) that keeps its
    RayCluster after it ends, runs on an existing one, autoscales, or has more
    worker groups than a workload has pod sets: 8, one the head's and, when
    KubeRay submits the job from a Job of its own (submissionMode K8sJobMode,
    the default), one that Job's. Its webhook counts the head's alone: a job
    with 7 groups it takes, and the workload of 9 pod sets it makes of it is
    refused, the job left suspended for ever."""
    from reconciler.jobkinds.base import refused_by

    ray = kind_for("ray.io/v1", "RayJob")
    assert ray is not None
    obj = rayjob(replicas=1)
    obj["spec"].update(spec)
    obj["spec"]["rayClusterSpec"].update(cluster)
    group = obj["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    obj["spec"]["rayClusterSpec"]["workerGroupSpecs"] = [
        {**group, "groupName": f"tpu-{i}"} for i in range(groups)]
    assert refused_by(ray, obj) == ((("kueue", said),) if said else ())


@pytest.mark.parametrize(("api_version", "refused"), [
    ("kubeflow.org/v2beta1", ()),
    ("kubeflow.org/v1", (("kueue", "Kueue manages MPIJobs of kubeflow.org/v2beta1 only (the "
                                   "MPI operator's): a kubeflow.org/v1 one would start there at "
                                   "once, outside its ClusterQueue and with no gang"),)),
])
def test_a_training_operator_s_mpijob_is_one_kueue_does_not_manage(
        api_version: str, refused: tuple[tuple[str, str], ...]) -> None:
    """Kueue's MPIJob integration is the MPI operator's (v2beta1): a v1 MPIJob
    sent to a kueue cluster, its queue label on, ran at once outside Kueue."""
    from reconciler.jobkinds.base import refused_by

    mpi = kind_for(api_version, "MPIJob")
    assert mpi is not None
    obj = {"apiVersion": api_version, "kind": "MPIJob", "metadata": {"name": "m"},
           "spec": {"mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": {}}}}}
    assert refused_by(mpi, obj) == refused


@pytest.mark.parametrize("hosts", [0, -1, "4", True])
def test_a_ray_worker_group_with_no_usable_number_of_hosts_is_an_error(hosts: object) -> None:
    ray = kind_for("ray.io/v1", "RayJob")
    assert ray is not None
    with pytest.raises(ManifestError) as err:
        ray.pod_templates(rayjob(replicas=1, numOfHosts=hosts))
    assert err.value.field == "spec.rayClusterSpec.workerGroupSpecs[0].numOfHosts"


@pytest.mark.parametrize(("names", "field", "said"), [
    ([None], "spec.rayClusterSpec.workerGroupSpecs[0]", "groupName is missing"),
    ([""], "spec.rayClusterSpec.workerGroupSpecs[0].groupName", "groupName is missing"),
    ([7], "spec.rayClusterSpec.workerGroupSpecs[0].groupName", "groupName is missing"),
    (["gpu", "cpu", "gpu"], "spec.rayClusterSpec.workerGroupSpecs[2].groupName",
     "groupName 'gpu' is the name of workerGroupSpecs[0] too"),
])
def test_a_ray_worker_group_needs_a_name_of_its_own(names: list[object], field: str,
                                                     said: str) -> None:
    """The RayJob CRD requires each worker group's groupName, and KubeRay
    refuses two groups of one name (it tells their pods apart by it): such a
    job was sent, named worker-0 or its pod sets mixed up, to fail there."""
    ray = kind_for("ray.io/v1", "RayJob")
    assert ray is not None
    obj = rayjob(replicas=1)
    group = obj["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    obj["spec"]["rayClusterSpec"]["workerGroupSpecs"] = [
        {k: v for k, v in group.items() if k != "groupName"}
        | ({} if name is None else {"groupName": name}) for name in names]
    with pytest.raises(ManifestError) as err:
        ray.pod_templates(obj)
    assert err.value.field == field
    assert said in str(err.value)


NOT_A_LABEL = ("must be a DNS label once in lower case (at most 63 letters, digits and '-', a "
               "letter or digit at each end): Kueue names the group's pod set after it")


@pytest.mark.parametrize(("names", "mode", "said"), [
    (["gpu-workers", "CPU-Workers", "x" * 63], None, []),
    (["gpu_workers"], None, [f"[0].groupName 'gpu_workers' {NOT_A_LABEL}"]),
    (["gpu.workers", "-gpu"], None, [f"[0].groupName 'gpu.workers' {NOT_A_LABEL}",
                                     f"[1].groupName '-gpu' {NOT_A_LABEL}"]),
    (["x" * 64], None, [f"[0].groupName '{'x' * 64}' {NOT_A_LABEL}"]),
    (["Head"], None, ["[0].groupName 'Head' names the same pod set as the head's pod set"]),
    (["head"], "HTTPMode", ["[0].groupName 'head' names the same pod set as the head's pod set"]),
    (["submitter"], None, ["[0].groupName 'submitter' names the same pod set as the submitter "
                           "Job's pod set (submissionMode K8sJobMode)"]),
    (["submitter"], "HTTPMode", []),
    (["gpu", "GPU"], None, ["[1].groupName 'GPU' names the same pod set as "
                            "workerGroupSpecs[0]"]),
])
def test_a_ray_worker_group_s_name_must_make_a_kueue_pod_set_name(
        names: list[str], mode: str | None, said: list[str]) -> None:
    """Kueue names a worker group's pod set after its groupName in lower case,
    and a pod set's name is a DNS label unlike any other of the workload: a
    job with gpu_workers, or with a group Head, passed Kueue's webhook but its
    Workload was refused, the job left suspended for ever. It goes to the
    member clusters of other dialects only."""
    from reconciler.jobkinds.base import refused_by

    ray = kind_for("ray.io/v1", "RayJob")
    assert ray is not None
    obj = rayjob(replicas=1)
    obj["spec"]["shutdownAfterJobFinishes"] = True
    if mode is not None:
        obj["spec"]["submissionMode"] = mode
    group = obj["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    obj["spec"]["rayClusterSpec"]["workerGroupSpecs"] = [
        {**group, "groupName": name} for name in names]
    got = refused_by(ray, obj)
    assert got == ((("kueue", "; ".join(
        f"spec.rayClusterSpec.workerGroupSpecs{why}" + (
            "" if "DNS label" in why else " (Kueue names a group's pod set after it, in "
                                          "lower case)") for why in said)),) if said else ())
    assert [t.name for t in ray.pod_templates(obj)] == ["head", *names]


def mpijob(api_version: str, **worker: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": "MPIJob", "metadata": {"name": "m"},
            "spec": {"mpiReplicaSpecs": {"Launcher": {"template": POD},
                                         "Worker": {"template": POD, **worker}}}}


@pytest.mark.parametrize("api_version", ["kubeflow.org/v2beta1", "kubeflow.org/v1"])
def test_an_mpijob_worker_without_replicas_is_none_and_a_launcher_one(api_version: str) -> None:
    """Both operators default a Worker's replicas to 0 and the Launcher's to
    1: such a job is its launcher alone (it used to count one worker more)."""
    mpi = kind_for(api_version, "MPIJob")
    assert mpi is not None
    assert [(t.name, t.replicas) for t in mpi.pod_templates(mpijob(api_version))] == [
        ("launcher", 1), ("worker", 0)]
    assert [(t.name, t.replicas) for t in mpi.pod_templates(mpijob(api_version, replicas=3))
            ] == [("launcher", 1), ("worker", 3)]


def test_a_min_available_that_waits_for_an_mpi_launcher_made_later_is_an_error() -> None:
    """A gang of launcher and workers under WaitForWorkersReady never starts."""
    from reconciler.fleet.jobs import build_job

    obj = mpijob("kubeflow.org/v2beta1", replicas=2)
    obj["metadata"]["namespace"] = "default"
    kind = kind_for("kubeflow.org/v2beta1", "MPIJob")
    assert kind is not None
    obj["spec"].update(launcherCreationPolicy="WaitForWorkersReady",
                       runPolicy={"schedulingPolicy": {"minAvailable": 3}})
    with pytest.raises(ManifestError) as err:
        build_job(obj, kind, path="jobs/m.yaml", index=0, line=1, blob="0" * 40)
    assert err.value.field == "spec.runPolicy.schedulingPolicy.minAvailable"
    assert str(err.value) == (
        "spec.runPolicy.schedulingPolicy.minAvailable must be a whole number from 1 to 2 (the "
        "job's pods but its launcher, which its operator creates once the workers are ready "
        "(launcherCreationPolicy: WaitForWorkersReady): a gang that waits for it never "
        "starts), not 3")
    obj["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"] = 2
    assert build_job(obj, kind, path="jobs/m.yaml", index=0, line=1, blob="0" * 40).job


@pytest.mark.parametrize("replicas", [2**31, -1, 1.5, "2"])
def test_replicas_beyond_what_the_api_server_holds_are_an_error(replicas: object) -> None:
    """``replicas`` is an int32: 2**31 would be refused by the cluster, so it
    is an error here rather than a job sized for two billion pods."""
    mpi = kind_for("kubeflow.org/v2beta1", "MPIJob")
    assert mpi is not None
    with pytest.raises(ManifestError) as err:
        mpi.pod_templates(mpijob("kubeflow.org/v2beta1", replicas=replicas))
    assert err.value.field == "spec.mpiReplicaSpecs.Worker.replicas"
    assert f"must be a whole number from 0 to 2147483647, not {replicas!r}" in str(err.value)
    assert [(t.name, t.replicas) for t in mpi.pod_templates(
        mpijob("kubeflow.org/v2beta1", replicas=2**31 - 1))] == [
        ("launcher", 1), ("worker", 2**31 - 1)]


@pytest.mark.parametrize(("replicas", "said"), [(True, "not true"), (None, None),
                                                (-1, "not -1"), ("2", "not '2'")])
def test_a_replica_count_that_is_no_number_is_quoted_as_yaml_writes_it(
        replicas: object, said: str | None) -> None:
    """``replicas: true`` was told as "not True", Python's spelling."""
    from reconciler.jobkinds.base import replicas_of

    if said is None:
        assert replicas_of(replicas, "spec.parallelism") == 1
        return
    with pytest.raises(ManifestError) as err:
        replicas_of(replicas, "spec.parallelism")
    assert str(err.value) == f"spec.parallelism must be a whole number from 0 to 2147483647, {said}"
