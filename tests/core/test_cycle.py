"""The reconcile cycle end to end on core values (``core.cycle.reconcile_cycle``)."""

from __future__ import annotations

import random
import re
from dataclasses import replace

import pytest

from reconciler.core.cycle import CycleInput, InvalidJob, reconcile_cycle
from reconciler.core.model import (
    PRIORITY_CLASS_AT,
    QUOTA_AT,
    WORKLOAD_PRIORITY_CLASS_AT,
    FleetSettings,
    MemberCluster,
    Phase,
)
from reconciler.core.quota import QuotaTree
from tests.builders import (
    BATCH_JOB,
    GPU,
    NOW,
    PYTORCH,
    SOURCE_TIME,
    JobBuilder,
    admitted_prior,
    by_name,
    cluster,
    cycle_input,
    gpu_cluster,
    gpu_job,
    job,
    phases,
    policy,
    prior_of,
    quota,
    simple_tree,
    taint,
)

PRIORITIES = {"high": 1000, "normal": 100, "low": 10}
WORKLOAD_PRIORITIES = {"batch-wl": 3, "urgent-wl": 5000}


def t(second: int) -> str:
    return f"2026-01-01T00:00:{second:02d}Z"


# -- priority ----------------------------------------------------------------------------


@pytest.mark.parametrize(("builder", "default", "priority"), [
    (gpu_job("a", 1).priority_class("high"), 0, 1000),
    (gpu_job("a", 1).priority_class("low"), 7, 10),
    (gpu_job("a", 1), 0, 0),
    (gpu_job("a", 1), 7, 7),  # the globalDefault PriorityClass
    (gpu_job("a", 1).workload_priority_class("batch-wl"), 7, 3),
    (gpu_job("a", 1).priority_class("high").workload_priority_class("batch-wl"), 0, 3),
], ids=[
    "priority-class", "priority-class-not-global-default", "no-class", "global-default",
    "workload-class-over-global-default", "workload-class-over-priority-class"
])
def test_priority(builder: JobBuilder, default: int, priority: int) -> None:
    result = reconcile_cycle(cycle_input(
        jobs=[builder], priority_classes=PRIORITIES, default_priority=default,
        workload_priority_classes=WORKLOAD_PRIORITIES))
    d = by_name(result)["a"]
    assert d.phase is Phase.ADMITTED
    assert d.priority == priority


@pytest.mark.parametrize(("builder", "words"), [
    (gpu_job("a", 1).priority_class("missing"), ["PriorityClass 'missing'", "does not exist"]),
    (gpu_job("a", 1).workload_priority_class("nope"),
     ["WorkloadPriorityClass 'nope'", "kueue.x-k8s.io/priority-class"]),
    (gpu_job("a", 1).workload_priority_class("nope").priority_class("high"),
     ["WorkloadPriorityClass 'nope'"]),
    # the WorkloadPriorityClass sets the priority, but the pods still name a PriorityClass
    # that does not exist (a member cluster would reject them): DESIGN §3 Order
    (gpu_job("a", 1).priority_class("missing").workload_priority_class("urgent-wl"),
     ["PriorityClass 'missing'"]),
], ids=[
    "missing-priority-class", "missing-workload-class",
    "missing-workload-class-good-priority-class", "missing-priority-class-good-workload-class"
])
def test_a_missing_priority_class_makes_the_job_invalid(builder: JobBuilder,
                                                        words: list[str]) -> None:
    j = builder.path("jobs/a.yaml", line=12).obj()
    result = reconcile_cycle(cycle_input(
        jobs=[j], priority_classes=PRIORITIES,
        workload_priority_classes=WORKLOAD_PRIORITIES))
    d = by_name(result)["a"]
    assert d.phase is Phase.INVALID
    assert d.cluster is None
    assert d.reason.startswith("jobs/a.yaml:12: ")
    for word in words:
        assert word in d.reason
    assert [(p.path, p.line) for p in result.problems] == [("jobs/a.yaml", 12)]
    assert all(v == 0 for v in result.quota_used["root"].values())


def test_a_misspelt_priority_class_names_the_one_meant() -> None:
    result = reconcile_cycle(cycle_input(
        jobs=[gpu_job("a", 1).priority_class("hihg"), gpu_job("b", 1).workload_priority_class(
            "urgnet-wl")], priority_classes=PRIORITIES,
        workload_priority_classes=WORKLOAD_PRIORITIES))
    assert [p.message for p in result.problems] == [
        "PriorityClass 'hihg' does not exist (did you mean high?); create it or fix "
        "priorityClassName",
        "WorkloadPriorityClass 'urgnet-wl' does not exist (did you mean urgent-wl?); create it "
        "or fix label kueue.x-k8s.io/priority-class"]


def test_each_binding_mistake_of_a_job_is_a_problem_at_its_field_line() -> None:
    """A missing PriorityClass, a missing WorkloadPriorityClass and a quota
    label naming no quota, each at the line the fleet layer measured
    (``Job.field_lines``), all in one cycle; a field with no line measured is
    at the job's own line."""
    j = (gpu_job("a", 1).priority_class("missing").workload_priority_class("nope")
         .quota("nosuch").path("jobs/a.yaml", line=3).field_at(PRIORITY_CLASS_AT, 20)
         .field_at(WORKLOAD_PRIORITY_CLASS_AT, 7).field_at(QUOTA_AT, 8).obj())
    result = reconcile_cycle(cycle_input(
        jobs=[j], priority_classes=PRIORITIES, workload_priority_classes=WORKLOAD_PRIORITIES))
    assert sorted((p.line, p.message.split(" ", 2)[:2]) for p in result.problems) == [
        (7, ["WorkloadPriorityClass", "'nope'"]),
        (8, ["label", "quota.scheduling.alibabacloud.com/name='nosuch'"]),
        (20, ["PriorityClass", "'missing'"])]
    d = by_name(result)["a"]
    assert d.phase is Phase.INVALID and d.quota is None
    assert [part.split(": ")[0] for part in d.reason.split("; jobs/")] == [
        "jobs/a.yaml:20", "a.yaml:7", "a.yaml:8"]
    bare = replace(j, field_lines=())
    result = reconcile_cycle(cycle_input(jobs=[bare], priority_classes=PRIORITIES))
    assert {p.line for p in result.problems} == {3}


# -- quota -------------------------------------------------------------------------------


