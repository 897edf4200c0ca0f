"""Why a job waits, and what would let it run: advice from a cycle's final state.

Pure: it reads a ``Decision`` and the cycle's final quota usage and cluster
free capacity, and returns sentences a person can act on.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Mapping, Sequence

from reconciler.core.cycle import BLOCKED_BEHIND, FITS_NO_CLUSTER, FITS_NO_CLUSTER_EMPTY
from reconciler.core.gang import NO_NODE_LISTS, NO_NODE_MATCHES, cluster_capacity
from reconciler.core.model import (
    Decision,
    Failover,
    JobKey,
    MemberCluster,
    Phase,
    PreemptionPolicy,
)
from reconciler.core.preemption import RECLAIMING, within_min_after, would_retake
from reconciler.core.problems import first_of, listed
from reconciler.core.quota import (
    NON_PREEMPTIBLE_MIN,
    PREEMPTIBLE_LABEL,
    QuotaNode,
    QuotaTree,
    QuotaUsage,
    min_limited,
)
from reconciler.core.resources import MAX_JOBS, PODS, Resources, add_into, format_quantity

# Why a waiting job would not fit on each candidate cluster where it would not, with
# the running jobs given gone; ``None``: with every job gone, the clusters empty
# (``CycleResult.cluster_fits``, for the job)
Fits = Callable[[Collection[Decision] | None], Mapping[str, str]]


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
            strict_fifo: bool = False, held_out: Collection[Decision] = ()) -> list[str]:
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
    its quota (a limit raised for it may let one in, ahead of it)."""
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
        return lines
    req = d.requests
    advice: list[str] = []
    too_big = False  # a limit the job breaks alone: preempting cannot help
    short_of_slots = False
    shortfalls: dict[str, int] = {}  # resource -> the most missing at any level
    limit_lines: list[str] = []
    raised: dict[tuple[str, str], int] = {}  # (quota, resource) -> the most it is told
    users: list[str] = []  # the jobs of other quotas holding a limit above its own
    also: list[str] = []  # limits the jobs ahead of it would fill before it, but not it alone
    # StrictFIFO: each limit a job ahead would stop the queue at, with the first such job
    heads: dict[tuple[str, str], Decision] = {}
    if tree is not None and d.quota in tree.nodes:
        path = tree.ancestry(d.quota)
        short_at = {(node.path, name) for node in path for name in node.max
                    if req.get(name, 0) > 0 and quota_used.get(node.path, {}).get(name, 0)
                    + req[name] > node.max[name]}
        # the usage once the jobs ahead of it that would run before it ran, those
        # limits raised (a job ahead that some other limit holds back is passed, or
        # in a StrictFIFO queue stops it: that limit is raised too), and then each
        # limit they would fill before it raised too, until none is more: raised
        # as told, those jobs run, and it after them
        raising = set(short_at)
        while True:
            served, ran, stuck = _served_first(ahead_in_queue, path, quota_used, raising,
                                               strict_fifo)
            fills = {(node.path, name) for node in path for name, limit in node.max.items()
                     if 0 < req.get(name, 0) <= limit
                     and served[node.path].get(name, 0) + req[name] > limit} - raising
            if stuck is not None:
                x, (at, name) = stuck
                heads.setdefault((at, name), x)
                fills.add((at, name))
            if not fills:
                break
            raising |= fills
        for node in path:
            used = quota_used.get(node.path, {})
            for name in sorted(node.max):
                need = req.get(name, 0)
                if not need:
                    continue
                have = used.get(name, 0)
                limit = node.max[name]
                first = served[node.path].get(name, 0)
                if need <= limit and have + need <= limit < first + need:
                    also.append(f"quota {node.path} {name} max raised to "
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
                    more = (f" ({_q(name, first + need)} with the {ran} job(s) ahead of it in "
                            f"its queue, served first)" if first > have else "")
                    whole = (" (the root's max is the fleet's: raise it with the clusters' "
                             "capacity)" if node.parent is None else "")
                    raised[(node.path, name)] = max(have + need, first + need)
                    limit_lines.append(
                        f"quota {node.path} {name}: {_q(name, have)} used of max "
                        f"{_q(name, limit)}; {_q(name, missing)} more must be freed, or max "
                        f"raised to {_q(name, have + need)}{more}{whole}")
                    if node.path != d.quota:
                        users.extend(_users(node.path, name, admitted, d.quota))
    held_by_min = NON_PREEMPTIBLE_MIN in d.reason
    if len(limit_lines) > 1 and not too_big:  # (each is short: one raised is not enough)
        advice.append("beyond that min, it is also short at each of these:" if held_by_min
                      else "it is short at each of these (room at all of them lets it in):")
        advice.extend(NESTED + line for line in limit_lines)
    else:
        advice.extend(limit_lines)
    advice.extend(users)
    if strict_fifo and raised and not too_big and tree is not None:
        let_in = _let_in_ahead(d, held_out, tree, raised)
        if let_in:
            names = first_of([f"{x.key.namespace}/{x.key.name}" for x in let_in], 3)
            advice.append(f"its queue {d.quota} is StrictFIFO: those limits raised would also "
                          f"bring {names} (Inadmissible now: too big for them) into the queue, "
                          f"ahead of it, where a head that waits holds back every job behind "
                          f"it")
    if heads and shortfalls and not too_big and tree is not None:
        # (those of the limits it needs itself are told with them)
        told = [f"{x.key.kind} {x.key.namespace}/{x.key.name}, ahead of it, waits for quota "
                f"{at} {name}: raise its max to {_q(name, served[at].get(name, 0))} ("
                f"{_q(name, tree.nodes[at].max[name])} now, "
                f"{_q(name, quota_used.get(at, {}).get(name, 0))} used)"
                for (at, name), x in sorted(heads.items()) if not req.get(name, 0)]
        if told:
            advice.append(f"its queue {d.quota} is StrictFIFO, where a job ahead that waits "
                          f"holds back every job behind it: {listed(told, ' and ')}")
    if also and shortfalls and not too_big:
        advice.append(f"with the {ran} job(s) ahead of it in its queue, served first, it "
                      f"would also need {listed(also, ' and ')}: else those run and it still "
                      f"waits")
    if short_of_slots and tree is not None and MAX_JOBS not in tree.nodes[d.quota or ""].min:
        advice.append(f"the min of quota {d.quota} names no {MAX_JOBS}, so it guarantees no "
                      f"job slot: the job waits for one rather than reclaim it from another "
                      f"quota")
    if held_by_min:  # (its own min is the bar; dropping the label helps only if max has room)
        fixes = ["raise that min" + _parents_min_too(tree, d.quota, req)]
        if not shortfalls:
            fixes.append("let the job be preempted (drop the label)")
        if d.phase is not Phase.INADMISSIBLE:  # (no job leaving would let it in)
            fixes.append("wait for those jobs to end")
        advice.insert(0, f"it is not preemptible ({PREEMPTIBLE_LABEL}: \"false\"), so it runs "
                         f"only within the min of quota {d.quota}, with the other "
                         f"non-preemptible jobs there: {listed(fixes, ', or ')}")
    places = sorted(clusters if candidates is None else {n for n in candidates if n in clusters})
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
    if advice and admitted_in_quota and not too_big and not held_by_min:
        holders = sorted(admitted_in_quota, key=lambda x: (x.priority, x.admitted_at or ""))
        names = first_of([f"{x.key.namespace}/{x.key.name} (priority {x.priority})"
                          for x in holders], 5)

        def room(victims: list[Decision]) -> bool:
            """Would a cluster have room for it with ``victims`` gone?"""
            if fits is not None:
                return len(fits(victims)) < len(places)
            return _room_without(req, short, cluster_free, victims)

        # (the quota is not all: with no cluster having room, victims must leave one)
        higher = _higher_priority(d, shortfalls, admitted_in_quota, preemption,
                                  not_preemptible,
                                  room if places and len(short) == len(places) else None)
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
    blocked = d.phase is Phase.QUEUED and d.reason.startswith(BLOCKED_BEHIND)
    if blocked:
        head = d.reason[len(BLOCKED_BEHIND):].partition(" at the head of ")[0]
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


def _parents_min_too(tree: QuotaTree | None, quota: str | None,
                     req: Mapping[str, int]) -> str:
    """What raising ``quota``'s min by as much as ``req`` needs of its parents,
    for the resources a non-preemptible job there must fit within its min
    (``min_limited``): the mins of a quota's children may not add up to more
    than its own (a min not written is 0), and the root's is the fleet's."""
    if tree is None or quota not in tree.nodes:
        return ""
    node = tree.nodes[quota]
    wanted = [name for name in min_limited(node) if req.get(name, 0) > 0]
    short = []
    while node.parent is not None:
        parent = tree.nodes[node.parent]
        names = [name for name in wanted if parent.min.get(name, 0) - sum(
            tree.nodes[c].min.get(name, 0) for c in parent.children) < req[name]]
        if not names:
            break
        short.append(f"the {', '.join(names)} min of {parent.path}" + (
            " (its min is its max, the fleet's: raise both with the clusters' capacity, or "
            "lower a min under it)" if parent.parent is None else ""))
        node = parent
    if not short:
        return ""
    return (f", and with it {listed(short, ' and ')} (the mins of a quota's children may not "
            f"add up to more than its own)")


def _served_first(ahead: Collection[Decision], path: Sequence[QuotaNode],
                  quota_used: Mapping[str, Resources], raised: Collection[tuple[str, str]],
                  strict: bool = False
                  ) -> tuple[dict[str, Resources], int,
                             tuple[Decision, tuple[str, str]] | None]:
    """The usage of each quota of ``path`` (a job's ancestry) once the jobs
    ``ahead`` of it in its queue ran, in queue order, each that the limits let
    in then (those ``raised``, (quota, resource), aside: it passes any other,
    as a BestEffortFIFO queue does); how many ran; and, in a ``strict``
    (StrictFIFO) queue, the first job ahead that another limit holds back,
    with that limit (quota, resource): it stops the queue there, the job
    behind it included."""
    state = {node.path: dict(quota_used.get(node.path, {})) for node in path}
    ran = 0
    for x in sorted(ahead, key=lambda x: x.position or 0):
        held = next(((node.path, name) for node in path
                     for name, limit in sorted(node.max.items())
                     if x.requests.get(name, 0) and (node.path, name) not in raised
                     and state[node.path].get(name, 0) + x.requests[name] > limit), None)
        if held is None:
            for node in path:
                add_into(state[node.path], x.requests)
            ran += 1
        elif strict:
            return state, ran, (x, held)
    return state, ran, None


def _let_in_ahead(d: Decision, held_out: Collection[Decision], tree: QuotaTree,
                  raised: Mapping[tuple[str, str], int]) -> list[Decision]:
    """The Inadmissible jobs of ``held_out`` that come before ``d`` in its
    queue (priority, then enqueue time) and that the limits ``raised`` (to the
    values given) would no longer hold out: each limit one breaks alone is
    one of those, raised as far as it needs."""
    out = []
    for x in held_out:
        if (-x.priority, x.enqueued_at) >= (-d.priority, d.enqueued_at) or \
                x.quota is None or x.quota not in tree.nodes or FITS_NO_CLUSTER_EMPTY in x.reason:
            continue  # (after it, or held out by the clusters too: no limit lets it in)
        broken = [(node.path, name, need) for node in tree.ancestry(x.quota)
                  for name, limit in node.max.items()
                  if (need := x.requests.get(name, 0)) > limit]
        if broken and all(raised.get((path, name), -1) >= need for path, name, need in broken):
            out.append(x)
    return sorted(out, key=lambda x: (-x.priority, x.enqueued_at, str(x.key)))


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
                     room: Callable[[list[Decision]], bool] | None = None) -> str:
    """``; a priority above N would let it preempt ...``, when one would: its
    quota lets jobs preempt, the preemptible jobs of its quota of priority N
    or less free what it lacks at every level (they count in each), and, when
    no cluster has room for it now, ``room`` says one would with them gone;
    else nothing (a higher priority would not help), or, when one would free
    the quota but no cluster, that it would not let it in."""
    if preemption is PreemptionPolicy.NEVER or not shortfalls:
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
                f"{_fewest(victims[:i + 1], shortfalls, room)} of them")
    if roomless:
        return ("; a higher priority would not let it in: with those it could preempt gone, "
                "no member cluster would have room for it (below)")
    return ""


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
                     fits: Fits | None = None, strict_fifo: bool = False) -> list[str]:
    """``explain`` for one of a cycle's ``decisions``, the jobs its quota admitted
    found among them, and those that wait sparing a reclaimer and could evict it
    (by its quota's preemption ``policy``; never when it is not ``preemptible``),
    borrowing (see ``find_victims``)."""
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
                             and x.quota == d.quota] if strict_fifo else ())
