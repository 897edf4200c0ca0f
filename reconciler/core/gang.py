"""Gang fit: can every pod of a job start together on one member cluster?

``ClusterState`` holds a member cluster's free capacity during a cycle. With
``resourceReservation`` every pod is packed onto a node (free resources,
nodeSelector, tolerations vs node taints, pods); without it the cluster's free
sum must cover the job's total. Free = allocatable - reserved - requests of
the jobs already placed there.

``choose_cluster`` picks among the clusters that fit: ``binpack`` takes the one
left fullest, ``spread`` the one left emptiest; ties go to the cluster name.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from reconciler.core.model import (
    JobKey,
    MemberCluster,
    PlacementStrategy,
    PodSet,
    Taint,
    untolerated,
)
from reconciler.core.resources import (
    MAX_JOBS,
    PODS,
    Resources,
    ResourcesView,
    add_into,
    copies_that_fit,
    first_excess,
    format_quantity,
    sub_into,
)

DEFAULT_PODS_PER_NODE = 110 * 1000
NO_NODE_MATCHES = "no node admits its pods"  # (a nodeSelector or taints: not its size)
NO_NODE_LISTED = "it has no nodes"  # (a MemberCluster that declares none)


def _labelled(ps: PodSet, labels: dict[str, str], name: str) -> bool:
    """Whether node ``name`` of ``labels`` is one ``ps``'s pods ask for: with
    its nodeSelector's labels, and matching a term of its required node affinity."""
    return not any(labels.get(k) != v for k, v in ps.node_selector) and (
        not ps.node_affinity or any(term.matches(labels, name) for term in ps.node_affinity))


@dataclass(frozen=True, slots=True)
class Fit:
    """Where a job's pods go on one cluster: (node index, pod set, count) triples."""

    cluster: str
    total: Resources
    nodes: tuple[tuple[int, int, int], ...] = ()


def job_cluster_total(pod_sets: tuple[PodSet, ...]) -> Resources:
    """What a job takes from a cluster: every pod's requests plus one ``pods`` each."""
    out: Resources = {}
    for ps in pod_sets:
        add_into(out, ps.per_pod, ps.replicas)
        out[PODS] = out.get(PODS, 0) + ps.replicas * 1000
    out.pop(MAX_JOBS, None)
    return out


def _pod_size_key(ps: PodSet) -> tuple[int, int, int, str]:
    p = ps.per_pod
    return (-p.get("nvidia.com/gpu", 0), -p.get("cpu", 0), -p.get("memory", 0), ps.name)


# the resources every node has (a MemberCluster's node that lists none of one
# was described in part)
EVERY_NODE_HAS = frozenset({"cpu", "memory", "ephemeral-storage"})
NO_NODE_LISTS = "no node lists"  # (what a cluster none of whose nodes lists one is told)


def cluster_capacity(clusters: Iterable[MemberCluster], name: str) -> int:
    """The member clusters' ``name`` in all: their nodes' allocatable, less
    what each reserves."""
    return sum(sum(node.allocatable.get(name, 0) for node in c.nodes) - c.reserved.get(name, 0)
               for c in clusters)


