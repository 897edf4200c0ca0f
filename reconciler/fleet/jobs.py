"""A job manifest to a core ``Job``: pod sets, requests, priority, quota label.

Also finds what a job depends on (ConfigMaps, Secrets, PVCs, ServiceAccounts
its pod templates reference), sent with it when its policy propagates deps.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import pickle
import re
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from reconciler.core.model import (
    COMPLETIONS_EQUAL_PARALLELISM_AT,
    CREATED_AT,
    MAX_EXEC_TIME_AT,
    NAME_AT,
    NAMESPACE_UNSET_AT,
    NODE_NAME_FIELD,
    PRIORITY_CLASS_AT,
    QUOTA_AT,
    WORKLOAD_PRIORITY_CLASS_AT,
    Job,
    JobKey,
    LabelRequirement,
    NodeSelectorTerm,
    OneEach,
    PodSet,
    Toleration,
    plain_state,
)
from reconciler.core.problems import as_read, quote_it, yaml_type
from reconciler.core.quota import PREEMPTIBLE_LABEL, QUOTA_LABEL
from reconciler.core.resources import MAX_JOBS, PODS, Resources, add_into
from reconciler.jobkinds.base import (
    DNS_LABEL,
    DNS_LABEL_MOST,
    DNS_LABEL_RULE,
    DNS_SUBDOMAIN,
    DNS_SUBDOMAIN_MOST,
    JobKind,
    Manifest,
    ManifestError,
    broken_rules,
    each_error,
    gang_minimum,
    growth,
    later_pods,
    old_fields,
    other_pod_templates,
    pod_set_requests,
    raise_all,
    refused_by,
)
from reconciler.jobkinds.batchjob import (
    COMPLETIONS_EQUAL_PARALLELISM,
    IMMUTABLE_SPEC,
    BatchJobKind,
)
from reconciler.jobkinds.schema import check_fields

WORKLOAD_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
MAX_EXEC_TIME_LABEL = "kueue.x-k8s.io/max-exec-time-seconds"
DEFAULT_NAMESPACE = "default"
# The values jobs repeat (pod sets, requests, labels, deps) as one object each: a
# fleet's cache pickles each once and reads it back as one (see ``OneEach``).
SHARED = OneEach()


@plain_state
@dataclass(frozen=True, slots=True)
class JobSource:
    """A job with what the fleet layer needs beside the core value."""

    job: Job
    deps: tuple[tuple[str, str], ...]  # (kind, name) in the job's namespace
    index: int | str  # where in its file it is (``Document.seat``)
    # the parsed manifest, pickled and compressed (a third of the bytes: a fleet
    # holds every job's, and renders only the admitted) without a second parse
    manifest: bytes = b""
    # (line, message) of each field the API server does not have (a warning:
    # it drops them, and the job may run without them; ``schema.check_fields``)
    warnings: tuple[tuple[int, str], ...] = ()

    def load_manifest(self) -> Manifest:
        """A fresh copy of the source manifest."""
        value: Manifest = pickle.loads(zlib.decompress(self.manifest))
        return value


def api_group(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def stable_name(prefix: str, path: str, index: int | str) -> str:
    """``generateName`` plus a short hash of the source path: the same every
    time. As the API server names one, the prefix is cut to its first 58
    characters, so that the name fits in 63. (The path's bytes, as git has
    them: a path that is not UTF-8 is hashed too.)"""
    seed = path if index == 0 else f"{path}#{index}"
    return prefix[:GENERATED_PREFIX_MOST] + hashlib.sha256(
        seed.encode("utf-8", "surrogateescape")).hexdigest()[:5]


GENERATED_PREFIX_MOST = 58  # (Kubernetes' maxGeneratedNameLength: 63 less 5 random characters)


def job_name(obj: Manifest, path: str, index: int | str) -> str:
    meta = obj.get("metadata")
    if meta is None:
        raise ManifestError("metadata is missing; give the job metadata.name", "metadata")
    if not isinstance(meta, Mapping):
        raise ManifestError(f"metadata must be a mapping (of name, namespace, ...), not "
                            f"{yaml_type(meta)} {meta!r}", "metadata")
    name = meta.get("name")
    if isinstance(name, str) and name:
        return name
    if name is not None and not isinstance(name, str):
        raise ManifestError(f"metadata.name must be a string, not {as_read(name)}"
                            f"{quote_it(name)}",
                            "metadata.name")
    prefix = meta.get("generateName")
    if isinstance(prefix, str) and prefix:
        return stable_name(prefix, path, index)
    if prefix is not None and not isinstance(prefix, str):
        raise ManifestError(f"metadata.generateName must be a string, not {as_read(prefix)}"
                            f"{quote_it(prefix)}", "metadata.generateName")
    raise ManifestError("metadata.name (or metadata.generateName) is missing", "metadata")


def job_key(obj: Manifest, path: str, index: int | str) -> JobKey:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
    if namespace is not None and not isinstance(namespace, str):
        raise ManifestError(f"metadata.namespace must be a string, not "
                            f"{as_read(namespace)}{quote_it(namespace)}", "metadata.namespace")
    intern = sys.intern
    return JobKey(intern(api_group(str(obj["apiVersion"]))), intern(str(obj["kind"])),
                  intern(str(namespace or DEFAULT_NAMESPACE)), job_name(obj, path, index))


# An RFC 3339 time, as Kubernetes reads metav1.Time: a date, a time and a zone.
_RFC3339 = re.compile(r"\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)")
_CREATED = "metadata.creationTimestamp"
_DATE = re.compile(r"\d{4}-\d\d-\d\d")
_NO_ZONE = re.compile(r"(\d{4}-\d\d-\d\d)[Tt ](\d\d:\d\d:\d\d(?:\.\d+)?)")


def rfc3339(value: object) -> str | None:
    """A job's ``creationTimestamp`` in UTC to the second; a value Kubernetes
    would refuse (a bare date, a time with no zone, another ISO 8601 form) is an
    error: the manifest is rendered as written."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):  # (fleetq's clock, --now, or a time read below)
        return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    text = str(value)  # (YAML's timestamps are read as the strings they are)
    if _DATE.fullmatch(text):
        raise ManifestError(f"{_CREATED} {text} is a date, not an RFC 3339 time, which "
                            f"Kubernetes refuses; write e.g. {text}T00:00:00Z", _CREATED)
    zoneless = _NO_ZONE.fullmatch(text)
    if zoneless:
        raise ManifestError(
            f"{_CREATED} {text} has no time zone, which Kubernetes refuses; write it in "
            f"RFC 3339, e.g. {zoneless[1]}T{zoneless[2]}Z", _CREATED)
    try:
        if not _RFC3339.fullmatch(text):
            raise ValueError(text)
        parsed = dt.datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    except ValueError:
        raise ManifestError(f"{_CREATED} {text!r} is not an RFC 3339 time (e.g. "
                            f"2026-01-01T10:00:00Z)", _CREATED) from None
    return rfc3339(parsed)


