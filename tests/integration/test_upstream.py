"""Upstream job examples (../shared/upstream), verbatim: read, validated, sized, placed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.builders import quota_tree_yaml

from .conftest import (
    QUEUED_CLUSTER_POLICY,
    SHARED,
    fleetq,
    make_fleet_repo,
    placements,
    run_reconcile,
    shared_path,
    state_files,
    state_show,
    write_files,
)

UPSTREAM = SHARED / "upstream"
JOB_GLOBS = ("training-operator/examples/**/*.yaml", "kuberay/samples/*.yaml",
             "mpi-operator/examples/**/*.yaml")

# A leaf for every namespace the examples use (most have none: `default`).
TREE = quota_tree_yaml("{cpu: 1000, memory: 4000Gi, nvidia.com/gpu: 64}", """\
    - name: examples
      min: {cpu: 1000, memory: 4000Gi, nvidia.com/gpu: 64}
      max: {cpu: 1000, memory: 4000Gi, nvidia.com/gpu: 64}
      namespaces: [default, kubeflow]
""")

CLUSTER = """\
apiVersion: fleetq.io/v1alpha1
kind: MemberCluster
metadata: {name: gpu-a}
spec:
  resourceReservation: true
  gangDialect: ack
  nodes:
  - {name: n1, allocatable: {cpu: "96", memory: 768Gi, nvidia.com/gpu: "8", pods: "110"}}
  - {name: n2, allocatable: {cpu: "96", memory: 768Gi, nvidia.com/gpu: "8", pods: "110"}}
