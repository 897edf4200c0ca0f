"""The reconcile pipeline: read -> decide -> render -> commit -> push.

Each step has one home: ``gitops`` reads and writes git, ``fleet`` turns files
into values, ``core`` decides, ``render`` writes manifests and text. This
module wires them, and retries when another writer moved the state branch
first (compare-and-swap locally, a push lease on a remote).
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import dataclasses
import datetime as dt
import functools
import gc
import hashlib
import heapq
import itertools
import json
import operator
import os
import re
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from reconciler import __version__
from reconciler.core.cycle import (
    CycleInput,
    CycleResult,
    InvalidJob,
    counted_as_decided,
    prepare,
    queue_order,
    reconcile_cycle,
)
from reconciler.core.model import (
    CREATED_AT,
    MAX_EXEC_TIME_AT,
    NAME_AT,
    WORKLOAD_PRIORITY_CLASS_AT,
    Decision,
    Job,
    JobKey,
    Phase,
    PriorPlacement,
)
from reconciler.core.outcomes import (
    ClusterObservation,
    Outcomes,
    apply_observations,
    capacity_drift,
    cycle_input_with,
    finish,
    not_placed,
    parse_time,
    purge_due,
)
from reconciler.core.policy import candidate_groups, default_policy, select_policy
from reconciler.core.problems import Problem, did_you_mean, first_of, listed, shown_path
from reconciler.core.quota import QuotaTree, max_changed
from reconciler.core.resources import (
    MAX_JOBS,
    PODS,
    Resources,
    add_into,
    format_quantity,
    pointwise_max,
)
from reconciler.fleet.cache import Cache
from reconciler.fleet.inputs import (
    CUT_SHORT,
    FLEET_FILES,
    TEMPLATES_DIR,
    FleetInputs,
    GitSettings,
    JobEntry,
    LastGood,
    SourceFile,
    branch_name_ok,
    excluded,
    identity_mistake,
    invalid_copies,
    is_json,
    is_yaml,
    misnamed_yaml,
    patch_fleet,
    patch_fleet_others,
    read_file,
    read_fleet,
    read_fleet_settings,
)
from reconciler.fleet.jobs import MAX_EXEC_TIME_LABEL, JobSource, build_job, stable_name
from reconciler.fleet.observed import (
    INVENTORY_DIR,
    STATUS_DIR,
    ClusterReport,
    read_inventory,
    read_status,
    status_path,
)
from reconciler.fleet.state import (
    PLACEMENTS,
    Written,
    items_of,
    placements_file,
    read_items,
    read_placements,
    render_placements_reusing,
)
from reconciler.gitops.repo import (
    CommitInfo,
    FleetRepo,
    GitError,
    Identity,
    TreeEntry,
    blob_id,
)
from reconciler.gitops.watch import RefWatcher, Revisions
from reconciler.halves import in_two, two_cores
from reconciler.jobkinds.base import Manifest, ManifestError
from reconciler.jobkinds.batchjob import BatchJobKind
from reconciler.render.manifests import (
    KEPT_WHILE_RUNNING,
    KUEUE_QUEUE,
    AsItWas,
    Sent,
    job_file,
    keep_for_kueue,
    keep_spec,
    kept_by_kueue,
    labels_sent,
    metadata_labels,
    name_of_quota,
    pods_started_with,
    queue_sent,
    quoted,
    render_state,
    rendered_from,
    sent_with,
    spec_kept,
    spec_sent,
    started_text,
)
from reconciler.render.overlays import Overlays

TRAILER = "Fleet-Source-Commit"
TREE_TRAILER = "Fleet-Source-Tree"
FORMAT_TRAILER = "Fleet-Format"
OBSERVED_TRAILER = "Fleet-Observed"  # the id of the state's status/ folder ("none")
# the first time the state changes with no new input (an old copy's grace period ends):
# from then on, a reconcile of the same inputs is no fixed point
DUE_TRAILER = "Fleet-Due"
# the id of the tree fleetq committed, less the clusters' reports (``decided_tree``): a
# commit whose tree is another, or that has none from the state format that writes it on
# (``TREE_NAMED_FROM``), was edited by hand (amended, its message copied, or the trailer
# taken out), though it keeps fleetq's other trailers
STATE_TREE_TRAILER = "Fleet-State-Tree"
STATE_FORMAT = f"20 fleetq/{__version__}"  # a state made by another format is recomputed (20: never
# all at once said only when sure, a group of no pods placed nowhere; 19: a cluster that checks its
# free sum alone where the pods of a job never run (also: never all at once) taken only when no
# other fits, a job failed on every cluster told how to run it again; 18: a reclaim takes first from
# quotas that borrow up to the one they share with it, by priority then recency, not from the
# nearest; a running job of a kind other than a batch Job counted as its pods hold their requests, a
# preempted job placed by capacity alone not told of a queue; 17: a RayJob's head requests the Ray
# autoscaler's container, a PyTorchJob's Master that does not say replicas: 1 is invalid, a waiting
# job that cannot be resolved shows the quota and priority it waited with, pods no node could ever
# hold on a cluster that packs them onto nodes told what keeps them off, a job with no quota sent to
# no kueue cluster, fields of the fleet's kinds of the wrong type refused; 16: a running job whose
# quota changed, or whose node went, is checked again, a job placed by capacity alone needs no
# quota, an elastic PyTorchJob's min above its max is invalid; 15: a state commit names its tree,
# Fleet-State-Tree, and one of this format or later that does not was edited by hand; a job defined
# twice, or sharing its name, is told at its name's line; an invalid job's reason counts the
# mistakes a wrong count or a missing field hid; 14: a RayJob whose spec KubeRay refuses is invalid;
# 13: a job whose pods mount a volume they do not have, or ask for a resource named without its
# domain, is invalid; 12: a job whose pods, name or replicas the API server or its operator refuses
# is invalid; 11: a running batch Job counted with what it keeps as sent; 10: a batch Job running on
# a kueue cluster keeps its annotation job-completions-equal-parallelism, and its parallelism when
# it was sent with job-min-parallelism, as it was sent with them; 9: a SidecarMode RayJob's head
# requests its submitter container; 8: a RayJob's worker group names checked, for Kueue's pod sets
# too; 7: a batch Job running on a cluster keeps the fields of its spec the API server refuses to
# change as it was sent with them; 6: a job running on a kueue cluster keeps the
# WorkloadPriorityClass and maximum run time labels it was sent with; 5: no run policy left empty on
# a kueue cluster, a RayJob's submitter Job counted in its Kueue pod sets; 4: no suspend sent to a
# kueue cluster, a Volcano PodGroup's priority, YAML tags of no JSON form refused; 3: a RayJob's
# workers as KubeRay starts them, an MPI launcher made later out of the gang, timestamps read as
# strings; 2: the items of a v1 List are read as documents)
DEFAULT_IDENTITY = Identity("fleetq", "fleetq@localhost")
CARRIED_OVER = ("inventory/", "status/")
DEFAULT_STATE_BRANCH = "fleetq/state"  # when fleet.yaml names none
MAX_ATTEMPTS = 8

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


@dataclass
class Computed:
    """One reconcile's result before it is committed."""

    source: CommitInfo
    inputs: FleetInputs
    result: CycleResult
    prior: dict[JobKey, PriorPlacement]
    files: dict[str, bytes | str]
    problems: list[Problem]
    state_base: str | None
    state_tree: str | None
    rendered_from: dict[str, str] = field(default_factory=dict)  # RenderedTree.inputs
    observed: str | None = None  # the id of the status/ folder of the state it makes
    due: str | None = None  # when the state it makes changes with no new input (Fleet-Due)
    changes: list[str] = field(default_factory=list)
    written: Written = field(default_factory=dict)  # each decision read back, its item
    now: dt.datetime | None = None  # the time it decided at (``state_clock``)
    # what the cycle decided from (``explain`` asks what the next reconcile would
    # decide with a limit raised)
    cycle_input: CycleInput | None = None


@dataclass
class Outcome:
    computed: Computed | None  # None: the state was already up to date with the source
    commit: str | None
    attempts: int
    source: CommitInfo | None = None
    state: str | None = None
    # the state was made from this commit, of which the source is an ancestor:
    # nothing was done (a reconcile of an older commit would roll the state back)
    newer: str | None = None
    # (branch, its head): the source is an older commit of that branch, which went
    # on past it (and past the state's source): nothing was done (``moved_past``)
    moved_on: tuple[str, str] | None = None
    remote: str | None = None  # the remote the state commit was pushed to
    # up to date: what deciding the source from the state told, when the cache knows
    # (the source changed since the state was made, but no decision: see up_to_date)
    problems: list[Problem] = field(default_factory=list)

    @property
    def decisions(self) -> list[Decision]:
        return self.computed.result.decisions if self.computed is not None else []

    @property
    def told(self) -> list[Problem]:
        """What deciding the source told (when up to date, what the cache kept)."""
        return self.computed.problems if self.computed is not None else self.problems


RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?")


def parse_now(text: str | None) -> dt.datetime:
    """``--now``: an RFC 3339 time, as UTC; ``None``: this machine's clock."""
    if text is None:
        return dt.datetime.now(dt.UTC).replace(microsecond=0)
    form = RFC3339.fullmatch(text.strip())
    wrong = GitError(f"--now {text!r} is not an RFC 3339 time: a date and a time of day with a "
                     f"zone, e.g. 2026-11-29T11:00:00Z")
    if form is None:  # (a date alone, an empty $NOW, ISO 8601's other forms, ...)
        raise wrong
    if form.group(2) is None:  # (RFC 3339 has no local times: whose clock would it be?)
        raise GitError(f"--now {text!r} has no time zone; add Z for UTC or an offset "
                       f"(e.g. {text.strip()}Z or {text.strip()}+08:00)")
    text = text.strip()
    zone = "+00:00" if form.group(2) in ("Z", "z") else form.group(2)
    try:
        when = dt.datetime.fromisoformat(
            f"{text[:10]}T{text[11:len(text) - len(form.group(2))]}{zone}")
    except ValueError:  # (a 13th month, ...)
        raise wrong from None
    try:
        when = when.astimezone(dt.UTC)
    except OverflowError:  # (0001-01-01T00:00:00+08:00)
        when = dt.datetime.min.replace(tzinfo=dt.UTC)
    if not NOW_YEARS[0] <= when.year <= NOW_YEARS[1]:
        raise GitError(f"--now {text!r} is outside the years {NOW_YEARS[0]} to "
                       f"{NOW_YEARS[1]}, the times fleetq takes (git dates no commit before "
                       f"1970)")
    return when


NOW_YEARS = (1970, 9000)  # the years a --now may be in


def rfc3339(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ParsedJobs:
    """Parsed jobs-only files by (blob id, path), for one reconcile: a ``JobCache``
    that keeps nothing on disk (used when the on-disk cache is off)."""

    def __init__(self) -> None:
        self.jobs: dict[tuple[str, str], list[JobSource | InvalidJob]] = {}

    def job_entry(self, blob: str, path: str) -> list[JobSource | InvalidJob] | None:
        return self.jobs.get((blob, path))

    def put_job_entry(self, blob: str, path: str,
                      entry: list[JobSource | InvalidJob]) -> None:
        self.jobs[(blob, path)] = entry


JobStore = Cache | ParsedJobs
PARALLEL_MIN_FILES = 2000  # fewer new files than this are parsed in one process


def no_revision(repo: FleetRepo, rev: str) -> str:
    """Why the source ``rev`` cannot be read: a repository with no commit yet,
    or a name that is no branch, tag or commit here."""
    if repo.resolve("HEAD") is None:
        return (f"source revision {rev!r} does not exist: the repository has no commit yet; "
                f"commit the fleet repo first")
    remote, _, name = rev.partition("/")
    if name and remote in repo.remotes():
        return (f"source revision {rev!r} does not exist here: {remote} has no branch {name!r} "
                f"(as git last fetched it): push it (git push -u {remote} {name}), or name "
                f"another with --source")
    # (not the name itself: made meanwhile, a watch would tell the same error anew)
    meant = did_you_mean(rev, [name for ref in repo.branches()
                               if (name := ref.removeprefix("refs/heads/")) != rev])
    return (f"source revision {rev!r} does not exist here{meant}: no branch, tag or commit of "
            f"that name (git branch -a lists the branches; a remote's is origin/<branch>, "
            f"fetched first)")


def read_source(repo: FleetRepo, rev: str, store: JobStore | None = None,
                progress: Progress = _quiet) -> tuple[CommitInfo, list[SourceFile]]:
    """The commit's YAML files and templates; blobs the store knows are not read
    (each such file comes with its jobs, as the store has them).

    When many files are new and the machine has more than one core, the
    files are read and parsed by two processes at once (each with its own
    ``git cat-file --batch``); the jobs-only files' jobs go into ``store``,
    so only the other files' bytes are returned.
    """
    sha = repo.resolve(rev)
    if sha is None:
        raise GitError(no_revision(repo, rev))
    info = repo.commit_info(sha)
    entries: list[TreeEntry] = []
    misnamed: list[SourceFile] = []  # (told, not read: their bytes are not needed)
    for e in repo.list_tree(sha):
        if e.type != "blob":
            continue
        if is_yaml(e.path) or e.path.startswith("templates/"):
            entries.append(e)
        elif misnamed_yaml(e.path):
            misnamed.append(SourceFile(e.path, e.sha, b""))
        elif is_json(e.path):
            entries.append(e)  # (looked at: a Kubernetes object there is told, not read)
    known = store.job_entry if store is not None else None
    # each file with its jobs, when the store has them (looked up once: read_fleet takes them)
    found = [(e, known(e.sha, e.path) if known is not None else None) for e in entries]
    job_like = [e for e, got in found
                if got is None and is_yaml(e.path) and e.path not in FLEET_FILES]
    if store is not None and len(job_like) >= PARALLEL_MIN_FILES and two_cores():
        progress(f"parsing {len(job_like)} files in 2 processes")
        parsed = parse_in_parallel(repo, job_like, progress)
        for (blob, path), record in parsed.items():
            store.put_job_entry(blob, path, record)
        found = [(e, got if got is not None else parsed.get((e.sha, e.path)))
                 for e, got in found]
    blobs = repo.read_blobs(e.sha for e, got in found if got is None)
    return info, [SourceFile(e.path, e.sha, b"", got) if got is not None
                  else SourceFile(e.path, e.sha, blobs.get(e.sha, b"")) for e, got in found
                  ] + misnamed


def _parse_share(repo: FleetRepo, entries: Sequence[TreeEntry], progress: Progress = _quiet,
                 ) -> dict[tuple[str, str], list[JobSource | InvalidJob]]:
    """The jobs of each jobs-only file among ``entries`` (others are left out);
    ``progress`` is told the share parsed, now and then."""
    blobs = repo.read_blobs(e.sha for e in entries)
    out: dict[tuple[str, str], list[JobSource | InvalidJob]] = {}
    for i, e in enumerate(entries):
        if i % PROGRESS_FILES == 0 and i:
            progress(f"{100 * i // len(entries)} %")
        record: list[JobSource | InvalidJob] = []
        if read_file(SourceFile(e.path, e.sha, blobs[e.sha]), FleetInputs(), [], record):
            out[(e.sha, e.path)] = record
    return out


PROGRESS_FILES = 1000  # files parsed between two reports of progress


def parse_in_parallel(repo: FleetRepo, entries: list[TreeEntry], progress: Progress = _quiet,
                      ) -> dict[tuple[str, str], list[JobSource | InvalidJob]]:
    """``_parse_share`` over ``entries``, half of them in a forked process
    (``in_two``: should it fail, its half is parsed here). The progress told
    is this process's (the halves go at about the same pace); the other
    process tells none."""
    here = os.getpid()
    label = f"parsing {len(entries)} files in 2 processes"

    def told(share: str) -> None:
        if os.getpid() == here:
            progress(f"{label}: {share}")

    mine, theirs = in_two(functools.partial(_parse_share, repo, progress=told), entries)
    mine.update(theirs)
    return mine


def compute(repo: FleetRepo, *, source_rev: str, state_base: str | None,
            now: dt.datetime, progress: Progress = _quiet,
            cache: Cache | None = None, save_behind: bool = False,
            write: bool = True, last_good_from: str | None = None) -> Computed:
    """Read the source commit and the state at ``state_base`` and decide everything.

    ``last_good_from``: the state commit whose sources give the last good
    versions of the files that break, when there is no ``state_base`` (a
    check that decides from no state, as the fleet would go on from it).

    ``save_behind``: the ``cache``'s new parsed jobs are written by a forked
    process while the rest is done (``Cache.save_jobs_behind``), for a process
    that saves the cache right after this and ends. ``write``: placements.yaml
    is written into the repository ahead of its tree (not for a check that
    writes no tree: its ``files`` hold its bytes).

    The values built here hold no reference cycles, so the cyclic garbage
    collector is paused while they are built (it would rescan them all, again
    and again, as they grow).
    """
    with gc_paused():
        return _compute(repo, source_rev=source_rev, state_base=state_base, now=now,
                        progress=progress, cache=cache, save_behind=save_behind, write=write,
                        last_good_from=last_good_from)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off (as it was, after): fleetq's values hold
    no reference cycles, and a large fleet's millions of them would be scanned
    again and again while they are built, saved or dropped."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def _compute(repo: FleetRepo, *, source_rev: str, state_base: str | None,
             now: dt.datetime, progress: Progress, cache: Cache | None,
             save_behind: bool, write: bool = True,
             last_good_from: str | None = None) -> Computed:
    if state_base is not None:
        now = state_clock(repo, state_base, now)
    progress("reading source commit")
    store: JobStore = cache if cache is not None else ParsedJobs()
    if cache is not None:
        cache.load_jobs()
    read_before = cache.kept_inputs() if cache is not None else None  # (tree, fleet read)
    info, inputs = read_inputs(repo, source_rev, store, cache, progress,
                               last_good=earlier_versions(repo, state_base or last_good_from,
                                                          source_rev, committed=write))
    progress(f"read {inputs.files} files, {len(inputs.jobs)} jobs")
    if save_behind and cache is not None:
        cache.save_jobs_behind(inputs.jobs_files)
    prior: dict[JobKey, PriorPlacement] = {}
    before: Written = {}  # the state's decisions as written, when the cache has them
    reuse: dict[str, tuple[str, str]] = {}  # job files of the state, by what made them
    previous_entries: dict[str, str] = {}
    problems: list[Problem] = []
    state_tree = None
    state_info: CommitInfo | None = None
    if state_base is not None:
        state_info = repo.commit_info(state_base)
        state_tree = state_info.tree
        previous_entries = {e.path: e.sha for e in repo.list_tree(state_base)
                            if e.type == "blob"}
        cached = cache.load_state(state_base) if cache is not None else None
        if cache is not None and cached is not None:
            before, was_rendered = cached
            prior = cache.priors(before)
            # only what the state tree still holds (a damaged cache cannot lie)
            reuse = {path: (made_of, sha) for path, (made_of, sha) in was_rendered.items()
                     if previous_entries.get(path) == sha}
        else:
            placements_sha = previous_entries.get(PLACEMENTS)
            data = repo.read_blobs([placements_sha])[placements_sha] if placements_sha else None
            prior, state_problems = read_placements(data)
            if placements_sha is None:
                state_problems.append(Problem(PLACEMENTS, 0, "it is not there"))
            if state_problems:
                raise GitError(damaged_state(state_base, state_problems[0]))
    settled = _settled(repo, store, info, state_info, prior, read_before, inputs)
    # the clusters' reports the state holds: those of the fleet's clusters stay
    members = {c.name for c in inputs.clusters}
    reports = {path: sha for path, sha in previous_entries.items()
               if path.startswith(CARRIED_OVER)
               and path.partition("/")[2].rsplit(".", 1)[0] in members}
    observations = read_observations(repo, reports, problems)
    problems.extend(capacity_problems(repo, reports, inputs))
    sent_read: SentRead = {}  # (the state's job files the cycle and the render both read)
    started: dict[JobKey, str] = {}  # (``STARTED_WITH`` of jobs whose pods hold more)
    running = running_forms(repo, inputs, prior, lambda: previous_entries, sent_read, started)
    moved = moved_into_broken(repo, inputs, prior, state_info, info.tree)
    if moved:  # (as the jobs of the file they moved to, which breaks: kept as they are)
        prior = {key: replace(p, path=moved[key]) if key in moved else p
                 for key, p in prior.items()}
    cycle_input = _cycle_input(inputs, prior, info, now, settled, problems, running)
    problems.extend(named_by_order(inputs))
    problems.extend(renamed_with_their_files(repo, inputs, prior, state_info, info.tree))
    problems.extend(invalid_copies(inputs))
    problems.extend(on_existing_ray_clusters(inputs))
    outcomes = apply_observations(cycle_input, observations) if prior else None
    if outcomes is not None:
        cycle_input = cycle_input_with(cycle_input, outcomes)
    progress("scheduling")
    ahead = cache.take_ahead(state_base) if cache is not None and state_base else None
    result = reconcile_cycle(cycle_input, ahead, progress)
    del ahead
    if outcomes is not None:
        result.decisions, touched = finish(result.decisions, outcomes)
        result.from_prior = result.from_prior - touched
    problems.extend(queue_jumps(result.decisions, inputs, prior, cycle_input.source_time,
                                cycle_input.now))
    problems.extend(dated_ahead(result.decisions, inputs, cycle_input.now))
    problems.extend(above_max(inputs.tree, result.quota_used))
    progress("rendering")
    # (the cycle's priors are ``before``'s, which the cache has as this version wrote them)
    placements, written = render_placements_reusing(result.decisions, before,
                                                    result.from_prior)
    del before
    # its blob (the largest of the state by far) is compressed while the rest is done
    out: dict[str, bytes | str] = {PLACEMENTS: repo.write_blob(placements) if write
                                   else placements}
    del placements
    overlays = Overlays(inputs.templates)
    # (files kept as they were, by their blob ids: a job kept on its last good
    # version, an ended job, an old copy of a job that fails over)
    sent, unsent = sent_to_kueue(repo, result.decisions, inputs, prior, previous_entries,
                                 reuse)
    problems.extend(unsent)
    for path, was in sent_specs(repo, result.decisions, inputs, prior, previous_entries,
                                reuse, overlays, sent_read).items():
        sent[path] = dataclasses.replace(sent.get(path, Sent()), spec=was.spec,
                                         kueue_job=was.kueue_job)
    for path, text in pods_held(result.decisions, prior, started, inputs, problems).items():
        sent[path] = dataclasses.replace(sent.get(path, Sent()), started=text)
    rendered = render_state(result.decisions, inputs, _manifest_of, previous_entries,
                            overlays, reuse, as_it_was(repo, result.decisions, inputs,
                                                       previous_entries), sent)
    out.update(rendered.files)
    out.update(reports)
    problems.extend(unsent_dependencies(result.decisions, inputs))
    problems.extend(refused_dependencies(result.decisions, inputs))
    problems.extend(no_clusters(inputs))
    problems = sorted(set(problems + inputs.problems + inputs.unknown + result.problems
                          + rendered.problems + cache_problems(cache)))
    computed = Computed(source=info, inputs=inputs, result=result, prior=prior, files=out,
                        problems=problems, state_base=state_base, state_tree=state_tree,
                        rendered_from=rendered.inputs, written=written,
                        observed=observed_id(reports),
                        due=min(filter(None, (purge_due(result.decisions, inputs.policies),
                                              outcomes.failover_due if outcomes else None)),
                                default=None), now=now, cycle_input=cycle_input)
    computed.changes = describe_changes(prior, result.decisions, outcomes, result.moved)
    return computed


