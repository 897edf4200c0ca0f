"""``fleetq explain``'s advice, read off a real cycle's final state."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from typing import Any

import pytest

from reconciler.core.cycle import CycleInput, CycleResult, reconcile_cycle
from reconciler.core.explain import admits_next, explain_decision
from reconciler.core.model import (
    Decision,
    FleetSettings,
    MemberCluster,
    Phase,
    PreemptionPolicy,
    QuotaSettings,
)
from reconciler.core.quota import QuotaTree
from reconciler.fleet.state import prior_from_decision
from tests.builders import (
    JobBuilder,
    by_name,
    cluster,
    cycle_input,
    gpu_cluster,
    gpu_job,
    job,
    policy,
    prior_of,
    quota,
    settings,
    simple_tree,
    strict_fifo,
    tree,
)

PRIORITIES = {"high": 1000, "mid": 100, "low": 10}


def explained(inp: CycleInput, result: CycleResult, name: str, **options: Any) -> list[str]:
    """``explain_decision`` of job ``name``, told as ``fleetq explain`` tells it
    which jobs are not preemptible, the fleet's settings and what the next
    reconcile would decide with quota maxes raised; ``options`` its own."""
    d = by_name(result)[name]
    jobs = {j.key: j for j in inp.jobs}
    options = {"preemptible": jobs[d.key].preemptible,
               "not_preemptible": {k for k, j in jobs.items() if not j.preemptible},
               "settings": inp.settings,
               "admits": admits_next(inp, {x.key: prior_from_decision(x)
                                           for x in result.decisions}, d.key), **options}
    return explain_decision(d, decisions=result.decisions, tree=inp.tree,
                            quota_used=result.quota_used, cluster_free=result.cluster_free,
                            clusters={c.name: c for c in inp.clusters}, **options)


def decided(inp: CycleInput) -> tuple[CycleInput, CycleResult]:
    return inp, reconcile_cycle(inp)


def in_order(*jobs: tuple[str, int, str]) -> list[JobBuilder]:
    """team-a's jobs (name, GPUs, priority class), created a second apart."""
    return [gpu_job(name, gpus, "team-a").priority_class(priority)
            .created(f"2026-01-01T00:00:{i:02d}Z") for i, (name, gpus, priority)
            in enumerate(jobs, start=1)]


def test_a_job_short_at_the_root_is_told_to_raise_its_min_with_its_max() -> None:
    """Told "max raised to 12", a root whose max alone is raised fails the
    tree's rule (root min = root max, the fleet's total): both are named."""
    inp, result = decided(cycle_input(
        jobs=in_order(("a-1", 8, "mid"), ("a-2", 8, "mid")),
        tree=simple_tree(quota("qa", ns=["team-a"]), total={"cpu": "1000", "gpu": "12"}),
        clusters=[gpu_cluster("c1", 32)], priority_classes=PRIORITIES))
    assert [line for line in explained(inp, result, "a-2") if "more must be freed" in line] \
        == ["- quota root nvidia.com/gpu: 8 used of max 12; 4 more must be freed, or max raised "
            "to 16 (the root's min and max, equal, are the fleet's total: raise both, with the "
            "clusters' capacity)"]


def test_a_job_behind_its_quotas_job_limit_is_told_the_limit_the_holders_and_its_place() -> None:
    inp, result = decided(cycle_input(
        jobs=in_order(("a-high", 1, "high"), ("a-mid", 1, "mid"), ("a-low1", 1, "low"),
                      ("a-low2", 1, "low")),
        tree=simple_tree(quota("qa", ns=["team-a"], max={"kube-queue/max-jobs": "2"})),
        priority_classes=PRIORITIES))
    lines = explained(inp, result, "a-low2")
    assert lines[0] == "PyTorchJob team-a/a-low2 is Queued, position 2 in queue root/qa."
    assert lines[1] == ("Reason: waiting for quota: quota root/qa runs at most 2 job(s) at a "
                        "time (kube-queue/max-jobs)")
    assert lines[2:] == [
        "- quota root/qa kube-queue/max-jobs: 2 used of max 2; 2 more must be freed, or max "
        "raised to 4 (3 is not enough: the 1 job(s) ahead of it in its queue would be served "
        "first and take the room)",
        "- jobs holding quota root/qa: team-a/a-mid (priority 100), team-a/a-high "
        "(priority 1000); a priority above 100 would let it preempt 1 of them",
        "- 1 job(s) are ahead of it in queue root/qa"]


def test_a_job_larger_than_its_quota_is_told_to_raise_max_not_to_preempt() -> None:
    inp, result = decided(cycle_input(
        jobs=[gpu_job("small", 2, "team-a"), gpu_job("huge", 8, "team-a", replicas=2)],
        tree=simple_tree(quota("qa", ns=["team-a"], max={"gpu": "12"})),
        clusters=[gpu_cluster("c1", 8, 8)], priority_classes=PRIORITIES))
    lines = explained(inp, result, "huge")
    assert lines[0] == "PyTorchJob team-a/huge is Inadmissible."
    assert ("- quota root/qa nvidia.com/gpu: the job alone needs 16 but max is 12: raise max "
            "to at least 16 (in a pull request to the ElasticQuotaTree) or shrink the job"
            ) in lines
    assert not any("holding quota" in line for line in lines), lines


def test_a_job_no_cluster_holds_even_empty_is_told_no_quota_or_preemption_would_help() -> None:
    """Its quota full, it was told to free quota, and that with room there no
    cluster had room now: neither lets a job no cluster holds run."""
    inp, result = decided(cycle_input(
        jobs=[gpu_job("small", 8, "team-a").created("2026-01-01T00:00:01Z"),
              gpu_job("huge", 8, "team-a", replicas=3).created("2026-01-01T00:00:02Z")],
        tree=simple_tree(quota("qa", ns=["team-a"], max={"gpu": "28"})),
        clusters=[gpu_cluster("c1", 8, 8)], priority_classes=PRIORITIES))
    assert explained(inp, result, "huge") == [
        "PyTorchJob team-a/huge is Inadmissible.",
        "Reason: it fits no candidate member cluster even when empty: c1: free nvidia.com/gpu "
        "16 < 24 requested; lower its requests or add capacity",
        "It holds no quota or room and is not queued: no quota or job leaving would make "
        "room for it; once its requests, its policy or the clusters change as the reason "
        "says, the next reconcile tries it again."]


def test_a_job_its_quota_admits_is_told_which_clusters_lack_what() -> None:
    inp, result = decided(cycle_input(
        jobs=[gpu_job("first", 8, "team-a").created("2026-01-01T00:00:01Z"),
              gpu_job("second", 8, "team-a").created("2026-01-01T00:00:02Z")],
        tree=simple_tree(quota("qa", ns=["team-a"])),
        clusters=[gpu_cluster("c1", 8), cluster("c2").node("n0", cpu="4").obj()]))
    lines = explained(inp, result, "second")
    assert lines[0] == "PyTorchJob team-a/second is Queued, position 1 in queue root/qa."
    assert lines[2:] == [
        "- its quota has room; it waits for one member cluster to hold the whole gang:",
        "  - cluster c1: nvidia.com/gpu 0 free of 8 needed",
        "  - cluster c2: no nvidia.com/gpu at all (8 needed): it never holds this job"]


def test_an_admitted_job_is_told_where_it_runs_and_nothing_more() -> None:
    inp, result = decided(cycle_input(jobs=[gpu_job("only", 2, "team-a")],
                                      tree=simple_tree(quota("qa", ns=["team-a"]))))
    assert explained(inp, result, "only") == [
        "PyTorchJob team-a/only is Admitted on c1.", "Reason: admitted to c1 (worker 1)"]


def test_an_invalid_job_is_told_to_fix_its_manifest() -> None:
    inp, result = decided(cycle_input(
        jobs=[gpu_job("typo", 1, "team-a").priority_class("hihg")],
        tree=simple_tree(quota("qa", ns=["team-a"])), priority_classes=PRIORITIES))
    lines = explained(inp, result, "typo")
    assert lines[0] == "PyTorchJob team-a/typo is Invalid."
    assert "hihg" in lines[1]
    assert lines[2:] == ["To run it: fix the manifest at the place named above; "
                         "`fleetq validate` lists every problem."]


def test_a_reclaimed_job_is_told_its_reclaimer_runs_within_its_quotas_min() -> None:
    """The owner's quota runs at its min (4 of 4): nothing of it can be
    reclaimed, so the borrower is not told it spares the owner (as if it
    could evict it), but why it cannot (the spared case: test_preemption's
    quota-mate case)."""
    spec = quota("root", quota("qa", ns=["team-a"], min={"cpu": "500", "gpu": "4"}),
                 quota("qb", ns=["team-b"], min={"cpu": "500", "gpu": "4"}),
                 min={"cpu": "1000", "gpu": "8"}, max={"cpu": "1000", "gpu": "8"})
    borrower = gpu_job("borrower", 6, "team-a").created("2026-01-01T00:00:01Z")
    first = reconcile_cycle(cycle_input(jobs=[borrower], tree=tree(spec)))
    assert by_name(first)["borrower"].phase.value == "Admitted"
    owner = gpu_job("owner", 4, "team-b").created("2026-01-01T00:00:02Z")
    inp, result = decided(cycle_input(jobs=[borrower, owner], tree=tree(spec),
                                      prior=prior_of(first.decisions)))
    d = by_name(result)["borrower"]
    assert d.phase.value == "Queued" and d.preempted_by == "PyTorchJob team-b/owner"
    told = explained(inp, result, "borrower")
    assert ("- PyTorchJob team-b/owner, which reclaimed from it, runs within the min of its "
            "quota root/qb: nothing of it can be reclaimed (a job above its own quota's min "
            "borrows only what other quotas leave unused)") in told
    assert not any("it does not reclaim from" in line for line in told), told


def test_a_job_short_of_a_slot_its_parent_shares_is_told_it_does_not_reclaim_one() -> None:
    spec = quota("root", quota("dept", quota("qa", ns=["team-a"], min={"cpu": "100"}),
                               quota("qb", ns=["team-b"], min={"cpu": "100"}),
                               min={"cpu": "200"}, max={"kube-queue/max-jobs": "2"}),
                 min={"cpu": "1000", "gpu": "64"}, max={"cpu": "1000", "gpu": "64"})
    inp, result = decided(cycle_input(
        jobs=[gpu_job("b-1", 1, "team-b").priority_class("high"),
              gpu_job("b-2", 1, "team-b").priority_class("high"),
              gpu_job("a-1", 1, "team-a").priority_class("low")],
        tree=tree(spec), priority_classes=PRIORITIES))
    lines = explained(inp, result, "a-1")
    assert lines[1] == ("Reason: waiting for quota: quota root/dept runs at most 2 job(s) at "
                        "a time (kube-queue/max-jobs)")
    assert ("- the min of quota root/dept/qa names no kube-queue/max-jobs, so it guarantees "
            "no job slot: the job waits for one rather than reclaim it from another quota"
            ) in lines


