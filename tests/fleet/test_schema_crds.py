"""The fields fleetq checks of each job kind are those of its real CRD.

``reconciler.jobkinds.schema`` writes the fields each job kind's CRD adds
around its pod templates, and takes Kubernetes' own objects from the
kubernetes client's models. Each is compared here, field by field, with the
openAPIV3Schema of the CRDs in ../shared/upstream: the same fields at every
level written out (so no field of the CRD is told as unknown, and none is
taken that the CRD drops), the same types, the same enumerations; where a
Kubernetes object is embedded (a pod template), every field the CRD has is
one the client's model has, of the same type. Every job manifest of the
upstream examples, the seed manifests and the template then reads with no
error and no warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.fleet.inputs import FleetInputs
from reconciler.jobkinds.schema import (
    ANY,
    BOOL,
    INT,
    INT_OR_STR,
    NUMBER,
    QUANTITY,
    SCHEMAS,
    STR,
    Record,
    Type,
    k8s_record,
)
from tests.integration.conftest import REPO_ROOT, SHARED

from .test_inputs import read, told

UPSTREAM = SHARED / "upstream"
CRDS = {("kubeflow.org/v1", "PyTorchJob"): "training-operator/kubeflow.org_pytorchjobs.yaml",
        ("kubeflow.org/v2beta1", "MPIJob"): "mpi-operator/kubeflow.org_mpijobs.yaml",
        ("kubeflow.org/v1", "MPIJob"): "training-operator/kubeflow.org_mpijobs.yaml",
        ("ray.io/v1", "RayJob"): "kuberay/ray.io_rayjobs.yaml"}
# fields fleetq takes that the CRD does not have: where an older operator took
# them, moved to the CRD's place when rendered (``move_old_fields``)
MOVED = {("kubeflow.org/v1", "PyTorchJob"): {"spec.cleanPodPolicy"}}
# fields of the pod spec of a CRD made with a Kubernetes whose API had them for a
# time, that the client's models have not: told as unknown where written
NOT_IN_CLIENT = {"spec.mpiReplicaSpecs{}.template.spec.workloadRef"}
SCALARS = {STR: "string", INT: "integer", NUMBER: "number", BOOL: "boolean"}


def crd_schema(api_version: str, kind: str) -> Mapping[str, Any]:
    path = UPSTREAM / CRDS[(api_version, kind)]
    if not path.is_file():
        pytest.skip(f"{path} is not here: the upstream CRDs are read from ../shared/upstream")
    version = api_version.rsplit("/", 1)[1]
    for doc in yaml.safe_load_all(path.read_text()):
        if doc and doc.get("kind") == "CustomResourceDefinition":
            for served in doc["spec"]["versions"]:
                if served["name"] == version:
                    schema: Mapping[str, Any] = served["schema"]["openAPIV3Schema"]
                    return schema
    raise AssertionError(f"{path} has no version {version} of {kind}")


def differences(mine: Type, crd: Mapping[str, Any], at: str, moved: set[str],
                client: bool = False) -> list[str]:
    """Where ``mine`` (a type of ``schema``) and ``crd`` (an openAPIV3Schema)
    differ. ``client``: ``mine`` is of the client's models, which may have
    fields newer than the CRD's copy of them."""
    if isinstance(mine, str) and mine.startswith("k8s:"):
        record = k8s_record(mine[4:])
        assert record is not None, f"{at}: the client has no model {mine[4:]}"
        return differences(record, crd, at, moved, True) if "properties" in crd else []
    if mine == ANY:
        return []
    if isinstance(mine, Record):
        props = crd.get("properties")
        if crd.get("type") != "object" or props is None:
            return [f"{at}: a record here, {crd.get('type')} in the CRD"]
        out = [f"{at}.{name}: in the CRD, not in {mine.name}".lstrip(".")
               for name in sorted(set(props) - set(mine.fields))
               if f"{at}.{name}".lstrip(".") not in NOT_IN_CLIENT]
        if not client:
            out.extend(f"{at}.{name}: in {mine.name}, not in the CRD".lstrip(".")
                       for name in sorted(set(mine.fields) - set(props))
                       if f"{at}.{name}".lstrip(".") not in moved)
        for name in sorted(set(mine.fields) & set(props)):
            out.extend(differences(mine.fields[name], props[name], f"{at}.{name}".lstrip("."),
                                   moved, client))
        return out
    if isinstance(mine, tuple):
        shape, of = mine
        if shape == "list":
            if crd.get("type") != "array":
                return [f"{at}: a list here, {crd.get('type')} in the CRD"]
            return differences(of, crd.get("items") or {}, f"{at}[]", moved, client)
        if shape == "map":
            extra = crd.get("additionalProperties")
            if crd.get("type") != "object" or "properties" in crd:
                return [f"{at}: a map here, not in the CRD"]
            return differences(of, extra, f"{at}{{}}", moved, client) \
                if isinstance(extra, dict) else []
        if crd.get("type") != "string":
            return [f"{at}: an enumeration here, {crd.get('type')} in the CRD"]
        if "enum" in crd and sorted(crd["enum"]) != sorted(of):
            return [f"{at}: {sorted(of)} here, {sorted(crd['enum'])} in the CRD"]
        return []
    if mine in (QUANTITY, INT_OR_STR):
        return [] if crd.get("x-kubernetes-int-or-string") else [
            f"{at}: {mine} here, {crd.get('type')} in the CRD"]
    if "enum" in crd and not client:  # (the client's models have no enumerations)
        return [f"{at}: {mine} here, an enumeration {crd['enum']} in the CRD"]
    if SCALARS.get(mine) != crd.get("type"):
        return [f"{at}: {mine} here, {crd.get('type')} in the CRD"]
    return []


