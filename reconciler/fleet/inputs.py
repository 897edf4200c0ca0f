"""A commit's files to the values of one reconcile (DESIGN §2).

``read_fleet`` classifies every document by apiVersion + kind and builds the
quota tree, policies, member clusters, priority classes, settings and jobs.
Every problem is a ``Problem`` with ``path:line``; one bad file or job never
stops the others from being read.
"""

from __future__ import annotations

import bisect
import copy
import difflib
import fnmatch
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Protocol, TypeVar, runtime_checkable

from reconciler.core.cycle import InvalidJob
from reconciler.core.gang import cluster_capacity
from reconciler.core.model import (
    NAME_AT,
    ClusterAffinity,
    Failover,
    FleetSettings,
    JobKey,
    LabelSelector,
    MemberCluster,
    Node,
    PlacementStrategy,
    Policy,
    PreemptionPolicy,
    QueueStrategy,
    QuotaSettings,
    ResourceSelector,
    Taint,
)
from reconciler.core.policy import LOCAL_QUEUE_NAME, LOCAL_QUEUE_RULE, find_policy
from reconciler.core.problems import (
    Problem,
    as_read,
    as_written,
    did_you_mean,
    first_of,
    listed,
    quote_it,
    shown_path,
    yaml_type,
)
from reconciler.core.quota import (
    QUOTA_LABEL,
    QuotaSpec,
    QuotaTree,
    build_tree,
    guarantees_lost,
)
from reconciler.core.resources import MAX_JOBS, PODS, Resources, format_quantity
from reconciler.fleet.documents import Document, expand_lists, iter_mapping_docs, parse_documents
from reconciler.fleet.jobs import (
    CLUSTER_NAME_MOST,
    JobSource,
    api_group,
    build_job,
    check_label_value,
    check_name,
    check_namespace,
    job_key,
    named_as_kubernetes_names,
    requirements_of,
    string_map,
    taint_entries,
    tolerations_of,
)
from reconciler.jobkinds import KINDS, kind_for
from reconciler.jobkinds.base import (
    INT32_MAX,
    ManifestError,
    each_error,
    parse_resources,
    raise_all,
)