class ClusterState:
    """Free capacity of one member cluster, changed as jobs are placed and removed."""

    def __init__(self, cluster: MemberCluster) -> None:
        self.cluster = cluster
        self.name = cluster.name
        # (the cluster's taints that evict the jobs running there untolerated)
        self.no_execute = tuple(t for t in cluster.taints if t.effect == "NoExecute")
        self.node_free: list[Resources] = []
        self.node_labels: list[dict[str, str]] = []
        self.node_taints: list[tuple[Taint, ...]] = []
        self.node_names: list[str] = [node.name for node in cluster.nodes]
        self.node_index: dict[str, int] = {name: i for i, name in enumerate(self.node_names)}
        capacity: Resources = {}
        for node in cluster.nodes:
            alloc = dict(node.allocatable)
            alloc.setdefault(PODS, DEFAULT_PODS_PER_NODE)
            self.node_free.append(alloc)
            self.node_labels.append(dict(node.labels))
            self.node_taints.append(node.taints)
            add_into(capacity, alloc)
        sub_into(capacity, cluster.reserved)
        # (whether a node is tainted NoExecute: see lost_nodes)
        self._evicting = any(t.effect == "NoExecute" for n in cluster.nodes for t in n.taints)
        self.capacity: Resources = capacity
        self.free: Resources = dict(capacity)
        self.placed: dict[JobKey, Fit] = {}
        self._eligible_cache: dict[tuple[object, ...], list[int]] = {}
        # (main resource, id of an eligible list) -> (version, its nodes by room)
        self._rooms: dict[tuple[str, int], tuple[int, list[tuple[int, int]]]] = {}
        # (pod sets' shapes -> ``_larger_than_nodes``: what the nodes hold empty never changes)
        self._larger: dict[tuple[object, ...], str] = {}
        self._never: dict[int, tuple[tuple[PodSet, ...], str | None]] = {}  # (never_runs)
        self._never_shapes: dict[tuple[object, ...], str | None] = {}  # (never_runs)
        self._blank: ClusterState | None = None  # the cluster with nothing on it (never_runs)
        self.removals = 0  # a fit that failed stays failed until something leaves
        self.version = 0  # bumped on every change

    # -- reading -------------------------------------------------------------

    def _undeclared(self, name: str, total: ResourcesView) -> str | None:
        """Why a job asking for a resource every node has (``EVERY_NODE_HAS``)
        does not fit a cluster none of whose nodes lists it in its allocatable
        (``ephemeral-storage`` left out of the MemberCluster: fleetq knows of a
        node only what it says), or None when a node lists it or the resource
        is one a node may lack (a device plugin's: none free is then said)."""
        if name not in EVERY_NODE_HAS or \
                any(name in node.allocatable for node in self.cluster.nodes):
            return None
        return (f"{self.name}: {NO_NODE_LISTS} {name} in its allocatable "
                f"({format_quantity(name, total[name])} requested: add it where the nodes "
                f"have it)")

    def max_node_free(self) -> Resources:
        """The most of each resource free on any one node."""
        out: Resources = {}
        for free in self.node_free:
            for name, value in free.items():
                if value > out.get(name, -1):
                    out[name] = value
        return out

    def fit(self, key: JobKey, pod_sets: tuple[PodSet, ...],
            total: ResourcesView) -> Fit | str:
        """A ``Fit`` for the job on this cluster now, or why it does not fit."""
        short = first_excess(total, self.free)
        if short is not None:
            # (a pod set no node admits, by labels or taints, is told first: room
            # freed there would not let it run)
            # (and a pod no node could hold even empty, with it: room freed there would
            # not let it run either)
            if not self.node_names:
                return f"{self.name}: {NO_NODE_LISTED} (its MemberCluster lists none)"
            return self._admitted_nowhere(pod_sets) or self._undeclared(short, total) or (
                f"{self.name}: free {short} {format_quantity(short, self.free.get(short, 0))}"
                f" < {format_quantity(short, total[short])} requested"
                + self._larger_than_nodes(pod_sets))
        if not self.cluster.resource_reservation:
            return Fit(self.name, dict(total))
        got = self._pack(pod_sets, total)
        if isinstance(got, Fit):
            return got
        ps, placed = got
        # (pods no node could ever hold, taints or size, told so, with what keeps them off)
        return self._pack_failure(pod_sets) or (
            self._no_node_for(ps) if placed is None else self.never_runs(pod_sets) or
            f"{self.name}: only {placed} of {ps.replicas} {ps.name} pods fit on its nodes")

    def _larger_than_nodes(self, pod_sets: tuple[PodSet, ...]) -> str:
        """``, and a worker pod needs cpu 20 but no node has more than 16 in
        all``: when a pod of one of ``pod_sets`` is larger than every node that
        admits it, even empty (its allocatable), though not than the cluster,
        on a cluster that packs pods onto nodes; else nothing."""
        if not self.cluster.resource_reservation:
            return ""
        ck = tuple((ps.name, ps.replicas > 0, tuple(sorted(ps.per_pod.items())),
                    ps.node_selector, ps.tolerations, ps.node_affinity) for ps in pod_sets)
        known = self._larger.get(ck)
        if known is None:
            known = self._larger[ck] = self._larger_than_nodes_now(pod_sets)
        return known

    def _larger_than_nodes_now(self, pod_sets: tuple[PodSet, ...]) -> str:
        nodes = self.cluster.nodes
        for ps in pod_sets:
            eligible = self._eligible(ps) if ps.replicas > 0 else []
            for name, value in sorted(ps.per_pod.items()):
                most = max((nodes[i].allocatable.get(name, 0) for i in eligible), default=0)
                # (a cluster that holds less than one pod in all says so with its free sum)
                if eligible and most < value <= self.capacity.get(name, 0):
                    return (f", and a {ps.name} pod needs {name} {format_quantity(name, value)} "
                            f"but no node has more than {format_quantity(name, most)} in all")
        return ""

    def never_runs(self, pod_sets: tuple[PodSet, ...]) -> str | None:
        """Why a pod of one of ``pod_sets`` could run on no node of this cluster,
        even empty: none admits it (labels, taints), or none that does holds
        it; ``None`` when each could. (On a cluster that leaves node placement
        to its gang scheduler, no resourceReservation, the fit is its free sum
        alone, DESIGN "Gang placement": such a job fits, and its pods would
        stay Pending; on one that packs pods onto nodes, why a pack failed for
        good, told in place of the pods that fit.) Kept by the pod sets'
        identity, and by their shape: jobs of one shape parsed together share
        their pod sets, those read back from the cache do not."""
        got = self._never.get(id(pod_sets))
        if got is None:  # (and by their shape: jobs read back from the cache share none)
            # (the count of pods too where they are counted: see _never_packs)
            counted = not self.cluster.resource_reservation
            ck = tuple((ps.name, ps.replicas if counted else ps.replicas > 0,
                        tuple(sorted(ps.per_pod.items())), ps.node_selector, ps.tolerations,
                        ps.node_affinity) for ps in pod_sets)
            if ck not in self._never_shapes:
                self._never_shapes[ck] = next(filter(None, map(self._never_holds, pod_sets)),
                                              None) or self._never_packs(pod_sets)
            # (pod_sets held with it: its id stays its own)
            got = self._never[id(pod_sets)] = (pod_sets, self._never_shapes[ck])
        return got[1]

    def _never_packs(self, pod_sets: tuple[PodSet, ...]) -> str | None:
        """On a cluster that checks its free sum alone, why the pods of one of
        ``pod_sets``, each of which some node holds, would not all fit onto
        its nodes at once even empty; else ``None``. Each pod set is counted
        alone, and exactly (the pods each node that admits them holds): sets
        that fit each alone but perhaps not together are not told, as telling
        them would take a search of every packing, and "never" must be sure.
        (On a cluster that packs pods onto nodes, a fit packs them.)"""
        if self.cluster.resource_reservation:
            return None
        if self._blank is None:
            self._blank = ClusterState(self.cluster)
        empty = self._blank.node_free
        for ps in pod_sets:
            if ps.replicas < 2:
                continue  # (one pod: _never_holds)
            per_pod = dict(ps.per_pod)
            per_pod[PODS] = 1000
            held = 0
            for i in self._eligible(ps):
                held += copies_that_fit(per_pod, empty[i], ps.replicas - held)
                if held == ps.replicas:
                    break
            else:
                return (f"{self.name}: its nodes hold no more than {held} of its "
                        f"{ps.replicas} {ps.name} pods at once, even empty")
        return None

    def _never_holds(self, ps: PodSet) -> str | None:
        """``never_runs`` of one pod set."""
        if ps.replicas <= 0:
            return None
        eligible = self._eligible(ps)
        if not eligible:
            return self._no_node_for(ps)
        nodes = self.cluster.nodes
        if any(first_excess(ps.per_pod, nodes[i].allocatable) is None for i in eligible):
            return None
        kept_off = [i for i in self._labelled_nodes(ps) if i not in eligible
                    and first_excess(ps.per_pod, nodes[i].allocatable) is None]
        if kept_off:  # (nodes that would hold it keep it off with their taints)
            return (f"{self.name}: {NO_NODE_MATCHES}: the {ps.name} pods tolerate no taint of "
                    f"the nodes that would hold them ({self._untolerated(kept_off, ps)})")
        most: Resources = {}
        for i in eligible:
            for name, value in nodes[i].allocatable.items():
                most[name] = max(most.get(name, 0), value)
        short = first_excess(ps.per_pod, most)
        if short is None:
            return (f"{self.name}: no node holds a {ps.name} pod: none of those that admit it "
                    f"has all it asks for at once")
        return (f"{self.name}: no node holds a {ps.name} pod: it needs {short} "
                f"{format_quantity(short, ps.per_pod[short])}, and no node that admits it has "
                f"more than {format_quantity(short, most.get(short, 0))}")

    def _admitted_nowhere(self, pod_sets: tuple[PodSet, ...]) -> str | None:
        """Why no node admits the pods of one of ``pod_sets`` (``_no_node_for``),
        on a cluster that packs pods onto nodes; else ``None``."""
        if not self.cluster.resource_reservation:
            return None
        ps = next((ps for ps in pod_sets if ps.replicas > 0 and not self._eligible(ps)), None)
        return self._no_node_for(ps) if ps is not None else None

    def _no_node_for(self, ps: PodSet) -> str:
        """Why no node admits ``ps``'s pods: the labels of its nodeSelector (or
        node names of its node affinity) no node has, or the taints of the
        nodes that have them."""
        selector = ps.node_selector
        labelled = self._labelled_nodes(ps)
        if not labelled:
            wanted = [f"nodeSelector ({', '.join(f'{k}={v}' for k, v in selector)})"
                      if selector else "", "required node affinity" if ps.node_affinity else ""]
            named = " or name" if any(term.match_fields for term in ps.node_affinity) else ""
            # (and when the taints of every node keep them off too, that is said as well:
            # the first fix alone would not let them run)
            kept_off = [i for i, taints in enumerate(self.node_taints)
                        if untolerated(taints, ps.tolerations) is not None]
            also = (f"; nor do they tolerate a taint of any of its nodes "
                    f"({self._untolerated(kept_off, ps)})"
                    if kept_off and len(kept_off) == len(self.node_taints) else "")
            return (f"{self.name}: {NO_NODE_MATCHES}: no node has the labels{named} of the "
                    f"{ps.name} pods' {' and '.join(w for w in wanted if w)}{also}")
        which = ("the nodes with the labels they ask for" if ps.node_affinity else
                 "the nodes with their nodeSelector labels" if selector else "its nodes")
        return (f"{self.name}: {NO_NODE_MATCHES}: the {ps.name} pods tolerate no taint of "
                f"{which} ({self._untolerated(labelled, ps)})")

    def _untolerated(self, nodes: Iterable[int], ps: PodSet) -> str:
        """The taints of ``nodes`` that keep ``ps``'s pods off them, one each at most."""
        return ", ".join(sorted({
            f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"
            for i in nodes if (t := untolerated(self.node_taints[i], ps.tolerations))
            is not None}))

    def fits(self, pod_sets: tuple[PodSet, ...], total: ResourcesView) -> Fit | None:
        """``fit`` without the reason: ``None`` when the job does not fit (the
        searches ask this again and again, and never tell why)."""
        if first_excess(total, self.free) is not None:
            return None
        if not self.cluster.resource_reservation:
            return Fit(self.name, dict(total))
        got = self._pack(pod_sets, total)
        return got if isinstance(got, Fit) else None

    def room_of(self, gone: Iterable[tuple[JobKey, tuple[PodSet, ...]]]
                ) -> dict[int, Resources]:
        """What the jobs ``gone`` (their keys and pod sets) hold here, by node
        index (those not placed here hold nothing)."""
        freed: dict[int, Resources] = {}
        placed = self.placed
        for key, sets in gone:
            fit = placed.get(key)
            if fit is None:
                continue
            for node, ps_index, count in fit.nodes:
                room = freed.get(node)
                if room is None:
                    room = freed[node] = {}
                add_into(room, sets[ps_index].per_pod, count)
                # (``place`` charged one ``pods`` each; counted again if asked: a bound)
                room[PODS] = room.get(PODS, 0) + count * 1000
        return freed

    def could_pack(self, pod_sets: tuple[PodSet, ...], freed: Mapping[int, ResourcesView]
                   ) -> bool:
        """Could the pods of ``pod_sets`` pack here were the room ``freed`` (by
        node index: ``room_of`` some jobs) free too? A bound from each node's
        room alone: the pods of each pod set that every node admitting them
        could hold, as if no other pod set took room, must add up to its
        replicas. More room never holds fewer, so when this says no, freeing
        any part of ``freed`` packs nothing."""
        if not self.cluster.resource_reservation:
            return True
        for ps in pod_sets:
            per_pod = dict(ps.per_pod)
            per_pod[PODS] = 1000
            need = ps.replicas
            for i in self._eligible(ps):
                free = self.node_free[i]
                more = freed.get(i)
                if more is not None:
                    free = dict(free)
                    add_into(free, more)
                need -= copies_that_fit(per_pod, free, need)
                if need <= 0:
                    break
            if need > 0:
                return False
        return True

    def _pack(self, pod_sets: tuple[PodSet, ...], total: ResourcesView
              ) -> Fit | tuple[PodSet, int | None]:
        """Each pod onto a node, or the pod set that did not all fit and how
        many of its pods did (``None``: no node admits them). The pod sets are
        placed largest first; when that fails, smallest first once more: on
        nodes of unlike shapes, a large pod set's best fit may take the one
        node a smaller pod set of another shape needs (a master of 4 GPUs and
        2 cpu on the node of 4 GPUs and 64 cpu that its worker of 2 GPUs and
        60 cpu alone fits, when the master fits the other node too)."""
        order = sorted(range(len(pod_sets)), key=lambda i: _pod_size_key(pod_sets[i]))
        got = self._pack_in(pod_sets, total, order)
        if isinstance(got, Fit) or len(order) < 2 or got[1] is None \
                or got[0] is pod_sets[order[0]]:  # (the first alone: last, it fits less)
            return got
        again = self._pack_in(pod_sets, total, order[::-1])
        return again if isinstance(again, Fit) else got

    def _pack_in(self, pod_sets: tuple[PodSet, ...], total: ResourcesView,
                 order: list[int]) -> Fit | tuple[PodSet, int | None]:
        """``_pack``, the pod sets placed in ``order``."""
        trial: dict[int, Resources] = {}
        placed: list[tuple[int, int, int]] = []
        node_free = self.node_free
        for ps_index in order:
            ps = pod_sets[ps_index]
            if ps.replicas <= 0:
                continue  # (a group scaled to none: no pod to place, wherever it would go)
            per_pod = dict(ps.per_pod)
            per_pod[PODS] = 1000
            main = _main_resource(per_pod)
            eligible = self._eligible(ps)
            if not eligible:
                return ps, None
            # Best fit: the nodes with the least of the main resource free first;
            # those with less than one pod's worth cannot take any.
            by_room = sorted([(trial.get(i, node_free[i]).get(main, 0), i) for i in eligible]) \
                if trial else self._by_room(main, eligible)
            left = ps.replicas
            for _, i in by_room[bisect.bisect_left(by_room, (per_pod[main], -1)):]:
                free = trial.get(i, node_free[i])
                n = copies_that_fit(per_pod, free, left)
                if n:
                    free = dict(free)
                    sub_into(free, per_pod, n)
                    trial[i] = free
                    placed.append((i, ps_index, n))
                    left -= n
                    if not left:
                        break
            if left:
                return ps, ps.replicas - left
        return Fit(self.name, dict(total), tuple(placed))

    def _by_room(self, main: str, eligible: list[int]) -> list[tuple[int, int]]:
        """(free ``main``, node index) of the ``eligible`` nodes, least free first:
        sorted again only once the cluster changed (packs are tried far more
        often than jobs are placed; not to be changed)."""
        ck = (main, id(eligible))  # (the eligible lists are kept: see _eligible)
        got = self._rooms.get(ck)
        if got is not None and got[0] == self.version:
            return got[1]
        node_free = self.node_free
        rooms = sorted([(node_free[i].get(main, 0), i) for i in eligible])
        self._rooms[ck] = (self.version, rooms)
        return rooms

    def _eligible(self, ps: PodSet) -> list[int]:
        """The nodes whose labels and taints admit ``ps``'s pods (they never change)."""
        ck = (ps.node_selector, ps.tolerations, ps.node_affinity)
        got = self._eligible_cache.get(ck)
        if got is None:
            taints = self.node_taints
            got = self._eligible_cache[ck] = [
                i for i in self._labelled_nodes(ps)
                if not (taints[i] and untolerated(taints[i], ps.tolerations))]
        return got

    def _labelled_nodes(self, ps: PodSet) -> list[int]:
        """The nodes ``ps``'s pods ask for by their labels (and names)."""
        names = self.node_names
        return [i for i, labels in enumerate(self.node_labels) if _labelled(ps, labels, names[i])]

    def _pack_failure(self, pod_sets: tuple[PodSet, ...]) -> str | None:
        """Why packing failed when a pod is larger than every node's free room
        (told before any other reason), else ``None``.

        (``first_excess`` of each pod against ``max_node_free``, asked of the
        nodes until one has room: that maximum changes with every placement, so
        it is made only for the message.)"""
        node_free = self.node_free
        for ps in pod_sets:
            if ps.replicas <= 0:
                continue
            short = next((name for name, value in ps.per_pod.items() if value > 0
                          and not any(free.get(name, 0) >= value for free in node_free)),
                         None)
            if short is not None:
                biggest = self.max_node_free()
                return (f"{self.name}: a {ps.name} pod needs {short} "
                        f"{format_quantity(short, ps.per_pod[short])} but no node has more "
                        f"than {format_quantity(short, biggest.get(short, 0))} free")
        return None

    # -- changing ------------------------------------------------------------

    def place(self, key: JobKey, pod_sets: tuple[PodSet, ...], fit: Fit) -> None:
        sub_into(self.free, fit.total)
        for node, ps_index, count in fit.nodes:
            per_pod = dict(pod_sets[ps_index].per_pod)
            per_pod[PODS] = 1000
            sub_into(self.node_free[node], per_pod, count)
        self.placed[key] = fit
        self.version += 1

    def force_place(self, key: JobKey, pod_sets: tuple[PodSet, ...], total: ResourcesView,
                    counts: tuple[tuple[str, str, int], ...] = ()) -> Fit:
        """Charge a job that is already running here: on its recorded nodes when
        they still hold it, else packed anew, else on the free sum alone."""
        fit = self._on_recorded_nodes(pod_sets, total, counts) \
            if counts and self.cluster.resource_reservation else None
        if fit is None:
            fit = self.fits(pod_sets, total) or Fit(self.name, dict(total))
        self.place(key, pod_sets, fit)
        return fit

    def has_room_for(self, pod_sets: tuple[PodSet, ...], fit: Fit) -> bool:
        need: dict[int, Resources] = {}
        for node, ps_index, count in fit.nodes:
            per_pod = dict(pod_sets[ps_index].per_pod)
            per_pod[PODS] = 1000
            add_into(need.setdefault(node, {}), per_pod, count)
        return all(first_excess(res, self.node_free[node]) is None
                   for node, res in need.items())

    def remove(self, key: JobKey, pod_sets: tuple[PodSet, ...]) -> None:
        fit = self.placed.pop(key)
        add_into(self.free, fit.total)
        for node, ps_index, count in fit.nodes:
            per_pod = dict(pod_sets[ps_index].per_pod)
            per_pod[PODS] = 1000
            add_into(self.node_free[node], per_pod, count)
        self.removals += 1
        self.version += 1

    def undo_remove(self, key: JobKey, pod_sets: tuple[PodSet, ...], fit: Fit) -> None:
        """Put back a job ``remove`` just took out (a what-if undone): the
        cluster is as it was, so the removal does not count."""
        self.place(key, pod_sets, fit)
        self.removals -= 1

    def score(self, total: ResourcesView) -> float:
        """The share of this cluster left free after placing ``total``, averaged
        over the resources the job asks for (it does not depend on packing)."""
        parts = []
        for name, value in total.items():
            cap = self.capacity.get(name, 0)
            if cap > 0 and value > 0:
                parts.append((self.free.get(name, 0) - value) / cap)
        return sum(parts) / len(parts) if parts else 1.0

    def node_counts(self, fit: Fit, pod_sets: tuple[PodSet, ...]
                    ) -> tuple[tuple[str, str, int], ...]:
        """A fit's packing by node name: (node, pod set, pods), for the state."""
        names = self.node_names
        return tuple(sorted((names[n], pod_sets[i].name, c) for n, i, c in fit.nodes))

    def fits_as_recorded(self, pod_sets: tuple[PodSet, ...], total: ResourcesView,
                         counts: tuple[tuple[str, str, int], ...]) -> Fit | None:
        """The recorded packing of a job (``fit_from_counts``) if it still fits
        now: in the free sum (what is reserved is not on any node), and on each
        of its nodes."""
        if first_excess(total, self.free) is not None:
            return None
        return self._on_recorded_nodes(pod_sets, total, counts)

    def _on_recorded_nodes(self, pod_sets: tuple[PodSet, ...], total: ResourcesView,
                           counts: tuple[tuple[str, str, int], ...]) -> Fit | None:
        """The recorded packing of a job if each of its nodes still has room."""
        fit = self.fit_from_counts(pod_sets, total, counts)
        return fit if fit is not None and self.has_room_for(pod_sets, fit) else None

    def lost_nodes(self, pod_sets: tuple[PodSet, ...],
                   counts: tuple[tuple[str, str, int], ...]) -> list[str]:
        """The nodes of a running job's recorded packing (``counts``) that hold
        its pods no longer, each with why: gone from the cluster (Kubernetes
        deletes the pods of a node that leaves), or tainted NoExecute where its
        pods do not tolerate it (Kubernetes evicts them). A node whose room
        shrank still runs them, and is not one."""
        index = self.node_index
        if not self._evicting and all(node in index for node, _, _ in counts):
            return []  # (most clusters: no node tainted NoExecute, and its nodes all there)
        sets = {ps.name: ps for ps in pod_sets}
        out = set()
        for node, pod_set, _ in counts:
            i = index.get(node)
            if i is None:
                out.add(f"{node} (gone)")
                continue
            ps = sets.get(pod_set)
            evicting = tuple(t for t in self.node_taints[i] if t.effect == "NoExecute")
            taint = untolerated(evicting, ps.tolerations) if ps is not None and evicting \
                else None
            if taint is not None:
                shown = f"{taint.key}={taint.value}" if taint.value else taint.key
                out.add(f"{node} (taint {shown}:NoExecute)")
        return sorted(out)

    def fit_from_counts(self, pod_sets: tuple[PodSet, ...], total: ResourcesView,
                        counts: tuple[tuple[str, str, int], ...]) -> Fit | None:
        """The recorded packing of a job, if its nodes and pod sets still exist."""
        index = self.node_index
        sets = {ps.name: i for i, ps in enumerate(pod_sets)}
        nodes = []
        for node, pod_set, count in counts:
            if node not in index or pod_set not in sets:
                return None
            nodes.append((index[node], sets[pod_set], count))
        if sum(c for _, _, c in nodes) != sum(ps.replicas for ps in pod_sets):
            return None
        return Fit(self.name, dict(total), tuple(nodes))


