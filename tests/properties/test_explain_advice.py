"""``fleetq explain``'s advice, followed to the letter, over random fleets (hypothesis).

A fleet is a random quota tree, queue settings and jobs as in
``test_invariants``, on one member cluster that holds them all (the quota is
all that holds a job back). It is reconciled twice, a second batch of jobs
arriving; then each job that waits in a queue is explained as ``fleetq
explain`` explains it, the limits its advice names raised as far as it says
(each max, each min, and what it says must be raised with them), and the
next reconcile run on that tree, from the state just written.

Each such job then runs; or its advice said it could not promise that (once
it runs, jobs it names could take its place: reclaiming the room from its
quota, above its min then, or preempting it as room frees elsewhere). The
tree the advice makes is a valid one. A job blocked behind the head of a
StrictFIFO queue is told to ask of the head, and is not followed here.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import Phase as Stage
from hypothesis import strategies as st

from reconciler.core.cycle import CycleInput, CycleResult, reconcile_cycle
from reconciler.core.explain import explain_decision
from reconciler.core.model import (
    FleetSettings,
    MemberCluster,
    Node,
    Phase,
    QueueStrategy,
)
from reconciler.core.quota import QuotaSpec, QuotaTree, build_tree
from reconciler.core.resources import PODS
from reconciler.jobkinds.base import parse_quantity_milli
from tests.properties.test_invariants import (
    CPU,
    GPU,
    Fleet,
    M,
    cycle_input,
    describe,
    job_plans,
    quota_settings,
    quota_trees,
    round_trip,
)

EXPLORE = bool(os.environ.get("FLEETQ_EXPLORE"))
AMPLE = (MemberCluster(name="c0", resource_reservation=False, nodes=(
    Node(name="n0", allocatable={CPU: 1000 * M, GPU: 1000 * M, PODS: 10000 * M}),)),)


@st.composite
def fleets(draw: st.DrawFn) -> Fleet:
    use_gpu = draw(st.booleans())
    tree, problems = build_tree(draw(quota_trees(use_gpu)), path="tree")
    assert tree is not None and not problems, problems
    leaves = sorted(n.path.rsplit("/", 1)[-1] for n in tree.leaves())
    quotas = quota_settings(draw, tree)
    batches = [draw(job_plans(leaves=leaves, clusters=AMPLE, use_gpu=use_gpu, prefix=f"j{b}",
                              classes=["low", "mid", "high"])) for b in range(2)]
    return Fleet(tree=tree, clusters=AMPLE, settings=FleetSettings(quotas=quotas),
                 batches=batches, finished=[set()])


# The limits advice names, as it words them (explain.py): each a quota, a resource and
# the value to raise its max (or min) to
SHORT = re.compile(r"quota (\S+) (\S+): \S+ used of max \S+; (?:at least )?\S+ more must be "
                   r"freed, or max raised to (?:at least )?([^\s(:]+)")
ALSO = re.compile(r"quota (\S+) (\S+) max raised to (\S+) \(")
HEAD = re.compile(r"waits for quota (\S+) (\S+): raise its (max|min) to (\S+) \(")
ALONE = re.compile(r"quota (\S+) (\S+): the job alone needs \S+ but max is \S+: raise max to "
                   r"at least (\S+) ")
MIN = re.compile(r"the (\S+) min of (?:quota )?(\S+) to ([^\s,;)]+)"
                 r"(?: \((?:[^()]|\([^()]*\))*\))?( and its max with it)?")

Raise = dict[tuple[str, str, str], int]  # (quota, resource, "max" | "min") -> value


def advice_of(lines: list[str]) -> Raise:
    """The limits ``lines`` say to raise, each to the most they say."""
    out: Raise = {}

    def put(quota: str, name: str, bound: str, value: str) -> None:
        milli = parse_quantity_milli(value, name)
        out[(quota, name, bound)] = max(out.get((quota, name, bound), 0), milli)

    for line in lines:
        for m in SHORT.finditer(line):
            put(m[1], m[2], "max", m[3])
        if "would also need" in line:
            for m in ALSO.finditer(line):
                put(m[1], m[2], "max", m[3])
        for m in HEAD.finditer(line):
            put(m[1], m[2], m[3], m[4])
        for m in ALONE.finditer(line):
            put(m[1], m[2], "max", m[3])
        if "it is not preemptible" in line:
            for m in MIN.finditer(line):
                put(m[2], m[1], "min", m[3])
                if m[4]:
                    put(m[2], m[1], "max", m[3])
    return out


def raised(tree: QuotaTree, advice: Raise) -> QuotaTree:
    """``tree`` with the limits ``advice`` names raised (the root's min and
    max together: they are the fleet's, one value)."""
    nodes = dict(tree.nodes)
    for (path, name, bound), value in advice.items():
        node = nodes[path]
        both = node.parent is None
        if bound == "max" or both:
            node = replace(node, max={**node.max, name: max(value, node.max.get(name, 0))})
        if bound == "min" or both:
            node = replace(node, min={**node.min, name: max(value, node.min.get(name, 0))})
        nodes[path] = node
    return replace(tree, nodes=nodes)


def problems_of(tree: QuotaTree) -> list[str]:
    """What ``build_tree`` finds wrong with ``tree``, written again as a spec."""
    def spec(path: str) -> QuotaSpec:
        n = tree.nodes[path]
        return QuotaSpec(name=n.name, min=n.min, max=n.max, namespaces=n.namespaces,
                         children=tuple(spec(c) for c in n.children))

    return [p.message for p in build_tree(spec(tree.root), path="tree")[1]]


def explained(inp: CycleInput, result: CycleResult, name: str) -> list[str]:
    """Job ``name`` explained as ``fleetq explain`` explains it."""
    jobs = {j.key: j for j in inp.jobs}
    d = next(x for x in result.decisions if x.key.name == name)
    quota = inp.settings.for_quota(d.quota or "")
    return explain_decision(d, decisions=result.decisions, tree=inp.tree,
                            quota_used=result.quota_used, cluster_free=result.cluster_free,
                            clusters={c.name: c for c in inp.clusters},
                            policy=quota.preemption, preemptible=jobs[d.key].preemptible,
                            not_preemptible={k for k, j in jobs.items() if not j.preemptible},
                            strict_fifo=quota.strategy is QueueStrategy.STRICT_FIFO,
                            settings=inp.settings)


def check(fleet: Fleet) -> None:
    prior: dict = {}
    plans = []
    for step, batch in enumerate(fleet.batches):
        plans = plans + batch
        inp = cycle_input(fleet, plans, prior, step)
        result = reconcile_cycle(inp)
        prior = round_trip(result)
    assert inp.tree is not None
    for d in result.decisions:
        if d.phase is not Phase.QUEUED or not d.position:
            continue
        lines = explained(inp, result, d.key.name)
        said = "\n".join(lines)
        if "no job there runs before its head" in said:
            continue  # (blocked behind a StrictFIFO head: its own explain says what)
        advice = advice_of(lines)
        where = f"\n{said}\nfollowed: {advice}\n{describe(fleet, 1, result)}"
        assert advice, f"{d.key.name} waits, told no limit to raise:{where}"
        tree = raised(inp.tree, advice)
        assert not problems_of(tree), f"the advice makes a bad tree: {problems_of(tree)}{where}"
        again = reconcile_cycle(replace(inp, tree=tree, prior=prior,
                                        source_time="2026-01-01T19:00:00Z",
                                        now="2026-01-01T19:30:00Z"))
        got = next(x for x in again.decisions if x.key == d.key)
        assert got.phase is Phase.ADMITTED or "its place is not sure" in said, (
            f"{d.key.name} followed its advice and still waits: {got.reason}{where}")


@settings(max_examples=1500 if EXPLORE else 150, deadline=None,
          phases=[s for s in Stage if s is not Stage.shrink or os.environ.get("FLEETQ_SHRINK")],
          report_multiple_bugs=False, suppress_health_check=[HealthCheck.too_slow],
          derandomize=not EXPLORE,
          database=None if not EXPLORE else settings.default.database)
@given(fleets())
def test_explains_advice_followed_to_the_letter_lets_the_job_run(fleet: Fleet) -> None:
    check(fleet)
