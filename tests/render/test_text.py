"""The status table: its preemption and failover columns."""

from __future__ import annotations

from reconciler.render.text import placements_table


def _item(name: str, **fields: object) -> dict[str, object]:
    return {"job": {"apiVersion": "batch/v1", "kind": "Job", "namespace": "team-a",
                    "name": name}, "phase": "Queued", "quota": "root/a", "priority": 0,
            "position": 1, "reason": "waiting", **fields}


def test_the_table_lists_jobs_by_namespace_then_name_as_kubectl_does() -> None:
    """It listed them in placements.yaml's order: by kind first."""
    items = [{**_item(name), "job": {"apiVersion": api, "kind": kind, "namespace": ns,
                                     "name": name}}
             for api, kind, ns, name in [("batch/v1", "Job", "b", "x"),
                                         ("kubeflow.org/v1", "PyTorchJob", "a", "y"),
                                         ("ray.io/v1", "RayJob", "a", "b"),
                                         ("batch/v1", "Job", "a", "y")]]
    rows = [r.split()[:3] for r in placements_table(items).splitlines()[1:]]
    assert rows == [["a", "b", "RayJob"], ["a", "y", "Job"], ["a", "y", "PyTorchJob"],
                    ["b", "x", "Job"]]


def test_the_preempted_by_column_counts_preemptions_only_when_there_were_some() -> None:
    """A job preempted while it ran shows its preemptor and how often; one whose
    place was reclaimed before it ever ran (no preemptions) shows the reclaimer."""
    rows = placements_table([
        _item("ran", preemptedBy="Job team-b/big", preemptions=2),
        _item("never-ran", preemptedBy="Job team-b/other"),
        _item("untouched"),
    ]).splitlines()
    assert "PREEMPTED-BY" in rows[0]
    assert [r.split()[1] for r in rows[1:]] == ["never-ran", "ran", "untouched"]
    assert "Job team-b/big (x2)" in rows[2]
    assert "Job team-b/other" in rows[1] and "(x" not in rows[1]
    assert rows[3].split()[8] == "-"


def test_wide_shows_where_a_job_failed_and_kept_copies_when_any_job_has_them() -> None:
    items = [_item("moved", failedOn=["c1", "c2"], keptOn=["c2"]), _item("untouched")]
    wide = placements_table(items, wide=True).splitlines()
    assert wide[0].split()[8:13] == ["FAILED-ON", "KEPT-ON", "ENQUEUED", "ADMITTED", "REASON"]
    assert wide[1].split()[8:10] == ["c1,c2", "c2"]
    assert wide[2].split()[8:10] == ["-", "-"]
    assert "FAILED-ON" not in placements_table(items)
    assert "FAILED-ON" not in placements_table([_item("untouched")], wide=True)


def test_wide_shows_when_each_job_came_and_was_admitted() -> None:
    """kubectl's ``-o wide`` adds columns; fleetq's gave the whole reason alone."""
    items = [_item("ran", phase="Admitted", enqueuedAt="2026-01-01T00:00:00Z",
                   admittedAt="2026-01-01T00:05:00Z", position=None),
             _item("waits", enqueuedAt="2026-01-01T00:01:00Z")]
    wide = [row.split()[:11] for row in placements_table(items, wide=True).splitlines()]
    assert wide[0][8:] == ["ENQUEUED", "ADMITTED", "REASON"]
    assert wide[1][8:10] == ["2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z"]
    assert wide[2][8:10] == ["2026-01-01T00:01:00Z", "-"]
    assert "ENQUEUED" not in placements_table(items)


def test_json_and_yaml_are_written_in_parts_as_whole_texts_would_be() -> None:
    import io
    import json

    from reconciler.fleet.state import emit
    from reconciler.render.text import json_parts, write_parts, yaml_parts

    items = [_item("a", preemptedBy="Job team-b/big", preemptions=2,
                   requests={"cpu": "4", "memory": "1Gi"}),
             _item("ünï", reason="line one\nline two", podSets=[{"name": "w", "replicas": 3}]),
             _item("c", nodes={"n1": {"w": 1}})]
    for value in (items, [], {"changed": True, "files": []}):
        out = io.StringIO()
        write_parts(json_parts(value), out, batch=2)
        assert out.getvalue() == json.dumps(value, indent=2, ensure_ascii=False) + "\n"
        out = io.StringIO()
        write_parts(yaml_parts(value), out, batch=2)
        whole = "[]" if value == [] else "\n".join(emit(value))
        assert out.getvalue() == whole + "\n"


def test_a_job_invalid_from_the_start_shows_no_priority() -> None:
    """Its priority was never resolved (the default stood in its item); one that
    waited in its quota's queue before keeps the priority it had there."""
    rows = placements_table([
        _item("new", phase="Invalid", quota=None, priority=0, position=None),
        _item("waited", phase="Invalid", priority=10, position=None),
    ]).splitlines()
    assert [r.split()[3:6] for r in rows[1:]] == [["Invalid", "-", "-"],
                                                   ["Invalid", "root/a", "10"]]
