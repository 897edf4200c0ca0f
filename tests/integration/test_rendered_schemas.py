"""Every object fleetq renders, checked against the schema the API server holds for it.

A fleet holding every upstream example job (../shared/upstream) and the seed
manifests (../shared/seed-manifests) is reconciled onto a member cluster of
each gang dialect, and so is the bundled ``fleet-repo-template/`` (whose
clusters are all given that dialect); every file of the state branch's
``clusters/`` folders is then read back and checked:

- an object of a kind whose CRD is in ../shared/upstream (PyTorchJob, both
  MPIJobs, RayJob, both PodGroups) against the openAPIV3Schema of its CRD
  version, as the API server prunes and validates a custom resource: a field
  its schema does not know (no ``properties`` entry, no ``additionalProperties``,
  no ``x-kubernetes-preserve-unknown-fields``) would be dropped without a word;
  a wrong type (``x-kubernetes-int-or-string`` takes both), a value not in its
  ``enum``, out of ``minimum``/``maximum``/``maxLength``/``pattern``/``format``
  bounds, a missing ``required`` field, a duplicate key of a
  ``x-kubernetes-list-type: map`` list, would be refused;
- a built-in object (batch/v1 Job, ConfigMap, Secret, Namespace, ...) against
  the kubernetes client's models (the API's field names and types): a field
  they do not know would be dropped (or refused under strict field validation);
- every ``metadata`` as the API server checks an object's: name, namespace,
  label keys and values, annotation keys (and the labels of pod templates,
  which the pods the operator makes carry).

The CEL rules (``x-kubernetes-validations``) are not evaluated: those of these
CRDs are transition rules (``self == oldSelf``) or are about fields fleetq
never writes (``managedBy``, ``deletionStrategy``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.builders import quota_tree_yaml

from .conftest import (
    QUEUED_CLUSTER_POLICY,
    REPO_ROOT,
    SHARED,
    make_fleet_repo,
    placements,
    run_reconcile,
    shared_path,
    state_docs,
    state_files,
)

UPSTREAM = SHARED / "upstream"
CRD_FILES = ("training-operator/kubeflow.org_pytorchjobs.yaml",
             "training-operator/kubeflow.org_mpijobs.yaml",
             "mpi-operator/kubeflow.org_mpijobs.yaml",
             "kuberay/ray.io_rayjobs.yaml",
             "scheduler-plugins/scheduling.x-k8s.io_podgroups.yaml",
             "volcano/scheduling.volcano.sh_podgroups.yaml")
JOB_GLOBS = ("training-operator/examples/**/*.yaml", "kuberay/samples/*.yaml",
             "mpi-operator/examples/**/*.yaml")
SEED_FILES = ("ack-fleet-pytorchjob.yaml", "ack-rayjob.yaml")
DIALECTS = ("ack", "scheduler-plugins", "volcano", "kueue")
# built-in kinds fleetq renders -> the kubernetes client's model of them
BUILT_IN = {("batch/v1", "Job"): "V1Job", ("v1", "ConfigMap"): "V1ConfigMap",
            ("v1", "Secret"): "V1Secret", ("v1", "Namespace"): "V1Namespace",
            ("v1", "PersistentVolumeClaim"): "V1PersistentVolumeClaim",
            ("v1", "ServiceAccount"): "V1ServiceAccount"}

Schema = Mapping[str, Any]


# -- the schemas -------------------------------------------------------------

@lru_cache(maxsize=1)
def crd_schemas() -> dict[tuple[str, str], Schema]:
    """(apiVersion, kind) -> openAPIV3Schema, for every served version of the CRDs."""
    out: dict[tuple[str, str], Schema] = {}
    for rel in CRD_FILES:
        with shared_path(f"upstream/{rel}").open(encoding="utf-8") as f:
            crd = yaml.load(f, Loader=yaml.CSafeLoader)
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            if version.get("served"):
                out[(f"{group}/{version['name']}", kind)] = version["schema"]["openAPIV3Schema"]
    return out


# -- CRD structural schemas ----------------------------------------------------

INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
TYPES: dict[str, tuple[type, ...]] = {"object": (dict,), "array": (list,), "string": (str,),
                                      "integer": (int,), "number": (int, float),
                                      "boolean": (bool,)}


def _type_ok(value: Any, schema: Schema) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, (int, str)) and not isinstance(value, bool)
    want = schema.get("type")
    if want is None:
        branches = schema.get("anyOf") or schema.get("oneOf")
        return not branches or any(_type_ok(value, b) for b in branches)
    if isinstance(value, bool) and want != "boolean":
        return False
    return isinstance(value, TYPES[want])


def check_schema(value: Any, schema: Schema, path: str, errors: list[str], *,
                 root: bool = False) -> None:
    """Append to ``errors`` what the API server would prune from or refuse in ``value``."""
    if value is None:
        if not schema.get("nullable"):
            errors.append(f"{path}: null, where {schema.get('type', 'a value')} is expected")
        return
    if not _type_ok(value, schema):
        want = "integer or string" if schema.get("x-kubernetes-int-or-string") \
            else schema.get("type")
        errors.append(f"{path}: {type(value).__name__} {value!r:.60}, where {want} is expected")
        return
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, dict):
        _check_object(value, schema, path, errors, root=root)
    elif isinstance(value, list):
        _check_array(value, schema, path, errors)
    elif isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{path}: longer than {schema['maxLength']}")
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(f"{path}: shorter than {schema['minLength']}")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{path}: {value!r} does not match {schema['pattern']}")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        low, high = INT_RANGES.get(schema.get("format", ""), (None, None))
        if "minimum" in schema:
            low = schema["minimum"] if low is None else max(low, schema["minimum"])
        if "maximum" in schema:
            high = schema["maximum"] if high is None else min(high, schema["maximum"])
        if (low is not None and value < low) or (high is not None and value > high):
            errors.append(f"{path}: {value} is out of range [{low}, {high}]")


def _check_object(value: dict[str, Any], schema: Schema, path: str, errors: list[str], *,
                  root: bool) -> None:
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    keeps_unknown = bool(schema.get("x-kubernetes-preserve-unknown-fields")) or extra is True
    # (an object's own apiVersion, kind and metadata are the API server's to check)
    own = {"apiVersion", "kind", "metadata"} \
        if root or schema.get("x-kubernetes-embedded-resource") else set()
    for key, item in value.items():
        where = f"{path}.{key}" if path else str(key)
        if key in own:
            if key == "metadata":
                check_object_meta(item, where, errors)
            elif not isinstance(item, str):
                errors.append(f"{where}: {item!r} is not a string")
        elif key in properties:
            if item is None and not properties[key].get("nullable"):
                continue  # (pruned, as if not there)
            check_schema(item, properties[key], where, errors)
        elif isinstance(extra, Mapping):
            check_schema(item, extra, where, errors)
        elif not keeps_unknown:
            errors.append(f"{where}: unknown field (the API server prunes it)")
    for key in schema.get("required") or ():
        if value.get(key) is None and "default" not in properties.get(key, {}):  # (defaulted)
            errors.append(f"{path}.{key}: required, and missing" if path else
                          f"{key}: required, and missing")


def _check_array(value: list[Any], schema: Schema, path: str, errors: list[str]) -> None:
    if "minItems" in schema and len(value) < schema["minItems"]:
        errors.append(f"{path}: fewer than {schema['minItems']} items")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        errors.append(f"{path}: more than {schema['maxItems']} items")
    items = schema.get("items") or {}
    for i, item in enumerate(value):
        check_schema(item, items, f"{path}[{i}]", errors)
    kind = schema.get("x-kubernetes-list-type")
    if kind == "map":
        keys = [tuple(item.get(k) for k in schema.get("x-kubernetes-list-map-keys") or ())
                for item in value if isinstance(item, dict)]
        dupes = sorted({k for k in keys if keys.count(k) > 1}, key=repr)
        if dupes:
            errors.append(f"{path}: duplicate map-list keys {dupes}")
    elif kind == "set":
        seen = [repr(v) for v in value]
        if len(set(seen)) != len(seen):
            errors.append(f"{path}: duplicate items of a set list")


# -- built-in kinds, by the kubernetes client's models -----------------------

QUANTITY_KEYS = {"requests", "limits", "overhead", "sizeLimit", "capacity", "hard"}


def _model(name: str) -> Any:
    import kubernetes.client.models as models

    return getattr(models, name)


def check_model(value: Any, type_name: str, path: str, errors: list[str], *,
                quantity: bool = False) -> None:
    """``value`` as the API's type ``type_name`` (the client's spelling): unknown
    fields and wrong shapes."""
    if value is None:
        return  # (as if not there)
    listed = re.fullmatch(r"List\[(.+)\]", type_name)
    mapped = re.fullmatch(r"Dict\[str, (.+)\]", type_name)
    if listed:
        if not isinstance(value, list):
            errors.append(f"{path}: {type(value).__name__}, where a list is expected")
            return
        for i, item in enumerate(value):
            check_model(item, listed.group(1), f"{path}[{i}]", errors)
    elif mapped:
        if not isinstance(value, dict):
            errors.append(f"{path}: {type(value).__name__}, where a mapping is expected")
            return
        for key, item in value.items():
            check_model(item, mapped.group(1), f"{path}.{key}", errors, quantity=quantity)
    elif type_name in ("str", "datetime", "date"):
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not isinstance(value, str) and not (quantity and number):
            errors.append(f"{path}: {type(value).__name__} {value!r:.60}, where a string is "
                          f"expected")
    elif type_name in ("int", "float", "bool"):
        want = {"int": (int,), "float": (int, float), "bool": (bool,)}[type_name]
        if not isinstance(value, want) or (type_name != "bool" and isinstance(value, bool)):
            errors.append(f"{path}: {type(value).__name__} {value!r:.60}, where {type_name} "
                          f"is expected")
    elif type_name == "object":
        return  # (int-or-string, raw extension: anything)
    else:
        if not isinstance(value, dict):
            errors.append(f"{path}: {type(value).__name__}, where an object is expected")
            return
        model = _model(type_name)
        by_json = {json: attr for attr, json in model.attribute_map.items()}
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if key not in by_json:
                errors.append(f"{where}: unknown field (the API server drops it)")
            elif key == "metadata" and type_name != "V1ObjectMeta":
                check_object_meta(item, where, errors)
            else:
                check_model(item, model.openapi_types[by_json[key]], where, errors,
                            quantity=key in QUANTITY_KEYS)


# -- metadata ----------------------------------------------------------------

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def _qualified_key(key: Any) -> bool:
    if not isinstance(key, str):
        return False
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not DNS_SUBDOMAIN.fullmatch(prefix)):
        return False
    return len(name) <= 63 and bool(QUALIFIED_NAME.fullmatch(name))


def check_object_meta(meta: Any, path: str, errors: list[str], *, fields: bool = True) -> None:
    """An object's (or a template's) metadata as the API server validates it;
    ``fields``: its fields too (not where a CRD's schema says them)."""
    if not isinstance(meta, dict):
        errors.append(f"{path}: {meta!r:.60} is not an object")
        return
    if fields:
        check_model({k: v for k, v in meta.items() if k not in ("labels", "annotations")},
                    "V1ObjectMeta", path, errors)
    name, namespace = meta.get("name"), meta.get("namespace")
    if name is not None and (not isinstance(name, str) or len(name) > 253
                             or not DNS_SUBDOMAIN.fullmatch(name)):
        errors.append(f"{path}.name: {name!r} is not a DNS subdomain name")
    if namespace is not None and (not isinstance(namespace, str) or len(namespace) > 63
                                  or not DNS_LABEL.fullmatch(namespace)):
        errors.append(f"{path}.namespace: {namespace!r} is not a DNS label")
    for field in ("labels", "annotations"):
        values = meta.get(field)
        if values is None:
            continue
        if not isinstance(values, dict):
            errors.append(f"{path}.{field}: {values!r:.60} is not a mapping")
            continue
        for key, value in values.items():
            if not _qualified_key(key):
                errors.append(f"{path}.{field}: {key!r} is not a qualified name")
            if not isinstance(value, str):
                errors.append(f"{path}.{field}.{key}: {value!r} is not a string")
            elif field == "labels" and (len(value) > 63 or (value and not QUALIFIED_NAME
                                                                 .fullmatch(value))):
                errors.append(f"{path}.{field}.{key}: {value!r} is not a valid label value")


def _template_metadata(value: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The metadata of every template (pod, volume claim) in ``value``."""
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if str(key).endswith(("template", "Template")) and isinstance(item, dict) \
                    and isinstance(item.get("metadata"), dict):
                yield f"{where}.metadata", item["metadata"]
            yield from _template_metadata(item, where)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _template_metadata(item, f"{path}[{i}]")


# -- one object --------------------------------------------------------------

def schema_errors(obj: Any, where: str = "") -> list[str]:
    """What the API server would prune from, or refuse in, the object ``obj``."""
    if not isinstance(obj, dict):
        return [f"{where}: not an object"]
    api_version, kind = str(obj.get("apiVersion")), str(obj.get("kind"))
    errors: list[str] = []
    schema = crd_schemas().get((api_version, kind))
    if schema is not None:
        check_schema(obj, schema, "", errors, root=True)
    elif (api_version, kind) in BUILT_IN:
        check_model(obj, BUILT_IN[(api_version, kind)], "", errors)
    else:
        return [f"{where}: {api_version} {kind}: no schema here to check it against"]
    if schema is not None:
        for at, meta in _template_metadata(obj, ""):  # (the pods made of them carry these)
            check_object_meta(meta, at, errors, fields=False)
    return [f"{where}: {e}" if where else e for e in errors]


# -- the checker checks ------------------------------------------------------

PYTORCHJOB = {
    "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
    "metadata": {"name": "p", "namespace": "default", "labels": {"a": "b"}},
    "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 1, "template": {
        "metadata": {"labels": {"x": "y"}},
        "spec": {"containers": [{"name": "c", "image": "i",
                                 "resources": {"requests": {"cpu": 1, "memory": "1Gi"}}}]}}}}}}


@pytest.mark.parametrize(("change", "expected"), [
    (lambda o: o["spec"].update(bogus=1), "spec.bogus: unknown field"),
    (lambda o: o["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"].update(
        schedulername="volcano"),
     "spec.pytorchReplicaSpecs.Worker.template.spec.schedulername: unknown field"),
    (lambda o: o["spec"]["pytorchReplicaSpecs"]["Worker"].update(replicas="2"),
     "spec.pytorchReplicaSpecs.Worker.replicas: str '2', where integer is expected"),
    (lambda o: o["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
     ["resources"]["requests"].update(cpu=0.5),
     "requests.cpu: float 0.5, where integer or string is expected"),
    (lambda o: o["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
     .pop("name"), "containers[0].name: required, and missing"),
    (lambda o: o["metadata"]["labels"].update(a="x" * 64), "metadata.labels.a: 'xxx"),
    (lambda o: o["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["metadata"].update(
        lables={}), "template.metadata.lables: unknown field"),
], ids=["unknown", "unknown-deep", "type", "int-or-string", "required", "label",
        "template-metadata"])
def test_the_checker_finds_what_the_api_server_would_prune_or_refuse(change: Any,
                                                                     expected: str) -> None:
    import copy

    shared_path("upstream")
    obj = copy.deepcopy(PYTORCHJOB)
    assert schema_errors(obj) == []
    change(obj)
    errors = schema_errors(obj)
    assert any(expected in e for e in errors), errors


@pytest.mark.parametrize(("api_version", "spec", "expected"), [
    ("scheduling.volcano.sh/v1beta1", {"minMember": 1, "networkTopology": {"mode": "any"}},
     "spec.networkTopology.mode: 'any' is not one of ['hard', 'soft']"),
    ("scheduling.volcano.sh/v1beta1", {"minMember": 1, "queue": "Team_A"},
     "spec.queue: 'Team_A' does not match"),
    ("scheduling.x-k8s.io/v1alpha1", {"minMember": 0},
     "spec.minMember: 0 is out of range [1, 2147483647]"),
], ids=["enum", "pattern", "minimum"])
def test_the_checker_holds_a_pod_group_to_its_bounds(api_version: str, spec: dict[str, Any],
                                                      expected: str) -> None:
    shared_path("upstream")
    group = {"apiVersion": api_version, "kind": "PodGroup",
             "metadata": {"name": "g", "namespace": "default"}, "spec": {"minMember": 1}}
    assert schema_errors(group) == []
    group["spec"] = spec
    errors = schema_errors(group)
    assert len(errors) == 1 and errors[0].startswith(expected), errors


def test_the_checker_finds_what_a_built_in_kind_does_not_know() -> None:
    shared_path("upstream")
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"parallelism": 2, "template": {"spec": {
               "restartPolicy": "Never",
               "containers": [{"name": "c", "resources": {"limits": {"cpu": 2}}}]}}}}
    assert schema_errors(job) == []
    job["spec"]["template"]["spec"]["containers"][0]["imagePullpolicy"] = "Always"
    job["spec"]["parallelism"] = "2"
    assert schema_errors(job) == [
        "spec.parallelism: str '2', where int is expected",
        "spec.template.spec.containers[0].imagePullpolicy: unknown field (the API server "
        "drops it)"]


def _upstream_objects() -> Iterator[tuple[str, Any]]:
    for pattern in (*JOB_GLOBS, "scheduler-plugins/examples/*.yaml", "volcano/examples/*.yaml"):
        for path in sorted(UPSTREAM.glob(pattern)):
            for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
                if isinstance(doc, dict):
                    yield str(path.relative_to(UPSTREAM)), doc


def test_the_upstream_examples_pass_the_checker_as_they_are() -> None:
    """The checker is no stricter than the API server: what upstream ships passes."""
    shared_path("upstream")
    checked, errors = 0, []
    for where, doc in _upstream_objects():
        key = (str(doc.get("apiVersion")), str(doc.get("kind")))
        if key in crd_schemas() or key in BUILT_IN:
            errors.extend(schema_errors(doc, where))
            checked += 1
    assert checked >= 20
    assert errors == []


# -- the fleets --------------------------------------------------------------

TREE = quota_tree_yaml("{cpu: 2000, memory: 8000Gi, nvidia.com/gpu: 128}", """\
    - name: examples
      min: {cpu: 1000, memory: 4000Gi, nvidia.com/gpu: 64}
      max: {cpu: 2000, memory: 8000Gi, nvidia.com/gpu: 128}
      namespaces: [default, kubeflow]
    - name: algorithm
      min: {cpu: 1000, memory: 4000Gi, nvidia.com/gpu: 64}
      max: {cpu: 2000, memory: 8000Gi, nvidia.com/gpu: 128}
      children:
      - name: video
        min: {cpu: 1000, memory: 4000Gi, nvidia.com/gpu: 64}
        max: {cpu: 2000, memory: 8000Gi, nvidia.com/gpu: 128}
        namespaces: [video]
""")


def _cluster(dialect: str) -> str:
    nodes = "".join(f"  - {{name: n{i}, allocatable: {{cpu: \"96\", memory: 768Gi, "
                    f"nvidia.com/gpu: \"8\", pods: \"110\"}}}}\n" for i in range(1, 5))
    return (f"apiVersion: fleetq.io/v1alpha1\nkind: MemberCluster\nmetadata: {{name: m-a}}\n"
            f"spec:\n  resourceReservation: true\n  gangDialect: {dialect}\n  nodes:\n{nodes}")


def _identities(text: str) -> set[tuple[str, str, str]]:
    return {(str(d.get("kind")), str((d.get("metadata") or {}).get("namespace") or "default"),
             str((d.get("metadata") or {}).get("name")))
            for d in yaml.safe_load_all(text) if isinstance(d, dict)
            and (d.get("metadata") or {}).get("name")}


def _rounds() -> list[dict[str, str]]:
    """The job files (upstream examples, seed jobs), split so that no two files of
    a round define the same object (KubeRay's samples share names)."""
    files = {f"jobs/upstream/{p.relative_to(UPSTREAM)}": p.read_text(encoding="utf-8")
             for pattern in JOB_GLOBS for p in sorted(UPSTREAM.glob(pattern))}
    files.update({f"jobs/seed/{name}": shared_path(f"seed-manifests/{name}")
                  .read_text(encoding="utf-8") for name in SEED_FILES})
    rounds: list[tuple[dict[str, str], set[tuple[str, str, str]]]] = []
    for path, text in sorted(files.items()):
        ids = _identities(text)
        for files_of, taken in rounds:
            if not ids & taken:
                files_of[path] = text
                taken.update(ids)
                break
        else:
            rounds.append(({path: text}, set(ids)))
    return [r for r, _ in rounds]


def _rendered_errors(repo: Path) -> tuple[list[str], int]:
    """Schema errors of every object of the state's cluster folders, and how many
    objects were checked."""
    errors: list[str] = []
    count = 0
    for file in state_files(repo):
        if not file.startswith("clusters/") or file.endswith("/kustomization.yaml"):
            continue
        for doc in state_docs(repo, file):
            errors.extend(schema_errors(doc, file))
            count += 1
    return errors, count


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_upstream_and_seed_job_renders_to_objects_the_api_server_takes_whole(
        tmp_path: Path, dialect: str) -> None:
    shared_path("upstream")
    shared_path("seed-manifests")
    errors: list[str] = []
    kinds: set[str] = set()
    for i, jobs in enumerate(_rounds()):
        repo = make_fleet_repo(tmp_path / f"fleet-{i}", {
            "quota.yaml": TREE,
            "policies/cluster.yaml": QUEUED_CLUSTER_POLICY + "  propagateDeps: true\n",
            "policies/seed.yaml": shared_path("seed-manifests/ack-fleet-policy-gang-queued.yaml")
            .read_text(encoding="utf-8"),
            "clusters/m-a.yaml": _cluster(dialect), **jobs})
        run_reconcile(repo)
        items = placements(repo)
        assert items, f"round {i}: no job read"
        not_admitted = {k: (i["phase"], i.get("reason")) for k, i in items.items()
                        if i["phase"] != "Admitted"}
        # (a RayJob Kueue's webhook would refuse, and a v1 MPIJob, which Kueue does not
        # manage, are sent to no kueue cluster)
        refused = {k for k, (_, why) in not_admitted.items()
                   if "m-a (gangDialect: kueue) would refuse it: " in (why or "")}
        assert {(items[k]["job"]["kind"], items[k]["job"]["apiVersion"]) for k in refused} <= {
            ("RayJob", "ray.io/v1"), ("MPIJob", "kubeflow.org/v1")}, refused
        assert not refused or dialect == "kueue", refused
        not_admitted = {k: v for k, v in not_admitted.items() if k not in refused}
        assert not_admitted == {}, "every job must be rendered to be checked"
        found, count = _rendered_errors(repo)
        errors.extend(f"round {i}: {e}" for e in found)
        assert count > len(items) - len(refused) or len(items) == len(refused)
        kinds.update(f.rsplit("/", 1)[-1].split("-", 1)[0] for f in state_files(repo))
    assert errors == []
    expected = {"pytorchjob", "mpijob", "rayjob", "configmap", "namespace"}
    if dialect in ("scheduler-plugins", "volcano"):
        expected.add("podgroup")
    assert expected <= kinds


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_template_fleet_renders_to_objects_the_api_server_takes_whole(
        tmp_path: Path, dialect: str) -> None:
    shared_path("upstream")
    template = REPO_ROOT / "fleet-repo-template"
    files = {str(p.relative_to(template)): p.read_text(encoding="utf-8")
             for p in sorted(template.rglob("*.yaml"))}
    for name, text in files.items():
        if name.startswith("clusters/"):
            files[name] = re.sub(r"gangDialect: \S+", f"gangDialect: {dialect}", text)
    repo = make_fleet_repo(tmp_path / "fleet", files)
    run_reconcile(repo)
    admitted = [i for i in placements(repo).values() if i["phase"] == "Admitted"]
    assert any(i["job"]["kind"] == "Job" for i in admitted)
    errors, count = _rendered_errors(repo)
    assert count >= len(admitted)
    assert errors == []
