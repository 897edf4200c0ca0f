"""Gang fit on one member cluster and the choice among clusters (``core.gang``)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from reconciler.core.cycle import reconcile_cycle
from reconciler.core.gang import ClusterState, Fit, Ranking, by_preference, job_cluster_total
from reconciler.core.model import (
    Job,
    LabelRequirement,
    MemberCluster,
    NodeSelectorTerm,
    Phase,
    PlacementStrategy,
    Taint,
    Toleration,
)
from tests.builders import (
    GPU,
    by_name,
    cluster,
    cycle_input,
    gpu_cluster,
    gpu_job,
    job,
    policy,
    quota,
    res,
    settings,
    simple_tree,
    taint,
    toleration,
)


def fit(c: MemberCluster, j: Job) -> Fit | str:
    return ClusterState(c).fit(j.key, j.pod_sets, job_cluster_total(j.pod_sets))


def fits(c: MemberCluster, j: Job) -> bool:
    return isinstance(fit(c, j), Fit)


def test_job_cluster_total_counts_pods_and_not_max_jobs() -> None:
    j = (job("a").pod_set("master", 1, cpu="10m", memory="1Gi")
         .pod_set("worker", 2, cpu="2", memory="1536Mi", gpu="1").obj())
    assert job_cluster_total(j.pod_sets) == res(cpu="4010m", memory="4Gi", gpu="2", pods="3")
    assert j.requests == res(cpu="4010m", memory="4Gi", gpu="2", pods="3", max_jobs="1")


def test_a_16_gpu_gang_is_never_split_over_two_clusters() -> None:
    j = gpu_job("big", 8, replicas=2)
    result = reconcile_cycle(cycle_input(
        jobs=[j], clusters=[gpu_cluster("c1", 8), gpu_cluster("c2", 8)]))
    d = by_name(result)["big"]
    assert d.phase is Phase.INADMISSIBLE
    assert d.cluster is None
    assert "c1" in d.reason and "c2" in d.reason
    assert all(free.get(GPU) == 8000 for free in result.cluster_free.values())


def test_a_16_gpu_gang_waits_rather_than_split_over_two_half_full_clusters() -> None:
    """Each cluster has 16 GPUs, 8 of them taken: 16 free in the fleet, 8 per cluster."""
    holders = [gpu_job("h1", 8).priority_class("high"), gpu_job("h2", 8).priority_class("high")]
    result = reconcile_cycle(cycle_input(
        jobs=[*holders, gpu_job("big", 8, replicas=2)],
        clusters=[gpu_cluster("c1", 8, 8), gpu_cluster("c2", 8, 8)],
        priority_classes={"high": 100},
        settings=settings(strategy=PlacementStrategy.SPREAD)))
    d = by_name(result)
    assert {d["h1"].cluster, d["h2"].cluster} == {"c1", "c2"}
    assert d["big"].phase is Phase.QUEUED
    assert d["big"].cluster is None
    assert result.cluster_free["c1"][GPU] == result.cluster_free["c2"][GPU] == 8000


def test_a_16_gpu_gang_fits_one_cluster_with_two_8_gpu_nodes() -> None:
    result = reconcile_cycle(cycle_input(
        jobs=[gpu_job("big", 8, replicas=2)],
        clusters=[gpu_cluster("c1", 8), gpu_cluster("c2", 8, 8)]))
    d = by_name(result)["big"]
    assert (d.phase, d.cluster) == (Phase.ADMITTED, "c2")
    assert result.cluster_free["c2"][GPU] == 0


@pytest.mark.parametrize(("reservation", "expected"), [(True, False), (False, True)])
def test_a_pod_larger_than_any_node(reservation: bool, expected: bool) -> None:
    """Two nodes of 4 GPUs: 8 free in sum, but no node holds an 8-GPU pod."""
    c = (cluster("c1").node("n1", cpu="96", gpu="4").node("n2", cpu="96", gpu="4")
         .reservation(reservation).obj())
    j = gpu_job("a", 8).obj()
    assert fits(c, j) is expected
    if not reservation:
        return
    why = fit(c, j)
    assert isinstance(why, str)
    assert "worker" in why and "nvidia.com/gpu 8" in why and "4" in why


def test_without_reservation_the_free_sum_must_still_cover_the_job() -> None:
    c = cluster("c1").node("n1", cpu="96", gpu="4").node("n2", cpu="96", gpu="4")
    j = gpu_job("a", 3, replicas=3).obj()
    assert not fits(c.reservation(False).obj(), j)
    why = fit(c.reservation(False).obj(), j)
    assert isinstance(why, str) and "nvidia.com/gpu" in why and "8" in why and "9" in why


def test_without_reservation_a_pod_no_node_could_ever_run_is_warned_of() -> None:
    """gpu-bj-b of the template: its GPU nodes are tainted, its other nodes have
    no GPUs. A GPU job that does not tolerate the taint fits its free sum (the
    fit without resourceReservation, DESIGN "Gang placement"), and was
    admitted with no word, its pod Pending there for good. It is admitted as
    before, and told in its reason and as a warning at its line; a job whose
    pods some node could run is not."""
    c = (cluster("c1").reservation(False)
         .node("a100", cpu="128", gpu="8", taints=[taint("nvidia.com/gpu", "present")])
         .node("general", cpu="64"))
    state = ClusterState(c.obj())
    j = gpu_job("a", 1).obj()
    assert fits(c.obj(), j)
    assert state.never_runs(j.pod_sets) == (
        "c1: no node admits its pods: the worker pods tolerate no taint of the nodes that "
        "would hold them (nvidia.com/gpu=present:NoSchedule)")
    tolerating = (job("b").pod_set("worker", 1, cpu="1", gpu="1",
                                   tolerations=[toleration("nvidia.com/gpu", operator="Exists")])
                  .obj())
    assert state.never_runs(tolerating.pod_sets) is None
    assert state.never_runs(job("c").pod_set("worker", 1, cpu="200").obj().pod_sets) == (
        "c1: no node holds a worker pod: it needs cpu 200, and no node that admits it has "
        "more than 64")
    assert state.never_runs(job("d").pod_set("worker", 1, cpu="60").obj().pod_sets) is None
    # each pod fits the one node that admits it, but not the gang's two at once, even
    # empty (their free sum, 192 cpu, held them: they were placed, and stayed Pending)
    assert state.never_runs(job("e").pod_set("worker", 2, cpu="36").obj().pod_sets) == (
        "c1: its nodes hold no more than 1 of its 2 worker pods at once, even empty")
    assert state.never_runs(job("f").pod_set("worker", 2, cpu="32").obj().pod_sets) is None

    result = reconcile_cycle(cycle_input(jobs=[j, tolerating], clusters=[c.obj()]))
    a, b = by_name(result)["a"], by_name(result)["b"]
    assert (a.phase, b.phase) == (Phase.ADMITTED, Phase.ADMITTED)
    said = ("but its pods may never run there: no node admits its pods: the worker pods "
            "tolerate no taint of the nodes that would hold them "
            "(nvidia.com/gpu=present:NoSchedule); c1 checks its free sum alone (no "
            "resourceReservation), so they would stay Pending; fix its pods' nodeSelector or "
            "tolerations, or the cluster's nodes")
    assert a.reason == f"admitted to c1 (worker 1); {said}" and "never run" not in b.reason
    assert [(p.path, p.line, p.message, p.severity) for p in result.problems] == [
        (j.path, j.line, f"PyTorchJob default/a is admitted to c1, {said}", "warning")]
    # (too big for its nodes: the fix is its size, or another cluster)
    big = job("big").pod_set("worker", 1, cpu="200").obj()
    result = reconcile_cycle(cycle_input(jobs=[big], clusters=[c.node("more", cpu="64").obj()]))
    assert by_name(result)["big"].reason.endswith(
        "no node holds a worker pod: it needs cpu 200, and no node that admits it has more "
        "than 64; c1 checks its free sum alone (no resourceReservation), so they would stay "
        "Pending; lower its pods' requests, or keep it off the cluster (its policy's "
        "clusterAffinity)"), by_name(result)["big"].reason


def test_never_is_said_only_when_sure_whatever_was_asked_before() -> None:
    """"Its pods may never run there" sends a job to a free-sum cluster last,
    with a warning: it must hold for the job asked, not for another job of
    its shape asked first (the answer was kept by shape without the count of
    pods), nor follow from a best-fit pack that missed one that exists."""
    c = cluster("c1").reservation(False).node("n1", cpu="64").node("n2", cpu="64")
    two = job("a").pod_set("worker", 2, cpu="36").obj().pod_sets
    three = job("b").pod_set("worker", 3, cpu="36").obj().pod_sets
    held = "c1: its nodes hold no more than 2 of its 3 worker pods at once, even empty"
    for first, then, said in ((three, two, None), (two, three, held)):
        state = ClusterState(c.obj())
        state.never_runs(first)
        assert state.never_runs(then) == said
    # a packs s0 and s2, b packs s1; best fit by cpu packs s0 then s1 onto a and b, and
    # finds no room for s2: not a "never"
    odd = (cluster("c").reservation(False).node("a", cpu="6", memory="9Gi")
           .node("b", cpu="5", memory="11Gi"))
    j = (job("j").pod_set("s0", 1, cpu="5", memory="1Gi").pod_set("s1", 1, cpu="4", memory="8Gi")
         .pod_set("s2", 1, cpu="1", memory="7Gi").obj())
    assert ClusterState(odd.obj()).never_runs(j.pod_sets) is None
    result = reconcile_cycle(cycle_input(jobs=[j], clusters=[odd.obj()]))
    assert by_name(result)["j"].reason == "admitted to c (s0 1, s1 1, s2 1)"
    assert not result.problems


def test_a_group_of_no_pods_is_placed_nowhere_and_keeps_no_job_off() -> None:
    """A Ray worker group scaled to none, whose nodeSelector no node has,
    places no pod: the job fits a cluster that packs its pods (it was refused:
    "no node has the labels"), and one that checks its free sum does not say
    "no more than 0 of its 0 pods"."""
    j = (job("a").pod_set("head", 1, cpu="1")
         .pod_set("gpu-workers", 0, cpu="1", node_selector={"accel": "a100"})
         .pod_set("cpu-workers", 2, cpu="1").obj())
    for reserving in (True, False):
        c = cluster("c1").reservation(reserving).node("n1", cpu="64").node("n2", cpu="64")
        assert ClusterState(c.obj()).never_runs(j.pod_sets) is None
        got = ClusterState(c.obj()).fit(j.key, j.pod_sets, job_cluster_total(j.pod_sets))
        assert isinstance(got, Fit), got
        assert all(j.pod_sets[ps].name != "gpu-workers" for _, ps, _ in got.nodes)
        result = reconcile_cycle(cycle_input(jobs=[j], clusters=[c.obj()]))
        assert by_name(result)["a"].phase is Phase.ADMITTED and not result.problems


def test_a_cluster_where_the_pods_never_run_is_taken_only_when_no_other_fits() -> None:
    """Two clusters that check their free sum alone: binpack prefers c1, the
    fuller, whose GPU nodes are tainted. The GPU job that does not tolerate
    the taint went there, with its own warning that its pods would stay
    Pending, though c2 would run them. It goes to c2; only once c2 has no
    room is it placed on c1, told so as before."""
    tainted = (cluster("c1").reservation(False)
               .node("a100", cpu="16", gpu="8", taints=[taint("nvidia.com/gpu", "present")]))
    plain = cluster("c2").reservation(False).node("g1", cpu="64", gpu="8")
    j = gpu_job("a", 1).obj()
    assert by_preference([ClusterState(tainted.obj()), ClusterState(plain.obj())],
                         job_cluster_total(j.pod_sets), PlacementStrategy.BINPACK)[0].name == "c1"
    a = by_name(reconcile_cycle(cycle_input(jobs=[j], clusters=[tainted.obj(), plain.obj()])))["a"]
    assert (a.phase, a.cluster, a.reason) == (Phase.ADMITTED, "c2", "admitted to c2 (worker 1)")
    # c2 full: c1 is the last resort, the job told that its pods may never run there
    full = cluster("c2").reservation(False).node("g1", cpu="64", gpu="0")
    result = reconcile_cycle(cycle_input(jobs=[j], clusters=[tainted.obj(), full.obj()]))
    a = by_name(result)["a"]
    assert (a.phase, a.cluster) == (Phase.ADMITTED, "c1")
    assert "but its pods may never run there" in a.reason
    assert [p.severity for p in result.problems] == ["warning"]
    # so across clusterAffinities groups: the second's c2 before the first's c1
    groups = policy().affinities(["c1"], ["c2"]).obj()
    a = by_name(reconcile_cycle(cycle_input(jobs=[j], clusters=[tainted.obj(), plain.obj()],
                                            policies=[groups])))["a"]
    assert (a.cluster, a.copies) == ("c2", ())
    # and under a Duplicated policy, c2 runs it and c1 holds a copy, as before
    both = dataclasses.replace(policy().obj(), duplicated=True)
    a = by_name(reconcile_cycle(cycle_input(jobs=[j], clusters=[tainted.obj(), plain.obj()],
                                            policies=[both])))["a"]
    assert (a.cluster, a.copies) == ("c2", ("c1",))


def test_with_reservation_pods_no_node_could_ever_hold_say_what_keeps_them_off() -> None:
    """A GPU job that does not tolerate the GPU nodes' taint, on a cluster that
    packs pods onto nodes: it was told "only 0 of 1 worker pods fit on its
    nodes", and so "lower its requests or add capacity", neither of which
    would let it run. It is told the taint, and given the fix of tolerations;
    pods that fit no node for want of free room are told as before."""
    c = (cluster("c1")
         .node("a100", cpu="128", gpu="8", taints=[taint("nvidia.com/gpu", "present")])
         .node("general", cpu="64"))
    j = gpu_job("a", 1).obj()
    assert fit(c.obj(), j) == (
        "c1: no node admits its pods: the worker pods tolerate no taint of the nodes that "
        "would hold them (nvidia.com/gpu=present:NoSchedule)")
    result = reconcile_cycle(cycle_input(jobs=[j], clusters=[c.obj()]))
    a = by_name(result)["a"]
    assert a.phase is Phase.INADMISSIBLE and a.reason.endswith(
        "(nvidia.com/gpu=present:NoSchedule); fix its pods' tolerations, or the nodes' labels "
        "or taints"), a.reason
    busy = cluster("c2").node("n1", cpu="8").node("n2", cpu="8")
    state = ClusterState(busy.obj())
    two = job("two").pod_set("worker", 2, cpu="6").obj()
    state.force_place(job("x").obj().key, job("x").pod_set("w", 1, cpu="4").obj().pod_sets,
                      {"cpu": 4000})
    assert state.fit(two.key, two.pod_sets, {"cpu": 12000, "pods": 2000}) == (
        "c2: only 1 of 2 worker pods fit on its nodes")


def test_a_cluster_with_no_nodes_says_so() -> None:
    """It was told "no node has the labels of the worker pods' ", a sentence
    cut short that blamed the pods' labels."""
    j = gpu_job("a", 1).obj()
    assert fit(cluster("e").obj(), j) == "e: it has no nodes (its MemberCluster lists none)"
    assert fit(cluster("e").reservation(False).obj(), j) == (
        "e: it has no nodes (its MemberCluster lists none)")


