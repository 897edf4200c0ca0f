"""Why a job waits, and what would let it run: advice from a cycle's final state.

Pure: it reads a ``Decision`` and the cycle's final quota usage and cluster
free capacity, and returns sentences a person can act on.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from reconciler.core.cycle import (
    BLOCKED_BEHIND,
    FITS_NO_CLUSTER,
    FITS_NO_CLUSTER_EMPTY,
    CycleInput,
    reconcile_cycle,
)
from reconciler.core.gang import NO_NODE_LISTS, NO_NODE_MATCHES, cluster_capacity
from reconciler.core.model import (
    Decision,
    Failover,
    FleetSettings,
    JobKey,
    MemberCluster,
    Phase,
    PreemptionPolicy,
    PriorPlacement,
    QueueStrategy,
)
from reconciler.core.preemption import (
    RECLAIMING,
    borrows_lent,
    may_evict,
    quota_share,
    within_min_after,
    would_retake,
)
from reconciler.core.problems import first_of, listed
from reconciler.core.quota import (
    NON_PREEMPTIBLE_MIN,
    PREEMPTIBLE_LABEL,
    QuotaNode,
    QuotaTree,
    QuotaUsage,
    min_limited,
    unguaranteed,
)
from reconciler.core.resources import MAX_JOBS, PODS, Resources, add_into, format_quantity

# Why a waiting job would not fit on each candidate cluster where it would not, with
# the running jobs given gone; ``None``: with every job gone, the clusters empty
# (``CycleResult.cluster_fits``, for the job)
Fits = Callable[[Collection[Decision] | None], Mapping[str, str]]
# What the next reconcile would decide of the waiting job were the quotas' maxes
# ((quota, resource) -> value) raised so (``admits_next``)
Admits = Callable[[Mapping[tuple[str, str], int]], Decision | None]
# The fleet's PriorityClasses and WorkloadPriorityClasses, name -> value: the
# classes a priority it advises comes from (``_class_above``); and whether the
# job's label kueue.x-k8s.io/priority-class decides its priority (then a
# PriorityClass its pods name does not)
Classes = tuple[Mapping[str, int], Mapping[str, int], bool]


def admits_next(inp: CycleInput, prior: Mapping[JobKey, PriorPlacement], key: JobKey
                ) -> Admits:
    """``Admits`` for job ``key``: the cycle run again on ``inp`` (what the cycle
    decided from) with ``prior`` (what it decided, read back: the state the
    next reconcile starts from) and the maxes raised, the root's min with its
    max (both are the fleet's total), as a pull request raising them would.
    As in that reconcile, the jobs ``prior`` queues below no max raised are
    settled (``CycleInput.settled``): it changed nothing of theirs but a max
    (and when the root's, its min: none is)."""
    def admits(maxes: Mapping[tuple[str, str], int]) -> Decision | None:
        tree = inp.tree
        if tree is None:
            return None
        mins = {(at, name): value for (at, name), value in maxes.items() if at == tree.root}
        below = tuple(f"{at}/" for at, _ in maxes)
        settled = frozenset() if mins else frozenset(
            k for k, p in prior.items() if p.phase is Phase.QUEUED
            and not f"{p.quota or ''}/".startswith(below))
        raised = replace(inp, tree=_raised(tree, mins, maxes), prior=dict(prior),
                         settled=settled)
        return next((x for x in reconcile_cycle(raised).decisions if x.key == key), None)
    return admits


def _admitted(decision: Decision | None) -> bool:
    return decision is not None and decision.phase is Phase.ADMITTED


def _q(name: str, milli: int) -> str:
    return format_quantity(name, milli)


def explain(decision: Decision, *, tree: QuotaTree | None, quota_used: Mapping[str, Resources],
            cluster_free: Mapping[str, Resources], clusters: Mapping[str, MemberCluster],
            admitted_in_quota: list[Decision],
            sparing_in_quota: list[Decision] | None = None,
            candidates: Collection[str] | None = None,
            failover: Failover | None = None, spares_own: bool = True,
            reclaimer_within_min: str | None = None,
            deleted_when: tuple[bool, bool] = (False, False),
            ahead_in_queue: Collection[Decision] = (), admitted: Collection[Decision] = (),
            preemption: PreemptionPolicy = PreemptionPolicy.LOWER_PRIORITY,
            not_preemptible: Collection[JobKey] = (),
            fits: Fits | None = None, reclaimable: Collection[Decision] = (),
            strict_fifo: bool = False, held_out: Collection[Decision] = (),
            preemptible: bool = True, waiting: Collection[Decision] = (),
            settings: FleetSettings | None = None, admits: Admits | None = None,
            ruled_out: Mapping[str, str] | None = None,
            classes: Classes | None = None) -> list[str]:
    """Sentences: the state, the blocking limits, and what would unblock the job.
    ``sparing_in_quota``: the jobs of its quota that wait sparing the job that
    reclaimed their place and could evict it in turn (see ``find_victims``).
    ``candidates``: the clusters its policy selects for it (all of ``clusters``
    when not given); ``failover``: its policy's ``failover.application``;
    ``spares_own``: whether the job that reclaimed its place, if one did,
    could reclaim in return, and so is spared by it; ``reclaimer_within_min``:
    that job's quota, when it runs within its min (nothing of it can be
    reclaimed, spared or not); ``deleted_when``: its
    ``Job.deleted_when`` (whether its operator deletes it once it ended);
    ``ahead_in_queue``: the jobs before it in its queue (served first);
    ``admitted``: every admitted job (those holding a quota above its own are
    named); ``preemption``: its quota's preemption policy, and
    ``not_preemptible`` the jobs none may preempt; ``fits``: why its gang
    would not fit now on each cluster where it would not, its pods packed onto
    nodes, with some running jobs gone (``CycleResult.cluster_fits``; else told
    from the clusters' free sums); ``reclaimable``: the running jobs of other
    quotas it may reclaim room from (``explain_decision``); ``strict_fifo``:
    whether its queue is StrictFIFO, and ``held_out`` the Inadmissible jobs of
    its quota (a limit raised for it may let one in, ahead of it);
    ``preemptible``: whether it may be preempted (else it runs within the mins
    of its quotas, with the running jobs ``not_preemptible``); ``waiting``: the
    jobs waiting in other queues (those the cycle takes before it count, with
    those ahead of it, in the limits it is told to raise) and behind it in its
    own (those tried after it may free room for a job ahead of it, which then
    takes its place), and ``settings``
    the fleet's (their queues' strategy and weight); ``admits``: whether the
    next reconcile would admit it with quota maxes raised (``admits_next``):
    when the jobs served first would count in a max it is told to raise, the
    value told is the one that does (else, not asked or neither does, the one
    that counts them, said to); ``ruled_out``: the clusters its policy rules
    out that have room for it now (Inadmissible: that would hold it empty),
    each with why and the fix (``ruled_out``); ``classes``: those a priority it
    advises comes from (``_class_above``)."""
    d = decision
    where = (f" (it ran on {', '.join((d.cluster or '', *d.copies))})" if d.copies
             and d.phase in (Phase.FINISHED, Phase.FAILED) else f" on {d.cluster}")
    lines = [f"{d.key.kind} {d.key.namespace}/{d.key.name} is {d.phase.value}"
             + (where if d.cluster else "")
             + (f", position {d.position} in queue {d.quota}" if d.position else "") + "."]
    lines.append(f"Reason: {d.reason}")
    if d.failed_on:
        lines.append(f"It failed on {', '.join(d.failed_on)} and fails over: it is never "
                     f"placed there again.")
    if d.kept_on:
        mode = failover.purge_mode if failover is not None else "Gracefully"
        grace = (failover or Failover()).grace_period_seconds
        until = ("for good" if mode == "Never" else
                 "until its new placement is reported running" + (
                     f", or {grace} s after it failed over ("
                     + ", ".join(f"from {c} at {t}" for c, t in d.kept_since)
                     + ") at the latest (gracePeriodSeconds)" if d.kept_since else ""))
        lines.append(f"Its earlier copy stays on {', '.join(d.kept_on)} {until}, as its "
                     f"policy's failover purgeMode ({mode}) says.")
    if d.phase is Phase.ADMITTED:
        return lines
    gone = ("its operator deletes it there once it ended (its manifest left the state "
            "branch: declared, it would run again)")
    if d.phase is Phase.FINISHED:
        lines.append("It holds no quota or room; " + (
            gone if deleted_when[0] else "it stays on its cluster (for its history) until "
            "its file is deleted") + ". To run it again, push it under a new name.")
        return lines
    if d.phase is Phase.FAILED:
        lines.append("It holds no quota or room and is not run again (a failed Kubernetes "
                     "job does not restart when its manifest changes): fix the cause and "
                     "push it under a new name" + (
                         "" if d.copies else ", or give its policy failover.application to "
                         "place failed jobs on another cluster") + ". " + (
                         gone[0].upper() + gone[1:] if deleted_when[1] else
                         "Deleting its file removes it from the cluster") + ".")
        return lines
    if d.phase is Phase.INVALID:
        lines.append("To run it: fix the manifest at the place named above; "
                     "`fleetq validate` lists every problem.")
        return lines
    if d.phase is Phase.INADMISSIBLE and FITS_NO_CLUSTER_EMPTY in d.reason:
        lines.append("It holds no quota or room and is not queued: no quota or job leaving "
                     "would make room for it; once its requests, its policy or the clusters "
                     "change as the reason says, the next reconcile tries it again.")
        lines.extend(f"- {line}" for line in _ruled_out(d, ruled_out, "would hold it"))
        return lines
    req = d.requests
    advice: list[str] = []
    too_big = False  # a limit the job breaks alone: preempting cannot help
    short_of_slots = False
    shortfalls: dict[str, int] = {}  # resource -> the most missing at any level
    limit_lines: list[str] = []
    raised: dict[tuple[str, str], int] = {}  # (quota, resource) -> the most max it is told
    users: list[str] = []  # the jobs of other quotas holding a limit above its own
    also: list[str] = []  # limits the jobs ahead of it would fill before it, but not it alone
    # StrictFIFO: each limit a job ahead would stop the queue at, with the first such job
    heads: dict[Limit, Decision] = {}
    # a non-preemptible job: the mins it is told to raise, with the jobs served first
    mins_told: dict[tuple[str, str], int] = {}
    maxes_told: dict[tuple[str, str], int] = {}  # (and the maxes, with the jobs served first)
    np_keys = {*not_preemptible, *(() if preemptible else (d.key,))}
    non_preemptible = d.key in np_keys or NON_PREEMPTIBLE_MIN in d.reason
    served = _Served(used={}, np_used={})
    turns: _Turns | None = None
    np_used: dict[str, Resources] = {}
    # whether the next reconcile admits it with the maxes raised to what it alone
    # needs (ALONE), only to what it needs with the jobs served first (SERVED), or
    # neither, or it was not asked (None)
    verdict: str | None = None
    still: Decision | None = None  # (neither: what the next reconcile would say of it)
    places = sorted(clusters if candidates is None else {n for n in candidates if n in clusters})
    if tree is not None and d.quota in tree.nodes:
        path = tree.ancestry(d.quota)
        np_used = _np_usage(tree, admitted, np_keys)
        limits = _limits(path, req, non_preemptible)
        now = _Served(used=dict(quota_used), np_used=np_used)
        short_at = {(node.path, name, bound) for node, name, bound in limits
                    if now.level((node.path, name, bound)) + req[name] > _bound(node, name,
                                                                                bound)}
        # (the quota nearest the root that limits it: the jobs of queues below it
        # alone change those limits)
        top = next((node.path for node in reversed(path)
                    if any(at is node for at, _, _ in limits)), d.quota or "")
        running: dict[str, list[Decision]] = {}
        for x in admitted:
            if x.quota is not None:
                running.setdefault(x.quota, []).append(x)
        fleet = _Fleet(tree=tree, running=running, not_preemptible=np_keys,
                       settings=settings or FleetSettings(), own=d.quota, strict=strict_fifo,
                       policy=preemption)
        queued = [*ahead_in_queue, *waiting, d]
        # the Inadmissible jobs (too big for a limit of the tree) each as told it
        # breaks alone
        inadmissible = {x.key: x for x in held_out if x.quota in tree.nodes
                        and FITS_NO_CLUSTER_EMPTY not in x.reason}
        too_big_for = {key: [(node.path, name, bound) for node, name, bound in _limits(
            tree.ancestry(x.quota or ""), x.requests, key in np_keys)
            if x.requests[name] > _bound(node, name, bound)] for key, x in inadmissible.items()}
        let_in: dict[JobKey, Decision] = {}
        # the usage once the jobs the cycle tries before it ran, those limits
        # raised (the jobs ahead of it in its queue, and those of other queues
        # that come first: a job that some other limit holds back is passed, or
        # in a StrictFIFO queue stops it: that limit is raised too), and then
        # each limit they would fill before it raised too, until none is more;
        # and the Inadmissible jobs those limits, raised as far, let in, with the
        # limits they fill; and, for a non-preemptible job, the mins above those
        # it needs and the maxes that raising them raises: raised as told, those
        # jobs run, and it after them
        raising = set(short_at)
        queues = _queues(d, tree, top, queued)
        turns = None
        advised: tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]] = ({}, {})
        while True:
            if turns is None:
                turns = _Turns(d, fleet, top, queues, quota_used, np_used, raising)
                served = turns.before()
            fills = {(node.path, name, bound) for node, name, bound in limits
                     if req[name] <= _bound(node, name, bound) and served.level(
                         (node.path, name, bound)) + req[name] > _bound(node, name, bound)}
            if served.stuck is not None:
                x, at = served.stuck
                heads.setdefault(at, x)
                fills.add(at)
            fills -= raising
            if served.capped:  # (no more: what it is told is a floor, and said to be)
                raising |= fills
                break
            if not fills:
                values = {at: served.level(at) + req.get(at[1], 0) for at in raising}
                fit = [inadmissible[key] for key, broken in too_big_for.items()
                       if key not in let_in and broken and all(
                           values.get(at, -1) >= inadmissible[key].requests[at[1]]
                           for at in broken)]
                if fit:
                    let_in.update((x.key, x) for x in fit)
                    queues = _queues(d, tree, top, [*queued, *let_in.values()])
                    turns = None
                    continue
                # (the mins above those it needs, and the maxes, that raising them raises
                # with them: the jobs those let in first count too; and the jobs run on
                # the tree with those mins, which tell who may reclaim and the shares)
                mins, maxes = _mins_raised(tree, path, _mins_needed(limits, req, served))
                fills = {(at, name, MIN) for (at, name), value in mins.items()
                         if value > tree.nodes[at].min.get(name, 0)}
                fills |= {(at, name, MAX) for (at, name), value in maxes.items()
                          if value > tree.nodes[at].max.get(name, 0)}
                fills -= raising
                if (mins, maxes) != advised:
                    advised = (mins, maxes)
                    fleet = replace(fleet, tree=_raised(tree, mins, maxes), _limits={},
                                    _usage=None, _lendable={})
                    raising |= fills
                    turns = None
                    continue
                if not fills:
                    break
            raising |= fills
            if not turns.lift(fills):  # (else no job before it meets those: the same turns)
                turns = None
        maxes_told = {(at, name): served.level((at, name, bound)) + req.get(name, 0)
                      for at, name, bound in raising if bound == MAX}
        alone = {(node.path, name): quota_used.get(node.path, {}).get(name, 0) + req[name]
                 for node in path for name in sorted(node.max)
                 if 0 < req.get(name, 0) <= node.max[name]
                 and quota_used.get(node.path, {}).get(name, 0) + req[name] > node.max[name]}
        # (the jobs served first count: whether they would take the room, the next
        # reconcile, run with the value it alone needs, says; and with theirs)
        counted = any(value != alone.get(at) for at, value in maxes_told.items())
        # (asked only where a cluster has room for it now: else the quota is not all that
        # holds it, which is told apart, and a cycle run for nothing costs as much as one
        # that decides: the fleets full to the brim are the largest)
        if counted and alone and admits is not None and not _mins_needed(limits, req, served) \
                and all(req[name] <= node.max[name] for node in path for name in node.max
                        if req.get(name, 0)) and _room_now(req, places, cluster_free, fits):
            if _admitted(admits(alone)):
                verdict = ALONE
            else:
                still = None if served.capped else admits(maxes_told)
                verdict = SERVED if _admitted(still) else None
        for node in path:
            used = quota_used.get(node.path, {})
            for name in sorted(node.max):
                need = req.get(name, 0)
                if not need:
                    continue
                have = used.get(name, 0)
                limit = node.max[name]
                first = served.used[node.path].get(name, 0)
                if need <= limit and have + need <= limit < first + need and verdict != ALONE:
                    also.append(f"quota {node.path} {name} max raised to "
                                f"{'at least ' if served.capped else ''}"
                                f"{_q(name, first + need)} ({_q(name, limit)} now, "
                                f"{_q(name, have)} used)")
                if need > limit:
                    too_big = True
                    advice.append(
                        f"quota {node.path} {name}: the job alone needs {_q(name, need)} but "
                        f"max is {_q(name, limit)}: raise max to at least {_q(name, need)} "
                        f"(in a pull request to the ElasticQuotaTree) or shrink the job")
                elif have + need > limit:
                    missing = have + need - limit
                    shortfalls[name] = max(shortfalls.get(name, 0), missing)
                    # (slots shared with other quotas: another quota's may look reclaimable)
                    short_of_slots = short_of_slots or (name == MAX_JOBS and
                                                        node.path != d.quota)
                    whole = (" (the root's min and max, equal, are the fleet's total: raise "
                             "both, with the clusters' capacity)" if node.parent is None
                             else "")
                    value = have + need
                    more = ""
                    if first > have and verdict == SERVED:  # (the next reconcile said so)
                        value = first + need
                        more = (f" ({_q(name, have + need)} is not enough: "
                                f"{_before_it(served, node.path)} would be served first and "
                                f"take the room)")
                    elif first > have and verdict != ALONE:
                        value = first + need
                        more = (f": it alone needs {_q(name, have + need)}, but "
                                f"{_before_it(served, node.path)} are served first")
                    raised[(node.path, name)] = value
                    # (room freed is taken by the jobs served first, as room raised is, but
                    # for those only a raise lets in)
                    freed = max(have + need, value - sum(
                        x.requests.get(name, 0) for x in served.let_in
                        if _under(x.quota, node.path)))
                    least = "at least " if value > have + need and served.capped else ""
                    limit_lines.append(
                        f"quota {node.path} {name}: {_q(name, have)} used of max "
                        f"{_q(name, limit)}; {least if freed > have + need else ''}"
                        f"{_q(name, freed - limit)} more must be freed, or max raised to "
                        f"{least}{_q(name, value)}{more}{whole}")
                    if node.path != d.quota:
                        users.extend(_users(node.path, name, admitted, d.quota))
        mins_told = _mins_needed(limits, req, served)
    held_by_min = bool(mins_told) or (NON_PREEMPTIBLE_MIN in d.reason and tree is None)
    if len(limit_lines) > 1 and not too_big:  # (each is short: one raised is not enough)
        advice.append("beyond that min, it is also short at each of these:" if held_by_min
                      else "it is short at each of these (room at all of them lets it in):")
        advice.extend(NESTED + line for line in limit_lines)
    else:
        advice.extend(limit_lines)
    advice.extend(users)
    unnamed = unguaranteed(tree, d.quota) if users and tree is not None and \
        d.quota is not None and d.quota in tree.nodes else []
    if unnamed:  # (as validate warns: its jobs are all above its min, and never reclaim)
        lacking = " and ".join(name for name, _ in unnamed)
        advice.append(f"none of them is taken back for it: its quota {d.quota}'s min names no "
                      f"{lacking}, so it is 0 there and each of its jobs is above its min; "
                      f"give its min the {lacking} it is guaranteed")
    brought = [x for x in served.let_in if x.quota == d.quota and verdict != ALONE]
    if strict_fifo and brought and not too_big:
        names = first_of([f"{x.key.namespace}/{x.key.name}" for x in brought], 3)
        advice.append(f"its queue {d.quota} is StrictFIFO: those limits raised would also "
                      f"bring {names} (Inadmissible now: too big for them) into the queue, "
                      f"ahead of it, where a head that waits holds back every job behind it")
    if heads and (shortfalls or mins_told) and not too_big and tree is not None:
        # (those of the limits it needs itself are told with them)
        told = [f"{x.key.kind} {x.key.namespace}/{x.key.name}, ahead of it, waits for quota "
                f"{at} {name}: raise its {bound} to {_q(name, served.level((at, name, bound)))} "
                f"({_q(name, _bound(tree.nodes[at], name, bound))} now, "
                f"{_q(name, (quota_used if bound == MAX else np_used).get(at, {}).get(name, 0))}"
                f" used{'' if bound == MAX else ' by non-preemptible jobs'})"
                for (at, name, bound), x in sorted(heads.items()) if not req.get(name, 0)]
        if told:
            advice.append(f"its queue {d.quota} is StrictFIFO, where a job ahead that waits "
                          f"holds back every job behind it: {listed(told, ' and ')}")
    takers = turns.takers() if turns is not None and (shortfalls or mins_told) \
        and not too_big else []
    if turns is not None and takers:
        names = first_of([f"{x.key.namespace}/{x.key.name} ({x.quota})" for x in takers], 3)
        advice.append(f"even with those limits raised as told, its place is not sure: once it "
                      f"runs, {names} could take it" + (
                          f" (quota {d.quota} is then above its min: the room may be "
                          f"reclaimed from it)" if turns.borrows else "")
                      + "; to keep it, raise those limits for them too" + (
                          f", or the min of quota {d.quota}" if turns.borrows else ""))
    if served.capped and (shortfalls or mins_told) and not too_big:
        advice.append(f"the cycle takes more than {SERVED_FIRST_MOST} jobs before it that "
                      f"the limits raised for it would let run first: the values told count "
                      f"only the first {SERVED_FIRST_MOST} of them, and fall short; raising "
                      f"limits will not let it in soon")
    if also and (shortfalls or mins_told) and not too_big:
        advice.append(f"with {_before_it(served)}, served first, it would also need "
                      f"{listed(also, ' and ')}: else those run and it still waits")
    if still is not None and not _admitted(still) and not too_big:
        advice.append(f"even with those maxes raised as told, the next reconcile would not "
                      f"admit it: {still.reason}")
    if short_of_slots and tree is not None and MAX_JOBS not in tree.nodes[d.quota or ""].min:
        advice.append(f"the min of quota {d.quota} names no {MAX_JOBS}, so it guarantees no "
                      f"job slot: the job waits for one rather than reclaim it from another "
                      f"quota")
    if held_by_min:  # (dropping the label helps only if max has room)
        fixes = [_raise_mins(tree, d, mins_told, served, np_used, maxes_told)
                 if tree is not None and mins_told else "raise that min"]
        if not shortfalls:
            fixes.append("let the job be preempted (drop the label)")
        if d.phase is not Phase.INADMISSIBLE:  # (no job leaving would let it in)
            fixes.append("wait for those jobs to end")
        within = (f"quota {d.quota}" if {at for at, _ in mins_told} <= {d.quota}
                  else "each quota of its path")
        advice.insert(0, f"it is not preemptible ({PREEMPTIBLE_LABEL}: \"false\"), so it runs "
                         f"only within the min of {within}, with the other "
                         f"non-preemptible jobs there: {listed(fixes, ', or ')}")
    short = _short_clusters(req, places, cluster_free) if fits is None else {
        name: f"cluster {name}: {why.removeprefix(name + ': ')}"
        for name, why in fits(()).items() if name in places}
    # (one that could not hold it even empty: it is not waited for)
    never = fits(None) if fits is not None and short else {}
    for name in short:
        why = _never_holds(req, clusters[name])
        if why is None and name in never:
            why = f"{never[name].removeprefix(name + ': ')}, even empty: it never holds this job"
        if why is not None:
            short[name] = f"cluster {name}: {why}"
    holders = sorted(admitted_in_quota, key=lambda x: (x.priority, x.admitted_at or ""))
    names = first_of([f"{x.key.namespace}/{x.key.name} (priority {x.priority})"
                      for x in holders], 5)

    def room(victims: list[Decision]) -> bool:
        """Would a cluster have room for it with ``victims`` gone?"""
        if fits is not None:
            return len(fits(victims)) < len(places)
        return _room_without(req, short, cluster_free, victims)

    if advice and admitted_in_quota and not too_big and not held_by_min:
        # (the quota is not all: with no cluster having room, victims must leave one)
        higher = _higher_priority(d, shortfalls, admitted_in_quota, preemption,
                                  not_preemptible,
                                  room if places and len(short) == len(places) else None,
                                  classes=classes)
        advice.append(f"jobs holding quota {d.quota}: {names}{higher}")
    if d.phase is Phase.QUEUED and FITS_NO_CLUSTER in d.reason:  # (no cluster fits it now)
        # (the cycle's word on a cluster, when its reason has one: "c1: no node admits ...")
        said = dict(part.split(": ", 1) for part in d.reason.partition(
            f"{FITS_NO_CLUSTER}: ")[2].split("; ") if ": " in part)
        # (and where no node ever admits its pods, or lists what it asks for, that is
        # said, not its free room)
        short.update({name: f"cluster {name}: " + said.get(name, (
            "its free room adds up to the job's, but is split over its nodes: no node has "
            "room for its pods as they come")) for name in places
            if name not in short or said.get(name, "").startswith((NO_NODE_MATCHES,
                                                                   NO_NODE_LISTS))})
    # (after what reclaimed or preempted it, if anything did: "its place was reclaimed by
    # ...; blocked behind ...")
    blocked = d.phase is Phase.QUEUED and (d.reason.startswith(BLOCKED_BEHIND)
                                           or f"; {BLOCKED_BEHIND}" in d.reason)
    if blocked:
        head = d.reason.partition(BLOCKED_BEHIND)[2].partition(" at the head of ")[0]
        advice.insert(0, f"its queue {d.quota} is StrictFIFO: no job there runs before its "
                         f"head, {head}, which waits (`fleetq explain {head.replace(' ', '/')}` "
                         f"says for what); once that one runs or leaves the queue, this one "
                         f"is tried (queueStrategy BestEffortFIFO would let it go past)")
    if not advice and short and len(short) == len(places):
        # (a cluster with room: what holds the job is not the clusters' room)
        if d.phase is Phase.QUEUED and d.position is None:
            advice.append("its policy places it by capacity alone (no suspension.scheduling: "
                          "it is in no quota queue); it waits for one member cluster to hold "
                          "the whole gang:")
        else:
            advice.append("its quota has room; it waits for one member cluster to hold the "
                          "whole gang:")
        advice.extend(NESTED + short[name] for name in sorted(short))
        advice.extend(_ruled_out(d, ruled_out, "has room for it now"))
        # (the cycle preempts for a cluster's room too: the jobs of its quota it outranks,
        # when their pods gone would let its own pack, ``fits`` says: not their sums)
        higher = _higher_priority(d, {}, admitted_in_quota, preemption, not_preemptible, room,
                                  for_room=True, classes=classes) \
            if d.position is not None and fits is not None else ""
        if higher.startswith("; a priority above"):
            advice.append(f"jobs of quota {d.quota} running: {names}{higher} for their room")
        if d.position is not None and tree is not None:
            advice.extend(_guaranteed_beyond(d, tree, quota_used, clusters, places, admitted))
    elif advice and not too_big and not blocked and places and len(short) == len(places):
        # (the quota is not all: with room there, no cluster could take it either, unless
        # it reclaims room from quotas that borrow)
        if fits is not None and reclaimable and len(fits(reclaimable)) < len(places):
            names = first_of([f"{x.key.namespace}/{x.key.name} ({x.quota})"
                              for x in sorted(reclaimable, key=lambda x: str(x.key))], 3)
            advice.append(f"once the quota has room, no member cluster has room for the whole "
                          f"gang now, but within its quota's min it may reclaim room from jobs "
                          f"of quotas above their min: {names}")
        else:
            advice.append("and once the quota has room, no member cluster has room for the "
                          "whole gang now:")
            advice.extend(NESTED + short[name] for name in sorted(short))
            advice.extend(_ruled_out(d, ruled_out, "has room for it now"))
    if d.phase is Phase.QUEUED and d.preempted_by and \
            (d.preemption_reason or "").startswith(RECLAIMING):
        if reclaimer_within_min is not None:
            advice.append(f"{d.preempted_by}, which reclaimed from it, runs within the min of "
                          f"its quota {reclaimer_within_min}: nothing of it can be reclaimed "
                          f"(a job above its own quota's min borrows only what other quotas "
                          f"leave unused)")
        elif spares_own:
            advice.append(f"it does not reclaim from {d.preempted_by}, which reclaimed from "
                          f"it, while it waits")
    for x in sparing_in_quota or ():
        advice.append(f"it does not reclaim from {x.preempted_by} while {x.key.kind} "
                      f"{x.key.namespace}/{x.key.name} of its quota, whose place that job "
                      f"reclaimed, waits: it would evict this one and take the place, "
                      f"borrowing above the quota's min, to be reclaimed again")
    if d.position and d.position > 1:
        advice.append(f"{d.position - 1} job(s) are ahead of it in queue {d.quota}")
    lines.extend(f"  - {a[len(NESTED):]}" if a.startswith(NESTED) else f"- {a}"
                 for a in advice)
    return lines