def test_a_non_preemptible_job_over_its_quotas_min_is_told_the_min_is_the_bar() -> None:
    """Its quota's max has room, but a non-preemptible job runs within the min:
    explain says so and what would help (the min raised to what), and not that
    a higher priority would. Raised as told, the min lets it in."""
    def fleet(gpus: str) -> CycleInput:
        return cycle_input(
            jobs=[gpu_job("first", 3, "team-a").non_preemptible()
                  .created("2026-01-01T00:00:01Z"),
                  gpu_job("second", 2, "team-a").non_preemptible()
                  .created("2026-01-01T00:00:02Z")],
            tree=simple_tree(quota("qa", ns=["team-a"], min={"nvidia.com/gpu": gpus})))

    inp, result = decided(fleet("4"))
    lines = explained(inp, result, "second")
    assert "min (non-preemptible) 4" in lines[1]
    assert lines[2] == (
        '- it is not preemptible (quota.scheduling.alibabacloud.com/preemptible: "false"), so '
        "it runs only within the min of quota root/qa, with the other non-preemptible jobs "
        "there: raise the nvidia.com/gpu min of quota root/qa to 5 (4 now, 3 used by "
        "non-preemptible jobs), let the job be preempted (drop the label), or wait for those "
        "jobs to end")
    assert not any("a higher priority" in line for line in lines)
    assert by_name(reconcile_cycle(fleet("5")))["second"].phase is Phase.ADMITTED


def test_a_non_preemptible_job_is_told_the_parents_mins_its_quotas_min_needs_raised() -> None:
    """Told to raise its quota's min, the user did, and the tree was refused:
    the mins of a quota's children may not add up to more than its own (the
    tree's last good version was kept, and the job waited on)."""
    def fleet(a: str, p: str, root: str) -> CycleInput:
        spec = quota("root", quota("p", quota("a", ns=["team-a"], min={"cpu": a}),
                                   quota("b", ns=["team-b"], min={"cpu": "2"}),
                                   min={"cpu": p}),
                     quota("c", ns=["team-c"], min={"cpu": "4"}),
                     min={"cpu": root}, max={"cpu": root})
        return cycle_input(jobs=[
            job("a1", "team-a").pod_set("main", 1, cpu="2").non_preemptible()
            .created("2026-01-01T00:00:01Z"),
            job("a2", "team-a").pod_set("main", 1, cpu="1").non_preemptible()
            .created("2026-01-01T00:00:02Z")], tree=tree(spec))

    inp, result = decided(fleet("2", "4", "8"))
    lines = explained(inp, result, "a2")
    assert ("there: raise the cpu min of quota root/p/a to 3 (2 now, 2 used by non-preemptible "
            "jobs), and with it the cpu min of root/p to 5 and the cpu min of root to 9 (its "
            "min is its max, the fleet's: raise both with the clusters' capacity, or lower a "
            "min under it) (the mins of a quota's children may not add up to more than its "
            "own), let the job be preempted (drop the label), or wait for those jobs to end"
            ) in lines[2], lines
    assert by_name(reconcile_cycle(fleet("3", "5", "9")))["a2"].phase is Phase.ADMITTED
    # where the parents have room in their mins, they are not named
    inp, result = decided(fleet("2", "5", "9"))
    assert ("there: raise the cpu min of quota root/p/a to 3 (2 now, 2 used by non-preemptible "
            "jobs), let the job be preempted") in explained(inp, result, "a2")[2]


def test_a_job_placed_by_capacity_alone_is_not_told_of_a_quota_queue() -> None:
    """Its policy has no suspension.scheduling: it waits in no quota queue (no
    position), for room on a cluster; explain says so."""
    inp, result = decided(cycle_input(
        jobs=[gpu_job("a", 8), gpu_job("b", 8)], clusters=[gpu_cluster("c1", 8)],
        policies=[policy().capacity_only()]))
    d = by_name(result)["b"]
    assert d.position is None
    lines = explained(inp, result, "b")
    assert lines[2] == ("- its policy places it by capacity alone (no suspension.scheduling: "
                        "it is in no quota queue); it waits for one member cluster to hold "
                        "the whole gang:")
    assert not any("its quota has room" in line for line in lines)


def test_a_reclaimed_job_is_not_told_it_spares_a_reclaimer_that_could_not_return() -> None:
    """As above, but qb also runs a job of the owner's priority: evicted, the
    owner could not reclaim in return (qb above its min with it back), so the
    borrower does not spare it (``could_reclaim_back``), and is not told so."""
    from dataclasses import replace

    from reconciler.core.model import Phase
    from reconciler.core.resources import add_into
    spec = quota("root", quota("qa", ns=["team-a"], min={"cpu": "500", "gpu": "4"}),
                 quota("qb", ns=["team-b"], min={"cpu": "500", "gpu": "4"}),
                 min={"cpu": "1000", "gpu": "8"}, max={"cpu": "1000", "gpu": "8"})
    borrower = gpu_job("borrower", 6, "team-a").created("2026-01-01T00:00:01Z")
    first = reconcile_cycle(cycle_input(jobs=[borrower], tree=tree(spec)))
    owner = gpu_job("owner", 4, "team-b").created("2026-01-01T00:00:02Z")
    inp, result = decided(cycle_input(jobs=[borrower, owner], tree=tree(spec),
                                      prior=prior_of(first.decisions)))
    assert by_name(result)["borrower"].preempted_by == "PyTorchJob team-b/owner"
    told = explained(inp, result, "borrower")
    assert any("which reclaimed from it" in line for line in told)
    own = by_name(result)["owner"]
    mate = replace(own, key=own.key._replace(name="mate"))  # (qb: 8 of min 4 with it)
    used = {path: dict(v) for path, v in result.quota_used.items()}
    add_into(used["root/qb"], mate.requests)
    assert mate.phase is Phase.ADMITTED
    told = explain_decision(by_name(result)["borrower"], decisions=[*result.decisions, mate],
                            tree=inp.tree, quota_used=used, cluster_free=result.cluster_free,
                            clusters={c.name: c for c in inp.clusters})
    assert not any("which reclaimed from it" in line for line in told), told


def test_an_ended_job_is_told_where_it_ran_and_what_becomes_of_its_object() -> None:
    """A Duplicated job that failed on one of its clusters was told it failed
    "on" the first of them (where it may have succeeded), and to give its
    policy a failover, which a Duplicated job never takes; a job its operator
    deletes once ended was told it stays on its cluster until its file goes."""
    from reconciler.core.explain import explain
    from reconciler.core.model import Decision, JobKey, Phase
    key = JobKey("batch", "Job", "platform", "warm")
    failed = Decision(key=key, phase=Phase.FAILED, enqueued_at="2026-01-01T00:00:00Z",
                      cluster="c1", copies=("c2", "c3"), reason="ended on each of ...")
    lines = explain(failed, tree=None, quota_used={}, cluster_free={}, clusters={},
                    admitted_in_quota=[])
    assert lines[0] == "Job platform/warm is Failed (it ran on c1, c2, c3)."
    assert "failover" not in lines[-1] and lines[-1].endswith(
        "Deleting its file removes it from the cluster.")
    once = Decision(key=key, phase=Phase.FAILED, enqueued_at="2026-01-01T00:00:00Z",
                    cluster="c1", reason="failed on c1")
    lines = explain(once, tree=None, quota_used={}, cluster_free={}, clusters={},
                    admitted_in_quota=[], deleted_when=(False, True))
    assert lines[0] == "Job platform/warm is Failed on c1."
    assert "give its policy failover.application" in lines[-1]
    assert lines[-1].endswith("Its operator deletes it there once it ended (its manifest left "
                              "the state branch: declared, it would run again).")
    done = Decision(key=key, phase=Phase.FINISHED, enqueued_at="2026-01-01T00:00:00Z",
                    cluster="c1", reason="succeeded on c1")
    for deleted, said in (((True, False), "its operator deletes it there once it ended"),
                          ((False, True), "it stays on its cluster (for its history)")):
        lines = explain(done, tree=None, quota_used={}, cluster_free={}, clusters={},
                        admitted_in_quota=[], deleted_when=deleted)
        assert said in lines[-1], (deleted, lines)


NP = {"quota.scheduling.alibabacloud.com/preemptible": "false"}


def _holders_and_waiting(holder_labels: dict[str, str] | None = None) -> CycleInput:
    """``h1`` (mid) and ``h2`` (high) hold quota qa's 8 GPUs; ``w`` (low, 4
    GPUs) waits."""
    labels = holder_labels or {}
    return cycle_input(
        jobs=[gpu_job("h1", 4, "team-a").priority_class("mid").labels(**labels)
              .created("2026-01-01T00:00:01Z"),
              gpu_job("h2", 4, "team-a").priority_class("high").labels(**labels)
              .created("2026-01-01T00:00:02Z"),
              gpu_job("w", 4, "team-a").priority_class("low").created("2026-01-01T00:00:03Z")],
        tree=simple_tree(quota("qa", ns=["team-a"], min={"gpu": "8"}, max={"gpu": "8"})),
        priority_classes=PRIORITIES)


def test_a_higher_priority_is_offered_only_as_high_as_would_preempt_enough() -> None:
    """It was offered whenever the quota had running jobs: under preemption
    Never, with only non-preemptible holders, and without saying how high."""
    inp, result = decided(_holders_and_waiting())
    assert by_name(result)["w"].phase is Phase.QUEUED
    lines = explained(inp, result, "w")
    assert ("- jobs holding quota root/qa: team-a/h1 (priority 100), team-a/h2 (priority 1000); "
            "a priority above 100 would let it preempt 1 of them") in lines
    d = by_name(result)["w"]
    never = explain_decision(d, decisions=result.decisions, tree=inp.tree,
                             quota_used=result.quota_used, cluster_free=result.cluster_free,
                             clusters={c.name: c for c in inp.clusters},
                             policy=PreemptionPolicy.NEVER)
    assert not any("a priority above" in line for line in never), never
    inp, result = decided(_holders_and_waiting(NP))
    held = explain_decision(by_name(result)["w"], decisions=result.decisions, tree=inp.tree,
                            quota_used=result.quota_used, cluster_free=result.cluster_free,
                            clusters={c.name: c for c in inp.clusters},
                            not_preemptible={j.key for j in inp.jobs if j.key.name != "w"})
    assert not any("a priority above" in line for line in held), held


