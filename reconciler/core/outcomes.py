"""What the member clusters report of the jobs placed there, turned into decisions.

``status/<cluster>.yaml`` on the state branch (written by ``fleetq observe`` and
``fleetq report``) says, for each job a member cluster runs, whether it is
pending, running, succeeded or failed, and since when. Before the cycle runs,
``apply_observations`` reads those reports against the previous state:

- a job admitted on a cluster that reports it **succeeded** is ``Finished``,
  and one that reports it **failed** (its policy has no failover) is
  ``Failed``: neither holds quota or room any more, and both stay so, and on
  their cluster, until their file is deleted (an ended Kubernetes job does
  not run again when its manifest changes: a job under a new name does);
- with the policy's ``failover.application``, a job that **failed**, or that
  is still not running ``tolerationSeconds`` after its admission when its
  cluster reports, is **evicted**: it goes back to its queue keeping its
  place, and is never placed on that cluster again (``failedOn``). Its old
  copy is removed at once (``purgeMode`` Immediately or Directly), once the
  new placement is reported running or ``gracePeriodSeconds`` after the
  failover, whichever comes first (Graciously or Gracefully, the default),
  or never (Never); until then the cluster keeps it (``keptOn``, since
  ``keptSince``).

A report counts for a placement only when it is about that placement: a
terminal phase entered before the job's admission is an earlier run's.

Pure: values in, values out. ``pipeline`` gives the cycle the jobs and the
previous state ``apply_observations`` returns, and ``finish`` the cycle's
decisions.
"""

from __future__ import annotations

import datetime as dt
import enum
import functools
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field, replace

from reconciler.core.cycle import CycleInput
from reconciler.core.model import (
    Decision,
    Failover,
    Job,
    JobKey,
    MemberCluster,
    Phase,
    Policy,
    evolve,
)
from reconciler.core.policy import EVERY_CLUSTER_FAILED, default_policy, select_policy
from reconciler.core.resources import Resources, add_into, format_quantity

_ENDED = frozenset((Phase.FINISHED, Phase.FAILED))  # (a set: hashed at once, not compared)
IMMEDIATE_PURGE = ("Immediately", "Directly")  # purge modes: the old copy goes at once
NEVER_PURGE = "Never"
UNTIL_PLACED = "until the new placement runs"  # (Graciously, Gracefully: see ``not_placed``)


class ObservedPhase(enum.StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


_ENDED_SEEN = (ObservedPhase.SUCCEEDED, ObservedPhase.FAILED)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True, slots=True)
class ObservedJob:
    """One job as its member cluster reported it."""

    key: JobKey
    phase: ObservedPhase
    since: str | None = None  # when it entered ``phase`` (RFC 3339), when known
    message: str = ""
    api_version: str = ""
    # when it was seen so, if before its report's time: an entry an earlier report
    # left, which a report of part of the cluster's jobs kept (``ClusterReport``)
    observed_at: str | None = None


@dataclass(frozen=True)
class ClusterObservation:
    """One member cluster's report: the jobs it runs that fleetq placed there."""

    cluster: str
    observed_at: str
    jobs: Mapping[JobKey, ObservedJob] = field(default_factory=dict)
    # every job fleetq placed there is listed: one that is not is not there
    # (else a job not listed is not judged)
    complete: bool = False


@dataclass
class Outcomes:
    """What the reports change before the cycle runs.

    ``ended``: the Finished and Failed jobs' decisions (the cycle leaves them
    out). ``prior``: the previous state as the cycle is to take it (a job
    that fails over is back in its queue; a job that ended is as it was, so
    the cycle frees its quota and room as for a deleted job). ``failed_on``
    and ``kept_on``: per job, the clusters it failed on and those keeping an
    old copy. ``failovers``: the jobs that fail over in this reconcile, and
    why and what becomes of the old copy (for the commit message).
    ``ended_here``: the jobs that end in this reconcile, each with what becomes
    of its object on the cluster (for the commit message). ``purged``: the
    jobs whose old copies leave their clusters, and why (the same).
    """

    ended: dict[JobKey, Decision]
    prior: dict[JobKey, Decision]
    failed_on: dict[JobKey, tuple[str, ...]]
    kept_on: dict[JobKey, tuple[str, ...]]
    failovers: dict[JobKey, str] = field(default_factory=dict)
    ended_here: dict[JobKey, str] = field(default_factory=dict)
    # the old copies that leave in this reconcile, and why (for the commit message)
    purged: dict[JobKey, str] = field(default_factory=dict)
    # per job keeping old copies: when each was left, by cluster (gracePeriodSeconds)
    kept_since: dict[JobKey, dict[str, str]] = field(default_factory=dict)
    # the first time a job reported not running fails over with no new input
    # (``_fails_over``)
    failover_due: str | None = None