def _main_resource(per_pod: ResourcesView) -> str:
    for name in ("nvidia.com/gpu", "cpu", "memory"):
        if per_pod.get(name, 0) > 0:
            return name
    return PODS


def by_preference(clusters: list[ClusterState], total: ResourcesView,
                  strategy: PlacementStrategy) -> list[ClusterState]:
    """Clusters whose free sum covers ``total``, best first: binpack takes the
    cluster left fullest, spread the one left emptiest; ties by name."""
    return [c for _, _, c in Ranking(clusters, total, strategy).now()]


class Ranking:
    """``by_preference`` of some clusters for one total and strategy, kept up
    to date: asked again, it scores again only the clusters that changed since
    (``ClusterState.version``). A cycle asks it for every try of every job,
    and between two tries of a job of the same size most clusters are as they
    were."""

    def __init__(self, clusters: list[ClusterState], total: ResourcesView,
                 strategy: PlacementStrategy) -> None:
        self.clusters = clusters
        self.wanted = [(name, value) for name, value in total.items() if value > 0]
        self.spread = strategy is PlacementStrategy.SPREAD
        self.versions = [-1] * len(clusters)  # each cluster's version when scored
        self.ranked: list[tuple[float, str, ClusterState]] = []  # (score, name, state)

    def now(self) -> list[tuple[float, str, ClusterState]]:
        """(score, name, state) of the clusters whose free sum covers the total,
        best first; not to be changed."""
        versions = self.versions
        changed = [i for i, c in enumerate(self.clusters) if c.version != versions[i]]
        if not changed:
            return self.ranked
        gone = {self.clusters[i].name for i in changed}
        ranked = [entry for entry in self.ranked if entry[1] not in gone] \
            if len(gone) < len(versions) else []
        wanted, spread = self.wanted, self.spread
        for i in changed:
            # (``first_excess`` and ``ClusterState.score`` written out in one loop)
            c = self.clusters[i]
            versions[i] = c.version
            free, capacity = c.free, c.capacity
            left = 0.0  # the sum of the shares left free, added in resource order
            counted = 0
            for name, value in wanted:
                have = free.get(name, 0)
                if value > have:
                    break
                cap = capacity.get(name, 0)
                if cap > 0:
                    left += (have - value) / cap
                    counted += 1
            else:
                score = left / counted if counted else 1.0
                ranked.append((-score if spread else score, c.name, c))
        ranked.sort()  # by score, then name: names are unique, states are never compared
        self.ranked = ranked
        return ranked
