"""The values the scheduling core works on, in the words of DESIGN.md §1.

``fleet`` builds these from a commit; ``core.cycle`` turns them into
``Decision`` values; ``render`` and ``fleet.state`` write the decisions out.
All are frozen: a cycle never changes its inputs.
"""

from __future__ import annotations

import dataclasses
import enum
import operator
import types
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from reconciler.core.resources import Resources

T = TypeVar("T")


def plain_state(cls: type[T]) -> type[T]:
    """Pickle a frozen slots dataclass as the tuple of its field values (the
    layout ``dataclasses`` uses), read and set without calling ``fields()``
    for every object: caches of 100,000 jobs load and save several times
    faster. ``evolve`` uses the same layout. Its ``__init__`` is replaced by
    one that takes the same arguments and sets the slots directly."""
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    names = tuple(f.name for f in fields)
    get = operator.attrgetter(*names)

    def __getstate__(self: T) -> tuple[Any, ...]:
        got = get(self)
        return got if len(names) > 1 else (got,)

    slots = [getattr(cls, name, None) for name in names]
    if not all(type(s) is types.MemberDescriptorType for s in slots):
        raise TypeError(f"plain_state: {cls.__name__} is not a slots dataclass")
    # __setstate__ sets each slot through its own descriptor, in code made for
    # the class (as ``dataclasses`` makes __init__): twice as fast as a loop
    # over object.__setattr__.
    setters: dict[str, Any] = {f"_set_{i}": s.__set__  # type: ignore[union-attr]
                               for i, s in enumerate(slots)}
    values = ", ".join(f"v{i}" for i in range(len(names)))
    code = (f"def __setstate__(self, state):\n    ({values},) = state\n"
            + "".join(f"    _set_{i}(self, v{i})\n" for i in range(len(names))))
    # __init__ likewise: the dataclass's own sets a frozen field through
    # object.__setattr__, three times slower (a cycle makes 100,000s of these)
    if hasattr(cls, "__post_init__") or not all(f.init for f in fields) \
            or any(n == "self" or n.startswith("_") for n in names):
        raise TypeError(f"plain_state: {cls.__name__} has __post_init__, init=False "
                        f"fields or a field named self or _...")
    params, body = [], []
    for i, f in enumerate(fields):
        value = f.name
        if f.default is not dataclasses.MISSING:
            setters[f"_default_{i}"] = f.default
            params.append(f"{f.name}=_default_{i}")
        elif f.default_factory is not dataclasses.MISSING:
            setters[f"_factory_{i}"] = f.default_factory
            params.append(f"{f.name}=_MISSING")
            value = f"_factory_{i}() if {f.name} is _MISSING else {f.name}"
        else:
            params.append(f.name)
        body.append(f"    _set_{i}(self, {value})\n")
    setters["_MISSING"] = dataclasses.MISSING
    code += f"def __init__(self, {', '.join(params)}):\n" + "".join(body)
    exec(code, setters)  # made from the fields' names and defaults alone
    __setstate__ = setters["__setstate__"]
    __init__ = setters["__init__"]
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"

    setattr(cls, "__getstate__", __getstate__)  # noqa: B010 - replaces the dataclass's own
    setattr(cls, "__setstate__", __setstate__)  # noqa: B010
    setattr(cls, "__init__", __init__)  # noqa: B010
    setattr(cls, "__field_index__", {name: i for i, name in enumerate(names)})  # noqa: B010
    return cls


def evolve(obj: T, **changes: Any) -> T:
    """``dataclasses.replace`` for a ``plain_state`` class, without its
    per-call field lookup (the cycle updates a decision many times)."""
    cls = type(obj)
    index: dict[str, int] = cls.__field_index__  # type: ignore[attr-defined]
    state: list[Any] = list(obj.__getstate__())  # type: ignore[call-overload]
    for name, value in changes.items():
        if name not in index:
            raise TypeError(f"{cls.__name__} has no field {name}")
        state[index[name]] = value
    new = object.__new__(cls)
    new.__setstate__(state)  # type: ignore[attr-defined]
    return new