def apply_observations(inp: CycleInput, observations: Mapping[str, ClusterObservation]
                       ) -> Outcomes:
    """The outcomes of the jobs of ``inp.prior`` (the previous state) by the
    clusters' reports (see the module's docstring); a job's failover is its
    policy's, as the cycle selects it from ``inp.policies``."""
    prior = inp.prior
    # (most reconciles have nothing to do here: the fleet's jobs are looked at once)
    if observations:
        admitted = Phase.ADMITTED
        concerned = [p for p in prior.values() if p.phase in _ENDED or p.failed_on
                     or p.kept_on or (p.phase is admitted and p.cluster in observations)]
    else:
        concerned = [p for p in prior.values() if p.phase in _ENDED or p.failed_on
                     or p.kept_on]
    if not concerned:
        return Outcomes(ended={}, prior=prior, failed_on={}, kept_on={})
    keys = {p.key for p in concerned}
    jobs = {j.key: j for j in inp.jobs if j.key in keys}
    invalid = {bad.key for bad in inp.invalid}
    broken = inp.broken_paths
    by_ref = {p.ref: p for p in inp.policies}
    default = default_policy(inp.policies, inp.settings)
    out = Outcomes(ended={}, prior=dict(prior), failed_on={}, kept_on={})
    members = {c.name for c in inp.clusters}
    for p in concerned:
        key = p.key
        job = jobs.get(key)
        if job is None and key not in invalid and p.path not in broken:
            continue  # deleted: the cycle drops it
        # (a job whose file broke, or that is invalid now, is as it last was)
        policy = (select_policy(inp.policies, job) or default if job is not None
                  else by_ref.get(p.policy or ""))
        failover = policy.failover if policy is not None else None
        if p.failed_on:
            out.failed_on[key] = p.failed_on
        if p.kept_on:
            kept = tuple(c for c in p.kept_on if c in members)
            if kept != p.kept_on:  # (a copy leaves the state with its cluster's folder)
                left = ", ".join(c for c in p.kept_on if c not in members)
                out.purged[key] = f"{left} left the fleet"
                p = out.prior[key] = evolve(p, kept_on=kept, kept_since=tuple(
                    (c, t) for c, t in p.kept_since if c in kept))
            if kept:
                p = _keep_or_purge(p, kept, failover, inp.now, out)
        if job is None and p.phase is not Phase.ADMITTED and (p.failed_on or p.kept_on):
            out.ended[key] = p  # (its file broke while it fails over: as it was, apart)
            continue
        if p.phase in _ENDED:
            # it ran: its object on the cluster has ended, and a changed manifest
            # applied to it would not run it again; a new name would
            out.ended[key] = _left_the_fleet(_read_from(p, job), members)
            continue
        cluster = p.cluster
        if p.phase is not Phase.ADMITTED or cluster is None:
            continue
        if p.copies:  # (a Duplicated job runs on several clusters: no one report ends it)
            ended = _ended_everywhere(p, job, observations)
            if ended is not None:
                out.ended[key] = ended
                out.ended_here[key] = _where_it_stays(job, ended.phase)
            continue
        report = observations.get(cluster)
        if report is None:
            continue  # nothing said of it
        seen = report.jobs.get(key)
        if seen is not None and seen.phase in _ENDED_SEEN and not _after(
                seen.since or _at(seen, report), p.admitted_at):
            seen = None  # an earlier run's (a running one runs still, where it was placed)
        if seen is not None and seen.phase in (ObservedPhase.RUNNING, ObservedPhase.SUCCEEDED) \
                and p.kept_on and _purge(failover) != NEVER_PURGE \
                and _after(_at(seen, report), p.admitted_at):  # (not a report from before it)
            del out.kept_on[key]  # the new placement runs: the old copies go
            del out.kept_since[key]
            out.purged[key] = "its new placement runs"
            p = out.prior[key] = evolve(p, kept_on=(), kept_since=())
        now = _read_from(p, job)
        if seen is not None and seen.phase is ObservedPhase.SUCCEEDED:
            when = seen.since or _at(seen, report)
            out.ended[key] = _ended(now, Phase.FINISHED, when, (
                f"succeeded on {p.cluster} at {when}; its quota and room are free again; "
                + _stays(job, Phase.FINISHED)))
            out.ended_here[key] = _where_it_stays(job, Phase.FINISHED)
        elif seen is not None and seen.phase is ObservedPhase.FAILED and failover is None:
            when = seen.since or _at(seen, report)
            out.ended[key] = _ended(now, Phase.FAILED, when, (
                f"failed on {p.cluster} at {when}{_said(seen.message)}; it is not run again: "
                f"fix the cause and push it under a new name (a policy with "
                f"failover.application would place it on another cluster)"))
            out.ended_here[key] = _where_it_stays(job, Phase.FAILED)
        elif failover is not None and job is not None:  # (else: kept as it last was)
            why, due = _fails_over(seen, failover, p, report, inp.now)
            if due is not None and (out.failover_due is None or due < out.failover_due):
                out.failover_due = due
            if why is not None:
                failed = seen is not None and seen.phase is ObservedPhase.FAILED
                out.failovers[key] = f"{why}; {_old_copy(failover, job, failed)}"
                out.failed_on[key] = tuple(sorted({*p.failed_on, cluster}))
                if _keeps_copy(failover, job):
                    out.kept_on[key] = tuple(sorted({*out.kept_on.get(key, ()), cluster}))
                    out.kept_since.setdefault(key, {}).setdefault(cluster, inp.now)
                out.prior[key] = evolve(p, phase=Phase.QUEUED, cluster=None, nodes=(),
                                        copies=(), admitted_at=None, position=None,
                                        failed_on=out.failed_on[key],
                                        kept_on=out.kept_on.get(key, ()),
                                        kept_since=tuple(sorted(
                                            out.kept_since.get(key, {}).items())))
    return out


