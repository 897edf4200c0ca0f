"""What member clusters report (``fleet/observed.py`` and each job kind's
``observed_phase``): a job's phase read from its Kubernetes ``status``; the
report made of the objects read from a cluster (``cluster_report``); and the
``status/<cluster>.yaml`` file read back (``read_status``).

Statuses are built by hand (the upstream example manifests under
``../shared/upstream`` carry none), but each is checked against the status
schema of the upstream CRD of its kind, so the fields read here are the
fields the operators write.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.core.model import JobKey
from reconciler.core.outcomes import ClusterObservation, ObservedJob, ObservedPhase
from reconciler.fleet.documents import parse_documents
from reconciler.fleet.observed import (
    API_VERSION,
    ClusterReport,
    cluster_report,
    inventory_path,
    read_inventory,
    read_status,
    status_path,
)
from reconciler.jobkinds import KINDS, kind_for
from reconciler.jobkinds.base import QUANTITY_FORM, parse_resources

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
UPSTREAM = SHARED / "upstream"

T0 = "2026-12-04T10:00:00Z"
T1 = "2026-12-04T10:05:00Z"
T2 = "2026-12-04T10:30:00Z"
T3 = "2026-12-04T10:45:00Z"
OBSERVED_AT = "2026-12-04T11:00:00Z"
MANAGED = {"fleetq.io/managed-by": "fleetq"}

PENDING, RUNNING = ObservedPhase.PENDING, ObservedPhase.RUNNING
SUCCEEDED, FAILED = ObservedPhase.SUCCEEDED, ObservedPhase.FAILED

# The job kinds whose phase is read from Kubeflow conditions.
KUBEFLOW = [("kubeflow.org/v1", "PyTorchJob"), ("kubeflow.org/v2beta1", "MPIJob"),
            ("kubeflow.org/v1", "MPIJob")]

# The upstream CRD (file, served version) of each job kind that has one there.
CRDS = {
    ("kubeflow.org/v1", "PyTorchJob"): ("training-operator/kubeflow.org_pytorchjobs.yaml", "v1"),
    ("kubeflow.org/v1", "MPIJob"): ("training-operator/kubeflow.org_mpijobs.yaml", "v1"),
    ("kubeflow.org/v2beta1", "MPIJob"): ("mpi-operator/kubeflow.org_mpijobs.yaml", "v2beta1"),
    ("ray.io/v1", "RayJob"): ("kuberay/ray.io_rayjobs.yaml", "v1"),
}


def upstream(relative: str) -> Path:
    """``../shared/upstream/<relative>``, or skip when it is not there."""
    path = UPSTREAM / relative
    if not path.exists():
        pytest.skip(f"../shared/upstream/{relative} not present: the shared contract files are "
                    f"not checked out beside the repository ({SHARED})")
    return path


def manifest(api_version: str, kind: str, name: str = "job", *, namespace: str | None = "team",
             labels: Mapping[str, str] | None = MANAGED,
             status: Mapping[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if labels is not None:
        meta["labels"] = dict(labels)
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": meta}
    if status is not None:
        obj["status"] = dict(status)
    return obj


def cond(type_: str, at: str | None = None, status: str = "True",
         message: str | None = None) -> dict[str, str]:
    """A Kubeflow (or batch/v1) job condition."""
    c = {"type": type_, "status": status}
    if at is not None:
        c["lastTransitionTime"] = at
        c["lastUpdateTime"] = at
    if message is not None:
        c["message"] = message
    return c


def phase_of(api_version: str, kind: str, status: Mapping[str, Any] | None
             ) -> tuple[ObservedPhase, str | None, str]:
    job_kind = kind_for(api_version, kind)
    assert job_kind is not None, (api_version, kind)
    return job_kind.observed_phase(manifest(api_version, kind, status=status))


# -- the upstream CRDs' status schemas ------------------------------------------

@cache
def _crd(file: str) -> dict[str, Any]:
    """An upstream CRD (read once: they are large)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crd: dict[str, Any] = yaml.load(upstream(file).read_bytes(), Loader=loader)
    return crd


def _status_schema(api_version: str, kind: str) -> dict[str, Any]:
    file, version = CRDS[(api_version, kind)]
    crd = _crd(file)
    assert crd["spec"]["names"]["kind"] == kind
    for v in crd["spec"]["versions"]:
        if v["name"] == version:
            schema: dict[str, Any] = v["schema"]["openAPIV3Schema"]["properties"]["status"]
            return schema
    raise AssertionError(f"{file} serves no version {version}")


def _misfits(value: Any, schema: Mapping[str, Any], where: str = "status") -> Iterator[str]:
    """Where ``value`` has a field or a type its OpenAPI ``schema`` does not."""
    kind = schema.get("type")
    if kind == "object":
        if not isinstance(value, dict):
            yield f"{where} is not an object"
            return
        props = schema.get("properties")
        for key, item in value.items():
            if props is None:
                continue  # (free-form: additionalProperties)
            if key not in props:
                yield f"{where}.{key} is not in the schema"
            else:
                yield from _misfits(item, props[key], f"{where}.{key}")
        for key in schema.get("required") or ():
            if key not in value:
                yield f"{where}.{key} is required"
    elif kind == "array":
        if not isinstance(value, list):
            yield f"{where} is not an array"
            return
        for i, item in enumerate(value):
            yield from _misfits(item, schema.get("items") or {}, f"{where}[{i}]")
    elif kind == "string" and not isinstance(value, str):
        yield f"{where} is not a string"
    elif kind == "integer" and (not isinstance(value, int) or isinstance(value, bool)):
        yield f"{where} is not an integer"


def assert_upstream_status(api_version: str, kind: str, status: Mapping[str, Any]) -> None:
    """``status`` fits the status schema of the kind's upstream CRD."""
    misfits = list(_misfits(dict(status), _status_schema(api_version, kind)))
    assert not misfits, misfits


# -- observed_phase: Kubeflow jobs (PyTorchJob, MPIJob) ---------------------------