FLEET_FILES = ("fleet.yaml", "fleet.yml")
TEMPLATES_DIR = "templates/"
POLICY_API_VERSIONS = ("policy.one.alibabacloud.com/v1alpha1", "policy.karmada.io/v1alpha1")
MAX_CLUSTER_NODES = 15_000  # (Kubernetes supports 5,000 nodes a cluster; some clouds 15,000)
DEPENDENCY_KINDS = ("ConfigMap", "Secret", "PersistentVolumeClaim", "ServiceAccount")
KNOWN_OTHER = {
    ("scheduling.sigs.k8s.io/v1beta1", "ElasticQuotaTree"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("kueue.x-k8s.io/v1beta1", "WorkloadPriorityClass"),
    ("fleetq.io/v1alpha1", "MemberCluster"),
    ("fleetq.io/v1alpha1", "Fleet"),
    ("v1", "Namespace"),
}
QUEUE_STRATEGY_NAMES = {
    "StrictFIFO": QueueStrategy.STRICT_FIFO, "Block": QueueStrategy.STRICT_FIFO,
    "BestEffortFIFO": QueueStrategy.BEST_EFFORT_FIFO, "NonBlock": QueueStrategy.BEST_EFFORT_FIFO,
}


Place = tuple[str, int, str]  # where an object is defined: path, line, and what it is
GLOBAL_DEFAULT = "the globalDefault PriorityClass"


@dataclass(frozen=True, slots=True)
class SourceFile:
    path: str
    blob: str
    data: bytes
    # A jobs-only file's jobs, as a cache had them (``data`` is then not read)
    jobs: list[JobSource | InvalidJob] | None = None


@dataclass(frozen=True, slots=True)
class Dependency:
    kind: str
    namespace: str
    name: str
    path: str
    manifest: dict[str, Any]


@dataclass
class GitSettings:
    state_branch: str = "fleetq/state"
    remote: str | None = None
    committer_name: str | None = None
    committer_email: str | None = None
    # read from an earlier version of fleet.yaml, as the source's does not build:
    # which, and why (``pipeline.fleet_git``)
    read_from: str | None = None


@dataclass
class FleetInputs:
    """Everything one reconcile reads from the source commit."""

    settings: FleetSettings = field(default_factory=FleetSettings)
    git: GitSettings = field(default_factory=GitSettings)
    exclude: tuple[str, ...] = ()
    tree: QuotaTree | None = None
    # why ``tree`` is None though a file holds one: that file has errors and no
    # version without them (read_fleet's last_good), and is not used as it is
    tree_unused: str | None = None
    policies: list[Policy] = field(default_factory=list)
    clusters: list[MemberCluster] = field(default_factory=list)
    priority_classes: dict[str, int] = field(default_factory=dict)
    default_priority: int = 0
    workload_priority_classes: dict[str, int] = field(default_factory=dict)
    jobs: dict[JobKey, JobSource] = field(default_factory=dict)
    invalid: list[InvalidJob] = field(default_factory=list)
    broken_paths: dict[str, str] = field(default_factory=dict)
    # files that hold no document (emptied, or comments alone): a job the state
    # has from one is kept, as one whose file breaks is (``pipeline._cycle_input``)
    empty_paths: set[str] = field(default_factory=set)
    cluster_at: dict[str, tuple[str, int]] = field(default_factory=dict)  # name -> path, line
    setting_at: dict[str, tuple[str, int]] = field(default_factory=dict)  # fleet.yaml field
    # what the files spec.exclude leaves out define (member cluster, quota tree, policy):
    # a fleet left without one of them is told so (``_excluded_all``)
    left_out: frozenset[str] = frozenset()
    # files holding a document (not a job) that does not build: see read_fleet's last_good
    unbuilt: set[str] = field(default_factory=set)
    with_last_good: bool = False  # read with read_fleet's last_good (whole: no history cut)
    dependencies: dict[tuple[str, str, str], Dependency] = field(default_factory=dict)
    # (kind, namespace, name) of each ConfigMap, Secret, ... whose document does not
    # build -> where its first mistake is (path, line): not sent, unless its file's last
    # good version defines it (``dependencies`` then has it)
    refused_deps: dict[tuple[str, str, str], tuple[str, int]] = field(default_factory=dict)
    namespaces: dict[str, dict[str, Any]] = field(default_factory=dict)
    templates: dict[str, str] = field(default_factory=dict)
    unknown: list[Problem] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    files: int = 0
    documents: int = 0
    twice: set[JobKey] = field(default_factory=set)  # jobs defined more than once
    jobs_files: dict[str, str] = field(default_factory=dict)  # path -> blob, jobs-only files
    # path -> blob of every other file read: fleet.yaml, templates, and the YAML
    # files holding anything but jobs (or not parsing); see ``patch_fleet_others``
    other_files: dict[str, str] = field(default_factory=dict)
    # every ConfigMap, MemberCluster, policy, PriorityClass, ... by what it is
    # ("ConfigMap video/code"; ``GLOBAL_DEFAULT`` for the globalDefault
    # PriorityClasses), where it is defined (path, line, what)
    defined: dict[str, list[Place]] = field(default_factory=dict)
    # those of ``defined`` in more than one place: left out (see ``read_fleet``)
    conflicts: dict[str, list[Place]] = field(default_factory=dict)

    def error_count(self) -> int:
        return sum(1 for p in self.problems if p.severity == "error")


def is_yaml(path: str) -> bool:
    return path.endswith((".yaml", ".yml"))


def misnamed_yaml(path: str) -> bool:
    """A YAML file by its name but for its case (``job.YAML``): not read, and
    told (fleetq reads ``*.yaml`` and ``*.yml``, as the README says)."""
    return not is_yaml(path) and path.lower().endswith((".yaml", ".yml"))


def is_json(path: str) -> bool:
    """A JSON file: not read as the fleet's, but looked at, and told when it
    holds a Kubernetes object (``kubectl get -o json``, written by a tool)."""
    return path.lower().endswith(".json")


def json_manifest(path: str, data: bytes, taken: Callable[[str], bool] = lambda _: False
                  ) -> Problem | None:
    """A warning when the JSON file ``path`` holds an object of a kind fleetq
    reads (or a List of such), which it does not read there, as it would
    read the file renamed ``*.yaml``; None for any other JSON (a tool's
    settings, a dashboard, another tool's objects). A file named so that
    holds YAML of such objects is told too. ``taken``: whether a path is a
    file of the commit already (the rename it suggests must not be one)."""

    def read(obj: object) -> str | None:  # ("PyTorchJob NAME" of an object fleetq reads)
        if not isinstance(obj, dict):
            return None
        kind = obj.get("kind")
        if not isinstance(kind, str) or obj.get("apiVersion") not in _KINDS_READ.get(kind, ()):
            return None
        meta = obj.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        return f"{kind} {name}" if isinstance(name, str) else kind

    found = _json_objects(data, read)
    if found is None:
        return None
    what, how = found
    if how == "list":
        return Problem(path, 1, (
            f"not read: it holds {what}, and fleetq reads YAML files (*.yaml, *.yml) of "
            f"Kubernetes objects, or of v1 Lists of them: write its items as a v1 List or as "
            f"documents of a *.yaml file (kubectl get ... -o yaml), or exclude it in "
            f"fleet.yaml"), "warning")
    stem = path[:-len(".json")]  # (its case kept: is_json takes any)
    renamed = f"{stem}.yaml" if not taken(f"{stem}.yaml") else f"{stem}-json.yaml"
    return Problem(path, 1, (
        f"not read: it holds {what}, and fleetq reads files named *.yaml and *.yml; rename "
        f"it to {renamed}{' (JSON is YAML)' if how == 'json' else ''}, or exclude it in "
        f"fleet.yaml"), "warning")


def _json_objects(data: bytes, read: Callable[[object], str | None]
                  ) -> tuple[str, str] | None:
    """What a file named *.json holds of the kinds fleetq reads (``read``
    names one), and how: "json", "yaml" (YAML, not JSON), or "list" (a List
    in JSON not of v1); ``None`` when it holds none of them."""
    try:
        value = json.loads(data)
    except ValueError:  # (UnicodeDecodeError too): YAML, named *.json?
        docs, problem = parse_documents("", data)
        named = [what for what in (read(doc.value) for doc in docs) if what is not None] \
            if problem is None else []
        return (f"a file of YAML, not JSON ({first_of(named, 3)})", "yaml") if named else None
    if not isinstance(value, dict):
        return None
    items = value.get("items")
    if isinstance(value.get("kind"), str) and value["kind"].endswith("List") and \
            isinstance(items, list):
        named = [what for what in map(read, items) if what is not None]
        if not named:
            return None
        v1 = value["kind"] == "List" and value.get("apiVersion") == "v1"
        return f"a {value['kind']} in JSON ({first_of(named, 3)})", "json" if v1 else "list"
    named_one = read(value)
    return (f"a Kubernetes object in JSON ({named_one})", "json") \
        if named_one is not None else None


def _listed(paths: Sequence[str], path: str) -> bool:
    """Is ``path`` one of the sorted ``paths``?"""
    i = bisect.bisect_left(paths, path)
    return i < len(paths) and paths[i] == path


def _misnamed(path: str) -> Problem:
    stem, dot, suffix = path.rpartition(".")
    return Problem(path, 0, (
        f"not read: fleetq reads files named *.yaml and *.yml, in lowercase; rename it to "
        f"{stem}{dot}{suffix.lower()} (or exclude it in fleet.yaml)"), "warning")


def excluded(path: str, patterns: Iterable[str]) -> bool:
    for pattern in patterns:
        if fnmatch.fnmatchcase(path, pattern):
            return True
        if pattern.endswith("/**") and path.startswith(pattern[:-2]):
            return True
    return False


# What a pattern of spec.exclude leaves a fleet without, told (``_excluded_all``):
# the kinds of the files it leaves out that the fleet has none of besides, by what
# the fleet loses with them
_LOST_WITH = {b"MemberCluster": "member cluster", b"ElasticQuotaTree": "quota tree",
              b"PropagationPolicy": "policy", b"ClusterPropagationPolicy": "policy"}
_LOST_MEANS = {
    "member cluster": "every job that runs would be deleted from its cluster",
    "quota tree": "no job that queues would be admitted",
    "policy": "no job would be placed (but by fleet.yaml's defaultPolicy)"}


def _left_out(path: str, src: SourceFile, left_out: dict[str, list[str]]) -> None:
    """Note in ``left_out`` (what, of ``_LOST_WITH``, -> paths) what the YAML
    file ``path``, which spec.exclude leaves out, defines, by its ``kind:``
    lines (its bytes are not parsed)."""
    if src.jobs is not None or not is_yaml(path):
        return  # (a file of jobs alone, or one fleetq does not read)
    for what in {_LOST_WITH.get(kind) for kind in _KIND_LINE.findall(src.data)} - {None}:
        left_out.setdefault(str(what), []).append(path)


def _excluded_all(inputs: FleetInputs, left_out: dict[str, list[str]]) -> None:
    """A warning at the pattern of spec.exclude that leaves the fleet with no
    member cluster, no quota tree or no policy, while the files it leaves out
    define some (``exclude: ["*"]``, ``clusters/*``): read as it is, the fleet
    has none, and a reconcile deletes or holds every job. (Files left out
    beside those the fleet reads, examples in docs/ say, are no matter.)"""
    has = {"member cluster": bool(inputs.clusters), "quota tree": inputs.tree is not None,
           "policy": bool(inputs.policies)}
    for what, paths in sorted(left_out.items()):
        if has[what]:
            continue
        by: dict[str, list[str]] = {}  # pattern -> the files it leaves out, of ``paths``
        for path in paths:
            by.setdefault(next(p for p in inputs.exclude if excluded(path, (p,))), []).append(path)
        most = max(by, key=lambda pattern: len(by[pattern]))  # (told at its line)
        where, line = inputs.setting_at.get(f"spec.exclude={most}", ("fleet.yaml", 0))
        named = "; ".join(
            f"{pattern!r} leaves out " + ", ".join(files[:3])
            + (f" and {len(files) - 3} more" if len(files) > 3 else "")
            for pattern, files in sorted(by.items(), key=lambda item: item[0] != most))
        inputs.problems.append(Problem(where, line, (
            f"spec.exclude's patterns leave the fleet with no {what}, and {_LOST_MEANS[what]}: "
            f"{named}; narrow them to files that are not the fleet's, or delete the files to "
            f"take them out of the fleet"), "warning"))


def read_fleet_settings(files: Mapping[str, SourceFile], inputs: FleetInputs) -> None:
    """``fleet.yaml`` first: it says which other files to read."""
    for name in FLEET_FILES:
        src = files.get(name)
        if src is None:
            continue
        docs, problem = parse_documents(name, src.data)
        if problem is not None:
            inputs.problems.append(problem)
            inputs.broken_paths[name] = str(problem)
        for doc in iter_mapping_docs(docs, inputs.problems, inputs.broken_paths):
            if (doc.value["apiVersion"], doc.value["kind"]) != ("fleetq.io/v1alpha1", "Fleet"):
                inputs.problems.append(Problem(name, doc.line, (
                    "fleet.yaml holds the Fleet settings (apiVersion fleetq.io/v1alpha1, "
                    f"kind Fleet), not a {doc.value['kind']}")))
                continue
            _guard(inputs, doc, _fleet)
        return


class JobCache(Protocol):
    """Parsed jobs of jobs-only files by (blob id, path); see ``fleet.cache``."""

    def job_entry(self, blob: str, path: str) -> list[JobSource | InvalidJob] | None: ...

    def put_job_entry(self, blob: str, path: str,
                      entry: list[JobSource | InvalidJob]) -> None: ...


T = TypeVar("T")

# (path, its blob now) -> the file's earlier versions, newest first (see read_fleet)
LastGood = Callable[[str, str], Iterable["SourceFile"]]


@runtime_checkable
class History(Protocol):
    """A ``LastGood`` that also tells which version of a file each source tree
    the state was made from held: what decides which of two files that define
    the same object keeps it (see ``read_fleet``)."""

    def __call__(self, path: str, blob: str, /) -> Iterable[SourceFile]: ...

    def blobs(self, path: str, /) -> Iterable[str | None]:
        """``path``'s blob in each of those trees, newest first (``None``: not
        there), as far back as the state goes: each read when it is asked for."""
        ...

    def version(self, path: str, blob: str, /) -> SourceFile:
        """The file ``path`` as it was at ``blob`` (one of those ``blobs`` gave)."""
        ...


def read_fleet(files: Iterable[SourceFile], cache: JobCache | None = None,
               last_good: LastGood | None = None) -> FleetInputs:
    """``_read_fleet``, and the warnings of the quota tree it reads as the fleet's
    (``guarantees_lost``), unless the file holding it is read in its last good
    version: told at the lines of that version, they would speak of what the
    file no longer says."""
    inputs = _read_fleet(files, cache, last_good)
    tree = inputs.tree
    if tree is not None and not any(p.path == tree.path and p.message.startswith(GOES_ON_WITH)
                                    for p in inputs.problems):
        inputs.problems = sorted(set(inputs.problems + guarantees_lost(tree)))
    return inputs


def _read_fleet(files: Iterable[SourceFile], cache: JobCache | None = None,
                last_good: LastGood | None = None) -> FleetInputs:
    """Classify and build every document of the commit.

    With a ``cache``, a jobs-only file whose blob was read before is not
    parsed again; its jobs come from the cache. A ``files`` list is emptied:
    each file is dropped as soon as it is read.

    ``last_good``: a file that defines the fleet (fleet.yaml, the quota tree,
    member clusters, policies, PriorityClasses, ...) and does not parse or
    build is read in its last good version, the newest of those ``last_good``
    gives (the versions of the commits the state was made from) that parses
    and builds: its errors are reported, and the fleet goes on as it was.
    Without it, the jobs such a file's quota, cluster or policy held would be
    evicted by a typo. A file whose last version holds only jobs is read as
    it is (a job whose file breaks keeps its last good placement: see
    ``CycleInput.broken_paths``).

    An object (ConfigMap, MemberCluster, policy, PriorityClass, ...) defined
    in two files, or a second globalDefault PriorityClass, is no file's by the
    order of their names: when ``last_good`` is a ``History``, the file that
    defined it in the fleet the state was made from keeps it, and the other
    is read as a file that does not build: in its last good version that does
    not define it, or, when it has none (a new file), left out (its jobs that
    ran keep their places, as those of a broken file). Either way an error on
    it names both places. When that is not known (no state: the first
    reconcile, ``fleetq validate``), neither counts: see ``_leave_out_conflicts``.
    """
    by_path = {f.path: f for f in files}
    if isinstance(files, list):
        files.clear()  # each file's bytes are let go once it is read (peak memory)
    read: dict[str, SourceFile | Blobbed] | None = {} if last_good is not None else None
    inputs = _read_all(by_path, cache, read)
    inputs.with_last_good = last_good is not None
    if last_good is None or read is None or not (
            inputs.broken_paths or inputs.unbuilt or inputs.conflicts):
        return inputs
    good: dict[str, SourceFile] = {}
    now: dict[str, str] = {}  # path -> its blob now, for those read in another version
    cut: list[Problem] = []  # files whose history here ends before a good version
    never: list[SourceFile] = []  # files never good, as far as their history goes
    for path in sorted(set(inputs.broken_paths) | inputs.unbuilt):
        src = read.get(path)
        if not isinstance(src, SourceFile) or (
                path in inputs.broken_paths and not _may_define_the_fleet(src)):
            continue
        was = _newest_good(last_good(path, src.blob))
        if was is not None:
            good[path], now[path] = was, src.blob
        elif (why := _cut_short(last_good, path)) is not None:
            cut.append(Problem(path, 0, why, "warning"))
        else:
            never.append(src)
    again = _read_again(read, good, set(), cache) if good else inputs
    held: dict[str, str] = {}  # path -> why: files left out, defining what another file does
    told: list[Problem] = []  # those files' errors
    if isinstance(last_good, History) and again.conflicts:
        taken = _intruders(again, read, good, last_good)
        for path, (was, errors) in sorted(taken.items()):
            src = read[path]
            assert isinstance(src, SourceFile)
            now[path] = src.blob
            if was is not None:
                good[path] = was
            else:
                good.pop(path, None)
                held[path] = errors[0].message
            told.extend(errors)
        if taken:
            again = _read_again(read, good, set(held), cache)
    if again is inputs:
        if cut:
            inputs.problems = sorted(set(inputs.problems + cut))
            inputs.with_last_good = False  # (see below)
        _leave_out_tree(inputs, never)
        return inputs
    settled = {p for label, places in inputs.conflicts.items()  # (told again, or otherwise)
               if len({path for path, _, _ in places}) > 1
               for p in conflict_problems(label, places)}
    kept = [p for p in inputs.problems if (p.path in good or p.path in held)
            and p.severity == "error" and p not in settled]
    again.with_last_good = True
    for path, why in held.items():
        again.other_files[path] = now[path]
        again.broken_paths[path] = why  # (its jobs that ran keep their places)
    for path, was in good.items():
        again.other_files[path] = now[path]  # (the file read is the one there now)
        again.problems.append(Problem(path, 0, (
            f"{GOES_ON_WITH} (blob {was.blob[:12]}) "
            f"until it is fixed"), "warning"))
    again.problems = sorted(set(again.problems + kept + told + cut))
    # (a file whose history was cut short is read as if without ``last_good``: the
    # next read, with all of it maybe, is whole, not patched from this one)
    again.with_last_good = not cut
    _leave_out_tree(again, never)
    return again


def _leave_out_tree(inputs: FleetInputs, never: list[SourceFile]) -> None:
    """No quota tree for ``inputs`` when the file holding it is one of those
    ``never`` good (``tree_unused`` says why): as it is, a quota whose max is
    misspelt would admit without limit; a file that does not parse, which
    holds a tree by its kind lines, is named too, as the tree's."""
    tree = inputs.tree
    for src in never:
        if tree.path == src.path if tree is not None else \
                b"ElasticQuotaTree" in _KIND_LINE.findall(src.data):
            inputs.tree = None
            inputs.tree_unused = (
                f"the ElasticQuotaTree in {shown_path(src.path)} has errors and no earlier "
                f"version without them (fleetq validate tells them)")
            return


# what a warning on a file read in another version than its own says first
GOES_ON_WITH = "the fleet goes on with this file's last good version"
CUT_SHORT = "this shallow clone's history of it ends at"


def _cut_short(last_good: LastGood, path: str) -> str | None:
    """Why ``last_good`` may lack ``path``'s last good version, when it says so
    (its ``cut``, path -> why: a shallow clone's history ends before one)."""
    cut = getattr(last_good, "cut", None)
    return cut.get(path) if isinstance(cut, dict) else None


def _read_again(read: dict[str, SourceFile | Blobbed], good: dict[str, SourceFile],
                left_out: set[str], cache: JobCache | None) -> FleetInputs:
    """``read_fleet``'s second pass: the files ``read`` as they were read, but
    those of ``good`` in that version, and without those ``left_out``."""
    return _read_all({path: good.get(path) or (src if isinstance(src, SourceFile) else
                                               SourceFile(path, src[0], b"", src[1]))
                      for path, src in read.items() if path not in left_out}, cache, None)


def _intruders(inputs: FleetInputs, read: Mapping[str, SourceFile | Blobbed],
               good: Mapping[str, SourceFile], history: History
               ) -> dict[str, tuple[SourceFile | None, list[Problem]]]:
    """The files that define an object (``FleetInputs.conflicts``) another file
    defined before them, each with the version to read instead (``None``:
    none, it is left out) and its errors. The file that defined it before is
    the one that alone defined it in the newest source tree the state was made
    from where one of them did (where both did, the one before: it is the one
    that counted there); where none did, or the state holds no tree, nothing is
    known, and the conflict stays. A file that defined it before too is read
    in its newest version that builds and defines none of the objects it may
    not (one that holds only jobs will not do: a job file's jobs that ran keep
    their places)."""
    defines: dict[tuple[str, str], dict[str, list[Place]]] = {}

    def defined(path: str, blob: str) -> dict[str, list[Place]]:
        if (path, blob) not in defines:
            src = good.get(path) or read.get(path)
            if not (isinstance(src, SourceFile) and src.blob == blob):
                src = history.version(path, blob)
            scratch = FleetInputs()
            _read_alone(src, scratch)
            defines[path, blob] = scratch.defined
        return defines[path, blob]

    owners: dict[str, Place] = {}  # label -> the place that keeps it
    for label, places in sorted(inputs.conflicts.items()):
        paths = sorted({path for path, _, _ in places})
        if len(paths) < 2:
            continue
        # (in step: each tree the state was made from, newest first, until one decides)
        for blobs in zip(*(history.blobs(path) for path in paths), strict=True):
            there = [path for path, blob in zip(paths, blobs, strict=True)
                     if blob is not None and label in defined(path, blob)]
            if len(there) == 1:
                owners[label] = next(p for p in places if p[0] == there[0])
                break
            if not there:
                break
    out: dict[str, tuple[SourceFile | None, list[Problem]]] = {}
    for path in sorted({p for label, owner in owners.items()
                        for p, _, _ in inputs.conflicts[label] if p != owner[0]}):
        labels = {label for label, owner in owners.items() if owner[0] != path
                  and any(p == path for p, _, _ in inputs.conflicts[label])}
        now = read[path]
        assert isinstance(now, SourceFile)
        was = next((v for v in history(path, now.blob) if _fits(v, labels)), None)
        ran = any(s.job.path == path for s in inputs.jobs.values())
        then = (f"with this file as it last was without it (blob {was.blob[:12]})"
                if was is not None else "without this file"
                + (" (its jobs that ran keep their places)" if ran else ""))
        why: list[Problem] = []
        for label in sorted(labels):
            first, line_first, what_first = owners[label]
            for where, line, what in inputs.conflicts[label]:
                if where != path:
                    continue
                said = (f"{what} is globalDefault, as {what_first} at {first}:{line_first} is, "
                        f"which was before this file was: Kubernetes admits one globalDefault "
                        f"PriorityClass" if label == GLOBAL_DEFAULT else
                        f"{what} is a second ElasticQuotaTree, beside {what_first} at "
                        f"{first}:{line_first}, which was before this file was: a fleet has "
                        f"one" if label == QUOTA_TREE else
                        f"{what} is also defined at {first}:{line_first}, which defined it "
                        f"before this file did")
                why.append(Problem(where, line, (
                    f"{said}; the fleet goes on with that one, and {then}, until one of "
                    f"the two is removed or renamed")))
        out[path] = (was, why)
    return out


def _read_alone(src: SourceFile, scratch: FleetInputs) -> bool:
    """Read one file (not fleet.yaml) into ``scratch``, as if it were the whole
    fleet; does it hold only jobs?"""
    trees: list[Document] = []
    if read_file(src, scratch, trees):
        return True
    _finish(scratch, trees)
    return False


def _fits(src: SourceFile, labels: set[str]) -> bool:
    """Does this version of a file build, hold more than jobs, and define none
    of ``labels``?"""
    scratch = FleetInputs()
    return not _read_alone(src, scratch) and not scratch.broken_paths and \
        not scratch.unbuilt and not labels & set(scratch.defined)


_KIND_LINE = re.compile(rb"^\s*(?:-\s+)?kind:\s*[\"']?([A-Za-z]+)", re.MULTILINE)
_JOB_KINDS = {k.kind.encode() for k in KINDS}


def _may_define_the_fleet(src: SourceFile) -> bool:
    """Could a file that does not parse hold more than jobs? (A look at its
    ``kind:`` lines, so that a job file's earlier versions are not read: a
    job whose file breaks keeps its last good placement instead.)"""
    return src.path in FLEET_FILES or any(
        kind not in _JOB_KINDS for kind in _KIND_LINE.findall(src.data)) or \
        not _KIND_LINE.search(src.data)


def _newest_good(versions: Iterable[SourceFile]) -> SourceFile | None:
    """The first of ``versions`` that parses and builds; ``None`` when none
    does, or the newest that parses holds only jobs (a job file)."""
    for src in versions:
        scratch = FleetInputs()
        if src.path in FLEET_FILES:
            read_fleet_settings({src.path: src}, scratch)
        elif _read_alone(src, scratch):
            return None  # jobs only
        if not scratch.broken_paths and not scratch.unbuilt:
            return src
    return None


def _read_all(by_path: dict[str, SourceFile], cache: JobCache | None,
              read: dict[str, SourceFile | Blobbed] | None) -> FleetInputs:
    """``read_fleet``'s one pass over the files (``by_path`` is emptied);
    ``read``, when given, gets each file read, a jobs-only one as its blob and
    jobs (no bytes kept)."""
    inputs = FleetInputs()
    read_fleet_settings(by_path, inputs)
    trees: list[Document] = []
    left_out: dict[str, list[str]] = {}  # what the files spec.exclude leaves out define
    paths = sorted(by_path)  # (also the names a JSON file's rename must not take)
    for path in paths:
        src = by_path.pop(path)
        if read is not None and (path.startswith(TEMPLATES_DIR) or path in FLEET_FILES or (
                not is_yaml(path) and (misnamed_yaml(path) or is_json(path))
                and not excluded(path, inputs.exclude))):
            read[path] = src  # (read again as it is, with a broken file's last good version)
        if path.startswith(TEMPLATES_DIR):
            inputs.templates[path[len(TEMPLATES_DIR):]] = src.data.decode("utf-8", "replace")
            inputs.other_files[path] = src.blob
            continue
        if path in FLEET_FILES:
            inputs.other_files[path] = src.blob  # (read first, by read_fleet_settings)
            continue
        if excluded(path, inputs.exclude):
            _left_out(path, src, left_out)
            continue
        if not is_yaml(path):
            if misnamed_yaml(path):
                inputs.other_files[path] = src.blob  # (read again with the others)
                inputs.unknown.append(_misnamed(path))
            elif is_json(path):
                inputs.other_files[path] = src.blob  # (looked at again with the others)
                told = json_manifest(path, src.data, partial(_listed, paths))
                if told is not None:
                    inputs.unknown.append(told)
            continue
        inputs.files += 1
        cached = src.jobs
        if cached is None and cache is not None:
            cached = cache.job_entry(src.blob, path)
        if cached is not None:
            for outcome in cached:
                inputs.documents += 1
                _take_job(inputs, outcome)
            inputs.jobs_files[path] = src.blob
            if read is not None:
                read[path] = (src.blob, cached)
            continue
        record: list[JobSource | InvalidJob] = []
        if read_file(src, inputs, trees, record):
            inputs.jobs_files[path] = src.blob
            if cache is not None:
                cache.put_job_entry(src.blob, path, record)
            if read is not None:
                read[path] = (src.blob, record)
        else:
            inputs.other_files[path] = src.blob
            if read is not None:
                read[path] = src
    _finish(inputs, trees)
    inputs.left_out = frozenset(left_out)
    _excluded_all(inputs, left_out)
    return inputs


JobEntry = list[JobSource | InvalidJob]  # a jobs-only file's jobs, as read_file records them
Blobbed = tuple[str, JobEntry]  # a jobs-only file's blob and its jobs


def patch_fleet(before: FleetInputs, changes: Iterable[tuple[str, Blobbed | None,
                                                             Blobbed | None]]
                ) -> FleetInputs | None:
    """What ``read_fleet`` reads from a commit that differs from the one it read
    ``before`` from only in jobs-only files: ``before`` with each such file's
    jobs, (path, old, new), taken out (old) and put in (new; ``None``: the file
    was added or deleted). ``before`` is not changed; the result shares its
    other values. ``None`` when the result could differ from a full read: a
    job defined twice, before or after.

    The jobs are not in a full read's order (no reader of them depends on
    it); the invalid jobs and the problems are.
    """
    inputs = replace(before, jobs=dict(before.jobs), invalid=list(before.invalid),
                     problems=list(before.problems), jobs_files=dict(before.jobs_files),
                     broken_paths=dict(before.broken_paths))
    changes = [c for c in changes if not excluded(c[0], inputs.exclude)]
    for path, old, _ in changes:
        if old is None:
            continue
        blob, outcomes = old
        if inputs.jobs_files.pop(path, None) != blob:
            return None  # not the file read before
        inputs.broken_paths.pop(path, None)  # (a job there that said not which it is)
        for outcome in outcomes:
            if isinstance(outcome, JobSource):
                key = outcome.job.key
                if key in inputs.twice or inputs.jobs.get(key) is not outcome:
                    return None
                del inputs.jobs[key]
            try:
                if isinstance(outcome, InvalidJob):
                    inputs.invalid.remove(outcome)
                for problem in _problems_of(outcome):
                    inputs.problems.remove(problem)
            except ValueError:
                return None
        inputs.files -= 1
        inputs.documents -= len(outcomes)
    for path, _, new in changes:
        if new is None:
            continue
        blob, outcomes = new
        for outcome in outcomes:
            if isinstance(outcome, JobSource) and (
                    outcome.job.key in inputs.jobs or outcome.job.key in inputs.twice):
                return None
            _take_job(inputs, outcome)
        inputs.jobs_files[path] = blob
        inputs.files += 1
        inputs.documents += len(outcomes)
    inputs.invalid.sort(key=lambda bad: bad.path)  # (stable: each file's in its order)
    inputs.problems.sort()
    return inputs


def patch_fleet_others(before: FleetInputs, changes: Iterable[tuple[str, Blobbed | None,
                                                                    Blobbed | None]],
                       others: FleetInputs) -> FleetInputs | None:
    """What ``read_fleet`` reads from a commit whose files other than jobs-only
    ones (``FleetInputs.other_files``: fleet.yaml, templates, files holding
    other kinds or that do not parse) were read whole into ``others``, and
    whose jobs-only files differ from those ``before`` was read from by
    ``changes`` (as ``patch_fleet`` takes them; a file that turned into
    another kind of file, or from one, is on one side only). The jobs-only
    files' jobs are ``before``'s, patched; the rest is ``others``. ``None``
    when the result could differ from a full read: a job defined twice,
    before or after, or an other file that holds only jobs after all.
    ``before`` is not changed. The jobs are not in a full read's order; the
    invalid jobs and the problems are.
    """
    if before.twice or others.jobs_files:
        return None
    files = before.jobs_files
    jobs = {key: source for key, source in before.jobs.items() if source.job.path in files}
    invalid = [bad for bad in before.invalid if bad.path in files]
    outcomes: list[JobSource | InvalidJob] = [*jobs.values(), *invalid]
    part = patch_fleet(FleetInputs(
        exclude=before.exclude, jobs=jobs, invalid=invalid,
        problems=[problem for outcome in outcomes for problem in _problems_of(outcome)],
        files=len(files), documents=len(jobs) + len(invalid), jobs_files=dict(files),
        broken_paths={p: why for p, why in before.broken_paths.items() if p in files}),
        changes)
    if part is None:
        return None
    merged = dict(others.jobs)
    for key, source in part.jobs.items():
        if key in merged or key in others.twice:
            return None  # (which of the two counts depends on the order of the files)
        merged[key] = source
    return replace(others, jobs=merged, broken_paths={**others.broken_paths,
                                                      **part.broken_paths},
                   invalid=sorted(others.invalid + part.invalid, key=lambda bad: bad.path),
                   problems=sorted(others.problems + part.problems),
                   files=others.files + part.files, documents=others.documents + part.documents,
                   jobs_files=part.jobs_files)


def _problems_of(outcome: JobSource | InvalidJob) -> list[Problem]:
    """The errors an invalid job is told with: its first, and each other; the
    warnings a job is told with (fields its API server does not have)."""
    if isinstance(outcome, JobSource):
        return [Problem(outcome.job.path, line, message, "warning")
                for line, message in outcome.warnings]
    return [Problem(outcome.path, outcome.line, outcome.message),
            *(Problem(outcome.path, line, message) for line, message in outcome.more),
            *(Problem(outcome.path, line, message, "warning")
              for line, message in outcome.warnings)]


def _take_job(inputs: FleetInputs, outcome: JobSource | InvalidJob) -> None:
    if isinstance(outcome, JobSource):
        _add_job(inputs, outcome)
        return
    inputs.invalid.append(outcome)
    inputs.problems.extend(_problems_of(outcome))
    if not named_as_kubernetes_names(outcome.key):  # (which job it is, it does not say)
        inputs.broken_paths.setdefault(outcome.path, outcome.message)


def read_file(src: SourceFile, inputs: FleetInputs, trees: list[Document],
              record: list[JobSource | InvalidJob] | None = None) -> bool:
    """Read one file's documents into ``inputs``.

    Returns whether the file held only jobs and parsed cleanly: then
    ``record`` holds its outcomes, which a cache may replay.
    """
    path = src.path
    docs, problem = parse_documents(path, src.data)
    if problem is not None:
        inputs.problems.append(problem)
        inputs.broken_paths[path] = str(problem)
    elif not docs:
        inputs.empty_paths.add(path)
    listed = len(inputs.problems)
    docs = expand_lists(docs, inputs.problems)
    if len(inputs.problems) > listed:  # (a List whose items are no list: what it held is lost)
        inputs.broken_paths.setdefault(path, str(inputs.problems[listed]))
    jobs_only = problem is None and bool(docs) and len(inputs.problems) == listed
    for doc in docs:
        if not (isinstance(doc.value, dict) and kind_for(
                str(doc.value.get("apiVersion")), str(doc.value.get("kind")))):
            jobs_only = False
    for doc in iter_mapping_docs(docs, inputs.problems, inputs.broken_paths):
        inputs.documents += 1
        value = doc.value
        api_version, kind = value["apiVersion"], value["kind"]
        job_kind = kind_for(api_version, kind)
        if job_kind is not None:
            outcome = _read_job(doc, job_kind, src.blob, could_be_too_large(src.data))
            if record is not None:
                record.append(outcome)
            _take_job(inputs, outcome)
            continue
        if kind == "ElasticQuotaTree" and api_version == "scheduling.sigs.k8s.io/v1beta1":
            trees.append(doc)
        elif kind in ("PropagationPolicy", "ClusterPropagationPolicy") and (
                api_version in POLICY_API_VERSIONS):
            _guard(inputs, doc, _add_policy)
        elif (api_version, kind) == ("scheduling.k8s.io/v1", "PriorityClass"):
            _guard(inputs, doc, _priority_class)
        elif (api_version, kind) == ("kueue.x-k8s.io/v1beta1", "WorkloadPriorityClass"):
            _guard(inputs, doc, _workload_priority_class)
        elif (api_version, kind) == ("fleetq.io/v1alpha1", "MemberCluster"):
            _guard(inputs, doc, _add_cluster)
        elif (api_version, kind) == ("fleetq.io/v1alpha1", "Fleet"):
            inputs.problems.append(Problem(path, doc.line, (
                "a Fleet belongs in fleet.yaml at the top of the repo; move it there")))
        elif api_version == "v1" and kind in DEPENDENCY_KINDS:
            told = len(inputs.problems)
            _guard(inputs, doc, _dependency)
            meta = value.get("metadata")
            if len(inputs.problems) > told and isinstance(meta, dict) \
                    and isinstance(meta.get("name"), str):
                first = inputs.problems[told]
                inputs.refused_deps.setdefault(
                    (kind, str(meta.get("namespace") or "default"), meta["name"]),
                    (first.path, first.line))
        elif (api_version, kind) == ("v1", "Namespace"):
            _guard(inputs, doc, _namespace)
        elif (meant := _meant(str(api_version), str(kind))) is not None:
            # a typo, most likely: what the file held (a policy, a job, ...) would go,
            # and the jobs it placed with it; the file counts as broken meanwhile
            then = ("the job keeps its placement, if it has one" if kind_for(
                *meant.split(" ", 1)) is not None else "this file is read as it last was, "
                "and jobs keep their placements")
            message = (f"{api_version} {kind} is not a kind fleetq reads: did you mean "
                       f"{meant}? Fix it (until then, {then})")
            inputs.problems.append(Problem(path, doc.line_of("kind"), message))
            inputs.broken_paths[path] = message
        else:
            inputs.unknown.append(Problem(path, doc.line, (
                f"{api_version} {kind} is not a kind fleetq reads; it is ignored "
                f"(move it out of the fleet repo or exclude it in fleet.yaml)"), "warning"))
    return jobs_only


def _kinds_read() -> dict[str, list[str]]:
    """Every kind fleetq reads, with its apiVersions."""
    table: dict[str, list[str]] = {}
    pairs = [*sorted(KNOWN_OTHER), *((api, k) for k in ("PropagationPolicy",
                                                         "ClusterPropagationPolicy")
                                     for api in POLICY_API_VERSIONS),
             *(("v1", k) for k in DEPENDENCY_KINDS), *((k.api_version, k.kind) for k in KINDS)]
    for api, kind in pairs:
        table.setdefault(kind, []).append(api)
    return table


_KINDS_READ = _kinds_read()


def _meant(api_version: str, kind: str) -> str | None:
    """The kind fleetq reads that an unknown one most likely means: one of the
    same API group, of the same name under another version, or a letter or
    so away, or a name that only a kind fleetq reads has, under any apiVersion
    (``ray.io/v1 PyTorchJob``); else ``None`` (another tool's kind, left alone:
    Volcano's batch.volcano.sh Job, scheduler-plugins' ElasticQuota, ...)."""
    if kind in _OWN_NAMES:
        return f"{' or '.join(_KINDS_READ[kind])} {kind}"
    if kind not in _KINDS_READ:
        close = difflib.get_close_matches(kind, list(_KINDS_READ), n=1, cutoff=0.9) or [
            k for k in sorted(_KINDS_READ) if _one_edit(kind.lower(), k.lower())][:1]
        if not close:
            return None
        kind = close[0]
    group = api_group(api_version)
    if all(api_group(api) != group for api in _KINDS_READ[kind]):
        return None
    return f"{' or '.join(_KINDS_READ[kind])} {kind}"


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ by one letter at most, added, dropped,
    changed or swapped with the next (``Jobb``, ``Jbo``: too short a name for
    ``difflib``'s likeness to find its kind)."""
    if abs(len(a) - len(b)) > 1:
        return False
    start = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                 min(len(a), len(b)))
    a, b = a[start:], b[start:]
    return (a[1:] == b[1:] or a[1:] == b or a == b[1:]
            or (len(a) > 1 and a[1] == b[:1] and a[:1] == b[1:2] and a[2:] == b[2:]))


# The kinds whose name no other kind has: fleetq's own, the scheduling kinds it
# reads, and the job kinds but batch's Job (Volcano has a Job too).
_OWN_NAMES = {"ElasticQuotaTree", "PropagationPolicy", "ClusterPropagationPolicy",
              "PriorityClass", "WorkloadPriorityClass", "MemberCluster", "Fleet",
              *(k.kind for k in KINDS if k.kind != "Job")}


def _read_job(doc: Document, job_kind: Any, blob: str, large: bool = False
              ) -> JobSource | InvalidJob:
    """``large``: its file could hold a job too large (``could_be_too_large``);
    only then is its size looked at."""
    try:
        if large:
            _not_too_large(doc.value)
        return build_job(doc.value, job_kind, path=doc.path, index=doc.seat, line=doc.line,
                         blob=blob, line_of=doc.line_of)
    except ManifestError as exc:
        first, *rest = each_error(exc)
        try:
            key = job_key(doc.value, doc.path, doc.seat)
        except (ManifestError, KeyError, TypeError):
            key = JobKey(str(doc.value.get("apiVersion")).rsplit("/", 1)[0],
                         str(doc.value.get("kind")), "default",
                         f"<unnamed:{shown_path(doc.path)}#{doc.seat}>")
        return InvalidJob(key=key, api_version=str(doc.value["apiVersion"]), path=doc.path,
                          line=doc.line_of(first.field), blob=blob,
                          message=f"{first}; fix the manifest"
                          + (f" (and {len(rest)} more mistake(s) of it, each told at its line)"
                             if rest else ""),
                          more=tuple((doc.line_of(e.field), f"{e}; fix the manifest")
                                     for e in rest),
                          warnings=tuple((doc.line_of(e.field), str(e)) for e in exc.unknown),
                          name_line=_name_line(doc))


OBJECT_MOST = 3 << 19  # the bytes of an object etcd stores (1.5 MiB): the API server's limit
ALIASED_MOST = 1 << 14  # the bytes of a file with aliases whose jobs' sizes are not looked at


def could_be_too_large(data: bytes | str) -> bool:
    """Whether a file could hold a job larger than ``OBJECT_MOST`` as JSON: one
    larger than that, or with aliases (``*name``), which expand what they name,
    larger than ``ALIASED_MOST``. (Each job's size is looked at in those alone:
    most files are small, and counting costs as much as parsing.)"""
    size = len(data)
    if size > OBJECT_MOST:
        return True
    return size > ALIASED_MOST and ("*" in data if isinstance(data, str) else b"*" in data)


def _not_too_large(value: Mapping[str, Any]) -> None:
    """Refuse a job larger, as the API server stores it (JSON), than etcd takes
    of an object: sent, it is refused ("request is too large"), and runs
    nowhere while it holds its quota."""
    size = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False,
                          default=str).encode())
    if size > OBJECT_MOST:
        raise ManifestError(
            f"the job is {size:,} bytes as the API server stores it (JSON), more than the "
            f"{OBJECT_MOST:,} (1.5 MiB) etcd takes of an object: the API server would refuse "
            f"it (request is too large); move what makes it large (long env values, files "
            f"written into it) into a ConfigMap or a volume", "")


