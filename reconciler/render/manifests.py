"""Each member cluster's manifests out of the decisions (DESIGN §4).

A rendered job is its source manifest with suspension lifted, fleetq's labels,
and the member cluster's gang dialect on every pod template; then the fleet's
overlays (``templates/overlays``) are applied. Dependencies, Namespaces and
PodGroups are rendered beside it, and ``kustomization.yaml`` lists them all.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import yaml

from reconciler.core.model import (
    COMPLETIONS_EQUAL_PARALLELISM_AT,
    NAME_AT,
    Decision,
    Job,
    JobKey,
    MemberCluster,
    Phase,
    Policy,
    deleted_after,
)
from reconciler.core.problems import Problem, shown_path
from reconciler.core.quota import QUOTA_LABEL, QuotaTree
from reconciler.core.resources import Resources, ResourcesView, format_quantity
from reconciler.fleet.inputs import Dependency, FleetInputs
from reconciler.fleet.jobs import (
    MAX_EXEC_TIME_LABEL,
    WORKLOAD_PRIORITY_LABEL,
    JobSource,
    pod_dependencies,
)
from reconciler.halves import in_two, two_cores
from reconciler.jobkinds import kind_for
from reconciler.jobkinds.base import (
    JobWithMovedFields,
    Manifest,
    ManifestError,
    every_pod_template,
    gang_minimum,
    implements,
    later_pods,
    parse_quantity_milli,
    pod_set_requests,
    volcano_queue,
)
from reconciler.jobkinds.batchjob import (
    COMPLETIONS_EQUAL_PARALLELISM,
    IMMUTABLE_SPEC,
    MIN_PARALLELISM,
    BatchJobKind,
)
from reconciler.render import yamltext
from reconciler.render.overlays import Overlays

MANAGED_BY = "fleetq.io/managed-by"
QUOTA = "fleetq.io/quota"
CLUSTER = "fleetq.io/cluster"
SOURCE = "fleetq.io/source"
ACK_NAME = "pod-group.scheduling.sigs.k8s.io/name"
ACK_MIN = "pod-group.scheduling.sigs.k8s.io/min-available"
SP_GROUP = "scheduling.x-k8s.io/pod-group"
VOLCANO_GROUP = "scheduling.k8s.io/group-name"
KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
# On a running job of a kind whose operator makes no pod anew when its pod templates
# change (all but a batch Job, whose template the API server keeps as sent), sent while
# its pods hold more than its source asks for now: what fleetq counts each of its pods
# with, by pod set, the larger of the two (``pods_started_with``). Read back by the next
# reconcile; fleetq's alone (one a source writes is taken off).
STARTED_WITH = "fleetq.io/pods-counted-with"
# The labels of a job that Kueue's webhook refuses to change while the job runs
# (its jobframework's ValidateJobOnUpdate), beside its queue: its
# WorkloadPriorityClass (any change before Kueue 0.12, any on a job not
# suspended before 0.15, and still one that sets or removes it) and its maximum
# run time (any change unless the job is suspended before and after). A job
# running on a kueue cluster keeps them as it was sent with them
# (``pipeline.sent_to_kueue``): an update Kueue refuses, Argo CD would retry
# at every sync until the job ended.
KEPT_WHILE_RUNNING = (WORKLOAD_PRIORITY_LABEL, MAX_EXEC_TIME_LABEL)
SYSTEM_NAMESPACES = {"default", "kube-system", "kube-public", "kube-node-lease"}

def dump(obj: Any) -> bytes:
    return yamltext.dump(obj).encode()


def job_file(key: JobKey, cluster: str) -> str:
    return f"clusters/{cluster}/{key.namespace}/{key.kind.lower()}-{key.name}.yaml"


@dataclass
class RenderedTree:
    """The state tree as path -> bytes (or the id of a blob the previous state
    holds), and the problems met while rendering. ``inputs`` says, for each
    rendered job and PodGroup file, everything its bytes were made from: a
    file whose inputs are the same next time is not rendered again."""

    files: dict[str, bytes | str] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    inputs: dict[str, str] = field(default_factory=dict)
    # overlay -> the jobs it was not applied to, and what their cluster would refuse
    # ("" where nothing: what they were decided on changed; ``Overlays.apply``), told
    # at the end
    refused: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    # overlay -> the fields it gave jobs that their API has not (``Overlays.apply``),
    # told at the end
    unknown: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)


def render_job(manifest: Manifest, decision: Decision, cluster: MemberCluster,
               tree: QuotaTree | None, queue: str | None = None,
               kept: Mapping[str, str | None] | None = None
               ) -> tuple[Manifest, list[Manifest]]:
    """The job as it goes to ``cluster``, and the PodGroups its dialect needs
    (none for a job with no pods of its own). ``queue``: on a kueue cluster,
    the LocalQueue it runs under there, when not its quota's name now;
    ``kept``: the labels of ``KEPT_WHILE_RUNNING`` it runs with there, where
    its source says otherwise now (None: it runs without the label); both
    ``Sent``, see ``pipeline.sent_to_kueue``.

    ``manifest`` is changed in place: pass a fresh copy.
    """
    obj = manifest
    key = decision.key
    kind = kind_for(decision.api_version, key.kind)
    assert kind is not None, f"{decision.api_version} {key.kind} is a job kind"
    as_created(obj)
    meta = obj.setdefault("metadata", {})
    meta.pop("generateName", None)
    meta["name"] = key.name
    meta["namespace"] = key.namespace
    quota_name = name_of_quota(decision.quota, tree)
    labels = meta.get("labels") or {}
    labels[MANAGED_BY] = "fleetq"
    labels[CLUSTER] = cluster.name
    if quota_name is not None:
        labels[QUOTA] = quota_name
        labels[QUOTA_LABEL] = quota_name
    queue = queue or quota_name
    annotations = meta.get("annotations") or {}
    # (the queue's older form, which Kueue reads where the label is not set: a
    # file copied from a kueue cluster would name a LocalQueue of its own)
    annotations.pop(KUEUE_QUEUE, None)
    if cluster.gang_dialect == "kueue":
        if queue is not None:
            labels[KUEUE_QUEUE] = queue
        for name, value in (kept or {}).items():
            if value is None:
                labels.pop(name, None)
            else:
                labels[name] = value
    else:  # (a file copied from a kueue cluster: a Kueue there would suspend the job
        # until a LocalQueue of that name, which it may not have, admitted it)
        labels.pop(KUEUE_QUEUE, None)
    meta["labels"] = labels
    annotations[SOURCE] = shown_path(decision.path)  # (a path not UTF-8: as git quotes it)
    meta["annotations"] = annotations
    # (Kueue's webhook suspends a job as it is made, and its ClusterQueue's
    # admission lifts that: a suspend written here, Argo CD's self-heal would
    # set back against Kueue)
    kind.set_suspended(obj, None if cluster.gang_dialect == "kueue" else False)
    if implements(kind, JobWithMovedFields):
        cast(JobWithMovedFields, kind).move_old_fields(obj)
    pods = sum(p.replicas for p in decision.pod_sets)
    total = gang_minimum(obj, pods, later_pods(kind, obj))
    volcano = cluster.gang_dialect == "volcano"
    priority_class = None  # (Volcano's PodGroup has it: one for all its pods, build_job)
    for ref in kind.pod_templates(obj):
        _gang(ref.template, cluster.gang_dialect, key.name, total, queue)
        if volcano and priority_class is None:
            priority_class = (ref.template.get("spec") or {}).get("priorityClassName")
    groups: list[Manifest] = []
    if pods == 0:  # (a RayJob on an existing RayCluster): no gang, and a PodGroup
        return obj, groups  # of minMember 0 scheduler-plugins' CRD refuses
    if cluster.gang_dialect == "scheduler-plugins":
        groups.append({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                       "metadata": {"name": key.name, "namespace": key.namespace,
                                    "labels": {MANAGED_BY: "fleetq"}},
                       "spec": {"minMember": total}})
    elif volcano:
        spec: dict[str, Any] = {"minMember": total}
        in_queue = volcano_queue(obj)
        if in_queue is not None:
            spec["queue"] = in_queue
        # (Volcano orders and preempts gangs by their PodGroup's priority: 0 without one)
        priority_class = priority_class or kind.scheduling_priority_class(obj)
        if priority_class:
            spec["priorityClassName"] = str(priority_class)
        groups.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                       "metadata": {"name": key.name, "namespace": key.namespace,
                                    "labels": {MANAGED_BY: "fleetq"}},
                       "spec": spec})
    return obj, groups


# What the API server sets on an object it keeps, which ``kubectl get -o yaml``
# writes out: a manifest that carries them (one exported from a cluster) is
# refused on create (resourceVersion), would be deleted at once by the garbage
# collector of a cluster its owner is not on (ownerReferences: another
# cluster's uid), or says what is not so (status). creationTimestamp, which
# the server sets anew, stays: it is the job's enqueue time (DESIGN §2).
SERVER_SET = ("uid", "resourceVersion", "generation", "managedFields", "selfLink",
              "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


# The labels the API server puts on a batch Job's pod template with the selector
# it makes of them (Kubernetes' job strategy, generateSelector): a Job read from
# a cluster carries them with its uid and name there, which a create refuses
# ("`selector` not auto-generated") unless its ``manualSelector`` is true.
JOB_SELECTOR_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid",
                       "batch.kubernetes.io/job-name", "job-name")


def as_created(obj: Manifest) -> None:
    """``obj`` as an object to create, in place: without what the API server
    set on the object it was read from (``SERVER_SET``, ``status``, kubectl's
    copy of what was last applied, and a batch Job's selector made for it)."""
    obj.pop("status", None)
    if (obj.get("apiVersion"), obj.get("kind")) == ("batch/v1", "Job"):
        _selector_made_off(obj)
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return
    for name in SERVER_SET:
        meta.pop(name, None)
    annotations = meta.get("annotations")
    if isinstance(annotations, dict) and LAST_APPLIED in annotations:
        del annotations[LAST_APPLIED]
        if not annotations:
            del meta["annotations"]


def _selector_made_off(job: Manifest) -> None:
    """A batch Job without the selector and labels the API server made for it
    (``JOB_SELECTOR_LABELS``), unless it chose its own (``manualSelector``)."""
    spec = job.get("spec")
    if not isinstance(spec, dict) or spec.get("manualSelector") is True:
        return
    spec.pop("selector", None)
    template = spec.get("template")
    meta = template.get("metadata") if isinstance(template, dict) else None
    labels = meta.get("labels") if isinstance(meta, dict) else None
    if isinstance(labels, dict):
        for name in JOB_SELECTOR_LABELS:
            labels.pop(name, None)


def name_of_quota(path: str | None, tree: QuotaTree | None) -> str | None:
    """The name of the quota at ``path``: its jobs' quota label, and on a kueue
    cluster their LocalQueue."""
    if path is None:
        return None
    if tree is not None and path in tree.nodes:
        return tree.nodes[path].name
    return path.rsplit("/", 1)[-1]


# The keys by which each gang dialect's scheduler groups a pod (labels, and
# Volcano's annotation): a pod template of a job that carries another's (its
# file copied from a cluster of another gang scheduler) would name a second
# group, which a scheduler reading both keys waits for and never sees made.
# So those of the other dialects are taken off; fleetq's dialect's are set. So
# is Volcano's ``schedulerName`` off the other dialects' clusters: where no
# Volcano runs, no scheduler of that name binds the pods; where one does, it
# would place them one by one, with no PodGroup.
GANG_LABELS = {"ack": (ACK_NAME, ACK_MIN), "scheduler-plugins": (SP_GROUP,),
               "volcano": (), "kueue": (KUEUE_QUEUE,)}
GANG_ANNOTATIONS = {"ack": (), "scheduler-plugins": (), "volcano": (VOLCANO_GROUP,),
                    "kueue": ()}


def _gang(template: Manifest, dialect: str, name: str, total: int, queue: str | None) -> None:
    had = template.get("metadata")
    meta = had if isinstance(had, dict) else {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):  # (the queue's older form: nowhere, as on the job)
        annotations.pop(KUEUE_QUEUE, None)
    for other in GANG_LABELS:
        if other != dialect:
            for label in GANG_LABELS[other]:
                labels.pop(label, None)
            annotations = meta.get("annotations")
            if isinstance(annotations, dict):
                for annotation in GANG_ANNOTATIONS[other]:
                    annotations.pop(annotation, None)
    if dialect == "ack":
        labels[ACK_NAME] = name
        labels[ACK_MIN] = str(total)
    elif dialect == "scheduler-plugins":
        labels[SP_GROUP] = name
    elif dialect == "volcano":
        annotations = meta.get("annotations") or {}
        annotations[VOLCANO_GROUP] = name
        meta["annotations"] = annotations
        template.setdefault("spec", {})["schedulerName"] = "volcano"
    elif dialect == "kueue" and queue is not None:
        labels[KUEUE_QUEUE] = queue
    if dialect != "volcano":  # (Volcano's scheduler, elsewhere: pods pending for good)
        spec = template.get("spec")
        if isinstance(spec, dict) and spec.get("schedulerName") == "volcano":
            del spec["schedulerName"]
    if labels or "labels" in meta:  # (no ``labels: {}`` where none were)
        meta["labels"] = labels
    if meta and meta is not had:  # (nor ``metadata: {}``: a kueue job with no queue)
        template["metadata"] = meta


# A Namespace leaves a cluster's folder with the last job fleetq placed in it
# there; deleted by a sync that prunes, it would take with it what else lives in
# it (checkpoints on a PVC made by hand, Secrets, other apps). So Argo CD and
# Flux are told never to prune one: it stays on the cluster until deleted there.
KEEP_NAMESPACE = {"argocd.argoproj.io/sync-options": "Prune=false",
                  "kustomize.toolkit.fluxcd.io/prune": "disabled"}


def _namespace_manifest(ns: str, source: Mapping[str, Any] | None) -> Manifest:
    if source is not None:
        obj = copy.deepcopy(dict(source))
        as_created(obj)
    else:
        obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    meta = obj.setdefault("metadata", {})
    if not isinstance(meta.get("labels"), dict):
        meta["labels"] = {}
    meta["labels"][MANAGED_BY] = "fleetq"
    if not isinstance(meta.get("annotations"), dict):
        meta["annotations"] = {}
    for key, value in KEEP_NAMESPACE.items():
        meta["annotations"].setdefault(key, value)
    return obj


def _dependency_manifest(dep: Dependency) -> Manifest:
    obj = copy.deepcopy(dep.manifest)
    as_created(obj)
    meta = obj.setdefault("metadata", {})
    meta["namespace"] = dep.namespace
    meta.setdefault("labels", {})
    if meta["labels"] is None:
        meta["labels"] = {}
    meta["labels"][MANAGED_BY] = "fleetq"
    return obj


def render_state(decisions: Iterable[Decision], inputs: FleetInputs,
                 manifest_of: Callable[[JobSource], Manifest | None],
                 previous: Mapping[str, bytes | str], overlays: Overlays,
                 reuse: Mapping[str, tuple[str, str]] | None = None,
                 held: Mapping[JobKey, AsItWas] | None = None,
                 sent: Mapping[str, Sent] | None = None) -> RenderedTree:
    """Every cluster folder of the state tree (placements.yaml is written apart).

    ``manifest_of`` gives a job's source manifest; ``previous`` maps paths of
    the previous state tree to their bytes or blob ids (for files kept as
    they are: a job kept on its last good version, whose source cannot be
    rendered now; a Finished or Failed job; a job's old copy, ``keptOn``).
    ``held``: what a job kept as it was whose source is not read now (its
    file breaks) was sent with (``sent_with`` its rendered manifest): its
    ConfigMaps, Secrets and volume claims stay with it, as the cluster has
    them when the fleet no longer defines them.
    ``reuse`` maps paths of the previous state tree to (inputs, blob id) as
    ``RenderedTree.inputs`` said:
    a job file made from the same inputs is that blob again, not rendered.
    ``sent``: job file -> what a job running on a cluster was sent with that
    Kueue or the API server refuses to change, where its source may say
    otherwise now (``Sent``).
    Not with overlays: they may read any field of a decision. (The inputs
    name the overlays a file was rendered under, ``Overlays.made_of``: once
    they are gone, what they rewrote is rendered again without them.)

    The clusters are rendered one after the other, in name order; when many
    jobs are to be rendered, half of the clusters are rendered by a forked
    process meanwhile (``in_two``): the same tree.
    """
    if overlays.names:
        reuse = None
    held = held or {}
    clusters = {c.name: c for c in inputs.clusters}
    placed: dict[str, list[Decision]] = {name: [] for name in sorted(clusters)}
    jobs = inputs.jobs
    for d in decisions:
        source = jobs.get(d.key)
        if source is not None:
            deleted = source.job.deleted_when
        else:  # (as its manifest on the cluster says)
            was = held.get(d.key)
            deleted = was.deleted_when if was is not None else (False, False)
        for where in _held_on(d, deleted):
            if where in placed:
                placed[where].append(d)
    work = [(clusters[name], ds) for name, ds in placed.items() if ds]
    render = functools.partial(_render_clusters, inputs=inputs, manifest_of=manifest_of,
                               previous=previous, overlays=overlays, reuse=reuse,
                               held=held, sent=sent or {})
    # the jobs of each cluster to render (not reused): the halves split where they balance
    to_render = [sum(1 for d in ds if reuse is None or job_file(d.key, cluster.name) not in reuse)
                 for cluster, ds in work]
    total = sum(to_render)
    if total < PARALLEL_MIN_JOBS or len(work) < 2 or not two_cores():
        out = render(work)
    else:
        at, done = 0, 0
        while at < len(work) - 1 and done + to_render[at] <= total // 2:
            done += to_render[at]
            at += 1
        out, theirs = in_two(render, work, at=max(at, 1))
        out.files.update(theirs.files)
        out.inputs.update(theirs.inputs)
        out.problems.extend(theirs.problems)
        for name, refused in theirs.refused.items():
            out.refused.setdefault(name, []).extend(refused)
        for name, unknown in theirs.unknown.items():
            out.unknown.setdefault(name, []).extend(unknown)
    out.problems.extend(overlays.refusals(out.refused))
    out.problems.extend(overlays.unknown_fields(out.unknown))
    # every member cluster has its folder, empty too: an Argo CD or Flux application
    # pointed at a folder that is not there fails, and prunes nothing it deployed
    for name in clusters:
        out.files.setdefault(f"clusters/{name}/kustomization.yaml", kustomization([]))
    return out


PARALLEL_MIN_JOBS = 2000  # fewer jobs to render than this are rendered in one process


def _render_clusters(work: Sequence[tuple[MemberCluster, list[Decision]]], *,
                     inputs: FleetInputs, manifest_of: Callable[[JobSource], Manifest | None],
                     previous: Mapping[str, bytes | str], overlays: Overlays,
                     reuse: Mapping[str, tuple[str, str]] | None,
                     held: Mapping[JobKey, AsItWas], sent: Mapping[str, Sent]
                     ) -> RenderedTree:
    """The folders of the clusters of ``work``, each with its decisions, in order."""
    out = RenderedTree()
    policies: dict[str, Policy] = {p.ref: p for p in inputs.policies}
    for cluster, placed in work:
        files: dict[str, bytes | str] = {}
        namespaces: set[str] = set()
        for d in placed:
            _render_one(d, cluster, inputs, manifest_of, previous, overlays, policies,
                        files, out, reuse, held, sent)
            namespaces.add(d.key.namespace)
        if not files:
            continue
        for ns in sorted(namespaces):
            if ns in SYSTEM_NAMESPACES:
                continue
            files[f"{ns}/namespace-{ns}.yaml"] = dump(
                _namespace_manifest(ns, inputs.namespaces.get(ns)))
        for rel in sorted(files):
            out.files[f"clusters/{cluster.name}/{rel}"] = files[rel]
        out.files[f"clusters/{cluster.name}/kustomization.yaml"] = kustomization(sorted(files))
    return out


def _held_on(d: Decision, deleted: tuple[bool, bool]) -> tuple[str, ...]:
    """The clusters whose folders hold the job of ``d``: where it is admitted
    (and its copies); where a Finished or Failed job ran (its object stays for
    its logs and history), unless its operator deletes it once it ended so
    (``deleted``: after it succeeds, after it fails; its manifest would create
    it, and run it, again); and those keeping an old copy (failover)."""
    kept_on = () if deleted[1] else d.kept_on  # (a failed copy, deleted, would run again)
    if d.cluster is None:
        return kept_on
    if d.phase is Phase.ADMITTED:
        return (d.cluster, *d.copies, *kept_on)
    if d.phase in (Phase.FINISHED, Phase.FAILED):
        return kept_on if deleted_after(deleted, d.phase) else (d.cluster, *d.copies, *kept_on)
    return kept_on


def _render_one(d: Decision, cluster: MemberCluster, inputs: FleetInputs,
                manifest_of: Callable[[JobSource], Manifest | None],
                previous: Mapping[str, bytes | str], overlays: Overlays,
                policies: Mapping[str, Policy], files: dict[str, bytes | str],
                out: RenderedTree, reuse: Mapping[str, tuple[str, str]] | None,
                held: Mapping[JobKey, AsItWas], sent: Mapping[str, Sent]) -> None:
    source = inputs.jobs.get(d.key)
    if source is None or d.kept or d.phase is not Phase.ADMITTED or cluster.name in d.kept_on:
        _copy_previous(previous, d, cluster.name, files)  # (as it ran there)
        as_it_was = held.get(d.key) if source is None or d.kept else None
        # (its volumes, config and secrets stay with it)
        if as_it_was is not None:
            _render_deps(d, as_it_was.deps, inputs, policies, files, (previous, cluster.name))
        elif source is not None:  # (an old copy keeps those the fleet no longer defines)
            _render_deps(d, source.deps, inputs, policies, files,
                         (previous, cluster.name) if cluster.name in d.kept_on else None)
        return
    job_rel = f"{d.key.namespace}/{d.key.kind.lower()}-{d.key.name}.yaml"
    group_rel = f"{d.key.namespace}/podgroup-{d.key.name}.yaml"
    base = f"clusters/{cluster.name}/"
    quota_name = name_of_quota(d.quota, inputs.tree)
    was_sent = sent.get(base + job_rel)
    queue = was_sent.queue if was_sent is not None else None
    kept = dict(was_sent.labels) if was_sent is not None else {}
    spec_then = was_sent.spec if was_sent is not None else None
    kueue_then = was_sent.kueue_job if was_sent is not None else None
    started = was_sent.started if was_sent is not None else None
    kueue = cluster.gang_dialect == "kueue"
    # (and whether fields of its spec went as sent, or what its pods started with, the
    # labels Kueue refuses to change it goes with, and its queue label, last: see
    # spec_kept, labels_sent and queue_sent)
    made_from = (rendered_from(d, cluster, quota_name, overlays), started or "",
                 _kept_text(sent_labels(source.job.label_map, kept)) if kueue else "",
                 (queue or quota_name or "") if kueue else "")
    made_of = "\0".join(made_from)
    was = reuse.get(base + job_rel) if reuse is not None else None
    # (a file that may keep fields as sent is rendered again: each kept is told)
    if was is not None and was[0] == made_of and spec_then is None and kueue_then is None:
        files[job_rel] = was[1]
        out.inputs[base + job_rel] = made_of
        group = reuse.get(base + group_rel) if reuse is not None else None
        if group is not None and group[0] == made_of:
            files[group_rel] = group[1]
            out.inputs[base + group_rel] = made_of
    else:
        manifest = manifest_of(source)
        if manifest is None:
            _copy_previous(previous, d, cluster.name, files)
            return
        obj, groups = render_job(manifest, d, cluster, inputs.tree, queue, kept)
        obj = overlays.apply(obj, d, cluster, out.problems, out.refused, out.unknown)
        meta = obj.setdefault("metadata", {})
        if started is not None:
            meta["annotations"] = {**(meta.get("annotations") or {}), STARTED_WITH: started}
        elif isinstance(meta.get("annotations"), dict) and STARTED_WITH in meta["annotations"]:
            del meta["annotations"][STARTED_WITH]  # (fleetq's alone: not a source's)
            if not meta["annotations"]:
                del meta["annotations"]
        # (what Kueue keeps first: the spec is then checked as the Job goes, its
        # parallelism kept)
        by_kueue = keep_for_kueue(obj, kueue_then) if kueue_then is not None else []
        out.problems.extend(_kept_by_kueue(source, at, now, then, cluster.name)
                            for at, now, then in by_kueue)
        template = (obj.get("spec") or {}).get("template")
        changed = keep_spec(obj, spec_then) if spec_then is not None else []
        out.problems.extend(_kept_in_spec(source, name, cluster.name, template, spec_then)
                            for name in changed)
        if changed or by_kueue:
            made_of = "\0".join((made_from[0], SPEC_KEPT, *made_from[2:]))
        files[job_rel] = dump(obj)
        out.inputs[base + job_rel] = made_of
        for group_obj in groups:
            files[group_rel] = dump(group_obj)
            out.inputs[base + group_rel] = made_of
    # (one it runs with there that the fleet no longer defines stays with it, told)
    running = (previous, cluster.name) if base + job_rel in previous else None
    for kind, name in _render_deps(d, source.deps, inputs, policies, files, running):
        out.problems.append(Problem(source.job.path, source.job.line, (
            f"{kind} {name!r}, which the job {d.key} names, is defined by no file of the "
            f"fleet now: it stays on {cluster.name} as it was sent, while the job runs there "
            f"(else the cluster would delete it under the job's pods); define it again, or "
            f"remove it from the job"), "warning"))


def _render_deps(d: Decision, deps: Iterable[tuple[str, str]], inputs: FleetInputs,
                 policies: Mapping[str, Policy], files: dict[str, bytes | str],
                 as_it_was: tuple[Mapping[str, bytes | str], str] | None = None
                 ) -> list[tuple[str, str]]:
    """The ConfigMaps, Secrets, volume claims and service accounts the job
    names, when its policy propagates them. ``as_it_was`` (the previous state
    tree's files, the cluster): one the fleet no longer defines is kept as
    the cluster has it (a job kept as it was, or running there), as is each
    of them when the policy it was placed by is gone (a job kept where it
    runs). Gives (kind, name) of each kept so."""
    policy = policies.get(d.policy or "")
    if policy is not None and not policy.propagate_deps:
        return []
    kept = []
    for kind, name in deps:
        rel = f"{d.key.namespace}/{kind.lower()}-{name}.yaml"
        dep = inputs.dependencies.get((kind, d.key.namespace, name)) \
            if policy is not None else None
        if dep is not None:
            files[rel] = dump(_dependency_manifest(dep))
        elif as_it_was is not None:
            data = as_it_was[0].get(f"clusters/{as_it_was[1]}/{rel}")
            if data is not None:
                files[rel] = data
                kept.append((kind, name))
    return kept


@dataclass(frozen=True)
class AsItWas:
    """What a job's manifest, as the state rendered it, says of it."""

    deps: tuple[tuple[str, str], ...]  # (kind, name) it was sent with
    deleted_when: tuple[bool, bool]  # (``Job.deleted_when``)


def sent_with(rendered: bytes) -> AsItWas | None:
    """``AsItWas`` of a rendered job manifest; ``None`` when it is none."""
    try:
        obj = yaml.load(rendered, Loader=yaml.CSafeLoader)
        kind = kind_for(str(obj["apiVersion"]), str(obj["kind"])) if isinstance(obj, dict) \
            else None
        if kind is None:
            return None
        deps: set[tuple[str, str]] = set()
        for ref in every_pod_template(kind, obj):
            deps.update(pod_dependencies(ref.template.get("spec") or {}))
        return AsItWas(tuple(sorted(deps)), kind.deleted_when(obj))
    except (yaml.YAMLError, ManifestError, KeyError, TypeError, AttributeError):
        return None  # (not fleetq's rendering: it keeps what the state has, no more)


@dataclass(frozen=True)
class Sent:
    """What a job running on a cluster was sent with there that Kueue (on a
    kueue cluster) or the API server refuses to change while it runs, where
    its source says otherwise now: it goes with it again, until it runs anew."""

    queue: str | None = None  # its LocalQueue, when not its quota's name now
    # (label of KEPT_WHILE_RUNNING, its value; None: sent without it)
    labels: tuple[tuple[str, str | None], ...] = ()
    # a batch Job's fields of IMMUTABLE_SPEC as it was sent with them there (on any
    # cluster: the API server refuses to change them), read anew where its source
    # changed since; those its source says otherwise now it goes with (``keep_spec``)
    spec: Manifest | None = None
    # and, on a kueue cluster, what Kueue's Job webhook refuses to change of it, read
    # with them (``keep_for_kueue``)
    kueue_job: KueueJobSent | None = None
    # a job of another kind: its ``STARTED_WITH`` annotation (``started_text``), sent
    # while its running pods hold more than its source asks for
    started: str | None = None


@dataclass(frozen=True)
class KueueJobSent:
    """What Kueue's Job webhook refuses to change of a batch Job while it runs,
    as the Job was sent to a kueue cluster: whether its completions follow its
    parallelism, and its parallelism when it was sent with ``MIN_PARALLELISM``
    (see ``COMPLETIONS_EQUAL_PARALLELISM``)."""

    equal_parallelism: str | None = None  # its annotation (None: sent without it)
    partial: bool = False  # sent with MIN_PARALLELISM: its parallelism is kept
    parallelism: Any = None  # its spec.parallelism (None: sent without it, 1)


def sent_labels(labels: Mapping[str, str], kept: Mapping[str, str | None]
                ) -> dict[str, str]:
    """The labels of ``KEPT_WHILE_RUNNING`` a job of ``labels`` goes with,
    those ``kept`` (``Sent.labels``) as they were sent."""
    out = {name: labels[name] for name in KEPT_WHILE_RUNNING if name in labels}
    for name, value in kept.items():
        if value is None:
            out.pop(name, None)
        else:
            out[name] = value
    return out


def _kept_text(labels: Mapping[str, str]) -> str:
    # (a label's value holds no "=" nor "\1": Kubernetes' rule for label values)
    return "\1".join(f"{name}={labels[name]}" for name in sorted(labels))


# (of a job file's inputs: fields of its spec, or Kueue's annotation, went as sent)
SPEC_KEPT = "spec"


def rendered_from(d: Decision, cluster: MemberCluster, quota_name: str | None,
                  overlays: Overlays) -> str:
    """The inputs a job file is rendered from (``RenderedTree.inputs``) but
    what it keeps as it was sent (``Sent``), which follow them."""
    return "\0".join((d.blob, d.path, d.api_version, *d.key.order, d.quota or "",
                      quota_name or "", str(sum(p.replicas for p in d.pod_sets)),
                      cluster.name, cluster.gang_dialect, overlays.made_of))


def spec_kept(made_of: str) -> bool:
    """Whether a job file was rendered with fields of its spec, or Kueue's
    annotation, as they were sent (``keep_spec``, ``keep_for_kueue``), as its
    inputs say (the third from the last)."""
    fields = made_of.rsplit("\0", 3)
    return len(fields) == 4 and fields[-3] == SPEC_KEPT


def pods_started_with(rendered: bytes) -> dict[str, Resources] | None:
    """The requests each pod of a rendered job of a kind other than a batch Job
    holds, by pod set, as the cluster has its running pods: its
    ``STARTED_WITH`` annotation where it has one, else its pod templates'
    (its operator made them so); None when it is no job of fleetq's rendering."""
    try:
        obj = yaml.load(rendered, Loader=yaml.CSafeLoader)
        kind = kind_for(str(obj["apiVersion"]), str(obj["kind"])) \
            if isinstance(obj, dict) else None
        if kind is None or kind.kind == BatchJobKind.kind:
            return None
        said = ((obj.get("metadata") or {}).get("annotations") or {}).get(STARTED_WITH)
        if said is not None:
            sets = json.loads(said)
            return {str(name): {str(r): parse_quantity_milli(q, f"{name}.{r}")
                                for r, q in per_pod.items()} for name, per_pod in sets.items()}
        return {ref.name: pod_set_requests(ref) for ref in kind.pod_templates(obj)}
    except (yaml.YAMLError, ManifestError, KeyError, TypeError, AttributeError,
            ValueError):
        return None  # (counted as its source says)


def started_text(sets: Mapping[str, ResourcesView]) -> str:
    """``STARTED_WITH``'s value: pod set -> resource -> quantity, as JSON."""
    return json.dumps({name: {r: format_quantity(r, v) for r, v in sorted(per_pod.items())}
                       for name, per_pod in sorted(sets.items())},
                      separators=(",", ":"))


def spec_sent(rendered: bytes, kueue: bool = False) -> Sent | None:
    """What a rendered batch Job was sent with that the API server refuses to
    change once it is made (``Sent.spec``: its fields of ``IMMUTABLE_SPEC``)
    and, sent to a ``kueue`` cluster, Kueue's Job webhook while it runs
    (``Sent.kueue_job``); None when it is no Job of fleetq's rendering."""
    try:
        obj = yaml.load(rendered, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        return None
    spec = obj.get("spec") if isinstance(obj, dict) and obj.get("kind") == BatchJobKind.kind \
        and obj.get("apiVersion") == BatchJobKind.api_version else None
    if not isinstance(spec, dict) or not isinstance(spec.get("template"), dict):
        return None
    kept = {name: spec[name] for name in IMMUTABLE_SPEC if name in spec}
    if not kueue:
        return Sent(spec=kept)
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    annotations = annotations if isinstance(annotations, dict) else {}
    equal = annotations.get(COMPLETIONS_EQUAL_PARALLELISM)
    return Sent(spec=kept, kueue_job=KueueJobSent(
        None if equal is None else str(equal), MIN_PARALLELISM in annotations,
        spec.get("parallelism")))


def keep_spec(obj: Manifest, sent: Manifest) -> list[str]:
    """Sets the fields of ``IMMUTABLE_SPEC`` of the rendered batch Job ``obj``
    back to those it was ``sent`` with (``Sent.spec``), in place; the names of
    those that differed. An Indexed Job's ``completions`` changed in tandem with
    its ``parallelism`` (the two equal) goes as edited: the API server takes
    that (elastic Indexed Jobs, on by default from Kubernetes 1.27)."""
    spec = obj.setdefault("spec", {})
    changed = [name for name in IMMUTABLE_SPEC if spec.get(name) != sent.get(name)
               and not (name == "completions" and _elastic(spec, sent))]
    for name in changed:
        if name in sent:
            spec[name] = copy.deepcopy(sent[name])
        else:
            spec.pop(name, None)
    return changed


def _elastic(spec: Manifest, sent: Manifest) -> bool:
    """Whether an Indexed Job sent so may take the ``completions`` of ``spec``:
    a number equal to its ``parallelism`` (1 when unset)."""
    completions = spec.get("completions")
    return (sent.get("completionMode") == "Indexed" and type(completions) is int
            and completions == spec.get("parallelism", 1))


def keep_for_kueue(obj: Manifest, sent: KueueJobSent) -> list[tuple[str, Any, Any]]:
    """Sets back what Kueue's Job webhook refuses to change of the rendered
    batch Job ``obj`` while it runs to what it was ``sent`` with
    (``Sent.kueue_job``), where Kueue would see a change, in place: whether
    its completions follow its parallelism (its annotation "true" or not),
    and its parallelism (1 when unset) when it was sent with
    ``MIN_PARALLELISM``. Each set back as (its field, as ``Job.field_lines``
    names it; its value now; as sent), None for a field left out."""
    out: list[tuple[str, Any, Any]] = []
    meta = obj.setdefault("metadata", {})
    annotations = meta.get("annotations") or {}
    now = annotations.get(COMPLETIONS_EQUAL_PARALLELISM)
    if (now == "true") != (sent.equal_parallelism == "true"):
        if sent.equal_parallelism is None:
            del annotations[COMPLETIONS_EQUAL_PARALLELISM]
        else:
            annotations[COMPLETIONS_EQUAL_PARALLELISM] = sent.equal_parallelism
        meta["annotations"] = annotations
        out.append((COMPLETIONS_EQUAL_PARALLELISM_AT, now, sent.equal_parallelism))
    spec = obj.setdefault("spec", {})
    now = spec.get("parallelism")
    if sent.partial and _or_one(now) != _or_one(sent.parallelism):
        if sent.parallelism is None:
            del spec["parallelism"]
        else:
            spec["parallelism"] = sent.parallelism
        out.append(("spec.parallelism", now, sent.parallelism))
    return out


def _or_one(parallelism: Any) -> Any:
    return 1 if parallelism is None else parallelism  # (the API server's default)


def _kept_by_kueue(source: JobSource, at: str, now: Any, then: Any, cluster: str
                   ) -> Problem:
    """The warning that the field ``at`` of a Job running on the kueue cluster
    ``cluster`` (``keep_for_kueue``), ``now`` in its source, is sent as it
    was sent (``then``)."""
    if at == COMPLETIONS_EQUAL_PARALLELISM_AT:
        return kept_by_kueue(source.job, f"annotation {COMPLETIONS_EQUAL_PARALLELISM}", at,
                             quoted(now), quoted(then), cluster)
    return kept_by_kueue(source.job, at, at, now, then, cluster,
                         f" (it was sent with annotation {MIN_PARALLELISM})")


def quoted(value: object) -> str | None:
    """A label's or an annotation's value as a warning gives it (None: none)."""
    return None if value is None else f'"{value}"'


def kept_by_kueue(job: Job, field: str, at: str, now: object, then: object, cluster: str,
                  why: str = "") -> Problem:
    """The warning, at the line of ``at`` (``Job.line_of``), that ``field`` of
    ``job``, ``now`` in its source (None: left out), is sent to the kueue
    cluster ``cluster`` as it was sent (``then``) while the job runs there, as
    Kueue refuses to change it (``why``: on what condition)."""
    edit = (f"changed to {now}" if then is not None and now is not None
            else f"set to {now}" if now is not None else "removed")
    keeps = f"it keeps {then}" if then is not None else "it stays without it"
    return Problem(job.path, job.line_of(at), (
        f"{field} {edit} takes effect when {job.key.kind} {job.key.namespace}/"
        f"{job.key.name} runs again: Kueue refuses to change it while the job runs{why}, "
        f"so on {cluster} {keeps}"), "warning")


def _kept_in_spec(source: JobSource, name: str, cluster: str, template: Any = None,
                  sent: Manifest | None = None) -> Problem:
    """The warning that the field ``name`` of a running Job's spec, edited in
    its source, is sent to ``cluster`` as it was sent. A pod ``template`` (as
    rendered now) that differs from the one ``sent`` only in the gang's size
    that ack's label gives its pods (``ACK_MIN``) is told as that: the Job's
    size changed, not its template."""
    job = source.job
    then = (sent or {}).get("template")
    size = _size_label(template, then) if name == "template" else None
    if name == "template" and size is None and _gang_keys_alone(template, then):
        return Problem(job.path, job.line_of(NAME_AT), (
            f"Job {job.key.namespace}/{job.key.name} runs on {cluster} with the gang labels "
            f"of the dialect it was sent with, not those of the cluster's gangDialect now: "
            f"the API server refuses to change a Job's pod template once it is made, so "
            f"the pods it makes until it runs again (under a new name, or placed anew) are "
            f"grouped as before, which the cluster's gang scheduler may not do; to run it "
            f"under the new dialect now, delete it and push it again"), "warning")
    if size is not None:
        return Problem(job.path, job.line_of("spec.parallelism"), (
            f"the gang of Job {job.key.namespace}/{job.key.name} is now of {size[0]} pod(s): "
            f"on {cluster} its pods keep label {ACK_MIN} \"{size[1]}\" until it runs again "
            f"(under a new name, or placed anew), as the API server refuses to change a "
            f"Job's pod template once it is made"), "warning")
    return Problem(job.path, job.line_of(f"spec.{name}"), (
        f"spec.{name} changed takes effect when Job {job.key.namespace}/{job.key.name} "
        f"runs again (under a new name, or placed anew): the API server refuses to "
        f"change it once the Job is made, so on {cluster} it keeps the one it was sent "
        f"with"), "warning")


def _gang_keys_alone(now: Any, then: Any) -> bool:
    """Whether pod templates ``now`` and ``then`` differ only in the keys of the
    gang dialects (``GANG_LABELS``, ``GANG_ANNOTATIONS``, Volcano's
    ``schedulerName``): a cluster's gangDialect changed, not the template."""
    def bare(template: Any) -> Any:
        if not isinstance(template, dict):
            return template
        out = copy.deepcopy(template)
        meta = out.get("metadata")
        if isinstance(meta, dict):
            for field, keys in (("labels", GANG_LABELS), ("annotations", GANG_ANNOTATIONS)):
                values = meta.get(field)
                if isinstance(values, dict):
                    for key in (k for ks in keys.values() for k in ks):
                        values.pop(key, None)
                    if not values:
                        del meta[field]
            if not meta:
                del out["metadata"]
        spec = out.get("spec")
        if isinstance(spec, dict) and spec.get("schedulerName") == "volcano":
            del spec["schedulerName"]
        return out

    return bool(now != then and bare(now) == bare(then))


def _size_label(now: Any, then: Any) -> tuple[str, str] | None:
    """(now, then) of the ``ACK_MIN`` label of pod templates ``now`` and
    ``then``, when it is all that differs between them; else None."""
    def size(template: Any) -> Any:
        meta = template.get("metadata") if isinstance(template, dict) else None
        labels = meta.get("labels") if isinstance(meta, dict) else None
        return labels.get(ACK_MIN) if isinstance(labels, dict) else None

    was, new = size(then), size(now)
    if not isinstance(was, str) or not isinstance(new, str) or was == new:
        return None
    same = copy.deepcopy(now)
    same["metadata"]["labels"][ACK_MIN] = was
    return (new, was) if same == then else None


def queue_sent(made_of: str) -> str:
    """The Kueue queue label a job file was rendered with, as its inputs say
    (``RenderedTree.inputs``: the last of them; empty off kueue clusters)."""
    return made_of.rsplit("\0", 1)[-1]


def labels_sent(made_of: str) -> dict[str, str]:
    """The labels of ``KEPT_WHILE_RUNNING`` a job file was rendered with, as
    its inputs say (``RenderedTree.inputs``: the one before the last)."""
    fields = made_of.rsplit("\0", 2)
    text = fields[-2] if len(fields) == 3 else ""
    return dict(item.split("=", 1) for item in text.split("\1") if "=" in item)


def metadata_labels(rendered: bytes) -> dict[str, str] | None:
    """The labels of a rendered job manifest; None when it is none. Only its
    ``metadata`` is parsed (its text up to the next field of the object: the
    state's files are fleetq's own writing, each field of the object at the
    start of a line)."""
    start = rendered.find(b"\nmetadata:\n")
    end = _NEXT_FIELD.search(rendered, start + 1) if start >= 0 else None
    text = rendered if start < 0 else rendered[start + 1:end.start() if end else None]
    try:
        obj = yaml.load(text, Loader=yaml.CSafeLoader)
        labels = obj["metadata"].get("labels") or {}
    except (yaml.YAMLError, KeyError, TypeError, AttributeError):
        return None
    if not isinstance(labels, dict):
        return None
    return {str(k): v for k, v in labels.items() if isinstance(v, str)}


_NEXT_FIELD = re.compile(rb"\n(?=[^\s#])")  # (a line's end before an object's next field)


def _copy_previous(previous: Mapping[str, bytes | str], d: Decision, cluster: str,
                   files: dict[str, bytes | str]) -> None:
    prefix = f"clusters/{cluster}/{d.key.namespace}/"
    for suffix in (f"{d.key.kind.lower()}-{d.key.name}.yaml", f"podgroup-{d.key.name}.yaml"):
        data = previous.get(prefix + suffix)
        if data is not None:
            files[f"{d.key.namespace}/{suffix}"] = data


def kustomization(resources: list[str]) -> bytes:
    lines = ["apiVersion: kustomize.config.k8s.io/v1beta1", "kind: Kustomization",
             "resources:" if resources else "resources: []"]
    lines.extend(f"- {r}" for r in resources)
    return ("\n".join(lines) + "\n").encode()
