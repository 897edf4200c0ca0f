"""Which policy places a job and which member clusters it may use (``core.policy``)."""

from __future__ import annotations

import pytest

from reconciler.core.cycle import reconcile_cycle
from reconciler.core.model import MemberCluster, Phase, Policy
from reconciler.core.policy import (
    MATCH_KIND,
    MATCH_LABELS,
    MATCH_NAME,
    candidate_groups,
    policy_match,
    ruled_out,
    select_policy,
)
from tests.builders import (
    BATCH_JOB,
    PYTORCH,
    PolicyBuilder,
    by_name,
    cluster,
    cycle_input,
    gpu_cluster,
    gpu_job,
    job,
    policy,
    quota,
    simple_tree,
)

JOB = job("train", ns="team-a").labels(app="llm").obj()


@pytest.mark.parametrize(("pol", "level"), [
    (policy("p").selects(name="train"), MATCH_NAME),
    (policy("p").selects(match_labels={"app": "llm"}), MATCH_LABELS),
    (policy("p").selects(), MATCH_KIND),
    (policy("p").selects(name="other"), 0),
    (policy("p").selects(match_labels={"app": "vision"}), 0),
    (policy("p").selects(*BATCH_JOB), 0),  # another kind
    (policy("p").selects("kubeflow.org/v2beta1", "PyTorchJob"), 0),  # another apiVersion
    (policy("p").selects(namespace="team-b"), 0),  # the selector's namespace
    (policy("p").selects(namespace="team-a"), MATCH_KIND),
    (policy("p").selects(*BATCH_JOB).selects(name="train"), MATCH_NAME),  # best selector
    (policy("p", ns="team-a").selects(), MATCH_KIND),
    (policy("p", ns="team-b").selects(), 0),  # a PropagationPolicy: its namespace only
    (policy("p", ns="team-b").selects(name="train"), 0),
], ids=[
    "name", "labels", "kind", "other-name", "other-labels", "other-kind", "other-api-version",
    "selector-other-ns", "selector-same-ns", "best-selector", "pp-own-ns", "pp-other-ns",
    "pp-other-ns-by-name"
])
def test_policy_match(pol: PolicyBuilder, level: int) -> None:
    assert policy_match(pol.obj(), JOB) == level


def pick(*policies: Policy) -> str | None:
    chosen = select_policy(policies, JOB)
    return None if chosen is None else chosen.ref


@pytest.mark.parametrize(("policies", "expected"), [
    # match level first: a name beats a label selector beats kind only, whatever the priority
    ([policy("kind").selects().priority(100), policy("labels").selects(
        match_labels={"app": "llm"}).priority(50), policy("named").selects(name="train")],
     "ClusterPropagationPolicy named"),
    ([policy("kind").selects().priority(100),
      policy("labels").selects(match_labels={"app": "llm"})],
     "ClusterPropagationPolicy labels"),
    # then the higher priority
    ([policy("low").selects().priority(1), policy("high").selects().priority(2)],
     "ClusterPropagationPolicy high"),
    ([policy("ns-low", ns="team-a").selects().priority(1), policy("cl-high").selects()
      .priority(2)], "ClusterPropagationPolicy cl-high"),
    # then a PropagationPolicy over a ClusterPropagationPolicy
    ([policy("a-cluster").selects(), policy("z-ns", ns="team-a").selects()],
     "PropagationPolicy team-a/z-ns"),
    # then by name
    ([policy("b").selects(), policy("a").selects(), policy("c").selects()],
     "ClusterPropagationPolicy a"),
    ([policy("b", ns="team-a").selects(), policy("a", ns="team-a").selects()],
     "PropagationPolicy team-a/a"),
    # a PropagationPolicy of another namespace never selects, however specific
    ([policy("other", ns="team-b").selects(name="train").priority(9),
      policy("fallback").selects()], "ClusterPropagationPolicy fallback"),
    ([policy("other", ns="team-b").selects()], None),
    ([], None),
], ids=[
    "name-beats-all", "labels-beat-kind", "priority", "priority-beats-pp", "pp-beats-cpp",
    "cpp-name", "pp-name", "pp-other-ns-ignored", "only-pp-other-ns", "none"
])
def test_karmada_preference(policies: list[PolicyBuilder], expected: str | None) -> None:
    built = [p.obj() for p in policies]
    assert pick(*built) == expected
    assert pick(*reversed(built)) == expected  # the order of the files does not matter