def _name_line(doc: Document) -> int:
    meta = doc.value.get("metadata")
    named = isinstance(meta, dict) and "name" not in meta and "generateName" in meta
    return doc.line_of("metadata.generateName" if named else "metadata.name")


def invalid_copies(inputs: FleetInputs) -> list[Problem]:
    """An error on each invalid job that another document defines too (a
    running job's file copied, with a mistake): once fixed, it would be a job
    defined twice, which is not used (``_add_job``), so it is told now, not
    after the fix."""
    first: dict[JobKey, tuple[str, int]] = {}
    out = []
    for bad in inputs.invalid:
        if not named_as_kubernetes_names(bad.key):
            continue
        here = bad.name_line or bad.line
        source = inputs.jobs.get(bad.key)
        there = (source.job.path, source.job.line_of(NAME_AT)) if source is not None \
            else first.setdefault(bad.key, (bad.path, here))
        if there != (bad.path, here):
            out.append(Problem(bad.path, here, (
                f"{bad.key} is also defined at {shown_path(there[0])}:{there[1]}; once this "
                f"one is fixed, the job is defined twice, and one defined twice is not used "
                f"(where it ran, it keeps its place): rename one, or delete one of them")))
    return out


def _add_job(inputs: FleetInputs, source: JobSource) -> None:
    key = source.job.key
    other = inputs.jobs.get(key)
    if other is not None:
        here, there = source.job.line_of(NAME_AT), other.job.line_of(NAME_AT)
        aliased = source.job.path == other.job.path and here == there
        if aliased:  # (one name node for both, by a YAML alias: at their documents, or items)
            here, there = source.job.line, other.job.line
        inputs.problems.append(Problem(source.job.path, here, (
            f"{key} is also defined at {shown_path(other.job.path)}:{there}"
            f"{' (a YAML alias repeats it)' if aliased else ''}; a job is identified by "
            f"group, kind, namespace and name, and one defined twice is not used (where it "
            f"ran, it keeps its place): rename one")))
        inputs.twice.add(key)
        return
    inputs.jobs[key] = source
    inputs.problems.extend(_problems_of(source))


