"""MPIJob: ``spec.mpiReplicaSpecs`` Launcher + Worker.

kubeflow.org/v2beta1 is the MPI operator's; kubeflow.org/v1 is the training
operator's. Both share the same pod-set layout and run policy.
"""

from __future__ import annotations

from reconciler.core.problems import as_written
from reconciler.jobkinds.base import (
    DNS_LABEL,
    DNS_LABEL_MOST,
    DNS_LABEL_RULE,
    MULTIKUEUE,
    TRAINING_OPERATOR,
    Manifest,
    ManifestError,
    Observed,
    PodTemplateRef,
    at_least,
    conditions_phase,
    managed_elsewhere,
    mapping_at,
    replica_specs,
    run_policy_priority_class,
    run_policy_ttl,
    set_run_policy_suspend,
)

MPI_OPERATOR = "kubeflow.org/mpi-operator"  # (the managedBy of a job it runs)
CLEAN_POD_POLICIES = ("None", "Running", "All")


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

    def broken_rules(self, obj: Manifest, name: str) -> list[ManifestError]:
        """What the MPI operator refuses of its MPIJobs (kubeflow.org/v2beta1:
        its controller's ``ValidateMPIJob``, before it makes a pod): no
        Launcher, or one of more than one replica; a restartPolicy other than
        Never and OnFailure; Workers of fewer than one replica; a name that
        makes its last worker's host name no DNS label; a cleanPodPolicy
        other than None, Running and All; a negative slotsPerWorker,
        ttlSecondsAfterFinished, activeDeadlineSeconds or backoffLimit. Of
        either version, a job another controller manages
        (``managed_elsewhere``)."""
        if self.api_version != "kubeflow.org/v2beta1":
            return managed_elsewhere(obj, "spec.runPolicy.managedBy", TRAINING_OPERATOR,
                                     "the training operator", (TRAINING_OPERATOR, MULTIKUEUE))
        found = managed_elsewhere(obj, "spec.runPolicy.managedBy", MPI_OPERATOR,
                                  "the MPI operator", (MPI_OPERATOR, MULTIKUEUE),
                                  refuser="the MPI operator")
        spec = mapping_at(obj, "spec") or {}
        run_policy = mapping_at(obj, "spec", "runPolicy") or {}
        clean = run_policy.get("cleanPodPolicy")
        if clean is not None and clean not in CLEAN_POD_POLICIES:
            at = "spec.runPolicy.cleanPodPolicy"
            found.append(ManifestError(
                f"{at} is {as_written(clean)}: the MPI operator takes "
                f"{', '.join(CLEAN_POD_POLICIES)} only", at))
        found.extend(at_least(spec, "spec", ("slotsPerWorker",), 0, "the MPI operator"))
        found.extend(at_least(run_policy, "spec.runPolicy", (
            "ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit"), 0,
            "the MPI operator"))
        specs = mapping_at(obj, "spec", "mpiReplicaSpecs") or {}
        launcher = specs.get("Launcher")
        if launcher is None:
            found.append(ManifestError(
                "spec.mpiReplicaSpecs.Launcher is missing: the MPI operator runs an MPIJob "
                "from its launcher, and refuses one without", "spec.mpiReplicaSpecs"))
        elif isinstance(launcher, dict) and launcher.get("replicas") not in (None, 1):
            at = "spec.mpiReplicaSpecs.Launcher.replicas"
            found.append(ManifestError(
                f"{at} must be 1, not {as_written(launcher['replicas'])}: an MPIJob has one "
                f"launcher (the MPI operator refuses any other number)", at))
        for role in ("Launcher", "Worker"):
            replica = specs.get(role)
            policy = replica.get("restartPolicy") if isinstance(replica, dict) else None
            if policy not in (None, "", "Never", "OnFailure"):
                at = f"spec.mpiReplicaSpecs.{role}.restartPolicy"
                found.append(ManifestError(
                    f"{at} is {as_written(policy)}: the MPI operator takes Never or OnFailure "
                    f"only", at))
        worker = specs.get("Worker")
        workers = worker.get("replicas") if isinstance(worker, dict) else None
        if isinstance(workers, int) and not isinstance(workers, bool) and workers < 1:
            at = "spec.mpiReplicaSpecs.Worker.replicas"
            found.append(ManifestError(
                f"{at} is {workers}: the MPI operator refuses Workers of fewer than one "
                f"replica; remove the Worker to run the launcher alone", at))
        last = f"{name}-worker-{workers - 1 if isinstance(workers, int) and workers > 0 else 0}"
        if len(last) > DNS_LABEL_MOST or not DNS_LABEL.fullmatch(last):
            found.append(ManifestError(
                f"metadata.name {name!r} makes the host name of its last worker {last!r}, "
                f"which must be a DNS label ({DNS_LABEL_RULE}): the MPI operator refuses the "
                f"job; shorten the name", "metadata.name"))
        return found

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