KUBEFLOW_CASES: dict[str, tuple[dict[str, Any] | None, tuple[ObservedPhase, str | None, str]]] = {
    "no status: pending": (None, (PENDING, None, "")),
    "created only: pending": ({"conditions": [cond("Created", T0)]}, (PENDING, None, "")),
    "running since its transition": (
        {"conditions": [cond("Created", T0), cond("Running", T1, message="running")],
         "startTime": T0},
        (RUNNING, T1, "")),
    "a Running condition that is not true: pending": (
        {"conditions": [cond("Created", T0), cond("Running", T1, status="False")]},
        (PENDING, None, "")),
    "suspended: pending": (
        {"conditions": [cond("Created", T0), cond("Suspended", T1)]}, (PENDING, None, "")),
    "restarting pods: it runs on (a restart must not fail it over)": (
        {"conditions": [cond("Created", T0), cond("Running", T1, status="False"),
                        cond("Restarting", T2)]}, (RUNNING, T2, "")),
    "succeeded, with its time and message": (
        {"conditions": [cond("Created", T0), cond("Running", T1, status="False"),
                        cond("Succeeded", T2, message="job succeeded")],
         "startTime": T0, "completionTime": T2},
        (SUCCEEDED, T2, "job succeeded")),
    "failed, with its message": (
        {"conditions": [cond("Created", T0), cond("Running", T1, status="False"),
                        cond("Failed", T2, message="worker-0 OOMKilled")]},
        (FAILED, T2, "worker-0 OOMKilled")),
    "both true: the later one (failed) ends it": (
        {"conditions": [cond("Succeeded", T2, message="ok"), cond("Failed", T3, message="x")]},
        (FAILED, T3, "x")),
    "both true: the later one (succeeded) ends it": (
        {"conditions": [cond("Failed", T2, message="x"), cond("Succeeded", T3, message="ok")]},
        (SUCCEEDED, T3, "ok")),
    "an ended condition wins over a true Running": (
        {"conditions": [cond("Running", T1), cond("Succeeded", T2)]}, (SUCCEEDED, T2, "")),
    "a Failed condition that is not true does not end it": (
        {"conditions": [cond("Running", T1), cond("Failed", T2, status="False")]},
        (RUNNING, T1, "")),
    "no times: ended, since unknown": (
        {"conditions": [{"type": "Succeeded", "status": "True"}]}, (SUCCEEDED, None, "")),
    "lastUpdateTime when there is no lastTransitionTime": (
        {"conditions": [{"type": "Running", "status": "True", "lastUpdateTime": T1}]},
        (RUNNING, T1, "")),
}

# Shapes the API never serves, read without an error: nothing can be told.
GARBAGE_STATUSES: list[Any] = [
    "Running", [], {"conditions": "Succeeded"}, {"conditions": [None, "Succeeded", 3]},
    {"conditions": [{"type": "Succeeded", "status": "true"}]},  # (Kubernetes says "True")
]


@pytest.mark.parametrize(("api_version", "kind"), KUBEFLOW)
@pytest.mark.parametrize("case", list(KUBEFLOW_CASES))
def test_kubeflow_job_phase_by_its_conditions(api_version: str, kind: str, case: str) -> None:
    """PyTorchJob and both MPIJob versions: the last true Succeeded or Failed
    condition ends the job (since its transition, with its message); else a
    true Running condition runs it; else it is pending."""
    status, expected = KUBEFLOW_CASES[case]
    assert phase_of(api_version, kind, status) == expected


@pytest.mark.parametrize(("api_version", "kind"), KUBEFLOW)
@pytest.mark.parametrize("status", GARBAGE_STATUSES, ids=repr)
def test_kubeflow_job_with_a_status_of_the_wrong_shape_is_pending(
        api_version: str, kind: str, status: Any) -> None:
    job_kind = kind_for(api_version, kind)
    assert job_kind is not None
    obj = manifest(api_version, kind)
    obj["status"] = status
    assert job_kind.observed_phase(obj) == (PENDING, None, "")


@pytest.mark.parametrize(("api_version", "kind"), KUBEFLOW)
@pytest.mark.parametrize("case", list(KUBEFLOW_CASES))
def test_kubeflow_statuses_written_here_fit_the_upstream_crds(
        api_version: str, kind: str, case: str) -> None:
    """The hand-built statuses use only fields of the operators' own CRDs."""
    status, _ = KUBEFLOW_CASES[case]
    if status is not None:
        assert_upstream_status(api_version, kind, status)


# -- observed_phase: batch/v1 Job -------------------------------------------------

BATCH_CASES: dict[str, tuple[dict[str, Any] | None, tuple[ObservedPhase, str | None, str]]] = {
    "no status: pending": (None, (PENDING, None, "")),
    "nothing active yet: pending": ({"active": 0}, (PENDING, None, "")),
    "pods active: running since its startTime": (
        {"active": 3, "ready": 2, "startTime": T1}, (RUNNING, T1, "")),
    "pods active, no startTime: running, since unknown": ({"active": 1}, (RUNNING, None, "")),
    "pods active but none ready (all pending): pending": (
        {"active": 8, "ready": 0, "startTime": T1}, (PENDING, None, "")),
    "suspended: pending": (
        {"active": 0, "conditions": [cond("Suspended", T1, message="Job suspended")]},
        (PENDING, None, "")),
    "Complete: succeeded": (
        {"succeeded": 8, "startTime": T0, "completionTime": T2,
         "conditions": [cond("SuccessCriteriaMet", T2), cond("Complete", T2)]},
        (SUCCEEDED, T2, "")),
    "Failed: failed, with its message": (
        {"failed": 7, "startTime": T0, "conditions": [
            cond("FailureTarget", T2, message="Job has reached the specified backoff limit"),
            cond("Failed", T3, message="Job has reached the specified backoff limit")]},
        (FAILED, T3, "Job has reached the specified backoff limit")),
    "ended, even with pods still active": (
        {"active": 1, "startTime": T0, "conditions": [cond("Failed", T2, message="deadline")]},
        (FAILED, T2, "deadline")),
    "a Succeeded condition means nothing to a batch Job": (
        {"conditions": [cond("Succeeded", T2)]}, (PENDING, None, "")),
    "a count of active pods that is not a number: pending": (
        {"active": "3", "startTime": T1}, (PENDING, None, "")),
}


@pytest.mark.parametrize("case", list(BATCH_CASES))
def test_batch_job_phase(case: str) -> None:
    """batch/v1 Job: a true Complete or Failed condition ends it; else pods
    ready (``status.ready > 0``; ``status.active`` where a cluster does not
    say ``ready``) run it, since ``status.startTime``."""
    status, expected = BATCH_CASES[case]
    assert phase_of("batch/v1", "Job", status) == expected


# -- observed_phase: RayJob -----------------------------------------------------