NESTED = "\t"  # (an advice of the list of the one before it: each cluster's room, indented)


def _room_now(req: Mapping[str, int], places: Collection[str],
              cluster_free: Mapping[str, Resources], fits: Fits | None) -> bool:
    """Has one of the clusters ``places`` room for the job (its total ``req``)
    now: its pods pack there (``fits``), else its free sum holds it?"""
    short = fits(()) if fits is not None else _short_clusters(req, places, cluster_free)
    return any(name not in short for name in places)


def _ruled_out(d: Decision, ruled_out: Mapping[str, str] | None, room: str) -> list[str]:
    """A line for each cluster of ``ruled_out`` (its policy rules it out, why
    and the fix, by name), which ``room`` (has room for it now, ...)."""
    return [f"cluster {name} {room}, but its policy{f' {d.policy}' if d.policy else ''} rules "
            f"it out: {why}" for name, why in sorted((ruled_out or {}).items())]


def _guaranteed_beyond(d: Decision, tree: QuotaTree, quota_used: Mapping[str, Resources],
                       clusters: Mapping[str, MemberCluster], places: Collection[str],
                       admitted: Collection[Decision]) -> list[str]:
    """When a queued job within its quota's min waits for room that the jobs
    on its clusters hold within their own quotas' min (none borrows, so none
    is reclaimed for it), and the quotas' mins (``QuotaTree.guaranteed``)
    promise more of a resource it asks for than the fleet's clusters hold:
    room that is not there. Said, with the fix; else nothing."""
    quota = tree.nodes.get(d.quota or "")
    if quota is None:
        return []
    used = quota_used.get(quota.path, {})
    asked = [r for r in sorted(d.requests) if r in quota.min and d.requests[r] > 0]
    if not asked or any(used.get(r, 0) + d.requests[r] > quota.min[r] for r in asked):
        return []  # (beyond its own min: it would borrow, and borrows only what is unused)

    usage = final_usage(tree, quota_used)
    if any(x.cluster in places and x.quota in usage.used and usage.above_min(x.quota)
           for x in admitted):
        return []  # (reclaimable there: the reason says what else holds it)
    busy = sorted({x.cluster for x in admitted if x.cluster is not None and x.cluster in places})
    promised = tree.guaranteed()
    out = []
    for r in asked:
        hold = cluster_capacity(clusters.values(), r)
        if promised.get(r, 0) > hold:
            out.append((f"the jobs on {listed(busy, ' and ')} run within their quotas' min, so "
                        f"none is reclaimed for it: " if busy else "") +
                       f"the quotas' mins guarantee {r} {_q(r, promised[r])} in all, more than "
                       f"the member clusters hold ({_q(r, hold)}); lower the mins to what the "
                       f"clusters hold, or add capacity")
            break
    return out