def test_with_reservation_pods_pack_node_by_node() -> None:
    """3 pods of 3 GPUs on two 5-GPU nodes: 10 free, but only one pod per node."""
    c = cluster("c1").node("n1", cpu="96", gpu="5").node("n2", cpu="96", gpu="5")
    j = gpu_job("a", 3, replicas=3).obj()
    assert not fits(c.obj(), j)
    assert fits(c.reservation(False).obj(), j)
    assert fits(c.node("n3", cpu="96", gpu="5").obj(), j)


def test_a_fit_records_pods_per_node() -> None:
    c = cluster("c1").node("n1", cpu="96", gpu="8").node("n2", cpu="96", gpu="8").obj()
    j = (job("a").pod_set("master", 1, cpu="4").pod_set("worker", 3, cpu="1", gpu="4").obj())
    got = fit(c, j)
    assert isinstance(got, Fit)
    per_set: dict[int, int] = {}
    for _node, ps_index, count in got.nodes:
        per_set[ps_index] = per_set.get(ps_index, 0) + count
    assert per_set == {0: 1, 1: 3}
    gpus_per_node: dict[int, int] = {}
    for node, ps_index, count in got.nodes:
        gpus_per_node[node] = gpus_per_node.get(node, 0) + count * (4 if ps_index == 1 else 0)
    assert all(v <= 8 for v in gpus_per_node.values())