def _preempted_with_priority_above(inp: CycleInput, result: CycleResult, name: str
                                   ) -> tuple[int, int]:
    """(the priority explain says ``name`` needs to go above, how many jobs it
    says that lets it preempt), and how many the next cycle, with the job at
    that priority plus one, preempts for it: the two counts."""
    import re
    from dataclasses import replace

    jobs = {j.key: j for j in inp.jobs}
    d = by_name(result)[name]
    names = [c.name for c in inp.clusters]

    def fits(gone: Collection[Decision] | None) -> Mapping[str, str]:  # (as fleetq explain)
        job = jobs[d.key]
        if gone is None:
            return result.cluster_fits(job, names, empty=True)
        return result.cluster_fits(job, names, {x.key: jobs[x.key].pod_sets for x in gone})

    lines = explain_decision(d, decisions=result.decisions, tree=inp.tree,
                             quota_used=result.quota_used, cluster_free=result.cluster_free,
                             clusters={c.name: c for c in inp.clusters}, fits=fits)
    said = next(m for line in lines if (m := re.search(
        r"a priority above (\d+) would let it preempt (\d+) of them", line)))
    above, told = int(said[1]), int(said[2])
    raised = {"outranks": above + 1}
    again = reconcile_cycle(replace(
        inp, jobs=tuple(replace(j, priority_class="outranks") if j.key == d.key else j
                        for j in inp.jobs),
        priority_classes={**inp.priority_classes, **raised},
        prior={p.key: p for p in prior_of(result.decisions)}))
    assert by_name(again)[name].phase is Phase.ADMITTED, by_name(again)[name]
    preempted = [x for x in again.decisions if x.preempted_by == f"{d.key.kind} "
                 f"{d.key.namespace}/{d.key.name}"]
    return told, len(preempted)


def test_the_jobs_a_higher_priority_would_preempt_are_counted_as_the_gang_fits_the_nodes(
        ) -> None:
    """One of the two freed the quota, but the 8-GPU pod needs their whole node:
    it was told 1, and preempted 2."""
    inp, result = decided(cycle_input(
        jobs=[gpu_job("b1", 8, "team-b", replicas=2).priority_class("high")
              .created("2026-01-01T00:00:01Z"),
              gpu_job("x1", 6, "team-a").priority_class("low").created("2026-01-01T00:00:02Z"),
              gpu_job("x2", 2, "team-a").priority_class("low").created("2026-01-01T00:00:03Z"),
              gpu_job("t", 8, "team-a").created("2026-01-01T00:00:04Z")],
        clusters=[gpu_cluster("c1", 8, 8, 8)], priority_classes=PRIORITIES,
        tree=simple_tree(quota("qa", ns=["team-a"], max={"gpu": "14"}),
                         quota("qb", ns=["team-b"], max={"gpu": "16"}))))
    assert by_name(result)["t"].phase is Phase.QUEUED
    assert _preempted_with_priority_above(inp, result, "t") == (2, 2)


def test_the_jobs_a_higher_priority_would_preempt_are_the_fewest_that_free_enough() -> None:
    """13 GPUs to free from jobs of 1, 4, 8 and 8: two of 8, not the first
    three taken in order of priority (1 + 4 + 8)."""
    inp, result = decided(cycle_input(
        jobs=[gpu_job("v0", 1, "team-a").priority_class("low").created("2026-01-01T00:00:01Z"),
              *(gpu_job(f"v{i}", gpus, "team-a").priority_class("mid")
                .created(f"2026-01-01T00:00:0{i + 1}Z")
                for i, gpus in enumerate((4, 8, 8), start=1)),
              gpu_job("t", 13, "team-a").created("2026-01-01T00:00:09Z")],
        clusters=[gpu_cluster("c1", 32, 32, 32)], priority_classes=PRIORITIES,
        tree=simple_tree(quota("qa", ns=["team-a"], max={"gpu": "21"}))))
    assert by_name(result)["t"].phase is Phase.QUEUED
    assert _preempted_with_priority_above(inp, result, "t") == (2, 2)


def test_a_quota_above_its_own_that_blocks_is_told_with_the_jobs_using_it() -> None:
    inp, result = decided(cycle_input(
        jobs=[gpu_job("b1", 8, "team-b").created("2026-01-01T00:00:01Z"),
              gpu_job("w", 4, "team-a").created("2026-01-01T00:00:02Z")],
        tree=simple_tree(quota("algo", quota("qa", ns=["team-a"], max={"gpu": "8"}),
                               quota("qb", ns=["team-b"], max={"gpu": "8"}), max={"gpu": "8"}))))
    lines = explained(inp, result, "w")
    assert ("- quota root/algo nvidia.com/gpu: 8 used of max 8; 4 more must be freed, or max "
            "raised to 12") in lines, lines
    assert ("- jobs of other quotas using quota root/algo nvidia.com/gpu: team-b/b1 "
            "(root/algo/qb, 8)") in lines, lines


def test_a_job_short_of_quota_and_of_cluster_room_is_told_both() -> None:
    """With room in its quota it would still find no cluster: it was told the
    quota alone, and after raising it, the clusters."""
    inp, result = decided(cycle_input(
        jobs=[gpu_job("h1", 8, "team-a").created("2026-01-01T00:00:01Z"),
              gpu_job("w", 4, "team-a").created("2026-01-01T00:00:02Z")],
        clusters=[gpu_cluster("c1", 8)],
        tree=simple_tree(quota("qa", ns=["team-a"], max={"gpu": "8"}))))
    lines = explained(inp, result, "w")
    at = lines.index("- and once the quota has room, no member cluster has room for the whole "
                     "gang now:")
    assert lines[at + 1] == "  - cluster c1: nvidia.com/gpu 0 free of 4 needed", lines
    assert any(line.startswith("- quota root/qa nvidia.com/gpu: 8 used of max 8") for line in
               lines[:at])


def test_a_job_whose_cluster_room_is_split_over_nodes_is_told_so() -> None:
    inp, result = decided(cycle_input(
        jobs=[gpu_job("h1", 4).created("2026-01-01T00:00:01Z"),
              gpu_job("h2", 4).created("2026-01-01T00:00:02Z"),
              gpu_job("w", 4).created("2026-01-01T00:00:03Z")],
        clusters=[gpu_cluster("c1", 6, 6), gpu_cluster("c2", 2)],  # (2 GPUs left on each)
        tree=simple_tree(quota("qa", ns=["default"], max={"gpu": "16"}))))
    by = by_name(result)
    assert by["w"].phase is Phase.QUEUED, by["w"]
    assert explained(inp, result, "w")[2:] == [
        "- its quota has room; it waits for one member cluster to hold the whole gang:",
        "  - cluster c1: a worker pod needs nvidia.com/gpu 4 but no node has more than 2 free",
        "  - cluster c2: nvidia.com/gpu 2 in all, even empty (4 needed): it never holds "
        "this job"]


def test_a_non_preemptible_job_is_not_told_to_drop_its_label_when_that_would_not_help(
        ) -> None:
    """np2 waits within its quota's min; were it preemptible, the root would
    still have no room (team-b's job runs within its min)."""
    inp, result = decided(cycle_input(
        jobs=[gpu_job("np1", 4, "team-a").labels(**NP).created("2026-01-01T00:00:01Z"),
              gpu_job("b1", 4, "team-b", replicas=3).created("2026-01-01T00:00:02Z"),
              gpu_job("np2", 4, "team-a").labels(**NP).created("2026-01-01T00:00:03Z")],
        clusters=[gpu_cluster("c1", 8, 8, 8)],
        tree=simple_tree(quota("qa", ns=["team-a"], min={"gpu": "4"}, max={"gpu": "16"}),
                         quota("qb", ns=["team-b"], min={"gpu": "12"}, max={"gpu": "16"}),
                         total={"cpu": "1000", "gpu": "16"})))
    lines = explained(inp, result, "np2")
    said = next(line for line in lines if "it is not preemptible" in line)
    assert "raise the nvidia.com/gpu min of quota root/qa to 8 (4 now, 4 used" in said, lines
    assert "drop the label" not in said, lines


def test_a_non_preemptible_job_over_its_min_is_not_told_room_at_max_would_let_it_in() -> None:
    """Its min is the bar: the limits of max it is also short of are told as
    such, not as room that would let it in (raised, it still waits)."""
    inp, result = decided(cycle_input(
        jobs=[gpu_job("run", 8, "team-a").created("2026-01-01T00:00:01Z"),
              gpu_job("np", 6, "team-a").labels(**NP).created("2026-01-01T00:00:02Z")],
        clusters=[gpu_cluster("c1", 8, 8)],
        tree=simple_tree(quota("qa", ns=["team-a"], min={"gpu": "4"},
                               max={"gpu": "8", "kube-queue/max-jobs": "1"}))))
    assert by_name(result)["np"].phase is Phase.INADMISSIBLE
    lines = explained(inp, result, "np")
    assert lines[2:5] == [
        '- it is not preemptible (quota.scheduling.alibabacloud.com/preemptible: "false"), so '
        "it runs only within the min of quota root/qa, with the other non-preemptible jobs "
        "there: raise the nvidia.com/gpu min of quota root/qa to 6 (4 now, 0 used by "
        "non-preemptible jobs)",
        "- beyond that min, it is also short at each of these:",
        "  - quota root/qa kube-queue/max-jobs: 1 used of max 1; 1 more must be freed, or max "
        "raised to 2"], lines
    assert not any("lets it in" in line for line in lines), lines


@pytest.mark.parametrize("cpu", ["8", "2"], ids=["with room", "short of room"])
def test_a_cluster_no_node_of_admits_the_job_is_told_so(cpu: str) -> None:
    """A cluster whose nodes lack the labels the job's pods ask for was told,
    with room, that its room was split over its nodes; short of room, its free
    room, as if room freed there would let the job run."""
    c1 = cluster("c1").node("n1", cpu=cpu, labels={"disk": "hdd"}).obj()
    c2 = cluster("c2").node("n1", cpu="4", labels={"disk": "ssd"}).obj()
    inp, result = decided(cycle_input(
        jobs=[job("h").pod_set("main", 1, cpu="3", node_selector={"disk": "ssd"})
              .created("2026-01-01T00:00:00Z"),
              job("w").pod_set("main", 1, cpu="4", node_selector={"disk": "ssd"})
              .created("2026-01-01T00:00:01Z")],
        clusters=[c1, c2], tree=simple_tree(quota("qa", ns=["default"], max={"cpu": "16"}))))
    assert by_name(result)["w"].phase is Phase.QUEUED, by_name(result)["w"]
    assert explained(inp, result, "w")[2:] == [
        "- its quota has room; it waits for one member cluster to hold the whole gang:",
        "  - cluster c1: no node admits its pods: no node has the labels of the main pods' "
        "nodeSelector (disk=ssd)",
        "  - cluster c2: cpu 1 free of 4 needed"]


def test_a_job_blocked_behind_a_strict_fifo_head_is_not_told_of_nodes() -> None:
    """The room split over nodes is told only of a job no cluster fits."""
    inp, result = decided(cycle_input(
        jobs=[gpu_job("h", 8).created("2026-01-01T00:00:00Z"),
              gpu_job("big", 8, replicas=2).created("2026-01-01T00:00:01Z"),
              gpu_job("small", 1).created("2026-01-01T00:00:02Z")],
        clusters=[gpu_cluster("c1", 8, 8)],
        tree=simple_tree(quota("qa", ns=["default"], max={"gpu": "32"})),
        settings=settings(root__qa=strict_fifo())))
    small = by_name(result)["small"]
    assert small.phase is Phase.QUEUED and "StrictFIFO" in small.reason, small
    assert not any("split over" in line for line in explained(inp, result, "small"))