def borrowing_input(*jobs: JobBuilder) -> CycleInput:
    """qa: min 4, max 12 GPUs; qb: min 12 GPUs; a 32-GPU cluster (quota is the limit)."""
    return cycle_input(
        jobs=jobs,
        tree=simple_tree(quota("qa", ns=["team-a"], min={"gpu": "4"}, max={"gpu": "12"}),
                         quota("qb", ns=["team-b"], min={"gpu": "12"}),
                         total={"gpu": "16"}),
        clusters=[gpu_cluster("c1", 8, 8, 8, 8)], priority_classes=PRIORITIES)


def test_borrowing_above_min_up_to_max() -> None:
    result = reconcile_cycle(borrowing_input(
        *(gpu_job(f"a{i}", 4, "team-a").created(t(i)) for i in range(4))))
    d = by_name(result)
    assert [d[f"a{i}"].phase for i in range(4)] == [Phase.ADMITTED] * 3 + [Phase.QUEUED]
    assert result.quota_used["root/qa"][GPU] == 12000
    assert "waiting for quota" in d["a3"].reason
    assert "root/qa" in d["a3"].reason and "max 12" in d["a3"].reason


def test_borrowing_is_bounded_by_the_root() -> None:
    """qa may borrow up to its max 12, but qb already holds 8 of the root's 16."""
    result = reconcile_cycle(borrowing_input(
        gpu_job("b", 8, "team-b").priority_class("high"),
        *(gpu_job(f"a{i}", 4, "team-a").created(t(i)) for i in range(3))))
    d = by_name(result)
    assert [d["b"].phase, d["a0"].phase, d["a1"].phase, d["a2"].phase] == [
        Phase.ADMITTED, Phase.ADMITTED, Phase.ADMITTED, Phase.QUEUED]
    assert "root" in d["a2"].reason


def test_a_non_preemptible_job_is_limited_to_min() -> None:
    result = reconcile_cycle(borrowing_input(
        gpu_job("np1", 4, "team-a").non_preemptible().created(t(1)),
        gpu_job("np2", 4, "team-a").non_preemptible().created(t(2)),
        gpu_job("np-big", 6, "team-a").non_preemptible().created(t(3)),
        gpu_job("p", 4, "team-a").created(t(4))))
    d = by_name(result)
    assert d["np1"].phase is Phase.ADMITTED
    assert d["np2"].phase is Phase.QUEUED
    assert "min (non-preemptible)" in d["np2"].reason
    assert d["np-big"].phase is Phase.INADMISSIBLE  # more than the min even when empty
    assert "min (non-preemptible)" in d["np-big"].reason
    assert d["p"].phase is Phase.ADMITTED  # a preemptible job borrows above min


def test_a_job_beyond_its_quotas_max_is_inadmissible_with_an_actionable_reason() -> None:
    result = reconcile_cycle(borrowing_input(gpu_job("huge", 8, "team-a", replicas=2)))
    d = by_name(result)["huge"]
    assert d.phase is Phase.INADMISSIBLE
    assert "root/qa" in d.reason and "max 12" in d.reason and "even with the quota empty" in (
        d.reason)


def test_a_job_beyond_its_quota_and_every_cluster_is_not_told_to_raise_the_quota() -> None:
    """A larger quota would not let it run: no cluster holds it even empty."""
    result = reconcile_cycle(borrowing_input(gpu_job("huge", 8, "team-a", replicas=5)))
    d = by_name(result)["huge"]
    assert d.phase is Phase.INADMISSIBLE
    assert d.reason == (
        "quota root/qa nvidia.com/gpu: 40 requested > max 12 even with the quota empty, and "
        "it fits no candidate member cluster even when empty: c1: free nvidia.com/gpu 32 < "
        "40 requested; lower its requests")


def test_max_jobs_limits_admitted_jobs_per_quota() -> None:
    result = reconcile_cycle(cycle_input(
        jobs=[gpu_job(f"j{i}", 1, "team-a").created(t(i)) for i in range(3)],
        tree=simple_tree(quota("qa", ns=["team-a"], max={"max_jobs": "2"}))))
    d = by_name(result)
    assert [d[f"j{i}"].phase for i in range(3)] == [Phase.ADMITTED, Phase.ADMITTED,
                                                    Phase.QUEUED]
    assert "at most 2 job(s)" in d["j2"].reason


def test_a_job_bound_to_no_leaf_is_invalid() -> None:
    result = reconcile_cycle(cycle_input(
        jobs=[gpu_job("stray", 1, "nowhere"), gpu_job("parent", 1, "team-a").quota("root")],
        tree=simple_tree(quota("qa", ns=["team-a"]))))
    d = by_name(result)
    assert d["stray"].phase is Phase.INVALID and "'nowhere'" in d["stray"].reason
    assert d["parent"].phase is Phase.INVALID and "not a leaf" in d["parent"].reason


# -- policies ----------------------------------------------------------------------------


def test_a_job_no_policy_selects_is_inadmissible_and_says_so() -> None:
    result = reconcile_cycle(cycle_input(
        jobs=[gpu_job("orphan", 1, "team-a").path("jobs/team-a/orphan.yaml", 7)],
        policies=[policy("other-ns", ns="team-b").selects()]))
    d = by_name(result)["orphan"]
    assert d.phase is Phase.INADMISSIBLE
    assert d.cluster is None
    assert "no PropagationPolicy or ClusterPropagationPolicy selects" in d.reason
    assert "team-a/orphan" in d.reason and "defaultPolicy" in d.reason
    assert d.policy is None
    # said at the job's line too: validate, which reads files, passed it
    assert [(p.path, p.line, p.message, p.severity) for p in result.problems] == [
        ("jobs/team-a/orphan.yaml", 7, d.reason, "warning")]


def test_a_running_job_no_policy_selects_any_more_keeps_its_place_until_one_does() -> None:
    """Its policy deleted (or its selectors changed), a job that runs is not
    pulled off its cluster, as Karmada leaves a workload where its deleted
    PropagationPolicy propagated it; it holds its quota and room, and one
    that waited is Inadmissible."""
    running = gpu_job("running", 8, "team-a").obj()
    waiting = gpu_job("waiting", 1, "team-a").obj()
    prior = [admitted_prior(running, cluster="c1", quota="root/team-a")]
    gone = cycle_input(jobs=[running, waiting], prior=prior,
                       policies=[policy("other-ns", ns="team-b").selects()])
    d = by_name(reconcile_cycle(gone))
    assert (d["running"].phase, d["running"].cluster, d["running"].kept) == \
        (Phase.ADMITTED, "c1", True)
    assert "no PropagationPolicy or ClusterPropagationPolicy selects" in d["running"].reason
    assert "keeping the last good placement" in d["running"].reason
    assert d["waiting"].phase is Phase.INADMISSIBLE
    result = reconcile_cycle(gone)
    assert result.quota_used["root/team-a"][GPU] == 8000
    # with a policy again, it runs on as it was
    back = by_name(reconcile_cycle(cycle_input(jobs=[running], prior=prior)))["running"]
    assert (back.phase, back.cluster, back.kept) == (Phase.ADMITTED, "c1", False)


