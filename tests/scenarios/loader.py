"""Scenario YAML -> ``CycleInput`` of core values (format: ``README.md`` here).

A scenario is a small fleet written in a few lines: the quota tree, the member
clusters, the jobs the previous state admitted and the jobs waiting, and the
outcome DESIGN.md §3 asks for. This module turns it into the exact values
``reconcile_cycle`` takes, so the suite exercises the pure core with no git,
no manifests and no clock. Quantities go through the same parser the fleet
reader uses (``parse_quantity_milli``) and the tree through ``build_tree``.

``round_trip`` feeds a cycle's decisions back as the next cycle's prior state
through ``placements.yaml`` (render, then read), as a second reconcile would.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from reconciler.core.cycle import CycleInput, CycleResult
from reconciler.core.model import (
    ClusterAffinity,
    FleetSettings,
    Job,
    JobKey,
    MemberCluster,
    Node,
    Phase,
    PlacementStrategy,
    PodSet,
    PodSetCount,
    Policy,
    PreemptionPolicy,
    PriorPlacement,
    QuotaSettings,
    ResourceSelector,
    Taint,
)
from reconciler.core.quota import QuotaSpec, QuotaTree, build_tree
from reconciler.core.resources import MAX_JOBS, PODS, Resources, add_into
from reconciler.fleet.inputs import QUEUE_STRATEGY_NAMES
from reconciler.fleet.state import read_placements, render_placements
from reconciler.jobkinds.base import parse_quantity_milli

SCENARIO_DIR = Path(__file__).parent
API_VERSION = "batch/v1"
GROUP, KIND = "batch", "Job"
DEFAULT_NOW = "2026-01-01T12:00:00Z"
DEFAULT_SOURCE_TIME = "2026-01-01T11:00:00Z"
GPU = "nvidia.com/gpu"
RESOURCE_SHORTHANDS = {"cpu": "cpu", "memory": "memory", "gpu": GPU}

TOP_KEYS = {"source", "name", "description", "now", "fleet", "tree", "clusters",
            "priorityClasses", "defaultPriority", "admitted", "pending", "expect"}
JOB_KEYS = {"name", "namespace", "quota", "priority", "replicas", "cpu", "memory", "gpu",
            "resources", "podSets", "preemptible", "enqueuedAt", "clusters",
            # admitted jobs only
            "cluster", "admittedAt", "preemptions", "preemptedBy"}
EXPECT_KEYS = {"admitted", "preempted", "queued", "inadmissible", "reasons"}


class ScenarioError(ValueError):
    """A scenario file that does not follow README.md."""


@dataclass(frozen=True)
class ScenarioJob:
    """One job of a scenario, with what the runner needs to check it."""

    name: str
    key: JobKey
    job: Job
    prior: PriorPlacement | None  # set for ``admitted`` jobs


@dataclass(frozen=True)
class Expectations:
    admitted: dict[str, str] = field(default_factory=dict)  # job -> cluster ("*" = any)
    preempted: dict[str, str] = field(default_factory=dict)  # victim -> preemptor
    queued: dict[str, str] = field(default_factory=dict)  # job -> reason regex
    inadmissible: dict[str, str] = field(default_factory=dict)  # job -> reason regex
    reasons: dict[str, str] = field(default_factory=dict)  # job -> reason regex (any phase)


@dataclass(frozen=True)
class Scenario:
    path: Path
    name: str
    source: str
    source_comment: str
    description: str
    cycle_input: CycleInput
    jobs: dict[str, ScenarioJob]
    expect: Expectations

    @property
    def tree(self) -> QuotaTree:
        assert self.cycle_input.tree is not None
        return self.cycle_input.tree


def scenario_paths() -> list[Path]:
    return sorted(SCENARIO_DIR.glob("*.yaml"))


def load_scenario(path: Path) -> Scenario:
    text = path.read_text()
    raw = yaml.safe_load(text)
    if not isinstance(raw, Mapping):
        raise ScenarioError(f"{path.name}: a scenario is a mapping")
    unknown = set(raw) - TOP_KEYS
    if unknown:
        raise ScenarioError(f"{path.name}: unknown keys {sorted(unknown)}")
    for key in ("source", "name", "tree", "clusters", "expect"):
        if key not in raw:
            raise ScenarioError(f"{path.name}: missing {key!r}")
    comment = _source_comment(text)

    tree_spec = _quota_spec(raw["tree"], "tree")
    tree, problems = build_tree(tree_spec, path=f"{path.name}#tree")
    if tree is None or problems:
        raise ScenarioError(f"{path.name}: invalid tree: "
                            + "; ".join(p.message for p in problems))
    classes = {str(k): int(v) for k, v in (raw.get("priorityClasses") or {}).items()}
    clusters = tuple(_cluster(c, f"clusters[{i}]") for i, c in enumerate(raw["clusters"]))
    settings = _settings(raw.get("fleet") or {}, tree, path.name)

    default_policy = Policy(
        name="scenario-gang-queued", namespace=None, path="policies/scenario.yaml", line=1,
        selectors=(ResourceSelector(api_version=API_VERSION, kind=KIND),),
        gang=True, queued=True)
    policies: list[Policy] = [default_policy]
    jobs: dict[str, ScenarioJob] = {}
    prior: dict[JobKey, PriorPlacement] = {}
    for section in ("admitted", "pending"):
        for i, entry in enumerate(raw.get(section) or []):
            where = f"{section}[{i}]"
            sj, pin = _job(entry, where, admitted=section == "admitted", tree=tree,
                           classes=classes, default_priority=int(raw.get("defaultPriority", 0)))
            if sj.name in jobs:
                raise ScenarioError(f"{path.name}: job name {sj.name!r} is used twice")
            jobs[sj.name] = sj
            if sj.prior is not None:
                prior[sj.key] = sj.prior
            if pin is not None:
                policies.append(pin)

    inp = CycleInput(
        jobs=tuple(sj.job for sj in jobs.values()), tree=tree, clusters=clusters,
        policies=tuple(policies), priority_classes=classes,
        default_priority=int(raw.get("defaultPriority", 0)), workload_priority_classes={},
        prior=prior, source_time=DEFAULT_SOURCE_TIME, now=str(raw.get("now", DEFAULT_NOW)),
        settings=settings)
    expect = _expectations(raw["expect"], jobs, path.name)
    return Scenario(path=path, name=str(raw["name"]), source=str(raw["source"] or ""),
                    source_comment=comment, description=str(raw.get("description") or ""),
                    cycle_input=inp, jobs=jobs, expect=expect)


def round_trip(inp: CycleInput, result: CycleResult) -> CycleInput:
    """The next reconcile's input: same fleet, prior state read from ``placements.yaml``."""
    data = render_placements(result.decisions)
    prior, problems = read_placements(data)
    assert not problems, problems
    return replace(inp, prior=prior)