def test_a_job_blocked_behind_a_strict_fifo_head_is_told_the_head_not_a_cluster_short() -> None:
    """With c1 and c2 holding room for it, the job waits for the head of its
    StrictFIFO queue, not for cluster room (c3's lack of it is no reason)."""
    inp, result = decided(cycle_input(
        jobs=[gpu_job("h", 6, replicas=2).created("2026-01-01T00:00:00Z"),
              gpu_job("big", 8, replicas=2).created("2026-01-01T00:00:01Z"),
              gpu_job("small", 1).created("2026-01-01T00:00:02Z")],
        clusters=[gpu_cluster("c1", 8), gpu_cluster("c2", 8, 8), gpu_cluster("c3", 0)],
        tree=simple_tree(quota("qa", ns=["default"], max={"gpu": "32"})),
        settings=settings(root__qa=strict_fifo())))
    assert by_name(result)["big"].phase is Phase.QUEUED, by_name(result)["big"]
    assert explained(inp, result, "small")[2:] == [
        "- its queue root/qa is StrictFIFO: no job there runs before its head, PyTorchJob "
        "default/big, which waits (`fleetq explain PyTorchJob/default/big` says for what); "
        "once that one runs or leaves the queue, this one is tried (queueStrategy "
        "BestEffortFIFO would let it go past)",
        "- 1 job(s) are ahead of it in queue root/qa"]


def test_a_higher_priority_is_told_to_preempt_the_fewest_jobs_that_free_the_room() -> None:
    """With a 6-GPU job and two 1-GPU jobs holding the quota, a 6-GPU job of
    the same priority was told it would preempt 3 of them: the 6-GPU one is
    enough."""
    inp, result = decided(cycle_input(
        jobs=in_order(("one", 1, "low"), ("two", 1, "low"), ("six", 6, "low"), ("w", 6, "low")),
        tree=simple_tree(quota("qa", ns=["team-a"], max={"gpu": "8"})),
        clusters=[gpu_cluster("c1", 8, 8)], priority_classes=PRIORITIES))
    assert by_name(result)["w"].phase is Phase.QUEUED, by_name(result)["w"]
    assert ("- jobs holding quota root/qa: team-a/one (priority 10), team-a/six (priority 10), "
            "team-a/two (priority 10); a priority above 10 would let it preempt 1 of them"
            ) in explained(inp, result, "w")


def test_a_non_preemptible_job_above_its_quotas_min_is_not_told_to_wait() -> None:
    """Inadmissible (its quota's min is below its request, even with the quota
    empty): no job leaving would let it in, as the line after the advice says."""
    inp, result = decided(cycle_input(
        jobs=[gpu_job("np", 6, "team-a").labels(**NP).created("2026-01-01T00:00:01Z")],
        clusters=[gpu_cluster("c1", 8, 8, 8)],
        tree=simple_tree(quota("qa", ns=["team-a"], min={"gpu": "4"}, max={"gpu": "16"}),
                         total={"cpu": "1000", "gpu": "16"})))
    assert by_name(result)["np"].phase is Phase.INADMISSIBLE, by_name(result)["np"]
    lines = explained(inp, result, "np")
    said = next(line for line in lines if "it is not preemptible" in line)
    assert "raise the nvidia.com/gpu min of quota root/qa to 6 (4 now" in said, lines
    assert "wait for those jobs" not in said, lines


def test_a_job_within_its_min_on_clusters_full_of_other_mins_is_told_the_tree_overpromises(
        ) -> None:
    """qa and qb are each guaranteed 8 cpu, the fleet's one cluster holds 8,
    and qb's job fills it within qb's min: nothing can be reclaimed for qa's
    job, which its quota has room for. Told that the tree guarantees more than
    the clusters hold; not when the fleet holds it all, on a cluster the job's
    pods do not go to (what holds it is then its nodeSelector)."""
    from tests.builders import cluster, job

    def case(*clusters: MemberCluster) -> list[str]:
        spec = quota("root", quota("qa", ns=["team-a"], min={"cpu": "8"}),
                     quota("qb", ns=["team-b"], min={"cpu": "8"}),
                     min={"cpu": "16"}, max={"cpu": "16"})
        b = job("b", "team-b").pod_set("main", 1, cpu="8", node_selector={"pool": "x"})
        a = job("a", "team-a").pod_set("main", 1, cpu="4", node_selector={"pool": "x"})
        inp, result = decided(cycle_input(jobs=[b.created("2026-01-01T00:00:01Z"),
                                                a.created("2026-01-01T00:00:02Z")],
                                          tree=tree(spec), clusters=list(clusters)))
        assert by_name(result)["a"].phase.value == "Queued"
        return explained(inp, result, "a")

    c1 = cluster("c1").node("n1", cpu="8", labels={"pool": "x"}).obj()
    told = case(c1)
    assert ("- the jobs on c1 run within their quotas' min, so none is reclaimed for it: the "
            "quotas' mins guarantee cpu 16 in all, more than the member clusters hold (8); "
            "lower the mins to what the clusters hold, or add capacity") in told, told
    other = cluster("c2").node("n1", cpu="8", labels={"pool": "y"}).obj()
    assert not any("guarantees cpu" in line for line in case(c1, other))


def test_explains_bullets_name_only_clusters_that_run_jobs_and_say_what_nodes_do_not_list(
        ) -> None:
    """c1 full of qb's job within its min, c2 empty but too small, c3 whose
    nodes list no cpu: the bullets say c3 lists none (not "0 free"), and the
    jobs held within their mins are said to be on c1 alone."""
    from tests.builders import cluster, job
    spec = quota("root", quota("qa", ns=["team-a"], min={"cpu": "8"}),
                 quota("qb", ns=["team-b"], min={"cpu": "8"}),
                 min={"cpu": "16"}, max={"cpu": "16"})
    c1 = cluster("c1").node("n1", cpu="8").obj()
    c2 = cluster("c2").node("n1", cpu="2").obj()
    c3 = cluster("c3").node("n1", memory="8Gi").obj()
    b = job("b", "team-b").pod_set("main", 1, cpu="8").created("2026-01-01T00:00:01Z")
    a = job("a", "team-a").pod_set("main", 1, cpu="4").created("2026-01-01T00:00:02Z")
    inp, result = decided(cycle_input(jobs=[b, a], tree=tree(spec), clusters=[c1, c2, c3]))
    told = explained(inp, result, "a")
    assert "  - cluster c3: no node lists cpu in its allocatable (4 requested: add it where the " \
           "nodes have it)" in told, told
    assert "  - cluster c2: cpu 2 in all, even empty (4 needed): it never holds this job" \
        in told, told
    assert any(line.startswith("- the jobs on c1 run within their quotas' min") for line in
               told), told


def test_a_job_short_at_several_limits_is_told_it_needs_room_at_all_of_them() -> None:
    """Each limit's line read as if raising that one were enough."""
    inp, result = decided(cycle_input(
        jobs=[gpu_job("h1", 8, "team-a").created("2026-01-01T00:00:01Z"),
              gpu_job("w", 4, "team-a").created("2026-01-01T00:00:02Z")],
        clusters=[gpu_cluster("c1", 8, 8)],
        tree=simple_tree(quota("algo", quota("qa", ns=["team-a"], max={"gpu": "8"}),
                               max={"gpu": "8"}))))
    lines = explained(inp, result, "w")
    at = lines.index("- it is short at each of these (room at all of them lets it in):")
    assert sorted(lines[at + 1:at + 3]) == [
        "  - quota root/algo nvidia.com/gpu: 8 used of max 8; 4 more must be freed, or max "
        "raised to 12",
        "  - quota root/algo/qa nvidia.com/gpu: 8 used of max 8; 4 more must be freed, or max "
        "raised to 12"], lines


AHEAD = {  # case -> (the jobs of team-a (name, GPUs), the cluster's nodes' GPUs)
    "one ahead": ([("a1", 2), ("a2", 2), ("a3", 4), ("t", 1)], (8, 8)),
    "six ahead": ([("x1", 4), ("x2", 4), *((f"a{i}", 4) for i in range(1, 7)), ("t", 4)],
                  (8, 8, 8, 8, 8)),
}


@pytest.mark.parametrize(("case", "gpus", "slots", "told"), [
    ("one ahead", "8", "2", ("4 (3 is not enough: the 1 job(s)", "1 job(s)", "9 (8 now, 4 used)")),
    ("six ahead", "16", "2", ("9 (3 is not enough: the 6 job(s)", "6 job(s)",
                              "36 (16 now, 8 used)")),
])
def test_a_job_is_told_what_the_jobs_ahead_of_it_would_take_of_the_limits_it_passes(
        case: str, gpus: str, slots: str, told: tuple[str, str, str]) -> None:
    """Told to raise the job limit as far as the jobs ahead of it need, it
    waited on: they took the GPUs, a limit it was never told of. And with six
    ahead, of which qa's GPUs let two in: told the slots for those two and
    the GPUs they leave, the four others came in first, and t still waited.
    Each limit the jobs ahead would fill is counted raised too: the values
    told, set, admit it, and one less does not."""
    def fleet(gpus: str, slots: str) -> CycleInput:
        jobs, nodes = AHEAD[case]
        return cycle_input(
            jobs=in_order(*((name, n, "mid") for name, n in jobs)),
            clusters=[gpu_cluster("c1", *nodes)], priority_classes=PRIORITIES,
            tree=simple_tree(quota("qa", ns=["team-a"],
                                   max={"gpu": gpus, "kube-queue/max-jobs": slots})))

    inp, result = decided(fleet(gpus, slots))
    lines = explained(inp, result, "t")
    slots_told, ahead, gpus_told = told
    # (room freed goes to the jobs ahead first, as room raised does)
    freed = int(slots_told.split()[0]) - 2
    assert lines[2] == (f"- quota root/qa kube-queue/max-jobs: 2 used of max 2; {freed} more "
                        f"must be freed, or max raised to {slots_told} ahead of it in its queue "
                        "would be served first and take the room)"), lines
    assert lines[3] == (f"- with the {ahead} ahead of it in its queue, served first, it would "
                        f"also need quota root/qa nvidia.com/gpu max raised to {gpus_told}: "
                        "else those run and it still waits"), lines
    raised_gpus, raised_slots = gpus_told.split()[0], slots_told.split()[0]
    assert by_name(reconcile_cycle(fleet(raised_gpus, raised_slots)))["t"].phase is \
        Phase.ADMITTED
    if case == "one ahead":  # (the slots freed as told, by jobs that end: it was told 1)
        for ended, phase in ((["a1"], Phase.QUEUED), (["a1", "a2"], Phase.ADMITTED)):
            assert len(ended) in (freed - 1, freed)
            after = reconcile_cycle(replace(inp, jobs=tuple(
                j for j in inp.jobs if j.key.name not in ended), prior={
                p.key: p for p in prior_of(result.decisions)}))
            assert by_name(after)["t"].phase is phase
    assert by_name(reconcile_cycle(fleet(str(int(raised_gpus) - 1), raised_slots)))["t"] \
        .phase is Phase.QUEUED