def test_the_fleet_default_policy_places_an_unselected_job() -> None:
    result = reconcile_cycle(cycle_input(
        jobs=[gpu_job("orphan", 1, "team-a")],
        policies=[policy("fallback").selects(name="something-else")],
        settings=FleetSettings(default_policy=(None, "fallback"))))
    d = by_name(result)["orphan"]
    assert (d.phase, d.policy) == (Phase.ADMITTED, "ClusterPropagationPolicy fallback")


def test_a_default_policy_that_names_no_policy_is_the_fix_the_reason_names() -> None:
    result = reconcile_cycle(cycle_input(
        jobs=[gpu_job("orphan", 1, "team-a")],
        policies=[policy("fallback").selects(name="something-else")],
        settings=FleetSettings(default_policy=("team-a", "fallbak"))))
    d = by_name(result)["orphan"]
    assert d.phase is Phase.INADMISSIBLE
    assert d.reason.endswith("; add one, or fix spec.defaultPolicy in fleet.yaml: it names "
                             "'team-a/fallbak', which is no policy of the fleet"), d.reason


def test_capacity_only_jobs_are_placed_with_no_quota_check() -> None:
    """qa allows 4 GPUs; without suspension.scheduling the 8-GPU job is placed anyway."""
    tree = simple_tree(quota("qa", ns=["team-a"], max={"gpu": "4"}))
    result = reconcile_cycle(cycle_input(
        jobs=[gpu_job("capacity", 8, "team-a")], tree=tree,
        policies=[policy("no-queue").capacity_only()]))
    d = by_name(result)["capacity"]
    assert (d.phase, d.cluster) == (Phase.ADMITTED, "c1")
    queued = reconcile_cycle(cycle_input(
        jobs=[gpu_job("capacity", 8, "team-a")], tree=tree, policies=[policy("queue")]))
    assert by_name(queued)["capacity"].phase is Phase.INADMISSIBLE


def test_a_preempted_job_whose_policy_now_places_it_by_capacity_is_not_told_of_a_queue(
        ) -> None:
    """Preempted in its queue, then its policy lost suspension.scheduling: it is
    in no queue now (explain says so), and its reason said it was "back in its
    queue keeping its place"."""
    low = gpu_job("low", 8, "team-a").obj()
    high = gpu_job("high", 8, "team-a").priority_class("high").created(t(5)).obj()
    one = [gpu_cluster("c1", 8)]
    first = reconcile_cycle(cycle_input(jobs=[low], clusters=one, priority_classes=PRIORITIES))
    second = reconcile_cycle(cycle_input(jobs=[low, high], clusters=one,
                                         priority_classes=PRIORITIES,
                                         prior=prior_of(first.decisions)))
    d = by_name(second)["low"]
    assert d.phase is Phase.QUEUED and "back in its queue keeping its place" in d.reason
    third = reconcile_cycle(cycle_input(jobs=[low, high], clusters=one,
                                        priority_classes=PRIORITIES,
                                        policies=[policy("no-queue").capacity_only()],
                                        prior=prior_of(second.decisions)))
    d = by_name(third)["low"]
    assert d.phase is Phase.QUEUED and d.preempted_by == str(high.key)
    assert d.reason.startswith(f"preempted by {high.key} (")
    assert "placed by capacity alone now, in no queue; " in d.reason, d.reason
    assert "back in its queue" not in d.reason


def test_capacity_only_jobs_need_no_quota_tree() -> None:
    result = reconcile_cycle(cycle_input(
        jobs=[gpu_job("a", 4), gpu_job("b", 4), gpu_job("c", 4)], tree=None,
        policies=[policy("no-queue").capacity_only()]))
    assert phases(result) == {"a": Phase.ADMITTED, "b": Phase.ADMITTED, "c": Phase.QUEUED}
    assert result.quota_used == {}


def test_capacity_only_jobs_need_no_quota_of_their_namespace() -> None:
    """The template's gang policy serves namespace ``sandbox``, which no leaf
    lists: its jobs, placed by capacity alone with no quota check, were
    Invalid ("listed on no leaf quota"). A quota label naming no quota is a
    mistake still, and a queued job of that namespace is Invalid as before."""
    tree = simple_tree(quota("qa", ns=["team-a"]))
    result = reconcile_cycle(cycle_input(
        jobs=[gpu_job("try-it", 4, "sandbox"), gpu_job("named", 1, "sandbox").quota("nosuch")],
        tree=tree, policies=[policy("gang", ns="sandbox").capacity_only()]))
    d = by_name(result)["try-it"]
    assert (d.phase, d.cluster, d.quota) == (Phase.ADMITTED, "c1", None)
    assert by_name(result)["named"].phase is Phase.INVALID
    assert [p.message.split(" names no quota")[0] for p in result.problems] == [
        "label quota.scheduling.alibabacloud.com/name='nosuch'"]
    queued = reconcile_cycle(cycle_input(jobs=[gpu_job("try-it", 4, "sandbox")], tree=tree,
                                         policies=[policy("queue")]))
    assert "is listed on no leaf quota" in by_name(queued)["try-it"].reason


def test_a_queueing_policy_without_a_quota_tree_makes_the_job_invalid() -> None:
    result = reconcile_cycle(cycle_input(jobs=[gpu_job("a", 1)], tree=None))
    d = by_name(result)["a"]
    assert d.phase is Phase.INVALID
    assert "ElasticQuotaTree" in d.reason


# -- the previous state ------------------------------------------------------------------


TWO_CLUSTERS = (gpu_cluster("c1", 8), gpu_cluster("c2", 8))


def test_prior_admitted_jobs_stay_where_they_are_and_keep_admitted_at() -> None:
    """binpack would now put ``a`` on c1 (the tie goes to the name); it stays on c2."""
    a = gpu_job("a", 4).obj()
    fresh = reconcile_cycle(cycle_input(jobs=[a], clusters=TWO_CLUSTERS))
    assert by_name(fresh)["a"].cluster == "c1"
    result = reconcile_cycle(cycle_input(
        jobs=[a], clusters=TWO_CLUSTERS,
        prior=[admitted_prior(a, cluster="c2", quota="root/default",
                              admitted_at="2025-06-01T00:00:00Z")]))
    d = by_name(result)["a"]
    assert (d.phase, d.cluster, d.admitted_at) == (Phase.ADMITTED, "c2",
                                                   "2025-06-01T00:00:00Z")
    assert result.cluster_free["c2"][GPU] == 4000
    assert result.cluster_free["c1"][GPU] == 8000


