"""A fleet kept in memory (``fleetq watch``) and patched with the files a
commit changed: the same values as reading the commit whole, on a real repo.

Each step commits a change and reads HEAD twice: with one ``Cache`` kept over
all the steps (so it patches the fleet it read last, when it may) and by a
fresh, uncached whole read. The two must be equal; and each step says which
way the kept cache went (the job files patched in, the other files read again
and the job files patched in, or the commit read whole), so a patch that is
never taken, or taken where it may not be, fails too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.fleet.cache import Cache
from reconciler.fleet.inputs import FleetInputs, patch_fleet, read_fleet
from reconciler.gitops.repo import FleetRepo
from reconciler.pipeline import (
    PATCHED,
    PATCHED_OTHERS,
    ParsedJobs,
    earlier_versions,
    read_inputs,
    read_source,
)

from .conftest import (
    NOW,
    QUEUED_CLUSTER_POLICY,
    commit_all,
    fleetq,
    git,
    make_fleet_repo,
    member_cluster,
    one_leaf_tree,
    pytorchjob,
    write_files,
)

JOBS, OTHERS, WHOLE = "jobs", "others", "whole"  # how a kept cache read a commit
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


def whole(path: Path, *, as_reconciled: bool = False) -> FleetInputs:
    """The fleet at HEAD read whole; ``as_reconciled``: as a reconcile with no
    state reads it (a broken file in its last good version of the source's
    commits), the fleet a reconcile keeps for the next read to patch."""
    repo = FleetRepo(path)
    store = ParsedJobs()
    _, files = read_source(repo, "HEAD", store)
    return read_fleet(files, store,
                      earlier_versions(repo, None, "HEAD") if as_reconciled else None)


class Kept:
    """One cache over all the reads, as a watch keeps it."""

    def __init__(self, path: Path) -> None:
        self.repo = FleetRepo(path)
        self.cache = Cache(self.repo.git_dir)
        self.path = path

    def read(self) -> tuple[FleetInputs, str]:
        said: list[str] = []
        _, inputs = read_inputs(self.repo, "HEAD", self.cache, self.cache, said.append)
        return inputs, JOBS if PATCHED in said else OTHERS if PATCHED_OTHERS in said else WHOLE


@pytest.fixture
def fleet(tmp_path: Path) -> Kept:
    path = make_fleet_repo(tmp_path / "fleet", {
        "fleet.yaml": FLEET, "quota.yaml": one_leaf_tree("64", "256Gi"),
        "policy.yaml": QUEUED_CLUSTER_POLICY, "clusters/c1.yaml": member_cluster("c1"),
        "jobs/a.yaml": pytorchjob("a"), "jobs/b.yaml": pytorchjob("b"),
        "jobs/two.yaml": pytorchjob("t1") + "---\n" + pytorchjob("t2"),
        "jobs/bad.yaml": pytorchjob("bad", replicas_text='"two"')})
    kept = Kept(path)
    inputs, how = kept.read()
    assert how == WHOLE and inputs == whole(path)
    assert [bad.key.name for bad in inputs.invalid] == ["bad"]
    return kept


def step(kept: Kept, files: dict[str, str], *, remove: tuple[str, ...] = (),
         how: str) -> FleetInputs:
    if files:
        write_files(kept.path, files)
    if remove:
        git(kept.path, "rm", "-q", *remove)
    commit_all(kept.path, "step")
    got, read = kept.read()
    assert got == whole(kept.path)
    assert read == how
    return got


def test_job_files_pushed_one_by_one_are_patched_in_as_a_whole_read_has_them(
        fleet: Kept) -> None:
    got = step(fleet, {"jobs/c.yaml": pytorchjob("c")}, how=JOBS)
    assert sorted(k.name for k in got.jobs) == ["a", "b", "c", "t1", "t2"]
    step(fleet, {"jobs/a.yaml": pytorchjob("a", cpu="3")}, how=JOBS)
    step(fleet, {}, remove=("jobs/b.yaml",), how=JOBS)
    got = step(fleet, {"jobs/c.yaml": pytorchjob("c", cpu="lots", memory="lots")}, how=JOBS)
    assert len([p for p in got.problems if p.path == "jobs/c.yaml"]) == 4  # (each told)
    got = step(fleet, {"jobs/c.yaml": pytorchjob("c", replicas_text='"x"')}, how=JOBS)
    assert sorted(bad.key.name for bad in got.invalid) == ["bad", "c"]
    assert len([p for p in got.problems if p.path == "jobs/c.yaml"]) == 1
    got = step(fleet, {"jobs/0.yaml": pytorchjob("zero", replicas_text='"x"')},
               how=JOBS)
    assert [bad.key.name for bad in got.invalid] == ["zero", "bad", "c"]  # by path
    got = step(fleet, {"jobs/bad.yaml": pytorchjob("bad")}, remove=("jobs/0.yaml",),
               how=JOBS)
    assert [bad.key.name for bad in got.invalid] == ["c"]
    assert "bad" in {k.name for k in got.jobs}
    # a job that does not say which job it is (its file is as one that does not
    # read: a job that ran there keeps its place), with another file, then named
    got = step(fleet, {"jobs/n.yaml": pytorchjob("Not_A_Name")}, how=JOBS)
    assert "jobs/n.yaml" in got.broken_paths
    got = step(fleet, {"jobs/n.yaml": pytorchjob("Not_A_Name"), "cm.yaml": CONFIG}, how=OTHERS)
    assert "jobs/n.yaml" in got.broken_paths
    got = step(fleet, {"jobs/n.yaml": pytorchjob("named")}, how=JOBS)
    assert "jobs/n.yaml" not in got.broken_paths
    step(fleet, {"jobs/two.yaml": pytorchjob("t2")}, how=JOBS)  # one of two documents
    step(fleet, {"jobs/z/a.yaml": pytorchjob("a", cpu="3")}, remove=("jobs/a.yaml",),
         how=JOBS)  # moved
    step(fleet, {"docs/example.yaml": pytorchjob("doc", replicas_text='"two"')},
         how=JOBS)  # excluded: not read
    assert fleet.read()[1] == JOBS  # the same tree again: the fleet as it was


def test_a_job_defined_twice_is_read_whole_until_it_is_not(fleet: Kept) -> None:
    got = step(fleet, {"jobs/a-again.yaml": pytorchjob("a", cpu="2")}, how=WHOLE)
    assert got.jobs[next(k for k in got.jobs if k.name == "a")].job.path == \
        "jobs/a-again.yaml"  # (the first by path)
    assert any("also defined at" in p.message for p in got.problems)
    step(fleet, {"jobs/c.yaml": pytorchjob("c")}, how=JOBS)  # a is not touched
    got = step(fleet, {}, remove=("jobs/a-again.yaml",), how=WHOLE)
    assert got.jobs[next(k for k in got.jobs if k.name == "a")].job.path == "jobs/a.yaml"
    step(fleet, {"jobs/a-2.yaml": pytorchjob("a")}, how=WHOLE)  # twice again
    step(fleet, {}, remove=("jobs/a-2.yaml",), how=WHOLE)
    step(fleet, {"jobs/d.yaml": pytorchjob("d")}, how=JOBS)


def test_other_files_are_read_again_and_the_job_files_patched_in(fleet: Kept) -> None:
    got = step(fleet, {"quota.yaml": one_leaf_tree("32", "256Gi")}, how=OTHERS)
    assert got.tree is not None and got.tree.nodes["root"].max["cpu"] == 32000
    got = step(fleet, {"jobs/config.yaml": CONFIG}, how=OTHERS)
    assert ("ConfigMap", "default", "settings") in got.dependencies
    step(fleet, {"jobs/config.yaml": CONFIG.replace('"1"', '"2"')}, how=OTHERS)
    got = step(fleet, {"jobs/broken.yaml": "a: [\n"}, how=OTHERS)
    assert "jobs/broken.yaml" in got.broken_paths
    step(fleet, {"templates/commit-message.j2": "reconcile {{ source.short }}\n"},
         how=OTHERS)
    step(fleet, {"clusters/c2.yaml": member_cluster("c2"),
                 "jobs/f.yaml": pytorchjob("f")}, how=OTHERS)  # and a job file with them
    # a job file that takes in another kind, and lets it go again
    got = step(fleet, {"jobs/a.yaml": pytorchjob("a") + "---\n" +
                       CONFIG.replace("settings", "for-a")}, how=OTHERS)
    assert "jobs/a.yaml" not in got.jobs_files and "a" in {k.name for k in got.jobs}
    got = step(fleet, {"jobs/a.yaml": pytorchjob("a", cpu="2")}, how=OTHERS)
    assert "jobs/a.yaml" in got.jobs_files
    # invalid jobs of both kinds of files, in the order of their paths
    got = step(fleet, {"jobs/z.yaml": pytorchjob("z", replicas_text='"x"') + "---\n" +
                       CONFIG.replace("settings", "for-z"),
                       "jobs/0.yaml": pytorchjob("zero", replicas_text='"x"')}, how=OTHERS)
    assert [bad.key.name for bad in got.invalid] == ["zero", "bad", "z"]
    step(fleet, {}, remove=("jobs/config.yaml", "jobs/broken.yaml", "jobs/z.yaml"),
         how=OTHERS)
    step(fleet, {}, remove=("templates/commit-message.j2",), how=OTHERS)
    step(fleet, {"fleet.yaml": FLEET.replace("docs/**", "old/**")}, how=WHOLE)
    step(fleet, {"jobs/e.yaml": pytorchjob("e")}, how=JOBS)


def test_a_job_in_another_file_and_a_job_file_at_once_is_read_whole(fleet: Kept) -> None:
    """Which of the two counts depends on the order of the files."""
    got = step(fleet, {"jobs/0-mixed.yaml": pytorchjob("a", cpu="5") + "---\n" + CONFIG},
               how=WHOLE)
    assert got.jobs[next(k for k in got.jobs if k.name == "a")].job.path == \
        "jobs/0-mixed.yaml"  # (the first by path)
    got = step(fleet, {}, remove=("jobs/0-mixed.yaml",), how=WHOLE)
    assert got.jobs[next(k for k in got.jobs if k.name == "a")].job.path == "jobs/a.yaml"
    step(fleet, {"quota.yaml": one_leaf_tree("16", "256Gi")}, how=OTHERS)


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

    def fresh() -> tuple[FleetInputs, str]:
        kept = Kept(path)
        kept.cache.load_jobs()
        return kept.read()

    write_files(path, {"jobs/b.yaml": pytorchjob("b")})
    commit_all(path, "b")
    got, how = fresh()
    assert how == JOBS and got == whole(path, as_reconciled=True)
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
    got, how = fresh()
    assert how == WHOLE and got == whole(path)  # a damaged file: read whole
    reconcile(repo, now=when(NOW))

    write_files(path, {"jobs/a-again.yaml": pytorchjob("b")})  # b twice
    commit_all(path, "b again")
    reconcile(repo, now=when(NOW))
    assert not saved.exists()  # not saved: which b counts depends on the order of files
    write_files(path, {"jobs/c.yaml": pytorchjob("c")})
    commit_all(path, "c")
    got, how = fresh()
    assert how == WHOLE and got == whole(path)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_pushes_of_job_files_read_as_a_whole_read_has_them(
        fleet: Kept, seed: int) -> None:
    """Thirty drawn pushes (new, changed, broken, fixed, deleted, moved, doubled
    and multi-document job files; now and then another kind of file, a job
    file with another kind in it, a file that does not parse, a new quota
    tree, a job that does not say which it is): after each, the kept cache's
    fleet is the whole read's."""
    import random

    draw = random.Random(seed)
    names = [f"r{i}" for i in range(12)]
    files: dict[str, str] = {}  # path -> job name, the drawn files now in the fleet
    ways: dict[str, int] = {}  # how each was read
    for step_no in range(30):
        what = draw.choice(["new", "new", "change", "broken", "delete", "move", "twice",
                            "two", "config", "mixed", "syntax", "quota"])
        path = f"jobs/d/{draw.choice('abcdefgh')}{step_no}.yaml"
        name = draw.choice(names)
        write: dict[str, str] = {}
        remove: tuple[str, ...] = ()
        if what in ("change", "broken", "delete", "move") and files:
            old = draw.choice(sorted(files))
            if what == "change":
                write[old] = pytorchjob(files[old], cpu=str(draw.randint(1, 4)))
            elif what == "broken":  # (one mistake, or several: each is told)
                write[old] = pytorchjob(files[old], replicas_text='"x"') if step_no % 2 \
                    else pytorchjob(files[old], cpu="lots", memory="lots")
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
        elif what == "mixed":
            write[path] = pytorchjob(name) + "---\n" + CONFIG.replace("settings", f"m{step_no}")
            files[path] = name
        elif what == "syntax":
            write[path] = "a: [\n"
            files[path] = "syntax"
        elif what == "quota":
            write["quota.yaml"] = one_leaf_tree(str(draw.randint(8, 64)), "256Gi")
        else:  # (now and then a job that says not which it is)
            write[path] = pytorchjob(f"Unnamed_{name}" if step_no % 5 == 2 else name)
            files[path] = name
        if write:
            write_files(fleet.path, write)
        if remove:
            git(fleet.path, "rm", "-q", *remove)
        commit_all(fleet.path, f"step {step_no}: {what}")
        got, how = fleet.read()
        assert got == whole(fleet.path), (step_no, what)
        ways[how] = ways.get(how, 0) + 1
    # (each seed draws enough pushes of job files alone, and of other files)
    assert ways.get(JOBS, 0) >= 5 and ways.get(OTHERS, 0) >= 3, ways