@pytest.mark.parametrize(("node_labels", "selector", "expected"), [
    ({"accel": "a100"}, {"accel": "a100"}, True),
    ({"accel": "h100"}, {"accel": "a100"}, False),
    ({}, {"accel": "a100"}, False),
    ({"accel": "a100", "zone": "z1"}, {"accel": "a100"}, True),
    ({"accel": "a100"}, {}, True),
])
def test_node_selector(node_labels: dict[str, str], selector: dict[str, str],
                       expected: bool) -> None:
    c = cluster("c1").node("n1", cpu="96", gpu="8", labels=node_labels).obj()
    j = job("a").pod_set("worker", 1, node_selector=selector, cpu="1", gpu="8").obj()
    assert fits(c, j) is expected
    if not expected:
        assert "nodeSelector" in str(fit(c, j))


def test_a_job_no_node_admits_is_told_the_labels_or_taints_and_the_fix() -> None:
    """It was told "no node matches the pods' nodeSelector and tolerations;
    lower its requests or add capacity": neither which, nor a fix that helps."""
    c = (cluster("c1").node("n1", cpu="8", labels={"disktype": "hdd"})
         .node("n2", cpu="8", labels={"disktype": "ssd"}, taints=[taint("dedicated", "infra")])
         .obj())
    nowhere = job("a").pod_set("main", 1, node_selector={"disktype": "nvme"}, cpu="1").obj()
    assert fit(c, nowhere) == ("c1: no node admits its pods: no node has the labels of the "
                               "main pods' nodeSelector (disktype=nvme)")
    tainted = job("b").pod_set("main", 1, node_selector={"disktype": "ssd"}, cpu="1").obj()
    assert fit(c, tainted) == ("c1: no node admits its pods: the main pods tolerate no taint "
                               "of the nodes with their nodeSelector labels "
                               "(dedicated=infra:NoSchedule)")
    result = reconcile_cycle(cycle_input(jobs=[nowhere, tainted], clusters=[c]))
    for name in ("a", "b"):
        d = by_name(result)[name]
        assert d.phase is Phase.INADMISSIBLE and d.reason.endswith(
            "; fix its pods' nodeSelector or tolerations, or the nodes' labels or taints"), d
    small = cluster("c2").node("n1", cpu="500m", labels={"disktype": "nvme"}).obj()
    result = reconcile_cycle(cycle_input(jobs=[nowhere], clusters=[c, small]))
    assert by_name(result)["a"].reason.endswith("; lower its requests or add capacity")