def tolerations_of(raw: object, field: str) -> tuple[Toleration, ...]:
    """A list of Kubernetes tolerations (a pod's, or a policy's clusterTolerations):
    the operator is Equal when not given, as in Kubernetes."""
    out = []
    for at, t, effect in taint_entries(raw, field, "", " (or none: every effect)"):
        operator = t.get("operator") or "Equal"
        if operator not in ("Equal", "Exists"):
            raise ManifestError(f"{at}.operator {operator!r} is not Equal or Exists",
                                f"{at}.operator")
        out.append(Toleration(key=t.get("key") or "", operator=operator,
                              value=t.get("value") or "", effect=effect))
    return tuple(out)


TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def taint_entries(raw: object, field: str, default: str, unset: str = ""
                  ) -> Iterator[tuple[str, Mapping[str, Any], str]]:
    """Each entry of a list of taints or tolerations (``field``): where it is,
    the entry, and its effect (``default`` when not given, as ``unset`` says),
    its key and value strings."""
    if raw is None:
        return
    if not isinstance(raw, list):
        raise ManifestError(f"{field} must be a list", field)
    for i, t in enumerate(raw):
        at = f"{field}[{i}]"
        if not isinstance(t, Mapping):
            raise ManifestError(f"{at} must be a mapping", at)
        for part in ("key", "value"):
            check_string(t.get(part), f"{at}.{part}")
        effect = t.get("effect") or default
        if effect and effect not in TAINT_EFFECTS:
            raise ManifestError(f"{at}.effect {effect!r} is not one of "
                                f"{', '.join(TAINT_EFFECTS)}{unset}", f"{at}.effect")
        yield at, t, effect