RAY_CASES: dict[str, tuple[dict[str, Any] | None, tuple[ObservedPhase, str | None, str]]] = {
    "no status: pending": (None, (PENDING, None, "")),
    "empty status: pending": ({}, (PENDING, None, "")),
    "initializing: pending": (
        {"jobDeploymentStatus": "Initializing", "startTime": T0}, (PENDING, None, "")),
    "suspended, with its message: pending": (
        {"jobDeploymentStatus": "Suspended", "message": "suspended by kueue"},
        (PENDING, None, "suspended by kueue")),
    "deployment running: running since its startTime": (
        {"jobDeploymentStatus": "Running", "jobStatus": "PENDING", "startTime": T1},
        (RUNNING, T1, "")),
    "job running: running": (
        {"jobDeploymentStatus": "Initializing", "jobStatus": "RUNNING", "startTime": T1},
        (RUNNING, T1, "")),
    "complete and succeeded: succeeded at its endTime": (
        {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED", "startTime": T0,
         "endTime": T2, "message": "done"}, (SUCCEEDED, T2, "done")),
    "succeeded before the deployment says so: succeeded": (
        {"jobDeploymentStatus": "Running", "jobStatus": "SUCCEEDED", "endTime": T2},
        (SUCCEEDED, T2, "")),
    "complete and failed: failed, its jobStatus said": (
        {"jobDeploymentStatus": "Complete", "jobStatus": "FAILED", "endTime": T2},
        (FAILED, T2, "jobStatus FAILED")),
    "stopped: failed": (
        {"jobDeploymentStatus": "Complete", "jobStatus": "STOPPED", "endTime": T2},
        (FAILED, T2, "jobStatus STOPPED")),
    "complete without a jobStatus: failed, unknown": (
        {"jobDeploymentStatus": "Complete", "endTime": T2}, (FAILED, T2, "jobStatus unknown")),
    "failed with its message": (
        {"jobDeploymentStatus": "Failed", "jobStatus": "FAILED", "endTime": T3,
         "reason": "DeadlineExceeded", "message": "activeDeadlineSeconds reached"},
        (FAILED, T3, "activeDeadlineSeconds reached")),
    "deployment failed before the job ran": (
        {"jobDeploymentStatus": "Failed", "endTime": T3},
        (FAILED, T3, "jobDeploymentStatus Failed")),
    # spec.backoffLimit: KubeRay runs a failed attempt again on its cluster, its jobStatus
    # still the failed attempt's: Retrying (it runs on), then New, Initializing (pending)
    "retrying after a failed attempt: running": (
        {"jobDeploymentStatus": "Retrying", "jobStatus": "FAILED", "failed": 1,
         "endTime": T2, "message": "exit code 1"}, (RUNNING, None, "exit code 1")),
    "a new attempt after a failed one: pending": (
        {"jobDeploymentStatus": "New", "jobStatus": "FAILED", "failed": 1}, (PENDING, None, "")),
    "initializing a new attempt: pending": (
        {"jobDeploymentStatus": "Initializing", "jobStatus": "FAILED", "failed": 1},
        (PENDING, None, "")),
}


@pytest.mark.parametrize(("limit", "failed", "expected"), [
    (2, 0, RUNNING), (2, 2, RUNNING), (2, 3, FAILED), (0, 0, FAILED), (None, 0, FAILED)])
def test_a_rayjob_whose_attempt_failed_with_retries_left_runs_on(
        limit: int | None, failed: int, expected: ObservedPhase) -> None:
    """An attempt just failed (jobStatus FAILED, the deployment still Running):
    KubeRay runs it again while fewer than ``backoffLimit`` + 1 attempts failed."""
    obj = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "r"},
           "spec": {} if limit is None else {"backoffLimit": limit},
           "status": {"jobDeploymentStatus": "Running", "jobStatus": "FAILED",
                      "failed": failed, "endTime": T2}}
    ray = kind_for("ray.io/v1", "RayJob")
    assert ray is not None and ray.observed_phase(obj)[0] is expected


@pytest.mark.parametrize("case", list(RAY_CASES))
def test_rayjob_phase(case: str) -> None:
    """RayJob: by KubeRay's ``jobDeploymentStatus`` and ``jobStatus``; an ended
    job since its ``endTime``, a running one since its ``startTime``."""
    status, expected = RAY_CASES[case]
    assert phase_of("ray.io/v1", "RayJob", status) == expected


@pytest.mark.parametrize("case", list(RAY_CASES))
def test_ray_statuses_written_here_fit_the_upstream_crd(case: str) -> None:
    status, _ = RAY_CASES[case]
    if status is not None:
        assert_upstream_status("ray.io/v1", "RayJob", status)


def test_batch_statuses_use_the_fields_of_the_kubernetes_job_status() -> None:
    """(No upstream CRD for a built-in kind: the fields are batch/v1 JobStatus's.)"""
    fields = {"active", "ready", "succeeded", "failed", "startTime", "completionTime",
              "conditions", "terminating", "uncountedTerminatedPods", "failedIndexes",
              "completedIndexes"}
    for status, _ in BATCH_CASES.values():
        assert set(status or ()) <= fields


def test_every_kind_is_covered() -> None:
    assert {(k.api_version, k.kind) for k in KINDS} == {
        *KUBEFLOW, ("batch/v1", "Job"), ("ray.io/v1", "RayJob")}


# -- observed_phase on the upstream example manifests ------------------------------

def _upstream_examples() -> list[tuple[str, int, dict[str, Any]]]:
    """Every upstream example document of a job kind fleetq knows (path, index, object)."""
    if not UPSTREAM.is_dir():
        return []
    out = []
    for path in sorted(UPSTREAM.rglob("*.yaml")):
        if path.name.startswith(("kubeflow.org_", "ray.io_")):
            continue  # (CRDs)
        for i, doc in enumerate(yaml.safe_load_all(path.read_text(encoding="utf-8"))):
            if isinstance(doc, dict) and kind_for(str(doc.get("apiVersion")),
                                                  str(doc.get("kind"))) is not None:
                out.append((str(path.relative_to(UPSTREAM)), i, doc))
    return out


UPSTREAM_EXAMPLES = _upstream_examples()

# The status each kind's operator writes once the job succeeded / failed.
ENDED_STATUS: dict[str, dict[ObservedPhase, dict[str, Any]]] = {
    "kubeflow": {
        SUCCEEDED: {"startTime": T0, "completionTime": T2, "conditions": [
            cond("Created", T0), cond("Running", T2, status="False"),
            cond("Succeeded", T2, message="succeeded")]},
        FAILED: {"startTime": T0, "conditions": [
            cond("Created", T0), cond("Running", T2, status="False"),
            cond("Failed", T2, message="failed")]},
        RUNNING: {"startTime": T0, "conditions": [cond("Created", T0), cond("Running", T1)]},
    },
    "ray": {
        SUCCEEDED: {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED",
                    "startTime": T0, "endTime": T2, "message": "succeeded"},
        FAILED: {"jobDeploymentStatus": "Failed", "jobStatus": "FAILED", "startTime": T0,
                 "endTime": T2, "message": "failed"},
        RUNNING: {"jobDeploymentStatus": "Running", "jobStatus": "RUNNING", "startTime": T1},
    },
}
ENDED_SINCE = {SUCCEEDED: T2, FAILED: T2, RUNNING: T1}


def test_the_upstream_examples_are_there() -> None:
    if not UPSTREAM.is_dir():
        pytest.skip(f"../shared/upstream not present ({SHARED})")
    kinds = {(d["apiVersion"], d["kind"]) for _, _, d in UPSTREAM_EXAMPLES}
    assert kinds >= {("kubeflow.org/v1", "PyTorchJob"), ("kubeflow.org/v1", "MPIJob"),
                     ("kubeflow.org/v2beta1", "MPIJob"), ("ray.io/v1", "RayJob")}


