"""PyTorchJob (kubeflow.org/v1): ``spec.pytorchReplicaSpecs`` Master + Worker."""

from __future__ import annotations

from reconciler.jobkinds.base import (
    DNS_1035_LABEL,
    DNS_1035_RULE,
    MULTIKUEUE,
    TRAINING_OPERATOR,
    Manifest,
    ManifestError,
    Observed,
    PodTemplateRef,
    conditions_phase,
    managed_elsewhere,
    mapping_at,
    replica_specs,
    run_policy_priority_class,
    run_policy_ttl,
    set_run_policy_suspend,
)

ROLES = ("Master", "Worker")
CONTAINER = "pytorch"  # (the training operator's PyTorchJobDefaultContainerName)


class PyTorchJobKind:
    api_version = "kubeflow.org/v1"
    kind = "PyTorchJob"

    def pod_templates(self, obj: Manifest) -> list[PodTemplateRef]:
        return replica_specs(obj, "pytorchReplicaSpecs", ROLES)

    def broken_rules(self, obj: Manifest, name: str) -> list[ManifestError]:
        """What the training operator's webhook refuses of a PyTorchJob: a name
        that is no DNS-1035 label, a replica type other than Master and
        Worker, a replica with no container named pytorch (the one it runs
        torch in), a Master of other than one replica (or that does not say
        how many), an elastic policy with no Worker; a job another controller
        manages (``managed_elsewhere``)."""
        found = managed_elsewhere(obj, "spec.runPolicy.managedBy", TRAINING_OPERATOR,
                                  "the training operator", (TRAINING_OPERATOR, MULTIKUEUE))
        if not DNS_1035_LABEL.fullmatch(name):
            found.append(ManifestError(
                f"metadata.name {name!r} is not a name the training operator takes: its "
                f"webhook refuses a PyTorchJob whose name is no DNS-1035 label "
                f"({DNS_1035_RULE})", "metadata.name"))
        specs = mapping_at(obj, "spec", "pytorchReplicaSpecs") or {}
        for role, replica in specs.items():
            where = f"spec.pytorchReplicaSpecs.{role}"
            if role not in ROLES:
                found.append(ManifestError(
                    f"{where}: a PyTorchJob's replica types are Master and Worker; the "
                    f"training operator's webhook refuses {role!r}", where))
            pod = mapping_at(replica, "template", "spec") or {}
            containers = pod.get("containers")
            if isinstance(containers, list) and not any(
                    isinstance(c, dict) and c.get("name") == CONTAINER for c in containers):
                at = f"{where}.template.spec.containers"
                found.append(ManifestError(
                    f"{at}: none is named {CONTAINER}: the training operator runs the job in "
                    f"the container of that name, and its webhook refuses a replica without "
                    f"one", at))
            replicas = replica.get("replicas") if isinstance(replica, dict) else None
            if role == "Master" and isinstance(replica, dict) and replicas is None:
                found.append(ManifestError(
                    f"{where}.replicas is not set: write replicas: 1 (a PyTorchJob has one "
                    f"master, and the training operator's webhook refuses a Master that does "
                    f"not say so)", where))
            elif role == "Master" and replicas is not None and replicas != 1:
                found.append(ManifestError(
                    f"{where}.replicas must be 1, not {replicas}: a PyTorchJob has one master "
                    f"(the training operator's webhook refuses any other number)",
                    f"{where}.replicas"))
        elastic = mapping_at(obj, "spec", "elasticPolicy")
        if elastic is not None and "Worker" not in specs:
            found.append(ManifestError(
                "spec.elasticPolicy needs spec.pytorchReplicaSpecs.Worker: the training "
                "operator's webhook refuses an elastic PyTorchJob with no workers",
                "spec.elasticPolicy"))
        if elastic is not None:
            found.extend(_elastic_rules(elastic, mapping_at(obj, "spec") or {}))
        return found

    def growth(self, obj: Manifest) -> list[ManifestError]:
        """Under an elastic policy with metrics, the training operator scales
        the workers (a HorizontalPodAutoscaler) up to its maxReplicas; and
        workers that start fewer than its minReplicas wait for more (torchrun's
        --nnodes=min:max), which only that autoscaler adds."""
        elastic = mapping_at(obj, "spec", "elasticPolicy") or {}
        most, least = elastic.get("maxReplicas"), elastic.get("minReplicas")
        worker = mapping_at(obj, "spec", "pytorchReplicaSpecs", "Worker") or {}
        now = worker.get("replicas", 1)
        low, start, high = _whole(least), _whole(now), _whole(most)
        if mapping_at(obj, "spec", "elasticPolicy") is not None and low is not None and \
                start is not None and start < low and (high is None or low <= high):
            at = "spec.pytorchReplicaSpecs.Worker.replicas"
            return [ManifestError(
                f"{at} is {now}, below spec.elasticPolicy.minReplicas {least}: torchrun waits "
                f"for {least} workers to join before it trains; fleetq reserves the {now} the "
                f"job starts with, and more come only from the training operator's autoscaler "
                f"(under metrics), beyond them; set the workers' replicas to minReplicas at "
                f"least", at)]
        if not elastic.get("metrics") or not isinstance(most, int) or isinstance(most, bool) \
                or not isinstance(now, int) or most <= now:
            return []
        at = "spec.elasticPolicy.maxReplicas"
        return [ManifestError(
            f"{at} is {most} under metrics: fleetq reserves the {now} worker(s) the job starts "
            f"with, and the training operator may scale them up to {most}, beyond what its "
            f"quota and cluster were checked for; set maxReplicas to the workers' replicas to "
            f"keep it within them", at)]

    def old_fields(self, obj: Manifest) -> list[ManifestError]:
        """``spec.cleanPodPolicy`` beside another ``runPolicy.cleanPodPolicy``:
        the cluster keeps the latter (see ``move_old_fields``)."""
        spec = mapping_at(obj, "spec") or {}
        old, new = spec.get("cleanPodPolicy"), (mapping_at(obj, "spec", "runPolicy") or {}
                                                ).get("cleanPodPolicy")
        if old is None or new is None or old == new:
            return []
        return [ManifestError(
            f"spec.cleanPodPolicy is {old!r} and spec.runPolicy.cleanPodPolicy is {new!r}: the "
            f"training operator reads runPolicy's alone (the old place is not in its CRD), so "
            f"{new!r} holds; remove spec.cleanPodPolicy, or move its value to runPolicy",
            "spec.cleanPodPolicy")]

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


def _elastic_rules(elastic: Manifest, spec: Manifest) -> list[ManifestError]:
    """What the training operator refuses of an elastic policy (its webhook),
    or passes on to torchrun, which refuses it when each worker starts: the
    job would hold its quota and room and never train."""
    found = []
    least, most = elastic.get("minReplicas"), elastic.get("maxReplicas")
    if isinstance(least, int) and isinstance(most, int) and not isinstance(least, bool) \
            and not isinstance(most, bool) and least > most:
        at = "spec.elasticPolicy.minReplicas"
        found.append(ManifestError(
            f"{at} is {least}, above its maxReplicas {most}: the training operator starts "
            f"each worker's torchrun with --nnodes={least}:{most}, which torchrun refuses; "
            f"lower minReplicas or raise maxReplicas", at))
    if "nProcPerNode" in elastic and "nprocPerNode" in spec:
        at = "spec.elasticPolicy.nProcPerNode"
        found.append(ManifestError(
            f"{at} and spec.nprocPerNode are both set: the training operator's webhook "
            f"refuses the old field beside the new one; keep spec.nprocPerNode alone", at))
    return found


def _whole(value: object) -> int | None:
    """``value`` when it is a whole number (not a boolean), else ``None``."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