def check_string(value: object, field: str) -> None:
    """A string field (or none): YAML reads an unquoted ``true`` or ``1`` as a
    bool or a number, which Kubernetes refuses; taken as text it would be
    ``True`` or ``1`` and match nothing it was meant to."""
    if not isinstance(value, str | None):
        raise ManifestError(f"{field} must be a string, not {as_read(value)}{quote_it(value)}",
                            field)


def string_map(raw: object, field: str) -> tuple[tuple[str, str], ...]:
    """A map of strings (labels, a nodeSelector, matchLabels), as sorted pairs;
    a key or value that is not a string is refused (``_quoted``)."""
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise ManifestError(f"{field} must be a mapping, not {yaml_type(raw)} {raw!r}",
                            field)
    for k, v in raw.items():
        if not isinstance(k, str):
            raise ManifestError(f"{field}: the key {as_read(k)} must be a string; quote it",
                                field)
        if not isinstance(v, str | None):
            raise ManifestError(f"{field}: {k!r} must be a string, not {as_read(v)}{quote_it(v)}",
                                field)
    return tuple(sorted((k, v or "") for k, v in raw.items()))


LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
NODE_OPERATORS = (*LABEL_OPERATORS, "Gt", "Lt")  # (a node affinity's)
FIELD_OPERATORS = ("In", "NotIn")  # (a node affinity's matchFields)


