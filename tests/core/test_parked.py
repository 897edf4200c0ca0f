"""The wake-up index of parked jobs: each event wakes exactly the jobs it may help.

The cycle asks ``_may_have_changed`` of every woken job before trying it, so
waking too many costs time only; waking too few would leave a job waiting that
could run (``tests/conftest.py`` checks every cycle of the suite for that).
"""

from __future__ import annotations

import pytest

from reconciler.core.model import FleetSettings, JobKey, PreemptionPolicy, QuotaSettings
from reconciler.core.parked import Parked
from reconciler.core.preemption import ANY_REASON, Admitted, Blocked, PreemptionContext
from reconciler.core.quota import QuotaUsage
from tests.builders import GPU, quota, res, tree

CLUSTERS = frozenset({"c1", "c2"})


def key(name: str) -> JobKey:
    return JobKey("kubeflow.org", "PyTorchJob", "team", name)


def fleet(settings: FleetSettings | None = None
          ) -> tuple[Parked, QuotaUsage, PreemptionContext]:
    """root (16 GPUs) over a (min 8), b and c (min 0: anything they hold is borrowed)."""
    usage = QuotaUsage(tree(quota(
        "root", quota("a", min={"gpu": "8"}, max={"gpu": "16"}, ns=["team-a"]),
        quota("b", min={"gpu": "0"}, max={"gpu": "16"}, ns=["team-b"]),
        quota("c", min={"gpu": "0"}, max={"gpu": "16"}, ns=["team-c"]),
        min={"gpu": "16"}, max={"gpu": "16"})))
    ctx = PreemptionContext(usage=usage, clusters={}, settings=settings or FleetSettings())
    return Parked(usage, ctx), usage, ctx


def admit(usage: QuotaUsage, ctx: PreemptionContext, name: str, at: str, gpus: int, *,
          priority: int = 0, preemptible: bool = True, cluster: str = "c1") -> Admitted:
    a = Admitted(key=key(name), quota=at, priority=priority, preemptible=preemptible,
                 requests=res(gpu=gpus), cluster=cluster, pod_sets=(), admitted_at="",
                 enqueued_at="", seq=ctx.next_seq())
    usage.charge(at, a.requests, preemptible=preemptible)
    ctx.add(a)
    return a


def evict(parked: Parked, usage: QuotaUsage, ctx: PreemptionContext, a: Admitted, *,
          settle: bool = True) -> None:
    assert a.quota is not None
    usage.release(a.quota, a.requests, preemptible=a.preemptible)
    ctx.remove(a.key)
    parked.evicted(a.quota, a.cluster)
    if settle:
        parked.settle()


def park(parked: Parked, name: str, blocked: Blocked = ANY_REASON, *, at: str = "root/a",
         priority: int = 0, reclaims: bool = False, short: str | None = None,
         candidates: frozenset[str] = CLUSTERS) -> None:
    parked.park(key(name), at, priority, reclaims, blocked, short, candidates)


def names(parked: Parked) -> set[str]:
    """The jobs still parked: an event woke the others."""
    return {k.name for k in parked}


def test_an_eviction_in_its_own_quota_wakes_a_job_whatever_blocked_it() -> None:
    parked, usage, ctx = fleet()
    mine = admit(usage, ctx, "mine", "root/a", 2)
    admit(usage, ctx, "theirs", "root/b", 14)
    park(parked, "waits", Blocked("root", (("root", GPU, 0),)))
    park(parked, "elsewhere", Blocked("root", (("root", GPU, 0),)), at="root/b")
    evict(parked, usage, ctx, mine)  # root still uses 14 GPUs, more than 0
    assert names(parked) == {"elsewhere"}


def test_a_limit_wakes_a_job_only_once_the_usage_is_down_to_what_it_could_pass_with() -> None:
    parked, usage, ctx = fleet()
    jobs = [admit(usage, ctx, f"b{i}", "root/b", 4) for i in range(4)]  # root: 16 used
    park(parked, "needs-4", Blocked("root", (("root", GPU, res(gpu=12)[GPU]),)), at="root/b")
    park(parked, "needs-8", Blocked("root", (("root", GPU, res(gpu=8)[GPU]),)), at="root/b")
    park(parked, "other", Blocked("root", (("root", GPU, res(gpu=8)[GPU]),)))
    evict(parked, usage, ctx, jobs[0])  # 12 used: own quota root/b wakes both of it
    assert names(parked) == {"other"}
    park(parked, "needs-4", Blocked("root", (("root", GPU, res(gpu=4)[GPU]),)))
    evict(parked, usage, ctx, jobs[1])  # 8 used
    assert names(parked) == {"needs-4"}
    evict(parked, usage, ctx, jobs[2])  # 4 used
    assert names(parked) == set()


def test_a_limit_is_looked_at_once_the_try_that_evicted_is_over() -> None:
    """A preemptor's victims leave, then it comes in: only what is left counts."""
    parked, usage, ctx = fleet()
    jobs = [admit(usage, ctx, f"b{i}", "root/b", 4) for i in range(4)]  # root: 16 used
    park(parked, "needs-8", Blocked("root", (("root", GPU, res(gpu=8)[GPU]),)))
    evict(parked, usage, ctx, jobs[0], settle=False)
    evict(parked, usage, ctx, jobs[1], settle=False)  # 8 used: enough, for now
    parked.admitted(admit(usage, ctx, "preemptor", "root/b", 8))  # 16 again
    parked.settle()
    assert names(parked) == {"needs-8"}
    evict(parked, usage, ctx, jobs[2], settle=False)
    evict(parked, usage, ctx, jobs[3], settle=False)
    parked.admitted(admit(usage, ctx, "smaller", "root/b", 2))  # 10 used
    assert names(parked) == {"needs-8"}  # not before the try is over
    parked.settle()
    assert names(parked) == {"needs-8"}
    evict(parked, usage, ctx, ctx.admitted[key("smaller")])  # 8 used
    assert names(parked) == set()


