"""Job (batch/v1): one pod set of ``parallelism`` pods (at most ``completions``)."""

from __future__ import annotations

from reconciler.core.outcomes import ObservedPhase
from reconciler.core.problems import as_written
from reconciler.jobkinds.base import (
    Manifest,
    ManifestError,
    Observed,
    PodTemplateRef,
    conditions_phase,
    managed_elsewhere,
    mapping_at,
    replicas_of,
    set_spec_suspend,
)

# The fields of a Job's spec the API server refuses to change once it is made
# (Kubernetes' ValidateJobSpecUpdate): its pod template (but for its
# scheduling directives while it is suspended and has never started), its
# selector, completions (but for an elastic Indexed Job's, set with its
# parallelism), completionMode, podFailurePolicy, backoffLimitPerIndex,
# managedBy and successPolicy. The others (parallelism, activeDeadlineSeconds,
# backoffLimit, suspend, ttlSecondsAfterFinished, ...) may change. A Job
# running on a member cluster is sent with these as it was sent with them
# (``pipeline.sent_specs``): an update the API server refuses, Argo CD or Flux
# would retry at every sync until the job ended.
IMMUTABLE_SPEC = ("template", "selector", "completions", "completionMode",
                  "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy")
# Kueue's annotations of a batch Job: whether its completions follow its
# parallelism ("true"), and the fewest pods it may be admitted with (partial
# admission). On a Job that is not suspended, Kueue's Job webhook
# (validatePartialAdmissionUpdate) refuses to change whether the first is
# "true", and, for a Job that has the second, its parallelism (1 when unset);
# the second itself may change. A batch Job running on a kueue cluster is sent
# with those as it was sent with them (``pipeline.sent_specs``).
COMPLETIONS_EQUAL_PARALLELISM = "kueue.x-k8s.io/job-completions-equal-parallelism"
MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"
JOB_CONTROLLER = "kubernetes.io/job-controller"  # (the managedBy of a Job it runs)


class BatchJobKind:
    api_version = "batch/v1"
    kind = "Job"

    def pod_templates(self, obj: Manifest) -> list[PodTemplateRef]:
        spec = mapping_at(obj, "spec")
        template = mapping_at(obj, "spec", "template")
        if spec is None or template is None:
            raise ManifestError("spec.template is missing", "spec.template")
        parallelism = replicas_of(spec.get("parallelism"), "spec.parallelism")
        completions = spec.get("completions")
        if completions is not None:
            parallelism = min(parallelism, replicas_of(completions, "spec.completions"))
        return [PodTemplateRef("main", parallelism, template, "spec.template")]

    def broken_rules(self, obj: Manifest, name: str) -> list[ManifestError]:
        """A Job's pods must restart Never or OnFailure: the API server refuses
        a Job whose pod template says Always, or nothing (a pod's default). A
        Job another controller manages (``spec.managedBy``) the member
        cluster's Job controller leaves alone (``managed_elsewhere``)."""
        found = managed_elsewhere(obj, "spec.managedBy", JOB_CONTROLLER,
                                  "the Job controller", None, empty_is_unset=False)
        spec = mapping_at(obj, "spec", "template", "spec") or {}
        policy = spec.get("restartPolicy")
        if policy in ("Never", "OnFailure"):
            return found
        at = "spec.template.spec.restartPolicy"
        if policy is None:
            return [*found, ManifestError(
                f"{at} is missing: the API server refuses a Job whose pods would restart "
                f"Always, a pod's default; set it to Never or OnFailure", at)]
        return [*found, ManifestError(
            f"{at} is {as_written(policy)}: the API server takes a Job whose pods restart "
            f"Never or OnFailure only", at)]

    def set_suspended(self, obj: Manifest, suspended: bool | None) -> None:
        set_spec_suspend(obj, suspended)

    def scheduling_priority_class(self, obj: Manifest) -> str | None:
        return None

    def observed_phase(self, obj: Manifest) -> Observed:
        """Complete or Failed ends it; pods ready run it (since its startTime).
        (Pods still pending count as ``active``; where ``ready`` is not said,
        an older cluster, ``active`` is taken.)"""
        phase = conditions_phase(obj, succeeded="Complete")
        status = obj.get("status")
        running = status.get("ready", status.get("active")) if isinstance(status, dict) \
            else None
        if phase[0] is ObservedPhase.PENDING and isinstance(running, int) \
                and not isinstance(running, bool) and running > 0:
            assert isinstance(status, dict)
            started = status.get("startTime")
            return ObservedPhase.RUNNING, str(started) if started else None, ""
        return phase

    def deleted_when(self, obj: Manifest) -> tuple[bool, bool]:
        spec = mapping_at(obj, "spec")
        ttl = spec is not None and spec.get("ttlSecondsAfterFinished") is not None
        return ttl, ttl
