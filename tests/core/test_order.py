"""Queue order: within a queue, across queues, StrictFIFO vs BestEffortFIFO, positions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconciler.core.cycle import CycleResult, queue_order, reconcile_cycle
from reconciler.core.model import FleetSettings, JobKey, Phase, PriorPlacement
from tests.builders import (
    BATCH_JOB,
    SOURCE_TIME,
    JobBuilder,
    by_name,
    cluster,
    cycle_input,
    gpu_cluster,
    gpu_job,
    job,
    quota,
    settings,
    simple_tree,
    strict_fifo,
)

PRIORITIES = {"high": 1000, "p5": 5, "p1": 1}


def t(second: int) -> str:
    return f"2026-01-01T00:00:{second:02d}Z"


def holder(gpus: int = 8, ns: str = "team-a") -> JobBuilder:
    """A top-priority job that takes ``gpus`` of the one 8-GPU cluster first."""
    return gpu_job("holder", gpus, ns=ns).priority_class("high").created(t(0))


def one_queue(*jobs: JobBuilder, free_after_holder: int = 0,
              fleet: FleetSettings | None = None) -> CycleResult:
    """Every job in one leaf quota (namespaces team-a and team-b), one 8-GPU cluster."""
    return reconcile_cycle(cycle_input(
        jobs=[holder(8 - free_after_holder), *jobs],
        tree=simple_tree(quota("q", ns=["team-a", "team-b"])),
        clusters=[gpu_cluster("c1", 8)], priority_classes=PRIORITIES,
        settings=fleet))


def queued_in_order(result: CycleResult) -> list[str]:
    waiting = [d for d in result.decisions if d.phase is Phase.QUEUED]
    return [d.key.name for d in sorted(waiting, key=lambda d: d.position or 0)]


# -- within a queue ----------------------------------------------------------------------


@pytest.mark.parametrize(("jobs", "expected"), [
    # priority first, whatever the enqueue time
    ([gpu_job("old-low", 8, ns="team-a").priority_class("p1").created(t(1)),
      gpu_job("new-high", 8, ns="team-a").priority_class("p5").created(t(9))],
     ["new-high", "old-low"]),
    # then enqueue time
    ([gpu_job("a-later", 8, ns="team-a").created(t(5)),
      gpu_job("b-earlier", 8, ns="team-a").created(t(2))],
     ["b-earlier", "a-later"]),
    # then namespace/name
    ([gpu_job("b", 8, ns="team-a").created(t(5)), gpu_job("a", 8, ns="team-b").created(t(5)),
      gpu_job("a", 8, ns="team-a").created(t(5))],
     None),
    # the three keys together
    ([gpu_job("z", 8, ns="team-a").priority_class("p1").created(t(1)),
      gpu_job("y", 8, ns="team-a").priority_class("p5").created(t(3)),
      gpu_job("x", 8, ns="team-a").priority_class("p5").created(t(2)),
      gpu_job("w", 8, ns="team-a").priority_class("p5").created(t(3))],
     ["x", "w", "y", "z"]),
], ids=["priority", "enqueue-time", "namespace-name", "all-keys"])
def test_within_a_queue(jobs: list[JobBuilder], expected: list[str] | None) -> None:
    result = one_queue(*jobs)
    if expected is None:  # same names in two namespaces: compare namespace/name
        waiting = sorted((d for d in result.decisions if d.phase is Phase.QUEUED),
                         key=lambda d: d.position or 0)
        assert [f"{d.key.namespace}/{d.key.name}" for d in waiting] == [
            "team-a/a", "team-a/b", "team-b/a"]
        return
    assert queued_in_order(result) == expected


@pytest.mark.parametrize(("jobs", "admitted"), [
    ([gpu_job("low", 8, ns="team-a").priority_class("p1").created(t(1)),
      gpu_job("high", 8, ns="team-a").priority_class("p5").created(t(9))], "high"),
    ([gpu_job("a-later", 8, ns="team-a").created(t(5)),
      gpu_job("b-earlier", 8, ns="team-a").created(t(2))], "b-earlier"),
    ([gpu_job("b", 8, ns="team-a").created(t(5)),
      gpu_job("a", 8, ns="team-b").created(t(5))], "b"),  # team-a/b before team-b/a
], ids=["priority", "enqueue-time", "namespace-name"])
def test_the_first_in_order_is_admitted(jobs: list[JobBuilder], admitted: str) -> None:
    result = reconcile_cycle(cycle_input(
        jobs=jobs, tree=simple_tree(quota("q", ns=["team-a", "team-b"])),
        clusters=[gpu_cluster("c1", 8)], priority_classes=PRIORITIES))
    assert [d.key.name for d in result.decisions if d.phase is Phase.ADMITTED] == [admitted]


def test_namespace_name_breaks_ties_whatever_the_kind() -> None:
    """DESIGN §3 Order: priority, enqueue time, then namespace/name (not kind or group)."""
    result = one_queue(
        job("b-batch", ns="team-a").kind(*BATCH_JOB).pod_set("worker", 1, cpu="1", gpu="8")
        .created(t(5)),
        gpu_job("a-pytorch", 8, ns="team-a").created(t(5)))
    assert queued_in_order(result) == ["a-pytorch", "b-batch"]


def test_enqueue_time_is_creation_then_the_kept_state_then_the_source_commit() -> None:
    kept = PriorPlacement(key=gpu_job("from-state", 8, ns="team-a").key(), phase=Phase.QUEUED,
                          enqueued_at="2025-12-31T00:00:00Z", quota="root/q")
    result = reconcile_cycle(cycle_input(
        jobs=[holder(), gpu_job("created", 8, ns="team-a").created("2025-12-30T00:00:00Z"),
              gpu_job("from-state", 8, ns="team-a"), gpu_job("new", 8, ns="team-a")],
        tree=simple_tree(quota("q", ns=["team-a"])), clusters=[gpu_cluster("c1", 8)],
        priority_classes=PRIORITIES, prior=[kept]))
    d = by_name(result)
    assert d["created"].enqueued_at == "2025-12-30T00:00:00Z"
    assert d["from-state"].enqueued_at == "2025-12-31T00:00:00Z"
    assert d["new"].enqueued_at == SOURCE_TIME
    assert queued_in_order(result) == ["created", "from-state", "new"]


# -- positions ---------------------------------------------------------------------------


def test_positions_run_from_one_per_queue() -> None:
    result = reconcile_cycle(cycle_input(
        jobs=[gpu_job("ha", 4, ns="team-a").priority_class("high"),
              gpu_job("hb", 4, ns="team-b").priority_class("high"),
              *(gpu_job(f"a{i}", 8, ns="team-a").created(t(i)) for i in range(3)),
              *(gpu_job(f"b{i}", 8, ns="team-b").created(t(10 - i)) for i in range(2))],
        tree=simple_tree(quota("qa", ns=["team-a"]), quota("qb", ns=["team-b"])),
        clusters=[gpu_cluster("c1", 8)], priority_classes=PRIORITIES))
    d = by_name(result)
    assert (d["ha"].phase, d["hb"].phase) == (Phase.ADMITTED, Phase.ADMITTED)
    assert (d["ha"].position, d["hb"].position) == (None, None)
    assert [d[f"a{i}"].position for i in range(3)] == [1, 2, 3]
    assert [d[f"b{i}"].position for i in range(2)] == [2, 1]
    assert {d[f"a{i}"].quota for i in range(3)} == {"root/qa"}


# -- across queues -----------------------------------------------------------------------


def two_heads(*jobs: JobBuilder, min_a: str = "4", min_b: str = "4",
              cluster_gpus: int = 8, total_gpus: int = 16) -> CycleResult:
    """Quotas qa (team-a) and qb (team-b) under a root of 16 GPUs, one cluster."""
    return reconcile_cycle(cycle_input(
        jobs=jobs,
        tree=simple_tree(quota("qa", ns=["team-a"], min={"gpu": min_a}),
                         quota("qb", ns=["team-b"], min={"gpu": min_b}),
                         total={"gpu": str(total_gpus)}),
        clusters=[cluster("c1").node("n1", cpu="96", gpu=str(cluster_gpus)).obj()],
        priority_classes=PRIORITIES))


# Both mins are below the 8 GPUs a head asks for, so the loser cannot reclaim: the
# order alone decides which head gets the cluster.
@pytest.mark.parametrize(("a", "b", "expected"), [
    # priority first, whatever the enqueue time
    (gpu_job("a", 8, "team-a").priority_class("p5").created(t(9)),
     gpu_job("b", 8, "team-b").priority_class("p1").created(t(1)), "a"),
    (gpu_job("a", 8, "team-a").priority_class("p1").created(t(1)),
     gpu_job("b", 8, "team-b").priority_class("p5").created(t(9)), "b"),
    # equal priority and share: enqueue time
    (gpu_job("a", 8, "team-a").created(t(9)), gpu_job("b", 8, "team-b").created(t(1)), "b"),
    (gpu_job("a", 8, "team-a").created(t(1)), gpu_job("b", 8, "team-b").created(t(9)), "a"),
], ids=["priority-a", "priority-b", "older-b", "older-a"])
def test_across_queues(a: JobBuilder, b: JobBuilder, expected: str) -> None:
    result = two_heads(a, b)
    assert [d.key.name for d in result.decisions if d.phase is Phase.ADMITTED] == [expected]
    assert [d.preemptions for d in result.decisions] == [0, 0]


@pytest.mark.parametrize(("used_a", "min_a", "used_b", "min_b", "winner", "older"), [
    ("4", "8", "2", "8", "b", "a"),  # 4/8 vs 2/8
    ("2", "8", "4", "8", "a", "b"),
    ("0", "8", "4", "8", "a", "b"),  # 0/8 vs 4/8
    ("6", "8", "3", "4", "b", "b"),  # equal shares (3/4): the older head
    ("4", "8", "0", "2", "b", "a"),  # 4/8 vs 0/2: DESIGN's used/min share
])
def test_across_queues_lowest_dominant_share_goes_first(
        used_a: str, min_a: str, used_b: str, min_b: str, winner: str, older: str) -> None:
    """Running jobs (top priority, admitted first) set each quota's usage; then one
    8-GPU head per queue competes for the 8 GPUs left. The head of the quota with the
    lower dominant used/min share wins, even when it was enqueued later."""
    created = {"a": t(9), "b": t(9), older: t(1)}
    jobs = [gpu_job("a", 8, "team-a").created(created["a"]),
            gpu_job("b", 8, "team-b").created(created["b"])]
    running = [(name, ns, int(used)) for name, ns, used in
               (("a-run", "team-a", used_a), ("b-run", "team-b", used_b)) if used != "0"]
    jobs += [gpu_job(name, used, ns).priority_class("high") for name, ns, used in running]
    busy = sum(used for _, _, used in running)
    # the root quota and the cluster have room for exactly one more 8-GPU head
    result = two_heads(*jobs, min_a=min_a, min_b=min_b, cluster_gpus=8 + busy,
                       total_gpus=max(16, 8 + busy))
    d = by_name(result)
    assert all(d[name].phase is Phase.ADMITTED for name, _, _ in running)
    loser = "b" if winner == "a" else "a"
    assert (d[winner].phase, d[loser].phase) == (Phase.ADMITTED, Phase.QUEUED)
    assert all(x.preemptions == 0 for x in result.decisions)


# -- queueing strategy -------------------------------------------------------------------


def fifo_case(fleet: FleetSettings | None) -> CycleResult:
    """4 GPUs free: the head wants 8 (does not fit now), the next wants 4 (fits)."""
    return one_queue(gpu_job("big-head", 8, ns="team-a").created(t(1)),
                     gpu_job("small", 4, ns="team-a").created(t(2)),
                     free_after_holder=4, fleet=fleet)


def test_best_effort_fifo_skips_a_head_that_does_not_fit() -> None:
    for fleet in (None, settings()):  # BestEffortFIFO is the default
        d = by_name(fifo_case(fleet))
        assert d["big-head"].phase is Phase.QUEUED
        assert d["big-head"].position == 1
        assert (d["small"].phase, d["small"].cluster) == (Phase.ADMITTED, "c1")


def test_strict_fifo_blocks_its_queue() -> None:
    d = by_name(fifo_case(settings(root__q=strict_fifo())))
    assert d["big-head"].phase is Phase.QUEUED
    assert d["small"].phase is Phase.QUEUED
    assert (d["big-head"].position, d["small"].position) == (1, 2)
    assert "blocked behind" in d["small"].reason and "big-head" in d["small"].reason


def test_strict_fifo_blocks_only_its_own_queue() -> None:
    result = reconcile_cycle(cycle_input(
        jobs=[holder(4), gpu_job("big-head", 8, ns="team-a").created(t(1)),
              gpu_job("small", 4, ns="team-a").created(t(2)),
              gpu_job("other", 4, ns="team-b").created(t(3))],
        tree=simple_tree(quota("qa", ns=["team-a"]), quota("qb", ns=["team-b"])),
        clusters=[gpu_cluster("c1", 8)], priority_classes=PRIORITIES,
        settings=settings(root__qa=strict_fifo())))
    d = by_name(result)
    assert d["small"].phase is Phase.QUEUED
    assert (d["other"].phase, d["other"].cluster) == (Phase.ADMITTED, "c1")


def test_strict_fifo_is_not_blocked_by_an_inadmissible_job() -> None:
    d = by_name(one_queue(gpu_job("huge", 16, ns="team-a").created(t(1)),
                          gpu_job("small", 4, ns="team-a").created(t(2)),
                          free_after_holder=4, fleet=settings(root__q=strict_fifo())))
    assert d["huge"].phase is Phase.INADMISSIBLE
    assert d["small"].phase is Phase.ADMITTED


# -- the queue order key ----------------------------------------------------------

_TEXT = st.text(alphabet=st.sampled_from(["", "\0", "\1", "-", "a", "b", "z", "é", "\U0001f600"]
                                         ).filter(bool), max_size=4)
_PRIORITY = st.one_of(st.integers(-20, 20), st.integers(-(10 ** 30), 10 ** 30),
                      st.sampled_from([0, 9, 10, 99, 100, -9, -10, -99, -100, 2 ** 31 - 1,
                                       -(2 ** 31)]))


@given(st.lists(st.tuples(_PRIORITY, _TEXT, _TEXT, _TEXT, _TEXT, _TEXT), min_size=2,
                max_size=30))
def test_the_queue_order_key_sorts_as_the_tuple_it_stands_for(
        rows: list[tuple[int, str, str, str, str, str]]) -> None:
    """(-priority, enqueue time, namespace, name, group, kind), as one string: any
    whole number, texts that are prefixes of others, NULs, text beyond ASCII."""
    keyed = [(queue_order(p, at, JobKey(g, k, ns, n)), (-p, at, ns, n, g, k))
             for p, at, ns, n, g, k in rows]
    by_key = sorted(keyed, key=lambda r: r[0])
    by_tuple = sorted(keyed, key=lambda r: r[1])
    assert [r[1] for r in by_key] == [r[1] for r in by_tuple]
    # equal keys for equal tuples only
    assert len({r[0] for r in keyed}) == len({r[1] for r in keyed})
