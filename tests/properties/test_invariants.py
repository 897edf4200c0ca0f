"""Invariants of ``reconcile_cycle`` over random fleets (hypothesis).

A fleet is a random quota tree (depth up to 3, cpu and sometimes GPUs,
sometimes a ``kube-queue/max-jobs`` limit), one to three member clusters
(node-level or free-sum fit, sometimes ``reserved``), per-quota settings
(queue strategy, preemption policy, weight) and jobs of random size, priority,
preemptibility and pinning. Jobs arrive in two or three batches; between
batches some jobs finish (leave the source), and each reconcile starts from the
state the previous one wrote (``placements.yaml``, rendered and read back).

After every reconcile, checked from the decisions alone (not the core's own
bookkeeping):

* every quota and resource in its max: used <= max; at the root: used <= min;
* every quota: non-preemptible usage <= min, for every resource the quota
  limits (its min, and its max except the counting resources ``pods`` and
  ``kube-queue/max-jobs``, which min limits only when it names them; DESIGN §3);
* every member cluster: the requests of the jobs placed there <= its capacity
  (allocatable - reserved), and each pod fits a node when it packs per node;
* every admitted job is whole (all pod sets, all replicas) on one candidate cluster;
* a job admitted before is still admitted where it ran (same admission time)
  unless it was preempted; a victim left its cluster, was preempted once, is
  never non-preemptible, and its preemptor is a job of the fleet (it runs at the
  end of the cycle unless a later preemption in the same cycle took its place:
  ``PREEMPTOR_LATER_EVICTED`` counts those);
* reconciling twice changes nothing: the next reconcile, on the state just
  written, changes no decision (phase, cluster, pod sets, times, position,
  preemption record; the reason text is checked by the scenario suite).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from hypothesis import HealthCheck, given, settings
from hypothesis import Phase as Stage
from hypothesis import strategies as st

from reconciler.core import cycle
from reconciler.core.cycle import Ahead, CycleInput, CycleResult, prepare, reconcile_cycle
from reconciler.core.gang import DEFAULT_PODS_PER_NODE, job_cluster_total
from reconciler.core.model import (
    ClusterAffinity,
    Decision,
    FleetSettings,
    Job,
    JobKey,
    MemberCluster,
    Node,
    Phase,
    PodSet,
    PreemptionPolicy,
    PriorPlacement,
    QueueStrategy,
    QuotaSettings,
    ResourceSelector,
)
from reconciler.core.model import Policy as PropagationPolicy
from reconciler.core.quota import COUNTING, QuotaSpec, QuotaTree, build_tree
from reconciler.core.resources import MAX_JOBS, PODS, Resources, add_into, format_resources
from reconciler.fleet.state import read_placements, render_placements

CPU, GPU = "cpu", "nvidia.com/gpu"
M = 1000  # milli-units per unit
PRIORITY_CLASSES = {"low": 10, "mid": 50, "high": 100}
API_VERSION = "batch/v1"
# The same 400 fleets every run (a run's verdict depends on the code alone), unless
# FLEETQ_EXPLORE=1 asks for new ones, and larger: more jobs a batch, more batches.
# That is how the fleets of the last tests in this file were found.
EXPLORE = bool(os.environ.get("FLEETQ_EXPLORE"))
JOBS_A_BATCH, BATCHES = (14, (3, 5)) if EXPLORE else (8, (2, 3))


# -- strategies ------------------------------------------------------------------


@st.composite
def quota_trees(draw: st.DrawFn, use_gpu: bool) -> QuotaSpec:
    total = {CPU: draw(st.integers(4, 16)) * M}
    if use_gpu:
        total[GPU] = draw(st.integers(0, 6)) * M
    counter = iter(range(100))

    def children(parent_min: Resources, parent_max: Resources, depth: int) -> tuple[QuotaSpec, ...]:
        count = draw(st.integers(1, 3)) if depth == 0 else draw(st.integers(0, 3))
        if depth >= 2:
            count = 0
        budget = dict(parent_min)
        out = []
        for _ in range(count):
            name = f"q{next(counter)}"
            lo: Resources = {}
            hi: Resources = {}
            for r, cap in parent_max.items():
                # Mostly a fair share of what is left, sometimes nothing (a pure borrower).
                share = budget.get(r, 0) // M // max(1, count - len(out))
                lo[r] = draw(st.sampled_from([0, share, share, budget.get(r, 0) // M])) * M
                budget[r] = budget.get(r, 0) - lo[r]
                if draw(st.integers(0, 4)):  # mostly limited; sometimes max is left out
                    hi[r] = cap if draw(st.integers(0, 3)) else draw(
                        st.integers(lo[r] // M, cap // M)) * M
            if draw(st.integers(0, 5)) == 0:
                hi[MAX_JOBS] = draw(st.integers(1, 3)) * M
            kids = children(lo, {r: hi.get(r, parent_max[r]) for r in parent_max}, depth + 1)
            if not any(lo.values()) and draw(st.booleans()):
                lo = {}  # no min at all: "missing from min means 0" (DESIGN §3)
            namespaces = () if kids else (name,)
            out.append(QuotaSpec(name=name, min=lo, max=hi, namespaces=namespaces,
                                 children=kids))
        return tuple(out)

    return QuotaSpec(name="root", min=dict(total), max=dict(total),
                     children=children(total, total, 0))


@st.composite
def member_clusters(draw: st.DrawFn, use_gpu: bool) -> tuple[MemberCluster, ...]:
    out = []
    for i in range(draw(st.integers(1, 3))):
        nodes = []
        for j in range(draw(st.integers(1, 3))):
            alloc = {CPU: draw(st.integers(2, 8)) * M}
            if use_gpu:
                alloc[GPU] = draw(st.integers(0, 4)) * M
            if draw(st.integers(0, 7)) == 0:
                alloc[PODS] = draw(st.integers(1, 4)) * M
            nodes.append(Node(name=f"n{j}", allocatable=alloc))
        reserved = {CPU: draw(st.integers(0, 2)) * M} if draw(st.integers(0, 3)) == 0 else {}
        out.append(MemberCluster(name=f"c{i}", resource_reservation=draw(st.booleans()),
                                 reserved=reserved, nodes=tuple(nodes)))
    return tuple(out)


@dataclass(frozen=True)
class JobPlan:
    job: Job
    pin: str | None  # a cluster name the job is pinned to


@st.composite
def job_plans(draw: st.DrawFn, *, leaves: list[str], clusters: tuple[MemberCluster, ...],
              use_gpu: bool, prefix: str, classes: list[str]) -> list[JobPlan]:
    out = []
    for i in range(draw(st.integers(0, JOBS_A_BATCH))):
        namespace = draw(st.sampled_from(leaves))
        pod_sets = []
        for k in range(draw(st.sampled_from([1, 1, 1, 2]))):
            per_pod = {CPU: draw(st.integers(1, 4)) * 500}
            if use_gpu and draw(st.integers(0, 3)) == 0:
                per_pod[GPU] = draw(st.integers(1, 2)) * M
            pod_sets.append(PodSet(name=f"set{k}", replicas=draw(st.integers(1, 2)),
                                   per_pod=per_pod))
        requests: Resources = {}
        for ps in pod_sets:
            add_into(requests, ps.per_pod, ps.replicas)
        requests[PODS] = M * sum(ps.replicas for ps in pod_sets)
        requests[MAX_JOBS] = M
        preemptible = draw(st.integers(0, 5)) > 0
        minute = draw(st.integers(0, 9))
        created = f"2026-01-01T10:0{minute}:00Z" if draw(st.integers(0, 3)) else None
        name = f"{prefix}-{i}"
        job = Job(key=JobKey("batch", "Job", namespace, name), api_version=API_VERSION,
                  path=f"jobs/{namespace}/{name}.yaml", line=1, blob=f"b-{name}",
                  pod_sets=tuple(pod_sets), requests=dict(sorted(requests.items())),
                  priority_class=draw(st.sampled_from(classes)),
                  preemptible=preemptible, created_at=created,
                  labels=(() if preemptible else
                          (("quota.scheduling.alibabacloud.com/preemptible", "false"),)))
        pin = draw(st.sampled_from([None, None, *(c.name for c in clusters)]))
        out.append(JobPlan(job=job, pin=pin))
    return out


@dataclass(frozen=True)
class Fleet:
    tree: QuotaTree
    clusters: tuple[MemberCluster, ...]
    settings: FleetSettings
    batches: list[list[JobPlan]]
    finished: list[set[str]]  # job names that leave the source before each later batch


def quota_settings(draw: st.DrawFn, tree: QuotaTree) -> dict[str, QuotaSettings]:
    """Queue settings (strategy, preemption, weight) for some of ``tree``'s leaves."""
    quotas = {}
    for leaf in tree.leaves():
        if draw(st.booleans()):
            quotas[leaf.path] = QuotaSettings(
                strategy=draw(st.sampled_from(list(QueueStrategy))),
                preemption=draw(st.sampled_from(list(PreemptionPolicy))),
                weight=draw(st.sampled_from([500, 1000, 2000])))
    return quotas


