"""The versions of a file in the source trees the state was made from
(``pipeline.earlier_versions``), as far back as the state goes, on real git."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reconciler.gitops.repo import FleetRepo
from reconciler.pipeline import LAST_GOOD_DEPTH, TRAILER, TREE_TRAILER, earlier_versions

from .conftest import commit_all, git, make_fleet_repo, write_files

SAME = "".join(f"line{n}: the same, so that git finds the rename\n" for n in range(20))


def _state_commit(path: Path, parent: str | None, source: str) -> str:
    """A state commit made from ``source`` (only its trailers are read here)."""
    tree = git(path, "rev-parse", f"{source}^{{tree}}").strip()
    message = f"state\n\n{TREE_TRAILER}: {tree}\n{TRAILER}: {source}\n"
    return git(path, "commit-tree", tree, *(["-p", parent] if parent else []),
               "-m", message).strip()


def test_the_versions_of_a_file_go_back_to_the_first_state_commit_across_a_rename(
        tmp_path: Path) -> None:
    """Over 200 state commits (read in chunks: ``LAST_GOOD_DEPTH``, then as
    many again as read so far), one or more per source commit (reports): each
    source tree once, newest first; the file followed back to its old name;
    ``None`` before it was there."""
    path = make_fleet_repo(tmp_path / "fleet", {"other.yaml": "a: 0\n"})
    state: str | None = _state_commit(path, None, "HEAD")
    expected: list[str | None] = [None]  # (the first tree, which lacks it)
    count = 3 * LAST_GOOD_DEPTH + 10
    for i in range(count):
        name = "jobs/old.yaml" if i < count // 2 else "jobs/new.yaml"
        if i == count // 2:
            git(path, "mv", "jobs/old.yaml", name)
        write_files(path, {name: f"version: {i}\n{SAME}"})
        source = commit_all(path, f"version {i}")
        expected.append(git(path, "rev-parse", f"{source}:{name}").strip())
        for _ in range(1 + i % 3):  # (a report: the same source tree again)
            state = _state_commit(path, state, source)
    assert state is not None
    got = list(earlier_versions(FleetRepo(path), state, "HEAD").blobs("jobs/new.yaml"))
    assert got == expected[::-1]
    history = earlier_versions(FleetRepo(path), state, "HEAD")
    oldest = expected[1]
    assert oldest is not None
    assert history.version("jobs/new.yaml", oldest).data == f"version: 0\n{SAME}".encode()


@pytest.mark.parametrize("name", ["jobs/plain.yaml", os.fsdecode(b"jobs/caf\xe9.yaml")])
def test_the_versions_of_a_file_not_reconciled_yet_come_first_whatever_its_name(
        tmp_path: Path, name: str) -> None:
    """A broken file's last good version is first looked for in the source
    commits since the state's (not reconciled yet). git quotes a name that
    is not UTF-8 (Latin-1, here) as it lists it: that version was not found,
    and the state's older one taken instead."""
    path = make_fleet_repo(tmp_path / "fleet", {name: f"version: 0\n{SAME}"})
    state = _state_commit(path, None, git(path, "rev-parse", "HEAD").strip())
    blobs = [git(path, "rev-parse", f"HEAD:{name}").strip()]
    for i in (1, 2):
        write_files(path, {name: f"version: {i}\n{SAME}"})
        blobs.append(git(path, "rev-parse", f"{commit_all(path, f'version {i}')}:{name}").strip())
    history = earlier_versions(FleetRepo(path), state, "HEAD")
    assert history is not None
    assert [f.blob for f in history(name, blobs[2])] == [blobs[1], blobs[0]]