def _one_ahead_held_back_by_gpus(fleet: FleetSettings | None = None) -> CycleInput:
    """x1 and x2 (4 GPUs each) take quota qa's two job slots; a1 (2 x 5 GPUs)
    waits, ahead of t (4 GPUs), for the GPU max (16) too."""
    jobs = [gpu_job(name, gpus, "team-a", replicas=replicas).priority_class("mid")
            .created(f"2026-01-01T00:00:0{i}Z") for i, (name, gpus, replicas) in enumerate(
                [("x1", 4, 1), ("x2", 4, 1), ("a1", 5, 2), ("t", 4, 1)], start=1)]
    return cycle_input(
        jobs=jobs, clusters=[gpu_cluster("c1", 8, 8, 8)], priority_classes=PRIORITIES,
        tree=simple_tree(quota("qa", ns=["team-a"],
                               max={"gpu": "16", "kube-queue/max-jobs": "2"})),
        settings=fleet)


def test_a_job_ahead_that_another_limit_holds_back_is_not_counted_as_served_first() -> None:
    """A BestEffortFIFO queue passes a job ahead that a limit other than the one
    raised holds back (10 GPUs, with 8 of 16 used): it takes nothing first, and
    the job behind it needs the job limit raised by one, not by two."""
    inp, result = decided(_one_ahead_held_back_by_gpus())
    assert (by_name(result)["a1"].position, by_name(result)["t"].position) == (1, 2)
    lines = explained(inp, result, "t")
    assert lines[2] == ("- quota root/qa kube-queue/max-jobs: 2 used of max 2; 1 more must be "
                        "freed, or max raised to 3"), lines
    assert not any("would also need" in line for line in lines), lines


def test_a_job_ahead_that_another_limit_holds_back_stops_a_strict_fifo_queue() -> None:
    """As above, in a StrictFIFO queue: the job ahead that the GPU max holds
    back would wait at the head with the job limit raised, and hold back the
    job behind it: the limits told are those that let it run, and this one
    after it (told the job limit alone, and then that the job ahead would
    still wait, a user had to find the rest)."""
    def fleet(gpus: str = "16", slots: str = "2") -> CycleInput:
        inp = _one_ahead_held_back_by_gpus(settings(root__qa=strict_fifo()))
        return replace(inp, tree=simple_tree(quota(  # (a node more: room for all on c1)
            "qa", ns=["team-a"], max={"gpu": gpus, "kube-queue/max-jobs": slots})),
            clusters=[gpu_cluster("c1", 8, 8, 8, 8)])

    inp, result = decided(fleet())
    assert by_name(result)["t"].reason.startswith("blocked behind PyTorchJob team-a/a1 ")
    lines = explained(inp, result, "t", strict_fifo=True)
    assert ("- quota root/qa kube-queue/max-jobs: 2 used of max 2; 2 more must be freed, or "
            "max raised to 4 (3 is not enough: the 1 job(s) ahead of it in its queue would be "
            "served first and take the room)") in lines, lines
    assert ("- with the 1 job(s) ahead of it in its queue, served first, it would also need "
            "quota root/qa nvidia.com/gpu max raised to 22 (16 now, 8 used): else those run "
            "and it still waits") in lines, lines
    assert by_name(reconcile_cycle(fleet("22", "4")))["t"].phase is Phase.ADMITTED
    best_effort = explained(inp, result, "t")  # (as its queue were BestEffortFIFO)
    assert not any("would also need" in line for line in best_effort), best_effort


def test_a_strict_fifo_head_held_back_by_a_limit_the_job_does_not_need_is_told_with_it(
        ) -> None:
    """The head of t's StrictFIFO queue waits for memory, which t asks none
    of: raising t's own limits would not let it in, and explain says which
    max, and how far, lets the head run first."""
    def fleet(memory: str = "16Gi", slots: str = "1") -> CycleInput:
        jobs = [job("x", "team-a").pod_set("main", 1, cpu="1", memory="8Gi")
                .created("2026-01-01T00:00:01Z"),
                job("head", "team-a").pod_set("main", 1, cpu="1", memory="12Gi")
                .created("2026-01-01T00:00:02Z"),
                job("t", "team-a").pod_set("main", 1, cpu="1").created("2026-01-01T00:00:03Z")]
        return cycle_input(jobs=jobs, settings=settings(root__qa=strict_fifo()),
                           tree=simple_tree(quota("qa", ns=["team-a"], max={
                               "cpu": "8", "memory": memory, "kube-queue/max-jobs": slots})))

    inp, result = decided(fleet())
    lines = explained(inp, result, "t", strict_fifo=True)
    assert ("- its queue root/qa is StrictFIFO, where a job ahead that waits holds back every "
            "job behind it: PyTorchJob team-a/head, ahead of it, waits for quota root/qa memory: "
            "raise its max to 20Gi (16Gi now, 8Gi used)") in lines, lines
    assert by_name(reconcile_cycle(fleet("20Gi", "3")))["t"].phase is Phase.ADMITTED
    assert by_name(reconcile_cycle(fleet("19Gi", "3")))["t"].phase is Phase.QUEUED


def test_a_priority_is_advised_as_high_as_it_takes_to_free_a_cluster_too() -> None:
    """Preempting the job of priority 100 frees the job slot but no GPU; the
    one of 1000 frees both: a priority above 1000 lets it in (it was told a
    higher priority would not, from the first level that freed the slot)."""
    x1 = job("x1", "team-a").pod_set("main", 1, cpu="1").priority_class("mid") \
        .created("2026-01-01T00:00:01Z")
    x2 = gpu_job("x2", 8, "team-a").priority_class("high").created("2026-01-01T00:00:02Z")
    t = gpu_job("t", 8, "team-a").priority_class("mid").created("2026-01-01T00:00:03Z")
    inp, result = decided(cycle_input(
        jobs=[x1, x2, t], clusters=[gpu_cluster("c1", 8)], priority_classes=PRIORITIES,
        tree=simple_tree(quota("qa", ns=["team-a"], max={"kube-queue/max-jobs": "2"}))))
    lines = explain_decision(by_name(result)["t"], decisions=result.decisions, tree=inp.tree,
                             quota_used=result.quota_used, cluster_free=result.cluster_free,
                             clusters={c.name: c for c in inp.clusters},
                             fits=lambda gone: result.cluster_fits(
                                 next(j for j in inp.jobs if j.key.name == "t"), ["c1"],
                                 {x.key: next(j for j in inp.jobs if j.key == x.key).pod_sets
                                  for x in gone or ()}, empty=gone is None))
    assert lines[3] == ("- jobs holding quota root/qa: team-a/x1 (priority 100), team-a/x2 "
                        "(priority 1000); a priority above 1000 would let it preempt 1 of them"
                        ), lines


def test_a_cluster_whose_nodes_are_all_smaller_than_a_pod_is_said_never_to_hold_it() -> None:
    """c1 has 16 GPUs in all, 8 a node, for a pod of 10: it was told the job
    waited for room there, as on c2, which holds it once x leaves."""
    x = gpu_job("x", 16, "team-a").created("2026-01-01T00:00:01Z")
    t = gpu_job("t", 10, "team-a").created("2026-01-01T00:00:02Z")
    inp, result = decided(cycle_input(
        jobs=[x, t], clusters=[gpu_cluster("c1", 8, 8), gpu_cluster("c2", 16)],
        tree=simple_tree(quota("qa", ns=["team-a"], max={"kube-queue/max-jobs": "1"}))))
    job_t = next(j for j in inp.jobs if j.key.name == "t")
    lines = explain_decision(by_name(result)["t"], decisions=result.decisions, tree=inp.tree,
                             quota_used=result.quota_used, cluster_free=result.cluster_free,
                             clusters={c.name: c for c in inp.clusters},
                             fits=lambda gone: result.cluster_fits(
                                 job_t, ["c1", "c2"], {}, empty=True) if gone is None
                             else result.cluster_fits(job_t, ["c1", "c2"]))
    assert lines[-2].startswith("  - cluster c1: "), lines
    assert lines[-2].endswith("no node has more than 8 free, even empty: it never holds this "
                              "job"), lines
    assert lines[-1] == "  - cluster c2: free nvidia.com/gpu 0 < 10 requested", lines


def test_a_limit_raised_in_a_strict_fifo_queue_that_lets_a_bigger_job_in_ahead_is_told() -> None:
    """Told to raise the GPU max to 12, in a StrictFIFO queue: that also lets in
    the 12-GPU job of higher priority, held out until then, which becomes the
    head and, waiting, holds it back."""
    jobs = [gpu_job("run", 8, "team-a").priority_class("mid").created("2026-01-01T00:00:01Z"),
            gpu_job("big", 6, "team-a", replicas=2).priority_class("high")
            .created("2026-01-01T00:00:02Z"),
            # (too big for the max, and for every node: no max lets it in)
            gpu_job("huge", 11, "team-a").priority_class("high").created("2026-01-01T00:00:02Z"),
            gpu_job("w", 4, "team-a").priority_class("mid").created("2026-01-01T00:00:03Z")]
    inp, result = decided(cycle_input(
        jobs=jobs, clusters=[gpu_cluster("c1", 8, 8)], priority_classes=PRIORITIES,
        tree=simple_tree(quota("qa", ns=["team-a"], max={"gpu": "10"})),
        settings=settings(root__qa=strict_fifo())))
    by = by_name(result)
    assert (by["big"].phase, by["huge"].phase, by["w"].phase) == (
        Phase.INADMISSIBLE, Phase.INADMISSIBLE, Phase.QUEUED), by
    lines = explained(inp, result, "w", strict_fifo=True)
    assert ("- its queue root/qa is StrictFIFO: those limits raised would also bring "
            "team-a/big (Inadmissible now: too big for them) into the queue, ahead of it, where "
            "a head that waits holds back every job behind it") in lines, lines


def _gpus(name: str, gpus: int, namespace: str, priority: str, second: int) -> JobBuilder:
    """A one-pod job of ``gpus`` GPUs (and nothing else), created at ``second``."""
    return job(name, namespace).pod_set("worker", 1, gpu=str(gpus)).priority_class(priority) \
        .created(f"2026-01-01T00:00:{second:02d}Z")


def _after(fleet: Callable[..., CycleInput], *first: JobBuilder) -> tuple[CycleInput,
                                                                           CycleResult]:
    """The fleet ``fleet()`` makes, decided from the state a cycle of the jobs
    ``first`` alone left (they run), as the next reconcile decides it."""
    was = reconcile_cycle(replace(fleet(), jobs=tuple(j.obj() for j in first)))
    return decided(fleet(prior=prior_of(was.decisions)))


def _next(inp: CycleInput, result: CycleResult, tree: QuotaTree) -> dict[str, Decision]:
    """The next reconcile's decisions, with the quota tree changed to ``tree``."""
    return by_name(reconcile_cycle(replace(inp, tree=tree, prior={
        p.key: p for p in prior_of(result.decisions)})))