@st.composite
def fleets(draw: st.DrawFn) -> Fleet:
    use_gpu = draw(st.booleans())
    spec = draw(quota_trees(use_gpu))
    tree, problems = build_tree(spec, path="tree")
    assert tree is not None and not problems, problems
    clusters = draw(member_clusters(use_gpu))
    leaves = sorted(n.path.rsplit("/", 1)[-1] for n in tree.leaves())
    quotas = quota_settings(draw, tree)
    batches, finished = [], []
    names: list[str] = []
    for b in range(draw(st.integers(*BATCHES))):
        if b:
            finished.append(set(draw(st.lists(st.sampled_from(names), unique=True)))
                            if names else set())
        # Later batches lean to higher priorities, so that they preempt what runs.
        classes = ["low", "mid", "high"] if b == 0 else ["low", "mid", "high", "high"]
        batch = draw(job_plans(leaves=leaves, clusters=clusters, use_gpu=use_gpu,
                               prefix=f"j{b}", classes=classes))
        names.extend(p.job.key.name for p in batch)
        batches.append(batch)
    return Fleet(tree=tree, clusters=clusters, settings=FleetSettings(quotas=quotas),
                 batches=batches, finished=finished)


# -- the fleet, step by step -------------------------------------------------------


def cycle_input(fleet: Fleet, plans: list[JobPlan], prior: dict, step: int) -> CycleInput:
    default = PropagationPolicy(
        name="gang-queued", namespace=None, path="p.yaml", line=1,
        selectors=(ResourceSelector(api_version=API_VERSION, kind="Job"),), gang=True,
        queued=True)
    pins = tuple(
        PropagationPolicy(name=f"pin-{p.job.key.name}", namespace=p.job.key.namespace,
                          path="p.yaml", line=1,
                          selectors=(ResourceSelector(api_version=API_VERSION, kind="Job",
                                                      name=p.job.key.name),),
                          gang=True, queued=True, affinity=ClusterAffinity(cluster_names=(p.pin,)))
        for p in plans if p.pin is not None)
    return CycleInput(
        jobs=tuple(p.job for p in plans), tree=fleet.tree, clusters=fleet.clusters,
        policies=(default, *pins), priority_classes=dict(PRIORITY_CLASSES), default_priority=0,
        workload_priority_classes={}, prior=prior,
        source_time=f"2026-01-01T1{step}:00:00Z", now=f"2026-01-01T1{step}:30:00Z",
        settings=fleet.settings)


def round_trip(result: CycleResult) -> dict:
    prior, problems = read_placements(render_placements(result.decisions))
    assert not problems, problems
    return prior