@pytest.mark.parametrize(("path", "index", "doc"), UPSTREAM_EXAMPLES,
                         ids=[f"{p}#{i}" for p, i, _ in UPSTREAM_EXAMPLES])
def test_an_upstream_example_as_submitted_is_pending(path: str, index: int,
                                                     doc: dict[str, Any]) -> None:
    """The upstream examples carry no ``status:``: a job just created is pending."""
    assert "status" not in doc
    job_kind = kind_for(doc["apiVersion"], doc["kind"])
    assert job_kind is not None
    assert job_kind.observed_phase(doc) == (PENDING, None, "")


@pytest.mark.parametrize("phase", [RUNNING, SUCCEEDED, FAILED])
@pytest.mark.parametrize(("path", "index", "doc"), UPSTREAM_EXAMPLES,
                         ids=[f"{p}#{i}" for p, i, _ in UPSTREAM_EXAMPLES])
def test_an_upstream_example_with_its_operators_status(
        path: str, index: int, doc: dict[str, Any], phase: ObservedPhase) -> None:
    """Each upstream example, given the status its operator writes (checked
    against the upstream CRD), is read as running, succeeded or failed, and
    ``cluster_report`` keys it by group, kind, namespace and name."""
    api_version, kind = doc["apiVersion"], doc["kind"]
    status = ENDED_STATUS["ray" if kind == "RayJob" else "kubeflow"][phase]
    assert_upstream_status(api_version, kind, status)
    meta = doc["metadata"]
    # (a generateName is completed by the API server, as it would be on the cluster)
    name = meta.get("name") or f"{meta['generateName']}x7k2p"
    obj = {**doc, "status": status,
           "metadata": {**meta, "name": name, "labels": {**meta.get("labels", {}), **MANAGED}}}
    job_kind = kind_for(api_version, kind)
    assert job_kind is not None
    got = job_kind.observed_phase(obj)
    assert got[:2] == (phase, ENDED_SINCE[phase])
    report = cluster_report("c", OBSERVED_AT, [obj])
    namespace = meta.get("namespace") or "default"
    assert report.jobs == [ObservedJob(JobKey(api_version.split("/")[0], kind, namespace, name),
                                       phase, ENDED_SINCE[phase], got[2], api_version)]


# -- cluster_report ---------------------------------------------------------------

