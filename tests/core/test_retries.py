"""When the cycle asks a job that failed to try again (``_may_have_changed``).

A job that failed is tried again in a later pass only once an admission or
eviction since may have helped it. Asking too often costs time only (the
property test in ``tests/properties`` checks that trying every job each time
gives the same decisions); these tests pin down the rules that keep it from
asking when nothing could have helped.
"""

from __future__ import annotations

from reconciler.core.cycle import CycleInput, _Cycle
from reconciler.core.model import JobKey
from reconciler.core.preemption import Blocked, find_victims
from tests.builders import GPU, cycle_input, gpu_cluster, gpu_job, quota, simple_tree


def t(second: int) -> str:
    return f"2026-01-01T00:00:{second:02d}Z"


def full_root() -> CycleInput:
    """root: 16 GPUs, qa and qb each guaranteed 8. qa runs a1 (4) and a2 (8), so
    it borrows 4; qb runs b1 (4); x (qa, 4 GPUs, the same priority as a1 and a2,
    so it may evict neither) waits: the root is full."""
    return cycle_input(
        jobs=[gpu_job("a1", 4, "team-a").created(t(1)), gpu_job("a2", 8, "team-a").created(t(2)),
              gpu_job("b1", 4, "team-b").created(t(3)), gpu_job("x", 4, "team-a").created(t(4))],
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