def _keep_or_purge(p: Decision, kept: tuple[str, ...], failover: Failover | None, now: str,
                   out: Outcomes) -> Decision:
    """``p``, whose old copies are ``kept``, once its purgeMode's grace period
    is applied: under Graciously or Gracefully each copy goes once
    ``gracePeriodSeconds`` passed since it was left (Karmada's grace period of
    each eviction), whether the new placement runs or not (it may wait in its
    queue for long, and a copy that starts late would run the job twice); the
    others stay (in ``out``), counted from now when the state did not say
    since when."""
    since = dict(p.kept_since)
    at = parse_time(now)
    gone = {c: since.get(c, now) for c in kept
            if at is not None and (end := _grace_end(since.get(c, now), failover)) is not None
            and at >= end}
    stay = {c: since.get(c, now) for c in kept if c not in gone}
    if gone:
        grace = (failover or Failover()).grace_period_seconds
        out.purged[p.key] = (f"gracePeriodSeconds ({grace} s) passed since it failed over "
                             f"at {min(gone.values())}")
        p = out.prior[p.key] = evolve(p, kept_on=tuple(sorted(stay)),
                                      kept_since=tuple(sorted(stay.items())))
    if stay:
        out.kept_on[p.key], out.kept_since[p.key] = tuple(sorted(stay)), stay
    return p


def _grace_end(since: str, failover: Failover | None) -> dt.datetime | None:
    """When copies kept since ``since`` go by ``failover``'s grace period
    (``None``: not by it, under Never)."""
    start = parse_time(since)
    if start is None or _purge(failover) == NEVER_PURGE:
        return None
    return start + dt.timedelta(seconds=(failover or Failover()).grace_period_seconds)


