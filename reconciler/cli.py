"""``fleetq`` command line: argument parsing and wiring only.

Exit codes: 0 ok; 1 problems found (``validate``); 2 usage or environment error;
130 and 143 stopped by Ctrl-C and SIGTERM (what it wrote, it wrote whole); ``watch``
exits 130 on Ctrl-C, and 0 on SIGTERM, which stops it at the end of a round.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime as dt
import difflib
import gc
import io
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TextIO

from reconciler import __version__
from reconciler.core.explain import Admits, Fits, admits_next, explain_decision
from reconciler.core.model import (
    Decision,
    Job,
    JobKey,
    MemberCluster,
    Phase,
    Policy,
    PreemptionPolicy,
    QueueStrategy,
)
from reconciler.core.policy import (
    candidate_groups,
    narrowed,
    ruled_out,
    with_no_queue_refusal,
    with_queue_refusal,
)
from reconciler.core.problems import (
    Problem,
    did_you_mean,
    first_of,
    listed,
    shown_path,
    yaml_type,
)
from reconciler.core.resources import format_quantity
from reconciler.fleet.cache import Cache
from reconciler.fleet.documents import parse_documents
from reconciler.fleet.inputs import (
    CUT_SHORT,
    FLEET_FILES,
    GOES_ON_WITH,
    FleetInputs,
    SourceFile,
    excluded,
    is_yaml,
    read_fleet_settings,
)
from reconciler.fleet.jobs import api_group
from reconciler.fleet.observed import INVENTORY_DIR, ClusterReport, cluster_report
from reconciler.fleet.state import decision_item, prior_from_decision
from reconciler.gitops.repo import FleetRepo, GitError
from reconciler.jobkinds import KINDS
from reconciler.pipeline import (
    DEFAULT_IDENTITY,
    DUE_TRAILER,
    OBSERVED_TRAILER,
    STATE_BRANCH_FIX,
    TRAILER,
    TREE_TRAILER,
    Computed,
    Outcome,
    ParsedJobs,
    Round,
    ahead_of_its_branch,
    branch_in_use,
    branches_having,
    capacity_problems,
    check_no_other_state,
    check_remote_name,
    check_remote_state,
    check_source,
    check_state_branch,
    clock_behind,
    commit_message,
    compute,
    damaged_state,
    diff_trees,
    earlier_versions,
    edited_by_hand,
    fleet_git,
    last_as_written,
    later_than_source,
    made_off_branch,
    no_revision,
    parse_now,
    read_inputs,
    reconcile,
    record_reports,
    remote_copies,
    remote_problems,
    rfc3339,
    said_anew,
    save_read,
    settings_branch,
    state_branch_problems,
    state_branches,
    state_items,
    state_ref,
    state_source,
    trailers,
    up_to_date,
    watch,
    written_by_fleetq,
)
from reconciler.render.overlays import COMMIT_TEMPLATE, Overlays
from reconciler.render.text import (
    json_parts,
    placements_table,
    problems_text,
    short,
    table,
    write_parts,
    yaml_parts,
)

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2

# Set by ``run``: the process ends once the command is done.
_ENDING = False
_KEPT: list[object] = []


def _keep_to_the_end(*values: object) -> None:
    """Leave ``values`` to the end of the process when it ends next (``run``).
    The fleet of a large reconcile is millions of values: freeing them one by
    one takes a second at 100,000 jobs, and the OS drops them at once."""
    if _ENDING:
        _KEPT.extend(values)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"fleetq: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _progress(enabled: bool) -> Any:
    if not enabled:
        return lambda _msg: None

    def report(msg: str) -> None:
        # (one screen line at most: \r and erasing the line take back that line alone, so
        # a longer one, wrapped, would leave its first part above the next)
        width = _stderr_columns() - 1
        shown = msg if len(msg) <= width else msg[:max(width - 1, 0)] + "…"
        print(f"\r\033[K{shown}", end="", file=sys.stderr, flush=True)

    return report


def _stderr_columns() -> int:
    """The width of the terminal progress is told on: ``COLUMNS``, else
    stderr's (stdout may be a pipe, a tee, of another width), else 80."""
    said = os.environ.get("COLUMNS", "")
    if said.isdigit() and int(said) > 0:
        return int(said)
    try:
        columns = os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError):
        columns = 0
    return columns if columns > 0 else 80


def _end_progress(enabled: bool) -> None:
    if enabled:
        print("\r\033[K", end="", file=sys.stderr, flush=True)


def _print_data(items: list[dict[str, Any]], output: str, *, wide: bool = False,
                texts: Mapping[int, bytes] | None = None, none: str = "No jobs.") -> None:
    """``items`` as ``output`` says. ``texts``: the text of items (by ``id``) as
    placements.yaml has them, which is their YAML (``emit``), written as it is;
    ``none``: said on stderr when there are no items (as kubectl says "No
    resources found": the table has no line, so ``| wc -l`` counts none)."""
    if output == "json":
        write_parts(json_parts(items), sys.stdout)
    elif output == "yaml" and texts and items and all(id(i) in texts for i in items):
        write_parts((("\n" if n else "") + texts[id(i)].decode()
                     for n, i in enumerate(items)), sys.stdout)
    elif output == "yaml":
        write_parts(yaml_parts(items), sys.stdout)
    elif items:
        print(placements_table(items, wide=wide))
    else:
        print(none, file=sys.stderr)


def _print_value(value: Any, output: str) -> None:
    """One document (``-o json`` or ``-o yaml``) of a command that prints data."""
    write_parts(json_parts(value) if output == "json" else yaml_parts(value), sys.stdout)


def _say(output: str) -> TextIO:
    """Where a command's lines for people go: stdout, but for ``-o json`` or
    ``-o yaml``, whose stdout is the document alone (stderr then)."""
    return sys.stderr if output in ("json", "yaml") else sys.stdout


def _summary(outcome: Outcome) -> str:
    counts = collections.Counter(d.phase for d in outcome.decisions)  # (by member: no .value)
    parts = [f"{counts[p]} {p.value.lower()}" for p in Phase if counts.get(p)]
    return ", ".join(parts) or "no jobs"


def _remote(repo: FleetRepo, args: argparse.Namespace, source: str) -> str | None:
    """``--remote``, else the one fleet.yaml names; ``--remote ''`` for none.
    When fleet.yaml does not build, that it is read from its last version that
    does is said first: what it names may be what the errors of the file now
    are about (a remote or a state branch that a later commit fixed)."""
    try:
        git = fleet_git(repo, source) if repo.resolve(source) is not None else None
    except GitError:  # (no version of fleet.yaml builds: --remote needs none of it)
        if args.remote is None:
            raise
        git = None
    if git is not None and git.read_from is not None:
        print(f"fleetq: {git.read_from}", file=sys.stderr)
    remote = args.remote if args.remote is not None else git.remote if git else None
    if remote:
        check_remote_name(repo, remote, "--remote" if args.remote else "fleet.yaml's spec.remote")
    return remote or None


def cmd_reconcile(args: argparse.Namespace) -> int:
    repo = FleetRepo(args.repo)
    args.remote = _remote(repo, args, args.source)
    if args.remote and args.source.startswith(f"{args.remote}/"):
        # (--source origin/main with --remote origin: the remote's branch as it is now,
        # as watch and plan --remote read it, not as git last fetched it)
        repo.fetch(args.remote, args.source.removeprefix(f"{args.remote}/"))
    show = sys.stderr.isatty() and not args.quiet
    cache = _cache(repo, args)
    ahead = ahead_of_its_branch(repo, _branch(repo, args), args.source)
    if ahead is not None:
        print(f"fleetq: warning: {ahead}", file=sys.stderr)
    outcome = reconcile(repo, source_rev=args.source, state_branch=args.state_branch,
                        remote=args.remote, now=parse_now(args.now),
                        progress=_progress(show), use_cache=cache is not None, cache=cache)
    _keep_to_the_end(cache, outcome)
    _end_progress(show)
    branch = _branch(repo, args)
    if outcome.told:
        print(problems_text(outcome.told), file=sys.stderr)
    if outcome.attempts > 1:  # (said as it happens on a terminal only: said again here)
        print(f"fleetq: the state branch moved meanwhile (another reconcile or a report wrote "
              f"it): decided again from its new head, {outcome.attempts} attempts in all",
              file=sys.stderr)
    print(_outcome_line(outcome, branch, repo), file=_say(args.output))
    if outcome.commit is None and args.source == "HEAD":  # (a "no change" to wonder at)
        _tell_work_tree(repo, "reconcile", "reconciled")
    if args.output != "none":
        items, texts = (([decision_item(d) for d in outcome.decisions], {})
                        if outcome.computed else _state_items(repo, branch, cache))
        _print_data(items, args.output, wide=args.wide, texts=texts)
    return EXIT_OK


def _outcome_line(outcome: Outcome, branch: str, repo: FleetRepo | None = None) -> str:
    source = (outcome.source.sha if outcome.source else "")[:12]
    if outcome.newer is not None:
        off = made_off_branch(repo, outcome.newer, outcome.source.sha) \
            if repo is not None and outcome.source is not None else None
        if off is not None:
            return (f"no change: {branch} is made from {outcome.newer[:12]}, a later commit "
                    f"than {source}, of the branch {off[1]!r}, not of {off[0]!r}: if that "
                    f"branch was reconciled by mistake, commit to {off[0]!r} (git commit "
                    f"--allow-empty will do) and reconcile that commit, which is not older")
        if repo is not None and not branches_having(repo, outcome.newer):
            return (f"no change: {branch} is made from {outcome.newer[:12]}, a later commit "
                    f"than {source}, which no branch of this clone has: reconciling {source} "
                    f"would roll the state back. If this clone is only behind (fetched before "
                    f"that commit was pushed: a late run), there is nothing to do; if the "
                    f"source branch was reset or force-pushed back to {source}, commit on it "
                    f"(git commit --allow-empty will do) and reconcile that commit, which is "
                    f"not older")
        return (f"no change: {branch} is made from {outcome.newer[:12]}, a later commit than "
                f"{source}: reconciling {source} would roll it back (to go back, revert on "
                f"the source branch)")
    if outcome.moved_on is not None:
        went, head = outcome.moved_on
        return (f"no change: {source} is an older commit of {went}, which has gone on to "
                f"{head[:12]}: reconciling {source} would undo what came after it; reconcile "
                f"{went}'s head (to go back, revert on the source branch)")
    if outcome.computed is None:
        return f"no change: {branch} is up to date with {source}"
    if outcome.commit:
        pushed = f" and pushed it to {outcome.remote}" if outcome.remote else ""
        return (f"committed {outcome.commit[:12]} to {branch}{pushed} from {source}: "
                f"{_summary(outcome)}")
    return f"no change: {_summary(outcome)}"


