"""How the state tree's objects are written: loose for a few, one pack for many."""

from __future__ import annotations

import os
from pathlib import Path

from reconciler.gitops import repo as gitrepo

from .conftest import (
    QUEUED_CLUSTER_POLICY,
    STATE,
    git,
    make_fleet_repo,
    member_cluster,
    one_leaf_tree,
    pytorchjob,
    rev,
    run_reconcile,
)


def _fleet(path: Path) -> Path:
    return make_fleet_repo(path, {
        "quota.yaml": one_leaf_tree("64", "256Gi"), "policy.yaml": QUEUED_CLUSTER_POLICY,
        "clusters/c1.yaml": member_cluster("c1", cpu="64", memory="256Gi"),
        **{f"jobs/j{i}.yaml": pytorchjob(f"j{i}") for i in range(6)}})


def test_many_objects_go_into_one_pack_and_the_tree_is_the_same(tmp_path: Path,
                                                                 monkeypatch) -> None:
    loose = _fleet(tmp_path / "loose")
    run_reconcile(loose, use_cache=False)
    packed = _fleet(tmp_path / "packed")
    packs_before = sorted((packed / ".git" / "objects" / "pack").glob("*.pack"))
    monkeypatch.setattr(gitrepo, "PACK_MIN_OBJECTS", 1)
    run_reconcile(packed, use_cache=False)

    assert rev(packed, f"{STATE}^{{tree}}") == rev(loose, f"{STATE}^{{tree}}")
    packs = sorted((packed / ".git" / "objects" / "pack").glob("pack-*.pack"))
    assert len(packs) == len(packs_before) + 1
    assert all(p.with_suffix(".idx").is_file() for p in packs)
    assert not list((packed / ".git" / "objects" / "pack").glob("tmp_*"))
    # Every object is readable and well formed; the state reads back file by file.
    git(packed, "fsck", "--strict", "--no-dangling")
    listed = git(packed, "ls-tree", "-r", "--name-only", STATE).split()
    assert "placements.yaml" in listed and any(p.startswith("clusters/c1/") for p in listed)
    for name in listed:
        assert git(packed, "cat-file", "-p", f"{STATE}:{name}") == git(
            loose, "cat-file", "-p", f"{STATE}:{name}")


def _packed_ids(pack: Path) -> set[str]:
    out = git(pack.parent, "verify-pack", "-v", str(pack.with_suffix(".idx")))
    return {line.split()[0] for line in out.splitlines()
            if len(line.split()) > 2 and line.split()[1] in ("blob", "tree", "commit")}


def test_objects_the_repository_holds_are_not_written_again(tmp_path: Path,
                                                            monkeypatch) -> None:
    """A state mostly as it was: only its new objects go into the next pack, or
    loose when they are few."""
    from .conftest import commit_all, write_files

    path = _fleet(tmp_path / "fleet")
    monkeypatch.setattr(gitrepo, "PACK_MIN_OBJECTS", 1)
    run_reconcile(path, use_cache=False)
    pack_dir = path / ".git" / "objects" / "pack"
    (first,) = [p for p in pack_dir.glob("pack-*.pack")]
    held = _packed_ids(first)
    write_files(path, {"jobs/j9.yaml": pytorchjob("j9", cpu="2")})
    commit_all(path, "j9")
    run_reconcile(path, use_cache=False)
    (second,) = [p for p in pack_dir.glob("pack-*.pack") if p != first]
    new = _packed_ids(second)
    assert new and not new & held
    tree = git(path, "ls-tree", "-r", "-t", STATE).split()
    assert len(new) < len(held) and new <= {*tree[2::4], rev(path, f"{STATE}^{{tree}}")}
    git(path, "fsck", "--strict", "--no-dangling")

    # fewer new objects than PACK_MIN_OBJECTS: loose, no pack
    monkeypatch.setattr(gitrepo, "PACK_MIN_OBJECTS", 500)
    write_files(path, {"jobs/j10.yaml": pytorchjob("j10", cpu="3")})
    commit_all(path, "j10")
    run_reconcile(path, use_cache=False)
    assert len(list(pack_dir.glob("pack-*.pack"))) == 2
    git(path, "fsck", "--strict", "--no-dangling")


def test_a_large_blob_is_written_in_the_background_and_git_waits_for_it(
        tmp_path: Path, monkeypatch) -> None:
    """A reconcile whose placements.yaml is "large" (the bound lowered): the
    blob is written by another thread, and the state commit is the same as
    one written in line, every object whole (``git fsck``)."""
    inline = _fleet(tmp_path / "inline")
    run_reconcile(inline, use_cache=False)
    behind = _fleet(tmp_path / "behind")
    started: list[str] = []
    real = gitrepo.threading.Thread.start

    def start(self) -> None:  # type: ignore[no-untyped-def]
        started.append(self.name)
        real(self)

    monkeypatch.setattr(gitrepo, "BEHIND_MIN_BYTES", 1000)
    monkeypatch.setattr(gitrepo.threading.Thread, "start", start)
    run_reconcile(behind, use_cache=False)
    placements = rev(behind, f"{STATE}:placements.yaml")
    assert placements is not None and f"fleetq-write-{placements[:12]}" in started
    assert rev(behind, STATE) == rev(inline, STATE)
    git(behind, "fsck", "--strict", "--no-dangling")
    assert not list((behind / ".git" / "objects").glob(f"*/{gitrepo.TMP_OBJECT}*"))