def check_invariants(inp: CycleInput, result: CycleResult) -> None:
    tree = inp.tree
    assert tree is not None
    jobs = {j.key: j for j in inp.jobs}
    clusters = {c.name: c for c in inp.clusters}
    pinned = {p.selectors[0].name: p.affinity.cluster_names for p in inp.policies
              if p.affinity is not None}
    decisions: dict[JobKey, Decision] = {d.key: d for d in result.decisions}
    used: dict[str, Resources] = {p: {} for p in tree.nodes}
    np_used: dict[str, Resources] = {p: {} for p in tree.nodes}
    placed: dict[str, Resources] = {c: {} for c in clusters}

    for key, d in decisions.items():
        job = jobs[key]
        if d.phase is not Phase.ADMITTED:
            assert d.cluster is None, f"{key} is {d.phase} but on {d.cluster}"
            continue
        # Whole, on one candidate cluster.
        assert d.cluster in clusters, f"{key} admitted to unknown cluster {d.cluster}"
        assert [(p.name, p.replicas) for p in d.pod_sets] == [
            (ps.name, ps.replicas) for ps in job.pod_sets], f"{key} is not placed whole"
        if key.name in pinned:
            assert d.cluster in pinned[key.name], f"{key} ran off its pinned cluster"
        add_into(placed[d.cluster], job_cluster_total(job.pod_sets))
        cluster = clusters[d.cluster]
        if cluster.resource_reservation:
            for ps in job.pod_sets:
                pod = {**ps.per_pod, PODS: M}
                assert any(all(v <= {PODS: DEFAULT_PODS_PER_NODE, **n.allocatable}.get(r, 0)
                               for r, v in pod.items()) for n in cluster.nodes), (
                    f"{key}: a {ps.name} pod fits no node of {cluster.name}")
        assert d.quota is not None
        for node in tree.ancestry(d.quota):
            add_into(used[node.path], job.requests)
            if not job.preemptible:
                add_into(np_used[node.path], job.requests)

    for path, node in tree.nodes.items():
        for r, limit in node.max.items():
            assert used[path].get(r, 0) <= limit, (
                f"quota {path} {r}: used {used[path].get(r, 0)} > max {limit}")
        if node.parent is None:
            for r, limit in node.min.items():
                assert used[path].get(r, 0) <= limit, (
                    f"root {r}: used {used[path].get(r, 0)} > min {limit}")
        limited = set(node.min) | {r for r in node.max if r not in COUNTING}
        for r in limited:
            assert np_used[path].get(r, 0) <= node.min.get(r, 0), (
                f"quota {path} {r}: non-preemptible {np_used[path].get(r, 0)} > "
                f"min {node.min.get(r, 0)}")

    for name, cluster in clusters.items():
        capacity: Resources = {}
        for n in cluster.nodes:
            add_into(capacity, {PODS: DEFAULT_PODS_PER_NODE, **n.allocatable})
        for r, v in cluster.reserved.items():
            capacity[r] = capacity.get(r, 0) - v
        for r, v in placed[name].items():
            assert v <= capacity.get(r, 0), (
                f"cluster {name} {r}: placed {v} > capacity {capacity.get(r, 0)}")

    # No silent eviction; victims are preemptible; preemptors run.
    for key, prior in inp.prior.items():
        if key not in decisions or prior.phase is not Phase.ADMITTED:
            continue
        d = decisions[key]
        if d.preemptions == prior.preemptions:
            assert d.phase is Phase.ADMITTED and d.cluster == prior.cluster, (
                f"{key} left {prior.cluster} without being preempted: {d.phase} {d.reason}")
            assert d.admitted_at == prior.admitted_at, f"{key} kept running, admittedAt changed"
            continue
        assert d.preemptions == prior.preemptions + 1, f"{key} preempted twice in one cycle"
        assert not (d.phase is Phase.ADMITTED and d.cluster == prior.cluster), (
            f"{key} is recorded as preempted by {d.preempted_by} but never left {d.cluster}")
        assert jobs[key].preemptible, f"non-preemptible {key} was preempted"
        by = next((k for k in decisions if f"{k.kind} {k.namespace}/{k.name}" == d.preempted_by),
                  None)
        # The preemptor was admitted when it evicted the job; it may have lost its own
        # place later in the same cycle (then the victim is put back when it still fits).
        assert by is not None, f"{key} preempted by {d.preempted_by}, which is no job"
        if decisions[by].phase is not Phase.ADMITTED:
            PREEMPTOR_LATER_EVICTED[0] += 1


def describe(fleet: Fleet, step: int, result: CycleResult | None) -> str:
    """The fleet in a few lines, for a failure message (examples are not shrunk)."""
    lines = ["fleet:"]
    for path, node in sorted(fleet.tree.nodes.items()):
        lines.append(f"  quota {path} min={format_resources(node.min)} "
                     f"max={format_resources(node.max)}")
    for c in fleet.clusters:
        nodes = ", ".join(str(format_resources(n.allocatable)) for n in c.nodes)
        lines.append(f"  cluster {c.name} reservation={c.resource_reservation} "
                     f"reserved={format_resources(c.reserved)} nodes=[{nodes}]")
    for path, qs in sorted(fleet.settings.quotas.items()):
        lines.append(f"  settings {path}: {qs.strategy.value} {qs.preemption.value} "
                     f"weight={qs.weight}")
    for b, batch in enumerate(fleet.batches):
        if b:
            lines.append(f"  before batch {b} finished: {sorted(fleet.finished[b - 1])}")
        for p in batch:
            j = p.job
            sets = " + ".join(f"{ps.replicas}x{format_resources(ps.per_pod)}"
                              for ps in j.pod_sets)
            lines.append(f"  batch {b}: {j.key.namespace}/{j.key.name} {j.priority_class} "
                         f"{'preemptible' if j.preemptible else 'NON-preemptible'} {sets} "
                         f"created={j.created_at} pin={p.pin}")
    if result is not None:
        lines.append(f"decisions at step {step}:")
        for d in result.decisions:
            lines.append(f"  {d.key.namespace}/{d.key.name} {d.phase.value} {d.cluster} "
                         f"preemptedBy={d.preempted_by} x{d.preemptions} {d.reason}")
    return "\n".join(lines)


PREEMPTOR_LATER_EVICTED = [0]


def _decisions(result: CycleResult) -> dict[JobKey, Decision]:
    return {d.key: replace(d, reason="") for d in result.decisions}


def _queued(prior: dict[JobKey, PriorPlacement]) -> frozenset[JobKey]:
    return frozenset(k for k, p in prior.items() if p.phase is Phase.QUEUED)