def cmd_watch(args: argparse.Namespace) -> int:
    repo = FleetRepo(args.repo)
    if not 0 < args.interval <= MAX_INTERVAL:  # (nan and inf: a watch that never looks)
        raise GitError(f"--interval {args.interval} must be more than 0 seconds and at most "
                       f"{MAX_INTERVAL:g} (a day)")
    args.remote = _remote(repo, args, args.source or "HEAD")
    source = args.source
    if source is None:
        current = repo.current_branch()
        # (the branch it starts on: a checkout of another branch is not what it watches)
        source = (f"{args.remote}/{current}" if args.remote and current else
                  current or "HEAD")
    if repo.resolve(source) is not None:
        # (a watch of a source it could never reconcile stops at once, as reconcile
        # does; one not there yet, a remote branch not fetched, is waited for)
        check_state_branch(repo, args.state_branch or settings_branch(repo, source), source)
        if args.state_branch is None:  # (as reconcile does: at once, not each round)
            check_no_other_state(repo, settings_branch(repo, source), source, args.remote)
    elif not args.remote and repo.resolve("HEAD") is not None:
        # (with no remote to bring it, a name that is no revision here is a typo: a
        # repository with no commit yet, or a remote's branch, is waited for)
        raise GitError(no_revision(repo, source))
    show = sys.stderr.isatty() and not args.quiet
    stop = threading.Event()

    interrupted = threading.Event()

    def interrupt(*_: object) -> None:
        stop.set()  # so that it stops even when the interrupt is lost: raised in a __del__
        interrupted.set()
        raise KeyboardInterrupt

    def unraisable(info: Any) -> None:  # (that one, said by Python as it is lost)
        if not (info.exc_type is KeyboardInterrupt and stop.is_set()):
            previous_hook(info)

    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    previous_int = signal.signal(signal.SIGINT, interrupt)
    previous_hook, sys.unraisablehook = sys.unraisablehook, unraisable
    where = f"{source} and its state branch" + (f" on {args.remote}" if args.remote else "")
    print(f"watching {where} in {repo.root} (Ctrl-C to stop)", file=sys.stderr, flush=True)

    def report(done: Round) -> None:
        _end_progress(show)
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        if done.outcome is None:
            print(f"{stamp} fleetq: {done.error}", file=sys.stderr, flush=True)
            return
        if done.outcome.told:
            print(problems_text(done.outcome.told), file=sys.stderr)
        print(f"{stamp} {_outcome_line(done.outcome, done.branch, repo)} ({done.seconds:.1f}s)",
              flush=True)

    try:
        watch(repo, stop=stop, report=report, source_rev=source,
              state_branch=args.state_branch, remote=args.remote, interval=args.interval,
              now=parse_now(args.now) if args.now is not None else None,
              progress=_progress(show))
    except KeyboardInterrupt:
        _end_progress(show)
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
        sys.unraisablehook = previous_hook
    print("stopped watching", file=sys.stderr)
    # (stopped by SIGTERM, as a service manager stops it: 0; by Ctrl-C, 130, as
    # a shell's commands are, so that a script running it sees it cut short)
    return EXIT_INTERRUPTED if interrupted.is_set() else EXIT_OK


def _state_head(repo: FleetRepo, branch: str, *, needed: bool = False,
                plan: bool = False, source: str = "HEAD") -> str | None:
    """The state branch's head, for a command that reads it: the local branch
    (told on stderr when a remote's copy of it, as last fetched, is newer, as
    ``git status`` tells a branch behind its upstream), else, when one
    remote's copy of it is here (a fresh clone on a CI runner), that copy,
    said on stderr. When there is none but the state is on another branch
    (``_elsewhere``), that is said, on stderr, or raised when it is
    ``needed``. ``plan``: for ``fleetq plan``, which reads a remote's state
    itself with ``--remote``. A head edited by hand (``edited_by_hand``) is
    read as it is, with a warning; one fleetq did not write too, unless people
    work on the branch (reconcile's refusal of it, for ``source``, is raised:
    the fix of a state edited by hand would reset their work)."""
    sha = _state_head_found(repo, branch, needed=needed, plan=plan)
    ref = state_ref(branch)
    if sha is not None and not written_by_fleetq(repo, sha):
        _refused(repo, branch, source)
        back = last_as_written(repo, sha, ref)
        if back is None:  # (no state of fleetq's at all: no commit to put back)
            raise GitError(f"the branch {branch!r} holds no state of fleetq's (its head "
                           f"{sha[:12]} has no {TRAILER} trailer, nor has a commit before it): "
                           f"{STATE_BRANCH_FIX}")
        fix = f"git update-ref {ref} {back[:12]}"
        print(f"fleetq: warning: reading the state branch {branch} at {sha[:12]}, which fleetq "
              f"did not write (it has no {TRAILER} trailer): its files may not be fleetq's "
              f"decisions (a job admitted there by hand would run past its quota), and "
              f"reconcile refuses it: put it back at fleetq's last commit ({fix}), and change "
              f"the fleet in its source", file=sys.stderr)
    elif sha is not None and (edited := edited_by_hand(
            repo, sha, lambda commit: f"git update-ref {ref} {commit}", ref=ref)) is not None:
        print(f"fleetq: warning: reading the state branch {branch} at {edited}",
              file=sys.stderr)
    return sha


def _state_head_found(repo: FleetRepo, branch: str, *, needed: bool, plan: bool) -> str | None:
    sha = repo.resolve(state_ref(branch))
    copies = remote_copies(repo, branch)
    if sha is not None:
        for name, copy in copies:
            if copy != sha and repo.is_ancestor(sha, copy):
                remote = name.partition("/")[0]
                fix = (f"fleetq plan --remote {remote} plans against {remote}'s state (it "
                       f"fetches it first)" if plan else
                       f"run fleetq reconcile --remote {remote} to bring it up to date")
                print(f"fleetq: {branch} is behind {name} ({copy[:12]}), as git last fetched "
                      f"it: reading {branch} ({sha[:12]}); {fix}", file=sys.stderr)
        return sha
    if not copies:
        elsewhere = _elsewhere(repo, branch)
        if elsewhere is not None:
            if needed:
                raise GitError(f"no state branch {branch!r}; {elsewhere}")
            print(f"fleetq: no state branch {branch!r}; {elsewhere}", file=sys.stderr)
            return None
        remotes = repo.remotes()
        unasked = []
        for name in remotes:  # (a shallow or single-branch clone, a CI checkout, fetches
            try:              # main alone: read as no state, it would decide all anew)
                there = repo.remote_head(name, branch)
            except GitError:
                unasked.append(name)
                continue
            if there is not None:
                also = f", or plan with --remote {name}" if plan else ""
                raise GitError(f"no branch {branch!r} here, nor a copy of {name}'s, which has "
                               f"one ({there[:12]}): fetch it (git fetch {name} "
                               f"{branch}:refs/remotes/{name}/{branch}){also}, and run again")
        if remotes and not unasked and needed:
            raise GitError(f"no state branch {branch!r} yet, here nor on "
                           f"{listed(remotes, ' and ')}; run `fleetq reconcile` first")
        if unasked:
            name = unasked[0] if len(unasked) == 1 else "<remote>"
            print(f"fleetq: no branch {branch!r} here, nor a remote's copy of it, and "
                  f"{listed(unasked, ' and ')} could not be asked: if {name} has one, fetch it "
                  f"first (git fetch {name} {branch}:refs/remotes/{name}/{branch})",
                  file=sys.stderr)
        return None
    if len(copies) != 1:
        return None
    name, sha = copies[0]
    print(f"fleetq: no local branch {branch!r}: reading {name} as git last fetched it "
          f"(git fetch {name.partition('/')[0]} for the newest)", file=sys.stderr)
    return sha


def _elsewhere(repo: FleetRepo, branch: str) -> str | None:
    """Where fleetq's state is, when not on ``branch`` (a typo, the branch of
    another fleet.yaml), and the option that reads it; ``None`` when no other
    branch here, nor a remote's copy of one, holds a state."""
    others = [(name, remote) for name, remote in state_branches(repo) if name != branch]
    if not others:
        return None
    names = sorted({name for name, _ in others})
    best = (difflib.get_close_matches(branch, names, n=1, cutoff=0) or names)[0]
    where = ", ".join(name if remote is None else f"{remote}/{name} (as git last fetched it)"
                      for name, remote in others)
    return f"the state here is on {where}: --state-branch {best} reads it"


def _state_items(repo: FleetRepo, branch: str, cache: Cache | None
                 ) -> tuple[list[dict[str, Any]], dict[int, bytes]]:
    """The state's items, and the text of each in placements.yaml when the
    cache gave it, by ``id`` of the item (a list filtered or sorted keeps
    them)."""
    sha = _state_head(repo, branch, needed=True)
    if sha is None:
        if repo.remotes():
            raise GitError(f"no state branch {branch!r} here: if a remote has one, fetch it "
                           f"(as said above); else run `fleetq reconcile` first")
        raise GitError(f"no state branch {branch!r} yet; run `fleetq reconcile` first")
    items, texts, problem = state_items(repo, sha, cache)
    if problem is not None:
        _refused(repo, branch, "HEAD")
        raise GitError(damaged_state(sha, problem))
    return items, {} if texts is None else {
        id(i): t for i, t in zip(items, texts, strict=True)}


def _cache(repo: FleetRepo, args: argparse.Namespace) -> Cache | None:
    """The repository's cache (``.git/fleetq``), unless ``--no-cache``."""
    return None if args.no_cache else Cache(repo.git_dir)


def _computed(repo: FleetRepo, args: argparse.Namespace, *, state_base: str | None,
              now: str | None, write: bool = True, lasting: bool = True,
              last_good_from: str | None = None) -> Computed:
    """``compute`` for a command that commits nothing (plan, explain, validate):
    with the cache, which it leaves holding the files it parsed and the fleet
    it read, for the next command or reconcile (not the fleet of a source
    that does not last: ``lasting`` false, a work tree's)."""
    cache = _cache(repo, args)
    computed = compute(repo, source_rev=args.source, state_base=state_base,
                       now=parse_now(now), cache=cache, save_behind=True, write=write,
                       last_good_from=last_good_from)
    if cache is not None and not lasting:
        cache.forget_inputs()
    save_read(cache, computed)
    _keep_to_the_end(cache, computed)
    return computed