SIBLINGS = {  # case -> (GPUs ra (qa) and rb (qb) hold, x's priority class, x counted)
    "of a higher priority": ((8, 4), "high", True),
    "of a lower priority": ((8, 4), "low", False),
    "of its priority, its queue's share the lower": ((8, 4), "mid", True),
    "of its priority, its queue's share the higher": ((4, 8), "mid", False),
}


@pytest.mark.parametrize("case", SIBLINGS)
def test_a_job_short_at_its_parents_max_counts_the_jobs_of_sibling_queues_taken_first(
        case: str) -> None:
    """t (qa, 4 GPUs) waits for root/dept's GPU max, shared with qb, where x (4
    GPUs) waits too. Told to raise that max by t's 4 GPUs, the user did, and
    the cycle took x first (across queues heads go by priority, then lowest
    dominant used/min share, then enqueue time): x ran and t still waited.
    The jobs of the sibling queues the cycle takes first are counted, as
    those ahead in its own queue are, and only those: the value told, set,
    admits t, and one less does not."""
    (held_a, held_b), priority, counted = SIBLINGS[case]

    def spec(dept: int) -> QuotaTree:
        return tree(quota("root", quota("dept", quota("qa", ns=["team-a"], min={"gpu": "4"}),
                                        quota("qb", ns=["team-b"], min={"gpu": "4"}),
                                        min={"gpu": "8"}, max={"gpu": str(dept)}),
                          min={"gpu": "64"}, max={"gpu": "64"}))

    running = (_gpus("ra", held_a, "team-a", "high", 1), _gpus("rb", held_b, "team-b", "high", 2))

    def fleet(prior: Collection[Decision] = ()) -> CycleInput:
        return cycle_input(jobs=[*running, _gpus("x", 4, "team-b", priority, 3),
                                 _gpus("t", 4, "team-a", "mid", 4)],
                           tree=spec(12), clusters=[gpu_cluster("c1", 8, 8, 8, 8)],
                           priority_classes=PRIORITIES, prior=prior)

    inp, result = _after(fleet, *running)
    assert (by_name(result)["x"].phase, by_name(result)["t"].phase) == (Phase.QUEUED,
                                                                         Phase.QUEUED)
    lines = explained(inp, result, "t")
    told = 20 if counted else 16
    assert lines[2] == (
        f"- quota root/dept nvidia.com/gpu: 12 used of max 12; {told - 12} more must be "
        "freed, or max raised to " + (
            "20 (16 is not enough: the 1 job(s) of other queues under root/dept that the cycle "
            "takes before it (team-b/x) would be served first and take the room)" if counted
            else "16")
    ), lines
    assert _next(inp, result, spec(told))["t"].phase is Phase.ADMITTED
    assert _next(inp, result, spec(told - 1))["t"].phase is Phase.QUEUED


@pytest.mark.parametrize("case", ["a resource its quota's min names not", "its min the tighter"])
def test_a_non_preemptible_job_short_at_a_parents_min_is_told_that_min_and_how_far(
        case: str) -> None:
    """A non-preemptible job runs within the min of every quota of its path.
    Short at root/p's, it was told to raise its own quota's min (and the mins
    above that that needs): of GPUs, which root/p/qa's min does not name, that
    would have made qa hold it back too; of cpu, with qb's jobs not limited by
    qb, it would not have helped. It is told root/p's min, and how far: set,
    it lets the job in, and one less does not."""
    def fleet(value: str) -> CycleInput:
        if case == "a resource its quota's min names not":
            p_min = {"cpu": "8", "gpu": value}
            jobs = [gpu_job("r", 4, "team-a").non_preemptible().created("2026-01-01T00:00:01Z"),
                    gpu_job("t", 2, "team-a").non_preemptible().created("2026-01-01T00:00:02Z")]
            qb = quota("qb", ns=["team-b"], min={"cpu": "4"})
        else:  # (qb's min limits nothing: its jobs count at root/p alone)
            p_min = {"cpu": value}
            jobs = [job("r", "team-b").pod_set("main", 1, cpu="2").non_preemptible()
                    .created("2026-01-01T00:00:01Z"),
                    job("t", "team-a").pod_set("main", 1, cpu="3").non_preemptible()
                    .created("2026-01-01T00:00:02Z")]
            qb = quota("qb", ns=["team-b"])
        return cycle_input(jobs=jobs, tree=tree(quota(
            "root", quota("p", quota("qa", ns=["team-a"], min={"cpu": "4"}), qb, min=p_min),
            min={"cpu": "1000", "gpu": "64"}, max={"cpu": "1000", "gpu": "64"})))

    told, now, used = ("nvidia.com/gpu", "6", "4") if case.startswith("a resource") else (
        "cpu", "5", "2")
    inp, result = decided(fleet("4"))
    assert by_name(result)["t"].phase is Phase.QUEUED
    lines = explained(inp, result, "t")
    assert lines[2] == (
        '- it is not preemptible (quota.scheduling.alibabacloud.com/preemptible: "false"), so '
        "it runs only within the min of each quota of its path, with the other "
        f"non-preemptible jobs there: raise the {told} min of quota root/p to {now} (4 now, "
        f"{used} used by non-preemptible jobs), let the job be preempted (drop the label), or "
        "wait for those jobs to end"), lines
    assert by_name(reconcile_cycle(fleet(now)))["t"].phase is Phase.ADMITTED
    assert by_name(reconcile_cycle(fleet(str(int(now) - 1))))["t"].phase is Phase.QUEUED


def test_a_job_taken_first_that_would_get_in_by_preempting_is_counted() -> None:
    """x (qa, high, 4 GPUs) waits for qa's one job slot, which ra (low, 2 GPUs)
    holds, and for root/dept's GPUs: evicting ra frees the slot, not enough
    GPUs. Told to raise root/dept's max by its 2 GPUs, t's user did: x, taken
    first, evicted ra and took the GPUs. It is counted, with the job it
    evicts gone: the value told lets t in, one less does not."""
    def spec(dept: int) -> QuotaTree:
        return tree(quota("root", quota("dept", quota("qa", ns=["team-a"],
                                                      max={"max_jobs": "1"}),
                                        quota("qb", ns=["team-b"]), max={"gpu": str(dept)}),
                          min={"gpu": "64"}, max={"gpu": "64"}))

    running = (_gpus("ra", 2, "team-a", "low", 1), _gpus("rb", 6, "team-b", "high", 2))

    def fleet(prior: Collection[Decision] = ()) -> CycleInput:
        return cycle_input(jobs=[*running, _gpus("x", 4, "team-a", "high", 3),
                                 _gpus("t", 2, "team-b", "mid", 4)],
                           tree=spec(8), clusters=[gpu_cluster("c1", 8, 8, 8, 8)],
                           priority_classes=PRIORITIES, prior=prior)

    inp, result = _after(fleet, *running)
    lines = explained(inp, result, "t")
    assert lines[2] == (
        "- quota root/dept nvidia.com/gpu: 8 used of max 8; 4 more must be freed, or max "
        "raised to 12 (10 is not enough: the 1 job(s) of other queues under root/dept that "
        "the cycle takes before it (team-a/x) would be served first and take the room)"), lines
    assert _next(inp, result, spec(12))["t"].phase is Phase.ADMITTED
    for dept in (11, 10):  # (10: as it was told)
        after = _next(inp, result, spec(dept))
        assert (after["x"].phase, after["ra"].phase, after["t"].phase) == (
            Phase.ADMITTED, Phase.QUEUED, Phase.QUEUED), dept


def test_an_inadmissible_job_a_raised_max_lets_in_first_is_counted() -> None:
    """big (12 GPUs, high) is Inadmissible under qa's max of 10. Told to raise
    it to 12 for w, the user did: big came into the queue, ahead of w, and
    took the room. It is counted once the max told lets it in: the value
    told admits w, one less does not."""
    def spec(gpus: int) -> QuotaTree:
        return simple_tree(quota("qa", ns=["team-a"], max={"gpu": str(gpus)}))

    inp, result = decided(cycle_input(
        jobs=[_gpus("run", 8, "team-a", "mid", 1),
              job("big", "team-a").pod_set("worker", 2, gpu="6").priority_class("high")
              .created("2026-01-01T00:00:02Z"), _gpus("w", 4, "team-a", "mid", 3)],
        tree=spec(10), clusters=[gpu_cluster("c1", 8, 8, 8, 8)], priority_classes=PRIORITIES))
    assert by_name(result)["big"].phase is Phase.INADMISSIBLE
    lines = explained(inp, result, "w")
    assert lines[2] == (
        "- quota root/qa nvidia.com/gpu: 8 used of max 10; 2 more must be freed, or max raised "
        "to 24 (12 is not enough: the 1 job(s) Inadmissible now that the limits raised let in "
        "before it (team-a/big) would be served first and take the room)"), lines
    for gpus, phase in ((24, Phase.ADMITTED), (23, Phase.QUEUED), (12, Phase.QUEUED)):
        assert _next(inp, result, spec(gpus))["w"].phase is phase, gpus


def test_a_job_whose_place_a_job_within_its_min_would_reclaim_is_told_so() -> None:
    """t (qa, whose min is none) waits for one of root/dept's two job slots;
    so does y (qb, low), within qb's min of GPUs but not reclaiming for a job
    slot, which no min guarantees. With a third slot t runs, borrowing, and y,
    short then of GPUs too, reclaims its place: raising the slots as told does
    not keep t running, and explain says so, and who would take it."""
    def spec(slots: str) -> QuotaTree:
        return tree(quota("root", quota("dept", quota("qa", ns=["team-a"]),
                                        quota("qb", ns=["team-b"], min={"gpu": "8"}),
                                        min={"gpu": "8"},
                                        max={"gpu": "8", "max_jobs": slots}),
                          min={"gpu": "64"}, max={"gpu": "64"}))

    running = (_gpus("ra", 2, "team-a", "high", 1), _gpus("rb", 2, "team-b", "high", 2))

    def fleet(prior: Collection[Decision] = ()) -> CycleInput:
        return cycle_input(jobs=[*running, _gpus("t", 4, "team-a", "mid", 3),
                                 _gpus("y", 4, "team-b", "low", 4)],
                           tree=spec("2"), clusters=[gpu_cluster("c1", 8, 8, 8, 8)],
                           priority_classes=PRIORITIES, prior=prior)

    inp, result = _after(fleet, *running)
    lines = explained(inp, result, "t")
    assert ("- even with those limits raised as told, its place is not sure: once it runs, "
            "team-b/y (root/dept/qb) could take it (quota root/dept/qa is then above its min: "
            "the room may be reclaimed from it); to keep it, raise those limits for them too, "
            "or the min of quota root/dept/qa") in lines, lines
    after = _next(inp, result, spec("3"))
    assert after["t"].phase is Phase.QUEUED and after["t"].preempted_by == "PyTorchJob team-b/y"


def _cpu_job(name: str, ns: str, cpu: str, priority: str, second: int) -> JobBuilder:
    """A job of one pod of ``cpu``, created ``second`` seconds into 2026."""
    return job(name, ns).pod_set("main", 1, cpu=cpu).priority_class(priority) \
        .created(f"2026-01-01T00:00:{second:02d}Z")


