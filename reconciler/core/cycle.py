"""One reconcile cycle: from the fleet's values to a decision per job.

``reconcile_cycle`` is the whole scheduler. It is pure and deterministic: the
same ``CycleInput`` gives equal ``CycleResult`` values, and iteration orders
never depend on hashing.
"""

from __future__ import annotations

import functools
import heapq
import operator
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace

from reconciler.core.gang import NO_NODE_MATCHES, ClusterState, Fit, Ranking, job_cluster_total
from reconciler.core.model import (
    NAMESPACE_UNSET_AT,
    PRIORITY_CLASS_AT,
    QUOTA_AT,
    WORKLOAD_PRIORITY_CLASS_AT,
    Decision,
    FleetSettings,
    Job,
    JobKey,
    MemberCluster,
    Phase,
    PlacementStrategy,
    PodSet,
    PodSetCount,
    Policy,
    PreemptionPolicy,
    PriorPlacement,
    QueueStrategy,
    evolve,
    plain_state,
    untolerated,
)
from reconciler.core.parked import Parked
from reconciler.core.policy import (
    LOCAL_QUEUE_NAME,
    candidate_groups,
    default_policy,
    narrowed,
    select_policy,
    with_no_queue_refusal,
    with_queue_refusal,
)
from reconciler.core.preemption import (
    ANY_REASON,
    RECLAIMING,
    UNTRIED,
    Admitted,
    Blocked,
    PreemptionContext,
    could_reclaim_back,
    eligible_same_quota,
    find_victims,
    may_evict_priority,
    may_reclaim,
    would_retake,
)
from reconciler.core.problems import Problem, did_you_mean, listed, shown_path
from reconciler.core.quota import QuotaTree, QuotaUsage, max_changed, max_jobs_hint
from reconciler.core.resources import MAX_JOBS, Resources, ResourcesView

MAX_CLUSTER_NOTES = 3
FITS_NO_CLUSTER = "no member cluster fits the whole gang now"  # (a reason: ``explain`` reads it)
LOWER_OR_ADD = "lower its requests or add capacity"
FITS_NO_CLUSTER_EMPTY = "it fits no candidate member cluster even when empty"  # (``explain``)
BLOCKED_BEHIND = "blocked behind "  # (the start of a reason: ``explain`` reads it)
MAX_PASSES = 64  # a safety net: passes settle in 2-5 (about 11 at 100,000 jobs)
MAX_ROUNDS = 8  # a safety net: rounds settle in 1-3
# Tests set this to check, after each pass, that no parked job could have been
# helped by what happened since it failed (the wake-up index misses nothing).
CHECK_PARKED = False
# Failed jobs are parked in a reconcile that starts with settled jobs (most of
# its waiting jobs then sleep through it); in a cold one, most waiting jobs are
# woken by every pass that evicts, and parking them costs more than it saves
# (measured at 100,000 jobs). Tests set this to park in every reconcile.
PARK_ALWAYS = False
# Tests set this to try every failed job again whenever a pass comes to it, as if
# _may_have_changed always said yes: the decisions must be the same.
TRY_ALWAYS = False
# Tests set this to decide every cycle that leaves settled jobs out (see _run)
# once more with them in, and check that the decisions are the same (and
# that those it says come from their priors do).
CHECK_QUICK = False
# Tests set this to decide every cycle that takes up steps done ahead (see
# ``prepare``) once more without them, and check that the decisions are the same.
CHECK_AHEAD = False


@plain_state
@dataclass(frozen=True, slots=True)
class InvalidJob:
    """A job whose manifest could be identified but not used."""

    key: JobKey
    api_version: str
    path: str
    line: int
    blob: str
    message: str
    more: tuple[tuple[int, str], ...] = ()  # (line, message): its other mistakes, if any
    # (line, message): the fields its kind does not have (warnings, as a valid job's)
    warnings: tuple[tuple[int, str], ...] = ()
    name_line: int = 0  # the line of its name (0: as ``line``)


@dataclass(frozen=True)
class CycleInput:
    jobs: tuple[Job, ...]
    tree: QuotaTree | None
    clusters: tuple[MemberCluster, ...]
    policies: tuple[Policy, ...]
    priority_classes: dict[str, int]
    default_priority: int
    workload_priority_classes: dict[str, int]
    prior: dict[JobKey, PriorPlacement]
    source_time: str
    now: str
    invalid: tuple[InvalidJob, ...] = ()
    broken_paths: dict[str, str] = field(default_factory=dict)
    settings: FleetSettings = field(default_factory=FleetSettings)
    # Jobs Queued in ``prior`` whose inputs did not change, when nothing but
    # jobs changed since the reconcile that wrote ``prior`` (a fixed point),
    # or jobs and the max of some quotas (then those below such a quota are
    # not settled): each failed then on the very state step 2 rebuilds, with
    # the limits it meets now, so it is not tried again until something that
    # could help it happens (see step 2).
    settled: frozenset[JobKey] = frozenset()
    # Jobs that ended (``core.outcomes``): decided apart; those ``prior``
    # admitted free what they held, as deleted jobs do.
    ended: frozenset[JobKey] = frozenset()
    # Objects defined in more than one place, none of which counts
    # ("PriorityClass high", ...): a job naming one is told so, not that it
    # does not exist.
    defined_twice: frozenset[str] = frozenset()
    # Why ``tree`` is None though the fleet has one (``FleetInputs.tree_unused``).
    tree_unused: str | None = None


@dataclass
class CycleResult:
    decisions: list[Decision]
    problems: list[Problem]
    quota_used: dict[str, Resources]
    cluster_free: dict[str, Resources]
    # Jobs decided as their ``prior`` was, in the same place, from the same file
    # and blob: each decision is its prior field for field, but for the two its
    # job gives (api_version, requests), which are the prior's when the prior
    # was decided from that very blob. A hint for whoever writes the decisions
    # (an item need not be formatted again), so no part of equality.
    from_prior: frozenset[JobKey] = field(default=frozenset(), compare=False)
    # Whether it took up the steps ``prepare`` did ahead (what took place, for
    # progress; no part of equality).
    ahead: bool = field(default=False, compare=False)
    # Why a job that ran left its place by no decision of the queue (its cluster
    # left the fleet; its requests changed and no longer fit there): an event of
    # this reconcile, for the commit message, not a reason the next one restates.
    moved: dict[JobKey, str] = field(default_factory=dict)
    # The member clusters as the cycle left them, their nodes and what runs on
    # each (for ``explain``: whether a waiting job's pods would pack there now).
    clusters: dict[str, ClusterState] = field(default_factory=dict, compare=False, repr=False)

    def cluster_fits(self, job: Job, names: Iterable[str],
                     without: Mapping[JobKey, tuple[PodSet, ...]] | None = None, *,
                     empty: bool = False) -> dict[str, str]:
        """Why ``job``'s gang would not fit now on each of the clusters ``names``
        that it would not fit on, its quota aside (``ClusterState.fit``); with
        the running jobs ``without`` (their pod sets) gone, when given (a
        what-if: each is put back as it was); ``empty``: with none on it. On a
        cluster that checks its free sum alone, pods no node could ever run
        (``ClusterState.never_runs``) do not fit either: placed there, they
        would stay Pending."""
        total = job_cluster_total(job.pod_sets)
        out = {}
        for name in names:
            state = self.clusters.get(name)
            if state is None:
                continue
            if empty:
                state = ClusterState(state.cluster)
            gone = [(key, pod_sets, state.placed[key]) for key, pod_sets in (without or {}).items()
                    if key in state.placed]
            for key, pod_sets, _ in gone:
                state.remove(key, pod_sets)
            try:
                got = state.fit(job.key, job.pod_sets, total)
            finally:
                for key, pod_sets, fit in reversed(gone):
                    state.undo_remove(key, pod_sets, fit)
            if isinstance(got, str):
                out[name] = got
            elif not state.cluster.resource_reservation:
                never = state.never_runs(job.pod_sets)
                if never is not None:
                    out[name] = never
        return out


@dataclass
class _Pending:
    """A job waiting for a decision, with everything the cycle resolved for it."""

    job: Job
    policy: Policy
    quota: str | None
    priority: int
    enqueued_at: str
    groups: list[list[str]]
    notes: list[str]
    total: Resources
    prior: PriorPlacement | None
    shape: tuple[object, ...] = field(init=False)
    # (policy ref, kind ref, and the clusters it failed on, if any): jobs alike
    # have the same candidate clusters
    like: tuple[str, ...] = field(init=False)
    # whether it may reclaim is the same for jobs alike (see _may_reclaim); the
    # cycle swaps it for a number, the same for the same key
    reclaims_like: object = field(init=False)
    alike: int | None = field(init=False, default=None)  # see _attempt
    # the clusters its policy gives it whose gang scheduler would refuse it, each said
    # (``policy.refusing``): told in its reason whatever else holds it
    refused: tuple[str, ...] = field(init=False, default=())

    @functools.cached_property
    def total_items(self) -> tuple[tuple[str, int], ...]:
        """``total`` as a key, in its order (see ``Ranking``)."""
        return tuple(self.total.items())

    def __post_init__(self) -> None:
        self.shape = _shape(self.job.pod_sets)
        self.like = (self.policy.ref, self.job.key.kind_ref)
        self.reclaims_like = (self.quota, self.priority, tuple(self.job.requests.items()))

    # (made when first asked: most jobs an incremental cycle resolves are put back
    # where they ran, and never queue)
    @functools.cached_property
    def order(self) -> str:
        """Its place in its queue (see ``queue_order``)."""
        return queue_order(self.priority, self.enqueued_at, self.job.key)

    @functools.cached_property
    def after_priority(self) -> str:
        """``order`` but its priority: enqueue time, namespace/name, group, kind."""
        return self.order[len(_descending_number(self.priority)):]


def counted_as_decided(job: Job, prior: PriorPlacement) -> bool:
    """Whether ``job`` counts the requests and pods (each pod set's, by name)
    that ``prior`` was decided with: admitted so, it is put back as it ran."""
    sets = job.pod_sets  # (compared as counts, none made)
    return prior.requests == job.requests and len(prior.pod_sets) == len(sets) and all(
        a.name == b.name and a.replicas == b.replicas
        for a, b in zip(prior.pod_sets, sets, strict=True))


def queue_order(priority: int, enqueued_at: str, key: JobKey) -> str:
    """Queue order (DESIGN §3 "Order"): priority desc, enqueue time asc, then
    namespace/name (then group and kind), as one string that sorts as the tuple
    ``(-priority, enqueued_at, key.order)`` does, but is compared in one step:
    the cycle's heaps of up to 100,000 queued jobs compare keys millions of
    times."""
    return _descending_number(priority) + _ascending_text(enqueued_at, *key.order)


_COMPLEMENT = str.maketrans("0123456789", "9876543210")


def _descending_number(n: int) -> str:
    """Text that sorts as ``-n`` does, for any whole number, and is never a
    prefix of another such text (its length is in it)."""
    got = _DESCENDING.get(n)
    if got is None:
        digits = str(abs(n))
        if n <= 0:  # -n >= 0: by length, then digits
            got = f"p{len(digits):05d}{digits}"
        else:  # -n < 0: the longer first, then by complemented digits
            got = f"n{99999 - len(digits):05d}{digits.translate(_COMPLEMENT)}"
        if len(_DESCENDING) < 4096:  # (a fleet has a few priorities)
            _DESCENDING[n] = got
    return got


_DESCENDING: dict[int, str] = {}


def _ascending_text(*texts: str) -> str:
    """Text that sorts as the tuple ``texts`` does: each text ends with two
    NULs, which sort before any other character, and a NUL in it is escaped as
    NUL SOH (so that it still sorts before any other character)."""
    return "\0\0".join(t.replace("\0", "\0\1") if "\0" in t else t for t in texts)