# -- parts ---------------------------------------------------------------------


def _source_comment(text: str) -> str:
    for line in text.splitlines():
        if not line.strip():
            continue
        match = re.match(r"#\s*source:\s*(.+)$", line.strip())
        return match.group(1).strip() if match else ""
    return ""


def _quantities(raw: Any, where: str) -> Resources:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ScenarioError(f"{where} must be a mapping of resource names to quantities")
    out: Resources = {}
    for name, value in raw.items():
        out[RESOURCE_SHORTHANDS.get(str(name), str(name))] = parse_quantity_milli(
            str(value), f"{where}.{name}")
    return out


def _quota_spec(raw: Any, where: str) -> QuotaSpec:
    if not isinstance(raw, Mapping) or "name" not in raw:
        raise ScenarioError(f"{where}: a quota needs a name")
    children = tuple(_quota_spec(c, f"{where}.children[{i}]")
                     for i, c in enumerate(raw.get("children") or []))
    return QuotaSpec(name=str(raw["name"]), min=_quantities(raw.get("min"), f"{where}.min"),
                     max=_quantities(raw.get("max"), f"{where}.max"),
                     namespaces=tuple(str(n) for n in raw.get("namespaces") or ()),
                     children=children)


def _taints(raw: Any) -> tuple[Taint, ...]:
    return tuple(Taint(key=str(t["key"]), value=str(t.get("value", "")),
                       effect=str(t.get("effect", "NoSchedule"))) for t in raw or ())


