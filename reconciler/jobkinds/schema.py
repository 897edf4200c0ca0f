"""Each job manifest checked against the fields and types its API server holds.

A field of the wrong type (``command: torchrun train.py``, a string where the
API takes a list; ``value: 3`` in an ``env`` entry, a number where it takes a
string) or a value outside an enumeration the API server checks
(``imagePullPolicy: always``) is refused by the member cluster: such a job is
invalid, told at the field's line. A field the API does not have (a typo,
``tolerationz``) is dropped by the API server, or refuses the job under strict
field validation: told as a warning, with the field of that place whose name
is closest, as the job may still run without it (and a field newer than the
installed client's models may be no mistake).

The types of Kubernetes' own objects (a pod template, its containers, their
probes, volumes, affinity, a batch Job whole) are those of the installed
``kubernetes`` client's models (``openapi_types`` and ``attribute_map``), read
from their files alone: importing the client takes about half a second, which
every reconcile that parses a job would pay. The fields each job kind's CRD
adds around its pod templates are written here, as the CRDs of the training
operator (PyTorchJob, MPIJob v1), the MPI operator (MPIJob v2beta1) and KubeRay
(RayJob) have them; a part written ``ANY`` is not checked.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, TypeAlias

from reconciler.core.problems import BOOLEAN_WORDS, as_read, as_written, yaml_type
from reconciler.jobkinds.base import ManifestError, kubernetes_folder, parse_quantity_milli

# A type: one of the scalar names below, ("list", T), ("map", T) (string keys),
# ("enum", values), a ``Record``, or "k8s:<model>" (a model of the kubernetes client).
Type: TypeAlias = Any
STR, INT, NUMBER, BOOL, QUANTITY, INT_OR_STR, ANY = (
    "str", "int", "number", "bool", "quantity", "int-or-str", "any")

EXPECTED = {STR: "a string", INT: "an integer", NUMBER: "a number", BOOL: "true or false",
            QUANTITY: "a quantity (a number, or a string such as 500m or 2Gi)",
            INT_OR_STR: "a number or a string"}


@dataclass(frozen=True)
class Record:
    """An object of named fields: ``name`` as a message calls it."""

    name: str
    fields: Mapping[str, Type] = field(hash=False)


def lst(of: Type) -> tuple[str, Type]:
    return ("list", of)


def mp(of: Type) -> tuple[str, Type]:
    return ("map", of)


def enum(*values: str) -> tuple[str, tuple[str, ...]]:
    return ("enum", values)


# -- Kubernetes' own objects, from the kubernetes client's models ---------------------

# the fields the client types as a string that the API server takes as a quantity
QUANTITIES = frozenset({
    ("V1ResourceRequirements", "limits"), ("V1ResourceRequirements", "requests"),
    ("V1VolumeResourceRequirements", "limits"), ("V1VolumeResourceRequirements", "requests"),
    ("V1PodSpec", "overhead"), ("V1EmptyDirVolumeSource", "sizeLimit"),
    ("V1ResourceFieldSelector", "divisor"), ("V2MetricTarget", "value"),
    ("V2MetricTarget", "averageValue")})
# values the API server checks of fields the client types as a string alone
ENUMS = {
    ("V1Container", "imagePullPolicy"): enum("Always", "IfNotPresent", "Never"),
    ("V1Container", "terminationMessagePolicy"): enum("File", "FallbackToLogsOnError"),
    ("V1ContainerPort", "protocol"): enum("TCP", "UDP", "SCTP"),
    ("V1PodSpec", "dnsPolicy"): enum("ClusterFirstWithHostNet", "ClusterFirst", "Default",
                                     "None"),
    ("V1PodSpec", "preemptionPolicy"): enum("PreemptLowerPriority", "Never"),
    ("V1TopologySpreadConstraint", "whenUnsatisfiable"): enum("DoNotSchedule",
                                                              "ScheduleAnyway"),
    ("V1HTTPGetAction", "scheme"): enum("HTTP", "HTTPS"),
    ("V1LabelSelectorRequirement", "operator"): enum("In", "NotIn", "Exists", "DoesNotExist"),
}
# the client's type of a field, as written in its models (old and new forms)
_LIST = re.compile(r"[Ll]ist\[(.+)\]")
_DICT = re.compile(r"[Dd]ict(?:\[str, |\(str, )(.+)[\])]")
_SCALARS = {"str": STR, "int": INT, "float": NUMBER, "bool": BOOL, "object": ANY,
            "datetime": ANY, "date": ANY, "bytes": STR}
_TYPES = re.compile(r"^\s+openapi_types\b[^=\n]*=\s*(\{.*?\})\s*$", re.S | re.M)
_ATTRS = re.compile(r"^\s+attribute_map\b[^=\n]*=\s*(\{.*?\})\s*$", re.S | re.M)


def _module_name(model: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", model).lower()


@cache
def model_fields(model: str) -> dict[str, str] | None:
    """The fields of the kubernetes client's ``model`` (``V1PodSpec``): JSON
    name -> the client's type; ``None`` when the installed client has no such
    model, or its file does not read as expected."""
    folder = kubernetes_folder()
    if folder is None:
        return None
    try:
        with open(f"{folder}/client/models/{_module_name(model)}.py", encoding="utf-8") as f:
            text = f.read()
        found_types, found_attrs = _TYPES.search(text), _ATTRS.search(text)
        if found_types is None or found_attrs is None:
            return None
        types, attrs = ast.literal_eval(found_types[1]), ast.literal_eval(found_attrs[1])
        return {attrs[name]: kind for name, kind in types.items()}
    except (OSError, ValueError, SyntaxError, KeyError, TypeError):
        return None


@cache
def k8s_record(model: str) -> Record | None:
    """The client's ``model`` as a ``Record``; ``None`` when it cannot be read
    (then nothing below it is checked)."""
    found = model_fields(model)
    if found is None:
        return None
    name = re.sub(r"^(Core|Storage|Discovery|Events)?V\d+((alpha|beta)\d+)?", "", model)
    return Record(name, {json: ENUMS.get((model, json)) or _client_type(
        kind, quantity=(model, json) in QUANTITIES) for json, kind in found.items()})


def _client_type(kind: str, quantity: bool = False) -> Type:
    kind = kind.strip()
    if (m := _LIST.fullmatch(kind)) is not None:
        return lst(_client_type(m[1], quantity))
    if (m := _DICT.fullmatch(kind)) is not None:
        return mp(_client_type(m[1], quantity))
    if kind in _SCALARS:
        return QUANTITY if quantity and kind == "str" else _SCALARS[kind]
    return f"k8s:{kind}"


# -- the fields each job kind's CRD adds around its pod templates ---------------------

POD_TEMPLATE = "k8s:V1PodTemplateSpec"
META = "k8s:V1ObjectMeta"
SCHEDULING_POLICY = Record("SchedulingPolicy", {
    "minAvailable": INT, "minResources": mp(QUANTITY), "priorityClass": STR, "queue": STR,
    "scheduleTimeoutSeconds": INT})
RUN_POLICY = Record("RunPolicy", {
    "activeDeadlineSeconds": INT, "backoffLimit": INT, "cleanPodPolicy": STR, "managedBy": STR,
    "schedulingPolicy": SCHEDULING_POLICY, "suspend": BOOL, "ttlSecondsAfterFinished": INT})
REPLICA_SPEC = Record("ReplicaSpec", {"replicas": INT, "restartPolicy": STR,
                                      "template": POD_TEMPLATE})
ELASTIC_POLICY = Record("ElasticPolicy", {
    "maxReplicas": INT, "maxRestarts": INT, "metrics": lst("k8s:V2MetricSpec"),
    "minReplicas": INT, "nProcPerNode": INT, "rdzvBackend": STR,
    "rdzvConf": lst(Record("RDZVConf", {"key": STR, "value": STR})), "rdzvHost": STR,
    "rdzvId": STR, "rdzvPort": INT, "standalone": BOOL})
PYTORCH_SPEC = Record("PyTorchJobSpec", {
    "elasticPolicy": ELASTIC_POLICY, "nprocPerNode": STR, "pytorchReplicaSpecs": mp(REPLICA_SPEC),
    "runPolicy": RUN_POLICY,
    "cleanPodPolicy": STR})  # (the PyTorch operator's place of it: moved when rendered)
MPI_V2_SPEC = Record("MPIJobSpec", {
    "launcherCreationPolicy": STR, "mpiImplementation": enum("OpenMPI", "Intel", "MPICH"),
    "mpiReplicaSpecs": mp(REPLICA_SPEC), "runLauncherAsWorker": BOOL, "runPolicy": RUN_POLICY,
    "slotsPerWorker": INT, "sshAuthMountPath": STR})
MPI_V1_SPEC = Record("MPIJobSpec", {
    "cleanPodPolicy": STR, "mainContainer": STR, "mpiReplicaSpecs": mp(REPLICA_SPEC),
    "runPolicy": RUN_POLICY, "slotsPerWorker": INT})
HEAD_GROUP = Record("HeadGroupSpec", {
    "enableIngress": BOOL, "headService": "k8s:V1Service", "ingressOptions": ANY,
    "labels": mp(STR), "rayStartParams": mp(STR), "resources": mp(STR), "serviceType": STR,
    "template": POD_TEMPLATE})
WORKER_GROUP = Record("WorkerGroupSpec", {
    "groupName": STR, "idleTimeoutSeconds": INT, "labels": mp(STR), "maxReplicas": INT,
    "minReplicas": INT, "numOfHosts": INT, "priority": INT, "rayStartParams": mp(STR),
    "replicas": INT, "resources": mp(STR),
    "scaleStrategy": Record("ScaleStrategy", {"workersToDelete": lst(STR)}), "suspend": BOOL,
    "template": POD_TEMPLATE})
RAY_CLUSTER_SPEC = Record("RayClusterSpec", {
    "authOptions": ANY, "autoscalerOptions": ANY, "enableInTreeAutoscaling": BOOL,
    "gcsFaultToleranceOptions": ANY, "headGroupSpec": HEAD_GROUP,
    "headServiceAnnotations": mp(STR), "historyServerOptions": ANY, "managedBy": STR,
    "networkPolicy": ANY, "rayVersion": STR, "suspend": BOOL, "tlsOptions": ANY,
    "upgradeStrategy": ANY, "workerGroupSpecs": lst(WORKER_GROUP)})
RAY_JOB_SPEC = Record("RayJobSpec", {
    "activeDeadlineSeconds": INT, "backoffLimit": INT, "clusterSelector": mp(STR),
    "deletionStrategy": ANY, "entrypoint": STR, "entrypointNumCpus": NUMBER,
    "entrypointNumGpus": NUMBER, "entrypointResources": STR, "jobId": STR, "managedBy": STR,
    "metadata": mp(STR), "preRunningDeadlineSeconds": INT, "rayClusterSpec": RAY_CLUSTER_SPEC,
    "runtimeEnvYAML": STR, "shutdownAfterJobFinishes": BOOL, "submissionMode": STR,
    "submitterConfig": Record("SubmitterConfig", {"backoffLimit": INT}),
    "submitterPodTemplate": POD_TEMPLATE, "suspend": BOOL, "ttlSecondsAfterFinished": INT})


def _custom(kind: str, spec: Record) -> Record:
    return Record(kind, {"apiVersion": STR, "kind": STR, "metadata": META, "spec": spec,
                         "status": ANY})


# (apiVersion, kind) -> the whole object's type
SCHEMAS: dict[tuple[str, str], Type] = {
    ("kubeflow.org/v1", "PyTorchJob"): _custom("PyTorchJob", PYTORCH_SPEC),
    ("kubeflow.org/v2beta1", "MPIJob"): _custom("MPIJob", MPI_V2_SPEC),
    ("kubeflow.org/v1", "MPIJob"): _custom("MPIJob", MPI_V1_SPEC),
    ("ray.io/v1", "RayJob"): _custom("RayJob", RAY_JOB_SPEC),
    ("batch/v1", "Job"): "k8s:V1Job",
}


# -- the check -------------------------------------------------------------------------

@dataclass
class Found:
    """What a check found: mistakes the API server refuses (``errors``) and
    fields it does not have (``unknown``), each with its dotted field."""

    errors: list[ManifestError] = field(default_factory=list)
    unknown: list[ManifestError] = field(default_factory=list)


def check_fields(obj: Mapping[str, Any], api_version: str, kind: str) -> Found:
    """``obj``, a ``kind`` of ``api_version``, against its fields and types."""
    found = Found()
    root = SCHEMAS.get((api_version, kind))
    if root is not None:
        _check(obj, root, "", found)
    return found


def _resolved(kind: Type) -> Type:
    if isinstance(kind, str) and kind.startswith("k8s:"):
        return k8s_record(kind[4:]) or ANY
    return kind


# the scalar types a value of which is checked where it is met (no call for it:
# most of a manifest's values are strings)
_PLAIN = {STR: str, BOOL: bool, INT: int}


def _check(value: Any, kind: Type, at: str, found: Found) -> None:
    if value is None:
        return  # (null is a field not given)
    if kind.__class__ is str and kind.startswith("k8s:"):
        kind = _resolved(kind)
    if isinstance(kind, Record):
        if not isinstance(value, dict):
            _wrong(value, "a mapping", at, found)
            return
        fields = kind.fields
        for key, item in value.items():
            sub = fields.get(key)
            if sub is ANY or item is None:
                continue
            if sub is None:
                _unknown(key, kind, f"{at}.{key}" if at else str(key), found)
            elif type(item) is not _PLAIN.get(sub):  # (else a plain value, as it should be)
                _check(item, sub, f"{at}.{key}" if at else str(key), found)
        return
    if isinstance(kind, tuple):
        shape, of = kind
        if shape in ("list", "map"):
            listed = shape == "list"
            if not isinstance(value, list if listed else dict):
                _wrong(value, "a list" if listed else "a mapping", at, found)
                return
            if of is not ANY:
                plain = _PLAIN.get(of)
                for key, item in enumerate(value) if isinstance(value, list) else value.items():
                    if type(item) is not plain:
                        _check(item, of, f"{at}[{key}]" if listed else f"{at}.{key}", found)
        elif not isinstance(value, str) or value not in of:
            close = [v for v in of if isinstance(value, str) and v.lower() == value.lower()]
            found.errors.append(ManifestError(
                f"{at} {as_read(value)} is not one the API server takes ({', '.join(of)})"
                + (f": write {close[0]}" if close else ""), at))
        return
    _scalar(value, kind, at, found)


def _scalar(value: Any, kind: str, at: str, found: Found) -> None:
    if kind == ANY:
        return
    if isinstance(value, bool):
        ok = kind == BOOL
    elif kind == STR:
        ok = isinstance(value, str)
    elif kind == INT:
        ok = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    elif kind == NUMBER:
        ok = isinstance(value, int | float)
    elif kind == QUANTITY:
        ok = isinstance(value, str | int | float)
        if ok:
            try:
                parse_quantity_milli(value, at)
            except ManifestError as exc:
                found.errors.append(exc)
            return
    elif kind == INT_OR_STR:
        ok = isinstance(value, str | int)
    else:
        ok = False
    if not ok:
        _wrong(value, EXPECTED[kind], at, found)


def _wrong(value: Any, expected: str, at: str, found: Found) -> None:
    hint = ""
    if expected == "a string" and not isinstance(value, list | dict):
        hint = "; quote it"
    elif expected == "a list" and isinstance(value, str):
        hint = "; write it as a list, one item per line (- item)"
    shown = as_written(value)  # (a long one is cut in the message, as every message is)
    if isinstance(value, bool) and expected == "a string":
        shown += f" ({BOOLEAN_WORDS})"
    found.errors.append(ManifestError(
        f"{at} must be {expected}, not {yaml_type(value)} {shown}: the API server refuses "
        f"it{hint}", at))


def _unknown(key: object, record: Record, at: str, found: Found) -> None:
    close = difflib.get_close_matches(str(key), list(record.fields), n=1, cutoff=0.75) \
        if isinstance(key, str) else []
    found.unknown.append(ManifestError(
        f"{at}: {record.name} has no field {as_written(key)}: the API server drops it (or "
        f"refuses the job, under strict field validation)"
        + (f"; {close[0]} was meant, perhaps" if close else "; remove it, or check its place"),
        at))