def reconcile_cycle(inp: CycleInput, ahead: Ahead | None = None,
                    progress: Callable[[str], None] | None = None) -> CycleResult:
    """Decide every job of the fleet.

    ``ahead``: steps 1-2 for the jobs the previous state admitted, done by
    ``prepare`` on the input expected next; taken up when ``inp`` would lead to
    the very same steps (else they are done again here): the same result.
    ``progress``: told, now and then, how far step 5 is (it reads nothing of
    the decisions, and changes none).

    Steps:
      1. Resolve each job: policy, quota binding, priority and enqueue time.
         A job that cannot be resolved is Invalid; one no policy selects is
         Inadmissible.
      2. Snapshot: quota usage and cluster capacity charged with the jobs the
         previous state admitted that are still there (no flapping), in
         admission order. A job whose source turned invalid, or that step 1
         found invalid (its PriorityClass or quota went), keeps its last
         good placement and is flagged. When every job the previous state
         admitted is back as it was, the snapshot is the state the previous
         reconcile ended on, so its ``settled`` jobs count as having failed
         on it: they are tried again only once an admission or eviction may
         have helped them (the incremental case: one pushed job costs little).
         Those in BestEffortFIFO queues are first left out of the cycle
         altogether: while it admits and evicts nothing, none of them could
         have been helped; at its first admission or eviction they are taken
         in, as they would stand then; if none comes, each keeps its previous
         decision (its position counted again).
      3. Inadmissible: a job the quota or every candidate cluster could not
         take even when empty.
      4. Capacity-only jobs (policy without ``suspension.scheduling``) are
         placed by capacity alone, by priority then enqueue time.
      5. Queued jobs: one queue per leaf quota; the best head across queues
         (priority, dominant share, enqueue time) is admitted when its quota
         and a member cluster fit it, else it may preempt, else it is
         skipped (BestEffortFIFO) or blocks its queue (StrictFIFO).
         Steps 4-5 repeat until a pass changes nothing: a job skipped early
         in a pass is tried again once later admissions or evictions changed
         the state. A victim whose preemptor lost its own place later is put
         back where it ran when it still fits. Within a round of passes a job
         is a victim at most once; a victim placed again in that round is
         fair game in the next round, and rounds repeat until none is: the
         next reconcile then has nothing left to do.
      6. Positions and reasons for the jobs that wait.
    """
    taken = ahead.take_up(inp) if ahead is not None else None
    left_out, state = taken if taken is not None else (_left_out(inp), None)
    result = _run(inp, left_out, state, progress)
    if CHECK_AHEAD and taken is not None:
        assert _run(inp, _left_out(inp)) == result, "the steps done ahead changed the decisions"
    if CHECK_QUICK and left_out:
        assert _run(inp, {}) == result, "leaving settled jobs out changed the decisions"
        by_key = {d.key: d for d in result.decisions}
        for key in result.from_prior:
            assert all(getattr(by_key[key], f.name) == getattr(inp.prior[key], f.name)
                       for f in fields(PriorPlacement)
                       if f.name not in ("api_version", "requests")), f"{key}: not as prior"
    return result


def _left_out(inp: CycleInput, every: bool = False
              ) -> dict[JobKey, tuple[Job, PriorPlacement]]:
    """The settled jobs that step 2 would park in their BestEffortFIFO queues, by
    what the previous state says of them (queued with a position in a quota's
    queue, and not failed over) and with the very file they were decided from;
    with ``every``, those that would be if every job were settled."""
    if not (inp.settled or every) or inp.tree is None:
        return {}
    settled, priors, queued = inp.settled, inp.prior, Phase.QUEUED
    invalid = {bad.key for bad in inp.invalid}
    fifo = {q for q in inp.tree.nodes  # the quotas whose queues are BestEffortFIFO
            if inp.settings.for_quota(q).strategy is not QueueStrategy.STRICT_FIFO}
    out: dict[JobKey, tuple[Job, PriorPlacement]] = {}
    for job in inp.jobs:  # in the fleet's order: the cycle sorts them where it matters
        key = job.key
        if not every and key not in settled:
            continue
        prior = priors.get(key)
        if (prior is None or prior.phase is not queued or prior.position is None
                or prior.quota not in fifo or job.blob != prior.blob
                or job.path != prior.path or key in invalid
                # (one that failed over: the clusters' reports decide its failedOn and
                # keptOn, its old copies going once their grace period ends)
                or prior.failed_on or prior.kept_on):
            out.pop(key, None)  # (the last job of a key is the one the cycle takes)
            continue
        out[key] = (job, prior)
    return out


def _run(inp: CycleInput, left_out: dict[JobKey, tuple[Job, PriorPlacement]],
         state: _Cycle | None = None,
         progress: Callable[[str], None] | None = None) -> CycleResult:
    """The steps of ``reconcile_cycle``, with the ``left_out`` jobs taken in as
    soon as anything is admitted or evicted (or at once, when they would not be
    parked): the same result as with them in from the start. ``state``: the
    cycle after steps 1-2, taken up from steps done ahead."""
    if state is None:
        state = _Cycle(inp, left_out)
        state.resolve()  # 1
        state.snapshot()  # 2
    if left_out and not state._as_before:
        state._take_in_left_out()  # they are not parked (seed_settled)
    state.screen_inadmissible()  # 3
    state.seed_settled()
    state.progress = progress
    for round_number in range(1, MAX_ROUNDS + 1):
        for pass_number in range(1, MAX_PASSES + 1):
            changes = state.changes
            state.pass_label = f"round {round_number}, pass {pass_number}"
            state.place_capacity_only()  # 4
            state.admit_queued()  # 5
            state.undo_useless_evictions()
            if CHECK_PARKED:
                state.check_parked()
            if state.changes == changes:
                break  # a pass that changed nothing
        if not state.next_round():
            break  # and no victim runs again: the state is a fixed point
    else:
        state.problems.append(Problem("placements.yaml", 0, (
            f"preemptions did not settle within {MAX_ROUNDS} rounds: victims placed again "
            f"are still wanted by others, so the next reconcile may preempt more"), "warning"))
    state.screen_evicted()
    return state.result()  # 6


_WAITED = (Phase.QUEUED, Phase.INADMISSIBLE, Phase.INVALID)  # (a job that never ran)

PROGRESS_TRIES = 5000  # queued jobs asked in step 5 between two reports of progress


class Ahead:
    """Steps 1-2 of a cycle for the jobs the previous state admitted (resolving
    them, and putting them back where they run), done on the input expected
    next by ``prepare``, while there is time: a watch, between pushes. Most
    pushes change a few job files, and what these steps do depends on none of
    them, so ``reconcile_cycle`` takes them up when the input it is given would
    have led to the very same steps (``take_up``). Taken up once."""

    def __init__(self, inp: CycleInput, state: _Cycle, jobs: dict[JobKey, Job],
                 admitted: dict[JobKey, PriorPlacement]) -> None:
        self._inp: CycleInput | None = inp
        self._state: _Cycle | None = state
        self._jobs = jobs  # the jobs resolved, by key
        self._admitted = admitted  # the prior's admitted jobs
        # Those that would be left out if settled (``_left_out``), and their
        # entries in their queues at the end (``_Cycle.result``), in queue order.
        self._candidates = _left_out(inp, every=True)
        self._queues: dict[str, list[_QueueEntry]] = {}
        for key, was in self._candidates.items():
            self._queues.setdefault(was[1].quota or "", []).append(
                _left_out_entry(key, was, inp.source_time))
        for entries in self._queues.values():
            entries.sort()
        self._sorted = sorted(self._candidates)
        self._needs_source_time = any(  # (enqueue times taken from the commit)
            not (job.created_at or admitted[key].enqueued_at) for key, job in jobs.items()
        ) or any(not (job.created_at or prior.enqueued_at)
                 for job, prior in self._candidates.values())
        self._needs_now = any(not p.admitted_at for p in admitted.values())

    def take_up(self, inp: CycleInput
                ) -> tuple[dict[JobKey, tuple[Job, PriorPlacement]], _Cycle] | None:
        """The jobs left out of the cycle for ``inp``, and the cycle after steps
        1-2, with the steps done ahead, and the rest of step 1 done now; ``None``
        when ``inp`` differs from the input expected in anything these steps
        read (then nothing is taken)."""
        was, state = self._inp, self._state
        self._inp = self._state = None  # (taken up once)
        if was is None or state is None:
            return None
        jobs = {j.key: j for j in inp.jobs}
        if not self._same_steps(was, inp, jobs) or (
                was.tree != inp.tree and not state.retree(inp.tree)):
            self._drop()  # (not held through the cycle decided without them)
            return None
        # Left out: those of the expected input's that are settled, from the very
        # same file and prior (a part of what _left_out gives: the same result).
        left_out: dict[JobKey, tuple[Job, PriorPlacement]] = {}
        if inp.settled and inp.prior is was.prior:
            settled = inp.settled
            left_out = {key: out for key, out in self._candidates.items()
                        if key in settled and jobs.get(key) is out[0]}
        elif inp.settled:
            settled, priors = inp.settled, inp.prior
            left_out = {key: out for key, out in self._candidates.items()
                        if key in settled and jobs.get(key) is out[0]
                        and priors.get(key) is out[1]}
        state.inp = inp
        state.left_out = left_out
        state.preemption.max_evictions = len(inp.jobs) + len(inp.prior)
        done = self._jobs  # (never left out: admitted before)
        state.resolve_more(sorted((j for j in inp.jobs if j.key not in done
                                   and j.key not in left_out), key=_job_key), done)
        if len(left_out) == len(self._candidates):
            state.ahead_queues, state.ahead_sorted = self._queues, self._sorted
        else:
            state.ahead_queues = {q: [e for e in entries if e[1] in left_out]
                                  for q, entries in self._queues.items()}
            state.ahead_sorted = [key for key in self._sorted if key in left_out]
        self._drop()
        return left_out, state

    def _drop(self) -> None:
        self._jobs, self._admitted, self._candidates = {}, {}, {}
        self._queues, self._sorted = {}, []

    def _same_steps(self, was: CycleInput, inp: CycleInput, jobs: dict[JobKey, Job]) -> bool:
        """Whether steps 1-2 on ``inp`` are those done on ``was``: the same
        but, maybe, for the values of quotas' max limits (see ``retree``)."""
        if not (_same_but_max(was.tree, inp.tree) and was.clusters == inp.clusters
                and was.policies == inp.policies and was.settings == inp.settings
                and was.priority_classes == inp.priority_classes
                and was.default_priority == inp.default_priority
                and was.workload_priority_classes == inp.workload_priority_classes
                and was.invalid == inp.invalid and was.broken_paths == inp.broken_paths
                and was.tree_unused == inp.tree_unused
                and was.ended.intersection(self._admitted)
                == inp.ended.intersection(self._admitted)):
            return False  # (an admitted job that ended is freed, not put back)
        if (self._needs_source_time and was.source_time != inp.source_time) or \
                (self._needs_now and was.now != inp.now):
            return False
        admitted, count, phase = self._admitted, 0, Phase.ADMITTED
        for prior in () if inp.prior is was.prior else inp.prior.values():
            if prior.phase is phase:  # the very same admitted jobs, and no other
                count += 1
                same = admitted.get(prior.key)
                if same is None or (same is not prior and same != prior):
                    return False
        if inp.prior is not was.prior and count != len(admitted):
            return False
        if len(jobs) != len(inp.jobs):
            return False  # a key twice: step 1 resolves both
        done = self._jobs
        for key in admitted:  # each admitted job's own file, as it was, or none as before
            job, was_job = jobs.get(key), done.get(key)
            if (job is None) != (was_job is None) or (job is not was_job and job != was_job):
                return False
        return True


