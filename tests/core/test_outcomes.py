"""Observed outcomes (``core.outcomes``): what the clusters report, decided.

Each case decides a previous state and the clusters' reports as a reconcile
does (``apply_observations``, the cycle on ``cycle_input_with``, ``finish``),
and asserts the decisions: ended jobs free their quota and room, failed jobs
fail over away from the cluster they failed on, old copies are kept by
``purgeMode``, and reports of an earlier run count for nothing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import replace

from reconciler.core.cycle import CycleInput, reconcile_cycle
from reconciler.core.model import Decision, Job, Phase, Policy, evolve
from reconciler.core.outcomes import (
    ClusterObservation,
    ObservedJob,
    ObservedPhase,
    Outcomes,
    apply_observations,
    cycle_input_with,
    finish,
)
from tests.builders import (
    SOURCE_TIME,
    admitted_prior,
    by_name,
    cycle_input,
    gpu_cluster,
    gpu_job,
    policy,
    prior_of,
)

ADMITTED_AT = "2026-01-01T10:00:00Z"
LATER = "2026-01-01T10:30:00Z"
EARLIER = "2026-01-01T09:00:00Z"


def decide(inp: CycleInput, *reports: ClusterObservation) -> dict[str, Decision]:
    """The decisions of a reconcile of ``inp`` with ``reports``, by job name."""
    outcomes = apply_observations(inp, {r.cluster: r for r in reports})
    result = reconcile_cycle(cycle_input_with(inp, outcomes))
    decisions, _ = finish(result.decisions, outcomes)
    return {d.key.name: d for d in decisions}


def why_failed_over(inp: CycleInput, *reports: ClusterObservation) -> dict[str, str]:
    """Why each job fails over (for the commit message), by job name."""
    outcomes = apply_observations(inp, {r.cluster: r for r in reports})
    return {key.name: why for key, why in outcomes.failovers.items()}


def report(cluster: str, *jobs: tuple[Job, ObservedPhase, str | None], at: str = LATER,
           complete: bool = False) -> ClusterObservation:
    return ClusterObservation(cluster, at, {
        j.key: ObservedJob(j.key, phase, since, "exit code 1" if phase is ObservedPhase.FAILED
                           else "") for j, phase, since in jobs}, complete)


def two_clusters(failover: Policy | None = None, *, waiting: bool = True
                 ) -> tuple[CycleInput, Job, Job]:
    """``a`` (8 GPUs) admitted on ``c1``; ``b`` (8 GPUs) waits for room, with
    ``c2`` full of ``filler`` (8 GPUs). Both clusters have 8 GPUs."""
    a = gpu_job("a", 8).obj()
    b = gpu_job("b", 8).obj()
    filler = gpu_job("filler", 8).obj()
    jobs = [a, filler, *([b] if waiting else [])]
    prior = [admitted_prior(a, cluster="c1", quota="root/default", admitted_at=ADMITTED_AT),
             admitted_prior(filler, cluster="c2", quota="root/default",
                            admitted_at=ADMITTED_AT)]
    policies = [failover] if failover is not None else [policy().obj()]
    inp = cycle_input(jobs=jobs, clusters=[gpu_cluster("c1", 8), gpu_cluster("c2", 8)],
                      policies=policies, prior=prior)
    # b waits, as the previous reconcile decided
    first = reconcile_cycle(inp)
    assert by_name(first)["b"].phase is Phase.QUEUED if waiting else True
    return cycle_input(jobs=jobs, clusters=[gpu_cluster("c1", 8), gpu_cluster("c2", 8)],
                       policies=policies, prior=prior_of(first.decisions)), a, b


def test_a_job_reported_succeeded_is_finished_and_frees_its_room_for_a_waiting_job() -> None:
    inp, a, _ = two_clusters()
    got = decide(inp, report("c1", (a, ObservedPhase.SUCCEEDED, LATER)))
    assert got["a"].phase is Phase.FINISHED
    assert got["a"].cluster == "c1" and got["a"].ended_at == LATER
    assert "succeeded on c1" in got["a"].reason
    assert got["b"].phase is Phase.ADMITTED and got["b"].cluster == "c1"


def test_a_finished_job_stays_finished_without_reports_and_when_its_file_changes() -> None:
    inp, a, _ = two_clusters()
    got = decide(inp, report("c1", (a, ObservedPhase.SUCCEEDED, LATER)))
    again = cycle_input(jobs=inp.jobs, clusters=inp.clusters, policies=inp.policies,
                        prior=prior_of(got.values()))
    twice = decide(again)  # no report at all now
    assert twice["a"].phase is Phase.FINISHED and twice["b"].cluster == "c1"
    changed = [evolve(j, blob="changed") if j.key == a.key else j for j in again.jobs]
    thrice = decide(cycle_input(jobs=changed, clusters=inp.clusters, policies=inp.policies,
                                prior=prior_of(twice.values())))
    assert thrice["a"].phase is Phase.FINISHED and thrice["a"].blob == "changed"


def test_a_report_from_before_the_admission_is_an_earlier_runs_and_changes_nothing() -> None:
    inp, a, _ = two_clusters()
    for phase in (ObservedPhase.SUCCEEDED, ObservedPhase.FAILED):
        got = decide(inp, report("c1", (a, phase, EARLIER)))
        assert got["a"].phase is Phase.ADMITTED and got["a"].cluster == "c1"
        assert got["b"].phase is Phase.QUEUED


def test_a_failed_job_without_failover_is_failed_and_frees_its_room() -> None:
    inp, a, _ = two_clusters()
    got = decide(inp, report("c1", (a, ObservedPhase.FAILED, LATER)))
    assert got["a"].phase is Phase.FAILED and got["a"].cluster == "c1"
    assert "failed on c1" in got["a"].reason and "exit code 1" in got["a"].reason
    assert "new name" in got["a"].reason
    assert got["b"].phase is Phase.ADMITTED


def failover_policy(toleration: int | None = None, purge: str = "Gracefully") -> Policy:
    return policy().failover(toleration, purge).obj()


def test_a_failed_job_fails_over_to_another_cluster_and_never_back() -> None:
    """``a`` fails on c1; ``filler`` finishes on c2: ``a`` goes to c2 (not back
    to c1, though c1 is free), ahead of ``b``, which queued after it."""
    inp, a, _ = two_clusters(failover_policy())
    filler = next(j for j in inp.jobs if j.key.name == "filler")
    got = decide(inp, report("c1", (a, ObservedPhase.FAILED, LATER)),
                 report("c2", (filler, ObservedPhase.SUCCEEDED, LATER)))
    assert got["a"].phase is Phase.ADMITTED and got["a"].cluster == "c2"
    assert got["a"].failed_on == ("c1",) and got["a"].kept_on == ("c1",)
    assert why_failed_over(inp, report("c1", (a, ObservedPhase.FAILED, LATER))) == {
        "a": f"failed on c1 at {LATER} (exit code 1); its copy stays there until the new "
             f"placement runs, 600 s at most (purgeMode Gracefully, gracePeriodSeconds)"}
    assert got["b"].cluster == "c1"


def test_a_job_that_fails_over_with_no_room_elsewhere_waits_keeping_its_place() -> None:
    inp, a, _ = two_clusters(failover_policy())
    got = decide(inp, report("c1", (a, ObservedPhase.FAILED, LATER)))
    assert got["a"].phase is Phase.QUEUED and got["a"].position == 1
    assert got["a"].enqueued_at == inp.prior[a.key].enqueued_at
    assert got["b"].phase is Phase.ADMITTED and got["b"].cluster == "c1"  # c1 is free for b
    assert "c2" in got["a"].reason
    assert got["a"].reason.endswith("(it failed on c1: never placed there again)")
    # the next reconcile keeps the exclusion, and says it
    again = decide(cycle_input(jobs=inp.jobs, clusters=inp.clusters, policies=inp.policies,
                               prior=prior_of(got.values())))
    assert again["a"].phase is Phase.QUEUED and again["a"].failed_on == ("c1",)
    assert again["a"].reason.endswith("(it failed on c1: never placed there again)")


def test_a_job_that_failed_on_every_candidate_is_inadmissible_and_says_where() -> None:
    a = gpu_job("a", 8).obj()
    inp = cycle_input(jobs=[a], clusters=[gpu_cluster("c1", 8)], policies=[failover_policy()],
                      prior=[admitted_prior(a, cluster="c1", quota="root/default",
                                            admitted_at=ADMITTED_AT)])
    got = decide(inp, report("c1", (a, ObservedPhase.FAILED, LATER)))
    assert got["a"].phase is Phase.INADMISSIBLE
    assert got["a"].reason == (
        "no member cluster is a candidate for it under ClusterPropagationPolicy gang-queued: "
        "it failed on every cluster its policy selects (it failed on c1: never placed there "
        "again); to run it again, fix the cause and push it under a new name, or let its "
        "policy select more clusters")
    # a cluster it failed on that its policy no longer selects is not named as a candidate
    gone = replace(inp.prior[a.key], failed_on=("c0",))
    got = decide(replace(inp, prior={a.key: gone}), report("c1", (a, ObservedPhase.FAILED, LATER)))
    assert got["a"].reason == (
        "no member cluster is a candidate for it under ClusterPropagationPolicy gang-queued: "
        "it failed on every cluster its policy selects (it failed on c0, c1: never placed "
        "there again); to run it again, fix the cause and push it under a new name, or let its "
        "policy select more clusters")


def test_purge_modes_keep_the_old_copy_until_the_new_placement_runs_or_never() -> None:
    for purge, kept, said in (
            ("Immediately", (), "is removed at once"), ("Directly", (), "is removed at once"),
            ("Graciously", ("c1",), "stays there until the new placement runs"),
            ("Gracefully", ("c1",), "stays there until the new placement runs"),
            ("Never", ("c1",), "stays there")):
        inp, a, _ = two_clusters(failover_policy(purge=purge), waiting=False)
        filler = next(j for j in inp.jobs if j.key.name == "filler")
        reports = (report("c1", (a, ObservedPhase.FAILED, LATER)),
                   report("c2", (filler, ObservedPhase.SUCCEEDED, LATER)))
        got = decide(inp, *reports)
        assert got["a"].cluster == "c2" and got["a"].kept_on == kept, purge
        grace = ", 600 s at most" if kept and purge != "Never" else ""
        assert why_failed_over(inp, *reports)["a"].endswith(
            f"; its copy there {said} (purgeMode {purge})" if said.startswith("is") else
            f"; its copy {said}{grace} (purgeMode {purge}{', gracePeriodSeconds' * bool(grace)})"
        ), purge
        nxt = cycle_input(jobs=inp.jobs, clusters=inp.clusters, policies=inp.policies,
                          prior=prior_of(got.values()))
        running = decide(nxt, report("c2", (a, ObservedPhase.RUNNING, "2026-01-02T00:00:00Z"),
                                     at="2026-01-02T00:00:00Z"))
        assert running["a"].kept_on == (("c1",) if purge == "Never" else ()), purge
        assert running["a"].failed_on == ("c1",)


def test_a_failed_job_its_operator_deletes_keeps_no_copy_whatever_its_purge_mode() -> None:
    """Kept, its manifest would create the job its operator deleted, and run it
    again: its copy leaves at once, and the reason says why."""
    inp, a, _ = two_clusters(failover_policy(purge="Never"), waiting=False)
    deleting = replace(a, deleted_when=(True, True))
    inp = replace(inp, jobs=tuple(deleting if j.key == a.key else j for j in inp.jobs))
    filler = next(j for j in inp.jobs if j.key.name == "filler")
    reports = (report("c1", (a, ObservedPhase.FAILED, LATER)),
               report("c2", (filler, ObservedPhase.SUCCEEDED, LATER)))
    assert decide(inp, *reports)["a"].kept_on == ()
    assert why_failed_over(inp, *reports)["a"].endswith(
        "; its copy there is removed at once, whatever purgeMode Never says: its operator "
        "deletes a failed job, which a manifest kept there would run again")


def _later(inp: CycleInput, seconds: int, before: dict[str, Decision]
           ) -> tuple[CycleInput, Outcomes]:
    """``inp`` ``seconds`` later, from the decisions ``before``; its outcomes
    with no report."""
    at = (dt.datetime.fromisoformat(inp.now.replace("Z", "+00:00"))
          + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
    nxt = cycle_input(jobs=inp.jobs, clusters=inp.clusters, policies=inp.policies,
                      prior=prior_of(before.values()), now=at)
    return nxt, apply_observations(nxt, {})


def test_the_old_copy_goes_once_the_grace_period_passed_the_new_placement_running_or_not(
        ) -> None:
    """Karmada's ``gracePeriodSeconds`` (Graciously, Gracefully): ``a`` fails
    on c1 and waits (c2 is full), its copy kept on c1; 900 s after the
    failover the copy goes though ``a`` runs nowhere (it used to stay for as
    long as ``a`` waited, free to start late and run the job twice). Never
    keeps it."""
    for purge in ("Graciously", "Gracefully", "Never"):
        pol = policy().failover(None, purge, grace_period_seconds=900).obj()
        inp, a, _ = two_clusters(pol, waiting=False)
        got = decide(inp, report("c1", (a, ObservedPhase.FAILED, LATER)))
        assert got["a"].phase is Phase.QUEUED and got["a"].kept_on == ("c1",), purge
        assert got["a"].kept_since == (("c1", inp.now),)
        nxt, outcomes = _later(inp, 899, got)
        kept = decide(nxt)
        assert kept["a"].kept_on == ("c1",) and kept["a"].kept_since == (("c1", inp.now),), purge
        assert a.key not in outcomes.purged
        nxt, outcomes = _later(inp, 900, kept)
        gone = decide(nxt)
        if purge == "Never":
            assert gone["a"].kept_on == ("c1",), purge
            continue
        assert gone["a"].kept_on == () and gone["a"].kept_since == (), purge
        assert gone["a"].phase is Phase.QUEUED and gone["a"].failed_on == ("c1",)
        assert outcomes.purged[a.key] == (f"gracePeriodSeconds (900 s) passed since it failed "
                                          f"over at {inp.now}")


def test_the_commit_line_of_a_failover_says_the_old_copy_waits_for_a_placement_to_come(
        ) -> None:
    """Graciously: placed at once on another cluster, the old copy stays "until
    the new placement runs"; placed nowhere yet (c2 full), until it is placed
    again and runs there: there is no new placement to wait for."""
    from reconciler.pipeline import describe_changes
    for freed, line in (
            (True, "fail over PyTorchJob default/a from c1 -> c2: failed on c1 at "
                   f"{LATER} (exit code 1); its copy stays there until the new placement "
                   "runs, 600 s at most (purgeMode Graciously, gracePeriodSeconds)"),
            (False, "fail over PyTorchJob default/a from c1: queued: failed on c1 at "
                    f"{LATER} (exit code 1); its copy stays there until it is placed again "
                    "and runs there, 600 s at most (purgeMode Graciously, "
                    "gracePeriodSeconds)")):
        inp, a, _ = two_clusters(failover_policy(purge="Graciously"), waiting=False)
        filler = next(j for j in inp.jobs if j.key.name == "filler")
        reports = {"c1": report("c1", (a, ObservedPhase.FAILED, LATER))}
        if freed:
            reports["c2"] = report("c2", (filler, ObservedPhase.SUCCEEDED, LATER))
        outcomes = apply_observations(inp, reports)
        result = reconcile_cycle(cycle_input_with(inp, outcomes))
        decisions, _ = finish(result.decisions, outcomes)
        lines = describe_changes(inp.prior, decisions, outcomes, result.moved)
        assert [x for x in lines if x.startswith("fail over")] == [line], lines


def test_a_job_not_running_toleration_seconds_after_admission_fails_over() -> None:
    inp, a, _ = two_clusters(failover_policy(toleration=600))
    filler = next(j for j in inp.jobs if j.key.name == "filler")
    freed = report("c2", (filler, ObservedPhase.SUCCEEDED, LATER))
    pending = (a, ObservedPhase.PENDING, None)
    # 30 minutes after admission, still pending: it fails over
    got = decide(inp, report("c1", pending), freed)
    assert got["a"].cluster == "c2" and got["a"].failed_on == ("c1",)
    assert "not running on c1 600 s after its admission" in why_failed_over(
        inp, report("c1", pending), freed)["a"]
    # 5 minutes after: not yet
    soon = decide(inp, report("c1", pending, at="2026-01-01T10:05:00Z"), freed)
    assert soon["a"].cluster == "c1" and not soon["a"].failed_on
    # running: never
    ran = decide(inp, report("c1", (a, ObservedPhase.RUNNING, ADMITTED_AT)), freed)
    assert ran["a"].cluster == "c1"


def test_a_job_missing_from_a_report_counts_as_not_running_only_when_the_report_is_complete(
        ) -> None:
    inp, _, _ = two_clusters(failover_policy(toleration=600))
    filler = next(j for j in inp.jobs if j.key.name == "filler")
    freed = report("c2", (filler, ObservedPhase.SUCCEEDED, LATER))
    partial = decide(inp, report("c1"), freed)
    assert partial["a"].cluster == "c1"
    complete = decide(inp, report("c1", complete=True), freed)
    assert complete["a"].cluster == "c2"
    assert "not there when observed" in why_failed_over(
        inp, report("c1", complete=True), freed)["a"]


def test_reports_of_other_clusters_or_unknown_jobs_change_nothing() -> None:
    inp, a, _ = two_clusters(failover_policy(toleration=1))
    stranger = gpu_job("stranger", 1).obj()
    before = {d.key.name: d for d in reconcile_cycle(inp).decisions}
    got = decide(inp, report("c2", (a, ObservedPhase.FAILED, LATER)),
                 report("c9", (stranger, ObservedPhase.FAILED, LATER)))
    assert got == before


def test_outcomes_are_pure_and_deterministic() -> None:
    inp, a, _ = two_clusters(failover_policy())
    reports = (report("c1", (a, ObservedPhase.FAILED, LATER)),)
    first, second = decide(inp, *reports), decide(inp, *reports)
    assert first == second
    assert inp.prior[a.key].phase is Phase.ADMITTED  # the input is not changed


def _names(decisions: Iterable[Decision]) -> list[str]:
    return [d.key.name for d in decisions]


def test_finish_keeps_the_decisions_in_key_order_and_says_what_it_changed() -> None:
    inp, a, _ = two_clusters()
    observations = {"c1": report("c1", (a, ObservedPhase.SUCCEEDED, LATER))}
    outcomes = apply_observations(inp, observations)
    result = reconcile_cycle(cycle_input_with(inp, outcomes))
    assert "a" not in _names(result.decisions)
    decisions, changed = finish(result.decisions, outcomes)
    assert _names(decisions) == sorted(_names(decisions), key=lambda n: n) == ["a", "b",
                                                                                 "filler"]
    assert changed == {a.key}
    assert SOURCE_TIME  # (the builders' clock)


def test_capacity_drift_names_missing_or_unready_nodes_and_resources_short() -> None:
    from reconciler.core.outcomes import ObservedNode, capacity_drift
    from tests.builders import res

    declared = gpu_cluster("c1", 8, 8)  # nodes c1-n0 and c1-n1: 8 GPUs each
    names = [n.name for n in declared.nodes]
    whole = [ObservedNode(n.name, dict(n.allocatable)) for n in declared.nodes]
    assert capacity_drift(declared, whole) == []
    assert capacity_drift(declared, [*whole, ObservedNode("extra", res(cpu="1"))]) == []
    half = [whole[0], ObservedNode(names[1], dict(declared.nodes[1].allocatable), ready=False)]
    said = capacity_drift(declared, half)
    assert said[0] == f"node {names[1]} is declared but reported not ready"
    assert any(s.startswith("16 nvidia.com/gpu declared in all, 8 on its ready, schedulable "
                            "nodes") for s in said), said
    cordoned = [whole[0], ObservedNode(names[1], dict(declared.nodes[1].allocatable),
                                       cordoned=True)]
    said = capacity_drift(declared, cordoned)
    assert said[0] == f"node {names[1]} is declared but reported cordoned (unschedulable)"
    assert any(s.startswith("16 nvidia.com/gpu declared in all, 8") for s in said), said
    missing = capacity_drift(declared, [whole[0]])
    assert missing[0] == f"node {names[1]} is declared but not reported"
    # other names: the totals alone are compared
    renamed = [ObservedNode(f"real-{i}", dict(n.allocatable))
               for i, n in enumerate(declared.nodes)]
    assert capacity_drift(declared, renamed) == []
    assert capacity_drift(gpu_cluster("c2"), []) == []  # declares no nodes


def test_a_report_without_times_counts_only_when_observed_after_the_admission() -> None:
    inp, a, _ = two_clusters()
    old = decide(inp, report("c1", (a, ObservedPhase.SUCCEEDED, None), at=EARLIER))
    assert old["a"].phase is Phase.ADMITTED
    new = decide(inp, report("c1", (a, ObservedPhase.SUCCEEDED, None), at=LATER))
    assert new["a"].phase is Phase.FINISHED and new["a"].ended_at == LATER


def test_an_ended_or_failed_over_job_whose_file_breaks_stays_as_it_was() -> None:
    """Its file invalid (or not parsing) now: a Finished job stays Finished
    (its files stay on its cluster); a job that failed over keeps failedOn
    and keptOn, and still never goes back where it failed."""
    from reconciler.core.cycle import InvalidJob

    inp, a, _ = two_clusters(failover_policy())
    filler = next(j for j in inp.jobs if j.key.name == "filler")
    done = decide(inp, report("c2", (filler, ObservedPhase.SUCCEEDED, LATER)),
                  report("c1", (a, ObservedPhase.FAILED, LATER)))
    assert done["filler"].phase is Phase.FINISHED and done["a"].cluster == "c2"
    broken = [j for j in inp.jobs if j.key.name not in ("a", "filler")]
    bad = [InvalidJob(j.key, j.api_version, j.path, j.line, j.blob, "broken")
           for j in inp.jobs if j.key.name == "a"]
    nxt = cycle_input(jobs=broken, clusters=inp.clusters, policies=inp.policies,
                      prior=prior_of(done.values()), invalid=bad,
                      broken_paths={filler.path: "not valid YAML"})
    got = decide(nxt)
    assert got["filler"].phase is Phase.FINISHED and got["filler"].cluster == "c2"
    assert (got["a"].cluster, got["a"].failed_on, got["a"].kept_on) == ("c2", ("c1",),
                                                                         ("c1",))


def test_an_ended_job_records_the_file_it_is_read_from_now() -> None:
    """A job whose file changed or moved in the reconcile that ends it, or
    after: its item names the file and blob there are (``plan`` and the
    next reconcile agree)."""
    inp, a, _ = two_clusters()
    moved = [evolve(j, blob="new", path="jobs/elsewhere.yaml") if j.key == a.key else j
             for j in inp.jobs]
    now = cycle_input(jobs=moved, clusters=inp.clusters, policies=inp.policies,
                      prior=list(inp.prior.values()))
    got = decide(now, report("c1", (a, ObservedPhase.SUCCEEDED, LATER)))
    assert (got["a"].phase, got["a"].blob, got["a"].path) == (Phase.FINISHED, "new",
                                                              "jobs/elsewhere.yaml")
    again = decide(cycle_input(jobs=moved, clusters=inp.clusters, policies=inp.policies,
                               prior=prior_of(got.values())))
    assert again["a"] == got["a"]


def test_a_report_from_a_clock_ahead_of_the_reconciles_fails_nothing_over_early() -> None:
    """Admitted at 10:00 with tolerationSeconds 600, reported pending by a
    cluster whose clock says 11:00 while the reconcile's says 10:05: 5 minutes
    have passed, not 60."""
    inp, a, _ = two_clusters(failover_policy(toleration=600))
    filler = next(j for j in inp.jobs if j.key.name == "filler")
    freed = report("c2", (filler, ObservedPhase.SUCCEEDED, LATER))
    early = evolve_now(inp, "2026-01-01T10:05:00Z")
    got = decide(early, report("c1", (a, ObservedPhase.PENDING, None),
                               at="2026-01-01T11:00:00Z"), freed)
    assert got["a"].cluster == "c1" and not got["a"].failed_on
    late = evolve_now(inp, "2026-01-01T10:20:00Z")
    moved = decide(late, report("c1", (a, ObservedPhase.PENDING, None),
                                at="2026-01-01T11:00:00Z"), freed)
    assert moved["a"].cluster == "c2"


def evolve_now(inp: CycleInput, now: str) -> CycleInput:
    from dataclasses import replace
    return replace(inp, now=now)


def test_a_running_job_listed_since_before_its_admission_runs_on_and_copies_are_not_judged(
        ) -> None:
    """Preempted and placed again on the same cluster before its object was
    deleted, a job is listed running since before its admission: it runs, it
    is not "not there". A Duplicated job (copies) is judged by no one report."""
    inp, a, _ = two_clusters(failover_policy(toleration=600))
    filler = next(j for j in inp.jobs if j.key.name == "filler")
    freed = report("c2", (filler, ObservedPhase.SUCCEEDED, LATER))
    got = decide(inp, report("c1", (a, ObservedPhase.RUNNING, EARLIER), complete=True), freed)
    assert got["a"].cluster == "c1" and not got["a"].failed_on
    copied = cycle_input(jobs=inp.jobs, clusters=inp.clusters, policies=inp.policies,
                         prior=[evolve(p, copies=("c2",)) if p.key == a.key else p
                                for p in inp.prior.values()])
    same = decide(copied, report("c1", (a, ObservedPhase.SUCCEEDED, LATER)))
    assert same["a"].phase is Phase.ADMITTED


def test_a_job_failing_over_whose_file_breaks_keeps_its_place_in_the_state() -> None:
    """It waits for a new cluster, its old copy kept, when its file breaks:
    it stays as it was (not deleted: its copy and failedOn stay); a running job
    whose file broke and that its cluster reports failed stays where it runs."""
    from reconciler.core.cycle import InvalidJob

    inp, a, _ = two_clusters(failover_policy())
    waiting = decide(inp, report("c1", (a, ObservedPhase.FAILED, LATER)))
    assert waiting["a"].phase is Phase.QUEUED and waiting["a"].kept_on == ("c1",)
    others = [j for j in inp.jobs if j.key != a.key]
    broken = cycle_input(jobs=others, clusters=inp.clusters, policies=inp.policies,
                         prior=prior_of(waiting.values()), broken_paths={a.path: "bad YAML"})
    got = decide(broken)
    assert (got["a"].phase, got["a"].failed_on, got["a"].kept_on) == (Phase.QUEUED, ("c1",),
                                                                      ("c1",))
    bad = [InvalidJob(a.key, a.api_version, a.path, a.line, a.blob, "broken")]
    running = cycle_input(jobs=others, clusters=inp.clusters, policies=inp.policies,
                          prior=list(inp.prior.values()), invalid=bad)
    kept = decide(running, report("c1", (a, ObservedPhase.FAILED, LATER)))
    assert kept["a"].phase is Phase.ADMITTED and kept["a"].cluster == "c1"


def test_a_report_from_before_the_new_placement_does_not_purge_the_old_copy() -> None:
    """``a`` fails over from c1 to c2 (its copy kept on c1, Gracefully). A report
    of c2 observed before that admission (listing ``a`` running, from an earlier
    run there) says nothing of the new placement: the copy stays, and the
    decision is a fixed point; one observed after it purges the copy."""
    inp, a, _ = two_clusters(failover_policy(), waiting=False)
    filler = next(j for j in inp.jobs if j.key.name == "filler")
    got = decide(inp, report("c1", (a, ObservedPhase.FAILED, LATER)),
                 report("c2", (filler, ObservedPhase.SUCCEEDED, LATER)))
    assert got["a"].cluster == "c2" and got["a"].kept_on == ("c1",)
    admitted = got["a"].admitted_at
    assert admitted is not None and admitted > EARLIER
    nxt = cycle_input(jobs=inp.jobs, clusters=inp.clusters, policies=inp.policies,
                      prior=prior_of(got.values()))
    stale = report("c2", (a, ObservedPhase.RUNNING, EARLIER), at=EARLIER)
    again = decide(nxt, stale)
    assert again["a"].kept_on == ("c1",) and again == decide(nxt, stale)
    assert again["a"] == got["a"]
    fresh = report("c2", (a, ObservedPhase.RUNNING, admitted), at="2026-12-31T00:00:00Z")
    assert decide(nxt, fresh)["a"].kept_on == ()


def test_a_duplicated_job_ends_once_every_cluster_running_a_copy_reported_it_ended() -> None:
    """``a`` runs on c1 with a copy on c2 (Duplicated). One cluster's report ends
    nothing; both reporting it succeeded make it Finished (its room on both
    free again); one of them failed makes it Failed, saying where; a report
    from before its admission counts for nothing."""
    inp, a, _ = two_clusters()
    copied = cycle_input(jobs=inp.jobs, clusters=inp.clusters, policies=inp.policies,
                         prior=[evolve(p, copies=("c2",)) if p.key == a.key else p
                                for p in inp.prior.values()])
    c1_done = report("c1", (a, ObservedPhase.SUCCEEDED, LATER))
    assert decide(copied, c1_done)["a"].phase is Phase.ADMITTED
    both = decide(copied, c1_done, report("c2", (a, ObservedPhase.SUCCEEDED, LATER)))
    assert both["a"].phase is Phase.FINISHED and both["a"].ended_at == LATER
    assert both["a"].reason.startswith(f"succeeded on each of c1, c2 by {LATER}")
    assert both["b"].phase is Phase.ADMITTED  # (the room a held is free)
    failed = decide(copied, c1_done, report("c2", (a, ObservedPhase.FAILED, LATER)))
    assert failed["a"].phase is Phase.FAILED
    assert "failed on c2 (exit code 1)" in failed["a"].reason
    stale = decide(copied, c1_done, report("c2", (a, ObservedPhase.SUCCEEDED, EARLIER)))
    assert stale["a"].phase is Phase.ADMITTED


def test_the_commit_line_of_a_running_job_placed_again_elsewhere_says_it_moved() -> None:
    """Evicted from c1 and admitted on c3 in one cycle: "move ... from c1 -> c3"
    and by whom, not an "admit" as of a job that did not run."""
    from reconciler.core.model import JobKey, PodSetCount
    from reconciler.pipeline import describe_changes
    key = JobKey("batch", "Job", "a", "a1")
    before = Decision(key, Phase.ADMITTED, ADMITTED_AT, cluster="c1",
                      pod_sets=(PodSetCount("main", 1),), admitted_at=ADMITTED_AT)
    now = replace(before, cluster="c3", preempted_by="Job b/b1", preemptions=1,
                  admitted_at=LATER)
    assert describe_changes({key: before}, [now]) == [
        "move Job a/a1 from c1 -> c3 (main 1): preempted on c1 by Job b/b1"]
    fresh = replace(before, phase=Phase.QUEUED, cluster=None, admitted_at=None)
    assert describe_changes({key: fresh}, [before]) == ["admit Job a/a1 -> c1 (main 1)"]
    # (placed again on its cluster, its node gone: it said nothing)
    again = replace(before, nodes=(("n3", "main", 1),))
    assert describe_changes({key: before}, [again], moved={key: "its node went"}) == [
        "place Job a/a1 again on c1: its node went"]
    assert describe_changes({key: before}, [again]) == []
    # (a Duplicated job ends on each cluster it ran on: named, not its first alone)
    copied = replace(before, copies=("c2",))
    assert describe_changes({key: copied}, [replace(copied, phase=Phase.FAILED)]) == [
        "failed Job a/a1 on c1, c2"]


def test_each_old_copy_goes_by_its_own_failover_time() -> None:
    """``a`` fails on c1, then 300 s later on c2: the copy on c2 was purged
    with c1's, on c1's clock (300 s early); each goes gracePeriodSeconds
    after its own failover."""
    pol = policy().failover(None, "Graciously", grace_period_seconds=600).obj()
    a = gpu_job("a", 8).obj()
    clusters = [gpu_cluster(name, 8) for name in ("c1", "c2", "c3")]
    inp = cycle_input(jobs=[a], clusters=clusters, policies=[pol], prior=[admitted_prior(
        a, cluster="c1", quota="root/default", admitted_at=ADMITTED_AT)])
    first = decide(inp, report("c1", (a, ObservedPhase.FAILED, LATER)))
    moved_to = first["a"].cluster
    assert moved_to in ("c2", "c3") and first["a"].kept_since == (("c1", inp.now),)
    nxt, _ = _later(inp, 300, first)
    at = nxt.now
    second = decide(nxt, report(moved_to, (a, ObservedPhase.FAILED, at), at=at))
    assert second["a"].kept_on == ("c1", moved_to)
    assert second["a"].kept_since == (("c1", inp.now), (moved_to, at))
    nxt, outcomes = _later(inp, 600, second)
    third = decide(nxt)
    assert third["a"].kept_on == (moved_to,) and third["a"].kept_since == ((moved_to, at),)
    assert outcomes.purged[a.key] == (f"gracePeriodSeconds (600 s) passed since it failed over "
                                      f"at {inp.now}")
    nxt, _ = _later(inp, 899, third)
    assert decide(nxt)["a"].kept_on == (moved_to,)
    nxt, _ = _later(inp, 900, third)
    assert decide(nxt)["a"].kept_on == ()