def _next_cycle(jobs: list[JobBuilder], quotas: QuotaTree, result: CycleResult,
                fleet: FleetSettings | None = None) -> dict[str, Phase]:
    """Each job's phase, by name, once ``jobs`` are decided again on the tree
    ``quotas`` (a limit raised as told), from ``result``'s decisions, a day on."""
    again = reconcile_cycle(cycle_input(jobs=jobs, tree=quotas, priority_classes=PRIORITIES,
                                        prior=prior_of(result.decisions),
                                        settings=fleet,
                                        now="2026-01-03T00:00:00Z"))
    return {name: d.phase for name, d in by_name(again).items()}


def test_jobs_served_first_reclaim_from_the_last_admitted_as_the_cycle_does() -> None:
    """x and r are served first once the job limit is raised; r, short of
    the root's cpu, reclaims from quota qb above its min, where old ran before
    and x has just been admitted: the cycle takes the last admitted, x (1
    cpu), not old (4 cpu). Counted the other way, t was told the job limit
    alone, and followed to the letter, still waited for cpu that old held.
    The limits told let it in, and one cpu less does not."""
    def fleet(slots: str = "1", cpu: str = "10") -> QuotaTree:
        return tree(quota("root", quota(
            "dept", quota("qa", ns=["team-a"], min={"cpu": "6"}), quota("qb", ns=["team-b"]),
            quota("qt", ns=["team-t"]), min={"cpu": "6"},
            max={"kube-queue/max-jobs": slots}),
            min={"cpu": cpu, "gpu": "8"}, max={"cpu": cpu, "gpu": "8"}))

    old = _cpu_job("old", "team-b", "4", "high", 1)
    first = reconcile_cycle(cycle_input(jobs=[old], tree=fleet(), priority_classes=PRIORITIES))
    jobs = [old, _cpu_job("x", "team-b", "1", "high", 2),
            _cpu_job("r", "team-a", "6", "mid", 3), _cpu_job("t", "team-t", "1", "low", 4)]
    inp, result = decided(cycle_input(jobs=jobs, tree=fleet(), priority_classes=PRIORITIES,
                                      prior=prior_of(first.decisions)))
    lines = explained(inp, result, "t")
    assert lines[2] == (
        "- quota root/dept kube-queue/max-jobs: 1 used of max 1; 3 more must be freed, or max "
        "raised to 4 (2 is not enough: the 2 job(s) of other queues under root/dept that the "
        "cycle takes before it (team-b/x, team-a/r) would be served first and take the room)"
    ), lines
    assert ("- with the 2 job(s) of other queues that the cycle takes before it (team-b/x, "
            "team-a/r), served first, it would also need quota root cpu max raised to 12 "
            "(10 now, 4 used): else those run and it still waits") in lines, lines

    assert _next_cycle(jobs, fleet("4", "12"), result)["t"] is Phase.ADMITTED
    assert _next_cycle(jobs, fleet("4", "11"), result)["t"] is Phase.QUEUED


def test_a_job_reclaimed_by_one_served_first_comes_back_in_its_turn() -> None:
    """a1 and a3, served first once qa's job limit is raised, reclaim from
    quota qb above its min, where no job waited: b-low, taken for a1, comes
    back once a3 has taken b-high, and holds the cpu t would need. Where it
    was left out, t was told the job limit alone, and followed to the letter,
    still waited. The limits told let it in, and one cpu less does not."""
    def fleet(slots: str = "1", cpu: str = "9") -> QuotaTree:
        return tree(quota("root", quota(
            "dept", quota("qa", ns=["team-a"], min={"cpu": "7"},
                          max={"kube-queue/max-jobs": slots}),
            quota("qb", ns=["team-b"]), quota("qc", ns=["team-c"]),
            min={"cpu": "7"}, max={"cpu": cpu}),
            min={"cpu": "20", "gpu": "8"}, max={"cpu": "20", "gpu": "8"}))

    running = [_cpu_job("b-low", "team-b", "1500m", "low", 1),
               _cpu_job("b-high", "team-b", "4", "high", 2),
               _cpu_job("a-run", "team-a", "500m", "high", 3),
               _cpu_job("c-run", "team-c", "1", "high", 4)]
    first = reconcile_cycle(cycle_input(jobs=running, tree=fleet(), priority_classes=PRIORITIES))
    jobs = [*running, _cpu_job("a1", "team-a", "3", "low", 5),
            _cpu_job("a2", "team-a", "500m", "low", 6), _cpu_job("a3", "team-a", "2", "low", 7),
            _cpu_job("t", "team-a", "1500m", "low", 8)]
    inp, result = decided(cycle_input(jobs=jobs, tree=fleet(), priority_classes=PRIORITIES,
                                      prior=prior_of(first.decisions)))
    lines = explained(inp, result, "t")
    assert lines[2] == (
        "- quota root/dept/qa kube-queue/max-jobs: 1 used of max 1; 4 more must be freed, or "
        "max raised to 5 (2 is not enough: the 3 job(s) ahead of it in its queue would be "
        "served first and take the room)"), lines
    assert lines[3] == (
        "- with the 3 job(s) ahead of it in its queue, served first, it would also need quota "
        "root/dept cpu max raised to 14 (9 now, 7 used): else those run and it still waits"
    ), lines

    assert _next_cycle(jobs, fleet("5", "14"), result)["t"] is Phase.ADMITTED
    assert _next_cycle(jobs, fleet("5", "13"), result)["t"] is Phase.QUEUED


def test_a_job_behind_it_that_frees_room_for_one_ahead_is_told_to_make_its_place_unsure() -> None:
    """Once the job limit is raised, b-gpu (team-b, first by share) takes both
    GPUs, so a1 and a2, ahead of t in its queue, wait for them, and t runs.
    Then lo, behind t (low), reclaims b-gpu's cpu from quota qb above its min:
    the GPUs free, a1 gets in by preempting lo, and a2 (as old as t's priority,
    enqueued before it) by preempting t. The jobs behind it in its own queue
    were left out of what comes after it, and t was told the job limit alone:
    followed to the letter, it still waited. a1, asked again once it ran, was
    named as one that could take its place too."""
    newer = QuotaSettings(preemption=PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY)
    fleet = settings(root__dept__qa=newer, root__dept__qb=newer)

    def quotas(slots: str = "1") -> QuotaTree:
        return tree(quota("root", quota(
            "dept", quota("qa", ns=["team-a"], min={"cpu": "6"}), quota("qb", ns=["team-b"]),
            min={"cpu": "6"}, max={"kube-queue/max-jobs": slots, "cpu": "6"}),
            min={"cpu": "20", "gpu": "2"}, max={"cpu": "20", "gpu": "2"}))

    def with_gpus(name: str, ns: str, cpu: str, gpus: str, second: int) -> JobBuilder:
        return job(name, ns).pod_set("main", 1, cpu=cpu, gpu=gpus).priority_class("mid") \
            .created(f"2026-01-01T00:00:{second:02d}Z")

    run = _cpu_job("run", "team-a", "1", "high", 1)
    first = reconcile_cycle(cycle_input(jobs=[run], tree=quotas(), settings=fleet,
                                        priority_classes=PRIORITIES))
    jobs = [run, with_gpus("b-gpu", "team-b", "1", "2", 2), with_gpus("a1", "team-a", "1", "1", 3),
            with_gpus("a2", "team-a", "3", "1", 4), _cpu_job("t", "team-a", "4", "mid", 5),
            _cpu_job("lo", "team-a", "1", "low", 6)]
    inp, result = decided(cycle_input(jobs=jobs, tree=quotas(), settings=fleet,
                                      priority_classes=PRIORITIES, prior=prior_of(first.decisions)))
    lines = explained(inp, result, "t", policy=newer.preemption)
    assert lines[2] == (
        "- quota root/dept kube-queue/max-jobs: 1 used of max 1; 2 more must be freed, or max "
        "raised to 3: it alone needs 2, but the 1 job(s) of other queues under root/dept that "
        "the cycle takes before it (team-b/b-gpu) are served first"), lines
    assert lines[3] == (
        "- even with those limits raised as told, its place is not sure: once it runs, "
        "team-a/a2 (root/dept/qa) could take it; to keep it, raise those limits for them too"
    ), lines

    after = _next_cycle(jobs, quotas("3"), result, fleet)
    assert (after["t"], after["a1"], after["a2"]) == (Phase.QUEUED, Phase.ADMITTED,
                                                      Phase.ADMITTED)



def _reclaimed_after_it(others: list[JobBuilder], r_cpu: str) -> tuple[
        list[JobBuilder], Callable[[str], QuotaTree], FleetSettings, CycleInput, CycleResult]:
    """t (qa, low) waits for the job limit of dept, behind m (qa, mid); once
    both run, qa is above its min (4.5 cpu) and the root's cpu is full, and r
    (qb, low, ``r_cpu``, within its min, tried after t: qb's weight makes its
    share the larger) reclaims room, from qa or from qc, whose jobs, high and
    running, are ``others``."""
    fleet = settings(root__dept__qb=QuotaSettings(weight=500))

    def quotas(slots: str = "3") -> QuotaTree:
        return tree(quota("root", quota(
            "dept", quota("qa", ns=["team-a"], min={"cpu": "4500m"}),
            quota("qb", ns=["team-b"], min={"cpu": "5"}), quota("qc", ns=["team-c"]),
            min={"cpu": "9500m"}, max={"kube-queue/max-jobs": slots}),
            min={"cpu": "10", "gpu": "2"}, max={"cpu": "10", "gpu": "2"}))

    running = [_cpu_job("a-run", "team-a", "1", "high", 1),
               _cpu_job("b-run", "team-b", "3", "high", 2), *others]
    first = reconcile_cycle(cycle_input(jobs=running, tree=quotas(), settings=fleet,
                                        priority_classes=PRIORITIES))
    jobs = [*running, _cpu_job("m", "team-a", "3", "mid", 4),
            _cpu_job("t", "team-a", "1", "low", 5), _cpu_job("r", "team-b", r_cpu, "low", 6)]
    inp, result = decided(cycle_input(jobs=jobs, tree=quotas(), settings=fleet,
                                      priority_classes=PRIORITIES, prior=prior_of(first.decisions)))
    return jobs, quotas, fleet, inp, result