def _labels(raw: Any) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(k), str(v)) for k, v in (raw or {}).items()))


def _cluster(raw: Any, where: str) -> MemberCluster:
    if not isinstance(raw, Mapping) or "name" not in raw:
        raise ScenarioError(f"{where}: a cluster needs a name")
    nodes: list[Node] = []
    for i, n in enumerate(raw.get("nodes") or []):
        nodes.append(Node(name=str(n.get("name", f"n{i}")),
                          allocatable=_quantities(n.get("allocatable"),
                                                  f"{where}.nodes[{i}].allocatable"),
                          labels=_labels(n.get("labels")), taints=_taints(n.get("taints"))))
    for g in raw.get("nodeGroups") or []:
        for j in range(int(g.get("count", 1))):
            nodes.append(Node(name=f"{g['name']}-{j}",
                              allocatable=_quantities(g.get("allocatable"), f"{where}.nodeGroups"),
                              labels=_labels(g.get("labels")), taints=_taints(g.get("taints"))))
    caps = raw.get("capabilities")
    return MemberCluster(
        name=str(raw["name"]), labels=_labels(raw.get("labels")),
        resource_reservation=bool(raw.get("resourceReservation", True)),
        capabilities=tuple(str(c) for c in caps) if caps is not None else None,
        taints=_taints(raw.get("taints")), reserved=_quantities(raw.get("reserved"),
                                                                f"{where}.reserved"),
        nodes=tuple(nodes))


def _settings(raw: Mapping[str, Any], tree: QuotaTree, file: str) -> FleetSettings:
    quotas: dict[str, QuotaSettings] = {}
    for name, qraw in (raw.get("quotas") or {}).items():
        path = name if name in tree.nodes else tree.by_alias.get(str(name))
        if path is None:
            raise ScenarioError(f"{file}: fleet.quotas names {name!r}, no quota of the tree")
        qraw = qraw or {}
        strategy = str(qraw.get("queueStrategy", "BestEffortFIFO"))
        if strategy not in QUEUE_STRATEGY_NAMES:
            raise ScenarioError(f"{file}: queueStrategy {strategy!r} is unknown")
        quotas[path] = QuotaSettings(
            strategy=QUEUE_STRATEGY_NAMES[strategy],
            preemption=PreemptionPolicy(str(qraw.get("preemption", "LowerPriority"))),
            weight=int(float(qraw.get("weight", 1)) * 1000))
    strategy = PlacementStrategy(str(raw.get("placementStrategy", "binpack")))
    return FleetSettings(quotas=quotas, strategy=strategy)


def _pod_sets(raw: Mapping[str, Any], where: str) -> tuple[PodSet, ...]:
    def per_pod(entry: Mapping[str, Any], at: str) -> Resources:
        res = _quantities(entry.get("resources"), f"{at}.resources")
        for short, name in RESOURCE_SHORTHANDS.items():
            if short in entry:
                res[name] = parse_quantity_milli(str(entry[short]), f"{at}.{short}")
        return res

    if raw.get("podSets"):
        return tuple(PodSet(name=str(ps.get("name", f"set{i}")),
                            replicas=int(ps.get("replicas", 1)),
                            per_pod=per_pod(ps, f"{where}.podSets[{i}]"))
                     for i, ps in enumerate(raw["podSets"]))
    return (PodSet(name="worker", replicas=int(raw.get("replicas", 1)),
                   per_pod=per_pod(raw, where)),)