def final_usage(tree: QuotaTree, quota_used: Mapping[str, Resources]) -> QuotaUsage:
    """The cycle's final usage of the quotas (``CycleResult.quota_used``), to
    ask as the cycle asked it (``QuotaUsage.above_min``, ...)."""
    usage = QuotaUsage(tree)
    for path, used in quota_used.items():
        if path in usage.used:
            usage.used[path] = dict(used)
    return usage


def _short_clusters(req: Mapping[str, int], names: Collection[str],
                    cluster_free: Mapping[str, Resources]) -> dict[str, str]:
    """By name, a line for each of the clusters ``names`` whose free room
    falls short of the job's total ``req``, saying of what."""
    out = {}
    for name in names:
        free = cluster_free.get(name, {})
        short = [f"{r} {_q(r, free.get(r, 0))} free of {_q(r, v)} needed"
                 for r, v in sorted(req.items())
                 if r not in (PODS, MAX_JOBS) and v > free.get(r, 0)]
        if short:
            out[name] = f"cluster {name}: " + ", ".join(short)
    return out


# the most jobs explain counts as run before a waiting job, the limits raised for it:
# with more, the fleet is far from letting it in by a limit raised (told so), and
# counting them all costs more than the advice is worth
SERVED_FIRST_MOST = 1000

