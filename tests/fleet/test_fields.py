"""A job's fields against those its API server holds (``reconciler.jobkinds.schema``).

A field of the wrong type, or a value outside what the API server takes, is
refused by the member cluster: the job is invalid, each mistake told at its
line. A field the API does not have is dropped there: a warning at its line,
naming the field that was meant, and the job runs.
"""

from __future__ import annotations

import pytest

from reconciler.jobkinds.schema import SCHEMAS, check_fields, k8s_record, model_fields

from .test_inputs import read, told

POD = "spec.pytorchReplicaSpecs.Master.template.spec"
WRONG = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: p, namespace: default}
spec:
  nprocPerNode: 2
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            image: pytorch/pytorch:2.3.1
            imagePullPolicy: always
            command: torchrun --nproc_per_node=2 train.py
            args: [--epochs, 3]
            env:
            - {name: EPOCHS, value: 3}
            - {name: DEBUG, value: yes}
            ports:
            - {containerPort: "29500", protocol: tcp}
            resources: {requests: {cpu: "1"}}
            volumeMounts: [{name: shm, mountPath: /dev/shm}]
          volumes:
          - {name: shm, emptyDir: {medium: Memory, sizeLimit: 1Gb}}
          hostNetwork: "true"
"""


def test_a_field_of_the_wrong_type_is_an_error_at_its_line() -> None:
    """Each was admitted before: it took its quota and its room, and the API
    server refused it (a string where a list is taken, a number where a string
    is, a value of an enumeration written in the wrong case)."""
    c = f"{POD}.containers[0]"
    inputs = read({"jobs/p.yaml": WRONG})
    assert not inputs.jobs
    refuses = "the API server refuses it"
    assert told(inputs) == [
        f"jobs/p.yaml:5: spec.nprocPerNode must be a string, not a number 2: {refuses}; quote "
        f"it; fix the manifest (and 9 more mistake(s) of it, each told at its line)",
        f"jobs/p.yaml:14: {c}.imagePullPolicy 'always' is not one the API server takes "
        f"(Always, IfNotPresent, Never): write Always; fix the manifest",
        f"jobs/p.yaml:15: {c}.command must be a list, not a string 'torchrun "
        f"--nproc_per_node=2 train.py': {refuses}; write it as a list, one item per line "
        f"(- item); fix the manifest",
        f"jobs/p.yaml:16: {c}.args[1] must be a string, not a number 3: {refuses}; quote it; "
        f"fix the manifest",
        f"jobs/p.yaml:18: {c}.env[0].value must be a string, not a number 3: {refuses}; quote "
        f"it; fix the manifest",
        f"jobs/p.yaml:19: {c}.env[1].value must be a string, not a boolean true (YAML reads "
        f"on, off, yes, no, true and false unquoted as booleans): {refuses}; quote it; fix the "
        f"manifest",
        f"jobs/p.yaml:21: {c}.ports[0].containerPort must be an integer, not a string '29500': "
        f"{refuses}; fix the manifest",
        f"jobs/p.yaml:21: {c}.ports[0].protocol 'tcp' is not one the API server takes (TCP, "
        f"UDP, SCTP): write TCP; fix the manifest",
        f"jobs/p.yaml:25: {POD}.volumes[0].emptyDir.sizeLimit: '1Gb' is not a Kubernetes "
        f"quantity (a number with an optional suffix: m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, "
        f"Ei, or an exponent such as e3); fix the manifest",
        f"jobs/p.yaml:26: {POD}.hostNetwork must be true or false, not a string 'true': "
        f"{refuses}; fix the manifest"]
    fixed = (WRONG.replace("nprocPerNode: 2", 'nprocPerNode: "2"').replace("always", "Always")
             .replace("command: torchrun --nproc_per_node=2 train.py",
                      "command: [torchrun, --nproc_per_node=2, train.py]")
             .replace("--epochs, 3", '--epochs, "3"').replace("value: 3", 'value: "3"')
             .replace("value: yes", 'value: "yes"').replace('"29500"', "29500")
             .replace("tcp", "TCP").replace("1Gb", "1Gi").replace('"true"', "true"))
    got = read({"jobs/p.yaml": fixed})
    assert told(got) == [] and told(got, "warning") == []
    assert [k.name for k in got.jobs] == ["p"]


def test_a_field_the_api_does_not_have_is_a_warning_at_its_line_and_the_job_runs() -> None:
    """A misspelt field (``tolerationz``) is dropped by the API server: the
    job would run without its tolerations. It is told with the field meant;
    one with no field near it, to be removed."""
    typos = (WRONG.replace("nprocPerNode: 2", "runpolicy: {suspend: true}")
             .replace("always", "Always")
             .replace("command: torchrun --nproc_per_node=2 train.py", "comand: [torchrun]")
             .replace("--epochs, 3", '--epochs, "3"').replace("value: 3", 'value: "3"')
             .replace("value: yes", 'value: "yes"').replace('"29500"', "29500")
             .replace("tcp", "TCP").replace("1Gb", "1Gi").replace('"true"', "true")
             .replace("hostNetwork", "tolerationz: []\n          gpus: 2\n          hostNetwork"))
    inputs = read({"jobs/p.yaml": typos})
    assert told(inputs) == []
    assert [k.name for k in inputs.jobs] == ["p"]
    drops = "the API server drops it (or refuses the job, under strict field validation)"
    assert told(inputs, "warning") == [
        f"jobs/p.yaml:5: spec.runpolicy: PyTorchJobSpec has no field 'runpolicy': {drops}; "
        f"runPolicy was meant, perhaps",
        f"jobs/p.yaml:15: {POD}.containers[0].comand: Container has no field 'comand': "
        f"{drops}; command was meant, perhaps",
        f"jobs/p.yaml:26: {POD}.tolerationz: PodSpec has no field 'tolerationz': {drops}; "
        f"tolerations was meant, perhaps",
        f"jobs/p.yaml:27: {POD}.gpus: PodSpec has no field 'gpus': {drops}; remove it, or "
        f"check its place"]


RAYJOB = """\
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: r, namespace: default}
spec:
  entrypoint: python train.py
  shutdownAfterJobFinishes: true
  rayClusterSpec:
    headGroupSpec:
      rayStartParams: {num-cpus: 0, dashboard-host: 0.0.0.0}
      template:
        spec:
          containers: [{name: head, image: rayproject/ray, resources: {requests: {cpu: "1"}}}]
    workerGroupSpecs:
    - groupName: gpu
      replicas: 2
      idleTimeoutSeconds: 60s
      rayStartParms: {}
      template:
        spec:
          containers: [{name: w, image: rayproject/ray, resources: {requests: {cpu: "1"}}}]
