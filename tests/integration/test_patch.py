"""A fleet kept in memory (``fleetq watch``) and patched with the job files a
commit changed: the same values as reading the commit whole, on a real repo.

Each step commits a change and reads HEAD twice: with one ``Cache`` kept over
all the steps (so it patches the fleet it read last, when it may) and by a
fresh, uncached whole read. The two must be equal; and each step says which
way the kept cache went, so a patch that is never taken, or taken where it
may not be, fails too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.fleet.cache import Cache
from reconciler.fleet.inputs import FleetInputs, patch_fleet, read_fleet
from reconciler.gitops.repo import FleetRepo
from reconciler.pipeline import ParsedJobs, read_inputs, read_source

from .conftest import (
    QUEUED_CLUSTER_POLICY,
    commit_all,
    git,
    make_fleet_repo,
    member_cluster,
    one_leaf_tree,
    pytorchjob,
    write_files,
)

PATCHED = "patched the fleet read last with the files that changed"
FLEET = """\
apiVersion: fleetq.io/v1alpha1
kind: Fleet
metadata: {name: fleet}
spec:
  exclude:
  - "docs/**"
"""
CONFIG = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: default}
data: {a: "1"}
"""


def whole(path: Path) -> FleetInputs:
    repo = FleetRepo(path)
    store = ParsedJobs()
    _, files = read_source(repo, "HEAD", store)
    return read_fleet(files, store)


class Kept:
    """One cache over all the reads, as a watch keeps it."""

    def __init__(self, path: Path) -> None:
        self.repo = FleetRepo(path)
        self.cache = Cache(self.repo.git_dir)
        self.path = path

    def read(self) -> tuple[FleetInputs, bool]:
        said: list[str] = []
        _, inputs = read_inputs(self.repo, "HEAD", self.cache, self.cache, said.append)
        return inputs, PATCHED in said


@pytest.fixture
def fleet(tmp_path: Path) -> Kept:
    path = make_fleet_repo(tmp_path / "fleet", {
        "fleet.yaml": FLEET, "quota.yaml": one_leaf_tree("64", "256Gi"),
        "policy.yaml": QUEUED_CLUSTER_POLICY, "clusters/c1.yaml": member_cluster("c1"),
        "jobs/a.yaml": pytorchjob("a"), "jobs/b.yaml": pytorchjob("b"),
        "jobs/two.yaml": pytorchjob("t1") + "---\n" + pytorchjob("t2"),
        "jobs/bad.yaml": pytorchjob("bad", replicas_text='"two"')})
    kept = Kept(path)
    inputs, patched = kept.read()
    assert not patched and inputs == whole(path)
    assert [bad.key.name for bad in inputs.invalid] == ["bad"]
    return kept


def step(kept: Kept, files: dict[str, str], *, remove: tuple[str, ...] = (),
         patched: bool) -> FleetInputs:
    if files:
        write_files(kept.path, files)
    if remove:
        git(kept.path, "rm", "-q", *remove)
    commit_all(kept.path, "step")
    got, was_patched = kept.read()
    assert got == whole(kept.path)
    assert was_patched is patched
    return got


def test_job_files_pushed_one_by_one_are_patched_in_as_a_whole_read_has_them(
        fleet: Kept) -> None:
    got = step(fleet, {"jobs/c.yaml": pytorchjob("c")}, patched=True)
    assert sorted(k.name for k in got.jobs) == ["a", "b", "c", "t1", "t2"]
    step(fleet, {"jobs/a.yaml": pytorchjob("a", cpu="3")}, patched=True)
    step(fleet, {}, remove=("jobs/b.yaml",), patched=True)
    got = step(fleet, {"jobs/c.yaml": pytorchjob("c", replicas_text='"x"')}, patched=True)
    assert sorted(bad.key.name for bad in got.invalid) == ["bad", "c"]
    got = step(fleet, {"jobs/0.yaml": pytorchjob("zero", replicas_text='"x"')},
               patched=True)
    assert [bad.key.name for bad in got.invalid] == ["zero", "bad", "c"]  # by path
    got = step(fleet, {"jobs/bad.yaml": pytorchjob("bad")}, remove=("jobs/0.yaml",),
               patched=True)
    assert [bad.key.name for bad in got.invalid] == ["c"]
    assert "bad" in {k.name for k in got.jobs}
    step(fleet, {"jobs/two.yaml": pytorchjob("t2")}, patched=True)  # one of two documents
    step(fleet, {"jobs/z/a.yaml": pytorchjob("a", cpu="3")}, remove=("jobs/a.yaml",),
         patched=True)  # moved
    step(fleet, {"docs/example.yaml": pytorchjob("doc", replicas_text='"two"')},
         patched=True)  # excluded: not read
    assert fleet.read()[1] is True  # the same tree again: the fleet as it was