def test_a_newly_admitted_job_gets_now_as_admitted_at() -> None:
    d = by_name(reconcile_cycle(cycle_input(jobs=[gpu_job("a", 1)])))["a"]
    assert (d.admitted_at, d.enqueued_at) == (NOW, SOURCE_TIME)


def test_prior_admitted_jobs_are_charged_before_new_ones_are_placed() -> None:
    """A running job keeps its cluster even when a higher-priority job arrives without
    a reason to preempt it (its own quota min is not reclaimable)."""
    running = gpu_job("running", 8, "team-a").obj()
    result = reconcile_cycle(cycle_input(
        jobs=[running, gpu_job("new", 8, "team-b").priority_class("high")],
        tree=simple_tree(quota("qa", ns=["team-a"], min={"gpu": "8"}),
                         quota("qb", ns=["team-b"], min={"gpu": "8"}), total={"gpu": "16"}),
        clusters=[gpu_cluster("c1", 8)], priority_classes=PRIORITIES,
        prior=[admitted_prior(running, cluster="c1", quota="root/qa")]))
    d = by_name(result)
    assert (d["running"].phase, d["running"].cluster) == (Phase.ADMITTED, "c1")
    assert d["new"].phase is Phase.QUEUED


def test_a_deleted_job_frees_its_quota_and_its_cluster() -> None:
    gone = gpu_job("gone", 8, "team-a").obj()
    tree = simple_tree(quota("qa", ns=["team-a"], max={"gpu": "8"}))
    prior = [admitted_prior(gone, cluster="c1", quota="root/qa")]
    result = reconcile_cycle(cycle_input(
        jobs=[gpu_job("next", 8, "team-a")], tree=tree, prior=prior))
    d = by_name(result)
    assert "gone" not in d
    assert (d["next"].phase, d["next"].cluster) == (Phase.ADMITTED, "c1")
    assert result.quota_used["root/qa"][GPU] == 8000
    # while it is still in the source, it holds the quota and the cluster
    held = by_name(reconcile_cycle(cycle_input(
        jobs=[gone, gpu_job("next", 8, "team-a")], tree=tree, prior=prior)))
    assert (held["gone"].phase, held["next"].phase) == (Phase.ADMITTED, Phase.QUEUED)


def test_a_job_whose_source_turned_invalid_keeps_its_last_good_placement() -> None:
    good = gpu_job("x", 8, "team-a").obj()
    tree = simple_tree(quota("qa", ns=["team-a"], max={"gpu": "8"}))
    bad = InvalidJob(key=good.key, api_version=good.api_version, path=good.path, line=3,
                     blob="new-blob", message="spec.pytorchReplicaSpecs is missing")
    result = reconcile_cycle(cycle_input(
        jobs=[gpu_job("y", 8, "team-a")], tree=tree, invalid=[bad],
        prior=[admitted_prior(good, cluster="c1", quota="root/qa",
                              admitted_at="2025-06-01T00:00:00Z")]))
    d = by_name(result)
    x = d["x"]
    assert (x.phase, x.cluster, x.kept) == (Phase.ADMITTED, "c1", True)
    assert x.admitted_at == "2025-06-01T00:00:00Z"
    assert x.blob == good.blob  # the last good version
    assert "spec.pytorchReplicaSpecs is missing" in x.reason and f"{good.path}:3" in x.reason
    assert d["y"].phase is Phase.QUEUED  # x still holds the quota and the cluster
    assert result.quota_used["root/qa"][GPU] == 8000


def test_a_job_in_a_broken_file_keeps_its_last_good_placement() -> None:
    good = gpu_job("x", 4, "team-a").obj()
    result = reconcile_cycle(cycle_input(
        jobs=[], broken_paths={good.path: f"{good.path}:7: could not parse YAML"},
        prior=[admitted_prior(good, cluster="c1", quota="root/team-a")]))
    x = by_name(result)["x"]
    assert (x.phase, x.cluster, x.kept) == (Phase.ADMITTED, "c1", True)
    assert "could not parse YAML" in x.reason
    assert result.cluster_free["c1"][GPU] == 4000


def test_a_job_kept_under_a_quota_that_left_the_tree_takes_no_part_in_reclaims() -> None:
    """A running job whose file broke keeps its place; its leaf quota left the
    tree since. A job of a quota within its min reclaims from one that borrows:
    the quotas asked are those of the tree (the cycle failed on the one gone)."""
    tree = simple_tree(quota("qa", ns=["team-a"], min={"gpu": "4"}),
                       quota("qb", ns=["team-b"], min={"gpu": "4"}), total={"gpu": "8"})
    kept = gpu_job("k", 4, "team-gone").obj()
    borrows = gpu_job("b", 8, "team-b").obj()
    wants = gpu_job("a", 4, "team-a").obj()
    result = reconcile_cycle(cycle_input(
        jobs=[borrows, wants], tree=tree,
        clusters=[gpu_cluster("c1", 8), gpu_cluster("c2", 8)],
        broken_paths={kept.path: f"{kept.path}:3: could not parse YAML"},
        prior=[admitted_prior(kept, cluster="c1", quota="root/gone"),
               admitted_prior(borrows, cluster="c2", quota="root/qb")]))
    d = by_name(result)
    assert (d["k"].phase, d["k"].kept, d["k"].cluster) == (Phase.ADMITTED, True, "c1")
    assert (d["a"].phase, d["b"].phase) == (Phase.ADMITTED, Phase.QUEUED)
    assert d["b"].preempted_by == str(wants.key)


def test_an_invalid_job_never_admitted_is_invalid() -> None:
    key = gpu_job("x", 1).key()
    result = reconcile_cycle(cycle_input(invalid=[InvalidJob(
        key=key, api_version="kubeflow.org/v1", path="jobs/x.yaml", line=2, blob="b",
        message="replicas must be a whole number")]))
    x = by_name(result)["x"]
    assert (x.phase, x.kept, x.cluster) == (Phase.INVALID, False, None)
    assert x.reason == "jobs/x.yaml:2: replicas must be a whole number"