"""

# path under upstream/ -> (kind, namespace, name or regex, pod sets, requests without
# pods / kube-queue/max-jobs), from reading each manifest: a container with limits but
# no requests requests its limits.
EXPECTED: dict[str, tuple[str, str, str, list[tuple[str, int]], dict[str, str]]] = {
    "training-operator/examples/mpi/tensorflow-mnist.yaml": (
        "MPIJob", "default", "tensorflow-mnist", [("launcher", 1), ("worker", 2)],
        {"cpu": "5", "memory": "10Gi"}),
    "training-operator/examples/pytorch/cpu-demo/demo.yaml": (
        "PyTorchJob", "default", "torchrun-cpu", [("master", 1), ("worker", 1)], {}),
    "training-operator/examples/pytorch/deepspeed-demo/pytorch_deepspeed_demo.yaml": (
        "PyTorchJob", "default", "pytorch-deepspeed-demo", [("master", 1), ("worker", 1)],
        {"nvidia.com/gpu": "2"}),
    "training-operator/examples/pytorch/elastic/echo/echo.yaml": (
        "PyTorchJob", "default", "elastic-example-echo", [("worker", 2)], {}),
    "training-operator/examples/pytorch/elastic/imagenet/imagenet.yaml": (
        "PyTorchJob", "default", "elastic-example-imagenet", [("worker", 2)], {"cpu": "8"}),
    "training-operator/examples/pytorch/mnist/v1/pytorch_job_mnist_gloo.yaml": (
        "PyTorchJob", "default", "pytorch-dist-mnist-gloo", [("master", 1), ("worker", 1)],
        {"nvidia.com/gpu": "2"}),
    "training-operator/examples/pytorch/simple.yaml": (
        "PyTorchJob", "kubeflow", "pytorch-simple", [("master", 1), ("worker", 1)], {}),
    "kuberay/samples/ray-job.kueue-toy-sample.yaml": (
        "RayJob", "default", r"rayjob-sample-[a-z0-9]{5}", [("head", 1), ("small-group", 1)],
        {"cpu": "2", "memory": "3Gi"}),
    "kuberay/samples/ray-job.resources.yaml": (
        "RayJob", "default", "rayjob-sample", [("head", 1), ("small-group", 1)],
        {"cpu": "2", "memory": "3Gi"}),
    "kuberay/samples/ray-job.sample.yaml": (
        "RayJob", "default", "rayjob-sample", [("head", 1), ("small-group", 1)],
        {"cpu": "1200m", "memory": "2Gi"}),
    "kuberay/samples/ray-job.shutdown.yaml": (
        "RayJob", "default", "rayjob-sample-shutdown", [("head", 1), ("small-group", 1)],
        {"cpu": "2", "memory": "3Gi"}),
    # Runs on an existing RayCluster: no pods of its own.
    "kuberay/samples/ray-job.use-existing-raycluster.yaml": (
        "RayJob", "default", "rayjob-use-existing-raycluster", [], {}),
    "kuberay/samples/ray-job.volcano-scheduler-queue.yaml": (
        "RayJob", "default", "rayjob-sample-0", [("head", 1), ("small-group", 2)],
        {"cpu": "3", "memory": "4Gi"}),
    "mpi-operator/examples/v2beta1/pi/pi.yaml": (
        "MPIJob", "default", "pi", [("launcher", 1), ("worker", 2)],
        {"cpu": "3", "memory": "3Gi"}),
}
JOB_KINDS = {"PyTorchJob", "RayJob", "MPIJob", "Job"}


def _example_files() -> list[str]:
    if not UPSTREAM.is_dir():
        return []
    found = {str(p.relative_to(UPSTREAM)) for pattern in JOB_GLOBS
             for p in UPSTREAM.glob(pattern)}
    return sorted(found)


def test_every_upstream_job_example_has_an_expectation() -> None:
    shared_path("upstream")
    assert _example_files() == sorted(EXPECTED)


def _item_for(path: Path) -> dict[str, Any] | None:
    items = list(placements(path).values())
    return items[0] if len(items) == 1 else None


@pytest.mark.parametrize("example", sorted(EXPECTED))
def test_upstream_example_is_read_sized_and_placed(tmp_path: Path, example: str) -> None:
    text = shared_path(f"upstream/{example}").read_text(encoding="utf-8")
    kind, namespace, name, pod_sets, requests = EXPECTED[example]
    job_file = f"jobs/{Path(example).name}"
    repo = make_fleet_repo(tmp_path / "fleet", {
        # (what the examples define beside the job, a ConfigMap of its code, goes with it)
        "quota.yaml": TREE, "policy.yaml": QUEUED_CLUSTER_POLICY + "  propagateDeps: true\n",
        "clusters/gpu-a.yaml": CLUSTER, job_file: text})

    outcome = run_reconcile(repo)
    problems = outcome.computed.problems
    assert [str(p) for p in problems if p.severity == "error"] == []
    # A warning may only be about a document that is not a job (e.g. a volcano Queue).
    for p in problems:
        assert not any(f" {k} " in p.message for k in JOB_KINDS), str(p)

    item = _item_for(repo)
    assert item is not None, (f"{example}: fleetq read no job from it; problems: "
                              f"{[str(p) for p in problems]}")
    assert item["job"]["kind"] == kind
    assert item["job"]["namespace"] == namespace
    assert re.fullmatch(name, item["job"]["name"]), item["job"]["name"]
    assert item["source"]["path"] == job_file
    assert [(s["name"], s["replicas"]) for s in item.get("podSets") or []] == pod_sets
    got = {k: str(v) for k, v in (item.get("requests") or {}).items()
           if k not in ("pods", "kube-queue/max-jobs")}
    assert got == requests
    total = sum(n for _, n in pod_sets)
    assert str((item.get("requests") or {}).get("pods", 0)) == str(total)
    assert item["quota"] == "root/examples"
    assert item["phase"] == "Admitted", item["reason"]
    assert item["cluster"] == "gpu-a"
    kind_file = f"clusters/gpu-a/{namespace}/{kind.lower()}-{item['job']['name']}.yaml"
    assert kind_file in state_files(repo)


def test_validate_cli_accepts_the_mpi_operator_pi_example(tmp_path: Path) -> None:
    text = shared_path("upstream/mpi-operator/examples/v2beta1/pi/pi.yaml").read_text()
    repo = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": TREE, "policy.yaml": QUEUED_CLUSTER_POLICY, "clusters/gpu-a.yaml": CLUSTER,
        "jobs/pi.yaml": text})
    proc = fleetq("validate", "--repo", str(repo))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 jobs" in proc.stdout


def test_upstream_job_without_a_quota_leaf_is_reported(tmp_path: Path) -> None:
    """No leaf lists `kubeflow`: the job is invalid and says why, the others still run."""
    simple = shared_path("upstream/training-operator/examples/pytorch/simple.yaml").read_text()
    pi = shared_path("upstream/mpi-operator/examples/v2beta1/pi/pi.yaml").read_text()
    repo = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": TREE.replace("[default, kubeflow]", "[default]"),
        "policy.yaml": QUEUED_CLUSTER_POLICY, "clusters/gpu-a.yaml": CLUSTER,
        "jobs/simple.yaml": simple, "jobs/pi.yaml": pi})
    proc = fleetq("validate", "--repo", str(repo))
    assert proc.returncode == 1
    assert "jobs/simple.yaml" in proc.stdout
    assert "kubeflow" in proc.stdout
    run_reconcile(repo)
    items = placements(repo)
    assert items["kubeflow/pytorch-simple"]["phase"] == "Invalid"
    assert items["default/pi"]["phase"] == "Admitted"


def test_the_kuberay_volcano_sample_keeps_its_queue_on_a_volcano_cluster(tmp_path: Path) -> None:
    """KubeRay's sample names its Volcano queue by the ``volcano.sh/queue-name``
    label: the PodGroup fleetq renders for it is in that queue, not Volcano's
    default one (whose capability the sample's Queue does not limit)."""
    text = shared_path("upstream/kuberay/samples/ray-job.volcano-scheduler-queue.yaml").read_text()
    repo = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": TREE, "policy.yaml": QUEUED_CLUSTER_POLICY,
        "clusters/gpu-a.yaml": CLUSTER.replace("gangDialect: ack", "gangDialect: volcano"),
        "jobs/ray.yaml": text})
    run_reconcile(repo)
    assert placements(repo)["default/rayjob-sample-0"]["cluster"] == "gpu-a"
    group = yaml.safe_load(state_show(repo, "clusters/gpu-a/default/podgroup-rayjob-sample-0.yaml")
                           or "")
    assert group["spec"] == {"minMember": 3, "queue": "kuberay-test-queue"}


