"""MPIJob: ``spec.mpiReplicaSpecs`` Launcher + Worker.

kubeflow.org/v2beta1 is the MPI operator's; kubeflow.org/v1 is the training
operator's. Both share the same pod-set layout and run policy.
"""

from __future__ import annotations

from reconciler.jobkinds.base import (
    Manifest,
    Observed,
    PodTemplateRef,
    conditions_phase,
    replica_specs,
    run_policy_priority_class,
    run_policy_ttl,
    set_run_policy_suspend,
)


class MPIJobKind:
    kind = "MPIJob"

    def __init__(self, api_version: str = "kubeflow.org/v2beta1") -> None:
        self.api_version = api_version

    def pod_templates(self, obj: Manifest) -> list[PodTemplateRef]:
        # (both operators default a Worker's replicas to 0: a launcher alone)
        return replica_specs(obj, "mpiReplicaSpecs", ("Launcher", "Worker"), {"Worker": 0})

    def later_pods(self, obj: Manifest) -> int:
        """The launcher, under the MPI operator's ``launcherCreationPolicy:
        WaitForWorkersReady``, when there are workers (it makes the launcher
        once they are ready): its gang is the workers (kubeflow/mpi-operator#608)."""
        spec = obj.get("spec")
        if self.api_version != "kubeflow.org/v2beta1" or not isinstance(spec, dict) or \
                spec.get("launcherCreationPolicy") != "WaitForWorkersReady":
            return 0
        pods = {ref.name: ref.replicas for ref in self.pod_templates(obj)}
        return pods.get("launcher", 0) if pods.get("worker") else 0

    def refused_by(self, obj: Manifest) -> dict[str, str]:
        """Kueue manages the MPI operator's MPIJobs (kubeflow.org/v2beta1)
        only: a training operator's kubeflow.org/v1 one it neither suspends
        nor admits, and it would start at once, outside Kueue's quota and with
        no gang."""
        if self.api_version == "kubeflow.org/v2beta1":
            return {}
        return {"kueue": f"Kueue manages MPIJobs of kubeflow.org/v2beta1 only (the MPI "
                         f"operator's): a {self.api_version} one would start there at once, "
                         f"outside its ClusterQueue and with no gang"}

    def set_suspended(self, obj: Manifest, suspended: bool | None) -> None:
        set_run_policy_suspend(obj, suspended)

    def scheduling_priority_class(self, obj: Manifest) -> str | None:
        return run_policy_priority_class(obj)

    def observed_phase(self, obj: Manifest) -> Observed:
        return conditions_phase(obj)

    def deleted_when(self, obj: Manifest) -> tuple[bool, bool]:
        return run_policy_ttl(obj)