def _computed_on(repo: FleetRepo, args: argparse.Namespace, branch: str, *,
                 state_base: str | None, now: str | None, write: bool = True) -> Computed:
    """``_computed`` from the state on ``branch`` (plan, explain): when it
    stops (a state that does not read back, ...), reconcile's refusal of the
    branch comes first, when it refuses it (see ``_refused``)."""
    try:
        return _computed(repo, args, state_base=state_base, now=now, write=write)
    except GitError:
        _refused(repo, branch, args.source)
        raise


def _refused(repo: FleetRepo, branch: str, source: str) -> None:
    """Raise reconcile's refusal of the state ``branch`` when people work on
    it (the source branch, a branch checked out): a read command that finds
    no state there says so, not that the state is damaged, whose fix (point
    the branch back at an earlier commit) would reset their work."""
    in_use = branch_in_use(repo, branch, source)
    if in_use is not None:
        raise GitError(f"the state branch {in_use}")


def _branch(repo: FleetRepo, args: argparse.Namespace) -> str:
    return str(args.state_branch or settings_branch(repo, getattr(args, "source", "HEAD")))


def cmd_status(args: argparse.Namespace) -> int:
    repo = FleetRepo(args.repo)
    cache = _cache(repo, args)
    items, texts = _state_items(repo, _branch(repo, args), cache)
    every = items
    if args.phase:
        items = [i for i in items if i.get("phase", "").lower() == args.phase.lower()]
    if args.namespace:
        items = [i for i in items if i["job"]["namespace"] == args.namespace]
    if args.quota:
        chosen = [i for i in items if _in_quota(str(i.get("quota") or ""), args.quota)]
        if not chosen:  # (as queue --quota: a label's name of it, or a quota of none)
            chosen = [i for i in items if _in_quota(str(i.get("quota") or ""),
                                                    _check_quota(repo, args))]
        items = chosen
    if args.cluster:
        items = [i for i in items if _on_cluster(i, args.cluster)]
    if args.cluster and not items:
        members = _state_clusters(repo, args)
        if members and args.cluster not in members:  # (as --quota: a cluster of none)
            print(f"fleetq: --cluster {args.cluster!r} names no member cluster of the "
                  f"state{did_you_mean(args.cluster, members)}; its clusters are "
                  f"{first_of(members, MAX_LISTED)}",
                  file=sys.stderr)
            return EXIT_USAGE
    if args.jobs:
        # (NAME with -n is NAMESPACE/NAME, as kubectl get NAME -n NAMESPACE takes it)
        named = [(wanted, _job_name(wanted, args.namespace)) for wanted in args.jobs]
        # (one the other filters leave out is not missing: as kubectl get with a selector)
        missing = [wanted for wanted, name in named
                   if not any(_names(i["job"], name) for i in every)]
        items = [i for i in items if any(_names(i["job"], name) for _, name in named)]
        if missing:  # (the others are listed, as kubectl get lists those it finds)
            if items:
                _print_data(items, args.output, wide=args.wide, texts=texts)
            meant = _no_job_named(_job_name(missing[0], args.namespace), (
                (str(i["job"]["kind"]), str(i["job"]["namespace"]), str(i["job"]["name"]))
                for i in every)) if len(missing) == 1 else ""
            print(f"fleetq: no job named {', '.join(map(repr, missing))} on "
                  f"{_branch(repo, args)}{meant}; `fleetq status` lists them"
                  f"{_head_not_reconciled(repo, _branch(repo, args), missing[0], cache)}",
                  file=sys.stderr)
            return EXIT_USAGE
    _print_data(items, args.output, wide=args.wide, texts=texts,
                none=_none_found(every, args.phase, args.namespace, args.quota, args.cluster))
    return EXIT_OK


def _state_clusters(repo: FleetRepo, args: argparse.Namespace) -> list[str]:
    """The member clusters the state renders for (``clusters/<name>/``)."""
    sha = _state_head(repo, _branch(repo, args), needed=True)
    return sorted({e.path.split("/")[1] for e in repo.list_tree(sha, "clusters/")}) \
        if sha else []


def _on_cluster(item: Mapping[str, Any], cluster: str) -> bool:
    """Whether a placements item has anything on ``cluster``: the job placed
    there, a copy of a Duplicated job, or a copy kept there by failover."""
    return item.get("cluster") == cluster or cluster in (item.get("copies") or ()) \
        or cluster in (item.get("keptOn") or ())


def _head_not_reconciled(repo: FleetRepo, branch: str, wanted: str,
                         cache: Cache | None) -> str:
    """The end of status's "no job named" when the state is not up to date
    with HEAD (``up_to_date``: a job just committed is there, not yet on the
    state branch): what to run; "" when it is."""
    state, head = repo.resolve(state_ref(branch)), repo.resolve("HEAD")
    if state is None or head is None or up_to_date(repo, "HEAD", state, cache=cache):
        return ""
    return (f"; HEAD ({head[:12]}) is not reconciled yet, and may have it: `fleetq reconcile` "
            f"decides it, `fleetq explain {wanted}` tells what it would decide")


def _none_found(every: list[dict[str, Any]], phase: str | None, namespace: str | None,
                quota: str | None = None, cluster: str | None = None) -> str:
    """What ``status`` says when its filters leave no job, as ``kubectl get``
    does ("No resources found in x namespace."), with the namespaces that have
    jobs when none is in the one asked for (a typo, most likely)."""
    where = (f" in phase {phase}" if phase else "") + \
        (f" in namespace {namespace}" if namespace else "") + \
        (f" in quota {quota}" if quota else "") + (f" on cluster {cluster}" if cluster else "")
    return f"No jobs{where}{_other_namespaces(every, namespace, bool(phase))}."


def _other_namespaces(every: list[dict[str, Any]], namespace: str | None,
                      filtered: bool) -> str:
    """The end of "no jobs in namespace x" when ``namespace`` has no job at
    all (a typo, most likely): the one meant, and the namespaces that have
    jobs; "" when it has some (``filtered``: other filters left them out)."""
    if not namespace or any(i["job"]["namespace"] == namespace for i in every):
        return ""
    spaces = sorted({str(i["job"]["namespace"]) for i in every})
    if not spaces:
        return ""
    lowered = {space.lower(): space for space in spaces}
    close = [lowered[c] for c in difflib.get_close_matches(namespace.lower(), list(lowered), n=1)]
    meant = f" (did you mean {close[0]}?)" if close else ""
    if filtered:
        meant = f", which has no job at all{meant}"
    return f"{meant}: the jobs are in {first_of(spaces, MAX_LISTED)}"


MAX_LISTED = 10  # namespaces named when none has the jobs asked for


def _names(job: Mapping[str, Any], name: Named) -> bool:
    """Whether an item's ``job`` is the one ``name`` names."""
    return name.names(str(job["kind"]), str(job["namespace"]), str(job["name"]),
                      api_group(str(job.get("apiVersion", ""))))


def cmd_validate(args: argparse.Namespace) -> int:
    repo = FleetRepo(args.repo)
    # what is about to be committed: the work tree, files not yet added and all
    # (a commit of it on no branch, for the time of the check), unless a revision
    # is named
    with contextlib.ExitStack() as stack:
        work_tree = None
        if args.source is None:
            head = repo.resolve("HEAD")
            if head is not None and written_by_fleetq(repo, head):
                raise GitError(f"HEAD ({head[:12]}) is a state commit, written by fleetq (the "
                               f"state branch is checked out): check out the source branch "
                               f"(e.g. git checkout main), or name it with --source")
            args.source = "HEAD"
            try:
                work_tree = stack.enter_context(
                    repo.work_tree_commit(DEFAULT_IDENTITY, parse_now(None)))
            except (OSError, GitError) as exc:  # (a nested repository, ...: the commit)
                print(f"fleetq: the work tree could not be read ({exc}); checking HEAD",
                      file=sys.stderr)
            if work_tree is not None and work_tree != repo.resolve("HEAD"):
                args.source = work_tree
            else:
                work_tree = None
        return _validate(repo, args, work_tree)


def _validate(repo: FleetRepo, args: argparse.Namespace, work_tree: str | None) -> int:
    """``fleetq validate`` of ``args.source`` (the ``work_tree`` commit, if any).
    A file that breaks is told, and the fleet checked as a reconcile would go
    on with it: with its last good version, when the state branch has one."""
    # the state branch is named by the source's fleet.yaml (a work tree's: HEAD's)
    named_by = "HEAD" if work_tree is not None else args.source
    state = repo.resolve(state_ref(settings_branch(repo, named_by)))
    computed = _computed(repo, args, state_base=None, now=None, write=False,
                         lasting=work_tree is None,
                         last_good_from=state if state is not None
                         and written_by_fleetq(repo, state) else None)
    args.source = named_by
    if COMMIT_TEMPLATE in computed.inputs.templates:  # (its mistakes told now, not at a commit)
        commit_message(computed, Overlays(computed.inputs.templates))
    branch_problems = state_branch_problems(repo, computed.inputs, args.source)
    problems = sorted(computed.problems + branch_problems
                      + remote_problems(repo, computed.inputs))
    # the clusters' reported nodes, when the state branch has them: declared
    # capacity that is not there is a warning (see ``capacity_problems``)
    if branch_problems:
        state = None
    if state is not None:
        entries = {e.path: e.sha for e in repo.list_tree(state, INVENTORY_DIR)
                   if e.type == "blob"}
        problems = sorted(set(problems + capacity_problems(repo, entries, computed.inputs)))
    errors = [p for p in problems if p.severity == "error"]
    if args.output in ("json", "yaml"):
        _print_value([problem_value(p) for p in problems], args.output)
    else:
        if problems:
            print(problems_text(problems))
        inputs = computed.inputs
        print(f"{inputs.files} files, {len(inputs.jobs) + len(inputs.invalid)} jobs, "
              f"{len(inputs.clusters)} member clusters, {len(inputs.policies)} policies: "
              f"{len(errors)} error(s), {len(problems) - len(errors)} warning(s)"
              + (" (the work tree, with changes not committed)" if work_tree else ""))
    return EXIT_PROBLEMS if errors else EXIT_OK