def requirements_of(raw: object, field: str,
                    operators: tuple[str, ...] = LABEL_OPERATORS) -> tuple[LabelRequirement, ...]:
    """A label selector's ``matchExpressions`` (a policy's, a pod's node
    affinity's), each with a key, one of ``operators`` and its values (one
    for Gt and Lt); raises ``ManifestError`` at the one that has not."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ManifestError(f"{field} must be a list", field)
    out = []
    for j, e in enumerate(raw):
        op = e.get("operator") if isinstance(e, Mapping) else None
        values = e.get("values") if isinstance(e, Mapping) else None
        if op not in operators or not isinstance(e.get("key"), str) or not isinstance(
                values, list | None) or (op in ("Gt", "Lt") and len(values or ()) != 1):
            ones = " (one for Gt and Lt)" if "Gt" in operators else ""
            raise ManifestError(f"{field}[{j}] must have a key, an operator of "
                                f"{', '.join(operators)} and its values{ones}", f"{field}[{j}]")
        if op in ("In", "NotIn") and not values:
            raise ManifestError(f"{field}[{j}]: operator {op} needs values (one or more)",
                                f"{field}[{j}]")
        if op in ("Exists", "DoesNotExist") and values:
            raise ManifestError(f"{field}[{j}]: operator {op} takes no values; remove them",
                                f"{field}[{j}]")
        for v in values or ():
            check_string(v, f"{field}[{j}].values")
        out.append(LabelRequirement(e["key"], op, tuple(values or ())))
    return tuple(out)


def node_affinity_of(spec: Mapping[str, Any], field: str) -> tuple[NodeSelectorTerm, ...]:
    """A pod's required node affinity (``affinity.nodeAffinity.
    requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms``): the
    terms, of which a node must match one, each the requirements on its labels
    (``matchExpressions``) and its name (``matchFields``) it must meet all of."""
    where = f"{field}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    affinity = spec.get("affinity")
    node = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    required = (node.get("requiredDuringSchedulingIgnoredDuringExecution")
                if isinstance(node, Mapping) else None)
    if required is None:
        return ()
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    if not isinstance(terms, list) or not terms:
        raise ManifestError(f"{where}.nodeSelectorTerms must be a list of one term or more",
                            where)
    out = []
    for i, term in enumerate(terms):
        if not isinstance(term, Mapping):
            raise ManifestError(f"{where}.nodeSelectorTerms[{i}] must be a mapping",
                                f"{where}.nodeSelectorTerms[{i}]")
        at = f"{where}.nodeSelectorTerms[{i}]"
        fields = requirements_of(term.get("matchFields"), f"{at}.matchFields", FIELD_OPERATORS)
        for j, req in enumerate(fields):
            if req.key != NODE_NAME_FIELD or len(req.values) != 1:
                raise ManifestError(
                    f"{at}.matchFields[{j}] must have the key {NODE_NAME_FIELD} and one value: "
                    f"it is the only field of a node Kubernetes selects by",
                    f"{at}.matchFields[{j}]")
        out.append(NodeSelectorTerm(
            requirements_of(term.get("matchExpressions"), f"{at}.matchExpressions",
                            NODE_OPERATORS), fields))
    return tuple(out)


def check_metadata(meta: object, field: str) -> None:
    """An object's (or a pod template's) ``metadata``: its labels and
    annotations are mappings when given (fleetq adds its own to them), of
    keys and values Kubernetes takes (a cluster would refuse the object)."""
    if meta is None:
        return
    if not isinstance(meta, Mapping):
        raise ManifestError(f"{field} must be a mapping, not {yaml_type(meta)} {meta!r}",
                            field)
    for part in ("labels", "annotations"):
        value = meta.get(part)
        if value is None:
            continue
        at = f"{field}.{part}"
        if not isinstance(value, Mapping):
            raise ManifestError(f"{at} must be a mapping, not {yaml_type(value)} "
                                f"{value!r}", at)
        for k, v in value.items():
            if not isinstance(k, str):
                raise ManifestError(f"{at}: the key {as_read(k)} must be a string; quote it",
                                    at)
            if not isinstance(v, str | None):
                raise ManifestError(f"{at}: {k!r} must be a string, not {as_read(v)}"
                                    f"{quote_it(v)}",
                                    at)
            wrong = _label_wrong(str(k), v or "", part == "labels")
            if wrong is not None:
                raise ManifestError(f"{at}: {wrong}", at)
        if part == "annotations":
            size = sum(len(k.encode()) + len((v or "").encode()) for k, v in value.items())
            if size > ANNOTATIONS_MOST:
                raise ManifestError(
                    f"{at}: {size:,} bytes in all, more than the {ANNOTATIONS_MOST:,} the API "
                    f"server takes (keys and values together); keep large data in a ConfigMap",
                    at)


ANNOTATIONS_MOST = 256 << 10  # bytes of an object's annotations (keys and values), at most


_LABEL_RULE = ("at most 63 letters, digits, '-', '_' and '.', starting and ending with a "
               "letter or digit")


@functools.lru_cache(maxsize=1 << 16)  # (a fleet's jobs repeat their labels)
def _label_wrong(key: str, value: str, label: bool) -> str | None:
    """What Kubernetes finds wrong with a label (``label``) or annotation, if anything."""
    prefix, slash, name = key.rpartition("/")
    if (slash and (len(prefix) > DNS_SUBDOMAIN_MOST or not DNS_SUBDOMAIN.fullmatch(prefix))) or \
            len(name) > 63 or not _LABEL_VALUE.fullmatch(name):
        return (f"key {key!r} is not a valid {'label' if label else 'annotation'} key: an "
                f"optional DNS subdomain and '/', then {_LABEL_RULE}")
    if label and value and (len(value) > 63 or not _LABEL_VALUE.fullmatch(value)):
        return f"{key!r}: {value[:80]!r} is not a valid label value: {_LABEL_RULE}"
    return None


def _labels(meta: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """A job's labels (its metadata checked first: ``check_metadata``)."""
    labels = meta.get("labels") or {}
    # interned: the same keys and values recur in every job of a fleet
    return tuple(sorted((sys.intern(str(k)), sys.intern(v or "")) for k, v in labels.items()))


def check_namespace(namespace: str, field: str = "metadata.namespace") -> None:
    """Kubernetes' rule for a namespace (a DNS-1123 label): the state branch's
    folders are named by it, and a cluster would refuse it anyway."""
    if len(namespace) > DNS_LABEL_MOST or not DNS_LABEL.fullmatch(namespace):
        raise ManifestError(
            f"{field} {namespace!r} is not a valid namespace name: {DNS_LABEL_RULE}", field)