def kept_moving(repo: FleetRepo) -> str:
    """Why a command that writes the state gave up: the branch moved before
    each of its writes; when the remote refused the pushes with a lock
    (``FleetRepo.last_refusal``), what it said last, which names a lock file
    left there if no other writer holds it."""
    refusal = repo.last_refusal
    if refusal is None:
        return f"the state branch kept moving; gave up after {MAX_ATTEMPTS} attempts"
    return (f"gave up after {MAX_ATTEMPTS} attempts to push the state branch, the last of "
            f"them refused by the remote as if another writer held the branch: "
            f"{refusal.strip()}; if no other reconcile, report or watch writes it now, a "
            f"lock file left on the remote (named above, by a push that was killed) stops "
            f"every push: remove it there")


def no_clusters(inputs: FleetInputs) -> list[Problem]:
    """A warning when the fleet has jobs and no MemberCluster (none added yet,
    the folder moved or excluded): every job is Inadmissible, and a check
    that told no problem would look as if the fleet were ready."""
    if not inputs.jobs or inputs.clusters:
        return []
    count = len(inputs.jobs)
    return [Problem("clusters/", 0, (
        f"the fleet has no MemberCluster fleetq reads, so its {count} "
        f"job{'s' if count != 1 else ''} can run nowhere; add one (a file like "
        f"clusters/<name>.yaml of kind MemberCluster: fleetq init writes examples), or fix "
        f"those that do not read, or that fleet.yaml's spec.exclude leaves out"), "warning")]


def renamed_since(repo: FleetRepo, state: CommitInfo | None, tree: str,
                  paths: Iterable[str]) -> list[tuple[str, str]]:
    """(old path, new path) of each file renamed (edited perhaps) between the
    source tree the state was made from and ``tree``, as ``git diff -M`` finds
    them, among ``paths`` (those gone, those come: a few, so that git pairs
    them all, as it does not past ``diff.renameLimit`` files); none without
    such a tree."""
    before = trailers(state.message).get(TREE_TRAILER) if state is not None else None
    asked = sorted(set(paths))
    if not before or before == tree or not asked:
        return []
    return _renames(repo, before, tree, asked)


def _renames(repo: FleetRepo, tree: str, newer: str, paths: Sequence[str] = ()
             ) -> list[tuple[str, str]]:
    """(old path, new path) of each file renamed between ``tree`` and
    ``newer``, as ``git diff -M`` finds them (among ``paths``, when given)."""
    fields = repo.run("diff-tree", "-r", "-M", "--diff-filter=R", "--name-status", "-z",
                      tree, newer, *(["--", *(f":(literal){path}" for path in paths)]
                                     if paths else []),
                      check=False).decode("utf-8", "surrogateescape").split("\0")
    return [(fields[i + 1], fields[i + 2]) for i in range(0, len(fields) - 2, 3)
            if fields[i].startswith("R")]


def moved_into_broken(repo: FleetRepo, inputs: FleetInputs,
                      prior: Mapping[JobKey, PriorPlacement], state: CommitInfo | None,
                      tree: str) -> dict[JobKey, str]:
    """The jobs of the state whose file moved since (``renamed_since``) into a
    file that breaks now, and still names them there (``name: NAME``: git
    pairs files by likeness, and a job deleted beside a new file made from
    the same template is no job moved): each with the path it moved to. They
    stay as the jobs of a file that breaks do, read from there (``_compute``):
    read no more, a running job would be deleted, a waiting one lose its
    place, for a typo made in the commit that moved its file."""
    if state is None or not inputs.broken_paths or not prior:
        return {}
    paths = {p.path for p in prior.values()}
    new = {path for path in inputs.broken_paths if path not in paths}
    if not new:
        return {}
    gone: dict[str, list[PriorPlacement]] = {}  # path -> the state's jobs defined nowhere now
    for p in prior.values():
        if p.key not in inputs.jobs:
            gone.setdefault(p.path, []).append(p)
    out: dict[JobKey, str] = {}
    for old, path in renamed_since(repo, state, tree, [*new, *gone]):
        if path not in new or old not in gone:
            continue
        blob = repo.blob_of(tree, path)
        data = repo.read_blobs([blob])[blob] if blob is not None else b""
        for p in gone[old]:
            if re.search(rb"^\s*name:\s*['\"]?" + re.escape(p.key.name.encode()) + rb"['\"]?\s*$",
                         data, re.M):
                out[p.key] = path
    return out


def renamed_with_their_files(repo: FleetRepo, inputs: FleetInputs,
                             prior: Mapping[JobKey, PriorPlacement],
                             state: CommitInfo | None, tree: str) -> list[Problem]:
    """A warning on each job named by ``metadata.generateName`` whose file was
    moved (``renamed_since``) while it ran: its name hashes its file's path
    and its place there (DESIGN §2), so it is another job now, and the one
    that ran is deleted from its cluster, the new one run from the start."""
    if state is None or not prior:
        return []
    ran: dict[str, list[PriorPlacement]] = {}
    for p in prior.values():
        if p.phase is Phase.ADMITTED and p.key not in inputs.jobs:
            ran.setdefault(p.path, []).append(p)
    if not ran:
        return []
    made: dict[str, list[tuple[Job, int | str]]] = {}
    for source in inputs.jobs.values():
        job = source.job
        if job.key not in prior and job.key.name == stable_name(
                job.key.name[:-5], job.path, source.index):
            made.setdefault(job.path, []).append((job, source.index))
    if not made:
        return []
    out = []
    for old, path in renamed_since(repo, state, tree, [*ran, *made]):
        for job, index in made.get(path, ()):
            # (the job of the same prefix and place in the file, under its old path)
            was = next((p for p in ran.get(old, ()) if p.key.kind == job.key.kind
                        and p.key.namespace == job.key.namespace
                        and p.key.name == stable_name(job.key.name[:-5], old, index)), None)
            if was is not None:
                out.append(Problem(path, job.line_of(NAME_AT), (
                    f"{job.key} is named by its metadata.generateName and its file's path: "
                    f"moved from {shown_path(old)}, it is a new job, and {was.key}, which ran "
                    f"on {was.cluster}, is deleted there, the new one run from the start; to "
                    f"keep it running, give it metadata.name: {was.key.name}, or move the "
                    f"file back"), "warning"))
    return out


def _cycle_input(inputs: FleetInputs, prior: dict[JobKey, PriorPlacement], info: CommitInfo,
                 now: dt.datetime, settled: frozenset[JobKey],
                 problems: list[Problem] | None = None,
                 running: Mapping[JobKey, Job] | None = None) -> CycleInput:
    """The cycle's input. A job defined more than once is invalid: which
    file would count would depend on their names, and a new file must not
    take a running job over (one that ran keeps its place, flagged); so are
    jobs of two kinds with one namespace and name (``shared_names``), each an
    error added to ``problems``. A job of ``running`` (``running_forms``) is
    counted as it runs."""
    jobs = tuple(s.job for s in inputs.jobs.values())
    if running:
        jobs = tuple(running.get(j.key, j) for j in jobs)
    invalid = tuple(inputs.invalid)
    shared = shared_names(jobs)
    if shared:
        clashing = [j for j in jobs if j.key in shared]
        invalid += tuple(InvalidJob(j.key, j.api_version, j.path, j.line_of(NAME_AT), j.blob,
                                    shared[j.key]) for j in clashing)
        jobs = tuple(j for j in jobs if j.key not in shared)
        if problems is not None:  # (told here, at its name: the fleet read found no fault)
            problems.extend(Problem(j.path, j.line_of(NAME_AT), shared[j.key])
                            for j in clashing)
    if inputs.twice:
        twice = inputs.twice
        invalid += tuple(InvalidJob(
            j.key, j.api_version, j.path, j.line_of(NAME_AT), j.blob,
            f"{j.key} is defined more than once (see the errors of fleetq validate): "
            f"none of them is used; rename all but one") for j in jobs if j.key in twice)
        jobs = tuple(j for j in jobs if j.key not in twice)
    broken = inputs.broken_paths
    if inputs.empty_paths and prior:
        # a file emptied (an editor's accident, a bad merge) took its jobs off their
        # clusters: the jobs the state has from it, defined nowhere else now, stay
        # as they were until the file is deleted, as those of a file that breaks
        gone: dict[str, list[JobKey]] = {}
        for key, p in prior.items():
            if p.path in inputs.empty_paths and key not in inputs.jobs:
                gone.setdefault(p.path, []).append(key)
        if gone:
            broken = dict(broken)
            for path, keys in sorted(gone.items()):
                said = (f"it holds no document now, and the state has {len(keys)} job(s) "
                        f"from it ({first_of(sorted(map(str, keys)), 3)}): they stay as they "
                        f"were; delete the file to delete them (an emptied file is taken for "
                        f"an accident)")
                broken[path] = said
                if problems is not None:
                    problems.append(Problem(path, 0, said))
    if (broken or inputs.invalid) and prior:
        # a job the state has from a file that breaks now, or holds it with a mistake,
        # defined by another file: a second definition, which takes nothing over (its
        # own file may still define it, unread), as one defined twice
        mistaken = {(bad.key, bad.path) for bad in inputs.invalid}
        taken = {j.key: (j, prior[j.key].path) for j in jobs
                 if j.key in prior and prior[j.key].path != j.path
                 and (prior[j.key].path in broken or (j.key, prior[j.key].path) in mistaken)}
        for j, was in taken.values():
            said = (f"{j.key} is also defined at {shown_path(was)}, as far as fleetq knows: "
                    f"it was read from there, which "
                    f"{'breaks' if was in broken else 'holds it with a mistake'} now, and a "
                    f"new file takes no job over; fix {shown_path(was)}, or rename this one")
            invalid += (InvalidJob(j.key, j.api_version, j.path, j.line_of(NAME_AT), j.blob,
                                   said),)
            if problems is not None:
                problems.append(Problem(j.path, j.line_of(NAME_AT), said))
        if taken:
            jobs = tuple(j for j in jobs if j.key not in taken)
    return CycleInput(
        jobs=jobs, tree=inputs.tree,
        clusters=tuple(inputs.clusters), policies=tuple(inputs.policies),
        priority_classes=inputs.priority_classes, default_priority=inputs.default_priority,
        workload_priority_classes=inputs.workload_priority_classes, prior=prior,
        # (a commit dated ahead of the clock, or a --now before it: its new jobs
        # are enqueued when first seen, not admitted before they were enqueued)
        source_time=min(info.committed_at, rfc3339(now)), now=rfc3339(now), invalid=invalid,
        defined_twice=frozenset(inputs.conflicts), tree_unused=inputs.tree_unused,
        broken_paths=broken, settings=inputs.settings, settled=settled)


def named_by_order(inputs: FleetInputs) -> list[Problem]:
    """A warning on each job named by ``generateName`` in a file of several
    jobs: its name hashes its place in the file (DESIGN §2), so deleting or
    moving a document before it renames it: it would be deleted and run again."""
    several = {s.job.path for s in inputs.jobs.values() if s.index != 0}
    if not several:
        return []
    out = []
    for source in inputs.jobs.values():
        job = source.job
        if job.path in several and job.key.name == stable_name(
                job.key.name[:-5], job.path, source.index):
            out.append(Problem(job.path, job.line_of(NAME_AT), (
                f"{job.key} is named by its metadata.generateName and its place in a file of "
                f"several jobs: deleting or moving a document (or a List's item) before it "
                f"renames it, and a "
                f"renamed job is deleted and run again; give it a metadata.name"), "warning"))
    return out


def queue_jumps(decisions: Sequence[Decision], inputs: FleetInputs,
                prior: Mapping[JobKey, PriorPlacement], source_time: str,
                now: str | None = None) -> list[Problem]:
    """A warning on each job whose ``metadata.creationTimestamp`` puts it ahead
    of jobs that wait in its queue at its priority (or, placed by capacity
    alone, among the jobs so placed) and were there before this source: a
    creationTimestamp is its enqueue time (DESIGN §3), so one set back, on a new
    job or by an edit, jumps the queue. "First" is the enqueue time the state
    gave the job (or, new, this reconcile's). So is a new job without one whose
    source commit (``source_time``, its enqueue time) is dated before jobs
    queued before it was pushed: a committer's clock behind, a commit made
    before those and pushed after them; "first" is then the reconcile's time
    (``now``). Told to ``plan``'s reviewer and ``reconcile``'s log. Nothing is
    told without a state: every job is new then, and a fleet moved from
    clusters keeps their times."""
    if not prior:
        return []
    moved: dict[JobKey, tuple[Job, str]] = {}  # each job, and its time without the field
    # the enqueue times of the jobs gone from the source: a new job of one of them
    # is one of those renamed (kubectl writes its creationTimestamp), in its place
    gone: set[str] | None = None  # (looked for once a new job is dated)
    latest: str | None = None  # the latest enqueue time of a job queued (looked for once)
    for source in inputs.jobs.values():
        job = source.job
        if not job.created_at:
            if now is not None and source_time < now and job.key not in prior:
                if latest is None:
                    latest = max((p.enqueued_at for p in prior.values()
                                  if p.phase is Phase.QUEUED and p.enqueued_at), default="")
                if source_time <= latest:  # (told only where it passes others, below)
                    moved[job.key] = (job, now)
            continue
        was = prior.get(job.key)
        if was is None:
            if gone is None:
                gone = {p.enqueued_at for key, p in prior.items() if key not in inputs.jobs}
            if job.created_at not in gone:
                moved[job.key] = (job, source_time)
        elif (was.enqueued_at and job.created_at < was.enqueued_at
              and was.phase is not Phase.ADMITTED):
            moved[job.key] = (job, was.enqueued_at)
    if not moved:
        return []
    # a job waits in its quota's queue, or, placed by capacity alone (its policy
    # has no suspension.scheduling), among all such jobs (``None``)
    queued = {p.ref for p in inputs.policies if p.queued}

    def lane(d: Decision) -> tuple[str | None, int]:
        return (d.quota if d.policy in queued else None), d.priority

    # the jobs that wait and waited before this source, each lane's in queue
    # order: (its place now, the job) of those whose place is as it was, and
    # (its place now, its place before, the job) of those moved too; a job new
    # in this source was not there first
    stayed: dict[tuple[str | None, int], list[tuple[str, Decision]]] = \
        collections.defaultdict(list)
    moved_too: dict[tuple[str | None, int], list[tuple[str, str, Decision]]] = \
        collections.defaultdict(list)
    for d in decisions:
        if d.phase is Phase.QUEUED and d.key in prior:
            place = queue_order(d.priority, d.enqueued_at, d.key)
            if d.key in moved:
                moved_too[lane(d)].append(
                    (place, queue_order(d.priority, moved[d.key][1], d.key), d))
            else:
                stayed[lane(d)].append((place, d))
    for places in stayed.values():
        places.sort(key=operator.itemgetter(0))
    out = []
    for d in decisions:
        if d.key not in moved or d.phase not in (Phase.QUEUED, Phase.ADMITTED):
            continue
        job, first = moved[d.key]
        now_at, then_at = (queue_order(d.priority, d.enqueued_at, d.key),
                           queue_order(d.priority, first, d.key))
        # those ahead of it before and behind it now: of those whose place is as
        # it was, the ones between its place now and its place before
        steady = stayed[lane(d)]
        start = bisect.bisect_right(steady, now_at, key=operator.itemgetter(0))
        end = bisect.bisect_left(steady, then_at, lo=start, key=operator.itemgetter(0))
        also = [(place, other) for place, was_at, other in moved_too[lane(d)]
                if now_at < place and was_at < then_at]
        count = end - start + len(also)
        if not count:
            continue
        named = heapq.nsmallest(3, itertools.chain(steady[start:min(end, start + 3)], also),
                                key=operator.itemgetter(0))
        names = ", ".join(str(o.key) for _, o in named) + (
            f" and {count - 3} more" if count > 3 else "")
        # those of them admitted before and queued now were preempted by this
        # reconcile: they go back to their places in the queue, and wait only now
        preempted = any(prior[o.key].phase is Phase.ADMITTED
                        for _, o in itertools.chain(steady[start:end], also))
        where = ("waiting or just preempted" if preempted else "waiting") + (
            f" in queue {d.quota} at its priority" if lane(d)[0] is not None else
            " at its priority to be placed by capacity alone")
        if not job.created_at:
            out.append(Problem(job.path, job.line, (
                f"{job.key}: its source commit is dated {d.enqueued_at}, its enqueue time, "
                f"before jobs queued before it was pushed (a committer's clock behind, or a "
                f"commit made before theirs and pushed after them): it goes ahead of {count} "
                f"job(s) {where} ({names}); if that is not meant, set its "
                f"metadata.creationTimestamp to {first}"), "warning"))
            continue
        out.append(Problem(job.path, job.line_of(CREATED_AT), (
            f"{job.key}: metadata.creationTimestamp {d.enqueued_at} enqueues it before "
            f"{first}, {'when it was first enqueued' if d.key in prior else 'when it was pushed'}: "
            f"it goes ahead of {count} job(s) {where} ({names}); if that is not meant, set it "
            f"to {first}"), "warning"))
    return out


def dated_ahead(decisions: Sequence[Decision], inputs: FleetInputs, now: str) -> list[Problem]:
    """A warning on each waiting job whose ``metadata.creationTimestamp``, its
    enqueue time (DESIGN §3), is ahead of the clock (``now``): it waits behind
    every job enqueued until then, pushed after it or not (a year ahead: for
    a year)."""
    out = []
    for d in decisions:
        if d.phase is Phase.QUEUED and d.enqueued_at > now:
            source = inputs.jobs.get(d.key)
            if source is not None and source.job.created_at == d.enqueued_at:
                job = source.job
                out.append(Problem(job.path, job.line_of(CREATED_AT), (
                    f"{job.key}: metadata.creationTimestamp {d.enqueued_at}, its enqueue time, is "
                    f"ahead of the clock ({now}): it waits behind every job enqueued until "
                    f"then; remove it (the job is enqueued when pushed) or set it to now"),
                    "warning"))
    return out