def cmd_queue(args: argparse.Namespace) -> int:
    repo = FleetRepo(args.repo)
    items, texts = _state_items(repo, _branch(repo, args), _cache(repo, args))
    every = items
    items = [i for i in items if i.get("phase") == "Queued"]
    if args.namespace:
        items = [i for i in items if i["job"]["namespace"] == args.namespace]
    if args.quota:
        chosen = [i for i in items if _in_quota(str(i.get("quota") or ""), args.quota)]
        if not chosen:  # (a quota with none queued, a quota named as a label names it, ...)
            path = _check_quota(repo, args)
            chosen = [i for i in items if _in_quota(str(i.get("quota") or ""), path)]
        items = chosen
    # (a job with no position waits in no quota queue: its policy places it by
    # capacity alone, with no quota check; listed after the queues)
    items.sort(key=lambda i: (i.get("position") is None, str(i.get("quota")),
                              i.get("position") or 0))
    if args.output != "table":
        _print_data(items, args.output, texts=texts)
        return EXIT_OK
    if not items:  # (on stderr, as status says it: the table has no line)
        print("No queued jobs" + (f" in namespace {args.namespace}" if args.namespace else "")
              + (f" in quota {args.quota}" if args.quota else "")
              + _other_namespaces(every, args.namespace, True) + ".", file=sys.stderr)
        return EXIT_OK
    rows = [(i.get("quota") if i.get("position") is not None else "- (by capacity)",
             i.get("position"), i["job"]["namespace"], i["job"]["name"],
             i["job"]["kind"], i.get("priority"), i.get("enqueuedAt"),
             i.get("reason", "") if args.wide else short(str(i.get("reason", ""))))
            for i in items]
    print(table(["QUEUE", "POS", "NAMESPACE", "NAME", "KIND", "PRIORITY", "ENQUEUED",
                 "REASON"], rows))
    return EXIT_OK


def _in_quota(path: str, quota: str) -> bool:
    """Whether the quota at ``path`` (root/algorithm/video) is ``quota`` or
    under it, ``quota`` a path (with or without ``root/``) or a quota's name
    (``algorithm``: every queue of the team)."""
    quota = quota.strip("/")
    return (quota in path.split("/") if "/" not in quota
            else f"{path}/".startswith((f"{quota}/", f"root/{quota}/")))


def _check_quota(repo: FleetRepo, args: argparse.Namespace) -> str:
    """``--quota`` as a path of the fleet's ElasticQuotaTree (at HEAD), named
    also as a job's quota label may name it (its path joined with ``-``);
    a usage error when it names none: an empty list would say its queue is
    empty."""
    cache = _cache(repo, args)
    _, inputs = read_inputs(repo, "HEAD", cache if cache is not None else ParsedJobs(), cache)
    paths = sorted(inputs.tree.nodes) if inputs.tree is not None else []
    if inputs.tree is not None and args.quota in inputs.tree.by_alias:
        return inputs.tree.by_alias[args.quota]
    if not any(_in_quota(path, args.quota) for path in paths):
        raise GitError(f"--quota {args.quota!r} names no quota of the ElasticQuotaTree; name a "
                       f"quota or its path: {', '.join(paths) or 'the fleet has none'}")
    return str(args.quota)


def problem_value(problem: Problem) -> dict[str, object]:
    """A problem as ``-o json`` and ``-o yaml`` give it (validate's, plan's):
    ``line`` null when it is of the file as a whole (its text names no line)."""
    return {"path": shown_path(problem.path), "line": problem.line or None,
            "severity": problem.severity, "message": problem.message}


def cmd_plan(args: argparse.Namespace) -> int:
    repo = FleetRepo(args.repo)
    args.remote = _remote(repo, args, args.source)
    branch = _branch(repo, args)
    check_source(repo, args.source)
    base = repo.fetch(args.remote, branch) if args.remote else _state_head(
        repo, branch, plan=True, source=args.source)
    if args.remote and base is not None:
        check_remote_state(repo, args.remote, branch, base)
    # (nothing written: a plan reads, and may run where the repository is read-only)
    computed = _computed_on(repo, args, branch, state_base=base, now=args.now, write=False)
    computed.problems.extend(clock_behind(repo, branch, base, parse_now(args.now)))
    files = diff_trees(repo, base, computed.files)
    changed = bool(files)
    made_from = state_source(repo, base, computed.source.sha, args.remote)
    # (the state is made from a later commit, or the source is an older commit of a
    # branch that went on past it and past the state's source: a reconcile of it makes
    # no change, as it would undo what came after)
    newer, moved_on = later_than_source(repo, None, computed.source.sha, base)
    rolls_back = newer is not None or moved_on is not None
    if args.output in ("json", "yaml"):
        _print_value({"source": computed.source.sha, "stateBase": base, "changed": changed,
                      "rollsBack": rolls_back,
                      "stateSource": None if made_from is None else {
                          "commit": made_from[0], "contained": made_from[1]},
                      "changes": computed.changes, "jobChanges": _job_changes(computed),
                      "otherChanges": _quiet_changes(computed),
                      "files": [{"change": c, "path": p} for c, p in files],
                      "problems": [problem_value(p) for p in computed.problems]},
                     args.output)
    else:
        print(f"fleetq plan: {computed.source.sha[:12]} onto {branch} "
              f"({(base or 'empty')[:12]})")
        if newer is not None:
            print(f"\nNote: the state is made from {newer[:12]}, a later commit than "
                  f"{computed.source.sha[:12]}: fleetq reconcile of it makes no change (it "
                  f"would roll the state back); below is what it would change if it did.")
        elif moved_on is not None:
            print(f"\nNote: {computed.source.sha[:12]} is an older commit of {moved_on[0]!r}, "
                  f"which went on past it to {moved_on[1][:12]}: fleetq reconcile of it makes "
                  f"no change (it would undo the later commits); below is what it would "
                  f"change if it did.")
        elif made_from is not None and made_from[1] is None:
            fetch = (f"git fetch {args.remote or '<remote>'} {made_from[0][:12]}"
                     if repo.resolve(made_from[0]) is None else
                     "git fetch --unshallow; on CI, a checkout of the whole history")
            print(f"\nNote: the state is made from {made_from[0][:12]}, which is not in the "
                  f"history this clone has of {args.source}: whether {args.source} lacks it "
                  f"(and this plan would undo what it changed) cannot be told here ({fetch}).")
        elif made_from is not None and not made_from[1]:
            print(f"\nNote: {args.source} lacks {made_from[0][:12]}, the commit the state was "
                  f"made from: this is the plan of reconciling {args.source} as it is, which "
                  f"would undo what the commits it lacks changed. Merge or rebase it onto the "
                  f"source branch for the plan of the merge.")
        if computed.problems:
            print("\nProblems:")
            print(problems_text(computed.problems))
        anew = said_anew(repo, computed) if not changed else []
        if anew:
            why = {OBSERVED_TRAILER: "that it took in the clusters' latest reports",
                   DUE_TRAILER: "when the state next changes on its own"}
            print(f"\nNo changes to the state's files. A reconcile would commit once, to record "
                  f"{' and '.join(why[n] for n in anew)} ({', '.join(anew)}).")
        elif not changed and any(p.severity == "error" for p in computed.problems):
            errors = sum(p.severity == "error" for p in computed.problems)
            print(f"\nNo changes to the state, but {errors} error(s) above: the fleet goes on "
                  f"as it was until they are fixed, and `fleetq validate` exits 1 until then.")
        elif not changed:
            print("\nNo changes. The state branch is up to date.")
        else:
            print("\nJobs:")
            quiet = _quiet_jobs(computed)
            for line in computed.changes or ([] if any(quiet.values()) else [
                    "(no job changes phase, cluster or quota)"]):
                print(f"  {line}")
            for keys, what in ((quiet["size"], "change their pods or requests"),
                               (quiet["priority"], "change priority"),
                               (quiet["position"], "change place in their queues (queued)"),
                               (quiet["reason"], "change only the reason given")):
                if keys:
                    named = "; ".join(f"{k.kind} {k.namespace}/{k.name}"
                                      for k in keys[:MAX_QUIET_NAMED])
                    more = (f" and {len(keys) - MAX_QUIET_NAMED} more"
                            if len(keys) > MAX_QUIET_NAMED else "")
                    print(f"  ({len(keys)} job(s) {what}: {named}{more})")
            waiting = [(d.key, d.reason) for d in _changed(computed)
                       if d.phase in WAITS and d.reason]
            if waiting:
                print("\nWhy they wait:")
                for key, reason in waiting[:MAX_WAITING_TOLD]:
                    print(f"  {key.kind} {key.namespace}/{key.name}: {reason}")
                if len(waiting) > MAX_WAITING_TOLD:
                    print(f"  (and {len(waiting) - MAX_WAITING_TOLD} more: `fleetq plan -o "
                          f"json` gives each one's reason)")
            print("\nState files:")
            for change, path in files:
                print(f"  {change} {path}")
            counts = {c: sum(1 for x, _ in files if x == c) for c in "+~-"}
            print(f"\nPlan: {len(computed.changes)} job change(s); {counts['+']} file(s) to "
                  f"add, {counts['~']} to change, {counts['-']} to remove.")
    if args.source == "HEAD":
        _tell_work_tree(repo, "plan", "planned")
    # (--exit-code: whether a reconcile of the source would change the state)
    return EXIT_PROBLEMS if changed and not rolls_back and args.exit_code else EXIT_OK


# the phases of a job that does not run, whose reason says why (plan tells it, of
# the first so many jobs that change to one)
WAITS = (Phase.QUEUED, Phase.INADMISSIBLE, Phase.INVALID)
MAX_WAITING_TOLD = 20


def _changed(computed: Computed) -> Iterator[Decision]:
    """The decisions whose phase, cluster or quota change (or new), in
    placements.yaml's order."""
    prior = computed.prior
    for d in computed.result.decisions:
        before = prior.get(d.key)
        if before is None or (before.phase, before.cluster, before.quota) != (
                d.phase, d.cluster, d.quota):
            yield d


def _job_changes(computed: Computed) -> list[dict[str, Any]]:
    """The jobs whose phase, cluster or quota change (those ``changes`` tells
    in words), as fields for a program: each job as placements.yaml names it,
    and its ``before`` and ``after`` (``phase``, ``cluster``, ``quota`` and
    ``reason``, each null where it has none; ``before`` null for a job new to
    the state, ``after`` for one deleted), in placements.yaml's order."""
    def where(d: Decision) -> dict[str, str | None]:
        return {"phase": d.phase.value, "cluster": d.cluster, "quota": d.quota,
                "reason": d.reason or None}

    prior = computed.prior
    out = []
    for d in _changed(computed):
        before = prior.get(d.key)
        out.append({"job": {"apiVersion": d.api_version, "kind": d.key.kind,
                            "namespace": d.key.namespace, "name": d.key.name},
                    "before": where(before) if before is not None else None, "after": where(d)})
    seen = {d.key for d in computed.result.decisions}
    for key in sorted(k for k in prior if k not in seen):
        was = prior[key]
        out.append({"job": {"apiVersion": was.api_version, "kind": key.kind,
                            "namespace": key.namespace, "name": key.name},
                    "before": where(was), "after": None})
    return out