# The bound of a limit (quota, resource, bound): a job's usage and its request within
# the quota's max; and, a non-preemptible job's, the non-preemptible usage and its
# request within the quota's min (DESIGN §3 "Admission")
MAX, MIN = "max", "min"
ALONE, SERVED = "alone", "served"  # (what admits it at the next reconcile: see ``explain``)
Limit = tuple[str, str, str]


@dataclass
class _Served:
    """The quotas once the jobs the cycle tries before a waiting job ran
    (``_Turns.before``): ``used`` and ``np_used`` (that of the non-preemptible
    jobs), by quota; ``ran``: how many of its own queue's jobs ahead of it
    ran, ``others`` those of other queues that did, and ``let_in`` the
    Inadmissible jobs that the limits raised let in and that ran; ``stuck``:
    in a StrictFIFO queue, the first job ahead of it that waits, and the limit
    that holds it back (the queue stops there, it included)."""

    used: dict[str, Resources]
    np_used: dict[str, Resources]
    ran: int = 0
    others: list[Decision] = field(default_factory=list)
    let_in: list[Decision] = field(default_factory=list)
    stuck: tuple[Decision, Limit] | None = None
    capped: bool = False  # (more than SERVED_FIRST_MOST ran before it: those alone counted)

    @property
    def count(self) -> int:
        return self.ran + len(self.others) + len(self.let_in)

    def level(self, limit: Limit) -> int:
        at, name, bound = limit
        return (self.used if bound == MAX else self.np_used).get(at, {}).get(name, 0)


def _limits(path: Sequence[QuotaNode], req: Mapping[str, int], non_preemptible: bool
            ) -> list[tuple[QuotaNode, str, str]]:
    """The limits of quotas ``path`` (leaf first) that a request ``req`` must
    fit: each max of a resource it asks for, and, when it is not preemptible,
    each min that binds it (``min_limited``)."""
    out = [(node, name, MAX) for node in path for name in sorted(node.max) if req.get(name, 0)]
    if non_preemptible:
        out.extend((node, name, MIN) for node in path for name in min_limited(node)
                   if req.get(name, 0))
    return out


def _bound(node: QuotaNode, name: str, bound: str) -> int:
    return node.max[name] if bound == MAX else node.min.get(name, 0)


def _under(quota: str | None, path: str) -> bool:
    return quota is not None and (quota == path or quota.startswith(path + "/"))


@dataclass
class _Fleet:
    """What ``_Turns`` reads of the fleet besides the quotas' usage: the
    running jobs by quota, the jobs that are not preemptible, each queue's
    settings (strategy, preemption policy, weight) and those of the waiting
    job's own queue (``strict``, ``policy``), which the caller knows."""

    tree: QuotaTree
    running: dict[str, list[Decision]]
    not_preemptible: Collection[JobKey]
    settings: FleetSettings
    own: str | None
    strict: bool
    policy: PreemptionPolicy
    # per (quota, resources, non-preemptible): the limits that bind a job (``limits_of``)
    _limits: dict[tuple[str, tuple[str, ...], bool], list[tuple[Limit, int]]] = field(
        default_factory=dict)
    _usage: QuotaUsage | None = None
    _lendable: dict[str, Resources] = field(default_factory=dict)  # see quota_share

    def usage(self, used: Mapping[str, Resources], np_used: Mapping[str, Resources]
              ) -> QuotaUsage:
        """The quotas' usage, ``used`` and ``np_used`` (by the non-preemptible
        jobs), to be changed: the same object each time, set anew."""
        usage = self._usage
        if usage is None:
            usage = self._usage = QuotaUsage(self.tree)
        for p in self.tree.nodes:
            usage.used[p] = dict(used.get(p, {}))
            usage.np_used[p] = dict(np_used.get(p, {}))
        for leaf in self.tree.leaves():  # (a change to each quota: what it knew is dropped)
            usage.charge(leaf.path, {}, preemptible=False)
        return usage

    def strict_fifo(self, leaf: str) -> bool:
        if leaf == self.own:
            return self.strict
        return self.settings.for_quota(leaf).strategy is QueueStrategy.STRICT_FIFO

    def preemption(self, leaf: str) -> PreemptionPolicy:
        return self.policy if leaf == self.own else self.settings.for_quota(leaf).preemption

    def limits_of(self, x: Decision) -> list[tuple[Limit, int]]:
        """The limits that bind ``x`` (``_limits``), each with its value."""
        assert x.quota is not None
        key = (x.quota, tuple(x.requests), x.key in self.not_preemptible)
        known = self._limits.get(key)
        if known is None:
            known = self._limits[key] = [
                ((node.path, name, bound), _bound(node, name, bound)) for node, name, bound
                in _limits(self.tree.ancestry(x.quota), x.requests, key[2])]
        return known

    def share(self, leaf: str) -> float:
        """The quota's dominant share (``PreemptionContext.dominant_share``) as
        its usage stands (``usage``)."""
        assert self._usage is not None
        return quota_share(self._usage, self.settings, leaf, self._lendable)