def test_an_object_defined_in_two_files_is_read_again_as_a_whole_read_has_it(
        fleet: Kept) -> None:
    """A ConfigMap, a member cluster defined in a second file: neither counts
    (no state: nothing tells which came first), patched as read whole; a job
    file changed meanwhile is patched in; removing the second file restores it."""
    step(fleet, {"deps/settings.yaml": CONFIG}, how=OTHERS)
    got = step(fleet, {"deps/a-copy.yaml": CONFIG.replace('"1"', '"2"'),
                       "clusters/a-c1.yaml": member_cluster("c1")}, how=OTHERS)
    assert got.dependencies == {} and got.clusters == []
    assert sorted(got.conflicts) == ["ConfigMap default/settings", "MemberCluster c1"]
    step(fleet, {"jobs/c.yaml": pytorchjob("c")}, how=JOBS)
    got = step(fleet, {}, remove=("deps/a-copy.yaml", "clusters/a-c1.yaml"), how=OTHERS)
    assert [d.manifest["data"]["a"] for d in got.dependencies.values()] == ["1"]
    assert [c.name for c in got.clusters] == ["c1"]


def test_a_work_tree_validated_leaves_the_fleet_read_last_to_patch(tmp_path: Path) -> None:
    """``fleetq validate`` of a work tree read a tree whose objects are gone
    once it was checked: kept as the fleet read last, the next reconcile could
    not patch it and read the whole commit again."""
    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": one_leaf_tree("64", "256Gi"), "policy.yaml": QUEUED_CLUSTER_POLICY,
        "clusters/c1.yaml": member_cluster("c1"), "jobs/a.yaml": pytorchjob("a")})
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    write_files(path, {"jobs/b.yaml": pytorchjob("b")})
    assert fleetq("validate", "--repo", str(path)).returncode == 0
    write_files(path, {"jobs/b.yaml": pytorchjob("b", cpu="2")})  # (edited once more)
    commit_all(path, "b")
    kept = Kept(path)
    kept.cache.load_jobs()
    got, how = kept.read()
    assert how == JOBS and got == whole(path, as_reconciled=True)