def test_a_job_defined_twice_is_read_whole_until_it_is_not(fleet: Kept) -> None:
    got = step(fleet, {"jobs/a-again.yaml": pytorchjob("a", cpu="2")}, patched=False)
    assert got.jobs[next(k for k in got.jobs if k.name == "a")].job.path == \
        "jobs/a-again.yaml"  # (the first by path)
    assert any("also defined at" in p.message for p in got.problems)
    step(fleet, {"jobs/c.yaml": pytorchjob("c")}, patched=True)  # a is not touched
    got = step(fleet, {}, remove=("jobs/a-again.yaml",), patched=False)
    assert got.jobs[next(k for k in got.jobs if k.name == "a")].job.path == "jobs/a.yaml"
    step(fleet, {"jobs/a-2.yaml": pytorchjob("a")}, patched=False)  # twice again
    step(fleet, {}, remove=("jobs/a-2.yaml",), patched=False)
    step(fleet, {"jobs/d.yaml": pytorchjob("d")}, patched=True)


def test_files_that_are_not_only_jobs_are_read_whole(fleet: Kept) -> None:
    step(fleet, {"quota.yaml": one_leaf_tree("32", "256Gi")}, patched=False)
    step(fleet, {"jobs/config.yaml": CONFIG}, patched=False)
    step(fleet, {"jobs/config.yaml": CONFIG.replace('"1"', '"2"')}, patched=False)
    step(fleet, {"jobs/broken.yaml": "a: [\n"}, patched=False)
    step(fleet, {"fleet.yaml": FLEET.replace("docs/**", "old/**")}, patched=False)
    step(fleet, {"templates/commit-message.j2": "reconcile {{ source.short }}\n"},
         patched=False)
    step(fleet, {"jobs/e.yaml": pytorchjob("e")}, patched=True)


def test_patching_never_changes_the_fleet_it_starts_from(fleet: Kept) -> None:
    kept = fleet.cache.kept_inputs()
    assert kept is not None
    before = kept[1]
    jobs, invalid, problems = dict(before.jobs), list(before.invalid), list(before.problems)
    b = next(v for k, v in before.jobs.items() if k.name == "b")
    a = next(v for k, v in before.jobs.items() if k.name == "a")
    assert patch_fleet(before, [("jobs/b.yaml", (b.job.blob, [b]), None),
                                ("jobs/new.yaml", None, ("1" * 40, [a]))]) is None  # a twin
    assert patch_fleet(before, [("jobs/b.yaml", ("0" * 40, [b]), None)]) is None  # not it
    got = patch_fleet(before, [("jobs/b.yaml", (b.job.blob, [b]), None)])
    assert got is not None and "b" not in {k.name for k in got.jobs}
    assert "jobs/b.yaml" not in got.jobs_files and "jobs/b.yaml" in before.jobs_files
    assert (before.jobs, before.invalid, before.problems) == (jobs, invalid, problems)