def test_an_invalid_job_that_waited_keeps_its_quota_and_priority_as_they_were() -> None:
    """Its manifest turned invalid while it waited in its quota's queue: it keeps
    what it was queued with (its quota, priority, requests and policy, and its
    enqueue time), as one whose file no longer reads does; it had a priority,
    which is not the default's."""
    runs = gpu_job("a", 8, "team-a").priority_class("high").obj()
    waits = gpu_job("w", 8, "team-a").priority_class("low").obj()
    tree = simple_tree(quota("qa", ns=["team-a"]))
    before = reconcile_cycle(cycle_input(jobs=[runs, waits], tree=tree,
                                         priority_classes=PRIORITIES))
    first = by_name(before)["w"]
    assert (first.phase, first.quota, first.priority) == (Phase.QUEUED, "root/qa", 10)
    bad = InvalidJob(key=waits.key, api_version=waits.api_version, path=waits.path, line=9,
                     blob="new-blob", message="replicas must be a whole number")
    w = by_name(reconcile_cycle(cycle_input(
        jobs=[runs], tree=tree, invalid=[bad], priority_classes=PRIORITIES,
        prior=prior_of(before.decisions), source_time="2027-01-01T00:00:00Z")))["w"]
    assert (w.phase, w.quota, w.priority, w.policy) == (
        Phase.INVALID, "root/qa", 10, first.policy)
    assert w.requests == first.requests and w.enqueued_at == first.enqueued_at
    assert w.reason == f"{waits.path}:9: replicas must be a whole number"


def test_a_waiting_job_whose_priority_class_is_gone_shows_what_it_waited_with() -> None:
    """A job that reads but cannot be resolved (its PriorityClass does not exist
    now) showed no quota and the default's priority: it keeps the quota and
    priority it waited with, as an invalid one does; and, fixed, it is back in
    its place. One that never waited shows none."""
    runs = gpu_job("a", 8, "team-a").priority_class("high").obj()
    waits = gpu_job("w", 8, "team-a").priority_class("low")
    tree = simple_tree(quota("qa", ns=["team-a"]))
    before = reconcile_cycle(cycle_input(jobs=[runs, waits.obj()], tree=tree,
                                         priority_classes=PRIORITIES))
    first = by_name(before)["w"]
    assert (first.phase, first.quota, first.priority) == (Phase.QUEUED, "root/qa", 10)
    gone = reconcile_cycle(cycle_input(
        jobs=[runs, waits.priority_class("lwo").obj(), gpu_job("n", 8, "team-a")
              .priority_class("lwo").obj()], tree=tree, priority_classes=PRIORITIES,
        prior=prior_of(before.decisions), source_time="2027-01-01T00:00:00Z"))
    w, n = by_name(gone)["w"], by_name(gone)["n"]
    assert (w.phase, w.quota, w.priority, w.enqueued_at) == (
        Phase.INVALID, "root/qa", 10, first.enqueued_at)
    assert (n.phase, n.quota) == (Phase.INVALID, None)
    assert gone.quota_used["root/qa"] == before.quota_used["root/qa"]  # (it holds none)
    # (moved to another quota as well: the one it binds to now; its quota renamed: none)
    two = simple_tree(quota("qa", ns=["team-a"]), quota("qb", ns=["team-b"]))
    elsewhere = gpu_job("w", 8, "team-a").priority_class("lwo").quota("qb").obj()
    moved = reconcile_cycle(cycle_input(
        jobs=[runs, elsewhere], tree=two, priority_classes=PRIORITIES,
        prior=prior_of(before.decisions), source_time="2027-01-01T00:00:00Z"))
    assert by_name(moved)["w"].quota == "root/qb"
    renamed = reconcile_cycle(cycle_input(
        jobs=[runs, elsewhere], tree=simple_tree(quota("qz", ns=["team-a"])),
        priority_classes=PRIORITIES, prior=prior_of(before.decisions),
        source_time="2027-01-01T00:00:00Z"))
    assert (by_name(renamed)["w"].phase, by_name(renamed)["w"].quota) == (Phase.INVALID, None)
    again = reconcile_cycle(cycle_input(
        jobs=[runs, waits.priority_class("low").obj()], tree=tree, priority_classes=PRIORITIES,
        prior=prior_of(gone.decisions), source_time="2027-01-02T00:00:00Z"))
    assert by_name(again)["w"] == first


def test_a_job_whose_requests_grew_beyond_its_cluster_is_placed_again() -> None:
    before = gpu_job("a", 4).obj()
    after = gpu_job("a", 8).obj()
    result = reconcile_cycle(cycle_input(
        jobs=[after, gpu_job("other", 4).priority_class("high")],
        clusters=[gpu_cluster("c1", 8), gpu_cluster("c2", 8)], priority_classes=PRIORITIES,
        prior=[admitted_prior(before, cluster="c1", quota="root/default",
                              admitted_at="2025-06-01T00:00:00Z")]))
    d = by_name(result)
    assert d["a"].phase is Phase.ADMITTED
    assert d["a"].requests[GPU] == 8000
    assert d["a"].cluster != d["other"].cluster


# -- determinism -------------------------------------------------------------------------


def busy_fleet(seed: int | None = None, *, total_gpus: str = "24") -> CycleInput:
    """Two quotas, three clusters, a mix of priorities, kinds, sizes and policies.

    With the default 24 GPUs at the root the cycle preempts (a-big reclaims from qb,
    which borrows 4 GPUs for b-urgent);
    with 32 it does not.
    """
    jobs = [
        gpu_job("a-big", 8, "team-a", replicas=2).priority_class("normal").created(t(1)),
        gpu_job("a-mid", 4, "team-a", replicas=2).created(t(2)),
        gpu_job("a-small", 2, "team-a").priority_class("low").created(t(3)),
        gpu_job("a-np", 4, "team-a").non_preemptible().created(t(4)),
        gpu_job("b-urgent", 4, "team-b", replicas=3).workload_priority_class("urgent-wl"),
        gpu_job("b-one", 1, "team-b").created(t(5)),
        gpu_job("b-two", 2, "team-b", replicas=3).created(t(6)),
        job("b-batch", "team-b").kind("batch/v1", "Job").pod_set("worker", 4, cpu="8")
        .created(t(7)),
        gpu_job("c-cap", 4, "team-c"),
        gpu_job("d-none", 1, "team-d"),
    ]
    if seed is not None:
        random.Random(seed).shuffle(jobs)
    clusters = [gpu_cluster("hz-a", 8, 8, region="hz"), gpu_cluster("hz-b", 8, region="hz"),
                cluster("bj").labels(region="bj").node_group("g", 2, cpu="96", gpu="8")
                .reservation(False).obj()]
    if seed is not None:
        random.Random(seed + 1).shuffle(clusters)
    return cycle_input(
        jobs=jobs, clusters=clusters,
        tree=simple_tree(quota("qa", ns=["team-a"], min={"gpu": "16"}, max={"gpu": "24"}),
                         quota("qb", ns=["team-b", "team-c"], min={"gpu": "8"}),
                         total={"gpu": total_gpus}),
        policies=[policy("queued").selects().selects("batch/v1", "Job"),
                  policy("cap", ns="team-c").selects().capacity_only()],
        priority_classes=PRIORITIES, workload_priority_classes=WORKLOAD_PRIORITIES)