# -- candidate clusters ------------------------------------------------------------------

FLEET: tuple[MemberCluster, ...] = (
    cluster("hz-a").labels(region="hangzhou", tier="gpu").node("n", cpu="8").obj(),
    cluster("hz-b").labels(region="hangzhou", tier="cpu").node("n", cpu="8").obj(),
    cluster("bj-a").labels(region="beijing", tier="gpu").node("n", cpu="8").obj(),
)


def groups_of(pol: PolicyBuilder, kind_ref: str = "kubeflow.org/PyTorchJob",
              clusters: tuple[MemberCluster, ...] = FLEET) -> list[list[str]]:
    return candidate_groups(pol.obj(), kind_ref, clusters)[0]


@pytest.mark.parametrize(("pol", "expected"), [
    (policy(), [["bj-a", "hz-a", "hz-b"]]),  # no affinity: every cluster, by name
    (policy().clusters("hz-b", "bj-a"), [["bj-a", "hz-b"]]),
    (policy().clusters(match_labels={"region": "hangzhou"}), [["hz-a", "hz-b"]]),
    (policy().clusters(match_labels={"region": "hangzhou", "tier": "gpu"}), [["hz-a"]]),
    (policy().clusters(exclude=["hz-a"]), [["bj-a", "hz-b"]]),
    (policy().clusters("hz-a", "hz-b", match_labels={"tier": "gpu"}), [["hz-a"]]),
    (policy().clusters(match_labels={"region": "hangzhou"}, exclude=["hz-b"]), [["hz-a"]]),
    (policy().clusters("nowhere"), [[]]),
    (policy().affinities(["hz-b"], ["bj-a", "hz-a"]), [["hz-b"], ["bj-a", "hz-a"]]),
], ids=[
    "none", "names", "labels", "labels-all", "exclude", "names-and-labels",
    "labels-and-exclude", "unknown-name", "affinities"
])
def test_cluster_affinity(pol: PolicyBuilder, expected: list[list[str]]) -> None:
    assert groups_of(pol) == expected


def test_only_the_clusters_a_policy_selects_are_told_of_and_an_unknown_name_is() -> None:
    """A policy naming a cluster that is not there (``gpu-hz-x``) left its jobs
    told that another cluster, one it never wanted, was tainted."""
    clusters = (cluster("gpu-hz-a").taint("nvidia.com/gpu", "present").node("n", cpu="8").obj(),
                cluster("cpu-sh-c").node("n", cpu="8").obj())
    groups, notes = candidate_groups(policy().clusters("gpu-hz-x").obj(),
                                     "kubeflow.org/PyTorchJob", clusters)
    assert (groups, notes) == ([[]], [
        "its clusterAffinity names gpu-hz-x, which is no MemberCluster of the fleet"])
    groups, notes = candidate_groups(policy().clusters("gpu-hz-a", "gpu-hz-x").obj(),
                                     "kubeflow.org/PyTorchJob", clusters)
    assert groups == [[]]
    assert len(notes) == 2 and "gpu-hz-a has taint nvidia.com/gpu=present" in notes[0]
    assert "names gpu-hz-x, which is no MemberCluster" in notes[1]
    groups, notes = candidate_groups(policy().clusters("cpu-sh-c", "gpu-hz-x").obj(),
                                     "kubeflow.org/PyTorchJob", clusters)
    assert (groups, notes) == ([["cpu-sh-c"]], [])  # (told by validate: a warning)


def test_cluster_taints_need_the_policys_tolerations() -> None:
    clusters = (
        cluster("plain").node("n", cpu="8").obj(),
        cluster("infra").taint("dedicated", "infra").node("n", cpu="8").obj(),
        cluster("soft").taint("dedicated", "infra", "PreferNoSchedule").node("n", cpu="8").obj(),
    )
    groups, notes = candidate_groups(policy().obj(), "kubeflow.org/PyTorchJob", clusters)
    assert groups == [["plain", "soft"]]
    assert len(notes) == 1
    assert "infra" in notes[0] and "dedicated=infra:NoSchedule" in notes[0]
    assert "ClusterPropagationPolicy gang-queued" in notes[0]
    for pol in (policy().tolerate("dedicated", "infra"),
                policy().tolerate("dedicated", operator="Exists"),
                policy().tolerate(operator="Exists")):
        assert groups_of(pol, clusters=clusters) == [["infra", "plain", "soft"]]
    assert groups_of(policy().tolerate("dedicated", "gpu"), clusters=clusters) == [
        ["plain", "soft"]]


