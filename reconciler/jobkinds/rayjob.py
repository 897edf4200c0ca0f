"""RayJob (ray.io/v1): the head group plus each worker group of ``rayClusterSpec``.

A RayJob that runs on an existing RayCluster (``clusterSelector``) has no pod
sets of its own (warned of when its policy does not pin it to one cluster:
``pipeline.on_existing_ray_clusters``). The submitter pod KubeRay starts once
the cluster is up (``submissionMode: K8sJobMode``) is not a pod set: it is no
part of the gang (a PodGroup waiting for it would never start), and the job's
requests are those of its head and worker groups (the head's with the Ray
autoscaler's container, under ``enableInTreeAutoscaling``).
Kueue (from v0.10) counts it, a pod set of the workload it admits: on a kueue
cluster it takes one of the workload's pod sets (``refused_by``), and its
ClusterQueue needs room for it beside the quota. Under ``submissionMode:
SidecarMode`` KubeRay adds the submitter as a container of the head pod: its
requests count in the head's.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import yaml

from reconciler.core.outcomes import ObservedPhase
from reconciler.core.problems import as_written, yaml_type
from reconciler.core.resources import Resources, add_into
from reconciler.jobkinds.base import (
    DNS_1035_LABEL,
    DNS_1035_RULE,
    DNS_LABEL,
    DNS_LABEL_MOST,
    INT32_MAX,
    MULTIKUEUE,
    Manifest,
    ManifestError,
    Observed,
    PodTemplateRef,
    container_requests,
    managed_elsewhere,
    mapping_at,
    parse_resources,
    replicas_of,
    set_spec_suspend,
)

RETRYING = ("Retrying", "New", "Initializing", "Waiting")  # a deployment on its way
# The most pod sets a Kueue workload has (its MaxPodSets: 8 until 2026, when later
# releases allowed 10, then 18): one is the head's, one the submitter Job's
# (``submits_from_a_job``), and one each worker group's.
KUEUE_POD_SETS = 8
SUBMITTER_JOB_MODE = "K8sJobMode"  # (the CRD's default submissionMode)
SIDECAR_MODE = "SidecarMode"
INTERACTIVE_MODE = "InteractiveMode"
KUBERAY = "ray.io/kuberay-operator"  # (the managedBy of a job KubeRay runs)
RAY_CLUSTER = "ray.io/cluster"  # (the label a clusterSelector names its RayCluster by)
# KubeRay's submitter container (``GetDefaultSubmitterContainer``), which it adds to
# the head pod of a RayJob of SidecarMode (it takes no submitterPodTemplate)
SIDECAR_SUBMITTER = {"cpu": "500m", "memory": "200Mi"}


# KubeRay's autoscaler container (``BuildAutoscalerContainer``), which it adds to
# the head pod under enableInTreeAutoscaling, unless autoscalerOptions.resources
# replaces its resources
AUTOSCALER = {"cpu": "500m", "memory": "512Mi"}


@functools.cache
def sidecar_submitter() -> Resources:
    """What the submitter container adds to the head pod of a RayJob of
    SidecarMode: a head placed without it would not fit where it was placed."""
    return parse_resources(SIDECAR_SUBMITTER, "SIDECAR_SUBMITTER")


@functools.cache
def autoscaler() -> Resources:
    """What the Ray autoscaler's container adds to the head pod, by default."""
    return parse_resources(AUTOSCALER, "AUTOSCALER")


def head_added(spec: Mapping[str, Any], cluster: Mapping[str, Any]) -> Resources | None:
    """What KubeRay adds to the head pod beside its template's containers: the
    submitter container under SidecarMode, and the Ray autoscaler's under
    ``enableInTreeAutoscaling`` (``autoscalerOptions.resources``, which replace
    its own, 500m cpu and 512Mi, whole: as a container's, limits without
    requests request the limits)."""
    added: Resources = {}
    if spec.get("submissionMode") == SIDECAR_MODE:
        add_into(added, sidecar_submitter())
    if cluster.get("enableInTreeAutoscaling") is True:
        options = cluster.get("autoscalerOptions")
        where = "spec.rayClusterSpec.autoscalerOptions"
        if options is not None and not isinstance(options, Mapping):
            raise ManifestError(f"{where} must be a mapping", where)
        if options is not None and options.get("resources") is not None:
            add_into(added, container_requests(options["resources"], f"{where}.resources"))
        else:
            add_into(added, autoscaler())
    return added or None