def busy_fleet_after_team_b_ran() -> CycleInput:
    """busy_fleet, where team-b's jobs ran in the previous state (borrowing) and
    team-a's arrive now: a-big reclaims from qb."""
    full = busy_fleet()
    before = reconcile_cycle(replace(full, jobs=tuple(
        j for j in full.jobs if j.key.namespace != "team-a")))
    return replace(full, prior={p.key: p for p in prior_of(before.decisions)})


def test_reconcile_is_deterministic() -> None:
    first = reconcile_cycle(busy_fleet_after_team_b_ran())
    second = reconcile_cycle(busy_fleet_after_team_b_ran())
    assert any(d.preemptions for d in first.decisions)
    assert first.decisions == second.decisions
    assert first.quota_used == second.quota_used
    assert first.cluster_free == second.cluster_free
    assert {d.phase for d in first.decisions} >= {Phase.ADMITTED, Phase.QUEUED,
                                                   Phase.INVALID}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_order_of_the_inputs_does_not_matter(seed: int) -> None:
    assert reconcile_cycle(busy_fleet(seed)).decisions == reconcile_cycle(busy_fleet()).decisions


def test_decisions_fed_back_as_the_previous_state_change_nothing() -> None:
    inp = busy_fleet(total_gpus="32")
    first = reconcile_cycle(inp)
    assert all(d.preemptions == 0 for d in first.decisions)
    assert {d.phase for d in first.decisions} >= {Phase.ADMITTED, Phase.QUEUED}
    again = reconcile_cycle(cycle_input(
        jobs=inp.jobs, clusters=inp.clusters, tree=inp.tree, policies=inp.policies,
        priority_classes=inp.priority_classes,
        workload_priority_classes=inp.workload_priority_classes,
        prior=prior_of(first.decisions), now="2026-01-03T00:00:00Z"))
    assert again.quota_used == first.quota_used
    assert again.cluster_free == first.cluster_free
    assert [replace(x, reason="") for x in again.decisions] == [
        replace(x, reason="") for x in first.decisions]
    # the reasons too: placements.yaml must not change, or the state branch gets a
    # second commit for the same source commit
    assert [(x.key.name, x.reason) for x in again.decisions] == [
        (x.key.name, x.reason) for x in first.decisions]


def test_the_previous_state_is_a_fixed_point_after_preemption() -> None:
    """A high-priority job preempts a low one; the next cycle keeps that outcome."""
    inp = cycle_input(
        jobs=[gpu_job("low", 8).priority_class("low").created(t(1)),
              gpu_job("high", 8).priority_class("high").created(t(2))],
        priority_classes=PRIORITIES)
    low_first = reconcile_cycle(cycle_input(
        jobs=[gpu_job("low", 8).priority_class("low").created(t(1))],
        priority_classes=PRIORITIES))
    first = reconcile_cycle(cycle_input(
        jobs=inp.jobs, priority_classes=PRIORITIES, prior=prior_of(low_first.decisions)))
    d = by_name(first)
    assert (d["high"].phase, d["low"].phase) == (Phase.ADMITTED, Phase.QUEUED)
    assert d["low"].preempted_by == "PyTorchJob default/high"
    assert d["low"].preemptions == 1
    again = reconcile_cycle(cycle_input(
        jobs=inp.jobs, priority_classes=PRIORITIES, prior=prior_of(first.decisions),
        now="2026-01-03T00:00:00Z"))
    assert [replace(x, reason="") for x in again.decisions] == [
        replace(x, reason="") for x in first.decisions]
    # ... and the state written from it does not change either: no second commit.
    assert again.decisions == first.decisions


def test_a_job_preempted_that_its_lowered_max_never_admits_again_is_inadmissible_at_once(
) -> None:
    """A job running beyond its quota's max (lowered since it was admitted)
    keeps its place until it is preempted; then it waits for nothing: it was
    left Queued, "waiting for quota", and the next cycle made it Inadmissible,
    a state that was no fixed point (an incremental reconcile, which takes a
    queued job as screened, kept it Queued)."""
    low = gpu_job("low", 8).priority_class("low").created(t(1))
    high = gpu_job("high", 4).priority_class("high").created(t(2))
    wide = simple_tree(quota("default", ns=["default"], max={"gpu": "8"}))
    ran = reconcile_cycle(cycle_input(jobs=[low], tree=wide, priority_classes=PRIORITIES))
    assert by_name(ran)["low"].phase is Phase.ADMITTED
    narrow = simple_tree(quota("default", ns=["default"], max={"gpu": "4"}))
    first = reconcile_cycle(cycle_input(jobs=[low, high], tree=narrow,
                                        priority_classes=PRIORITIES, prior=prior_of(ran.decisions)))
    d = by_name(first)
    assert d["high"].phase is Phase.ADMITTED
    assert d["low"].phase is Phase.INADMISSIBLE, d["low"]
    assert d["low"].preempted_by == "PyTorchJob default/high" and d["low"].preemptions == 1
    assert d["low"].reason.startswith("quota root/default nvidia.com/gpu: 8 requested > max 4 "
                                      "even with the quota empty"), d["low"].reason
    again = reconcile_cycle(cycle_input(jobs=[low, high], tree=narrow,
                                        priority_classes=PRIORITIES,
                                        prior=prior_of(first.decisions)))
    assert again.decisions == first.decisions


def test_step_5_tells_its_progress_and_decides_the_same(monkeypatch) -> None:
    """``progress`` is told the round, the pass, the queued jobs asked so far, and
    the jobs admitted and evicted; what is decided is the same without it."""
    from reconciler.core import cycle

    monkeypatch.setattr(cycle, "PROGRESS_TRIES", 1)
    inp = busy_fleet_after_team_b_ran()
    told: list[str] = []
    result = reconcile_cycle(inp, progress=told.append)
    assert result == reconcile_cycle(inp)
    assert told and told[0].startswith("scheduling: round 1, pass 1: 1 queued jobs asked, ")
    pattern = re.compile(r"scheduling: round (\d+), pass (\d+): (\d+) queued jobs asked, "
                         r"(\d+) admitted, (\d+) evicted")
    seen = [tuple(int(g) for g in pattern.fullmatch(line).groups())  # type: ignore[union-attr]
            for line in told]
    assert seen == sorted(seen)  # rounds and passes go on, and the counts within a pass
    evicted = [s[4] for s in seen]
    assert evicted == sorted(evicted)  # evictions only add up
    assert all(s[3] > 0 for s in seen)  # team-b's jobs run from the start
    assert any(d.preempted_by for d in result.decisions) and evicted[-1] > 0


