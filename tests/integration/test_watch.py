"""``fleetq watch``: each new commit reconciled as ``fleetq reconcile`` would, on real repos.

A watch runs in a thread of the test (``pipeline.watch`` with a stop event) or
as a subprocess (the CLI, stopped with SIGTERM). Each of its state commits is
compared with a twin repository where the same source commits are reconciled
one by one by fresh ``reconcile`` calls with no cache: same inputs, same clock,
so the state branches must be the same commits, byte for byte.
"""

from __future__ import annotations

import contextlib
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import reconciler.pipeline as pipeline
from reconciler.fleet.cache import Cache
from reconciler.gitops.repo import FleetRepo
from reconciler.gitops.watch import RefWatcher
from reconciler.pipeline import Round, no_revision, reconcile, watch

from .conftest import (
    NOW,
    QUEUED_CLUSTER_POLICY,
    REPO_ROOT,
    STATE,
    batchjob,
    commit_all,
    fleetq,
    git,
    make_fleet_repo,
    member_cluster,
    one_leaf_tree,
    placements,
    pytorchjob,
    rev,
    when,
    write_files,
)

WAIT = 60.0  # seconds a round may take on a slow, shared machine
CONFIG = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: default}
data: {a: "1"}
"""


def fleet_files() -> dict[str, str]:
    """One 8-cpu cluster and a leaf of 8 cpu, holding job a (a master and a worker
    of 2 cpu each: 4 cpu)."""
    return {"quota.yaml": one_leaf_tree("8", "64Gi"), "policy.yaml": QUEUED_CLUSTER_POLICY,
            "clusters/c1.yaml": member_cluster("c1", cpu="8", memory="64Gi"),
            "jobs/a.yaml": pytorchjob("a", cpu="2")}


def leaf_tree(*, min_cpu: str, max_cpu: str) -> str:
    """An ElasticQuotaTree of 8 cpu whose only leaf ``team`` has these limits."""
    return ("apiVersion: scheduling.sigs.k8s.io/v1beta1\nkind: ElasticQuotaTree\n"
            "metadata: {name: elasticquotatree, namespace: kube-system}\nspec:\n  root:\n"
            "    name: root\n    min: {cpu: \"8\", memory: 64Gi}\n"
            "    max: {cpu: \"8\", memory: 64Gi}\n    children:\n    - name: team\n"
            f"      min: {{cpu: \"{min_cpu}\", memory: 64Gi}}\n"
            f"      max: {{cpu: \"{max_cpu}\", memory: 64Gi}}\n      namespaces: [default]\n")


def origin_and_dev(tmp_path: Path) -> tuple[Path, Path]:
    """A bare ``origin.git`` and a ``dev`` clone of the fleet that pushed main to it;
    a ``runner`` clone of it beside them."""
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    dev = make_fleet_repo(tmp_path / "dev", fleet_files())
    git(dev, "remote", "add", "origin", str(origin))
    git(dev, "push", "-q", "origin", "main")
    git(tmp_path, "clone", "-q", str(origin), "runner")
    return origin, dev


class Watching:
    """``pipeline.watch`` in a thread; its rounds arrive on a queue."""

    def __init__(self, path: Path, **kwargs: Any) -> None:
        self.rounds: queue.Queue[Round] = queue.Queue()
        self.stop = threading.Event()
        kwargs.setdefault("now", when(NOW))
        kwargs.setdefault("interval", 3600.0)  # only file events wake it, unless told
        self.thread = threading.Thread(target=watch, daemon=True, kwargs=dict(
            repo=FleetRepo(path), stop=self.stop, report=self.rounds.put, **kwargs))
        self.thread.start()

    def next(self) -> Round:
        try:
            return self.rounds.get(timeout=WAIT)
        except queue.Empty:
            raise AssertionError(f"no round within {WAIT} s") from None

    def quiet(self, seconds: float = 1.0) -> None:
        """No round comes (nothing changed)."""
        with pytest.raises(queue.Empty):
            got = self.rounds.get(timeout=seconds)
            raise AssertionError(f"unexpected round: {got}")

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=WAIT)
        assert not self.thread.is_alive(), "watch did not stop"


@pytest.fixture
def watching() -> Iterator[list[Watching]]:
    started: list[Watching] = []
    yield started
    for w in started:
        w.stop.set()
        w.thread.join(timeout=WAIT)


class Twin:
    """A clone that reconciles the same source commits with fresh, uncached calls."""

    def __init__(self, source: Path, path: Path) -> None:
        git(path.parent, "clone", "-q", str(source), path.name)
        self.source, self.path = source, path

    def reconcile(self, sha: str) -> str | None:
        git(self.path, "fetch", "-q", str(self.source), "main")
        reconcile(FleetRepo(self.path), source_rev=sha, now=when(NOW), use_cache=False)
        return rev(self.path, STATE)


def committed(done: Round) -> str:
    assert done.error is None, done.error
    assert done.outcome is not None and done.outcome.state is not None
    return done.outcome.state


def test_each_commit_is_reconciled_as_a_fresh_reconcile_would(
        tmp_path: Path, watching: list[Watching]) -> None:
    path = make_fleet_repo(tmp_path / "fleet", fleet_files())
    twin = Twin(path, tmp_path / "twin")
    w = Watching(path)
    watching.append(w)
    assert committed(w.next()) == twin.reconcile(rev(path, "main") or "")
    w.quiet()  # its own state commit is not a change to reconcile

    steps = [  # (and whether the admitted jobs put back ahead are taken up)
        ({"jobs/b.yaml": pytorchjob("b", cpu="2")}, True),                # 4 cpu: admitted
        ({"jobs/c.yaml": pytorchjob("c", cpu="2", workers=2)}, True),     # 6 cpu: waits
        ({"jobs/d.yaml": pytorchjob("d", cpu="1")}, True),                # 2 cpu: waits too
        ({"jobs/a.yaml": None}, False),                                   # 4 free: d, not c
        ({"jobs/b.yaml": pytorchjob("b", cpu="2", memory="2Gi")}, False),  # b changed
        # other files: read again, the fleet's jobs kept (and put back ahead as long
        # as nothing the cycle's first steps read changed)
        ({"jobs/settings.yaml": CONFIG, "jobs/e.yaml": pytorchjob("e", cpu="9")},
         True),  # (e: 18 cpu, more than the quota's max)
        ({"quota.yaml": one_leaf_tree("7", "64Gi")}, False),  # a lower max
        ({"clusters/c1.yaml": member_cluster("c1", cpu="9", memory="64Gi")}, False),
        ({"quota.yaml": one_leaf_tree("8", "64Gi"), "jobs/settings.yaml": None}, False),
        ({"quota.yaml": leaf_tree(min_cpu="4", max_cpu="8")}, False),  # a min changed
        # a max changed, in value alone: the admitted jobs put back ahead are moved
        # under the new tree
        ({"quota.yaml": leaf_tree(min_cpu="4", max_cpu="6")}, True),
    ]
    for step, ahead in steps:
        for rel, text in step.items():
            if text is None:
                (path / rel).unlink()
            else:
                write_files(path, {rel: text})
        sha = commit_all(path, f"change {sorted(step)}")
        done = w.next()
        assert done.outcome is not None and done.outcome.source is not None
        assert done.outcome.source.sha == sha
        assert committed(done) == twin.reconcile(sha) == rev(path, STATE)
        assert done.outcome.computed is not None
        assert done.outcome.computed.result.ahead is ahead, step
    final = placements(path)
    assert {k: v["phase"] for k, v in final.items()} == {
        "default/b": "Admitted", "default/c": "Queued", "default/d": "Admitted",
        "default/e": "Inadmissible"}
    w.close()


def test_a_running_job_counted_as_it_runs_is_put_back_ahead_as_a_reconcile_would(
        tmp_path: Path, watching: list[Watching]) -> None:
    """A running batch Job whose requests were edited is counted with the pod
    template it keeps (``pipeline.running_forms``), by the steps a watch does
    ahead too: a later push of another job takes them up, and its state is
    that of a fresh reconcile."""
    path = make_fleet_repo(tmp_path / "fleet", {
        **fleet_files(), "jobs/run.yaml": batchjob("run", parallelism=2, cpu="1")})
    twin = Twin(path, tmp_path / "twin")
    w = Watching(path)
    watching.append(w)
    assert committed(w.next()) == twin.reconcile(rev(path, "main") or "")
    w.quiet()
    steps = [({"jobs/run.yaml": batchjob("run", parallelism=2, cpu="500m")}, False),
             ({"jobs/x.yaml": pytorchjob("x", cpu="1")}, True),  # 2 cpu of the 2 free
             ({"jobs/y.yaml": pytorchjob("y", cpu="1")}, True)]  # none left: waits
    for step, ahead in steps:
        write_files(path, step)
        sha = commit_all(path, f"change {sorted(step)}")
        done = w.next()
        assert committed(done) == twin.reconcile(sha) == rev(path, STATE)
        assert done.outcome is not None and done.outcome.computed is not None
        assert done.outcome.computed.result.ahead is ahead, step
    final = placements(path)
    assert final["default/run"]["requests"]["cpu"] == "2"
    assert {k: v["phase"] for k, v in final.items()} == {
        "default/a": "Admitted", "default/run": "Admitted", "default/x": "Admitted",
        "default/y": "Queued"}
    w.close()


def test_a_bad_file_is_reported_and_the_rest_still_reconciled(
        tmp_path: Path, watching: list[Watching]) -> None:
    path = make_fleet_repo(tmp_path / "fleet", fleet_files())
    w = Watching(path)
    watching.append(w)
    committed(w.next())
    write_files(path, {"jobs/bad.yaml": "kind: PyTorchJob\nmetadata: [\n",
                       "jobs/b.yaml": pytorchjob("b", cpu="2")})
    commit_all(path, "a good job and a broken file")
    done = w.next()
    committed(done)
    assert done.outcome is not None and done.outcome.computed is not None
    assert any(p.path == "jobs/bad.yaml" for p in done.outcome.computed.problems)
    assert placements(path)["default/b"]["phase"] == "Admitted"

    write_files(path, {"jobs/bad.yaml": pytorchjob("fixed", cpu="1")})
    sha = commit_all(path, "fixed")
    done = w.next()
    committed(done)
    assert done.outcome is not None and done.outcome.computed is not None
    assert not done.outcome.computed.problems
    assert placements(path)["default/fixed"]["phase"] == "Queued"  # a and b fill the 8 cpu
    assert git(path, "log", "-1", "--format=%B", STATE).rstrip().endswith(sha)
    w.close()


def test_a_revision_that_does_not_resolve_yet_is_waited_for(
        tmp_path: Path, watching: list[Watching]) -> None:
    path = make_fleet_repo(tmp_path / "fleet", fleet_files())
    w = Watching(path, source_rev="release")
    watching.append(w)
    first = w.next()
    assert first.outcome is None and first.error and "release" in first.error
    w.quiet()
    git(path, "branch", "release", "main")
    done = w.next()
    assert done.outcome is not None and done.outcome.source is not None
    assert done.outcome.source.sha == rev(path, "main")
    committed(done)
    w.close()


def test_a_git_error_is_tried_again_every_interval_and_reported_once(
        tmp_path: Path, watching: list[Watching]) -> None:
    path = make_fleet_repo(tmp_path / "fleet", fleet_files())
    w = Watching(path, source_rev="release", interval=0.1, events=False)
    watching.append(w)
    first = w.next()
    assert first.outcome is None and first.error and "release" in first.error
    w.quiet(1.5)  # tried about 15 times meanwhile, the same error each time: not said again
    git(path, "branch", "release", "main")
    committed(w.next())  # found by a retry (no file events here)
    w.close()


def test_a_remote_away_is_reported_once_and_caught_up_with_when_back(
        tmp_path: Path, watching: list[Watching]) -> None:
    origin, dev = origin_and_dev(tmp_path)
    w = Watching(tmp_path / "runner", source_rev="origin/main", remote="origin",
                 interval=0.2)
    watching.append(w)
    committed(w.next())
    away = tmp_path / "away.git"
    origin.rename(away)
    write_files(dev, {"jobs/b.yaml": pytorchjob("b", cpu="1")})
    sha = commit_all(dev, "b")
    git(dev, "push", "-q", str(away), "main")
    gone = w.next()
    assert gone.outcome is None and gone.error and "fetch" in gone.error
    w.quiet(1.5)  # fetched about 7 times meanwhile: said once
    away.rename(origin)
    done = w.next()
    assert done.outcome is not None and done.outcome.source is not None
    assert done.outcome.source.sha == sha
    assert rev(origin, STATE) == committed(done)
    w.close()


def test_a_push_the_remote_refuses_again_and_again_is_reported_once(
        tmp_path: Path, watching: list[Watching]) -> None:
    """Each retry writes a new state commit, which the remote's refusal names:
    the same refusal was reported at every interval as a new error."""
    origin, _ = origin_and_dev(tmp_path)
    hook = origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'state branches are protected' >&2\nexit 1\n")
    hook.chmod(0o755)
    w = Watching(tmp_path / "runner", source_rev="origin/main", remote="origin",
                 interval=0.2, now=None)  # (the clock: each second's commit is another)
    watching.append(w)
    refused = w.next()
    assert refused.outcome is None and refused.error, refused
    assert "origin refused the push" in refused.error
    w.quiet(2.5)  # refused about 12 times meanwhile, each naming its own commit: said once
    hook.unlink()
    done = w.next()
    assert rev(origin, STATE) == committed(done)
    w.close()


def _counted_checks(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """When the watch resolves its revisions (``RefWatcher.current``), each
    time: the real method, counted."""
    checks: list[float] = []
    real = RefWatcher.current

    def counted(self: RefWatcher) -> Any:
        checks.append(time.monotonic())
        return real(self)

    monkeypatch.setattr(RefWatcher, "current", counted)
    return checks


def test_an_idle_watch_does_not_poll_its_own_reads(
        tmp_path: Path, watching: list[Watching], monkeypatch: pytest.MonkeyPatch) -> None:
    """Resolving a revision opens the ref files it watches: such events are no change."""
    path = make_fleet_repo(tmp_path / "fleet", fleet_files())
    checks = _counted_checks(monkeypatch)
    w = Watching(path)
    watching.append(w)
    committed(w.next())
    time.sleep(0.5)  # the round's own state commit is seen and let go
    idle_from = len(checks)
    w.quiet(1.5)
    assert len(checks) - idle_from == 0, "the refs were resolved again with nothing changed"
    write_files(path, {"jobs/b.yaml": pytorchjob("b", cpu="2")})
    commit_all(path, "b")
    committed(w.next())
    w.close()


def test_a_watch_is_not_woken_by_fleetqs_own_notes_in_refs_fleetq(
        tmp_path: Path, watching: list[Watching], monkeypatch: pytest.MonkeyPatch) -> None:
    """Each round writes fleetq's notes of the state it saw or wrote
    (refs/fleetq/...), never a revision a watch follows: they woke it, and it
    resolved its revisions again, for nothing."""
    path = make_fleet_repo(tmp_path / "fleet", fleet_files())
    checks = _counted_checks(monkeypatch)
    w = Watching(path)
    watching.append(w)
    committed(w.next())
    time.sleep(0.5)
    idle_from = len(checks)
    head = git(path, "rev-parse", "HEAD").strip()
    for i in range(3):
        git(path, "update-ref", f"refs/fleetq/written/note-{i}", head)
    w.quiet(1.0)
    assert len(checks) - idle_from == 0, "woken by refs/fleetq"
    write_files(path, {"jobs/b.yaml": pytorchjob("b", cpu="2")})
    commit_all(path, "b")
    committed(w.next())  # (a branch moved: woken)
    w.close()


def test_without_file_events_the_revisions_are_checked_every_interval(
        tmp_path: Path, watching: list[Watching]) -> None:
    path = make_fleet_repo(tmp_path / "fleet", fleet_files())
    w = Watching(path, events=False, interval=0.2)
    watching.append(w)
    committed(w.next())
    write_files(path, {"jobs/b.yaml": pytorchjob("b", cpu="2")})
    sha = commit_all(path, "one more")
    done = w.next()
    assert done.outcome is not None and done.outcome.source is not None
    assert done.outcome.source.sha == sha
    w.close()


def test_a_failed_round_drops_the_memory_and_the_next_change_is_reconciled(
        tmp_path: Path, watching: list[Watching], monkeypatch: pytest.MonkeyPatch) -> None:
    path = make_fleet_repo(tmp_path / "fleet", fleet_files())
    twin = Twin(path, tmp_path / "twin")
    real = pipeline.reconcile_cycle
    armed = threading.Event()

    def once_broken(inp: Any, ahead: Any = None, progress: Any = None) -> Any:
        if armed.is_set() and threading.current_thread() is not threading.main_thread():
            armed.clear()
            raise RuntimeError("injected fault")
        return real(inp, ahead, progress)

    monkeypatch.setattr(pipeline, "reconcile_cycle", once_broken)
    w = Watching(path)
    watching.append(w)
    first = committed(w.next())
    assert first == twin.reconcile(rev(path, "main") or "")
    armed.set()
    write_files(path, {"jobs/b.yaml": pytorchjob("b", cpu="2")})
    commit_all(path, "b")
    broken = w.next()
    assert broken.outcome is None and broken.error and "injected fault" in broken.error
    assert rev(path, STATE) == first  # nothing written
    write_files(path, {"jobs/c.yaml": pytorchjob("c", cpu="2")})
    sha = commit_all(path, "c")
    assert committed(w.next()) == twin.reconcile(sha)
    w.close()


def test_the_cache_is_saved_after_the_round_is_reported_and_a_failed_save_is_reported_too(
        tmp_path: Path, watching: list[Watching], monkeypatch: pytest.MonkeyPatch) -> None:
    """The state is committed and its round reported before the cache is saved;
    a save that fails is reported as such, the cache in memory is dropped, and
    the next push is reconciled as a fresh reconcile would."""
    path = make_fleet_repo(tmp_path / "fleet", fleet_files())
    twin = Twin(path, tmp_path / "twin")
    real = Cache.save_state
    armed = threading.Event()
    saved: list[str] = []

    def save_state(self: Cache, commit: str, *args: Any) -> None:
        if armed.is_set():
            armed.clear()
            raise OSError("injected: no space left on device")
        real(self, commit, *args)
        saved.append(commit)

    monkeypatch.setattr(Cache, "save_state", save_state)
    w = Watching(path)
    watching.append(w)
    first = committed(w.next())
    deadline = time.monotonic() + WAIT
    while not saved and time.monotonic() < deadline:  # saved once reported
        time.sleep(0.05)
    assert saved == [first] and first == twin.reconcile(rev(path, "main") or "")
    assert Cache(FleetRepo(path).git_dir).load_state(first) is not None
    armed.set()
    write_files(path, {"jobs/b.yaml": pytorchjob("b", cpu="2")})
    sha = commit_all(path, "b")
    assert committed(w.next()) == twin.reconcile(sha) == rev(path, STATE)
    failed = w.next()
    assert failed.outcome is None and failed.error is not None
    assert failed.error.startswith("saving the cache: ") and "no space left" in failed.error
    write_files(path, {"jobs/c.yaml": pytorchjob("c", cpu="1")})
    sha = commit_all(path, "c")
    done = w.next()
    assert committed(done) == twin.reconcile(sha) == rev(path, STATE)
    assert done.outcome is not None and done.outcome.computed is not None
    assert not done.outcome.computed.result.ahead  # (the memory was dropped)
    w.close()


def test_watch_with_a_remote_pushes_each_pushed_commit(
        tmp_path: Path, watching: list[Watching]) -> None:
    origin, dev = origin_and_dev(tmp_path)
    runner = tmp_path / "runner"
    w = Watching(runner, source_rev="origin/main", remote="origin", interval=0.3)
    watching.append(w)
    committed(w.next())
    for name in ("b", "c"):
        write_files(dev, {f"jobs/{name}.yaml": pytorchjob(name, cpu="1")})
        sha = commit_all(dev, f"job {name}")
        git(dev, "push", "-q", "origin", "main")
        done = w.next()
        assert done.outcome is not None and done.outcome.source is not None
        assert done.outcome.source.sha == sha
        state = committed(done)
        assert rev(origin, STATE) == state
        assert git(origin, "log", "-1", "--format=%B", STATE).rstrip().endswith(sha)
    history = git(origin, "rev-list", "--parents", STATE).splitlines()
    assert [len(line.split()) for line in history] == [2, 2, 1]  # linear
    w.close()


def test_watch_with_a_remote_acts_on_a_report_pushed_there_from_elsewhere(
        tmp_path: Path, watching: list[Watching]) -> None:
    """A cluster's report pushed to the remote's state branch by another clone
    (a CronJob in the cluster) wakes the watch, which acts on it: job ``a``
    finished, and ``b``, waiting for its room, runs."""
    from reconciler.fleet.observed import cluster_report
    from reconciler.pipeline import record_reports

    origin, dev = origin_and_dev(tmp_path)
    write_files(dev, {"jobs/b.yaml": pytorchjob("b", cpu="3")})  # 4 + 6 > 8 cpu: it waits
    commit_all(dev, "job b")
    git(dev, "push", "-q", "origin", "main")
    runner = tmp_path / "runner"
    w = Watching(runner, source_rev="origin/main", remote="origin", interval=0.3)
    watching.append(w)
    state = committed(w.next())
    items = placements(origin)
    assert items["default/a"]["phase"] == "Admitted" and items["default/b"]["phase"] == "Queued"
    reporter = tmp_path / "reporter"
    git(tmp_path, "clone", "-q", "-b", "main", str(origin), str(reporter))
    git(reporter, "fetch", "-q", "origin", f"{STATE}:{STATE}")
    done = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": "a", "namespace": "default",
                         "labels": {"fleetq.io/managed-by": "fleetq"}},
            "status": {"conditions": [{"type": "Succeeded", "status": "True",
                                       "lastTransitionTime": "2026-11-29T12:00:00Z"}]}}
    _, reported, _, _ = record_reports(
        FleetRepo(reporter), [cluster_report("c1", "2026-11-29T12:01:00Z", [done])],
        remote="origin", now=when("2026-11-29T12:01:00Z"))
    assert reported is not None and git(origin, "rev-parse", STATE).strip() == reported
    after = committed(w.next())
    assert after not in (state, reported)
    items = placements(origin)
    assert items["default/a"]["phase"] == "Finished" and items["default/b"]["phase"] == "Admitted"
    w.quiet()
    w.close()


def test_watch_on_the_bare_repository_people_push_to(
        tmp_path: Path, watching: list[Watching]) -> None:
    """Run beside the server's repository: each push is reconciled into it."""
    origin, dev = origin_and_dev(tmp_path)
    w = Watching(origin, source_rev="main")
    watching.append(w)
    committed(w.next())
    write_files(dev, {"jobs/b.yaml": pytorchjob("b", cpu="1")})
    sha = commit_all(dev, "b")
    git(dev, "push", "-q", str(origin), "main")
    done = w.next()
    assert done.outcome is not None and done.outcome.source is not None
    assert done.outcome.source.sha == sha
    assert rev(origin, STATE) == committed(done)
    git(dev, "fetch", "-q", str(origin), f"{STATE}:{STATE}")
    assert placements(dev)["default/b"]["phase"] == "Admitted"
    w.close()