def purge_due(decisions: Iterable[Decision], policies: Iterable[Policy]) -> str | None:
    """The first time at which an old copy the ``decisions`` keep goes by its
    grace period (``_keep_or_purge``), or ``None``: the state changes then
    with no new input, so a reconcile from then on is not a fixed point."""
    by_ref = {p.ref: p for p in policies}
    ends: list[dt.datetime] = []
    for d in decisions:
        if d.kept_on and d.kept_since:
            policy = by_ref.get(d.policy or "")
            failover = policy.failover if policy is not None else None
            ends.extend(end for _, since in d.kept_since
                        if (end := _grace_end(since, failover)) is not None)
    return min(ends).strftime("%Y-%m-%dT%H:%M:%SZ") if ends else None


def _ended_everywhere(p: Decision, job: Job | None,
                      observations: Mapping[str, ClusterObservation]) -> Decision | None:
    """A Duplicated job's decision once every cluster running a copy reported it
    ended since its admission: Finished when each succeeded, else Failed (it
    is not failed over: its other copies ran); ``None`` while one runs on."""
    seen: list[tuple[str, ObservedJob, str]] = []
    for where in (p.cluster or "", *p.copies):
        report = observations.get(where)
        one = report.jobs.get(p.key) if report is not None else None
        if report is None or one is None or one.phase not in _ENDED_SEEN or not _after(
                one.since or _at(one, report), p.admitted_at):
            return None
        seen.append((where, one, one.since or _at(one, report)))
    when = max((at for _, _, at in seen), key=lambda at: parse_time(at) or _EPOCH)
    failed = [(where, one) for where, one, _ in seen if one.phase is ObservedPhase.FAILED]
    now = _read_from(p, job)
    if not failed:
        return _ended(now, Phase.FINISHED, when, (
            f"succeeded on each of {', '.join(w for w, _, _ in seen)} by {when}; its quota "
            f"and room are free again; " + _stays(job, Phase.FINISHED)))
    said = "; ".join(f"{where}{_said(one.message)}" for where, one in failed)
    return _ended(now, Phase.FAILED, when, (
        f"ended on each of {', '.join(w for w, _, _ in seen)} by {when}, and failed on "
        f"{said}; it is not run again: fix the cause and push it under a new name"))


def cycle_input_with(inp: CycleInput, outcomes: Outcomes) -> CycleInput:
    """``inp`` as the clusters' reports leave it: the jobs that ended left out
    (they hold nothing, as deleted jobs do), the previous state with the jobs
    that fail over back in their queues (with the clusters they failed on,
    which the cycle never gives them as candidates). When jobs fail over,
    none is settled (``CycleInput.settled``): the state the previous
    reconcile ended on is not the one they leave."""
    jobs, invalid = inp.jobs, inp.invalid
    ended = frozenset(outcomes.ended)
    if ended:
        jobs = tuple(j for j in jobs if j.key not in ended)
        invalid = tuple(bad for bad in invalid if bad.key not in ended)
    return replace(inp, jobs=jobs, invalid=invalid, prior=outcomes.prior, ended=ended,
                   settled=frozenset() if outcomes.failovers else inp.settled)


def finish(decisions: list[Decision], outcomes: Outcomes
           ) -> tuple[list[Decision], frozenset[JobKey]]:
    """The cycle's ``decisions`` with the ended jobs' in their place (by key),
    and each job's ``failedOn`` and ``keptOn``; and the keys of the decisions
    this changed (or added). (Why a job failed over is in ``failovers``, for the
    commit message: a decision says only what the next reconcile would say.)"""
    if not (outcomes.failed_on or outcomes.kept_on or outcomes.ended):
        return decisions, frozenset()  # (no decision has either: each job's came from here)
    out, changed = [], []
    for d in decisions:
        key = d.key
        failed_on = outcomes.failed_on.get(key, ())
        kept_on = outcomes.kept_on.get(key, ())
        if failed_on or kept_on or d.failed_on or d.kept_on:
            reason = d.reason
            if failed_on and d.phase is not Phase.ADMITTED:
                told = f" (it failed on {', '.join(failed_on)}: never placed there again)"
                if EVERY_CLUSTER_FAILED in reason:
                    told += ("; to run it again, fix the cause and push it under a new name, or "
                             "let its policy select more clusters")
                reason = reason if reason.endswith(told) else reason + told
            new = evolve(d, failed_on=failed_on, kept_on=kept_on, reason=reason,
                         kept_since=tuple(sorted(outcomes.kept_since.get(key, {}).items()))
                         if kept_on else ())
            if new != d:
                d = new
                changed.append(key)
        out.append(d)
    if outcomes.ended:
        out.extend(outcomes.ended.values())
        out.sort(key=_by_key)
        changed.extend(outcomes.ended)
    return out, frozenset(changed)