def _quiet_changes(computed: Computed) -> dict[str, int]:
    """How many jobs of each of ``_quiet_jobs``."""
    return {what: len(keys) for what, keys in _quiet_jobs(computed).items()}


MAX_QUIET_NAMED = 5  # jobs plan names of each of _quiet_jobs


def _quiet_jobs(computed: Computed) -> dict[str, list[JobKey]]:
    """The jobs whose phase, cluster and quota stay (the changes told one by
    one) but that change, each once, by the first of: their pods or requests
    ("size"), their priority, their place in their queue ("position"), the
    reason given ("reason"); in placements.yaml's order."""
    out: dict[str, list[JobKey]] = {"size": [], "priority": [], "position": [], "reason": []}
    prior = computed.prior
    for d in computed.result.decisions:
        before = prior.get(d.key)
        if before is None or before is d or before.phase is not d.phase or \
                before.cluster != d.cluster or before.quota != d.quota:
            continue
        if before.requests != d.requests or before.pod_sets != d.pod_sets:
            out["size"].append(d.key)
        elif before.priority != d.priority:
            out["priority"].append(d.key)
        elif before.position != d.position:
            out["position"].append(d.key)
        elif before.reason != d.reason:
            out["reason"].append(d.key)
    return out


def _phase(text: str) -> str:
    """``--phase``: a phase of DESIGN §4, in any case."""
    for phase in Phase:
        if phase.value.lower() == text.lower():
            return phase.value
    raise argparse.ArgumentTypeError(
        f"{text!r} is no phase: one of {', '.join(p.value for p in Phase)}")


@dataclass(frozen=True)
class Named:
    """What a job's name given on the command line names: ``ways`` of reading
    it, each (kind, namespace, name), an empty part matching any."""

    ways: tuple[tuple[str, str, str], ...]

    @property
    def name(self) -> str:
        return self.ways[0][2]

    def names(self, kind: str, namespace: str, job: str, group: str) -> bool:
        """Whether job ``kind namespace/job`` of API ``group`` is one it names:
        a kind as kubectl takes it, in any case, plural or not, with its API
        group or not (``pytorchjobs.kubeflow.org``)."""
        return any(job == name and (not ns or namespace == ns) and _kind_is(want, kind, group)
                   for want, ns, name in self.ways)


def _kind_is(want: str, kind: str, group: str) -> bool:
    """Whether ``want`` (as kubectl takes a kind: ``Job``, ``jobs``,
    ``job.batch``; empty: any) names ``kind`` of API ``group``."""
    if not want:
        return True
    word, _, in_group = want.lower().partition(".")
    version, _, after = in_group.partition(".")  # (mpijobs.v2beta1.kubeflow.org)
    return word in (kind.lower(), kind.lower() + "s") and (
        in_group in ("", group.lower()) or (version[:1] == "v" and after == group.lower()))


JOB_KIND_WORDS = frozenset(w for k in KINDS for w in (k.kind.lower(), k.kind.lower() + "s"))


def _job_name(text: str, namespace: str | None = None) -> Named:
    """What NAME, NAMESPACE/NAME, KIND/NAME (as kubectl writes it) or
    KIND/NAMESPACE/NAME names; ``namespace``: ``-n``'s, for a name without one."""
    parts = text.split("/")
    if len(parts) > 3 or not parts[-1]:
        raise GitError(f"{text!r} is no job name: give NAME, NAMESPACE/NAME, KIND/NAME or "
                       f"KIND/NAMESPACE/NAME")
    ns = namespace or ""
    if len(parts) == 1:
        return Named((("", ns, parts[0]),))
    if len(parts) == 3:
        if namespace and parts[1] and parts[1] != namespace:
            raise GitError(f"{text!r} names namespace {parts[1]!r}, and -n {namespace!r}: "
                           f"give one")
        return Named(((parts[0], parts[1], parts[2]),))
    first, name = parts
    ways = [] if namespace else [("", first, name)]  # (NAMESPACE/NAME)
    if first.split(".", 1)[0].lower() in JOB_KIND_WORDS:  # (KIND/NAME, as kubectl)
        ways.append((first, ns, name))
    if not ways:
        raise GitError(f"{text!r} with -n {namespace}: {first!r} is no job kind (give "
                       f"KIND/NAME, or NAME with -n)")
    return Named(tuple(ways))


def _no_job_named(named: Named, jobs: Iterable[tuple[str, str, str]]) -> str:
    """The end of "no job named", of the ``jobs`` there are (kind, namespace,
    name): those whose names are closest to it, or that it begins (a
    generateName prefix: the API server adds 5 characters)."""
    by_name: dict[str, list[str]] = {}  # (by its name in lower case: NAME is name)
    for kind, namespace, name in jobs:
        by_name.setdefault(name.lower(), []).append(f"{kind}/{namespace}/{name}")
    wanted = named.name.lower()
    close = [n for n in sorted(by_name) if n.startswith(wanted)][:3] or \
        difflib.get_close_matches(wanted, list(by_name), n=3, cutoff=0.8)
    if not close:
        return ""
    return f" (did you mean {listed([t for n in close for t in sorted(by_name[n])])}?)"


def _unread_naming(repo: FleetRepo, computed: Computed, name: str) -> str:
    """The end of explain's "no job named" when files of the source hold what
    fleetq could not read (a YAML error, in a file of one job or of several; a
    job in a JSON file or a *.YAML one): the file whose text names the job,
    with what was said of it, else how many such files there are; else the
    usual hint."""
    unread: dict[str, Problem] = {}
    for problem in computed.problems:
        if (problem.severity == "error" and is_yaml(problem.path)) or \
                problem.message.startswith("not read: "):
            unread.setdefault(problem.path, problem)
    if not unread:
        return "; `fleetq status` lists them"
    naming = re.compile(  # (name: x, in a block or a flow mapping; "name": "x", in JSON)
        rf"(^|[{{,\s])[\"']?name[\"']?\s*:\s*[\"']?{re.escape(name)}[\"']?\s*([,}}#]|$)",
        re.MULTILINE)
    for path in sorted(unread)[:50]:
        text = repo.run("show", f"{computed.source.sha}:{path}", check=False).decode(
            "utf-8", "replace")
        if naming.search(text):
            said = unread[path]
            return (f": {shown_path(path)} names it, but fleetq cannot read it there (line "
                    f"{said.line}: {said.message}); fix the file (`fleetq validate` lists every "
                    f"problem)")
    count = len(unread)
    return (f"; `fleetq status` lists them. {count} file{'s' if count != 1 else ''} there "
            f"{'have' if count != 1 else 'has'} errors, or jobs fleetq does not read "
            f"(`fleetq validate` lists them)")


def _fits(computed: Computed, job: Job, candidates: list[str] | None) -> Fits:
    """``explain``'s ``fits`` for ``job``: why it would not fit on each of its
    candidate clusters as the cycle left them, with some running jobs gone."""
    jobs = computed.inputs.jobs
    names = candidates if candidates is not None else [c.name for c in computed.inputs.clusters]

    def fits(gone: Collection[Decision] | None) -> Mapping[str, str]:
        if gone is None:
            return computed.result.cluster_fits(job, names, empty=True)
        return computed.result.cluster_fits(job, names, {
            x.key: jobs[x.key].job.pod_sets for x in gone if x.key in jobs})
    return fits


def _admits(computed: Computed, d: Decision) -> Admits | None:
    """``explain``'s ``admits`` for a queued job ``d``: the next reconcile, from
    the state this one makes, with quota maxes raised."""
    inp = computed.cycle_input
    if inp is None or d.phase is not Phase.QUEUED:
        return None
    return admits_next(inp, {x.key: prior_from_decision(x) for x in computed.result.decisions},
                       d.key)


def _ruled_out(computed: Computed, d: Decision, job: Job, policy: Policy) -> dict[str, str]:
    """``explain``'s ``ruled_out`` for ``job``: the clusters its ``policy`` rules
    out (``ruled_out``) that have room for it now, as the cycle left them
    (an Inadmissible job's: that would hold it empty), but those it failed
    on (it never goes there again)."""
    if d.phase not in (Phase.QUEUED, Phase.INADMISSIBLE):
        return {}
    out = {name: why for name, why in ruled_out(
        policy, d.key.kind_ref, computed.inputs.clusters).items()
        if name in computed.result.clusters and name not in d.failed_on}
    if not out:
        return {}
    short = computed.result.cluster_fits(job, out, empty=d.phase is Phase.INADMISSIBLE)
    return {name: why for name, why in out.items() if name not in short}


def _read_by_fleetq(path: str) -> bool:
    """Whether a change to ``path`` (a line of ``git status --porcelain``, a
    rename's new name) could change what fleetq reads: not a note, a README."""
    path = path.split(" -> ")[-1]
    return is_yaml(path) or path.endswith(".json") or path.startswith("templates/") or \
        path.endswith("/") or path in ("fleet.yaml", "fleet.yml")


def _work_tree_exclude(repo: FleetRepo) -> tuple[str, ...]:
    """The paths the work tree's fleet.yaml says not to read (``spec.exclude``:
    a change there is none fleetq would see); none when it does not read."""
    for name in FLEET_FILES:
        try:
            data = (repo.root / name).read_bytes()
        except OSError:
            continue
        read = FleetInputs()
        read_fleet_settings({name: SourceFile(name, "", data)}, read)
        return read.exclude
    return ()


def _tell_work_tree(repo: FleetRepo, command: str = "explain", done: str = "explained"
                    ) -> None:
    """Say on stderr that the work tree holds changes not committed, which a
    ``command`` that reads HEAD does not see (an edit made to try its advice,
    a new job not yet committed), and the first of them."""
    if repo.bare:
        return
    exclude = _work_tree_exclude(repo)
    changed = [line[3:].strip() for line in repo.run(
        "status", "--porcelain", "--untracked-files=all", check=False).decode(
        errors="replace").splitlines() if _read_by_fleetq(line[3:].strip().strip('"'))
        and not excluded(line[3:].strip().strip('"').split(" -> ")[-1], exclude)]
    if changed:
        more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
        print(f"fleetq: the work tree has {len(changed)} change(s) not committed ({changed[0]}"
              f"{more}); {command} reads HEAD, without them (commit them to have them "
              f"{done}; fleetq validate checks them first)", file=sys.stderr)