def above_max(tree: QuotaTree | None, used: Mapping[str, Mapping[str, int]]) -> list[Problem]:
    """A warning, at the limit's line, on each quota whose jobs that run use
    more of a resource than its max (``used``: the cycle's ``quota_used``): a
    max lowered below them evicts none of them, and admits no job that asks
    for that resource under it until they use less; a reviewer of the change
    that lowered it is told so (its plan changes no job)."""
    if tree is None:
        return []
    out = []
    for path, node in tree.nodes.items():
        now = used.get(path)
        if not now:
            continue
        for name, limit in sorted(node.max.items()):
            if now.get(name, 0) > limit:
                out.append(Problem(tree.path, node.line_of("max", name), (
                    f"quota {path}: the jobs that run under it use {name} "
                    f"{format_quantity(name, now[name])}, above its max "
                    f"{format_quantity(name, limit)}: they run on (a lowered max evicts no "
                    f"job), and no job asking for {name} is admitted under it until they use "
                    f"less"), "warning"))
    return out


def on_existing_ray_clusters(inputs: FleetInputs) -> list[Problem]:
    """A warning on each RayJob that runs on an existing RayCluster
    (``spec.clusterSelector``: it has no pods of its own to count) whose
    policy lets it go to more than one cluster: it belongs where that
    RayCluster is, which fleetq does not know."""
    out = []
    default = default_policy(inputs.policies, inputs.settings)
    for source in inputs.jobs.values():
        job = source.job
        if job.pod_sets or job.key.kind != "RayJob":
            continue
        policy = select_policy(inputs.policies, job) or default
        if policy is None:
            continue  # (told it has no policy)
        clusters = {c for group in candidate_groups(policy, job.key.kind_ref,
                                                    inputs.clusters)[0] for c in group}
        if len(clusters) > 1:
            out.append(Problem(job.path, job.line, (
                f"{job.key} runs on an existing RayCluster (spec.clusterSelector), so fleetq "
                f"counts none of its pods, and {policy.ref} lets it go to any of "
                f"{len(clusters)} clusters, not only the one that RayCluster is on; pin it "
                f"there (clusterAffinity.clusterNames of a policy of its own) or give it "
                f"spec.rayClusterSpec"), "warning"))
    return out


def unsent_dependencies(decisions: Iterable[Decision], inputs: FleetInputs) -> list[Problem]:
    """A warning on each policy whose admitted jobs use ConfigMaps, Secrets,
    claims or service accounts the fleet defines, which it does not send
    (no ``propagateDeps: true``, as Karmada): their pods would not start
    unless the cluster has them already."""
    policies = {p.ref: p for p in inputs.policies if not p.propagate_deps}
    defined = inputs.dependencies
    if not policies or not defined:
        return []
    users: dict[str, list[str]] = {}
    for d in decisions:
        source = inputs.jobs.get(d.key) if d.phase is Phase.ADMITTED else None
        if source is None or not source.deps:
            continue
        policy = policies.get(d.policy or "")
        if policy is None:
            continue
        used = [f"{kind} {name}" for kind, name in source.deps
                if (kind, d.key.namespace, name) in defined]
        if used:
            users.setdefault(policy.ref, []).append(f"{d.key} uses {', '.join(used)}")
    out = []
    for ref, uses in sorted(users.items()):
        policy = policies[ref]
        more = f" (and {len(uses) - 1} more jobs)" if len(uses) > 1 else ""
        out.append(Problem(policy.path, policy.line, (
            f"{ref}: {min(uses)}{more}, which the fleet defines and this policy does not "
            f"send, so the cluster must have them already; to send them with the jobs, "
            f"set spec.propagateDeps: true"), "warning"))
    return out


def refused_dependencies(decisions: Iterable[Decision], inputs: FleetInputs) -> list[Problem]:
    """A warning on each admitted job whose pods use a ConfigMap, Secret,
    claim or service account its policy sends, whose document in the fleet
    does not build (and no last good version defines): it is not sent, so
    the pods will not start unless the cluster has it already."""
    refused = inputs.refused_deps
    if not refused:
        return []
    sending = {p.ref for p in inputs.policies if p.propagate_deps}
    out = []
    for d in decisions:
        source = inputs.jobs.get(d.key) if d.phase is Phase.ADMITTED else None
        if source is None or d.policy not in sending:
            continue
        for kind, name in source.deps:
            key = (kind, d.key.namespace, name)
            where = refused.get(key)
            if where is None or key in inputs.dependencies:
                continue
            job = source.job
            out.append(Problem(job.path, job.line_of(NAME_AT), (
                f"{d.key} is admitted to {d.cluster}, but the {kind} {name} its pods use does "
                f"not build ({shown_path(where[0])}:{where[1]}), so it is not sent: its pods "
                f"will not start there unless the cluster has it already; fix it"), "warning"))
    return out


_NAME = operator.attrgetter("key.name")


def shared_names(jobs: Sequence[Job]) -> dict[JobKey, str]:
    """Jobs of different kinds with one namespace and name, each with why it
    is not used: their gangs would be one (a gang's PodGroup and labels are
    named by the job's name), as would their dependencies' owner. Like a job
    defined twice, none is used, and one that ran keeps its place."""
    names = list(map(_NAME, jobs))  # (by name first, in C: most often all unique)
    if len(set(names)) == len(names):
        return {}
    again = {name for name, n in collections.Counter(names).items() if n > 1}
    first: dict[tuple[str, str], JobKey] = {}
    clash: set[tuple[str, str]] = set()
    for j in jobs:
        key = j.key
        if key.name in again:
            named = (key.namespace, key.name)
            if first.setdefault(named, key) is not key:
                clash.add(named)
    if not clash:
        return {}
    by_name: dict[tuple[str, str], list[Job]] = {named: [] for named in clash}
    for j in jobs:
        group = by_name.get((j.key.namespace, j.key.name))
        if group is not None:
            group.append(j)
    out: dict[JobKey, str] = {}
    for group in by_name.values():
        for j in group:
            others = sorted(f"{o.key.kind} at {shown_path(o.path)}:{o.line_of(NAME_AT)}"
                            for o in group if o is not j)
            out[j.key] = (f"{j.key.kind} {j.key.namespace}/{j.key.name} shares its namespace "
                          f"and name with the {', '.join(others)}: their gangs would be one "
                          f"(PodGroup {j.key.name}); none of them is used (where one ran, it "
                          f"keeps its place): rename all but one")
    return out


def read_observations(repo: FleetRepo, entries: dict[str, str], problems: list[Problem]
                      ) -> dict[str, ClusterObservation]:
    """The member clusters' reports of their jobs among ``entries`` (path ->
    blob id), by cluster; a report that cannot be read is left out, and said
    (a warning: the jobs it would have told of stay as they are)."""
    paths = sorted(p for p in entries if p.startswith(STATUS_DIR) and p.count("/") == 1
                   and p.endswith(".yaml"))
    if not paths:
        return {}
    blobs = repo.read_blobs(entries[p] for p in paths)
    out = {}
    for path in paths:
        report, said = read_status(path, blobs[entries[path]])
        left = "" if report is not None else (
            "; the report is left out (its jobs stay as they are) until fleetq observe or "
            "fleetq report writes it again")
        problems.extend(Problem(p.path, p.line, p.message + left, "warning") for p in said)
        if report is not None:
            out[report.cluster] = report
    return out


def capacity_problems(repo: FleetRepo, entries: dict[str, str], inputs: FleetInputs
                      ) -> list[Problem]:
    """Warnings where a member cluster declares capacity its reported nodes
    (``inventory/<cluster>.yaml`` among ``entries``, path -> blob id) do not
    have: jobs would be placed on room that is not there, and wait there."""
    clusters = {c.name: c for c in inputs.clusters}
    paths = sorted(p for p in entries if p.startswith(INVENTORY_DIR) and p.count("/") == 1
                   and p.endswith(".yaml") and p[len(INVENTORY_DIR):-5] in clusters)
    if not paths:
        return []
    blobs = repo.read_blobs(entries[p] for p in paths)
    out: list[Problem] = []
    for path in paths:
        nodes, observed_at, said = read_inventory(path, blobs[entries[path]])
        out.extend(Problem(p.path, p.line, p.message, "warning") for p in said)
        if nodes is None:
            continue
        cluster = clusters[path[len(INVENTORY_DIR):-5]]
        # (told at the MemberCluster, the file to fix; the report is on the state branch)
        where, line = inputs.cluster_at.get(cluster.name, (path, 0))
        for drift in capacity_drift(cluster, nodes):
            out.append(Problem(where, line, (
                f"MemberCluster {cluster.name}: {drift} (observed at {observed_at}, as its "
                f"report on the state branch, {path}, says); fix its spec.nodes or "
                f"spec.nodeGroups, or the cluster"), "warning"))
    return out


def prepare_next(repo: FleetRepo, cache: Cache, state: str, source: CommitInfo,
                 now: dt.datetime) -> bool:
    """Do ahead, in ``cache``, the first steps of the cycle of the next
    reconcile from state ``state`` (``prepare``): those of the jobs the state
    admitted, which a push of other job files leaves as they are. It needs the
    state's decisions and the fleet of ``source`` in memory, as a watch has
    them after a round; False when they are not."""
    written = cache.state_in_memory(state)
    kept = cache.kept_inputs()
    if written is None or kept is None or kept[0] != source.tree:
        return False
    priors = cache.priors(written)
    running = running_forms(repo, kept[1], priors, lambda: {
        e.path: e.sha for e in repo.list_tree(state) if e.type == "blob"}, started={})
    ahead = prepare(_cycle_input(kept[1], priors, source, now, frozenset(), None, running))
    if ahead is None:
        return False
    cache.keep_ahead(state, ahead)
    return True


NO_BLOB = "0" * 40


PATCHED = "patched the fleet read last with the files that changed"
PATCHED_OTHERS = ("read the fleet's files other than job files again, and patched in the "
                  "job files that changed")


def read_inputs(repo: FleetRepo, rev: str, store: JobStore, cache: Cache | None,
                progress: Progress = _quiet, *, last_good: LastGood | None = None
                ) -> tuple[CommitInfo, FleetInputs]:
    """The source commit and what it holds. When the ``cache`` kept the fleet
    of another tree (in memory, or saved by the last reconcile), that fleet
    is patched with the files that changed since (see ``_patched_inputs``),
    unless fleet.yaml did; else the commit is read whole. What is read is
    kept for the next time. ``last_good``: see ``read_fleet`` (a fleet kept
    that was read without it, with a file that does not build or an object
    defined twice, is not patched: read whole, that file is read in its last
    good version)."""
    kept = cache.kept_inputs() if cache is not None else None
    if kept is not None and last_good is not None and not kept[1].with_last_good and (
            kept[1].broken_paths or kept[1].unbuilt or kept[1].conflicts):
        kept = None
    if cache is not None and kept is not None:
        sha = repo.resolve(rev)
        if sha is not None:
            info = repo.commit_info(sha)
            got = _patched_inputs(repo, cache, *kept, info.tree, last_good)
            if got is not None:
                patched, how = got
                progress(how)
                cache.keep_inputs(info.tree, patched)
                return info, patched
            rev = sha  # (the same commit, should the revision move meanwhile)
    if cache is not None:
        # fleet.yaml changed, or no fleet was kept: steps done ahead would most likely
        # not be taken up, and would be held through the reading of the whole commit.
        cache.drop_ahead()
    info, files = read_source(repo, rev, store, progress)
    inputs = read_fleet(files, store, last_good)  # empties ``files``: the bytes are freed
    if cache is not None:
        cache.keep_inputs(info.tree, inputs)
    return info, inputs


def _patched_inputs(repo: FleetRepo, cache: Cache, tree: str, before: FleetInputs,
                    new_tree: str, last_good: LastGood | None = None
                    ) -> tuple[FleetInputs, str] | None:
    """``before``, read from ``tree``, as read from ``new_tree``, and how
    (``PATCHED``, ``PATCHED_OTHERS``); ``None`` when fleet.yaml changed (it
    says which files are read), or the result could differ from a whole read
    (see ``patch_fleet``). One ``git diff-tree``; new files are read and parsed
    here. When only jobs-only files changed, on both sides, their jobs are
    patched in (``patch_fleet``). Else the other files (the quota tree,
    clusters, policies, templates, ...: a few, next to the job files) are all
    read again, and the jobs-only files' jobs patched in (``patch_fleet_others``)."""
    if tree == new_tree:
        return before, PATCHED
    try:
        changed = repo.changed_files(tree, new_tree)
    except GitError:
        return None
    changes: list[tuple[str, str, JobEntry | None, str, JobEntry | None]] = []
    # (whether spec.exclude leaves the fleet without a cluster, a quota tree or a policy
    # depends on the files it leaves out, and, when those define some, on the others:
    # a change of either is read with all the files, as that is told)
    exclude_told = bool(before.left_out)  # (a warning needs files left out that define some)
    # (and a file left out may define what the fleet has none of)
    left_out_may_tell = exclude_told or not (before.clusters and before.tree is not None
                                             and before.policies)
    parse: dict[str, str] = {}  # path -> new blob, not in the cache
    others = dict(before.other_files)  # those of new_tree, once the changes are made
    again = False  # other files changed: all of them are read again
    for path, old, new in changed:
        if path in FLEET_FILES:
            return None
        if path.startswith(TEMPLATES_DIR):
            _moved(others, path, new)
            again = True
            continue
        if excluded(path, before.exclude):
            if left_out_may_tell:
                return None
            continue  # not read
        if not is_yaml(path):
            if misnamed_yaml(path) or is_json(path):
                _moved(others, path, new)  # (not read, but told: with the other files)
                again = True
            continue  # not read
        was = cache.job_entry(old, path) if old != NO_BLOB else None
        if old != NO_BLOB and was is None:
            if before.other_files.get(path) != old:
                return None  # not a file read before
            again = True
        now = cache.job_entry(new, path) if new != NO_BLOB else None
        if new != NO_BLOB and now is None:
            parse[path] = new
        _moved(others, path, new if new != NO_BLOB and now is None else NO_BLOB)
        changes.append((path, old, was, new, now))
    blobs = repo.read_blobs(parse.values())
    parsed: dict[str, JobEntry] = {}
    for path, blob in parse.items():
        record: JobEntry = []
        if read_file(SourceFile(path, blob, blobs[blob]), FleetInputs(), [], record):
            parsed[path] = record
            cache.put_job_entry(blob, path, record)
            others.pop(path)
        else:
            again = True  # another kind of file, read with the others
    out = []
    for path, old, was, new, now in changes:
        now = parsed.get(path, now)
        out.append((path, (old, was) if was is not None else None,
                    (new, now) if now is not None else None))
    if not again:
        patched = patch_fleet(before, out)
        return (patched, PATCHED) if patched is not None else None
    if exclude_told:  # (the others read alone would not tell what spec.exclude leaves out)
        return None
    blobs.update(repo.read_blobs({blob for blob in others.values() if blob not in blobs}))
    read = read_fleet([SourceFile(path, blob, blobs[blob]) for path, blob in others.items()],
                      last_good=last_good)
    patched = patch_fleet_others(before, out, read)
    return (patched, PATCHED_OTHERS) if patched is not None else None


LAST_GOOD_DEPTH = 32  # state commits searched for a file's last good version
# how a shallow clone gets the history it lacks
FETCH_WHOLE = "git fetch --unshallow; on CI, a checkout of the whole history: fetch-depth: 0"


def earlier_versions(repo: FleetRepo, state: str | None,
                     source_rev: str | None = None, *, committed: bool = False
                     ) -> LastGood | None:
    """``read_fleet``'s ``last_good``: a file's versions, newest first, each
    once and none the same as the file's blob now: first those of the source's
    commits (on ``source_rev``'s first parents, ``git log --follow``, at most
    ``LAST_GOOD_DEPTH``: a commit that changed no decision made no state
    commit, and its version may be the one a reconcile since read), then
    those of the source trees the state commits were made from
    (``Fleet-Source-Tree``), from the state ``state`` back along its first
    parents (at most ``LAST_GOOD_DEPTH`` each); followed back across renames
    (each tree against the next newer one, the newest against
    ``source_rev``'s, as ``git diff -M`` finds them). Read as they are asked for.

    With no state (a first reconcile, a check of a fleet that has none), those
    of the source's commits alone (``_SourceVersions``): the first reconcile
    goes on with the version the next would, which finds them too. Where a
    shallow clone's history ends before one, a reconcile whose decisions are
    ``committed`` stops; a check goes on, with a warning."""
    if state is None:
        return _SourceVersions(repo, source_rev, committed) if source_rev is not None else None
    return _EarlierVersions(repo, state, source_rev)


def _source_blobs(repo: FleetRepo, rev: str, path: str,
                  commits: list[str] | None = None) -> Iterator[str]:
    """The blobs of ``path`` in the commits on ``rev``'s first parents that
    changed it, newest first (at most ``LAST_GOOD_DEPTH``), followed back across
    renames; each commit is added to ``commits``. Not across a copy: a file
    made as a copy of another that stays (a new cluster's file from an old
    one's) has no version before it, and the other file's is no last good
    version of it.

    Read from the changes of every file, listed once for all the files asked
    of ``rev`` (``_changes``), where its history is no longer than
    ``CHANGES_LISTED``: a fleet with many files that never build (patches, a
    folder of broken files) walked its whole history once for each of them."""
    asked = _ASKED.setdefault((str(repo.git_dir), rev), set())
    asked.add(path)
    index = _changes(repo, rev) if len(asked) > WALKED_ALONE else None
    if index is None:
        yield from _followed_blobs(repo, rev, path, commits)
        return
    name, older_than, found = path, -1, 0
    while found < LAST_GOOD_DEPTH:
        renamed = None
        for at, commit, old in index.get(name, ()):
            if at <= older_than:
                continue
            found += 1
            if commits is not None:
                commits.append(commit)
            got = repo.blob_of(commit, name)
            if got is not None:
                yield got
            if old is not None:  # (renamed from ``old`` in that commit: on with it)
                renamed = (old, at)
                break
            if found >= LAST_GOOD_DEPTH:
                return
        if renamed is None:
            return
        name, older_than = renamed


CHANGES_LISTED = 20_000  # commits whose changes are listed at once (see _source_blobs)
# files whose history is walked alone before the changes of all are listed: a listing
# of a long history costs a few walks of one file (a fleet with a broken file or two)
WALKED_ALONE = 8
_ASKED: dict[tuple[str, str], set[str]] = {}  # (repository, revision) -> the paths asked
# (repository, commit) -> its first parents' changes (``_changes``): the last listed
_LISTED: list[tuple[tuple[str, str], dict[str, list[tuple[int, str, str | None]]] | None]] = []


def _changes(repo: FleetRepo, rev: str) -> dict[str, list[tuple[int, str, str | None]]] | None:
    """Path -> (its place, newest 0; the commit; the name it was renamed from
    there, or None) of each commit on ``rev``'s first parents that changed it,
    newest first, as ``git log -M`` finds the renames; None when the history
    is longer than ``CHANGES_LISTED`` commits (each path's is walked alone)."""
    sha = repo.resolve(rev)
    if sha is None:
        return None
    key = (str(repo.git_dir), sha)
    for listed_for, index in _LISTED:
        if listed_for == key:
            return index
    try:
        out = repo.run("log", "--first-parent", "--diff-merges=first-parent", "-M", "-z",
                       "--name-status", "--format=%x1e%H",
                       f"--max-count={CHANGES_LISTED + 1}", sha, "--"
                       ).decode("utf-8", "surrogateescape")
    except GitError:  # (a git before 2.31, without --diff-merges: each walked alone)
        out = "\x1e" * (CHANGES_LISTED + 2)
    chunks = out.split("\x1e")[1:]
    got: dict[str, list[tuple[int, str, str | None]]] | None = None
    if len(chunks) <= CHANGES_LISTED:
        got = {}
        for at, chunk in enumerate(chunks):
            fields = chunk.split("\0")
            commit = fields[0].strip()
            i = 1
            while i < len(fields):
                status = fields[i].strip()
                if not status:
                    i += 1
                    continue
                if status[0] in "RC":
                    old, new = fields[i + 1], fields[i + 2]
                    got.setdefault(new, []).append((at, commit, old if status[0] == "R"
                                                    else None))
                    if status[0] == "R":
                        got.setdefault(old, []).append((at, commit, None))
                    i += 3
                else:
                    got.setdefault(fields[i + 1], []).append((at, commit, None))
                    i += 2
    _LISTED[:] = [(key, got)]
    return got


