"""Preemption: reclaiming borrowed quota and evicting lower-priority jobs.

A job that does not fit may evict admitted jobs (victims) when that makes it
fit, on its quota *and* on one member cluster:

* **reclaim**: if its quota would stay within its min after admission, it
  may evict jobs of other quotas that use more than their min (borrowers),
  until each victim's quota is back at its min (those whose quotas up to
  the one they share with it all borrow first: ``reclaimable``); not when it lacks only what
  its min does not guarantee (a job slot); never the job whose reclaim
  sent it back to its queue, nor one whose reclaim sent back a job of its
  quota that waits and could evict it in turn (by priority) and take that
  place, borrowing;
* **priority**: it may evict jobs of its own quota with strictly lower
  priority (``LowerPriority``, the default), also equal-priority jobs that
  were enqueued later (``LowerOrNewerEqualPriority``), or none (``Never``).

Non-preemptible jobs and capacity-only jobs are never victims, and a job is a
victim at most once per round of the cycle: reclaims between quotas could
otherwise chase each other for ever. A victim placed again in the same round
loses that protection in the next round (see the cycle's step 5), so the
state a cycle ends with is one the next reconcile leaves as it is.
Candidates are ranked by the key written next to ``_rank``. The search is a
what-if on the live snapshot: each removal is simulated and undone. It first
checks, from running totals, that evicting every candidate would be enough
(never preempt when it would not help);
then takes victims for the quota, then victims on one cluster until the gang
fits there, keeps the cluster needing the fewest, and drops every victim the
job can do without (a minimal set).
"""

from __future__ import annotations

import heapq
import operator
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from reconciler.core.gang import ClusterState, Fit
from reconciler.core.model import (
    FleetSettings,
    Job,
    JobKey,
    PodSet,
    PreemptionPolicy,
)
from reconciler.core.quota import QuotaUsage
from reconciler.core.resources import (
    MAX_JOBS,
    Resources,
    ResourcesView,
    add_into,
    sub_into,
)


@dataclass(frozen=True, slots=True)
class Admitted:
    """A job holding quota and a place on a member cluster during the cycle."""

    key: JobKey
    quota: str | None
    priority: int
    preemptible: bool
    requests: Resources
    cluster: str
    pod_sets: tuple[PodSet, ...]
    admitted_at: str
    enqueued_at: str
    queued: bool = True
    seq: int = 0  # admission order within the cycle's view: higher = more recent
    recency: bytes = field(init=False, repr=False, compare=False)  # see most_recent_first

    def __post_init__(self) -> None:
        object.__setattr__(self, "recency", most_recent_first(self.admitted_at, self.key))

    @property
    def can_be_victim(self) -> bool:
        return self.preemptible and self.queued and self.quota is not None


Candidate = tuple[tuple[Any, ...], Admitted, str]  # (rank, victim, why)


class Ranked:
    """Candidates in rank order, with views the search asks for built once:
    those on a cluster, and those whose quota is at or below a quota.

    ``runs``, when given, are the ``_Run``s the items are merged from, group
    after group (the items: each group's runs merged, the groups one after
    another); a cluster's candidates are then merged from the runs' own
    per-cluster lists, for the clusters asked for only. The items are merged
    whole (a sort, in C) only when a view or a long search needs them: the
    first few (``at``) are merged one by one, and most searches stop there.
    (A run's items never change: a merge gives the same whenever it is made.)"""

    __slots__ = ("_below", "_first", "_merging", "_on", "_runs", "_whole")

    def __init__(self, items: list[Candidate] | None, runs: list[list[_Run]] | None = None
                 ) -> None:
        assert items is not None or runs is not None
        self._whole = items
        self._runs = runs
        self._first: list[Candidate] = []  # the first items, merged one by one
        self._merging: Iterator[Candidate] | None = None
        self._on: dict[str, list[Candidate]] | None = None if runs is None else {}
        self._below: dict[str, Ranked] = {}

    @property
    def items(self) -> list[Candidate]:
        whole = self._whole
        if whole is None:
            assert self._runs is not None
            whole = []
            for group in self._runs:
                merged = [c for run in group for c in run.items]
                merged.sort(key=_first)  # runs already sorted merge fast
                whole.extend(merged)
            self._whole = whole
            self._merging = None
        return whole

    def at(self, i: int) -> Candidate | None:
        """The item at ``i``, or ``None`` past the last."""
        whole = self._whole
        if whole is None:
            first = self._first
            if i < len(first):
                return first[i]
            if i < FIRST_MERGED:
                if self._merging is None and not first:
                    assert self._runs is not None
                    self._merging = _merged(self._runs)
                merging = self._merging
                while merging is not None and len(first) <= i:
                    got = next(merging, None)
                    if got is None:
                        self._whole, self._merging = first, None  # (all of them)
                        return None
                    first.append(got)
                if i < len(first):
                    return first[i]
            whole = self.items
        return whole[i] if i < len(whole) else None

    def on(self, cluster: str) -> list[Candidate]:
        if not cluster:
            return []
        if self._runs is not None:
            assert self._on is not None
            got = self._on.get(cluster)
            if got is None:
                got = []
                for group in self._runs:
                    part: list[Candidate] = []
                    for run in group:
                        part.extend(run.on(cluster))
                    if len(group) > 1:
                        part.sort(key=_first)
                    got.extend(part)
                self._on[cluster] = got
            return got
        if self._on is None:
            self._on = _by_cluster(self.items)
        return self._on.get(cluster, [])

    def below(self, quota: str) -> Ranked:
        got = self._below.get(quota)
        if got is None:
            under = quota + "/"
            got = self._below[quota] = Ranked([
                c for c in self.items
                if c[1].quota == quota or (c[1].quota or "").startswith(under)])
        return got


NO_CANDIDATES = Ranked([])
FIRST_MERGED = 16  # items of a Ranked merged one by one before the whole is sorted
# why a job of its own quota is a victim, as its reason says it ("preempted by X (...)")
_LOWER = "its priority is lower, in the same quota"
_SAME_LATER = "its priority is the same and it was enqueued later, in the same quota"


def _merged(groups: list[list[_Run]]) -> Iterator[Candidate]:
    """Each group's runs merged (each run is in rank order), the groups one after
    another: what a stable sort of each group's runs one after another gives."""
    for group in groups:
        if len(group) == 1:
            yield from group[0].items
        else:
            yield from heapq.merge(*(run.items for run in group), key=_first)