def _where_it_stays(job: Job | None, phase: Phase) -> str:
    if job is not None and job.deleted_after(phase):
        return "its manifest leaves the cluster: its operator deletes it once it ended"
    return "it stays there until its file is deleted"


def _keeps_copy(failover: Failover, job: Job) -> bool:
    """Whether a job failing over leaves its copy where it was, for a time:
    not under Immediately or Directly, nor when its kind deletes a failed
    job (a manifest kept there would create it, and run it, again)."""
    return _purge(failover) not in IMMEDIATE_PURGE and not job.deleted_after(Phase.FAILED)


def _old_copy(failover: Failover, job: Job, failed: bool) -> str:
    """What becomes of the copy of a job failing over; ``failed``: it was
    reported failed there (else it did not start: should it end there while
    kept, its operator would delete it all the same)."""
    mode = _purge(failover)
    if mode in IMMEDIATE_PURGE:
        return f"its copy there is removed at once (purgeMode {mode})"
    if not _keeps_copy(failover, job):
        return (f"its copy there is removed at once, whatever purgeMode {mode} says: its "
                + ("operator deletes a failed job, which a manifest kept there would run again"
                   if failed else "operator deletes the job once it ended, and should the "
                   "copy end there, a manifest kept there would run it again"))
    if mode == NEVER_PURGE:
        return f"its copy stays there (purgeMode {mode})"
    return (f"its copy stays there {UNTIL_PLACED}, {failover.grace_period_seconds} s at most "
            f"(purgeMode {mode}, gracePeriodSeconds)")


def not_placed(why: str) -> str:
    """Why a job failed over (``Outcomes.failovers``), told of a job the cycle
    then placed nowhere: there is no new placement to wait for yet."""
    return why.replace(UNTIL_PLACED, "until it is placed again and runs there")


def _stays(job: Job | None, phase: Phase) -> str:
    if job is not None and job.deleted_after(phase):
        field = "deletionStrategy" if job.key.kind == "RayJob" else "ttlSecondsAfterFinished"
        return (f"its manifest leaves the cluster (its {field} deletes it there; declared, it "
                f"would run again)")
    return _DELETE_ITS_FILE


_DELETE_ITS_FILE = "delete its file to remove it from the cluster"


def _left_the_fleet(p: Decision, members: Container[str]) -> Decision:
    """``p``, an ended job's decision, saying so once when a cluster it ran on
    left the fleet: its manifest left the state with the cluster's folder, and
    is not sent there again should the cluster come back (it would run the
    job again), so deleting the file removes nothing from it."""
    gone = [c for c in (p.cluster, *p.copies) if c is not None and c not in members]
    if not gone:
        return p
    note = (f"{', '.join(gone)} left the fleet: the job is not sent there again, should "
            f"{'it' if len(gone) == 1 else 'they'} come back")
    if p.reason.endswith(note):
        return p
    reason = p.reason.removesuffix(f"; {_DELETE_ITS_FILE}")  # (nothing there to remove)
    return evolve(p, reason=f"{reason}; {note}")


def _by_key(d: Decision) -> JobKey:
    return d.key


def _ended(p: Decision, phase: Phase, when: str, reason: str) -> Decision:
    return evolve(p, phase=phase, ended_at=when, reason=reason, position=None)


def _read_from(p: Decision, job: Job | None) -> Decision:
    """``p`` naming the file and blob its job is read from now (its file may
    have changed or moved; none: it broke, and ``p`` is as it last was)."""
    if job is None or (job.blob, job.path) == (p.blob, p.path):
        return p
    return evolve(p, blob=job.blob, path=job.path)