def test_a_cluster_short_of_room_whose_nodes_never_admit_the_pods_is_told_so() -> None:
    """Its free sum fell short too, and that was all it was told: room freed
    there would not let the job run, while the other cluster, full now, would."""
    labelled = cluster("c1").node("n1", cpu="8", labels={"disktype": "nvme"}).obj()
    other = cluster("c2").node("n1", cpu="2").obj()
    filler = job("filler").created("2026-01-01T00:00:00Z").pod_set(
        "main", 1, node_selector={"disktype": "nvme"}, cpu="7").obj()
    nvme = job("a").created("2026-01-02T00:00:00Z").pod_set(
        "main", 1, node_selector={"disktype": "nvme"}, cpu="4").obj()
    assert fit(other, nvme) == ("c2: no node admits its pods: no node has the labels of the "
                                "main pods' nodeSelector (disktype=nvme)")
    result = reconcile_cycle(cycle_input(jobs=[filler, nvme], clusters=[labelled, other]))
    d = by_name(result)["a"]
    assert d.phase is Phase.QUEUED, d
    assert d.reason.endswith("c1: free cpu 1 < 4 requested; c2: no node admits its pods: no "
                             "node has the labels of the main pods' nodeSelector "
                             "(disktype=nvme)"), d.reason


def test_pods_kept_off_by_both_the_labels_and_the_taints_of_every_node_are_told_both() -> None:
    """Told of the labels alone, the user would fix the nodeSelector and be
    told of the taints at the next push."""
    c = (cluster("c1").node("n1", cpu="8", labels={"disktype": "hdd"},
                            taints=[taint("dedicated", "infra")])
         .node("n2", cpu="8", taints=[taint("gpu", effect="NoExecute")]).obj())
    nowhere = job("a").pod_set("main", 1, node_selector={"disktype": "nvme"}, cpu="1").obj()
    assert fit(c, nowhere) == (
        "c1: no node admits its pods: no node has the labels of the main pods' nodeSelector "
        "(disktype=nvme); nor do they tolerate a taint of any of its nodes "
        "(dedicated=infra:NoSchedule, gpu:NoExecute)")
    open_node = cluster("c1").node("n1", cpu="8").node("n2", cpu="8",
                                                       taints=[taint("dedicated", "infra")]).obj()
    assert fit(open_node, nowhere) == ("c1: no node admits its pods: no node has the labels of "
                                       "the main pods' nodeSelector (disktype=nvme)")


def test_a_required_node_affinity_picks_the_nodes_of_one_of_its_terms() -> None:
    """It was not read: a pod asking for an H100 node was packed onto an A100
    one, where it would stay Pending."""
    c = (cluster("c1").node("a100", cpu="8", gpu="8", labels={"gpu-type": "a100", "gpus": "8"})
         .node("h100", cpu="8", gpu="8", labels={"gpu-type": "h100", "gpus": "8"}).obj())

    def wanting(*terms: tuple[LabelRequirement, ...]) -> Job:
        return job("a").pod_set("main", 1, cpu="1", gpu="8", node_affinity=[
            NodeSelectorTerm(match_expressions=t) for t in terms]).obj()

    h100 = wanting((LabelRequirement("gpu-type", "In", ("h100",)),))
    got = fit(c, h100)
    assert isinstance(got, Fit) and [n for n, _, _ in got.nodes] == [1]
    either = wanting((LabelRequirement("gpu-type", "In", ("b200",)),),
                     (LabelRequirement("gpus", "Gt", ("4",)),
                      LabelRequirement("gpu-type", "NotIn", ("h100",))))
    got = fit(c, either)
    assert isinstance(got, Fit) and [n for n, _, _ in got.nodes] == [0]
    none = wanting((LabelRequirement("gpus", "Lt", ("8",)),))
    assert fit(c, none) == ("c1: no node admits its pods: no node has the labels of the main "
                            "pods' required node affinity")