class _Run:
    """One leaf's candidates in rank order, as of its ``version``; split by
    cluster when first asked."""

    __slots__ = ("_on", "items", "version")

    def __init__(self, version: int, items: list[Candidate]) -> None:
        self.version = version
        self.items = items
        self._on: dict[str, list[Candidate]] | None = None

    def on(self, cluster: str) -> list[Candidate]:
        if self._on is None:
            self._on = _by_cluster(self.items)
        return self._on.get(cluster, [])


def _by_cluster(items: list[Candidate]) -> dict[str, list[Candidate]]:
    """Candidates by the cluster their victim runs on, each list in rank order."""
    out: dict[str, list[Candidate]] = {}
    for c in items:
        out.setdefault(c[1].cluster, []).append(c)
    return out


_INVERT = bytes(range(255, -1, -1))


def most_recent_first(admitted_at: str, key: JobKey) -> bytes:
    """A sort key that orders jobs by ``(admitted_at, key)`` descending: the
    most recently admitted first, and of jobs admitted at the same time (in
    one cycle), the last by key first.

    Victims are ranked by it, not by the order of admission within a cycle
    (``seq``): the next reconcile reads back only ``admittedAt``, and ranking
    the same jobs another way there would preempt other victims (the state
    would not be a fixed point).

    The fields are joined with NUL, which no field holds, so the UTF-8 bytes
    sort as the tuple of strings does; every byte inverted, they sort the
    other way, and the final 0xff puts a text before the longer texts it is
    a prefix of (the only case where inverting alone gets the order wrong).
    """
    text = "\0".join((admitted_at, *key)).encode()
    return text.translate(_INVERT) + b"\xff"


# A candidate's rank (its first item), in C: sorts call it for every candidate.
_first: Callable[[Candidate], tuple[Any, ...]] = operator.itemgetter(0)