class Errors:
    """The mistakes of one document, gathered so that all are reported at once
    (``fleetq validate`` names each), not the first alone: ``take`` calls a
    builder of one part and gives ``default`` when it fails; ``done`` raises
    what was found."""

    def __init__(self) -> None:
        self.found: list[ManifestError] = []

    def take(self, build: Callable[[], T], default: T) -> T:
        try:
            return build()
        except ManifestError as exc:
            self.found.extend(each_error(exc))
            return default

    def done(self) -> None:
        raise_all(self.found)


# The fields of the kinds that define the fleet whose values have one YAML type
# (``[]``: each item of a list), checked before each is built: read with ``or {}``
# and the like, a wrong type that is empty (``suspension: []``, ``gangDialect: ""``,
# ``globalDefault: "false"``) was taken for the field unset, and changed what the
# fleet decides, with no word.
_POLICY_TYPES: dict[str, type | tuple[type, ...]] = {
    "metadata.namespace": str, "metadata.annotations": dict, "spec.placement": dict,
    "spec.placement.replicaScheduling": dict, "spec.placement.clusterAffinity": dict,
    "spec.placement.clusterAffinity.clusterNames": list,
    "spec.placement.clusterAffinity.exclude": list,
    "spec.placement.clusterAffinities": list, "spec.placement.clusterAffinities[]": dict,
    "spec.placement.clusterTolerations": list, "spec.suspension": dict,
    "spec.failover": dict, "spec.failover.application": dict}
_NODE_TYPES: dict[str, type | tuple[type, ...]] = {
    "": dict, ".name": (str, int), ".allocatable": dict, ".labels": dict, ".taints": list}
_TYPES: dict[str, dict[str, type | tuple[type, ...]]] = {
    "PropagationPolicy": _POLICY_TYPES,
    "ClusterPropagationPolicy": _POLICY_TYPES,
    "MemberCluster": {
        "metadata.labels": dict, "spec.gangDialect": str, "spec.kubeconfigContext": str,
        "spec.reserved": dict,
        "spec.taints": list, "spec.taints[]": dict, "spec.taints[].key": str,
        "spec.taints[].effect": str, "spec.nodes": list, "spec.nodeGroups": list,
        **{f"spec.nodes[]{k}": t for k, t in _NODE_TYPES.items()},
        **{f"spec.nodeGroups[]{k}": t for k, t in _NODE_TYPES.items()}},
    "PriorityClass": {"globalDefault": bool, "preemptionPolicy": str},
    "Fleet": {"spec.quotas": dict, "spec.quotas.*": dict, "spec.quotas.*.queueStrategy": str,
              "spec.quotas.*.preemption": str, "spec.placementStrategy": str,
              "spec.remote": str}}
_TYPE_NAMES: dict[type | tuple[type, ...], str] = {
    dict: "a mapping", list: "a list", str: "a string", bool: "true or false",
    (str, int): "a name"}


def _wrong_types(doc: Document) -> list[ManifestError]:
    """A ``ManifestError`` for each field of ``_TYPES`` (the document's kind's)
    whose value is not of its type; a null is taken as unset."""
    found: list[ManifestError] = []
    for field_path, kind in _TYPES.get(str(doc.value.get("kind")), {}).items():
        for where, value in _values_at(doc.value, field_path):
            if value is not None and (not isinstance(value, kind)
                                      or (kind is not bool and isinstance(value, bool))):
                found.append(ManifestError(
                    f"{where} must be {_TYPE_NAMES[kind]}, not {yaml_type(value)} "
                    f"{as_written(value)}", where))
    return found


def _without(value: Any, fields: Iterable[str]) -> Any:
    """A copy of ``value`` (a document's) without ``fields`` (``a.b``,
    ``a[2].b``): those of the wrong type, for the rest to be checked as if
    they were unset."""
    out = copy.deepcopy(value)
    for where in fields:
        parts = re.findall(r"[^.\[\]]+|\[\d+\]", where)
        node = out
        try:
            for part in parts[:-1]:
                node = node[int(part[1:-1])] if part.startswith("[") else node[part]
            last = parts[-1]
            if last.startswith("["):  # (an item of a list: all those of _TYPES are mappings)
                node[int(last[1:-1])] = {}
            else:
                node.pop(last, None)
        except (KeyError, IndexError, TypeError, AttributeError):
            continue  # (a key with a '.' of its own: left, the build then tells it too)
    return out


def _values_at(value: Any, field_path: str, at: str = "") -> Iterator[tuple[str, Any]]:
    """(field, value) of each value at ``field_path`` (``a.b``, ``a[].b``; ``*``:
    each key of a mapping) in ``value``, where the mappings and lists on the
    way are there."""
    head, dot, rest = field_path.partition(".")
    if head == "*":
        for key, found in value.items() if isinstance(value, dict) else ():
            here = f"{at}.{key}" if at else str(key)
            if dot:
                yield from _values_at(found, rest, here)
            else:
                yield here, found
        return
    each = head.endswith("[]")
    name = head[:-2] if each else head
    if not isinstance(value, dict) or name not in value:
        return
    here = f"{at}.{name}" if at else name
    found = value[name]
    if not each:
        if dot:
            yield from _values_at(found, rest, here)
        else:
            yield here, found
        return
    if not isinstance(found, list):
        return  # (the list itself is checked)
    for i, item in enumerate(found):
        if dot:
            yield from _values_at(item, rest, f"{here}[{i}]")
        else:
            yield f"{here}[{i}]", item


def _guard(inputs: FleetInputs, doc: Document,
           build: Callable[[Document, FleetInputs], object]) -> None:
    """``build`` the document into ``inputs``; each of its mistakes told. One
    with fields of the wrong type (``_wrong_types``) is not built: it is
    built, as if they were unset, into a fleet of its own, for its other
    mistakes to be told with them."""
    try:
        wrong = _wrong_types(doc)
        if wrong:
            others: list[ManifestError] = []
            try:
                build(replace(doc, value=_without(doc.value, (w.field for w in wrong))),
                      FleetInputs())
            except ManifestError as exc:
                told = {w.field for w in wrong}
                others = [one for one in each_error(exc) if one.field not in told]
            except (TypeError, ValueError, AttributeError, KeyError, ArithmeticError):
                pass  # (the mistakes of type say enough)
            raise_all(sorted(wrong + others, key=lambda e: doc.line_of(e.field)))
        build(doc, inputs)
    except ManifestError as exc:
        for one in each_error(exc):
            inputs.problems.append(Problem(doc.path, doc.line_of(one.field), str(one)))
        inputs.unbuilt.add(doc.path)
    except (TypeError, ValueError, AttributeError, KeyError, ArithmeticError) as exc:
        inputs.problems.append(Problem(doc.path, doc.line, (
            f"{doc.value.get('kind')} is malformed ({exc}); fix the fields it names (the "
            f"README lists the kinds fleetq reads, and their fields)")))
        inputs.unbuilt.add(doc.path)


def _finish(inputs: FleetInputs, trees: list[Document]) -> None:
    usable = []
    for doc in trees:
        meta, spec = doc.value.get("metadata"), doc.value.get("spec")
        bad = next((part for part, value in (("metadata", meta), ("spec", spec))
                    if not isinstance(value, dict | None)), None)
        if bad is not None:
            value = doc.value[bad]
            message = f"{bad} must be a mapping, not {yaml_type(value)} {value!r}"
            inputs.problems.append(Problem(doc.path, doc.line_of(bad), message))
            inputs.broken_paths.setdefault(doc.path, message)
            continue
        ns = (meta or {}).get("namespace")
        if ns != "kube-system":
            message = (f"ElasticQuotaTree in namespace {ns or 'default'!r} takes no effect; "
                       f"it must be in kube-system")
            inputs.problems.append(Problem(doc.path, doc.line, message))
            inputs.broken_paths.setdefault(doc.path, message)
            continue
        usable.append(doc)
    # (one tree of a fleet, whatever its name: a second in a new file takes nothing
    # over, as no second definition of another object does; see ``_intruders``)
    for doc in usable:
        name = (doc.value.get("metadata") or {}).get("name")
        _define(inputs, QUOTA_TREE, doc,
                f"ElasticQuotaTree {name}" if isinstance(name, str) and name else None)
    if len(usable) > 1:
        inputs.tree_unused = (
            f"the fleet has {len(usable)} ElasticQuotaTrees (in "
            f"{', '.join(sorted({shown_path(d.path) for d in usable}))}), and none counts "
            f"until all but one are removed")
    elif usable:
        doc = usable[0]
        spec, form = _quota_spec(doc, (doc.value.get("spec") or {}).get("root"), "spec.root")
        tree, problems = build_tree(spec, path=doc.path)
        # (its mistakes of form, its misspelt fields and the rules it breaks, told at
        # once: not one fix after another)
        inputs.problems.extend(Problem(doc.path, doc.line_of(one.field), str(one))
                               for one in form)
        problems = _quota_tree_fields(doc) + problems
        inputs.problems.extend(problems)
        if form:
            inputs.broken_paths[doc.path] = str(form[0])
        else:
            inputs.tree = tree
            errors = [p for p in problems if p.severity == "error"]
            if errors:  # (a file that defines the fleet: read as it last was, if it can be)
                inputs.broken_paths.setdefault(doc.path, errors[0].message)
            resolve_quota_settings(inputs)
    _leave_out_conflicts(inputs)
    inputs.policies.sort(key=lambda p: (p.namespace or "", p.name))
    inputs.clusters.sort(key=lambda c: c.name)  # (each name once: see _add_cluster)
    ref = inputs.settings.default_policy
    if ref is not None and find_policy(inputs.policies, ref) is None:
        path, line = inputs.setting_at.get("spec.defaultPolicy", ("fleet.yaml", 0))
        inputs.problems.append(Problem(path, line, (
            f"spec.defaultPolicy names {'/'.join(n for n in ref if n)!r}, which is no "
            f"PropagationPolicy or ClusterPropagationPolicy of the fleet; name one "
            f"(namespace/name for a PropagationPolicy) or remove it")))
    inputs.problems.extend(unknown_cluster_names(inputs.policies, inputs.clusters))
    if inputs.tree is not None:
        inputs.problems.extend(promised_beyond_clusters(inputs.tree, inputs.clusters))
        inputs.problems.extend(no_local_queue_names(inputs.tree, inputs.clusters))
    inputs.problems.sort()
    inputs.unknown.sort()