def _with_root(tree: QuotaTree, limits: Collection[Limit]) -> set[Limit]:
    """``limits``, the root's min with its max and its max with its min: one
    value, the fleet's."""
    return {*limits, *((at, name, MIN if bound == MAX else MAX) for at, name, bound in limits
                       if at == tree.root)}


def _values(tree: QuotaTree, at_turn: _Served, req: Mapping[str, int],
            limits: Collection[Limit]) -> dict[Limit, int]:
    """The values ``limits`` are raised to for a request ``req``, the usage as
    ``at_turn`` has it: the root's min and max the larger of the two."""
    out = {at: at_turn.level(at) + req.get(at[1], 0) for at in limits}
    for (at, name, bound), value in list(out.items()):
        if at == tree.root:
            other = (at, name, MIN if bound == MAX else MAX)
            out[other] = max(value, out.get(other, 0))
    return out


def _order(x: Decision) -> tuple[int, str, tuple[str, ...]]:
    """A job's place in its queue (``queue_order``)."""
    return (-x.priority, x.enqueued_at, x.key.order)


def _queues(d: Decision, tree: QuotaTree, top: str, waiting: Iterable[Decision]
            ) -> dict[str, list[Decision]]:
    """The jobs ``waiting`` (``d`` among them) below quota ``top``, by queue,
    each queue in reverse order (popped from the end)."""
    out: dict[str, list[Decision]] = {}
    for x in waiting:
        if x.quota in tree.nodes and _under(x.quota, top):
            out.setdefault(x.quota or "", []).append(x)
    for queue in out.values():
        queue.sort(key=_order, reverse=True)
    return out