@dataclass
class PreemptionContext:
    """The live snapshot preemption works on, with running totals of the
    usage that could be evicted (per leaf and per cluster, by priority)."""

    usage: QuotaUsage | None
    clusters: dict[str, ClusterState]
    settings: FleetSettings
    admitted: dict[JobKey, Admitted] = field(default_factory=dict)
    by_quota: dict[str, dict[JobKey, Admitted]] = field(default_factory=dict)
    leaf_pool: dict[str, dict[int, Resources]] = field(default_factory=dict)
    # (quota, cluster) -> priority -> requests of the quota's possible victims there
    on_cluster: dict[tuple[str, str], dict[int, Resources]] = field(default_factory=dict)
    # cluster -> requests of the possible victims there whose quota is above its min
    borrowed_on: dict[str, Resources] = field(default_factory=dict)
    _spread: dict[str, dict[str, Resources]] = field(default_factory=dict)  # quota -> cluster
    _borrowing: set[str] = field(default_factory=set)  # quotas counted in borrowed_on
    _lendable: dict[str, Resources] = field(default_factory=dict)
    last_seq: int = 0
    last_seq_in: dict[str, int] = field(default_factory=dict)  # quota -> newest admission
    # quota -> priority -> the newest admission of a possible victim of that
    # priority (kept when it leaves: a bound, to skip looking for a new victim)
    newest_victim: dict[str, dict[int, int]] = field(default_factory=dict)
    largest: dict[str, Resources] = field(default_factory=dict)  # quota -> max job request
    evicted: set[JobKey] = field(default_factory=set)  # victims of this round: not again
    # bumped by a change of what may be reclaimed: a job of a quota above its
    # min added or removed, a quota going above or back to its min, ``evicted``
    changes: int = 0
    # quota+resources -> (changes, borrowers, ranked victims, (branch, its usage's version))
    _reclaimable: dict[str, tuple[int, list[str], Ranked, tuple[tuple[str, int], ...]]] = \
        field(default_factory=dict)
    # leaf -> bumped when its possible victims change; its victims by rank
    _leaf_version: dict[str, int] = field(default_factory=dict)
    _segments: dict[str, _Run] = field(default_factory=dict)
    _own: dict[tuple[str, int, str], tuple[int, Ranked]] = field(default_factory=dict)
    _pools: dict[tuple[str, int, PreemptionPolicy], tuple[int, Resources]] = field(
        default_factory=dict)  # see own_pool
    _rooms: dict[str, tuple[tuple[Ranked, ...], int, dict[int, Resources]]] = field(
        default_factory=dict)  # cluster -> (candidates, its version, room_of); see room_of
    _bounds: dict[str, tuple[int, list[str], dict[str, Resources]]] = field(
        default_factory=dict)  # quota -> (changes, borrowers, reclaim_bound)
    _leaf_bounds: dict[str, tuple[tuple[int, int], Resources]] = field(
        default_factory=dict)  # leaf -> (versions, _reclaimable_of)
    _shares: dict[str, tuple[int, float]] = field(default_factory=dict)  # leaf -> (version, share)
    _newest: tuple[tuple[int, int], list[tuple[int, str]]] = ((-1, -1), [])
    evictions: int = 0
    max_evictions: int = 0  # set by the cycle: a bound on evictions in one cycle

    # -- bookkeeping -----------------------------------------------------------

    def next_seq(self) -> int:
        self.last_seq += 1
        return self.last_seq

    def add(self, a: Admitted) -> None:
        # each job comes in once, with a new seq: by_quota holds a quota's jobs by seq
        assert a.key not in self.admitted and a.seq > self.last_seq_in.get(a.quota or "", 0)
        self.admitted[a.key] = a
        if a.quota is not None:
            self.by_quota.setdefault(a.quota, {})[a.key] = a
            self._leaf_version[a.quota] = self._leaf_version.get(a.quota, 0) + 1
            self.last_seq_in[a.quota] = a.seq
        if a.can_be_victim:
            assert a.quota is not None
            add_into(self.leaf_pool.setdefault(a.quota, {}).setdefault(a.priority, {}),
                     a.requests)
            self.newest_victim.setdefault(a.quota, {})[a.priority] = a.seq
            add_into(self.on_cluster.setdefault((a.quota, a.cluster), {})
                     .setdefault(a.priority, {}), a.requests)
            add_into(self._spread.setdefault(a.quota, {}).setdefault(a.cluster, {}),
                     a.requests)
            if a.quota in self._borrowing:
                add_into(self.borrowed_on.setdefault(a.cluster, {}), a.requests)
            biggest = self.largest.setdefault(a.quota, {})
            for r, v in a.requests.items():  # only grows: a bound, never too small
                if v > biggest.get(r, 0):
                    biggest[r] = v
        if a.quota is not None:
            self._recount_borrowing(a.quota)

    def remove(self, key: JobKey) -> Admitted:
        a = self.admitted.pop(key)
        if a.quota is not None:
            del self.by_quota[a.quota][key]
            self._leaf_version[a.quota] += 1
        if a.can_be_victim:
            assert a.quota is not None
            sub_into(self.leaf_pool[a.quota][a.priority], a.requests)
            sub_into(self.on_cluster[(a.quota, a.cluster)][a.priority], a.requests)
            sub_into(self._spread[a.quota][a.cluster], a.requests)
            if a.quota in self._borrowing:
                sub_into(self.borrowed_on[a.cluster], a.requests)
        if a.quota is not None:
            self._recount_borrowing(a.quota)
        return a

    def reclaimable(self, quota: str, request: ResourcesView) -> tuple[list[str], Ranked]:
        """The quotas a job of ``quota`` may reclaim from (other quotas above
        their min in a resource it requests) and their victims, ranked. The
        same for every job of the quota that needs the same resources until
        what may be reclaimed changes (``changes``), or the usage of a quota
        looked at to rank them."""
        assert self.usage is not None
        usage = self.usage
        wanted = frozenset(r for r, v in request.items() if v > 0)
        ck = f"{quota}\0{','.join(sorted(wanted))}"
        known = self._reclaimable.get(ck)
        if known is not None and known[0] == self.changes and all(
                usage.version(branch) == version for branch, version in known[3]):
            return known[1], known[2]
        if known is None or len(self._reclaimable) > 1:  # drop the stale: they hold much
            self._reclaimable = {k: v for k, v in self._reclaimable.items()
                                 if v[0] == self.changes}
        borrowers: list[str] = []
        # The borrowers whose quotas up to their branch (``_branch``) are all above
        # their min first, as Kueue's hierarchical reclaim takes them; then those
        # that borrow within a branch's min, lent by its other quotas (Kueue takes
        # none of them), each group in its leaves' own order.
        by_branch: tuple[list[_Run], list[_Run]] = ([], [])  # (borrows, lent to)
        branches: list[tuple[str, int]] = []  # (a quota looked at, its usage's version)
        for leaf in sorted(self.by_quota):
            if leaf == quota or not self.by_quota[leaf]:
                continue
            if not any(r in wanted for r in usage.above_min(leaf)):
                continue
            borrowers.append(leaf)
            lent, looked_at = borrows_lent(usage, quota, leaf, wanted)
            branches.extend((path, usage.version(path)) for path in looked_at)
            by_branch[lent].append(self._segment(leaf))
        # (the rank of ``_rank``'s category 0; merged when asked for: see Ranked)
        groups = [group for group in by_branch if group]
        self._reclaimable[ck] = (self.changes, borrowers, Ranked(None, groups),
                                 tuple(branches))
        return borrowers, self._reclaimable[ck][2]

    def reclaim_bound(self, quota: str, borrowers: list[str]) -> dict[str, Resources]:
        """Per quota on ``quota``'s path, the most that reclaiming from
        ``borrowers`` (below it) can free: from each, what it runs, but at most
        what it borrows plus one job's worth (the last victim may overshoot).
        Kept until what may be reclaimed changes."""
        known = self._bounds.get(quota)
        if known is not None and known[0] == self.changes and known[1] is borrowers:
            return known[2]
        usage = self.usage
        assert usage is not None
        out: dict[str, Resources] = {n.path: {} for n in usage.path_nodes(quota)}
        for leaf in borrowers:
            pooled = self._reclaimable_of(leaf)
            for node in usage.path_nodes(leaf):
                room = out.get(node.path)
                if room is not None:
                    add_into(room, pooled)
        self._bounds[quota] = (self.changes, borrowers, out)
        return out

    def _reclaimable_of(self, leaf: str) -> Resources:
        """What reclaiming from ``leaf`` can free (see ``reclaim_bound``), kept
        until its jobs or its usage change."""
        assert self.usage is not None
        version = (self._leaf_version.get(leaf, 0), self.usage.version(leaf))
        known = self._leaf_bounds.get(leaf)
        if known is not None and known[0] == version:
            return known[1]
        pooled: Resources = {}
        for res in self.leaf_pool.get(leaf, {}).values():
            add_into(pooled, res)
        lent = self.usage.above_min(leaf)
        biggest = self.largest.get(leaf, {})
        pooled = {r: min(v, lent.get(r, 0) + biggest.get(r, 0)) for r, v in pooled.items()}
        self._leaf_bounds[leaf] = (version, pooled)
        return pooled

    def version_of(self, leaf: str) -> int:
        """Bumped whenever a job of the leaf quota is added or removed."""
        return self._leaf_version.get(leaf, 0)

    def is_borrowing(self, quota: str) -> bool:
        """Is the quota above its min (its jobs may be reclaimed)?"""
        return quota in self._borrowing

    def newest_borrowing(self, other_than: str) -> int:
        """The newest admission (seq) in a quota above its min, other than
        ``other_than``; 0 if none."""
        state = (self.last_seq, self.changes)
        if self._newest[0] != state:
            top = sorted(((self.last_seq_in.get(q, 0), q) for q in self._borrowing),
                         reverse=True)[:2]
            self._newest = (state, top)
        for seq, quota in self._newest[1]:
            if quota != other_than:
                return seq
        return 0

    def _segment(self, leaf: str) -> _Run:
        """The leaf's possible victims, by (priority, most_recent_first),
        kept until they change."""
        version = self._leaf_version.get(leaf, 0)
        known = self._segments.get(leaf)
        if known is not None and known.version == version:
            return known
        why = f"{RECLAIMING} {leaf} borrowed above its min"
        evicted = self.evicted
        items = sorted((((victim.priority, victim.recency), victim, why)
                        for victim in self.by_quota[leaf].values()
                        if victim.can_be_victim and victim.key not in evicted), key=_first)
        run = self._segments[leaf] = _Run(version, items)
        return run

    def own_candidates(self, quota: str, priority: int, enqueued_at: str,
                       policy: PreemptionPolicy) -> Ranked:
        """The jobs of its own quota a job of ``priority`` may evict, ranked; the
        same for every job of that quota and priority (and enqueue time, when
        the policy compares it) until the quota's jobs change."""
        ck = (quota, priority,
              enqueued_at if policy is PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY else "")
        version = self._leaf_version.get(quota, 0)
        known = self._own.get(ck)
        if known is not None and known[0] == version:
            return known[1]
        evicted = self.evicted
        mine = sorted(((_rank(1, victim), victim, _LOWER if victim.priority < priority
                        else _SAME_LATER)
                       for victim in self.by_quota.get(quota, {}).values()
                       if victim.can_be_victim and victim.key not in evicted
                       and eligible_same_quota(policy, victim, priority, enqueued_at)),
                      key=_first)
        if len(self._own) >= 4096:  # one per enqueue time under LowerOrNewerEqualPriority
            self._own.clear()
        got = self._own[ck] = (version, Ranked(mine))
        return got[1]

    def own_pool(self, quota: str, priority: int, policy: PreemptionPolicy) -> ResourcesView:
        """The requests of the jobs of its own quota that a job of ``priority``
        may evict (by priority alone): kept until the quota's jobs change."""
        ck = (quota, priority, policy)
        version = self._leaf_version.get(quota, 0)
        known = self._pools.get(ck)
        if known is not None and known[0] == version:
            return known[1]
        pool: Resources = {}
        for prio, res in self.leaf_pool.get(quota, {}).items():
            if may_evict_priority(policy, prio, priority):
                add_into(pool, res)
        if len(self._pools) >= 4096:
            self._pools.clear()
        self._pools[ck] = (version, pool)
        return pool

    def room_of(self, cluster: str, parts: tuple[Ranked, ...]) -> Mapping[int, ResourcesView]:
        """What the candidates ``parts`` hold on ``cluster``, by node index
        (``ClusterState.room_of``): the same for the next search with the same
        candidates while the cluster does not change."""
        cs = self.clusters[cluster]
        known = self._rooms.get(cluster)
        if known is not None and known[1] == cs.version and len(known[0]) == len(parts) and \
                all(a is b for a, b in zip(known[0], parts, strict=True)):
            return known[2]
        room = cs.room_of((v.key, v.pod_sets) for part in parts for _, v, _ in part.on(cluster))
        self._rooms[cluster] = (parts, cs.version, room)
        return room

    def unevict(self, key: JobKey) -> None:
        """``key`` is no longer this round's victim: it may be one again."""
        self.evicted.discard(key)
        a = self.admitted.get(key)
        if a is not None and a.quota is not None:
            self._leaf_version[a.quota] += 1
        self.changes += 1

    def _recount_borrowing(self, quota: str) -> None:
        """Keep ``borrowed_on`` to the quotas above their min now (called after
        each change of the quota's usage, which comes with an add or remove)."""
        if self.usage is None or quota not in self.usage.used:
            return
        now = bool(self.usage.above_min(quota))
        if now or quota in self._borrowing:
            self.changes += 1  # its jobs may be reclaimed, or no longer
        if now == (quota in self._borrowing):
            return
        change = add_into if now else sub_into
        for cluster, res in self._spread.get(quota, {}).items():
            change(self.borrowed_on.setdefault(cluster, {}), res)
        if now:
            self._borrowing.add(quota)
        else:
            self._borrowing.discard(quota)

    def could_fit(self, clusters: list[str], total: ResourcesView, quota: str, priority: int,
                  policy: PreemptionPolicy, reclaim: bool, *, first: bool = False,
                  pods: tuple[PodSet, ...] | None = None,
                  failed: dict[str, int] | None = None) -> list[str]:
        """Those of ``clusters`` (in order; only the first with ``first``) whose
        free sum would cover ``total`` if every job there that a job of
        ``quota`` and ``priority`` may evict left. A bound from running totals:
        lower-priority jobs of its own quota (by policy), and when it may
        reclaim, every job of a quota above its min. With ``pods`` (the job's),
        a cluster where it may evict nothing counts only if they pack there now;
        ``failed``: cluster -> its ``removals`` when pods of their shape last did
        not pack there (read, and written when they do not): until something
        leaves it, they do not pack there now either."""
        wanted = [(r, v) for r, v in total.items() if r != MAX_JOBS]
        evictable = [prio for prio in self.leaf_pool.get(quota, {})
                     if may_evict_priority(policy, prio, priority)]
        on_cluster, borrowed_on = self.on_cluster, self.borrowed_on
        out = []
        for name in clusters:
            cs = self.clusters[name]
            free = cs.free
            own = on_cluster.get((quota, name)) if evictable else None
            borrowed = borrowed_on.get(name) if reclaim else None
            for r, v in wanted:
                room = free.get(r, 0)
                if room >= v:
                    continue
                if borrowed is not None:
                    room += borrowed.get(r, 0)
                if own is not None:
                    for prio in evictable:
                        res = own.get(prio)
                        if res is not None:
                            room += res.get(r, 0)
                if room < v:
                    break
            else:
                if pods is not None and not _any_held(borrowed) and not (
                        own is not None and any(_any_held(own.get(prio)) for prio in evictable)
                ) and not self._packs(cs, pods, total, failed):
                    continue  # nothing to evict there, and its pods do not pack as they are
                out.append(name)
                if first:
                    break
        return out

    @staticmethod
    def _packs(cs: ClusterState, pods: tuple[PodSet, ...], total: ResourcesView,
               failed: dict[str, int] | None) -> bool:
        if failed is not None and failed.get(cs.name) == cs.removals:
            return False
        if cs.fits(pods, total) is not None:
            return True
        if failed is not None:
            failed[cs.name] = cs.removals
        return False

    # -- fair sharing ----------------------------------------------------------

    def dominant_share(self, leaf: str) -> float:
        """The quota's dominant share, used to order heads across queues; lower first.

        Per resource r that counts for borrowing (``QuotaUsage.borrow_counted``):

            used[r] / min[r]                              while used[r] <= min[r]
            1 + (used[r] - min[r]) / lendable[r]          above min (borrowing)

        where lendable[r] is the sum of the min of the quota and its siblings
        (what their parent can lend among them; the parent's min when that sum
        is 0). The share is the largest over r, divided by the quota's weight.
        So every quota within its guarantee goes before any borrower, quotas
        within min in order of used/min, borrowers in order of what they
        borrowed relative to what could be lent.
        """
        if self.usage is None:
            return 0.0
        version = self._leaf_version.get(leaf, 0)  # its usage changes with its jobs
        known = self._shares.get(leaf)
        if known is not None and known[0] == version:
            return known[1]
        share = self._dominant_share(leaf)
        self._shares[leaf] = (version, share)
        return share

    def _dominant_share(self, leaf: str) -> float:
        assert self.usage is not None
        return quota_share(self.usage, self.settings, leaf, self._lendable)