def _followed_blobs(repo: FleetRepo, rev: str, path: str,
                    commits: list[str] | None = None) -> Iterator[str]:
    """``_source_blobs`` of one path, walked alone (``git log --follow``),
    where the history is too long to list at once."""
    # (-z: each name as it is; without it, git quotes a name that is not UTF-8)
    out = repo.run("log", "--first-parent", "--follow", "-z",
                   f"--max-count={LAST_GOOD_DEPTH}", "--format=%x1e%H", "--name-only",
                   rev, "--", path, check=False).decode("utf-8", "surrogateescape")
    newer: tuple[str, str] | None = None  # (the commit listed before, its name there)
    for entry in out.split("\x1e")[1:]:
        commit, _, names = entry.partition("\0")
        commit, name = commit.strip(), names.lstrip("\n").split("\0")[0] or path
        if newer is not None and name != newer[1] and repo.blob_of(newer[0], name) is not None:
            return  # (the commit that made the newer name kept this one: a copy)
        newer = (commit, name)
        if commits is not None:
            commits.append(commit)
        got = repo.blob_of(commit, name)
        if got is not None:
            yield got


class _SourceVersions:
    """``earlier_versions`` of a fleet with no state: a file's versions in the
    source's own commits (``_source_blobs``). It knows no source tree a state
    was made from, so it is no ``History``: an object two files define is
    neither's, as it is without one. ``cut``: the files none of whose
    versions here builds, whose history this shallow clone cuts short (path
    -> why, which ``read_fleet`` tells); unless its decisions are to be
    ``committed``: then a state a clone of the whole history would not make
    is refused (made, it would be up to date there too, with no push)."""

    def __init__(self, repo: FleetRepo, source_rev: str, committed: bool = False) -> None:
        self.repo, self.source_rev, self.committed = repo, source_rev, committed
        self.cut: dict[str, str] = {}

    def __call__(self, path: str, blob: str, /) -> Iterator[SourceFile]:
        seen, commits = {blob}, list[str]()
        for got in _source_blobs(self.repo, self.source_rev, path, commits):
            if got not in seen:
                seen.add(got)
                yield SourceFile(path, got, self.repo.read_blobs([got])[got])
        # (asked for one more: none of those is good) where the file's history
        # ends at a shallow clone's edge, the version that is may be beyond it
        if commits and commits[-1] in shallow_commits(self.repo):
            if self.committed:
                raise GitError(
                    f"{shown_path(path)} is broken and its last good version may be in the "
                    f"source's earlier commits, which this shallow clone lacks (it has none "
                    f"before {commits[-1][:12]}): fetch them ({FETCH_WHOLE}) and run again")
            self.cut[path] = (
                f"{CUT_SHORT} {commits[-1][:12]}, before any "
                f"version of it that builds: the fleet goes on with it as it is, where the "
                f"whole history may hold the last good version a clone of it would go on "
                f"with; fetch it ({FETCH_WHOLE})")


class _EarlierVersions:
    """``earlier_versions``: a ``History`` of the state's source trees."""

    def __init__(self, repo: FleetRepo, state: str, source_rev: str | None) -> None:
        self.repo, self.state, self.source_rev = repo, state, source_rev
        self.trees: list[str] | None = None  # (read when first asked)
        self.newest: str | None = None  # the source's tree
        self.since: str | None = None  # the source commit the state was made from
        self._chunks: list[list[str]] = []  # (``_all_trees``, read so far)
        self._read = 0  # state commits read for them (or for ``trees``)
        self._further = False  # whether the state has commits before those
        self._last: str | None = None  # the last tree of them
        self._asked = "a file"  # the path asked for last (named should the trees be missing)

    def _look(self) -> list[str]:
        if self.trees is None:
            repo = self.repo
            out = repo.run("log", "--first-parent", f"--max-count={LAST_GOOD_DEPTH}",
                           "--format=%x1e%B", self.state).decode("utf-8", "replace")
            messages = out.split("\x1e")[1:]
            self.trees = [t for t in (trailers(m).get(TREE_TRAILER) for m in messages) if t]
            self._read, self._further = len(messages), len(messages) == LAST_GOOD_DEPTH
            _check_not_shallow(repo, set(self.trees) - repo.have_objects(self.trees),
                               self._asked)
            made_from = trailers(messages[0]).get(TRAILER) if messages else None
            self.since = made_from if made_from and repo.resolve(made_from) else None
            source = repo.resolve(self.source_rev) if self.source_rev else None
            self.newest = repo.commit_info(source).tree if source is not None else None
        return self.trees

    def _unreconciled(self, path: str) -> Iterator[str]:
        """The blobs of ``path`` in the source's commits, newest first (on its
        first parents: those since the state's first, then those it was made
        from and those between, which made no state commit of their own; a
        version read as the last good one by a reconcile that committed must
        be found again by the next, with or without a cache)."""
        self._look()
        if not self.source_rev or not self.since:
            return
        yield from _source_blobs(self.repo, self.source_rev, path)

    def _renamed_from(self, tree: str, newer: str, name: str) -> str | None:
        return next((old for old, new in _renames(self.repo, tree, newer) if new == name),
                    None)

    def _each(self, path: str, chunks: Iterable[list[str]] | None = None
              ) -> Iterator[str | None]:
        """``path``'s blob in each tree (those of ``_look``, or of ``chunks``),
        newest first, followed across renames; a chunk's asked at once."""
        name, newer = path, self.newest
        for trees in [self._look()] if chunks is None else chunks:
            start = 0
            while start < len(trees):
                asked, start = trees[start:], len(trees)
                for i, (tree, got) in enumerate(zip(asked, self.repo.blobs_in(asked, name),
                                                    strict=True)):
                    if got is None and newer is not None:
                        old = self._renamed_from(tree, newer, name)
                        if old is not None:  # the rest of the chunk by its old name
                            name, got = old, self.repo.blob_of(tree, old)
                            start = len(trees) - len(asked) + i + 1
                    newer = tree
                    yield got
                    if start < len(trees):
                        break

    def _all_trees(self) -> Iterator[list[str]]:
        """The source trees of every state commit (on first parents), newest
        first, in chunks: those of ``_look``, then further back, each chunk as
        long as those before it together, read when the one before is used up
        (and kept: each file asked walks the same). A tree the commit after
        had too is left out (a report's commit is made from the same)."""
        index = 0
        while index < len(self._chunks) or self._next_chunk():
            yield self._chunks[index]
            index += 1

    def _next_chunk(self) -> bool:
        """Read the next chunk of ``_all_trees``; False when there is none."""
        if not self._chunks:
            trees = self._look()
        elif not self._further:
            return False
        else:
            count = self._read  # (as many again as read so far)
            out = self.repo.run("log", "--first-parent", f"--skip={self._read}",
                                f"--max-count={count}", "--format=%x1e%B", self.state
                                ).decode("utf-8", "replace")
            messages = out.split("\x1e")[1:]
            self._read += count
            self._further = len(messages) == count
            trees = [t for t in (trailers(m).get(TREE_TRAILER) for m in messages) if t]
        chunk = []
        for tree in trees:
            if tree != self._last:
                chunk.append(tree)
            self._last = tree
        self._chunks.append(chunk)
        return True

    def blobs(self, path: str, /) -> Iterator[str | None]:
        self._asked = path
        return self._each(path, self._all_trees())

    def version(self, path: str, blob: str, /) -> SourceFile:
        return SourceFile(path, blob, self.repo.read_blobs([blob])[blob])

    def __call__(self, path: str, blob: str, /) -> Iterator[SourceFile]:
        self._asked = path
        seen = {blob}
        for got in itertools.chain(self._unreconciled(path), self._each(path)):
            if got is not None and got not in seen:
                seen.add(got)
                yield SourceFile(path, got, self.repo.read_blobs([got])[got])


def _check_not_shallow(repo: FleetRepo, missing: set[str], path: str) -> None:
    """Refuse to look for a broken file's last good version in a shallow clone
    that lacks the source trees the state was made from (a CI checkout of
    depth 1): found in none, the file would count as gone, and the fleet be
    decided without it (every job told there is no quota tree, say)."""
    if missing and is_shallow(repo):
        raise GitError(f"{path} is broken and its last good version is in the source commits "
                       f"the state was made from, which this shallow clone lacks (tree "
                       f"{sorted(missing)[0][:12]}): fetch them ({FETCH_WHOLE}) and run again")


def _moved(files: dict[str, str], path: str, blob: str) -> None:
    """``files`` (path -> blob) with ``path`` now at ``blob`` (``NO_BLOB``: gone)."""
    if blob == NO_BLOB:
        files.pop(path, None)
    else:
        files[path] = blob


def _settled(repo: FleetRepo, store: JobStore, source: CommitInfo, state: CommitInfo | None,
             prior: dict[JobKey, PriorPlacement],
             read_before: tuple[str, FleetInputs] | None = None,
             inputs: FleetInputs | None = None) -> frozenset[JobKey]:
    """The jobs the state queued whose inputs did not change (see
    ``CycleInput.settled``), when nothing but jobs-only files changed since the
    source the state was made from, or those and the quota tree's max values
    (``_max_changed``: then the queued jobs of the quotas below a max that
    changed are not settled); else none. One ``git diff-tree``."""
    if state is None or not prior or not isinstance(store, Cache):
        return frozenset()
    found = trailers(state.message)
    old_tree = found.get(TREE_TRAILER)
    if not old_tree or found.get(FORMAT_TRAILER) != STATE_FORMAT:
        return frozenset()
    try:
        changes = repo.changed_files(old_tree, source.tree)
    except GitError:  # the state was made elsewhere, from a source not here
        return frozenset()
    changed = set()
    others = set()  # files read that are not jobs-only
    for path, old, new in changes:
        if not (is_yaml(path) or path.startswith("templates/")):
            continue  # not read
        for blob in (old, new):
            if blob != NO_BLOB and store.job_entry(blob, path) is None:
                others.add(path)  # not a jobs-only file: anything may have changed
        changed.add(path)
    below: tuple[str, ...] = ()
    if others:
        # what the cycle read from the tree the state was made from: the fleet
        # read last, or else what the cache kept when that state was committed
        before = cycle_read(read_before[1]) if read_before is not None \
            and read_before[0] == old_tree else store.state_inputs(old_tree)
        got = _max_changed(before, inputs, others) \
            if before is not None and inputs is not None else None
        if got is None:
            return frozenset()
        below = tuple(f"{quota}/" for quota in got)
    return frozenset(k for k, p in prior.items() if p.phase is Phase.QUEUED
                     and p.path not in changed
                     and not (below and f"{p.quota or ''}/".startswith(below)))


# What the cycle reads of a fleet (``CycleInput``), but for its jobs and quota tree.
_CYCLE_INPUTS = ("settings", "policies", "clusters", "priority_classes", "default_priority",
                 "workload_priority_classes")


def cycle_read(inputs: FleetInputs) -> dict[str, Any]:
    """What the cycle reads of a fleet but for its jobs: its quota tree, and the
    rest (``_CYCLE_INPUTS``)."""
    return {"tree": inputs.tree, **{name: getattr(inputs, name) for name in _CYCLE_INPUTS}}


def _max_changed(before: dict[str, Any], now: FleetInputs, files: set[str]
                 ) -> list[str] | None:
    """The quotas whose max changed, when ``files`` (the files changed since
    ``before`` was read, but for jobs-only ones: a ``cycle_read``) are the
    quota tree's file, and the tree and every other input the cycle reads are
    as they were but for max values (of the same resources); else ``None``.

    A queued job of a quota on no such max's path then failed last time on the
    limits it meets now, on the same snapshot: nothing helps it until the
    cycle admits or evicts, as after a push of jobs. (A changed min is not
    such a change: it moves what may be borrowed and reclaimed anywhere.)
    """
    old, new = before.get("tree"), now.tree
    if not isinstance(old, QuotaTree) or new is None or files != {new.path}:
        return None
    if any(before.get(name) != getattr(now, name) for name in _CYCLE_INPUTS):
        return None
    return max_changed(old, new)


def as_it_was(repo: FleetRepo, decisions: Iterable[Decision], inputs: FleetInputs,
              previous: Mapping[str, str]) -> dict[JobKey, AsItWas]:
    """What each job held on a cluster as it was, whose source is not read now
    (kept on its last good placement; an ended job or an old copy whose file
    broke), was sent with: read from its manifest as the state rendered it
    (``previous``: the state's paths and blob ids)."""
    rendered: dict[JobKey, str] = {}
    for d in decisions:
        if (d.cluster is not None or d.kept_on) and (d.kept or d.key not in inputs.jobs):
            for where in (d.cluster, *d.copies, *d.kept_on):
                blob = previous.get(job_file(d.key, where)) if where is not None else None
                if blob is not None:
                    rendered[d.key] = blob
                    break
    if not rendered:
        return {}
    out: dict[JobKey, AsItWas] = {}
    blobs = repo.read_blobs(rendered.values())
    for key, blob in rendered.items():
        was = sent_with(blobs[blob])
        if was is not None:
            out[key] = was
    return out


def _still_placed(decisions: Iterable[Decision], prior: Mapping[JobKey, PriorPlacement]
                  ) -> Iterator[tuple[Decision, list[str]]]:
    """Each job admitted now, on its last good version, that the state
    admitted too, with the clusters it was placed on then and still is (its
    cluster, and a Duplicated job's copies): where it runs as it was sent."""
    for d in decisions:
        if d.phase is not Phase.ADMITTED or d.kept:
            continue
        was = prior.get(d.key)
        if was is None or was.phase is not Phase.ADMITTED:
            continue
        names = [name for name in (d.cluster, *d.copies)
                 if name is not None and (name == was.cluster or name in was.copies)]
        if names:
            yield d, names


def sent_to_kueue(repo: FleetRepo, decisions: Iterable[Decision], inputs: FleetInputs,
                  prior: Mapping[JobKey, PriorPlacement], previous: Mapping[str, str],
                  reuse: Mapping[str, tuple[str, str]]
                  ) -> tuple[dict[str, Sent], list[Problem]]:
    """Job file -> what its job, running on that kueue cluster, was sent with
    that Kueue refuses to change while it runs, where its source says
    otherwise now (``Sent``): the LocalQueue it runs under (its quota renamed,
    or its namespace moved to another), and the labels of
    ``KEPT_WHILE_RUNNING`` (edited in its file). It keeps them until it runs
    anew (placed again after it was preempted or failed over), and each label
    kept is a warning at its line. Read from the state's job files
    (``previous``: paths and blob ids), but for those whose inputs
    (``reuse``) say what the source says now.

    The cycle orders the job, and picks victims, by the WorkloadPriorityClass
    its source names now: fleetq preempts by taking a job off its cluster,
    which needs no Kueue's leave."""
    kueue = {c.name for c in inputs.clusters if c.gang_dialect == "kueue"}
    if not kueue or not prior:
        return {}, []
    # job file -> (its blob, its job, the queue now, the kept labels now)
    wanted: dict[str, tuple[str, Job, str | None, dict[str, str]]] = {}
    for d, names in _still_placed(decisions, prior):
        source = inputs.jobs.get(d.key)
        if d.quota is None or source is None:
            continue
        now = name_of_quota(d.quota, inputs.tree)
        labels = source.job.label_map
        kept_now = {name: labels[name] for name in KEPT_WHILE_RUNNING if name in labels}
        for name in names:
            if name not in kueue:
                continue
            path = job_file(d.key, name)
            entry = reuse.get(path)
            blob = previous.get(path)
            if blob is not None and (entry is None or queue_sent(entry[0]) != (now or "")
                                     or labels_sent(entry[0]) != kept_now):
                wanted[path] = (blob, source.job, now, kept_now)
    if not wanted:
        return {}, []
    blobs = repo.read_blobs({blob for blob, *_ in wanted.values()})
    out: dict[str, Sent] = {}
    told: list[Problem] = []
    for path, (blob, job, now, kept_now) in sorted(wanted.items()):
        labels_then = metadata_labels(blobs.get(blob, b""))
        if labels_then is None:  # (not fleetq's rendering: sent as the source says)
            continue
        queue = labels_then.get(KUEUE_QUEUE)
        queue = queue if now is not None and queue is not None and queue != now else None
        kept = tuple((name, labels_then.get(name)) for name in KEPT_WHILE_RUNNING
                     if labels_then.get(name) != kept_now.get(name))
        if queue is None and not kept:
            continue
        out[path] = Sent(queue, kept)
        cluster = path.split("/", 2)[1]
        for name, value in kept:
            told.append(_kept_while_running(job, name, value, kept_now.get(name), cluster))
    return out, told


def sent_specs(repo: FleetRepo, decisions: Iterable[Decision], inputs: FleetInputs,
               prior: Mapping[JobKey, PriorPlacement], previous: Mapping[str, str],
               reuse: Mapping[str, tuple[str, str]], overlays: Overlays,
               read: SentRead | None = None) -> dict[str, Sent]:
    """Job file -> the fields of ``IMMUTABLE_SPEC`` its batch Job, running on
    that cluster, was sent with (``Sent.spec``), and on a kueue cluster what
    Kueue's Job webhook refuses to change of it while it runs
    (``Sent.kueue_job``: whether its completions follow its parallelism, its
    parallelism under partial admission): the render keeps those its source
    says otherwise now, until it runs anew (placed again after it was
    preempted or failed over, or under a new name), each a warning at its
    line. Read from the state's job files (``previous``: paths and blob ids),
    but for those whose inputs (``reuse``) say they were rendered from the
    same inputs, keeping nothing; those ``read`` holds are not read again."""
    if not prior:
        return {}
    clusters = {c.name: c for c in inputs.clusters}
    wanted: dict[str, tuple[str, bool]] = {}  # job file -> its blob, on a kueue cluster
    for d, names in _still_placed(decisions, prior):
        if (d.api_version, d.key.kind) != (BatchJobKind.api_version, BatchJobKind.kind):
            continue
        quota_name = name_of_quota(d.quota, inputs.tree)
        for name in names:
            cluster = clusters.get(name)
            if cluster is None:
                continue
            path = job_file(d.key, cluster.name)
            entry = reuse.get(path)
            blob = previous.get(path)
            if blob is not None and (entry is None or spec_kept(entry[0]) or not entry[
                    0].startswith(rendered_from(d, cluster, quota_name, overlays) + "\0")):
                wanted[path] = (blob, cluster.gang_dialect == "kueue")
    if not wanted:
        return {}
    read = read_sent(repo, wanted.values(), {} if read is None else read)
    out: dict[str, Sent] = {}
    for path, was_read in sorted(wanted.items()):
        was = read[was_read]
        if was is not None:  # (else not fleetq's rendering: sent as the source says)
            out[path] = was
    return out


# (a job file's blob id, whether it is on a kueue cluster) -> what it was sent with
# (``spec_sent``; None: no Job of fleetq's rendering)
SentRead = dict[tuple[str, bool], Sent | None]


def read_sent(repo: FleetRepo, wanted: Iterable[tuple[str, bool]], read: SentRead
              ) -> SentRead:
    """``read``, with ``spec_sent`` of each job file of ``wanted`` (its blob
    id, on a kueue cluster or not) it did not hold, read in one batch."""
    missing = {w for w in wanted if w not in read}
    if missing:
        blobs = repo.read_blobs({blob for blob, _ in missing})
        for blob, kueue in sorted(missing):
            read[(blob, kueue)] = spec_sent(blobs.get(blob, b""), kueue)
    return read