def _fails_over(seen: ObservedJob | None, failover: Failover, p: Decision,
                report: ClusterObservation, now: str) -> tuple[str | None, str | None]:
    """Why the job placed by ``p`` fails over by ``report``, if it does now;
    else when it does with no new input, if it does then: a report's clock
    ahead of the reconcile's counts as observed now (a wrong clock must not
    fail jobs over before their time), so a job it saw not running past its
    ``tolerationSeconds``, which ``now`` is not yet, fails over at that time."""
    if seen is not None and seen.phase is ObservedPhase.FAILED:
        return (f"failed on {p.cluster} at {seen.since or _at(seen, report)}"
                f"{_said(seen.message)}"), None
    running = seen is not None and seen.phase in (ObservedPhase.RUNNING,
                                                  ObservedPhase.SUCCEEDED)
    limit = failover.toleration_seconds
    if running or limit is None or p.admitted_at is None or (
            seen is None and not report.complete):
        return None, None
    observed = _at(seen, report)
    waited = _seconds_between(p.admitted_at, observed)
    if waited is None or waited < limit:
        return None, None
    by_now = _seconds_between(p.admitted_at, now)
    admitted = parse_time(p.admitted_at)
    if by_now is not None and by_now < limit and admitted is not None:
        return None, (admitted + dt.timedelta(seconds=limit)).strftime("%Y-%m-%dT%H:%M:%SZ")
    state = "pending" if seen is not None else "not there"
    return (f"not running on {p.cluster} {limit} s after its admission ({state} when "
            f"observed at {observed})"), None


def _at(seen: ObservedJob | None, report: ClusterObservation) -> str:
    """When the job was seen as ``seen`` says (not seen: when ``report`` was made)."""
    return seen.observed_at or report.observed_at if seen is not None else report.observed_at


def _purge(failover: Failover | None) -> str:
    return failover.purge_mode if failover is not None else "Gracefully"


def _said(message: str) -> str:
    return f" ({message})" if message else ""


@functools.lru_cache(maxsize=1 << 16)  # (a fleet's times repeat: admissions share a clock)
def parse_time(text: str) -> dt.datetime | None:
    """An RFC 3339 time (``Z`` or an offset), as UTC; None when it is not one."""
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when.astimezone(dt.UTC) if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)


def _after(since: str | None, admitted_at: str | None) -> bool:
    """Whether a phase entered at ``since`` belongs to the placement admitted at
    ``admitted_at`` (unknown times: it does)."""
    if since is None or admitted_at is None:
        return True
    a, b = parse_time(since), parse_time(admitted_at)
    return a is None or b is None or a >= b


def _seconds_between(start: str, end: str) -> float | None:
    a, b = parse_time(start), parse_time(end)
    return None if a is None or b is None else (b - a).total_seconds()


@dataclass(frozen=True, slots=True)
class ObservedNode:
    """One node as its member cluster reported it (``inventory/<cluster>.yaml``)."""

    name: str
    allocatable: Resources
    ready: bool = True
    cordoned: bool = False  # spec.unschedulable: no new pods


def capacity_drift(cluster: MemberCluster, nodes: Iterable[ObservedNode]) -> list[str]:
    """How the capacity ``cluster`` declares (its nodes and node groups) differs
    from the nodes its cluster reports, where jobs would be placed on room
    that is not there: a declared node not reported, not ready or cordoned
    (when the declared names are the cluster's own), and each resource whose
    declared total is more than the ready, schedulable nodes' total. Nothing for a cluster that
    declares no nodes."""
    if not cluster.nodes:
        return []
    observed = {n.name: n for n in nodes}
    out = []
    if any(n.name in observed for n in cluster.nodes):  # (declared by the cluster's names)
        for node in cluster.nodes:
            seen = observed.get(node.name)
            if seen is None:
                out.append(f"node {node.name} is declared but not reported")
            elif not seen.ready:
                out.append(f"node {node.name} is declared but reported not ready")
            elif seen.cordoned:
                out.append(f"node {node.name} is declared but reported cordoned "
                           f"(unschedulable)")
    declared: Resources = {}
    for node in cluster.nodes:
        add_into(declared, node.allocatable)
    ready: Resources = {}
    for seen in observed.values():
        if seen.ready and not seen.cordoned:
            add_into(ready, seen.allocatable)
    for name in sorted(declared):
        if ready.get(name, 0) < declared[name]:
            out.append(f"{format_quantity(name, declared[name])} {name} declared in all, "
                       f"{format_quantity(name, ready.get(name, 0))} on its ready, "
                       f"schedulable nodes")
    return out