@pytest.mark.parametrize("api_version,kind", sorted(CRDS))
def test_the_fields_checked_of_a_job_kind_are_those_of_its_crd(api_version: str,
                                                              kind: str) -> None:
    crd = crd_schema(api_version, kind)
    mine = SCHEMAS[(api_version, kind)]
    assert differences(mine, crd, "", MOVED.get((api_version, kind), set())) == []


def test_a_difference_from_the_crd_is_found() -> None:
    """The comparison itself: a field missing, one too many, a wrong type."""
    crd = {"type": "object", "properties": {
        "a": {"type": "string"}, "b": {"type": "integer"},
        "c": {"type": "string", "enum": ["X", "Y"]}}}
    assert differences(Record("R", {"a": STR, "b": STR, "d": INT}), crd, "", set()) == [
        "c: in the CRD, not in R", "d: in R, not in the CRD",
        "b: str here, integer in the CRD"]
    assert differences(Record("R", {"a": STR, "b": INT, "c": STR}), crd, "", set()) == [
        "c: str here, an enumeration ['X', 'Y'] in the CRD"]


def job_files() -> list[Path]:
    files = sorted((REPO_ROOT / "fleet-repo-template" / "jobs").rglob("*.yaml"))
    if not UPSTREAM.is_dir():
        pytest.skip(f"{UPSTREAM} is not here: the upstream examples are read from ../shared")
    for pattern in ("training-operator/examples/**/*.yaml", "kuberay/samples/*.yaml",
                    "mpi-operator/examples/**/*.yaml"):
        files.extend(sorted(UPSTREAM.glob(pattern)))
    files.extend(sorted((SHARED / "seed-manifests").glob("*.yaml")))
    return files


def test_every_job_of_the_template_seeds_and_upstream_examples_reads_clean() -> None:
    files = {str(path.relative_to(path.parents[1])) + f"#{i}": path.read_text()
             for i, path in enumerate(job_files())}
    inputs: FleetInputs = read({f"f{i}/{name.rsplit('#', 1)[0]}": text
                                for i, (name, text) in enumerate(files.items())})
    fields = [m for m in told(inputs) + told(inputs, "warning")
              if "the API server refuses it" in m or "the API server drops it" in m
              or "is not one the API server takes" in m]
    assert fields == []
    assert len(inputs.jobs) >= 20