@pytest.mark.parametrize(("capabilities", "kind_ref", "selected"), [
    (None, "kubeflow.org/PyTorchJob", True),  # default: every kind
    (("kubeflow.org/PyTorchJob", "ray.io/RayJob"), "kubeflow.org/PyTorchJob", True),
    (("ray.io/RayJob",), "kubeflow.org/PyTorchJob", False),
    (("batch/Job",), "batch/Job", True),
    ((), "batch/Job", False),
])
def test_capabilities(capabilities: tuple[str, ...] | None, kind_ref: str,
                      selected: bool) -> None:
    b = cluster("c1").node("n", cpu="8")
    if capabilities is not None:
        b.capabilities(*capabilities)
    groups, notes = candidate_groups(policy().obj(), kind_ref, (b.obj(),))
    assert groups == ([["c1"]] if selected else [[]])
    assert bool(notes) is not selected
    if not selected:
        assert kind_ref in notes[0]


# -- in the cycle ------------------------------------------------------------------------


def test_the_cycle_places_by_the_preferred_policy() -> None:
    result = reconcile_cycle(cycle_input(
        jobs=[gpu_job("train", 8, ns="team-a"), gpu_job("other", 8, ns="team-b")],
        clusters=[gpu_cluster("c1", 8), gpu_cluster("c2", 8)],
        policies=[policy("everything").selects().clusters("c1"),
                  policy("team-a-only", ns="team-a").selects().clusters("c2")]))
    d = by_name(result)
    assert (d["train"].cluster, d["train"].policy) == ("c2", "PropagationPolicy team-a/team-a-only")
    assert (d["other"].cluster, d["other"].policy) == ("c1", "ClusterPropagationPolicy everything")


def test_cluster_affinities_take_the_first_group_that_fits() -> None:
    """The preferred group (c-pref) is full after the first job; the second spills to c-spill."""
    result = reconcile_cycle(cycle_input(
        jobs=[gpu_job("a", 8).created("2026-01-01T00:00:01Z"),
              gpu_job("b", 8).created("2026-01-01T00:00:02Z")],
        clusters=[gpu_cluster("c-pref", 8), gpu_cluster("a-spill", 8), gpu_cluster("z", 8)],
        policies=[policy().affinities(["c-pref"], ["a-spill"])]))
    d = by_name(result)
    assert (d["a"].cluster, d["b"].cluster) == ("c-pref", "a-spill")
    assert result.cluster_free["z"]["nvidia.com/gpu"] == 8000


def test_no_candidate_cluster_makes_the_job_inadmissible_and_says_why() -> None:
    result = reconcile_cycle(cycle_input(
        jobs=[gpu_job("a", 1)],
        clusters=[cluster("c1").taint("dedicated", "infra").node("n", cpu="8", gpu="8").obj(),
                  cluster("c2").capabilities("ray.io/RayJob").node("n", cpu="8", gpu="8").obj()],
        policies=[policy()]))
    d = by_name(result)["a"]
    assert d.phase is Phase.INADMISSIBLE
    assert "c1" in d.reason and "dedicated" in d.reason
    assert "c2" in d.reason and "kubeflow.org/PyTorchJob" in d.reason


