"""Reading placements.yaml back: a chunk of items at a time, as if read whole."""

from __future__ import annotations

import os

import pytest
import yaml

from reconciler.core.cycle import reconcile_cycle
from reconciler.core.model import Decision, evolve
from reconciler.fleet import state
from reconciler.fleet.state import prior_from_decision, read_placements, render_placements
from tests.core.test_cycle import busy_fleet_after_team_b_ran

TRICKY = ["line one\n- line two", "- starts like an item", "  leading spaces", "a: b",
          "quotes ' and \"", "\n- after a newline", "tab\there", "ends with a newline\n"]


def decisions() -> list[Decision]:
    """A busy fleet's decisions (every phase), and some with reasons that look
    like the start of an item."""
    got = reconcile_cycle(busy_fleet_after_team_b_ran()).decisions
    assert len({d.phase for d in got}) >= 3
    extra = [evolve(d, reason=reason, key=d.key._replace(name=f"tricky-{i}"))
             for i, (d, reason) in enumerate(zip(got, TRICKY, strict=False))]
    return sorted(got + extra, key=lambda d: d.key)


def with_line(field: str, nth: int, line: str) -> tuple[bytes, list[str], int]:
    """The busy fleet's placements.yaml with its ``nth`` line of ``field`` replaced:
    the file, its lines (as written), and the index of the line replaced."""
    lines = render_placements(decisions()).decode().split("\n")
    at = [i for i, text in enumerate(lines) if text.startswith(f"  {field}: ")][nth]
    edited = [*lines[:at], line, *lines[at + 1:]]
    return "\n".join(edited).encode(), lines, at


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(state, "CHUNK_ITEMS", 3)


# paths as git has them (any bytes), and as placements.yaml writes them
PATHS = {os.fsdecode(b"jobs/caf\xe9.yaml"): '"jobs/caf\\351.yaml"',  # (Latin-1: no UTF-8)
         "jobs/café.yaml": "jobs/café.yaml",
         '"quoted".yaml': '"\\"quoted\\".yaml"',
         "tab\there.yaml": '"tab\\there.yaml"',
         "jobs/\\351.yaml": "jobs/\\351.yaml"}


def test_a_path_git_quotes_is_written_as_git_writes_it_and_read_back_as_it_was() -> None:
    """A path that is not UTF-8 (its bytes kept as surrogate escapes) made a
    placements.yaml that no YAML reader outside Python takes; it is written as
    git writes it (``core.quotePath``), and read back as the path it is."""
    made = [evolve(d, path=path, key=d.key._replace(name=f"path-{i}"))
            for i, (d, path) in enumerate(zip(decisions(), PATHS, strict=False))]
    data = render_placements(made)
    items = yaml.safe_load(data.decode("utf-8"))["items"]
    assert [i["source"]["path"] for i in items] == list(PATHS.values())
    assert [state.decision_item(d)["source"]["path"] for d in made] == list(PATHS.values())
    prior, problems = read_placements(data)
    assert problems == []
    assert {k: p.path for k, p in prior.items()} == {d.key: d.path for d in made}


def test_chunks_read_what_the_whole_file_reads(small_chunks: None) -> None:
    made = decisions()
    data = render_placements(made)
    prior, problems = read_placements(data)
    assert problems == []
    assert state._read_in_chunks(data) == state._read_whole(data) == (prior, problems)
    assert prior == {d.key: prior_from_decision(d) for d in made}
    assert len(made) > 3 * state.CHUNK_ITEMS


def test_a_damaged_item_is_reported_at_its_line_and_the_others_kept(small_chunks: None) -> None:
    data, lines, at = with_line("phase", 7, "  phase: Sleeping")
    prior, problems = read_placements(data)
    assert state._read_in_chunks(data) == state._read_whole(data) == (prior, problems)
    assert len(prior) == len(decisions()) - 1
    [problem] = problems
    item_line = max(i for i in range(at) if lines[i].startswith("- ")) + 1
    assert problem.line == item_line
    assert "'Sleeping' is not a valid Phase" in problem.message
    assert problem.message.startswith(f"its item at line {item_line} is damaged (ValueError: ")
    # a field of another type is damage too, not a traceback (source: 5)
    other, _, _ = with_line("source", 7, "  source: 5")
    assert "is damaged (AttributeError: " in read_placements(other)[1][0].message


