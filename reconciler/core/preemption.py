"""Preemption: reclaiming borrowed quota and evicting lower-priority jobs.

A job that does not fit may evict admitted jobs (victims) when that makes it
fit, on its quota *and* on one member cluster:

* **reclaim**: if its quota would stay within its min after admission, it
  may evict jobs of other quotas that use more than their min (borrowers);
* **priority**: it may evict jobs of its own quota with strictly lower
  priority (``LowerPriority``, the default), also equal-priority jobs that
  were enqueued later (``LowerOrNewerEqualPriority``), or none (``Never``).

Non-preemptible jobs, capacity-only jobs and jobs already evicted in this
cycle are never victims. Candidates are ranked by the key written next to
``_rank``. The search is a what-if: each victim's removal is simulated and
undone, then the set is made minimal by dropping every victim not needed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reconciler.core.gang import ClusterState, Fit
from reconciler.core.model import (
    FleetSettings,
    Job,
    JobKey,
    PlacementStrategy,
    PodSet,
    PreemptionPolicy,
)
from reconciler.core.quota import COUNTING, QuotaUsage
from reconciler.core.resources import Resources, ResourcesView


@dataclass(frozen=True, slots=True)
class Admitted:
    """A job holding quota and a place on a member cluster during the cycle."""

    key: JobKey
    quota: str | None
    priority: int
    preemptible: bool
    requests: Resources
    cluster: str
    pod_sets: tuple[PodSet, ...]
    admitted_at: str
    enqueued_at: str
    queued: bool = True


@dataclass
class PreemptionContext:
    usage: QuotaUsage | None
    clusters: dict[str, ClusterState]
    admitted: dict[JobKey, Admitted]
    settings: FleetSettings
    evicted: set[JobKey] = field(default_factory=set)
    _lendable: dict[str, Resources] = field(default_factory=dict)

    def dominant_share(self, leaf: str) -> float:
        """The quota's dominant share, used to order heads across queues.

        share(q) = max over resources r of (used_q[r] - min_q[r]) / lendable[r],
        divided by q's weight, where lendable[r] is the sum of the min of q and
        its siblings (the capacity their parent can lend among them; the
        parent's min when that sum is 0). Below min the share is negative, so
        a quota under its guarantee goes before any borrower; lower goes first.
        """
        if self.usage is None:
            return 0.0
        tree = self.usage.tree
        node = tree.nodes[leaf]
        lendable = self._lendable.get(leaf)
        if lendable is None:
            lendable = {}
            if node.parent is not None:
                parent = tree.nodes[node.parent]
                for child in parent.children:
                    for r, v in tree.nodes[child].min.items():
                        lendable[r] = lendable.get(r, 0) + v
                for r, v in parent.min.items():
                    if lendable.get(r, 0) <= 0:
                        lendable[r] = v
            else:
                lendable = dict(node.min)
            self._lendable[leaf] = lendable
        used = self.usage.used[leaf]
        best: float | None = None
        for r, cap in lendable.items():
            if cap <= 0 or r in COUNTING:
                continue
            share = (used.get(r, 0) - node.min.get(r, 0)) / cap
            if best is None or share > best:
                best = share
        weight = self.settings.for_quota(leaf).weight / 1000
        return (best or 0.0) / (weight if weight > 0 else 1.0)


@dataclass(frozen=True)
class PreemptionPlan:
    victims: tuple[Admitted, ...]
    fit: Fit
    reason: str


def within_min_after(usage: QuotaUsage, leaf: str, request: ResourcesView) -> bool:
    """Would the leaf quota stay within its min with ``request`` added?"""
    node = usage.tree.nodes[leaf]
    used = usage.used[leaf]
    for r, v in request.items():
        if v <= 0:
            continue
        if r in COUNTING and r not in node.min:
            continue
        if r not in node.min and r not in node.max:
            continue
        if used.get(r, 0) + v > node.min.get(r, 0):
            return False
    return True


def _depth(path: str) -> int:
    return path.count("/")


def _common_depth(a: str, b: str) -> int:
    pa, pb = a.split("/"), b.split("/")
    n = 0
    for x, y in zip(pa, pb, strict=False):
        if x != y:
            break
        n += 1
    return n


def find_victims(ctx: PreemptionContext, *, job: Job, quota: str | None, priority: int,
                 enqueued_at: str, groups: list[list[str]], total: ResourcesView,
                 strategy: PlacementStrategy) -> PreemptionPlan | None:
    """The smallest set of victims that lets ``job`` in, or ``None``.

    Tries each candidate cluster in turn, keeps the plan with the fewest
    victims (then the lowest top victim priority, then the cluster order).
    """
    usage = ctx.usage
    if usage is None or quota is None:
        return None
    policy = ctx.settings.for_quota(quota).preemption
    reclaim = within_min_after(usage, quota, job.requests)
    candidates: list[tuple[tuple[object, ...], Admitted, str]] = []
    for victim in ctx.admitted.values():
        if (not victim.preemptible or not victim.queued or victim.quota is None
                or victim.key in ctx.evicted):
            continue
        if victim.quota == quota:
            if policy is PreemptionPolicy.NEVER:
                continue
            lower = victim.priority < priority
            newer_equal = (policy is PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY
                           and victim.priority == priority and victim.enqueued_at > enqueued_at)
            if not (lower or newer_equal):
                continue
            why = "lower priority in the same quota"
            category = 1
        else:
            if not reclaim or not usage.above_min(victim.quota):
                continue
            why = f"reclaiming quota {victim.quota} borrowed above its min"
            category = 0
        candidates.append((_rank(category, quota, victim), victim, why))
    if not candidates:
        return None
    candidates.sort(key=lambda c: c[0])
    best: tuple[tuple[object, ...], PreemptionPlan] | None = None
    order = 0
    for group in groups:
        for name in group:
            order += 1
            plan = _plan_on(ctx, usage, job, quota, name, candidates, total)
            if plan is None:
                continue
            score = (len(plan.victims), max(v.priority for v in plan.victims), order)
            if best is None or score < best[0]:
                best = (score, plan)
        if best is not None:
            break  # a later clusterAffinities group is tried only when this one fails
    if best is None:
        return None
    for victim in best[1].victims:
        ctx.evicted.add(victim.key)
    return best[1]


def _rank(category: int, quota: str, victim: Admitted) -> tuple[object, ...]:
    """Victim preference (first = evicted first)::

        (reclaim from other quotas before same-quota priority preemption,
         nearest quota first: a sibling before a cousin (deepest common ancestor),
         lowest priority first,
         most recently admitted first,
         namespace/name)
    """
    assert victim.quota is not None
    closeness = -_common_depth(quota, victim.quota)
    newest_first = tuple(-ord(ch) for ch in victim.admitted_at)
    return (category, closeness, victim.priority, newest_first, victim.key)


def _plan_on(ctx: PreemptionContext, usage: QuotaUsage, job: Job, quota: str, cluster: str,
             candidates: list[tuple[tuple[object, ...], Admitted, str]],
             total: ResourcesView) -> PreemptionPlan | None:
    cs = ctx.clusters[cluster]
    removed: list[tuple[Admitted, Fit]] = []
    reasons: dict[JobKey, str] = {}

    def take(victim: Admitted) -> None:
        fit = ctx.clusters[victim.cluster].placed[victim.key]
        ctx.clusters[victim.cluster].remove(victim.key, victim.pod_sets)
        assert victim.quota is not None
        usage.release(victim.quota, victim.requests, preemptible=victim.preemptible)
        removed.append((victim, fit))

    def give_back(victim: Admitted, fit: Fit) -> None:
        ctx.clusters[victim.cluster].place(victim.key, victim.pod_sets, fit)
        assert victim.quota is not None
        usage.charge(victim.quota, victim.requests, preemptible=victim.preemptible)

    def fits_now() -> Fit | None:
        if usage.shortfall(quota, job.requests, preemptible=job.preemptible) is not None:
            return None
        fit = cs.fit(job.key, job.pod_sets, total)
        return fit if isinstance(fit, Fit) else None

    def next_victim() -> tuple[Admitted, str] | None:
        short = usage.shortfall(quota, job.requests, preemptible=job.preemptible)
        taken = {v.key for v, _ in removed}
        for _, victim, why in candidates:
            if victim.key in taken:
                continue
            assert victim.quota is not None
            if victim.quota != quota and not usage.above_min(victim.quota):
                continue  # its quota is back at its min: no more to reclaim there
            if short is not None:
                helps = _helps_quota(victim, short.quota, short.resource)
            else:
                helps = victim.cluster == cluster
            if helps:
                return victim, why
        return None

    try:
        plan_fit = fits_now()
        while plan_fit is None:
            nxt = next_victim()
            if nxt is None:
                return None
            victim, why = nxt
            reasons[victim.key] = why
            take(victim)
            plan_fit = fits_now()
        # Minimal: give back every victim the job can do without, newest pick first.
        for victim, fit in list(reversed(removed)):
            give_back(victim, fit)
            again = fits_now()
            if again is not None:
                removed.remove((victim, fit))
                plan_fit = again
            else:
                ctx.clusters[victim.cluster].remove(victim.key, victim.pod_sets)
                assert victim.quota is not None
                usage.release(victim.quota, victim.requests, preemptible=victim.preemptible)
        victims = tuple(v for v, _ in removed)
        kinds = sorted({reasons[v.key] for v in victims})
        return PreemptionPlan(victims=victims, fit=plan_fit, reason="; ".join(kinds))
    finally:
        for victim, fit in reversed(removed):
            give_back(victim, fit)


def _helps_quota(victim: Admitted, blocking: str, resource: str) -> bool:
    """Does evicting ``victim`` lower the usage of the blocking quota's resource?"""
    assert victim.quota is not None
    if victim.requests.get(resource, 0) <= 0:
        return False
    return victim.quota == blocking or victim.quota.startswith(blocking + "/")