def test_a_cluster_whose_gang_scheduler_would_refuse_the_job_is_no_candidate_for_it() -> None:
    """A RayJob Kueue's webhook refuses goes to the other cluster; with no
    other, it is inadmissible and told what the kueue cluster refuses."""
    from dataclasses import replace

    refused = replace(gpu_job("r", 1).obj(), refused=(("kueue", "spec.x must be true"),))
    kueue = replace(gpu_cluster("a-kueue", 8), gang_dialect="kueue")
    result = reconcile_cycle(cycle_input(jobs=[refused, gpu_job("ok", 1)],
                                         clusters=[kueue, gpu_cluster("b-ack", 8)]))
    d = by_name(result)
    assert (d["r"].cluster, d["ok"].cluster) == ("b-ack", "a-kueue")
    result = reconcile_cycle(cycle_input(jobs=[refused], clusters=[kueue]))
    d = by_name(result)
    assert d["r"].phase is Phase.INADMISSIBLE
    assert d["r"].reason.endswith(
        "a-kueue (gangDialect: kueue) would refuse it: spec.x must be true"), d["r"].reason
    # waiting for the other cluster, or too big for it, it is told of the refusal too
    later = replace(gpu_job("r", 1).created("2026-01-01T00:00:02Z").obj(),
                    refused=refused.refused)
    full = [gpu_job("big", 8).created("2026-01-01T00:00:01Z").obj(), later]
    busy = replace(gpu_cluster("a-kueue", 0), gang_dialect="kueue")  # (big goes to b-ack)
    result = reconcile_cycle(cycle_input(jobs=full, clusters=[busy, gpu_cluster("b-ack", 8)]))
    d = by_name(result)
    assert d["r"].phase is Phase.QUEUED and d["r"].reason.endswith(
        "b-ack: free nvidia.com/gpu 0 < 1 requested; a-kueue (gangDialect: kueue) would "
        "refuse it: spec.x must be true"), d["r"].reason
    small = replace(gpu_cluster("b-ack", 0), name="b-ack")
    result = reconcile_cycle(cycle_input(jobs=[refused], clusters=[kueue, small]))
    d = by_name(result)
    assert d["r"].phase is Phase.INADMISSIBLE and "a-kueue (gangDialect: kueue) would refuse " \
        "it: spec.x must be true" in d["r"].reason and "or write it as the clusters that " \
        "refuse it take it" in d["r"].reason, d["r"].reason


def test_a_job_whose_quota_no_kueue_local_queue_can_be_named_after_goes_to_no_kueue_cluster(
        ) -> None:
    """Its quota's name labels it for its LocalQueue on a kueue cluster, and
    Kueue's webhook refuses ``Video_Team.A``: sent there, it held its quota and
    never ran. It goes to the other cluster, or with none, waits and says why."""
    from dataclasses import replace

    video = simple_tree(quota("Video_Team.A", ns=["default"],
                              max={"cpu": "1000", "gpu": "64"}))
    kueue = replace(gpu_cluster("a-kueue", 8), gang_dialect="kueue")
    result = reconcile_cycle(cycle_input(jobs=[gpu_job("v", 1)], tree=video,
                                         clusters=[kueue, gpu_cluster("b-ack", 8)]))
    assert by_name(result)["v"].cluster == "b-ack"
    result = reconcile_cycle(cycle_input(jobs=[gpu_job("v", 1)], tree=video, clusters=[kueue]))
    d = by_name(result)["v"]
    assert d.phase is Phase.INADMISSIBLE and (
        "a-kueue (gangDialect: kueue) would refuse it: its quota's name 'Video_Team.A' names its "
        "Kueue LocalQueue there, and no LocalQueue can have it (a DNS-1123 subdomain: lowercase "
        "letters, digits, '-' and '.'): rename the quota") in d.reason, d.reason
    # a job Kueue refuses as it is written is told both
    both = replace(gpu_job("r", 1).obj(), refused=(("kueue", "spec.x must be true"),))
    result = reconcile_cycle(cycle_input(jobs=[both], tree=video, clusters=[kueue]))
    assert "would refuse it: spec.x must be true; its quota's name 'Video_Team.A'" in \
        by_name(result)["r"].reason


def test_a_job_with_no_quota_goes_to_no_kueue_cluster() -> None:
    """Placed by capacity alone, its namespace on no quota: sent to a kueue
    cluster it named no LocalQueue, and ran there unmanaged (its pods started
    one by one, no gang) or never, with no word. It goes to the other cluster,
    or with none waits and says why; a job of a quota goes there as before."""
    from dataclasses import replace

    tree = simple_tree(quota("qa", ns=["team-a"]))
    kueue = replace(gpu_cluster("a-kueue", 8), gang_dialect="kueue")
    jobs = [gpu_job("free", 1, "sandbox").obj(), gpu_job("held", 1, "team-a").obj()]
    gang = policy("gang").capacity_only()
    result = reconcile_cycle(cycle_input(jobs=jobs, tree=tree, policies=[gang],
                                         clusters=[kueue, gpu_cluster("b-ack", 1)]))
    d = by_name(result)
    assert (d["free"].cluster, d["free"].quota) == ("b-ack", None)
    assert (d["held"].cluster, d["held"].quota) == ("a-kueue", "root/qa")
    for fleet in (tree, None):
        result = reconcile_cycle(cycle_input(jobs=jobs[:1], tree=fleet, policies=[gang],
                                             clusters=[kueue]))
        d = by_name(result)
        assert d["free"].phase is Phase.INADMISSIBLE and d["free"].reason.endswith(
            "a-kueue (gangDialect: kueue) would refuse it: it has no quota, so no LocalQueue to "
            "run under there, and Kueue would not start its pods as a gang: list its namespace "
            "on a quota of the tree, or keep it off kueue clusters (its policy's "
            "clusterAffinity)"), d["free"].reason