class OneEach:
    """One object for each value met again: ``one(value)`` is the first value
    given equal to ``value`` (a dict: with the same items in the same order),
    else ``value``, kept for next time. Values shared so must not be changed
    (the core changes none it is given). A fleet's jobs repeat a few shapes
    (pod sets, requests, labels): one object each is pickled once, and read
    back as one object rather than one per job. At most ``limit`` values are
    kept; then it starts again."""

    def __init__(self, limit: int = 1 << 16) -> None:
        self.limit = limit
        self._seen: dict[object, Any] = {}

    def __call__(self, value: T) -> T:
        if isinstance(value, dict):  # (its type in the key: a subclass is not a dict)
            return self.by((type(value), tuple(value.items())), value)
        return self.by(value, value)

    def get(self, key: object) -> Any:
        """The value kept with ``key``, if any (to build a value only when none is)."""
        return self._seen.get(key)

    def by(self, key: object, value: T) -> T:
        """The value first given with ``key`` (a value not hashable itself: a
        key that is equal for equal values, and only for them), else ``value``."""
        got: T | None = self._seen.get(key)
        if got is None:
            if len(self._seen) >= self.limit:
                self._seen.clear()
            got = self._seen[key] = value
        return got


class Phase(enum.StrEnum):
    ADMITTED = "Admitted"
    QUEUED = "Queued"
    INADMISSIBLE = "Inadmissible"
    INVALID = "Invalid"
    FINISHED = "Finished"
    FAILED = "Failed"


class QueueStrategy(enum.StrEnum):
    BEST_EFFORT_FIFO = "BestEffortFIFO"
    STRICT_FIFO = "StrictFIFO"


class PreemptionPolicy(enum.StrEnum):
    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"


class PlacementStrategy(enum.StrEnum):
    BINPACK = "binpack"
    SPREAD = "spread"


class JobKey(NamedTuple):
    """A job's identity: (apiVersion group, kind, namespace, name).

    A named tuple: it is hashed and compared (in this field order) natively,
    and a fleet's cycle does so millions of times.
    """

    group: str
    kind: str
    namespace: str
    name: str

    @property
    def order(self) -> tuple[str, str, str, str]:
        """Tie-break order: namespace/name, then group and kind."""
        return (self.namespace, self.name, self.group, self.kind)

    @property
    def kind_ref(self) -> str:
        """``group/Kind`` as used by MemberCluster capabilities (``batch/Job``)."""
        return f"{self.group}/{self.kind}" if self.group else self.kind

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


