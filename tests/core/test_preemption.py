"""Preemption in the cycle: priority within a quota, reclaiming borrowed quota."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconciler.core.cycle import CycleInput, CycleResult, reconcile_cycle
from reconciler.core.explain import explain_decision
from reconciler.core.model import JobKey, Phase, PreemptionPolicy, PriorPlacement, QuotaSettings
from reconciler.core.preemption import RECLAIMING, Ranked, _Run, most_recent_first
from tests.builders import (
    GPU,
    JobBuilder,
    admitted_prior,
    by_name,
    cycle_input,
    gpu_cluster,
    gpu_job,
    policy,
    prior_of,
    quota,
    settings,
    simple_tree,
)

PRIORITIES = {"high": 1000, "mid": 100, "low": 10}


def t(second: int) -> str:
    return f"2026-01-01T00:00:{second:02d}Z"


def one_quota(*jobs: JobBuilder) -> CycleResult:
    """Every job in quota root/qa; one 8-GPU cluster ``c1``."""
    return reconcile_cycle(cycle_input(
        jobs=jobs, tree=simple_tree(quota("qa", ns=["team-a"])),
        clusters=[gpu_cluster("c1", 8)], priority_classes=PRIORITIES))


def evicted(result: CycleResult) -> set[str]:
    return {d.key.name for d in result.decisions if d.preemptions}


# -- priority within a quota -------------------------------------------------------------


def test_a_higher_priority_job_preempts_a_lower_one_of_its_quota() -> None:
    """The low job was admitted last cycle; the high one arrives and takes its place."""
    low = gpu_job("low", 8, "team-a").priority_class("low").created(t(1))
    first = one_quota(low)
    assert by_name(first)["low"].phase is Phase.ADMITTED
    result = reconcile_cycle(cycle_input(
        jobs=[low, gpu_job("high", 8, "team-a").priority_class("high").created(t(2))],
        tree=simple_tree(quota("qa", ns=["team-a"])), clusters=[gpu_cluster("c1", 8)],
        priority_classes=PRIORITIES, prior=prior_of(first.decisions)))
    d = by_name(result)
    assert (d["high"].phase, d["high"].cluster) == (Phase.ADMITTED, "c1")
    assert d["low"].phase is Phase.QUEUED
    assert d["low"].preempted_by == "PyTorchJob team-a/high"
    assert "preempted by" in d["low"].reason
    assert "(its priority is lower, in the same quota)" in d["low"].reason
    assert d["low"].position == 1


def test_the_smallest_set_of_victims_is_taken_one_victim_where_one_does() -> None:
    """Low jobs of 5, 4 and 1 GPUs fill the 10-GPU cluster, admitted in that
    order; a high one of 5 GPUs comes. Taken in rank order (the most recently
    admitted first), 1 and 4 free 5, and neither can be given back; but the
    job of 5 alone frees as much: it alone is evicted."""
    jobs = [gpu_job(name, gpus, "team-a").priority_class("low").created(t(i))
            for i, (name, gpus) in enumerate((("five", 5), ("four", 4), ("one", 1)), 1)]
    tree = simple_tree(quota("qa", ns=["team-a"]))
    first = reconcile_cycle(cycle_input(jobs=jobs, tree=tree, clusters=[gpu_cluster("c1", 10)],
                                        priority_classes=PRIORITIES))
    assert all(d.phase is Phase.ADMITTED for d in first.decisions)
    high = gpu_job("high", 5, "team-a").priority_class("high").created(t(9))
    result = reconcile_cycle(cycle_input(
        jobs=[*jobs, high], tree=tree, clusters=[gpu_cluster("c1", 10)],
        priority_classes=PRIORITIES, prior=prior_of(first.decisions)))
    d = by_name(result)
    assert (d["high"].phase, d["high"].cluster) == (Phase.ADMITTED, "c1")
    assert evicted(result) == {"five"}
    assert d["five"].preempted_by == "PyTorchJob team-a/high"


@pytest.mark.parametrize(("preemption", "newer_equal_preempted"), [
    (None, False),  # LowerPriority, the default
    (PreemptionPolicy.LOWER_PRIORITY, False),
    (PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY, True),
    (PreemptionPolicy.NEVER, False),
])
def test_preemption_policy_per_quota(preemption: PreemptionPolicy | None,
                                     newer_equal_preempted: bool) -> None:
    """``running`` (admitted last cycle, enqueued later) holds the cluster; ``waiting``
    has equal priority and was enqueued earlier."""
    running = gpu_job("running", 8, "team-a").created(t(5))
    waiting = gpu_job("waiting", 8, "team-a").created(t(1))
    first = one_quota(running)
    fleet = None if preemption is None else settings(root__qa=QuotaSettings(
        preemption=preemption))
    result = reconcile_cycle(cycle_input(
        jobs=[running, waiting], tree=simple_tree(quota("qa", ns=["team-a"])),
        clusters=[gpu_cluster("c1", 8)], priority_classes=PRIORITIES,
        prior=prior_of(first.decisions), settings=fleet))
    d = by_name(result)
    if newer_equal_preempted:
        assert (d["waiting"].phase, d["running"].phase) == (Phase.ADMITTED, Phase.QUEUED)
        assert d["running"].preemption_reason == \
            "its priority is the same and it was enqueued later, in the same quota"
    else:
        assert (d["waiting"].phase, d["running"].phase) == (Phase.QUEUED, Phase.ADMITTED)
        assert evicted(result) == set()


def test_never_policy_stops_priority_preemption() -> None:
    low = gpu_job("low", 8, "team-a").priority_class("low")
    first = one_quota(low)
    result = reconcile_cycle(cycle_input(
        jobs=[low, gpu_job("high", 8, "team-a").priority_class("high")],
        tree=simple_tree(quota("qa", ns=["team-a"])), clusters=[gpu_cluster("c1", 8)],
        priority_classes=PRIORITIES, prior=prior_of(first.decisions),
        settings=settings(root__qa=QuotaSettings(preemption=PreemptionPolicy.NEVER))))
    assert evicted(result) == set()
    assert by_name(result)["high"].phase is Phase.QUEUED


def test_a_non_preemptible_job_is_never_a_victim() -> None:
    np_low = gpu_job("np-low", 8, "team-a").priority_class("low").non_preemptible().obj()
    result = reconcile_cycle(cycle_input(
        jobs=[np_low, gpu_job("high", 8, "team-a").priority_class("high")],
        tree=simple_tree(quota("qa", ns=["team-a"], min={"gpu": "8"})),
        clusters=[gpu_cluster("c1", 8)], priority_classes=PRIORITIES,
        prior=[admitted_prior(np_low, cluster="c1", quota="root/qa", priority=10)]))
    d = by_name(result)
    assert (d["np-low"].phase, d["high"].phase) == (Phase.ADMITTED, Phase.QUEUED)
    assert evicted(result) == set()


def test_the_smallest_set_of_victims() -> None:
    """One 10-GPU node, full: low-c (2 GPUs, admitted last) ranks first as a victim, but
    freeing 4 GPUs needs low-b too; low-c alone was not needed and is given back."""
    holders = [gpu_job("low-a", 4, "team-a").priority_class("low").obj(),
               gpu_job("low-b", 4, "team-a").priority_class("low").obj(),
               gpu_job("low-c", 2, "team-a").priority_class("low").obj()]
    result = reconcile_cycle(cycle_input(
        jobs=[*holders, gpu_job("high", 4, "team-a").priority_class("high")],
        tree=simple_tree(quota("qa", ns=["team-a"])),
        clusters=[gpu_cluster("c1", 10)], priority_classes=PRIORITIES,
        prior=[admitted_prior(h, cluster="c1", quota="root/qa", priority=10,
                              admitted_at=t(i)) for i, h in enumerate(holders)]))
    d = by_name(result)
    assert d["high"].phase is Phase.ADMITTED
    assert evicted(result) == {"low-b"}
    assert (d["low-a"].phase, d["low-c"].phase) == (Phase.ADMITTED, Phase.ADMITTED)
    assert result.cluster_free["c1"][GPU] == 0


def test_the_most_recently_admitted_of_equal_victims_goes_first() -> None:
    older = gpu_job("older", 8, "team-a").priority_class("low").obj()
    newer = gpu_job("newer", 8, "team-a").priority_class("low").obj()
    result = reconcile_cycle(cycle_input(
        jobs=[older, newer, gpu_job("high", 8, "team-a").priority_class("high")],
        tree=simple_tree(quota("qa", ns=["team-a"])), clusters=[gpu_cluster("c1", 8, 8)],
        priority_classes=PRIORITIES,
        prior=[admitted_prior(older, cluster="c1", quota="root/qa", priority=10,
                              admitted_at=t(1)),
               admitted_prior(newer, cluster="c1", quota="root/qa", priority=10,
                              admitted_at=t(2))]))
    assert evicted(result) == {"newer"}


def test_victims_admitted_together_rank_the_same_in_their_cycle_and_the_next() -> None:
    """qb's six jobs are admitted in one cycle, b-5 (enqueued first) first and
    b-0 last; qa's job then reclaims two of them. Jobs admitted together share
    their admission time, and the next reconcile knows no other order of them:
    the most recent of them is the last by name, b-5, whether the reclaim comes
    in the cycle that admits them (they then stay queued: they never ran) or
    in the next one. Ranked by the order of admission within the cycle, the
    first would leave b-0 and b-1 out, the second b-5 and b-4."""
    qtree = simple_tree(quota("qa", min={"gpu": "4"}, max={"gpu": "8"}, ns=["team-a"]),
                        quota("qb", min={"gpu": "4"}, max={"gpu": "8"}, ns=["team-b"]),
                        total={"gpu": "8"})
    borrowers = [gpu_job(f"b-{i}", 1, "team-b").priority_class("mid").created(t(10 - i))
                 for i in range(6)]
    reclaimer = gpu_job("a-1", 4, "team-a").priority_class("low").created(t(20))

    def reconcile(jobs: list[JobBuilder], prior: CycleResult | None = None) -> CycleResult:
        return reconcile_cycle(cycle_input(
            jobs=jobs, tree=qtree, clusters=[gpu_cluster("c1", 8, 8)],
            priority_classes=PRIORITIES, prior=prior_of(prior.decisions) if prior else ()))

    together = reconcile([*borrowers, reclaimer])
    first = reconcile(borrowers)
    assert all(d.phase is Phase.ADMITTED for d in first.decisions)
    after = reconcile([*borrowers, reclaimer], first)
    waiting = {d.key.name for d in together.decisions if d.phase is Phase.QUEUED}
    assert waiting == evicted(after) == {"b-5", "b-4"}
    assert by_name(together)["a-1"].phase is Phase.ADMITTED
    again = reconcile([*borrowers, reclaimer], together)
    assert [(d.key.name, d.phase, d.cluster) for d in again.decisions] == \
        [(d.key.name, d.phase, d.cluster) for d in together.decisions]


def test_most_recent_first_orders_by_admission_time_then_key_both_descending() -> None:
    """Names that are prefixes of others, a dash (before digits and letters),
    text beyond ASCII, and a kept job's empty admission time."""
    keys = [JobKey("kubeflow.org", kind, ns, name)
            for kind in ("PyTorchJob", "MPIJob") for ns in ("team-a", "team-a-b", "é")
            for name in ("j", "j-1", "j1", "j10", "jé", "j\u4e00")]
    jobs = [(at, key) for at in ("", t(1), t(2), "2026-01-01T00:00:01.5Z") for key in keys]
    newest_first = sorted(jobs, reverse=True)
    assert sorted(jobs, key=lambda j: most_recent_first(*j)) == newest_first
    assert newest_first[0] == (t(2), JobKey("kubeflow.org", "PyTorchJob", "é", "j\u4e00"))