def running_forms(repo: FleetRepo, inputs: FleetInputs, prior: Mapping[JobKey, PriorPlacement],
                  entries: Callable[[], Mapping[str, str]], read: SentRead | None = None,
                  started: dict[JobKey, str] | None = None) -> dict[JobKey, Job]:
    """Each batch Job the state admitted whose source now counts other pods
    or requests than it was decided with, where what it was sent with and
    keeps while it runs (``keep_spec``: its pod template, its completions;
    ``keep_for_kueue``: its parallelism under Kueue's partial admission)
    counts otherwise than its source: the job as it runs, its pod sets and
    requests those of its source with what it keeps (an overlay changes
    neither), so that the cycle counts what runs on the cluster, not what
    its source asks for and the cluster will not take until it runs anew.
    Read from its job file on the cluster the state placed it on
    (``entries``: the state's paths and blob ids, asked for only when some
    job may run otherwise), kept in ``read`` for the render (``sent_specs``).

    So is each job of another kind the state admitted whose source asks its
    pods for other requests than those it runs with: its operator makes no
    pod anew when its pod templates change, so its running pods hold what
    they started with, and the pods it makes anew (more replicas, a pod that
    failed) what its source asks for now. It is counted with, for each pod,
    the larger of the two (``running_anew``), and ``started`` gets the text
    of what it is counted with, for the render to send in ``STARTED_WITH``.
    """
    clusters = {c.name: c for c in inputs.clusters}
    wanted: dict[JobKey, tuple[str, JobSource, bool]] = {}  # (its file, its source, kueue)
    others: dict[JobKey, tuple[str, JobSource]] = {}  # (the same, of other kinds)
    for key, was in prior.items():
        if was.phase is not Phase.ADMITTED:
            continue
        source = inputs.jobs.get(key)
        cluster = clusters.get(was.cluster or "")
        if source is None or cluster is None:
            continue
        if counted_as_decided(source.job, was):
            continue  # (what it keeps counts alike)
        if key.kind != BatchJobKind.kind or was.api_version != BatchJobKind.api_version:
            if started is not None and {p.name for p in was.pod_sets} == {
                    p.name for p in source.job.pod_sets}:
                others[key] = (job_file(key, cluster.name), source)
            continue
        wanted[key] = (job_file(key, cluster.name), source, cluster.gang_dialect == "kueue")
    if not wanted and not others:
        return {}
    files = entries()
    out: dict[JobKey, Job] = {}
    if others and started is not None:
        out.update(running_anew(repo, {key: (files[path], source) for key, (path, source)
                                       in sorted(others.items()) if path in files}, started))
    if not wanted:
        return out
    found = {key: ((files[path], kueue), source) for key, (path, source, kueue)
             in sorted(wanted.items()) if path in files}
    read = read_sent(repo, (file for file, _ in found.values()), {} if read is None else read)
    for key, (file, source) in found.items():
        sent = read[file]
        if sent is None or sent.spec is None:  # (not fleetq's rendering: as its source says)
            continue
        obj = source.load_manifest()
        kept = keep_for_kueue(obj, sent.kueue_job) if sent.kueue_job is not None else []
        if not keep_spec(obj, sent.spec) and not kept:
            continue
        job = source.job
        try:
            runs = build_job(obj, BatchJobKind(), path=job.path, index=source.index,
                             line=job.line, blob=job.blob).job
        except ManifestError:
            continue  # (what it was sent with does not read now: counted as its source says)
        if runs.pod_sets != job.pod_sets or runs.requests != job.requests:
            out[key] = dataclasses.replace(job, pod_sets=runs.pod_sets, requests=runs.requests)
    return out


def pods_held(decisions: Iterable[Decision], prior: Mapping[JobKey, PriorPlacement],
              started: Mapping[JobKey, str], inputs: FleetInputs,
              problems: list[Problem]) -> dict[str, str]:
    """Job file -> ``STARTED_WITH`` of each job counted with what its running
    pods hold (``running_anew``) that runs on where it ran, as it was admitted
    (placed anew, its pods are made anew); a warning for each, at its name."""
    out: dict[str, str] = {}
    for d in decisions:
        text = started.get(d.key)
        was = prior.get(d.key)
        if text is None or was is None or d.phase is not Phase.ADMITTED \
                or (d.cluster, d.admitted_at) != (was.cluster, was.admitted_at) \
                or d.cluster is None:
            continue
        out[job_file(d.key, d.cluster)] = text
        source = inputs.jobs.get(d.key)
        if source is not None:
            job = source.job
            problems.append(Problem(job.path, job.line_of(NAME_AT), (
                f"{d.key.kind} {d.key.namespace}/{d.key.name} runs on {d.cluster} with pods "
                f"that hold more than its source asks for now: its operator makes no pod "
                f"anew when its pod templates change, so they keep what they started with "
                f"until they are made anew. fleetq counts each pod as the larger of the two "
                f"({started_counts(text)}) while it runs there; to free the room now, delete "
                f"the job and push it again"), "warning"))
    return out


def started_counts(text: str) -> str:
    """``STARTED_WITH``'s text as a warning says it: pod set: requests each."""
    try:
        sets = json.loads(text)
        return "; ".join(f"{name}: " + ", ".join(f"{r} {q}" for r, q in per_pod.items())
                         for name, per_pod in sets.items())
    except (ValueError, AttributeError):
        return text


def running_anew(repo: FleetRepo, files: Mapping[JobKey, tuple[str, JobSource]],
                 started: dict[JobKey, str]) -> dict[JobKey, Job]:
    """Of jobs of kinds other than a batch Job, each with the blob id of its
    job file on the cluster it runs on and its source: each whose pods hold,
    there, more of some request than its source asks for now, counted with
    the larger of each (see ``running_forms``), and its ``started`` text."""
    blobs = repo.read_blobs({blob for blob, _ in files.values()})
    out: dict[JobKey, Job] = {}
    for key, (blob, source) in files.items():
        held = pods_started_with(blobs.get(blob, b""))
        if held is None:
            continue  # (not fleetq's rendering: counted as its source says)
        job = source.job
        pod_sets = tuple(dataclasses.replace(p, per_pod=pointwise_max(
            p.per_pod, held.get(p.name, {}))) for p in job.pod_sets)
        if all(a.per_pod == b.per_pod for a, b in zip(pod_sets, job.pod_sets, strict=True)):
            continue  # (it asks for as much as they hold, or more: counted so)
        requests: Resources = {}
        for p in pod_sets:
            add_into(requests, p.per_pod, p.replicas)
        requests.update({r: v for r, v in job.requests.items() if r in (PODS, MAX_JOBS)})
        out[key] = dataclasses.replace(job, pod_sets=pod_sets, requests={
            r: v for r, v in sorted(requests.items()) if v})
        started[key] = started_text({p.name: p.per_pod for p in pod_sets})
    return out


# the field of a job (``Job.field_lines``) each label kept while it runs is at
_KEPT_AT = {MAX_EXEC_TIME_LABEL: MAX_EXEC_TIME_AT}


def _kept_while_running(job: Job, name: str, then: str | None, now: str | None,
                        cluster: str) -> Problem:
    """The warning that ``job``'s label ``name``, ``now`` in its source, is
    sent to ``cluster`` as it was sent (``then``) while the job runs there."""
    return kept_by_kueue(job, f"label {name}", _KEPT_AT.get(name, WORKLOAD_PRIORITY_CLASS_AT),
                         quoted(now), quoted(then), cluster)


def _manifest_of(source: JobSource) -> Manifest | None:
    return source.load_manifest() if source.manifest else None


def describe_changes(prior: dict[JobKey, PriorPlacement], decisions: list[Decision],
                     outcomes: Outcomes | None = None,
                     moved: Mapping[JobKey, str] | None = None) -> list[str]:
    """One line per job whose phase, cluster or quota changed, for the commit message;
    ``outcomes``: why each job that fails over does, and what becomes of the
    objects of those that end; ``moved``: why a job that ran left its place
    (``CycleResult.moved``)."""
    failovers = outcomes.failovers if outcomes is not None else {}
    ended_here = outcomes.ended_here if outcomes is not None else {}
    purged = outcomes.purged if outcomes is not None else {}
    lines = []
    found = 0  # decisions of jobs the prior has (all of them: none was deleted)
    for d in decisions:
        before = prior.get(d.key)
        if before is not None:
            found += 1
            if before is d or (before.phase is d.phase and before.cluster == d.cluster
                               and before.kept_on == d.kept_on):
                if before is not d and before.quota != d.quota and before.quota and d.quota:
                    # (its namespace moved to another quota: its labels on the cluster change)
                    lines.append(f"change the quota of {d.key.kind} {d.key.namespace}/"
                                 f"{d.key.name}: {before.quota} -> {d.quota}"
                                 + (f" (on {d.cluster})" if d.phase is Phase.ADMITTED else ""))
                elif d.phase is Phase.ADMITTED and (why := (moved or {}).get(d.key)):
                    # (placed again on the same cluster: its node went)
                    lines.append(f"place {d.key.kind} {d.key.namespace}/{d.key.name} again on "
                                 f"{d.cluster}: {why}")
                continue
        name = f"{d.key.kind} {d.key.namespace}/{d.key.name}"
        if before is not None and before.kept_on and not d.kept_on:
            lines.append(f"purge {name} from {', '.join(before.kept_on)}: "
                         f"{purged.get(d.key, 'its new placement runs')}")
            if before.phase is d.phase and before.cluster == d.cluster:
                continue
        if d.phase in (Phase.FINISHED, Phase.FAILED):
            stays = ended_here.get(d.key)
            where = ", ".join(c for c in (d.cluster, *d.copies) if c)  # (and its copies')
            lines.append(f"{d.phase.value.lower()} {name} on {where}"
                         + (f" ({stays})" if stays else ""))
        elif d.failed_on and before is not None and before.phase is Phase.ADMITTED \
                and before.cluster in d.failed_on:
            to = f" -> {d.cluster}" if d.phase is Phase.ADMITTED else f": {d.phase.value.lower()}"
            why = failovers.get(d.key)
            if why and d.phase is not Phase.ADMITTED:
                why = not_placed(why)
            lines.append(f"fail over {name} from {before.cluster}{to}"
                         + (f": {why}" if why else ""))
        elif d.phase is Phase.ADMITTED:
            pods = ", ".join(f"{p.name} {p.replicas}" for p in d.pod_sets)
            why = (moved or {}).get(d.key)
            if not why and before is not None and before.phase is Phase.ADMITTED \
                    and d.preempted_by and d.preemptions > before.preemptions:
                why = f"preempted on {before.cluster} by {d.preempted_by}"
            verb = (f"move {name} from {before.cluster}"
                    if before is not None and before.phase is Phase.ADMITTED else f"admit {name}")
            lines.append(f"{verb} -> {d.cluster} ({pods})" + (f": {why}" if why else ""))
        elif d.preempted_by and before is not None and before.phase is Phase.ADMITTED:
            lines.append(f"preempt {name} from {before.cluster} (by {d.preempted_by})")
        elif before is not None and before.phase is Phase.ADMITTED:
            why = (moved or {}).get(d.key)
            lines.append(f"remove {name} from {before.cluster}: {d.phase.value.lower()}"
                         + (f"; {why}" if why else ""))
        else:
            lines.append(f"{d.phase.value.lower()} {name}")
    if found < len(prior):
        seen = {d.key for d in decisions}
        for key in sorted(k for k in prior if k not in seen):
            was = prior[key]
            where = f" from {was.cluster}" if was.cluster else ""
            if was.kept_on:
                where += (f" (and its old copy on {', '.join(was.kept_on)})" if was.cluster
                          else f" from {', '.join(was.kept_on)} (its old copy)")
            lines.append(f"delete {key.kind} {key.namespace}/{key.name}{where}")
    return lines


def identity(inputs: FleetInputs | GitSettings) -> Identity:
    git = inputs.git if isinstance(inputs, FleetInputs) else inputs
    name = os.environ.get("GIT_COMMITTER_NAME") or git.committer_name
    email = os.environ.get("GIT_COMMITTER_EMAIL") or git.committer_email
    for variable, value in (("GIT_COMMITTER_NAME", name), ("GIT_COMMITTER_EMAIL", email)):
        why = identity_mistake(value) if value else None
        if why is not None:  # (fleet.yaml's are checked as it is read: the variable's)
            raise GitError(f"{variable} {why}, or unset it")
    return Identity(name or DEFAULT_IDENTITY.name, email or DEFAULT_IDENTITY.email)


# The changes the default commit message lists, the rest counted: a first
# reconcile of 100,000 jobs would otherwise write a message of 100,000 lines
# (4 MB), which every git log, every Argo CD or Flux view of the state branch and
# every next reconcile would read. placements.yaml has every decision.
CHANGE_LIMIT = 1000


def commit_message(computed: Computed, overlays: Overlays, tree: str | None = None) -> str:
    """The state commit's message of ``computed``, its trailers last (``tree``:
    the state tree it commits, its ``STATE_TREE_TRAILER``)."""
    counts = {p.value: 0 for p in Phase}
    for d in computed.result.decisions:
        counts[d.phase.value] += 1
    context = {"source": {"sha": computed.source.sha, "short": computed.source.sha[:12]},
               "counts": counts, "changes": computed.changes, "change_limit": CHANGE_LIMIT,
               "decisions": computed.result.decisions}
    message = overlays.commit_message(context, computed.problems).rstrip()
    return (f"{message}\n\n{TREE_TRAILER}: {computed.source.tree}\n"
            f"{FORMAT_TRAILER}: {STATE_FORMAT}\n"
            f"{OBSERVED_TRAILER}: {computed.observed or NO_OBSERVATIONS}\n"
            + (f"{DUE_TRAILER}: {computed.due}\n" if computed.due is not None else "")
            + (f"{STATE_TREE_TRAILER}: {tree}\n" if tree is not None else "")
            + f"{TRAILER}: {computed.source.sha}\n")


def trailers(message: str) -> dict[str, str]:
    """The ``Fleet-*`` trailers among the last lines of a state commit's message
    (only those are split: a message may list 100,000 changes)."""
    out = {}
    for line in message.rstrip().rsplit("\n", 8)[-8:]:
        name, sep, value = line.partition(": ")
        if sep and name.startswith("Fleet-"):
            out[name] = value.strip()
    return out


def up_to_date(repo: FleetRepo, source_rev: str, base: str | None,
               now: dt.datetime | None = None, cache: Cache | None = None
               ) -> CommitInfo | None:
    """The source commit, when the state at ``base`` was made from the same tree by
    the same format, or the ``cache`` knows that deciding this tree from
    ``base`` left it as it was (``Cache.note_unchanged``), and nothing it holds
    is due by ``now`` (``due``): reconciling again would change nothing (the
    state is a fixed point), so nothing needs computing."""
    if base is None:
        return None
    sha = repo.resolve(source_rev)
    if sha is None:
        return None
    source = repo.commit_info(sha)
    found = trailers(repo.commit_info(base).message)
    if not (found.get(TREE_TRAILER) == source.tree and found.get(FORMAT_TRAILER) == STATE_FORMAT
            and found.get(OBSERVED_TRAILER, NO_OBSERVATIONS) == observed_tree(repo, base)) \
            and (cache is None or cache.unchanged(base, source.tree, STATE_FORMAT) is None):
        return None
    if now is not None and (at := due(repo, base)) is not None and at <= now:
        return None
    return source


def due(repo: FleetRepo, state: str) -> dt.datetime | None:
    """When the state commit ``state`` changes with no new input (its
    ``Fleet-Due``), if it does."""
    text = trailers(repo.commit_info(state).message).get(DUE_TRAILER)
    return parse_time(text) if text else None


NO_OBSERVATIONS = "none"


def observed_id(reports: Mapping[str, str]) -> str:
    """The id git gives the ``status/`` folder of these reports (path -> blob
    id; a flat folder of files, as the state tree is written), or ``none``."""
    entries = sorted((path[len(STATUS_DIR):].encode(), sha) for path, sha in reports.items()
                     if path.startswith(STATUS_DIR))
    if not entries:
        return NO_OBSERVATIONS
    body = b"".join(b"100644 " + name + b"\0" + bytes.fromhex(sha) for name, sha in entries)
    return hashlib.sha1(b"tree %d\0" % len(body) + body).hexdigest()


def observed_tree(repo: FleetRepo, state: str) -> str:
    """The id of state commit ``state``'s ``status/`` folder (``none``)."""
    return repo.tree_id(state, STATUS_DIR.rstrip("/")) or NO_OBSERVATIONS


def state_ref(branch: str) -> str:
    return f"refs/heads/{branch}"


def reconcile(repo: FleetRepo, *, source_rev: str = "HEAD", state_branch: str | None = None,
              remote: str | None = None, now: dt.datetime | None = None,
              progress: Progress = _quiet, use_cache: bool = True,
              cache: Cache | None = None,
              later: list[Callable[[], None]] | None = None) -> Outcome:
    """Reconcile one source commit onto the state branch; retry if another writer wins.

    ``cache``: one kept across reconciles (``watch``), else the repository's is
    read afresh (unless ``use_cache`` is false). ``later``: the cache is saved
    by calling what is appended there, after the outcome is known (``watch``
    reports the round first), rather than before this returns; without it, new
    parsed jobs are saved by a forked process while the cycle runs
    (``compute``'s ``save_behind``), which has ended when this returns."""
    when = now or parse_now(None)
    branch = state_branch or settings_branch(repo, source_rev)
    check_state_branch(repo, branch, source_rev)
    if cache is None and use_cache:
        cache = Cache(repo.git_dir)
    with gc_paused(), contextlib.ExitStack() as ending:  # (gc: and while the state is written)
        if cache is not None:
            ending.callback(cache.wait_behind)
        for attempt in range(1, MAX_ATTEMPTS + 1):
            if attempt > 1 and now is None:  # (the writer that won decided later than we began)
                when = parse_now(None)
            base = repo.fetch(remote, branch) if remote else repo.resolve(state_ref(branch))
            if remote and base is not None:
                check_remote_state(repo, remote, branch, base)
                remember_remote_state(repo, remote, branch, base)
            elif remote:
                check_no_remote_state(repo, remote, branch)
            elif base is None:
                check_no_local_state(repo, branch)
            if base is None and state_branch is None:  # (fleet.yaml's: an edit renames it)
                check_no_other_state(repo, branch, source_rev, remote)
            if base is not None:
                check_not_newer(repo, branch, base)
            source = up_to_date(repo, source_rev, base, when, cache)
            newer, moved_on = (None, None) if source is not None else \
                later_than_source(repo, remote, source_rev, base)
            if source is not None or newer is not None or moved_on is not None:
                _follow_remote(repo, remote, branch, base)
                told = None
                if source is None:
                    sha = repo.resolve(source_rev)
                    source = repo.commit_info(sha) if sha is not None else None
                elif cache is not None and base is not None:
                    told = cache.unchanged(base, source.tree, STATE_FORMAT)
                return Outcome(None, None, attempt, source=source, state=base, newer=newer,
                               moved_on=moved_on, problems=told or [])
            computed = compute(repo, source_rev=source_rev, state_base=base, now=when,
                               progress=progress, cache=cache, save_behind=later is None)
            told = list(computed.problems)  # (what deciding this source tells, at any time)
            computed.problems.extend(source_lost(repo, remote, branch, base, computed.source))
            computed.problems.extend(clock_behind(repo, branch, base, when))
            if not remote:
                computed.problems.extend(set_back_here(repo, branch, base))
                computed.problems.extend(behind_remote_copies(repo, branch, base))
            progress("writing the state tree")
            tree = repo.write_tree(computed.files)
            if tree == computed.state_tree and not said_anew(repo, computed):
                _follow_remote(repo, remote, branch, base)
                if cache is not None and base is not None:
                    cache.note_unchanged(base, computed.source.tree, STATE_FORMAT, told)
                _save_cache(cache, computed, base, later)
                return Outcome(computed, None, attempt, source=computed.source, state=base)
            if remote and attempt == 1:
                computed.problems.extend(check_source_pushed(
                    repo, remote, source_rev, computed.source.sha, branch))
            message = commit_message(computed, Overlays(computed.inputs.templates),
                                     decided_tree(repo, tree))
            sha = repo.write_commit(tree=tree, parents=[base] if base else [], message=message,
                                    identity=identity(computed.inputs),
                                    when=computed.now or when)
            if not publish(repo, remote, branch, sha, base, progress, "recomputing"):
                continue
            if cache is not None:  # (told again by a reconcile that finds it up to date)
                cache.note_unchanged(sha, computed.source.tree, STATE_FORMAT, told)
            _save_cache(cache, computed, sha, later)
            return Outcome(computed, sha, attempt, source=computed.source, state=sha,
                           remote=remote)
    raise GitError(kept_moving(repo))


_COMMIT_ID = re.compile(r"\b[0-9a-f]{40}\b")


def _as_told(error: str | None) -> str | None:
    """A watch round's error as compared with the last one's: but for the
    commit ids it names (each retry writes a new state commit, which a push
    the remote refuses names)."""
    return _COMMIT_ID.sub("<commit>", error) if error is not None else None