@plain_state
@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # Equal | Exists
    value: str = ""
    effect: str = ""  # "" tolerates every effect

    def tolerates(self, taint: Taint) -> bool:
        """As Kubernetes (and Karmada's clusterTolerations) match them: an empty
        effect matches every effect, an empty key every key; ``Exists`` any
        value, ``Equal`` (the default) only the same value, empty included."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        return self.operator == "Exists" or self.value == taint.value


@plain_state
@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"


def untolerated(taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]) -> Taint | None:
    """The first NoSchedule/NoExecute taint none of ``tolerations`` tolerates."""
    for taint in taints:
        if taint.effect == "PreferNoSchedule":
            continue
        if not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None


@plain_state
@dataclass(frozen=True, slots=True)
class PodSet:
    """One role of a job: ``replicas`` identical pods of ``per_pod`` each."""

    name: str
    replicas: int
    per_pod: Resources
    node_selector: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    # its required node affinity: terms of which a node must match one (none: any node)
    node_affinity: tuple[NodeSelectorTerm, ...] = ()


def deleted_after(deleted_when: tuple[bool, bool], phase: Phase) -> bool:
    """Whether a job its kind deletes after it succeeds and after it fails as
    ``deleted_when`` says (``Job.deleted_when``) is deleted once it ended in
    ``phase`` (Finished: it succeeded; else it failed)."""
    return deleted_when[0] if phase is Phase.FINISHED else deleted_when[1]


@plain_state
@dataclass(frozen=True, slots=True)
class Job:
    """A workload manifest reduced to what scheduling needs.

    ``priority_class``/``workload_priority_class`` are names resolved by the
    cycle; ``quota_name`` is the value of the quota label, if any.
    """

    key: JobKey
    api_version: str
    path: str
    line: int
    blob: str
    pod_sets: tuple[PodSet, ...]
    requests: Resources
    labels: tuple[tuple[str, str], ...] = ()
    quota_name: str | None = None
    priority_class: str | None = None
    workload_priority_class: str | None = None
    preemptible: bool = True
    created_at: str | None = None
    # whether its kind deletes it some time after it succeeds, and after it fails
    # (``ttlSecondsAfterFinished``, KubeRay's ``deletionStrategy``): once it has, a
    # manifest still declared would create it, and run it, again
    deleted_when: tuple[bool, bool] = (False, False)
    # (field, line) of each field the cycle may find at fault (``PRIORITY_CLASS_AT``,
    # ...) whose line is not ``line``, as the fleet layer measured them
    field_lines: tuple[tuple[str, int], ...] = ()
    # (gang dialect, why): the member clusters of that dialect would refuse the job as
    # it is written (a Kueue webhook's rules for its kind): they are no candidates for it
    refused: tuple[tuple[str, str], ...] = ()

    @property
    def label_map(self) -> dict[str, str]:
        return dict(self.labels)

    def deleted_after(self, phase: Phase) -> bool:
        """Whether its kind deletes it once it ended so (Finished: succeeded)."""
        return deleted_after(self.deleted_when, phase)

    def line_of(self, field: str, otherwise: int | None = None) -> int:
        """The line of ``field`` (one of ``field_lines``'), else ``otherwise``
        (the job's own line when not given)."""
        for name, line in self.field_lines:
            if name == field:
                return line
        return self.line if otherwise is None else otherwise


# The fields of a job the cycle may find at fault (``Job.field_lines``): the
# PriorityClass it names, its WorkloadPriorityClass label, what binds it to a
# quota (its quota label, else its namespace), the creationTimestamp that
# enqueues it, its maximum run time label and a batch Job's annotation saying
# whether its completions follow its parallelism (both kept as sent while it
# runs on a kueue cluster); and its name (or generateName), told when it clashes.
# And, for a job that names neither its namespace nor a quota by label, the line
# of its metadata, where the namespace its quota goes by would be written (kept
# even when it is the document's first line: that the job names none is the point).
NAME_AT = "name"
PRIORITY_CLASS_AT = "priorityClass"
WORKLOAD_PRIORITY_CLASS_AT = "workloadPriorityClass"
QUOTA_AT = "quota"
NAMESPACE_UNSET_AT = "namespaceUnset"
CREATED_AT = "creationTimestamp"
MAX_EXEC_TIME_AT = "maxExecTime"
COMPLETIONS_EQUAL_PARALLELISM_AT = "completionsEqualParallelism"


@plain_state
@dataclass(frozen=True, slots=True)
class Node:
    name: str
    allocatable: Resources
    labels: tuple[tuple[str, str], ...] = ()
    taints: tuple[Taint, ...] = ()


@dataclass(frozen=True, slots=True)
class MemberCluster:
    name: str
    labels: tuple[tuple[str, str], ...] = ()
    resource_reservation: bool = True
    gang_dialect: str = "ack"
    capabilities: tuple[str, ...] | None = None
    taints: tuple[Taint, ...] = ()
    reserved: Resources = field(default_factory=dict)
    nodes: tuple[Node, ...] = ()
    kubeconfig_context: str | None = None

    @property
    def label_map(self) -> dict[str, str]:
        return dict(self.labels)


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist; Gt | Lt (a node affinity's)
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LabelSelector:
    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[LabelRequirement, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        return meets(self.match_expressions, labels)


NODE_NAME_FIELD = "metadata.name"  # the one field a node affinity's matchFields may name


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """A term of a pod's required node affinity. A node matches it when its
    labels meet every ``matchExpressions`` requirement and its name every
    ``matchFields`` one (keyed ``metadata.name``); a term with neither matches
    no node, as in Kubernetes."""

    match_expressions: tuple[LabelRequirement, ...] = ()
    match_fields: tuple[LabelRequirement, ...] = ()

    def matches(self, labels: dict[str, str], name: str) -> bool:
        return bool(self.match_expressions or self.match_fields) and meets(
            self.match_expressions, labels) and meets(self.match_fields, {NODE_NAME_FIELD: name})


def meets(requirements: tuple[LabelRequirement, ...], labels: dict[str, str]) -> bool:
    """Whether ``labels`` meet every one of ``requirements``."""
    for req in requirements:
        present = req.key in labels
        if req.operator == "In" and (not present or labels[req.key] not in req.values):
            return False
        if req.operator == "NotIn" and present and labels[req.key] in req.values:
            return False
        if req.operator == "Exists" and not present:
            return False
        if req.operator == "DoesNotExist" and present:
            return False
        if req.operator in ("Gt", "Lt") and not (present and _compares(
                labels[req.key], req.operator, req.values)):
            return False
    return True


def _compares(value: str, operator: str, values: tuple[str, ...]) -> bool:
    """A node affinity's Gt or Lt: the label's value, a whole number, above
    (below) the one value given (else it does not match, as in Kubernetes)."""
    try:
        have, bound = int(value), int(values[0])
    except (ValueError, IndexError):
        return False
    return have > bound if operator == "Gt" else have < bound


@dataclass(frozen=True, slots=True)
class ResourceSelector:
    api_version: str
    kind: str
    name: str | None = None
    namespace: str | None = None
    label_selector: LabelSelector | None = None


@dataclass(frozen=True, slots=True)
class ClusterAffinity:
    cluster_names: tuple[str, ...] = ()
    label_selector: LabelSelector | None = None
    exclude: tuple[str, ...] = ()
    name: str = ""


@dataclass(frozen=True, slots=True)
class Failover:
    toleration_seconds: int | None = None
    purge_mode: str = "Gracefully"
    # Graciously/Gracefully: the old copy goes at the latest this long after the
    # job failed over, its new placement running or not (Karmada's default)
    grace_period_seconds: int = 600


@dataclass(frozen=True, slots=True)
class Policy:
    """A PropagationPolicy (``namespace`` set) or ClusterPropagationPolicy."""

    name: str
    namespace: str | None
    path: str
    line: int
    selectors: tuple[ResourceSelector, ...]
    priority: int = 0
    gang: bool = False
    queued: bool = False
    duplicated: bool = False
    affinity: ClusterAffinity | None = None
    affinities: tuple[ClusterAffinity, ...] = ()
    cluster_tolerations: tuple[Toleration, ...] = ()
    failover: Failover | None = None
    propagate_deps: bool = False
    strategy: PlacementStrategy | None = None
    affinity_line: int = 0  # (the line of its clusterAffinity or clusterAffinities)

    @property
    def ref(self) -> str:
        kind = "PropagationPolicy" if self.namespace is not None else "ClusterPropagationPolicy"
        where = f"{self.namespace}/{self.name}" if self.namespace is not None else self.name
        return f"{kind} {where}"


@dataclass(frozen=True, slots=True)
class QuotaSettings:
    """Per-quota settings from ``fleet.yaml`` (``spec.quotas``)."""

    strategy: QueueStrategy = QueueStrategy.BEST_EFFORT_FIFO
    preemption: PreemptionPolicy = PreemptionPolicy.LOWER_PRIORITY
    weight: int = 1000  # milli-weight: 1000 = 1.0


DEFAULT_QUOTA_SETTINGS = QuotaSettings()


@plain_state
@dataclass(frozen=True, slots=True)
class PodSetCount:
    name: str
    replicas: int


@plain_state
@dataclass(frozen=True, slots=True)
class Decision:
    """The outcome for one job: one item of ``placements.yaml``.

    Read back from the previous state, a decision is what that state said of
    the job (``PriorPlacement``): every field but ``kept`` is written, so
    reading an item back gives the decision it was written from, with ``kept``
    false. A job decided as before keeps that very object.
    """

    key: JobKey
    phase: Phase
    enqueued_at: str
    api_version: str = ""
    path: str = ""
    blob: str = ""
    reason: str = ""
    quota: str | None = None
    priority: int = 0
    cluster: str | None = None
    pod_sets: tuple[PodSetCount, ...] = ()
    requests: Resources = field(default_factory=dict)
    admitted_at: str | None = None
    position: int | None = None  # in its quota's queue, when it waits there
    preempted_by: str | None = None
    preemptions: int = 0
    preemption_reason: str | None = None
    copies: tuple[str, ...] = ()  # Duplicated: the other clusters holding a copy
    nodes: tuple[tuple[str, str, int], ...] = ()  # resourceReservation: (node, pod set, pods)
    kept: bool = False  # admitted on its last good version; the source is invalid now
    policy: str | None = None
    # observed outcomes (``core.outcomes``): when a Finished or Failed job ended,
    # the clusters it failed on (failover places it elsewhere), and the clusters
    # that still hold the copy of an earlier placement (failover's purgeMode)
    ended_at: str | None = None
    failed_on: tuple[str, ...] = ()
    kept_on: tuple[str, ...] = ()
    # when each copy of ``kept_on`` was left (its failover): (cluster, time), by cluster
    kept_since: tuple[tuple[str, str], ...] = ()


PriorPlacement = Decision  # what the previous state branch said of a job, read back


@dataclass(frozen=True)
class FleetSettings:
    """The scheduling part of ``fleet.yaml``."""

    quotas: dict[str, QuotaSettings] = field(default_factory=dict)
    default_policy: tuple[str | None, str] | None = None  # (namespace, name)
    strategy: PlacementStrategy = PlacementStrategy.BINPACK

    def for_quota(self, path: str) -> QuotaSettings:
        return self.quotas.get(path) or DEFAULT_QUOTA_SETTINGS