def named_as_kubernetes_names(key: JobKey) -> bool:
    """Whether a job's key holds a namespace and a name Kubernetes takes: a job
    whose manifest says no such name cannot be told from another one, so the
    job that ran from its file keeps its place until it is fixed."""
    return len(key.namespace) <= DNS_LABEL_MOST and bool(DNS_LABEL.fullmatch(key.namespace)) and \
        len(key.name) <= JOB_NAME_MOST and bool(DNS_SUBDOMAIN.fullmatch(key.name))


def check_name(name: str, field: str = "metadata.name", what: str = "",
               most: int = 253) -> None:
    """Kubernetes' rule for an object's name (a DNS-1123 subdomain, of at most
    ``most`` characters): the state branch's file of it is named by it, and a
    cluster would refuse it anyway."""
    if len(name) > most or not DNS_SUBDOMAIN.fullmatch(name):
        raise ManifestError(
            f"{what or field} {name!r} is not a valid name: at most {most} lower-case "
            f"letters, digits, '-' and '.', starting and ending with a letter or digit", field)


_LABEL_VALUE = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")


def check_label_value(value: str, field: str, what: str) -> None:
    """Kubernetes' rule for a label's value, for a name fleetq writes as one
    (``what`` says where): a cluster would refuse the object that carries it."""
    if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        raise ManifestError(
            f"{field} {value!r} is not a valid {what}: {_LABEL_RULE}", field)


JOB_NAME_MOST = 63  # a Job's pods carry its name in a label (job-name), as operators' do
CLUSTER_NAME_MOST = 63  # its jobs carry its name in a label (fleetq.io/cluster)


def build_job(obj: Manifest, kind: JobKind, *, path: str, index: int | str, line: int,
              blob: str, line_of: LineOf | None = None) -> JobSource:
    """The core ``Job`` of a manifest; raises ``ManifestError`` naming the field.
    ``line_of``: the line of a field of it (``Document.line_of``), for those
    the cycle may find at fault (``Job.field_lines``)."""
    key = job_key(obj, path, index)
    check_namespace(key.namespace)
    if obj["metadata"].get("name"):
        check_name(key.name, most=JOB_NAME_MOST)
    else:
        check_name(key.name, "metadata.generateName", "the name made of metadata.generateName",
                   most=JOB_NAME_MOST)
    meta = obj["metadata"]
    check_metadata(meta, "metadata")
    labels = _labels(meta)
    label_map = dict(labels)
    pod_sets: list[PodSet] = []
    shapes: list[tuple[object, ...]] = []  # each pod set's key in SHARED
    total: Resources = {}
    pods = 0
    priority_classes: set[str] = set()
    priority_field = "spec.runPolicy.schedulingPolicy.priorityClass"  # (unless a pod's)
    deps: set[tuple[str, str]] = set()
    found: list[ManifestError] = []  # (the quantities of every pod set told at once)
    try:  # (pod sets that cannot be found, a count that is no count: told with the rest)
        refs = kind.pod_templates(obj)
    except ManifestError as exc:
        found.extend(each_error(exc))
        refs = []
    for ref in refs:
        try:
            check_metadata(ref.template.get("metadata"), f"{ref.field}.metadata")
            per_pod = pod_set_requests(ref)
        except ManifestError as exc:
            found.extend(each_error(exc))
            continue
        spec = ref.template["spec"]
        node_selector = string_map(spec.get("nodeSelector"), f"{ref.field}.spec.nodeSelector")
        tolerations = tolerations_of(spec.get("tolerations"), f"{ref.field}.spec.tolerations")
        affinity = node_affinity_of(spec, f"{ref.field}.spec")
        shape = (PodSet, ref.name, ref.replicas, tuple(per_pod.items()), node_selector,
                 tolerations, affinity)
        shapes.append(shape)
        pod_set = SHARED.get(shape)  # (most jobs repeat a pod set parsed before)
        if pod_set is None:
            pod_set = SHARED.by(shape, PodSet(
                name=sys.intern(ref.name), replicas=ref.replicas, per_pod=SHARED(per_pod),
                node_selector=SHARED(node_selector), tolerations=SHARED(tolerations),
                node_affinity=SHARED(affinity)))
        pod_sets.append(pod_set)
        add_into(total, per_pod, ref.replicas)
        pods += ref.replicas
        if spec.get("priorityClassName"):
            if not priority_classes:
                priority_field = f"{ref.field}.spec.priorityClassName"
            priority_classes.add(str(spec["priorityClassName"]))
        deps.update(pod_dependencies(spec))
    found.extend(broken_rules(kind, obj, key.name))
    if not found:  # (one the rendered PodGroup could not hold, told as that: of all its pods)
        try:
            gang_minimum(obj, pods, later_pods(kind, obj))
        except ManifestError as exc:
            found.extend(each_error(exc))
    checked = check_fields(obj, kind.api_version, kind.kind)
    told = [e.field for e in found]
    found.extend(e for e in checked.errors if not _told_near(e.field, told))
    raise_all(found, checked.unknown)
    for ref in other_pod_templates(kind, obj):  # (a RayJob's submitter: what it uses goes too)
        check_metadata(ref.template.get("metadata"), f"{ref.field}.metadata")
        other = ref.template.get("spec")
        if isinstance(other, Mapping):
            deps.update(pod_dependencies(other))
    if len(priority_classes) > 1:
        names = ", ".join(sorted(priority_classes))
        raise ManifestError(
            f"pod templates name different priority classes ({names}); a gang has one "
            f"priority: use the same priorityClassName everywhere")
    priority_class = next(iter(priority_classes), None) or kind.scheduling_priority_class(obj)
    total[PODS] = pods * 1000
    total[MAX_JOBS] = 1000
    preemptible_raw = label_map.get(PREEMPTIBLE_LABEL)
    if preemptible_raw is not None and preemptible_raw not in ("true", "false"):
        raise ManifestError(f"label {PREEMPTIBLE_LABEL} must be \"true\" or \"false\", "
                            f"not {preemptible_raw!r}", "metadata.labels")
    job = Job(
        key=key, api_version=sys.intern(str(obj["apiVersion"])), path=path, line=line, blob=blob,
        pod_sets=SHARED.by(tuple(shapes), tuple(pod_sets)),
        requests=SHARED({k: v for k, v in sorted(total.items()) if v}),
        labels=SHARED(labels), quota_name=label_map.get(QUOTA_LABEL),
        priority_class=priority_class,
        workload_priority_class=label_map.get(WORKLOAD_PRIORITY_LABEL),
        preemptible=preemptible_raw != "false",
        created_at=rfc3339(meta.get("creationTimestamp")),
        deleted_when=SHARED(kind.deleted_when(obj)),
        field_lines=() if line_of is None else _field_lines(
            line_of, line, label_map, meta, priority_field if priority_class else None,
            _kept_spec(kind, obj)),
        refused=SHARED(refused_by(kind, obj)))
    return JobSource(job=job, deps=SHARED(tuple(sorted(deps))), index=index,
                     manifest=zlib.compress(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), 1),
                     warnings=tuple((line if line_of is None else line_of(e.field), str(e))
                                    for e in (*checked.unknown, *growth(kind, obj),
                                              *old_fields(kind, obj))))