def test_no_preemption_when_it_would_not_help() -> None:
    """The low job runs on c2, but the policy only lets high run on c1 (full of mid)."""
    low = gpu_job("low", 8, "team-a").priority_class("low").obj()
    mid = gpu_job("mid", 8, "team-a").priority_class("high").obj()
    result = reconcile_cycle(cycle_input(
        jobs=[low, mid, gpu_job("high", 8, "team-a").priority_class("mid")],
        tree=simple_tree(quota("qa", ns=["team-a"])),
        clusters=[gpu_cluster("c1", 8), gpu_cluster("c2", 8)],
        policies=[policy().selects(name="high").clusters("c1"), policy("rest").selects()],
        priority_classes=PRIORITIES,
        prior=[admitted_prior(low, cluster="c2", quota="root/qa", priority=10),
               admitted_prior(mid, cluster="c1", quota="root/qa", priority=1000)]))
    d = by_name(result)
    assert d["high"].phase is Phase.QUEUED
    assert evicted(result) == set()


def test_capacity_only_jobs_are_never_victims() -> None:
    cap = gpu_job("cap", 8, "team-a").priority_class("low").obj()
    result = reconcile_cycle(cycle_input(
        jobs=[cap, gpu_job("high", 8, "team-a").priority_class("high")],
        tree=simple_tree(quota("qa", ns=["team-a"])), clusters=[gpu_cluster("c1", 8)],
        policies=[policy("cap").selects(name="cap").capacity_only(), policy("queued")],
        priority_classes=PRIORITIES,
        prior=[admitted_prior(cap, cluster="c1", quota="root/qa", priority=10)]))
    d = by_name(result)
    assert (d["cap"].phase, d["high"].phase) == (Phase.ADMITTED, Phase.QUEUED)