# -- a running job that leaves its place by no decision of the queue --------------------


def test_a_job_whose_requests_outgrow_its_cluster_moves_and_says_why_once() -> None:
    """``a`` (4 GPUs) and ``b`` (4 GPUs) run on c1 (8 GPUs). ``a`` grows to 6 GPUs:
    it no longer fits there, and moves to c2. Why is an event of this cycle
    (``CycleResult.moved``, for the commit message), not part of its reason: the
    next cycle, from this one's decisions, decides the same (a fixed point)."""
    clusters = (gpu_cluster("c1", 8), gpu_cluster("c2", 8))
    first = reconcile_cycle(cycle_input(jobs=[gpu_job("a", 4), gpu_job("b", 4)],
                                        clusters=clusters))
    assert {d.key.name: d.cluster for d in first.decisions} == {"a": "c1", "b": "c1"}
    assert first.moved == {}
    grown = replace(gpu_job("a", 6).obj(), blob="blob-grown")
    inp = cycle_input(jobs=[grown, gpu_job("b", 4)], clusters=clusters,
                      prior=prior_of(first.decisions))
    second = reconcile_cycle(inp)
    a = by_name(second)["a"]
    assert (a.phase, a.cluster) == (Phase.ADMITTED, "c2")
    assert second.moved == {grown.key: (
        "its requests changed and no longer fit where it ran (c1: free nvidia.com/gpu 4 < 6 "
        "requested)")}
    assert "requests changed" not in a.reason
    third = reconcile_cycle(replace(inp, prior={p.key: p for p in prior_of(second.decisions)}))
    assert third.decisions == second.decisions and third.moved == {}


def test_a_job_counted_anew_from_the_same_manifest_says_so_when_it_moves() -> None:
    """Its manifest did not change, but its pods are counted otherwise now (a
    RayJob's workers as KubeRay starts them): it was told "its requests
    changed", which nobody had done."""
    clusters = (gpu_cluster("c1", 8), gpu_cluster("c2", 8))
    first = reconcile_cycle(cycle_input(jobs=[gpu_job("a", 4), gpu_job("b", 4)],
                                        clusters=clusters))
    counted = replace(gpu_job("a", 2, replicas=3).obj(), blob=by_name(first)["a"].blob)
    second = reconcile_cycle(cycle_input(jobs=[counted, gpu_job("b", 4)], clusters=clusters,
                                         prior=prior_of(first.decisions)))
    assert by_name(second)["a"].cluster == "c2"
    assert second.moved == {counted.key: (
        "its pods are counted as its operator starts them now (before: worker 1; now: "
        "worker 3) and no longer fit where it ran (c1: free nvidia.com/gpu 4 < 6 requested)")}


def test_a_job_whose_cluster_leaves_the_fleet_is_placed_again_and_says_why_once() -> None:
    clusters = (gpu_cluster("c1", 8), gpu_cluster("c2", 8))
    first = reconcile_cycle(cycle_input(jobs=[gpu_job("a", 4)], clusters=clusters))
    assert by_name(first)["a"].cluster == "c1"
    inp = cycle_input(jobs=[gpu_job("a", 4)], clusters=clusters[1:],
                      prior=prior_of(first.decisions))
    second = reconcile_cycle(inp)
    assert by_name(second)["a"].cluster == "c2"
    assert second.moved == {gpu_job("a", 4).key(): "its cluster c1 left the fleet"}
    assert "left the fleet" not in by_name(second)["a"].reason
    third = reconcile_cycle(replace(inp, prior={p.key: p for p in prior_of(second.decisions)}))
    assert third.decisions == second.decisions and third.moved == {}


def test_a_running_job_moved_to_another_quota_runs_on_only_where_that_quota_has_room() -> None:
    """Namespace ``c`` moved from leaf ``b`` to leaf ``a`` (at its max): ``c0``
    was put back under ``a`` unchecked, 12 of its max 8; ``b``, now seen to
    borrow, had its own job reclaimed. It waits in ``a``'s queue, and says
    why once; with room in ``a`` it runs on where it runs."""
    def leaves(c_in: str, a_max: str = "8") -> QuotaTree:
        return simple_tree(
            quota("a", min={"gpu": "8"}, max={"gpu": a_max}, ns=["a"] + (["c"] if c_in == "a"
                                                                        else [])),
            quota("b", min={"gpu": "8"}, max={"gpu": "8"}, ns=["b"] + (["c"] if c_in == "b"
                                                                        else [])),
            total={"cpu": "1000", "gpu": "16"})
    clusters = (gpu_cluster("c1", 8, 8),)
    jobs = [gpu_job("a0", 8, "a"), gpu_job("c0", 4, "c"), gpu_job("b0", 4, "b")]
    first = reconcile_cycle(cycle_input(jobs=jobs, clusters=clusters, tree=leaves("b")))
    assert phases(first) == {"a0": Phase.ADMITTED, "b0": Phase.ADMITTED, "c0": Phase.ADMITTED}
    inp = cycle_input(jobs=jobs, clusters=clusters, tree=leaves("a"),
                      prior=prior_of(first.decisions))
    second = reconcile_cycle(inp)
    assert phases(second) == {"a0": Phase.ADMITTED, "b0": Phase.ADMITTED, "c0": Phase.QUEUED}
    assert second.quota_used["root/a"]["nvidia.com/gpu"] == 8000
    assert second.moved == {gpu_job("c0", 4, "c").key(): (
        "its quota is root/a now, not root/b, and has no room for it (quota root/a "
        "nvidia.com/gpu: 8 used + 4 requested > max 8)")}
    third = reconcile_cycle(replace(inp, prior={p.key: p for p in prior_of(second.decisions)}))
    assert third.decisions == second.decisions and third.moved == {}
    # (its quota renamed, over the max lowered before, as leaves of the same limits:
    # nobody moved it, and it runs on, as the max lowered let it)
    lowered = simple_tree(quota("a", min={"gpu": "4"}, max={"gpu": "4"}, ns=["a", "c"]),
                          quota("b", min={"gpu": "8"}, max={"gpu": "8"}, ns=["b"]),
                          total={"cpu": "1000", "gpu": "16"})
    held = reconcile_cycle(replace(inp, tree=lowered, prior={
        p.key: p for p in prior_of(second.decisions)}))
    assert phases(held)["a0"] is Phase.ADMITTED  # (8 of max 4: a lowered max evicts none)
    renamed = simple_tree(quota("team-a", min={"gpu": "4"}, max={"gpu": "4"}, ns=["a", "c"]),
                          quota("b", min={"gpu": "8"}, max={"gpu": "8"}, ns=["b"]),
                          total={"cpu": "1000", "gpu": "16"})
    after = reconcile_cycle(replace(inp, tree=renamed, prior={
        p.key: p for p in prior_of(held.decisions)}))
    assert (by_name(after)["a0"].phase, by_name(after)["a0"].quota) == (
        Phase.ADMITTED, "root/team-a") and after.moved == {}
    # (room in its new quota: it runs on, on the nodes it runs on)
    roomy = reconcile_cycle(replace(inp, tree=leaves("a", a_max="16")))
    c0 = by_name(roomy)["c0"]
    assert (c0.phase, c0.quota, c0.nodes) == (Phase.ADMITTED, "root/a", by_name(first)["c0"].nodes)
    assert c0.admitted_at == by_name(first)["c0"].admitted_at and roomy.moved == {}