def quota_share(usage: QuotaUsage, settings: FleetSettings, leaf: str,
                lendable_of: dict[str, Resources]) -> float:
    """The dominant share of quota ``leaf`` as ``usage`` stands (see
    ``PreemptionContext.dominant_share``); ``lendable_of``: each quota's
    lendable resources, filled as they are found (they change with the tree
    alone)."""
    tree = usage.tree
    node = tree.nodes[leaf]
    lendable = lendable_of.get(leaf)
    if lendable is None:
        lendable = {}
        if node.parent is not None:
            parent = tree.nodes[node.parent]
            for child in parent.children:
                add_into(lendable, tree.nodes[child].min)
            for r, v in parent.min.items():
                if lendable.get(r, 0) <= 0:
                    lendable[r] = v
        else:
            lendable = dict(node.min)
        lendable_of[leaf] = lendable
    used = usage.used[leaf]
    best = 0.0
    for r, value in used.items():
        if value <= 0 or not usage.borrow_counted(leaf, r):
            continue
        lo = node.min.get(r, 0)
        if value <= lo:
            share = value / lo
        else:
            cap = lendable.get(r, 0)
            share = 1.0 + ((value - lo) / cap if cap > 0 else float(value))
        best = max(best, share)
    weight = settings.for_quota(leaf).weight / 1000
    return best / (weight if weight > 0 else 1.0)


