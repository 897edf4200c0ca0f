"""The scenario suite: every ``tests/scenarios/*.yaml`` is one parametrized case.

Each scenario re-creates a published case of Kueue, scheduler-plugins
CapacityScheduling, Kube Queue / koordinator elastic quota or Volcano capacity
in fleetq terms (README.md here), runs one ``reconcile_cycle`` and checks:

* the expected outcome per job (admitted where, preempted by whom, queued or
  inadmissible with a reason matching a pattern);
* no other admitted job moved or was evicted, and every waiting job is named;
* a victim left its cluster, kept its enqueue time and says who preempted it;
* reconciling again on the state just written changes nothing (the decisions;
  and, in one test over all scenarios, not even a reason).
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from reconciler.core.cycle import reconcile_cycle
from reconciler.core.model import Decision, JobKey, Phase, PodSetCount

from .loader import Scenario, load_scenario, round_trip, scenario_paths

PATHS = scenario_paths()


def _decisions(scenario: Scenario) -> dict[str, Decision]:
    result = reconcile_cycle(scenario.cycle_input)
    by_key = {d.key: d for d in result.decisions}
    return {name: by_key[sj.key] for name, sj in scenario.jobs.items()}


def _show(d: Decision) -> str:
    return (f"{d.key.name}: {d.phase.value} cluster={d.cluster} preemptedBy={d.preempted_by} "
            f"preemptions={d.preemptions} reason={d.reason!r}")


def test_there_are_enough_scenarios() -> None:
    assert len(PATHS) >= 25, [p.name for p in PATHS]


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_scenario_names_its_source(path) -> None:
    scenario = load_scenario(path)
    assert scenario.source.strip(), f"{path.name}: the 'source:' field is empty"
    assert scenario.source_comment, f"{path.name}: the first line must be '# source: ...'"
    assert scenario.name == path.stem, f"{path.name}: name {scenario.name!r} != file name"
    assert scenario.description, f"{path.name}: describe the scenario in one sentence"


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_scenario(path) -> None:
    scenario = load_scenario(path)
    got = _decisions(scenario)
    summary = "\n".join(_show(d) for d in got.values())
    expect = scenario.expect
    named = (set(expect.admitted) | set(expect.preempted) | set(expect.queued)
             | set(expect.inadmissible))

    for name, cluster in expect.admitted.items():
        d = got[name]
        assert d.phase is Phase.ADMITTED, f"{name} should be admitted\n{summary}"
        assert cluster == "*" or d.cluster == cluster, (
            f"{name} should run on {cluster}, not {d.cluster}\n{summary}")
        job = scenario.jobs[name].job
        whole = tuple(PodSetCount(ps.name, ps.replicas) for ps in job.pod_sets)
        assert d.pod_sets == whole, f"{name} is not placed whole\n{summary}"

    for name, pattern in expect.queued.items():
        d = got[name]
        assert d.phase is Phase.QUEUED, f"{name} should be queued\n{summary}"
        assert d.cluster is None, summary
        assert re.search(pattern, d.reason), (
            f"{name}: reason {d.reason!r} does not match {pattern!r}\n{summary}")

    for name, pattern in expect.inadmissible.items():
        d = got[name]
        assert d.phase is Phase.INADMISSIBLE, f"{name} should be inadmissible\n{summary}"
        assert re.search(pattern, d.reason), (
            f"{name}: reason {d.reason!r} does not match {pattern!r}\n{summary}")

    for name, pattern in expect.reasons.items():
        assert re.search(pattern, got[name].reason), (
            f"{name}: reason {got[name].reason!r} does not match {pattern!r}\n{summary}")

    # Victims: back in their queue (or placed again elsewhere), saying who and why.
    for victim, by in expect.preempted.items():
        d = got[victim]
        sj = scenario.jobs[victim]
        before = sj.prior.preemptions if sj.prior is not None else 0
        by_key = scenario.jobs[by].key
        assert d.preempted_by == f"{by_key.kind} {by_key.namespace}/{by_key.name}", (
            f"{victim} should be preempted by {by}\n{summary}")
        assert d.preemptions == before + 1, f"{victim}: preemptions\n{summary}"
        if victim not in expect.admitted:
            assert d.phase is Phase.QUEUED and d.cluster is None, (
                f"{victim} should be back in its queue\n{summary}")
            assert re.search(r"preempted by .*" + re.escape(by), d.reason), summary
        if sj.prior is not None:
            assert d.enqueued_at == sj.prior.enqueued_at, f"{victim} lost its place\n{summary}"
        assert got[by].phase is Phase.ADMITTED, f"preemptor {by} is not admitted\n{summary}"

    # Nothing else was evicted; admitted jobs not named stay where they run.
    for name, sj in scenario.jobs.items():
        d = got[name]
        before = sj.prior.preemptions if sj.prior is not None else 0
        if name not in expect.preempted:
            assert d.preemptions == before, f"{name} was preempted unexpectedly\n{summary}"
        if sj.prior is not None and name not in named:
            assert d.phase is Phase.ADMITTED and d.cluster == sj.prior.cluster, (
                f"{name} should keep running on {sj.prior.cluster}\n{summary}")
            assert d.admitted_at == sj.prior.admitted_at, (
                f"{name} kept running but its admittedAt changed to {d.admitted_at}\n{summary}")
        if sj.prior is None:
            assert name in named, f"{path.name}: say what becomes of pending job {name}"


def _twice(scenario: Scenario) -> tuple[dict[JobKey, Decision], list[Decision]]:
    first = reconcile_cycle(scenario.cycle_input)
    second = reconcile_cycle(round_trip(scenario.cycle_input, first))
    return {d.key: d for d in first.decisions}, second.decisions


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_scenario_reconciling_again_changes_nothing(path) -> None:
    """Phase, cluster, pod sets, admission time, position, preemption record: all kept."""
    before, again = _twice(load_scenario(path))
    for d in again:
        assert replace(d, reason="") == replace(before[d.key], reason=""), (
            f"second reconcile changed\n{_show(before[d.key])}\n{_show(d)}")


def test_reconciling_again_keeps_every_reason() -> None:
    """placements.yaml must be a fixed point: a second reconcile rewrites no reason.

    DESIGN §4: no change, no commit. One test over all scenarios, so that one
    cause is one failure; it lists every reason the second reconcile rewrote.
    """
    changed = []
    for path in PATHS:
        before, again = _twice(load_scenario(path))
        for d in again:
            if d.reason != before[d.key].reason:
                changed.append(f"{path.stem}: {d.key.name}: {before[d.key].reason!r} -> "
                               f"{d.reason!r}")
    assert not changed, f"{len(changed)} reason(s) rewritten:\n" + "\n".join(changed)