def no_local_queue_names(tree: QuotaTree, clusters: Sequence[MemberCluster]) -> list[Problem]:
    """A warning on each quota jobs may be of (a leaf, or one with namespaces)
    whose name no Kueue LocalQueue can have, when a member cluster's gang
    dialect is kueue: its jobs would go there labeled
    ``kueue.x-k8s.io/queue-name`` with that name, which Kueue refuses, so they
    go to no kueue cluster (``with_queue_refusal``)."""
    kueue = sorted(c.name for c in clusters if c.gang_dialect == "kueue")
    if not kueue:
        return []
    return [Problem(tree.path, node.line, (
        f"quota {node.path}: its name {node.name!r} would name its jobs' Kueue LocalQueue on "
        f"{', '.join(kueue)} (gangDialect: kueue), and no LocalQueue can have it "
        f"({LOCAL_QUEUE_RULE}); as Kueue would refuse them, its jobs go to no kueue cluster: "
        f"rename the quota"), "warning")
        for node in sorted(tree.nodes.values(), key=lambda n: n.path)
        if (node.namespaces or node.is_leaf)
        and not LOCAL_QUEUE_NAME.fullmatch(node.name)]


def promised_beyond_clusters(tree: QuotaTree, clusters: Sequence[MemberCluster]
                             ) -> list[Problem]:
    """A warning on each resource the quota tree guarantees more of in all
    (``QuotaTree.guaranteed``: the mins under its root) than the member
    clusters hold (their nodes' allocatable, less what each reserves): the
    mins promise room that is not there, and a job within its quota's min may
    wait for it, with nothing to reclaim. Not for the counting resources (job
    slots, pods), nor a fleet of no cluster (told as such)."""
    if not clusters:
        return []
    root = tree.nodes[tree.root]
    out = []
    for name, promised in sorted(tree.guaranteed().items()):
        if name in (MAX_JOBS, PODS):
            continue
        held = cluster_capacity(clusters, name)
        if promised > held:
            at = next((tree.nodes[c] for c in root.children if name in tree.nodes[c].min),
                      root)
            out.append(Problem(tree.path, at.line_of("min", name), (
                f"the quotas' mins guarantee {name} {format_quantity(name, promised)} in all "
                f"(under quota {root.path}), more than the member clusters hold "
                f"({format_quantity(name, held)}): they promise room that is not there, and a "
                f"job within its quota's min may wait for it with nothing to reclaim; lower "
                f"them to at most {format_quantity(name, held)} in all, or add the clusters "
                f"that hold it"), "warning"))
    return out


def unknown_cluster_names(policies: Iterable[Policy], clusters: Iterable[MemberCluster]
                          ) -> list[Problem]:
    """A warning on each policy whose cluster affinity names a cluster the
    fleet has no MemberCluster of (a typo, a cluster not added yet, or one
    removed): its jobs would be told only of the clusters that are there."""
    names = {c.name for c in clusters}
    out = []
    for policy in policies:
        terms = policy.affinities or ((policy.affinity,) if policy.affinity else ())
        unknown = sorted({n for t in terms for n in (*t.cluster_names, *t.exclude)} - names)
        if unknown:
            which = ("which is no MemberCluster" if len(unknown) == 1 else
                     "which are no MemberClusters")
            out.append(Problem(policy.path, policy.affinity_line or policy.line, (
                f"{policy.ref}: its clusterAffinity names {', '.join(unknown)}, {which} of the "
                f"fleet ({', '.join(sorted(names)) or 'none'}); fix the name or add the "
                f"cluster"), "warning"))
    return out


def _leave_out_conflicts(inputs: FleetInputs) -> None:
    """Leave out every object defined more than once (``_define``), each place
    told, naming the others: which one counted would depend on the files'
    names, and a new file could take over what running jobs depend on. A file
    that defines one object twice is a file that does not build (its last
    good version is read: see ``read_fleet``)."""
    conflicts = {label: places for label, places in inputs.defined.items() if len(places) > 1}
    inputs.conflicts = conflicts
    if not conflicts:
        return
    for label, places in conflicts.items():
        inputs.problems.extend(conflict_problems(label, places))
        if len({path for path, _, _ in places}) == 1:
            inputs.unbuilt.add(places[0][0])
    inputs.dependencies = {key: dep for key, dep in inputs.dependencies.items()
                           if _dependency_label(key) not in conflicts}
    inputs.clusters = [c for c in inputs.clusters if f"MemberCluster {c.name}" not in conflicts]
    inputs.policies = [p for p in inputs.policies if p.ref not in conflicts]
    inputs.priority_classes = {name: value for name, value in inputs.priority_classes.items()
                               if f"PriorityClass {name}" not in conflicts}
    inputs.workload_priority_classes = {
        name: value for name, value in inputs.workload_priority_classes.items()
        if f"WorkloadPriorityClass {name}" not in conflicts}
    default = inputs.defined.get(GLOBAL_DEFAULT)
    if default and (GLOBAL_DEFAULT in conflicts or default[0][2] in conflicts):
        inputs.default_priority = 0


def conflict_problems(label: str, places: list[Place]) -> list[Problem]:
    """The errors of ``label`` defined at each of ``places`` when none of them
    counts: one at each place, naming the others and the files to fix."""
    files = ", ".join(sorted({path for path, _, _ in places}))
    out = []
    for path, line, what in places:
        others = ", ".join(f"{p}:{n}" if w == what else f"{w} at {p}:{n}"
                           for p, n, w in places if (p, n) != (path, line))
        if label == GLOBAL_DEFAULT:
            message = (f"{what} is globalDefault, as is {others}: Kubernetes admits one "
                       f"globalDefault PriorityClass, so none gives the default priority "
                       f"until all but one say globalDefault: false (in {files})")
        elif label == QUOTA_TREE:
            trees = ", ".join(f"{w} at {p}:{n}" for p, n, w in places if (p, n) != (path, line))
            message = (f"{what} is one of {len(places)} ElasticQuotaTrees, with {trees}: a "
                       f"fleet has one, so none counts until all but one are removed "
                       f"(in {files})")
        else:
            message = (f"{what} is also defined at {others}: which one counts would depend on "
                       f"the files' names, so none does until all but one are removed or "
                       f"renamed (in {files})")
        out.append(Problem(path, line, message))
    return out


# -- builders ----------------------------------------------------------------


def _meta(doc: Document) -> dict[str, Any]:
    meta = doc.value.get("metadata")
    if not isinstance(meta, dict) or not meta.get("name"):
        raise ManifestError("metadata.name is missing", "metadata")
    if not isinstance(meta["name"], str):
        raise ManifestError(f"metadata.name must be a string, not {as_read(meta['name'])}"
                            f"{quote_it(meta['name'])}", "metadata.name")
    return meta


# The fields of a quota of an ElasticQuotaTree (spec.root and each of its children);
# ``attributes`` is ACK's (the quota's resource flavors), which fleetq does not read.
_QUOTA_FIELDS = ("name", "namespaces", "min", "max", "children", "attributes")


def _close_to(key: Any, names: tuple[str, ...]) -> list[str]:
    """The field of ``names`` that ``key`` most likely misspells, if any."""
    return difflib.get_close_matches(str(key), names, n=1, cutoff=0.6)


def _quota_tree_fields(doc: Document) -> list[Problem]:
    """Each field of the tree's spec and quotas that an ElasticQuotaTree does
    not have: an error when it is close to one (a misspelt ``max`` would leave
    the quota with no limit, a misspelt ``children`` would drop the quotas
    under it, unseen), else a warning that fleetq leaves it out (a field of a
    newer API, say)."""
    found: list[Problem] = []

    def check(value: dict[Any, Any], names: tuple[str, ...], where: str) -> None:
        for key in value:
            if key in names:
                continue
            at = f"{where}.{key}"
            close = _close_to(key, names)
            found.append(Problem(doc.path, doc.line_of(at), (
                f"{at} is not a field of ElasticQuotaTree: did you mean {where}.{close[0]}?"
                if close else
                f"{at} is not a field of ElasticQuotaTree (the fields of a quota: "
                f"{', '.join(names)}); fleetq leaves it out"), "error" if close else "warning"))

    def quota(raw: Any, where: str) -> None:
        if not isinstance(raw, dict):
            return  # (``_quota_spec`` says what it must be)
        check(raw, _QUOTA_FIELDS, where)
        for section in ("min", "max"):
            for name in raw.get(section) or () if isinstance(raw.get(section), dict) else ():
                why = _no_resource(str(name))
                if why is not None:
                    at = f"{where}.{section}.{name}"
                    found.append(Problem(doc.path, doc.line_of(at), f"{at}: {why}", "warning"))
        for key, children in raw.items():  # (and those of a misspelt children: all told)
            if key == "children" or (key not in _QUOTA_FIELDS
                                     and _close_to(key, _QUOTA_FIELDS) == ["children"]):
                for i, child in enumerate(children if isinstance(children, list) else ()):
                    quota(child, f"{where}.{key}[{i}]")

    spec = doc.value.get("spec")
    if isinstance(spec, dict):
        check(spec, ("root",), "spec")
        quota(spec.get("root"), "spec.root")
    return found


def _quota_spec(doc: Document, raw: Any, field: str) -> tuple[QuotaSpec, list[ManifestError]]:
    """The tree at ``field`` as far as it can be read, and each of its mistakes
    of form (``fleetq validate`` tells all at once, not one per fix; with them,
    the rules the tree breaks, checked on what was read)."""
    errors = Errors()
    return _quota_node(doc, raw, field, errors), errors.found


def _quota_node(doc: Document, raw: Any, field: str, errors: Errors) -> QuotaSpec:
    """One node of ``_quota_spec`` and those under it, its mistakes gathered in
    ``errors`` (with them, what it returns stands for what could be read, and
    ``QuotaSpec.unread`` says what could not)."""
    found = errors.found
    if not isinstance(raw, dict):
        found.append(ManifestError(
            f"{field} must be a mapping (a quota: name, namespaces, min, max, children), not "
            f"{yaml_type(raw)} {as_written(raw)}", field))
        return QuotaSpec(name="", min={}, max={},
                         unread=frozenset(("min", "max", "namespaces", "children")))
    if not raw.get("name"):
        found.append(ManifestError(f"{field} needs a name", field))
    # (a misspelt field: what it says is unknown, not absent, a misspelt min not 0)
    unread = {close for key in raw if key not in _QUOTA_FIELDS
              for close in _close_to(key, _QUOTA_FIELDS)}
    children = raw.get("children") or []
    if not isinstance(children, list):
        found.append(ManifestError(f"{field}.children must be a list", f"{field}.children"))
        children = []
        unread.add("children")
    namespaces = raw.get("namespaces") or []
    if not isinstance(namespaces, list):
        found.append(ManifestError(f"{field}.namespaces must be a list",
                                   f"{field}.namespaces"))
        namespaces = []
        unread.add("namespaces")
    named: list[tuple[int, str]] = []  # (index, namespace) of those it can take
    for i, ns in enumerate(namespaces):
        at = f"{field}.namespaces[{i}]"
        if not isinstance(ns, str):
            found.append(ManifestError(f"{at} must be a namespace name, not {ns!r}", at))
            continue
        try:
            check_namespace(ns, at)
        except ManifestError as exc:
            found.extend(each_error(exc))
            continue
        named.append((i, ns))
    node_name = str(raw.get("name") or "")
    if node_name:
        errors.take(lambda: check_label_value(
            node_name, f"{field}.name",
            f"quota name (its jobs carry it as the value of label {QUOTA_LABEL})"), None)
    return QuotaSpec(
        name=node_name,
        min=_quota_resources(raw.get("min"), field, "min", errors, unread),
        max=_quota_resources(raw.get("max"), field, "max", errors, unread),
        namespaces=tuple(ns for _, ns in named),
        children=tuple(_quota_node(doc, c, f"{field}.children[{i}]", errors)
                       for i, c in enumerate(children)),
        line=doc.line_of(f"{field}.name"),
        lines=tuple((f"{section}.{name}" if name else section,
                     doc.line_of(f"{field}.{section}", *([name] if name else [])))
                    for section in ("min", "max") if isinstance(raw.get(section), dict)
                    for name in ("", *map(str, raw[section])))
        + tuple((f"namespaces.{ns}", doc.line_of(f"{field}.namespaces[{i}]"))
                for i, ns in named),
        unread=frozenset(unread))


def _quota_resources(raw: Any, field: str, section: str, errors: Errors,
                     unread: set[str]) -> Resources:
    """The ``section`` (min, max) of the quota at ``field``, each quantity that
    can be read; each that cannot noted in ``unread`` (``min.cpu``, or ``min``
    for all), for the tree's rules to leave out rather than take as 0."""
    at = f"{field}.{section}"
    if not isinstance(raw, dict):
        read = errors.take(partial(parse_resources, raw, at), None)
        if read is None:
            unread.add(section)
        return read or {}
    out: Resources = {}
    for name, value in raw.items():
        one = errors.take(partial(parse_resources, {name: value}, at), None)
        if one is None:
            unread.add(f"{section}.{name}")
        out.update(one or {})
    return out


# the resources a quota may limit by a name without a domain: what a pod asks
# for (``jobkinds.base.CONTAINER_RESOURCES``, hugepages-<size>) and its count
QUOTA_PLAIN_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})


def _no_resource(name: str) -> str | None:
    """Why a quota's ``name`` is no resource a job asks for (one without its
    domain, ``gpu`` for ``nvidia.com/gpu``): no request counts against it, and
    the quota is unlimited in what it meant; else None."""
    if "/" in name or name in QUOTA_PLAIN_RESOURCES or name.startswith("hugepages-"):
        return None
    meant = " (nvidia.com/gpu?)" if name.lower() == "gpu" else ""
    return (f"{name!r} is no resource a job asks for{meant}: no request counts against it, so "
            f"it limits nothing; name it as pods request it: cpu, memory, ephemeral-storage, "
            f"pods, hugepages-<size>, or with its domain, such as nvidia.com/gpu or "
            f"kube-queue/max-jobs")


def _label_selector(raw: Any, field: str) -> LabelSelector | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ManifestError(f"{field} must be a mapping", field)
    exprs = requirements_of(raw.get("matchExpressions"), f"{field}.matchExpressions")
    return LabelSelector(string_map(raw.get("matchLabels"), f"{field}.matchLabels"), exprs)