@dataclass(frozen=True)
class PreemptionPlan:
    victims: tuple[Admitted, ...]
    fit: Fit
    reasons: dict[JobKey, str]  # why each victim goes


@dataclass(frozen=True, slots=True)
class Blocked:
    """Why no plan was found: ``quota`` is the quota whose limit no set of
    candidates could bring within reach (only an eviction below it, or a
    new candidate, can change that), or ``None`` for any other reason.

    ``limits`` names, for each try that was blocked, the quota, the resource
    and the most usage of it the try could pass with: with no new candidate,
    the try stays blocked while that quota uses more. Empty: not known (any
    eviction below ``quota`` may help).

    ``own``: ``limits`` hold every limit of the try with victims of the job's
    own quota only (the try it has whether or not it may reclaim). Then, while
    the job may not reclaim, an eviction in its own quota helps it only through
    those limits. If the job evicted was one the job may evict, the usage fell
    by as much as the room its own victims could make; if not, only the usage
    fell, and the limits test that.

    ``untried``: the job may reclaim, but was short only of what its min does
    not guarantee, so it did not try to (see ``find_victims``). A later
    admission or eviction that leaves it short of something else (or of
    nothing) may let it: it is asked again at each.
    """

    quota: str | None = None
    limits: tuple[tuple[str, str, int], ...] = ()
    own: bool = False
    untried: bool = False


RECLAIMING = "reclaiming quota"  # how the reason of a victim of reclaim starts


def _blocked_at(quota: str, resource: str, most: int) -> Blocked:
    return Blocked(quota, ((quota, resource, most),))


ANY_REASON = Blocked()
UNTRIED = Blocked(untried=True)


def within_min_after(usage: QuotaUsage, leaf: str, request: ResourcesView,
                     released: ResourcesView | None = None) -> bool:
    """Would the leaf quota stay within its min with ``request`` added (once
    ``released`` has left it)? Resources as ``QuotaUsage.borrow_counted``."""
    node = usage.tree.nodes[leaf]
    used = usage.used[leaf]
    for r, v in request.items():
        if v <= 0 or not usage.borrow_counted(leaf, r):
            continue
        freed = released.get(r, 0) if released else 0
        if used.get(r, 0) - freed + v > node.min.get(r, 0):
            return False
    return True


def may_reclaim(ctx: PreemptionContext, usage: QuotaUsage, quota: str,
                request: ResourcesView, priority: int, policy: PreemptionPolicy) -> bool:
    """Could a job of ``quota`` reclaim from borrowers: would its quota be within
    its min after admission, once every job of its own it may evict is gone?
    (A plan that reclaims must then end with the quota within its min.)"""
    own: Resources = {}
    for prio, res in ctx.leaf_pool.get(quota, {}).items():
        if may_evict_priority(policy, prio, priority):
            add_into(own, res)
    return within_min_after(usage, quota, request, own)


def could_reclaim_back(ctx: PreemptionContext, usage: QuotaUsage, victim: Admitted,
                       policy: PreemptionPolicy) -> bool:
    """Could ``victim``, once evicted, reclaim in return: would its quota be
    within its min with it back, once every job of its own it may evict is
    gone (``may_reclaim``, with it out first)? Only then is it spared by the
    job it evicted (see ``find_victims``): else that job may take its place
    back, for good."""
    if victim.quota is None:
        return False
    released = dict(victim.requests)
    for prio, res in ctx.leaf_pool.get(victim.quota, {}).items():
        if may_evict_priority(policy, prio, victim.priority):
            add_into(released, res)  # (itself too, under equal priorities: spared the more)
    return within_min_after(usage, victim.quota, victim.requests, released)


def borrows_lent(usage: QuotaUsage, quota: str, leaf: str, wanted: Collection[str]
                 ) -> tuple[bool, list[str]]:
    """Whether ``leaf``, above its min in a ``wanted`` resource, borrows what
    a quota of its own branch (``_branch``) lends it, within that branch's
    min: some quota of its path up to its branch is within its min in every
    ``wanted`` resource. (A job of ``quota`` reclaims from such a leaf last.)
    Also the quotas looked at, whose usage decides it."""
    top = _branch(quota, leaf).count("/")
    looked_at = []
    lent = False
    for node in usage.path_nodes(leaf)[1:]:  # (its quotas above it, up to its branch)
        if node.path.count("/") < top:
            break
        looked_at.append(node.path)
        lent = lent or not any(r in wanted for r in usage.above_min(node.path))
    return lent, looked_at


@lru_cache(maxsize=1 << 16)
def _branch(quota: str, leaf: str) -> str:
    """The quota of ``leaf``'s path just below the nearest quota it shares
    with ``quota``: ``leaf`` itself for a sibling, an ancestor of it for a
    cousin. Above its min, ``leaf`` borrows from the others under the quota
    they share (``quota``'s among them); within it, what ``leaf`` borrows is
    lent by quotas of its own branch, within that branch's guarantee."""
    mine, theirs = quota.split("/"), leaf.split("/")
    n = 0
    for x, y in zip(mine, theirs, strict=False):
        if x != y:
            break
        n += 1
    return "/".join(theirs[:n + 1])