class _Turns:
    """The turns the cycle would give the waiting jobs, on the quotas alone
    (the clusters aside), with the limits ``raised`` lifted: which jobs run
    before ``d`` (``before``), and, once it runs, the limits raised to their
    values (full with it), which jobs could evict it (``takers``).

    The jobs are those of ``queues`` (``_queues``; its own among them) below
    quota ``top`` (the others change no limit of its path below ``top``). Across
    queues the cycle takes heads by priority, then lowest dominant share,
    then enqueue time (DESIGN §3 "Order", ``_head_key``), a queue's share
    growing as its jobs run: the jobs of lower priority than ``d`` never come
    before it. A job the limits hold back is passed (as a BestEffortFIFO
    queue does), or its queue stops there (StrictFIFO), unless it would get
    in by preempting (evicting jobs of its own quota of lower priority, or
    reclaiming from quotas above their min, as ``plan`` picks them: those go
    back to their queue, to be tried again in their turn)."""

    def __init__(self, d: Decision, fleet: _Fleet, top: str,
                 queues: Mapping[str, list[Decision]], quota_used: Mapping[str, Resources],
                 np_used: Mapping[str, Resources], raised: Collection[Limit]) -> None:
        self.d, self.fleet = d, fleet
        self.raised = _with_root(fleet.tree, raised)
        self.usage = fleet.usage(quota_used, np_used)
        self.queues = {leaf: list(queue) for leaf, queue in queues.items()}
        self.top = top
        # each queue's head under the cross-queue key, with the queue's version (an entry
        # of an older version is stale)
        self.heads: list[tuple[tuple[int, float, str, tuple[str, ...]], str, int]] = []
        self.version: dict[str, int] = {}
        self.shares: dict[str, float] = {}
        self.running = dict(fleet.running)
        self.held: list[Decision] = []  # the jobs before it that wait
        self.held_at: set[Limit] = set()  # the limits any job before it was short of
        self.at_turn = _Served(used={}, np_used={})  # (``before``)
        self.limits: dict[Limit, int] | None = None  # the limits raised, once it runs
        self.borrows = False  # (once it runs: its quota above its min)
        self.state = 0  # bumped by each job that runs (``_asked`` holds answers until then)
        self._asked: dict[tuple[object, ...], bool] = {}
        self._borrowing: tuple[int, list[tuple[str, Resources, Resources]]] = (-1, [])
        self._freed: dict[tuple[object, ...], Resources] = {}
        self._plans: dict[tuple[object, ...], list[Decision] | None] = {}
        self._changed: dict[str, int] = {}  # per quota: bumped as its running jobs change
        self._ran: set[JobKey] = set()  # the jobs run here: admitted by the next cycle
        self._raises: dict[tuple[object, ...], bool] = {}
        # per (quota, resources, non-preemptible): the limits not raised that bind a job,
        # each (limit, the usage it counts at its quota, resource, value)
        self._binding: dict[tuple[object, ...], list[tuple[Limit, Resources, str, int]]] = {}

    def push(self, leaf: str) -> None:
        queue = self.queues[leaf]
        if not queue:
            return
        x = queue[-1]
        share = self.shares.get(leaf)
        if share is None:
            share = self.shares[leaf] = self.fleet.share(leaf)
        version = self.version[leaf] = self.version.get(leaf, 0) + 1
        heapq.heappush(self.heads, ((-x.priority, share, x.enqueued_at, x.key.order), leaf,
                                    version))

    def pop(self) -> tuple[str, Decision] | None:
        """The next head the cycle takes, and its queue; ``None`` when none is left."""
        while self.heads:
            _, leaf, version = heapq.heappop(self.heads)
            if version == self.version[leaf]:
                self.version[leaf] = version + 1  # (popped: pushed again after its turn)
                return leaf, self.queues[leaf].pop()
        return None

    def run(self, x: Decision) -> None:
        """``x`` runs (and may be evicted as the jobs that ran before do)."""
        assert x.quota is not None
        self.usage.charge(x.quota, x.requests, preemptible=x.key not in self.fleet.not_preemptible)
        self.running[x.quota] = [*self.running.get(x.quota, ()), x]
        self._changed[x.quota] = self._changed.get(x.quota, 0) + 1
        self.shares.pop(x.quota, None)
        self._ran.add(x.key)
        self.state += 1

    def short(self, x: Decision, every: bool = False) -> list[Limit]:
        """The first limit that holds ``x`` back, if one does (``every``: each):
        those raised aside, or, once ``d`` runs, at their values."""
        if self.limits is None:
            return [limit for limit, _ in self.shortfalls(x)][:None if every else 1]
        out = []
        requests = x.requests
        used, np_used, raised, limits = (self.usage.used, self.usage.np_used, self.raised,
                                         self.limits)
        for limit, value in self.fleet.limits_of(x):
            at, name, bound = limit
            if limit in raised:
                value = max(value, limits[limit])
            if (used if bound == MAX else np_used)[at].get(name, 0) + requests[name] > value:
                out.append(limit)
                if not every:
                    break
        return out

    def shortfalls(self, x: Decision) -> list[tuple[Limit, int]]:
        """Before ``d`` runs: each limit but those raised that holds ``x``
        back, and by how much."""
        key = (x.quota, tuple(x.requests), x.key in self.fleet.not_preemptible)
        binding = self._binding.get(key)
        if binding is None:
            usage = self.usage
            binding = self._binding[key] = [
                (limit, (usage.used if limit[2] == MAX else usage.np_used)[limit[0]],
                 limit[1], value)
                for limit, value in self.fleet.limits_of(x) if limit not in self.raised]
        requests = x.requests
        out = []
        for limit, counts, name, value in binding:
            excess = counts.get(name, 0) + requests[name] - value
            if excess > 0:
                out.append((limit, excess))
        return out

    def own_freed(self, x: Decision) -> Resources:
        """What the running jobs of its own quota that ``x`` may preempt hold."""
        assert x.quota is not None
        policy = self.fleet.preemption(x.quota)
        newer = policy is PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY
        key = (x.quota, x.priority, x.enqueued_at if newer else "",
               self._changed.get(x.quota, 0))
        out = self._freed.get(key)
        if out is None:
            out = self._freed[key] = {}
            if policy is not PreemptionPolicy.NEVER:
                for v in self.running.get(x.quota, ()):
                    if v.key not in self.fleet.not_preemptible and (
                            v.priority < x.priority or (newer and v.priority == x.priority
                                                        and v.enqueued_at > x.enqueued_at)):
                        add_into(out, v.requests)
        return out

    def reclaims(self, x: Decision, short: Collection[Limit]) -> str | None:
        """The quota below which ``x``, short of the limits ``short``, may
        reclaim from quotas above their min (within its quota's min, its own
        jobs it may preempt gone, and short of a resource that min
        guarantees: ``find_victims``), if it may."""
        assert x.quota is not None
        if not any(self.usage.borrow_counted(x.quota, name) for _, name, _ in short) or \
                not within_min_after(self.usage, x.quota, x.requests, self.own_freed(x)):
            return None
        return min((at for at, _, _ in short), key=lambda at: at.count("/"))

    def borrowing(self) -> list[tuple[str, Resources, Resources]]:
        """The quotas above their min with running jobs: each, what it
        borrows, and what its preemptible jobs hold."""
        if self._borrowing[0] != self.state:
            out = []
            for leaf, jobs in self.running.items():
                above = self.usage.above_min(leaf) if jobs else {}
                if above:
                    held: Resources = {}
                    for v in jobs:
                        if v.key not in self.fleet.not_preemptible:
                            add_into(held, v.requests)
                    out.append((leaf, above, held))
            self._borrowing = (self.state, out)
        return self._borrowing[1]

    def victims(self, x: Decision) -> list[Decision]:
        """The running jobs ``x`` could evict to get in: those of its quota it
        may preempt, and, if it may reclaim, those of other quotas above their
        min below the limits it is short of (``find_victims``)."""
        assert x.quota is not None
        np_keys = self.fleet.not_preemptible
        policy = self.fleet.preemption(x.quota)
        out = [v for v in self.running.get(x.quota, ())
               if v.key not in np_keys
               and may_evict(policy, v.priority, v.enqueued_at, x.priority, x.enqueued_at)]
        widest = self.reclaims(x, self.short(x, every=True))
        if widest is not None:
            out.extend(v for leaf, above, _ in self.borrowing()
                       if leaf != x.quota and _under(leaf, widest)
                       and any(x.requests.get(r) for r in above)
                       for v in self.running[leaf] if v.key not in np_keys)
        return out

    def _alike(self, x: Decision, what: str) -> tuple[object, ...]:
        """Jobs alike get the same answers on the same state (the enqueue time
        counts where the policy compares it: ``may_evict``)."""
        newer = self.fleet.preemption(x.quota or "") is \
            PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY
        return (what, self.state, x.quota, x.priority, x.enqueued_at if newer else "",
                x.key in self.fleet.not_preemptible, tuple(x.requests.items()))

    def raises(self, x: Decision) -> bool:
        """Does a limit raised bind ``x``? (If none does, it waits as it did:
        what it could evict let it in no more than in the cycle.)"""
        key = (x.quota, tuple(x.requests), x.key in self.fleet.not_preemptible)
        known = self._raises.get(key)
        if known is None:
            known = self._raises[key] = any(
                limit in self.raised for limit, _ in self.fleet.limits_of(x))
        return known

    def gets_in(self, x: Decision, short: list[tuple[Limit, int]]) -> bool:
        """Would ``x``, short of the limits ``short`` (each by as much as it
        gives), fit with all it could evict gone? (Each of them, less what the
        jobs below it hold.)"""
        key = self._alike(x, "in")
        known = self._asked.get(key)
        if known is None:
            known = self._asked[key] = self._gets_in(x, short)
        return known

    def _gets_in(self, x: Decision, short: list[tuple[Limit, int]]) -> bool:
        assert x.quota is not None
        if any(limit[2] == MIN for limit, _ in short):
            return False  # (no eviction lowers the non-preemptible usage)
        own = self.own_freed(x)
        widest: str | None = ""  # (not asked yet: only when its own jobs are not enough)
        for (at, name, _), excess in short:
            excess -= own.get(name, 0)
            if excess <= 0:
                continue
            if widest == "":
                widest = self.reclaims(x, [limit for limit, _ in short])
            if widest is None or not _under(at, widest) or excess > sum(
                    held.get(name, 0) for leaf, above, held in self.borrowing()
                    if leaf != x.quota and _under(leaf, at)
                    and any(x.requests.get(r) for r in above)):
                return False
        return True

    def plan(self, x: Decision) -> list[Decision] | None:
        """The running jobs ``x``, held back, would evict to get in, if it
        would: as ``find_victims`` takes them, in rank order (those of other
        quotas first, those that borrow up to the quota they share with it
        first, then the lowest priority, then the last admitted), each under a
        limit it is still short of; then given back, the last first, each it can
        do without; one alone, if one does."""
        key = self._alike(x, "plan")
        if key not in self._plans:
            self._plans[key] = self._plan(x)
        return self._plans[key]

    def _plan(self, x: Decision) -> list[Decision] | None:
        usage = self.usage
        ran = self._ran
        out = sorted(self.victims(x), key=lambda v: (
            v is self.d, v.key in ran, "" if v.key in ran else v.admitted_at or "",
            tuple(v.key)), reverse=True)  # (the last admitted first, ``d`` once it runs,
        # then those run here, admitted by the cycle that runs them, at its time, then
        # the last by key: ``most_recent_first``)
        wanted = [r for r, n in x.requests.items() if n > 0]
        out.sort(key=lambda v: (v.quota == x.quota, v.quota != x.quota and borrows_lent(
            usage, x.quota or "", v.quota or "", wanted)[0], v.priority))
        taken: list[Decision] = []

        def take(v: Decision) -> None:
            usage.release(v.quota or "", v.requests, preemptible=True)

        def give(v: Decision) -> None:
            usage.charge(v.quota or "", v.requests, preemptible=True)

        def within(victims: list[Decision]) -> bool:  # (a plan that reclaims leaves its
            # quota within its min, its own jobs evicted if need be: ``find_victims``)
            return all(v.quota == x.quota for v in victims) or \
                within_min_after(usage, x.quota or "", x.requests)

        try:
            while True:
                at = self.short(x)
                if at:
                    if at[0][2] != MAX:
                        return None
                    v = next((v for v in out if all(v is not y for y in taken)
                              and _under(v.quota, at[0][0]) and v.requests.get(at[0][1])
                              # (a quota back at its min has no more to reclaim)
                              and (v.quota == x.quota or usage.above_min(v.quota or ""))),
                             None)
                elif not within(taken):
                    v = next((v for v in out if all(v is not y for y in taken)
                              and v.quota == x.quota), None)
                else:
                    break
                if v is None:
                    return None
                take(v)
                taken.append(v)
            for v in reversed(taken[:-1]):
                give(v)
                rest = [y for y in taken if y is not v]
                if self.short(x) or not within(rest):
                    take(v)
                else:
                    taken = rest
            if len(taken) > 1:  # (one alone that does)
                for v in taken:
                    give(v)
                kept, taken = taken, []
                for v in out:
                    take(v)
                    if not self.short(x) and within([v]):
                        taken = [v]
                        break
                    give(v)
                if not taken:
                    taken = kept
                    for v in taken:
                        take(v)
            return list(taken)
        finally:
            for v in taken:
                give(v)

    def evict(self, victims: Collection[Decision], requeue: bool = True) -> None:
        """The running jobs ``victims`` leave (``requeue``: back to their queue,
        keeping their place, to be tried again in their turn)."""
        for v in victims:
            assert v.quota is not None
            self.usage.release(v.quota, v.requests, preemptible=True)
            self.running[v.quota] = [y for y in self.running[v.quota] if y is not v]
            self._changed[v.quota] = self._changed.get(v.quota, 0) + 1
            self.shares.pop(v.quota, None)
            queue = self.queues.get(v.quota)
            if requeue and queue is None and _under(v.quota, self.top):
                queue = self.queues[v.quota] = []  # (a queue none waited in before)
            if requeue and queue is not None:  # (below ``top``: its queue is asked)
                order = _order(v)
                at = next((i for i, y in enumerate(queue) if _order(y) < order), len(queue))
                queue.insert(at, v)  # (in reverse order, as the queue is kept)
                if at == len(queue) - 1:  # (its new head)
                    self.push(v.quota)

    def before(self) -> _Served:
        """The quotas at ``d``'s turn, and the jobs that ran before it."""
        served = _Served(used=self.usage.used, np_used=self.usage.np_used)
        d = self.d
        for leaf in sorted(self.queues):
            self.push(leaf)
        while (turn := self.pop()) is not None:
            leaf, x = turn
            if x is d:
                break
            short = self.shortfalls(x)
            held = [limit for limit, _ in short]
            self.held_at.update(held)
            victims = [] if not held else self.plan(x) if self.raises(x) and self.gets_in(
                x, short) else None
            if victims is not None:
                self.evict(victims)
                self.run(x)
                if x.phase is Phase.ADMITTED:
                    pass  # (evicted, back in its queue and in again: it ran before)
                elif x.phase is Phase.INADMISSIBLE:
                    served.let_in.append(x)
                elif leaf == d.quota:
                    served.ran += 1
                else:
                    served.others.append(x)
                if served.count >= SERVED_FIRST_MOST:
                    served.capped = True
                    break
            elif self.fleet.strict_fifo(leaf):
                if leaf == d.quota:
                    served.stuck = (x, held[0])
                    return served
                self.held.append(x)
                continue  # (its queue waits behind it)
            else:
                self.held.append(x)
            self.push(leaf)
        served = self.at_turn = _Served(
            used={p: dict(u) for p, u in self.usage.used.items() if _under(p, self.top)},
            np_used={p: dict(u) for p, u in self.usage.np_used.items() if _under(p, self.top)},
            ran=served.ran, others=served.others, let_in=served.let_in, capped=served.capped)
        if d.key not in self.fleet.not_preemptible and not served.capped:  # (else never a
            # victim, or what comes after it is not known)
            self.limits = _values(self.fleet.tree, served, d.requests, self.raised)
            self.borrows = not within_min_after(self.usage, d.quota or "", d.requests)
            self.run(d)
        return served

    def lift(self, more: Collection[Limit]) -> bool:
        """Lift the limits ``more`` too, if no job before ``d`` was short of
        one (``before`` would run as it did); else say it would not."""
        more = _with_root(self.fleet.tree, more)
        if self.held_at & more:
            return False
        self.raised = {*self.raised, *more}
        self._raises.clear()
        if self.limits is not None:
            self.limits = _values(self.fleet.tree, self.at_turn, self.d.requests, self.raised)
        return True

    def takers(self) -> list[Decision]:
        """Once ``d`` runs (after ``before``), the limits raised to their values
        (full with it): the jobs the cycle tries after it (those behind it in
        its own queue too: one may free room for a job ahead of it), or again,
        that would evict it to get in, short of a limit of its path it fills: of
        other quotas, within their min, reclaiming the room from its quota
        (above its min); of its own, by priority, the room they waited for
        freed by evictions elsewhere."""
        d = self.d
        if self.limits is None:
            return []
        path = {node.path for node in self.fleet.tree.ancestry(d.quota or "")}

        def fills(held: list[Limit]) -> bool:  # (evicting it helps: it holds what is short)
            return any(at in path and d.requests.get(name, 0) for at, name, _ in held)

        later: deque[Decision] = deque()  # (the rest of the pass, then those that waited
        self.push(d.quota or "")  # before it, again; the jobs after it in its own queue too)
        while (turn := self.pop()) is not None:
            later.append(turn[1])
            self.push(turn[0])
        later.extend(self.held)
        # (its own queue's that waited before it, tried again as room frees)
        again = {x.key: x for x in self.held if x.quota == d.quota}
        out: dict[JobKey, Decision] = {}
        tries = 2 * (len(later) + len(again)) + 1  # (evictions may chain: a bound)
        while later and tries:
            x, tries = later.popleft(), tries - 1
            if any(y is x for y in self.running.get(x.quota or "", ())):
                continue  # (in already: it was asked again before its turn came)
            held = self.short(x, every=True)
            if held and x.key not in again and not fills(held):
                continue  # (what it could evict is no matter to it)
            if held and (self.own_freed(x) or self.reclaims(x, held) is not None):
                victims = self.plan(x)
                if victims is None:
                    continue
                if any(v is d for v in victims):  # (its place taken)
                    if fills(held):
                        out.setdefault(x.key, x)
                    continue
                self.evict(victims, requeue=False)  # (they leave, to be tried again)
                later.extend(victims)
                later.extend(y for key, y in again.items() if key != x.key)
            elif held:
                continue
            self.run(x)
            again.pop(x.key, None)
        return list(out.values())