@pytest.mark.parametrize(("selector", "affinity", "fix"), [
    ({"gpu-type": "h100"}, False, "nodeSelector or tolerations"),
    ({}, True, "node affinity or tolerations"),
    ({"gpu-type": "h100"}, True, "nodeSelector, node affinity or tolerations"),
])
def test_a_job_no_node_admits_is_told_to_fix_what_its_pods_ask(
        selector: dict[str, str], affinity: bool, fix: str) -> None:
    """A job asking by node affinity alone was told to fix its nodeSelector."""
    c = cluster("c1").node("n1", cpu="8", labels={"gpu-type": "a100"}).obj()
    terms = [NodeSelectorTerm(match_expressions=(
        LabelRequirement("gpu-type", "In", ("h100",)),))] if affinity else []
    j = job("a").pod_set("main", 1, cpu="1", node_selector=selector,
                         node_affinity=terms).obj()
    d = by_name(reconcile_cycle(cycle_input(jobs=[j], clusters=[c])))["a"]
    assert d.phase is Phase.INADMISSIBLE and d.reason.endswith(
        f"; fix its pods' {fix}, or the nodes' labels or taints"), d.reason


def test_a_node_affinitys_match_fields_pick_nodes_by_name() -> None:
    """``matchFields`` on ``metadata.name`` were not read: a pod pinned to one
    node was packed onto another."""
    c = (cluster("c1").node("n1", cpu="8", labels={"pool": "a"})
         .node("n2", cpu="8", labels={"pool": "a"}).node("n3", cpu="8").obj())

    def on(*terms: NodeSelectorTerm) -> Job:
        return job("a").pod_set("main", 1, cpu="4", node_affinity=terms).obj()

    def nodes_of(j: Job) -> list[int]:
        got = fit(c, j)
        assert isinstance(got, Fit), got
        return [n for n, _, _ in got.nodes]

    def name(operator: str, node: str) -> LabelRequirement:
        return LabelRequirement("metadata.name", operator, (node,))

    assert nodes_of(on(NodeSelectorTerm(match_fields=(name("In", "n2"),)))) == [1]
    # a term's labels and fields are both met; its terms are either
    pool = LabelRequirement("pool", "Exists")
    assert nodes_of(on(NodeSelectorTerm((pool,), (name("NotIn", "n1"),)))) == [1]
    assert nodes_of(on(NodeSelectorTerm((pool,), (name("In", "n3"),)),
                       NodeSelectorTerm(match_fields=(name("In", "n3"),)))) == [2]
    assert fit(c, on(NodeSelectorTerm((pool,), (name("In", "n3"),)))) == (
        "c1: no node admits its pods: no node has the labels or name of the main pods' "
        "required node affinity")
    # an empty term matches no node, as in Kubernetes
    assert fit(c, on(NodeSelectorTerm())) == (
        "c1: no node admits its pods: no node has the labels of the main pods' "
        "required node affinity")


def test_node_selector_picks_the_matching_nodes_only() -> None:
    c = (cluster("c1").node("cpu-node", cpu="96")
         .node("gpu-node", cpu="8", gpu="8", labels={"accel": "a100"}).obj())
    j = job("a").pod_set("worker", 2, node_selector={"accel": "a100"}, cpu="5").obj()
    assert not fits(c, j)  # 10 cpu on the one matching node of 8
    j2 = job("a").pod_set("worker", 1, node_selector={"accel": "a100"}, cpu="5").obj()
    got = fit(c, j2)
    assert isinstance(got, Fit)
    assert [node for node, _, _ in got.nodes] == [1]


@pytest.mark.parametrize(("node_taint", "tolerations", "expected"), [
    (taint("gpu", "true"), [], False),
    (taint("gpu", "true"), [toleration("gpu", "true")], True),
    (taint("gpu", "true"), [toleration("gpu", "false")], False),
    (taint("gpu", "true"), [toleration("gpu", operator="Exists")], True),
    (taint("gpu", "true"), [toleration(operator="Exists")], True),
    (taint("gpu", "true", "NoSchedule"), [toleration("gpu", "true", effect="NoExecute")], False),
    (taint("gpu", "true", "NoExecute"), [toleration("gpu", "true", effect="NoExecute")], True),
    (taint("gpu", "true", "PreferNoSchedule"), [], True),
], ids=[
    "untolerated", "equal", "other-value", "exists-key", "exists-all", "other-effect",
    "same-effect", "prefer-no-schedule"
])
def test_tolerations_vs_node_taints(node_taint: Taint, tolerations: list[Toleration],
                                    expected: bool) -> None:
    c = cluster("c1").node("n1", cpu="96", gpu="8", taints=[node_taint]).obj()
    j = job("a").pod_set("worker", 1, tolerations=tolerations, cpu="1", gpu="8").obj()
    assert fits(c, j) is expected


def test_node_taints_are_ignored_without_reservation() -> None:
    c = (cluster("c1").node("n1", cpu="96", gpu="8", taints=[taint("gpu")])
         .reservation(False).obj())
    assert fits(c, gpu_job("a", 8).obj())


@pytest.mark.parametrize(("pods", "replicas", "expected"), [
    ("2", 2, True), ("2", 3, False), (None, 110, True), (None, 111, False),
])
def test_pods_allocatable_limits_pods_per_node(pods: str | None, replicas: int,
                                               expected: bool) -> None:
    b = cluster("c1")
    c = (b.node("n1", cpu="1000") if pods is None else b.node("n1", cpu="1000", pods=pods)).obj()
    j = job("a").pod_set("worker", replicas, cpu="1").obj()
    assert fits(c, j) is expected


