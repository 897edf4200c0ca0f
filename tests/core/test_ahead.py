"""Steps 1-2 done ahead (``prepare``), and taken up only when nothing they read changed."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reconciler.core import cycle
from reconciler.core.cycle import CycleInput, InvalidJob, prepare, reconcile_cycle
from reconciler.core.model import Job, Phase
from tests.builders import (
    admitted_prior,
    by_name,
    cycle_input,
    gpu_cluster,
    gpu_job,
    prior_of,
    quota,
    simple_tree,
)

A, B, WAITS = (gpu_job("a", 4, "a").obj(), gpu_job("b", 4, "b").obj(),
               gpu_job("w", 8, "a").obj())
TREE = simple_tree(*(quota(ns, ns=[ns]) for ns in ("a", "b", "c", "default")))


def _state(jobs: list[Job]) -> CycleInput:
    """The input expected next: ``jobs`` with the decisions of a first cycle as prior."""
    first = reconcile_cycle(cycle_input(jobs=jobs, tree=TREE))
    return cycle_input(jobs=jobs, tree=TREE, prior=prior_of(first.decisions))


def _push(expected: CycleInput, **changes: object) -> CycleInput:
    """The input of the next reconcile: ``expected`` changed, the jobs it queued
    settled, at a later commit."""
    settled = frozenset(k for k, p in expected.prior.items() if p.phase is Phase.QUEUED)
    return replace(expected, settled=settled, source_time="2026-01-01T01:00:00Z",
                   now="2026-01-01T01:00:30Z", **changes)


def _decide(expected: CycleInput, inp: CycleInput) -> tuple[bool, cycle.CycleResult]:
    ahead = prepare(expected)
    assert ahead is not None
    got = reconcile_cycle(inp, ahead)
    assert got == reconcile_cycle(inp)  # and CHECK_AHEAD checked it too
    return got.ahead, got


def test_a_pushed_job_takes_up_the_admitted_jobs_put_back_ahead() -> None:
    expected = _state([A, B, WAITS])
    assert {n: d.phase for n, d in by_name(reconcile_cycle(expected)).items()} == {
        "a": Phase.ADMITTED, "b": Phase.ADMITTED, "w": Phase.QUEUED}
    pushed = gpu_job("x", 1, "c").obj()
    taken, got = _decide(expected, _push(expected, jobs=(*expected.jobs, pushed)))
    assert taken
    assert {n: (d.phase, d.position) for n, d in by_name(got).items()} == {
        "a": (Phase.ADMITTED, None), "b": (Phase.ADMITTED, None),
        "w": (Phase.QUEUED, 1), "x": (Phase.QUEUED, 1)}
    # the same state read back again (equal decisions, another dict): the same
    again = _push(expected, jobs=(*expected.jobs, pushed),
                  prior={k: replace(p) for k, p in expected.prior.items()})
    assert _decide(expected, again) == (True, got)


def test_a_waiting_job_deleted_takes_them_up_and_one_that_ran_does_not() -> None:
    expected = _state([A, B, WAITS])
    taken, _ = _decide(expected, _push(expected, jobs=(A, B)))
    assert taken
    taken, got = _decide(expected, _push(expected, jobs=(A, WAITS)))
    assert not taken  # b's GPUs are free: they were charged ahead
    assert by_name(got)["w"].phase is Phase.QUEUED


@pytest.mark.parametrize("change", [
    "admitted job changed", "cluster", "quota tree", "policies", "priority class",
    "invalid file", "another state"])
def test_a_change_the_first_steps_read_is_never_taken_up(change: str) -> None:
    expected = _state([A, B, WAITS])
    inp = replace(_push(expected), settled=frozenset())  # (settled: only jobs changed)
    if change == "admitted job changed":
        inp = replace(inp, jobs=(gpu_job("a", 2, "a").obj(), B, WAITS))
    elif change == "cluster":
        inp = replace(inp, clusters=(gpu_cluster("c1", 8, 8),))
    elif change == "quota tree":
        inp = replace(inp, tree=simple_tree(*(quota(ns, ns=[ns]) for ns in ("a", "b", "c"))))
    elif change == "policies":
        inp = replace(inp, policies=())
    elif change == "priority class":
        inp = replace(inp, priority_classes={"high": 100})
    elif change == "invalid file":
        bad = InvalidJob(key=gpu_job("y", 1, "c").obj().key, api_version="batch/v1",
                         path="jobs/y.yaml", line=3, blob="f" * 40, message="bad")
        inp = replace(inp, invalid=(bad,))
    else:  # b was preempted in another state
        prior = dict(inp.prior)
        prior[B.key] = replace(prior[B.key], phase=Phase.QUEUED, cluster=None,
                               admitted_at=None, nodes=())
        inp = replace(inp, prior=prior)
    taken, _ = _decide(expected, inp)
    assert not taken


def test_steps_done_ahead_are_taken_up_once() -> None:
    expected = _state([A, B, WAITS])
    ahead = prepare(expected)
    assert ahead is not None
    assert reconcile_cycle(_push(expected), ahead).ahead
    assert not reconcile_cycle(_push(expected), ahead).ahead


def test_what_was_taken_from_the_commit_or_the_clock_must_be_the_same() -> None:
    """An admitted job with no enqueue time of its own or from its prior takes
    the commit's; one admitted at no recorded time, the clock's: then the steps
    done ahead hold only for the same commit time, or the same now."""
    for field_name, value in (("enqueued_at", ""), ("admitted_at", "")):
        prior = replace(admitted_prior(A, cluster="c1", quota="root/a"), **{field_name: value})
        expected = cycle_input(jobs=[A], tree=TREE, prior=[prior])
        taken, _ = _decide(expected, replace(expected, jobs=(A, WAITS)))
        assert taken  # the same commit, and the same now
        taken, _ = _decide(expected, _push(expected, jobs=(A, WAITS)))
        assert not taken, field_name


def test_a_job_kept_where_it_ran_while_its_file_is_invalid_is_taken_up_as_kept() -> None:
    expected = _state([A, B, WAITS])
    bad = InvalidJob(key=B.key, api_version=B.api_version, path=B.path, line=4,
                     blob="e" * 40, message="spec: not a mapping")
    expected = replace(expected, jobs=(A, WAITS), invalid=(bad,))
    taken, got = _decide(expected, _push(expected, jobs=(A, WAITS, gpu_job("x", 1, "c").obj())))
    assert taken
    assert by_name(got)["b"].kept and by_name(got)["b"].phase is Phase.ADMITTED


@pytest.mark.parametrize("how", ["ended", "no prior"])
def test_a_waiting_job_of_a_broken_file_kept_ahead_is_not_kept_when_the_input_lost_it(
        how: str) -> None:
    """Step 1 done ahead kept the job that waited in a file that no longer reads
    (Invalid, with its place); the input of the next reconcile has the job ended
    (a cluster reported it failed, and its old copy is decided apart) or no
    prior of it: the job is not decided twice, nor decided at all here."""
    expected = _state([A, B, WAITS])
    expected = replace(expected, jobs=(A, B), broken_paths={WAITS.path: "not YAML"})
    assert by_name(reconcile_cycle(expected))["w"].phase is Phase.INVALID
    prior = {k: p for k, p in expected.prior.items() if k != WAITS.key}
    inp = _push(expected, prior=prior, **({"ended": frozenset({WAITS.key})}
                                          if how == "ended" else {}))
    taken, got = _decide(expected, inp)
    assert taken
    assert "w" not in by_name(got)
    assert len({d.key for d in got.decisions}) == len(got.decisions)


def test_a_key_twice_is_not_prepared() -> None:
    expected = _state([A, B, WAITS])
    assert prepare(replace(expected, jobs=(A, B, WAITS, A))) is None


def _tree_a(**a: str) -> cycle.QuotaTree:
    """TREE, but for quota a's min and max (``a_min``, ``a_max``: its GPUs)."""
    limits = {k: {"gpu": v} for k, v in (("min", a.get("a_min")), ("max", a.get("a_max")))
              if v is not None}
    return simple_tree(quota("a", ns=["a"], **limits),  # type: ignore[arg-type]
                       *(quota(ns, ns=[ns]) for ns in ("b", "c", "default")))