def publish(repo: FleetRepo, remote: str | None, branch: str, sha: str, base: str | None,
            progress: Progress, then: str) -> bool:
    """Move the state branch from ``base`` to commit ``sha``: with a ``remote``,
    a push with a lease on ``base`` (then the local branch follows); else a
    compare-and-swap of the local branch. False when another writer moved it
    first (said, with what is done ``then``)."""
    if remote:
        if not repo.push_with_lease(remote, branch, sha, base):
            progress(f"state branch moved on {remote}; {then}")
            return False
        remember_remote_state(repo, remote, branch, sha)
        try:
            repo.advance_ref(state_ref(branch), sha)
        except GitError as exc:  # (the push is done: the clusters get it; this clone lags)
            raise GitError(f"pushed {sha[:12]} to {branch} on {remote}, which the clusters "
                           f"sync from; but the local {branch} stays behind: {exc} (the next "
                           f"fetch puts it right)") from exc
        return True
    if not repo.update_ref(state_ref(branch), sha, base):
        progress(f"state branch moved; {then}")
        return False
    repo.run("update-ref", written_ref(branch), sha)
    return True


def written_ref(branch: str) -> str:
    """Where a clone keeps the state fleetq last wrote on its own ``branch``
    (with no remote): a ref of fleetq's own, for ``set_back_here``."""
    return f"refs/fleetq/written/{branch}"


def set_back_here(repo: FleetRepo, branch: str, base: str | None) -> list[Problem]:
    """A warning when this clone's state branch, which fleetq writes with no
    remote, is not built on the state it last wrote there: deleted, or set
    back (git branch -f, git reset), a reconcile goes on from what is there,
    forgetting what came after (enqueue times, the jobs that finished, which
    run again, the clusters' reports); said with the state to put back."""
    last = repo.resolve(written_ref(branch))
    if last is None or last == base or (base is not None and repo.is_ancestor(last, base)):
        return []
    undo = f"put it back (git branch -f {branch} {last[:12]}) and reconcile again"
    if base is None:
        return [Problem(branch, 0, (
            f"the state branch {branch} is gone from this clone, where fleetq last wrote "
            f"{last[:12]}: this reconcile starts the state anew, forgetting what it knew "
            f"(enqueue times, the jobs that finished, which run again, the clusters' "
            f"reports); if that was not meant, {undo}"), "warning")]
    return [Problem(branch, 0, (
        f"the state branch {branch} is at {base[:12]}, which is not built on {last[:12]}, the "
        f"state fleetq last wrote here (set back: git branch -f, git reset): this reconcile "
        f"goes on from {base[:12]}, forgetting what came after; if that was not meant, "
        f"{undo}"), "warning")]


def behind_remote_copies(repo: FleetRepo, branch: str, base: str | None) -> list[Problem]:
    """A warning, for a reconcile with no remote, when a remote's copy of the
    state branch (as git last fetched it) holds states the local ``base``
    lacks: written from another clone and pushed there, they are forgotten
    here, and the commit made on the local branch will not push over them."""
    out = []
    for name, head in remote_copies(repo, branch):
        if base is None or head == base or repo.is_ancestor(head, base) \
                or not written_by_fleetq(repo, head):
            continue
        remote = name.partition("/")[0]
        out.append(Problem(branch, 0, (
            f"{name} ({head[:12]}, as git last fetched it) holds states the local {branch} "
            f"({base[:12]}) lacks: this reconcile goes on from the local one, forgetting "
            f"them, and its commit will not push there; to go on from them, reconcile with "
            f"--remote {remote}"), "warning"))
    return out


def said_anew(repo: FleetRepo, computed: Computed) -> list[str]:
    """The trailers of the state that ``computed`` would say otherwise, though
    no decision changed: then a commit says it, so that the next reconcile
    finds the state up to date. ``Fleet-Observed``: the state was decided
    without the clusters' reports it now has; ``Fleet-Due``: it says it
    changes on its own at a time it no longer does (its old copies' grace
    period ended with no change, their job deleted since, ...), and every
    reconcile from then on would decide again."""
    base = computed.state_base
    if base is None:
        return []
    found = trailers(repo.commit_info(base).message)
    return [name for name, was, now in (
        (OBSERVED_TRAILER, found.get(OBSERVED_TRAILER, NO_OBSERVATIONS),
         computed.observed or NO_OBSERVATIONS),
        (DUE_TRAILER, found.get(DUE_TRAILER), computed.due)) if was != now]


def record_reports(repo: FleetRepo, reports: Sequence[ClusterReport], *,
                   source_rev: str = "HEAD", state_branch: str | None = None,
                   remote: str | None = None, now: dt.datetime | None = None,
                   progress: Progress = _quiet
                   ) -> tuple[str, str | None, list[tuple[ClusterReport, str]],
                              list[tuple[ClusterReport, str]]]:
    """Commit the member clusters' ``reports`` (``status/`` and ``inventory/``
    files) onto the state branch, beside the state: (the branch, the new
    commit, or None when they said nothing new, the reports recorded over one
    dated ahead of this machine's clock, with its time, and the reports not
    recorded because the branch has a newer one of their cluster, with its time: a
    late report must not undo what a newer one said). The commit keeps the state's
    trailers, so the next reconcile finds the state made from the same source
    but not from these reports, and decides again. Retried, as a reconcile is,
    when another writer moves the branch first."""
    when = now or parse_now(None)
    branch = state_branch or settings_branch(repo, source_rev)
    check_state_branch(repo, branch, source_rev)
    for _ in range(MAX_ATTEMPTS):
        base = repo.fetch(remote, branch) if remote else repo.resolve(state_ref(branch))
        if remote and base is not None:
            check_remote_state(repo, remote, branch, base)
        if base is None:
            raise GitError(f"there is no state on {branch!r} yet: run fleetq reconcile first "
                           f"(reports are kept beside the state it makes)")
        info = repo.commit_info(base)
        files: dict[str, bytes | str] = {e.path: e.sha for e in repo.list_tree(base)
                                         if e.type == "blob"}
        earlier = _earlier_reports(repo, reports, files)
        older, replaced = _older_reports(reports, earlier)
        for report in reports:
            if all(report is not o for o, _ in older):
                if report.cluster in earlier:  # (what it does not list stays as it was)
                    report.carry(earlier[report.cluster])
                files.update(report.files())
        tree = repo.write_tree(files)
        if tree == info.tree:
            _follow_remote(repo, remote, branch, base)
            return branch, None, replaced, older
        kept = trailers(info.message)
        carried = "".join(f"{name}: {kept[name]}\n" for name in
                          (TREE_TRAILER, FORMAT_TRAILER, OBSERVED_TRAILER, DUE_TRAILER,
                           STATE_TREE_TRAILER, TRAILER) if name in kept)
        title = "; ".join(r.summary() for r in reports if all(r is not o for o, _ in older))
        message = f"Report {title}\n\n{carried}"
        sha = repo.write_commit(tree=tree, parents=[base], message=message,
                                identity=identity(fleet_git(repo, source_rev)),
                                when=state_clock(repo, base, when))  # (never back: see there)
        if not publish(repo, remote, branch, sha, base, progress, "trying again"):
            continue
        return branch, sha, replaced, older
    raise GitError(kept_moving(repo))


CLOCK_SKEW = dt.timedelta(minutes=5)  # a report or state dated further ahead: a wrong clock


def _earlier_reports(repo: FleetRepo, reports: Sequence[ClusterReport],
                     files: Mapping[str, bytes | str]) -> dict[str, ClusterObservation]:
    """By cluster, the report ``files`` (path -> blob id) hold of each of the
    clusters of ``reports``, when it can be read."""
    paths = {report.cluster: status_path(report.cluster) for report in reports}
    shas = {cluster: sha for cluster, path in paths.items()
            if isinstance(sha := files.get(path), str)}
    blobs = repo.read_blobs(shas.values())
    read = {cluster: read_status(paths[cluster], blobs[sha])[0] for cluster, sha in shas.items()}
    return {cluster: there for cluster, there in read.items() if there is not None}


def _older_reports(reports: Sequence[ClusterReport], earlier: Mapping[str, ClusterObservation]
                   ) -> tuple[list[tuple[ClusterReport, str]], list[tuple[ClusterReport, str]]]:
    """The ``reports`` observed before the ``earlier`` report of their cluster,
    each with that report's time. A report there dated ahead of this
    machine's clock (by more than ``CLOCK_SKEW``: the clock of whoever sent it
    was wrong) orders nothing: it would block every later report of its
    cluster; it is replaced: the second list, with its times."""
    out, replaced = [], []
    ahead = dt.datetime.now(dt.UTC) + CLOCK_SKEW
    for report in reports:
        there = earlier.get(report.cluster)
        if there is None:
            continue
        was, now = parse_time(there.observed_at), parse_time(report.observed_at)
        if was is not None and now is not None and was > now:
            if was <= ahead:
                out.append((report, there.observed_at))
            else:
                replaced.append((report, there.observed_at))
    return out, replaced


def newer_source(repo: FleetRepo, remote: str | None, source_rev: str,
                 state: str | None) -> str | None:
    """The commit the state was made from, when the source is an older commit
    of its history (two pipelines that end in the wrong order): a reconcile of
    it would roll the state back, so none is made. With a ``remote``, that
    commit is fetched when this repository lacks it (a clone from before it
    was pushed); when it cannot be had, the reconcile goes on."""
    source, made_from = repo.resolve(source_rev), _made_from(repo, remote, state)
    return made_from if _older(repo, source, made_from) else None


def later_than_source(repo: FleetRepo, remote: str | None, source_rev: str, state: str | None
                      ) -> tuple[str | None, tuple[str, str] | None]:
    """What a reconcile of the source would undo, when it is not the latest:
    the commit the state was made from (``newer_source``), or else (a branch,
    its head) that went on past the source and past that commit
    (``moved_past``); (``None``, ``None``) for a source to decide."""
    source, made_from = repo.resolve(source_rev), _made_from(repo, remote, state)
    if _older(repo, source, made_from):
        return made_from, None
    return None, moved_past(repo, source, made_from)


def _made_from(repo: FleetRepo, remote: str | None, state: str | None) -> str | None:
    """The commit the state was made from (its trailer), fetched from
    ``remote`` when this repository lacks it; ``None`` when there is no state,
    it names none, or the commit cannot be had."""
    made_from = trailers(repo.commit_info(state).message).get(TRAILER) if state else None
    if not made_from:
        return None
    if repo.resolve(made_from) is None:
        if remote:
            repo.run("fetch", "--quiet", "--no-tags", remote, made_from, check=False)
        if not remote or repo.resolve(made_from) is None:
            return None
    return made_from


def _older(repo: FleetRepo, source: str | None, made_from: str | None) -> bool:
    return source is not None and made_from is not None and source != made_from \
        and repo.is_ancestor(source, made_from)


def moved_past(repo: FleetRepo, source: str | None, made_from: str | None
               ) -> tuple[str, str] | None:
    """(a branch, its head) when the commit ``source`` is an older commit of
    that branch (a pipeline of a commit that ends after the pipeline of a
    later one), the state's source (``made_from``) is in that head's history
    too, and no branch has ``source`` as its head: the later commit is the one
    to decide. Its own reconcile may have made no commit (a revert of the
    source, say, decides as the state was made), so the state names an earlier
    source than it, and this one would undo it. ``None`` otherwise: the source
    is the head of a branch, no branch this clone knows of went on past it (as
    last fetched), or there is no state (a first reconcile: the later commit's
    makes one after it)."""
    if source is None or made_from is None:
        return None
    out = repo.run("for-each-ref", "--contains", source, "--format=%(objectname) %(refname)",
                   "refs/heads/", "refs/remotes/", check=False).decode("utf-8", "surrogateescape")
    heads = [(ref, sha) for sha, _, ref in (line.partition(" ") for line in out.splitlines())
             if not ref.endswith("/HEAD")]
    if not heads or any(sha == source for _, sha in heads):
        return None
    for ref, sha in sorted(heads):
        if repo.is_ancestor(made_from, sha):
            return ref.removeprefix("refs/heads/").removeprefix("refs/remotes/"), sha
    return None


def state_clock(repo: FleetRepo, state: str, now: dt.datetime) -> dt.datetime:
    """The time a reconcile from ``state`` decides at (``decides_at``)."""
    return decides_at(parse_now(repo.commit_info(state).committed_at), now)


def decides_at(then: dt.datetime, now: dt.datetime) -> dt.datetime:
    """The time a reconcile at ``now`` from a state dated ``then`` decides at.

    ``now``, unless it is before ``then`` (a runner whose clock is behind the
    one that wrote the state, a --now from the past): then a second after
    ``then``, so that a state's times never go back and a job new now is
    enqueued after the jobs queued before it, and goes behind them in its queue
    (even behind those of a name that sorts after it). But a state dated more
    than ``CLOCK_SKEW`` ahead of ``now`` is taken as written by a wrong clock,
    which is not followed (else one such state would hold every later one at
    its time): ``now``. ``clock_behind`` says which."""
    if now >= then or now + CLOCK_SKEW < then:
        return now
    return then + dt.timedelta(seconds=1)


def clock_behind(repo: FleetRepo, branch: str, state: str | None, now: dt.datetime
                 ) -> list[Problem]:
    """A warning when the reconcile's clock (this machine's, or ``--now``) is
    behind the time of the state it goes on from (see ``decides_at``)."""
    if state is None:
        return []
    then = parse_now(repo.commit_info(state).committed_at)
    if now >= then:
        return []
    at = decides_at(then, now)
    if at != now:
        return [Problem(branch, 0, (
            f"the clock ({rfc3339(now)}) is behind the time of the state it goes on from "
            f"({rfc3339(then)}): it decides at {rfc3339(at)}, so that jobs new now are queued "
            f"behind those queued before them; set this machine's clock right (or --now)"),
            "warning")]
    return [Problem(branch, 0, (
        f"the state it goes on from is dated {rfc3339(then)}, more than "
        f"{CLOCK_SKEW.seconds // 60} minutes ahead of the clock ({rfc3339(now)}): taken as "
        f"written by a wrong clock, it decides at {rfc3339(now)}, and jobs new now may be "
        f"queued ahead of those queued before them; if this machine's clock is the wrong one, "
        f"set it right (or --now)"), "warning")]


def source_lost(repo: FleetRepo, remote: str | None, branch: str, state: str | None,
                source: CommitInfo) -> list[Problem]:
    """A warning when the source's history lacks the commit the state was made
    from: it cannot be had (here, nor fetched from ``remote``: ``newer_source``
    tried), dropped by a force-push or never pushed; or it is on another
    history (a force-push the remote still keeps the commit of, a branch
    reconciled by mistake). The reconcile goes on from the source as it is,
    which undoes what that commit's history alone held; said, so that the
    jobs it removes are not a mystery. (In a shallow clone, whose history
    is cut short, the second cannot be told.)"""
    found = state_source(repo, state, source.sha)  # (newer_source fetched it, if it could)
    if found is None or found[1]:
        return []  # (the usual: a later commit of the same history)
    made_from = found[0]
    if repo.resolve(made_from) is None:
        where = f"neither this clone nor {remote} has" if remote else "this repository lacks"
        what, fix = (f"{where}: dropped from the source's history (a force-push) or never "
                     f"pushed"), "push it back"
    elif found[1] is None:
        return []  # (a shallow clone's history: it cannot be told)
    else:
        having = sorted({ref.removeprefix("refs/heads/").removeprefix("refs/remotes/")
                         for ref in branches_having(repo, made_from)})
        where = f"of {', '.join(having[:3])}" if having else "on no branch"
        what, fix = (f"{where} that the history of {source.sha[:12]} lacks (a force-push of "
                     f"the source branch, or another branch reconciled before)"), "merge it"
    return [Problem(branch, 0, (
        f"the state was made from {made_from[:12]}, a commit {what}. Decided from "
        f"{source.sha[:12]} as it is, which undoes what only that commit's history held; to "
        f"keep it, {fix} and run again"), "warning")]


def made_off_branch(repo: FleetRepo, made_from: str, source: str) -> tuple[str, str] | None:
    """When the commit the state was made from (``made_from``, later than the
    ``source`` commit) is on no branch of the name of one at ``source`` (local,
    or a remote's), but on another: (that branch at ``source``, one branch
    that has it). A branch reconciled by mistake, a feature branch, say: then
    the source branch's own history holds no later commit, and a new commit on
    it is reconciled as usual. ``None`` otherwise (a late pipeline of an older
    commit of the same branch)."""
    out = repo.run("for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/",
                   "refs/remotes/", check=False).decode("utf-8", "surrogateescape")
    def short(ref: str) -> str:  # (a remote's branch by its name there: origin/dev, dev)
        if ref.startswith("refs/remotes/"):
            return ref.removeprefix("refs/remotes/").split("/", 1)[-1]
        return ref.removeprefix("refs/heads/")
    at_source = {short(ref) for sha, _, ref in (line.partition(" ") for line in out.splitlines())
                 if sha == source and not ref.endswith("/HEAD")}
    if not at_source:
        return None
    names = sorted({short(ref) for ref in branches_having(repo, made_from)})
    if not names or at_source & set(names):
        return None
    return sorted(at_source)[0], names[0]


def branches_having(repo: FleetRepo, commit: str) -> list[str]:
    """The branches, local and remotes', whose history has ``commit``."""
    having = repo.run("for-each-ref", "--contains", commit, "--format=%(refname)",
                      "refs/heads/", "refs/remotes/", check=False
                      ).decode("utf-8", "surrogateescape").split()
    return [ref for ref in having if not ref.endswith("/HEAD")]


def ahead_of_its_branch(repo: FleetRepo, branch: str, source_rev: str) -> str | None:
    """A warning when ``source_rev`` is a branch checked out that was made off
    another branch (git's reflog says so) holding the commit the state was
    made from, and that one lacks its commits: a pull request's branch
    reconciled where its base is the source (its changes go to the clusters
    before they are merged); else ``None``."""
    current = repo.current_branch() if source_rev == "HEAD" else None
    state = repo.resolve(state_ref(branch)) if current is not None else None
    if current is None or state is None:  # (a CI checkout: a detached HEAD)
        return None
    made_from = trailers(repo.commit_info(state).message).get(TRAILER)
    head = repo.resolve("HEAD")
    if not made_from or head is None or head == made_from or \
            not repo.is_ancestor(made_from, head):
        return None
    mine = _branched(repo, f"refs/heads/{current}")
    if mine is None:
        return None  # (it was not made off another branch, as far as git's reflog says)
    bases = []
    for ref, (sha, _) in sorted(repo.branches().items()):
        if ref in (f"refs/heads/{current}", state_ref(branch)) or \
                not repo.is_ancestor(made_from, sha) or repo.is_ancestor(head, sha):
            continue  # (it lacks the state's source, or has all of this branch: merged)
        made = _first_entry(repo, ref)
        if made is None:
            continue
        off = made[1].startswith("branch: Created from")
        if not off or made[0] < mine:  # (there before this branch was made)
            bases.append((off, ref.removeprefix("refs/heads/")))
    if not bases:
        return None
    base = min(bases)[1]  # (one made off no other first: the first branch, a clone's)
    return (f"reconciling the branch {current!r}, made off {base!r}, while the state is made "
            f"from {made_from[:12]} of {base!r}, which lacks the commits of {current!r}: they "
            f"go to the clusters before they are merged; to reconcile {base!r}, check it out "
            f"or give --source {base}")


def _branched(repo: FleetRepo, ref: str) -> int | None:
    """When branch ``ref`` was made off another (``git checkout -b``, ``git
    branch``: its reflog's first entry), in seconds; ``None`` when it was not
    (its first commit, a clone) or its reflog does not say."""
    first = _first_entry(repo, ref)
    return first[0] if first is not None and first[1].startswith("branch: Created from") \
        else None


def _first_entry(repo: FleetRepo, ref: str) -> tuple[int, str] | None:
    """(its time in seconds, what it says) of the first entry of ``ref``'s reflog."""
    out = repo.run("log", "-g", "--date=unix", "--format=%gd %gs", ref, "--",
                   check=False).decode("utf-8", "replace").strip().splitlines()
    if not out:
        return None
    selector, _, said = out[-1].partition(" ")
    at = selector.rpartition("@{")[2].rstrip("}")
    return (int(at), said) if at.isdigit() else None