def submits_from_a_job(obj: Manifest) -> bool:
    """Whether KubeRay submits the job from a batch Job of its own, started
    once the cluster is up (``submissionMode: K8sJobMode``, the default; not
    HTTPMode, InteractiveMode, or SidecarMode's container in the head pod).
    Kueue (from v0.10) makes that Job a pod set of the workload it admits."""
    spec = mapping_at(obj, "spec") or {}
    return (spec.get("submissionMode") or SUBMITTER_JOB_MODE) == SUBMITTER_JOB_MODE


def worker_replicas(group: Mapping[str, Any], where: str) -> int:
    """The workers KubeRay starts for a worker group (``GetWorkerGroupDesiredReplicas``):
    none when it is suspended; else ``replicas`` held within ``minReplicas``
    and ``maxReplicas`` (``maxReplicas`` when those two cross), each unset as
    the CRD defaults it: 0, 0 and 2147483647. A gang of more would wait for
    pods that never come; of fewer, start without some."""
    replicas = replicas_of(group.get("replicas"), f"{where}.replicas", 0)
    least = replicas_of(group.get("minReplicas"), f"{where}.minReplicas", 0)
    most = replicas_of(group.get("maxReplicas"), f"{where}.maxReplicas", INT32_MAX)
    if group.get("suspend") is True:
        return 0
    if least > most:
        return most
    return min(max(replicas, least), most)


def group_name(group: Mapping[str, Any], where: str) -> str:
    """A worker group's ``groupName``, which the RayJob CRD requires."""
    name = group.get("groupName")
    if not isinstance(name, str) or not name:
        raise ManifestError(f"{where}.groupName is missing; give the worker group a name (the "
                            f"RayJob CRD requires one, and KubeRay labels its pods with it)",
                            f"{where}.groupName" if "groupName" in group else where)
    return name


# The longest name of a RayJob KubeRay takes (``MaxRayJobNameLength``): it names
# the job's RayCluster after it with 6 characters more, and that cluster's
# Services with 10 more again (``-serve-svc``), each at most 63 characters long.
RAY_JOB_NAME_MOST = 47


def _pod_set_names(groups: list[Any], submitter: bool) -> list[str]:
    """Why Kueue could not make a workload of these worker groups: the pod set it
    names after each (its groupName in lower case) must be a DNS label, and no
    other pod set's name (the head's, the submitter Job's, another group's).
    Kueue refuses the workload it would make of such a job (its webhook, the
    name head alone), and the job would wait, suspended, for ever."""
    why = []
    taken = {"head": "the head's pod set"}
    if submitter:
        taken["submitter"] = f"the submitter Job's pod set (submissionMode {SUBMITTER_JOB_MODE})"
    seen = set()
    for i, group in enumerate(groups):
        name = group.get("groupName") if isinstance(group, dict) else None
        if not isinstance(name, str) or not name or name in seen:
            continue  # (errors of the job's: ``group_name``, a name given twice)
        seen.add(name)
        pod_set = name.lower()
        where = f"spec.rayClusterSpec.workerGroupSpecs[{i}].groupName {name!r}"
        if len(pod_set) > DNS_LABEL_MOST or not DNS_LABEL.fullmatch(pod_set):
            why.append(f"{where} must be a DNS label once in lower case (at most "
                       f"{DNS_LABEL_MOST} letters, digits and '-', a letter or digit at "
                       f"each end): Kueue names the group's pod set after it")
        elif pod_set in taken:
            why.append(f"{where} names the same pod set as {taken[pod_set]} (Kueue names a "
                       f"group's pod set after it, in lower case)")
        else:
            taken[pod_set] = f"workerGroupSpecs[{i}]"
    return why


