"""How each job kind counts its pods (``pod_templates``), as its operator creates them."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.jobkinds import kind_for
from reconciler.jobkinds.base import ManifestError

POD = {"spec": {"containers": [{"name": "c", "image": "x"}]}}


def rayjob(**group: Any) -> dict[str, Any]:
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "r"},
            "spec": {"rayClusterSpec": {
                "headGroupSpec": {"template": POD},
                "workerGroupSpecs": [{"groupName": "tpu", "template": POD, **group}]}}}


@pytest.mark.parametrize(("group", "pods"), [
    ({"replicas": 2}, 2),
    ({"replicas": 2, "numOfHosts": 4}, 8),  # a multi-host group: each replica is 4 pods
    ({"replicas": 3, "numOfHosts": 1}, 3),
    ({"replicas": 2, "numOfHosts": 4, "suspend": True}, 0),
])
def test_a_ray_worker_group_counts_replicas_times_hosts(group: dict[str, Any],
                                                         pods: int) -> None:
    ray = kind_for("ray.io/v1", "RayJob")
    assert ray is not None
    assert [(t.name, t.replicas) for t in ray.pod_templates(rayjob(**group))] == [
        ("head", 1), ("tpu", pods)]


@pytest.mark.parametrize("hosts", [0, -1, "4", True])
def test_a_ray_worker_group_with_no_usable_number_of_hosts_is_an_error(hosts: object) -> None:
    ray = kind_for("ray.io/v1", "RayJob")
    assert ray is not None
    with pytest.raises(ManifestError) as err:
        ray.pod_templates(rayjob(replicas=1, numOfHosts=hosts))
    assert err.value.field == "spec.rayClusterSpec.workerGroupSpecs[0].numOfHosts"