def test_pods_allocatable_counts_per_node_with_reservation() -> None:
    c = cluster("c1").node("n1", cpu="8", pods="2").node("n2", cpu="8", pods="2")
    assert fits(c.obj(), job("a").pod_set("worker", 4, cpu="1").obj())
    assert not fits(c.obj(), job("a").pod_set("worker", 5, cpu="1").obj())
    assert not fits(c.reservation(False).obj(), job("a").pod_set("worker", 5, cpu="1").obj())


def test_node_groups_give_count_identical_nodes() -> None:
    c = cluster("c1").node_group("a100", 4, cpu="96", gpu="8").obj()
    assert [n.name for n in c.nodes] == ["a100-0", "a100-1", "a100-2", "a100-3"]
    assert fits(c, gpu_job("a", 8, replicas=4).obj())
    assert not fits(c, gpu_job("a", 8, replicas=5).obj())
    assert ClusterState(c).capacity[GPU] == 32000


def test_reserved_is_subtracted_from_free() -> None:
    c = cluster("c1").node("n1", cpu="96", gpu="8").reserved(cpu="90")
    state = ClusterState(c.obj())
    assert state.free["cpu"] == 6000
    assert fits(c.obj(), job("a").pod_set("worker", 1, cpu="6").obj())
    assert not fits(c.obj(), job("a").pod_set("worker", 1, cpu="7").obj())
    assert not fits(c.reservation(False).obj(), job("a").pod_set("worker", 1, cpu="7").obj())


def test_placing_and_removing_changes_free() -> None:
    c = gpu_cluster("c1", 8, 8)
    state = ClusterState(c)
    a, b = gpu_job("a", 8).obj(), gpu_job("b", 8).obj()
    for j in (a, b):
        got = state.fit(j.key, j.pod_sets, job_cluster_total(j.pod_sets))
        assert isinstance(got, Fit)
        state.place(j.key, j.pod_sets, got)
    assert state.free[GPU] == 0
    c_job = gpu_job("c", 1).obj()
    assert isinstance(state.fit(c_job.key, c_job.pod_sets, job_cluster_total(c_job.pod_sets)),
                      str)
    state.remove(a.key, a.pod_sets)
    assert state.free[GPU] == 8000
    assert isinstance(state.fit(c_job.key, c_job.pod_sets, job_cluster_total(c_job.pod_sets)),
                      Fit)


@pytest.mark.parametrize("change", ["place", "remove"])
def test_best_fit_ranks_the_nodes_by_their_room_as_it_is_after_a_change(change: str) -> None:
    """Packing goes to the node with the least room that still takes a pod; a
    pack after a placement or a removal ranks the nodes as they are then, not
    as they were at the last pack."""
    state = ClusterState(cluster("c1").node("n0", cpu="4").node("n1", cpu="6").obj())
    small, big = job("small").pod_set("main", 1, cpu="1").obj(), \
        job("big").pod_set("main", 1, cpu="5").obj()

    def node_of(j: Job) -> str:
        got = state.fits(j.pod_sets, job_cluster_total(j.pod_sets))
        assert got is not None
        return state.node_names[got.nodes[0][0]]

    assert node_of(small) == "n0"  # 4 free before 6
    got = state.fits(big.pod_sets, job_cluster_total(big.pod_sets))
    assert got is not None and state.node_names[got.nodes[0][0]] == "n1"
    state.place(big.key, big.pod_sets, got)  # n1: 1 free, now the least
    assert node_of(small) == "n1"
    if change == "remove":
        state.remove(big.key, big.pod_sets)  # n1: 6 free again
        assert node_of(small) == "n0"


def test_free_counts_jobs_already_placed_in_the_cycle() -> None:
    result = reconcile_cycle(cycle_input(
        jobs=[gpu_job("a", 8), gpu_job("b", 8)], clusters=[gpu_cluster("c1", 8)],
        policies=[policy().capacity_only()]))
    d = by_name(result)
    assert [d["a"].phase, d["b"].phase] == [Phase.ADMITTED, Phase.QUEUED]
    assert "c1" in d["b"].reason


# -- choosing a cluster ------------------------------------------------------------------


def choose(strategy: PlacementStrategy, *clusters: MemberCluster, j: Job) -> str:
    states = [ClusterState(c) for c in clusters]
    total = job_cluster_total(j.pod_sets)
    for state in states:
        assert isinstance(state.fit(j.key, j.pod_sets, total), Fit)
    return by_preference(states, total, strategy)[0].name


@pytest.mark.parametrize(("strategy", "expected"), [
    (PlacementStrategy.BINPACK, "small"),
    (PlacementStrategy.SPREAD, "big"),
])
def test_binpack_takes_the_fullest_spread_the_emptiest(strategy: PlacementStrategy,
                                                       expected: str) -> None:
    small = gpu_cluster("small", 8)
    big = gpu_cluster("big", 8, 8, 8)
    assert choose(strategy, big, small, j=gpu_job("a", 4).obj()) == expected


@pytest.mark.parametrize("strategy", list(PlacementStrategy))
def test_ties_go_to_the_cluster_name(strategy: PlacementStrategy) -> None:
    j = gpu_job("a", 4).obj()
    tied = (gpu_cluster("b-1", 8), gpu_cluster("a-2", 8), gpu_cluster("c-0", 8))
    assert choose(strategy, *tied, j=j) == "a-2"


