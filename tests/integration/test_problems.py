"""Bad input is reported as path:line and never stops the rest of the fleet."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import (
    RENDERED_SEED,
    SeedFleet,
    commit_all,
    fleetq,
    git,
    make_fleet_repo,
    placements,
    pytorchjob,
    seed_fleet_files,
    state_show,
    write_files,
)

BROKEN_YAML = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: broken: yes
  namespace: default
spec: {}
"""
BROKEN_YAML_LINE = 4


def line_of(text: str, needle: str) -> int:
    """1-based line of the first line containing ``needle``."""
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in text")


def _bad_inputs() -> dict[str, str]:
    return {
        "jobs/default/broken.yaml": BROKEN_YAML,
        "jobs/default/two.yaml": pytorchjob("two", replicas_text='"two"'),
        "jobs/default/lots.yaml": pytorchjob("lots", cpu="lots"),
        "jobs/default/fine.yaml": pytorchjob("fine"),
    }


def test_bad_files_are_reported_with_path_and_line_and_the_rest_reconciles(
        tmp_path: Path) -> None:
    files = {**seed_fleet_files(), **_bad_inputs()}
    path = make_fleet_repo(tmp_path / "fleet", files)
    two_line = line_of(files["jobs/default/two.yaml"], 'replicas: "two"')
    lots_line = line_of(files["jobs/default/lots.yaml"], '"lots"')

    proc = fleetq("reconcile", "--repo", str(path), "--now", "2026-11-29T11:00:00Z")
    assert proc.returncode == 0, proc.stderr
    assert f"jobs/default/broken.yaml:{BROKEN_YAML_LINE}:" in proc.stderr
    assert f"jobs/default/two.yaml:{two_line}:" in proc.stderr
    assert f"jobs/default/lots.yaml:{lots_line}:" in proc.stderr

    items = placements(path)
    # Every other job is still reconciled: same enqueue time, so name order decides
    # which of the two valid jobs takes child-2's single job slot (max-jobs 1).
    assert items["default/fine"]["phase"] == "Admitted"
    assert items["default/pytorch-test"]["phase"] == "Queued"
    assert items["default/pytorch-test"]["position"] == 1
    assert items["default/two"]["phase"] == "Invalid"
    assert f"jobs/default/two.yaml:{two_line}" in items["default/two"]["reason"]
    assert "replicas" in items["default/two"]["reason"]
    assert items["default/lots"]["phase"] == "Invalid"
    assert f"jobs/default/lots.yaml:{lots_line}" in items["default/lots"]["reason"]
    assert "lots" in items["default/lots"]["reason"]
    assert state_show(path, "clusters/cf-hz-a/default/pytorchjob-fine.yaml") is not None

    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"jobs/default/broken.yaml:{BROKEN_YAML_LINE}: error" in proc.stdout
    assert f"jobs/default/two.yaml:{two_line}: error" in proc.stdout
    assert f"jobs/default/lots.yaml:{lots_line}: error" in proc.stdout
    assert "fine.yaml" not in proc.stdout
    assert "pytorch-test.yaml" not in proc.stdout