def cmd_explain(args: argparse.Namespace) -> int:
    repo = FleetRepo(args.repo)
    branch = _branch(repo, args)
    check_source(repo, args.source)
    base = _state_head(repo, branch, source=args.source)
    computed = _computed_on(repo, args, branch, state_base=base, now=args.now, write=False)
    wanted = args.job
    name = _job_name(wanted, args.namespace)
    matches = [d for d in computed.result.decisions
               if name.names(d.key.kind, d.key.namespace, d.key.name, d.key.group)]
    if not matches:
        gone = [d for d in computed.prior.values()
                if name.names(d.key.kind, d.key.namespace, d.key.name, d.key.group)]
        if len(gone) == 1:  # (deleted from the source: the state still has it)
            lines = _deleted(gone[0], computed.source.sha)
            if args.output in ("json", "yaml"):
                _print_value(_explained(gone[0], lines), args.output)
            else:
                print("\n".join(lines))
            return EXIT_OK
        meant = _no_job_named(name, ((d.key.kind, d.key.namespace, d.key.name)
                                     for d in computed.result.decisions))
        print(f"fleetq: no job named {wanted!r} in {computed.source.sha[:12]}{meant}"
              f"{_unread_naming(repo, computed, name.name)}", file=sys.stderr)
        if args.source == "HEAD":
            _tell_work_tree(repo)
        return EXIT_USAGE
    if len(matches) > 1:
        names = ", ".join(f"{d.key.kind}/{d.key.namespace}/{d.key.name}" for d in matches)
        print(f"fleetq: {wanted!r} is ambiguous ({names}); name it as one of these "
              f"(KIND/NAMESPACE/NAME)", file=sys.stderr)
        return EXIT_USAGE
    d = matches[0]
    inputs = computed.inputs
    source = inputs.jobs.get(d.key)
    # the clusters its policy selects for it, but those it failed on and those that refuse it
    job_policy = next((p for p in inputs.policies if p.ref == d.policy), None)
    refused = () if source is None else with_no_queue_refusal(source.job.refused) \
        if d.quota is None else with_queue_refusal(
            source.job.refused, inputs.tree.nodes[d.quota].name
            if inputs.tree is not None and d.quota in inputs.tree.nodes else None)
    candidates = None if job_policy is None else [n for group in narrowed(
        *candidate_groups(job_policy, d.key.kind_ref, inputs.clusters), d.failed_on,
        refused, inputs.clusters)[0] for n in group]
    lines = explain_decision(d, decisions=computed.result.decisions, tree=inputs.tree,
                             quota_used=computed.result.quota_used,
                             cluster_free=computed.result.cluster_free,
                             clusters={c.name: c for c in inputs.clusters},
                             policy=inputs.settings.for_quota(d.quota).preemption
                             if d.quota else PreemptionPolicy.LOWER_PRIORITY,
                             preemptible=source is None or source.job.preemptible,
                             candidates=candidates,
                             failover=job_policy.failover if job_policy is not None else None,
                             deleted_when=source.job.deleted_when if source is not None
                             else (False, False),
                             not_preemptible={k for k, s in inputs.jobs.items()
                                              if not s.job.preemptible},
                             fits=_fits(computed, source.job, candidates)
                             if source is not None and d.phase is Phase.QUEUED else None,
                             strict_fifo=d.quota is not None and inputs.settings.for_quota(
                                 d.quota).strategy is QueueStrategy.STRICT_FIFO,
                             settings=inputs.settings, admits=_admits(computed, d),
                             classes=(inputs.priority_classes,
                                      inputs.workload_priority_classes,
                                      source is not None and
                                      source.job.workload_priority_class is not None),
                             ruled_out=_ruled_out(computed, d, source.job, job_policy)
                             if source is not None and job_policy is not None else None)
    if source is not None:
        lines.extend(_counted_as_it_runs(d, source.job))
    _tell_fleet_read(computed)
    if args.source == "HEAD":
        _tell_work_tree(repo)
    said = _not_yet(repo, args, base, computed, d)
    if args.output in ("json", "yaml"):
        _print_value(_explained(d, lines, said[1] if said is not None else None),
                     args.output)
    else:
        print("\n".join(([said[0], ""] if said is not None else []) + lines))
    return EXIT_OK


def _tell_fleet_read(computed: Computed) -> None:
    """explain's word, on stderr, of a fleet it explains as it goes on with
    files that do not read: each read in its last good version, or as it is
    (a shallow clone's history cut short), and how many errors it has (which
    ``fleetq validate`` tells)."""
    said = [p for p in computed.problems
            if p.severity == "warning" and p.message.startswith((GOES_ON_WITH, CUT_SHORT))]
    for p in said:
        print(p, file=sys.stderr)
    errors = sum(p.severity == "error" for p in computed.problems)
    if errors:
        print(f"fleetq: the fleet has {errors} error(s), which fleetq validate tells: this is "
              f"what a reconcile would decide with them", file=sys.stderr)


def _counted_as_it_runs(d: Decision, job: Job) -> list[str]:
    """explain's line for a job admitted with other requests than its source
    asks for now: a running batch Job keeps the pod template (or, on a kueue
    cluster, the parallelism) it was sent with, and the running pods of a
    job of another kind the requests they started with, and it is counted as
    it runs (``pipeline.running_forms``), which its user, having lowered a
    request, would not see in its reason."""
    if d.phase is not Phase.ADMITTED or d.requests == job.requests:
        return []
    names = [name for name in sorted({*d.requests, *job.requests})
             if d.requests.get(name, 0) != job.requests.get(name, 0)]

    def of(requests: Mapping[str, int]) -> str:
        return ", ".join(f"{name} {format_quantity(name, requests.get(name, 0))}"
                         for name in names)

    return [f"- counted as it runs on {d.cluster}, as it was sent there: {of(d.requests)} "
            f"(its source asks for {of(job.requests)} now, which takes effect when it runs "
            f"again: placed anew, or under a new name)"]


def _explained(d: Decision, lines: list[str],
              not_reconciled: dict[str, Any] | None = None) -> dict[str, Any]:
    """explain's ``-o json`` and ``-o yaml`` document: the job's placements
    item, as ``status -o json`` lists it (``job`` its apiVersion, kind,
    namespace and name), with the lines said of it (``explanation``) and,
    when the state branch has not taken its source in, what the state says
    of it meanwhile (``notReconciled``)."""
    return {**decision_item(d), "explanation": lines,
            **({"notReconciled": not_reconciled} if not_reconciled is not None else {})}


def _deleted(d: Decision, sha: str) -> list[str]:
    """explain's lines for a job the state branch has that no file of source
    commit ``sha`` defines any more (its file deleted, or the job renamed)."""
    where = ", ".join((d.cluster or "", *d.copies))
    if d.phase is Phase.ADMITTED:
        then = f"deletes it from {where}, and frees its quota and room there"
    elif d.phase in (Phase.FINISHED, Phase.FAILED) and d.cluster:
        then = f"takes its object off {where} (it ended: nothing runs)"
    else:
        then = "drops it" + (f" from queue {d.quota}" if d.position else "") + \
            " (nothing of it runs)"
    state = d.phase.value + (f" on {where}" if d.phase is Phase.ADMITTED else "")
    return [f"{d.key.kind} {d.key.namespace}/{d.key.name} is {state} on the state branch, "
            f"but no file of {sha[:12]} defines it any more: the next reconcile {then}.",
            f"It was defined at {shown_path(d.path)} (blob {d.blob[:12]}): to keep it, restore "
            f"that file, as it was."]


def _not_yet(repo: FleetRepo, args: argparse.Namespace, base: str | None, computed: Computed,
             d: Decision) -> tuple[str, dict[str, Any]] | None:
    """When explain decided from a source the state branch has not taken in
    (a commit not reconciled yet, a report since): a note that this is what a
    reconcile would decide, and what the state says of the job meanwhile (the
    clusters run what it says); ``None`` when the state is up to date, or
    says of the job what a reconcile would (its phase, cluster and place)."""
    if base is not None and up_to_date(repo, args.source, base, parse_now(args.now),
                                       _cache(repo, args)):
        return None
    sha = computed.source.sha[:12]
    if base is None:
        return (f"Note: there is no state yet; this is what the first reconcile of {sha} "
                f"would decide.", {"source": computed.source.sha, "state": None})
    prior = computed.prior.get(d.key)  # (the state's decision, as the reconcile read it)
    was = decision_item(prior) if prior is not None else None
    decided = decision_item(d)
    if was is not None and all(was.get(k) == decided.get(k)
                               for k in ("phase", "cluster", "position")):
        return None  # (a push of other files, ...: the state says of it what a reconcile would)
    if was is None:
        now = "the state branch does not list it yet"
    else:
        now = (f"the state branch says {was.get('phase')}"
               + (f" on {was['cluster']}" if was.get("cluster") else "")
               + (f", position {was['position']} in queue {was.get('quota')}"
                  if was.get("position") else ""))
    said = trailers(repo.commit_info(base).message)
    made_from, from_commit = said.get(TREE_TRAILER), said.get(TRAILER)
    if made_from != computed.source.tree and from_commit and \
            repo.is_ancestor(computed.source.sha, from_commit):  # (--source an older commit)
        return (f"Note: {sha} is older than {from_commit[:12]}, the commit the state branch "
                f"was made from: below is what a reconcile of {sha} would decide; {now}, and "
                f"that is what the clusters run.",
                {"source": computed.source.sha, "state": was, "stateSource": from_commit})
    what = (f"{sha} is not reconciled yet" if made_from != computed.source.tree else
            "the state branch has not taken in what changed since its last reconcile (the "
            "clusters' reports, the time)")
    return (f"Note: {what}: below is what a reconcile would decide; {now}, and that is what "
            f"the clusters run until fleetq reconcile runs.",
            {"source": computed.source.sha, "state": was})