@pytest.mark.parametrize("change", ["node gone", "node tainted NoExecute"])
def test_a_running_job_whose_node_goes_is_placed_again_or_waits(change: str) -> None:
    """Its pods ran on a node that left its cluster, or took a NoExecute
    taint they do not tolerate: Kubernetes removes them, but the job was put
    back there (its nodes dropped from the state, or kept), counted on room
    that is not there. It is packed again on its cluster's other nodes when
    they hold it, else it waits, and why is said once."""
    def two(gone: bool, *, room: bool) -> MemberCluster:
        b = cluster("c1").node("n0", cpu="96", memory="768Gi", gpu="8")
        if not gone:
            b.node("n1", cpu="96", memory="768Gi", gpu="8",
                   taints=[taint("maint", "x", "NoExecute")] if change != "node gone" else [])
        if room:
            b.node("n2", cpu="96", memory="768Gi", gpu="8")
        return b.obj()
    start = cluster("c1").node("n0", cpu="96", memory="768Gi", gpu="8").node(
        "n1", cpu="96", memory="768Gi", gpu="8").obj()
    jobs = [gpu_job("a", 8), gpu_job("b", 8)]
    first = reconcile_cycle(cycle_input(jobs=jobs, clusters=[start]))
    assert {d.key.name: d.nodes for d in first.decisions} == {
        "a": (("n0", "worker", 1),), "b": (("n1", "worker", 1),)}
    for room in (False, True):
        inp = cycle_input(jobs=jobs, clusters=[two(change == "node gone", room=room)],
                          prior=prior_of(first.decisions))
        second = reconcile_cycle(inp)
        a, b = by_name(second)["a"], by_name(second)["b"]
        assert (a.phase, a.nodes) == (Phase.ADMITTED, (("n0", "worker", 1),))
        why = "n1 (gone)" if change == "node gone" else "n1 (taint maint=x:NoExecute)"
        if room:
            assert (b.phase, b.nodes) == (Phase.ADMITTED, (("n2", "worker", 1),))
            assert second.moved == {b.key: (
                f"its node(s) {why} of c1 no longer hold its pods (Kubernetes removes them): "
                f"packed again on its other nodes")}
            assert b.admitted_at == by_name(first)["b"].admitted_at
        else:
            assert b.phase is Phase.QUEUED
            assert second.moved[b.key].startswith(
                f"its node(s) {why} of c1 no longer hold its pods (Kubernetes removes them), "
                f"and it no longer fits there (c1: "), second.moved
        third = reconcile_cycle(replace(inp, prior={p.key: p for p in
                                                    prior_of(second.decisions)}))
        assert third.decisions == second.decisions and third.moved == {}


def _gpu_cluster_tainted(name: str, effect: str) -> MemberCluster:
    b = cluster(name).taint("maintenance", "true", effect)
    b.node("n0", cpu="96", memory="768Gi", gpu="8")
    return b.obj()


def test_a_job_on_a_cluster_that_takes_a_no_execute_taint_it_does_not_tolerate_moves() -> None:
    """As Kubernetes evicts the pods of a node tainted NoExecute: the job is
    placed again elsewhere, and why is said once. A job whose policy tolerates
    the taint stays; a NoSchedule taint moves nobody."""
    clusters = (gpu_cluster("c1", 8), gpu_cluster("c2", 8))
    first = reconcile_cycle(cycle_input(jobs=[gpu_job("a", 4)], clusters=clusters))
    assert by_name(first)["a"].cluster == "c1"
    for effect, tolerated, where in (("NoSchedule", False, "c1"), ("NoExecute", True, "c1"),
                                     ("NoExecute", False, "c2")):
        rule = policy("gang-queued").selects(*PYTORCH).selects(*BATCH_JOB)
        if tolerated:
            rule = rule.tolerate("maintenance", operator="Exists")
        inp = cycle_input(jobs=[gpu_job("a", 4)], policies=[rule.obj()],
                          clusters=(_gpu_cluster_tainted("c1", effect), clusters[1]),
                          prior=prior_of(first.decisions))
        second = reconcile_cycle(inp)
        assert by_name(second)["a"].cluster == where, (effect, tolerated)
        if where == "c1":
            assert second.moved == {}
            continue
        assert second.moved == {gpu_job("a", 4).key(): (
            "its cluster c1 has the taint maintenance=true:NoExecute, which its policy's "
            "clusterTolerations do not tolerate")}
        third = reconcile_cycle(replace(inp, prior={p.key: p for p in prior_of(second.decisions)}))
        assert third.decisions == second.decisions and third.moved == {}


def test_a_running_job_its_policy_no_longer_gives_its_cluster_runs_on_and_says_so() -> None:
    """Its policy's affinity edited to leave its cluster out: the job is not
    stopped (as Kubernetes leaves a running pod whose node no longer matches),
    and its reason says where it runs and how to move it."""
    clusters = (gpu_cluster("c1", 8), gpu_cluster("c2", 8))
    first = reconcile_cycle(cycle_input(jobs=[gpu_job("a", 4)], clusters=clusters))
    assert by_name(first)["a"].cluster == "c1"
    edited = policy("gang-queued").selects(*PYTORCH).selects(*BATCH_JOB).clusters("c2").obj()
    second = reconcile_cycle(cycle_input(jobs=[gpu_job("a", 4)], clusters=clusters,
                                         policies=[edited], prior=prior_of(first.decisions)))
    a = by_name(second)["a"]
    assert (a.phase, a.cluster) == (Phase.ADMITTED, "c1")
    assert a.reason.endswith(
        "; c1 is no longer one of the clusters its policy gives it: it runs on there until it "
        "ends (to move it, delete it and push it again)")
    assert second.moved == {}