# -- reclaiming borrowed quota -----------------------------------------------------------


def reclaim_case(b_gpus: int, a_gpus: int, *, b_priority: str = "high") -> CycleResult:
    """qa and qb each have min 8 of the root's 16 GPUs; one cluster of two 8-GPU nodes.

    qb's job (pods of 4 GPUs) was admitted last cycle with ``b_gpus``; qa's new job
    (pods of 4 GPUs) asks ``a_gpus``.
    """
    b = gpu_job("b-running", 4, "team-b", replicas=b_gpus // 4).priority_class(b_priority).obj()
    return reconcile_cycle(cycle_input(
        jobs=[b, gpu_job("a-new", 4, "team-a", replicas=a_gpus // 4).priority_class("low")],
        tree=simple_tree(quota("qa", ns=["team-a"], min={"gpu": "8"}),
                         quota("qb", ns=["team-b"], min={"gpu": "8"}), total={"gpu": "16"}),
        clusters=[gpu_cluster("c1", 8, 8)], priority_classes=PRIORITIES,
        prior=[admitted_prior(b, cluster="c1", quota="root/qb",
                              priority=PRIORITIES[b_priority])]))


def test_a_job_within_its_min_reclaims_from_a_borrower_whatever_its_priority() -> None:
    result = reclaim_case(b_gpus=16, a_gpus=8)
    d = by_name(result)
    assert (d["a-new"].phase, d["b-running"].phase) == (Phase.ADMITTED, Phase.QUEUED)
    assert "reclaiming quota root/qb" in d["b-running"].reason
    assert result.quota_used["root/qa"][GPU] == 8000


def test_a_job_that_would_borrow_does_not_reclaim() -> None:
    """a-new asks 12 > qa's min 8: it cannot reclaim, and qb is not below it in priority."""
    result = reclaim_case(b_gpus=12, a_gpus=12)
    assert evicted(result) == set()
    assert by_name(result)["a-new"].phase is Phase.QUEUED


def test_no_reclaim_from_a_quota_within_its_min() -> None:
    """qb uses exactly its min (8 GPUs): it borrows nothing, so there is nothing to
    reclaim. a-new (8 GPUs, within qa's min) waits for the one 8-GPU cluster that
    b-running holds (DESIGN §3 Preemption: reclaim only from quotas using more than
    their min)."""
    b = gpu_job("b-running", 8, "team-b").priority_class("low").obj()
    result = reconcile_cycle(cycle_input(
        jobs=[b, gpu_job("a-new", 8, "team-a").priority_class("low")],
        tree=simple_tree(quota("qa", ns=["team-a"], min={"gpu": "8"}),
                         quota("qb", ns=["team-b"], min={"gpu": "8"}), total={"gpu": "16"}),
        clusters=[gpu_cluster("c1", 8)], priority_classes=PRIORITIES,
        prior=[admitted_prior(b, cluster="c1", quota="root/qb", priority=10)]))
    d = by_name(result)
    assert (d["b-running"].phase, d["a-new"].phase) == (Phase.ADMITTED, Phase.QUEUED)
    assert evicted(result) == set()


def test_two_quotas_at_their_min_do_not_evict_each_other() -> None:
    """Two heads of equal priority, one per quota, each within its quota's min, one
    8-GPU cluster: the first admitted keeps the cluster; nobody is preempted."""
    result = reconcile_cycle(cycle_input(
        jobs=[gpu_job("a", 8, "team-a").created(t(1)),
              gpu_job("b", 8, "team-b").created(t(2))],
        tree=simple_tree(quota("qa", ns=["team-a"], min={"gpu": "8"}),
                         quota("qb", ns=["team-b"], min={"gpu": "8"}), total={"gpu": "16"}),
        clusters=[gpu_cluster("c1", 8)], priority_classes=PRIORITIES))
    d = by_name(result)
    assert (d["a"].phase, d["b"].phase) == (Phase.ADMITTED, Phase.QUEUED)
    assert evicted(result) == set()


def quota_mate_case(qa_min: int, *, y_class: str = "low", w_class: str = "high",
                    y_gpus: int = 8, w_pods: int = 1, z_gpus: int = 4
                    ) -> tuple[CycleInput, CycleResult]:
    """qa and qb share a cluster of an 8-GPU and a 4-GPU node, 12 GPUs, qa's min
    ``qa_min``, qb's the rest. qb borrows: ``y`` (8 GPUs, low) and ``w`` (4 in
    ``w_pods`` pods, high: not preemptible) ran there. ``x`` (qa, high, 8 GPUs)
    waits, having spared ``y``, whose reclaim sent it back; ``z`` (qa, low, 4
    GPUs) is new: within qa's min alone. ``w`` of a lower class than ``y`` is
    preemptible: ``y`` may evict it."""
    y = gpu_job("y", y_gpus, "team-b").priority_class(y_class).obj()
    w = gpu_job("w", 4 // w_pods, "team-b", replicas=w_pods).priority_class(w_class)
    w = (w.non_preemptible() if PRIORITIES[w_class] >= PRIORITIES[y_class] else w).obj()
    x = gpu_job("x", 8, "team-a").priority_class("high").obj()
    z = gpu_job("z", z_gpus, "team-a").priority_class("low").obj()
    waits = replace(admitted_prior(x, cluster="c1", quota="root/qa", priority=1000),
                    phase=Phase.QUEUED, cluster=None, admitted_at=None, position=1,
                    preempted_by=str(y.key), preemptions=1,
                    preemption_reason="reclaiming quota root/qa borrowed above its min")
    inp = cycle_input(
        jobs=[y, w, x, z],
        tree=simple_tree(quota("qa", ns=["team-a"], min={"gpu": str(qa_min)}),
                         quota("qb", ns=["team-b"], min={"gpu": str(12 - qa_min)}),
                         total={"gpu": "12"}),
        clusters=[gpu_cluster("c1", 8, 4)], priority_classes=PRIORITIES,
        prior=[admitted_prior(y, cluster="c1", quota="root/qb", priority=PRIORITIES[y_class]),
               admitted_prior(w, cluster="c1", quota="root/qb", priority=PRIORITIES[w_class]),
               waits])
    return inp, reconcile_cycle(inp)


def test_a_job_reclaims_from_the_job_that_reclaimed_from_it_when_that_one_could_not_return(
        ) -> None:
    """x spared y, whose reclaim sent it back. But y, evicted, could not reclaim in
    return: qb holds w (high, not preemptible by y) and would be above its min
    with y back. So x, within qa's min (8 of 8), reclaims y's node at once: a
    guaranteed min is not lost for good to the job that took it."""
    d = by_name(quota_mate_case(qa_min=8)[1])
    assert {n: x.phase for n, x in d.items()} == {
        "x": Phase.ADMITTED, "w": Phase.ADMITTED, "y": Phase.QUEUED, "z": Phase.QUEUED}
    assert d["y"].preempted_by == "PyTorchJob team-a/x"
    assert d["y"].preemption_reason.startswith(RECLAIMING)
    # qa's min is 6: x cannot reclaim (8 > 6); z (within it) does, and x evicts z
    # by priority and takes the node, borrowing: y still could not return (12 > 6)
    d = by_name(quota_mate_case(qa_min=6)[1])
    assert {n: x.phase for n, x in d.items()} == {
        "x": Phase.ADMITTED, "w": Phase.ADMITTED, "y": Phase.QUEUED, "z": Phase.QUEUED}
    assert d["y"].preempted_by == "PyTorchJob team-a/z"  # (z never ran: no record)


def test_a_job_does_not_reclaim_a_place_a_waiting_job_of_its_quota_would_take_borrowing(
        ) -> None:
    """qa's min is 5, qb's 7; y (mid, 7 GPUs) may evict w (low, two pods of 2):
    y, evicted, could reclaim back (qb within its min once w is out). z (5 GPUs,
    within qa's min) fits only in y's place; x in it would borrow (8 of 5), so y
    would reclaim it back and z the place again, round after round. z does not
    reclaim from y while x waits: nobody is evicted."""
    inp, result = quota_mate_case(qa_min=5, y_class="mid", w_class="low", y_gpus=7, w_pods=2,
                                  z_gpus=5)
    d = by_name(result)
    assert {n: x.phase for n, x in d.items()} == {
        "x": Phase.QUEUED, "w": Phase.ADMITTED, "y": Phase.ADMITTED, "z": Phase.QUEUED}
    assert evicted(result) == {"x"}  # (its record, from before)
    assert not result.problems
    told = explain_decision(d["z"], decisions=result.decisions, tree=inp.tree,
                            quota_used=result.quota_used, cluster_free=result.cluster_free,
                            clusters={c.name: c for c in inp.clusters})
    assert ("- it does not reclaim from PyTorchJob team-b/y while PyTorchJob team-a/x of "
            "its quota, whose place that job reclaimed, waits: it would evict this one and "
            "take the place, borrowing above the quota's min, to be reclaimed again") in told
    told = explain_decision(d["x"], decisions=result.decisions, tree=inp.tree,
                            quota_used=result.quota_used, cluster_free=result.cluster_free,
                            clusters={c.name: c for c in inp.clusters})
    assert ("- it does not reclaim from PyTorchJob team-b/y, which reclaimed from it, while "
            "it waits") in told
    assert not any("of its quota, whose place" in line for line in told)  # (z may not evict x)


# -- retries ------------------------------------------------------------------------------


def test_a_job_a_full_quota_blocks_is_not_tried_again_while_that_quota_stays_full(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``w`` (qa may not preempt) is blocked by the full root; then ``h`` takes the
    place of a low job of qb: the root is as full as before, so trying ``w``
    again could not help. The cycle still ends as it must."""
    import reconciler.core.cycle as cycle

    searched: list[str] = []
    real = cycle.find_victims

    def counting(ctx: object, **kw: object) -> object:
        searched.append(kw["job"].key.name)  # type: ignore[attr-defined]
        return real(ctx, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(cycle, "find_victims", counting)
    total = {"cpu": "1000", "gpu": "8"}
    qtree = simple_tree(quota("qa", min={"gpu": "4"}, max={"gpu": "8"}, ns=["team-a"]),
                        quota("qb", min={"gpu": "4"}, max={"gpu": "8"}, ns=["team-b"]),
                        total=total)
    running = [gpu_job(f"{ns}-low-{i}", 1, f"team-{ns}").priority_class("low").created(t(i))
               for ns in "ab" for i in range(4)]
    first = reconcile_cycle(cycle_input(jobs=running, tree=qtree,
                                        clusters=[gpu_cluster("c1", 8, 8)],
                                        priority_classes=PRIORITIES))
    assert all(d.phase is Phase.ADMITTED for d in first.decisions)
    w = gpu_job("w", 1, "team-a").priority_class("high").created(t(10))
    h = gpu_job("h", 1, "team-b").priority_class("mid").created(t(11))
    result = reconcile_cycle(cycle_input(
        jobs=[*running, w, h], tree=qtree, clusters=[gpu_cluster("c1", 8, 8)],
        priority_classes=PRIORITIES, prior=prior_of(first.decisions),
        settings=settings(root__qa=QuotaSettings(preemption=PreemptionPolicy.NEVER))))
    d = by_name(result)
    assert d["h"].phase is Phase.ADMITTED and d["w"].phase is Phase.QUEUED
    assert evicted(result) == {"b-low-3"}  # the newest of qb's low jobs
    assert "quota root nvidia.com/gpu" in d["w"].reason
    assert searched.count("w") == 1


# -- candidates merged as far as they are read -----------------------------------

_RUNS = st.lists(st.lists(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 40)),
                                   max_size=25), min_size=1, max_size=4), max_size=3)


@given(_RUNS, st.lists(st.integers(0, 60), max_size=8))
def test_candidates_read_one_by_one_are_those_of_the_whole_merge(
        groups: list[list[list[tuple[int, int]]]], reads: list[int]) -> None:
    """A Ranked merged from runs gives, item by item (``at``: the first few merged one
    at a time, then the whole sorted), what a stable sort of each group's runs gives,
    in any order of reads; and ``items`` is that list."""
    made = [[_Run(0, [((rank, n), None, f"g{g}r{r}i{i}") for i, (rank, n) in
                      enumerate(sorted(run))]) for r, run in enumerate(group)]
            for g, group in enumerate(groups)]
    expected = [c for group in made
                for c in sorted((c for run in group for c in run.items), key=lambda c: c[0])]
    ranked = Ranked(None, made)
    for i in [*reads, *range(len(expected) + 2)]:
        assert ranked.at(i) == (expected[i] if i < len(expected) else None)
    assert ranked.items == expected


def _slots_case(a_min: dict[str, str]) -> CycleResult:
    return reconcile_cycle(_slots_input(a_min))


def _slots_input(a_min: dict[str, str],
                 prior: list[PriorPlacement] | None = None) -> CycleInput:
    """qb runs the root's 3 job slots (its min names none); a-new of qa (min
    ``a_min``) comes."""
    bs = [gpu_job(f"b{i}", 1, "team-b").priority_class("low").created(t(i)).obj()
          for i in range(3)]
    return (cycle_input(
        jobs=[*bs, gpu_job("a-new", 1, "team-a").priority_class("low").created(t(5))],
        tree=simple_tree(quota("qa", ns=["team-a"], min=a_min,
                               max={"gpu": "8", "max_jobs": "2"}),
                         quota("qb", ns=["team-b"], min={"gpu": "4"}, max={"gpu": "8"}),
                         total={"gpu": "8", "max_jobs": "3"}),
        clusters=[gpu_cluster("c1", 8)], priority_classes=PRIORITIES,
        prior=prior if prior is not None else [
            admitted_prior(b, cluster="c1", quota="root/qb", priority=10, admitted_at=t(i))
            for i, b in enumerate(bs)]))


def test_a_job_slot_a_min_guarantees_is_reclaimed_from_a_sibling_whose_min_names_none() -> None:
    """qa's min guarantees one of the root's job slots; qb's names none, so its
    min of them is 0 (DESIGN §3: missing from min means 0) and the slots it
    runs are borrowed. a-new waited, told to raise the root's max."""
    result = _slots_case({"gpu": "4", "max_jobs": "1"})
    d = by_name(result)
    assert d["a-new"].phase is Phase.ADMITTED, d["a-new"].reason
    assert evicted(result) == {"b2"} and d["b2"].phase is Phase.QUEUED  # (the newest)
    assert "reclaiming quota root/qb" in d["b2"].reason
    # a fixed point: b2 does not take its slot back (qb's min of them is 0)
    again = reconcile_cycle(_slots_input({"gpu": "4", "max_jobs": "1"},
                                         prior=prior_of(result.decisions)))
    assert [(x.key.name, x.phase) for x in again.decisions] == [
        (x.key.name, x.phase) for x in result.decisions]


def test_no_job_slot_is_reclaimed_where_no_min_guarantees_one() -> None:
    """Without a min of job slots, qa's job waits for one: no reclaim."""
    result = _slots_case({"gpu": "4"})
    d = by_name(result)
    assert d["a-new"].phase is Phase.QUEUED and "at most 3 job(s)" in d["a-new"].reason
    assert all(d[n].phase is Phase.ADMITTED for n in ("b0", "b1", "b2"))