def _before_it(served: _Served, quota: str | None = None) -> str:
    """The jobs the cycle runs before a waiting job (``_Turns.before``), in
    words: those ahead of it in its queue, and those of other queues (below
    ``quota``, when given), named."""
    parts = [f"the {served.ran} job(s) ahead of it in its queue"] if served.ran else []
    others = [x for x in served.others if quota is None or _under(x.quota, quota)]
    if others:
        names = first_of([f"{x.key.namespace}/{x.key.name}" for x in others], 3)
        parts.append(f"the {len(others)} job(s) of other queues"
                     f"{'' if quota is None else ' under ' + quota} that the cycle takes "
                     f"before it ({names})")
    let_in = [x for x in served.let_in if quota is None or _under(x.quota, quota)]
    if let_in:
        names = first_of([f"{x.key.namespace}/{x.key.name}" for x in let_in], 3)
        parts.append(f"the {len(let_in)} job(s) Inadmissible now that the limits raised let "
                     f"in before it ({names})")
    return " and ".join(parts)


def _raise_mins(tree: QuotaTree, d: Decision, told: Mapping[tuple[str, str], int],
                served: _Served, np_used: Mapping[str, Resources],
                maxes_told: Mapping[tuple[str, str], int]) -> str:
    """``raise the cpu min of quota root/a to 3 (...), and with it ...``: the
    mins ``told`` a non-preemptible job needs (with the non-preemptible jobs
    served first, ``served``), and what raising them needs of the mins above
    them and of the maxes (``_mins_raised``), each to its value."""
    path = tree.ancestry(d.quota or "")
    mins, maxes = _mins_raised(tree, path, told)
    for (at, name), value in maxes_told.items():  # (the root's min is its max)
        if tree.nodes[at].parent is None and (at, name) in mins:
            mins[(at, name)] = max(mins[(at, name)], value)

    def fleet(at: str, name: str) -> str:
        node = tree.nodes[at]
        if node.parent is None:
            return (" (its min is its max, the fleet's: raise both with the clusters' capacity, "
                    "or lower a min under it)")
        value = maxes.get((at, name), 0)
        return (f" and its max with it (a min may not be more than the max, "
                f"{_q(name, node.max[name])} now)"
                if value > max(node.max.get(name, 0), maxes_told.get((at, name), 0)) else "")

    said = []
    for node in path:
        for name in sorted(n for at, n in told if at == node.path):
            value = told[(node.path, name)]
            have = np_used.get(node.path, {}).get(name, 0)
            first = served.np_used[node.path].get(name, 0)
            more = (f", {_q(name, first)} with {_before_it(served, node.path)}, served first"
                    if first > have else "")
            said.append(f"the {name} min of quota {node.path} to "
                        f"{_q(name, max(value, mins[(node.path, name)]))} ("
                        f"{_q(name, node.min.get(name, 0))} now, {_q(name, have)} used by "
                        f"non-preemptible jobs{more}){fleet(node.path, name)}")
    then = [f"the {name} min of {at} to {_q(name, value)}{fleet(at, name)}"
            for node in path for (at, name), value in sorted(mins.items())
            if at == node.path and (at, name) not in told]
    return ("raise " + listed(said, " and ") + (
        f", and with it {listed(then, ' and ')} (the mins of a quota's children may not add "
        f"up to more than its own)" if then else ""))


def _np_usage(tree: QuotaTree, admitted: Collection[Decision],
              not_preemptible: Collection[JobKey]) -> dict[str, Resources]:
    """The quotas' usage by the running jobs that are not preemptible."""
    out: dict[str, Resources] = {p: {} for p in tree.nodes}
    for x in admitted:
        if x.key in not_preemptible and x.quota in tree.nodes:
            for node in tree.ancestry(x.quota):
                add_into(out[node.path], x.requests)
    return out


def _raised(tree: QuotaTree, mins: Mapping[tuple[str, str], int],
            maxes: Mapping[tuple[str, str], int]) -> QuotaTree:
    """``tree`` with the ``mins`` and ``maxes`` ((quota, resource) -> value)
    raised to their values."""
    nodes = dict(tree.nodes)
    for limits, bound in ((mins, MIN), (maxes, MAX)):
        for (at, name), value in limits.items():
            node = nodes[at]
            if bound == MIN:
                nodes[at] = replace(node, min={**node.min, name: max(value, node.min.get(name, 0))})
            else:
                nodes[at] = replace(node, max={**node.max, name: max(value, node.max.get(name, 0))})
    return replace(tree, nodes=nodes)


def _mins_needed(limits: Collection[tuple[QuotaNode, str, str]], req: Mapping[str, int],
                 served: _Served) -> dict[tuple[str, str], int]:
    """The mins of ``limits`` that a non-preemptible request ``req`` needs
    raised, with the jobs ``served`` first: (quota, resource) -> value."""
    out = {}
    for node, name, bound in limits:
        if bound == MIN:
            value = served.level((node.path, name, MIN)) + req[name]
            if value > node.min.get(name, 0):
                out[(node.path, name)] = value
    return out


def _mins_raised(tree: QuotaTree, path: Sequence[QuotaNode], told: Mapping[tuple[str, str], int]
                 ) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    """The mins and maxes of quotas ``path`` (leaf first) that raising the
    mins ``told`` ((quota, resource) -> value) raises with them: the mins of
    a quota's children may not add up to more than its own (a min not
    written is 0), a min may not be more than its max, and the root's min is
    its max. The mins (``told`` among them) and the maxes, each to its value."""
    mins = dict(told)
    maxes: dict[tuple[str, str], int] = {}
    for name in sorted({name for _, name in told}):
        for node in path:
            value = mins.get((node.path, name))
            if value is None:
                continue
            if (name in node.max and value > node.max[name]) or node.parent is None:
                maxes[(node.path, name)] = max(value, node.max.get(name, 0))
            if node.parent is None:
                continue
            parent = tree.nodes[node.parent]
            children = sum(mins.get((c, name), tree.nodes[c].min.get(name, 0))
                           for c in parent.children)
            if children > mins.get((parent.path, name), parent.min.get(name, 0)):
                mins[(parent.path, name)] = children
    return mins, maxes


def _never_holds(req: Mapping[str, int], cluster: MemberCluster) -> str | None:
    """Why ``cluster`` could not hold the job's total ``req`` even with nothing
    else on it (its nodes' allocatable, less what it reserves), if so."""
    for name in sorted(req):
        if name in (PODS, MAX_JOBS) or req[name] <= 0:
            continue
        has = cluster_capacity((cluster,), name)
        if has <= 0:
            return f"no {name} at all ({_q(name, req[name])} needed): it never holds this job"
        if has < req[name]:
            return (f"{name} {_q(name, has)} in all, even empty ({_q(name, req[name])} needed): "
                    f"it never holds this job")
    return None


def _users(path: str, name: str, admitted: Collection[Decision], own: str | None) -> list[str]:
    """The jobs of other quotas that use the most ``name`` of quota ``path``
    (a quota above the job's own), named: what holds the limit it waits on."""
    under = [x for x in admitted if x.quota is not None and x.quota != own
             and (x.quota == path or x.quota.startswith(path + "/")) and x.requests.get(name)]
    if not under:
        return []
    under.sort(key=lambda x: (-x.requests.get(name, 0), str(x.key)))
    names = first_of([f"{x.key.namespace}/{x.key.name} ({x.quota}, "
                      f"{_q(name, x.requests[name])})" for x in under], 5)
    return [f"jobs of other quotas using quota {path} {name}: {names}"]