def _try_always(inp: CycleInput, try_always: bool = True) -> CycleResult:
    """The cycle with every failed job tried again at each pass (or, with
    ``try_always`` false, as a cold reconcile runs it: nothing parked)."""
    was = cycle.TRY_ALWAYS, cycle.PARK_ALWAYS, cycle.CHECK_PARKED
    cycle.TRY_ALWAYS, cycle.PARK_ALWAYS, cycle.CHECK_PARKED = try_always, False, False
    try:
        return reconcile_cycle(inp)
    finally:
        cycle.TRY_ALWAYS, cycle.PARK_ALWAYS, cycle.CHECK_PARKED = was


def _with_max_changed(tree: QuotaTree | None, step: int
                      ) -> tuple[str | None, QuotaTree | None]:
    """(quota, tree): the tree with one quota below the root (chosen by
    ``step``) whose max is doubled, or halved down to no less than its min;
    (None, tree) when no such quota has a max."""
    if tree is None:
        return None, tree
    quotas = [q for q in sorted(tree.nodes) if q != tree.root and tree.nodes[q].max]
    if not quotas:
        return None, tree
    node = tree.nodes[quotas[step % len(quotas)]]
    new = {r: v * 2 if step % 2 else max(node.min.get(r, 0), v // 2)
           for r, v in node.max.items()}
    return node.path, replace(tree, nodes={**tree.nodes, node.path: replace(node, max=new)})


def run(fleet: Fleet) -> None:
    plans: list[JobPlan] = []
    prior: dict = {}
    ahead: Ahead | None = None  # steps 1-2 done ahead on the input expected next
    for step, batch in enumerate(fleet.batches):
        if step:
            gone = fleet.finished[step - 1]
            plans = [p for p in plans if p.job.key.name not in gone]
        plans = plans + batch
        inp = cycle_input(fleet, plans, prior, step)
        result = None
        try:
            result = reconcile_cycle(inp)
            check_invariants(inp, result)
            # Trying every failed job again at each pass gives the same decisions:
            # the cycle never passes over a job that could have fit.
            eager = _try_always(inp)
            for got in (result, _try_always(inp, try_always=False)):
                assert eager.decisions == got.decisions, (
                    f"step {step}: a job passed over could have fit:\n"
                    + "\n".join(f"{a}\n{b}" for a, b in zip(got.decisions, eager.decisions,
                                                             strict=True) if a != b))
            # Incremental: the jobs the previous state queued, counted as settled,
            # give exactly the same decisions.
            warm = reconcile_cycle(replace(inp, settled=_queued(inp.prior)))
            assert warm.decisions == result.decisions, f"step {step}: settled jobs changed it"
            # Steps done ahead on the input the last step expected next: taken
            # up or not (CHECK_AHEAD compares), the same decisions.
            if ahead is not None:
                got = reconcile_cycle(replace(inp, settled=_queued(inp.prior)), ahead)
                assert got.decisions == result.decisions, f"step {step}: ahead changed it"
            prior = round_trip(result)
            expected = replace(inp, prior=prior)
            ahead = prepare(expected)
            again = reconcile_cycle(expected)
            before = _decisions(result)
            for d in again.decisions:
                assert replace(d, reason="") == before[d.key], (
                    f"step {step}: reconciling again changed {d.key}:\n{before[d.key]}\n{d}")
            again_warm = reconcile_cycle(replace(inp, prior=prior, settled=_queued(prior)))
            assert again_warm.decisions == again.decisions, f"step {step}: settled changed it"
            # Nothing changed: the steps done ahead are taken up.
            once = prepare(expected)
            assert once is not None
            again_ahead = reconcile_cycle(replace(expected, settled=_queued(prior)), once)
            assert again_ahead.ahead and again_ahead.decisions == again.decisions, (
                f"step {step}: steps done ahead changed it")
            # A quota's max changed: the queued jobs of the quotas not below it,
            # settled as the pipeline settles them (pipeline._max_changed), give
            # the same decisions.
            changed, tree = _with_max_changed(inp.tree, step)
            if changed is not None:
                moved = replace(inp, prior=prior, tree=tree)
                below = f"{changed}/"
                settled = frozenset(k for k in _queued(prior)
                                    if not f"{prior[k].quota}/".startswith(below))
                full = reconcile_cycle(moved)
                assert reconcile_cycle(replace(moved, settled=settled)).decisions == \
                    full.decisions, f"step {step}: settled changed it after {changed}'s max"
                # ... and so do the steps done ahead before the max changed, taken
                # up under the new tree (CHECK_AHEAD compares them too)
                got = reconcile_cycle(replace(moved, settled=settled), prepare(expected))
                assert got.ahead and got.decisions == full.decisions, (
                    f"step {step}: steps done ahead changed it after {changed}'s max")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{describe(fleet, step, result)}") from None


# Shrinking a failing fleet can take minutes; by default the example is reported
# as found (the message describes it). FLEETQ_SHRINK=1 shrinks it.
STAGES = [s for s in Stage if s is not Stage.shrink or os.environ.get("FLEETQ_SHRINK")]


@settings(max_examples=400, deadline=None, phases=STAGES, report_multiple_bugs=False,
          suppress_health_check=[HealthCheck.too_slow], derandomize=not EXPLORE,
          database=None if not EXPLORE else settings.default.database)
@given(fleets())
def test_reconcile_keeps_the_invariants(fleet: Fleet) -> None:
    run(fleet)


def _plan(name: str, namespace: str, priority: str, sets: list[tuple[int, Resources]], *,
          created: str | None, pin: str | None, preemptible: bool = True) -> JobPlan:
    pod_sets = tuple(PodSet(name=f"set{k}", replicas=n, per_pod=per_pod)
                     for k, (n, per_pod) in enumerate(sets))
    requests: Resources = {}
    for ps in pod_sets:
        add_into(requests, ps.per_pod, ps.replicas)
    requests[PODS] = M * sum(ps.replicas for ps in pod_sets)
    requests[MAX_JOBS] = M
    job = Job(key=JobKey("batch", "Job", namespace, name), api_version=API_VERSION,
              path=f"jobs/{namespace}/{name}.yaml", line=1, blob=f"b-{name}",
              pod_sets=pod_sets, requests=dict(sorted(requests.items())),
              priority_class=priority, preemptible=preemptible,
              created_at=f"2026-01-01T10:{created}:00Z" if created else None,
              labels=(() if preemptible else
                      (("quota.scheduling.alibabacloud.com/preemptible", "false"),)))
    return JobPlan(job=job, pin=pin)


def test_a_victim_is_put_back_only_where_the_free_sum_still_holds_it() -> None:
    """Found by the property test: a victim whose preemptor lost its place was
    put back on its recorded node, which had room, on a cluster whose free sum
    (less what it reserves) did not: c0 ended 1 cpu over."""
    tree, problems = build_tree(QuotaSpec(
        name="root", min={CPU: 9 * M, GPU: 5 * M}, max={CPU: 9 * M, GPU: 5 * M},
        children=(QuotaSpec(name="q0", min={CPU: 9 * M, GPU: 5 * M},
                            max={CPU: 9 * M, GPU: 5 * M}, children=(
            QuotaSpec(name="q1", min={CPU: 9 * M, GPU: M}, max={GPU: 4 * M},
                      namespaces=("q1",)),
            QuotaSpec(name="q2", min={CPU: 0, GPU: 2 * M}, max={GPU: 5 * M},
                      namespaces=("q2",)),
            QuotaSpec(name="q3", min={}, max={CPU: 9 * M}, namespaces=("q3",)))),)),
        path="tree")
    assert tree is not None and not problems
    clusters = (
        MemberCluster(name="c0", resource_reservation=True, reserved={CPU: 2 * M},
                      nodes=(Node(name="n0", allocatable={CPU: 5 * M, GPU: 0}),)),
        MemberCluster(name="c1", resource_reservation=True,
                      nodes=(Node(name="n0", allocatable={CPU: 6 * M, GPU: 0}),)))
    fleet = Fleet(tree=tree, clusters=clusters, settings=FleetSettings(), batches=[
        [_plan("j0-0", "q3", "high", [(2, {CPU: 2 * M, GPU: M})], created="07", pin=None),
         _plan("j0-1", "q1", "mid", [(2, {CPU: 1500})], created="02", pin=None),
         _plan("j0-2", "q2", "low", [(1, {CPU: M, GPU: 2 * M})], created=None, pin="c1"),
         _plan("j0-3", "q1", "low", [(1, {CPU: 2 * M})], created="04", pin=None),
         _plan("j0-4", "q3", "mid", [(2, {CPU: M})], created="09", pin="c0"),
         _plan("j0-5", "q1", "low", [(2, {CPU: 1500}), (2, {CPU: M})], created="07",
               pin=None),
         _plan("j0-6", "q3", "mid", [(1, {CPU: 2 * M})], created="08", pin=None,
               preemptible=False),
         _plan("j0-7", "q3", "high", [(2, {CPU: 500})], created="02", pin=None)],
        [_plan("j1-0", "q1", "high", [(1, {CPU: M})], created=None, pin=None),
         _plan("j1-1", "q1", "high", [(1, {CPU: M})], created=None, pin=None)],
        [_plan("j2-0", "q1", "low", [(1, {CPU: 500}), (1, {CPU: 500})], created="04",
               pin="c0"),
         _plan("j2-1", "q3", "high", [(1, {CPU: 1500})], created=None, pin="c0"),
         _plan("j2-2", "q3", "high", [(2, {CPU: M, GPU: M}), (1, {CPU: M})], created="07",
               pin="c0")]],
        finished=[{"j0-0", "j0-3"}, set()])
    run(fleet)


def test_a_second_reconcile_of_a_max_jobs_fleet_changes_nothing() -> None:
    """Found by the property test (FLEETQ_EXPLORE=1). q0 runs two jobs at most and
    no min guarantees a job slot. j0-3 and j0-4 take both slots; j0-0 (within
    q2's min, short only of a slot) used to reclaim j0-4 from q1, which borrows
    cpu, and the next reconcile undid it: a job short only of what its min does
    not guarantee does not reclaim."""
    tree, problems = build_tree(QuotaSpec(
        name="root", min={CPU: 8 * M, GPU: 6 * M}, max={CPU: 8 * M, GPU: 6 * M},
        children=(QuotaSpec(name="q0", min={CPU: 8 * M, GPU: 6 * M},
                            max={GPU: 6 * M, MAX_JOBS: 2 * M}, children=(
            QuotaSpec(name="q1", min={CPU: 4 * M, GPU: 3 * M},
                      max={CPU: 8 * M, GPU: 6 * M, MAX_JOBS: M}, namespaces=("q1",)),
            QuotaSpec(name="q2", min={CPU: 4 * M, GPU: 3 * M}, max={CPU: 8 * M, GPU: 6 * M},
                      namespaces=("q2",)))),)),
        path="tree")
    assert tree is not None and not problems
    clusters = (MemberCluster(name="c0", resource_reservation=False,
                              nodes=(Node(name="n0", allocatable={CPU: 8 * M, GPU: 0}),)),)
    fleet = Fleet(tree=tree, clusters=clusters, settings=FleetSettings(), batches=[
        [_plan("j0-0", "q2", "low", [(1, {CPU: 500})], created="00", pin=None),
         _plan("j0-1", "q1", "low", [(1, {CPU: 500})], created="09", pin=None),
         _plan("j0-2", "q2", "mid", [(2, {CPU: 1500})], created="09", pin="c0"),
         _plan("j0-3", "q2", "high", [(1, {CPU: 1500})], created="07", pin=None),
         _plan("j0-4", "q1", "mid", [(2, {CPU: 2 * M}), (1, {CPU: 2 * M})], created="05",
               pin="c0"),
         _plan("j0-5", "q2", "high", [(1, {CPU: M, GPU: 2 * M})], created="07", pin=None)],
        []], finished=[{"j0-0"}])
    run(fleet)


def test_two_pinned_jobs_do_not_reclaim_each_other_for_ever() -> None:
    """Found by the property test (FLEETQ_EXPLORE=1). j1-3 (q1) and j2-3 (q2) may run
    only on c2. Each is within its quota's min once its quota's lower-priority (or,
    in q1, newer equal) jobs are out, and those jobs come back on c0, borrowing
    again: so each reclaimed the other, round after round, until the safety net,
    and the next reconcile flipped them again. A job reclaimed by another does not
    reclaim from it in return while it waits."""
    tree, problems = build_tree(QuotaSpec(
        name="root", min={CPU: 16 * M, GPU: 6 * M}, max={CPU: 16 * M, GPU: 6 * M},
        children=(QuotaSpec(name="q0", min={CPU: 16 * M, GPU: 0},
                            max={CPU: 16 * M, GPU: 5 * M}, children=(
            QuotaSpec(name="q1", min={CPU: 8 * M, GPU: 0}, max={GPU: 5 * M},
                      namespaces=("q1",)),
            QuotaSpec(name="q2", min={CPU: 8 * M, GPU: 0}, max={CPU: 10 * M, GPU: 5 * M},
                      namespaces=("q2",)))),)),
        path="tree")
    assert tree is not None and not problems
    clusters = (
        MemberCluster(name="c0", resource_reservation=True, nodes=(
            Node(name="n0", allocatable={CPU: 2 * M, GPU: M}),
            Node(name="n1", allocatable={CPU: 6 * M, GPU: 2 * M}),
            Node(name="n2", allocatable={CPU: 2 * M, GPU: 0}))),
        MemberCluster(name="c1", resource_reservation=True, nodes=(
            Node(name="n0", allocatable={CPU: 8 * M, GPU: 4 * M}),
            Node(name="n1", allocatable={CPU: 6 * M, GPU: 3 * M}))),
        MemberCluster(name="c2", resource_reservation=True, nodes=(
            Node(name="n0", allocatable={CPU: 8 * M, GPU: 0}),)))
    settings = FleetSettings(quotas={"root/q0/q1": QuotaSettings(
        strategy=QueueStrategy.BEST_EFFORT_FIFO,
        preemption=PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY, weight=500)})
    fleet = Fleet(tree=tree, clusters=clusters, settings=settings, batches=[
        [_plan("j0-0", "q2", "low", [(2, {CPU: 1500}), (2, {CPU: 500})], created="01",
               pin="c2"),
         _plan("j0-1", "q2", "mid", [(1, {CPU: 1500})], created="04", pin="c2")],
        [_plan("j1-0", "q1", "high", [(1, {CPU: 1500})], created=None, pin=None),
         _plan("j1-1", "q1", "high", [(1, {CPU: 500, GPU: M})], created="08", pin="c1"),
         _plan("j1-2", "q1", "high", [(2, {CPU: M})], created="07", pin=None),
         _plan("j1-3", "q1", "high", [(2, {CPU: 500}), (2, {CPU: 2 * M})], created="00",
               pin="c2")],
        [_plan("j2-0", "q2", "high", [(1, {CPU: 500, GPU: M})], created="01", pin="c0"),
         _plan("j2-1", "q1", "low", [(2, {CPU: M}), (1, {CPU: 1500})], created="01",
               pin=None),
         _plan("j2-2", "q2", "high", [(1, {CPU: M}), (1, {CPU: 1500})], created="09",
               pin="c0"),
         _plan("j2-3", "q2", "high", [(2, {CPU: 2 * M})], created="04", pin="c2")]],
        finished=[{"j0-0"}, set()])
    run(fleet)


def test_a_reclaim_within_one_cycle_is_not_undone_by_the_next_reconcile() -> None:
    """Found by the property test (FLEETQ_EXPLORE=1). In the cold cycle j0-2 (q2,
    high) is admitted to c0 first; then j0-1 (q1, pinned to c0) evicts j0-3 (its
    own quota, lower priority) and reclaims j0-2 from q2, which borrows cpu: with
    j0-3 gone, q1 would stay within its min. j0-3 then fits again and is put back,
    so q1 ends above its min, borrowing, and j0-2, sent back by j0-1's reclaim,
    spares j0-1 for the rest of the cycle. It was never running, so its decision
    recorded no preemption, and the next reconcile, on that state, had j0-2
    reclaim j0-1: the cold state was not a fixed point. Now its decision names
    the reclaimer it spares (no preemption counted), and the next one keeps it."""
    tree, problems = build_tree(QuotaSpec(
        name="root", min={CPU: 14 * M}, max={CPU: 14 * M},
        children=(QuotaSpec(name="q0", min={CPU: 14 * M}, max={CPU: 14 * M}, children=(
            QuotaSpec(name="q1", min={CPU: 7 * M}, max={CPU: 14 * M}, namespaces=("q1",)),
            QuotaSpec(name="q2", min={CPU: 7 * M}, max={MAX_JOBS: 3 * M},
                      namespaces=("q2",)))),)),
        path="tree")
    assert tree is not None and not problems
    clusters = (
        MemberCluster(name="c0", resource_reservation=True,
                      nodes=(Node(name="n0", allocatable={CPU: 5 * M}),)),
        MemberCluster(name="c1", resource_reservation=True, reserved={CPU: 0}, nodes=(
            Node(name="n0", allocatable={CPU: 6 * M}), Node(name="n1", allocatable={CPU: 4 * M}),
            Node(name="n2", allocatable={CPU: 4 * M}))))
    newer_equal = PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY
    settings = FleetSettings(quotas={
        "root/q0/q1": QuotaSettings(strategy=QueueStrategy.BEST_EFFORT_FIFO,
                                    preemption=newer_equal, weight=500),
        "root/q0/q2": QuotaSettings(strategy=QueueStrategy.STRICT_FIFO,
                                    preemption=newer_equal, weight=500)})
    fleet = Fleet(tree=tree, clusters=clusters, settings=settings, batches=[[
        _plan("j0-0", "q1", "low", [(2, {CPU: M})], created="02", pin="c1"),
        _plan("j0-1", "q1", "mid", [(2, {CPU: 2 * M})], created="05", pin="c0"),
        _plan("j0-2", "q2", "high", [(2, {CPU: 500}), (2, {CPU: 2 * M})], created="07",
              pin="c0"),
        _plan("j0-3", "q1", "low", [(1, {CPU: 1500})], created="02", pin="c1"),
        _plan("j0-4", "q2", "low", [(2, {CPU: M}), (1, {CPU: 2 * M})], created=None,
              pin=None)]], finished=[])
    run(fleet)
    plans = fleet.batches[0]
    first = reconcile_cycle(cycle_input(fleet, plans, {}, 0))
    got = {d.key.name: d for d in first.decisions}
    spares = got["j0-2"]
    assert spares.phase is Phase.QUEUED and got["j0-1"].phase is Phase.ADMITTED
    assert (spares.preempted_by, spares.preemptions) == ("Job q1/j0-1", 0)
    assert spares.reason.startswith("its place was reclaimed by Job q1/j0-1 before it ran ("
                                    "reclaiming quota root/q0/q2 borrowed above its min); ")
    # Once j0-1 is gone, j0-2 runs, and was never preempted: nothing is left to spare.
    rest = [p for p in plans if p.job.key.name != "j0-1"]
    later = {d.key.name: d for d in reconcile_cycle(
        cycle_input(fleet, rest, round_trip(first), 1)).decisions}
    assert later["j0-2"].phase is Phase.ADMITTED
    assert (later["j0-2"].preempted_by, later["j0-2"].preemption_reason) == (None, None)


def test_a_job_waiting_for_its_reclaimer_keeps_that_record_until_it_runs() -> None:
    """Found by the property test (FLEETQ_EXPLORE=1), after the test above was
    fixed. j1-1 (q2) is reclaimed within the cycle by j1-9 and waits, sparing
    it. The next reconcile, from that state, takes j1-1 in and out again on the
    way to the same end, this time reclaimed by j0-4: its record must stay
    j1-9, or that reconcile changes a decision (the record of a job that never
    ran is kept while it waits, and dropped once it runs)."""
    tree, problems = build_tree(QuotaSpec(
        name="root", min={CPU: 11 * M}, max={CPU: 11 * M},
        children=(QuotaSpec(name="q0", min={CPU: 11 * M}, max={CPU: 11 * M, MAX_JOBS: 3 * M},
                            children=(
            QuotaSpec(name="q1", min={CPU: 5 * M}, max={}, namespaces=("q1",)),
            QuotaSpec(name="q2", min={CPU: 6 * M}, max={MAX_JOBS: 3 * M},
                      namespaces=("q2",)))),)),
        path="tree")
    assert tree is not None and not problems
    clusters = (
        MemberCluster(name="c0", resource_reservation=False, nodes=(
            Node(name="n0", allocatable={CPU: 7 * M, PODS: 2 * M}),
            Node(name="n1", allocatable={CPU: 6 * M}), Node(name="n2", allocatable={CPU: 6 * M}))),
        MemberCluster(name="c1", resource_reservation=True,
                      nodes=(Node(name="n0", allocatable={CPU: 8 * M}),)),
        MemberCluster(name="c2", resource_reservation=False, reserved={CPU: 2 * M},
                      nodes=(Node(name="n0", allocatable={CPU: 6 * M}),)))
    settings = FleetSettings(quotas={"root/q0/q1": QuotaSettings(
        strategy=QueueStrategy.BEST_EFFORT_FIFO,
        preemption=PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY, weight=1000)})
    fleet = Fleet(tree=tree, clusters=clusters, settings=settings, batches=[
        [_plan("j0-0", "q1", "mid", [(1, {CPU: 2 * M})], created="09", pin="c0",
               preemptible=False),
         _plan("j0-1", "q1", "high", [(2, {CPU: 2 * M})], created="04", pin=None),
         _plan("j0-2", "q1", "high", [(1, {CPU: 1500})], created="05", pin="c1",
               preemptible=False),
         _plan("j0-3", "q2", "high", [(2, {CPU: 2 * M})], created="03", pin="c2"),
         _plan("j0-4", "q1", "mid", [(1, {CPU: 500})], created="05", pin="c0"),
         _plan("j0-5", "q1", "high", [(1, {CPU: 1500}), (2, {CPU: 500})], created="02",
               pin="c2"),
         _plan("j0-6", "q1", "high", [(2, {CPU: 500})], created="01", pin="c2"),
         _plan("j0-7", "q1", "low", [(1, {CPU: 500}), (1, {CPU: 2 * M})], created="08",
               pin="c2"),
         _plan("j0-8", "q2", "low", [(1, {CPU: M}), (2, {CPU: 1500})], created=None,
               pin="c1", preemptible=False),
         _plan("j0-9", "q1", "low", [(1, {CPU: 1500})], created="01", pin=None),
         _plan("j0-10", "q1", "high", [(1, {CPU: M}), (2, {CPU: 2 * M})], created="08",
               pin="c1"),
         _plan("j0-11", "q2", "low", [(2, {CPU: 1500})], created="01", pin="c1")],
        [_plan("j1-0", "q2", "mid", [(1, {CPU: 500})], created=None, pin="c0"),
         _plan("j1-1", "q2", "high", [(1, {CPU: 2 * M}), (2, {CPU: 500})], created="08",
               pin=None),
         _plan("j1-2", "q1", "high", [(1, {CPU: 2 * M})], created="06", pin="c0"),
         _plan("j1-3", "q2", "mid", [(2, {CPU: M})], created=None, pin="c2"),
         _plan("j1-4", "q2", "high", [(2, {CPU: 1500})], created=None, pin="c2",
               preemptible=False),
         _plan("j1-5", "q2", "mid", [(2, {CPU: M})], created="04", pin="c1"),
         _plan("j1-6", "q1", "mid", [(2, {CPU: 500}), (2, {CPU: 1500})], created="04",
               pin="c0"),
         _plan("j1-7", "q1", "low", [(2, {CPU: 500})], created=None, pin=None),
         _plan("j1-8", "q1", "mid", [(2, {CPU: 2 * M}), (2, {CPU: 2 * M})], created=None,
               pin="c0", preemptible=False),
         _plan("j1-9", "q1", "high", [(2, {CPU: 500})], created="07", pin="c2"),
         _plan("j1-10", "q2", "high", [(2, {CPU: M})], created="09", pin="c0")]],
        finished=[{"j0-0", "j0-10", "j0-2", "j0-3", "j0-5", "j0-6", "j0-9"}])
    run(fleet)


def test_a_second_reconcile_keeps_the_positions_of_the_jobs_preempted_back() -> None:
    """Found by the property test (FLEETQ_EXPLORE=1). At step 2, j2-3 (q1) reclaims
    c0 from j2-6 (q2, high), which then waits sparing it; j2-4 (q2, low: within
    q2's min alone) reclaims c0 back from j2-3; j2-6 evicts j2-4 (lower priority)
    and takes its place, q2 borrowing again; and so round after round, until the
    safety net ended the cycle, and reconciling again went on (j1-3 moved, j2-10
    evicted, j2-4 in). A job does not reclaim from a job whose reclaim sent back
    a job of its quota that could then evict it and take that place."""
    tree, problems = build_tree(QuotaSpec(
        name="root", min={CPU: 13 * M, GPU: 0}, max={CPU: 13 * M, GPU: 0},
        children=(QuotaSpec(name="q0", min={CPU: 13 * M, GPU: 0}, max={CPU: 13 * M, GPU: 0},
                            children=(
            QuotaSpec(name="q1", min={CPU: 6 * M, GPU: 0}, max={CPU: 13 * M, GPU: 0},
                      namespaces=("q1",)),
            QuotaSpec(name="q2", min={CPU: 7 * M, GPU: 0}, max={CPU: 13 * M, GPU: 0},
                      namespaces=("q2",)))),)),
        path="tree")
    assert tree is not None and not problems
    clusters = (
        MemberCluster(name="c0", resource_reservation=True, nodes=(
            Node(name="n0", allocatable={CPU: 3 * M, GPU: 3 * M}),)),
        MemberCluster(name="c1", resource_reservation=True, nodes=(
            Node(name="n0", allocatable={CPU: 4 * M, GPU: 2 * M}),
            Node(name="n1", allocatable={CPU: 5 * M, GPU: M}),
            Node(name="n2", allocatable={CPU: 5 * M, GPU: 4 * M}))),
        MemberCluster(name="c2", resource_reservation=True, reserved={CPU: M}, nodes=(
            Node(name="n0", allocatable={CPU: 5 * M, GPU: 4 * M}),)))
    fleet = Fleet(tree=tree, clusters=clusters, settings=FleetSettings(), batches=[
        [_plan("j0-0", "q2", "high", [(2, {CPU: 500}), (2, {CPU: 2 * M})], created="07",
               pin="c1"),
         _plan("j0-1", "q2", "mid", [(1, {CPU: 2 * M})], created="09", pin="c2"),
         _plan("j0-2", "q1", "high", [(2, {CPU: 500})], created=None, pin="c2"),
         _plan("j0-3", "q2", "mid", [(2, {CPU: M})], created="05", pin=None),
         _plan("j0-4", "q1", "mid", [(1, {CPU: M, GPU: 2 * M}), (2, {CPU: 1500})],
               created="03", pin=None),
         _plan("j0-5", "q2", "mid", [(1, {CPU: 2 * M})], created="07", pin=None),
         _plan("j0-6", "q1", "high", [(1, {CPU: 2 * M, GPU: M})], created="08", pin="c2"),
         _plan("j0-7", "q1", "high", [(2, {CPU: 500})], created="01", pin=None)],
        [_plan("j1-0", "q1", "low", [(2, {CPU: 2 * M})], created="08", pin=None),
         _plan("j1-1", "q1", "low", [(2, {CPU: 1500})], created=None, pin=None),
         _plan("j1-2", "q1", "high", [(1, {CPU: M})], created="09", pin=None),
         _plan("j1-3", "q1", "high", [(1, {CPU: M})], created="06", pin=None),
         _plan("j1-4", "q2", "high", [(1, {CPU: M})], created="04", pin=None),
         _plan("j1-5", "q2", "low", [(1, {CPU: 1500}), (1, {CPU: 2 * M})], created=None,
               pin=None),
         _plan("j1-6", "q2", "mid", [(1, {CPU: M})], created="04", pin="c2",
               preemptible=False),
         _plan("j1-7", "q2", "high", [(1, {CPU: 1500})], created="01", pin=None),
         _plan("j1-8", "q2", "mid", [(1, {CPU: 500}), (1, {CPU: 500})], created="09",
               pin="c2"),
         _plan("j1-9", "q1", "high", [(1, {CPU: 2 * M}), (2, {CPU: 2 * M})], created="03",
               pin="c0")],
        [_plan("j2-0", "q2", "high", [(1, {CPU: 1500}), (1, {CPU: M})], created="06",
               pin=None),
         _plan("j2-1", "q1", "mid", [(1, {CPU: 2 * M, GPU: 2 * M}), (2, {CPU: 500})],
               created="02", pin="c2"),
         _plan("j2-2", "q2", "low", [(1, {CPU: 500})], created="01", pin=None),
         _plan("j2-3", "q1", "high", [(1, {CPU: 1500})], created="05", pin="c0"),
         _plan("j2-4", "q2", "low", [(1, {CPU: M})], created="09", pin="c0"),
         _plan("j2-5", "q2", "high", [(1, {CPU: 500})], created="00", pin="c2"),
         _plan("j2-6", "q2", "high", [(1, {CPU: 2 * M})], created=None, pin="c0"),
         _plan("j2-7", "q2", "high", [(2, {CPU: 1500, GPU: 2 * M})], created="06", pin="c0"),
         _plan("j2-8", "q1", "high", [(1, {CPU: 1500}), (1, {CPU: M})], created="00",
               pin=None),
         _plan("j2-9", "q1", "mid", [(1, {CPU: 1500})], created=None, pin="c2"),
         _plan("j2-10", "q1", "mid", [(2, {CPU: 500})], created=None, pin="c1"),
         _plan("j2-11", "q1", "mid", [(1, {CPU: M, GPU: 2 * M})], created="07", pin=None,
               preemptible=False)]],
        finished=[{"j0-0", "j0-1", "j0-2", "j0-3", "j0-5", "j0-6", "j0-7"},
                  {"j0-1", "j0-4", "j1-7", "j1-8"}])
    run(fleet)