def _same_but_max(a: QuotaTree | None, b: QuotaTree | None) -> bool:
    """The same quota tree, but maybe for the values of max limits (``max_changed``)."""
    return a == b or (a is not None and b is not None and max_changed(a, b) is not None)


def _spares(prior: PriorPlacement) -> str | None:
    """The job a job queued in the previous state spares while it waits: the one
    whose reclaim sent it back to its queue (see ``find_victims``)."""
    if prior.phase is Phase.QUEUED and (prior.preemption_reason or "").startswith(RECLAIMING):
        return prior.preempted_by
    return None


def prepare(inp: CycleInput) -> Ahead | None:
    """Steps 1-2 for the jobs ``inp.prior`` admitted, done now, to be taken up
    by ``reconcile_cycle`` on an input expected to be ``inp`` but for job files
    other than theirs (``inp.settled`` is not read). ``None`` when ``inp`` holds
    an admitted job's key twice."""
    admitted = {p.key: p for p in inp.prior.values() if p.phase is Phase.ADMITTED}
    jobs: dict[JobKey, Job] = {}
    for job in inp.jobs:
        if job.key in admitted:
            if job.key in jobs:
                return None
            jobs[job.key] = job
    state = _Cycle(inp)
    state.resolve(jobs.values())
    state.snapshot()
    decisions = state.decisions
    for key in jobs:  # put back as before: the very decision (known to read back as it)
        if decisions[key] == admitted[key]:
            decisions[key] = admitted[key]
    return Ahead(inp, state, jobs, admitted)


# A job's entry in its queue at the end of a cycle (see ``_Cycle.result``): its
# order; its key; for a job left out, its job and prior, and whether it is
# decided as its prior was (with the prior's position), 1, and as that very
# decision, 2 (else 0).
_QueueEntry = tuple[tuple[int, str, tuple[str, str, str, str]], JobKey,
                    tuple[Job, PriorPlacement] | None, int]


def _left_out_entry(key: JobKey, was: tuple[Job, PriorPlacement], source_time: str
                    ) -> _QueueEntry:
    job, prior = was
    enqueued = job.created_at or prior.enqueued_at or source_time  # (_enqueued)
    as_before = 0
    if enqueued == prior.enqueued_at and prior.cluster is None and \
            prior.admitted_at is None and not prior.copies and not prior.nodes:
        as_before = 2 if (prior.api_version == job.api_version and not prior.kept
                          and prior.requests == job.requests) else 1
    return (-prior.priority, enqueued, (key[2], key[3], key[0], key[1])), key, was, as_before