def test_an_object_left_half_written_by_a_kill_is_one_git_gc_removes(tmp_path: Path) -> None:
    """A reconcile killed while it wrote an object left a file git reported as
    garbage for good (``git fsck``: bad sha1 file) and never removed."""
    path = _fleet(tmp_path / "fleet")
    run_reconcile(path, use_cache=False)
    stray = path / ".git" / "objects" / "ab" / f"{gitrepo.TMP_OBJECT}x1y2z3"
    stray.parent.mkdir(exist_ok=True)
    stray.write_bytes(b"x\x9c half written")
    os.utime(stray, (0, 0))  # (long ago: as git gc finds one left by a kill)
    assert "bad sha1 file" not in git(path, "fsck", "--no-dangling")
    git(path, "gc", "-q", "--prune=now")
    assert not stray.exists()
    assert "garbage: 0" in git(path, "count-objects", "-v")


def test_a_background_write_that_fails_is_raised_at_the_next_git_call(
        tmp_path: Path, monkeypatch) -> None:
    path = _fleet(tmp_path / "fleet")
    repo = gitrepo.FleetRepo(path)
    monkeypatch.setattr(gitrepo, "BEHIND_MIN_BYTES", 10)

    def fail(kind: bytes, body: bytes, target: Path) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(gitrepo, "_write_loose", fail)
    sha = repo.write_blob(b"a large blob, for this test\n")
    try:
        repo.resolve("HEAD")
    except gitrepo.GitError as exc:
        assert sha in str(exc) and "No space left on device" in str(exc)
    else:
        raise AssertionError("the failed write was not raised")
    assert repo.resolve("HEAD") is not None  # raised once
    monkeypatch.undo()
    assert repo.write_blob(b"a large blob, for this test\n") == sha  # written again, now
    assert repo.read_blobs([sha]) == {sha: b"a large blob, for this test\n"}


def test_the_files_of_a_commit_written_here_are_listed_as_git_lists_them(
        tmp_path: Path, monkeypatch) -> None:
    """A watch lists, at its next round, the state commit it wrote: the listing
    kept from writing it is what ``git ls-tree -r`` says, in its order (names
    that sort differently as files and as folders), loose objects or packed."""
    import datetime as dt

    for pack_min in (10_000, 1):
        monkeypatch.setattr(gitrepo, "PACK_MIN_OBJECTS", pack_min)
        path = _fleet(tmp_path / f"repo-{pack_min}")
        writer = gitrepo.FleetRepo(path)
        old = writer.write_blob(b"carried over\n")
        files: dict[str, bytes | str] = {
            "a-b": b"1\n", "a/b": b"2\n", "a.b/c": b"3\n", "a/b-c/d": b"4\n", "a/b.c": b"5\n",
            "z": old, "clusters/c1/ns/job.yaml": b"kind: Job\n", "\u00e9t\u00e9/x": b"6\n"}
        tree = writer.write_tree(files)
        commit = writer.write_commit(tree=tree, parents=[], message="test",
                                     identity=gitrepo.Identity("t", "t@example.com"),
                                     when=dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
        writer.settle()
        kept = writer.list_tree(commit)
        listed = gitrepo.FleetRepo(path).list_tree(commit)  # read from git
        assert kept == listed and len(listed) == len(files)
        assert {e.path: e.sha for e in listed}["z"] == old


def test_revisions_resolve_to_commits_as_git_says_and_commits_are_read_once(
        tmp_path: Path, monkeypatch) -> None:
    """``resolve`` names the commit a branch, a tag (annotated or not) or a
    commit id names, and nothing for a tree, a blob or an unknown name, each
    time as git would, though a commit seen once is not peeled again;
    ``commit_info`` reads a commit once."""
    path = _fleet(tmp_path / "fleet")
    repo = gitrepo.FleetRepo(path)
    head = rev(path, "HEAD")
    git(path, "tag", "light")
    git(path, "tag", "-a", "annotated", "-m", "a tag")
    tag_object = rev(path, "refs/tags/annotated")
    assert tag_object != head
    tree, blob = rev(path, "HEAD^{tree}"), rev(path, "HEAD:quota.yaml")
    for _ in range(2):
        assert [repo.resolve(r) for r in ("HEAD", "main", head, "light", "annotated",
                                          tag_object)] == [head] * 6
        assert [repo.resolve(r) for r in (tree, blob, "nowhere", "HEAD~5")] == [None] * 4
    run_reconcile(path, use_cache=False)
    state = rev(path, STATE)
    assert repo.resolve(STATE) == state and repo.resolve(STATE) == state
    calls: list[tuple[str, ...]] = []
    real = gitrepo.FleetRepo.run

    def run(self, *args: str, **kw):
        calls.append(args)
        return real(self, *args, **kw)

    monkeypatch.setattr(gitrepo.FleetRepo, "run", run)
    first = repo.commit_info(state)
    assert repo.commit_info(state) is first and len(calls) == 1
    assert first.tree == rev(path, f"{STATE}^{{tree}}")
    assert first.message == git(path, "log", "-1", "--format=%B", STATE)