class RayJobKind:
    api_version = "ray.io/v1"
    kind = "RayJob"

    def pod_templates(self, obj: Manifest) -> list[PodTemplateRef]:
        cluster = mapping_at(obj, "spec", "rayClusterSpec")
        if cluster is None:
            if mapping_at(obj, "spec", "clusterSelector"):
                return []
            raise ManifestError("spec.rayClusterSpec is missing (or set spec.clusterSelector)",
                                "spec.rayClusterSpec")
        head = mapping_at(cluster, "headGroupSpec", "template")
        if head is None:
            raise ManifestError("spec.rayClusterSpec.headGroupSpec.template is missing",
                                "spec.rayClusterSpec.headGroupSpec")
        spec = mapping_at(obj, "spec") or {}
        out = [PodTemplateRef("head", 1, head, "spec.rayClusterSpec.headGroupSpec.template",
                              head_added(spec, cluster))]
        groups = cluster.get("workerGroupSpecs") or []
        if not isinstance(groups, list):
            raise ManifestError("spec.rayClusterSpec.workerGroupSpecs must be a list",
                                "spec.rayClusterSpec.workerGroupSpecs")
        named: dict[str, int] = {}
        for i, group in enumerate(groups):
            where = f"spec.rayClusterSpec.workerGroupSpecs[{i}]"
            if not isinstance(group, dict) or not isinstance(group.get("template"), dict):
                raise ManifestError(f"{where}.template is missing", where)
            name = group_name(group, where)
            if name in named:  # (KubeRay's webhook refuses it; its pods tell groups by name)
                raise ManifestError(
                    f"{where}.groupName {name!r} is the name of workerGroupSpecs"
                    f"[{named[name]}] too; give each worker group a name of its own",
                    f"{where}.groupName")
            named[name] = i
            # each replica of a multi-host group (TPU slices) is numOfHosts pods
            hosts = replicas_of(group.get("numOfHosts"), f"{where}.numOfHosts")
            if hosts < 1:
                raise ManifestError(f"{where}.numOfHosts must be 1 or more, not {hosts}",
                                    f"{where}.numOfHosts")
            out.append(PodTemplateRef(name, worker_replicas(group, where) * hosts,
                                      group["template"], f"{where}.template"))
        return out

    def growth(self, obj: Manifest) -> list[ManifestError]:
        """Under ``enableInTreeAutoscaling``, the worker pods the Ray autoscaler
        may add to those the job starts with (each group up to its maxReplicas
        times its numOfHosts; without bound where maxReplicas is unset)."""
        cluster = mapping_at(obj, "spec", "rayClusterSpec") or {}
        groups = cluster.get("workerGroupSpecs")
        if cluster.get("enableInTreeAutoscaling") is not True or not isinstance(groups, list):
            return []
        start = more = 0
        bounded = True
        for i, group in enumerate(groups):
            if not isinstance(group, dict):
                continue
            where = f"spec.rayClusterSpec.workerGroupSpecs[{i}]"
            hosts = replicas_of(group.get("numOfHosts"), f"{where}.numOfHosts")
            now = worker_replicas(group, where)
            start += now * hosts
            most = group.get("maxReplicas")
            if most is None:
                bounded = False
            elif isinstance(most, int) and most > now:
                more += (most - now) * hosts
        if bounded and not more:
            return []
        at = "spec.rayClusterSpec.enableInTreeAutoscaling"
        added = f"up to {more} more" if bounded else \
            "more without bound (a group sets no maxReplicas)"
        return [ManifestError(
            f"{at} is true: fleetq reserves the {start} worker pod(s) the job starts with, and "
            f"the Ray autoscaler may add {added}, beyond what its quota and cluster were "
            f"checked for; set each worker group's maxReplicas to its replicas to keep it "
            f"within them", at)]

    def broken_rules(self, obj: Manifest, name: str) -> list[ManifestError]:
        """What KubeRay refuses of a RayJob (``ValidateRayJobMetadata`` and
        ``ValidateRayJobSpec``): a name of more than 47 characters (its
        RayCluster is named after it with 6 more, and that name's Services with
        10 more), or no DNS-1035 label; a negative ttlSecondsAfterFinished, or
        a positive one while its cluster is kept (shutdownAfterJobFinishes not
        true); an activeDeadlineSeconds not above 0, a negative backoffLimit;
        under SidecarMode, a submitterPodTemplate, a clusterSelector, or a head
        pod that restarts; a worker group whose minReplicas is above its
        maxReplicas (``ValidateRayClusterSpec``); a backoffLimit above 0 under
        InteractiveMode or on an existing cluster; a clusterSelector that
        names no cluster; a runtimeEnvYAML that is no YAML mapping; a
        deletionStrategy the CRD's rules or KubeRay refuse
        (``_deletion_rules``); a job another controller manages
        (``managed_elsewhere``)."""
        found = managed_elsewhere(obj, "spec.managedBy", KUBERAY, "KubeRay",
                                  (KUBERAY, MULTIKUEUE), empty_is_unset=False)
        groups = (mapping_at(obj, "spec", "rayClusterSpec") or {}).get("workerGroupSpecs")
        for i, group in enumerate(groups if isinstance(groups, list) else []):
            least, most = (group.get(f) if isinstance(group, dict) else None
                           for f in ("minReplicas", "maxReplicas"))
            if isinstance(least, int) and isinstance(most, int) and not isinstance(
                    least, bool) and not isinstance(most, bool) and least > most:
                at = f"spec.rayClusterSpec.workerGroupSpecs[{i}].minReplicas"
                found.append(ManifestError(
                    f"{at} is {least}, above its maxReplicas {most}: KubeRay refuses the job; "
                    f"lower minReplicas or raise maxReplicas", at))
        if len(name) > RAY_JOB_NAME_MOST:
            found.append(ManifestError(
                f"metadata.name {name!r} is {len(name)} characters long: KubeRay refuses a "
                f"RayJob named with more than {RAY_JOB_NAME_MOST} (it names the job's "
                f"RayCluster, and that cluster's Services, after it); shorten it",
                "metadata.name"))
        elif not DNS_1035_LABEL.fullmatch(name):
            found.append(ManifestError(
                f"metadata.name {name!r} is not a name KubeRay takes: it refuses a RayJob "
                f"whose name is no DNS-1035 label ({DNS_1035_RULE})", "metadata.name"))
        spec = mapping_at(obj, "spec") or {}
        for field, least in (("ttlSecondsAfterFinished", 0), ("activeDeadlineSeconds", 1),
                             ("backoffLimit", 0)):
            value = spec.get(field)
            if value is None:
                continue
            at = f"spec.{field}"
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                found.append(ManifestError(
                    f"{at} must be a whole number from {least} on, not {as_written(value)}: "
                    f"KubeRay refuses the job", at))
            elif field == "ttlSecondsAfterFinished" and value > 0 and \
                    spec.get("shutdownAfterJobFinishes") is not True:
                found.append(ManifestError(
                    f"{at} is {value} while spec.shutdownAfterJobFinishes is not true: "
                    f"KubeRay refuses to delete a cluster it keeps; set "
                    f"shutdownAfterJobFinishes: true, or remove the field", at))
        retries = spec.get("backoffLimit")
        retries = retries if isinstance(retries, int) and not isinstance(retries, bool) else 0
        selector = spec.get("clusterSelector")
        if isinstance(selector, dict) and selector:
            if not selector.get(RAY_CLUSTER):
                found.append(ManifestError(
                    f"spec.clusterSelector names no cluster: KubeRay runs the job on the "
                    f"RayCluster its {RAY_CLUSTER} label names, and refuses it without one",
                    "spec.clusterSelector"))
            if retries > 0:
                found.append(ManifestError(
                    f"spec.backoffLimit is {retries}: KubeRay refuses retries of a job that "
                    f"runs on an existing RayCluster (spec.clusterSelector); set it to 0",
                    "spec.backoffLimit"))
        if spec.get("submissionMode") == INTERACTIVE_MODE and retries > 0:
            found.append(ManifestError(
                f"spec.backoffLimit is {retries}: KubeRay refuses retries under "
                f"submissionMode {INTERACTIVE_MODE}; set it to 0", "spec.backoffLimit"))
        runtime_env = spec.get("runtimeEnvYAML")
        if isinstance(runtime_env, str) and runtime_env.strip():
            try:  # (as KubeRay reads it: its first document, every scalar a string)
                env = next(yaml.load_all(runtime_env, Loader=yaml.CBaseLoader), None)
            except yaml.YAMLError as exc:
                env = exc
            # (no document, or YAML's null: no runtime environment, as Go reads it)
            if env not in (None, "", "~", "null", "Null", "NULL") and not isinstance(env, dict):
                why = "does not read as YAML" if isinstance(env, yaml.YAMLError) else \
                    f"is {yaml_type(env)}, not a mapping"
                found.append(ManifestError(
                    f"spec.runtimeEnvYAML {why}: KubeRay refuses the job; write the runtime "
                    f"environment as a YAML mapping (pip:, env_vars:, working_dir:, ...)",
                    "spec.runtimeEnvYAML"))
        found.extend(_deletion_rules(spec))
        if spec.get("submissionMode") == SIDECAR_MODE:
            for field in ("submitterPodTemplate", "clusterSelector"):
                if spec.get(field):
                    found.append(ManifestError(
                        f"spec.{field} is not taken under submissionMode {SIDECAR_MODE}: "
                        f"KubeRay refuses the job (the head pod runs the submitter)",
                        f"spec.{field}"))
            head = mapping_at(obj, "spec", "rayClusterSpec", "headGroupSpec", "template",
                              "spec") or {}
            if head.get("restartPolicy") not in (None, "", "Never"):
                at = "spec.rayClusterSpec.headGroupSpec.template.spec.restartPolicy"
                found.append(ManifestError(
                    f"{at} is {as_written(head['restartPolicy'])}: under submissionMode "
                    f"{SIDECAR_MODE} KubeRay takes a head pod that restarts Never only", at))
        return found

    def other_pod_templates(self, obj: Manifest) -> list[PodTemplateRef]:
        """The submitter's (``spec.submitterPodTemplate``), when given."""
        template = mapping_at(obj, "spec", "submitterPodTemplate")
        return [] if template is None else [
            PodTemplateRef("submitter", 1, template, "spec.submitterPodTemplate")]

    def refused_by(self, obj: Manifest) -> dict[str, str]:
        """What Kueue's RayJob webhook refuses of a job it manages (one with its
        queue label, as fleetq sends it to a kueue cluster)."""
        spec = mapping_at(obj, "spec") or {}
        cluster = mapping_at(obj, "spec", "rayClusterSpec") or {}
        groups = cluster.get("workerGroupSpecs")
        groups = groups if isinstance(groups, list) else []
        why = []
        if spec.get("shutdownAfterJobFinishes") is not True:
            why.append("spec.shutdownAfterJobFinishes must be true (its RayCluster would hold "
                       "the quota after the job ends)")
        if spec.get("clusterSelector"):
            why.append("it may not run on an existing RayCluster (spec.clusterSelector)")
        if cluster.get("enableInTreeAutoscaling") is True:
            why.append("spec.rayClusterSpec.enableInTreeAutoscaling must not be true")
        # (Kueue's webhook counts the head's pod set; with the submitter's, a workload
        # of one more than it holds is refused, and the job waits, suspended, for ever)
        submitter = submits_from_a_job(obj)
        most = KUEUE_POD_SETS - 1 - submitter
        if len(groups) > most:
            why.append(f"spec.rayClusterSpec.workerGroupSpecs holds {len(groups)} groups, "
                       f"more than {most}" + (
                           f" (its Kueue workload holds {KUEUE_POD_SETS} pod sets at most: "
                           f"the head's, the submitter Job's under submissionMode "
                           f"{SUBMITTER_JOB_MODE}, the default, and one a group)"
                           if submitter else ""))
        why.extend(_pod_set_names(groups, submitter))
        return {"kueue": "; ".join(why)} if why else {}

    def set_suspended(self, obj: Manifest, suspended: bool | None) -> None:
        set_spec_suspend(obj, suspended)

    def scheduling_priority_class(self, obj: Manifest) -> str | None:
        return None

    def observed_phase(self, obj: Manifest) -> Observed:
        """By KubeRay's ``status.jobDeploymentStatus`` (Complete, Failed,
        Running, ...) and ``status.jobStatus`` (SUCCEEDED, FAILED, STOPPED, ...).
        A RayJob with ``backoffLimit`` left is retried by KubeRay on its cluster:
        ``Retrying``, then ``New`` and ``Initializing`` again, its jobStatus
        still the failed attempt's; it has not ended."""
        status = obj.get("status")
        if not isinstance(status, dict):
            return ObservedPhase.PENDING, None, ""
        deployment = str(status.get("jobDeploymentStatus") or "")
        job = str(status.get("jobStatus") or "")
        message = str(status.get("message") or "")
        ended = str(status["endTime"]) if status.get("endTime") else None
        if deployment in RETRYING and job in ("FAILED", "STOPPED"):  # (the failed attempt's)
            if deployment == "Retrying":  # (as a Kubeflow job Restarting: it runs on)
                return ObservedPhase.RUNNING, None, message or "retrying (backoffLimit)"
            return ObservedPhase.PENDING, None, message
        if job == "FAILED" and deployment == "Running" and _retries_left(obj, status):
            return ObservedPhase.RUNNING, None, message or "retrying (backoffLimit)"
        if deployment == "Complete" or job in ("SUCCEEDED", "FAILED", "STOPPED"):
            if job == "SUCCEEDED":
                return ObservedPhase.SUCCEEDED, ended, message
            return ObservedPhase.FAILED, ended, message or f"jobStatus {job or 'unknown'}"
        if deployment == "Failed":
            return ObservedPhase.FAILED, ended, message or "jobDeploymentStatus Failed"
        if deployment == "Running" or job == "RUNNING":
            started = status.get("startTime")
            return ObservedPhase.RUNNING, str(started) if started else None, message
        return ObservedPhase.PENDING, None, message

    def deleted_when(self, obj: Manifest) -> tuple[bool, bool]:
        """KubeRay's ``deletionStrategy``: a ``DeleteSelf`` policy deletes the
        RayJob, ``onSuccess`` once it succeeded, ``onFailure`` once it failed,
        a rule of ``deletionRules`` once its ``condition`` holds (``jobStatus``
        SUCCEEDED or FAILED, ``jobDeploymentStatus`` Failed; none: either).
        Its ``ttlSecondsAfterFinished`` deletes only the RayCluster it made."""
        strategy = mapping_at(obj, "spec", "deletionStrategy")
        if strategy is None:
            return False, False
        on = [mapping_at(strategy, side) for side in ("onSuccess", "onFailure")]
        success, failure = (p is not None and p.get("policy") == "DeleteSelf" for p in on)
        rules = strategy.get("deletionRules")
        for rule in rules if isinstance(rules, list) else ():
            if not isinstance(rule, dict) or rule.get("policy") != "DeleteSelf":
                continue
            condition = mapping_at(rule, "condition") or {}
            status = condition.get("jobStatus")
            failed = status == "FAILED" or condition.get("jobDeploymentStatus") == "Failed"
            success = success or status == "SUCCEEDED" or not (status or failed)
            failure = failure or failed or not (status or failed)
        return success, failure