def _affinity(raw: Any, field: str) -> ClusterAffinity:
    if not isinstance(raw, dict):
        raise ManifestError(f"{field} must be a mapping", field)
    return ClusterAffinity(
        cluster_names=tuple(str(n) for n in raw.get("clusterNames") or ()),
        label_selector=_label_selector(raw.get("labelSelector"), f"{field}.labelSelector"),
        exclude=tuple(str(n) for n in raw.get("exclude") or ()),
        name=str(raw.get("affinityName") or ""))


def _taints(raw: Any, field: str) -> tuple[Taint, ...]:
    """A member cluster's (or its nodes') taints; the effect is NoSchedule when
    not given."""
    out = []
    for at, t, effect in taint_entries(raw, field, "NoSchedule"):
        if not t.get("key"):
            raise ManifestError(f"{at} must have a key", at)
        out.append(Taint(key=t["key"], value=t.get("value") or "", effect=effect))
    return tuple(out)


def _policy(doc: Document) -> Policy:
    """A (Cluster)PropagationPolicy, with every mistake told: a field Karmada's
    API does not have (``_POLICY_FIELDS``; a misspelt ``suspension`` would take
    the fleet's jobs out of their queues, unseen), and what does not build."""
    errors = Errors()
    _fields_not_in(doc, doc.value, _POLICY_FIELDS, errors)
    none: Policy | None = None
    policy = errors.take(partial(_build_policy, doc), none)
    if policy is not None:
        errors.take(partial(_not_acted_on, doc.value["spec"], policy), None)
    errors.done()
    assert policy is not None  # (else done raised)
    return policy


def _build_policy(doc: Document) -> Policy:
    value = doc.value
    meta = _meta(doc)
    spec = value.get("spec")
    if not isinstance(spec, dict):
        raise ManifestError("spec is missing", "spec")
    namespace = None
    if value["kind"] == "PropagationPolicy":
        namespace = str(meta.get("namespace") or "default")
        check_namespace(namespace)
    selectors = []
    raw_selectors = spec.get("resourceSelectors")
    if raw_selectors is not None and not isinstance(raw_selectors, list):
        raise ManifestError(f"spec.resourceSelectors must be a list of selectors, not "
                            f"{yaml_type(raw_selectors)} {as_written(raw_selectors)}; write "
                            f"one selector per item (- apiVersion: ..., kind: ...)",
                            "spec.resourceSelectors")
    if not raw_selectors:
        raise ManifestError("spec.resourceSelectors must list at least one selector",
                            "spec.resourceSelectors")
    for i, s in enumerate(raw_selectors):
        where = f"spec.resourceSelectors[{i}]"
        if not isinstance(s, dict) or not s.get("apiVersion") or not s.get("kind"):
            raise ManifestError(f"{where} needs apiVersion and kind", where)
        selectors.append(ResourceSelector(
            api_version=str(s["apiVersion"]), kind=str(s["kind"]),
            name=str(s["name"]) if s.get("name") else None,
            namespace=str(s["namespace"]) if s.get("namespace") else None,
            label_selector=_label_selector(s.get("labelSelector"), f"{where}.labelSelector")))
    placement = spec.get("placement") or {}
    rs = placement.get("replicaScheduling") or {}
    affinity = None
    if placement.get("clusterAffinity") is not None:
        affinity = _affinity(placement["clusterAffinity"], "spec.placement.clusterAffinity")
    affinities = tuple(_affinity(a, f"spec.placement.clusterAffinities[{i}]")
                       for i, a in enumerate(placement.get("clusterAffinities") or ()))
    failover = _failover(spec.get("failover"))
    strategy = None
    annotations = meta.get("annotations") or {}
    if annotations.get("fleetq.io/placement-strategy"):
        strategy = _strategy(str(annotations["fleetq.io/placement-strategy"]),
                             "metadata.annotations")
    priority = spec.get("priority")
    priority = 0 if priority is None else priority  # (unset, or null: Karmada's 0)
    if not isinstance(priority, int) or isinstance(priority, bool) \
            or not -2**31 <= priority < 2**31:
        raise ManifestError(f"spec.priority must be a whole number (int32), not "
                            f"{as_read(priority)}", "spec.priority")
    for where, value in (("spec.propagateDeps", spec.get("propagateDeps")),
                         ("spec.suspension.scheduling",
                          (spec.get("suspension") or {}).get("scheduling"))):
        if value is not None and not isinstance(value, bool):
            raise ManifestError(f"{where} must be true or false, not {as_read(value)}", where)
    kind_of_replicas = rs.get("replicaSchedulingType")
    if kind_of_replicas is not None and kind_of_replicas not in ("Duplicated", "Divided"):
        raise ManifestError(
            f"spec.placement.replicaScheduling.replicaSchedulingType must be Duplicated or "
            f"Divided, not {as_read(kind_of_replicas)}",
            "spec.placement.replicaScheduling.replicaSchedulingType")
    gang_type = rs.get("customSchedulingType")
    if gang_type is not None and gang_type != "Gang":
        raise ManifestError(f"spec.placement.replicaScheduling.customSchedulingType "
                            f"{gang_type!r} is not supported; use Gang",
                            "spec.placement.replicaScheduling.customSchedulingType")
    return Policy(
        name=str(meta["name"]), namespace=namespace, path=doc.path, line=doc.line,
        selectors=tuple(selectors), priority=priority,
        gang=gang_type == "Gang",
        queued=bool((spec.get("suspension") or {}).get("scheduling")),
        duplicated=rs.get("replicaSchedulingType") == "Duplicated",
        affinity=affinity, affinities=affinities,
        affinity_line=doc.line_of("spec.placement.clusterAffinity"
                                  if affinity is not None else "spec.placement.clusterAffinities"),
        cluster_tolerations=tolerations_of(placement.get("clusterTolerations"),
                                           "spec.placement.clusterTolerations"),
        failover=failover, propagate_deps=bool(spec.get("propagateDeps")), strategy=strategy)


def _not_acted_on(spec: Mapping[str, Any], policy: Policy) -> None:
    """Karmada's fields that would keep a policy's jobs off clusters, or hold
    them, and that fleetq does not act on: an error each, with what does the
    same in fleetq. Read and left aside, such a field would let a job go where
    its policy says it must not. (Those that only tune Karmada's own
    controllers are read and left aside.)"""
    errors = Errors()
    suspension = spec.get("suspension") or {}
    if isinstance(suspension, Mapping):
        if suspension.get("dispatching"):
            errors.found.append(ManifestError(
                "spec.suspension.dispatching is not supported: fleetq sends every admitted "
                "job to its cluster; to make the policy's jobs wait in their quota's queue "
                "set spec.suspension.scheduling: true, or remove the field",
                "spec.suspension.dispatching"))
        on = suspension.get("dispatchingOnClusters")
        if on is not None and (not isinstance(on, Mapping) or on.get("clusterNames")):
            errors.found.append(ManifestError(
                "spec.suspension.dispatchingOnClusters is not supported: fleetq sends every "
                "admitted job to its cluster; to keep the policy's jobs off those clusters, "
                "list them in spec.placement.clusterAffinity.exclude",
                "spec.suspension.dispatchingOnClusters"))
    placement = spec.get("placement") or {}  # (a mapping: the policy built)
    terms = [("spec.placement.clusterAffinity", placement.get("clusterAffinity"))]
    terms += [(f"spec.placement.clusterAffinities[{i}]", a)
              for i, a in enumerate(placement.get("clusterAffinities") or ())]
    for where, term in terms:
        if isinstance(term, Mapping) and term.get("fieldSelector") is not None:
            errors.found.append(ManifestError(
                f"{where}.fieldSelector is not supported: fleetq's MemberClusters have no "
                f"provider, region or zone fields; label the clusters (for example "
                f"topology.kubernetes.io/region) and select them with {where}.labelSelector",
                f"{where}.fieldSelector"))
    if placement.get("workloadAffinity") is not None:
        errors.found.append(ManifestError(
            "spec.placement.workloadAffinity is not supported: fleetq places each job "
            "by its own policy, apart from other jobs; remove the field",
            "spec.placement.workloadAffinity"))
    for i, constraint in enumerate(placement.get("spreadConstraints") or ()):
        errors.take(partial(_spread_constraint, constraint, policy,
                            f"spec.placement.spreadConstraints[{i}]"), None)
    errors.done()


def _spread_constraint(raw: Any, policy: Policy, where: str) -> None:
    """A spread constraint that one cluster meets is what fleetq does anyway
    (each job whole on one cluster); any other is refused."""
    if not isinstance(raw, Mapping):
        raise ManifestError(f"{where} must be a mapping", where)
    least = raw.get("minGroups")
    if least is not None and (isinstance(least, bool) or not isinstance(least, int)):
        raise ManifestError(f"{where}.minGroups must be a whole number, not {least!r}",
                            f"{where}.minGroups")
    if policy.duplicated:
        raise ManifestError(
            f"{where}: spread constraints of a Duplicated policy are not supported: fleetq "
            f"sends a copy to every cluster of its affinity that fits; narrow the clusters "
            f"with spec.placement.clusterAffinity instead", where)
    if least is not None and least > 1:
        raise ManifestError(
            f"{where}.minGroups {least} cannot be met: fleetq places each job whole on one "
            f"cluster (one group); set it to 1 or remove the constraint",
            f"{where}.minGroups")


PURGE_MODES = ("Immediately", "Directly", "Graciously", "Gracefully", "Never")
DEFAULT_TOLERATION_SECONDS = 300  # Karmada's default for decisionConditions.tolerationSeconds
DEFAULT_GRACE_PERIOD_SECONDS = 600  # Karmada's default for gracePeriodSeconds


