"""What member clusters report, as files of the state branch (DESIGN §4).

``status/<cluster>.yaml`` (kind ClusterStatus) lists the jobs fleetq placed on
a cluster as the cluster shows them: pending, running, succeeded or failed,
since when, and its message. ``inventory/<cluster>.yaml`` (kind
ClusterInventory) lists the cluster's nodes: allocatable, labels, taints and
readiness. Both are made here from the Kubernetes objects ``observe`` reads
through the API, or ``report`` reads from ``kubectl get -o yaml``
(``cluster_report``), and read back for a reconcile (``read_status``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from reconciler.core.model import JobKey
from reconciler.core.outcomes import (
    ClusterObservation,
    ObservedJob,
    ObservedNode,
    ObservedPhase,
    parse_time,
)
from reconciler.core.problems import Problem, as_read, yaml_type
from reconciler.fleet.documents import Document, parse_documents
from reconciler.jobkinds import kind_for
from reconciler.jobkinds.base import ManifestError, parse_resources
from reconciler.render import yamltext
from reconciler.render.manifests import CLUSTER, MANAGED_BY

API_VERSION = "fleetq.io/v1alpha1"
STATUS_DIR = "status/"
INVENTORY_DIR = "inventory/"
MANAGED_LABEL = MANAGED_BY


def status_path(cluster: str) -> str:
    return f"{STATUS_DIR}{cluster}.yaml"


def inventory_path(cluster: str) -> str:
    return f"{INVENTORY_DIR}{cluster}.yaml"


@dataclass
class ClusterReport:
    """One member cluster's report, made of the objects read from it."""

    cluster: str
    observed_at: str
    jobs: list[ObservedJob] = field(default_factory=list)
    nodes: list[dict[str, Any]] | None = None  # None: no nodes were read
    complete: bool = False  # every job kind was listed (``ClusterObservation.complete``)
    skipped: int = 0  # objects fleetq does not manage, or of no kind it knows
    problems: list[Problem] = field(default_factory=list)
    # the jobs by the cluster they were rendered for (label fleetq.io/cluster)
    rendered_for: dict[str, int] = field(default_factory=dict)
    # the entries of the earlier report of jobs this one does not list, when it is
    # not complete (it read some kinds, or nodes alone): as seen then (``carry``)
    carried: list[ObservedJob] = field(default_factory=list)
    # the jobs whose status could not be read: as the earlier report had them
    unread: set[JobKey] = field(default_factory=set)

    def carry(self, earlier: ClusterObservation) -> None:
        """Keep, from the cluster's ``earlier`` report, each job this report
        does not list, seen when it was seen: a report of part of the
        cluster's jobs (one kind, or the nodes alone) must not take back what
        the earlier one said of the others (a job succeeded would hold its
        quota again). A complete report lists every job there: none is kept,
        but those whose status it could not read."""
        listed = {j.key for j in self.jobs}
        self.carried = [replace(j, observed_at=j.observed_at or earlier.observed_at)
                        for key, j in earlier.jobs.items() if key not in listed
                        and (not self.complete or key in self.unread)]

    def not_its_own(self) -> str | None:
        """Why the objects are another cluster's (the jobs were rendered for
        another cluster: the wrong input, or a context that names the wrong
        cluster), or ``None``."""
        others = {name: n for name, n in self.rendered_for.items() if name != self.cluster}
        if not others:
            return None
        total = sum(self.rendered_for.values())
        where = ", ".join(f"{name} ({n} of {total})" for name, n in sorted(others.items()))
        return (f"these are another cluster's jobs: their label {CLUSTER} says {where}, "
                f"not {self.cluster}")

    def files(self) -> dict[str, bytes]:
        """``status/<cluster>.yaml`` and, when nodes were read, ``inventory/...``."""
        out = {status_path(self.cluster): _document("ClusterStatus", self.cluster,
                                                    self.observed_at, self.complete, "jobs", [
            {"apiVersion": j.api_version, "kind": j.key.kind,
             "namespace": j.key.namespace, "name": j.key.name, "phase": j.phase.value,
             **({"since": j.since} if j.since else {}),
             **({"message": j.message} if j.message else {}),
             **({"observedAt": j.observed_at} if j.observed_at else {})}
            for j in sorted([*self.jobs, *self.carried], key=lambda j: j.key)])}
        if self.nodes is not None:
            out[inventory_path(self.cluster)] = _document(
                "ClusterInventory", self.cluster, self.observed_at, None, "nodes",
                sorted(self.nodes, key=lambda n: str(n["name"])))
        return out

    def summary(self) -> str:
        counts: dict[str, int] = {}
        for j in self.jobs:
            counts[j.phase.value] = counts.get(j.phase.value, 0) + 1
        jobs = ", ".join(f"{n} {p.lower()}" for p, n in sorted(counts.items())) or "none"
        nodes = f"; {len(self.nodes)} nodes" if self.nodes is not None else ""
        return f"{self.cluster}: jobs {jobs}{nodes}"