def test_a_file_not_as_written_is_read_the_same(small_chunks: None) -> None:
    """Written again by another tool (other indentation, other quoting): the same
    decisions, whether it can be read in chunks or must be read whole."""
    made = decisions()
    data = render_placements(made)
    again = yaml.safe_dump(yaml.safe_load(data), sort_keys=False, indent=4,
                           default_flow_style=False).encode()
    head, body = data.split(b"items:\n", 1)
    indented = head + b"items:\n" + b"".join(b"  " + line for line in body.splitlines(True))
    assert state._read_in_chunks(indented) is None
    for other in (again, indented):
        assert other != data
        assert read_placements(other) == read_placements(data)


def test_broken_yaml_in_one_chunk_is_reported_as_when_read_whole(small_chunks: None) -> None:
    data, _, at = with_line("reason", 5, '  reason: "never closed')
    prior, problems = read_placements(data)
    assert state._read_in_chunks(data) is None
    assert (prior, problems) == state._read_whole(data)
    [problem] = problems
    assert "not valid YAML" in problem.message and problem.line > at


# A changed value for every field an item is written from (and read back as).
CHANGES = {"api_version": "kubeflow.org/v2", "path": "jobs/moved.yaml", "blob": "f" * 40,
           "quota": "root/other", "priority": 7, "enqueued_at": "2026-01-01T00:00:00Z",
           "cluster": "elsewhere", "copies": ("c9",), "requests": {"cpu": 3000},
           "admitted_at": "2026-01-02T00:00:00Z", "position": 99, "preempted_by": "Job a/b",
           "preemptions": 4, "preemption_reason": "why not", "policy": "ns/p",
           "reason": "another reason", "nodes": (("n9", "worker", 1),),
           "ended_at": "2026-01-03T00:00:00Z", "failed_on": ("c7",), "kept_on": ("c7", "c8"),
           "kept_since": (("c7", "2026-01-03T01:00:00Z"),)}


def test_items_read_back_as_before_are_taken_as_written_and_the_rest_written_anew() -> None:
    from dataclasses import fields

    from reconciler.core.model import Phase, PodSetCount, PriorPlacement
    from reconciler.fleet.state import render_placements_reusing

    old = decisions()
    data, written = render_placements_reusing(old, {})
    assert data == render_placements(old)
    assert all(written[d.key][0] == prior_from_decision(d) for d in old)
    # every field of an item is compared: one that is not would be listed here
    # (``kept`` is the one field not written, and is tried below)
    compared = {f.name for f in fields(PriorPlacement)} - {"key", "phase", "pod_sets", "kept"}
    assert compared == set(CHANGES)
    for name, value in [*CHANGES.items(), ("phase", Phase.FAILED),
                        ("pod_sets", (PodSetCount("worker", 9),)), ("kept", True)]:
        new = [evolve(d, **{name: value}) if i % 3 == 0 else d for i, d in enumerate(old)]
        again, now = render_placements_reusing(new, written)
        assert again == render_placements(new), name
        for i, d in enumerate(new):
            assert (now[d.key] is written[d.key]) == (i % 3 != 0 or d == old[i]), (name, i)


def test_many_new_items_are_formatted_by_two_processes_the_same(
        monkeypatch: pytest.MonkeyPatch, forks: list[int]) -> None:
    """Past ``PARALLEL_MIN_ITEMS`` new items, half are formatted by a forked
    process: the same file and the same values for the next reconcile, in the
    same order, with the reused items taken as they were."""
    from reconciler.fleet.state import render_placements_reusing

    old = decisions()
    one_process, written = render_placements_reusing(old, {})
    changed = [evolve(d, reason=f"{d.reason} again") if i % 2 else d for i, d in enumerate(old)]
    changed_file = render_placements(changed)
    assert forks == []
    monkeypatch.setattr(state, "PARALLEL_MIN_ITEMS", 4)
    two, written_by_two = render_placements_reusing(old, {})
    assert len(forks) == 1
    assert two == one_process
    assert list(written_by_two) == list(written)
    assert all(written_by_two[k][0] == written[k][0] and written_by_two[k][1] == written[k][1]
               for k in written)
    # some items reused, the others (at least four) formatted by two processes
    assert sum(1 for i in range(len(old)) if i % 2) >= 4
    again, now = render_placements_reusing(changed, written)
    assert len(forks) == 2
    assert again == changed_file
    assert all((now[d.key] is written[d.key]) == (i % 2 == 0) for i, d in enumerate(changed))