def test_a_job_that_reclaims_to_come_back_evicts_its_own_to_be_within_its_min() -> None:
    """r reclaims m (one victim, where t and c1 would be two); m comes back by
    reclaiming c1 and c2, which free the root's cpu it needs, but a plan that
    reclaims must leave its quota within its min (``find_victims``): it evicts
    t too. Counted without that rule, t was told the job limit alone, and
    followed to the letter, still waited."""
    jobs, quotas, fleet, inp, result = _reclaimed_after_it(
        [_cpu_job("c1", "team-c", "1", "high", 3), _cpu_job("c2", "team-c", "1", "high", 3)],
        "2")
    lines = explained(inp, result, "t")
    assert lines[2] == (
        "- quota root/dept kube-queue/max-jobs: 3 used of max 3; 3 more must be freed, or max "
        "raised to 6: it alone needs 4, but the 1 job(s) ahead of it in its queue and the 1 "
        "job(s) of other queues under root/dept that the cycle takes before it (team-c/c2) are "
        "served first"), lines
    assert lines[4] == (
        "- even with those limits raised as told, its place is not sure: once it runs, "
        "team-a/m (root/dept/qa) could take it (quota root/dept/qa is then above its min: the "
        "room may be reclaimed from it); to keep it, raise those limits for them too, or the "
        "min of quota root/dept/qa"), lines

    after = _next_cycle(jobs, quotas("6"), result, fleet)
    assert (after["t"], after["m"], after["r"]) == (Phase.QUEUED, Phase.ADMITTED, Phase.ADMITTED)


def test_a_quota_back_at_its_min_is_not_reclaimed_from_further() -> None:
    """r takes t first (the lowest priority of the quotas above their min);
    qa is then back at its min, so m is not taken, and c-run is: one victim
    alone, t given back. Taken as if qa still borrowed, m was reclaimed in
    the model and, back, took t's place: t was told its place was not sure.
    The limit told lets it in, and one job less does not."""
    jobs, quotas, fleet, inp, result = _reclaimed_after_it(
        [_cpu_job("c-run", "team-c", "2", "high", 3)], "1500m")
    lines = explained(inp, result, "t")
    assert lines[2] == (
        "- quota root/dept kube-queue/max-jobs: 3 used of max 3; 2 more must be freed, or max "
        "raised to 5 (4 is not enough: the 1 job(s) ahead of it in its queue would be served "
        "first and take the room)"), lines
    assert not any("not sure" in line for line in lines), lines

    assert _next_cycle(jobs, quotas("5"), result, fleet)["t"] is Phase.ADMITTED
    assert _next_cycle(jobs, quotas("4"), result, fleet)["t"] is Phase.QUEUED


def _cpus(name: str, ns: str, cpu: str, second: int, *, pods: int = 1, priority: str = "mid",
          node_selector: Mapping[str, str] | None = None) -> JobBuilder:
    """A job of ``pods`` pods of ``cpu`` each, created ``second`` seconds into 2026."""
    return job(name, ns).pod_set("main", pods, cpu=cpu, node_selector=node_selector) \
        .priority_class(priority).created(f"2026-01-01T00:00:{second:02d}Z")


def _max_told(lines: list[str], quota: str) -> int:
    """The max of ``quota``'s cpu a job is told to raise it to."""
    line = next(x for x in lines if x.startswith(f"- quota {quota} cpu: "))
    return int(line.partition("or max raised to ")[2].split()[0].rstrip(":"))


def test_the_max_told_is_the_one_the_next_reconcile_admits_it_with() -> None:
    """x3 (8 cpu) waits for its quota's max (32, full), behind x1 (4 cpu) and
    x2 (2 x 8 cpu). Told "40 (44 with the 1 job(s) ahead of it ...)", a user
    took 40: x1 came in first, and x3 still waited. One value is told, the
    one the next reconcile admits it with, and why the other is not enough."""
    def spec(c: int) -> QuotaTree:
        return simple_tree(quota("c", ns=["c"], max={"cpu": str(c)}), total={"cpu": "48"})

    running = [_cpus("h1", "c", "8", 1, pods=3, priority="high"), _cpus("n1", "c", "8", 2)]
    node = cluster("c1").node_group("n", 3, cpu="16", memory="250Gi")

    def fleet(prior: Collection[Decision] = ()) -> CycleInput:
        return cycle_input(jobs=[*running, _cpus("x1", "c", "4", 3),
                                 _cpus("x2", "c", "8", 4, pods=2), _cpus("x3", "c", "8", 5)],
                           tree=spec(32), clusters=[node], priority_classes=PRIORITIES,
                           prior=prior)

    inp, result = _after(fleet, *running)
    lines = explained(inp, result, "x3")
    assert lines[2] == (
        "- quota root/c cpu: 32 used of max 32; 12 more must be freed, or max raised to 44 (40 "
        "is not enough: the 1 job(s) ahead of it in its queue would be served first and take "
        "the room)"), lines
    assert _next(inp, result, spec(44))["x3"].phase is Phase.ADMITTED
    assert _next(inp, result, spec(43))["x3"].phase is Phase.QUEUED


@pytest.mark.parametrize("strict", [False, True])
def test_a_job_ahead_that_waits_for_cluster_room_is_not_counted_as_served_first(
        strict: bool) -> None:
    """y (4 cpu, on nodes labelled pool=one, all full) waits ahead of x (12
    cpu), which waits for its quota's max (8 of 16 used). Told "20 (24 with
    the 1 job ahead)", the user found 20 enough: y waits for room, not for
    the quota, and takes none of it. Told 20 alone. In a StrictFIFO queue y
    holds x back whatever the max: no value is told as if it would do."""
    def spec(a: int) -> QuotaTree:
        return simple_tree(quota("a", ns=["a"], max={"cpu": str(a)}), quota("c", ns=["c"]),
                           total={"cpu": "48"})

    running = [_cpus("z", "c", "16", 1), _cpus("a1", "a", "8", 2)]
    clusters = [cluster("c1").node("n1", cpu="16", memory="250Gi", labels={"pool": "one"}),
                cluster("c2").node("n1", cpu="32", memory="250Gi")]

    def fleet(prior: Collection[Decision] = ()) -> CycleInput:
        return cycle_input(
            jobs=[*running, _cpus("y", "a", "4", 3, node_selector={"pool": "one"}),
                  _cpus("x", "a", "12", 4)],
            tree=spec(16), clusters=clusters, priority_classes=PRIORITIES, prior=prior,
            settings=settings(root__a=strict_fifo()) if strict else None)

    was = reconcile_cycle(replace(fleet(), jobs=tuple(j.obj() for j in running)))
    assert by_name(was)["z"].cluster == "c1"
    inp, result = decided(fleet(prior=prior_of(was.decisions)))
    assert by_name(result)["y"].phase is Phase.QUEUED
    lines = explained(inp, result, "x", strict_fifo=strict)
    told = _max_told(lines, "root/a")
    if strict:
        assert told == 24, lines
        assert ("- even with those maxes raised as told, the next reconcile would not admit "
                "it: blocked behind PyTorchJob a/y at the head of StrictFIFO queue root/a") in \
            lines, lines
        assert _next(inp, result, spec(told))["x"].phase is Phase.QUEUED
    else:
        assert lines[2] == ("- quota root/a cpu: 8 used of max 16; 4 more must be freed, or "
                            "max raised to 20"), lines
        assert not any("served first" in line for line in lines), lines
        assert _next(inp, result, spec(20))["x"].phase is Phase.ADMITTED


@pytest.mark.parametrize("policy_of_quota", [PreemptionPolicy.LOWER_PRIORITY,
                                             PreemptionPolicy.NEVER])
def test_a_job_waiting_for_cluster_room_is_told_the_priority_that_preempts_for_it(
        policy_of_quota: PreemptionPolicy) -> None:
    """g1 waits for c1's room, which f1 (of its quota, of its priority) holds:
    told only the cluster's room, a user found that a higher priority class
    let it preempt f1 at once. Told so, where its quota lets jobs preempt."""
    fleet = settings(root__c=QuotaSettings(preemption=policy_of_quota))

    def jobs(g1: str) -> list[JobBuilder]:
        return [_cpus("f1", "c", "12", 1), _cpus("g1", "c", "12", 2, priority=g1)]

    clusters = [cluster("c1").node("n0", cpu="16", memory="64Gi")]
    inp, result = decided(cycle_input(jobs=jobs("mid"), clusters=clusters, settings=fleet,
                                      priority_classes=PRIORITIES))
    assert by_name(result)["g1"].phase is Phase.QUEUED
    jobs_by_key = {j.key: j for j in inp.jobs}
    g1 = next(j for j in inp.jobs if j.key.name == "g1")

    def fits(gone: Collection[Decision] | None) -> Mapping[str, str]:  # (as fleetq explain)
        if gone is None:
            return result.cluster_fits(g1, ["c1"], empty=True)
        return result.cluster_fits(g1, ["c1"], {x.key: jobs_by_key[x.key].pod_sets
                                                for x in gone})

    lines = explained(inp, result, "g1", policy=policy_of_quota, fits=fits)
    told = ("- jobs of quota root/c running: c/f1 (priority 100); a priority above 100 would "
            "let it preempt 1 of them for their room")
    if policy_of_quota is PreemptionPolicy.NEVER:
        assert not any("priority above" in line for line in lines), lines
        return
    assert told in lines, lines
    after = reconcile_cycle(cycle_input(jobs=jobs("high"), clusters=clusters, settings=fleet,
                                        priority_classes=PRIORITIES,
                                        prior=prior_of(result.decisions)))
    assert (by_name(after)["g1"].phase, by_name(after)["f1"].phase) == (Phase.ADMITTED,
                                                                       Phase.QUEUED)


def test_a_quota_whose_min_leaves_out_memory_is_told_it_takes_nothing_back() -> None:
    """b's min names cpu alone, under a root that limits memory: its job, 1Gi
    above b's memory min of 0, never reclaims, and explain listed a's jobs as
    if they could be taken back for it."""
    def fleet(b_min: dict[str, str]) -> CycleInput:
        four = [job(f"a{i}", "a").pod_set("main", 1, cpu="4", memory="1Gi")
                .created(f"2026-01-01T00:00:0{i}Z") for i in range(4)]
        late = job("b0", "b").pod_set("main", 1, cpu="4", memory="1Gi").created(
            "2026-01-01T00:00:09Z")
        return cycle_input(
            jobs=[*four, late],
            clusters=[cluster("c1").node_group("n", 4, cpu="4", memory="16Gi").obj()],
            tree=tree(quota("root", quota("a", ns=["a"], min={"cpu": "8"}, max={"cpu": "16"}),
                            quota("b", ns=["b"], min=b_min, max={"cpu": "16"}),
                            min={"cpu": "16", "memory": "64Gi"},
                            max={"cpu": "16", "memory": "64Gi"})))

    start = fleet({"cpu": "8"})
    first = reconcile_cycle(replace(start, jobs=start.jobs[:4]))  # (a's four, borrowing 8)
    inp = replace(start, prior={p.key: p for p in prior_of(first.decisions)})
    result = reconcile_cycle(inp)
    assert by_name(result)["b0"].phase is Phase.QUEUED
    lines = explained(inp, result, "b0")
    assert ("- none of them is taken back for it: its quota root/b's min names no memory, so "
            "it is 0 there and each of its jobs is above its min; give its min the memory it "
            "is guaranteed") in lines, lines
    named = replace(fleet({"cpu": "8", "memory": "32Gi"}), prior=inp.prior)
    assert by_name(reconcile_cycle(named))["b0"].phase is Phase.ADMITTED  # (as told)