@pytest.mark.parametrize(("strategy", "expected"), [
    (PlacementStrategy.BINPACK, ("c1", "c1")),
    (PlacementStrategy.SPREAD, ("c1", "c2")),
])
def test_cycle_uses_the_fleet_strategy(strategy: PlacementStrategy,
                                       expected: tuple[str, str]) -> None:
    """binpack puts the second job beside the first; spread on the other cluster."""
    result = reconcile_cycle(cycle_input(
        jobs=[gpu_job("b1", 2), gpu_job("b2", 2)],
        clusters=[gpu_cluster("c1", 8), gpu_cluster("c2", 8)],
        settings=settings(strategy=strategy)))
    d = by_name(result)
    assert (d["b1"].cluster, d["b2"].cluster) == expected


def test_policy_strategy_overrides_the_fleet_strategy() -> None:
    result = reconcile_cycle(cycle_input(
        jobs=[gpu_job("b1", 2), gpu_job("b2", 2)],
        clusters=[gpu_cluster("c1", 8), gpu_cluster("c2", 8)],
        policies=[policy().strategy(PlacementStrategy.SPREAD)],
        settings=settings(strategy=PlacementStrategy.BINPACK)))
    d = by_name(result)
    assert (d["b1"].cluster, d["b2"].cluster) == ("c1", "c2")


@given(st.sampled_from(list(PlacementStrategy)),
       st.lists(st.tuples(st.integers(0, 3), st.integers(1, 8), st.booleans()), max_size=12))
@examples(max_examples=200, deadline=None)
def test_a_ranking_asked_again_is_the_ranking_made_anew(
        strategy: PlacementStrategy, steps: list[tuple[int, int, bool]]) -> None:
    """A ranking kept over placements and removals (scoring again only the
    clusters that changed) ranks as one made from scratch: the same clusters,
    the same scores, the same order, every time it is asked."""
    states = [ClusterState(gpu_cluster(name, 8, 8)) for name in ("d", "b", "a", "c")]
    wanted = gpu_job("w", 4).obj()
    total = job_cluster_total(wanted.pod_sets)
    kept = Ranking(states, total, strategy)
    placed: list[tuple[ClusterState, Job]] = []
    for i, (at, gpus, remove) in enumerate(steps):
        if remove and placed:
            cs, j = placed.pop(at % len(placed))
            cs.remove(j.key, j.pod_sets)
        else:
            cs, j = states[at], gpu_job(f"j{i}", gpus).obj()
            got = cs.fits(j.pod_sets, job_cluster_total(j.pod_sets))
            if got is not None:
                cs.place(j.key, j.pod_sets, got)
                placed.append((cs, j))
        assert kept.now() == Ranking(states, total, strategy).now()
        assert [c.name for _, _, c in kept.now()] == [
            c.name for c in by_preference(states, total, strategy)]
        assert all(c.free.get(GPU, 0) >= 4000 for _, _, c in kept.now())


def test_could_pack_counts_the_room_the_jobs_gone_would_leave_node_by_node() -> None:
    """Nodes of 8 GPUs: a1 and a2 (4 each) fill n0, a3 (4) half of n1. A pod of
    6 fits nowhere, nor with a1 gone; with a3 gone n1 holds it. Two such pods
    need every job gone. (Without reservation the free sum is all there is.)"""
    cs = ClusterState(gpu_cluster("c", 8, 8))
    placed = {}
    for name in ("a1", "a2", "a3"):
        j = gpu_job(name, 4).obj()
        got = cs.fits(j.pod_sets, job_cluster_total(j.pod_sets))
        assert got is not None
        cs.place(j.key, j.pod_sets, got)
        placed[name] = (j.key, j.pod_sets)
    assert [n.get(GPU) for n in cs.node_free] == [0, 4000]
    one, two = gpu_job("x", 6).obj().pod_sets, gpu_job("y", 6, replicas=2).obj().pod_sets
    assert not cs.could_pack(one, {})
    assert not cs.could_pack(one, cs.room_of([placed["a1"]]))
    assert cs.could_pack(one, cs.room_of([placed["a3"]]))
    assert not cs.could_pack(two, cs.room_of([placed["a1"], placed["a3"]]))
    assert cs.could_pack(two, cs.room_of(placed.values()))
    assert ClusterState(cluster("d").node("n0", gpu="8").reservation(False).obj()).could_pack(
        gpu_job("z", 16).obj().pod_sets, {})  # (the free sum is checked elsewhere)


@given(st.lists(st.integers(0, 8), min_size=1, max_size=4),
       st.lists(st.tuples(st.integers(1, 4), st.integers(1, 2)), max_size=5),
       st.lists(st.tuples(st.integers(1, 8), st.integers(1, 3)), min_size=1, max_size=2))
@examples(max_examples=300, deadline=None)
def test_when_could_pack_says_no_no_set_of_the_jobs_gone_makes_the_pods_pack(
        nodes: list[int], running: list[tuple[int, int]], wanted: list[tuple[int, int]]
        ) -> None:
    cs = ClusterState(gpu_cluster("c", *nodes))
    gone = []
    for i, (gpus, replicas) in enumerate(running):
        j = gpu_job(f"r{i}", gpus, replicas=replicas).obj()
        got = cs.fits(j.pod_sets, job_cluster_total(j.pod_sets))
        if got is not None:
            cs.place(j.key, j.pod_sets, got)
            gone.append((j.key, j.pod_sets))
    b = job("x")
    for k, (gpus, replicas) in enumerate(wanted):
        b = b.pod_set(f"set{k}", replicas, cpu="1", gpu=str(gpus))
    x = b.obj()
    total = job_cluster_total(x.pod_sets)
    if cs.could_pack(x.pod_sets, cs.room_of(gone)):
        return
    for mask in range(1 << len(gone)):
        removed = [(key, sets, cs.placed[key]) for i, (key, sets) in enumerate(gone)
                   if mask >> i & 1]
        for key, sets, _ in removed:
            cs.remove(key, sets)
        assert cs.fits(x.pod_sets, total) is None
        for key, sets, was in removed:
            cs.undo_remove(key, sets, was)