def _group(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def _document(kind: str, cluster: str, observed_at: str, complete: bool | None,
              field_name: str, items: list[dict[str, Any]]) -> bytes:
    doc: dict[str, Any] = {"apiVersion": API_VERSION, "kind": kind,
                           "metadata": {"name": cluster}, "observedAt": observed_at}
    if complete is not None:
        doc["complete"] = complete
    doc[field_name] = items
    return yamltext.dump(doc).encode()


def cluster_report(cluster: str, observed_at: str,
                   objects: Iterable[Mapping[str, Any] | Document],
                   *, where: str = "", nodes_read: bool | None = None,
                   complete: bool = False) -> ClusterReport:
    """The report of ``cluster`` made of Kubernetes ``objects`` (a ``List``'s
    items are taken one by one): the jobs labelled ``fleetq.io/managed-by:
    fleetq`` of the kinds fleetq knows, and the Nodes. ``complete``: every
    job kind was listed (a job not among them is not there). ``nodes_read``: whether
    the nodes were asked for (then none read means none there); by default,
    whether any Node is among the objects. ``where`` names the objects' origin
    in problems, at each object's line when they are the ``Document``s read
    from it."""
    report = ClusterReport(cluster, observed_at, complete=complete)
    nodes: list[dict[str, Any]] = []
    for i, (obj, line) in enumerate(_flattened(objects)):
        api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
        assert isinstance(meta, Mapping)
        if (api_version, kind) == ("v1", "Node"):
            node = _node(obj, meta)
            try:
                parse_resources(node["allocatable"], "status.allocatable")
            except ManifestError as exc:  # (read_inventory leaves it out: said now, at its line)
                report.problems.append(Problem(where or cluster, line, (
                    f"Node {node['name'] or '(no name)'}: {exc}; the cluster's capacity is "
                    f"counted without this node until a report has it right"), "warning"))
            nodes.append(node)
            continue
        job_kind = kind_for(api_version, kind)
        labels = meta.get("labels") if isinstance(meta.get("labels"), Mapping) else {}
        assert isinstance(labels, Mapping)
        if job_kind is None or labels.get(MANAGED_LABEL) != "fleetq":
            report.skipped += 1
            continue
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            report.problems.append(Problem(where or cluster, line, (
                f"object {i + 1} ({kind}) has no metadata.name; it is left out")))
            continue
        key = JobKey(_group(api_version), kind, str(meta.get("namespace") or "default"), name)
        placed_on = str(labels.get(CLUSTER) or "")
        if placed_on:
            report.rendered_for[placed_on] = report.rendered_for.get(placed_on, 0) + 1
        wrong = _unreadable_status(obj.get("status"))
        if wrong is not None:  # (told, and the job is left as the last report had it)
            report.unread.add(key)
            if report.complete:  # (it is there: a complete report would say it is not)
                report.complete = False
            report.problems.append(Problem(where or cluster, line, (
                f"{kind} {key.namespace}/{name}: {wrong}; it is recorded as the last report "
                f"had it{', and the report as not complete' if complete else ''}"),
                "warning"))
            continue
        phase, since, message = job_kind.observed_phase(dict(obj))
        if since is not None:
            when = parse_time(since)
            if when is None:
                report.problems.append(Problem(where or cluster, line, (
                    f"{kind} {key.namespace}/{name}: its time {since!r} is not an RFC 3339 "
                    f"time; it is recorded without one"), "warning"))
            since = rfc3339_utc(when) if when is not None else None
        report.jobs.append(ObservedJob(key, phase, since, message, api_version))
    if nodes or nodes_read:
        report.nodes = nodes
    return report


# fields of a job's status that are text, when there (Kubeflow's, batch/v1's, KubeRay's)
_STATUS_TEXT = ("startTime", "completionTime", "endTime", "jobStatus", "jobDeploymentStatus",
                "message")
# and those that count pods (batch/v1's; each role's, Kubeflow's replicaStatuses)
_STATUS_COUNTS = ("active", "ready", "succeeded", "failed", "terminating")


def _unreadable_status(status: object) -> str | None:
    """What is wrong with a job's ``status`` that fleetq cannot read its phase
    from (a job with none has not started: pending), if anything."""
    if status is None:
        return None
    if not isinstance(status, Mapping):
        return f"its status is {yaml_type(status)}, not a mapping"
    conditions = status.get("conditions")
    if conditions is not None and not (isinstance(conditions, list) and all(
            isinstance(c, Mapping) for c in conditions)):
        return "its status.conditions is not a list of mappings"
    for name in _STATUS_TEXT:
        value = status.get(name)
        if value is not None and not isinstance(value, str):
            return f"its status.{name} is {yaml_type(value)}, not a string"
    counts = [(f"status.{name}", status.get(name)) for name in _STATUS_COUNTS]
    replicas = status.get("replicaStatuses")
    if replicas is not None:
        if not (isinstance(replicas, Mapping) and all(
                isinstance(r, Mapping) for r in replicas.values())):
            return "its status.replicaStatuses is not a mapping of mappings"
        counts += [(f"status.replicaStatuses.{role}.{name}", r.get(name))
                   for role, r in replicas.items() for name in _STATUS_COUNTS]
    for field_name, value in counts:  # (read as none running: a running job would fail over)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                  or value < 0):
            return f"its {field_name} is {as_read(value)}, not a count"
    return None


def _flattened(objects: Iterable[Mapping[str, Any] | Document]
               ) -> Iterator[tuple[Mapping[str, Any], int]]:
    """Each object, and its line (0 when not read from a ``Document``), with
    a ``List``'s items taken one by one."""
    for got in objects:
        doc = got if isinstance(got, Document) else None
        obj = doc.value if doc is not None else got
        if not isinstance(obj, Mapping):
            continue
        if str(obj.get("kind") or "").endswith("List") and isinstance(obj.get("items"), list):
            for j, item in enumerate(obj["items"]):
                if isinstance(item, Mapping):
                    yield item, doc.line_of(f"items[{j}]") if doc is not None else 0
        else:
            yield obj, doc.line if doc is not None else 0


def _node(obj: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    status = obj.get("status") if isinstance(obj.get("status"), Mapping) else {}
    spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
    assert isinstance(status, Mapping) and isinstance(spec, Mapping)
    conditions = status.get("conditions")
    ready = isinstance(conditions, list) and any(
        isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in conditions)
    allocatable = status.get("allocatable")
    node: dict[str, Any] = {
        "name": str(meta.get("name") or ""),
        "allocatable": {str(k): str(v) for k, v in sorted(allocatable.items())}
        if isinstance(allocatable, Mapping) else {},
        "ready": ready,
    }
    if spec.get("unschedulable") is True:
        node["unschedulable"] = True  # cordoned
    labels = meta.get("labels")
    if isinstance(labels, Mapping) and labels:
        node["labels"] = {str(k): str(v) for k, v in sorted(labels.items())}
    listed = spec.get("taints")
    taints = [{k: str(t[k]) for k in ("key", "value", "effect") if t.get(k) is not None}
              for t in (listed if isinstance(listed, list) else ()) if isinstance(t, Mapping)]
    if taints:
        node["taints"] = taints
    return node


def _report_document(path: str, data: bytes, kind: str
                     ) -> tuple[Document | None, str, list[Problem]]:
    """The one document of a report file of ``kind``, and its observedAt;
    None (and why) when it is not one."""
    docs, problem = parse_documents(path, data)
    if problem is not None:
        return None, "", [problem]
    if len(docs) != 1 or not isinstance(docs[0].value, dict):
        return None, "", [Problem(path, docs[0].line if docs else 0, (
            f"a {kind} is one mapping; write it again with fleetq observe or fleetq report"))]
    doc = docs[0]
    value = doc.value
    if value.get("kind") != kind or value.get("apiVersion") != API_VERSION:
        return None, "", [Problem(path, doc.line, (
            f"not a {API_VERSION} {kind}; write it with fleetq observe or fleetq report"))]
    observed_at = _time_text(value.get("observedAt"))
    if observed_at is None:
        return None, "", [Problem(path, doc.line_of("observedAt"), (
            "observedAt must be an RFC 3339 time (2026-12-04T10:00:00Z)"))]
    return doc, observed_at, []


def read_status(path: str, data: bytes) -> tuple[ClusterObservation | None, list[Problem]]:
    """The report of ``status/<cluster>.yaml``; None (and why) when it cannot
    be used. A job entry that cannot be read is left out and said."""
    doc, observed_at, problems = _report_document(path, data, "ClusterStatus")
    if doc is None:
        return None, problems
    value = doc.value
    cluster = path[len(STATUS_DIR):].rsplit(".", 1)[0]
    jobs: dict[JobKey, ObservedJob] = {}
    listed = value.get("jobs") or []
    if not isinstance(listed, list):
        return None, [Problem(path, doc.line_of("jobs"), (
            "jobs must be a list; write it again with fleetq observe or fleetq report"))]
    for i, item in enumerate(listed):
        try:
            key = JobKey(_group(str(item["apiVersion"])), str(item["kind"]),
                         str(item.get("namespace") or "default"), str(item["name"]))
            since, seen = item.get("since"), item.get("observedAt")
            for name, time in (("since", since), ("observedAt", seen)):
                if time is not None and _time_text(time) is None:
                    raise ValueError(f"{name} {time!r} is not an RFC 3339 time")
            jobs[key] = ObservedJob(key, ObservedPhase(item["phase"]),
                                    _time_text(since) if since is not None else None,
                                    str(item.get("message") or ""), str(item["apiVersion"]),
                                    _time_text(seen) if seen is not None else None)
        except (KeyError, TypeError, ValueError) as exc:
            problems.append(Problem(path, doc.line_of(f"jobs[{i}]"), (
                f"job entry {i + 1} cannot be read ({_what(exc)}); it is left out. It needs "
                f"apiVersion, kind, namespace, name and phase (Pending, Running, Succeeded "
                f"or Failed)")))
    return ClusterObservation(cluster, observed_at, jobs, value.get("complete") is True), problems


def rfc3339_utc(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _time_text(value: Any) -> str | None:
    """A report's time as written, or None when it is not a time with a date
    and a time of day."""
    if not isinstance(value, str) or "T" not in value.upper() or parse_time(value) is None:
        return None
    return value


def _what(exc: Exception) -> str:
    return f"no {exc}" if isinstance(exc, KeyError) else str(exc)


def read_inventory(path: str, data: bytes) -> tuple[list[ObservedNode] | None, str,
                                                    list[Problem]]:
    """The nodes of ``inventory/<cluster>.yaml`` and when they were observed;
    None (and why) when it cannot be used. A node that cannot be read is left
    out and said."""
    doc, observed_at, problems = _report_document(path, data, "ClusterInventory")
    if doc is None:
        return None, "", problems
    nodes = []
    listed = doc.value.get("nodes") or []
    if not isinstance(listed, list):
        return None, "", [Problem(path, doc.line_of("nodes"), (
            "nodes must be a list; write it again with fleetq observe or fleetq report"))]
    for i, item in enumerate(listed):
        try:
            nodes.append(ObservedNode(str(item["name"]), parse_resources(
                item.get("allocatable"), f"nodes[{i}].allocatable"), item.get("ready") is True,
                item.get("unschedulable") is True))
        except (KeyError, TypeError, ValueError, AttributeError, ManifestError) as exc:
            problems.append(Problem(path, doc.line_of(f"nodes[{i}]"), (
                f"node entry {i + 1} cannot be read ({_what(exc)}); it is left out")))
    return nodes, observed_at, problems