def every_field() -> list[Decision]:
    """The busy fleet's decisions, and some with each field an item may have
    (copies, preemption, kept where it ran: ``sourceInvalid``), with names and
    values a YAML reader would take for numbers, booleans or null if unquoted."""
    from reconciler.core.model import Phase

    made = decisions()
    admitted = next(d for d in made if d.phase is Phase.ADMITTED and d.nodes)
    queued = next(d for d in made if d.phase is Phase.QUEUED)
    extra = [
        evolve(admitted, key=admitted.key._replace(name="kept"), kept=True),
        evolve(admitted, key=admitted.key._replace(name="copied"), copies=("c2", "c3")),
        evolve(queued, key=queued.key._replace(name="preempted"), preemptions=2,
               preempted_by="PyTorchJob default/x", preemption_reason="lower priority"),
        evolve(queued, key=queued.key._replace(name="123"), quota="true", reason="null",
               policy="0x1f"),
        evolve(queued, key=queued.key._replace(name="says-kept"),
               reason="sourceInvalid: true"),
        evolve(admitted, key=admitted.key._replace(name="ended"), phase=Phase.FINISHED,
               ended_at="2026-01-03T00:00:00Z"),
        evolve(queued, key=queued.key._replace(name="failing-over"), failed_on=("c1", "on"),
               kept_on=("c1",)),
    ]
    return sorted(made + extra, key=lambda d: d.key)


def test_a_states_items_come_from_its_cached_decisions_as_from_its_file(
        small_chunks: None) -> None:
    """``fleetq status`` from the cache: the items as written make the very file,
    and read as the file reads (values and the order of their fields), whatever
    the order the cache holds them in (a state saved as changes)."""
    import json

    from reconciler.fleet.state import render_placements_reusing

    made = every_field()
    data, written = render_placements_reusing(made, {})
    assert len(made) > 3 * state.CHUNK_ITEMS
    shuffled = dict(reversed(list(written.items())))
    got = state.items_of(shuffled)
    assert got is not None
    texts, items = got
    assert state.placements_file(texts) == data
    read, problem = state.read_items(data)
    assert problem is None
    whole = yaml.safe_load(data)["items"]
    assert json.dumps(items) == json.dumps(read) == json.dumps(whole)
    assert [i.get("sourceInvalid") for i in items].count(True) == 1
    assert any(i.get("copies") for i in items) and any(i.get("preemptedBy") for i in items)
    assert any(i.get("failedOn") == ["c1", "on"] and i.get("keptOn") == ["c1"] for i in items)
    assert any(i.get("endedAt") for i in items)


def test_no_items_make_the_file_of_none() -> None:
    from reconciler.fleet.state import render_placements_reusing

    data, written = render_placements_reusing([], {})
    assert state.items_of(written) == ([], [])
    assert state.placements_file([]) == data
    assert state.read_items(data) == ([], None)
    assert state.read_items(None) == ([], None)


def test_items_of_a_file_not_as_written_or_broken_are_read_whole(small_chunks: None) -> None:
    made = decisions()
    data = render_placements(made)
    again = yaml.safe_dump(yaml.safe_load(data), sort_keys=False, indent=4).encode()
    assert state.read_items(again) == state.read_items(data) == (
        yaml.safe_load(data)["items"], None)
    broken, _, at = with_line("reason", 5, '  reason: "never closed')
    items, problem = state.read_items(broken)
    assert items == [] and problem is not None
    assert "not valid YAML" in problem.message and problem.line > at


def test_a_large_file_is_read_by_two_processes_the_same(
        small_chunks: None, monkeypatch: pytest.MonkeyPatch, forks: list[int]) -> None:
    """From ``PARALLEL_MIN_READ`` chunks on, a forked process reads the second
    half: the same decisions and items, a damaged item in that half reported
    at its line, and a chunk there that is not as written sends the whole file
    to be read whole, as from one process."""
    made = decisions()
    data = render_placements(made)
    one = (read_placements(data), state.read_items(data))
    assert len(made) > 4 * state.CHUNK_ITEMS
    damaged, _, _ = with_line("phase", len(made) - 3, "  phase: Sleeping")
    broken, _, _ = with_line("reason", len(made) - 3, '  reason: "never closed')
    alone = [read_placements(damaged), read_placements(broken), state.read_items(broken)]
    assert alone[0][1] and alone[1][1] and alone[2][1] is not None
    assert forks == []
    monkeypatch.setattr(state, "PARALLEL_MIN_READ", 2)
    assert (read_placements(data), state.read_items(data)) == one
    assert len(forks) == 2
    assert [read_placements(damaged), read_placements(broken), state.read_items(broken)] \
        == alone
    assert read_placements(data)[0] == {d.key: prior_from_decision(d) for d in made}