def test_pod_sets_of_unlike_shapes_pack_on_nodes_of_unlike_shapes() -> None:
    """Largest first, the master (4 GPUs, 2 cpu) takes the node of 4 GPUs and 64
    cpu, the only one the worker (2 GPUs, 60 cpu) fits; smallest first, each has
    a node: the job is admitted, not told it fits no cluster even when empty."""
    c1 = (cluster("c1").node("wide", cpu="64", gpu="4").node("tall", cpu="4", gpu="8").obj())
    j = (job("j", "team-a").pod_set("master", 1, cpu="2", gpu="4")
         .pod_set("worker", 1, cpu="60", gpu="2").obj())
    fit = ClusterState(c1).fits(j.pod_sets, job_cluster_total(j.pod_sets))
    assert fit is not None
    names = ["wide", "tall"]
    assert sorted((names[node], j.pod_sets[ps].name) for node, ps, _ in fit.nodes) == [
        ("tall", "master"), ("wide", "worker")]
    result = reconcile_cycle(cycle_input(jobs=[j], clusters=[c1]))
    assert (by_name(result)["j"].phase, by_name(result)["j"].cluster) == (Phase.ADMITTED, "c1")


@pytest.mark.parametrize(("toleration", "taint", "tolerated"), [
    # Kubernetes' matching (v1helper.ToleratesTaint), which Karmada's clusterTolerations use
    (Toleration(effect="NoSchedule"), Taint("nvidia.com/gpu", "present"), False),
    (Toleration(effect="NoSchedule"), Taint("dedicated"), True),  # (empty value: Equal "")
    (Toleration(operator="Exists"), Taint("nvidia.com/gpu", "present", "NoExecute"), True),
    (Toleration(key="nvidia.com/gpu"), Taint("nvidia.com/gpu", "present"), False),
    (Toleration(key="nvidia.com/gpu", operator="Exists"), Taint("nvidia.com/gpu", "x"), True),
    (Toleration(key="nvidia.com/gpu", value="present"), Taint("nvidia.com/gpu", "present"),
     True),
    (Toleration(key="a", operator="Exists", effect="NoExecute"), Taint("a", "", "NoSchedule"),
     False),
])
def test_a_toleration_matches_a_taint_as_kubernetes_does(toleration: Toleration, taint: Taint,
                                                         tolerated: bool) -> None:
    assert toleration.tolerates(taint) is tolerated


def test_a_resource_no_node_lists_is_told_as_undeclared_not_as_none_free() -> None:
    """A job asking for ephemeral-storage of a MemberCluster whose nodes list
    none: "free 0" read as a full cluster; it is one the file does not
    describe. A cluster that lists it and is short says how short."""
    asking = job("a").pod_set("main", 1, cpu="1", ephemeral_storage="10Gi").obj()
    silent = cluster("c1").node("n1", cpu="8").obj()
    listed = cluster("c2").node("n1", cpu="8", ephemeral_storage="4Gi").obj()
    assert fit(silent, asking) == ("c1: no node lists ephemeral-storage in its allocatable "
                                   "(10Gi requested: add it where the nodes have it)")
    assert fit(listed, asking) == "c2: free ephemeral-storage 4Gi < 10Gi requested"
    many = job("b").pod_set("main", 200, cpu="1m").obj()  # (pods: 110 a node when not listed)
    assert fit(silent, many) == "c1: free pods 110 < 200 requested"
    gpus = job("c").pod_set("main", 1, gpu="1").obj()  # (a cpu cluster has none: not "lists")
    assert fit(silent, gpus) == "c1: free nvidia.com/gpu 0 < 1 requested"



@pytest.mark.parametrize(("nodes", "told"), [
    ((16, 16), "c1: free cpu 32 < 40 requested, and a worker pod needs cpu 20 but no node has "
               "more than 16 in all"),
    ((8, 24), "c1: free cpu 32 < 40 requested"),
])
def test_a_gang_short_of_the_sum_is_told_a_pod_no_node_holds_too(
        nodes: tuple[int, ...], told: str) -> None:
    """A gang of two 20-cpu pods on two 16-cpu nodes: told only that the
    cluster's 32 free cpu fall short of its 40, a user who raised the sum
    (another 16-cpu node) found it still would not run. A pod larger than
    every node, even empty, is told with the sum; where a node holds one, the
    sum alone."""
    c = cluster("c1")
    for i, cpu in enumerate(nodes):
        c.node(f"n{i}", cpu=str(cpu), memory="64Gi")
    assert fit(c.obj(), job("big").pod_set("worker", 2, cpu="20").obj()) == told


def test_an_inadmissible_gang_is_told_the_quota_the_sum_and_a_pod_no_node_holds() -> None:
    """Too big for the quota and the cluster, and its pods for any node: all three."""
    result = reconcile_cycle(cycle_input(
        jobs=[job("big", "team-a").pod_set("worker", 2, cpu="20")],
        clusters=[cluster("c1").node("n0", cpu="16", memory="64Gi")
                  .node("n1", cpu="16", memory="64Gi")],
        tree=simple_tree(quota("qa", ns=["team-a"]), total={"cpu": "32"})))
    d = by_name(result)["big"]
    assert d.phase is Phase.INADMISSIBLE
    assert d.reason == (
        "quota root cpu: 40 requested > max 32 even with the quota empty, and it fits no "
        "candidate member cluster even when empty: c1: free cpu 32 < 40 requested, and a "
        "worker pod needs cpu 20 but no node has more than 16 in all; lower its requests")