def _job(raw: Any, where: str, *, admitted: bool, tree: QuotaTree, classes: dict[str, int],
         default_priority: int) -> tuple[ScenarioJob, Policy | None]:
    if not isinstance(raw, Mapping) or "name" not in raw:
        raise ScenarioError(f"{where}: a job needs a name")
    unknown = set(raw) - JOB_KEYS
    if unknown:
        raise ScenarioError(f"{where}: unknown job keys {sorted(unknown)}")
    name = str(raw["name"])
    namespace = str(raw.get("namespace", "default"))
    key = JobKey(GROUP, KIND, namespace, name)
    pod_sets = _pod_sets(raw, where)
    requests: Resources = {}
    for ps in pod_sets:
        add_into(requests, ps.per_pod, ps.replicas)
    requests[PODS] = 1000 * sum(ps.replicas for ps in pod_sets)
    requests[MAX_JOBS] = 1000
    requests = {k: v for k, v in sorted(requests.items()) if v}
    priority_class = raw.get("priority")
    preemptible = bool(raw.get("preemptible", True))
    labels: list[tuple[str, str]] = []
    if raw.get("quota") is not None:
        labels.append(("quota.scheduling.alibabacloud.com/name", str(raw["quota"])))
    if not preemptible:
        labels.append(("quota.scheduling.alibabacloud.com/preemptible", "false"))
    enqueued = raw.get("enqueuedAt") or (raw.get("admittedAt") if admitted else None)
    job = Job(key=key, api_version=API_VERSION, path=f"jobs/{namespace}/{name}.yaml", line=1,
              blob=f"blob-{namespace}-{name}", pod_sets=pod_sets, requests=requests,
              labels=tuple(sorted(labels)),
              quota_name=str(raw["quota"]) if raw.get("quota") is not None else None,
              priority_class=str(priority_class) if priority_class is not None else None,
              preemptible=preemptible, created_at=str(enqueued) if enqueued else None)
    prior = None
    if admitted:
        for required in ("cluster", "admittedAt"):
            if required not in raw:
                raise ScenarioError(f"{where}: an admitted job needs {required!r}")
        quota, why = tree.bind(namespace, job.quota_name)
        if quota is None:
            raise ScenarioError(f"{where}: {why}")
        priority = classes[str(priority_class)] if priority_class is not None else default_priority
        prior = PriorPlacement(
            key=key, phase=Phase.ADMITTED, enqueued_at=str(enqueued), path=job.path,
            blob=job.blob, quota=quota, priority=priority, cluster=str(raw["cluster"]),
            pod_sets=tuple(PodSetCount(p.name, p.replicas) for p in pod_sets),
            requests=dict(requests), admitted_at=str(raw["admittedAt"]),
            preempted_by=raw.get("preemptedBy"), preemptions=int(raw.get("preemptions", 0)),
            reason="admitted", api_version=API_VERSION)
    elif "cluster" in raw or "admittedAt" in raw:
        raise ScenarioError(f"{where}: only admitted jobs have a cluster and admittedAt")
    pin = None
    if raw.get("clusters"):
        pin = Policy(name=f"pin-{name}", namespace=namespace, path="policies/pins.yaml",
                     line=1, selectors=(ResourceSelector(api_version=API_VERSION, kind=KIND,
                                                         name=name),),
                     gang=True, queued=True,
                     affinity=ClusterAffinity(cluster_names=tuple(str(c) for c in
                                                                  raw["clusters"])))
    return ScenarioJob(name=name, key=key, job=job, prior=prior), pin


def _expectations(raw: Any, jobs: Mapping[str, ScenarioJob], file: str) -> Expectations:
    if not isinstance(raw, Mapping):
        raise ScenarioError(f"{file}: expect must be a mapping")
    unknown = set(raw) - EXPECT_KEYS
    if unknown:
        raise ScenarioError(f"{file}: unknown expect keys {sorted(unknown)}")
    parts: dict[str, dict[str, str]] = {}
    for key in EXPECT_KEYS:
        section = {str(k): str(v) for k, v in (raw.get(key) or {}).items()}
        for name in section:
            if name not in jobs:
                raise ScenarioError(f"{file}: expect.{key} names unknown job {name!r}")
        parts[key] = section
    for victim, by in parts["preempted"].items():
        if by not in jobs:
            raise ScenarioError(f"{file}: {victim!r} is preempted by unknown job {by!r}")
    return Expectations(**parts)