def _failover(raw: Any) -> Failover | None:
    """``spec.failover.application``, checked as Karmada's API checks it
    (ACK One's older purge modes Immediately and Graciously too)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ManifestError("spec.failover must be a mapping", "spec.failover")
    app = raw.get("application")
    if app is None:
        return None
    where = "spec.failover.application"
    if not isinstance(app, dict):
        raise ManifestError(f"{where} must be a mapping", where)
    conditions = app.get("decisionConditions")
    if conditions is not None and not isinstance(conditions, dict):
        raise ManifestError(f"{where}.decisionConditions must be a mapping",
                            f"{where}.decisionConditions")
    seconds = (conditions or {}).get("tolerationSeconds")
    if seconds is None:
        seconds = DEFAULT_TOLERATION_SECONDS
    elif isinstance(seconds, bool) or not isinstance(seconds, int) or seconds < 0:
        field = f"{where}.decisionConditions.tolerationSeconds"
        raise ManifestError(f"{field} must be a whole number of seconds, 0 or more (0: fail "
                            f"over at once; unset: {DEFAULT_TOLERATION_SECONDS}), not "
                            f"{seconds!r}", field)
    mode = app.get("purgeMode")
    if mode is None:
        mode = "Gracefully"
    elif mode not in PURGE_MODES:
        raise ManifestError(f"{where}.purgeMode {mode!r} is not one of "
                            f"{', '.join(PURGE_MODES)}", f"{where}.purgeMode")
    grace = app.get("gracePeriodSeconds")
    if grace is None:
        grace = DEFAULT_GRACE_PERIOD_SECONDS
    elif isinstance(grace, bool) or not isinstance(grace, int) or not 0 < grace <= INT32_MAX:
        field = f"{where}.gracePeriodSeconds"
        raise ManifestError(f"{field} must be a whole number of seconds from 1 to {INT32_MAX} "
                            f"(unset: {DEFAULT_GRACE_PERIOD_SECONDS}), not {grace!r}", field)
    return Failover(toleration_seconds=seconds, purge_mode=str(mode),
                    grace_period_seconds=grace)


def _strategy(text: str, field: str) -> PlacementStrategy:
    try:
        return PlacementStrategy(text.lower())
    except ValueError:
        meant = did_you_mean(text.lower(), [s.value for s in PlacementStrategy])
        raise ManifestError(f"{field}: placement strategy {text!r} is not binpack or "
                            f"spread{meant}", field) from None


def _priority_class(doc: Document, inputs: FleetInputs) -> None:
    """A PriorityClass; the one with ``globalDefault: true`` gives the default
    priority (Kubernetes admits one such class: a second is a conflict, see
    ``_leave_out_conflicts``)."""
    meta = _meta(doc)
    # Kubernetes' bounds: an int32, at most 1,000,000,000 but for its own system- classes
    most = INT32_MAX if str(meta["name"]).startswith("system-") else HIGHEST_USER_PRIORITY
    _priority_value(doc, "PriorityClass", most)
    value = doc.value["value"]
    what = f"PriorityClass {meta['name']}"
    if _define(inputs, what, doc):
        inputs.priority_classes[str(meta["name"])] = value
    if doc.value.get("globalDefault") is True and _define(inputs, GLOBAL_DEFAULT, doc, what,
                                                            "globalDefault"):
        inputs.default_priority = value


HIGHEST_USER_PRIORITY = 1_000_000_000  # (Kubernetes' HighestUserDefinablePriority)


def _priority_value(doc: Document, kind: str, most: int) -> None:
    """A priority class's value: a whole number from int32's least to ``most``,
    as Kubernetes takes it (a larger one would outrank every job on the
    fleet's word only: no cluster would have the class)."""
    value = doc.value.get("value")
    if isinstance(value, bool) or not isinstance(value, int):
        raise ManifestError(f"{kind} value must be a whole number", "value")
    if not -INT32_MAX - 1 <= value <= most:
        raise ManifestError(f"{kind} value {value} is out of range: Kubernetes takes "
                            f"{-INT32_MAX - 1} to {most}", "value")


def _workload_priority_class(doc: Document, inputs: FleetInputs) -> None:
    meta = _meta(doc)
    _priority_value(doc, "WorkloadPriorityClass", INT32_MAX)
    value = doc.value["value"]
    if _define(inputs, f"WorkloadPriorityClass {meta['name']}", doc):
        inputs.workload_priority_classes[str(meta["name"])] = value


def _add_policy(doc: Document, inputs: FleetInputs) -> None:
    policy = _policy(doc)
    if _define(inputs, policy.ref, doc):
        inputs.policies.append(policy)
    read = {(k.api_version, k.kind) for k in KINDS}
    selects_jobs = False  # (a policy of other kinds alone is told it selects nothing)
    for i, selector in enumerate(policy.selectors):
        selects_jobs = selects_jobs or (selector.api_version, selector.kind) in read
        if (selector.api_version, selector.kind) not in read:
            kinds = ", ".join(f"{v} {k}" for v, k in sorted(read))
            inputs.problems.append(Problem(doc.path, doc.line_of(f"spec.resourceSelectors[{i}]"), (
                f"{policy.ref}: spec.resourceSelectors[{i}] selects {selector.api_version} "
                f"{selector.kind}, which is no job kind fleetq reads ({kinds}): it selects "
                f"nothing"), "warning"))
        if policy.namespace is not None and selector.namespace not in (None,
                                                                        policy.namespace):
            inputs.problems.append(Problem(doc.path, doc.line_of(f"spec.resourceSelectors[{i}]"), (
                f"{policy.ref}: spec.resourceSelectors[{i}] names namespace "
                f"{selector.namespace}, but a PropagationPolicy selects jobs of its own "
                f"namespace ({policy.namespace}) only: it selects nothing; use a "
                f"ClusterPropagationPolicy, or move the policy to {selector.namespace}"),
                "warning"))
    if not policy.gang and not policy.duplicated and selects_jobs:
        placement = doc.value["spec"].get("placement")
        written = isinstance(placement, Mapping) and placement.get("replicaScheduling") is not None
        said = ("spec.placement.replicaScheduling says no customSchedulingType: Gang"
                if written else "spec.placement has no replicaScheduling")
        inputs.problems.append(Problem(doc.path, doc.line_of("spec.placement.replicaScheduling"), (
            f"{policy.ref}: {said}: fleetq places each job it selects whole on one member "
            f"cluster all the same (its pods start together there, or none do), and divides "
            f"no job over clusters; set "
            + ("customSchedulingType: Gang" if written else
               "replicaScheduling: {replicaSchedulingType: Divided, customSchedulingType: Gang}")
            ), "warning"))
    failover = doc.value["spec"].get("failover")
    if isinstance(failover, Mapping) and failover.get("cluster") is not None:
        inputs.problems.append(Problem(doc.path, doc.line_of("spec.failover.cluster"), (
            f"{policy.ref}: spec.failover.cluster is not acted on: fleetq moves a job when "
            f"the job fails or does not start (spec.failover.application), not when its "
            f"cluster stops reporting"), "warning"))


QUOTA_TREE = "ElasticQuotaTree"  # (what ``_define`` notes each usable quota tree as)


def _define(inputs: FleetInputs, label: str, doc: Document, what: str | None = None,
            at: str = "") -> bool:
    """Note that ``doc`` defines ``label`` (what it is: ``label`` unless said;
    told at its field ``at``, else its first line); is it the first to? A
    second definition is a conflict, whichever file it is in: none of them
    counts (``_leave_out_conflicts``), unless ``read_fleet`` knows which the
    fleet had before."""
    places = inputs.defined.setdefault(label, [])
    places.append((doc.path, doc.line_of(at) if at else doc.line, what or label))
    return len(places) == 1


_TOP_FIELDS = ("apiVersion", "kind", "metadata", "spec")
_CLUSTER_FIELDS = ("resourceReservation", "gangDialect", "capabilities", "taints",
                   "kubeconfigContext", "reserved", "nodes", "nodeGroups")
_FLEET_FIELDS = ("stateBranch", "remote", "committer", "exclude", "quotas", "defaultPolicy",
                 "placementStrategy")

# The fields of a (Cluster)PropagationPolicy, as Karmada's CRD has them
# (policy.karmada.io/v1alpha1), with ACK One's own (suspension.scheduling,
# replicaScheduling.customSchedulingType), where they are checked (as
# ``_fields_not_in`` takes them; ``[]``: each item of a list). A field fleetq
# does not use is known all the same: a policy written for Karmada reads.
_SELECTOR_FIELDS = ("matchExpressions", "matchLabels")
_REQUIREMENT_FIELDS = ("key", "operator", "values")
_AFFINITY_FIELDS = ("clusterNames", "exclude", "fieldSelector", "labelSelector")
_POLICY_FIELDS: dict[str, tuple[str, ...]] = {
    "": _TOP_FIELDS,
    "spec": ("activationPreference", "association", "conflictResolution", "dependentOverrides",
             "failover", "placement", "preemption", "preserveResourcesOnDeletion", "priority",
             "propagateDeps", "resourceSelectors", "schedulePriority", "schedulerName",
             "suspension"),
    "spec.resourceSelectors[]": ("apiVersion", "kind", "labelSelector", "name", "namespace"),
    "spec.resourceSelectors[].labelSelector": _SELECTOR_FIELDS,
    "spec.resourceSelectors[].labelSelector.matchExpressions[]": _REQUIREMENT_FIELDS,
    "spec.placement": ("clusterAffinities", "clusterAffinity", "clusterTolerations",
                       "replicaScheduling", "spreadConstraints", "workloadAffinity"),
    "spec.placement.clusterAffinity": _AFFINITY_FIELDS,
    "spec.placement.clusterAffinity.labelSelector": _SELECTOR_FIELDS,
    "spec.placement.clusterAffinity.labelSelector.matchExpressions[]": _REQUIREMENT_FIELDS,
    "spec.placement.clusterAffinities[]": ("affinityName", *_AFFINITY_FIELDS,
                                           "overflowAffinities"),
    "spec.placement.clusterAffinities[].labelSelector": _SELECTOR_FIELDS,
    "spec.placement.clusterAffinities[].labelSelector.matchExpressions[]": _REQUIREMENT_FIELDS,
    "spec.placement.clusterTolerations[]": ("effect", "key", "operator", "tolerationSeconds",
                                            "value"),
    "spec.placement.replicaScheduling": ("customSchedulingType", "replicaDivisionPreference",
                                         "replicaSchedulingType", "weightPreference"),
    "spec.failover": ("application", "cluster"),
    "spec.failover.application": ("decisionConditions", "gracePeriodSeconds", "purgeMode",
                                  "statePreservation"),
    "spec.failover.application.decisionConditions": ("tolerationSeconds",),
    "spec.failover.cluster": ("purgeMode", "statePreservation"),
    "spec.suspension": ("dispatching", "dispatchingOnClusters", "scheduling"),
    "spec.suspension.dispatchingOnClusters": ("clusterNames",),
    "spec.schedulePriority": ("priorityClassName", "priorityClassSource"),
}


def _unknown_fields(doc: Document, spec: Any, known: tuple[str, ...], errors: Errors) -> None:
    """Fields fleetq's own kinds do not have, as errors (as strict decoding in
    Kubernetes refuses them): a misspelt field would be left out unseen, and
    what it said taken as its default."""
    _fields_not_in(doc, doc.value, {"": _TOP_FIELDS, "spec": known}, errors)


def _fields_not_in(doc: Document, value: Any, known: Mapping[str, tuple[str, ...]],
                   errors: Errors, field: str = "", where: str = "") -> None:
    """Each key of ``value`` (the document's ``field``, at ``where``: the
    field with its list indexes) that ``known`` does not name, as an error
    with the closest known name; then the same in each of its values that
    ``known`` has fields for (``field.key``, or ``field.key[]`` for each item
    of a list)."""
    if not isinstance(value, dict):
        return  # (its builder says what it must be)
    names = known[field]
    for key, inner in value.items():
        at = f"{where}.{key}" if where else str(key)
        if key not in names:
            close = difflib.get_close_matches(str(key), names, n=1, cutoff=0.6)
            there = f"{where}." if where else ""
            errors.found.append(ManifestError(
                f"{at} is not a field of {doc.value.get('kind')}"
                + (f": did you mean {there}{close[0]}?" if close else
                   f" (the fields of {where}: {', '.join(names)})" if where else
                   f" (its fields: {', '.join(names)})"), at))
            continue
        inner_field = f"{field}.{key}" if field else str(key)
        if inner_field in known:
            _fields_not_in(doc, inner, known, errors, inner_field, at)
        elif f"{inner_field}[]" in known and isinstance(inner, list):
            for i, item in enumerate(inner):
                _fields_not_in(doc, item, known, errors, f"{inner_field}[]", f"{at}[{i}]")


def _cluster(doc: Document) -> MemberCluster:
    meta = _meta(doc)
    check_name(str(meta["name"]), most=CLUSTER_NAME_MOST)  # (its folder's name, a label's value)
    spec = doc.value.get("spec")
    if not isinstance(spec, dict):
        raise ManifestError("spec is missing: a MemberCluster's spec holds its nodes", "spec")
    errors = Errors()
    _unknown_fields(doc, spec, _CLUSTER_FIELDS, errors)
    no_resources: Resources = {}  # (what a part that does not build counts as)
    no_labels: tuple[tuple[str, str], ...] = ()
    no_taints: tuple[Taint, ...] = ()
    nodes: list[Node] = []
    named: dict[str, str] = {}  # node name -> the entry that gives it first
    for i, n in enumerate(spec.get("nodes") or ()):
        where = f"spec.nodes[{i}]"
        if not isinstance(n, dict):
            errors.found.append(ManifestError(
                f"{where} must be a mapping (name, allocatable, labels, taints), not "
                f"{yaml_type(n)}", where))
            continue
        name = str(n.get("name") or f"node-{i}")
        _node_named(name, f"{where}.name", where, named, errors)
        nodes.append(Node(name=name,
                          allocatable=errors.take(partial(
                              parse_resources, n.get("allocatable"), f"{where}.allocatable"),
                              no_resources),
                          labels=errors.take(partial(
                              string_map, n.get("labels"), f"{where}.labels"), no_labels),
                          taints=errors.take(partial(
                              _taints, n.get("taints"), f"{where}.taints"), no_taints)))
    for i, g in enumerate(spec.get("nodeGroups") or ()):
        where = f"spec.nodeGroups[{i}]"
        if not isinstance(g, dict):
            errors.found.append(ManifestError(
                f"{where} must be a mapping (name, count, allocatable, labels, taints), not "
                f"{yaml_type(g)}", where))
            continue
        count = g.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            errors.found.append(ManifestError(f"{where}.count must be a whole number >= 0",
                                              f"{where}.count"))
            count = 0
        elif len(nodes) + count > MAX_CLUSTER_NODES:
            errors.found.append(ManifestError(
                f"{where}.count {count:,} gives the cluster more than {MAX_CLUSTER_NODES:,} "
                f"nodes, more than a Kubernetes cluster holds; give the count of its nodes",
                f"{where}.count"))
            count = 0
        alloc = errors.take(partial(parse_resources, g.get("allocatable"),
                                    f"{where}.allocatable"), no_resources)
        labels = errors.take(partial(string_map, g.get("labels"), f"{where}.labels"),
                             no_labels)
        taints = errors.take(partial(_taints, g.get("taints"), f"{where}.taints"), no_taints)
        base = str(g.get("name") or f"group-{i}")
        for k in range(count):
            if not _node_named(f"{base}-{k}", f"{where}.name", where, named, errors):
                break  # (told once for the group)
        nodes.extend(Node(name=f"{base}-{k}", allocatable=alloc, labels=labels, taints=taints)
                     for k in range(count))
    dialect = spec.get("gangDialect")
    dialect = "ack" if dialect is None else str(dialect)  # (an empty one is no dialect)
    if dialect not in GANG_DIALECTS:
        errors.found.append(ManifestError(
            f"spec.gangDialect {dialect!r} is not one of {', '.join(GANG_DIALECTS)}",
            "spec.gangDialect"))
    reservation = spec.get("resourceReservation", True)
    if not isinstance(reservation, bool):
        errors.found.append(ManifestError(
            f"spec.resourceReservation must be true or false, not {reservation!r}",
            "spec.resourceReservation"))
    caps = spec.get("capabilities")
    if caps is not None and not isinstance(caps, list):
        errors.found.append(ManifestError(
            "spec.capabilities must be a list of job kinds (group/Kind, e.g. batch/Job)",
            "spec.capabilities"))
        caps = None
    reserved = errors.take(lambda: parse_resources(spec.get("reserved"), "spec.reserved"),
                           no_resources)
    labels = errors.take(partial(string_map, meta.get("labels"), "metadata.labels"),
                         no_labels)
    taints = errors.take(partial(_taints, spec.get("taints"), "spec.taints"), no_taints)
    errors.done()
    return MemberCluster(
        name=str(meta["name"]),
        labels=labels,
        resource_reservation=bool(reservation),
        gang_dialect=dialect,
        capabilities=tuple(str(c) for c in caps) if caps is not None else None,
        taints=taints,
        reserved=reserved,
        nodes=tuple(nodes),
        kubeconfig_context=spec.get("kubeconfigContext"))


def _node_named(name: str, field: str, where: str, named: dict[str, str],
                errors: Errors) -> bool:
    """Whether a node of a MemberCluster (the entry ``where``) has a name
    Kubernetes takes that no entry before it (``named``) gives: placements
    and the clusters' reports name nodes by it, so two of one name would be
    booked as one. Else an error, at ``field``."""
    first = named.setdefault(name, where)
    if first != where:
        errors.found.append(ManifestError(
            f"{where} gives node {name!r}, the name {first} gives too: each node of a cluster "
            f"has a name of its own (a node group's are its name, '-', and 0, 1, ...); rename "
            f"one", field))
        return False
    try:
        check_name(name, field)
    except ManifestError as exc:
        errors.found.append(exc)
        return False
    return True


GANG_DIALECTS = ("ack", "scheduler-plugins", "volcano", "kueue")


def _add_cluster(doc: Document, inputs: FleetInputs) -> None:
    """A MemberCluster (one defined twice is a conflict), with a warning for
    each capability that names no job kind fleetq reads (a typo would keep
    that kind off the cluster)."""
    cluster = _cluster(doc)
    if not _define(inputs, f"MemberCluster {cluster.name}", doc):
        return
    inputs.cluster_at[cluster.name] = (doc.path, doc.line)
    inputs.clusters.append(cluster)
    if not cluster.nodes:  # (its jobs would wait, each told that no node admits them)
        inputs.problems.append(Problem(doc.path, doc.line_of("spec"), (
            f"MemberCluster {cluster.name} declares no nodes (spec.nodes and spec.nodeGroups "
            f"give none): fleetq places no job on it; list its nodes, or node groups with "
            f"their count"), "warning"))
    for i, cap in enumerate(cluster.capabilities or ()):
        if cap not in _CAPABILITIES:
            inputs.problems.append(Problem(doc.path, doc.line_of(f"spec.capabilities[{i}]"), (
                f"capability {cap!r} names no job kind fleetq reads (one of "
                f"{', '.join(sorted(_CAPABILITIES))}); no job can use it"), "warning"))


# the job kinds a MemberCluster's capabilities may name (``JobKey.kind_ref``)
_CAPABILITIES = frozenset(f"{api_group(k.api_version)}/{k.kind}" for k in KINDS)


def _dependency(doc: Document, inputs: FleetInputs) -> None:
    meta = _meta(doc)
    ns = str(meta.get("namespace") or "default")
    kind = str(doc.value["kind"])
    key = (kind, ns, str(meta["name"]))
    check_namespace(ns)
    check_name(key[2], most=min(253, 255 - len(f"{kind.lower()}-.yaml")))  # (its file's name)
    raise_all(_data_errors(doc.value))
    if _define(inputs, _dependency_label(key), doc):
        inputs.dependencies[key] = Dependency(kind, ns, str(meta["name"]), doc.path, doc.value)


# The fields of a ConfigMap and a Secret that map keys to text, and whether the
# text is base64 (bytes): the API server refuses another value (a number, a
# boolean, a list), so the job that mounts it would be sent without it.
_DATA_FIELDS = {"ConfigMap": (("data", False), ("binaryData", True)),
                "Secret": (("data", True), ("stringData", False))}
_DATA_KEY = re.compile(r"[-._a-zA-Z0-9]+")


def _data_errors(value: Mapping[str, Any]) -> list[ManifestError]:
    """What the API server refuses of a ConfigMap's or a Secret's data: a value
    that is no text (or no base64, for bytes), a key it does not take or that
    two fields hold, and more than 1 MiB in all."""
    found = []
    kind = str(value.get("kind"))
    keys: dict[str, str] = {}  # key -> the field that holds it
    size = 0
    for name, base64 in _DATA_FIELDS.get(kind, ()):
        data = value.get(name)
        if data is None:
            continue
        if not isinstance(data, dict):
            found.append(ManifestError(f"{name} must be a mapping of keys to "
                                       f"{'base64 text' if base64 else 'text'}, not "
                                       f"{yaml_type(data)}", name))
            continue
        for key, text in data.items():
            at = f"{name}.{key}"
            # (told at the key's line where a field path can name it: no dot in it)
            where = at if isinstance(key, str) and not set(key) & set(".[]") else name
            if not isinstance(key, str) or len(key) > 253 or not _DATA_KEY.fullmatch(key) \
                    or key in (".", "..") or key.startswith(".."):
                found.append(ManifestError(
                    f"{name} key {as_read(key)} is no key the API server takes (at most 253 "
                    f"letters, digits, '-', '_' and '.', not '.' or '..' nor starting with "
                    f"'..'); rename it", where))
                continue
            if key in keys and kind == "ConfigMap":
                found.append(ManifestError(f"{at}: {keys[key]} holds key {key!r} too; the API "
                                           f"server takes a key once; rename one", where))
            keys.setdefault(key, name)
            if text is not None and not isinstance(text, str):
                found.append(ManifestError(
                    f"{at} is {as_read(text)}, not text: the API server refuses it"
                    f"{quote_it(text)}", where))
            elif base64 and text is not None and not _is_base64(text):
                found.append(ManifestError(
                    f"{at} is not base64: the API server refuses it; encode it (base64 -w0)"
                    + (", or put it under stringData" if kind == "Secret" else ""), where))
            elif isinstance(text, str):
                size += len(key) + (len(text) * 3 // 4 if base64 else len(text.encode()))
    if size > DATA_MOST:
        found.append(ManifestError(
            f"its data holds {size:,} bytes, more than the {DATA_MOST:,} (1 MiB) the API server "
            f"takes of a {kind}; split it, or mount the data another way (a volume)",
            next(name for name, _ in _DATA_FIELDS[kind] if name in value)))
    return found


DATA_MOST = 1 << 20  # the bytes of a ConfigMap's or a Secret's data the API server takes


def _is_base64(text: str) -> bool:
    import base64
    import binascii

    try:
        base64.b64decode(text.replace("\n", "").replace("\r", ""), validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _dependency_label(key: tuple[str, str, str]) -> str:
    return f"{key[0]} {key[1]}/{key[2]}"


def _namespace(doc: Document, inputs: FleetInputs) -> None:
    meta = _meta(doc)
    check_namespace(str(meta["name"]), "metadata.name")
    inputs.namespaces[str(meta["name"])] = doc.value


def identity_mistake(value: object) -> str | None:
    """Why ``value`` cannot be the name or email of a commit's committer, or
    None: git writes ``name <email> time``, so an angle bracket or a control
    character (a newline) in either makes a commit git cannot read."""
    if not isinstance(value, str):
        return f"must be a string, not {yaml_type(value)}"
    if not value.strip():
        return "must not be blank"
    bad = next((c for c in value if c in "<>" or ord(c) < 32 or ord(c) == 127), None)
    if bad is not None:
        return (f"{value!r} holds {bad!r}, which git cannot write in a commit's committer "
                f"(its line is: name <email> time); take it out")
    return None


def _fleet(doc: Document, inputs: FleetInputs) -> None:
    spec = doc.value.get("spec") or {}
    if not isinstance(spec, dict):
        raise ManifestError("spec must be a mapping", "spec")
    errors = Errors()
    _fields_not_in(doc, doc.value, {"": _TOP_FIELDS, "spec": _FLEET_FIELDS,
                                    "spec.committer": ("name", "email")}, errors)
    git = inputs.git
    branch = spec.get("stateBranch")
    if branch is not None and not isinstance(branch, str):  # ([] is no branch, not unset)
        errors.found.append(ManifestError("spec.stateBranch must be a branch name (a string)",
                                          "spec.stateBranch"))
        branch = None
    git.state_branch = git.state_branch if branch is None else branch
    inputs.setting_at["spec.stateBranch"] = (doc.path, doc.line_of("spec.stateBranch"))
    if not branch_name_ok(git.state_branch):
        errors.found.append(ManifestError(
            f"spec.stateBranch {git.state_branch!r} is not a valid branch name "
            f"(git check-ref-format); use e.g. fleetq/state", "spec.stateBranch"))
    git.remote = spec.get("remote") or None
    inputs.setting_at["spec.remote"] = (doc.path, doc.line_of("spec.remote"))
    committer = spec.get("committer") or {}
    if not isinstance(committer, dict):
        errors.found.append(ManifestError(
            f"spec.committer must be a mapping of name and email, not {yaml_type(committer)}",
            "spec.committer"))
        committer = {}
    for part in ("name", "email"):
        value = committer.get(part)
        why = identity_mistake(value) if value is not None else None
        if why is not None:
            errors.found.append(ManifestError(f"spec.committer.{part} {why}",
                                              f"spec.committer.{part}"))
            committer = {}
    git.committer_name = committer.get("name")
    git.committer_email = committer.get("email")
    exclude = spec.get("exclude") or []
    if not isinstance(exclude, list):
        errors.found.append(ManifestError("spec.exclude must be a list of path patterns",
                                          "spec.exclude"))
        exclude = []
    for i, pattern in enumerate(exclude):
        at = f"spec.exclude[{i}]"
        inputs.setting_at.setdefault(f"spec.exclude={pattern}", (doc.path, doc.line_of(at)))
        if not isinstance(pattern, str) or not pattern:
            errors.found.append(ManifestError(
                f"{at} must be a path pattern (a string such as \"docs/**\"), not "
                f"{yaml_type(pattern) if pattern != '' else 'empty'}", at))
        elif _unclosed_bracket(pattern):
            inputs.problems.append(Problem(doc.path, doc.line_of(at), (
                f"{at} {pattern!r} has a '[' that is not closed, so it matches a '[' in a "
                f"path and nothing else; close it ('[abc]' matches a, b or c) or write "
                f"'[[]' for a '['"), "warning"))
    inputs.exclude = tuple(e for e in exclude if isinstance(e, str) and e)
    quotas: dict[str, QuotaSettings] = {}
    raw_quotas = spec.get("quotas") or {}
    if not isinstance(raw_quotas, dict):
        errors.found.append(ManifestError("spec.quotas must map quota paths or names to "
                                          "their settings", "spec.quotas"))
        raw_quotas = {}
    for name, raw in raw_quotas.items():
        where = f"spec.quotas.{name}"
        inputs.setting_at[where] = (doc.path, doc.line_of(where))
        none: QuotaSettings | None = None
        settings = errors.take(partial(_quota_settings, where, raw or {}), none)
        if settings is not None:
            quotas[str(name)] = settings
    default = spec.get("defaultPolicy")
    default_ref: tuple[str | None, str] | None = None
    if isinstance(default, str) and default:
        ns, _, name = default.rpartition("/")
        default_ref = (ns or None, name)
    elif isinstance(default, dict) and default.get("name"):
        default_ref = (default.get("namespace"), str(default["name"]))
    inputs.setting_at["spec.defaultPolicy"] = (doc.path, doc.line_of("spec.defaultPolicy"))
    strategy = errors.take(lambda: _strategy(str(spec.get("placementStrategy") or "binpack"),
                                             "spec.placementStrategy"), PlacementStrategy.BINPACK)
    errors.done()
    inputs.settings = FleetSettings(quotas=quotas, default_policy=default_ref, strategy=strategy)


def _unclosed_bracket(pattern: str) -> bool:
    """Has ``pattern`` a ``[`` that opens no set (``fnmatch`` then takes it
    as a ``[`` of the path)? A set is closed by the first ``]`` after its
    first character (``[]]`` holds a ``]``; ``[!]]`` all but one)."""
    i = 0
    while i < len(pattern):
        if pattern[i] == "[":
            j = i + 1
            if j < len(pattern) and pattern[j] == "!":
                j += 1
            if j < len(pattern) and pattern[j] == "]":
                j += 1
            j = pattern.find("]", j)
            if j < 0:
                return True
            i = j
        i += 1
    return False


_BAD_IN_BRANCH = re.compile(r"\.\.|@\{|//|[\x00-\x20\x7f~^:?*\[\\]|/\.|\.lock(/|$)")


def branch_name_ok(name: str) -> bool:
    """Is ``name`` a branch name git takes (the rules of ``git check-ref-format
    --branch``, checked without git)?"""
    return bool(name) and name != "@" and not _BAD_IN_BRANCH.search(name) and \
        not name.startswith(("-", "/", ".", "refs/", "heads/", "tags/", "remotes/")) and \
        not name.endswith(("/", ".")) and not _GIT_NAMES.fullmatch(name)


_GIT_NAMES = re.compile(r"[A-Z_]*HEAD")  # HEAD, FETCH_HEAD, ORIG_HEAD, ...: git's own


# A weight is kept in thousandths (``QuotaSettings.weight``): one below MIN_WEIGHT
# would be 0; MAX_WEIGHT keeps it, and a share divided by it, within a float's range.
MIN_WEIGHT, MAX_WEIGHT = 0.001, 1_000_000


_QUOTA_SETTINGS = ("queueStrategy", "preemption", "weight")  # (fleet.yaml's, of a quota)


def _quota_settings(where: str, raw: Any) -> QuotaSettings:
    """One quota's settings in fleet.yaml (``spec.quotas.<quota>``), each mistake told."""
    if not isinstance(raw, dict):
        raise ManifestError(f"{where} must be a mapping of queueStrategy, preemption and "
                            f"weight", where)
    errors = Errors()
    for key in raw:
        if key not in _QUOTA_SETTINGS:
            close = difflib.get_close_matches(str(key), _QUOTA_SETTINGS, n=1, cutoff=0.6)
            errors.found.append(ManifestError(
                f"{where}.{key} is not a setting of a quota: "
                + (f"did you mean {where}.{close[0]}?" if close else
                   f"its settings are {', '.join(_QUOTA_SETTINGS)}"), f"{where}.{key}"))
    strategy_name = str(raw.get("queueStrategy") or "BestEffortFIFO")
    if strategy_name not in QUEUE_STRATEGY_NAMES:
        errors.found.append(ManifestError(
            f"{where}.queueStrategy {strategy_name!r} is not one of "
            f"{', '.join(QUEUE_STRATEGY_NAMES)}", f"{where}.queueStrategy"))
    preemption = str(raw.get("preemption") or "LowerPriority")
    policy = PreemptionPolicy.LOWER_PRIORITY
    try:
        policy = PreemptionPolicy(preemption)
    except ValueError:
        errors.found.append(ManifestError(
            f"{where}.preemption {preemption!r} is not one of "
            f"{', '.join(p.value for p in PreemptionPolicy)}", f"{where}.preemption"))
    weight = raw.get("weight", 1)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or \
            not MIN_WEIGHT <= weight <= MAX_WEIGHT:  # (False for nan too)
        errors.found.append(ManifestError(
            f"{where}.weight must be a finite number > 0, from {MIN_WEIGHT} to {MAX_WEIGHT:,} "
            f"(a queue's share of borrowed quota; 1 when unset), not {weight!r}",
            f"{where}.weight"))
        weight = 1
    errors.done()
    return QuotaSettings(strategy=QUEUE_STRATEGY_NAMES[strategy_name], preemption=policy,
                         weight=round(weight * 1000))



def resolve_quota_settings(inputs: FleetInputs) -> None:
    """Key ``spec.quotas`` by quota path (it may name a quota by name or path)."""
    tree = inputs.tree
    if tree is None or not inputs.settings.quotas:
        return
    resolved: dict[str, QuotaSettings] = {}
    for name, settings in inputs.settings.quotas.items():
        path = name if name in tree.nodes else tree.by_alias.get(name)
        if path is None:
            where, line = inputs.setting_at.get(f"spec.quotas.{name}", ("fleet.yaml", 0))
            close = difflib.get_close_matches(name, [*tree.nodes, *tree.by_alias], n=1,
                                              cutoff=0.8)
            fix = f"did you mean {close[0]}?" if close else \
                f"name one by its path, such as {tree.root}/..., or by its name"
            inputs.problems.append(Problem(where, line, (
                f"spec.quotas names {name!r}, which is no quota of the ElasticQuotaTree "
                f"(its settings apply to no quota): {fix}")))
            continue
        node = tree.nodes[path]
        if not node.is_leaf:
            where, line = inputs.setting_at.get(f"spec.quotas.{name}", ("fleet.yaml", 0))
            leaves = sorted(n.path for n in tree.leaves() if n.path.startswith(path + "/"))
            shown = listed(leaves, " and ") if len(leaves) <= 4 else \
                f"{', '.join(leaves[:3])} and {len(leaves) - 3} more"
            inputs.problems.append(Problem(where, line, (
                f"spec.quotas names {name!r}, quota {path}, which has quotas under it: a "
                f"queue is a leaf quota's, so its settings apply to no queue; set them on "
                f"its leaves ({shown})"), "warning"))
        resolved[path] = settings
    inputs.settings = FleetSettings(quotas=resolved,
                                    default_policy=inputs.settings.default_policy,
                                    strategy=inputs.settings.strategy)