"""
MPIJOB = """\
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: m, namespace: default}
spec:
  mpiImplementation: openmpi
  slotsPerWorker: one
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers: [{name: l, image: mpi, resources: {requests: {cpu: "1"}}}]
    Worker:
      replicas: 2
      template:
        spec:
          containers: [{name: w, image: mpi, resources: {requests: {cpu: "1"}}}]
"""


def test_the_fields_a_job_kinds_crd_adds_are_checked_as_its_crd_has_them() -> None:
    """KubeRay's CRD takes the values of rayStartParams as strings only; the
    MPI operator's, the MPI implementations it knows."""
    inputs = read({"jobs/r.yaml": RAYJOB, "jobs/m.yaml": MPIJOB})
    at = "spec.rayClusterSpec"
    assert told(inputs) == [
        "jobs/m.yaml:5: spec.mpiImplementation 'openmpi' is not one the API server takes "
        "(OpenMPI, Intel, MPICH): write OpenMPI; fix the manifest (and 1 more mistake(s) of "
        "it, each told at its line)",
        "jobs/m.yaml:6: spec.slotsPerWorker must be an integer, not a string 'one': the API "
        "server refuses it; fix the manifest",
        f"jobs/r.yaml:9: {at}.headGroupSpec.rayStartParams.num-cpus must be a string, not a "
        f"number 0: the API server refuses it; quote it; fix the manifest (and 1 more "
        f"mistake(s) of it, each told at its line)",
        f"jobs/r.yaml:16: {at}.workerGroupSpecs[0].idleTimeoutSeconds must be an integer, not "
        f"a string '60s': the API server refuses it; fix the manifest"]
    misspelt = [  # (an invalid job's are told with its mistakes, not once they are fixed)
        f"jobs/r.yaml:17: {at}.workerGroupSpecs[0].rayStartParms: WorkerGroupSpec has no field "
        f"'rayStartParms': the API server drops it (or refuses the job, under strict field "
        f"validation); rayStartParams was meant, perhaps"]
    assert told(inputs, "warning") == misspelt
    fixed = read({"jobs/r.yaml": RAYJOB.replace("num-cpus: 0", 'num-cpus: "0"')
                  .replace("60s", "60"),
                  "jobs/m.yaml": MPIJOB.replace("openmpi", "OpenMPI")
                  .replace("slotsPerWorker: one", "slotsPerWorker: 1")})
    assert told(fixed) == []
    assert told(fixed, "warning") == misspelt
    assert sorted(k.name for k in fixed.jobs) == ["m", "r"]