def node(name: str, *, ready: str | None = "True", unschedulable: bool = False,
         labels: Mapping[str, str] | None = None,
         taints: list[dict[str, str]] | None = None,
         allocatable: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A Node as the API serves it."""
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}", "resourceVersion": "7"}
    if labels is not None:
        meta["labels"] = dict(labels)
    spec: dict[str, Any] = {"podCIDR": "10.0.0.0/24"}
    if unschedulable:
        spec["unschedulable"] = True
    if taints is not None:
        spec["taints"] = taints
    conditions = [{"type": "MemoryPressure", "status": "False"}]
    if ready is not None:
        conditions.append({"type": "Ready", "status": ready, "reason": "KubeletReady"})
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec,
            "status": {"allocatable": dict(allocatable or {"cpu": "4", "memory": "16Gi"}),
                       "capacity": {"cpu": "4"}, "conditions": conditions}}


RUNNING_STATUS = {"conditions": [cond("Running", T1)]}


def test_only_managed_jobs_of_known_kinds_are_reported_the_rest_counted() -> None:
    """A job is reported when it is of a kind fleetq knows and labelled
    ``fleetq.io/managed-by: fleetq``; everything else (other labels, other
    kinds, other versions) is skipped and counted."""
    objects = [
        manifest("kubeflow.org/v1", "PyTorchJob", "mine", status=RUNNING_STATUS),
        manifest("kubeflow.org/v1", "PyTorchJob", "no-labels", labels=None),
        manifest("kubeflow.org/v1", "PyTorchJob", "someone-elses",
                 labels={"fleetq.io/managed-by": "argo"}),
        manifest("kubeflow.org/v1", "PyTorchJob", "other-label", labels={"app": "fleetq"}),
        manifest("apps/v1", "Deployment", "web"),  # managed, but no job kind
        manifest("kubeflow.org/v1beta1", "PyTorchJob", "old"),  # a version fleetq does not know
        manifest("v1", "ConfigMap", "code"),
        manifest("batch/v1", "Job", "index", status={"active": 2, "startTime": T1}),
    ]
    report = cluster_report("gpu-a", OBSERVED_AT, objects)
    assert report.jobs == [
        ObservedJob(JobKey("kubeflow.org", "PyTorchJob", "team", "mine"), RUNNING, T1, "",
                    "kubeflow.org/v1"),
        ObservedJob(JobKey("batch", "Job", "team", "index"), RUNNING, T1, "", "batch/v1"),
    ]
    assert report.skipped == 6
    assert report.problems == []
    assert report.nodes is None  # no Node among the objects, none asked for
    assert report.cluster == "gpu-a" and report.observed_at == OBSERVED_AT
    assert report.complete is False


def test_a_list_is_taken_item_by_item() -> None:
    """``kubectl get -o yaml`` output (``kind: List``) and an API list
    (``PyTorchJobList``) are flattened; their items are reported."""
    listed = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
              "items": [manifest("ray.io/v1", "RayJob", "ray-a"), node("n-1"),
                        manifest("v1", "Pod", "pod-a"), "not an object"]}
    typed = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJobList",
             "items": [manifest("kubeflow.org/v1", "PyTorchJob", "pt-a",
                                status={"conditions": [cond("Succeeded", T2)]})]}
    report = cluster_report("c", OBSERVED_AT, [listed, typed,
                                               manifest("batch/v1", "Job", "alone")])
    assert [(j.key.kind, j.key.name, j.phase) for j in report.jobs] == [
        ("RayJob", "ray-a", PENDING), ("PyTorchJob", "pt-a", SUCCEEDED),
        ("Job", "alone", PENDING)]
    assert report.skipped == 1  # the Pod
    assert report.nodes is not None and [n["name"] for n in report.nodes] == ["n-1"]


def test_an_empty_list_adds_nothing() -> None:
    report = cluster_report("c", OBSERVED_AT, [{"apiVersion": "v1", "kind": "List",
                                                "items": []}])
    assert report.jobs == [] and report.skipped == 0 and report.nodes is None


def test_nodes_make_the_inventory() -> None:
    """Each Node: its name, allocatable (as strings, by name), labels, taints
    (key, value, effect), whether it is ready (a true Ready condition), and
    ``unschedulable`` when it is cordoned."""
    nodes = [
        node("gpu-1", labels={"zone": "h", "gpu": "a100"},
             taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                     {"key": "maintenance", "effect": "NoExecute",
                      "timeAdded": "2026-12-04T09:00:00Z"}],
             allocatable={"nvidia.com/gpu": 8, "cpu": "96", "memory": "768Gi",
                          "pods": "110"}),
        node("cordoned", unschedulable=True),
        node("not-ready", ready="False"),
        node("unknown", ready="Unknown"),
        node("no-ready-condition", ready=None),
    ]
    report = cluster_report("c", OBSERVED_AT, nodes)
    assert report.jobs == [] and report.skipped == 0
    assert report.nodes is not None
    by_name = {n["name"]: n for n in report.nodes}
    assert by_name["gpu-1"] == {
        "name": "gpu-1", "ready": True,
        "allocatable": {"cpu": "96", "memory": "768Gi", "nvidia.com/gpu": "8", "pods": "110"},
        "labels": {"gpu": "a100", "zone": "h"},
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                   {"key": "maintenance", "effect": "NoExecute"}]}
    assert list(by_name["gpu-1"]["allocatable"]) == ["cpu", "memory", "nvidia.com/gpu", "pods"]
    assert by_name["cordoned"] == {"name": "cordoned", "ready": True, "unschedulable": True,
                                   "allocatable": {"cpu": "4", "memory": "16Gi"}}
    assert {name: n["ready"] for name, n in by_name.items()} == {
        "gpu-1": True, "cordoned": True, "not-ready": False, "unknown": False,
        "no-ready-condition": False}
    # no labels, no taints: the keys are left out
    assert "labels" not in by_name["not-ready"] and "taints" not in by_name["not-ready"]

    inventory = yaml.safe_load(report.files()[inventory_path("c")])
    assert inventory["kind"] == "ClusterInventory" and inventory["apiVersion"] == API_VERSION
    assert inventory["metadata"] == {"name": "c"} and inventory["observedAt"] == OBSERVED_AT
    assert [n["name"] for n in inventory["nodes"]] == sorted(by_name)  # by name
    assert inventory["nodes"][sorted(by_name).index("gpu-1")] == by_name["gpu-1"]


def test_nodes_read_says_whether_no_node_means_none_there() -> None:
    """``nodes_read=True`` (the nodes were listed): none read is an empty
    inventory; otherwise no Node means no inventory file at all."""
    asked = cluster_report("c", OBSERVED_AT, [], nodes_read=True)
    assert asked.nodes == []
    assert yaml.safe_load(asked.files()[inventory_path("c")])["nodes"] == []
    not_asked = cluster_report("c", OBSERVED_AT, [])
    assert not_asked.nodes is None
    assert set(not_asked.files()) == {status_path("c")}


def test_a_managed_job_without_a_name_is_a_problem_and_left_out() -> None:
    """The problem names where the objects came from, and which object."""
    nameless = manifest("kubeflow.org/v1", "PyTorchJob", "x")
    del nameless["metadata"]["name"]
    blank = manifest("ray.io/v1", "RayJob", "")
    no_metadata = {"apiVersion": "batch/v1", "kind": "Job", "status": {"active": 1}}
    objects = [manifest("batch/v1", "Job", "ok"), nameless, blank, no_metadata]
    report = cluster_report("c", OBSERVED_AT, objects, where="context ctx-c")
    assert [j.key.name for j in report.jobs] == ["ok"]
    assert [(p.path, p.line) for p in report.problems] == [("context ctx-c", 0)] * 2
    assert "object 2 (PyTorchJob) has no metadata.name" in report.problems[0].message
    assert "object 3 (RayJob) has no metadata.name" in report.problems[1].message
    assert all("left out" in p.message for p in report.problems)
    # no metadata at all: no labels, so not fleetq's
    assert report.skipped == 1
    # without ``where``, the cluster is named
    assert cluster_report("c", OBSERVED_AT, [nameless]).problems[0].path == "c"


def test_problems_of_objects_read_from_yaml_name_their_lines() -> None:
    """Read from ``kubectl get -o yaml`` output (``Document``s), a problem
    names the line of its object: a List's item, or a document of its own."""
    text = (
        "apiVersion: v1\nkind: List\nitems:\n"
        "- apiVersion: batch/v1\n  kind: Job\n"
        "  metadata: {name: ok, labels: {fleetq.io/managed-by: fleetq}}\n"
        "- apiVersion: batch/v1\n  kind: Job\n"
        "  metadata: {labels: {fleetq.io/managed-by: fleetq}}\n"
        "- apiVersion: batch/v1\n  kind: Job\n"
        "  metadata: {name: late, labels: {fleetq.io/managed-by: fleetq}}\n"
        "  status: {conditions: [{type: Complete, status: 'True', "
        "lastTransitionTime: 'soon'}]}\n"
        "---\n"
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\n"
        "metadata: {labels: {fleetq.io/managed-by: fleetq}}\n")
    docs, problem = parse_documents("<stdin>", text)
    assert problem is None
    report = cluster_report("c", OBSERVED_AT, docs, where="<stdin>")
    assert [j.key.name for j in report.jobs] == ["ok", "late"]
    assert [(p.line, p.message.split(":")[0]) for p in report.problems] == [
        (7, "object 2 (Job) has no metadata.name; it is left out"),
        (10, "Job default/late"),
        (15, "object 4 (PyTorchJob) has no metadata.name; it is left out")]
    assert "its time 'soon' is not an RFC 3339 time" in report.problems[1].message


def test_a_job_without_a_namespace_is_in_default() -> None:
    report = cluster_report("c", OBSERVED_AT, [manifest("batch/v1", "Job", "j",
                                                         namespace=None)])
    assert report.jobs[0].key == JobKey("batch", "Job", "default", "j")


def test_the_status_file_lists_the_jobs_in_order_with_since_and_message_when_known() -> None:
    objects = [
        manifest("ray.io/v1", "RayJob", "b-ray", namespace="video", status={
            "jobDeploymentStatus": "Failed", "endTime": T3, "message": "head OOM"}),
        manifest("kubeflow.org/v1", "PyTorchJob", "a-pt", namespace="text"),
        manifest("kubeflow.org/v2beta1", "MPIJob", "c-mpi", namespace="text", status={
            "conditions": [cond("Succeeded", T2)]}),
    ]
    report = cluster_report("gpu-b", OBSERVED_AT, objects, complete=True)
    status = yaml.safe_load(report.files()[status_path("gpu-b")])
    assert status == {
        "apiVersion": API_VERSION, "kind": "ClusterStatus", "metadata": {"name": "gpu-b"},
        "observedAt": OBSERVED_AT, "complete": True,
        "jobs": [  # by (group, kind, namespace, name)
            {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "namespace": "text",
             "name": "c-mpi", "phase": "Succeeded", "since": T2},
            {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "namespace": "text",
             "name": "a-pt", "phase": "Pending"},
            {"apiVersion": "ray.io/v1", "kind": "RayJob", "namespace": "video",
             "name": "b-ray", "phase": "Failed", "since": T3, "message": "head OOM"},
        ]}
    assert report.summary() == "gpu-b: jobs 1 failed, 1 pending, 1 succeeded"
    assert cluster_report("gpu-b", OBSERVED_AT, [], nodes_read=True).summary() == \
        "gpu-b: jobs none; 0 nodes"


def test_a_report_is_the_same_bytes_whatever_the_order_read() -> None:
    objects = [manifest("batch/v1", "Job", f"j{i}", status={"active": 1, "startTime": T1})
               for i in range(5)] + [node(f"n{i}") for i in range(3)]
    first = cluster_report("c", OBSERVED_AT, objects).files()
    assert cluster_report("c", OBSERVED_AT, objects[::-1]).files() == first


# -- read_status --------------------------------------------------------------------

def test_read_status_reads_back_what_files_wrote() -> None:
    """The round trip: ``ClusterReport.files()``'s status file read by
    ``read_status`` is the report's jobs, time and completeness."""
    objects = [
        manifest("kubeflow.org/v1", "PyTorchJob", "pt", namespace="text",
                 status={"conditions": [cond("Succeeded", T2, message='done: "ok" # 1')]}),
        manifest("ray.io/v1", "RayJob", "ray", namespace="video",
                 status={"jobDeploymentStatus": "Running", "startTime": T1}),
        manifest("kubeflow.org/v2beta1", "MPIJob", "mpi", namespace="video"),
        manifest("kubeflow.org/v1", "MPIJob", "old-mpi", namespace="video",
                 status={"conditions": [cond("Failed", T3, message="line 1\nline 2")]}),
        manifest("batch/v1", "Job", "yes", namespace="null", status={"active": 1}),
        node("n-1"),
    ]
    for complete in (True, False):
        report = cluster_report("gpu-b", OBSERVED_AT, objects, complete=complete)
        path = status_path("gpu-b")
        observation, problems = read_status(path, report.files()[path])
        assert problems == []
        assert observation == ClusterObservation(
            "gpu-b", OBSERVED_AT, {j.key: j for j in report.jobs}, complete)


NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-.", min_size=1, max_size=20) | \
    st.sampled_from(["yes", "no", "on", "null", "true", "1e3", "0x1F", "010", "~", "1.5"])


@settings(max_examples=60, deadline=None)
@given(namespace=NAMES, name=NAMES, message=st.text(max_size=60),
       phase=st.sampled_from(list(ObservedPhase)), with_since=st.booleans())
def test_read_status_round_trip_of_any_names_and_message(
        namespace: str, name: str, message: str, phase: ObservedPhase,
        with_since: bool) -> None:
    job = ObservedJob(JobKey("kubeflow.org", "PyTorchJob", namespace, name), phase,
                      T2 if with_since else None, message, "kubeflow.org/v1")
    report = ClusterReport("c", OBSERVED_AT, [job])
    observation, problems = read_status("status/c.yaml", report.files()["status/c.yaml"])
    assert problems == []
    assert observation is not None
    # (an empty message and a missing one are the same)
    assert dict(observation.jobs) == {job.key: job}


STATUS_HEAD = (f"apiVersion: {API_VERSION}\nkind: ClusterStatus\nmetadata:\n  name: gpu-b\n"
               f"observedAt: \"{OBSERVED_AT}\"\ncomplete: true\n")


def test_a_file_that_is_not_yaml_is_a_problem_at_its_line() -> None:
    observation, problems = read_status("status/gpu-b.yaml",
                                        STATUS_HEAD.encode() + b"jobs: [\n")
    assert observation is None
    assert len(problems) == 1
    assert problems[0].path == "status/gpu-b.yaml" and problems[0].line == 7  # (where `[` opens)
    assert "not valid YAML" in problems[0].message


@pytest.mark.parametrize(("text", "line"), [
    ("", 0),
    ("- a\n- b\n", 1),
    ("just text\n", 1),
    (STATUS_HEAD + "jobs: []\n---\n" + STATUS_HEAD + "jobs: []\n", 1),
])
def test_a_file_that_is_not_one_mapping_is_a_problem(text: str, line: int) -> None:
    observation, problems = read_status("status/gpu-b.yaml", text.encode())
    assert observation is None
    assert [(p.path, p.line) for p in problems] == [("status/gpu-b.yaml", line)]
    assert "a ClusterStatus is one mapping" in problems[0].message


@pytest.mark.parametrize("head", [
    STATUS_HEAD.replace("kind: ClusterStatus", "kind: ClusterInventory"),
    STATUS_HEAD.replace(API_VERSION, "fleetq.io/v1"),
    STATUS_HEAD.replace("kind: ClusterStatus\n", ""),
])
def test_a_file_of_the_wrong_kind_is_a_problem(head: str) -> None:
    """(e.g. an inventory file copied over a status file)."""
    data = ("# written by hand\n\n" + head + "jobs: []\n").encode()
    observation, problems = read_status("status/gpu-b.yaml", data)
    assert observation is None
    assert [(p.path, p.line) for p in problems] == [("status/gpu-b.yaml", 3)]
    assert f"not a {API_VERSION} ClusterStatus" in problems[0].message


@pytest.mark.parametrize("observed_at", ['"yesterday"', '""', "12", "null",
                                         '"2026-13-04T10:00:00Z"'])
def test_a_bad_observed_at_is_a_problem_at_its_line(observed_at: str) -> None:
    head = STATUS_HEAD.replace(f'"{OBSERVED_AT}"', observed_at)
    observation, problems = read_status("status/gpu-b.yaml", (head + "jobs: []\n").encode())
    assert observation is None
    assert [(p.path, p.line) for p in problems] == [("status/gpu-b.yaml", 5)]
    assert "observedAt must be an RFC 3339 time" in problems[0].message


def test_a_missing_observed_at_is_a_problem() -> None:
    head = STATUS_HEAD.replace(f'observedAt: "{OBSERVED_AT}"\n', "")
    observation, problems = read_status("status/gpu-b.yaml", (head + "jobs: []\n").encode())
    assert observation is None
    assert [p.path for p in problems] == ["status/gpu-b.yaml"]
    assert "observedAt" in problems[0].message


def test_a_bad_job_entry_is_left_out_at_its_line_and_the_rest_kept() -> None:
    """Each entry that cannot be read is a problem naming the path, the line
    of the entry and what is wrong; the entries around it are kept."""
    text = STATUS_HEAD + (
        "jobs:\n"                                                              # 7
        "- {apiVersion: kubeflow.org/v1, kind: PyTorchJob, namespace: text,"  # 8
        " name: good-1, phase: Succeeded, since: '2026-12-04T10:30:00Z'}\n"
        "- apiVersion: kubeflow.org/v1\n"                                      # 9
        "  kind: PyTorchJob\n"
        "  namespace: text\n"
        "  name: no-phase\n"
        "- {apiVersion: batch/v1, kind: Job, name: done, phase: Done}\n"       # 13
        "- {apiVersion: ray.io/v1, kind: RayJob, name: r, phase: Running, since: soon}\n"  # 14
        "- {kind: Job, name: no-api-version, phase: Running}\n"                # 15
        "- just a string\n"                                                    # 16
        "- {apiVersion: batch/v1, kind: Job, name: good-2, phase: Running}\n"  # 17
    )
    observation, problems = read_status("status/gpu-b.yaml", text.encode())
    assert observation is not None
    assert observation.cluster == "gpu-b" and observation.complete is True
    assert set(observation.jobs) == {JobKey("kubeflow.org", "PyTorchJob", "text", "good-1"),
                                     JobKey("batch", "Job", "default", "good-2")}
    good = observation.jobs[JobKey("kubeflow.org", "PyTorchJob", "text", "good-1")]
    assert good.phase is SUCCEEDED and good.since == T2
    assert [(p.path, p.line) for p in problems] == [
        ("status/gpu-b.yaml", line) for line in (9, 13, 14, 15, 16)]
    messages = [p.message for p in problems]
    assert messages[0].startswith("job entry 2 cannot be read (no 'phase'); it is left out")
    assert "'Done' is not a valid" in messages[1] and messages[1].startswith("job entry 3 ")
    assert "since 'soon' is not an RFC 3339 time" in messages[2]
    assert "no 'apiVersion'" in messages[3]
    assert messages[4].startswith("job entry 6 cannot be read")
    assert all("Pending, Running, Succeeded or Failed" in m for m in messages)


def test_the_cluster_is_named_by_the_file() -> None:
    report = cluster_report("cpu-sh-c", OBSERVED_AT, [manifest("batch/v1", "Job", "j")])
    data = report.files()[status_path("cpu-sh-c")]
    observation, problems = read_status("status/cpu-sh-c.yaml", data)
    assert problems == [] and observation is not None and observation.cluster == "cpu-sh-c"


def test_no_jobs_is_an_empty_report() -> None:
    for tail in ("jobs: []\n", "jobs:\n", ""):
        observation, problems = read_status("status/gpu-b.yaml",
                                            (STATUS_HEAD + tail).encode())
        assert problems == []
        assert observation == ClusterObservation("gpu-b", OBSERVED_AT, {}, True)


@pytest.mark.parametrize("jobs", ["5", "true", "{a: 1}", "some text"])
def test_jobs_that_is_not_a_list_is_a_problem_not_a_crash(jobs: str) -> None:
    observation, problems = read_status("status/gpu-b.yaml",
                                        (STATUS_HEAD + f"jobs: {jobs}\n").encode())
    assert observation is None
    assert [(p.path, p.line) for p in problems] == [("status/gpu-b.yaml", 7)]
    assert "jobs must be a list" in problems[0].message


# -- read_inventory -----------------------------------------------------------------

def test_read_inventory_reads_back_what_files_wrote() -> None:
    """The inventory file's nodes come back with their allocatable (as
    quantities) and readiness."""
    report = cluster_report("gpu-b", OBSERVED_AT, [
        node("b-1", allocatable={"cpu": "96", "memory": "1Gi", "nvidia.com/gpu": "8"},
             labels={"zone": "l"}, taints=[{"key": "k", "effect": "NoSchedule"}]),
        node("b-0", ready="False", allocatable={"cpu": "500m"})])
    path = inventory_path("gpu-b")
    nodes, observed_at, problems = read_inventory(path, report.files()[path])
    assert problems == [] and observed_at == OBSERVED_AT
    assert nodes is not None
    assert [(n.name, n.ready) for n in nodes] == [("b-0", False), ("b-1", True)]
    assert nodes[1].allocatable == parse_resources(
        {"cpu": "96", "memory": "1Gi", "nvidia.com/gpu": "8"}, "allocatable")
    assert nodes[0].allocatable == parse_resources({"cpu": "500m"}, "allocatable")


def test_a_bad_inventory_entry_is_left_out_at_its_line() -> None:
    text = (f"apiVersion: {API_VERSION}\nkind: ClusterInventory\nmetadata: {{name: c}}\n"
            f"observedAt: \"{OBSERVED_AT}\"\nnodes:\n"        # 5
            "- {name: a, allocatable: {cpu: '4'}, ready: true}\n"  # 6
            "- {allocatable: {cpu: '4'}, ready: true}\n"           # 7
            "- {name: c, allocatable: {cpu: lots}, ready: true}\n"  # 8
            "- {name: d, allocatable: {cpu: '2'}, ready: true}\n")
    nodes, _, problems = read_inventory("inventory/c.yaml", text.encode())
    assert nodes is not None and [n.name for n in nodes] == ["a", "d"]
    assert [(p.path, p.line) for p in problems] == [("inventory/c.yaml", 7),
                                                    ("inventory/c.yaml", 8)]
    assert all("left out" in p.message for p in problems)
    # a status file is not an inventory
    status = cluster_report("c", OBSERVED_AT, []).files()[status_path("c")]
    nodes, _, problems = read_inventory("inventory/c.yaml", status)
    assert nodes is None and "not a fleetq.io/v1alpha1 ClusterInventory" in problems[0].message


def test_a_time_that_is_not_rfc3339_is_recorded_without_one_and_said() -> None:
    """An epoch or garbage time from a cluster: the job is recorded with no
    ``since`` (a warning says so), not dropped later by the reconcile; an
    offset time is written in UTC."""
    objects = [manifest("batch/v1", "Job", "epoch", status={
        "conditions": [{"type": "Complete", "status": "True",
                        "lastTransitionTime": 1764844200}]}),
        manifest("batch/v1", "Job", "offset", status={
            "conditions": [{"type": "Complete", "status": "True",
                            "lastTransitionTime": "2026-12-04T18:30:00+08:00"}]})]
    report = cluster_report("gpu-b", T0, objects, where="<stdin>")
    by_name = {j.key.name: j for j in report.jobs}
    assert by_name["epoch"].since is None and by_name["offset"].since == "2026-12-04T10:30:00Z"
    [problem] = report.problems
    assert problem.severity == "warning" and "1764844200" in problem.message
    observation, problems = read_status("status/gpu-b.yaml",
                                        report.files()["status/gpu-b.yaml"])
    assert problems == [] and observation is not None and len(observation.jobs) == 2


def test_unquoted_times_in_a_hand_written_report_are_read_as_times() -> None:
    text = (STATUS_HEAD.replace(f'observedAt: "{OBSERVED_AT}"', f"observedAt: {OBSERVED_AT}")
            + f"jobs:\n- {{apiVersion: batch/v1, kind: Job, name: j, phase: Running, "
              f"since: {T1}}}\n")
    observation, problems = read_status("status/gpu-b.yaml", text.encode())
    assert problems == [] and observation is not None
    assert observation.observed_at == OBSERVED_AT
    assert [j.since for j in observation.jobs.values()] == [T1]
    date_only = STATUS_HEAD.replace(f'observedAt: "{OBSERVED_AT}"', "observedAt: '2026-12-04'")
    assert read_status("status/gpu-b.yaml", date_only.encode())[0] is None


BOTH, ON_SUCCESS, ON_FAILURE, NEVER = (True, True), (True, False), (False, True), (False, False)


@pytest.mark.parametrize(("api_version", "kind", "spec", "deleted"), [
    ("batch/v1", "Job", {"ttlSecondsAfterFinished": 0}, BOTH),
    ("batch/v1", "Job", {}, NEVER),
    ("kubeflow.org/v1", "PyTorchJob", {"runPolicy": {"ttlSecondsAfterFinished": 60}}, BOTH),
    ("kubeflow.org/v1", "PyTorchJob", {"runPolicy": {"cleanPodPolicy": "None"}}, NEVER),
    ("kubeflow.org/v2beta1", "MPIJob", {"runPolicy": {"ttlSecondsAfterFinished": 60}}, BOTH),
    ("ray.io/v1", "RayJob", {"ttlSecondsAfterFinished": 600}, NEVER),  # (its RayCluster only)
    # KubeRay deletes by the outcome: a failed RayJob kept for its logs used to be
    # taken off its cluster with the successful ones
    ("ray.io/v1", "RayJob", {"deletionStrategy": {"onSuccess": {"policy": "DeleteSelf"},
                                                  "onFailure": {"policy": "DeleteNone"}}},
     ON_SUCCESS),
    ("ray.io/v1", "RayJob", {"deletionStrategy": {"onSuccess": {"policy": "DeleteCluster"},
                                                  "onFailure": {"policy": "DeleteSelf"}}},
     ON_FAILURE),
    ("ray.io/v1", "RayJob", {"deletionStrategy": {"deletionRules": [
        {"condition": {"jobStatus": "SUCCEEDED"}, "policy": "DeleteSelf"}]}}, ON_SUCCESS),
    ("ray.io/v1", "RayJob", {"deletionStrategy": {"deletionRules": [
        {"condition": {"jobStatus": "FAILED", "ttlSeconds": 60}, "policy": "DeleteSelf"},
        {"condition": {"jobStatus": "SUCCEEDED"}, "policy": "DeleteCluster"}]}}, ON_FAILURE),
    ("ray.io/v1", "RayJob", {"deletionStrategy": {"deletionRules": [
        {"condition": {"jobDeploymentStatus": "Failed"}, "policy": "DeleteSelf"}]}}, ON_FAILURE),
    ("ray.io/v1", "RayJob", {"deletionStrategy": {"deletionRules": [
        {"policy": "DeleteSelf"}]}}, BOTH),
    ("ray.io/v1", "RayJob", {"deletionStrategy": {"onSuccess": {"policy": "DeleteCluster"}}},
     NEVER),
])
def test_a_kind_says_whether_its_operator_deletes_a_job_that_succeeded_or_failed(
        api_version: str, kind: str, spec: dict[str, Any], deleted: tuple[bool, bool]) -> None:
    job_kind = kind_for(api_version, kind)
    assert job_kind is not None
    assert job_kind.deleted_when({"apiVersion": api_version, "kind": kind,
                                  "spec": spec}) == deleted


def test_a_node_with_fields_of_the_wrong_shape_is_read_without_them() -> None:
    """A node whose allocatable, conditions or taints are not what the API says
    is read with none of them (not ready), not a crash of the whole report."""
    odd = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
           "spec": {"taints": "none"},
           "status": {"allocatable": ["cpu"], "conditions": "Ready"}}
    report = cluster_report("gpu-b", T0, [odd])
    assert report.nodes == [{"name": "n1", "allocatable": {}, "ready": False}]