def check_state_branch(repo: FleetRepo, branch: str, source_rev: str) -> None:
    """Refuse a state branch fleetq may not write: not a branch name, the
    source branch (its files would be replaced by the rendered state), a
    branch checked out, one in the way of another, one fleetq did not write;
    and a state commit as the source (told first: a source named wrong is
    the state branch too)."""
    check_source(repo, source_rev)
    fix = STATE_BRANCH_FIX
    if not branch_name_ok(branch):
        raise GitError(f"the state branch {branch!r} is not a valid branch name; {fix}")
    ref = state_ref(branch)
    branches = repo.branches()
    in_use = branch_in_use(repo, branch, source_rev, branches)
    if in_use is not None:
        raise GitError(f"the state branch {in_use}")
    head, _ = branches.get(ref, (None, ""))
    clash = next((other for other in branches
                  if ref.startswith(other + "/") or other.startswith(ref + "/")), None)
    if clash is not None:  # (a/b and a cannot both be branches)
        raise GitError(f"the state branch {branch!r} cannot be made: git has the branch "
                       f"{clash.removeprefix('refs/heads/')!r}, and a branch cannot be both a "
                       f"name and a folder of names; {fix}")
    if head is not None and not written_by_fleetq(repo, head):
        raise GitError(f"the branch {branch!r} was not written by fleetq (its head "
                       f"{head[:12]} has no {TRAILER} trailer): if it is fleetq's state edited "
                       f"by hand, point it back at fleetq's last commit (git log it; git "
                       f"update-ref {ref} <commit>); else {fix}")
    if head is not None and (edited := edited_by_hand(
            repo, head, lambda commit: f"git update-ref {ref} {commit}", ref=ref)) is not None:
        raise GitError(f"the state branch {branch!r} is at {edited}; then run again")
    remote = next((r for r in repo.remotes()
                   if branch.startswith(f"{r}/")), None)
    if remote is not None:
        raise GitError(f"the state branch {branch!r} reads as a branch of the remote "
                       f"{remote!r} (git would find two of that name); {fix}")


STATE_BRANCH_FIX = ("set spec.stateBranch in fleet.yaml or --state-branch to a branch of "
                    "fleetq's own, e.g. fleetq/state")


def branch_in_use(repo: FleetRepo, branch: str, source_rev: str,
                  branches: Mapping[str, tuple[str, str]] | None = None) -> str | None:
    """Why people's work is on ``branch`` (the source branch, or a branch
    checked out), which fleetq may then not take as its state branch: the
    end of a sentence that starts with the branch (``'main' is the source
    branch ...; set spec.stateBranch ...``); ``None`` when none is."""
    ref = state_ref(branch)
    if repo.full_name(source_rev) == ref:
        return (f"{branch!r} is the source branch ({source_rev}): fleetq would replace its "
                f"files with the rendered state; {STATE_BRANCH_FIX}")
    known = repo.branches() if branches is None else branches
    _, where = known.get(ref, (None, ""))
    if ref not in known and repo.current_branch() == branch:
        where = str(repo.root)  # (unborn here: its first commit, people's, would go on it)
    if where:
        # (the state branch of a fleet.yaml that names none: renaming it is no fix)
        other = "" if branch == DEFAULT_STATE_BRANCH else f", or {STATE_BRANCH_FIX}"
        away = ("" if Path(where).resolve() == Path(repo.root).resolve() else
                f" (or remove that work tree: git worktree remove {where})")
        return (f"{branch!r} is checked out in {where}: fleetq writes it (people edit the "
                f"source branch); check out another branch there{away}{other}")
    return None


def state_branch_problems(repo: FleetRepo, inputs: FleetInputs, source_rev: str
                          ) -> list[Problem]:
    """``fleetq validate``'s word on fleet.yaml's ``spec.stateBranch``, at its
    line, when reconcile would refuse it for people's work being on it (a
    name git refuses is told by the fleet read)."""
    branch = inputs.git.state_branch
    if not branch_name_ok(branch):
        return []
    in_use = branch_in_use(repo, branch, source_rev)
    if in_use is None:
        return []
    path, line = inputs.setting_at.get("spec.stateBranch", (FLEET_FILES[0], 0))
    return [Problem(path, line, f"spec.stateBranch {in_use}")]


def remote_problems(repo: FleetRepo, inputs: FleetInputs) -> list[Problem]:
    """``fleetq validate``'s word on fleet.yaml's ``spec.remote``, at its line,
    when this repository has no remote of that name (every reconcile stops)."""
    remote = inputs.git.remote
    if not remote or remote in repo.remotes():
        return []
    path, line = inputs.setting_at.get("spec.remote", (FLEET_FILES[0], 0))
    return [Problem(path, line, (
        f"spec.remote names {remote!r}, which is no remote of this repository: add it (git "
        f"remote add {remote} URL), or remove spec.remote to keep the state in this clone (or "
        f"give --remote '' to each command)"))]


def state_source(repo: FleetRepo, state: str | None, source: str, remote: str | None = None
                 ) -> tuple[str, bool | None] | None:
    """The source commit the state ``state`` was made from, and whether the
    source commit ``source`` has it in its history: ``None`` when that cannot
    be told here (the commit is not in this clone, fetched from ``remote``
    first when one is named; or it is not in the history this shallow clone
    has of ``source``); None when the state names none. A pull request's
    branch made before the state's source lacks what was pushed since:
    reconciling its head as it is would undo it."""
    if state is None:
        return None
    made_from = trailers(repo.commit_info(state).message).get(TRAILER)
    if not made_from:
        return None
    if repo.resolve(made_from) is None and remote:
        repo.run("fetch", "--quiet", "--no-tags", remote, made_from, check=False)
    if repo.resolve(made_from) is None:
        return made_from, None
    if repo.is_ancestor(made_from, source):
        return made_from, True
    return made_from, None if is_shallow(repo) else False


def is_shallow(repo: FleetRepo) -> bool:
    return repo.run("rev-parse", "--is-shallow-repository").strip() == b"true"


def shallow_commits(repo: FleetRepo) -> set[str]:
    """The commits at the edge of a shallow clone (whose parents it lacks)."""
    where = repo.run("rev-parse", "--git-path", "shallow").decode("utf-8", "surrogateescape")
    try:
        return set((repo.root / where.strip()).read_text().split())
    except OSError:  # (not shallow: no such file)
        return set()


def written_by_fleetq(repo: FleetRepo, commit: str) -> bool:
    """Is ``commit`` a state commit fleetq wrote (its ``TRAILER``)?"""
    return TRAILER in trailers(repo.commit_info(commit).message)


def edited_by_hand(repo: FleetRepo, commit: str, how: Callable[[str], str],
                   back: str | None = None, ref: str | None = None) -> str | None:
    """Why state commit ``commit``, which keeps fleetq's trailers, is not as
    fleetq wrote it (its tree is not its ``STATE_TREE_TRAILER``: amended, or a
    commit of other files with its message copied), and the fix, ``how`` the
    branch is put back at a commit (``git update-ref``, ``git push --force``);
    ``None`` when it is as written (or older than that trailer). Read as the
    state, its files would be taken for fleetq's decisions: a job marked
    Admitted by hand would run past its quota, and stay admitted. ``back``:
    the commit to put back (this clone's state, for a remote's), else the
    last one as written (``last_as_written``, in the reflog of ``ref`` first)."""
    if as_written(repo, commit):
        return None
    info = repo.commit_info(commit)
    wrote = trailers(info.message).get(STATE_TREE_TRAILER)
    back = back or last_as_written(repo, commit, ref)
    said = (f"its {STATE_TREE_TRAILER} trailer says {wrote[:12]}" if wrote is not None else
            f"its message has no {STATE_TREE_TRAILER} trailer, which its state format has")
    return (f"{commit[:12]}, which was edited by hand: its files are not those fleetq "
            f"committed (but for the clusters' reports, its tree is "
            f"{decided_tree(repo, info.tree)[:12]}; {said}), and the state branch is "
            f"fleetq's output alone (a job admitted there by hand would run past its quota): "
            f"put it back at "
            + (f"fleetq's last commit ({how(back[:12])})" if back is not None else
               f"fleetq's last commit, which is neither on the branch nor in its reflog here "
               f"(take it from a clone that fetched it: {how('<commit>')})")
            + ", and change the fleet in its source")


def as_written(repo: FleetRepo, commit: str) -> bool:
    """Whether ``commit``'s tree, less the clusters' reports, is the one its
    ``STATE_TREE_TRAILER`` names; a commit with none is as written only if its
    state format is older than that trailer (``TREE_NAMED_FROM``), or it is
    no state commit: from then on, a message edited to drop it is found out too."""
    info = repo.commit_info(commit)
    return _written_as(repo, trailers(info.message), info.tree)


def _written_as(repo: FleetRepo, found: Mapping[str, str], tree: str) -> bool:
    """``as_written`` of a commit of trailers ``found`` and tree ``tree``."""
    wrote = found.get(STATE_TREE_TRAILER)
    if wrote is None:
        return TRAILER not in found or _format_number(found.get(FORMAT_TRAILER)) < TREE_NAMED_FROM
    return wrote == tree or wrote == decided_tree(repo, tree)


TREE_NAMED_FROM = 15  # the first state format whose commits name their tree


def check_not_newer(repo: FleetRepo, branch: str, state: str) -> None:
    """Refuse to decide from a state a later fleetq made (a state format of a
    higher number: a runner not upgraded yet, while others are): this one
    would decide it by its older rules and undo what the later one decided,
    on every reconcile in turn."""
    form = trailers(repo.commit_info(state).message).get(FORMAT_TRAILER)
    if _format_number(form) > _format_number(STATE_FORMAT):
        raise GitError(
            f"the state branch {branch} is at {state[:12]}, made by a later fleetq (state "
            f"format {form}) than this one ({STATE_FORMAT}): deciding it by this one's older "
            f"rules would undo what that one decided; run that fleetq here (upgrade it: pip "
            f"install -U fleetq, or the version your other runners use)")


def _format_number(form: str | None) -> int:
    """The number a ``FORMAT_TRAILER`` starts with (0 when it has none)."""
    head = (form or "").split(" ", 1)[0]
    return int(head) if head.isdigit() else 0


def decided_tree(repo: FleetRepo, tree: str) -> str:
    """The id of state tree ``tree`` less the clusters' reports (its folders
    ``CARRIED_OVER``): what fleetq decided and rendered, which no report
    changes (a report, by ``fleetq report`` or by hand, is an input)."""
    entries = repo.run("ls-tree", "-z", tree).split(b"\0")
    body = b""
    for entry in entries:  # (in git's order, as ls-tree lists them)
        if not entry:
            continue
        head, _, name = entry.partition(b"\t")
        mode, kind, sha = head.decode().split(" ")
        if kind == "tree" and f"{name.decode('utf-8', 'surrogateescape')}/" in CARRIED_OVER:
            continue
        body += mode.lstrip("0").encode() + b" " + name + b"\0" + bytes.fromhex(sha)
    return hashlib.sha1(b"tree %d\0" % len(body) + body).hexdigest()


EDITS_SEARCHED = 64  # commits searched back from an edited state for fleetq's last


def last_as_written(repo: FleetRepo, commit: str, ref: str | None = None) -> str | None:
    """The newest state commit that is as fleetq wrote it, within
    ``EDITS_SEARCHED``: first of those ``ref`` was at, as its reflog has them
    (the commit an amended one replaced is on no branch), then of those on
    ``commit``'s first parents (``commit`` itself included)."""
    walks = [("-g", ref)] if ref is not None else []  # (a ref with no reflog: none listed)
    for walk, start in [*walks, ("--first-parent", commit)]:
        out = repo.run("log", walk, f"--max-count={EDITS_SEARCHED}", "--format=%x1e%H %T%n%B",
                       start, "--", check=False).decode("utf-8", "replace")
        for entry in out.split("\x1e")[1:]:
            ids, _, message = entry.partition("\n")
            sha, _, tree = ids.partition(" ")
            found = trailers(message)
            if TRAILER in found and _written_as(repo, found, tree):
                return sha
    return None


def state_branches(repo: FleetRepo) -> list[tuple[str, str | None]]:
    """(branch, ``None``) of each local branch whose head is a state commit
    fleetq wrote, and (branch, remote) of each remote's copy of one (as git
    last fetched it), sorted (one git command)."""
    out = repo.run("for-each-ref", f"--format=%(refname)%00%(trailers:key={TRAILER},"
                   f"valueonly,separator=%x2C)", "refs/heads/", "refs/remotes/",
                   check=False).decode("utf-8", "surrogateescape")
    remotes = repo.remotes()
    found: list[tuple[str, str | None]] = []
    for ref, _, source in (line.partition("\0") for line in out.splitlines()):
        if not source.strip():
            continue
        if ref.startswith("refs/heads/"):
            found.append((ref.removeprefix("refs/heads/"), None))
            continue
        name = ref.removeprefix("refs/remotes/")
        remote = next((r for r in remotes if name.startswith(r + "/")), None)
        if remote is not None:
            found.append((name.removeprefix(remote + "/"), remote))
    return sorted(found, key=lambda f: (f[0], f[1] or ""))


def remote_copies(repo: FleetRepo, branch: str) -> list[tuple[str, str]]:
    """(``<remote>/<branch>``, its commit) of each remote's copy of ``branch``
    this repository has (as git last fetched it)."""
    out = repo.run("for-each-ref", "--format=%(objectname) %(refname)", "refs/remotes/",
                   check=False).decode("utf-8", "surrogateescape")
    copies = []
    for sha, _, ref in (line.partition(" ") for line in out.splitlines()):
        name = ref.removeprefix("refs/remotes/")
        if name.partition("/")[2] == branch:
            copies.append((name, sha))
    return copies


def check_source(repo: FleetRepo, source_rev: str) -> None:
    """Refuse a source that is a state commit: decided as a fleet, it holds no
    job, and every job would be evicted."""
    source = repo.resolve(source_rev)
    if source is not None and written_by_fleetq(repo, source):
        raise GitError(f"the source {source_rev} ({source[:12]}) is a state commit, written "
                       f"by fleetq: name a commit of the source branch (e.g. --source main)")


def _follow_remote(repo: FleetRepo, remote: str | None, branch: str, head: str | None) -> None:
    """With a ``remote``, the local state branch is set to the state ``head``
    found there, as after a push: ``status``, ``queue`` and ``explain`` read
    the local branch, and a clone that finds the remote's state up to date
    has it at once (its old head stays in the branch's reflog)."""
    if remote and head is not None:
        repo.advance_ref(state_ref(branch), head, f"fleetq: state of {remote}")


@dataclass
class Round:
    """One reconcile of ``watch``: its outcome, or what stopped it."""

    outcome: Outcome | None = field(repr=False)  # (it holds the whole fleet)
    error: str | None
    seconds: float
    branch: str


def watch(repo: FleetRepo, *, stop: threading.Event, report: Callable[[Round], None],
          source_rev: str = "HEAD", state_branch: str | None = None,
          remote: str | None = None, interval: float = 5.0, now: dt.datetime | None = None,
          progress: Progress = _quiet, events: bool = True,
          idle: Callable[[], None] | None = None) -> None:
    """Reconcile now, then again each time the source revision or the state
    branch names another commit, until ``stop`` is set. With a ``remote``, it
    is fetched first and every ``interval`` seconds, and the state is pushed
    there. ``idle`` is called each time it starts waiting for a change.

    One ``Cache`` is kept across rounds, so a round reads back nothing that the
    last one saved, and a push of job files reads those files only (see
    ``read_inputs``); a state found up to date, and its source, are read into
    it before waiting.
    A round that fails is reported and the watch goes on: after a git error
    (a remote away, a revision not there yet) the round is tried again every
    ``interval`` seconds, its error reported again only when it changes; after
    any other error (a fault of fleetq's), with its traceback, the cache kept
    in memory is dropped and the next change is waited for.

    After a round is reported, the cache is saved, and the first steps of the
    next round's cycle are done ahead (``prepare_next``: the jobs the state
    admitted, put back where they run), so that a push of job files, most
    pushes, waits for what it changed only.

    The cyclic garbage collector stays paused through a round, as in
    ``reconcile``; after it, one collection frees the round's cycles and what
    is left is frozen, so that the cache is never scanned again.
    """
    cache = Cache(repo.git_dir, across_rounds=True)
    with contextlib.ExitStack() as undo, \
            RefWatcher(repo, [source_rev], interval=interval, remote=remote,
                       events=events) as watcher:
        undo.callback(gc.unfreeze)
        last_error: str | None = None
        fetch = True
        while not stop.is_set():
            with gc_paused():
                later: list[Callable[[], None]] = []
                seen, done, fault = _watch_round(
                    repo, watcher, cache, source_rev=source_rev, state_branch=state_branch,
                    remote=remote, now=now, progress=progress, fetch=fetch, later=later)
                error = _as_told(done.error)
                if error is None or error != last_error:
                    report(done)
                last_error = error
                fetch = last_error is not None  # a retry fetches again: the remote may be back
                try:
                    while later:  # the cache, saved once the round is reported
                        later.pop(0)()  # (each then dropped: it holds the round's values)
                except Exception:
                    later.clear()
                    report(Round(None, "saving the cache: " + traceback.format_exc().rstrip(),
                                 0.0, done.branch))
                    fault = True
                if fault:
                    cache = Cache(repo.git_dir, across_rounds=True)
                outcome = done.outcome
                state, source = (outcome.state, outcome.source) if outcome else (None, None)
                until = _wake_at(repo, state) if now is None else None
                del done, outcome  # (an outcome holds the whole fleet: not kept while waiting)
                gc.collect()
                if state is not None and source is not None:
                    # (a fault here would be the next round's too, and reported then)
                    with contextlib.suppress(Exception):
                        prepare_next(repo, cache, state, source, now or parse_now(None))
                gc.freeze()
            if idle is not None:
                idle()
            while True:
                try:
                    if watcher.wait(seen, stop, until) is None:
                        return
                    break
                except GitError as exc:  # a fetch failed: said once, and wait on
                    if _as_told(str(exc)) != last_error:
                        report(Round(None, str(exc), 0.0, state_branch or DEFAULT_STATE_BRANCH))
                    last_error = _as_told(str(exc))


def _wake_at(repo: FleetRepo, state: str | None) -> float | None:
    """When (a ``time.monotonic()``) a watch reconciles again with no new
    commit: at the state's ``Fleet-Due``, when that is still to come (one
    past, the round just done found nothing due: it is not tried again)."""
    at = due(repo, state) if state is not None else None
    left = (at - dt.datetime.now(dt.UTC)).total_seconds() if at is not None else 0.0
    return time.monotonic() + left if left > 0 else None


def _watch_round(repo: FleetRepo, watcher: RefWatcher, cache: Cache, *, source_rev: str,
                 state_branch: str | None, remote: str | None, now: dt.datetime | None,
                 progress: Progress, fetch: bool, later: list[Callable[[], None]]
                 ) -> tuple[Revisions, Round, bool]:
    """One reconcile of ``watch``: the revisions it leaves seen, its round, and
    whether it failed by a fault of fleetq's. Seen are the revisions it
    reconciled (a push meanwhile is the next round's); after a git error, none,
    so that the round is tried again; after a fault, those it started from
    (none if it had not read them yet). What saves the cache is appended to
    ``later``."""
    started = time.perf_counter()
    branch = state_branch or DEFAULT_STATE_BRANCH
    before: Revisions = ()  # (a fault before the revisions are read: tried again)
    try:
        if fetch:
            watcher.fetch()
        branch = state_branch or settings_branch(repo, source_rev)
        # (with a remote, its state too: a report or a reconcile pushed elsewhere)
        watcher.revisions = (source_rev, state_ref(branch),
                             *((f"refs/remotes/{remote}/{branch}",) if remote else ()))
        before = watcher.current()
        # (the branch the watch was told, if any: fleet.yaml's, renamed by an edit
        # while the state is on another, is refused as reconcile refuses it)
        outcome = reconcile(repo, source_rev=source_rev, state_branch=state_branch,
                            remote=remote, now=now, progress=progress, cache=cache, later=later)
        if outcome.computed is None and outcome.state is not None and outcome.source:
            # up to date: what the next push needs is read now, not then
            cache.warm(outcome.state)
            read_inputs(repo, outcome.source.sha, cache, cache,
                        last_good=earlier_versions(repo, outcome.state, outcome.source.sha))
    except GitError as exc:
        return (), Round(None, str(exc), time.perf_counter() - started, branch), False
    except Exception:
        return before, Round(None, traceback.format_exc().rstrip(),
                             time.perf_counter() - started, branch), True
    seen: Revisions = (outcome.source.sha if outcome.source else None, outcome.state,
                       *((outcome.state,) if remote else ()))
    return seen, Round(outcome, None, time.perf_counter() - started, branch), False


def _save_cache(cache: Cache | None, computed: Computed, state: str | None,
                later: list[Callable[[], None]] | None = None) -> None:
    """Save what the next reconcile takes up from ``computed`` in the ``cache``:
    now, a warning added to ``computed``'s problems should it not be written;
    or, given ``later`` (a watch, which reports a round before it saves), by a
    call appended to it, and a failure is told with the next round (it leaves
    the round reported as it was)."""
    if cache is None:
        return
    if later is not None:
        later.append(functools.partial(_write_cache, cache, computed, state))
        return
    _write_cache(cache, computed, state)
    for problem in cache_problems(cache):
        if problem not in computed.problems:
            computed.problems.append(problem)


