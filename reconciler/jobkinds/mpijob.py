"""MPIJob (kubeflow.org/v2beta1): ``spec.mpiReplicaSpecs`` Launcher + Worker."""

from __future__ import annotations

from reconciler.jobkinds.base import (
    Manifest,
    PodTemplateRef,
    replica_specs,
    run_policy_priority_class,
    set_run_policy_suspend,
)


class MPIJobKind:
    api_version = "kubeflow.org/v2beta1"
    kind = "MPIJob"

    def pod_templates(self, obj: Manifest) -> list[PodTemplateRef]:
        return replica_specs(obj, "mpiReplicaSpecs", ("Launcher", "Worker"))

    def set_suspended(self, obj: Manifest, suspended: bool) -> None:
        set_run_policy_suspend(obj, suspended)

    def scheduling_priority_class(self, obj: Manifest) -> str | None:
        return run_policy_priority_class(obj)