def test_a_new_process_patches_the_fleet_the_last_reconcile_saved(tmp_path: Path) -> None:
    """``fleetq reconcile`` after ``fleetq reconcile``: the fleet read is saved
    with the cache, but for the jobs of its jobs-only files (in the shards);
    the next process rebuilds it and patches it with the files pushed."""
    from reconciler.fleet.cache import INPUTS
    from reconciler.pipeline import reconcile

    from .conftest import NOW, when

    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": one_leaf_tree("64", "256Gi"), "policy.yaml": QUEUED_CLUSTER_POLICY,
        "clusters/c1.yaml": member_cluster("c1"), "jobs/a.yaml": pytorchjob("a"),
        "jobs/mixed.yaml": pytorchjob("m") + "---\n" + CONFIG,  # its job is saved as it is
        "jobs/bad.yaml": pytorchjob("bad", replicas_text='"two"')})
    repo = FleetRepo(path)
    reconcile(repo, now=when(NOW))

    def fresh() -> tuple[FleetInputs, bool]:
        kept = Kept(path)
        kept.cache.load_jobs()
        return kept.read()

    write_files(path, {"jobs/b.yaml": pytorchjob("b")})
    commit_all(path, "b")
    got, patched = fresh()
    assert patched and got == whole(path)
    assert sorted(k.name for k in got.jobs) == ["a", "b", "m"]
    reconcile(repo, now=when(NOW))
    (saved,) = (path / ".git" / "fleetq").glob(f"cache-v*/{INPUTS}")
    written = saved.stat().st_ino
    git(path, "update-ref", "-d", "refs/heads/fleetq/state")
    assert reconcile(repo, now=when(NOW)).commit is not None  # the same source again
    assert saved.stat().st_ino == written  # the same tree's fleet: not written again

    git(path, "rm", "-q", "jobs/a.yaml")
    commit_all(path, "a is done")
    damaged = saved.read_bytes()
    saved.write_bytes(damaged[:len(damaged) // 2])
    got, patched = fresh()
    assert not patched and got == whole(path)  # a damaged file: read whole
    reconcile(repo, now=when(NOW))

    write_files(path, {"jobs/a-again.yaml": pytorchjob("b")})  # b twice
    commit_all(path, "b again")
    reconcile(repo, now=when(NOW))
    assert not saved.exists()  # not saved: which b counts depends on the order of files
    write_files(path, {"jobs/c.yaml": pytorchjob("c")})
    commit_all(path, "c")
    got, patched = fresh()
    assert not patched and got == whole(path)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_pushes_of_job_files_read_as_a_whole_read_has_them(
        fleet: Kept, seed: int) -> None:
    """Thirty drawn pushes (new, changed, broken, fixed, deleted, moved, doubled
    and multi-document job files, now and then another kind of file): after
    each, the kept cache's fleet is the whole read's."""
    import random

    draw = random.Random(seed)
    names = [f"r{i}" for i in range(12)]
    files: dict[str, str] = {}  # path -> job name, the drawn files now in the fleet
    patched = 0
    for step_no in range(30):
        what = draw.choice(["new", "new", "change", "broken", "delete", "move", "twice",
                            "two", "config"])
        path = f"jobs/d/{draw.choice('abcdefgh')}{step_no}.yaml"
        name = draw.choice(names)
        write: dict[str, str] = {}
        remove: tuple[str, ...] = ()
        if what in ("change", "broken", "delete", "move") and files:
            old = draw.choice(sorted(files))
            if what == "change":
                write[old] = pytorchjob(files[old], cpu=str(draw.randint(1, 4)))
            elif what == "broken":
                write[old] = pytorchjob(files[old], replicas_text='"x"')
            elif what == "delete":
                remove = (old,)
                del files[old]
            else:
                write[path] = pytorchjob(files[old])
                files[path] = files.pop(old)
                remove = (old,)
        elif what == "twice" and files:
            write[path] = pytorchjob(files[draw.choice(sorted(files))])
            files[path] = "twice"
        elif what == "two":
            write[path] = pytorchjob(name) + "---\n" + pytorchjob(f"{name}-b")
            files[path] = name
        elif what == "config":
            write[path] = CONFIG.replace("settings", f"settings-{step_no}")
            files[path] = "config"
        else:
            write[path] = pytorchjob(name)
            files[path] = name
        if write:
            write_files(fleet.path, write)
        if remove:
            git(fleet.path, "rm", "-q", *remove)
        commit_all(fleet.path, f"step {step_no}: {what}")
        got, was_patched = fleet.read()
        assert got == whole(fleet.path), (step_no, what)
        patched += was_patched
    assert patched >= 5  # (each seed draws enough pushes of job files alone)