def test_a_rayjob_on_an_existing_raycluster_is_warned_of_unless_pinned(tmp_path: Path) -> None:
    """It has no pods of its own: it was admitted "(no pods)" to whichever
    cluster came first, which need not hold its RayCluster."""
    text = shared_path("upstream/kuberay/samples/ray-job.use-existing-raycluster.yaml").read_text()
    files = {"quota.yaml": TREE, "policy.yaml": QUEUED_CLUSTER_POLICY,
             "clusters/gpu-a.yaml": CLUSTER, "jobs/ray.yaml": text,
             "clusters/gpu-b.yaml": CLUSTER.replace("name: gpu-a", "name: gpu-b")}
    repo = make_fleet_repo(tmp_path / "fleet", files)
    proc = fleetq("validate", "--repo", str(repo))
    assert proc.returncode == 0, proc.stdout
    assert ("jobs/ray.yaml:1: warning: RayJob default/rayjob-use-existing-raycluster runs on an "
            "existing RayCluster (spec.clusterSelector), so fleetq counts none of its pods, and "
            "ClusterPropagationPolicy") in proc.stdout
    assert "lets it go to any of 2 clusters" in proc.stdout
    pinned = QUEUED_CLUSTER_POLICY.replace("  placement:\n",
                                           "  placement:\n    clusterAffinity: "
                                           "{clusterNames: [gpu-b]}\n")
    assert pinned != QUEUED_CLUSTER_POLICY
    write_files(repo, {"policy.yaml": pinned})
    proc = fleetq("validate", "--repo", str(repo))
    assert proc.returncode == 0 and "jobs/ray.yaml" not in proc.stdout, proc.stdout