def test_the_cache_keeps_the_state_it_saved_in_memory(tmp_path: Path) -> None:
    path = make_fleet_repo(tmp_path / "fleet", fleet_files())
    repo = FleetRepo(path)
    cache = Cache(repo.git_dir)
    first = reconcile(repo, now=when(NOW), cache=cache)
    assert first.commit is not None
    shutil.rmtree(cache.dir)  # nothing left on disk to read back
    again = cache.load_state(first.commit)
    assert again is not None
    written, _ = again
    assert {key.name for key in written} == {"a"}
    assert Cache(repo.git_dir).load_state(first.commit) is None  # a fresh one has nothing


def test_a_watch_started_on_an_up_to_date_state_reads_it_before_the_next_push(
        tmp_path: Path, watching: list[Watching], monkeypatch: pytest.MonkeyPatch) -> None:
    path = make_fleet_repo(tmp_path / "fleet", fleet_files())
    twin = Twin(path, tmp_path / "twin")
    assert reconcile(FleetRepo(path), now=when(NOW)).commit == twin.reconcile(
        rev(path, "main") or "")
    parsed: list[int] = []
    real = pipeline.read_placements

    def counted(data: Any) -> Any:
        parsed.append(1)
        return real(data)

    monkeypatch.setattr(pipeline, "read_placements", counted)
    whole: list[str] = []  # the commits the watch read whole
    real_read = pipeline.read_source

    def read_source(repo: FleetRepo, rev: str, *args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is w.thread:
            whole.append(rev)
        return real_read(repo, rev, *args, **kwargs)

    monkeypatch.setattr(pipeline, "read_source", read_source)
    for saved in (path / ".git" / "fleetq").glob("cache-v*/inputs.pickle"):
        saved.unlink()  # (else the fleet would be patched from what the reconcile saved)
    w = Watching(path)
    watching.append(w)
    first = w.next()
    assert first.outcome is not None and first.outcome.computed is None  # up to date
    w.quiet(0.5)
    assert whole == [rev(path, "main")]  # read before the push, while waiting
    for old in (path / ".git" / "fleetq").glob("cache-v*/*"):
        old.unlink()  # nothing on disk: the state must come from memory
    write_files(path, {"jobs/b.yaml": pytorchjob("b", cpu="2")})
    sha = commit_all(path, "b")
    assert committed(w.next()) == twin.reconcile(sha)
    assert parsed == [1]  # the twin's, not the watch's: it had the state in memory
    assert whole == [rev(path, "main^")]  # the push: b.yaml read alone, the fleet patched
    w.close()


def test_a_state_loaded_once_is_kept(tmp_path: Path) -> None:
    path = make_fleet_repo(tmp_path / "fleet", fleet_files())
    repo = FleetRepo(path)
    first = reconcile(repo, now=when(NOW))
    assert first.commit is not None
    cache = Cache(repo.git_dir)
    loaded = cache.load_state(first.commit)
    assert loaded is not None
    shutil.rmtree(cache.dir)
    again = cache.load_state(first.commit)
    assert again is not None and again[0] is loaded[0]


def _lines(stream: Any, into: queue.Queue[str]) -> None:
    for line in stream:
        into.put(line.rstrip("\n"))


@contextlib.contextmanager
def _watch_command(*args: str, stop: int = signal.SIGTERM
                   ) -> Iterator[tuple[queue.Queue[str], list[str]]]:
    """``fleetq watch ARGS`` running: the lines of its stdout as they come, and
    (once it is over) its stderr. It is stopped by ``stop`` at the end, and must
    exit 0 when terminated (a service manager stops it so), 130 when interrupted
    (Ctrl-C, as a shell's commands are)."""
    proc = subprocess.Popen([sys.executable, "-m", "reconciler.cli", "watch", *args],
                            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    out: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_lines, args=(proc.stdout, out), daemon=True).start()
    err: list[str] = []
    try:
        yield out, err
    finally:
        proc.send_signal(stop)
        err.append(proc.communicate(timeout=WAIT)[1])
    assert proc.returncode == (130 if stop == signal.SIGINT else 0), err[0]


def test_the_command_reconciles_until_it_is_terminated(tmp_path: Path) -> None:
    path = make_fleet_repo(tmp_path / "fleet", fleet_files())
    with _watch_command("--repo", str(path), "--now", NOW, "--interval", "0.5") as (out, told):
        line = out.get(timeout=WAIT)
        assert f"committed {(rev(path, STATE) or '')[:12]} to {STATE} from " \
               f"{(rev(path, 'main') or '')[:12]}: 1 admitted" in line
        write_files(path, {"jobs/b.yaml": pytorchjob("b", cpu="2")})
        sha = commit_all(path, "b")
        line = out.get(timeout=WAIT)
        assert f"from {sha[:12]}: 2 admitted" in line
        # the branch it started on is watched, not whichever is checked out
        git(path, "checkout", "-q", "-b", "feature")
        write_files(path, {"jobs/c.yaml": pytorchjob("c", cpu="1")})
        commit_all(path, "c on a feature branch")
        with pytest.raises(queue.Empty):  # (it checks every 0.5 s, and wakes on the commit)
            out.get(timeout=3)
        git(path, "checkout", "-q", "main")
        write_files(path, {"jobs/d.yaml": pytorchjob("d", cpu="1")})
        sha = commit_all(path, "d")
        line = out.get(timeout=WAIT)
        assert f"from {sha[:12]}: 2 admitted, 1 queued" in line
    err, = told
    assert "watching main and its state branch" in err and "stopped watching" in err
    assert "Traceback" not in err


def test_a_watch_tells_what_deciding_a_source_told_when_the_cache_knew_it_changed_nothing(
        tmp_path: Path) -> None:
    """A reconcile decided a commit that changed no decision (a job written as
    JSON: told, not read) and made no commit; a watch started then finds the
    state up to date from the cache's note, and tells the same warning."""
    path = make_fleet_repo(tmp_path / "fleet", fleet_files())
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    write_files(path, {"jobs/b.json": '{"apiVersion": "kubeflow.org/v1", '
                                      '"kind": "PyTorchJob"}'})
    commit_all(path, "a job as JSON")
    decided = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert decided.returncode == 0 and "jobs/b.json:1: warning: " in decided.stderr
    assert decided.stdout.startswith("no change: ")
    with _watch_command("--repo", str(path), "--now", NOW, "--interval", "0.5") as (out, told):
        line = out.get(timeout=WAIT)
        assert f"no change: {STATE} is up to date with {rev(path, 'main')[:12]}" in line
    err, = told
    warning = next(x for x in decided.stderr.splitlines() if x.startswith("jobs/b.json:"))
    assert warning in err, err


def test_the_command_with_a_remote_follows_its_copy_of_the_current_branch(
        tmp_path: Path) -> None:
    origin, dev = origin_and_dev(tmp_path)
    with _watch_command("--repo", str(tmp_path / "runner"), "--remote", "origin",
                        "--now", NOW, "--interval", "0.3") as (out, told):
        assert "1 admitted" in out.get(timeout=WAIT)
        write_files(dev, {"jobs/b.yaml": pytorchjob("b", cpu="1")})
        sha = commit_all(dev, "b")
        git(dev, "push", "-q", str(origin), "main")
        assert f"from {sha[:12]}: 2 admitted" in out.get(timeout=WAIT)
    err, = told
    assert "watching origin/main and its state branch on origin" in err
    assert git(origin, "log", "-1", "--format=%B", STATE).rstrip().endswith(sha)


def test_ctrl_c_stops_the_command_cleanly(tmp_path: Path) -> None:
    path = make_fleet_repo(tmp_path / "fleet", fleet_files())
    with _watch_command("--repo", str(path), "--now", NOW, stop=signal.SIGINT) as (out, told):
        assert "committed" in out.get(timeout=WAIT)
    err, = told
    assert "stopped watching" in err and "Traceback" not in err


def test_a_watch_warns_while_its_cache_cannot_be_written_and_writes_it_once_it_can(
        tmp_path: Path, watching: list[Watching]) -> None:
    """A file where the cache's folder goes: the watch commits each push as a fresh
    reconcile would, and warns from the round after a save failed (a round is
    reported before its save, and left as reported), saying that it goes on from
    memory; once the folder can be made, the next save writes the cache and the
    warning ends."""
    from reconciler.fleet import cache as cache_module

    path = make_fleet_repo(tmp_path / "fleet", fleet_files())
    twin = Twin(path, tmp_path / "twin")
    base = path / ".git" / "fleetq"
    base.mkdir()
    blocker = base / f"cache-v{cache_module.CACHE_FORMAT}-{cache_module.__version__}"
    blocker.write_text("not a folder\n")
    idle = threading.Event()  # set when the watch waits again: its round's cache saved

    def warned(done: Round) -> bool:
        assert done.outcome is not None and done.outcome.computed is not None
        told = [p.message for p in done.outcome.computed.problems if p.path == ".git/fleetq"]
        assert all("this watch goes on from what it holds in memory" in m
                   and "delete it" in m for m in told), told
        return bool(told)

    def push(name: str) -> Round:
        assert idle.wait(WAIT), "the watch did not wait again"
        idle.clear()
        write_files(path, {f"jobs/{name}.yaml": pytorchjob(name, cpu="1")})
        commit_all(path, name)
        done = w.next()
        assert committed(done) == twin.reconcile(rev(path, "main") or "")
        return done

    w = Watching(path, idle=idle.set)
    watching.append(w)
    first = w.next()
    assert committed(first) == twin.reconcile(rev(path, "main") or "")
    assert not warned(first)
    assert warned(push("b"))  # the save after the first round failed
    assert not warned(first)  # (and was not added to the round it followed)
    assert idle.wait(WAIT)  # and so did the one after this round
    blocker.unlink()
    assert warned(push("c"))
    assert not warned(push("d"))  # the save after round c made the folder
    assert blocker.is_dir() and any(blocker.glob("state-*.pickle"))


@pytest.mark.parametrize("interval", ["nan", "inf", "0", "-1", "86401"])
def test_an_interval_a_watch_could_not_keep_is_a_usage_error(tmp_path: Path,
                                                             interval: str) -> None:
    """``--interval nan`` and ``inf`` were taken: a watch that never looked
    again at the remote (or crashed on the first wait)."""
    path = make_fleet_repo(tmp_path / "fleet", {"jobs/a.yaml": pytorchjob("a")})
    proc = subprocess.run([sys.executable, "-m", "reconciler.cli", "watch", "--repo", str(path),
                           "--interval", interval], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 2, proc.stderr
    assert (f"--interval {float(interval)} must be more than 0 seconds and at most 86400 "
            f"(a day)") in proc.stderr
    assert git(path, "rev-parse", "--verify", "--quiet", STATE, check=False) == ""


def test_a_running_watch_refuses_a_state_branch_renamed_meanwhile(
        tmp_path: Path, watching: list[Watching]) -> None:
    """fleet.yaml's stateBranch renamed while a watch runs: its round started
    the state over on the new branch (every job enqueued anew, a job that ran
    queued behind one pushed after it), where reconcile refuses. The round is
    refused, and nothing is written there."""
    path = make_fleet_repo(tmp_path / "fleet", {"jobs/a.yaml": pytorchjob("a")})
    w = Watching(path)
    watching.append(w)
    first = w.next()
    assert first.error is None and first.outcome is not None, first.error
    (path / "fleet.yaml").write_text("apiVersion: fleetq.io/v1alpha1\nkind: Fleet\n"
                                     "metadata: {name: fleet}\nspec: {stateBranch: moved}\n",
                                     encoding="utf-8")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "another state branch")
    renamed = w.next()
    assert renamed.error is not None and (
        f"no state branch 'moved' yet, but {STATE} holds this fleet's state") in renamed.error, \
        renamed
    assert git(path, "rev-parse", "--verify", "--quiet", "moved", check=False) == ""
    w.close()


def test_a_watch_refuses_a_renamed_state_branch_as_reconcile_does(tmp_path: Path) -> None:
    """fleet.yaml's stateBranch renamed while another branch holds the state: a
    watch would start the state over there; it stops at once, exit 2."""
    path = make_fleet_repo(tmp_path / "fleet", {"jobs/a.yaml": pytorchjob("a")})
    assert subprocess.run([sys.executable, "-m", "reconciler.cli", "reconcile", "--repo",
                           str(path), "--now", NOW], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120, check=False).returncode == 0
    (path / "fleet.yaml").write_text("apiVersion: fleetq.io/v1alpha1\nkind: Fleet\n"
                                     "metadata: {name: fleet}\nspec: {stateBranch: moved}\n",
                                     encoding="utf-8")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "another state branch")
    proc = subprocess.run([sys.executable, "-m", "reconciler.cli", "watch", "--repo", str(path)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 2, proc.stderr
    assert f"no state branch 'moved' yet, but {STATE} holds this fleet's state" in proc.stderr
    assert git(path, "rev-parse", "--verify", "--quiet", "moved", check=False) == ""


def test_the_command_stops_at_once_on_a_source_no_remote_could_bring(tmp_path: Path) -> None:
    """``watch --source relase`` (a typo) waited for ever, saying the same error
    once; with no remote to bring the branch, it stops, exit 2, as reconcile
    does. A remote's branch not fetched yet is still waited for."""
    path = make_fleet_repo(tmp_path / "fleet", {"jobs/a.yaml": pytorchjob("a")})
    proc = subprocess.run([sys.executable, "-m", "reconciler.cli", "watch", "--repo", str(path),
                           "--source", "relase", "--remote", ""], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
    assert "source revision 'relase' does not exist here: no branch, tag or commit of that " \
        "name" in proc.stderr, proc.stderr
    assert git(path, "rev-parse", "--verify", "--quiet", STATE, check=False) == ""


def test_watch_purges_an_old_copy_when_its_grace_period_ends_with_no_new_commit(
        tmp_path: Path, watching: list[Watching]) -> None:
    """On the real clock: job ``a`` fails on c1 (its only cluster), its copy
    kept there (Graciously, gracePeriodSeconds 2). With nothing pushed or
    reported, the watch wakes at the state's Fleet-Due and purges the copy;
    then it waits quietly."""
    from reconciler.fleet.observed import cluster_report
    from reconciler.pipeline import parse_now, record_reports, rfc3339

    failover = ("  failover:\n    application:\n      decisionConditions: {tolerationSeconds: 600}"
                "\n      purgeMode: Graciously\n      gracePeriodSeconds: 2\n")
    files = fleet_files()
    files["policy.yaml"] = QUEUED_CLUSTER_POLICY.replace("spec:\n", "spec:\n" + failover, 1)
    path = make_fleet_repo(tmp_path / "fleet", files)
    reconcile(FleetRepo(path))
    assert placements(path)["default/a"]["cluster"] == "c1"
    at = rfc3339(parse_now(None))
    failed = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
              "metadata": {"name": "a", "namespace": "default",
                           "labels": {"fleetq.io/managed-by": "fleetq"}},
              "status": {"conditions": [{"type": "Failed", "status": "True",
                                         "lastTransitionTime": at}]}}
    record_reports(FleetRepo(path), [cluster_report("c1", at, [failed])])
    w = Watching(path, now=None)
    watching.append(w)
    committed(w.next())
    item = placements(path)["default/a"]
    assert item["keptOn"] == ["c1"] and item["phase"] == "Inadmissible", item
    assert "Fleet-Due: " in git(path, "log", "-1", "--format=%B", STATE)
    committed(w.next())  # (woken by the time alone)
    item = placements(path)["default/a"]
    assert "keptOn" not in item and item["failedOn"] == ["c1"], item
    assert "gracePeriodSeconds (2 s) passed" in git(path, "log", "-1", "--format=%B", STATE)
    w.quiet(3.0)
    w.close()


def test_a_revision_made_as_it_is_told_missing_is_not_offered_as_meant(tmp_path: Path) -> None:
    """A watch of a branch about to be made read it missing, then, as it was
    made, told "does not exist (did you mean release?)": an error of other
    words, reported as a round of its own, and the test that made the branch
    then saw that round rather than the commit (now and then)."""
    path = make_fleet_repo(tmp_path / "fleet", fleet_files())
    repo = FleetRepo(path)
    before = no_revision(repo, "release")
    git(path, "branch", "release", "main")
    git(path, "branch", "releases", "main")
    assert no_revision(repo, "release") == before.replace(
        " here:", " here (did you mean releases?):"), no_revision(repo, "release")
    assert "did you mean release?" not in no_revision(repo, "release")
