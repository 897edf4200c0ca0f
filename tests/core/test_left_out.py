"""Settled jobs left out of an incremental cycle, and taken in at its first change."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reconciler.core import cycle
from reconciler.core.model import Phase
from tests.builders import by_name, cycle_input, default_policies, gpu_job, policy, prior_of

CLASSES = {"high": 100, "mid": 50}


def test_jobs_left_out_join_the_pass_only_where_it_has_not_come_yet(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``h`` (high priority) comes before the pushed ``j`` in the pass, ``l`` after
    it. When ``j`` is admitted, ``h`` has been passed over already (it would have
    been, parked, with it in from the start), so only ``l`` joins its queue; and
    the decisions are those of a cycle with both in from the start."""
    jobs = [gpu_job("a-run", 7, "a").priority_class("high"),  # runs: h may not preempt it
            gpu_job("h", 8, "a").priority_class("high"),
            gpu_job("l", 8, "a")]
    first = cycle.reconcile_cycle(cycle_input(jobs=jobs, priority_classes=CLASSES))
    assert {n: d.phase for n, d in by_name(first).items()} == {
        "a-run": Phase.ADMITTED, "h": Phase.QUEUED, "l": Phase.QUEUED}
    prior = prior_of(first.decisions)
    settled = frozenset(p.key for p in prior if p.phase is Phase.QUEUED)
    pushed = gpu_job("j", 1, "b").priority_class("mid")  # fits the one GPU left
    inp = replace(cycle_input(jobs=[*jobs, pushed], priority_classes=CLASSES, prior=prior),
                  settled=settled)

    seen: list[tuple[set[str], set[str]]] = []  # (taken in, in their queues after)
    real = cycle._Cycle._take_in_left_out

    def take(self: cycle._Cycle) -> None:
        names = {k.name for k in self.left_out}
        real(self)
        queues = getattr(self, "_queues", {})  # made at the first pass's step 5
        queued = {p.job.key.name for q in queues.values() for _, p in q}
        seen.append((names, queued & names))

    monkeypatch.setattr(cycle._Cycle, "_take_in_left_out", take)
    got = cycle._run(inp, cycle._left_out(inp))
    assert seen == [({"h", "l"}, {"l"})]
    monkeypatch.setattr(cycle._Cycle, "_take_in_left_out", real)
    assert got == cycle._run(inp, {})
    assert {n: (d.phase, d.position) for n, d in by_name(got).items()} == {
        "a-run": (Phase.ADMITTED, None), "j": (Phase.ADMITTED, None),
        "h": (Phase.QUEUED, 1), "l": (Phase.QUEUED, 2)}


def test_jobs_left_out_are_taken_in_before_the_queues_when_a_job_is_placed_by_capacity(
        ) -> None:
    """A pushed job its policy places by capacity alone (step 4) is the first
    change: the jobs left out are in the queues the pass then makes."""
    jobs = [gpu_job("a-run", 7, "a").priority_class("high"),
            gpu_job("h", 8, "a").priority_class("high"), gpu_job("l", 8, "a")]
    policies = [*default_policies(),
                policy("by-capacity", ns="c").priority(10).capacity_only().obj()]
    first = cycle.reconcile_cycle(cycle_input(jobs=jobs, priority_classes=CLASSES,
                                              policies=policies))
    prior = prior_of(first.decisions)
    settled = frozenset(p.key for p in prior if p.phase is Phase.QUEUED)
    inp = replace(cycle_input(jobs=[*jobs, gpu_job("k", 1, "c")], priority_classes=CLASSES,
                              policies=policies, prior=prior), settled=settled)
    taken: list[bool] = []
    real = cycle._Cycle._take_in_left_out

    def take(self: cycle._Cycle) -> None:
        taken.append(self._trying is None and not hasattr(self, "_queues"))
        real(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cycle._Cycle, "_take_in_left_out", take)
        got = cycle._run(inp, cycle._left_out(inp))
    assert taken == [True]
    assert got == cycle._run(inp, {})
    assert {n: (d.phase, d.position) for n, d in by_name(got).items()} == {
        "a-run": (Phase.ADMITTED, None), "k": (Phase.ADMITTED, None),
        "h": (Phase.QUEUED, 1), "l": (Phase.QUEUED, 2)}


