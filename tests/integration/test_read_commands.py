"""The commands that read a fleet and its state without committing (status,
queue, explain, plan, validate) give the same output from the cache
(``.git/fleetq``) as without it, and leave it filled for the next command."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from benchmarks.generate import add_job, generate_fleet
from reconciler import cli
from reconciler.fleet import inputs
from reconciler.fleet.cache import Cache
from reconciler.fleet.state import PLACEMENTS, placements_file, read_items
from reconciler.gitops.repo import FleetRepo
from reconciler.pipeline import state_items

from .conftest import (
    NOW,
    STATE,
    commit_all,
    fleetq,
    placements,
    push_template_job,
    reconciled_template,
    rev,
    run_reconcile,
)

LATER = "2026-11-29T12:00:00Z"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated fleet reconciled twice: jobs admitted onto nodes, queued in
    order, preempted, and one kept where it runs after its file broke."""
    path = tmp_path_factory.mktemp("read") / "fleet"
    generate_fleet(path, jobs=160, clusters=3, nodes_per_cluster=3, leaf_quotas=6, seed=5,
                   checkout=True)
    run_reconcile(path, now=NOW)
    items = sorted(placements(path).values(), key=lambda i: str(i["source"]["path"]))
    broken = path / next(i for i in items if i["phase"] == "Admitted")["source"]["path"]
    broken.write_text(broken.read_text() + 'oops: "never closed\n')
    for item in items:  # waiting jobs of low priority made urgent: they preempt
        job = path / item["source"]["path"]
        if item["phase"] == "Queued" and "priorityClassName: low" in job.read_text():
            job.write_text(job.read_text().replace("priorityClassName: low",
                                                   "priorityClassName: high"))
    commit_all(path, "break a running job's file, make waiting jobs urgent", date=NOW)
    assert run_reconcile(path, now=LATER).commit is not None
    return path


def both(*args: str) -> tuple[str, str]:
    """The command's output with the cache, then without it."""
    got = []
    for extra in ((), ("--no-cache",)):
        proc = fleetq(*args, *extra)
        assert proc.returncode in (0, 1), proc.stderr
        got.append(proc.stdout)
    return got[0], got[1]


def test_the_fleet_has_a_decision_of_every_kind(fleet: Path) -> None:
    items = placements(fleet).values()
    assert {i["phase"] for i in items} >= {"Admitted", "Queued"}
    assert any(i.get("sourceInvalid") for i in items)
    assert any(i.get("preemptedBy") for i in items)
    assert any(i.get("nodes") for i in items) and any(i.get("position") for i in items)


@pytest.mark.parametrize("args", [["status", "-o", "json"], ["status", "-o", "yaml"],
                                  ["status"], ["status", "-o", "wide"],
                                  ["status", "--phase", "queued", "-n", "team-1"],
                                  ["status", "-o", "yaml", "-n", "team-1"],
                                  ["queue"], ["queue", "-o", "json"], ["queue", "-o", "yaml"]])
def test_status_and_queue_show_the_same_from_the_cache(fleet: Path, args: list[str]) -> None:
    cached, read = both(*args, "--repo", str(fleet))
    assert cached == read and cached.strip()