class _Cycle:
    def __init__(self, inp: CycleInput,
                 left_out: dict[JobKey, tuple[Job, PriorPlacement]] | None = None) -> None:
        self.inp = inp
        # Settled jobs kept out of the cycle: parked from the start, they are
        # never asked while nothing is admitted or evicted, so they are taken in
        # only at the first admission or eviction (_take_in_left_out); those
        # still out at the end keep their decisions, their positions counted again.
        self.left_out = left_out or {}
        self._quiet = False  # from seeding on, while the jobs left out are out
        self._trying: tuple[int, float, str] | None = None  # see _head_key
        self.tree = inp.tree
        self.usage = QuotaUsage(inp.tree) if inp.tree is not None else None
        # quota -> its name, where no Kueue LocalQueue can have it and a kueue cluster
        # is in the fleet (see with_queue_refusal)
        self._bad_queues = {path: node.name for path, node in inp.tree.nodes.items()
                            if not LOCAL_QUEUE_NAME.fullmatch(node.name)} \
            if inp.tree is not None and any(c.gang_dialect == "kueue" for c in inp.clusters) \
            else {}
        self.clusters = {c.name: ClusterState(c) for c in inp.clusters}
        self._empty: dict[str, ClusterState] = {}
        self.decisions: dict[JobKey, Decision] = {}
        # jobs step 1 found invalid (a PriorityClass, its quota): see snapshot
        self.unresolved: dict[JobKey, str] = {}
        self.problems: list[Problem] = []
        self.pending: dict[JobKey, _Pending] = {}
        self.requeue_notes: dict[JobKey, str] = {}
        self.changes = 0  # admissions + evictions so far
        self.evictions = 0
        self.progress: Callable[[str], None] | None = None  # see reconcile_cycle
        self.pass_label = ""  # the round and pass step 5 is in, for progress
        self._asked = 0  # queued jobs taken off their queues in this pass
        self._as_before = False  # every job admitted before is back as it was (step 2)
        self.ahead = False  # steps 1-2 for the jobs admitted before were done ahead
        # then, those left out as entries of their queues, each in order, and by
        # key (see result); until they are taken in
        self.ahead_queues: dict[str, list[_QueueEntry]] | None = None
        self.ahead_sorted: list[JobKey] | None = None
        # job -> (evictions, seq, blocked, short) when it failed; see _may_have_changed
        self._failed: dict[JobKey, tuple[int, int, Blocked, str | None]] = {}
        # The newest eviction (its number, from 1) below each quota (at it or
        # under it) and on each cluster (newest last).
        self._evicted_below: dict[str, int] = {}
        self._evicted_on: dict[str, int] = {}
        self.evicted_by: dict[JobKey, tuple[JobKey, str]] = {}  # victim -> (preemptor, why)
        self.blocked_by: dict[JobKey, str] = {}  # StrictFIFO: the job -> the head blocking it
        self._copies: dict[JobKey, list[tuple[ClusterState, Fit]]] = {}
        self._groups_cache: dict[tuple[str, str], tuple[list[list[str]], list[str]]] = {}
        self._candidates: dict[tuple[str, ...], frozenset[str]] = {}
        self._sorted_candidates: dict[tuple[str, ...], list[str]] = {}
        self._reclaim_keys: dict[object, int] = {}  # _Pending.reclaims_like -> its number
        self._never_fit_cache: dict[tuple[object, ...], str | None] = {}
        # pod shape -> cluster -> its removals when the shape last did not fit there
        self._fail_memo: dict[tuple[object, ...], dict[str, int]] = {}
        self._group_states: dict[int, list[ClusterState]] = {}  # id(group) -> its clusters
        # (id(group), total, strategy) -> its clusters ranked (see _find_cluster)
        self._rankings: dict[tuple[int, tuple[tuple[str, int], ...], PlacementStrategy],
                             Ranking] = {}
        self._alike_failed: dict[int, tuple[tuple[int, int, int], Blocked]] = {}
        self._alike_keys: dict[tuple[object, ...], int] = {}  # see _attempt
        self.preemption = PreemptionContext(
            usage=self.usage, clusters=self.clusters, settings=inp.settings,
            max_evictions=len(inp.jobs) + len(inp.prior))
        self.admitted = self.preemption.admitted  # read-only view; changed via add/remove
        # Queued jobs that failed and that nothing since could have helped (see
        # parked.py): a pass passes over them without asking _may_have_changed.
        # Kept from seed_settled on (or always, in tests); failed jobs are parked
        # while ``_parking`` (see admit_queued).
        self.parked: Parked | None = None
        self._parking = False
        self._reclaims: dict[object, tuple[int, bool]] = {}  # see _park
        # (quota, priority, policy, enqueue time or "", seq) -> (quota's version, answer):
        # see _newer_victim
        self._newer_victims: dict[tuple[str, int, PreemptionPolicy, str, int],
                                  tuple[int, bool]] = {}
        # jobs admitted that waited sparing a reclaimer before they ever ran
        self._spared_before_it_ran: set[JobKey] = set()
        self._key_by_name: dict[str, JobKey] | None = None  # (see _would_reclaim_back)
        # quota -> job -> (whom it spares (_spared), (its priority, enqueue time and
        # requests)), for its jobs that may wait: made at the first search for
        # victims, kept by _evict (see _spared_in)
        self._sparing: dict[str, dict[JobKey, tuple[str, tuple[int, str, ResourcesView]]]] \
            | None = None
        self._spared_memo: dict[tuple[object, ...], tuple[tuple[int, int], frozenset[str]]] = {}
        if PARK_ALWAYS:
            self._start_parking()

    def retree(self, tree: QuotaTree | None) -> bool:
        """After steps 1-2 (done ahead), the cycle under ``tree``, the same as its
        own but for the values of some max limits (``max_changed``): the
        steps would have been the very same under it when every job admitted
        before was put back as it was (a max is read by no other part of them);
        False, and nothing changed, when not."""
        if not self._as_before or self.usage is None or tree is None:
            return False
        self.tree = tree
        self.usage = self.preemption.usage = self.usage.under(tree)
        return True

    # -- 1 ---------------------------------------------------------------------

    def resolve(self, jobs: Iterable[Job] | None = None) -> None:
        """Step 1 for the invalid jobs and ``jobs`` (all those not left out)."""
        inp = self.inp
        self._decide_invalid(())
        left_out = self.left_out
        if jobs is None:
            jobs = [j for j in inp.jobs if j.key not in left_out] if left_out else inp.jobs
        self._resolve_jobs(sorted(jobs, key=_job_key))

    def _decide_invalid(self, keep: Container[JobKey]) -> None:
        """Each invalid job: with its enqueue time, and, when it waited in a
        quota's queue before, that quota, its priority, requests and policy as
        they were (as one whose file no longer reads: it is back in its place
        once fixed)."""
        priors = self.inp.prior
        for bad in self.inp.invalid:
            if bad.key in keep:
                continue
            decision = Decision(
                key=bad.key, api_version=bad.api_version, path=bad.path, blob=bad.blob,
                phase=Phase.INVALID, reason=f"{shown_path(bad.path)}:{bad.line}: {bad.message}",
                enqueued_at=self._enqueued(None, bad.key))
            prior = priors.get(bad.key)
            if prior is not None and prior.phase in _WAITED and prior.quota is not None:
                decision = evolve(decision, quota=prior.quota, priority=prior.priority,
                                  requests=dict(prior.requests), policy=prior.policy)
            self.decisions[bad.key] = decision
        if self.inp.broken_paths:
            self._keep_waiting_of_broken_files()

    def _keep_waiting_of_broken_files(self) -> None:
        """A job of a quota that waited (queued, inadmissible, or invalid with
        its quota known) in a file that cannot be read now stays, invalid, with
        its enqueue time: fixed, it is back where it was in its queue (a job
        that ran keeps its placement, step 2). Read no more, it would be a new
        job once fixed. (One whose file never said its name has no quota.)"""
        inp = self.inp
        broken = inp.broken_paths
        waiting = [p for p in inp.prior.values() if p.path in broken and p.phase in _WAITED
                   and p.quota is not None
                   and p.key not in inp.ended]  # (those decided apart: see core.outcomes)
        if not waiting:
            return
        named = {j.key for j in inp.jobs}.union(bad.key for bad in inp.invalid)
        for prior in waiting:
            if prior.key in named:
                continue
            enqueued = prior.enqueued_at or inp.source_time
            self.decisions[prior.key] = Decision(
                key=prior.key, api_version=prior.api_version, path=prior.path,
                blob=prior.blob, phase=Phase.INVALID, enqueued_at=enqueued,
                quota=prior.quota, priority=prior.priority, requests=dict(prior.requests),
                policy=prior.policy, reason=(
                    f"source is invalid ({broken[prior.path]}); it keeps its enqueue time "
                    f"({enqueued}), so its place in its queue, until it is fixed"))

    def resolve_more(self, jobs: list[Job], done: Container[JobKey]) -> None:
        """Step 1 again for the invalid jobs (the input changed: their enqueue
        time may be the new commit's) but those decided already (resolved in
        ``done``, or kept where they ran), and for ``jobs`` (in key order), after
        step 2 for the others: as it would have been before (a job's resolution
        reads none of the state step 2 builds). What step 1 decided ahead of
        jobs not resolved there and not kept where they ran (invalid ones, and
        those that waited in files that no longer read, which ``prior`` and
        ``ended`` decide) is decided again, from this input alone."""
        decisions = self.decisions
        for key in [k for k, d in decisions.items() if k not in done and not d.kept]:
            del decisions[key]
        self._decide_invalid({bad.key for bad in self.inp.invalid if bad.key in done
                              or (bad.key in decisions and decisions[bad.key].kept)})
        self._resolve_jobs(jobs)
        self.ahead = True

    def _missing(self, kind: str, name: str, field: str) -> str:
        """Why the ``kind`` named ``name`` a job's ``field`` names is not there."""
        if f"{kind} {name}" in self.inp.defined_twice:
            return (f"{kind} {name!r} is defined more than once (see the errors of fleetq "
                    f"validate): none of them counts; remove or rename all but one")
        known = self.inp.priority_classes if kind == "PriorityClass" else \
            self.inp.workload_priority_classes
        return (f"{kind} {name!r} does not exist{did_you_mean(name, sorted(known))}; create it "
                f"or fix {field}")

    def _resolve_jobs(self, jobs: list[Job]) -> None:
        """Step 1 for ``jobs`` (in key order)."""
        inp = self.inp
        policies = inp.policies
        default_policy = self._default_policy()
        reclaim_keys = self._reclaim_keys
        for job in jobs:
            key = job.key
            prior = inp.prior.get(key)
            enqueued = self._enqueued(job, key)
            problems: list[tuple[int, str]] = []  # (line, what is wrong there): each told
            priority = inp.default_priority
            if job.priority_class is not None:
                if job.priority_class in inp.priority_classes:
                    priority = inp.priority_classes[job.priority_class]
                else:
                    problems.append((job.line_of(PRIORITY_CLASS_AT), self._missing(
                        "PriorityClass", job.priority_class, "priorityClassName")))
            if job.workload_priority_class is not None:  # Kueue: it wins over the pods' class
                if job.workload_priority_class in inp.workload_priority_classes:
                    priority = inp.workload_priority_classes[job.workload_priority_class]
                else:
                    problems.append((job.line_of(WORKLOAD_PRIORITY_CLASS_AT), self._missing(
                        "WorkloadPriorityClass", job.workload_priority_class,
                        "label kueue.x-k8s.io/priority-class")))
            policy = select_policy(policies, job) or default_policy
            quota: str | None = None
            if self.tree is not None:
                quota, why = self.tree.bind(key.namespace, job.quota_name)
                # (a job its policy places by capacity alone needs no quota: DESIGN
                # "Policies"; a quota label of its that names none is a mistake still)
                if quota is None and (job.quota_name is not None or policy is None
                                      or policy.queued):
                    # (looked for only then: most jobs of 100,000 bind)
                    unset = job.line_of(NAMESPACE_UNSET_AT, 0)
                    if unset:
                        quota, why = self.tree.bind(key.namespace, job.quota_name, False,
                                                    job.path)
                    problems.append((unset or job.line_of(QUOTA_AT), why))
            elif policy is not None and policy.queued:
                problems.append((job.line, (
                    f"{inp.tree_unused}, and its policy {policy.ref} queues jobs; fix the "
                    f"tree" if inp.tree_unused is not None else
                    "no ElasticQuotaTree in the fleet, but its policy "
                    f"{policy.ref} queues jobs; add an ElasticQuotaTree")))
            if problems:  # (an Invalid job holds no quota; one that waited shows the quota
                # and priority it waited with, as one whose file breaks: _decide_invalid;
                # the quota it binds to now, when it binds, and none its tree no longer has)
                waited = prior is not None and prior.phase in _WAITED and prior.quota is not None
                binds, quota = quota, None
                if waited and prior is not None:
                    priority = prior.priority
                    quota = binds or (prior.quota if self.tree is None
                                      or prior.quota in self.tree.nodes else None)
            base = Decision(key=key, api_version=job.api_version, path=job.path,
                            blob=job.blob, phase=Phase.INVALID, reason="",
                            enqueued_at=enqueued, quota=quota, priority=priority,
                            requests=job.requests,
                            pod_sets=tuple(PodSetCount(p.name, p.replicas)
                                           for p in job.pod_sets),
                            preempted_by=prior.preempted_by if prior else None,
                            preemptions=prior.preemptions if prior else 0,
                            preemption_reason=prior.preemption_reason if prior else None,
                            policy=policy.ref if policy else None)
            if problems:
                self.problems.extend(Problem(job.path, line, problem)
                                     for line, problem in problems)
                reason = "; ".join(f"{shown_path(job.path)}:{line}: {problem}"
                                   for line, problem in problems)
                self.decisions[key] = evolve(base, reason=reason)
                self.unresolved[key] = reason  # (admitted before: kept where it runs, step 2)
                continue
            if policy is None:
                ref = inp.settings.default_policy
                fix = ("add one or set spec.defaultPolicy in fleet.yaml" if ref is None else
                       f"add one, or fix spec.defaultPolicy in fleet.yaml: it names "
                       f"{'/'.join(n for n in ref if n)!r}, which is no policy of the fleet")
                unselected = (f"no PropagationPolicy or ClusterPropagationPolicy selects "
                              f"{job.api_version} {key.kind} {key.namespace}/{key.name}; {fix}")
                self.decisions[key] = evolve(base, phase=Phase.INADMISSIBLE, reason=unselected)
                # (said where the job is, too: validate passed a job no policy would place)
                self.problems.append(Problem(job.path, job.line, unselected, "warning"))
                # (admitted before: kept where it runs, step 2, as Karmada leaves a workload
                # whose PropagationPolicy is deleted where it was propagated)
                self.unresolved[key] = unselected
                continue
            groups, notes, excluded, refused = narrowed(
                *self._groups(policy, key.kind_ref),
                prior.failed_on if prior is not None else (), self._refused(job, quota),
                self.inp.clusters)
            self.decisions[key] = base
            p = self.pending[key] = _Pending(
                job=job, policy=policy, quota=quota, priority=priority, enqueued_at=enqueued,
                groups=groups, notes=notes, total=job_cluster_total(job.pod_sets), prior=prior)
            # (a number is hashed at once; the tuple, again at each look-up)
            p.reclaims_like = reclaim_keys.setdefault(p.reclaims_like, len(reclaim_keys))
            if excluded:
                p.like = (*p.like, *excluded)
            if refused:
                p.refused = refused

    def _refused(self, job: Job, quota: str | None) -> Sequence[tuple[str, str]]:
        """The gang dialects whose clusters would refuse ``job`` (see ``narrowed``)."""
        if quota is None:  # (placed by capacity alone, with no quota)
            return with_no_queue_refusal(job.refused)
        bad = self._bad_queues.get(quota)
        return job.refused if bad is None else with_queue_refusal(job.refused, bad)

    def _candidate_set(self, p: _Pending) -> frozenset[str]:
        ck = p.like
        got = self._candidates.get(ck)
        if got is None:
            got = self._candidates[ck] = frozenset(n for g in p.groups for n in g)
        return got

    def _default_policy(self) -> Policy | None:
        return default_policy(self.inp.policies, self.inp.settings)

    def _enqueued(self, job: Job | None, key: JobKey) -> str:
        if job is not None and job.created_at:
            return job.created_at
        prior = self.inp.prior.get(key)
        if prior is not None and prior.enqueued_at:
            return prior.enqueued_at
        return self.inp.source_time

    def _groups(self, policy: Policy, kind_ref: str) -> tuple[list[list[str]], list[str]]:
        ck = (policy.ref, kind_ref)
        got = self._groups_cache.get(ck)
        if got is None:
            got = candidate_groups(policy, kind_ref, self.inp.clusters)
            self._groups_cache[ck] = got
        return got

    # -- 2 ---------------------------------------------------------------------

    def snapshot(self) -> None:
        inp = self.inp
        broken = inp.broken_paths
        invalid = {bad.key: bad for bad in inp.invalid}
        priors = sorted((p for p in inp.prior.values() if p.phase is Phase.ADMITTED),
                        key=lambda p: (p.admitted_at or "", p.key))
        changed: list[_Pending] = []
        moved: list[tuple[_Pending, ClusterState]] = []  # (its quota changed, nothing else)
        lost: dict[JobKey, list[str]] = {}  # (``ClusterState.lost_nodes``)
        self._as_before = True
        ended = inp.ended
        for prior in priors:
            key = prior.key
            if key in ended:
                self._as_before = False
                continue  # it ended where it ran: freed
            cluster = self.clusters.get(prior.cluster or "")
            pending = self.pending.get(key)
            if pending is not None:
                if cluster is None:
                    self._as_before = False
                    self.requeue_notes[key] = f"its cluster {prior.cluster} left the fleet"
                    continue
                taint = untolerated(cluster.no_execute, pending.policy.cluster_tolerations)
                if taint is not None:  # (as Kubernetes evicts the pods a NoExecute taint hits)
                    self._as_before = False
                    self.requeue_notes[key] = (
                        f"its cluster {cluster.name} has the taint {taint.key}"
                        f"{'=' + taint.value if taint.value else ''}:NoExecute, which its "
                        f"policy's clusterTolerations do not tolerate")
                    continue
                gone = cluster.lost_nodes(pending.job.pod_sets, prior.nodes) \
                    if prior.nodes and cluster.cluster.resource_reservation else []
                if gone or not counted_as_decided(pending.job, prior):
                    self._as_before = False
                    changed.append(pending)
                    if gone:
                        lost[key] = gone
                elif pending.quota != prior.quota:
                    self._as_before = False
                    if self.tree is not None and prior.quota in self.tree.nodes:
                        moved.append((pending, cluster))  # (checked once the others are back)
                    else:  # (its quota left the tree, renamed or reshaped: nobody moved it,
                        self._put_back(pending, cluster)  # and it runs on, as under a max lowered)
                else:
                    self._put_back(pending, cluster)
                continue
            bad_reason = None
            if key in invalid:
                bad = invalid[key]
                bad_reason = f"{shown_path(bad.path)}:{bad.line}: {bad.message}"
            elif prior.path in broken:
                bad_reason = broken[prior.path]
            elif key in self.unresolved:  # (its PriorityClass, its quota, ... went)
                bad_reason = self.unresolved[key]
            if bad_reason is None or cluster is None:
                self._as_before = False
                continue  # deleted from the source (or its cluster is gone): freed
            self._keep_last_good(prior, cluster, bad_reason)
        for pending, cluster in moved:  # (where it runs, when its new quota has room)
            was = pending.prior
            assert was is not None
            short = self._quota_shortfall(pending)
            if short is None:
                self._put_back(pending, cluster)
            else:
                self.requeue_notes[pending.job.key] = (
                    f"its quota is {pending.quota} now, not {was.quota or 'none'}, and has no "
                    f"room for it ({short})")
        for pending in changed:
            key = pending.job.key
            was = pending.prior
            assert was is not None
            cluster = self.clusters[was.cluster or ""]
            fit = cluster.fit(key, pending.job.pod_sets, pending.total)
            short = self._quota_shortfall(pending)
            if isinstance(fit, Fit) and short is None:
                self._admit(pending, cluster, fit, admitted_at=was.admitted_at)
                if key in lost:  # (said in the commit message: its pods run elsewhere there)
                    self.requeue_notes[key] = (
                        f"its node(s) {', '.join(lost[key])} of {cluster.name} no longer hold "
                        f"its pods (Kubernetes removes them): packed again on its other nodes")
            else:
                why = fit if isinstance(fit, str) else (short or "")
                if key in lost:
                    self.requeue_notes[key] = (
                        f"its node(s) {', '.join(lost[key])} of {cluster.name} no longer hold "
                        f"its pods (Kubernetes removes them), and it no longer fits there "
                        f"({why})")
                    continue
                what = ("its requests changed" if was.blob != pending.job.blob else
                        # (the same manifest, counted anew: fleetq counts its pods as its
                        # operator starts them, ``pod_templates``)
                        "its pods are counted as its operator starts them now (before: "
                        f"{_pods_of(was.pod_sets)}; now: {_pods_of(pending.job.pod_sets)})")
                self.requeue_notes[key] = f"{what} and no longer fit where it ran ({why})"

    def _put_back(self, pending: _Pending, cluster: ClusterState) -> None:
        """A job the previous state admitted, back where it runs, as it was."""
        was = pending.prior
        assert was is not None
        self._admit(pending, cluster, None, admitted_at=was.admitted_at, force=True,
                    copies=was.copies, nodes=was.nodes)
        if cluster.name not in self._candidate_set(pending):
            self._runs_off_its_candidates(
                pending.job.key, cluster, self._refused(pending.job, pending.quota))

    def _runs_off_its_candidates(self, key: JobKey, cluster: ClusterState,
                                 refused: Sequence[tuple[str, str]] = ()) -> None:
        """Said of a running job whose cluster its policy no longer gives it
        (its affinity, its tolerations of NoSchedule taints, the cluster's
        capabilities), or whose gang scheduler would refuse it as it is
        written now (``Job.refused``: it refuses the change, and the job runs
        on as it was sent): it is not stopped for that, as Kubernetes leaves a
        running pod on a node that no longer matches its affinity."""
        d = self.decisions[key]
        name, dialect = cluster.cluster.name, cluster.cluster.gang_dialect
        why = dict(refused).get(dialect)
        said = (f"{name} (gangDialect: {dialect}) would refuse it as it is written: {why}; "
                f"as it runs there, it runs on until it ends (write it as {name} takes it, "
                f"or delete it and push it again)" if why is not None else
                f"{name} is no longer one of the clusters its policy gives it: it runs on "
                f"there until it ends (to move it, delete it and push it again)")
        self.decisions[key] = evolve(d, reason=f"{d.reason}; {said}")

    def seed_settled(self) -> None:
        """Count the ``settled`` jobs as failed on the snapshot (see step 2)."""
        if not self.inp.settled or not self._as_before:
            return
        self._start_parking()
        left_out = self.left_out  # settled jobs only: all of them when as many
        self._seed([] if len(left_out) == len(self.inp.settled)
                   else sorted(self.inp.settled.difference(left_out)))
        self._quiet = bool(self.left_out)

    def _seed(self, keys: list[JobKey]) -> None:
        seq, usage = self.preemption.last_seq, self.usage
        for key in keys:
            p = self.pending.get(key)
            if p is None or key in self.admitted or not p.policy.queued or p.quota is None:
                continue
            if self.inp.settings.for_quota(p.quota).strategy is QueueStrategy.STRICT_FIFO:
                continue  # it may have waited behind its queue's head, never tried
            short = usage.top_shortfall(p.quota, p.job.requests,
                                        preemptible=p.job.preemptible) \
                if usage is not None else None
            untried = usage is not None and short is not None and not usage.borrow_counted(
                p.quota, short.resource) and usage.short_of_unguaranteed_only(
                p.quota, p.job.requests)
            self._failed[key] = (0, seq, UNTRIED if untried else ANY_REASON,
                                 short.quota if short else None)
            self._wait(p)
            self._park(p)

    def _take_in_left_out(self) -> None:
        """The cycle is about to admit or evict, which may help the jobs left out:
        they are resolved and seeded now as they would have been at the start,
        and those the pass has not come to yet join their queues. (Until now
        nothing changed, so each would have been passed over as it is: a pass
        takes the queues' jobs in one order, that of ``_head_key``, and the job
        being tried, at ``_trying``, is where it stands.)"""
        left, self.left_out, self._quiet = self.left_out, {}, False
        self.ahead_queues = self.ahead_sorted = None
        keys = sorted(left)
        self._resolve_jobs([left[key][0] for key in keys])
        if not self._as_before:
            return  # the full cycle does not seed them either
        self._seed(keys)
        if self._trying is None:
            return  # the pass's queues are made from ``pending`` later
        touched = set()
        for key in keys:
            p = self.pending.get(key)
            if p is None or key in self.admitted or p.quota is None or not p.policy.queued:
                continue
            if self._head_key(p.quota, p) < self._trying:
                continue  # passed over already in this pass
            heapq.heappush(self._queues.setdefault(p.quota, []), (p.order, p))
            touched.add(p.quota)
        for leaf in sorted(touched):
            self._push_head(leaf)

    def _start_parking(self) -> None:
        if self.usage is not None and self.parked is None:
            self.parked = Parked(self.usage, self.preemption)
        self._parking = self.parked is not None

    def _keep_last_good(self, prior: PriorPlacement, cluster: ClusterState,
                        bad_reason: str) -> None:
        key = prior.key
        pod_sets = (PodSet(name="kept", replicas=1, per_pod=dict(prior.requests)),)
        total = dict(prior.requests)
        total.pop(MAX_JOBS, None)
        cluster.place(key, pod_sets, Fit(cluster.name, total))
        quota = prior.quota  # (of no quota here when its quota left the tree)
        if self.usage is not None and quota not in self.usage.tree.nodes:
            quota = None
        if self.usage is not None and quota is not None:
            # Charged as preemptible usage, but never a victim (preemptible=False below).
            self.usage.charge(quota, prior.requests, preemptible=True)
        self.preemption.add(Admitted(
            key=key, quota=quota, priority=prior.priority, preemptible=False,
            requests=dict(prior.requests), cluster=cluster.name, pod_sets=pod_sets,
            admitted_at=prior.admitted_at or "", enqueued_at=prior.enqueued_at,
            seq=self.preemption.next_seq()))
        previous = self.decisions.get(key)
        api_version = previous.api_version if previous else prior.api_version
        self.decisions[key] = Decision(
            key=key, api_version=api_version, path=prior.path, blob=prior.blob,
            phase=Phase.ADMITTED, enqueued_at=prior.enqueued_at, quota=prior.quota,
            priority=prior.priority, cluster=prior.cluster, pod_sets=prior.pod_sets,
            requests=dict(prior.requests), admitted_at=prior.admitted_at, kept=True,
            policy=prior.policy, copies=prior.copies, nodes=prior.nodes,
            reason=(f"source is invalid ({bad_reason}); keeping the last good placement "
                    f"until it is fixed"))

    # -- 3 ---------------------------------------------------------------------

    def screen_inadmissible(self) -> None:
        settled = self.inp.settled  # queued last time on the same tree and clusters
        for key in sorted(self.pending):
            pending = self.pending[key]
            if key in self.admitted or key in settled:
                continue
            self._screen(key, pending)

    def screen_evicted(self) -> None:
        """Step 3 for the jobs evicted in this cycle that wait now: one that ran
        beyond what could ever admit it (its quota's max lowered since, say)
        and was preempted is Inadmissible, as the next reconcile, which screens
        it, would say (a job left queued is taken as screened: ``settled``)."""
        for key in sorted(self.evicted_by):
            pending = self.pending.get(key)
            if pending is None or key in self.admitted or \
                    self.decisions[key].phase is not Phase.QUEUED:
                continue
            self._screen(key, pending)

    def _screen(self, key: JobKey, pending: _Pending) -> None:
        """``pending`` made Inadmissible when nothing could ever admit it."""
        why = self._never_admissible(pending)
        if why is not None:
            del self.pending[key]
            self.decisions[key] = evolve(self.decisions[key], phase=Phase.INADMISSIBLE,
                                         reason=why)

    def _never_admissible(self, p: _Pending) -> str | None:
        job = p.job
        if p.policy.queued and self.usage is not None and p.quota is not None:
            short = self.usage.never_fits(p.quota, job.requests, preemptible=job.preemptible)
            if short is not None:
                said = (f"{short.describe().replace(' 0 used + ', ' ')} even with the quota "
                        f"empty")
                too_big = self._fits_no_cluster(p) if any(p.groups) else None
                if too_big is None:
                    return f"{said}; lower the job's requests or raise the quota's {short.bound}"
                why, fix = too_big  # (a larger quota would not let it run either)
                return f"{said}, and {why}; lower its requests" + (
                    "" if fix == LOWER_OR_ADD else f" and {fix}")
        if not any(p.groups):
            if not self.clusters:
                return ("the fleet has no MemberCluster to run it on; add one (a file like "
                        "clusters/<name>.yaml of kind MemberCluster)")
            why = "; ".join(p.notes) if p.notes else "its policy's clusterAffinity selects none"
            return f"no member cluster is a candidate for it under {p.policy.ref}: {why}"
        too_big = self._fits_no_cluster(p)
        return None if too_big is None else "; ".join(too_big)

    def _fits_no_cluster(self, p: _Pending) -> tuple[str, str] | None:
        """Why ``p`` fits none of its candidate clusters even when empty, and
        the fix; None when one would hold it."""
        job = p.job
        shape = p.shape
        reasons: list[str] = []
        names = self._sorted_candidates.get(p.like)
        if names is None:
            names = self._sorted_candidates[p.like] = sorted(self._candidate_set(p))
        for name in names:
            ck = (name, shape)
            if ck not in self._never_fit_cache:
                empty = self._empty_state(name)
                fit = empty.fit(job.key, job.pod_sets, p.total)
                self._never_fit_cache[ck] = fit if isinstance(fit, str) else None
            why_not = self._never_fit_cache[ck]
            if why_not is None:
                return None
            reasons.append(why_not)
        fix = LOWER_OR_ADD
        if all(NO_NODE_MATCHES in r for r in reasons):  # (what its pods ask of nodes)
            asked = [what for what, used in (
                ("nodeSelector", any(ps.node_selector for ps in job.pod_sets)),
                ("node affinity", any(ps.node_affinity for ps in job.pod_sets)),
                ("tolerations", True)) if used]
            fix = f"fix its pods' {listed(asked)}, or the nodes' labels or taints"
        if p.refused:  # (a cluster that refuses it as it is written would take it otherwise)
            fix = f"{fix}, or write it as the clusters that refuse it take it"
        return f"{FITS_NO_CLUSTER_EMPTY}: " + _join_notes(reasons) + "".join(
            f"; {note}" for note in p.refused), fix

    def _empty_state(self, name: str) -> ClusterState:
        state = self._empty.get(name)
        if state is None:
            state = ClusterState(self.clusters[name].cluster)
            self._empty[name] = state
        return state

    # -- 4 ---------------------------------------------------------------------

    def place_capacity_only(self) -> None:
        waiting = sorted((p for p in self.pending.values()
                          if not p.policy.queued and p.job.key not in self.admitted),
                         key=lambda p: p.order)
        for p in waiting:
            choice = self._find_cluster(p)
            if isinstance(choice, str):
                self._wait(p)
            else:
                self._admit(p, choice[0], choice[1], admitted_at=None)

    # -- 5 ---------------------------------------------------------------------

    def admit_queued(self) -> None:
        # One heap per leaf quota in queue order; ``heads`` holds each open
        # queue's current head under the cross-queue key. A victim evicted
        # during the loop goes back into its queue (keeping its enqueue time)
        # and may be admitted again, elsewhere, in this same cycle.
        self._queues: dict[str, list[tuple[str, _Pending]]] = {}
        self._newer_victims.clear()  # (answers of the last pass: their seqs are past)
        for p in self.pending.values():
            if p.policy.queued and p.job.key not in self.admitted and p.quota is not None:
                self._queues.setdefault(p.quota, []).append((p.order, p))
        for q in self._queues.values():
            heapq.heapify(q)
        self._heads: list[tuple[tuple[int, float, str], str, int]] = []
        self._head_version: dict[str, int] = {}
        self._blocked: set[str] = set()
        for leaf in sorted(self._queues):
            self._push_head(leaf)
        heads = self._heads
        parked: Parked | frozenset[JobKey] = self.parked if self.parked is not None \
            else frozenset()
        asleep, woken = len(parked), self.parked.woken if self.parked is not None else 0
        tell, self._asked, report_at = self.progress, 0, PROGRESS_TRIES
        while heads:
            head, leaf, version = heapq.heappop(heads)
            if version != self._head_version[leaf] or leaf in self._blocked:
                continue
            queue = self._queues[leaf]
            _, p = heapq.heappop(queue)
            self._asked += 1
            if tell is not None and self._asked >= report_at:
                tell(f"scheduling: {self.pass_label}: {self._asked} queued jobs asked, "
                     f"{len(self.admitted)} admitted, {self.evictions} evicted")
                report_at = self._asked + PROGRESS_TRIES
            if p.job.key in parked:
                # It would fail at once (_try_admit), changing nothing; so would
                # the jobs after it that _pass_over passes over.
                self._pass_over(leaf, queue, parked)
                self._push_head(leaf)
                continue
            self._trying = head
            tried = self._try_admit(p)
            self._trying = None
            if not tried:
                self._wait(p)
                if self.inp.settings.for_quota(leaf).strategy is QueueStrategy.STRICT_FIFO:
                    self._blocked.add(leaf)
                    while queue:
                        _, rest = heapq.heappop(queue)
                        self._wait(rest, blocked_by=(
                            f"{BLOCKED_BEHIND}{p.job.key} at the head of StrictFIFO queue "
                            f"{leaf}"))
                    continue
                if self._parking:
                    self._park(p)
                self._pass_over(leaf, queue, parked)
            self._push_head(leaf)
        if self.parked is not None and asleep >= 1000 and \
                self.parked.woken - woken > asleep // 2:
            # Most parked jobs were woken in this pass: a fleet whose every change
            # may help most of its waiting jobs. Parking them costs more than asking
            # them, so from now on failed jobs are asked (those parked stay parked).
            # (With fewer parked jobs, either way costs little.)
            self._parking = False

    def _pass_over(self, leaf: str, queue: list[tuple[str, _Pending]],
                   parked: Parked | frozenset[JobKey]) -> None:
        """After a turn in ``leaf``'s BestEffortFIFO queue that changed nothing (a
        failure, or a parked job passed over), pass over the jobs next in it that
        come next in the pass and would fail at once, nothing having changed:
        parked ones, and those whose failure nothing since could have helped
        (``_may_have_changed``). Each is dealt with as its turn would
        deal with it (marked waiting, parked if parking), without its head going
        through the heap of heads and out again."""
        if TRY_ALWAYS:
            return
        heads, failed_of = self._heads, self._failed
        first = heads[0][0] if heads else None  # (no head is pushed or popped here)
        share = self.preemption.dominant_share(leaf)  # (nor is the leaf's usage changed)
        while queue:
            q = queue[0][1]
            if first is not None and self._head_key(leaf, q, share) >= first:
                return  # another queue's head comes first (or a stale entry: asked as before)
            key = q.job.key
            if key in parked:
                heapq.heappop(queue)  # (as the pass skips parked jobs: no change to make)
                self._asked += 1
                continue
            failed = failed_of.get(key)
            if failed is None or self._may_have_changed(q, *failed):
                return  # its turn tries it (and asks again: a yes is rare)
            heapq.heappop(queue)
            self._asked += 1
            self._wait(q)
            if self._parking:
                self._park(q)

    def _park(self, p: _Pending) -> None:
        """Set aside ``p``, which failed (in a BestEffortFIFO queue: a StrictFIFO
        queue is popped whole each pass), until an event may help it."""
        if self.parked is None or self.usage is None or p.quota is None:
            return
        key = p.job.key
        _, _, blocked, short = self._failed[key]
        if blocked.untried:
            return  # asked at each turn: no event of the index tells when it may reclaim
        self.parked.park(key, p.quota, p.priority, self._may_reclaim(p), blocked, short,
                         self._candidate_set(p))

    def _may_reclaim(self, p: _Pending) -> bool:
        """``may_reclaim`` for ``p`` now. It reads only the leaf's usage and jobs:
        the same for jobs alike until one of the leaf's jobs comes or goes."""
        assert self.usage is not None and p.quota is not None
        version = self.preemption.version_of(p.quota)
        known = self._reclaims.get(p.reclaims_like)
        if known is not None and known[0] == version:
            return known[1]
        policy = self.inp.settings.for_quota(p.quota).preemption
        reclaims = may_reclaim(self.preemption, self.usage, p.quota, p.job.requests,
                               p.priority, policy)
        self._reclaims[p.reclaims_like] = (version, reclaims)
        return reclaims

    def check_parked(self) -> None:
        """Assert that no parked job could have been helped since it failed."""
        if self.parked is None:
            return
        for key in self.parked:
            p = self.pending[key]
            assert key not in self.admitted, key
            assert not self._may_have_changed(p, *self._failed[key]), (
                f"{key} is parked but may fit now: {self._failed[key]}")

    def _push_head(self, leaf: str) -> None:
        queue = self._queues.get(leaf)
        if not queue or leaf in self._blocked:
            return
        version = self._head_version.get(leaf, 0) + 1
        self._head_version[leaf] = version
        heapq.heappush(self._heads, (self._head_key(leaf, queue[0][1]), leaf, version))

    def _head_key(self, leaf: str, p: _Pending, share: float | None = None
                  ) -> tuple[int, float, str]:
        """Across queues: priority desc, then dominant share asc, then enqueue time
        (then namespace/name, group and kind: ``after_priority``). ``share``: the
        leaf's dominant share, when the caller has it."""
        if share is None:
            share = self.preemption.dominant_share(leaf)
        return (-p.priority, share, p.after_priority)

    def _quota_shortfall(self, p: _Pending) -> str | None:
        if not p.policy.queued or self.usage is None or p.quota is None:
            return None
        short = self.usage.shortfall(p.quota, p.job.requests, preemptible=p.job.preemptible)
        return None if short is None else max_jobs_hint(short)

    def _try_admit(self, p: _Pending) -> bool:
        """Admit ``p`` if it fits, preempting if allowed; False if it must wait."""
        key = p.job.key
        failed = self._failed.get(key)
        if failed is not None and not TRY_ALWAYS and not self._may_have_changed(p, *failed):
            return False
        blocked = self._attempt(p)
        if blocked is None:
            self._failed.pop(key, None)
            return True
        # A failed try changed nothing: the quota nearest the root that p is short of
        short = self.usage.top_shortfall(p.quota, p.job.requests,
                                         preemptible=p.job.preemptible) \
            if self.usage is not None and p.quota is not None else None
        self._failed[key] = (self.evictions, self.preemption.last_seq, blocked,
                             short.quota if short is not None else None)
        return False

    def _may_have_changed(self, p: _Pending, evictions: int, seq: int,
                          blocked: Blocked, short: str | None) -> bool:
        """Could ``p``, which failed when the cycle stood at (evictions, seq), fit now?

        An eviction frees its quota and its cluster. If ``p`` was blocked by a
        quota no set of victims could bring within reach, only an eviction below
        that quota can help, and only once the usage of a limit that blocked it
        is down to what it could pass with (``Blocked.limits``) or its own quota
        lost a job and it may reclaim now (``Blocked.own``: or lost one at all,
        when the limits may lack some of its tries without reclaiming).
        Otherwise one helps if it was in ``p``'s own quota
        or below the quota ``p`` was short of, or on a candidate cluster that
        could now take ``p`` (free room plus what ``p`` may evict there; where
        it may evict nothing, only if its pods pack there now).
        Admissions only fill quotas and clusters, so with no such eviction
        only a newly admitted job it may preempt can make a difference: a
        lower (or, by policy, newer equal) priority one in its own quota, or,
        when its quota is within min, one of a borrowing quota. (But for a job
        that did not try to reclaim, short only of what its min does not
        guarantee: any admission or eviction that changes that may help it.)
        """
        if p.quota is None or self.usage is None:
            return evictions != self.evictions
        ctx, usage, quota = self.preemption, self.usage, p.quota
        if blocked.untried and (evictions != self.evictions or ctx.last_seq != seq) and \
                not usage.short_of_unguaranteed_only(quota, p.job.requests):
            return True  # it may reclaim now (Blocked.untried)
        policy = self.inp.settings.for_quota(quota).preemption
        reclaim: bool | None = None  # may it reclaim from borrowers now? (when asked)
        if evictions != self.evictions:
            below = self._evicted_below  # since it failed: a number above ``evictions``
            own_quota = below.get(quota, 0) > evictions
            if blocked.quota is not None:
                # It stays blocked while no limit that blocked it has room again, and
                # its own quota is as it was; or, when the limits are those of every
                # try it has without reclaiming (Blocked.own), while it may not reclaim.
                if below.get(blocked.quota, 0) > evictions:
                    if not blocked.limits or any(usage.used[b].get(r, 0) <= most
                                                 for b, r, most in blocked.limits):
                        return True
                    if own_quota:
                        if not blocked.own:
                            return True
                        reclaim = self._may_reclaim(p)
                        if reclaim:
                            return True
            else:
                if own_quota or (short is not None and below.get(short, 0) > evictions):
                    return True
                candidates = self._candidate_set(p)
                evicted_on = []  # its candidate clusters evicted on since it failed, once each
                for cluster, number in reversed(self._evicted_on.items()):
                    if number <= evictions:
                        break
                    if cluster in candidates:
                        evicted_on.append(cluster)
                if evicted_on:
                    reclaim = self._may_reclaim(p)
                    if ctx.could_fit(evicted_on, p.total, quota, p.priority, policy, reclaim,
                                     first=True, pods=p.job.pod_sets,
                                     failed=self._fail_memo.setdefault(p.shape, {})):
                        return True
        if ctx.last_seq == seq:
            return False
        if ctx.last_seq_in.get(quota, 0) > seq and self._newer_victim(p, policy, seq):
            return True
        if ctx.newest_borrowing(quota) <= seq:
            return False  # no borrowing quota has a job it could reclaim that is new
        if reclaim is None:
            reclaim = self._may_reclaim(p)
        return reclaim

    def _newer_victim(self, p: _Pending, policy: PreemptionPolicy, seq: int) -> bool:
        """Is a job of ``p``'s quota that ``p`` may preempt there (by ``policy``,
        its quota's), admitted after ``seq``? The same for every job of the quota
        with ``p``'s priority (and enqueue time, where the policy compares it)
        until a job of the quota comes or goes: asked of most waiting jobs again
        at each pass, it is kept for the pass (a few thousand answers at 100,000
        jobs)."""
        assert p.quota is not None
        ctx, quota = self.preemption, p.quota
        enqueued = p.enqueued_at if policy is PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY \
            else ""
        ck = (quota, p.priority, policy, enqueued, seq)
        version = ctx.version_of(quota)
        known = self._newer_victims.get(ck)
        if known is not None and known[0] == version:
            return known[1]
        found = False
        if any(at > seq and may_evict_priority(policy, prio, p.priority)
               for prio, at in ctx.newest_victim.get(quota, {}).items()):
            for victim in reversed(ctx.by_quota[quota].values()):  # newest first
                if victim.seq <= seq:
                    break
                if victim.can_be_victim and eligible_same_quota(
                        policy, victim, p.priority, p.enqueued_at):
                    found = True
                    break
        self._newer_victims[ck] = (version, found)
        return found

    def _attempt(self, p: _Pending) -> Blocked | None:
        """Admit ``p`` (``None``), or say what blocked it.

        Jobs alike (same quota, priority, policy, kind, pod shape and
        preemptibility; same enqueue time where the policy compares it) get
        the same answer on the same snapshot: once one failed, the others
        fail at once until something is admitted or evicted.
        """
        alike = p.alike
        if alike is None:  # (a number: the tuple would be hashed again at each try)
            policy = self.inp.settings.for_quota(p.quota).preemption if p.quota else None
            ck = (p.quota, p.priority, p.like, p.shape, p.job.preemptible,
                  p.enqueued_at if policy is PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY
                  else None, self._spared(p))
            alike = p.alike = self._alike_keys.setdefault(ck, len(self._alike_keys))
        now = (self.preemption.last_seq, self.evictions, self.preemption.changes)
        known = self._alike_failed.get(alike)
        if known is not None and known[0] == now:
            return known[1]
        blocked = self._attempt_now(p)
        if blocked is not None:
            self._alike_failed[alike] = (now, blocked)
        return blocked

    def _attempt_now(self, p: _Pending) -> Blocked | None:
        if self._quota_shortfall(p) is None:
            choice = self._find_cluster(p)
            if not isinstance(choice, str):
                self._admit(p, choice[0], choice[1], admitted_at=None)
                return None
        plan = find_victims(self.preemption, job=p.job, quota=p.quota, priority=p.priority,
                            enqueued_at=p.enqueued_at, groups=p.groups, total=p.total,
                            spared=self._spared_in(p))
        if isinstance(plan, Blocked):
            return plan
        for victim in plan.victims:
            self._evict(victim, by=p.job.key, why=plan.reasons[victim.key])
        self._admit(p, self.clusters[plan.fit.cluster], plan.fit, admitted_at=None)
        if self.parked is not None:
            self.parked.settle()  # the limits the evictions lowered, with p admitted
        return None

    def _spared(self, p: _Pending) -> str | None:
        """The job ``p`` does not reclaim from (see ``find_victims``): the one
        whose reclaim last sent it back to its queue, in this cycle or, if it
        has waited since, before."""
        got = self.evicted_by.get(p.job.key)
        if got is not None:
            by, why = got
            return str(by) if why.startswith(RECLAIMING) else None
        return _spares(p.prior) if p.prior is not None else None

    def _would_reclaim_back(self, spared: str) -> bool:
        """Could the job ``spared`` (``Kind namespace/name``), which reclaimed a
        job's place, reclaim in return once evicted (``could_reclaim_back``)?
        One not running spares nothing that matters: it is kept (as said)."""
        if self._key_by_name is None:
            self._key_by_name = {str(job.key): job.key for job in self.inp.jobs}
        key = self._key_by_name.get(spared)
        victim = self.admitted.get(key) if key is not None else None
        if victim is None:
            return True
        if victim.quota is None or self.usage is None:
            return True
        policy = self.inp.settings.for_quota(victim.quota).preemption
        return could_reclaim_back(self.preemption, self.usage, victim, policy)

    def _spared_in(self, p: _Pending) -> frozenset[str]:
        """The jobs ``p`` does not reclaim from (see ``find_victims``): the one it
        spares (``_spared``), and those that jobs of its quota waiting now spare
        when one of those could then evict ``p`` (by priority, in its quota) and
        take the place ``p`` reclaimed, its quota borrowing (above its min) with
        it: that place would be reclaimed again."""
        own = self._spared(p)
        if own is not None and not self._would_reclaim_back(own):
            own = None
        if p.quota is None:
            return frozenset((own,) if own else ())
        if self._sparing is None:
            self._sparing = {}
            for key, other in self.pending.items():
                by = self._spared(other)
                if by is not None and other.quota is not None:
                    self._sparing.setdefault(other.quota, {})[key] = (
                        by, (other.priority, other.enqueued_at, other.job.requests))
            for key, (job, prior) in self.left_out.items():  # (queued before: waiting since)
                by = _spares(prior)
                if by is not None and prior.quota is not None:
                    self._sparing.setdefault(prior.quota, {})[key] = (
                        by, (prior.priority, prior.enqueued_at or "", job.requests))
        got = self._sparing.get(p.quota)
        if not got or not p.job.preemptible or not p.policy.queued or self.usage is None:
            return frozenset((own,) if own else ())
        # (the same for the jobs of a quota alike, until a job is admitted or evicted)
        policy = self.inp.settings.for_quota(p.quota).preemption
        ck = (p.quota, p.priority, p.job.key if own else None,
              p.enqueued_at if policy is PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY else "")
        now = (self.preemption.last_seq, self.evictions)
        known = self._spared_memo.get(ck)
        if known is not None and known[0] == now:
            return known[1]
        out = {own} if own else set()
        admitted, me, usage = self.admitted, p.job.key, self.usage
        for key, (by, waiting) in got.items():
            if key != me and key not in admitted and by not in out and would_retake(
                    usage, p.quota, policy, priority=p.priority, enqueued_at=p.enqueued_at,
                    waiting=waiting) and self._would_reclaim_back(by):
                out.add(by)
        if len(self._spared_memo) >= 4096:
            self._spared_memo.clear()
        spared = self._spared_memo[ck] = (now, frozenset(out))
        return spared[1]

    def _why_waiting(self, p: _Pending) -> str:
        """Why a job waits, told against the cycle's final state."""
        short = self._quota_shortfall(p)
        if short is not None:
            return f"waiting for quota: {short}"
        notes: list[str] = []
        names = [n for g in p.groups for n in g]
        for name in names[:MAX_CLUSTER_NOTES]:
            fit = self.clusters[name].fit(p.job.key, p.job.pod_sets, p.total)
            notes.append(fit if isinstance(fit, str) else f"{name}: room freed this cycle")
        if len(names) > MAX_CLUSTER_NOTES:
            notes.append(f"and {len(names) - MAX_CLUSTER_NOTES} more")
        where = "; ".join((*notes, *p.refused)) or "no candidate member cluster"
        if not p.policy.queued:
            return f"no member cluster has room for the whole gang now: {where}"
        return f"its quota has room but {FITS_NO_CLUSTER}: {where}"

    def _strategy(self, p: _Pending) -> PlacementStrategy:
        return p.policy.strategy or self.inp.settings.strategy

    def _find_cluster(self, p: _Pending) -> tuple[ClusterState, Fit] | str:
        """The cluster for the gang, or why none fits now.

        Clusters of the first clusterAffinities group with room are tried in
        preference order (binpack/spread, by free sum); the first where the
        gang packs wins. Under a Duplicated policy every other cluster of that
        group where it fits gets a full copy too (kept for ``_admit``).

        A cluster that checks its free sum alone (no resourceReservation) where
        some of the job's pods could never run (``ClusterState.never_runs``)
        is taken only when no cluster of any group where they could fits now:
        placed there, they would stay Pending, holding the job's quota.
        """
        job = p.job
        memo = self._fail_memo.setdefault(p.shape, {})
        last_resort: list[tuple[ClusterState, Fit]] = []
        for group in p.groups:
            fitting: list[tuple[ClusterState, Fit]] = []  # (in preference order)
            chosen: int | None = None  # the first of them where its pods could run
            strategy = self._strategy(p)
            ck = (id(group), p.total_items, strategy)
            ranking = self._rankings.get(ck)
            if ranking is None:
                in_group = self._group_states.get(id(group))
                if in_group is None:  # groups are shared by every job of a policy and kind
                    in_group = self._group_states[id(group)] = [self.clusters[n] for n in group]
                if len(self._rankings) >= 4096:
                    self._rankings.clear()
                ranking = self._rankings[ck] = Ranking(in_group, p.total, strategy)
            for _, _, cs in ranking.now():  # (those whose free sum covers its total)
                if memo and memo.get(cs.name) == cs.removals:
                    continue  # it did not fit there, and nothing has left since
                fit = cs.fits(job.pod_sets, p.total)
                if fit is None:
                    memo[cs.name] = cs.removals
                    continue
                fitting.append((cs, fit))
                if chosen is None and (cs.cluster.resource_reservation
                                       or cs.never_runs(job.pod_sets) is None):
                    chosen = len(fitting) - 1
                    if not p.policy.duplicated:
                        break
            if chosen is not None:
                return self._chosen(p, fitting, chosen)
            if fitting and not last_resort:
                last_resort = fitting
        if last_resort:  # (its pods never run there: told in its reason)
            return self._chosen(p, last_resort, 0)
        return FITS_NO_CLUSTER

    def _chosen(self, p: _Pending, fitting: list[tuple[ClusterState, Fit]],
                chosen: int) -> tuple[ClusterState, Fit]:
        """``fitting[chosen]``; under a Duplicated policy, the others are its
        copies (kept for ``_admit``)."""
        if p.policy.duplicated and len(fitting) > 1:
            self._copies[p.job.key] = fitting[:chosen] + fitting[chosen + 1:]
        return fitting[chosen]

    def _admit(self, p: _Pending, cluster: ClusterState, fit: Fit | None, *,
               admitted_at: str | None, force: bool = False,
               copies: tuple[str, ...] | None = None,
               nodes: tuple[tuple[str, str, int], ...] = ()) -> None:
        if self._quiet:
            self._take_in_left_out()
        job = p.job
        key = job.key
        if force or fit is None:
            fit = cluster.force_place(key, job.pod_sets, p.total, nodes)
        else:
            cluster.place(key, job.pod_sets, fit)
        extra: list[str] = []
        if copies is not None:  # a Duplicated job kept where its copies run
            for name in copies:
                if name in self.clusters:
                    self.clusters[name].force_place(key, job.pod_sets, p.total)
                    extra.append(name)
        else:
            for cs, copy_fit in self._copies.pop(key, []):
                cs.place(key, job.pod_sets, copy_fit)
                extra.append(cs.name)
        if self.usage is not None and p.quota is not None and p.policy.queued:
            for _ in range(1 + len(extra)):
                self.usage.charge(p.quota, job.requests, preemptible=job.preemptible)
        when = admitted_at or self.inp.now
        self.changes += 1
        admitted = Admitted(
            key=key, quota=p.quota, priority=p.priority,
            preemptible=job.preemptible and not extra, requests=dict(job.requests),
            cluster=cluster.name, pod_sets=job.pod_sets, admitted_at=when,
            enqueued_at=p.enqueued_at, queued=p.policy.queued,
            seq=self.preemption.next_seq())
        self.preemption.add(admitted)
        if self.parked is not None:
            self.parked.discard(key)
            self.parked.admitted(admitted)
        placed = ", ".join(f"{ps.name} {ps.replicas}" for ps in job.pod_sets) or "no pods"
        reason = f"admitted to {cluster.name} ({placed})"
        if extra:
            reason += f"; a copy also on {', '.join(sorted(extra))} (Duplicated)"
        d = self.decisions[key]
        if d.preempted_by is not None and not d.preemptions:
            self._spared_before_it_ran.add(key)  # (see _record_preemptions)
        self.decisions[key] = evolve(d, phase=Phase.ADMITTED,
                                     cluster=cluster.name, admitted_at=when, reason=reason,
                                     position=None, copies=tuple(sorted(extra)),
                                     nodes=cluster.node_counts(fit, job.pod_sets))

    def _evict(self, victim: Admitted, *, by: JobKey, why: str) -> None:
        if self._quiet:
            self._take_in_left_out()
        key = victim.key
        self.clusters[victim.cluster].remove(key, victim.pod_sets)
        if self.usage is not None and victim.quota is not None:
            self.usage.release(victim.quota, victim.requests, preemptible=victim.preemptible)
        self.preemption.remove(key)
        self.changes += 1
        self.evictions += 1
        assert self.tree is not None and victim.quota is not None  # victims have quotas
        for node in self.tree.ancestry(victim.quota):
            self._evicted_below[node.path] = self.evictions
        self._evicted_on.pop(victim.cluster, None)
        self._evicted_on[victim.cluster] = self.evictions
        pending = self.pending.get(key)
        if pending is not None:
            pending.alike = None  # whom it spares may have changed (see _attempt)
        if pending is not None and victim.quota is not None and victim.queued:
            queue = self._queues.setdefault(victim.quota, [])
            heapq.heappush(queue, (pending.order, pending))
            if victim.quota not in self._blocked and queue[0][1] is pending:
                self._push_head(victim.quota)
        if self.parked is not None:
            self.parked.evicted(victim.quota, victim.cluster)
        self.evicted_by[key] = (by, why)
        if self._sparing is not None:  # (as _spared reads it now)
            sparing = self._sparing.setdefault(victim.quota, {})
            if why.startswith(RECLAIMING):
                sparing[key] = (str(by), (victim.priority, victim.enqueued_at, victim.requests))
            else:
                sparing.pop(key, None)
        self.preemption.evictions += 1
        self.preemption.evicted.add(key)
        self.preemption.changes += 1
        d = self.decisions[key]
        self.decisions[key] = evolve(d, phase=Phase.QUEUED, cluster=None, admitted_at=None,
                                     nodes=(), copies=(), reason="")

    def _wait(self, p: _Pending, blocked_by: str | None = None) -> None:
        """Mark ``p`` Queued; its reason is written in step 6, on the final state."""
        key = p.job.key
        if blocked_by is not None:
            self.blocked_by[key] = blocked_by
        else:
            self.blocked_by.pop(key, None)
        d = self.decisions[key]
        if d.phase is not Phase.QUEUED:
            self.decisions[key] = evolve(d, phase=Phase.QUEUED, cluster=None, nodes=(),
                                         copies=())

    def next_round(self) -> bool:
        """Lift this round's protection of victims; True if that may change anything.

        Within a round a job is a victim at most once, so that reclaims cannot
        chase each other for ever. A victim placed again elsewhere in the same
        round is, for the next reconcile, a job like any other: so once the
        passes settle, such victims lose their protection and count as newly
        admitted (queued jobs that failed may try them), and the passes run
        again. Without such a victim the state is what the next reconcile
        would leave as it is.
        """
        ctx = self.preemption
        back = sorted(k for k in ctx.evicted if k in self.admitted)
        ctx.evicted.clear()
        ctx.changes += 1
        for key in back:
            again = replace(ctx.remove(key), seq=ctx.next_seq())
            ctx.add(again)
            if self.parked is not None:
                self.parked.admitted(again)
        return bool(back)

    # -- 6 ---------------------------------------------------------------------

    def undo_useless_evictions(self) -> None:
        """Put back, where it ran, a job evicted for a preemptor that lost its own
        place later in the cycle, if its quota and cluster still hold it."""
        for key, (by, _) in sorted(self.evicted_by.items()):
            prior = self.inp.prior.get(key)
            p = self.pending.get(key)
            if (by in self.admitted or key in self.admitted or p is None or prior is None
                    or prior.phase is not Phase.ADMITTED or prior.cluster not in self.clusters):
                continue
            cs = self.clusters[prior.cluster or ""]
            fit = cs.fits_as_recorded(p.job.pod_sets, p.total, prior.nodes) if prior.nodes \
                else None
            if fit is None:
                fit = cs.fits(p.job.pod_sets, p.total)
            if fit is None or self._quota_shortfall(p) is not None:
                continue
            self._admit(p, cs, fit, admitted_at=prior.admitted_at)
            self.preemption.unevict(key)
            del self.evicted_by[key]

    def _record_preemptions(self) -> None:
        """Write down the preemptions the state will show, from before and after.

        A job counts as preempted only if it ran in the previous state and does
        not run on the same cluster now. A job evicted and placed back where it
        ran keeps its admission; one admitted and evicted within this cycle
        never ran, so no preemption is counted, but when a reclaim sent it back
        to its queue, where it waits, its reclaimer is written down: it spares
        that job while it waits (``_spared``), in the next reconcile as in this
        one, which would otherwise reclaim the other way and undo this one.
        That record is kept while it waits, whatever reclaims it again in a
        later cycle before it runs (they are steps of a cycle, which may take
        others when the cycle starts from another state: a record changed by
        them would not be a fixed point), and dropped once it runs.
        """
        for key in self._spared_before_it_ran:
            d = self.decisions[key]
            if d.phase is Phase.ADMITTED:
                self.decisions[key] = evolve(d, preempted_by=None, preemption_reason=None)
        for key, (by, why) in sorted(self.evicted_by.items()):
            prior = self.inp.prior.get(key)
            d = self.decisions[key]
            if prior is None or prior.phase is not Phase.ADMITTED:
                if d.phase is Phase.QUEUED and why.startswith(RECLAIMING) and \
                        d.preempted_by is None:
                    self.decisions[key] = evolve(d, preempted_by=str(by),
                                                 preemption_reason=why)
                continue
            if d.phase is Phase.ADMITTED and d.cluster == prior.cluster:
                self.decisions[key] = evolve(d, admitted_at=prior.admitted_at)
                continue
            self.decisions[key] = evolve(
                d, preempted_by=str(by),
                preemptions=prior.preemptions + 1, preemption_reason=why)

    def _note_never_runs(self, key: JobKey, d: Decision) -> None:
        """Said of a job admitted to a cluster that checks its free sum alone (no
        resourceReservation) where no node could run some of its pods, even
        empty (``ClusterState.never_runs``): in its reason, and as a warning."""
        cluster = self.clusters.get(d.cluster or "")
        if cluster is None or cluster.cluster.resource_reservation:
            return  # (most: each pod packed onto a node that holds it)
        p = self.pending.get(key)
        why = cluster.never_runs(p.job.pod_sets) if p is not None else None
        if p is None or why is None:
            return
        fix = ("lower its pods' requests, or keep it off the cluster (its policy's "
               "clusterAffinity)" if NO_NODE_MATCHES not in why else
               "fix its pods' nodeSelector or tolerations, or the cluster's nodes")
        note = (f"but its pods may never run there: {why.removeprefix(f'{cluster.name}: ')}; "
                f"{cluster.name} checks its free sum alone (no resourceReservation), so they "
                f"would stay Pending; {fix}")
        self.decisions[key] = evolve(d, reason=f"{d.reason}; {note}")
        self.problems.append(Problem(p.job.path, p.job.line, (
            f"{key.kind} {key.namespace}/{key.name} is admitted to {cluster.name}, {note}"),
            "warning"))

    def result(self) -> CycleResult:
        self._record_preemptions()
        # per queue: its entries (``_QueueEntry``); orders are unique. (Tuples:
        # made for every waiting job, they cost less than the text of
        # queue_order, and each is compared a few times only.)
        by_queue: dict[str, list[_QueueEntry]] = {}
        decided = sorted(self.decisions) if self.ahead_sorted is not None else None
        for key, d in self.decisions.items():
            if d.phase is not Phase.QUEUED:
                if d.phase is Phase.ADMITTED:
                    self._note_never_runs(key, d)
                continue
            p = self.pending[key]
            why = self.blocked_by.get(key) or self._why_waiting(p)
            if d.preempted_by is not None and d.preemption_reason is not None:
                # (its policy now places it by capacity alone: no queue to be back in)
                back = "back in its queue keeping its place" if p.policy.queued else \
                    "placed by capacity alone now, in no queue"
                why = (f"preempted by {d.preempted_by} ({d.preemption_reason}); {back}; "
                       f"{why}" if d.preemptions else
                       f"its place was reclaimed by {d.preempted_by} before it ran "
                       f"({d.preemption_reason}); {why}")
            self.decisions[key] = evolve(d, reason=why)
            if p.policy.queued:
                order = (-d.priority, d.enqueued_at, key.order)
                by_queue.setdefault(d.quota or "", []).append((order, key, None, 0))
        left_out = self.left_out
        if self.ahead_queues is not None:  # those left out, in queue order already
            for quota, entries in self.ahead_queues.items():
                mine = by_queue.get(quota)
                if mine is None:
                    by_queue[quota] = entries  # (sorted: read only)
                else:
                    mine.extend(entries)
        else:
            source_time = self.inp.source_time
            for key, out in left_out.items():
                assert out[1].quota is not None  # see _left_out
                by_queue.setdefault(out[1].quota, []).append(
                    _left_out_entry(key, out, source_time))
        from_prior = []
        decisions = self.decisions
        ahead = self.ahead_queues or {}
        for quota, entries in by_queue.items():
            if entries is not ahead.get(quota):
                entries.sort()
            for position, (order, key, was, as_before) in enumerate(entries, start=1):
                if was is not None:  # left out: decided as before, in its place now
                    job, prior = was
                    # those not taken from the prior: is it the prior's?
                    if as_before and position == prior.position:
                        from_prior.append(key)
                        if as_before == 2:
                            decisions[key] = prior  # the very decision, not a copy
                            continue
                    decisions[key] = Decision(
                        key=key, api_version=job.api_version, path=job.path, blob=job.blob,
                        phase=Phase.QUEUED, reason=prior.reason, enqueued_at=order[1],
                        quota=prior.quota, priority=prior.priority, requests=job.requests,
                        pod_sets=prior.pod_sets,  # the counts of the same blob's pod sets
                        preempted_by=prior.preempted_by, preemptions=prior.preemptions,
                        preemption_reason=prior.preemption_reason, policy=prior.policy,
                        position=position)
                else:
                    decisions[key] = evolve(decisions[key], position=position)
        if decided is not None and self.ahead_sorted is not None:
            # (two sorted runs: merged in one pass, rather than 100,000 keys sorted)
            decided.extend(self.ahead_sorted)
            decided.sort()
        else:
            decided = sorted(decisions)
        result = [decisions[k] for k in decided]
        quota_used = {} if self.usage is None else {
            p: dict(sorted(u.items())) for p, u in sorted(self.usage.used.items())}
        cluster_free = {n: dict(sorted(c.free.items())) for n, c in sorted(self.clusters.items())}
        return CycleResult(decisions=result, problems=sorted(self.problems),
                           quota_used=quota_used, cluster_free=cluster_free,
                           from_prior=frozenset(from_prior), ahead=self.ahead,
                           moved=dict(sorted(self.requeue_notes.items())),
                           clusters=self.clusters)


_job_key: Callable[[Job], JobKey] = operator.attrgetter("key")


def _shape(pod_sets: tuple[PodSet, ...]) -> tuple[object, ...]:
    return tuple((tuple(sorted(ps.per_pod.items())), ps.replicas, ps.node_selector,
                  ps.tolerations, ps.node_affinity) for ps in pod_sets)


def _pods_of(pod_sets: Sequence[PodSet | PodSetCount]) -> str:
    """"head 1, workers 3": each pod set's pods."""
    return ", ".join(f"{ps.name} {ps.replicas}" for ps in pod_sets)


def _join_notes(notes: list[str]) -> str:
    if len(notes) <= MAX_CLUSTER_NOTES:
        return "; ".join(notes)
    return "; ".join(notes[:MAX_CLUSTER_NOTES]) + f"; and {len(notes) - MAX_CLUSTER_NOTES} more"