def _rank(category: int, victim: Admitted) -> tuple[int, int, bytes]:
    """Victim preference (first = evicted first)::

        (reclaim from other quotas before same-quota priority preemption,
         lowest priority first,
         most recently admitted first, then the last by key: most_recent_first)

    Reclaiming, the quotas whose branch borrows come first (``reclaimable``).
    """
    return (category, victim.priority, victim.recency)


def _any_held(res: ResourcesView | None) -> bool:
    """Do these running totals hold anything (they keep zeros once emptied)?"""
    return res is not None and any(v > 0 for v in res.values())


def may_evict_priority(policy: PreemptionPolicy, victim: int, priority: int) -> bool:
    """May a job of ``priority`` evict one of ``victim`` priority in its own quota
    (an equal one only under ``LowerOrNewerEqualPriority``, if newer)?"""
    if policy is PreemptionPolicy.NEVER:
        return False
    return victim < priority or (
        victim == priority and policy is PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY)


def eligible_same_quota(policy: PreemptionPolicy, victim: Admitted, priority: int,
                         enqueued_at: str) -> bool:
    return may_evict(policy, victim.priority, victim.enqueued_at, priority, enqueued_at)


def may_evict(policy: PreemptionPolicy, victim: int, victim_enqueued_at: str, priority: int,
              enqueued_at: str) -> bool:
    """May a job of ``priority``, enqueued at ``enqueued_at``, evict a job of its
    own quota of ``victim`` priority enqueued at ``victim_enqueued_at``?"""
    return may_evict_priority(policy, victim, priority) and (
        victim < priority or victim_enqueued_at > enqueued_at)


def would_retake(usage: QuotaUsage, quota: str, policy: PreemptionPolicy, *, priority: int,
                 enqueued_at: str, waiting: tuple[int, str, ResourcesView]) -> bool:
    """Would a ``waiting`` job of ``quota`` (its priority, enqueue time and
    requests), once a job of ``priority`` reclaimed a place for the quota,
    evict that job and take the place borrowing (its quota above its min), to
    have it reclaimed again? Then that job does not reclaim from the job the
    waiting one spares (see ``find_victims``)."""
    their_priority, their_enqueued_at, requests = waiting
    return may_evict(policy, priority, enqueued_at, their_priority, their_enqueued_at) \
        and not within_min_after(usage, quota, requests)


def find_victims(ctx: PreemptionContext, *, job: Job, quota: str | None, priority: int,
                 enqueued_at: str, groups: list[list[str]], total: ResourcesView,
                 spared: frozenset[str] = frozenset()) -> PreemptionPlan | Blocked:
    """The smallest set of victims that lets ``job`` in, or why there is none.

    Two tries, as Kueue does: first with victims of borrowing quotas too, when
    its quota could be within its min after admission; such a plan must leave
    its quota within its min (with its own lower-priority jobs evicted if need
    be), so that no victim can reclaim in return. Then, if that found nothing,
    with victims of its own quota only, borrowing allowed. The first try is
    not made when every limit the job breaks is of a resource its quota's min
    does not guarantee (job slots, pods, where the min does not name them):
    reclaiming gives back what a min guarantees, and evicting a borrower only
    for its job slot would let that borrower's quota take the slot back in
    the next reconcile.

    ``spared`` (each ``Kind namespace/name``): the jobs ``job`` does not
    reclaim from: the one whose reclaim sent it back to its queue, while it
    waits and that job could reclaim in return (``could_reclaim_back``), and
    those whose reclaims sent back a job of its quota that waits,
    may evict ``job`` by priority, and would borrow (its quota above its min)
    in its place. Each of two quotas can be within its min once its own
    lower-priority jobs are out, and those come back on other member
    clusters, borrowing again: two pinned jobs would otherwise reclaim each
    other's cluster for ever. And a lower-priority job of the quota, within
    its min alone, would reclaim the place back, to be evicted by the job that
    waits, which takes it, borrowing: reclaimed again, round after round.

    Among the candidate clusters (a later clusterAffinities group only when
    the earlier ones offer nothing) it keeps the plan with the fewest victims,
    then the lowest top victim priority, then the cluster order.
    """
    usage = ctx.usage
    if usage is None or quota is None or ctx.evictions >= ctx.max_evictions:
        return ANY_REASON
    policy = ctx.settings.for_quota(quota).preemption
    own = ctx.own_candidates(quota, priority, enqueued_at, policy)
    tries: list[Blocked] = []
    reclaims = may_reclaim(ctx, usage, quota, job.requests, priority, policy)
    untried = reclaims and usage.short_of_unguaranteed_only(quota, job.requests)
    if reclaims and not untried:
        borrowers, reclaimable = ctx.reclaimable(quota, job.requests)
        if borrowers:
            got = _plan(ctx, usage, job, quota, priority, policy, groups, total,
                        # reclaim (category 0) ranks before its own quota's victims (1)
                        (reclaimable, own), borrowers, spared)
            if isinstance(got, PreemptionPlan):
                return got
            tries.append(got)
    got = _plan(ctx, usage, job, quota, priority, policy, groups, total,
                (NO_CANDIDATES, own), [])
    if isinstance(got, PreemptionPlan):
        return got
    tries.append(got)
    # It fails until one of the tries could succeed: below the widest quota that
    # blocked them (all blocking quotas are on the job's path), or anywhere.
    if any(t.quota is None for t in tries):
        return UNTRIED if untried else ANY_REASON
    widest = min(tries, key=lambda t: (t.quota or "").count("/"))
    if not all(t.limits for t in tries):
        # (the own try's limits are not all known)
        return replace(widest, untried=True) if untried else widest
    return Blocked(widest.quota, tuple(limit for t in tries for limit in t.limits), own=True,
                   untried=untried)