def _state_under(tree: cycle.QuotaTree) -> CycleInput:
    """``_state`` of a, b and w under ``tree``."""
    jobs = [A, B, WAITS]
    first = reconcile_cycle(cycle_input(jobs=jobs, tree=tree))
    return cycle_input(jobs=jobs, tree=tree, prior=prior_of(first.decisions))


@pytest.mark.parametrize("a_max", ["24", "4", "0"])
def test_new_max_values_take_them_up_under_the_new_tree(a_max: str) -> None:
    """A push of a quota tree whose max limits changed in value alone: the jobs
    admitted before are put back as they ran whatever the limits (no flapping),
    so the steps done ahead hold; the cycle goes on under the new limits."""
    expected = _state_under(_tree_a(a_max="16"))
    pushed = gpu_job("x", 2, "a").obj()
    inp = _push(expected, jobs=(*expected.jobs, pushed), tree=_tree_a(a_max=a_max))
    # (the queued jobs of a quota whose max changed are not settled: pipeline._settled)
    inp = replace(inp, settled=frozenset(k for k in inp.settled if k.namespace != "a"))
    taken, got = _decide(expected, inp)
    assert taken
    q, never = Phase.QUEUED, Phase.INADMISSIBLE
    assert {n: d.phase for n, d in by_name(got).items()} == {
        "a": Phase.ADMITTED, "b": Phase.ADMITTED,  # as they ran, above a max of 4 or 0 too
        # w (8 GPUs) and x (2): held back by the cluster, by the new max, or never in
        "w": q if a_max == "24" else never, "x": never if a_max == "0" else q}
    assert ("max" in by_name(got)["x"].reason) is (a_max != "24")


@pytest.mark.parametrize("tree", ["a max of another resource", "a min"])
def test_a_tree_changed_in_more_than_max_values_is_not_taken_up(tree: str) -> None:
    expected = _state_under(_tree_a(a_max="16"))
    new = (simple_tree(quota("a", ns=["a"], max={"gpu": "16", "cpu": "100"}),
                       *(quota(ns, ns=[ns]) for ns in ("b", "c", "default")))
           if tree == "a max of another resource" else _tree_a(a_max="16", a_min="4"))
    taken, _ = _decide(expected, _push(expected, tree=new))
    assert not taken


def test_a_quota_tree_whose_quotas_only_moved_in_the_file_takes_them_up() -> None:
    """A comment above a quota moves its line: nothing the cycle reads changed."""
    def moved(line: int) -> cycle.QuotaTree:
        return simple_tree(*(quota(ns, ns=[ns], line=line) for ns in ("a", "b", "c", "default")))

    expected = _state_under(moved(3))
    taken, _ = _decide(expected, _push(expected, tree=moved(7)))
    assert taken