def test_a_node_whose_allocatable_is_no_quantity_is_warned_of_when_reported() -> None:
    """It was recorded in silence; the next reconcile left the node out of the
    cluster's capacity, with a warning naming the inventory, not the input."""
    bad = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
           "status": {"allocatable": {"cpu": "96", "nvidia.com/gpu": "eight"},
                      "conditions": [{"type": "Ready", "status": "True"}]}}
    good = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"},
            "status": {"allocatable": {"cpu": "96"}}}
    report = cluster_report("gpu-b", T0, [bad, good], where="<stdin>")
    assert [str(p) for p in report.problems] == [
        "<stdin>: warning: Node n1: status.allocatable.nvidia.com/gpu: 'eight' is not a "
        f"Kubernetes quantity ({QUANTITY_FORM}); the cluster's capacity is counted without "
        "this node until a report has it right"]
    assert [n["name"] for n in report.nodes or []] == ["n1", "n2"]


@pytest.mark.parametrize("status", [*GARBAGE_STATUSES[:4], {"startTime": 12},
                                    {"jobStatus": ["RUNNING"]},
                                    # (counts: read as none running, a running job failed over)
                                    {"active": "eight", "startTime": T1}, {"failed": "x"},
                                    {"ready": -1}, {"succeeded": True},
                                    {"replicaStatuses": {"Worker": {"active": "2"}}},
                                    {"replicaStatuses": ["Worker"]}], ids=repr)