def test_the_warnings_of_a_jobs_fields_come_and_go_with_its_file(fleet: Kept) -> None:
    """A field the API server does not have is a warning of the job's file,
    patched in and out with it: in a file of jobs only, and in one with
    another kind, read again."""
    typo = pytorchjob("c").replace("  pytorchReplicaSpecs:", "  runpolicy: {}\n"
                                   "  pytorchReplicaSpecs:")

    def warned(got: FleetInputs) -> list[tuple[str, int]]:
        return [(p.path, p.line) for p in got.problems
                if p.severity == "warning" and "has no field 'runpolicy'" in p.message]

    got = step(fleet, {"jobs/c.yaml": typo}, how=JOBS)
    assert warned(got) == [("jobs/c.yaml", 7)] and "c" in {k.name for k in got.jobs}
    got = step(fleet, {"jobs/c.yaml": pytorchjob("c")}, how=JOBS)
    assert warned(got) == []
    got = step(fleet, {"jobs/c.yaml": typo, "jobs/d.yaml": typo.replace("name: c", "name: d")},
               how=JOBS)
    assert warned(got) == [("jobs/c.yaml", 7), ("jobs/d.yaml", 7)]
    got = step(fleet, {"quota.yaml": one_leaf_tree("32", "256Gi")}, how=OTHERS)
    assert warned(got) == [("jobs/c.yaml", 7), ("jobs/d.yaml", 7)]
    got = step(fleet, {"jobs/d.yaml": typo.replace("name: c", "name: d") + "---\n" + CONFIG},
               how=OTHERS)
    assert warned(got) == [("jobs/c.yaml", 7), ("jobs/d.yaml", 7)]
    got = step(fleet, {}, remove=("jobs/c.yaml", "jobs/d.yaml"), how=OTHERS)
    assert warned(got) == []