def _plan(ctx: PreemptionContext, usage: QuotaUsage, job: Job, quota: str, priority: int,
          policy: PreemptionPolicy, groups: list[list[str]], total: ResourcesView,
          candidates: tuple[Ranked, Ranked], borrowers: list[str],
          spared: frozenset[str] = frozenset()) -> PreemptionPlan | Blocked:
    """One try of ``find_victims``: reclaiming from ``borrowers`` if any, with
    ``candidates`` (those of other quotas, then its own, each ranked). They are
    searched only once the running totals say they could do."""
    stuck = _quota_could_fit(ctx, usage, job, quota, priority, policy, borrowers)
    if stuck is not None:
        return stuck
    reclaim = bool(borrowers)
    clusters = [ctx.could_fit(group, total, quota, priority, policy, reclaim)
                for group in groups]
    if not any(clusters):
        return ANY_REASON
    if all(part.at(0) is None for part in candidates):
        short = usage.shortfall(quota, job.requests, preemptible=job.preemptible)
        if short is None:
            return ANY_REASON
        if short.bound.startswith("min"):  # non-preemptible usage: no victim lowers it
            return Blocked(short.quota)
        return _blocked_at(short.quota, short.resource, short.limit - short.request)
    search = _Search(ctx, usage, job, quota, candidates, total, within_min=reclaim,
                     spared=spared)
    for_quota = search.quota_victims()
    if isinstance(for_quota, Blocked):
        return for_quota
    best: tuple[tuple[int, int, int], PreemptionPlan] | None = None
    for group in clusters:
        # Clusters by how much room is still missing once the quota's victims
        # left (none missing first); only the most promising few are searched.
        freed: dict[str, Resources] = {}
        for victim in for_quota:
            add_into(freed.setdefault(victim.cluster, {}), victim.requests)
        ranked = sorted((_missing(ctx.clusters[name], total, freed.get(name, {})), order, name)
                        for order, name in enumerate(group))
        for missing, order, name in ranked[:MAX_CLUSTERS_SEARCHED]:
            plan = search.plan_on(name)
            if plan is None:
                continue
            score = (len(plan.victims), max(v.priority for v in plan.victims), order)
            if best is None or score < best[0]:
                best = (score, plan)
            if missing == 0:
                break  # the quota's victims are enough here: no cluster needs fewer
        if best is not None:
            break
    return best[1] if best is not None else ANY_REASON


MAX_CLUSTERS_SEARCHED = 4
MAX_VICTIMS = 32  # a plan that needs more evictions than this is not made
MAX_SINGLE_TRIES = 64  # single victims tried for a plan of several (see _one_victim)


def _missing(cs: ClusterState, total: ResourcesView, freed: ResourcesView) -> float:
    """How much of the job's total the cluster lacks, relative to its capacity."""
    out = 0.0
    for name, value in total.items():
        room = cs.free.get(name, 0) + freed.get(name, 0)
        if value > room:
            cap = cs.capacity.get(name, 0)
            out += (value - room) / cap if cap > 0 else float("inf")
    return out


def _quota_could_fit(ctx: PreemptionContext, usage: QuotaUsage, job: Job, quota: str,
                     priority: int, policy: PreemptionPolicy, borrowers: list[str]
                     ) -> Blocked | None:
    """Would evicting every candidate free enough quota? (From running totals.)
    ``None`` if it would, else the quota it would not bring within reach."""
    own = ctx.own_pool(quota, priority, policy)  # off the usage of every quota on its path
    bound = ctx.reclaim_bound(quota, borrowers) if borrowers else {}
    for node in usage.path_nodes(quota):
        used = usage.used[node.path]
        more = bound.get(node.path)
        for limits in (node.max, node.min) if node.parent is None else (node.max,):
            for name, limit in limits.items():
                req = job.requests.get(name, 0)
                if not req:
                    continue
                off = own.get(name, 0) + (more.get(name, 0) if more else 0)
                if used.get(name, 0) - off + req > limit:
                    return _blocked_at(node.path, name, limit - req + off)
    if job.preemptible or usage.np_shortfall(quota, job.requests) is None:
        return None
    return ANY_REASON


