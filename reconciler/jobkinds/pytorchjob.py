"""PyTorchJob (kubeflow.org/v1): ``spec.pytorchReplicaSpecs`` Master + Worker."""

from __future__ import annotations

from reconciler.jobkinds.base import (
    Manifest,
    Observed,
    PodTemplateRef,
    conditions_phase,
    mapping_at,
    replica_specs,
    run_policy_priority_class,
    run_policy_ttl,
    set_run_policy_suspend,
)


class PyTorchJobKind:
    api_version = "kubeflow.org/v1"
    kind = "PyTorchJob"

    def pod_templates(self, obj: Manifest) -> list[PodTemplateRef]:
        return replica_specs(obj, "pytorchReplicaSpecs", ("Master", "Worker"))

    def set_suspended(self, obj: Manifest, suspended: bool | None) -> None:
        set_run_policy_suspend(obj, suspended)

    def move_old_fields(self, obj: Manifest) -> None:
        """The PyTorch operator's v1 took ``spec.cleanPodPolicy`` (ACK One's
        documents still write it there); the training operator's CRD has it
        in ``spec.runPolicy`` only. One ``runPolicy`` says holds, as on the
        cluster."""
        spec = mapping_at(obj, "spec")
        if spec is None or "cleanPodPolicy" not in spec:
            return
        policy = spec.pop("cleanPodPolicy")
        run_policy = spec.setdefault("runPolicy", {})
        if isinstance(run_policy, dict):
            run_policy.setdefault("cleanPodPolicy", policy)

    def scheduling_priority_class(self, obj: Manifest) -> str | None:
        return run_policy_priority_class(obj)

    def observed_phase(self, obj: Manifest) -> Observed:
        return conditions_phase(obj)

    def deleted_when(self, obj: Manifest) -> tuple[bool, bool]:
        return run_policy_ttl(obj)