def _told_near(at: str, told: Iterable[str]) -> bool:
    """Is a mistake of field ``at`` told already, by one of ``told`` (the
    fields of mistakes found): at it, or at a field it is part of, or at a
    part of it?"""
    return any(t == at or at.startswith((f"{t}.", f"{t}[")) or t.startswith((f"{at}.", f"{at}["))
               for t in told)


LineOf = Callable[..., int]  # (field, *keys) -> its line: ``Document.line_of``


def _field_lines(line_of: LineOf, line: int, labels: Mapping[str, str],
                 meta: Mapping[str, Any], priority_field: str | None,
                 spec_fields: Iterable[str] = ()) -> tuple[tuple[str, int], ...]:
    """``Job.field_lines``: the lines of the fields the cycle may find at
    fault, of the Kueue labels and annotation kept as sent while the job runs
    on a kueue cluster, and of ``spec_fields`` (each as ``spec.<name>``: a
    Job's, kept as sent while it runs), but those on the document's first
    line (one tuple for all jobs alike: most jobs of a file, or of a
    template, have theirs on the same lines)."""
    lines = []
    for name in ("name", "generateName"):
        if meta.get(name):
            lines.append((NAME_AT, line_of(f"metadata.{name}")))
            break
    if priority_field is not None:
        lines.append((PRIORITY_CLASS_AT, line_of(priority_field)))
    if WORKLOAD_PRIORITY_LABEL in labels:
        lines.append((WORKLOAD_PRIORITY_CLASS_AT,
                      line_of("metadata.labels", WORKLOAD_PRIORITY_LABEL)))
    if QUOTA_LABEL in labels:
        lines.append((QUOTA_AT, line_of("metadata.labels", QUOTA_LABEL)))
    elif meta.get("namespace"):
        lines.append((QUOTA_AT, line_of("metadata.namespace")))
    if meta.get("creationTimestamp"):
        lines.append((CREATED_AT, line_of("metadata.creationTimestamp")))
    if MAX_EXEC_TIME_LABEL in labels:
        lines.append((MAX_EXEC_TIME_AT, line_of("metadata.labels", MAX_EXEC_TIME_LABEL)))
    annotations = meta.get("annotations")
    if isinstance(annotations, Mapping) and COMPLETIONS_EQUAL_PARALLELISM in annotations:
        lines.append((COMPLETIONS_EQUAL_PARALLELISM_AT,
                      line_of("metadata.annotations", COMPLETIONS_EQUAL_PARALLELISM)))
    lines.extend((f"spec.{name}", line_of(f"spec.{name}")) for name in spec_fields)
    unset = () if QUOTA_LABEL in labels or meta.get("namespace") \
        else ((NAMESPACE_UNSET_AT, line_of("metadata")),)
    return SHARED(tuple((name, at) for name, at in lines if at != line) + unset)


