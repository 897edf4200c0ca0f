"""Waiting jobs set aside until an admission or an eviction could let them in.

A queued job that failed is tried again only once something since could have
helped it (the cycle's ``_may_have_changed``). Rather than ask that of every
waiting job each time a pass comes to it, a reconcile that starts with settled
jobs (an incremental one) parks them here, and each job that fails after,
filed under the events that could turn the answer to yes, and wakes a job
when one happens; a pass passes over the jobs still parked. (A cold reconcile
parks nothing: there, each pass that evicts wakes most waiting jobs, and
parking them costs more than asking them.) A job is woken by:

- an eviction at or below its own quota (room, or the right to reclaim);
- an eviction at or below a quota that blocked it with no known limit, or
  (blocked for any other reason) at or below the quota it was short of, or on
  one of its candidate clusters;
- an eviction that brings the usage of a limit that blocked it down to the
  most it could pass with (``Blocked.limits``; usage falls only by evictions).
  That is looked at once the try that evicted is over (``settle``), with its
  preemptor admitted: no job is asked in between;
- the admission of a job of its own quota it may preempt (a lower priority,
  or an equal one when its quota's policy is LowerOrNewerEqualPriority);
- when it may reclaim (``may_reclaim`` when parked), the admission of a job
  of another quota that is above its min. Admissions to its own quota never
  make a job that may not reclaim able to: they add as much usage as they add
  to what it may evict, or more.

Waking errs on the side of waking: a woken job is asked ``_may_have_changed``
when its turn comes, and parked again with its old record if nothing changed.
Jobs stay in their queues while parked, so the order of a pass is as if every
job were asked.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from reconciler.core.model import JobKey, PreemptionPolicy
from reconciler.core.preemption import Admitted, Blocked, PreemptionContext
from reconciler.core.quota import QuotaUsage

Entry = tuple[int, JobKey]  # (token, key): stale once the key is parked again or woken
Heaped = tuple[int, int, JobKey]  # (sort value, token, key) in a heap
_Args = tuple[str, int, bool, Blocked, "str | None", frozenset[str]]


class Parked:
    """The parked jobs and their wake-up index (see the module docstring)."""

    __slots__ = ("_args", "_below", "_count", "_entries", "_limits", "_lowered", "_near",
                 "_own", "_reclaimers", "_sets_on", "_token", "ctx", "usage", "woken")

    def __init__(self, usage: QuotaUsage, ctx: PreemptionContext) -> None:
        self.usage = usage
        self.ctx = ctx
        self._token: dict[JobKey, int] = {}
        self.woken = 0  # how many were woken, in all
        self._args: dict[JobKey, _Args] = {}
        self._count = 0
        self._entries = 0  # index entries, stale ones included (see _compact)
        self._own: dict[str, list[Heaped]] = {}  # own quota -> (-priority, token, key)
        self._reclaimers: dict[str, list[Entry]] = {}  # own quota -> those that may reclaim
        self._below: dict[str, list[Entry]] = {}  # quota an eviction below must come
        self._limits: dict[str, dict[str, list[Heaped]]] = {}  # quota -> resource -> (-most, ..)
        self._near: dict[frozenset[str], list[Entry]] = {}  # candidate clusters -> blocked
        self._sets_on: dict[str, list[frozenset[str]]] = {}  # cluster -> candidate sets
        self._lowered: dict[str, None] = {}  # quotas whose usage fell since ``settle``

    def __contains__(self, key: JobKey) -> bool:
        return key in self._token

    def __len__(self) -> int:
        return len(self._token)

    def __iter__(self) -> Iterator[JobKey]:
        return iter(list(self._token))

    @property
    def entries(self) -> int:
        """Entries of the index, stale ones included (a bound on its memory)."""
        return self._entries

    def park(self, key: JobKey, quota: str, priority: int, reclaims: bool, blocked: Blocked,
             short: str | None, candidates: frozenset[str]) -> None:
        """Set ``key`` aside, failed with ``blocked`` (``short``: the quota nearest
        the root it was short of); ``reclaims``: it may reclaim from borrowers."""
        self._count += 1
        token = self._count
        self._token[key] = token
        self._args[key] = (quota, priority, reclaims, blocked, short, candidates)
        self._file(key, token, quota, priority, reclaims, blocked, short, candidates)
        if self._entries > 4 * len(self._token) + 4096:
            self._compact()

    def _file(self, key: JobKey, token: int, quota: str, priority: int, reclaims: bool,
              blocked: Blocked, short: str | None, candidates: frozenset[str]) -> None:
        heapq.heappush(self._own.setdefault(quota, []), (-priority, token, key))
        added = 1
        if reclaims:
            self._reclaimers.setdefault(quota, []).append((token, key))
            added += 1
        if blocked.quota is not None:
            if blocked.limits:
                for at, resource, most in blocked.limits:
                    heapq.heappush(self._limits.setdefault(at, {}).setdefault(resource, []),
                                   (-most, token, key))
                added += len(blocked.limits)
            else:
                self._below.setdefault(blocked.quota, []).append((token, key))
                added += 1
        else:
            if short is not None:
                self._below.setdefault(short, []).append((token, key))
                added += 1
            near = self._near.get(candidates)
            if near is None:
                near = self._near[candidates] = []
                for name in sorted(candidates):
                    self._sets_on.setdefault(name, []).append(candidates)
            near.append((token, key))
            added += 1
        self._entries += added

    def _compact(self) -> None:
        """File every parked job afresh, dropping the stale entries."""
        self._own.clear()
        self._reclaimers.clear()
        self._below.clear()
        self._limits.clear()
        for near in self._near.values():
            near.clear()
        self._entries = 0
        for key, token in self._token.items():
            self._file(key, token, *self._args[key])

    def discard(self, key: JobKey) -> None:
        """``key`` was admitted some other way: it is no longer parked."""
        if self._token.pop(key, None) is not None:
            del self._args[key]

    def _wake(self, token: int, key: JobKey) -> None:
        if self._token.get(key) == token:
            del self._token[key]
            del self._args[key]
            self.woken += 1

    def _wake_all(self, entries: list[Entry] | None) -> None:
        if entries:
            for token, key in entries:
                self._wake(token, key)
            entries.clear()

    def evicted(self, quota: str, cluster: str) -> None:
        """Wake the jobs an eviction of a job of ``quota`` on ``cluster`` may help
        (called once the quota's usage and the cluster are released)."""
        for node in self.usage.tree.ancestry(quota):
            path = node.path
            own = self._own.pop(path, None)
            if own:
                for _, token, key in own:
                    self._wake(token, key)
            self._reclaimers.pop(path, None)  # every one was in ``own``
            self._wake_all(self._below.get(path))
            if path in self._limits:
                self._lowered[path] = None
        for candidates in self._sets_on.get(cluster, ()):
            self._wake_all(self._near[candidates])

    def settle(self) -> None:
        """Wake the jobs whose limit is now down to what they could pass with,
        among the quotas an eviction lowered since the last call."""
        used = self.usage.used
        for path in self._lowered:
            now = used[path]
            for resource, heap in self._limits[path].items():
                level = now.get(resource, 0)
                while heap and -heap[0][0] >= level:
                    _, token, key = heapq.heappop(heap)
                    self._wake(token, key)
        self._lowered.clear()

    def admitted(self, a: Admitted) -> None:
        """Wake the jobs the admission ``a`` may help (called once it is added)."""
        if a.quota is None:
            return
        heap = self._own.get(a.quota)
        if heap and a.can_be_victim:
            policy = self.ctx.settings.for_quota(a.quota).preemption
            if policy is not PreemptionPolicy.NEVER:
                # may_evict_priority: above ``a`` (or equal, by policy) may evict it
                least = a.priority + (
                    0 if policy is PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY else 1)
                while heap and -heap[0][0] >= least:
                    _, token, key = heapq.heappop(heap)
                    self._wake(token, key)
        if self.ctx.is_borrowing(a.quota):
            for quota, entries in self._reclaimers.items():
                if quota != a.quota:
                    self._wake_all(entries)