def _deletion_rules(spec: Mapping[str, Any]) -> list[ManifestError]:
    """What the API server (the CRD's rules) and KubeRay refuse of a RayJob's
    ``deletionStrategy``: onSuccess and onFailure beside deletionRules, or
    neither; one of the two without the other; either without its policy;
    DeleteNone while shutdownAfterJobFinishes is true; deletionRules while it
    is true."""
    strategy = spec.get("deletionStrategy")
    if not isinstance(strategy, dict):
        return []
    at = "spec.deletionStrategy"
    # (a field set to null the API server drops: it is not there)
    legacy = [f for f in ("onSuccess", "onFailure") if strategy.get(f) is not None]
    rules = strategy.get("deletionRules") is not None
    shutdown = spec.get("shutdownAfterJobFinishes") is True
    if strategy.get("deletionRules") == []:
        return [ManifestError(
            f"{at}.deletionRules is empty: the API server takes one rule or more; add a rule, "
            f"or remove the field", f"{at}.deletionRules")]
    if legacy and rules:
        return [ManifestError(
            f"{at} has {' and '.join(legacy)} beside deletionRules: the API server takes one "
            f"of the two ways only; keep one", at)]
    if rules:
        return [] if not shutdown else [ManifestError(
            f"{at}.deletionRules is set while spec.shutdownAfterJobFinishes is true: KubeRay "
            f"takes one of the two only; remove shutdownAfterJobFinishes, or the rules",
            f"{at}.deletionRules")]
    if len(legacy) < 2:
        missing = "onFailure" if legacy == ["onSuccess"] else "onSuccess"
        return [ManifestError(
            f"{at} needs both onSuccess and onFailure, or deletionRules: the API server "
            f"refuses it otherwise; add {missing}" if legacy else
            f"{at} needs both onSuccess and onFailure, or deletionRules: the API server "
            f"refuses an empty one; remove it, or fill it in", at)]
    found = []
    for field in legacy:
        policy = mapping_at(strategy, field) or {}
        if policy.get("policy") is None:
            found.append(ManifestError(
                f"{at}.{field}.policy is not set: KubeRay refuses the job; set it to "
                f"DeleteCluster, DeleteWorkers, DeleteSelf or DeleteNone", f"{at}.{field}"))
        elif policy.get("policy") == "DeleteNone" and shutdown:
            found.append(ManifestError(
                f"{at}.{field}.policy is DeleteNone while spec.shutdownAfterJobFinishes is "
                f"true: KubeRay refuses the job; choose one of the two",
                f"{at}.{field}.policy"))
    return found


def _retries_left(obj: Manifest, status: Mapping[str, Any]) -> bool:
    """Whether KubeRay runs a failed attempt again: fewer attempts failed
    (``status.failed``, the one just failed perhaps not counted yet) than
    ``spec.backoffLimit`` + 1."""
    spec = obj.get("spec")
    limit = spec.get("backoffLimit") if isinstance(spec, dict) else None
    failed = status.get("failed") or 0
    if not isinstance(limit, int) or isinstance(limit, bool) or not isinstance(failed, int):
        return False
    return max(failed, 1) < limit + 1