@pytest.mark.parametrize("complete", [False, True])
def test_a_job_whose_status_cannot_be_read_is_left_as_the_last_report_had_it(
        status: Any, complete: bool) -> None:
    """Read as pending, a running job whose status came garbled failed over
    from where it ran. It is told, and stays as the earlier report said; a
    complete report that could not read it is recorded as not complete (it
    would say the job is not there)."""
    key = JobKey("kubeflow.org", "PyTorchJob", "team", "odd")
    objects = [manifest("kubeflow.org/v1", "PyTorchJob", "odd", status=None),
               manifest("kubeflow.org/v1", "PyTorchJob", "fine", status=RUNNING_STATUS)]
    objects[0]["status"] = status
    report = cluster_report("gpu-a", OBSERVED_AT, objects, where="report.yaml",
                            complete=complete)
    assert [j.key.name for j in report.jobs] == ["fine"]
    assert report.unread == {key} and report.complete is False
    [problem] = report.problems
    assert problem.severity == "warning" and problem.message.startswith(
        "PyTorchJob team/odd: its status")
    assert problem.message.endswith("it is recorded as the last report had it" + (
        ", and the report as not complete" if complete else ""))
    earlier = ClusterObservation("gpu-a", "2026-12-04T10:30:00Z", {
        key: ObservedJob(key, RUNNING, T1, "", "kubeflow.org/v1")})
    report.carry(earlier)
    assert [(j.key.name, j.phase) for j in report.carried] == [("odd", RUNNING)]