def test_validate_on_a_clean_repo_exits_zero(seed_fleet: SeedFleet) -> None:
    proc = fleetq("validate", "--repo", str(seed_fleet.path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 error(s)" in proc.stdout
    proc = fleetq("validate", "--repo", str(seed_fleet.path), "-o", "json")
    assert proc.returncode == 0
    assert proc.stdout.strip() == "[]"


def _admit_seed_then_queue_second(seed_fleet: SeedFleet) -> None:
    """pytorch-test admitted at 11:00; pytorch-second (committed later) queued behind it."""
    seed_fleet.reconcile("2026-11-29T11:00:00Z")
    write_files(seed_fleet.path,
                {"jobs/default/pytorch-second.yaml": pytorchjob("pytorch-second")})
    commit_all(seed_fleet.path, "second job", date="2026-11-29T11:05:00Z")
    seed_fleet.reconcile("2026-11-29T11:10:00Z")


def _break_yaml(text: str) -> str:
    return text.replace("  name: pytorch-test\n  namespace: default\n",
                        "  name: pytorch-test: oops\n  namespace: default\n", 1)


def _break_quantity(text: str) -> str:
    return text.replace('cpu: "10m"', 'cpu: "ten millicores"', 1)


@pytest.mark.parametrize("breaker", [_break_yaml, _break_quantity], ids=["yaml", "quantity"])
def test_admitted_job_whose_file_turns_invalid_keeps_its_placement(
        seed_fleet: SeedFleet, breaker: object) -> None:
    path = seed_fleet.path
    _admit_seed_then_queue_second(seed_fleet)
    before = placements(path)
    assert before["default/pytorch-test"]["phase"] == "Admitted"
    assert before["default/pytorch-second"]["phase"] == "Queued"
    rendered_before = state_show(path, RENDERED_SEED)
    assert rendered_before is not None

    job_file = path / "jobs/default/pytorch-test.yaml"
    good = job_file.read_text()
    broken = breaker(good)  # type: ignore[operator]
    assert broken != good
    job_file.write_text(broken)
    commit_all(path, "break pytorch-test", date="2026-11-29T11:30:00Z")
    outcome = seed_fleet.reconcile("2026-11-29T12:00:00Z")
    assert any(p.path == "jobs/default/pytorch-test.yaml" and p.severity == "error"
               for p in outcome.computed.problems), outcome.computed.problems

    items = placements(path)
    kept = items["default/pytorch-test"]
    assert kept["phase"] == "Admitted"
    assert kept["cluster"] == "cf-hz-a"
    assert kept["admittedAt"] == "2026-11-29T11:00:00Z"
    assert kept["enqueuedAt"] == before["default/pytorch-test"]["enqueuedAt"]
    assert kept.get("sourceInvalid") is True
    assert "invalid" in kept["reason"].lower() or "jobs/default/pytorch-test.yaml" in \
        kept["reason"]
    assert kept["podSets"] == before["default/pytorch-test"]["podSets"]
    assert kept["requests"] == before["default/pytorch-test"]["requests"]
    # Its last good rendering is kept byte for byte, and it still holds its quota.
    assert state_show(path, RENDERED_SEED) == rendered_before
    assert items["default/pytorch-second"]["phase"] == "Queued"

    # Fixing the file clears the flag; the job stays where it runs.
    job_file.write_text(good)
    commit_all(path, "fix pytorch-test", date="2026-11-29T12:30:00Z")
    seed_fleet.reconcile("2026-11-29T13:00:00Z")
    fixed = placements(path)["default/pytorch-test"]
    assert fixed["phase"] == "Admitted"
    assert fixed["cluster"] == "cf-hz-a"
    assert fixed["admittedAt"] == "2026-11-29T11:00:00Z"
    assert "sourceInvalid" not in fixed
    assert state_show(path, RENDERED_SEED) == rendered_before


def test_deleted_admitted_job_leaves_and_the_next_one_is_admitted(
        seed_fleet: SeedFleet) -> None:
    path = seed_fleet.path
    _admit_seed_then_queue_second(seed_fleet)
    assert placements(path)["default/pytorch-second"]["phase"] == "Queued"

    (path / "jobs/default/pytorch-test.yaml").unlink()
    commit_all(path, "pytorch-test done", date="2026-11-29T11:30:00Z")
    outcome = seed_fleet.reconcile("2026-11-29T12:00:00Z")
    assert outcome.commit is not None

    items = placements(path)
    assert "default/pytorch-test" not in items
    second = items["default/pytorch-second"]
    assert second["phase"] == "Admitted"
    assert second["cluster"] == "cf-hz-a"
    assert second["admittedAt"] == "2026-11-29T12:00:00Z"
    assert state_show(path, RENDERED_SEED) is None
    assert state_show(path, "clusters/cf-hz-a/default/pytorchjob-pytorch-second.yaml")
    kustomization = state_show(path, "clusters/cf-hz-a/kustomization.yaml") or ""
    assert "pytorch-test" not in kustomization
    assert "default/pytorchjob-pytorch-second.yaml" in kustomization
    message = git(path, "log", "-1", "--format=%B", "fleetq/state")
    assert "pytorch-test" in message  # the change is described in the commit message