def cmd_report(args: argparse.Namespace) -> int:
    """A member cluster's report from ``kubectl get -o yaml`` output: its jobs
    (and nodes, when listed), committed beside the state."""
    repo = FleetRepo(args.repo)
    now = parse_now(args.now)
    where = "<stdin>" if args.file == "-" else args.file
    try:
        data = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    except OSError as exc:
        raise GitError(f"cannot read {where}: {exc.strerror}") from exc
    docs, problem = parse_documents(where, data)
    if problem is None and not any(isinstance(d.value, dict) and d.value.get("kind")
                                   and d.value.get("apiVersion") for d in docs):
        first = docs[0].value if docs else None
        what = "" if first is None else ": its first document has no apiVersion and kind" \
            if isinstance(first, dict) else f": its first document is {yaml_type(first)}"
        problem = Problem(where, docs[0].line if docs else 0, (
            f"no Kubernetes object in it{what} (did kubectl fail?); give it the output of "
            f"kubectl get ... -o yaml (an empty List when the cluster has none)"))
    if problem is not None:
        print(problems_text([problem]), file=sys.stderr)
        print("fleetq: nothing recorded; fix the input (the output of kubectl get ... -o yaml)",
              file=sys.stderr)
        return EXIT_USAGE
    _fleet_clusters(repo, args, [args.cluster])
    report = cluster_report(args.cluster, rfc3339(now), docs, where=where,
                            complete=args.complete)
    wrong = report.not_its_own()
    if wrong is not None:
        print(f"{where}: error: {wrong}; give --cluster the cluster kubectl read "
              f"(kubectl config current-context names it)", file=sys.stderr)
        print("fleetq: nothing recorded", file=sys.stderr)
        return EXIT_USAGE
    return _record(repo, args, [report], now)


def _fleet_clusters(repo: FleetRepo, args: argparse.Namespace, names: Sequence[str]
                    ) -> dict[str, MemberCluster]:
    """The fleet's member clusters at ``args.source``, read as a reconcile
    reads them (a cluster's file that broke, in its last good version: the
    cluster is still in the fleet, and its jobs run there); a usage error when
    one of ``names`` is none of them (a report is filed under its cluster's
    name)."""
    check_source(repo, args.source)
    cache = _cache(repo, args)
    branch = _branch(repo, args)
    state = repo.resolve(state_ref(branch)) or next(
        (sha for _, sha in remote_copies(repo, branch)), None)
    _, inputs = read_inputs(repo, args.source, cache if cache is not None else ParsedJobs(),
                            cache, last_good=earlier_versions(repo, state, args.source))
    clusters = {c.name: c for c in inputs.clusters}
    unknown = [name for name in names if name not in clusters]
    if unknown:
        raise GitError(f"no MemberCluster named {', '.join(map(repr, unknown))} in "
                       f"{args.source}; the fleet has {', '.join(sorted(clusters)) or 'none'}")
    return clusters