def test_status_takes_the_items_from_the_cache_without_reading_the_file(
        fleet: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = FleetRepo(fleet)
    state = rev(fleet, STATE)
    assert state is not None
    expected, problem = read_items(repo.read_file(state, PLACEMENTS))
    assert problem is None and len(expected) == 160

    def unread(*_: object) -> bytes:
        raise AssertionError("placements.yaml was read")

    monkeypatch.setattr(repo, "read_file", unread)
    items, texts, problem = state_items(repo, state, Cache(repo.git_dir))
    assert (items, problem) == (expected, None)
    assert texts is not None  # each item's text, as the file has it
    monkeypatch.undo()
    assert placements_file(texts) == repo.read_file(state, PLACEMENTS)

    def unmade(*_: object) -> object:
        raise AssertionError("the YAML was made again")

    # -o yaml writes those texts as they are (the same bytes: see the test above)
    monkeypatch.setattr(cli, "yaml_parts", unmade)
    assert cli.main(["status", "-o", "yaml", "--repo", str(fleet)]) == 0
    with pytest.raises(AssertionError, match="made again"):
        cli.main(["status", "-o", "yaml", "--repo", str(fleet), "--no-cache"])


def test_a_cache_that_does_not_make_the_states_file_is_not_believed(
        tmp_path: Path, fleet: Path) -> None:
    """The cache holds other decisions for the state commit (damaged, or written
    by hand): status reads the file, and says what it says."""
    import shutil

    copy = tmp_path / "fleet"
    shutil.copytree(fleet, copy)
    repo = FleetRepo(copy)
    state = rev(copy, STATE)
    assert state is not None
    got = Cache(repo.git_dir).load_state(state)
    assert got is not None
    written, rendered = got
    lie = dict(written)
    key = next(k for k, (d, _) in written.items() if d.phase.value == "Queued")
    lie[key] = written[next(k for k in written if k != key)]
    Cache(repo.git_dir).save_state(state, lie, rendered)
    assert Cache(repo.git_dir).load_state(state) is not None  # it is there, and differs
    expected, _ = read_items(repo.read_file(state, PLACEMENTS))
    assert state_items(repo, state, Cache(repo.git_dir)) == (expected, None, None)
    cached, read = both("status", "-o", "json", "--repo", str(copy))
    assert cached == read
    assert json.loads(cached) == expected


def test_plan_explain_and_validate_say_the_same_from_the_cache_and_fill_it(
        tmp_path: Path, fleet: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    copy = tmp_path / "fleet"
    shutil.copytree(fleet, copy)
    shutil.rmtree(copy / ".git" / "fleetq")
    add_job(copy, index=160, seed=3)
    subprocess.run(["git", "-C", str(copy), "reset", "-q", "--hard"], check=True)
    queued = next(i for i in placements(copy).values() if i["phase"] == "Queued")
    job = f"{queued['job']['namespace']}/{queued['job']['name']}"

    plan, plan_read = both("plan", "--repo", str(copy), "--now", LATER, "-o", "json")
    assert plan == plan_read and json.loads(plan)["changed"]
    shards = list((copy / ".git" / "fleetq").glob("cache-v*/jobs-*.pickle"))
    assert shards and list((copy / ".git" / "fleetq").glob("cache-v*/inputs.pickle"))

    explained, explained_read = both("explain", job, "--repo", str(copy), "--now", LATER)
    assert explained == explained_read and f"{job} is Queued" in explained
    checked, checked_read = both("validate", "--repo", str(copy), "-o", "json")
    broken = next(i for i in placements(copy).values() if i.get("sourceInvalid"))
    assert checked == checked_read
    assert [p["path"] for p in json.loads(checked) if p["severity"] == "error"] == [
        broken["source"]["path"]]

    # The next command reads the fleet from the cache: no job is built again.
    built: list[str] = []
    build = inputs.build_job

    def counted(*args: object, **kwargs: object) -> object:
        built.append(str(kwargs.get("path")))
        return build(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(inputs, "build_job", counted)
    assert cli.main(["explain", job, "--repo", str(copy), "--now", LATER]) == 0
    assert built == []
    assert cli.main(["explain", job, "--repo", str(copy), "--now", LATER, "--no-cache"]) == 0
    files = subprocess.run(["git", "-C", str(copy), "ls-tree", "-r", "--name-only", "HEAD",
                            "jobs/"], check=True, capture_output=True, text=True).stdout.split()
    assert sorted(built) == sorted(set(files) - {broken["source"]["path"]})  # each, once


def test_plan_and_explain_write_no_object_into_the_repository(tmp_path: Path) -> None:
    """They wrote the state they would commit (placements.yaml and its tree):
    on a read-only repository each stopped with a bare errno."""
    path = reconciled_template(tmp_path)
    push_template_job(path, "pushed")

    def objects() -> set[str]:
        return {str(p.relative_to(path)) for p in (path / ".git/objects").rglob("*")}

    before = objects()
    plan = fleetq("plan", "--repo", str(path), "--now", NOW, "--exit-code")
    assert plan.returncode == 1 and "placements.yaml" in plan.stdout, plan.stdout
    explain = fleetq("explain", "pushed", "--repo", str(path), "--now", NOW)
    assert explain.returncode == 0 and "pushed" in explain.stdout, explain.stderr
    assert objects() == before
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    assert objects() != before  # (a reconcile does write, and plan said what it wrote)
    assert fleetq("plan", "--repo", str(path), "--now", NOW, "--exit-code").returncode == 0