def test_a_running_job_its_cluster_would_refuse_as_written_now_is_told_so() -> None:
    """Running on a kueue cluster, it is edited into what Kueue refuses (or
    was placed there before fleetq knew): it was told its policy no longer
    gives it that cluster, which its policy did."""
    from dataclasses import replace

    from tests.builders import admitted_prior

    kueue = replace(gpu_cluster("a-kueue", 8), gang_dialect="kueue")
    job_ = replace(gpu_job("r", 1).obj(), refused=(("kueue", "spec.x must be true"),))
    result = reconcile_cycle(cycle_input(
        jobs=[job_], clusters=[kueue],
        prior=[admitted_prior(job_, cluster="a-kueue", quota="root/default")]))
    d = by_name(result)["r"]
    assert (d.phase, d.cluster) == (Phase.ADMITTED, "a-kueue")
    assert d.reason.endswith(
        "a-kueue (gangDialect: kueue) would refuse it as it is written: spec.x must be true; "
        "as it runs there, it runs on until it ends (write it as a-kueue takes it, or delete "
        "it and push it again)"), d.reason


def test_a_policy_for_another_kind_does_not_place_a_job() -> None:
    result = reconcile_cycle(cycle_input(
        jobs=[gpu_job("a", 1)], policies=[policy().selects(*BATCH_JOB)]))
    assert by_name(result)["a"].phase is Phase.INADMISSIBLE
    result = reconcile_cycle(cycle_input(
        jobs=[gpu_job("a", 1)], policies=[policy().selects(*PYTORCH)]))
    assert by_name(result)["a"].phase is Phase.ADMITTED


CLUSTERS = [cluster("a").labels(pool="x").obj(), cluster("b").labels(pool="y").obj(),
            cluster("t").taint("dedicated", "gpu").obj(), cluster("e").taint("spot").obj(),
            cluster("r").capabilities("batch/Job").obj()]


@pytest.mark.parametrize(("pol", "told"), [
    (policy("p"), {
        "e": "it has taint spot:NoSchedule, which the policy does not tolerate (add {key: spot, "
             "operator: Exists, effect: NoSchedule} to its spec.placement.clusterTolerations)",
        "t": "it has taint dedicated=gpu:NoSchedule, which the policy does not tolerate (add "
             "{key: dedicated, operator: Equal, value: gpu, effect: NoSchedule} to its "
             "spec.placement.clusterTolerations)"}),
    (policy("p").tolerate("dedicated", "gpu").tolerate("spot", operator="Exists")
     .clusters("a", "t", "e", "r", match_labels={"pool": "x"}, exclude=["e"]), {
         "b": "the policy's clusterAffinity.clusterNames (a, t, e, r) does not name it (add it "
              "there); and its labels do not match the policy's clusterAffinity.labelSelector "
              "(change the selector or the cluster's labels)",
         "e": "its labels do not match the policy's clusterAffinity.labelSelector (change the "
              "selector or the cluster's labels); and the policy's clusterAffinity.exclude "
              "names it (take it out there)",
         "t": "its labels do not match the policy's clusterAffinity.labelSelector (change the "
              "selector or the cluster's labels)"}),
    (policy("p").tolerate(operator="Exists").affinities(["a"], ["b"]), {
        "e": "no term of the policy's spec.placement.clusterAffinities selects it (add it to one)",
        "t": "no term of the policy's spec.placement.clusterAffinities selects it (add it to "
             "one)"}),
])
def test_the_clusters_a_policy_rules_out_are_told_with_the_fix(pol: PolicyBuilder,
                                                                told: dict[str, str]) -> None:
    """Each cluster a change to the policy would make a candidate, why it is
    not one and that change; one that does not run the job's kind (r, for a
    PyTorchJob) is no matter of the policy. (explain names those with room.)"""
    groups, _ = candidate_groups(pol.obj(), "kubeflow.org/PyTorchJob", CLUSTERS)
    assert ruled_out(pol.obj(), "kubeflow.org/PyTorchJob", CLUSTERS) == told
    assert not {n for g in groups for n in g} & set(told)