def test_a_quota_with_no_known_limit_wakes_on_any_eviction_below_it() -> None:
    parked, usage, ctx = fleet()
    b = admit(usage, ctx, "b1", "root/b", 2)
    c = admit(usage, ctx, "c1", "root/c", 2)
    park(parked, "blocked-at-b", Blocked("root/b"))
    park(parked, "blocked-at-c", Blocked("root/c"))
    evict(parked, usage, ctx, b)
    assert names(parked) == {"blocked-at-c"}
    evict(parked, usage, ctx, c)
    assert names(parked) == set()


def test_a_job_blocked_for_any_reason_wakes_on_its_candidate_clusters_and_its_short_quota(
        ) -> None:
    parked, usage, ctx = fleet()
    on_c3 = admit(usage, ctx, "on-c3", "root/b", 2, cluster="c3")
    on_c2 = admit(usage, ctx, "on-c2", "root/b", 2, cluster="c2")
    on_c3_too = admit(usage, ctx, "on-c3-too", "root/b", 2, cluster="c3")
    park(parked, "anywhere")
    park(parked, "short-of-b", short="root/b", candidates=frozenset({"c9"}))
    park(parked, "short-of-a", short="root/a", candidates=frozenset({"c9"}), at="root/b")
    evict(parked, usage, ctx, on_c2)  # a candidate of "anywhere"; below root/b
    assert names(parked) == set()  # the last one: its own quota
    park(parked, "anywhere")
    park(parked, "short-of-a", short="root/a", candidates=frozenset({"c9"}))
    park(parked, "short-of-root", short="root", candidates=frozenset({"c9"}))
    park(parked, "far", candidates=frozenset({"c9"}))
    evict(parked, usage, ctx, on_c3)  # no candidate cluster of theirs; below root
    assert names(parked) == {"anywhere", "short-of-a", "far"}
    park(parked, "c3", candidates=frozenset({"c3"}))
    evict(parked, usage, ctx, on_c3_too)
    assert names(parked) == {"anywhere", "short-of-a", "far"}


@pytest.mark.parametrize(("policy", "left"), [
    (PreemptionPolicy.LOWER_PRIORITY, {"low", "mid"}),
    (PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY, {"low"}),  # equal: if newer
    (PreemptionPolicy.NEVER, {"low", "mid", "high"}),
])
def test_an_admission_to_its_quota_wakes_the_jobs_that_may_preempt_it(
        policy: PreemptionPolicy, left: set[str]) -> None:
    parked, usage, ctx = fleet(FleetSettings(quotas={"root/a": QuotaSettings(
        preemption=policy)}))
    for name, priority in (("low", 1), ("mid", 5), ("high", 9)):
        park(parked, name, Blocked("root", (("root", GPU, 0),)), priority=priority)
    parked.admitted(admit(usage, ctx, "other-quota", "root/b", 1, priority=0))
    parked.admitted(admit(usage, ctx, "kept", "root/a", 1, priority=0, preemptible=False))
    assert names(parked) == {"low", "mid", "high"}
    parked.admitted(admit(usage, ctx, "mid-job", "root/a", 1, priority=5))
    assert names(parked) == left


def test_an_admission_to_a_borrowing_quota_wakes_the_jobs_of_others_that_may_reclaim(
        ) -> None:
    parked, usage, ctx = fleet()
    park(parked, "reclaims", reclaims=True, priority=3)
    park(parked, "cannot", reclaims=False, priority=3)
    park(parked, "same-quota", reclaims=True, at="root/b")
    parked.admitted(admit(usage, ctx, "within-min", "root/a", 2, priority=9))
    assert not ctx.is_borrowing("root/a")
    assert names(parked) == {"reclaims", "cannot", "same-quota"}
    parked.admitted(admit(usage, ctx, "borrowed", "root/b", 2, priority=9))
    assert ctx.is_borrowing("root/b")
    assert names(parked) == {"cannot", "same-quota"}


def test_parking_again_supersedes_the_old_entries_and_stale_ones_are_dropped() -> None:
    parked, usage, ctx = fleet()
    jobs = [admit(usage, ctx, f"b{i}", "root/b", 1, cluster="c9") for i in range(16)]
    for round_ in range(3000):  # each one files entries; the old ones go stale
        park(parked, "again", Blocked("root", (("root", GPU, round_),)))
        park(parked, "twice", Blocked("root/b"), at="root/a")
    assert len(parked) == 2
    assert parked.entries < 5000  # 12,000 filed: the stale ones are dropped now and then
    evict(parked, usage, ctx, jobs[0])  # below root/b: "twice"; root is still too full
    assert names(parked) == {"again"}
    parked.discard(key("again"))
    assert len(parked) == 0
    evict(parked, usage, ctx, jobs[1])
    assert names(parked) == set()