def _higher_priority(d: Decision, shortfalls: Mapping[str, int], holders: Collection[Decision],
                     preemption: PreemptionPolicy, not_preemptible: Collection[JobKey],
                     room: Callable[[list[Decision]], bool] | None = None,
                     for_room: bool = False, classes: Classes | None = None) -> str:
    """``; a priority above N would let it preempt ...``, when one would: its
    quota lets jobs preempt, the preemptible jobs of its quota of priority N
    or less free what it lacks at every level (they count in each), and, when
    no cluster has room for it now, ``room`` says one would with them gone;
    else nothing (a higher priority would not help), or, when one would free
    the quota but no cluster, that it would not let it in. ``for_room``: its
    quota has room (no ``shortfalls``): ``room`` alone is asked."""
    if preemption is PreemptionPolicy.NEVER or not (shortfalls or (for_room and room)):
        return ""
    victims = sorted((x for x in holders if x.key not in not_preemptible),
                     key=lambda x: (x.priority, str(x.key)))
    freed: Resources = {}
    roomless = False  # a level freed the quota, but no cluster
    for i, x in enumerate(victims):
        add_into(freed, x.requests)
        if i + 1 < len(victims) and victims[i + 1].priority == x.priority:
            continue  # (a priority above x's passes over all of that priority)
        if not all(freed.get(name, 0) >= missing for name, missing in shortfalls.items()):
            continue
        if room is not None and not room(victims[:i + 1]):
            roomless = True
            continue  # (more of them gone, a cluster may have room)
        if x.priority < d.priority:
            return ""  # (it outranks them already: something else holds it back)
        return (f"; a priority above {x.priority} would let it preempt "
                f"{_fewest(victims[:i + 1], shortfalls, room)} of them"
                f"{_class_above(x.priority, classes) if classes is not None else ''}")
    if roomless:
        return ("; a higher priority would not let it in: with those it could preempt gone, "
                "no member cluster would have room for it (below)")
    return ""


def _class_above(least: int, classes: Classes) -> str:
    """`` (PriorityClass x has N)``: the lowest class above ``least`` (else a
    WorkloadPriorityClass, by its label), or that the fleet has none. For a
    job whose label names its WorkloadPriorityClass, which decides its
    priority whatever PriorityClass its pods name, a WorkloadPriorityClass
    only, or a PriorityClass once the label is taken off."""
    label = "kueue.x-k8s.io/priority-class"
    kinds = (("PriorityClass", classes[0], ""),
             ("WorkloadPriorityClass", classes[1], f", by the job's label {label}"))
    if classes[2]:
        kinds = (("WorkloadPriorityClass", classes[1], f", named by the job's label {label}"),
                 ("PriorityClass", classes[0], f": name it in its pods, and take off the "
                                               f"job's label {label}, which decides its "
                                               f"priority now"))
    for kind, named, how in kinds:
        above = min(((value, name) for name, value in named.items() if value > least),
                    default=None)
        if above is not None:
            return f" ({kind} {above[1]} has {above[0]}{how})"
    if classes[2]:
        return (f" (no WorkloadPriorityClass nor PriorityClass of the fleet has one: add a "
                f"WorkloadPriorityClass, and name it by the job's label {label})")
    return " (no PriorityClass of the fleet has one: add one)"


def _room_without(req: Mapping[str, int], short: Collection[str],
                  cluster_free: Mapping[str, Resources], victims: Collection[Decision]) -> bool:
    """Would one of the clusters ``short`` of room for the job's total ``req``
    have it in its free sum with ``victims`` gone from it?"""
    for name in short:
        free = dict(cluster_free.get(name, {}))
        for x in victims:
            if x.cluster == name:
                add_into(free, x.requests)
        if all(free.get(r, 0) >= v for r, v in req.items() if r not in (PODS, MAX_JOBS)):
            return True
    return False


def _fewest(victims: list[Decision], shortfalls: Mapping[str, int],
            room: Callable[[list[Decision]], bool] | None = None) -> int:
    """How few of ``victims`` (in the order preemption takes them), which
    together free ``shortfalls`` (and, with ``room``, leave a cluster room
    for the job), preemption needs to evict: the smallest such set, as
    ``find_victims`` looks for it; when there are too many sets to try, those
    taken in order until they do, less those the rest can do without."""
    def frees(chosen: Sequence[Decision]) -> bool:
        freed: Resources = {}
        for x in chosen:
            add_into(freed, x.requests)
        return all(freed.get(name, 0) >= missing for name, missing in shortfalls.items())

    def enough(chosen: Sequence[Decision]) -> bool:
        return frees(chosen) and (room is None or room(list(chosen)))

    tries, packs = FEWEST_TRIES, FEWEST_PACKS
    for size in range(1, len(victims)):  # (all of them do: the caller saw to it)
        for chosen in itertools.combinations(victims, size):
            tries -= 1
            if tries < 0 or packs < 0:
                return _fewest_in_order(victims, enough)
            if frees(chosen):
                packs -= room is not None
                if room is None or room(list(chosen)):
                    return size
    return len(victims)


def _fewest_in_order(victims: list[Decision], enough: Callable[[Sequence[Decision]], bool]
                     ) -> int:
    """``_fewest`` when there are too many sets to try: ``victims`` taken in
    order until they are ``enough``, less those the rest can do without."""
    taken: list[Decision] = []
    for x in victims:
        taken.append(x)
        if enough(taken):
            break
    for x in reversed(taken[:-1]):
        rest = [y for y in taken if y is not x]
        if enough(rest):
            taken = rest
    return len(taken)


# sets of victims _fewest tries (and packs onto the clusters) before it counts as preemption
# would were it to take them in order
FEWEST_TRIES, FEWEST_PACKS = 5000, 200


def explain_decision(decision: Decision, *, decisions: list[Decision], tree: QuotaTree | None,
                     quota_used: Mapping[str, Resources], cluster_free: Mapping[str, Resources],
                     clusters: Mapping[str, MemberCluster],
                     policy: PreemptionPolicy = PreemptionPolicy.LOWER_PRIORITY,
                     preemptible: bool = True, candidates: Collection[str] | None = None,
                     failover: Failover | None = None,
                     deleted_when: tuple[bool, bool] = (False, False),
                     not_preemptible: Collection[JobKey] = (),
                     fits: Fits | None = None, strict_fifo: bool = False,
                     settings: FleetSettings | None = None,
                     admits: Admits | None = None,
                     ruled_out: Mapping[str, str] | None = None,
                     classes: Classes | None = None) -> list[str]:
    """``explain`` for one of a cycle's ``decisions``, the jobs its quota admitted
    found among them, and those that wait sparing a reclaimer and could evict it
    (by its quota's preemption ``policy``; never when it is not ``preemptible``),
    borrowing (see ``find_victims``), and those waiting in other queues;
    ``settings``: the fleet's (the other queues' strategies and weights);
    ``admits``, ``ruled_out`` and ``classes``: ``explain``'s."""
    d = decision
    admitted = [x for x in decisions if x.phase is Phase.ADMITTED and x.key != d.key]
    holders = [x for x in admitted if x.quota == d.quota]
    ahead = [x for x in decisions if d.position and x.quota == d.quota
             and x.phase is Phase.QUEUED and x.position and x.position < d.position]
    sparing: list[Decision] = []
    reclaimable: list[Decision] = []
    spares_own = True
    within_min: str | None = None
    if d.phase is Phase.QUEUED and tree is not None and d.quota in tree.nodes:
        usage = final_usage(tree, quota_used)
        running = {str(x.key): x for x in decisions if x.phase is Phase.ADMITTED}

        def returns(name: str | None) -> bool:
            """Could the running job ``name``, evicted, reclaim in return (its
            quota within its min with it back, once the jobs of its own of
            lower priority are out: ``could_reclaim_back``)? Only then is it
            spared."""
            x = running.get(name or "")
            if x is None or x.quota is None or x.quota not in usage.used:
                return True
            released = dict(x.requests)
            for y in decisions:
                if y.phase is Phase.ADMITTED and y.quota == x.quota and y.priority < x.priority:
                    add_into(released, y.requests)
            return within_min_after(usage, x.quota, x.requests, released)

        spares_own = returns(d.preempted_by)
        if within_min_after(usage, d.quota, d.requests):  # (it may reclaim: see may_reclaim)
            reclaimable = [x for x in admitted if x.quota not in (None, d.quota)
                           and x.quota in usage.used and usage.above_min(x.quota)
                           and x.key not in not_preemptible]
        reclaimer = running.get(d.preempted_by or "")
        if reclaimer is not None and reclaimer.quota in usage.used and \
                not usage.above_min(reclaimer.quota):
            within_min = reclaimer.quota
        if preemptible:
            sparing = [x for x in decisions if x.quota == d.quota and x.phase is Phase.QUEUED
                       and x.key != d.key and x.preempted_by
                       and x.preempted_by != d.preempted_by
                       and (x.preemption_reason or "").startswith(RECLAIMING)
                       and would_retake(usage, d.quota, policy, priority=d.priority,
                                        enqueued_at=d.enqueued_at,
                                        waiting=(x.priority, x.enqueued_at, x.requests))
                       and returns(x.preempted_by)]
    return explain(d, tree=tree, quota_used=quota_used, cluster_free=cluster_free,
                   clusters=clusters, admitted_in_quota=holders, sparing_in_quota=sparing,
                   candidates=candidates, failover=failover, spares_own=spares_own,
                   reclaimer_within_min=within_min,
                   deleted_when=deleted_when, ahead_in_queue=ahead, admitted=admitted,
                   preemption=policy,
                   not_preemptible=not_preemptible, fits=fits, reclaimable=reclaimable,
                   strict_fifo=strict_fifo,
                   held_out=[x for x in decisions if x.phase is Phase.INADMISSIBLE
                             and x.quota is not None],
                   preemptible=preemptible, settings=settings, admits=admits,
                   ruled_out=ruled_out, classes=classes,
                   waiting=[x for x in decisions if d.position and x.phase is Phase.QUEUED
                            and x.position and (x.quota != d.quota or x.position > d.position)])