def test_a_mistake_another_check_tells_is_told_once() -> None:
    """Containers written as a mapping are told by the pod's own check, at
    their line; the check of the fields tells nothing more of them (a mapping
    where the API takes a list) until it is fixed, and tells the template's
    other mistakes."""
    inputs = read({"jobs/p.yaml": WRONG.replace("          - name: pytorch",
                                                "            name: pytorch")})
    assert [t.split(": the API server")[0].split(" (a number")[0] for t in told(inputs)] == [
        "jobs/p.yaml:5: spec.nprocPerNode must be a string, not a number 2",
        f"jobs/p.yaml:11: {POD}.containers must be a list of containers, not a mapping: write "
        f"each as an item (- name: ...); fix the manifest (and 3 more mistake(s) of it, each "
        f"told at its line)",
        f"jobs/p.yaml:25: {POD}.volumes[0].emptyDir.sizeLimit: '1Gb' is not a Kubernetes "
        f"quantity",
        f"jobs/p.yaml:26: {POD}.hostNetwork must be true or false, not a string 'true'"]


def test_the_kubernetes_clients_models_are_read_from_their_files() -> None:
    """The models' fields come from the installed client, as importing it
    gives them."""
    from kubernetes.client import models

    for name in ("V1PodTemplateSpec", "V1PodSpec", "V1Container", "V1Job", "V1Volume",
                 "V1Affinity", "V1Probe", "V2MetricSpec", "V1Service"):
        cls = getattr(models, name)
        assert model_fields(name) == {cls.attribute_map[k]: v
                                      for k, v in cls.openapi_types.items()}
    record = k8s_record("V1ResourceRequirements")
    assert record is not None and record.name == "ResourceRequirements"
    assert k8s_record("V1NoSuchModel") is None


def test_every_job_kind_read_has_its_fields_and_another_kind_is_not_checked() -> None:
    from reconciler.jobkinds import KINDS

    assert set(SCHEMAS) == {(k.api_version, k.kind) for k in KINDS}
    found = check_fields({"spec": {"anything": 1}}, "example.com/v1", "Thing")
    assert (found.errors, found.unknown) == ([], [])


@pytest.mark.parametrize("value,error", [
    (4, None), (2.0, None), ("4", "must be an integer, not a string '4'"),
    (2.5, "must be an integer, not a number 2.5"),
    (True, "must be an integer, not a boolean true"), (None, None),
    ([1], "must be an integer, not a list [1]"),
    ({"a": 1}, "must be an integer, not a mapping {'a': 1}")])
def test_an_integer_field_takes_an_integer(value: object, error: str | None) -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "spec": {"parallelism": value}}
    errors = [str(e) for e in check_fields(job, "batch/v1", "Job").errors]
    assert errors == ([] if error is None else [f"spec.parallelism {error}: the API server "
                                                  f"refuses it"])
