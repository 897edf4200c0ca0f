"""When the cycle asks a job that failed to try again (``_may_have_changed``).

A job that failed is tried again in a later pass only once an admission or
eviction since may have helped it. Asking too often costs time only (the
property test in ``tests/properties`` checks that trying every job each time
gives the same decisions); these tests pin down the rules that keep it from
asking when nothing could have helped.
"""

from __future__ import annotations

import pytest

from reconciler.core import cycle
from reconciler.core.cycle import CycleInput, _Cycle
from reconciler.core.gang import ClusterState, Fit, job_cluster_total
from reconciler.core.model import FleetSettings, JobKey, PodSet, PreemptionPolicy
from reconciler.core.preemption import Admitted, Blocked, PreemptionContext, find_victims
from reconciler.core.quota import QuotaUsage
from reconciler.core.resources import ResourcesView
from tests.builders import (
    GPU,
    JobBuilder,
    cycle_input,
    gpu_cluster,
    gpu_job,
    quota,
    res,
    simple_tree,
    tree,
)


def t(second: int) -> str:
    return f"2026-01-01T00:00:{second:02d}Z"


def full_root(*more: JobBuilder) -> CycleInput:
    """root: 16 GPUs, qa and qb each guaranteed 8. qa runs a1 (4) and a2 (8), so
    it borrows 4; qb runs b1 (4); x (qa, 4 GPUs, the same priority as a1 and a2,
    so it may evict neither) waits: the root is full."""
    return cycle_input(
        jobs=[gpu_job("a1", 4, "team-a").created(t(1)), gpu_job("a2", 8, "team-a").created(t(2)),
              gpu_job("b1", 4, "team-b").created(t(3)), gpu_job("x", 4, "team-a").created(t(4)),
              *more],
        clusters=[gpu_cluster("c", 8, 8, 8, 8)],
        tree=simple_tree(quota("qa", ns=["team-a"], min={"gpu": "8"}, max={"gpu": "16"}),
                         quota("qb", ns=["team-b"], min={"gpu": "8"}, max={"gpu": "16"}),
                         total={"gpu": "16"}))


def first_pass(inp: CycleInput) -> _Cycle:
    state = _Cycle(inp)
    state.resolve()
    state.snapshot()
    state.screen_inadmissible()
    state.admit_queued()
    return state


def key(state: _Cycle, name: str) -> JobKey:
    return next(k for k in state.pending if k.name == name)


def test_a_job_blocked_by_its_limits_alone_says_so() -> None:
    state = first_pass(full_root())
    x = state.pending[key(state, "x")]
    assert x.job.key not in state.admitted
    blocked = find_victims(state.preemption, job=x.job, quota=x.quota, priority=x.priority,
                           enqueued_at=x.enqueued_at, groups=x.groups, total=x.total)
    # its only try (it may not reclaim: qa is above its min) is blocked at the root
    assert blocked == Blocked("root", (("root", GPU, 12000),), own=True)


def test_its_quota_losing_a_job_helps_it_only_once_it_may_reclaim() -> None:
    state = first_pass(full_root())
    x = state.pending[key(state, "x")]
    evictions, seq, _, short = state._failed[x.job.key]
    no_room = ("root", GPU, 0)  # a limit that no eviction here brings within reach
    own = (evictions, seq, Blocked("root", (no_room,), own=True), short)
    some_tries = (evictions, seq, Blocked("root", (no_room,)), short)
    state._evict(state.admitted[key(state, "a1")], by=x.job.key, why="test")
    # qa now uses its min, 8: with x in it would borrow again, so x may not reclaim
    assert not state._may_have_changed(x, *own)
    assert state._may_have_changed(x, *some_tries)  # limits of some tries only: asked
    state._evict(state.admitted[key(state, "a2")], by=x.job.key, why="test")
    assert state._may_have_changed(x, *own)  # qa is empty: x may reclaim now