def cmd_observe(args: argparse.Namespace) -> int:
    """Read each member cluster through its kubeconfig context and commit its report."""
    from reconciler.kube.observe import ObserveError, read_cluster

    repo = FleetRepo(args.repo)
    now = parse_now(args.now)
    if args.kubeconfig is not None and not os.path.isfile(args.kubeconfig):
        raise GitError(f"--kubeconfig {args.kubeconfig}: " + (
            "a folder, not a file" if os.path.isdir(args.kubeconfig) else "no such file")
            + "; name a kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    clusters = _fleet_clusters(repo, args, args.cluster)
    reports: list[ClusterReport] = []
    failed = 0
    for name in args.cluster or sorted(clusters):
        context = clusters[name].kubeconfig_context or (name if args.cluster else None)
        if context is None:
            print(f"{name}: skipped: no spec.kubeconfigContext (set one, name it with "
                  f"--cluster to use the context {name!r}, or send its report with "
                  f"fleetq report)", file=sys.stderr)
            continue
        try:
            objects, notes = read_cluster(context, args.kubeconfig)
        except ObserveError as exc:
            print(f"fleetq: {name}: {exc}; its last report stays", file=sys.stderr)
            failed += 1
            continue
        for note in notes:
            print(f"{name}: {note}", file=sys.stderr)
        report = cluster_report(name, rfc3339(now), objects, where=f"context {context}",
                                nodes_read=True, complete=True)
        wrong = report.not_its_own()
        if wrong is not None:
            print(f"fleetq: {name}: the context {context!r} reads another cluster: {wrong}; "
                  f"point spec.kubeconfigContext at {name}; its last report stays",
                  file=sys.stderr)
            failed += 1
            continue
        reports.append(report)
    code = _record(repo, args, reports, now) if reports else EXIT_OK
    return EXIT_PROBLEMS if failed else code


def _record(repo: FleetRepo, args: argparse.Namespace, reports: list[ClusterReport],
            now: dt.datetime) -> int:
    for report in reports:
        if report.problems:
            print(problems_text(report.problems), file=sys.stderr)
        if report.skipped:
            print(f"{report.cluster}: left out {report.skipped} object(s) fleetq does not "
                  f"manage (no label fleetq.io/managed-by: fleetq, or not a job kind)",
                  file=sys.stderr)
    remote = _remote(repo, args, args.source)
    branch, sha, replaced, older = record_reports(
        repo, reports, source_rev=args.source, state_branch=args.state_branch, remote=remote,
        now=now)
    for report, ahead in replaced:
        print(f"warning: {report.cluster}: the report there was dated {ahead}, ahead of this "
              f"machine's clock (the clock of whoever sent it was wrong): this one replaces it",
              file=sys.stderr)
    for report, newer in older:
        print(f"warning: {report.cluster}: not recorded: the report there was observed at "
              f"{newer}, after this one ({report.observed_at})", file=sys.stderr)
    said = "; ".join(r.summary() for r in reports if all(r is not o for o, _ in older))
    pushed = f" and pushed it to {remote}" if remote else ""
    print(f"committed {sha[:12]} to {branch}{pushed}: {said}; run fleetq reconcile to act on it"
          if sha else f"no change: {branch} has these reports already, or newer ones")
    return EXIT_OK


def template_dir() -> Path:
    here = Path(__file__).resolve().parent
    for candidate in (here / "fleet-repo-template", here.parent / "fleet-repo-template"):
        if candidate.is_dir():
            return candidate
    raise GitError("fleet-repo-template/ is not installed beside fleetq; install from a "
                   "checkout of the fleetq repository (pip install -e .)")


FALLBACK_IDENTITY = {"name": "fleetq init", "email": "fleetq@localhost"}


def _identity(cwd: Path) -> dict[str, str]:
    """The environment for git in ``cwd``: the person's identity where git has
    one (its configuration, GIT_AUTHOR_NAME, ...), else ``FALLBACK_IDENTITY``
    (a machine with none: the first commit is still made)."""
    env = dict(os.environ)
    for field, fallback in FALLBACK_IDENTITY.items():
        configured = subprocess.run(["git", "config", f"user.{field}"], cwd=cwd,
                                    capture_output=True, text=True, check=False).stdout.strip()
        if configured:
            continue
        for who in ("AUTHOR", "COMMITTER"):
            env.setdefault(f"GIT_{who}_{field.upper()}", fallback)
    return env


def _git(cwd: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def init_repo(target: Path, *, commit: bool) -> None:
    """The template copied to ``target`` (a new or empty folder), committed
    on ``main`` when ``commit``; on a failure, nothing of it is left there."""
    template = template_dir()
    existed = target.is_dir()
    first_made = target  # (the outermost folder this command makes: removed on a failure)
    while not first_made.parent.exists() and first_made.parent != first_made:
        first_made = first_made.parent
    try:
        if target.exists() and not existed:
            raise GitError(f"{target} is a file; fleetq init needs a new or empty folder")
        if existed and any(target.iterdir()):
            raise GitError(f"{target} is not empty; fleetq init needs a new or empty folder")
        shutil.copytree(template, target, dirs_exist_ok=True)
        if commit:
            env = _identity(target)
            # (sha1 whatever git's default, GIT_DEFAULT_HASH: fleetq reads no other)
            _git(target, env, "init", "-q", "--object-format=sha1", "-b", "main")
            _git(target, env, "add", "-A")
            _git(target, env, "commit", "-q", "-m", "Fleet repo from the fleetq template")
    except (OSError, subprocess.CalledProcessError) as exc:
        made = [first_made] if not existed else list(target.iterdir()) if target.is_dir() \
            else []
        for path in made:  # (what this command made: the folder was new, or empty)
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    path.unlink()
        why = (exc.stderr.decode(errors="replace").strip() or str(exc)
               if isinstance(exc, subprocess.CalledProcessError)
               else f"{exc.strerror or exc}: {exc.filename or target}")
        raise GitError(f"could not create a fleet repo at {target}: {why}") from None


def cmd_init(args: argparse.Namespace) -> int:
    target = Path(args.path)
    init_repo(target, commit=not args.no_git)
    print(f"created fleet repo {target} from the template"
          + ("" if args.no_git else " (git repo, branch main)"))
    where = shlex.quote(str(target))
    print(f"next: cd {where} && fleetq validate && fleetq reconcile && fleetq status"
          if not args.no_git else
          f"next: cd {where} && git init --object-format=sha1 -b main && git add -A && "
          f"git commit -m 'Fleet repo' "
          f"&& fleetq validate && fleetq reconcile")
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    now = parse_now(args.now)  # (a bad --now is told before anything is done)
    with tempfile.TemporaryDirectory(prefix="fleetq-demo-") as tmp:
        target = Path(tmp) / "fleet"
        init_repo(target, commit=True)
        say = _say(args.output)
        print(f"fleet repo: {template_dir().name}/ copied to a temporary git repo", file=say)
        repo = FleetRepo(target)
        outcome = reconcile(repo, now=now)
        assert outcome.computed is not None and outcome.source is not None  # a new repo
        if outcome.computed.problems:
            print(problems_text(outcome.computed.problems), file=say)
        print(f"reconciled {outcome.source.sha[:12]}: committed "
              f"{(outcome.commit or '')[:12]} to fleetq/state ({_summary(outcome)})\n",
              file=say, flush=True)
        _print_data([decision_item(d) for d in outcome.decisions], args.output,
                    wide=args.wide)
        sys.stdout.flush()
        files = [e.path for e in repo.list_tree("fleetq/state")]
        clusters = sorted({p.split("/")[1] for p in files if p.startswith("clusters/")})
        print(f"\nstate branch fleetq/state: placements.yaml and {len(files) - 1} rendered "
              f"files for {', '.join(clusters) or 'no cluster'}", file=say)
        for path in files:
            if path.startswith("clusters/"):
                print(f"  {path}", file=say)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="fleetq", description=(
        "GitOps reconciler for gang-scheduled training jobs across member clusters"))
    parser.add_argument("--version", action="version", version=f"fleetq {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def state_branch(p: argparse.ArgumentParser) -> None:
        p.add_argument("--state-branch", default=None, metavar="BRANCH",
                       help="the state branch (default: fleet.yaml's spec.stateBranch, else "
                            "fleetq/state)")

    def common(p: argparse.ArgumentParser, *, output: bool = True, repo: bool = True,
               wide: bool = True) -> None:
        """``wide``: the command prints a table of jobs, which ``-o wide``
        widens (whole reasons, the times); the others refuse it."""
        if repo:
            p.add_argument("--repo", default=".", help="fleet repo path (default: .)")
        if output:
            p.add_argument("-o", "--output", choices=["table", "json", "yaml"] + (
                ["wide"] if wide else []), default="table",
                help="output format (default: table)")

    def no_cache(p: argparse.ArgumentParser) -> None:
        p.add_argument("--no-cache", action="store_true",
                       help="read and parse every file again (the cache is in .git/fleetq)")

    p = sub.add_parser("reconcile", help="decide and commit the state branch")
    common(p, output=False)
    p.add_argument("-o", "--output", choices=["none", "table", "json", "yaml", "wide"],
                   default="none", help="print the decisions too (default: none, the "
                   "summary line alone)")
    p.add_argument("--source", default="HEAD", help="source revision (default: HEAD)")
    state_branch(p)
    p.add_argument("--remote", default=None, help="push the state branch to this remote "
                   "(default: fleet.yaml's spec.remote; '' for none)")
    p.add_argument("--now", default=None, help="fix the clock (RFC 3339)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    no_cache(p)
    p.set_defaults(func=cmd_reconcile, wide=False)

    p = sub.add_parser("watch", help="reconcile each new commit of the source, until stopped")
    common(p, output=False)
    p.add_argument("--source", default=None,
                   help="source revision to follow (default: the branch checked out when "
                        "it starts, HEAD when none is; with --remote, the remote's copy of "
                        "that branch, e.g. origin/main)")
    state_branch(p)
    p.add_argument("--remote", default=None,
                   help="fetch this remote every --interval and push the state branch to it "
                        "(default: fleet.yaml's spec.remote; '' for none)")
    p.add_argument("--interval", type=float, default=5.0,
                   help="seconds between checks when no change is signalled (default: 5)")
    p.add_argument("--now", default=None, help="fix the clock (RFC 3339; tests, replays)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    p.set_defaults(func=cmd_watch)

    p = sub.add_parser("status", help="show the decisions on the state branch")
    common(p)
    state_branch(p)
    p.add_argument("--phase", default=None, type=_phase,
                   help="only jobs in this phase (" + ", ".join(p.value for p in Phase) + ")")
    p.add_argument("-n", "--namespace", default=None, help="only jobs of this namespace")
    p.add_argument("--quota", default=None,
                   help="only jobs of this quota and those under it (as queue --quota)")
    p.add_argument("--cluster", default=None, help="only jobs on this member cluster (placed "
                   "there, or a copy there: Duplicated, or kept by failover)")
    p.add_argument("jobs", nargs="*", metavar="JOB",
                   help="only these jobs: NAME, NAMESPACE/NAME, KIND/NAME or "
                   "KIND/NAMESPACE/NAME (NAME with -n: in that namespace)")
    no_cache(p)
    p.set_defaults(func=cmd_status, wide=False)

    p = sub.add_parser("validate", help="check the fleet repo; exit 1 on errors")
    common(p, wide=False)
    p.add_argument("--source", default=None,
                   help="check this revision (default: the work tree, as `git add -A` "
                        "would commit it; HEAD in a bare repository)")
    no_cache(p)
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("plan", help="show what a reconcile of a revision would change")
    common(p, wide=False)
    p.add_argument("--source", default="HEAD",
                   help="source revision, e.g. a pull request head (default: HEAD)")
    state_branch(p)
    p.add_argument("--remote", default=None, help="compare with the state branch of this "
                   "remote (default: fleet.yaml's spec.remote; '' for none)")
    p.add_argument("--now", default=None, help="fix the clock (RFC 3339)")
    p.add_argument("--exit-code", action="store_true",
                   help="exit 1 when a reconcile of the source would change the state")
    no_cache(p)
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("queue", help="list the queued jobs in queue order")
    common(p)
    state_branch(p)
    p.add_argument("-n", "--namespace", default=None, help="only jobs of this namespace")
    p.add_argument("--quota", default=None,
                   help="only the queues of this quota and those under it (a name, a "
                   "path, or the path joined with - as a quota label names it)")
    no_cache(p)
    p.set_defaults(func=cmd_queue, wide=False)

    p = sub.add_parser("explain", help="why a job waits and what would let it run")
    common(p, wide=False)
    p.add_argument("job", help="NAME, NAMESPACE/NAME, KIND/NAME or KIND/NAMESPACE/NAME (KIND "
                   "as kubectl takes it: pytorchjob, pytorchjobs.kubeflow.org, ...)")
    p.add_argument("-n", "--namespace", default=None, help="the job's namespace")
    p.add_argument("--source", default="HEAD",
                   help="explain as a reconcile of this revision would decide (default: HEAD)")
    state_branch(p)
    p.add_argument("--now", default=None, help="fix the clock (RFC 3339)")
    no_cache(p)
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("report", help="record a member cluster's jobs and nodes from "
                       "kubectl get -o yaml output")
    common(p, output=False)
    p.add_argument("--cluster", required=True, help="the MemberCluster reported on")
    p.add_argument("-f", "--file", default="-", help="kubectl get ... -o yaml output "
                   "(default: standard input)")
    p.add_argument("--complete", action="store_true", help="the input lists every job of "
                   "every kind fleetq places (a job missing from it is not on the cluster, "
                   "and counts as not running for failover)")
    p.add_argument("--source", default="HEAD", help="source revision (for fleet.yaml)")
    state_branch(p)
    p.add_argument("--remote", default=None, help="push the report to this remote "
                   "(default: fleet.yaml's spec.remote; '' for none)")
    p.add_argument("--now", default=None, help="the time of the report (RFC 3339)")
    no_cache(p)
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("observe", help="read the member clusters through the Kubernetes API "
                       "and record their jobs and nodes")
    common(p, output=False)
    p.add_argument("--cluster", action="append", default=[],
                   help="only this MemberCluster (repeat for more; default: every one with "
                        "spec.kubeconfigContext)")
    p.add_argument("--kubeconfig", default=None, help="default: $KUBECONFIG or ~/.kube/config")
    p.add_argument("--source", default="HEAD", help="source revision (for the clusters)")
    state_branch(p)
    p.add_argument("--remote", default=None, help="push the reports to this remote "
                   "(default: fleet.yaml's spec.remote; '' for none)")
    p.add_argument("--now", default=None, help="the time of the reports (RFC 3339)")
    no_cache(p)
    p.set_defaults(func=cmd_observe)

    p = sub.add_parser("demo", help="run the whole loop on the bundled template, in a "
                       "temporary git repo")
    common(p, repo=False)
    p.add_argument("--now", default=None, help="fix the clock (RFC 3339)")
    p.set_defaults(func=cmd_demo, wide=False)

    p = sub.add_parser("init", help="start a fleet repo from the template")
    p.add_argument("path", help="the folder to write it to (new, or empty); it becomes a git "
                   "repository of one commit, unless --no-git")
    p.add_argument("--no-git", action="store_true", help="copy files only")
    p.set_defaults(func=cmd_init)
    return parser


class Terminated(BaseException):
    """SIGTERM, raised in the main thread (``run``): the command stops as on
    Ctrl-C, its forked processes stopped and waited for."""


EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143  # (128 + the signal, as shells say)


MAX_INTERVAL = 86400.0  # seconds between a watch's looks at the remote, at most


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    given = list(sys.argv[1:] if argv is None else argv)
    if given and given[0].startswith("-") and given[0] not in ("-h", "--help", "--version"):
        parser.error(f"unrecognized arguments: {given[0]} (the command comes first: fleetq "
                     f"COMMAND {given[0]} ...)")
    args, extra = parser.parse_known_args(given)
    if extra:  # (told with the usage of the command they were given to, as git does)
        commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        commands.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    if getattr(args, "output", None) == "wide":
        args.output, args.wide = "table", True
    try:
        code: int = args.func(args)
        return code
    except GitError as exc:
        print(f"fleetq: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (KeyboardInterrupt, Terminated) as exc:
        print(f"\nfleetq: {'stopped (SIGTERM)' if isinstance(exc, Terminated) else 'interrupted'}"
              f"; the state branch and the cache are as they were, or written whole",
              file=sys.stderr)
        return EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED
    except BrokenPipeError:  # pragma: no cover - `fleetq status | head`
        return EXIT_OK
    except OSError as exc:  # (the environment: a read-only .git, a full disk, ...)
        fix = ""
        if isinstance(exc, PermissionError) and "/.git/" in f"{exc.filename}/":
            fix = (f"; fleetq {args.command} writes to the repository: run it where the "
                   f"repository is writable (fleetq plan, explain and validate only read it)")
        print(f"fleetq: {exc}{fix}", file=sys.stderr)
        return EXIT_USAGE


def _terminate(*_: object) -> None:
    raise Terminated


class _ToReader(io.TextIOBase):
    """An output stream that, once its reader is gone (``fleetq validate |
    head -1``), takes the rest of the output to nowhere: the command ends as
    it would have, with its exit code (a closed pipe made every command exit
    0, and ``validate`` or ``plan --exit-code`` in a pipeline found nothing)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._gone = False

    def write(self, text: str) -> int:
        if not self._gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._gone = True
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._gone = True

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._stream.encoding


def run() -> NoReturn:
    """The ``fleetq`` command: ``main``, then the process ends without freeing
    what the command built (see ``_keep_to_the_end``), once its output is
    flushed and every thread it started is done. The cyclic collector is off
    for a command that ends (its values are dropped with the process), but for
    ``watch``, which runs on and collects after each round."""
    global _ENDING
    _ENDING = True
    if sys.argv[1:2] != ["watch"]:
        gc.disable()
        signal.signal(signal.SIGTERM, _terminate)  # (watch stops at the end of a round)
    sys.stdout, sys.stderr = _ToReader(sys.stdout), _ToReader(sys.stderr)
    code = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BrokenPipeError, ValueError):  # `| head`; a closed stream
            stream.flush()
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    os._exit(code)


if __name__ == "__main__":
    run()
