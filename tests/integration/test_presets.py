"""The policy presets of fleet-repo-template/policies/, verbatim, in small test repos."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.builders import quota_tree_yaml

from .conftest import (
    REPO_ROOT,
    fleetq,
    make_fleet_repo,
    member_cluster,
    placements,
    pytorchjob,
    run_reconcile,
    state_files,
    state_show,
)

PRESETS = REPO_ROOT / "fleet-repo-template" / "policies"

TREE = quota_tree_yaml("{cpu: 1000, memory: 4000Gi, nvidia.com/gpu: 64}", """\
    - name: sandbox
      max: {cpu: 100}
      namespaces: [sandbox]
    - name: interns
      max: {cpu: 100}
      namespaces: [interns]
    - name: video
      max: {cpu: 100}
      namespaces: [video]
    - name: platform
      max: {cpu: 100}
      namespaces: [platform]
""")

PREPULL_JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: prepull
  namespace: platform
  labels: {fleetq.io/run-on: every-cluster}
spec:
  parallelism: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: prepull, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}
"""

# A GPU cluster (labelled accelerator: nvidia, tainted) and a plain CPU cluster.
CLUSTERS = {
    "clusters/gpu.yaml": member_cluster(
        "gpu", labels={"accelerator": "nvidia"},
        extra="  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]\n"),
    "clusters/cpu.yaml": member_cluster("cpu"),
}

# preset file -> (job, expected policy, expected cluster or None, rendered file)
CASES = {
    "gang.yaml": (pytorchjob("train", namespace="sandbox"), "PropagationPolicy sandbox/gang",
                  "cpu", "sandbox/pytorchjob-train.yaml"),
    "gang-queued.yaml": (pytorchjob("train", namespace="interns"),
                         "PropagationPolicy interns/gang-queued", "cpu",
                         "interns/pytorchjob-train.yaml"),
    "gang-failover.yaml": (pytorchjob("train", namespace="video"),
                           "PropagationPolicy video/gang-failover", "gpu",
                           "video/pytorchjob-train.yaml"),
    "duplicated.yaml": (PREPULL_JOB, "PropagationPolicy platform/duplicated", None,
                        "platform/job-prepull.yaml"),
}


def _preset(name: str) -> str:
    path = PRESETS / name
    if not path.exists():
        pytest.skip(f"fleet-repo-template/policies/{name} not present")
    return path.read_text(encoding="utf-8")


def test_every_preset_is_covered() -> None:
    if not PRESETS.is_dir():
        pytest.skip("fleet-repo-template/policies/ not present")
    assert sorted(p.name for p in PRESETS.glob("*.yaml")
                  if p.name != "fleet-default.yaml") == sorted(CASES)


@pytest.mark.parametrize("preset", sorted(CASES))
def test_preset_is_valid_and_selects_and_places_a_job(tmp_path: Path, preset: str) -> None:
    job, policy, cluster, rendered = CASES[preset]
    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": TREE, **CLUSTERS, f"policies/{preset}": _preset(preset),
        "jobs/job.yaml": job})

    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ": error:" not in proc.stdout
    assert "0 error(s)" in proc.stdout

    outcome = run_reconcile(path)
    assert outcome.commit is not None
    (item,) = placements(path).values()
    assert item["policy"] == policy
    assert item["phase"] == "Admitted", item["reason"]
    if cluster is not None:
        assert item["cluster"] == cluster
        assert state_show(path, f"clusters/{cluster}/{rendered}") is not None
    else:
        assert any(p.endswith(rendered) for p in state_files(path))


def test_duplicated_preset_sends_a_copy_to_every_cluster(tmp_path: Path) -> None:
    """Karmada `Duplicated` (and the preset's own comment): one full copy per cluster."""
    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": TREE, **CLUSTERS, "policies/duplicated.yaml": _preset("duplicated.yaml"),
        "jobs/job.yaml": PREPULL_JOB})
    run_reconcile(path)
    for cluster in ("cpu", "gpu"):
        text = state_show(path, f"clusters/{cluster}/platform/job-prepull.yaml")
        assert text is not None, (
            f"no copy of platform/prepull on {cluster}; state: {state_files(path)}")
        job = yaml.safe_load(text)
        assert job["spec"]["parallelism"] == 1  # the whole Job, not a share of it
