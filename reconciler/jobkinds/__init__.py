"""Job kinds: one module per kind behind ``JobKind``; ``KINDS`` lists them all."""

from __future__ import annotations

from reconciler.jobkinds.base import JobKind
from reconciler.jobkinds.batchjob import BatchJobKind
from reconciler.jobkinds.mpijob import MPIJobKind
from reconciler.jobkinds.pytorchjob import PyTorchJobKind
from reconciler.jobkinds.rayjob import RayJobKind

KINDS: tuple[JobKind, ...] = (
    PyTorchJobKind(),
    RayJobKind(),
    MPIJobKind("kubeflow.org/v2beta1"),
    MPIJobKind("kubeflow.org/v1"),
    BatchJobKind(),
)

BY_TYPE: dict[tuple[str, str], JobKind] = {(k.api_version, k.kind): k for k in KINDS}


def kind_for(api_version: str, kind: str) -> JobKind | None:
    return BY_TYPE.get((api_version, kind))
