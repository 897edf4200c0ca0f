"""Small fluent builders for the pure core's values (Kueue's ``MakeWorkload`` style).

Quantities are written as Kubernetes strings and converted with
``parse_quantity_milli``; a few short resource names are accepted as keyword
arguments (``gpu`` for ``nvidia.com/gpu``, ``max_jobs`` for
``kube-queue/max-jobs``)::

    job("a", ns="team-a").pod_set("worker", 2, cpu="2", memory="2Gi").obj()
    cluster("c1").node("n1", cpu="96", gpu="8").reservation(False).obj()
    tree(quota("root", quota("a", ns=["team-a"], min=dict(gpu="8")), min=..., max=...))
    reconcile_cycle(cycle_input(jobs=[...], clusters=[...], tree=...))
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from reconciler.core.cycle import CycleInput, CycleResult, InvalidJob
from reconciler.core.model import (
    ClusterAffinity,
    Decision,
    Failover,
    FleetSettings,
    Job,
    JobKey,
    LabelRequirement,
    LabelSelector,
    MemberCluster,
    Node,
    NodeSelectorTerm,
    Phase,
    PlacementStrategy,
    PodSet,
    PodSetCount,
    Policy,
    PriorPlacement,
    QueueStrategy,
    QuotaSettings,
    ResourceSelector,
    Taint,
    Toleration,
)
from reconciler.core.quota import PREEMPTIBLE_LABEL, QUOTA_LABEL, QuotaSpec, QuotaTree, build_tree
from reconciler.core.resources import MAX_JOBS, PODS, Resources, add_into
from reconciler.fleet.state import decision_item, prior_from_item
from reconciler.jobkinds.base import parse_quantity_milli

GPU = "nvidia.com/gpu"
WORKLOAD_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
PYTORCH = ("kubeflow.org/v1", "PyTorchJob")
BATCH_JOB = ("batch/v1", "Job")
SOURCE_TIME = "2026-01-01T00:00:00Z"
NOW = "2026-01-02T00:00:00Z"

_ALIASES = {"gpu": GPU, "max_jobs": MAX_JOBS, "ephemeral_storage": "ephemeral-storage"}


def res(mapping: Mapping[str, str | int] | None = None, /, **quantities: str | int) -> Resources:
    """Resources in milli-units from Kubernetes quantity strings (``cpu="500m"``)."""
    out: Resources = {}
    for name, value in {**(mapping or {}), **quantities}.items():
        out[_ALIASES.get(name, name)] = parse_quantity_milli(value, name)
    return out


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> Taint:
    return Taint(key=key, value=value, effect=effect)


def toleration(key: str = "", value: str = "", *, operator: str = "Equal",
               effect: str = "") -> Toleration:
    return Toleration(key=key, operator=operator, value=value, effect=effect)


def labels(mapping: Mapping[str, str] | None = None) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((mapping or {}).items()))


def selector(match_labels: Mapping[str, str] | None = None,
             *expressions: tuple[str, str, Iterable[str]]) -> LabelSelector:
    """A label selector; expressions as ``(key, operator, values)``."""
    return LabelSelector(
        match_labels=labels(match_labels),
        match_expressions=tuple(LabelRequirement(k, op, tuple(v)) for k, op, v in expressions))


# -- jobs ------------------------------------------------------------------------------


class JobBuilder:
    def __init__(self, name: str, ns: str = "default", *, api_version: str = PYTORCH[0],
                 kind: str = PYTORCH[1]) -> None:
        self._name = name
        self._ns = ns
        self._api_version = api_version
        self._kind = kind
        self._pod_sets: list[PodSet] = []
        self._labels: dict[str, str] = {}
        self._priority_class: str | None = None
        self._created_at: str | None = None
        self._path: str | None = None
        self._line = 1
        self._field_lines: list[tuple[str, int]] = []

    def kind(self, api_version: str, kind: str) -> JobBuilder:
        self._api_version, self._kind = api_version, kind
        return self

    def pod_set(self, name: str, replicas: int, *,
                node_selector: Mapping[str, str] | None = None,
                tolerations: Iterable[Toleration] = (),
                node_affinity: Iterable[NodeSelectorTerm] = (),
                **quantities: str) -> JobBuilder:
        self._pod_sets.append(PodSet(
            name=name, replicas=replicas, per_pod=res(**quantities),
            node_selector=labels(node_selector), tolerations=tuple(tolerations),
            node_affinity=tuple(node_affinity)))
        return self

    def priority_class(self, name: str) -> JobBuilder:
        self._priority_class = name
        return self

    def workload_priority_class(self, name: str) -> JobBuilder:
        self._labels[WORKLOAD_PRIORITY_LABEL] = name
        return self

    def labels(self, **values: str) -> JobBuilder:
        self._labels.update(values)
        return self

    def label(self, key: str, value: str) -> JobBuilder:
        self._labels[key] = value
        return self

    def quota(self, name: str) -> JobBuilder:
        return self.label(QUOTA_LABEL, name)

    def non_preemptible(self) -> JobBuilder:
        return self.label(PREEMPTIBLE_LABEL, "false")

    def created(self, timestamp: str) -> JobBuilder:
        self._created_at = timestamp
        return self

    def path(self, path: str, line: int = 1) -> JobBuilder:
        self._path, self._line = path, line
        return self

    def field_at(self, field: str, line: int) -> JobBuilder:
        """The line of one of its fields (``Job.field_lines``)."""
        self._field_lines.append((field, line))
        return self

    def key(self) -> JobKey:
        group = self._api_version.rsplit("/", 1)[0] if "/" in self._api_version else ""
        return JobKey(group, self._kind, self._ns, self._name)

    def obj(self) -> Job:
        """The core ``Job``; requests as ``fleet.jobs.build_job`` computes them."""
        pod_sets = tuple(self._pod_sets) or (PodSet("worker", 1, res(cpu="1")),)
        total: Resources = {}
        for ps in pod_sets:
            add_into(total, ps.per_pod, ps.replicas)
        total[PODS] = sum(ps.replicas for ps in pod_sets) * 1000
        total[MAX_JOBS] = 1000
        return Job(
            key=self.key(), api_version=self._api_version,
            path=self._path or f"jobs/{self._ns}/{self._name}.yaml", line=self._line,
            blob=f"blob-{self._ns}-{self._name}", pod_sets=pod_sets,
            requests={k: v for k, v in sorted(total.items()) if v},
            labels=labels(self._labels), quota_name=self._labels.get(QUOTA_LABEL),
            priority_class=self._priority_class,
            workload_priority_class=self._labels.get(WORKLOAD_PRIORITY_LABEL),
            preemptible=self._labels.get(PREEMPTIBLE_LABEL) != "false",
            created_at=self._created_at, field_lines=tuple(self._field_lines))


def job(name: str, ns: str = "default", **kw: str) -> JobBuilder:
    return JobBuilder(name, ns, **kw)


def gpu_job(name: str, gpus: int, ns: str = "default", *, replicas: int = 1) -> JobBuilder:
    """A job of ``replicas`` workers with ``gpus`` GPUs (and 1 cpu) each."""
    return job(name, ns).pod_set("worker", replicas, cpu="1", gpu=str(gpus))


# -- clusters --------------------------------------------------------------------------


class ClusterBuilder:
    def __init__(self, name: str) -> None:
        self._name = name
        self._labels: dict[str, str] = {}
        self._reservation = True
        self._dialect = "ack"
        self._capabilities: tuple[str, ...] | None = None
        self._taints: list[Taint] = []
        self._reserved: Resources = {}
        self._nodes: list[Node] = []

    def node(self, name: str, *, labels: Mapping[str, str] | None = None,
             taints: Iterable[Taint] = (), **quantities: str) -> ClusterBuilder:
        self._nodes.append(Node(name=name, allocatable=res(**quantities),
                                labels=_labels(labels), taints=tuple(taints)))
        return self

    def node_group(self, name: str, count: int, *, labels: Mapping[str, str] | None = None,
                   taints: Iterable[Taint] = (), **quantities: str) -> ClusterBuilder:
        """``count`` identical nodes ``name-0 .. name-(count-1)``, as ``fleet`` expands them."""
        for k in range(count):
            self.node(f"{name}-{k}", labels=labels, taints=taints, **quantities)
        return self

    def reservation(self, on: bool) -> ClusterBuilder:
        self._reservation = on
        return self

    def labels(self, **values: str) -> ClusterBuilder:
        self._labels.update(values)
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> ClusterBuilder:
        self._taints.append(Taint(key, value, effect))
        return self

    def capabilities(self, *kinds: str) -> ClusterBuilder:
        self._capabilities = kinds
        return self

    def reserved(self, **quantities: str) -> ClusterBuilder:
        self._reserved = res(**quantities)
        return self

    def obj(self) -> MemberCluster:
        return MemberCluster(
            name=self._name, labels=_labels(self._labels),
            resource_reservation=self._reservation, gang_dialect=self._dialect,
            capabilities=self._capabilities, taints=tuple(self._taints),
            reserved=dict(self._reserved), nodes=tuple(self._nodes))


def _labels(mapping: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    return labels(mapping)


def cluster(name: str) -> ClusterBuilder:
    return ClusterBuilder(name)


def gpu_cluster(name: str, *gpus_per_node: int, **cluster_labels: str) -> MemberCluster:
    """A cluster with one node per entry (``n0``, ``n1``, ...), 96 cpu and N GPUs each."""
    b = cluster(name).labels(**cluster_labels)
    for i, gpus in enumerate(gpus_per_node):
        b.node(f"n{i}", cpu="96", memory="768Gi", gpu=str(gpus))
    return b.obj()


# -- quota tree ------------------------------------------------------------------------


def quota(name: str, *children: QuotaSpec, min: Mapping[str, str] | None = None,
          max: Mapping[str, str] | None = None, ns: Iterable[str] = (),
          line: int = 0) -> QuotaSpec:
    """One ElasticQuotaTree node; quantities as strings, ``gpu`` for ``nvidia.com/gpu``."""
    return QuotaSpec(name=name, min=res(min or {}), max=res(max or {}),
                     namespaces=tuple(ns), children=children, line=line)


def tree(spec: QuotaSpec, *, path: str = "quota/tree.yaml") -> QuotaTree:
    """A validated tree; fails the test when the spec has problems."""
    built, problems = build_tree(spec, path=path)
    assert built is not None
    assert problems == [], [str(p) for p in problems]
    return built


def simple_tree(*leaves: QuotaSpec, total: Mapping[str, str] | None = None) -> QuotaTree:
    """``root`` (min = max = ``total``, default 1000 cpu / 64 GPUs) over ``leaves``."""
    total = total or {"cpu": "1000", "gpu": "64"}
    return tree(quota("root", *leaves, min=total, max=total))


# -- policies --------------------------------------------------------------------------


class PolicyBuilder:
    def __init__(self, name: str, ns: str | None) -> None:
        self._name = name
        self._ns = ns
        self._selectors: list[ResourceSelector] = []
        self._priority = 0
        self._gang = True
        self._queued = True
        self._affinity: ClusterAffinity | None = None
        self._affinities: list[ClusterAffinity] = []
        self._tolerations: list[Toleration] = []
        self._failover: Failover | None = None
        self._strategy: PlacementStrategy | None = None
        self._line = 1

    def selects(self, api_version: str = PYTORCH[0], kind: str = PYTORCH[1], *,
                name: str | None = None, namespace: str | None = None,
                match_labels: Mapping[str, str] | None = None) -> PolicyBuilder:
        self._selectors.append(ResourceSelector(
            api_version=api_version, kind=kind, name=name, namespace=namespace,
            label_selector=selector(match_labels) if match_labels is not None else None))
        return self

    def priority(self, value: int) -> PolicyBuilder:
        self._priority = value
        return self

    def queued(self, on: bool = True) -> PolicyBuilder:
        self._queued = on
        return self

    def capacity_only(self) -> PolicyBuilder:
        """No ``suspension.scheduling``: placed by capacity alone."""
        return self.queued(False)

    def clusters(self, *names: str, match_labels: Mapping[str, str] | None = None,
                 exclude: Iterable[str] = ()) -> PolicyBuilder:
        self._affinity = ClusterAffinity(
            cluster_names=names,
            label_selector=selector(match_labels) if match_labels is not None else None,
            exclude=tuple(exclude))
        return self

    def affinities(self, *groups: Iterable[str]) -> PolicyBuilder:
        """``clusterAffinities``: one term per group of cluster names, tried in order."""
        for i, names in enumerate(groups):
            self._affinities.append(ClusterAffinity(cluster_names=tuple(names), name=f"g{i}"))
        return self

    def tolerate(self, key: str = "", value: str = "", *, operator: str = "Equal",
                 effect: str = "") -> PolicyBuilder:
        self._tolerations.append(toleration(key, value, operator=operator, effect=effect))
        return self

    def strategy(self, value: PlacementStrategy) -> PolicyBuilder:
        self._strategy = value
        return self

    def failover(self, toleration_seconds: int | None = None,
                 purge_mode: str = "Gracefully", grace_period_seconds: int = 600
                 ) -> PolicyBuilder:
        """``failover.application``: ``decisionConditions.tolerationSeconds``,
        ``purgeMode``, ``gracePeriodSeconds``."""
        self._failover = Failover(toleration_seconds=toleration_seconds, purge_mode=purge_mode,
                                  grace_period_seconds=grace_period_seconds)
        return self

    def obj(self) -> Policy:
        selectors = tuple(self._selectors) or (ResourceSelector(*PYTORCH),)
        return Policy(
            name=self._name, namespace=self._ns,
            path=f"policies/{self._name}.yaml", line=self._line, selectors=selectors,
            priority=self._priority, gang=self._gang, queued=self._queued,
            affinity=self._affinity, affinities=tuple(self._affinities),
            cluster_tolerations=tuple(self._tolerations), failover=self._failover,
            strategy=self._strategy)


def policy(name: str = "gang-queued", ns: str | None = None) -> PolicyBuilder:
    """A gang policy that queues jobs; ``ns`` set makes it a PropagationPolicy."""
    return PolicyBuilder(name, ns)


def default_policies() -> tuple[Policy, ...]:
    """A ClusterPropagationPolicy that queues every PyTorchJob and batch Job."""
    return (policy("gang-queued").selects(*PYTORCH).selects(*BATCH_JOB).obj(),)


# -- the cycle -------------------------------------------------------------------------

_DEFAULT: Any = object()


def settings(*, strategy: PlacementStrategy = PlacementStrategy.BINPACK,
             **quotas: QuotaSettings) -> FleetSettings:
    """Fleet settings; quota settings by path with ``/`` written as ``__``."""
    return FleetSettings(quotas={k.replace("__", "/"): v for k, v in quotas.items()},
                         strategy=strategy)


def strict_fifo() -> QuotaSettings:
    return QuotaSettings(strategy=QueueStrategy.STRICT_FIFO)


def cycle_input(*, jobs: Iterable[Job | JobBuilder] = (),
                clusters: Iterable[MemberCluster | ClusterBuilder] = _DEFAULT,
                tree: QuotaTree | None = _DEFAULT,
                policies: Iterable[Policy | PolicyBuilder] = _DEFAULT,
                priority_classes: Mapping[str, int] | None = None,
                default_priority: int = 0,
                workload_priority_classes: Mapping[str, int] | None = None,
                prior: Iterable[PriorPlacement] = (),
                invalid: Iterable[InvalidJob] = (),
                broken_paths: Mapping[str, str] | None = None,
                source_time: str = SOURCE_TIME, now: str = NOW,
                settings: FleetSettings | None = None) -> CycleInput:
    """A ``CycleInput`` with sane defaults.

    Defaults: one cluster ``c1`` (one node, 96 cpu, 768Gi, 8 GPUs); a tree whose
    root holds 1000 cpu and 64 GPUs over one leaf per job namespace (min 0, no
    max of their own); the ``gang-queued`` ClusterPropagationPolicy.
    """
    built_jobs = tuple(j.obj() if isinstance(j, JobBuilder) else j for j in jobs)
    if clusters is _DEFAULT:
        clusters = (gpu_cluster("c1", 8),)
    if tree is _DEFAULT:
        namespaces = sorted({j.key.namespace for j in built_jobs} | {"default"})
        tree = simple_tree(*(quota(ns, ns=[ns]) for ns in namespaces))
    if policies is _DEFAULT:
        policies = default_policies()
    return CycleInput(
        jobs=built_jobs,
        tree=tree,
        clusters=tuple(c.obj() if isinstance(c, ClusterBuilder) else c for c in clusters),
        policies=tuple(p.obj() if isinstance(p, PolicyBuilder) else p for p in policies),
        priority_classes=dict(priority_classes or {}),
        default_priority=default_priority,
        workload_priority_classes=dict(workload_priority_classes or {}),
        prior={p.key: p for p in prior},
        source_time=source_time, now=now, invalid=tuple(invalid),
        broken_paths=dict(broken_paths or {}),
        settings=settings or FleetSettings())


def prior_of(decisions: Iterable[Decision]) -> list[PriorPlacement]:
    """The decisions as the next cycle reads them back from ``placements.yaml``
    (through the real item round trip)."""
    return [prior_from_item(decision_item(d)) for d in decisions]


def admitted_prior(j: Job, *, cluster: str, quota: str, admitted_at: str = SOURCE_TIME,
                   priority: int = 0, enqueued_at: str = SOURCE_TIME) -> PriorPlacement:
    """What the previous state said of ``j`` admitted to ``cluster``."""
    return PriorPlacement(
        key=j.key, phase=Phase.ADMITTED, enqueued_at=enqueued_at, path=j.path, blob=j.blob,
        quota=quota, priority=priority, cluster=cluster,
        pod_sets=tuple(PodSetCount(p.name, p.replicas) for p in j.pod_sets),
        requests=dict(j.requests), admitted_at=admitted_at, api_version=j.api_version)


def by_name(result: CycleResult) -> dict[str, Decision]:
    """Decisions by job name (tests use unique names)."""
    out = {d.key.name: d for d in result.decisions}
    assert len(out) == len(result.decisions), "job names must be unique in a test"
    return out


def phases(result: CycleResult) -> dict[str, Phase]:
    return {d.key.name: d.phase for d in result.decisions}


def quota_tree_yaml(total: str, children: str) -> str:
    """An ElasticQuotaTree in kube-system, as a fleet's file: its root's min and
    max ``total`` (a YAML flow mapping), then ``children``, the lines of the
    root's list of children."""
    return ("apiVersion: scheduling.sigs.k8s.io/v1beta1\nkind: ElasticQuotaTree\n"
            "metadata: {name: elasticquotatree, namespace: kube-system}\n"
            f"spec:\n  root:\n    name: root\n    min: {total}\n    max: {total}\n"
            f"    children:\n{children}")