class _Search:
    """Victim selection by simulation on the live snapshot, always restored."""

    def __init__(self, ctx: PreemptionContext, usage: QuotaUsage, job: Job, quota: str,
                 candidates: tuple[Ranked, ...], total: ResourcesView, *,
                 within_min: bool, spared: frozenset[str] = frozenset()) -> None:
        self.ctx, self.usage, self.job, self.quota = ctx, usage, job, quota
        self.within_min = within_min  # the plan must leave the job's quota within its min
        self.spared = spared  # jobs of other quotas not to take (see find_victims)
        self.candidates = candidates
        self.total = total
        self.removed: list[tuple[Admitted, Fit]] = []
        self.taken: set[int] = set()  # id() of each victim taken (cheaper than its key)
        # (quota, part) -> the candidates of that part before it are taken or not needed
        self._start: dict[tuple[str, int], int] = {}
        self._borrowing: dict[str, bool] = {}  # quota -> still above its min (memo)
        self._fits: dict[str, tuple[int, Fit | None]] = {}  # cluster -> (version, fit)

    def _take(self, victim: Admitted) -> None:
        cs = self.ctx.clusters[victim.cluster]
        fit = cs.placed[victim.key]
        cs.remove(victim.key, victim.pod_sets)
        assert victim.quota is not None
        self.usage.release(victim.quota, victim.requests, preemptible=victim.preemptible)
        self.removed.append((victim, fit))
        self.taken.add(id(victim))
        self._borrowing.clear()

    def _give_back(self, victim: Admitted, fit: Fit) -> None:
        self.ctx.clusters[victim.cluster].undo_remove(victim.key, victim.pod_sets, fit)
        assert victim.quota is not None
        self.usage.charge(victim.quota, victim.requests, preemptible=victim.preemptible)
        self.taken.discard(id(victim))
        self._borrowing.clear()
        self._start.clear()

    def _restore_all(self) -> None:
        while self.removed:
            victim, fit = self.removed.pop()
            self._give_back(victim, fit)

    def _quota_short(self) -> tuple[str, str, int | None] | None:
        """(quota, resource, excess) that keeps the job out now, if any: its
        usage must fall by ``excess`` (``None``: victims cannot lower it)."""
        short = self.usage.shortfall(self.quota, self.job.requests,
                                     preemptible=self.job.preemptible)
        if short is not None:
            excess = None if short.bound.startswith("min") else \
                short.used + short.request - short.limit
            return (short.quota, short.resource, excess)
        if self.within_min:
            usage, quota = self.usage, self.quota
            low, used = usage.tree.nodes[quota].min, usage.used[quota]
            for r, v in self.job.requests.items():
                if v > 0 and usage.borrow_counted(quota, r) and \
                        used.get(r, 0) + v > low.get(r, 0):
                    return (quota, r, used.get(r, 0) + v - low.get(r, 0))
        return None

    def _fit_on(self, cluster: str) -> Fit | None:
        return None if self._quota_short() is not None else self._packed_on(cluster)

    def _packed_on(self, cluster: str) -> Fit | None:
        """The job's pods packed on ``cluster`` as it is now, the quota aside."""
        cs = self.ctx.clusters[cluster]
        known = self._fits.get(cluster)
        if known is not None and known[0] == cs.version:
            return known[1]  # this cluster did not change since: same answer
        got = cs.fits(self.job.pod_sets, self.total)
        self._fits[cluster] = (cs.version, got)
        return got

    def _still_borrowing(self, quota: str) -> bool:
        got = self._borrowing.get(quota)
        if got is None:
            got = self._borrowing[quota] = bool(self.usage.above_min(quota))
        return got

    def _next(self, cluster: str, short: tuple[str, str, int | None] | None
              ) -> tuple[Admitted, str] | None:
        """The best-ranked victim that helps with what blocks the job now: one
        on ``cluster`` first; when a quota blocks, any victim below it."""
        for part in self.candidates:
            for _, victim, why in part.on(cluster):
                if self._helps(victim, short):
                    return victim, why
        if short is None:
            return None
        # The candidates below the blocking quota, in rank order (every part in
        # turn). Those at the front of a part that are taken or whose quota is
        # back at its min stay so until a victim is given back: they are
        # stepped over once.
        blocking = short[0]
        taken = self.taken
        everyone = blocking == self.usage.tree.root  # every quota is below the root
        for number, part in enumerate(self.candidates):
            below = part if everyone else part.below(blocking)
            i = start = self._start.get((blocking, number), 0)
            while (got := below.at(i)) is not None:
                _, victim, why = got
                i += 1
                if i == start + 1 and (id(victim) in taken or not self._may_take(victim)):
                    start += 1
                    continue
                if victim.cluster != cluster and self._helps(victim, short):
                    self._start[(blocking, number)] = start
                    return victim, why
            self._start[(blocking, number)] = start
        return None

    def _may_take(self, victim: Admitted) -> bool:
        assert victim.quota is not None
        if victim.quota == self.quota:
            return True
        # a quota back at its min has no more to reclaim
        return self._still_borrowing(victim.quota) and str(victim.key) not in self.spared

    def _helps(self, victim: Admitted, short: tuple[str, str, int | None] | None) -> bool:
        if id(victim) in self.taken or not self._may_take(victim):
            return False
        if short is None:
            return True
        blocking, resource, _ = short
        assert victim.quota is not None
        return victim.requests.get(resource, 0) > 0 and (
            victim.quota == blocking or victim.quota.startswith(blocking + "/"))

    def quota_victims(self) -> list[Admitted] | Blocked:
        """Victims, best-ranked first, until the quota admits the job (wherever
        they run); else the quota that no set of candidates brings within reach."""
        stuck: tuple[str, str, int | None] | None = None
        try:
            while (short := self._quota_short()) is not None:
                nxt = self._next("", short)
                if nxt is None:
                    stuck = short
                    break
                self._take(nxt[0])
            victims = [v for v, _ in self.removed]
        finally:
            self._restore_all()
        if stuck is not None:  # its usage now, every victim back, less what it lacked
            quota, resource, excess = stuck
            if excess is None:
                return Blocked(quota)
            return Blocked(quota, ((quota, resource,
                                    self.usage.used[quota].get(resource, 0) - excess),))
        return victims

    def plan_on(self, cluster: str) -> PreemptionPlan | None:
        """Victims for the quota (those on ``cluster`` first), then victims on
        ``cluster`` until the gang fits there; then made minimal."""
        reasons: dict[JobKey, str] = {}
        try:
            short = self._quota_short()
            fit = self._packed_on(cluster) if short is None else None
            # With the quota no bar, only victims on the cluster can make room: none if
            # its pods would not pack there with every candidate gone. (When the quota
            # bars it, the search mostly finds room: not worth asking.)
            if fit is None and short is None and not self.ctx.clusters[cluster].could_pack(
                    self.job.pod_sets, self.ctx.room_of(cluster, self.candidates)):
                return None
            while fit is None:
                nxt = self._next(cluster, short)
                if nxt is None or len(self.removed) >= MAX_VICTIMS:
                    return None
                victim, why = nxt
                reasons[victim.key] = why
                self._take(victim)
                short = self._quota_short()
                fit = self._packed_on(cluster) if short is None else None
            # Minimal: give back every victim the job can do without, last pick first.
            for victim, vfit in list(reversed(self.removed)):
                self.removed.remove((victim, vfit))
                self._give_back(victim, vfit)
                again = self._fit_on(cluster)
                if again is not None:
                    fit = again
                else:
                    self._take(victim)
            if len(self.removed) > 1:  # (the smallest set: one victim, if one does)
                one = self._one_victim(cluster)
                if one is not None:
                    victim, why, fit = one
                    return PreemptionPlan(victims=(victim,), fit=fit, reasons={victim.key: why})
            victims = tuple(v for v, _ in self.removed)
            if not victims:
                return None
            return PreemptionPlan(victims=victims, fit=fit,
                                  reasons={v.key: reasons[v.key] for v in victims})
        finally:
            self._restore_all()

    def _one_victim(self, cluster: str) -> tuple[Admitted, str, Fit] | None:
        """The best-ranked single victim that lets the job in on ``cluster``, if
        any, taken (``removed`` holds it alone); else ``None``, with ``removed``
        as it was. The victims taken one after the other in rank order, then
        given back where the job can do without, are a set none of which is
        needless, but not always the smallest: three jobs of 1, 4 and 5 cpu,
        for a job of 5, give the first two. At most ``MAX_SINGLE_TRIES`` are
        tried, those on the cluster first, then those below the quota that
        blocks the job."""
        kept = list(self.removed)
        self._restore_all()
        short = self._quota_short()
        seen: set[int] = set()
        tries = 0
        for victim, why in self._each_candidate(cluster, short):
            if id(victim) in seen or not self._helps(victim, short):
                continue
            seen.add(id(victim))
            tries += 1
            if tries > MAX_SINGLE_TRIES:
                break
            self._take(victim)
            fit = self._fit_on(cluster)
            if fit is not None:
                return victim, why, fit
            self._restore_all()
        for victim, _ in kept:  # (none alone does: the set found, taken again)
            self._take(victim)
        return None

    def _each_candidate(self, cluster: str, short: tuple[str, str, int | None] | None
                        ) -> Iterator[tuple[Admitted, str]]:
        """The candidates, in rank order: those on ``cluster``, then, when a
        quota blocks the job, those below it on other clusters."""
        for part in self.candidates:
            for _, victim, why in part.on(cluster):
                yield victim, why
        if short is None:
            return
        blocking = short[0]
        everyone = blocking == self.usage.tree.root
        for part in self.candidates:
            below = part if everyone else part.below(blocking)
            i = 0
            while (got := below.at(i)) is not None:
                i += 1
                if got[1].cluster != cluster:
                    yield got[1], got[2]