def test_decisions_left_as_they_were_are_named_and_read_back_as_their_priors() -> None:
    """A pushed job that waits between ``h`` and ``l`` in their queue: ``h``
    keeps its decision and its place, so the cycle names it as taken from its
    prior, while ``l`` moves down one place and is not named. Writing the
    placements with that hint gives the very bytes of writing them anew."""
    from reconciler.fleet.state import render_placements, render_placements_reusing

    jobs = [gpu_job("a-run", 7, "a").priority_class("high"),
            gpu_job("h", 8, "a").priority_class("high"), gpu_job("l", 8, "a")]
    first = cycle.reconcile_cycle(cycle_input(jobs=jobs, priority_classes=CLASSES))
    _, written = render_placements_reusing(first.decisions, {})
    prior = {key: was for key, (was, _) in written.items()}
    settled = frozenset(k for k, p in prior.items() if p.phase is Phase.QUEUED)
    pushed = gpu_job("j", 8, "a").priority_class("mid")  # waits: no room, may not preempt
    inp = replace(cycle_input(jobs=[*jobs, pushed], priority_classes=CLASSES,
                              prior=list(prior.values())), settled=settled)
    got = cycle.reconcile_cycle(inp)
    assert {n: (d.phase, d.position) for n, d in by_name(got).items()} == {
        "a-run": (Phase.ADMITTED, None), "h": (Phase.QUEUED, 1), "j": (Phase.QUEUED, 2),
        "l": (Phase.QUEUED, 3)}
    assert {k.name for k in got.from_prior} == {"h"}
    data, now = render_placements_reusing(got.decisions, written, got.from_prior)
    assert data == render_placements(got.decisions)
    assert [k.name for k in now if now[k] is written.get(k)] == ["a-run", "h"]
    assert cycle.reconcile_cycle(replace(inp, settled=frozenset())).from_prior == frozenset()


def test_a_decision_left_as_it_was_is_its_prior_itself() -> None:
    """``h`` keeps its place: its decision is the very object the state was read
    back as (nothing is built for it), while ``l``, one place down, gets a new one.
    A prior whose requests are not those of its blob (a placements.yaml edited by
    hand) is decided anew, with the blob's requests, in the same place."""
    from reconciler.core.model import evolve
    from reconciler.fleet.state import render_placements_reusing

    jobs = [gpu_job("a-run", 7, "a").priority_class("high"),
            gpu_job("h", 8, "a").priority_class("high"), gpu_job("l", 8, "a")]
    first = cycle.reconcile_cycle(cycle_input(jobs=jobs, priority_classes=CLASSES))
    _, written = render_placements_reusing(first.decisions, {})
    prior = {key: was for key, (was, _) in written.items()}
    by_key = {k.name: k for k in prior}
    settled = frozenset(k for k, p in prior.items() if p.phase is Phase.QUEUED)
    pushed = gpu_job("j", 8, "a").priority_class("mid")
    inp = replace(cycle_input(jobs=[*jobs, pushed], priority_classes=CLASSES,
                              prior=list(prior.values())), settled=settled)
    got = by_name(cycle.reconcile_cycle(inp))
    assert got["h"] is prior[by_key["h"]]
    assert got["l"] is not prior[by_key["l"]] and got["l"].position == 3
    assert got["l"] == evolve(prior[by_key["l"]], position=3)

    edited = evolve(prior[by_key["h"]], requests={"cpu": 1000})
    again = cycle.reconcile_cycle(replace(inp, prior={**inp.prior, by_key["h"]: edited}))
    assert by_key["h"] in again.from_prior
    assert by_name(again)["h"] is not edited and by_name(again)["h"] == got["h"]