def test_jobs_that_would_fail_at_once_are_passed_over_in_their_queue(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """x, y and z wait in qa (the root is full). In the next pass nothing could
    have helped them: after x, the pass goes over y and z in their queue, marking
    them waiting, without a head going into the heap of heads for each. The
    decisions are those of the pass with every head through the heap."""
    monkeypatch.setattr(cycle, "PARK_ALWAYS", False)  # as in a cold reconcile
    inp = full_root(gpu_job("y", 4, "team-a").created(t(5)),
                    gpu_job("z", 4, "team-a").created(t(6)))

    def second_pass(pass_over: bool) -> tuple[list[str], dict[JobKey, object]]:
        state = first_pass(inp)
        assert {k.name for k in state._failed} == {"x", "y", "z"}
        pushed: list[str] = []
        real = _Cycle._push_head
        with pytest.MonkeyPatch.context() as mp:
            if not pass_over:
                mp.setattr(_Cycle, "_pass_over", lambda self, leaf, queue, parked: None)
            mp.setattr(_Cycle, "_push_head",
                       lambda self, leaf: (pushed.append(leaf), real(self, leaf))[1])
            failed = dict(state._failed)
            state.admit_queued()
        assert state._failed == failed and not state._queues["root/qa"]  # none tried
        return pushed, dict(state.decisions)

    with_pass_over, decided = second_pass(True)
    without, decided_too = second_pass(False)
    assert decided == decided_too
    assert with_pass_over == ["root/qa", "root/qa"]  # its first head, then after x and the rest
    assert without == ["root/qa"] * 4  # its first head, then after each of x, y and z


def test_where_it_may_evict_nothing_an_eviction_helps_only_once_its_pods_pack() -> None:
    """Nodes of 8 GPUs: b1 and b2 (4 each, quota qb) share n0, b3 (4) runs on
    n1. x (qa) needs two pods of 6 GPUs: 12 GPUs are free, but only n2 holds a
    pod. x may evict none of them (qb is within its min), and it comes last (a
    lower priority). With b1 gone, 16 are
    free, and the free sum would cover x, but its pods still do not pack: it
    is not asked again. With b3 gone, n1 and n2 hold them: it is."""
    state = first_pass(cycle_input(
        jobs=[gpu_job("b1", 4, "team-b").created(t(1)), gpu_job("b2", 4, "team-b").created(t(2)),
              gpu_job("b3", 4, "team-b").created(t(3)),
              gpu_job("x", 6, "team-a", replicas=2).created(t(4)).priority_class("low")],
        clusters=[gpu_cluster("c", 8, 8, 8)], priority_classes={"low": 1},
        default_priority=10,
        tree=simple_tree(quota("qa", ns=["team-a"], min={"gpu": "12"}, max={"gpu": "24"}),
                         quota("qb", ns=["team-b"], min={"gpu": "12"}, max={"gpu": "24"}),
                         total={"gpu": "24"})))
    cs = state.clusters["c"]
    assert [n.get(GPU) for n in cs.node_free] == [0, 4000, 8000]
    x = state.pending[key(state, "x")]
    failed = state._failed[x.job.key]
    assert x.job.key not in state.admitted and failed[2] == Blocked(None)
    state._evict(state.admitted[key(state, "b1")], by=x.job.key, why="test")
    assert cs.free[GPU] >= x.total[GPU] and cs.fits(x.job.pod_sets, x.total) is None
    assert not state._may_have_changed(x, *failed)
    state._evict(state.admitted[key(state, "b3")], by=x.job.key, why="test")
    assert state._may_have_changed(x, *failed)


def test_the_room_candidates_hold_is_that_of_the_cluster_as_it_is_now() -> None:
    """``PreemptionContext.room_of`` keeps what the candidates hold on a cluster
    for the next search with the same candidates: once one of them leaves the
    cluster, it no longer counts."""
    state = first_pass(cycle_input(
        jobs=[gpu_job("a1", 4, "team-a").created(t(1)).priority_class("low"),
              gpu_job("a2", 4, "team-a").created(t(2)).priority_class("low")],
        clusters=[gpu_cluster("c", 8, 8)], priority_classes={"low": 1},
        tree=simple_tree(quota("qa", ns=["team-a"], min={"gpu": "16"}, max={"gpu": "16"}),
                         total={"gpu": "16"})))
    ctx, cs = state.preemption, state.clusters["c"]
    policy = state.inp.settings.for_quota("root/qa").preemption
    own = ctx.own_candidates("root/qa", 10, t(3), policy)
    assert {v.key.name for _, v, _ in own.items} == {"a1", "a2"}
    assert ctx.room_of("c", (own,))[0][GPU] == 8000  # both run on n0
    a1 = state.admitted[key(state, "a1")]
    cs.remove(a1.key, a1.pod_sets)
    assert ctx.room_of("c", (own,))[0][GPU] == 4000
    assert ctx.room_of("c", (own,)) == cs.room_of((v.key, v.pod_sets) for _, v, _ in own.items)


def test_a_newer_job_it_may_preempt_helps_it_until_that_job_leaves() -> None:
    """x (qa, priority 0) failed. A lower-priority job of qa admitted since may
    be preempted by x: that may help it. The answer is kept for the jobs alike
    in the pass, but not past a job of qa coming or going: once that job left,
    nothing newer in qa helps x."""
    state = first_pass(full_root())
    ctx = state.preemption
    x = state.pending[key(state, "x")]
    _, seq, _, _ = state._failed[x.job.key]
    policy = PreemptionPolicy.LOWER_PRIORITY
    assert not state._newer_victim(x, policy, seq)
    low = Admitted(key=JobKey("kubeflow.org", "PyTorchJob", "team-a", "low"), quota="root/qa",
                   priority=-1, preemptible=True, requests=res(gpu=1), cluster="c",
                   pod_sets=(), admitted_at=t(9), enqueued_at=t(9), seq=ctx.next_seq())
    ctx.add(low)
    assert state._newer_victim(x, policy, seq)
    assert not state._newer_victim(x, PreemptionPolicy.NEVER, seq)
    ctx.remove(low.key)
    assert not state._newer_victim(x, policy, seq)


def test_could_fit_keeps_where_pods_did_not_pack_until_something_leaves() -> None:
    """``could_fit`` with the pods of a job that may evict nothing: a cluster
    counts only if they pack there now. Where they did not, that is noted
    (with the cluster's removals) and not packed again until a job leaves."""
    usage = QuotaUsage(tree(quota("root", quota("a", min={"gpu": "8"}, max={"gpu": "16"},
                                                ns=["team-a"]),
                                  min={"gpu": "16"}, max={"gpu": "16"})))
    c1 = ClusterState(gpu_cluster("c1", 4, 4))
    ctx = PreemptionContext(usage=usage, clusters={"c1": c1}, settings=FleetSettings())
    blocker = gpu_job("blocker", 2).obj()
    placed = c1.fit(blocker.key, blocker.pod_sets, job_cluster_total(blocker.pod_sets))
    assert isinstance(placed, Fit)
    c1.place(blocker.key, blocker.pod_sets, placed)  # 6 GPUs free: 2 on one node, 4 on other
    gang = gpu_job("gang", 3, replicas=2).obj()  # two pods of 3 GPUs: only one node takes one
    total = job_cluster_total(gang.pod_sets)
    packed: list[str] = []
    fits = c1.fits

    def counted(pods: tuple[PodSet, ...], want: ResourcesView) -> Fit | None:
        packed.append("c1")
        return fits(pods, want)

    c1.fits = counted  # type: ignore[method-assign]
    failed: dict[str, int] = {}

    def ask() -> list[str]:
        return ctx.could_fit(["c1"], total, "root/a", 0, PreemptionPolicy.LOWER_PRIORITY,
                             False, first=True, pods=gang.pod_sets, failed=failed)

    assert ask() == [] and packed == ["c1"] and failed == {"c1": c1.removals}
    assert ask() == [] and packed == ["c1"]  # nothing left since: not packed again
    c1.remove(blocker.key, blocker.pod_sets)
    assert ask() == ["c1"] and packed == ["c1", "c1"]