def _kept_spec(kind: JobKind, obj: Manifest) -> list[str]:
    """The fields of its spec a batch Job has that it may keep as sent while
    it runs (none for other kinds): those of ``IMMUTABLE_SPEC``, and its
    parallelism (on a kueue cluster, sent with ``MIN_PARALLELISM``)."""
    spec = obj.get("spec")
    if kind.kind != BatchJobKind.kind or not isinstance(spec, Mapping):
        return []
    return [name for name in (*IMMUTABLE_SPEC, "parallelism") if name in spec]


def pod_dependencies(spec: Mapping[str, Any]) -> set[tuple[str, str]]:
    """ConfigMaps, Secrets, PVCs and the ServiceAccount a pod spec references."""
    out: set[tuple[str, str]] = set()
    if spec.get("serviceAccountName"):
        out.add(("ServiceAccount", str(spec["serviceAccountName"])))
    for ref in spec.get("imagePullSecrets") or []:
        if isinstance(ref, Mapping) and ref.get("name"):
            out.add(("Secret", str(ref["name"])))
    for vol in spec.get("volumes") or []:
        if not isinstance(vol, Mapping):
            continue
        _volume_deps(vol, out)
        for src in (vol.get("projected") or {}).get("sources") or []:
            if isinstance(src, Mapping):
                _volume_deps(src, out)
    for group in ("containers", "initContainers"):
        for c in spec.get(group) or []:
            if not isinstance(c, Mapping):
                continue
            for env_from in c.get("envFrom") or []:
                if not isinstance(env_from, Mapping):
                    continue
                for field, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
                    ref = env_from.get(field)
                    if isinstance(ref, Mapping) and ref.get("name"):
                        out.add((kind, str(ref["name"])))
            for env in c.get("env") or []:
                source = env.get("valueFrom") if isinstance(env, Mapping) else None
                if not isinstance(source, Mapping):
                    continue
                for field, kind in (("configMapKeyRef", "ConfigMap"),
                                    ("secretKeyRef", "Secret")):
                    ref = source.get(field)
                    if isinstance(ref, Mapping) and ref.get("name"):
                        out.add((kind, str(ref["name"])))
    return out


def _volume_deps(vol: Mapping[str, Any], out: set[tuple[str, str]]) -> None:
    cm = vol.get("configMap")
    if isinstance(cm, Mapping) and cm.get("name"):
        out.add(("ConfigMap", str(cm["name"])))
    secret = vol.get("secret")
    if isinstance(secret, Mapping) and (secret.get("secretName") or secret.get("name")):
        out.add(("Secret", str(secret.get("secretName") or secret.get("name"))))
    pvc = vol.get("persistentVolumeClaim")
    if isinstance(pvc, Mapping) and pvc.get("claimName"):
        out.add(("PersistentVolumeClaim", str(pvc["claimName"])))