def save_read(cache: Cache | None, computed: Computed) -> None:
    """Save in the ``cache`` what a command that makes no state commit (plan,
    explain, validate) read: the jobs it parsed and the fleet; a warning is
    added to ``computed``'s problems should it not be written."""
    _save_cache(cache, computed, None)


def _write_cache(cache: Cache, computed: Computed, state: str | None) -> None:
    cache.try_writing_again()
    cache.save_jobs(computed.inputs.jobs_files)
    cache.save_inputs()
    if state is not None and state != computed.state_base:  # a state commit was made
        cache.save_state_inputs(computed.source.tree, cycle_read(computed.inputs))
    if state is not None:
        rendered = {}
        for path, made_of in computed.rendered_from.items():
            content = computed.files[path]
            rendered[path] = (made_of, content if isinstance(content, str)
                              else blob_id(content))
        cache.save_state(state, computed.written, rendered)


def cache_problems(cache: Cache | None) -> list[Problem]:
    """A warning when the cache could not be written (the reconcile went on
    without it, and so will the next ones until it can be)."""
    warning = cache.warning() if cache is not None else None
    return [Problem(CACHE_PATH, 0, warning, "warning")] if warning is not None else []


CACHE_PATH = ".git/fleetq"


def remote_branches_having(repo: FleetRepo, remote: str, commit: str) -> list[str]:
    """The branches of ``remote`` (by their names there), as this clone last
    fetched them, whose history has ``commit``."""
    prefix = f"refs/remotes/{remote}/"
    return [ref.removeprefix(prefix) for ref in branches_having(repo, commit)
            if ref.startswith(prefix)]


def check_no_local_state(repo: FleetRepo, branch: str) -> None:
    """Refuse to start the state anew on a clone that has no state branch but a
    remote's copy of fleetq's (a fresh clone, reconciling without ``--remote``):
    begun anew, it would move or evict every job that runs, and forget when
    each was enqueued and admitted."""
    for name, head in remote_copies(repo, branch):
        if written_by_fleetq(repo, head):
            remote = name.partition("/")[0]
            raise GitError(f"there is no branch {branch} here, but {name} holds fleetq's "
                           f"state ({head[:12]}): reconcile with --remote {remote} (or set "
                           f"spec.remote in fleet.yaml) to go on from it and push there; or "
                           f"take it here first (git branch {branch} {name})")


def check_no_other_state(repo: FleetRepo, branch: str, source: str,
                         wanted: str | None = None) -> None:
    """Refuse a first reconcile onto ``branch`` while another branch holds this
    fleet's state (made from a commit of ``source``'s history): fleet.yaml's
    ``spec.stateBranch`` renamed, say. It would start the state over,
    forgetting what it knows of the jobs (enqueue times, the clusters they
    failed on, those that finished: sent, and run, again) and the clusters'
    reports. (A branch named with ``--state-branch`` is not checked: it is
    asked for.) ``wanted``: the remote the command writes to, whose copy of
    the state is the one to move."""
    if repo.resolve(state_ref(branch)) is not None or remote_copies(repo, branch):
        return
    sha = repo.resolve(source)
    if sha is None:
        return  # (said by reconcile)
    found: dict[str, list[tuple[str | None, str, str]]] = {}  # name -> (remote, head, from)
    for name, remote in state_branches(repo):
        head = repo.resolve(state_ref(name) if remote is None
                            else f"refs/remotes/{remote}/{name}")
        if name == branch or head is None:
            continue
        made_from = trailers(repo.commit_info(head).message).get(TRAILER)
        if made_from and repo.resolve(made_from) and repo.is_ancestor(made_from, sha):
            found.setdefault(name, []).append((remote, head, made_from))
    if not found:
        return
    name, copies = min(found.items())
    if wanted is not None and any(remote == wanted for remote, _, _ in copies):
        # (the remote's copy as it is now: another clone may have gone on with it)
        with contextlib.suppress(GitError):
            now = repo.fetch(wanted, name)
            kept = [copy for copy in copies if copy[0] != wanted]
            made = trailers(repo.commit_info(now).message).get(TRAILER) if now else None
            if now is not None and made:
                kept.append((wanted, now, made))
            copies = kept
    if not copies:
        return
    local = next((head for remote, head, _ in copies if remote is None), None)
    # (a remote's copy, the only one or not behind this clone's: the one to move, or a
    # rename of this clone's would go on from an older state, dropping what came after)
    theirs = next(((remote, head, made_from) for remote, head, made_from in copies
                   if remote is not None and (wanted is None or remote == wanted)), None)
    if local is None and theirs is None:  # (another remote's copy alone)
        theirs = next(((remote, head, made_from) for remote, head, made_from in copies
                       if remote is not None), None)
    if theirs is not None and theirs[0] is not None and (
            local is None or not repo.is_ancestor(theirs[1], local)):
        other, _, made_from = theirs
        where = f"{other}/{name}"
        to = wanted or other
        move = (f"push {other}'s copy of it under the new name (git fetch {other} && git "
                f"push {to} refs/remotes/{other}/{name}:refs/heads/{branch})" if wanted else
                f"take {other}'s copy of it here under the new name (git fetch {other} && "
                f"git branch {branch} refs/remotes/{other}/{name})")
        if local:
            move += f"; this clone's {name} is not {other}'s, so do not rename it"
    else:
        made_from = next(m for remote, _, m in copies if remote is None)
        where = name
        move = (f"rename the branch (git branch -m {name} {branch}"
                + (f" && git push {wanted} {branch}" if wanted else "") + ")")
    raise GitError(
        f"no state branch {branch!r} yet, but {where} holds this fleet's state (made "
        f"from {made_from[:12]}, in the history of {source}): a first reconcile on "
        f"{branch} would start over, forgetting what the state knows (enqueue times, "
        f"the clusters jobs failed on, the jobs that finished, which would run again, "
        f"the clusters' reports). To move the state there, {move}; to start a new state "
        f"all the same, name it: fleetq reconcile --state-branch {branch}")


def check_no_remote_state(repo: FleetRepo, remote: str, branch: str) -> None:
    """Refuse to start a remote's state anew while this clone has fleetq's
    state on its branch (the remote's deleted, or never pushed), or saw it on
    the remote (``remember_remote_state``: a runner's clone, with no branch of
    its own, whose copy of the remote's the fetch dropped): begun anew, every
    job that runs would be moved or evicted, and when each was enqueued and
    admitted, and what the clusters reported, forgotten."""
    local = repo.resolve(state_ref(branch))
    seen_at = seen_ref(remote, branch)
    seen = repo.resolve(seen_at)
    forget = f"; git update-ref -d {seen_at}" if seen is not None else ""
    if local is not None and written_by_fleetq(repo, local):
        raise GitError(f"{remote} has no state branch {branch}, but this clone has fleetq's "
                       f"state there ({local[:12]}): push it (git push {remote} "
                       f"{branch}) and run again; or, to start the state anew on purpose, "
                       f"delete it here too (git branch -D {branch}{forget})")
    if seen is not None and written_by_fleetq(repo, seen):
        raise GitError(f"{remote} has no state branch {branch}, but it had fleetq's state "
                       f"when this clone last read it ({seen[:12]}, kept as {seen_at}): push "
                       f"it back (git push {remote} {seen[:12]}:refs/heads/{branch}) and run "
                       f"again; or, to start the state anew on purpose, forget it here "
                       f"(git update-ref -d {seen_at})")


def seen_ref(remote: str, branch: str) -> str:
    """Where a clone keeps the remote's state it last read or pushed: a ref of
    fleetq's own, which no fetch prunes (a remote-tracking ref goes with the
    remote's branch)."""
    return f"refs/fleetq/seen/{remote}/{branch}"


def remember_remote_state(repo: FleetRepo, remote: str, branch: str, head: str) -> None:
    """Keep ``head`` as the remote's state this clone last read or pushed
    (``seen_ref``), for ``check_no_remote_state``: one ``git update-ref``, no
    cheaper than asking whether it moved."""
    repo.run("update-ref", seen_ref(remote, branch), head)


def check_source_pushed(repo: FleetRepo, remote: str, source_rev: str, source: str,
                        branch: str) -> list[Problem]:
    """Refuse to push a state made from a commit that is on no branch of
    ``remote`` (committed here and not pushed, a detached HEAD): the next
    reconcile of the remote's branch, on another clone, could not fetch it
    and would decide that branch's older jobs over it, undoing this state
    without a word. The remote's branches are fetched first (and this clone's
    copies of those deleted there dropped): a copy as git last fetched it may
    hold a commit the remote's branches no longer do. On a branch of the
    remote but not its default one (a feature branch, reconciled by mistake),
    a warning: the default branch's next reconcile lacks it."""
    repo.run("fetch", "--quiet", "--no-tags", "--prune", remote,
             f"+refs/heads/*:refs/remotes/{remote}/*", check=False)
    having = remote_branches_having(repo, remote, source)
    if having:
        said = repo.run("ls-remote", "--symref", remote, "HEAD", check=False).decode()
        default = next((line.split()[1].removeprefix("refs/heads/") for line in
                        said.splitlines() if line.startswith("ref: ")), None)
        if default is None or default in having or default == branch:
            return []
        return [Problem(branch, 0, (
            f"the source commit {source[:12]} is on {listed(sorted(having)[:3])} of {remote}, "
            f"not on its default branch {default}: the state is made from it, and a reconcile "
            f"of {default}, which lacks it, will not go on from this state; if this branch "
            f"was reconciled by mistake, reconcile {default} (after a commit on it: git "
            f"commit --allow-empty will do)"), "warning")]
    named = source_rev if repo.resolve(f"refs/heads/{source_rev}") == source else None
    if named is None and source_rev == "HEAD":
        named = repo.current_branch()
    push = (f"git push {remote} {named}" if named else
            f"git push {remote} {source[:12]}:refs/heads/<branch>")
    raise GitError(f"the source commit {source[:12]} ({source_rev}) is on no branch of {remote}: "
                   f"a state made from it would be undone by the next reconcile of {remote}'s "
                   f"branch, which lacks it. Push it first ({push}) and run again; or, to keep "
                   f"the state in this clone, reconcile without a remote (--remote '')")


def check_remote_name(repo: FleetRepo, remote: str, given: str) -> None:
    """Refuse a remote this repository has none of by that name (a URL or a
    path, a typo): git would say "invalid refspec"."""
    names = repo.remotes()
    if remote in names:
        return
    known = f" (this repository has {', '.join(names)})" if names else ""
    raise GitError(f"{given} names {remote!r}, which is no remote of this repository{known}: "
                   f"name one of `git remote -v`, or add it first (git remote add NAME URL)"
                   + (", or give --remote '' to keep the state in this clone"
                      if given.startswith("fleet.yaml") else ""))


def check_remote_state(repo: FleetRepo, remote: str, branch: str, head: str) -> None:
    """Refuse a remote's state branch whose head fleetq did not write (pushed
    over by hand, ``git push --force`` of another branch): read as the state,
    it holds none; the fix is on the remote, where the next fetch reads it."""
    local = repo.resolve(state_ref(branch))
    good = local if local is not None and written_by_fleetq(repo, local) else None
    if written_by_fleetq(repo, head):
        # (an amended commit is no descendant of this clone's: told as what it is)
        edited = edited_by_hand(repo, head, lambda commit: (
            f"git push --force {remote} {commit}:refs/heads/{branch}"),
            good if good is not None and as_written(repo, good) else None)
        if edited is not None:
            raise GitError(f"the state branch {branch} on {remote} is at {edited}; then run "
                           f"again")
        if good is not None and not repo.is_ancestor(good, head):
            raise GitError(_rewound(repo, remote, branch, head, good))
        return
    # (fleetq's last commit under the ones pushed over it, when it is there: a report
    # recorded there since this clone's last state is kept)
    under = last_as_written(repo, head)
    if under is not None and (good is None or repo.is_ancestor(good, under)):
        how = (f"git push --force-with-lease={branch}:{head[:12]} {remote} "
               f"{under[:12]}:refs/heads/{branch} (fleetq's last commit there, under "
               f"{head[:12]})")
    elif good:
        how = (f"git push --force {remote} {good[:12]}:refs/heads/{branch} (this clone's "
               f"{branch}, the last state it knows)")
    else:
        how = (f"git push --force {remote} <commit>:refs/heads/{branch}, <commit> the last "
               f"fleetq commit of it (git reflog on a clone that had it)")
    raise GitError(f"the state branch {branch} on {remote} is at {head[:12]}, which fleetq "
                   f"did not write (it has no {TRAILER} trailer): put fleetq's last state "
                   f"commit back there: {how}; then run again")


def _rewound(repo: FleetRepo, remote: str, branch: str, head: str, local: str) -> str:
    """Why a remote's state branch that lacks this clone's last state is
    refused: built on, the state would fork, and when the jobs since were
    enqueued and admitted be forgotten (git would call the push a non-fast-forward)."""
    behind = repo.is_ancestor(head, local)
    take = f"git branch -f {branch} {remote}/{branch}"
    if pushed_there(repo, remote, branch, local) is False:
        count = int(repo.run("rev-list", "--count", local, f"^{head}").strip() or 0)
        commits = f"{count} state commit{'s' if count != 1 else ''}"
        made_by = _made_without_remote(repo, local, head)
        if behind:
            made_from = trailers(repo.commit_info(local).message).get(TRAILER, "")
            publish = (f"or publish them as they are (git push {remote} {branch})"
                       if made_from and remote_branches_having(repo, remote, made_from) else
                       f"they are made from {made_from[:12]}, which is on no branch of "
                       f"{remote}: pushed, they would be undone by the next reconcile there")
            return (f"the state branch {branch} on {remote} ({head[:12]}) lacks {commits} of "
                    f"this clone's ({local[:12]}), never pushed there ({made_by}): drop them "
                    f"({take}), and the next reconcile decides from {remote}'s; {publish}; "
                    f"then run again")
        return (f"this clone's {branch} ({local[:12]}) has {commits} never pushed to "
                f"{remote} ({made_by}), and {remote}'s "
                f"({head[:12]}) has gone on without them: the clusters run {remote}'s. Take "
                f"it here ({take}) and run again")
    push_back = (f"git push --force-with-lease={branch}:{head[:12]} {remote} "
                 f"{local[:12]}:refs/heads/{branch}")
    if behind:
        return (f"the state branch {branch} on {remote} is at {head[:12]}, which is behind this "
                f"clone's {branch} ({local[:12]}): it was set back (a force-push), and a "
                f"reconcile built on it would forget the states since. Push this clone's back "
                f"({push_back}) and run again; or, to go on from {remote}'s on purpose, take it "
                f"here ({take})")
    return (f"the state branch {branch} on {remote} ({head[:12]}) has gone on from an older "
            f"state than this clone's ({local[:12]}): it was set back, then built on by "
            f"another reconcile. The clusters run {remote}'s: take it here ({take}) and run "
            f"again (the source's jobs are decided anew from it); or, if {remote}'s should "
            f"not stand, push this clone's over it ({push_back})")


def _made_without_remote(repo: FleetRepo, local: str, head: str) -> str:
    """Which commands made the state commits of ``local`` that ``head`` lacks:
    "made by fleetq reconcile without --remote" (or report, or both)."""
    subjects = repo.run("log", "--format=%s", local, f"^{head}", "--").decode(
        "utf-8", "replace").splitlines()
    reports = sum(1 for s in subjects if s.startswith("Report "))
    made = [name for name, count in (("reconcile", len(subjects) - reports),
                                     ("report", reports)) if count]
    return f"made by fleetq {' and '.join(made) or 'reconcile'} without --remote"


def pushed_there(repo: FleetRepo, remote: str, branch: str, commit: str) -> bool | None:
    """Was ``commit`` ever on ``remote``'s ``branch`` as this clone saw it (its
    copy of the branch pointed at it, or at a later state, fetched or pushed,
    by the copy's reflog)? ``None`` when that reflog is not kept here."""
    seen = list(dict.fromkeys(repo.run("log", "-g", "--format=%H",
                                       f"refs/remotes/{remote}/{branch}", "--",
                                       check=False).decode().split()))
    if not seen:
        return None
    return commit in seen or any(repo.is_ancestor(commit, each) for each in seen[:50])


def damaged_state(state: str, problem: Problem) -> str:
    """Why a reconcile, or a command reading the state, stops at a state commit
    whose placements.yaml does not read back (edited by hand, or damaged): a
    reconcile that went on from no state would move or evict every job that
    runs, and forget when each was enqueued and admitted."""
    return (f"the state commit {state[:12]} cannot be read back ({problem}); the state "
            f"branch is written by fleetq alone: point it back at its last good commit "
            f"(git log it; git update-ref refs/heads/<state branch> <commit>) or revert the "
            f"edit, then run again")


def state_items(repo: FleetRepo, state: str, cache: Cache | None = None
                ) -> tuple[list[Any], list[bytes] | None, Problem | None]:
    """The items of state commit ``state``'s placements.yaml (``fleetq status``,
    ``queue``), their texts there when known, and the problem that stops the
    file being read, if any: from the decisions ``cache`` kept of that state
    when it has them and they make that very file (its blob id: a cache of
    another file, or a damaged one, is not used), which takes a tenth of the
    time of reading it, with the texts this version wrote them as; else read
    from the file (``read_items``), without them."""
    cached = cache.load_state(state) if cache is not None else None
    if cached is not None:
        got = items_of(cached[0])
        if got is not None and blob_id(placements_file(got[0])) == \
                repo.blob_of(state, PLACEMENTS):
            return got[1], got[0], None
    data = repo.read_file(state, PLACEMENTS)
    if data is None:
        return [], None, Problem(PLACEMENTS, 0, "it is not there")
    items, problem = read_items(data)
    return items, None, problem


def diff_trees(repo: FleetRepo, base: str | None, files: dict[str, bytes | str]
               ) -> list[tuple[str, str]]:
    """(``+``/``~``/``-``, path) for each state file that a commit of ``files``
    changes (their blob ids compared: nothing is written)."""
    before = {e.path: e.sha for e in repo.list_tree(base) if e.type == "blob"} if base else {}
    after = {p: (v if isinstance(v, str) else blob_id(v)) for p, v in files.items()}
    out = [("-", p) for p in before if p not in after]
    out += [("+", p) for p in after if p not in before]
    out += [("~", p) for p in after if p in before and before[p] != after[p]]
    return sorted(out, key=lambda c: (c[1], c[0]))


def settings_branch(repo: FleetRepo, source_rev: str) -> str:
    return fleet_git(repo, source_rev).state_branch or DEFAULT_STATE_BRANCH


FLEET_YAML_DEPTH = 50  # commits of fleet.yaml searched for a version that builds


def fleet_git(repo: FleetRepo, source_rev: str) -> GitSettings:
    """The git settings of the revision's ``fleet.yaml`` (state branch, remote),
    read before the rest of the fleet: they say where the state goes. When the
    file does not parse or build, those of its newest version in the
    revision's history that does, as the fleet read takes its last good
    version (a typo must not send the state to another branch, nor to another
    remote); when none does, the command stops."""
    for path in FLEET_FILES:
        data = repo.read_file(source_rev, path)
        if not data:
            continue
        first: Problem | None = None
        for commit, version in _versions_of(repo, source_rev, path, data):
            read = FleetInputs()
            read_fleet_settings({path: SourceFile(path, "", version)}, read)
            if not read.broken_paths and not read.unbuilt:
                if first is not None:
                    read.git.read_from = (
                        f"{shown_path(path)} at {source_rev} does not build ({first}): its "
                        f"state branch and remote are read from its version of commit "
                        f"{(commit or '')[:12]}, the last that does")
                return read.git
            first = first or next(p for p in read.problems if p.severity == "error")
        raise GitError(f"{first}; and no earlier version of {shown_path(path)} parses and "
                       f"builds, to tell where the state goes (spec.stateBranch, spec.remote): "
                       f"fix it")
    return GitSettings()


def _versions_of(repo: FleetRepo, source_rev: str, path: str, data: bytes
                 ) -> Iterator[tuple[str | None, bytes]]:
    """``data`` (the file ``path`` at ``source_rev``: no commit), then its
    earlier versions in that revision's history, newest first, each with the
    commit that made it (read as they are asked for)."""
    yield None, data
    for commit in repo.run("log", f"--max-count={FLEET_YAML_DEPTH}", "--format=%H",
                           source_rev, "--", path, check=False).decode().split():
        earlier = repo.read_file(commit, path)
        if earlier and earlier != data:
            yield commit, earlier
