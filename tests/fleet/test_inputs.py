"""Reading the fleet's files (``fleet.inputs.read_fleet``): every mistake told at
its line, and a file that defines the fleet read in its last good version when
it breaks."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.core.model import Taint
from reconciler.core.problems import MAX_MESSAGE
from reconciler.fleet.inputs import FleetInputs, SourceFile, read_fleet
from reconciler.jobkinds.base import QUANTITY_FORM
from reconciler.pipeline import ParsedJobs
from tests.builders import quota_tree_yaml

CLUSTER = """\
apiVersion: fleetq.io/v1alpha1
kind: MemberCluster
metadata: {name: c1}
spec:
  gangDialect: ack
  nodes:
  - {name: n1, allocatable: {cpu: "8", memory: 32Gi}}
  - {name: n2, allocatable: {cpu: "8", memory: 32Gi}}
"""
FLEET = """\
apiVersion: fleetq.io/v1alpha1
kind: Fleet
metadata: {name: fleet}
spec:
  placementStrategy: binpack
  defaultPolicy: everything
  quotas:
    root/a: {queueStrategy: StrictFIFO, preemption: Never}
"""
POLICY = """\
apiVersion: policy.one.alibabacloud.com/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: everything}
spec:
  resourceSelectors: [{apiVersion: batch/v1, kind: Job}]
  placement: {replicaScheduling: {customSchedulingType: Gang}}
"""
JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {name: j1, namespace: default}
spec:
  template:
    spec:
      containers: [{name: main, image: busybox, resources: {requests: {cpu: "1"}}}]
      restartPolicy: Never
"""


def source(path: str, text: str) -> SourceFile:
    data = text.encode()
    return SourceFile(path, hashlib.sha1(data).hexdigest(), data)


def read(files: dict[str, str], versions: dict[str, list[str]] | None = None,
         asked: list[str] | None = None) -> FleetInputs:
    """``read_fleet`` of ``files``; ``versions``: each path's earlier versions,
    newest first, as the state branch's sources give them."""
    def last_good(path: str, blob: str) -> Iterator[SourceFile]:
        if asked is not None:
            asked.append(path)
        for text in (versions or {}).get(path, []):
            yield source(path, text)

    return read_fleet([source(p, t) for p, t in files.items()],
                      last_good=last_good if versions is not None else None)


def told(inputs: FleetInputs, severity: str = "error") -> list[str]:
    return [f"{p.path}:{p.line}: {p.message}" for p in inputs.problems if p.severity == severity]


def test_every_mistake_of_a_member_cluster_is_told_at_its_line() -> None:
    bad = (CLUSTER.replace("gangDialect: ack", "gangDialect: slurm\n  resourceReservation: 'yes'")
           .replace('cpu: "8"', 'cpu: "lots"'))
    got = told(read({"clusters/c1.yaml": bad}))
    assert got == [
        "clusters/c1.yaml:5: spec.gangDialect 'slurm' is not one of ack, scheduler-plugins, "
        "volcano, kueue",
        "clusters/c1.yaml:6: spec.resourceReservation must be true or false, not 'yes'",
        "clusters/c1.yaml:8: spec.nodes[0].allocatable.cpu: 'lots' is not a Kubernetes quantity "
        f"({QUANTITY_FORM})",
        "clusters/c1.yaml:9: spec.nodes[1].allocatable.cpu: 'lots' is not a Kubernetes quantity "
        f"({QUANTITY_FORM})",
    ]


@pytest.mark.parametrize(("nodes", "said"), [
    ('  - {name: n1, allocatable: {cpu: "8"}}\n', [
        "clusters/c1.yaml:9: spec.nodes[2] gives node 'n1', the name spec.nodes[0] gives too: "
        "each node of a cluster has a name of its own (a node group's are its name, '-', and 0, "
        "1, ...); rename one"]),
    ('  - {name: Bad_Name, allocatable: {cpu: "8"}}\n', [
        "clusters/c1.yaml:9: spec.nodes[2].name 'Bad_Name' is not a valid name: at most 253 "
        "lower-case letters, digits, '-' and '.', starting and ending with a letter or digit"]),
    ('  - {name: g-1, allocatable: {cpu: "8"}}\n  nodeGroups:\n  - {name: g, count: 3, '
     'allocatable: {cpu: "8"}}\n', [
         "clusters/c1.yaml:11: spec.nodeGroups[0] gives node 'g-1', the name spec.nodes[2] "
         "gives too: each node of a cluster has a name of its own (a node group's are its "
         "name, '-', and 0, 1, ...); rename one"]),
    ('  nodeGroups:\n  - {name: g, count: 3, allocatable: {cpu: "8"}}\n', []),
    # (an entry left empty, null: the cluster's file was refused as "malformed")
    ('  - null\n  nodeGroups: [null]\n', [
        "clusters/c1.yaml:9: spec.nodes[2] must be a mapping (name, allocatable, labels, "
        "taints), not null",
        "clusters/c1.yaml:10: spec.nodeGroups[0] must be a mapping (name, count, allocatable, "
        "labels, taints), not null"]),
])
def test_a_node_named_twice_or_against_kubernetes_rules_is_an_error_at_its_entry(
        nodes: str, said: list[str]) -> None:
    """Two nodes of one name were read as two, and placements booked pods of
    two jobs on the one node their name gave; a node name Kubernetes refuses
    was taken. The cluster's file is read as it last was."""
    inputs = read({"clusters/c1.yaml": CLUSTER + nodes})
    assert told(inputs) == said
    assert [c.name for c in inputs.clusters] == ([] if said else ["c1"])


def test_a_policy_that_divides_or_selects_another_namespace_is_told_what_fleetq_does(
        ) -> None:
    """A Karmada policy that divides replicas by weight, with no Gang, was
    read as Gang, its jobs placed whole with no word; a PropagationPolicy
    whose selector names another namespace selected nothing, with no word;
    one in a namespace Kubernetes refuses was taken."""
    divided = POLICY.replace("placement: {replicaScheduling: {customSchedulingType: Gang}}",
                             "placement:\n    replicaScheduling:\n      "
                             "replicaSchedulingType: Divided\n      "
                             "replicaDivisionPreference: Weighted")
    assert divided != POLICY
    inputs = read({"policy.yaml": divided})
    assert told(inputs, "warning") == [
        "policy.yaml:7: ClusterPropagationPolicy everything: spec.placement.replicaScheduling "
        "says no customSchedulingType: Gang: fleetq places each job it selects whole on one "
        "member cluster all the same (its pods start together there, or none do), and divides "
        "no job over clusters; set customSchedulingType: Gang"]
    assert [p.name for p in inputs.policies] == ["everything"]
    assert told(read({"policy.yaml": POLICY}), "warning") == []
    # (no replicaScheduling at all: said so, with what to write; a policy of other kinds
    # alone is told it selects nothing, not of Gang)
    bare = POLICY.replace("  placement: {replicaScheduling: {customSchedulingType: Gang}}\n", "")
    assert told(read({"policy.yaml": bare}), "warning") == [
        "policy.yaml:4: ClusterPropagationPolicy everything: spec.placement has no "
        "replicaScheduling: fleetq places each job it selects whole on one member cluster all "
        "the same (its pods start together there, or none do), and divides no job over "
        "clusters; set replicaScheduling: {replicaSchedulingType: Divided, "
        "customSchedulingType: Gang}"]
    assert told(read({"policy.yaml": bare.replace("batch/v1, kind: Job", "apps/v1, kind: "
                                                  "Deployment")}), "warning") == [
        "policy.yaml:5: ClusterPropagationPolicy everything: spec.resourceSelectors[0] selects "
        "apps/v1 Deployment, which is no job kind fleetq reads (batch/v1 Job, kubeflow.org/v1 "
        "MPIJob, kubeflow.org/v1 PyTorchJob, kubeflow.org/v2beta1 MPIJob, ray.io/v1 RayJob): it "
        "selects nothing"]
    own = POLICY.replace("kind: ClusterPropagationPolicy", "kind: PropagationPolicy").replace(
        "{name: everything}", "{name: everything, namespace: team-a}")
    other = own.replace("kind: Job}]", "kind: Job, namespace: team-b}]")
    assert other != own
    assert told(read({"policy.yaml": other}), "warning") == [
        "policy.yaml:5: PropagationPolicy team-a/everything: spec.resourceSelectors[0] names "
        "namespace team-b, but a PropagationPolicy selects jobs of its own namespace (team-a) "
        "only: it selects nothing; use a ClusterPropagationPolicy, or move the policy to team-b"]
    assert told(read({"policy.yaml": own.replace("kind: Job}]", "kind: Job, namespace: "
                                                 "team-a}]")}), "warning") == []
    bad = read({"policy.yaml": own.replace("namespace: team-a", "namespace: Team_A")})
    assert told(bad) == ["policy.yaml:3: metadata.namespace 'Team_A' is not a valid namespace "
                         "name: at most 63 lower-case letters, digits and '-', starting and "
                         "ending with a letter or digit"]
    assert bad.policies == []


PRIORITY_CLASS = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: normal}
value: 100
globalDefault: true
"""


@pytest.mark.parametrize(("path", "text", "said"), [
    ("policy.yaml", POLICY + "  suspension: []\n",
     ["policy.yaml:7: spec.suspension must be a mapping, not a list []"]),
    ("policy.yaml", POLICY.replace("placement: {", "placement: []\n  x: {"),
     ["policy.yaml:6: spec.placement must be a mapping, not a list []",
      "policy.yaml:7: spec.x is not a field of ClusterPropagationPolicy"]),
    ("policy.yaml", POLICY.replace("kind: ClusterPropagationPolicy", "kind: PropagationPolicy")
     .replace("{name: everything}", "{name: everything, namespace: []}"),
     ["policy.yaml:3: metadata.namespace must be a string, not a list []"]),
    ("clusters/c1.yaml", CLUSTER.replace("gangDialect: ack", 'gangDialect: ""'),
     ["clusters/c1.yaml:5: spec.gangDialect '' is not one of ack, scheduler-plugins, volcano, "
      "kueue"]),
    ("clusters/c1.yaml", CLUSTER.replace("gangDialect: ack", "gangDialect: {}"),
     ["clusters/c1.yaml:5: spec.gangDialect must be a string, not a mapping {}"]),
    ("clusters/c1.yaml", CLUSTER.replace("  nodes:\n", "  nodes: 5\n  x:\n"),
     ["clusters/c1.yaml:6: spec.nodes must be a list, not a number 5",
      "clusters/c1.yaml:7: spec.x is not a field of MemberCluster"]),
    # (each mistake told at once: a wrong type beside the builder's own)
    ("clusters/c1.yaml", CLUSTER.replace("gangDialect: ack", "gangDialect: slurm")
     .replace('  - {name: n2, allocatable: {cpu: "8", memory: 32Gi}}', "  - 5"),
     ["clusters/c1.yaml:5: spec.gangDialect 'slurm' is not one of ack, scheduler-plugins, "
      "volcano, kueue",
      "clusters/c1.yaml:8: spec.nodes[1] must be a mapping, not a number 5"]),
    ("priorityclasses.yaml", PRIORITY_CLASS.replace("globalDefault: true",
                                                    "globalDefault: 'false'"),
     ["priorityclasses.yaml:5: globalDefault must be true or false, not a string 'false'"]),
    ("fleet.yaml", FLEET.replace("placementStrategy: binpack", "placementStrategy: []"),
     ["fleet.yaml:5: spec.placementStrategy must be a string, not a list []"]),
    ("fleet.yaml", FLEET.replace("placementStrategy: binpack", "stateBranch: []")
     .replace("preemption: Never", "preemption: []"),
     ["fleet.yaml:5: spec.stateBranch must be a branch name (a string)",
      "fleet.yaml:8: spec.quotas.root/a.preemption must be a string, not a list []"]),
])
def test_a_field_of_the_wrong_type_is_an_error_not_taken_for_unset(
        path: str, text: str, said: list[str]) -> None:
    """``suspension: []`` took the policy's jobs out of their queues,
    ``gangDialect: ""`` rendered a volcano cluster's jobs for ack, ``namespace:
    []`` moved a policy to default, ``globalDefault: "false"`` dropped the
    jobs of the default class to priority 0: each read as if unset, with no
    word. ``nodes: 5`` was told as a Python error."""
    files = {"policy.yaml": POLICY, path: text}
    got = [t.split(": did you mean")[0].split(" (the fields of")[0] for t in told(read(files))]
    assert got == said


def test_a_node_named_by_a_number_is_taken_and_one_named_true_is_not() -> None:
    numbered = read({"clusters/c1.yaml": CLUSTER.replace("{name: n1,", "{name: 10,")})
    assert told(numbered) == [] and numbered.clusters[0].nodes[0].name == "10"
    assert told(read({"clusters/c1.yaml": CLUSTER.replace("{name: n1,", "{name: true,")})) == [
        "clusters/c1.yaml:7: spec.nodes[0].name must be a name, not a boolean true"]


def test_a_misspelt_placement_strategy_is_told_with_the_one_meant() -> None:
    got = told(read({"fleet.yaml": FLEET.replace("binpack", "binpak"), "policy.yaml": POLICY}))
    assert got == ["fleet.yaml:5: spec.placementStrategy: placement strategy 'binpak' is not "
                   "binpack or spread (did you mean binpack?)"], got


def test_the_fields_a_job_with_mistakes_does_not_have_are_told_beside_them() -> None:
    """``imag:`` for ``image:``: the job was told "image is missing" alone, and
    the misspelt field, the one to fix, only once that was fixed. The same
    from a file of jobs read again (the cache replays its outcomes)."""
    bad = JOB.replace("image: busybox", "imag: busybox") \
        .replace("restartPolicy: Never", "restartPolicy: Never\n      nodeSelectr: {a: b}")
    store = ParsedJobs()
    for _ in range(2):  # (the second from the store, as from the cache)
        inputs = read_fleet([source("jobs/j1.yaml", bad)], store)
        assert store.jobs, "read from the store"
        assert told(inputs) == [
            "jobs/j1.yaml:7: spec.template.spec.containers[0].image is missing: the API server "
            "refuses a container with no image; fix the manifest"], told(inputs)
        warned = told(inputs, "warning")
        assert [w.split(": ", 2)[:2] for w in warned] == [
            ["jobs/j1.yaml:7", "spec.template.spec.containers[0].imag"],
            ["jobs/j1.yaml:9", "spec.template.spec.nodeSelectr"]], warned
        assert "image was meant" in warned[0] and "nodeSelector was meant" in warned[1], warned


def test_every_mistake_of_fleet_yaml_is_told_at_its_line() -> None:
    bad = (FLEET.replace("binpack", "fastest").replace("StrictFIFO", "Sometimes")
           .replace("Never", "Always"))
    got = told(read({"fleet.yaml": bad, "policy.yaml": POLICY}))
    assert got == [
        "fleet.yaml:5: spec.placementStrategy: placement strategy 'fastest' is not binpack "
        "or spread",
        "fleet.yaml:8: spec.quotas.root/a.preemption 'Always' is not one of Never, "
        "LowerPriority, LowerOrNewerEqualPriority",
        "fleet.yaml:8: spec.quotas.root/a.queueStrategy 'Sometimes' is not one of StrictFIFO, "
        "Block, BestEffortFIFO, NonBlock",
    ]


def test_a_state_branch_that_is_no_branch_name_is_an_error_at_its_line() -> None:
    text = FLEET.replace("spec:\n", "spec:\n  stateBranch: fleetq state\n")
    assert told(read({"fleet.yaml": text, "policy.yaml": POLICY})) == [
        "fleet.yaml:5: spec.stateBranch 'fleetq state' is not a valid branch name "
        "(git check-ref-format); use e.g. fleetq/state"]


def test_a_default_policy_that_names_no_policy_is_an_error_at_its_line() -> None:
    assert told(read({"fleet.yaml": FLEET, "policy.yaml": POLICY})) == []
    got = told(read({"fleet.yaml": FLEET}))
    assert got == ["fleet.yaml:6: spec.defaultPolicy names 'everything', which is no "
                   "PropagationPolicy or ClusterPropagationPolicy of the fleet; name one "
                   "(namespace/name for a PropagationPolicy) or remove it"]


DEFINITIONS = {  # kind -> (a document of it, how ``FleetInputs`` holds it)
    "ConfigMap": ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: code, namespace: ml}\n"
                  "data: {run.py: 'X'}\n", lambda i: {k: d.manifest["data"]["run.py"]
                                                     for k, d in i.dependencies.items()}),
    "Secret": ("apiVersion: v1\nkind: Secret\nmetadata: {name: token, namespace: ml}\n"
               "stringData: {token: 'X'}\n", lambda i: {k: d.manifest["stringData"]["token"]
                                                       for k, d in i.dependencies.items()}),
    "PersistentVolumeClaim": (
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: ml}\n"
        "spec: {storageClassName: X}\n", lambda i: {
            k: d.manifest["spec"]["storageClassName"] for k, d in i.dependencies.items()}),
    "ServiceAccount": ("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: runner, "
                       "namespace: ml, labels: {v: X}}\n", lambda i: {
                           k: d.manifest["metadata"]["labels"]["v"]
                           for k, d in i.dependencies.items()}),
    "MemberCluster": (CLUSTER.replace("gangDialect: ack", "gangDialect: X"),
                      lambda i: {c.name: c.gang_dialect for c in i.clusters}),
    "PropagationPolicy": (POLICY.replace("ClusterPropagationPolicy", "PropagationPolicy")
                          .replace("spec:\n", "spec:\n  priority: X\n"),
                          lambda i: {p.ref: p.priority for p in i.policies}),
    "ClusterPropagationPolicy": (POLICY.replace("spec:\n", "spec:\n  priority: X\n"),
                                 lambda i: {p.ref: p.priority for p in i.policies}),
    "PriorityClass": ("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
                      "metadata: {name: high}\nvalue: X\n", lambda i: i.priority_classes),
    "WorkloadPriorityClass": ("apiVersion: kueue.x-k8s.io/v1beta1\nkind: WorkloadPriorityClass"
                              "\nmetadata: {name: urgent}\nvalue: X\n",
                              lambda i: i.workload_priority_classes),
}
DIALECTS = {"1": "volcano", "2": "kueue"}  # (X, for a MemberCluster: one of its dialects)


def definition(kind: str, x: str) -> str:
    return DEFINITIONS[kind][0].replace("X", DIALECTS[x] if kind == "MemberCluster" else x)


def held(kind: str, inputs: FleetInputs) -> list[str]:
    back = {dialect: x for x, dialect in DIALECTS.items()}
    return [back.get(str(v), str(v)) for v in DEFINITIONS[kind][1](inputs).values()]


class Trees:
    """A ``History``: the source trees the state was made from, newest first."""

    def __init__(self, *trees: dict[str, str]) -> None:
        self.trees = trees

    def blobs(self, path: str, /) -> list[str | None]:
        return [source(path, t[path]).blob if path in t else None for t in self.trees]

    def version(self, path: str, blob: str, /) -> SourceFile:
        return next(got for t in self.trees if path in t
                    and (got := source(path, t[path])).blob == blob)

    def __call__(self, path: str, blob: str, /) -> Iterator[SourceFile]:
        seen = {blob}
        for tree in self.trees:
            if path in tree and (got := source(path, tree[path])).blob not in seen:
                seen.add(got.blob)
                yield got


def read_after(files: dict[str, str], *trees: dict[str, str]) -> FleetInputs:
    return read_fleet([source(p, t) for p, t in files.items()], last_good=Trees(*trees))


@pytest.mark.parametrize("kind", list(DEFINITIONS))
def test_an_object_defined_in_two_files_counts_in_neither_when_nothing_is_known_before(
        kind: str) -> None:
    """No state (the first reconcile, ``fleetq validate``): which file's names
    sort first must not decide; each place is an error naming the other, and
    the object is left out."""
    files = {"defs/b.yaml": definition(kind, "1"), "defs/a.yaml": definition(kind, "2")}
    for inputs in (read(files), read_after(files)):
        got = told(inputs)
        assert len(got) == 2, got
        assert got[0].startswith("defs/a.yaml:1: ") and "also defined at defs/b.yaml:1" in got[0]
        assert got[1].startswith("defs/b.yaml:1: ") and "also defined at defs/a.yaml:1" in got[1]
        assert all("none does until all but one are removed or renamed (in defs/a.yaml, "
                   "defs/b.yaml)" in g for g in got)
        assert held(kind, inputs) == []


@pytest.mark.parametrize("kind", list(DEFINITIONS))
def test_a_new_file_defining_an_object_again_takes_nothing_over(kind: str) -> None:
    """The file that defined it in the state's source keeps it; the new one
    (sorting first) is left out, the error on it naming both places. And so
    on the next reconcile, where both were in the state's source."""
    before = {"defs/b.yaml": definition(kind, "1"), "jobs/j1.yaml": JOB}
    files = {**before, "defs/a.yaml": definition(kind, "2")}
    for inputs in (read_after(files, before), read_after(files, files, before)):
        got = told(inputs)
        assert got == [f"defs/a.yaml:1: {got[0].split(': ', 1)[1].split(' is also')[0]} is "
                       f"also defined at defs/b.yaml:1, which defined it before this file did; "
                       f"the fleet goes on with that one, and without this file, until one of "
                       f"the two is removed or renamed"], got
        assert held(kind, inputs) == ["1"]
        assert "defs/a.yaml" in inputs.broken_paths and "defs/a.yaml" in inputs.other_files
        assert [str(k) for k in inputs.jobs] == ["Job default/j1"]
    # Nothing earlier knows either: none counts.
    assert held(kind, read_after(files, files)) == []


def test_a_changed_file_defining_an_object_again_is_read_as_it_last_was() -> None:
    """A file that held something else defines the ConfigMap of another: it is
    read in its last version that does not (its jobs as they were too)."""
    code = definition("ConfigMap", "1")
    mine = JOB + "---\n" + definition("ConfigMap", "1").replace("name: code", "name: mine")
    before = {"jobs/code.yaml": code, "jobs/aa.yaml": mine}
    changed = mine.replace("name: mine", "name: code").replace(": '1'}", ": '2'}").replace(
        'cpu: "1"', 'cpu: "2"')
    files = {**before, "jobs/aa.yaml": changed}
    inputs = read_after(files, before)
    assert sorted((k[2], d.path) for k, d in inputs.dependencies.items()) == [
        ("code", "jobs/code.yaml"), ("mine", "jobs/aa.yaml")]
    assert held("ConfigMap", inputs) == ["1", "1"]
    was = source("jobs/aa.yaml", mine).blob
    assert told(inputs) == [
        f"jobs/aa.yaml:{changed.splitlines().index('kind: ConfigMap')}: ConfigMap ml/code is "
        f"also defined at jobs/code.yaml:1, which defined it before this file did; the fleet "
        f"goes on with that one, and with this file as it last was without it (blob "
        f"{was[:12]}), until one of the two is removed or renamed"]
    job, = inputs.jobs.values()
    assert job.job.requests["cpu"] == 1000  # (as it last was)


def test_a_second_global_default_priority_class_is_an_error_and_the_first_stays() -> None:
    """Kubernetes admits one globalDefault PriorityClass: a second (another
    name) is an error on the new file; the default priority stays; with
    nothing known before, neither gives it."""
    normal = ("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: normal}"
              "\nvalue: 10\nglobalDefault: true\n")
    before = {"zz/normal.yaml": normal}
    files = {**before, "aa/team.yaml": normal.replace("normal", "team").replace("10", "500")}
    inputs = read_after(files, before)
    assert inputs.default_priority == 10 and inputs.priority_classes == {"normal": 10}
    assert told(inputs) == [
        "aa/team.yaml:5: PriorityClass team is globalDefault, as PriorityClass normal at "
        "zz/normal.yaml:5 is, which was before this file was: Kubernetes admits one "
        "globalDefault PriorityClass; the fleet goes on with that one, and without this file, "
        "until one of the two is removed or renamed"]
    alone = read(files)
    assert alone.default_priority == 0 and alone.priority_classes == {"normal": 10, "team": 500}
    assert told(alone) == [
        "aa/team.yaml:5: PriorityClass team is globalDefault, as is PriorityClass normal at "
        "zz/normal.yaml:5: Kubernetes admits one globalDefault PriorityClass, so none gives the "
        "default priority until all but one say globalDefault: false (in aa/team.yaml, "
        "zz/normal.yaml)",
        "zz/normal.yaml:5: PriorityClass normal is globalDefault, as is PriorityClass team at "
        "aa/team.yaml:5: Kubernetes admits one globalDefault PriorityClass, so none gives the "
        "default priority until all but one say globalDefault: false (in aa/team.yaml, "
        "zz/normal.yaml)"]


def test_an_object_defined_twice_in_one_file_is_a_file_that_does_not_build() -> None:
    twice = CLUSTER + "---\n" + CLUSTER.replace("n1", "m1")
    inputs = read({"clusters/c1.yaml": twice}, {"clusters/c1.yaml": [CLUSTER]})
    assert [c.name for c in inputs.clusters] == ["c1"]
    assert [n.name for n in inputs.clusters[0].nodes] == ["n1", "n2"]
    assert len(told(inputs)) == 2 and len(told(inputs, "warning")) == 1


def test_a_capability_that_names_no_job_kind_is_a_warning_at_its_line() -> None:
    text = CLUSTER.replace("gangDialect: ack", "gangDialect: ack\n  capabilities: "
                           "[batch/Job, kubeflow.org/PyTorchJobs]")
    inputs = read({"clusters/c1.yaml": text})
    assert told(inputs) == []
    assert told(inputs, "warning") == [
        "clusters/c1.yaml:6: capability 'kubeflow.org/PyTorchJobs' names no job kind fleetq "
        "reads (one of batch/Job, kubeflow.org/MPIJob, kubeflow.org/PyTorchJob, "
        "ray.io/RayJob); no job can use it"]


@pytest.mark.parametrize("nodes", ["", "  nodes: []\n", "  nodeGroups:\n  - {name: g, count: 0}\n"])
def test_a_cluster_that_declares_no_nodes_is_a_warning(nodes: str) -> None:
    """validate passed it, and a job pinned there waited, told that "no node
    has the labels of the main pods' " (a sentence cut short)."""
    text = CLUSTER.split("  nodes:")[0] + nodes
    inputs = read({"clusters/c1.yaml": text})
    assert told(inputs) == [] and [c.name for c in inputs.clusters] == ["c1"]
    assert told(inputs, "warning") == [
        "clusters/c1.yaml:4: MemberCluster c1 declares no nodes (spec.nodes and "
        "spec.nodeGroups give none): fleetq places no job on it; list its nodes, or node "
        "groups with their count"]
    assert told(read({"clusters/c1.yaml": CLUSTER}), "warning") == []


def test_a_file_that_defines_the_fleet_and_breaks_is_read_in_its_last_good_version() -> None:
    typo = CLUSTER.replace('cpu: "8"', 'cpu: "lots"', 1)
    unparsable = CLUSTER + "  - {name: n3\n"
    files = {"clusters/c1.yaml": typo, "policy.yaml": POLICY, "jobs/j1.yaml": JOB}
    inputs = read(files, {"clusters/c1.yaml": [unparsable, typo, CLUSTER]})
    assert [c.name for c in inputs.clusters] == ["c1"]
    assert [n.allocatable["cpu"] for n in inputs.clusters[0].nodes] == [8000, 8000]
    assert told(inputs) == ["clusters/c1.yaml:7: spec.nodes[0].allocatable.cpu: 'lots' is not "
                            f"a Kubernetes quantity ({QUANTITY_FORM})"]
    good = source("clusters/c1.yaml", CLUSTER).blob
    assert told(inputs, "warning") == [
        f"clusters/c1.yaml:0: the fleet goes on with this file's last good version "
        f"(blob {good[:12]}) until it is fixed"]
    assert inputs.other_files["clusters/c1.yaml"] == source("clusters/c1.yaml", typo).blob
    assert [str(k) for k in inputs.jobs] == ["Job default/j1"]
    assert not inputs.broken_paths and not inputs.unbuilt

    # None good: the file as it is (its cluster is not in the fleet), nothing else changed.
    alone = read(files, {"clusters/c1.yaml": [unparsable]})
    assert alone.clusters == [] and told(alone, "warning") == []
    assert [str(k) for k in alone.jobs] == ["Job default/j1"]


def test_a_job_file_that_breaks_is_not_read_in_an_earlier_version() -> None:
    """Its jobs keep their last good placements instead (the cycle's
    ``broken_paths``); its earlier versions are not even read."""
    broken = JOB.replace("metadata: {name: j1,", "metadata: {name: j1: x,")
    asked: list[str] = []
    inputs = read({"jobs/j1.yaml": broken}, {"jobs/j1.yaml": [JOB]}, asked)
    assert asked == [] and inputs.jobs == {} and "jobs/j1.yaml" in inputs.broken_paths
    # One that does not say it holds jobs only: its last version does, so it is a job file.
    inputs = read({"jobs/j1.yaml": "{[\n"}, {"jobs/j1.yaml": [JOB]}, asked)
    assert asked == ["jobs/j1.yaml"] and inputs.jobs == {}
    assert "jobs/j1.yaml" in inputs.broken_paths


@pytest.mark.parametrize(("name", "namespace", "said"), [
    ("../../../evil", "default", "metadata.name '../../../evil' is not a valid name"),
    ("sub/dir", "default", "metadata.name 'sub/dir' is not a valid name"),
    ("Bad_Name.With..Dots", "default", "metadata.name 'Bad_Name.With..Dots' is not a valid"),
    ("c" * 64, "default", f"metadata.name '{'c' * 64}' is not a valid name: at most 63"),
    (5, "default", "metadata.name must be a string, not 5; quote it"),
    ("x" * 254, "default", f"metadata.name '{'x' * 254}' is not a valid name"),
    ("fine", "../etc", "metadata.namespace '../etc' is not a valid namespace name"),
    ("fine", "a.b", "metadata.namespace 'a.b' is not a valid namespace name"),
])
def test_a_job_named_against_kubernetes_rules_is_invalid_at_its_line(
        name: str | int, namespace: str, said: str) -> None:
    """Its name and namespace name its file on the state branch: a '..' or a
    '/' there made a tree git refuses to check out (no cluster could sync)."""
    text = JOB.replace("metadata: {name: j1, namespace: default}",
                       f"metadata: {{name: {name!r}, namespace: {namespace!r}}}")
    inputs = read({"jobs/j.yaml": text, "jobs/ok.yaml": JOB.replace("j1", "ok.name-2")})
    assert [str(k) for k in inputs.jobs] == ["Job default/ok.name-2"]
    assert [bad.key.name for bad in inputs.invalid] == [
        name if isinstance(name, str) else "<unnamed:jobs/j.yaml#0>"]
    assert len(told(inputs)) == 1 and told(inputs)[0].startswith(f"jobs/j.yaml:3: {said}")


@pytest.mark.parametrize(("text", "said"), [
    (CLUSTER.replace("name: c1", "name: ../c1"), "clusters/x.yaml:3: metadata.name '../c1'"),
    (CLUSTER.replace("name: c1", "name: 5"),
     "clusters/x.yaml:3: metadata.name must be a string, not 5; quote it"),
    (CLUSTER.replace("name: c1", f"name: {'c' * 64}"),  # (the value of a label of its jobs)
     f"clusters/x.yaml:3: metadata.name '{'c' * 64}' is not a valid name: at most 63"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a/b, namespace: default}\n",
     "clusters/x.yaml:3: metadata.name 'a/b'"),
    ("apiVersion: v1\nkind: Namespace\nmetadata: {name: ..}\n",
     "clusters/x.yaml:3: metadata.name '..' is not a valid namespace name"),
])
def test_other_objects_named_against_kubernetes_rules_are_errors(text: str, said: str) -> None:
    got = told(read({"clusters/x.yaml": text}))
    assert len(got) == 1 and got[0].startswith(said), got


QUOTA_TREE = quota_tree_yaml('{cpu: "8"}', """\
    - name: a
      namespaces: [default]
      max: {cpu: "8"}
""")


@pytest.mark.parametrize("name", ["Team A", "q" * 64, "-a", "a/b", "ü"])
def test_a_quota_name_that_cannot_be_a_label_value_is_an_error(name: str) -> None:
    """Its jobs carry it as the value of the quota label (and kueue's queue
    label): a cluster would refuse every one of them, when they were admitted."""
    inputs = read({"quota.yaml": QUOTA_TREE.replace("name: a", f"name: {name!r}"),
                   "jobs/j.yaml": JOB})
    assert told(inputs) == [
        f"quota.yaml:10: spec.root.children[0].name {name!r} is not a valid quota name (its "
        f"jobs carry it as the value of label quota.scheduling.alibabacloud.com/name): at most "
        f"63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit"]
    assert inputs.tree is None and "quota.yaml" in inputs.broken_paths
    fine = read({"quota.yaml": QUOTA_TREE.replace("name: a", "name: Team_A.1")})
    assert told(fine) == [] and fine.tree is not None


def test_a_quota_resource_named_without_its_domain_is_warned_of() -> None:
    """``gpu: 24`` for ``nvidia.com/gpu``: no job requests ``gpu``, so the max
    limited nothing, with no word. It is warned of at its line (an error would
    break a tree that worked, and with no earlier version, hold every job).
    The names pods request, and names with a domain, are not."""
    text = quota_tree_yaml('{cpu: "8", nvidia.com/gpu: "8"}', """\
    - name: a
      namespaces: [default]
      max: {cpu: "8", gpu: "4"}
""")
    inputs = read({"quota.yaml": text, "jobs/j.yaml": JOB})
    assert told(inputs) == [] and told(inputs, "warning") == [
        "quota.yaml:12: spec.root.children[0].max.gpu: 'gpu' is no resource a job asks for "
        "(nvidia.com/gpu?): no request counts against it, so it limits nothing; name it as "
        "pods request it: cpu, memory, ephemeral-storage, pods, hugepages-<size>, or with its "
        "domain, such as nvidia.com/gpu or kube-queue/max-jobs"]
    assert inputs.tree is not None and not inputs.broken_paths
    fine = read({"quota.yaml": text.replace('gpu: "4"}', 'nvidia.com/gpu: "4", pods: "9", '
                                                         'hugepages-2Mi: 1Gi, '
                                                         'ephemeral-storage: 1Ti, '
                                                         'memory: 1Ti, kube-queue/max-jobs: '
                                                         '"3"}')})
    assert told(fine) == told(fine, "warning") == [] and fine.tree is not None


def test_quota_limits_that_do_not_add_up_are_told_at_the_entry_to_fix() -> None:
    """A min above max, children's min above their parent's and a root whose
    min is not its max were told at the quota's name line."""
    text = quota_tree_yaml('{cpu: "8", memory: 8Gi}', """\
    - name: a
      namespaces: [default]
      min:
        cpu: "6"
      max:
        memory: 4Gi
        cpu: "4"
    - name: b
      namespaces: [other]
      min: {cpu: "4"}
""").replace('    max: {cpu: "8", memory: 8Gi}', '    max:\n      cpu: "8"\n      memory: 9Gi')
    assert text.splitlines()[6] == '    min: {cpu: "8", memory: 8Gi}'
    assert text.splitlines()[17] == '        cpu: "4"'
    assert told(read({"quota.yaml": text})) == [
        "quota.yaml:7: quota root: children's min cpu add up to 10, more than its min 8; lower "
        "the children's min or raise root's",
        "quota.yaml:7: root quota: min must equal max (both are the fleet's total); min {cpu: "
        "8, memory: 8Gi} vs max {cpu: 8, memory: 9Gi}",
        "quota.yaml:18: quota root/a: min cpu 6 is more than max 4; min must be <= max"]


def test_a_quota_tree_tells_the_rules_it_breaks_with_its_mistakes_of_form() -> None:
    """A min above max was told only once a bad quantity elsewhere was fixed:
    each fix of a quota brought up the next."""
    text = quota_tree_yaml('{cpu: "8"}', """\
    - name: a
      namespaces: [default]
      min:
        cpu: lots
    - name: b
      namespaces: [other]
      min:
        cpu: "3"
      max:
        cpu: "2"
""")
    inputs = read({"quota.yaml": text, "jobs/j1.yaml": JOB}, {"quota.yaml": [QUOTA_TREE]})
    assert told(inputs) == [
        f"quota.yaml:13: spec.root.children[0].min.cpu: 'lots' is not a Kubernetes quantity "
        f"({QUANTITY_FORM})",
        "quota.yaml:19: quota root/b: min cpu 3 is more than max 2; min must be <= max"]
    assert told(inputs, "warning") == [
        f"quota.yaml:0: the fleet goes on with this file's last good version "
        f"(blob {source('quota.yaml', QUOTA_TREE).blob[:12]}) until it is fixed"]
    assert inputs.tree is not None and inputs.tree.nodes["root/a"].max == {"cpu": 8000}
    fixed = read({"quota.yaml": text.replace("cpu: lots", 'cpu: "1"')})
    assert told(fixed) == [
        "quota.yaml:19: quota root/b: min cpu 3 is more than max 2; min must be <= max"]


def test_a_quota_namespace_that_is_no_namespace_name_is_an_error_at_its_line() -> None:
    """A mapping was read as its text ("{'a': 'b'}"), a name Kubernetes
    refuses as it was: no job could ever bind there, with no word."""
    text = quota_tree_yaml('{cpu: "8"}', """\
    - name: a
      namespaces:
      - {team: a}
      - Team_A
      - default
""")
    inputs = read({"quota.yaml": text, "jobs/j1.yaml": JOB}, {"quota.yaml": [QUOTA_TREE]})
    assert told(inputs) == [
        "quota.yaml:12: spec.root.children[0].namespaces[0] must be a namespace name, not "
        "{'team': 'a'}",
        "quota.yaml:13: spec.root.children[0].namespaces[1] 'Team_A' is not a valid namespace "
        "name: at most 63 lower-case letters, digits and '-', starting and ending with a letter "
        "or digit"]
    fixed = read({"quota.yaml": text.replace("      - {team: a}\n      - Team_A\n", "")})
    assert told(fixed) == [] and fixed.tree is not None
    assert fixed.tree.nodes["root/a"].namespaces == ("default",)


def test_a_min_that_leaves_out_cpu_or_memory_the_tree_limits_is_warned_of() -> None:
    """Left out of a min, a resource is 0 there: every job of the quota (each
    asks for memory) was above its min from the first, and never reclaimed
    what another quota borrowed, with no word from validate or explain."""
    text = quota_tree_yaml('{cpu: "16", memory: 64Gi}', """\
    - name: a
      namespaces: [a]
      min: {cpu: "8"}
      max: {cpu: "16"}
    - name: b
      namespaces: [b]
      min: {cpu: "8", memory: 32Gi}
    - name: c
      namespaces: [c]
      max: {cpu: "4"}
""")
    inputs = read({"quota.yaml": text})
    assert told(inputs) == [] and inputs.tree is not None
    assert told(inputs, "warning") == [
        "quota.yaml:12: quota root/a: its min guarantees cpu but names no memory, which quota "
        "root limits: left out, it is 0, so each of its jobs (every pod asks for memory) is "
        "above its min, reclaims nothing other quotas borrow, and its queue goes after those "
        "of quotas within their mins (its share, used/min, is above 1); give its min the "
        "memory it is guaranteed"]
    fixed = text.replace('min: {cpu: "8"}', 'min: {cpu: "8", memory: 0}')
    named = read({"quota.yaml": fixed})
    assert told(named, "warning") == []  # (0 written: what it is guaranteed, said)
    # fixed, with a mistake elsewhere: the fleet goes on with the version before, whose
    # warning, told at this version's line, would say the fix was not read
    broken = read({"quota.yaml": fixed.replace('min: {cpu: "8", memory: 32Gi}',
                                               'min: {cpu: "lots", memory: 32Gi}')},
                  {"quota.yaml": [text]})
    assert [w for w in told(broken, "warning") if "names no memory" in w] == []
    assert any("'lots' is not a Kubernetes quantity" in e for e in told(broken))


def test_a_rule_that_takes_a_quantity_not_read_is_left_out_for_that_resource() -> None:
    """A sum of mins with one of them (or the parent's) unreadable is no sum to
    tell: added up without it, or against a min of 0, it would be told wrongly;
    the rules on what was read are told beside the bad quantity."""
    text = quota_tree_yaml('{cpu: "8", memory: 8Gi}', """\
    - name: a
      min:
        cpu: lots
        memory: 6Gi
      children:
      - name: a1
        namespaces: [default]
        min:
          cpu: "2"
          memory: 7Gi
    - name: b
      namespaces: [other]
      min:
        cpu: "7"
        memory: 4Gi
      max:
        cpu: "6"
""")
    assert told(read({"quota.yaml": text})) == [
        "quota.yaml:7: quota root: children's min memory add up to 10Gi, more than its min "
        "8Gi; lower the children's min or raise root's",
        f"quota.yaml:12: spec.root.children[0].min.cpu: 'lots' is not a Kubernetes quantity "
        f"({QUANTITY_FORM})",
        "quota.yaml:13: quota root/a: children's min memory add up to 7Gi, more than its min "
        "6Gi; lower the children's min or raise root/a's",
        "quota.yaml:26: quota root/b: min cpu 7 is more than max 6; min must be <= max"]
    # (a min not a mapping: none of its resources is read)
    whole = text.replace("      min:\n        cpu: lots\n        memory: 6Gi\n",
                         "      min: lots\n")
    assert told(read({"quota.yaml": whole})) == [
        "quota.yaml:11: spec.root.children[0].min must be a mapping of resource names to "
        "quantities",
        "quota.yaml:24: quota root/b: min cpu 7 is more than max 6; min must be <= max"]
    # (a misspelt min is not a min of 0: the root's min not told as unlike its max)
    misspelt = text.replace("cpu: lots", 'cpu: "4"').replace("    min: {", "    mni: {")
    assert told(read({"quota.yaml": misspelt})) == [
        "quota.yaml:7: spec.root.mni is not a field of ElasticQuotaTree: did you mean "
        "spec.root.min?",
        "quota.yaml:13: quota root/a: children's min memory add up to 7Gi, more than its min "
        "6Gi; lower the children's min or raise root/a's",
        "quota.yaml:26: quota root/b: min cpu 7 is more than max 6; min must be <= max"]


def test_a_good_quota_tree_reads_as_before() -> None:
    """A file with no mistake: nothing told, and its tree used as it was read."""
    text = quota_tree_yaml('{cpu: "8", memory: 8Gi}', """\
    - name: a
      min: {cpu: "5", memory: 6Gi}
      children:
      - {name: a1, namespaces: [default], min: {cpu: "2", memory: 6Gi}, max: {cpu: "4"}}
    - name: b
      namespaces: [other]
      min: {cpu: "3", memory: 2Gi}
""")
    inputs = read({"quota.yaml": text})
    assert told(inputs) == [] and not inputs.broken_paths and inputs.tree is not None
    gi = 1000 << 30  # (in thousandths, as every quantity)
    assert {p: (n.min, n.max) for p, n in inputs.tree.nodes.items()} == {
        "root": ({"cpu": 8000, "memory": 8 * gi}, {"cpu": 8000, "memory": 8 * gi}),
        "root/a": ({"cpu": 5000, "memory": 6 * gi}, {}),
        "root/a/a1": ({"cpu": 2000, "memory": 6 * gi}, {"cpu": 4000}),
        "root/b": ({"cpu": 3000, "memory": 2 * gi}, {})}


def test_a_misspelt_field_of_the_quota_tree_is_an_error_and_its_last_good_version_kept() -> None:
    """A quota's ``max`` misspelt left the quota with no limit, its
    ``children`` misspelt dropped the quotas under it, both unseen; a field
    close to none (one of a newer API, say) is a warning, and ACK's
    ``attributes`` is a field of a quota."""
    text = quota_tree_yaml('{cpu: "8"}', """\
    - name: a
      namespace: [default]
      attributes: {resourceflavors: "flavor-a"}
      mxa: {cpu: "4"}
    - name: b
      namespaces: [other]
      colour: blue
      childern:
      - {name: c, mni: {cpu: "1"}}
""").replace("  root:\n", "  rot: {}\n  root:\n")
    inputs = read({"quota.yaml": text, "jobs/j1.yaml": JOB}, {"quota.yaml": [QUOTA_TREE]})
    assert told(inputs) == [
        "quota.yaml:5: spec.rot is not a field of ElasticQuotaTree: did you mean spec.root?",
        "quota.yaml:12: spec.root.children[0].namespace is not a field of ElasticQuotaTree: "
        "did you mean spec.root.children[0].namespaces?",
        "quota.yaml:14: spec.root.children[0].mxa is not a field of ElasticQuotaTree: did you "
        "mean spec.root.children[0].max?",
        "quota.yaml:18: spec.root.children[1].childern is not a field of ElasticQuotaTree: did "
        "you mean spec.root.children[1].children?",
        # (the quotas under a misspelt children: each mistake told at once)
        "quota.yaml:19: spec.root.children[1].childern[0].mni is not a field of "
        "ElasticQuotaTree: did you mean spec.root.children[1].childern[0].min?"]
    assert inputs.tree is not None and inputs.tree.nodes["root/a"].max == {"cpu": 8000}
    assert told(inputs, "warning") == [
        f"quota.yaml:0: the fleet goes on with this file's last good version "
        f"(blob {source('quota.yaml', QUOTA_TREE).blob[:12]}) until it is fixed"]
    fine = read({"quota.yaml": QUOTA_TREE.replace("      max:", "      attributes: {x: y}\n"
                                                  "      flavour: spot\n      max:")})
    assert told(fine) == [] and told(fine, "warning") == [
        "quota.yaml:13: spec.root.children[0].flavour is not a field of ElasticQuotaTree (the "
        "fields of a quota: name, namespaces, min, max, children, attributes); fleetq leaves "
        "it out"]


PYTORCHJOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: p1, namespace: default}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - {name: pytorch, image: x,
             resources: {requests: {cpu: "1", memory: 1Gi}, limits: {aliyun.com/gpu-mem: 8}}}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: pytorch, image: x,
             resources: {requests: {cpu: "2", nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: "1"}}}
          - {name: sidecar, image: x,
             resources: {requests: {cpu: 100m}}}
"""


def test_every_bad_quantity_of_a_job_is_told_at_its_line() -> None:
    """Only the first was told: each fix of a job brought up the next."""
    assert told(read({"jobs/p1.yaml": PYTORCHJOB})) == []
    text = (PYTORCHJOB.replace('cpu: "1", memory: 1Gi', 'cpu: "lots", memory: 1Gb')
            .replace("nvidia.com/gpu: 1", "nvidia.com/gpu: 1.5")
            .replace("cpu: 100m", "cpu: 1x"))
    inputs = read({"jobs/p1.yaml": text})
    form = f"is not a Kubernetes quantity ({QUANTITY_FORM}); fix the manifest"
    master = "spec.pytorchReplicaSpecs.Master.template.spec.containers[0].resources.requests"
    worker = "spec.pytorchReplicaSpecs.Worker.template.spec.containers"
    assert told(inputs) == [
        f"jobs/p1.yaml:12: {master}.cpu: 'lots' {form} (and 3 more mistake(s) of it, each "
        f"told at its line)",
        f"jobs/p1.yaml:12: {master}.memory: '1Gb' {form}",
        f"jobs/p1.yaml:19: {worker}[0].resources.requests.nvidia.com/gpu: 1500m is not a "
        f"whole number: Kubernetes takes no fraction of an extended resource such as "
        f"nvidia.com/gpu; fix the manifest",
        f"jobs/p1.yaml:21: {worker}[1].resources.requests.cpu: '1x' {form}"]
    bad, = inputs.invalid
    assert bad.line == 12 and len(bad.more) == 3
    fraction = PYTORCHJOB.replace("aliyun.com/gpu-mem: 8", "aliyun.com/gpu-mem: 0.5")
    assert told(read({"jobs/p1.yaml": fraction})) == [
        "jobs/p1.yaml:12: spec.pytorchReplicaSpecs.Master.template.spec.containers[0]."
        "resources.limits.aliyun.com/gpu-mem: 500m is not a whole number: Kubernetes takes no "
        "fraction of an extended resource such as aliyun.com/gpu-mem; fix the manifest"]


REFUSED_POD = """\
apiVersion: batch/v1
kind: Job
metadata: {name: j1, namespace: default}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: main, image: busybox}
      - {image: busybox}
      - {name: Side_Car, image: busybox}
      - {name: noimage}
      - name: greedy
        image: busybox
        resources:
          requests: {cpu: "4", memory: 1Gi, nvidia.com/gpu: 1}
          limits: {cpu: "2", memory: 1Gi, nvidia.com/gpu: 2}
      - name: gpu
        image: busybox
        resources: {requests: {nvidia.com/gpu: 1, memory: 1Gi}}
      initContainers:
      - {name: main, image: busybox}
"""


def test_a_pod_the_api_server_refuses_is_an_error_at_each_of_its_lines() -> None:
    """A job whose pods the API server refuses (Kubernetes' ValidatePodSpec)
    was admitted: it took its quota and its room, and never ran."""
    at = "spec.template.spec"
    rule = "at most 63 lower-case letters, digits and '-', starting and ending with a letter " \
           "or digit"
    inputs = read({"jobs/j.yaml": REFUSED_POD})
    assert told(inputs) == [
        f"jobs/j.yaml:10: {at}.containers[1].name is missing: the API server refuses a "
        f"container with no name; give it one ({rule}); fix the manifest (and 6 more "
        f"mistake(s) of it, each told at its line)",
        f"jobs/j.yaml:11: {at}.containers[2].name 'Side_Car' is not a valid container name: "
        f"{rule}; fix the manifest",
        f"jobs/j.yaml:12: {at}.containers[3].image is missing: the API server refuses a "
        f"container with no image; fix the manifest",
        f"jobs/j.yaml:16: {at}.containers[4].resources.requests.cpu: 4 is more than its limit, "
        f"2: the API server takes no request above its limit; fix the manifest",
        f"jobs/j.yaml:16: {at}.containers[4].resources.requests.nvidia.com/gpu: 1 differs from "
        f"its limit, 2: the API server takes a request of nvidia.com/gpu, which no node "
        f"overcommits, equal to its limit only; fix the manifest",
        f"jobs/j.yaml:20: {at}.containers[5].resources.requests.nvidia.com/gpu: 1 is requested "
        f"with no limit: the API server takes nvidia.com/gpu, which no node overcommits, only "
        f"with a limit equal to its request; set resources.limits.nvidia.com/gpu to 1; fix the "
        f"manifest",
        f"jobs/j.yaml:22: {at}.initContainers[0].name 'main' is the name of containers[0] too: "
        f"the API server refuses a pod whose containers share a name; fix the manifest"]
    assert not inputs.jobs
    fixed = (REFUSED_POD.replace("- {image: busybox}", "- {name: second, image: busybox}")
             .replace("Side_Car", "side-car")
             .replace("{name: noimage}", "{name: noimage, image: busybox}")
             .replace('cpu: "4"', 'cpu: "2"').replace("nvidia.com/gpu: 2", "nvidia.com/gpu: 1")
             .replace("{requests: {nvidia.com/gpu: 1, memory: 1Gi}}",
                      "{requests: {memory: 1Gi}, limits: {nvidia.com/gpu: 1}}"))
    assert told(read({"jobs/j.yaml": fixed})) == [
        f"jobs/j.yaml:22: {at}.initContainers[0].name 'main' is the name of containers[0] too: "
        f"the API server refuses a pod whose containers share a name; fix the manifest"]
    fixed = fixed[:fixed.rindex("{name: main")] + "{name: init, image: busybox}\n"
    assert told(read({"jobs/j.yaml": fixed})) == []
    # cpu and memory may be overcommitted: a request below its limit is taken
    below = fixed.replace('requests: {cpu: "2"', 'requests: {cpu: "1"')
    assert below != fixed and told(read({"jobs/j.yaml": below})) == []


RAYJOB = """apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: r
  namespace: team-a
spec:
  shutdownAfterJobFinishes: true
  rayClusterSpec:
    headGroupSpec:
      template:
        spec:
          containers: [{name: h, image: x, resources: {requests: {cpu: "1"}}}]
    workerGroupSpecs:
    - groupName: gpu
      replicas: 1
      template:
        spec:
          containers: [{name: w, image: x, resources: {requests: {cpu: "1"}}}]
    - NAME
      replicas: 1
      template:
        spec:
          containers: [{name: w, image: x, resources: {requests: {cpu: "1"}}}]
"""


MOUNTS = """\
apiVersion: batch/v1
kind: Job
metadata: {name: j1, namespace: default}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        resources: {requests: {gpu: 1}}
        volumeMounts:
        - {name: data, mountPath: /data}
        - {name: dhsm, mountPath: /dev/shm}
        - {name: data, mountPath: /data}
        - {name: data}
      volumes:
      - {name: data, emptyDir: {}}
      - {name: dshm, emptyDir: {medium: Memory}}
"""


def test_a_mount_or_a_resource_name_the_api_server_refuses_is_an_error_at_its_line() -> None:
    """A mount of a volume the pod does not have (``dhsm`` for ``dshm``), a
    resource named without its domain (``gpu``): the API server refuses the
    pod, and the job was admitted to a cluster where it never ran."""
    at = "spec.template.spec.containers[0]"
    assert told(read({"jobs/j.yaml": MOUNTS})) == [
        f"jobs/j.yaml:11: {at}.resources.requests.gpu: 'gpu' is not a resource a container "
        f"may ask for: the API server takes cpu, memory, ephemeral-storage, hugepages-<size>, "
        f"or an extended resource named with its domain, such as nvidia.com/gpu; fix the "
        f"manifest",
        f"jobs/j.yaml:14: {at}.volumeMounts[1].name 'dhsm' names no volume of the pod (its "
        f"spec.volumes): the API server refuses the pod; add the volume, or name one it has; "
        f"fix the manifest (and 3 more mistake(s) of it, each told at its line)",
        f"jobs/j.yaml:15: {at}.volumeMounts[2].mountPath '/data' is that of volumeMounts[0] "
        f"too: the API server refuses two mounts at one path of a container; fix the manifest",
        f"jobs/j.yaml:16: {at}.volumeMounts[3].mountPath is missing: the API server refuses a "
        f"volume mount with no path; fix the manifest"]
    fixed = (MOUNTS.replace("{gpu: 1}", "{nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 1}")
             .replace("dhsm", "dshm")
             .replace("        - {name: data, mountPath: /data}\n        - {name: data}\n", ""))
    assert told(read({"jobs/j.yaml": fixed})) == []
    twice = fixed.replace("name: dshm, emptyDir", "name: data, emptyDir")
    assert told(read({"jobs/j.yaml": twice})) == [
        "jobs/j.yaml:17: spec.template.spec.volumes[1].name 'data' is the name of volumes[0] "
        "too: the API server refuses a pod whose volumes share a name; fix the manifest"]


REFUSED_PYTORCHJOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: llama.v2, namespace: default}
spec:
  elasticPolicy: {maxRestarts: 3}
  pytorchReplicaSpecs:
    Master:
      replicas: 2
      template:
        spec:
          containers: [{name: trainer, image: x}]
    Launcher:
      template:
        spec:
          containers: [{name: pytorch, image: x}]
"""


def test_a_pytorchjob_the_training_operator_refuses_is_an_error_at_each_of_its_lines() -> None:
    """Its webhook refuses each of these (``validatePyTorchJob``)."""
    assert told(read({"jobs/p.yaml": REFUSED_PYTORCHJOB})) == [
        "jobs/p.yaml:3: metadata.name 'llama.v2' is not a name the training operator takes: its "
        "webhook refuses a PyTorchJob whose name is no DNS-1035 label (a lower-case letter "
        "first, then lower-case letters, digits and '-', a letter or digit last; no '.'); fix "
        "the manifest (and 4 more mistake(s) of it, each told at its line)",
        "jobs/p.yaml:5: spec.elasticPolicy needs spec.pytorchReplicaSpecs.Worker: the training "
        "operator's webhook refuses an elastic PyTorchJob with no workers; fix the manifest",
        "jobs/p.yaml:8: spec.pytorchReplicaSpecs.Master.replicas must be 1, not 2: a PyTorchJob "
        "has one master (the training operator's webhook refuses any other number); fix the "
        "manifest",
        "jobs/p.yaml:11: spec.pytorchReplicaSpecs.Master.template.spec.containers: none is named "
        "pytorch: the training operator runs the job in the container of that name, and its "
        "webhook refuses a replica without one; fix the manifest",
        "jobs/p.yaml:12: spec.pytorchReplicaSpecs.Launcher: a PyTorchJob's replica types are "
        "Master and Worker; the training operator's webhook refuses 'Launcher'; fix the "
        "manifest"]
    fixed = (REFUSED_PYTORCHJOB.replace("llama.v2", "llama-v2").replace("name: trainer",
                                                                         "name: pytorch")
             .replace("replicas: 2", "replicas: 1").replace("Launcher:", "Worker:"))
    assert told(read({"jobs/p.yaml": fixed})) == []
    started = read({"jobs/p.yaml": fixed.replace("llama-v2", "7b-sft")})
    assert [p.message.split(":")[0] for p in started.problems] == ["metadata.name '7b-sft' is "
                                                                   "not a name the training "
                                                                   "operator takes"]
    # a Master that does not say how many (1, as the CRD describes, but not defaulted:
    # the webhook, which no defaulting step comes before, refuses it)
    unsaid = read({"jobs/p.yaml": fixed.replace("      replicas: 1\n", "", 1)})
    assert told(unsaid) == [
        "jobs/p.yaml:7: spec.pytorchReplicaSpecs.Master.replicas is not set: write replicas: 1 "
        "(a PyTorchJob has one master, and the training operator's webhook refuses a Master "
        "that does not say so); fix the manifest"]
    assert not unsaid.jobs and [bad.key.name for bad in unsaid.invalid] == ["llama-v2"]


MPIJOB = """\
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: NAME, namespace: default}
spec:
  mpiReplicaSpecs:
    Launcher:
      replicas: 2
      restartPolicy: Always
      template: {spec: {containers: [{name: launcher, image: x}]}}
    Worker:
      replicas: 16
      restartPolicy: ExitCode
      template: {spec: {containers: [{name: worker, image: x}]}}
"""


def test_an_mpijob_the_mpi_operator_refuses_is_an_error_at_each_of_its_lines() -> None:
    """The MPI operator's controller validates a job before it makes a pod
    (``ValidateMPIJob``): such a job never starts. The name's worst case is
    its last worker's host name, ``NAME-worker-15``."""
    name = "m" * 54  # (63 characters with "-worker-15": one too many)
    text = MPIJOB.replace("NAME", name)
    assert told(read({"jobs/m.yaml": text})) == [
        f"jobs/m.yaml:3: metadata.name '{name}' makes the host name of its last worker "
        f"'{name}-worker-15', which must be a DNS label (at most 63 lower-case letters, digits "
        f"and '-', starting and ending with a letter or digit): the MPI operator refuses the "
        f"job; shorten the name; fix the manifest",
        "jobs/m.yaml:7: spec.mpiReplicaSpecs.Launcher.replicas must be 1, not 2: an MPIJob has "
        "one launcher (the MPI operator refuses any other number); fix the manifest (and 3 "
        "more mistake(s) of it, each told at its line)",
        "jobs/m.yaml:8: spec.mpiReplicaSpecs.Launcher.restartPolicy is 'Always': the MPI "
        "operator takes Never or OnFailure only; fix the manifest",
        "jobs/m.yaml:12: spec.mpiReplicaSpecs.Worker.restartPolicy is 'ExitCode': the MPI "
        "operator takes Never or OnFailure only; fix the manifest"]
    fixed = (text.replace(name, name[1:]).replace("replicas: 2", "replicas: 1")
             .replace("Always", "OnFailure").replace("ExitCode", "Never"))
    assert told(read({"jobs/m.yaml": fixed})) == []
    assert told(read({"jobs/m.yaml": fixed.replace("replicas: 16", "replicas: 1000")})) == [
        f"jobs/m.yaml:3: metadata.name '{name[1:]}' makes the host name of its last worker "
        f"'{name[1:]}-worker-999', which must be a DNS label (at most 63 lower-case letters, "
        f"digits and '-', starting and ending with a letter or digit): the MPI operator refuses "
        f"the job; shorten the name; fix the manifest"]
    alone = fixed[:fixed.index("    Launcher:")] + fixed[fixed.index("    Worker:"):]
    assert told(read({"jobs/m.yaml": alone})) == [
        "jobs/m.yaml:5: spec.mpiReplicaSpecs.Launcher is missing: the MPI operator runs an "
        "MPIJob from its launcher, and refuses one without; fix the manifest"]
    # the training operator's MPIJob (kubeflow.org/v1) is not the MPI operator's
    v1 = text.replace("kubeflow.org/v2beta1", "kubeflow.org/v1")
    assert told(read({"jobs/m.yaml": v1})) == []


@pytest.mark.parametrize(("path", "text", "said"), [
    ("jobs/j.yaml", JOB.replace("      restartPolicy: Never\n",
                                "      restartPolicy: Never\n      initContainers: 1\n"),
     "jobs/j.yaml:9: spec.template.spec.initContainers must be a list"),
    ("jobs/j.yaml", JOB.replace("{name: main, image: busybox,", "{name: main, image: busybox, "
                                "volumeMounts: [{name: [a], mountPath: /a}],"),
     "jobs/j.yaml:7: spec.template.spec.containers[0].volumeMounts[0].name ['a'] names no "
     "volume of the pod (its spec.volumes): the API server refuses the pod; add the volume, or "
     "name one it has"),
    ("jobs/p.yaml", REFUSED_PYTORCHJOB.replace("llama.v2", "llama")
     .replace("replicas: 2", "replicas: 1").replace("Launcher:", "Worker:")
     .replace("[{name: trainer, image: x}]", "1"),
     "jobs/p.yaml:11: spec.pytorchReplicaSpecs.Master.template.spec.containers must be a list "
     "of containers, not a number: write each as an item (- name: ...)"),
])
def test_a_pod_written_with_the_wrong_shape_is_told_and_stops_nothing_else(
        path: str, text: str, said: str) -> None:
    """Init containers that are no list, a mount named by a list, containers
    that are no list of a PyTorchJob's replica: each stopped the reading of
    the whole fleet with a Python error."""
    inputs = read({path: text, "jobs/other.yaml": JOB.replace("name: j1", "name: other")})
    assert told(inputs)[0].startswith(said), told(inputs)
    assert [s.job.key.name for s in inputs.jobs.values()] == ["other"]

@pytest.mark.parametrize(("policy", "said"), [
    ("", "jobs/j.yaml:6: spec.template.spec.restartPolicy is missing: the API server refuses a "
         "Job whose pods would restart Always, a pod's default; set it to Never or OnFailure"),
    ("      restartPolicy: Always\n", "jobs/j.yaml:8: spec.template.spec.restartPolicy is "
     "'Always': the API server takes a Job whose pods restart Never or OnFailure only"),
    ("      restartPolicy: OnFailure\n", None),
    ("      restartPolicy: Never\n", None),
])
def test_a_job_whose_pods_would_restart_always_is_an_error_at_its_line(
        policy: str, said: str | None) -> None:
    """The API server refuses such a Job: it was admitted, and never made."""
    text = JOB.replace("      restartPolicy: Never\n", policy)
    assert told(read({"jobs/j.yaml": text})) == ([f"{said}; fix the manifest"] if said else [])


@pytest.mark.parametrize(("name", "said"), [
    ("r" * 47, None),
    ("r" * 48, f"metadata.name '{'r' * 48}' is 48 characters long: KubeRay refuses a RayJob "
               f"named with more than 47 (it names the job's RayCluster, and that cluster's "
               f"Services, after it); shorten it"),
    ("ray.v2", "metadata.name 'ray.v2' is not a name KubeRay takes: it refuses a RayJob whose "
               "name is no DNS-1035 label (a lower-case letter first, then lower-case letters, "
               "digits and '-', a letter or digit last; no '.')"),
    ("2-ray", "metadata.name '2-ray' is not a name KubeRay takes: it refuses a RayJob whose "
              "name is no DNS-1035 label (a lower-case letter first, then lower-case letters, "
              "digits and '-', a letter or digit last; no '.')"),
])
def test_a_rayjob_name_kuberay_refuses_is_an_error_at_its_line(name: str,
                                                                said: str | None) -> None:
    """KubeRay validates a RayJob's name (``ValidateRayJobMetadata``)."""
    text = RAYJOB.replace("name: r\n", f"name: {name}\n").replace("NAME", "groupName: cpu")
    assert told(read({"jobs/r.yaml": text})) == (
        [f"jobs/r.yaml:4: {said}; fix the manifest"] if said else [])


@pytest.mark.parametrize(("lines", "said"), [
    ("  ttlSecondsAfterFinished: -1\n", "jobs/r.yaml:8: spec.ttlSecondsAfterFinished must be a "
     "whole number from 0 on, not -1: KubeRay refuses the job"),
    ("  activeDeadlineSeconds: 0\n", "jobs/r.yaml:8: spec.activeDeadlineSeconds must be a whole "
     "number from 1 on, not 0: KubeRay refuses the job"),
    ("  backoffLimit: '2'\n", "jobs/r.yaml:8: spec.backoffLimit must be a whole number from 0 "
     "on, not '2': KubeRay refuses the job"),
    ("  ttlSecondsAfterFinished: 60\n  shutdownAfterJobFinishes: false\n", "jobs/r.yaml:7: "
     "spec.ttlSecondsAfterFinished is 60 while spec.shutdownAfterJobFinishes is not true: "
     "KubeRay refuses to delete a cluster it keeps; set shutdownAfterJobFinishes: true, or "
     "remove the field"),
    ("  submissionMode: SidecarMode\n  submitterPodTemplate: {spec: {containers: [{name: s, "
     "image: x}]}}\n", "jobs/r.yaml:9: spec.submitterPodTemplate is not taken under "
     "submissionMode SidecarMode: KubeRay refuses the job (the head pod runs the submitter)"),
    ("  ttlSecondsAfterFinished: 60\n  activeDeadlineSeconds: 600\n  backoffLimit: 0\n", None),
])
def test_a_rayjob_spec_kuberay_refuses_is_an_error_at_its_line(lines: str,
                                                                said: str | None) -> None:
    """KubeRay validates a RayJob's spec before it makes its cluster
    (``ValidateRayJobSpec``): such a job would never start."""
    text = RAYJOB.replace("NAME", "groupName: cpu").replace(
        "  shutdownAfterJobFinishes: true\n", "  shutdownAfterJobFinishes: true\n" + lines)
    if "shutdownAfterJobFinishes: false" in lines:
        text = text.replace("  shutdownAfterJobFinishes: true\n", "", 1)
    assert told(read({"jobs/r.yaml": text})) == ([f"{said}; fix the manifest"] if said else [])


@pytest.mark.parametrize(("bounds", "said"), [
    ("minReplicas: 5\n      maxReplicas: 1\n", "jobs/r.yaml:21: spec.rayClusterSpec."
     "workerGroupSpecs[1].minReplicas is 5, above its maxReplicas 1: KubeRay refuses the job; "
     "lower minReplicas or raise maxReplicas"),
    ("minReplicas: 1\n      maxReplicas: 1\n", None),
    ("minReplicas: 5\n", None),  # (maxReplicas as the CRD defaults it: no bound)
])
def test_a_ray_worker_group_whose_min_is_above_its_max_is_an_error_at_its_line(
        bounds: str, said: str | None) -> None:
    """KubeRay refuses such a group (``ValidateRayClusterSpec``): the job was
    queued, and counted at its max, for a cluster that is never made."""
    text = RAYJOB.replace("    - NAME\n      replicas: 1\n",
                          "    - groupName: cpu\n      replicas: 1\n      " + bounds)
    assert "NAME" not in text
    assert told(read({"jobs/r.yaml": text})) == ([f"{said}; fix the manifest"] if said else [])


def test_a_sidecar_mode_rayjob_whose_head_restarts_is_an_error_at_its_line() -> None:
    text = RAYJOB.replace("NAME", "groupName: cpu").replace(
        "  shutdownAfterJobFinishes: true\n",
        "  shutdownAfterJobFinishes: true\n  submissionMode: SidecarMode\n").replace(
        "          containers: [{name: h,", "          restartPolicy: Always\n"
                                            "          containers: [{name: h,", 1)
    assert told(read({"jobs/r.yaml": text})) == [
        "jobs/r.yaml:13: spec.rayClusterSpec.headGroupSpec.template.spec.restartPolicy is "
        "'Always': under submissionMode SidecarMode KubeRay takes a head pod that restarts "
        "Never only; fix the manifest"]
    assert told(read({"jobs/r.yaml": text.replace("Always", "Never")})) == []

@pytest.mark.parametrize(("lines", "said"), [
    ("  submissionMode: InteractiveMode\n  backoffLimit: 2\n", "jobs/r.yaml:9: "
     "spec.backoffLimit is 2: KubeRay refuses retries under submissionMode InteractiveMode; "
     "set it to 0"),
    ("  submissionMode: InteractiveMode\n  backoffLimit: 0\n", None),
    ("  clusterSelector: {ray.io/cluster: ''}\n", "jobs/r.yaml:8: spec.clusterSelector names "
     "no cluster: KubeRay runs the job on the RayCluster its ray.io/cluster label names, and "
     "refuses it without one"),
    ("  runtimeEnvYAML: 'pip: [a'\n", "jobs/r.yaml:8: spec.runtimeEnvYAML does not read as "
     "YAML: KubeRay refuses the job; write the runtime environment as a YAML mapping (pip:, "
     "env_vars:, working_dir:, ...)"),
    ("  runtimeEnvYAML: '- requests'\n", "jobs/r.yaml:8: spec.runtimeEnvYAML is a list, not a "
     "mapping: KubeRay refuses the job; write the runtime environment as a YAML mapping (pip:, "
     "env_vars:, working_dir:, ...)"),
    ("  runtimeEnvYAML: |\n    pip: [requests]\n", None),
    # (KubeRay reads it with Go's YAML: a date that is none is a string, only its first
    # document counts; fleetq's reading of it threw, and no file of the fleet reconciled)
    ("  runtimeEnvYAML: |\n    env_vars: {CUTOFF: 2024-02-30, AT: !!timestamp x}\n", None),
    ("  runtimeEnvYAML: |\n    pip: [a]\n    ---\n    - b\n", None),
    ("  runtimeEnvYAML: 'null'\n", None),
    ("  runtimeEnvYAML: '~'\n", None),
    ("  managedBy: ''\n", "jobs/r.yaml:8: spec.managedBy is '': the API server takes "
     "'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue' only; remove spec.managedBy to "
     "have KubeRay run the job"),
    ("  deletionStrategy: {deletionRules: []}\n", "jobs/r.yaml:8: "
     "spec.deletionStrategy.deletionRules is empty: the API server takes one rule or more; add "
     "a rule, or remove the field"),
    ("  deletionStrategy: {onSuccess: {policy: DeleteCluster}, onFailure: {policy: "
     "DeleteCluster}, deletionRules: null}\n", None),
    ("  deletionStrategy: {onSuccess: {policy: DeleteCluster}, onFailure: {policy: "
     "DeleteNone}}\n", "jobs/r.yaml:8: spec.deletionStrategy.onFailure.policy is DeleteNone "
     "while spec.shutdownAfterJobFinishes is true: KubeRay refuses the job; choose one of the "
     "two"),
    ("  deletionStrategy: {onSuccess: {policy: DeleteCluster}}\n", "jobs/r.yaml:8: "
     "spec.deletionStrategy needs both onSuccess and onFailure, or deletionRules: the API "
     "server refuses it otherwise; add onFailure"),
    ("  deletionStrategy: {deletionRules: [{condition: {jobStatus: FAILED}, policy: "
     "DeleteCluster}]}\n", "jobs/r.yaml:8: spec.deletionStrategy.deletionRules is set while "
     "spec.shutdownAfterJobFinishes is true: KubeRay takes one of the two only; remove "
     "shutdownAfterJobFinishes, or the rules"),
    ("  deletionStrategy: {onSuccess: {policy: DeleteCluster}, onFailure: {policy: "
     "DeleteCluster}}\n", None),
    ("  managedBy: kueue.x-k8s.io/multikueue\n", "jobs/r.yaml:8: spec.managedBy is "
     "'kueue.x-k8s.io/multikueue': on a member cluster KubeRay leaves a job that MultiKueue "
     "manages alone, and MultiKueue runs on a manager cluster only (fleetq sends the job to "
     "its member cluster in its place), so the job would never start there; remove "
     "spec.managedBy"),
    ("  managedBy: foo.io/bar\n", "jobs/r.yaml:8: spec.managedBy is 'foo.io/bar': the API "
     "server takes 'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue' only; remove "
     "spec.managedBy to have KubeRay run the job"),
    ("  managedBy: ray.io/kuberay-operator\n", None),
])
def test_more_of_a_rayjob_spec_kuberay_refuses_is_an_error_at_its_line(
        lines: str, said: str | None) -> None:
    """More of ``ValidateRayJobSpec`` and of the RayJob CRD's own rules: each
    of these was admitted, and its job never started."""
    text = RAYJOB.replace("NAME", "groupName: cpu").replace(
        "  shutdownAfterJobFinishes: true\n", "  shutdownAfterJobFinishes: true\n" + lines)
    assert told(read({"jobs/r.yaml": text})) == ([f"{said}; fix the manifest"] if said else [])


def _job_managed_by(value: str) -> str:
    return JOB.replace("spec:\n", f"spec:\n  managedBy: {value}\n", 1)


def _pytorchjob_managed_by(value: str) -> str:
    return (REFUSED_PYTORCHJOB.replace("llama.v2", "llama").replace("replicas: 2", "replicas: 1")
            .replace("Launcher:", "Worker:").replace("trainer", "pytorch")
            .replace("spec:\n", f"spec:\n  runPolicy: {{managedBy: {value}}}\n", 1))


def _mpijob_managed_by(value: str) -> str:
    return (MPIJOB.replace("NAME", "m").replace("replicas: 2", "replicas: 1")
            .replace("Always", "Never").replace("ExitCode", "Never")
            .replace("spec:\n", f"spec:\n  runPolicy: {{managedBy: {value}}}\n", 1))


@pytest.mark.parametrize(("text", "said"), [
    (_job_managed_by("kueue.x-k8s.io/multikueue"),
     "jobs/j.yaml:5: spec.managedBy is 'kueue.x-k8s.io/multikueue': on a member cluster the Job "
     "controller leaves a job that MultiKueue manages alone, and MultiKueue runs on a manager "
     "cluster only (fleetq sends the job to its member cluster in its place), so the job would "
     "never start there; remove spec.managedBy"),
    (_job_managed_by("example.com/mine"),
     "jobs/j.yaml:5: spec.managedBy is 'example.com/mine': the Job controller runs a job whose "
     "managedBy is unset or 'kubernetes.io/job-controller' only, and fleetq cannot tell that a "
     "controller of that name runs on the member cluster, so the job may never start there; "
     "remove spec.managedBy"),
    (_job_managed_by("kubernetes.io/job-controller"), None),
    (_job_managed_by("''"),
     "jobs/j.yaml:5: spec.managedBy is '': the API server takes a domain-prefixed path of at "
     "most 63 characters only (such as example.com/controller); remove spec.managedBy to have "
     "the Job controller run the job"),
    (_job_managed_by("my-controller"),
     "jobs/j.yaml:5: spec.managedBy is 'my-controller': the API server takes a domain-prefixed "
     "path of at most 63 characters only (such as example.com/controller); remove "
     "spec.managedBy to have the Job controller run the job"),
    (_pytorchjob_managed_by("kueue.x-k8s.io/multikueue"),
     "jobs/p.yaml:5: spec.runPolicy.managedBy is 'kueue.x-k8s.io/multikueue': on a member "
     "cluster the training operator leaves a job that MultiKueue manages alone, and MultiKueue "
     "runs on a manager cluster only (fleetq sends the job to its member cluster in its place), "
     "so the job would never start there; remove spec.runPolicy.managedBy"),
    (_pytorchjob_managed_by("foo.io/bar"),
     "jobs/p.yaml:5: spec.runPolicy.managedBy is 'foo.io/bar': the API server takes "
     "'kubeflow.org/training-operator' or 'kueue.x-k8s.io/multikueue' only; remove "
     "spec.runPolicy.managedBy to have the training operator run the job"),
    (_mpijob_managed_by("kueue.x-k8s.io/multikueue"),
     "jobs/j.yaml:5: spec.runPolicy.managedBy is 'kueue.x-k8s.io/multikueue': on a member "
     "cluster the MPI operator leaves a job that MultiKueue manages alone, and MultiKueue runs "
     "on a manager cluster only (fleetq sends the job to its member cluster in its place), so "
     "the job would never start there; remove spec.runPolicy.managedBy"),
    (_mpijob_managed_by("foo.io/bar"),
     "jobs/j.yaml:5: spec.runPolicy.managedBy is 'foo.io/bar': the MPI operator takes "
     "'kubeflow.org/mpi-operator' or 'kueue.x-k8s.io/multikueue' only; remove "
     "spec.runPolicy.managedBy to have the MPI operator run the job"),
    (_mpijob_managed_by("''"), None),
])
def test_a_job_another_controller_manages_is_an_error_at_its_line(
        text: str, said: str | None) -> None:
    """A job copied from a MultiKueue manager cluster keeps its managedBy: on
    the member cluster fleetq sends it to, its operator left it alone, and it
    held its quota for ever."""
    path = "jobs/p.yaml" if "PyTorchJob" in text else "jobs/j.yaml"
    assert told(read({path: text})) == ([f"{said}; fix the manifest"] if said else [])


@pytest.mark.parametrize(("lines", "said"), [
    ("  runPolicy: {cleanPodPolicy: Sometimes}\n", "jobs/m.yaml:5: "
     "spec.runPolicy.cleanPodPolicy is 'Sometimes': the MPI operator takes None, Running, All "
     "only"),
    ("  runPolicy: {ttlSecondsAfterFinished: -1}\n", "jobs/m.yaml:5: "
     "spec.runPolicy.ttlSecondsAfterFinished is -1: the MPI operator refuses a job whose "
     "ttlSecondsAfterFinished is below 0"),
    ("  runPolicy: {backoffLimit: -2}\n", "jobs/m.yaml:5: spec.runPolicy.backoffLimit is -2: "
     "the MPI operator refuses a job whose backoffLimit is below 0"),
    ("  slotsPerWorker: -1\n", "jobs/m.yaml:5: spec.slotsPerWorker is -1: the MPI operator "
     "refuses a job whose slotsPerWorker is below 0"),
    ("  slotsPerWorker: 0\n  runPolicy: {cleanPodPolicy: All, backoffLimit: 0}\n", None),
])
def test_more_of_an_mpijob_the_mpi_operator_refuses_is_an_error_at_its_line(
        lines: str, said: str | None) -> None:
    """The rest of ``ValidateMPIJob``'s rules: each job was admitted, and
    never started."""
    text = MPIJOB.replace("NAME", "m").replace("replicas: 2", "replicas: 1").replace(
        "Always", "Never").replace("ExitCode", "Never").replace("spec:\n", "spec:\n" + lines, 1)
    assert told(read({"jobs/m.yaml": text})) == ([f"{said}; fix the manifest"] if said else [])
    if said is None:  # (Workers of no replica are refused too)
        zero = text.replace("replicas: 16", "replicas: 0")
        assert told(read({"jobs/m.yaml": zero})) == [
            "jobs/m.yaml:13: spec.mpiReplicaSpecs.Worker.replicas is 0: the MPI operator "
            "refuses Workers of fewer than one replica; remove the Worker to run the launcher "
            "alone; fix the manifest"]


def test_a_ray_worker_group_without_a_name_of_its_own_is_told_at_its_line() -> None:
    """A group with no groupName was read as worker-1, and one named as
    another was read as a second pod set of that name: both RayJobs fail on
    the member cluster (the CRD requires the name, KubeRay's webhook refuses
    the second)."""
    unnamed = read({"jobs/r.yaml": RAYJOB.replace("- NAME\n      ", "- ")})
    assert told(unnamed) == [
        "jobs/r.yaml:19: spec.rayClusterSpec.workerGroupSpecs[1].groupName is missing; give the "
        "worker group a name (the RayJob CRD requires one, and KubeRay labels its pods with it)"
        "; fix the manifest"]
    twice = read({"jobs/r.yaml": RAYJOB.replace("NAME", "groupName: gpu")})
    assert told(twice) == [
        "jobs/r.yaml:19: spec.rayClusterSpec.workerGroupSpecs[1].groupName 'gpu' is the name of "
        "workerGroupSpecs[0] too; give each worker group a name of its own; fix the manifest"]
    assert not unnamed.jobs and not twice.jobs
    fine = read({"jobs/r.yaml": RAYJOB.replace("NAME", "groupName: GPU_2")})
    assert told(fine) == [] and [s.job.refused for s in fine.jobs.values()] == [(
        ("kueue", "spec.rayClusterSpec.workerGroupSpecs[1].groupName 'GPU_2' must be a DNS "
                  "label once in lower case (at most 63 letters, digits and '-', a letter or "
                  "digit at each end): Kueue names the group's pod set after it"),)]


def test_a_sidecar_mode_rayjob_requests_its_submitter_container_in_the_head_pod() -> None:
    text = RAYJOB.replace("NAME", "groupName: cpu")
    sidecar = text.replace("shutdownAfterJobFinishes: true",
                           "shutdownAfterJobFinishes: true\n  submissionMode: SidecarMode")
    (plain,), (added,) = (list(read({"jobs/r.yaml": t}).jobs.values()) for t in (text, sidecar))
    assert plain.job.requests["cpu"] == 3000 and added.job.requests["cpu"] == 3500
    assert added.job.requests["memory"] == 200 * 2**20 * 1000 and "memory" not in plain.job.requests
    assert [ps.per_pod["cpu"] for ps in added.job.pod_sets] == [1500, 1000, 1000]


def test_a_namespace_listed_on_two_quotas_is_told_at_its_second_entry() -> None:
    text = quota_tree_yaml('{cpu: "8"}', """\
    - name: a
      namespaces: [default, ml]
    - name: b
      namespaces:
      - other
      - ml
""")
    assert text.splitlines()[14] == "      - ml"
    assert told(read({"quota.yaml": text})) == [
        "quota.yaml:15: namespace 'ml' is listed on both root/a and root/b; list each "
        "namespace on one leaf only"]


def test_a_misspelt_setting_of_a_quota_in_fleet_yaml_is_an_error() -> None:
    """``preemtion: Never`` left the quota preempting (the default), unseen."""
    text = FLEET.replace("preemption: Never", "preemtion: Never, wieght: 2, colour: red") \
        .replace("spec:\n", "spec:\n  committer: {nmae: fleet-bot}\n")
    assert told(read({"fleet.yaml": text, "policy.yaml": POLICY})) == [
        "fleet.yaml:5: spec.committer.nmae is not a field of Fleet: did you mean "
        "spec.committer.name?",
        "fleet.yaml:9: spec.quotas.root/a.colour is not a setting of a quota: its settings are "
        "queueStrategy, preemption, weight",
        "fleet.yaml:9: spec.quotas.root/a.preemtion is not a setting of a quota: did you mean "
        "spec.quotas.root/a.preemption?",
        "fleet.yaml:9: spec.quotas.root/a.wieght is not a setting of a quota: did you mean "
        "spec.quotas.root/a.weight?"]


@pytest.mark.parametrize(("committer", "said"), [
    ("bob", "fleet.yaml:5: spec.committer must be a mapping of name and email, not a string"),
    ("{name: '<bob>', email: b@c}", "fleet.yaml:5: spec.committer.name '<bob>' holds '<', "
     "which git cannot write in a commit's committer (its line is: name <email> time); take "
     "it out"),
    ("{name: bob, email: 'a>b'}", "fleet.yaml:5: spec.committer.email 'a>b' holds '>', which "
     "git cannot write in a commit's committer (its line is: name <email> time); take it out"),
    ("{name: [bob], email: b@c}", "fleet.yaml:5: spec.committer.name must be a string, not a "
     "list"),
    ("{name: '  ', email: b@c}", "fleet.yaml:5: spec.committer.name must not be blank"),
])
def test_a_committer_git_cannot_write_is_an_error_at_its_line(committer: str, said: str
                                                              ) -> None:
    """``committer: bob`` was told as a Python error ('str' object has no
    attribute 'get'); an angle bracket in a name was written into the state
    commit, which git could then not read."""
    text = FLEET.replace("spec:\n", f"spec:\n  committer: {committer}\n")
    inputs = read({"fleet.yaml": text, "policy.yaml": POLICY})
    assert told(inputs) == [said]
    assert (inputs.git.committer_name, inputs.git.committer_email) == (None, None)


def test_settings_of_a_quota_the_tree_does_not_have_are_an_error_with_the_closest_quota(
        ) -> None:
    """A misspelt quota path leaves its quota with the default settings: told,
    with the quota it most likely means."""
    text = FLEET.replace("root/a:", "root/aa:") + "    root/elsewhere: {weight: 2}\n"
    files = {"fleet.yaml": text, "policy.yaml": POLICY,
             "quota/tree.yaml": QUOTA_TREE}
    inputs = read(files)
    assert told(inputs) == [
        "fleet.yaml:8: spec.quotas names 'root/aa', which is no quota of the ElasticQuotaTree "
        "(its settings apply to no quota): did you mean root/a?",
        "fleet.yaml:9: spec.quotas names 'root/elsewhere', which is no quota of the "
        "ElasticQuotaTree (its settings apply to no quota): name one by its path, such as "
        "root/..., or by its name"]
    assert inputs.settings.quotas == {}


def test_settings_of_a_quota_with_quotas_under_it_are_warned_of_with_its_leaves() -> None:
    """A queue is a leaf's: settings of the root (or of any quota with children)
    applied to no queue, with no word, though a misspelt path is an error."""
    tree = quota_tree_yaml('{cpu: "8"}', """\
    - name: a
      namespaces: [default]
      max: {cpu: "8"}
    - name: b
      namespaces: [team-b]
""")
    text = FLEET.replace("root/a:", "root:")
    inputs = read({"fleet.yaml": text, "policy.yaml": POLICY, "quota/tree.yaml": tree})
    assert told(inputs) == []
    assert told(inputs, "warning") == [
        "fleet.yaml:8: spec.quotas names 'root', quota root, which has quotas under it: a "
        "queue is a leaf quota's, so its settings apply to no queue; set them on its leaves "
        "(root/a and root/b)"]
    on_leaf = read({"fleet.yaml": FLEET, "policy.yaml": POLICY, "quota/tree.yaml": tree})
    assert told(on_leaf, "warning") == []


def test_a_state_branch_that_is_not_a_string_is_an_error() -> None:
    text = FLEET.replace("spec:\n", "spec:\n  stateBranch: 5\n")
    assert told(read({"fleet.yaml": text, "policy.yaml": POLICY})) == [
        "fleet.yaml:5: spec.stateBranch must be a branch name (a string)"]


def test_an_exclude_pattern_with_a_bracket_left_open_is_a_warning_at_its_line() -> None:
    """``fnmatch`` takes a ``[`` that opens no set as a ``[`` of the path: the
    pattern then excludes nothing anyone meant. Told; the others are used."""
    text = FLEET.replace("spec:\n", "spec:\n  exclude:\n  - 'docs/[ab]*'\n"
                         "  - 'drafts/[unclosed/**'\n  - '[]]x'\n  - '[!]'\n")
    files = {"fleet.yaml": text, "policy.yaml": POLICY, "docs/a.yaml": "not: [a manifest"}
    inputs = read(files)
    assert told(inputs) == []
    assert told(inputs, "warning") == [
        "fleet.yaml:7: spec.exclude[1] 'drafts/[unclosed/**' has a '[' that is not closed, so "
        "it matches a '[' in a path and nothing else; close it ('[abc]' matches a, b or c) or "
        "write '[[]' for a '['",
        "fleet.yaml:9: spec.exclude[3] '[!]' has a '[' that is not closed, so it matches a '[' "
        "in a path and nothing else; close it ('[abc]' matches a, b or c) or write '[[]' for "
        "a '['"]
    assert inputs.exclude == ("docs/[ab]*", "drafts/[unclosed/**", "[]]x", "[!]")


def test_an_exclude_pattern_that_is_not_a_string_is_an_error_at_its_line() -> None:
    """``- {path: docs}`` was taken as the pattern "{'path': 'docs'}"."""
    text = FLEET.replace("spec:\n", "spec:\n  exclude:\n  - {path: docs}\n  - 7\n  - ''\n")
    assert told(read({"fleet.yaml": text, "policy.yaml": POLICY})) == [
        "fleet.yaml:6: spec.exclude[0] must be a path pattern (a string such as \"docs/**\"), "
        "not a mapping",
        "fleet.yaml:7: spec.exclude[1] must be a path pattern (a string such as \"docs/**\"), "
        "not a number",
        "fleet.yaml:8: spec.exclude[2] must be a path pattern (a string such as \"docs/**\"), "
        "not empty"]


def test_an_exclude_pattern_that_leaves_the_fleet_without_its_clusters_is_told() -> None:
    """``exclude: ["*"]`` (or ``clusters/*``) left out the member clusters, the
    quota tree and the policies: validate said 0 errors, and a reconcile
    deleted every cluster's jobs. A pattern that leaves the fleet with none of
    them, where the files it leaves out define some, is warned of at its line;
    files left out beside those the fleet reads (examples in docs/) are not."""
    text = FLEET.replace("spec:\n", "spec:\n  exclude:\n  - 'docs/**'\n  - 'c*/*'\n")
    docs = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: x}\n"
    files = {"fleet.yaml": text, "policy.yaml": POLICY, "clusters/c1.yaml": CLUSTER,
             "clusters/c2.yaml": CLUSTER.replace("name: c1", "name: c2"),
             "docs/flux.yaml": docs, "docs/example.yaml": "---\n" + CLUSTER.replace(
                 "name: c1", "name: example"), "jobs/j.yaml": JOB}
    inputs = read(files)
    assert (inputs.clusters, [k.name for k in inputs.jobs]) == ([], ["j1"])
    assert told(inputs) == []
    assert told(inputs, "warning") == [
        "fleet.yaml:7: spec.exclude's patterns leave the fleet with no member cluster, and "
        "every job that runs would be deleted from its cluster: 'c*/*' leaves out "
        "clusters/c1.yaml, clusters/c2.yaml; 'docs/**' leaves out docs/example.yaml; narrow "
        "them to files that are not the fleet's, or delete the files to take them out of the "
        "fleet"]
    files["fleet.yaml"] = text.replace("'c*/*'", "'clusters/old-*'")
    inputs = read(files)
    assert [c.name for c in inputs.clusters] == ["c1", "c2"]  # (the example: left out)
    assert told(inputs, "warning") == []
    files["fleet.yaml"] = text.replace("'c*/*'", "'*'")
    assert [w.split(", and ")[0] for w in told(read(files), "warning")] == [
        "fleet.yaml:7: spec.exclude's patterns leave the fleet with no member cluster",
        "fleet.yaml:7: spec.exclude's patterns leave the fleet with no policy"]


@pytest.mark.parametrize(("application", "error"), [
    ("{purgeMode: Immediate}",
     "policy.yaml:8: spec.failover.application.purgeMode 'Immediate' is not one of "
     "Immediately, Directly, Graciously, Gracefully, Never"),
    ("\n      decisionConditions: {tolerationSeconds: -30}",
     "policy.yaml:9: spec.failover.application.decisionConditions.tolerationSeconds must be "
     "a whole number of seconds, 0 or more (0: fail over at once; unset: 300), not -30"),
    ("\n      decisionConditions: {tolerationSeconds: abc}",
     "policy.yaml:9: spec.failover.application.decisionConditions.tolerationSeconds must be "
     "a whole number of seconds, 0 or more (0: fail over at once; unset: 300), not 'abc'"),
    ("\n      decisionConditions: {tolerationSeconds: true}",
     "policy.yaml:9: spec.failover.application.decisionConditions.tolerationSeconds must be "
     "a whole number of seconds, 0 or more (0: fail over at once; unset: 300), not True"),
    ("{gracePeriodSeconds: 0}",
     "policy.yaml:8: spec.failover.application.gracePeriodSeconds must be a whole number of "
     "seconds from 1 to 2147483647 (unset: 600), not 0"),
    ("{purgeMode: Graciously, gracePeriodSeconds: 1.5}",
     "policy.yaml:8: spec.failover.application.gracePeriodSeconds must be a whole number of "
     "seconds from 1 to 2147483647 (unset: 600), not 1.5"),
    # (an int32 in Karmada; beyond it, the date it is due crashed every reconcile)
    ("{gracePeriodSeconds: 999999999999}",
     "policy.yaml:8: spec.failover.application.gracePeriodSeconds must be a whole number of "
     "seconds from 1 to 2147483647 (unset: 600), not 999999999999"),
])
def test_a_failover_karmada_would_refuse_is_an_error_at_its_line(application: str,
                                                                 error: str) -> None:
    text = POLICY + f"  failover:\n    application: {application}\n"
    assert told(read({"policy.yaml": text})) == [error]


def test_a_failover_without_conditions_tolerates_300_seconds_as_karmada() -> None:
    """Karmada's default tolerationSeconds (its CRD: "Defaults to 300s"), and its
    default purgeMode, Gracefully."""
    text = POLICY + "  failover:\n    application: {}\n"
    policy, = read({"policy.yaml": text}).policies
    assert policy.failover is not None
    assert (policy.failover.toleration_seconds, policy.failover.purge_mode,
            policy.failover.grace_period_seconds) == (300, "Gracefully", 600)
    text = POLICY + "  failover:\n    application: {gracePeriodSeconds: 30}\n"
    policy, = read({"policy.yaml": text}).policies
    assert policy.failover is not None and policy.failover.grace_period_seconds == 30
    text = POLICY + "  failover:\n    application: {decisionConditions: {tolerationSeconds: 0}}\n"
    policy, = read({"policy.yaml": text}).policies
    assert policy.failover is not None and policy.failover.toleration_seconds == 0


@pytest.mark.parametrize(("weight", "said"), [
    (".inf", "inf"), ("-.inf", "-inf"), (".nan", "nan"), ("1.0e+400", "inf"), ("0.0001", "0.0001"),
    ("0", "0"), ("-2", "-2"), ("2000000", "2000000"), ("'2'", "'2'"), ("true", "True"),
    (str(10 ** 400), str(10 ** 400)),
])
def test_a_quota_weight_that_is_no_usable_number_is_an_error_at_its_line(weight: str,
                                                                          said: str) -> None:
    """``.inf`` crashed every command (OverflowError), ``.nan`` was a Fleet
    "malformed" at its first line, and 0.0001 was a weight of 0, unseen."""
    text = FLEET.replace("preemption: Never}", f"preemption: Never,\n      weight: {weight}}}")
    got = told(read({"fleet.yaml": text, "policy.yaml": POLICY}))
    assert got == [
        f"fleet.yaml:9: spec.quotas.root/a.weight must be a finite number > 0, from 0.001 to "
        f"1,000,000 (a queue's share of borrowed quota; 1 when unset), not {said}"]


@pytest.mark.parametrize(("weight", "milli"), [("0.001", 1), ("0.5", 500), ("0.57", 570),
                                               ("1000000", 10 ** 9)])
def test_a_quota_weight_is_kept_in_thousandths(weight: str, milli: int) -> None:
    text = FLEET.replace("preemption: Never}", f"preemption: Never, weight: {weight}}}")
    inputs = read({"fleet.yaml": text, "policy.yaml": POLICY})
    assert told(inputs) == [] and inputs.settings.quotas["root/a"].weight == milli


@pytest.mark.parametrize(("old", "new", "error"), [
    ("spec:\n", "spec:\n  suspention: {scheduling: true}\n",
     "policy.yaml:5: spec.suspention is not a field of ClusterPropagationPolicy: did you mean "
     "spec.suspension?"),
    ("spec:\n", "spec:\n  suspension: {schedulling: true}\n",
     "policy.yaml:5: spec.suspension.schedulling is not a field of ClusterPropagationPolicy: "
     "did you mean spec.suspension.scheduling?"),
    ("  placement:", "  placment:",
     "policy.yaml:6: spec.placment is not a field of ClusterPropagationPolicy: did you mean "
     "spec.placement?"),
    ("  placement: {", "  placement: {clusterToleration: [{operator: Exists}], ",
     "policy.yaml:6: spec.placement.clusterToleration is not a field of "
     "ClusterPropagationPolicy: did you mean spec.placement.clusterTolerations?"),
    ("  placement: {", "  placement: {clusterTolerations: [{operater: Exists}], ",
     "policy.yaml:6: spec.placement.clusterTolerations[0].operater is not a field of "
     "ClusterPropagationPolicy: did you mean spec.placement.clusterTolerations[0].operator?"),
    ("customSchedulingType", "customSchedullingType",
     "policy.yaml:6: spec.placement.replicaScheduling.customSchedullingType is not a field of "
     "ClusterPropagationPolicy: did you mean "
     "spec.placement.replicaScheduling.customSchedulingType?"),
    ("kind: Job}]", "kind: Job}, {apiVersion: batch/v1, kind: Job, nmae: j1}]",
     "policy.yaml:5: spec.resourceSelectors[1].nmae is not a field of "
     "ClusterPropagationPolicy: did you mean spec.resourceSelectors[1].name?"),
    ("kind: Job}]", "kind: Job, labelSelector: {matchLabel: {a: b}}}]",
     "policy.yaml:5: spec.resourceSelectors[0].labelSelector.matchLabel is not a field of "
     "ClusterPropagationPolicy: did you mean spec.resourceSelectors[0].labelSelector."
     "matchLabels?"),
    ("spec:\n", "spec:\n  failover: {aplication: {purgeMode: Never}}\n",
     "policy.yaml:5: spec.failover.aplication is not a field of ClusterPropagationPolicy: "
     "did you mean spec.failover.application?"),
    ("spec:\n", "spec:\n  failover:\n    application: {purgMode: Never}\n",
     "policy.yaml:6: spec.failover.application.purgMode is not a field of "
     "ClusterPropagationPolicy: did you mean spec.failover.application.purgeMode?"),
    ("spec:\n", "spec:\n  gang: true\n",
     "policy.yaml:5: spec.gang is not a field of ClusterPropagationPolicy (the fields of "
     "spec: activationPreference, association, conflictResolution, dependentOverrides, "
     "failover, placement, preemption, preserveResourcesOnDeletion, priority, propagateDeps, "
     "resourceSelectors, schedulePriority, schedulerName, suspension)"),
    ("spec:\n", "spek: {}\nspec:\n",
     "policy.yaml:4: spek is not a field of ClusterPropagationPolicy: did you mean spec?"),
])
def test_a_field_a_policy_does_not_have_is_an_error_at_its_line(old: str, new: str,
                                                                 error: str) -> None:
    """Karmada's fields (and ACK One's), as its API would refuse another: a
    misspelt ``suspension`` took the fleet's jobs out of their queues, unseen."""
    assert old in POLICY
    inputs = read({"policy.yaml": POLICY.replace(old, new, 1)})
    assert told(inputs) == [error]
    assert inputs.policies == [] and inputs.unbuilt == {"policy.yaml"}


@pytest.mark.parametrize(("old", "new", "error"), [
    ("customSchedulingType: Gang", "customSchedulingType: Gang, replicaSchedulingType: Duplicate",
     "policy.yaml:6: spec.placement.replicaScheduling.replicaSchedulingType must be Duplicated "
     "or Divided, not 'Duplicate'"),
    ("spec:\n", 'spec:\n  propagateDeps: "false"\n',
     "policy.yaml:5: spec.propagateDeps must be true or false, not 'false'"),
    ("spec:\n", "spec:\n  suspension: {scheduling: yes please}\n",
     "policy.yaml:5: spec.suspension.scheduling must be true or false, not 'yes please'"),
    ("spec:\n", "spec:\n  priority: abc\n",
     "policy.yaml:5: spec.priority must be a whole number (int32), not 'abc'"),
    ("spec:\n", "spec:\n  priority: 2.7\n",
     "policy.yaml:5: spec.priority must be a whole number (int32), not 2.7"),
])
def test_a_policy_field_of_the_wrong_value_is_an_error_at_its_line(old: str, new: str,
                                                                   error: str) -> None:
    """A misspelt Duplicated was Divided (one copy, not one per cluster), the
    string "false" sent the dependencies, a priority of 2.7 was 2, unseen, and
    one of abc was "malformed" at the first line."""
    assert old in POLICY
    inputs = read({"policy.yaml": POLICY.replace(old, new, 1)})
    assert told(inputs) == [error]
    assert inputs.policies == [] and inputs.unbuilt == {"policy.yaml"}
    fine = read({"policy.yaml": POLICY.replace("spec:\n", "spec:\n  priority: -3\n  "
                                               "propagateDeps: false\n", 1)})
    assert told(fine) == [] and fine.policies[0].priority == -3
    unset = read({"policy.yaml": POLICY.replace("spec:\n", "spec:\n  priority: null\n", 1)})
    assert told(unset) == [] and unset.policies[0].priority == 0


def test_every_mistake_of_a_policy_is_told_at_once() -> None:
    text = POLICY.replace("spec:\n", "spec:\n  suspention: {}\n  failover:\n"
                          "    application: {purgeMode: Soon}\n")
    assert told(read({"policy.yaml": text})) == [
        "policy.yaml:5: spec.suspention is not a field of ClusterPropagationPolicy: did you "
        "mean spec.suspension?",
        "policy.yaml:7: spec.failover.application.purgeMode 'Soon' is not one of Immediately, "
        "Directly, Graciously, Gracefully, Never",
    ]


def test_a_policy_with_a_misspelt_field_is_read_in_its_last_good_version() -> None:
    queued = POLICY.replace("spec:\n", "spec:\n  suspension: {scheduling: true}\n")
    typo = queued.replace("suspension", "suspention")
    inputs = read({"policy.yaml": typo, "jobs/j1.yaml": JOB}, {"policy.yaml": [queued]})
    policy, = inputs.policies
    assert policy.queued and policy.gang
    assert told(inputs) == ["policy.yaml:5: spec.suspention is not a field of "
                            "ClusterPropagationPolicy: did you mean spec.suspension?"]
    assert told(inputs, "warning") == [
        f"policy.yaml:0: the fleet goes on with this file's last good version "
        f"(blob {source('policy.yaml', queued).blob[:12]}) until it is fixed"]


def test_a_file_read_in_its_last_good_version_leaves_the_templates_and_the_rest_read() -> None:
    """The fleet read again with a broken file's last good version lost the
    templates (every rendered job lost its overlays) and the warnings of files
    not read as YAML."""
    queued = POLICY.replace("spec:\n", "spec:\n  suspension: {scheduling: true}\n")
    files = {"policy.yaml": queued, "jobs/j1.yaml": JOB, "jobs/j2.YAML": JOB,
             "templates/overlays/team.yaml.j2": "patch: {metadata: {labels: {a: b}}}\n"}
    whole = read(files)
    again = read({**files, "policy.yaml": queued.replace("suspension", "suspention")},
                 {"policy.yaml": [queued]})
    assert told(again, "warning")[0].startswith("policy.yaml:0: the fleet goes on with this "
                                                "file's last good version")
    assert again.templates == whole.templates != {}
    assert {**again.other_files, "policy.yaml": "-"} == {**whole.other_files, "policy.yaml": "-"}
    assert again.unknown == whole.unknown and [p.path for p in again.unknown] == ["jobs/j2.YAML"]


SHARED = Path(__file__).resolve().parents[2].parent / "shared"
TEMPLATE = Path(__file__).resolve().parents[2] / "fleet-repo-template"


@pytest.mark.parametrize("path", [
    *(f"shared/seed-manifests/{name}" for name in (
        "ack-fleet-policy-gang.yaml", "ack-fleet-policy-gang-queued.yaml")),
    *(f"shared/upstream/karmada/{name}" for name in (
        "samples/nginx/propagationpolicy.yaml", "artifacts/example/propagationpolicy_simple.yaml",
        "artifacts/example/propagationpolicy_taintToleration.yaml")),
    *(f"template/policies/{p.name}" for p in sorted((TEMPLATE / "policies").glob("*.yaml"))),
])
def test_the_seed_template_and_karmada_policies_read_with_no_mistake(path: str) -> None:
    where, _, rest = path.partition("/")
    file = (SHARED if where == "shared" else TEMPLATE) / rest
    if not file.exists():
        pytest.skip(f"{file} is not present")
    inputs = read({"policy.yaml": file.read_text(encoding="utf-8")})
    assert told(inputs) == [] and len(inputs.policies) == 1


def test_a_job_carries_the_lines_of_the_fields_the_cycle_may_find_at_fault() -> None:
    """The fields the cycle resolves (its PriorityClass, WorkloadPriorityClass
    label and quota label, else its namespace), those a batch Job keeps as
    sent while it runs (its pod template), and its name (told when another
    job has it): their lines go with the job, and one the same for jobs alike
    (the cache pickles it once)."""
    text = JOB.replace(
        "metadata: {name: j1, namespace: default}",
        "metadata:\n  name: j1\n  namespace: default\n  labels:\n"
        "    kueue.x-k8s.io/priority-class: urgent\n"
        "    quota.scheduling.alibabacloud.com/name: team").replace(
        "    spec:\n", "    spec:\n      priorityClassName: high\n")
    inputs = read({"jobs/a.yaml": text, "jobs/b.yaml": text.replace("name: j1", "name: j2")})
    a, b = (source.job for source in inputs.jobs.values())
    assert dict(a.field_lines) == {"name": 4, "workloadPriorityClass": 7, "quota": 8,
                                   "priorityClass": 12, "spec.template": 10}
    assert a.field_lines is b.field_lines
    plain, = read({"jobs/c.yaml": JOB}).jobs.values()  # (its namespace on its first line)
    assert dict(plain.job.field_lines) == {"name": 3, "quota": 3, "spec.template": 5}


def test_karmadas_keyless_toleration_tolerates_only_taints_with_no_value() -> None:
    """``clusterTolerations: [{effect: NoSchedule}]`` (Karmada's example): the
    operator is Equal when not given, as in Kubernetes, so it tolerates every
    NoSchedule taint with no value, and not ``nvidia.com/gpu=present``."""
    file = SHARED / "upstream/karmada/artifacts/example/propagationpolicy_taintToleration.yaml"
    if not file.exists():
        pytest.skip(f"{file} is not present")
    (policy,) = read({"policy.yaml": file.read_text(encoding="utf-8")}).policies
    (toleration,) = policy.cluster_tolerations
    assert (toleration.key, toleration.operator, toleration.effect) == ("", "Equal", "NoSchedule")
    assert toleration.tolerates(Taint("dedicated"))
    assert not toleration.tolerates(Taint("nvidia.com/gpu", "present"))


AFFINITY_JOB = JOB.replace("    spec:\n      containers:", """    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: gpu-type, operator: In, values: [h100, h200]}
              - {key: gpu-count, operator: Gt, values: ["4"]}
            - matchExpressions: [{key: pool, operator: Exists}]
      containers:""")


def test_a_pods_required_node_affinity_is_read_as_its_terms() -> None:
    from reconciler.core.model import LabelRequirement, NodeSelectorTerm
    job, = read({"jobs/j.yaml": AFFINITY_JOB}).jobs.values()
    assert job.job.pod_sets[0].node_affinity == (
        NodeSelectorTerm(match_expressions=(LabelRequirement("gpu-type", "In", ("h100", "h200")),
                                            LabelRequirement("gpu-count", "Gt", ("4",)))),
        NodeSelectorTerm(match_expressions=(LabelRequirement("pool", "Exists"),)))


def test_a_node_affinitys_match_fields_are_read_with_its_expressions() -> None:
    from reconciler.core.model import LabelRequirement, NodeSelectorTerm
    text = AFFINITY_JOB.replace("- matchExpressions: [{key: pool, operator: Exists}]", """\
- matchExpressions: [{key: pool, operator: Exists}]
              matchFields: [{key: metadata.name, operator: NotIn, values: [node-1]}]""")
    job, = read({"jobs/j.yaml": text}).jobs.values()
    assert job.job.pod_sets[0].node_affinity[1] == NodeSelectorTerm(
        (LabelRequirement("pool", "Exists"),),
        (LabelRequirement("metadata.name", "NotIn", ("node-1",)),))


@pytest.mark.parametrize(("term", "said"), [
    ("{key: gpu-count, operator: Gt, values: ['4', '8']}", "matchExpressions[0] must have"),
    ("{key: gpu-type, operator: Equals, values: [h100]}", "matchExpressions[0] must have"),
    ("{key: pool, operator: Exists}]\n              matchFields: [{key: metadata.labels, "
     "operator: In, values: [a]}", "matchFields[0] must have the key metadata.name and one value"),
    ("{key: pool, operator: Exists}]\n              matchFields: [{key: metadata.name, "
     "operator: In, values: [a, b]}", "matchFields[0] must have the key metadata.name"),
    ("{key: pool, operator: Exists}]\n              matchFields: [{key: metadata.name, "
     "operator: Exists}", "matchFields[0] must have a key, an operator of In, NotIn"),
])
def test_a_node_affinity_kubernetes_would_refuse_is_an_error_at_its_line(
        term: str, said: str) -> None:
    text = AFFINITY_JOB.replace("{key: pool, operator: Exists}", term)
    got = told(read({"jobs/j.yaml": text}))
    assert len(got) == 1 and said in got[0], got
    assert got[0].startswith("jobs/j.yaml:"), got


@pytest.mark.parametrize(("kind", "name", "value", "said"), [
    ("PriorityClass", "huge", 99999999999999999999,
     "PriorityClass value 99999999999999999999 is out of range: Kubernetes takes -2147483648 "
     "to 1000000000"),
    ("PriorityClass", "above-users", 1000000001, "to 1000000000"),
    ("PriorityClass", "system-mine", 2147483648, "to 2147483647"),
    ("PriorityClass", "low", -2147483649, "takes -2147483648"),
    ("WorkloadPriorityClass", "huge", 2147483648, "to 2147483647"),
])
def test_a_priority_value_kubernetes_refuses_is_an_error(kind: str, name: str, value: int,
                                                         said: str) -> None:
    """It was taken as it was: a class no cluster could have outranked every job."""
    api = "scheduling.k8s.io/v1" if kind == "PriorityClass" else "kueue.x-k8s.io/v1beta1"
    text = f"apiVersion: {api}\nkind: {kind}\nmetadata: {{name: {name}}}\nvalue: {value}\n"
    inputs = read({"classes.yaml": text})
    got = told(inputs)
    assert len(got) == 1 and got[0].startswith("classes.yaml:4: ") and said in got[0], got
    assert not inputs.priority_classes and not inputs.workload_priority_classes
    fine = text.replace(str(value), str(1000000000 if kind == "PriorityClass" else -5))
    assert told(read({"classes.yaml": fine})) == []


@pytest.mark.parametrize(("old", "new", "said"), [
    ("metadata: {name: elasticquotatree, namespace: kube-system}\n", "metadata: [a]\n",
     "quota.yaml:3: metadata must be a mapping, not a list ['a']"),
    ("spec:\n  root:", "spec: []\nxspec:\n  root:", "quota.yaml:4: spec must be a mapping, "
     "not a list []"),
    ("spec:\n  root:", "spec: x\nxspec:\n  root:", "quota.yaml:4: spec must be a mapping, "
     "not a string 'x'"),
])
def test_a_quota_tree_whose_metadata_or_spec_is_no_mapping_is_told(old: str, new: str,
                                                                   said: str) -> None:
    """It stopped every command with a traceback."""
    inputs = read({"quota.yaml": QUOTA_TREE.replace(old, new), "jobs/j.yaml": JOB})
    assert told(inputs) == [said]
    assert inputs.tree is None and "quota.yaml" in inputs.broken_paths
    assert list(inputs.jobs) != []  # (the rest of the fleet is read)


@pytest.mark.parametrize(("old", "new", "said"), [
    ("    spec:\n      containers:", "    metadata: []\n    spec:\n      containers:",
     "jobs/j.yaml:6: spec.template.metadata must be a mapping, not a list []"),
    ("    spec:\n      containers:", "    metadata: {labels: [a]}\n    spec:\n      containers:",
     "jobs/j.yaml:6: spec.template.metadata.labels must be a mapping, not a list ['a']"),
    ("metadata: {name: j1, namespace: default}",
     "metadata: {name: j1, namespace: default, annotations: x}",
     "jobs/j.yaml:3: metadata.annotations must be a mapping, not a string 'x'"),
    ("metadata: {name: j1, namespace: default}",
     "metadata: {name: j1, namespace: default, labels: {version: 1.0}}",
     "jobs/j.yaml:3: metadata.labels: 'version' must be a string, not 1.0; quote it"),
    ("metadata: {name: j1, namespace: default}",
     "metadata: {name: j1, namespace: default, labels: {on: 'x'}}",
     "jobs/j.yaml:3: metadata.labels: the key true (YAML reads on, off, yes, no, true and "
     "false unquoted as booleans) must be a string; quote it"),
    ("metadata: {name: j1, namespace: default}",
     "metadata: {name: j1, namespace: default, labels: {gpu: yes}}",
     "jobs/j.yaml:3: metadata.labels: 'gpu' must be a string, not true (YAML reads on, off, "
     "yes, no, true and false unquoted as booleans); quote it"),
    ("metadata: {name: j1, namespace: default}",
     f"metadata: {{name: j1, namespace: default, labels: {{team: {'x' * 64}}}}}",
     f"jobs/j.yaml:3: metadata.labels: 'team': '{'x' * 64}' is not a valid label value: at "
     f"most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit"),
    ("metadata: {name: j1, namespace: default}",
     "metadata: {name: j1, namespace: default, labels: {'a b': c}}",
     "jobs/j.yaml:3: metadata.labels: key 'a b' is not a valid label key: an optional DNS "
     "subdomain and '/', then at most 63 letters"),
    ("    spec:\n      containers:",
     "    metadata: {annotations: {'Example.com/x': y}}\n    spec:\n      containers:",
     "jobs/j.yaml:6: spec.template.metadata.annotations: key 'Example.com/x' is not a valid "
     "annotation key"),
    ("metadata: {name: j1, namespace: default}", "metadata: [j1]",
     "jobs/j.yaml:3: metadata must be a mapping (of name, namespace, ...), not a list ['j1']"),
    ("metadata: {name: j1, namespace: default}", "metadata: {name: j1, namespace: [default]}",
     "jobs/j.yaml:3: metadata.namespace must be a string, not ['default']; write one string in "
     "place of a list"),
])
def test_a_jobs_metadata_kubernetes_would_refuse_is_an_error_at_its_line(
        old: str, new: str, said: str) -> None:
    """A pod template's metadata that was no mapping stopped every reconcile
    with a traceback; labels a cluster refuses were sent to it."""
    text = JOB.replace(old, new)
    assert text != JOB
    inputs = read({"jobs/j.yaml": text, "jobs/ok.yaml": JOB.replace("j1", "ok")})
    got = told(inputs)
    assert len(got) == 1 and got[0].startswith(said), got
    assert [str(k) for k in inputs.jobs] == ["Job default/ok"]


@pytest.mark.parametrize(("old", "new", "error"), [
    ("spec:\n", "spec:\n  suspension: {dispatching: true}\n",
     "policy.yaml:5: spec.suspension.dispatching is not supported: fleetq sends every "
     "admitted job to its cluster; to make the policy's jobs wait in their quota's queue set "
     "spec.suspension.scheduling: true, or remove the field"),
    ("spec:\n", "spec:\n  suspension:\n    dispatchingOnClusters: {clusterNames: [c1]}\n",
     "policy.yaml:6: spec.suspension.dispatchingOnClusters is not supported: fleetq sends "
     "every admitted job to its cluster; to keep the policy's jobs off those clusters, list "
     "them in spec.placement.clusterAffinity.exclude"),
    ("placement: {", "placement: {clusterAffinity: {fieldSelector: {matchExpressions: "
     "[{key: region, operator: In, values: [cn-hangzhou]}]}}, ",
     "policy.yaml:6: spec.placement.clusterAffinity.fieldSelector is not supported: "
     "fleetq's MemberClusters have no provider, region or zone fields; label the clusters "
     "(for example topology.kubernetes.io/region) and select them with "
     "spec.placement.clusterAffinity.labelSelector"),
    ("placement: {", "placement: {clusterAffinities: [{affinityName: a, clusterNames: [c1]}, "
     "{affinityName: b, fieldSelector: {}}], ",
     "policy.yaml:6: spec.placement.clusterAffinities[1].fieldSelector is not supported: "
     "fleetq's MemberClusters have no provider, region or zone fields; label the clusters "
     "(for example topology.kubernetes.io/region) and select them with "
     "spec.placement.clusterAffinities[1].labelSelector"),
    ("placement: {", "placement: {spreadConstraints: [{spreadByField: region, minGroups: 2}], ",
     "policy.yaml:6: spec.placement.spreadConstraints[0].minGroups 2 cannot be met: fleetq "
     "places each job whole on one cluster (one group); set it to 1 or remove the constraint"),
    ("customSchedulingType: Gang", "replicaSchedulingType: Duplicated",
     None),  # (with the spread constraint below)
    ("placement: {", "placement: {workloadAffinity: {}, ",
     "policy.yaml:6: spec.placement.workloadAffinity is not supported: fleetq places each "
     "job by its own policy, apart from other jobs; remove the field"),
])
def test_a_policy_field_fleetq_does_not_act_on_is_an_error_at_its_line(
        old: str, new: str, error: str | None) -> None:
    """Karmada's fields that would keep a policy's jobs off clusters, or hold
    them: read and left aside, a job would go where its policy says it must not."""
    text = POLICY.replace(old, new, 1)
    if error is None:
        text = text.replace("placement: {", "placement: {spreadConstraints: [{maxGroups: 1}], ")
        error = ("policy.yaml:6: spec.placement.spreadConstraints[0]: spread constraints of a "
                 "Duplicated policy are not supported: fleetq sends a copy to every cluster of "
                 "its affinity that fits; narrow the clusters with "
                 "spec.placement.clusterAffinity instead")
    assert text != POLICY
    inputs = read({"policy.yaml": text})
    assert told(inputs) == [error]
    assert inputs.policies == [] and inputs.unbuilt == {"policy.yaml"}


def test_a_policy_selecting_no_job_kind_fleetq_reads_is_told() -> None:
    text = POLICY.replace("kind: Job}]", "kind: Job}, {apiVersion: apps/v1, kind: Deployment}, "
                          "{apiVersion: kubeflow.org/v2, kind: PyTorchJob}]")
    inputs = read({"policy.yaml": text})
    assert told(inputs) == [] and len(inputs.policies) == 1
    kinds = ("batch/v1 Job, kubeflow.org/v1 MPIJob, kubeflow.org/v1 PyTorchJob, "
             "kubeflow.org/v2beta1 MPIJob, ray.io/v1 RayJob")
    assert told(inputs, "warning") == [
        f"policy.yaml:5: ClusterPropagationPolicy everything: spec.resourceSelectors[{i}] "
        f"selects {what}, which is no job kind fleetq reads ({kinds}): it selects nothing"
        for i, what in ((1, "apps/v1 Deployment"), (2, "kubeflow.org/v2 PyTorchJob"))]


def test_what_fleetq_does_anyway_or_does_not_need_reads() -> None:
    """A spread constraint that one cluster meets, dispatching not suspended, and
    cluster failover (told it is not acted on) read with no error."""
    text = POLICY.replace("spec:\n", (
        "spec:\n  suspension: {dispatching: false, scheduling: true}\n"
        "  failover: {cluster: {purgeMode: Directly}}\n")).replace(
        "placement: {", "placement: {spreadConstraints: [{spreadByField: cluster, "
        "maxGroups: 1, minGroups: 1}, {spreadByLabel: region}], ")
    inputs = read({"policy.yaml": text})
    assert told(inputs) == []
    policy, = inputs.policies
    assert policy.queued and policy.gang
    assert told(inputs, "warning") == [
        "policy.yaml:6: ClusterPropagationPolicy everything: spec.failover.cluster is not "
        "acted on: fleetq moves a job when the job fails or does not start "
        "(spec.failover.application), not when its cluster stops reporting"]


@pytest.mark.parametrize(("path", "old", "new", "error"), [
    ("clusters/c1.yaml", "metadata: {name: c1}", "metadata: {name: c1, labels: {gpu: true}}",
     "clusters/c1.yaml:3: metadata.labels: 'gpu' must be a string, not true (YAML reads on, "
     "off, yes, no, true and false unquoted as booleans); quote it"),
    ("clusters/c1.yaml", "  - {name: n1, ", "  - {labels: {zone: 1}, name: n1, ",
     "clusters/c1.yaml:7: spec.nodes[0].labels: 'zone' must be a string, not 1; quote it"),
    ("clusters/c1.yaml", "  nodes:\n", "  nodeGroups: [{count: 2, labels: {on: yes}}]\n"
     "  nodes:\n",
     "clusters/c1.yaml:6: spec.nodeGroups[0].labels: the key true (YAML reads on, off, yes, "
     "no, true and false unquoted as booleans) must be a string; quote it"),
    ("clusters/c1.yaml", "  nodes:\n", "  taints: [{key: gpu, effect: NoPlace}]\n  nodes:\n",
     "clusters/c1.yaml:6: spec.taints[0].effect 'NoPlace' is not one of NoSchedule, "
     "PreferNoSchedule, NoExecute"),
    ("clusters/c1.yaml", "  - {name: n1, ", "  - {taints: [{key: gpu, value: 1}], name: n1, ",
     "clusters/c1.yaml:7: spec.nodes[0].taints[0].value must be a string, not 1; quote it"),
    ("policy.yaml", "kind: Job}]", "kind: Job, labelSelector: {matchLabels: {team: 7}}}]",
     "policy.yaml:5: spec.resourceSelectors[0].labelSelector.matchLabels: 'team' must be a "
     "string, not 7; quote it"),
    ("policy.yaml", "placement: {", "placement: {clusterAffinity: {labelSelector: "
     "{matchExpressions: [{key: gpu, operator: In}]}}, ",
     "policy.yaml:6: spec.placement.clusterAffinity.labelSelector.matchExpressions[0]: "
     "operator In needs values (one or more)"),
    ("policy.yaml", "placement: {", "placement: {clusterAffinity: {labelSelector: "
     "{matchExpressions: [{key: gpu, operator: Exists, values: [a]}]}}, ",
     "policy.yaml:6: spec.placement.clusterAffinity.labelSelector.matchExpressions[0]: "
     "operator Exists takes no values; remove them"),
    ("policy.yaml", "placement: {", "placement: {clusterAffinity: {labelSelector: "
     "{matchExpressions: [{key: gpu, operator: NotIn, values: [false]}]}}, ",
     "policy.yaml:6: spec.placement.clusterAffinity.labelSelector.matchExpressions[0].values "
     "must be a string, not false (YAML reads on, off, yes, no, true and false unquoted as "
     "booleans); quote it"),
    ("policy.yaml", "placement: {", "placement: {clusterTolerations: [{key: a, effect: Nope}], ",
     "policy.yaml:6: spec.placement.clusterTolerations[0].effect 'Nope' is not one of "
     "NoSchedule, PreferNoSchedule, NoExecute (or none: every effect)"),
    ("jobs/j1.yaml", "    spec:\n", "    spec:\n      nodeSelector: {gpu: true}\n",
     "jobs/j1.yaml:7: spec.template.spec.nodeSelector: 'gpu' must be a string, not true "
     "(YAML reads on, off, yes, no, true and false unquoted as booleans); quote it; fix the "
     "manifest"),
    ("jobs/j1.yaml", "    spec:\n", "    spec:\n      tolerations: [{key: gpu, value: 1}]\n",
     "jobs/j1.yaml:7: spec.template.spec.tolerations[0].value must be a string, not 1; quote "
     "it; fix the manifest"),
])
def test_a_label_or_selector_value_yaml_reads_as_no_string_is_an_error_at_its_line(
        path: str, old: str, new: str, error: str) -> None:
    """As the Kubernetes API refuses them: taken as text, ``true`` would be
    ``True`` and match no node or cluster labelled ``"true"``. So are a taint
    effect that is none of Kubernetes' and an operator without its values."""
    files = {"clusters/c1.yaml": CLUSTER, "policy.yaml": POLICY, "jobs/j1.yaml": JOB}
    assert old in files[path]
    files[path] = files[path].replace(old, new, 1)
    assert told(read(files)) == [error]


@pytest.mark.parametrize("count", [14_998, 99_999_999_999_999])
def test_a_node_group_of_more_nodes_than_a_cluster_holds_is_an_error_at_its_count(
        count: int) -> None:
    """A count of 99,999,999,999,999 built the nodes one by one: validate and
    reconcile ran until killed, memory growing. A cluster's nodes are bounded."""
    text = CLUSTER + (f"  nodeGroups:\n"
                      f"  - {{name: g, count: {count}, allocatable: {{cpu: \"8\"}}}}\n")
    inputs = read({"clusters/c1.yaml": text})
    if count == 14_998:  # (with the 2 nodes: 15,000, the most)
        assert told(inputs) == [] and len(inputs.clusters[0].nodes) == 15_000
        return
    assert told(inputs) == [
        f"clusters/c1.yaml:10: spec.nodeGroups[0].count {count:,} gives the cluster more than "
        f"15,000 nodes, more than a Kubernetes cluster holds; give the count of its nodes"]


def test_a_value_shared_by_yaml_aliases_is_read_as_if_written_out() -> None:
    """The labels a job's metadata shares with its pods' nodeSelector (``&sel``,
    ``*sel``): the labels fleetq adds to the job were written into the
    nodeSelector too, so no node could take its pods."""
    from reconciler.fleet.documents import parse_documents
    docs, problem = parse_documents("jobs/j.yaml", JOB.replace(
        "metadata: {name: j1, namespace: default}",
        "metadata: {name: j1, namespace: default, labels: &sel {pool: general}}").replace(
        "    spec:\n", "    spec:\n      nodeSelector: *sel\n", 1))
    assert problem is None
    job = docs[0].value
    selector = job["spec"]["template"]["spec"]["nodeSelector"]
    assert selector == job["metadata"]["labels"] == {"pool": "general"}
    job["metadata"]["labels"]["fleetq.io/managed-by"] = "fleetq"
    assert selector == {"pool": "general"}


def test_a_quota_name_no_kueue_local_queue_can_have_is_a_warning_with_a_kueue_cluster() -> None:
    """``Video_Team.A`` is a label value, so a quota name; on a kueue cluster its
    jobs name a LocalQueue by it, which Kueue refuses (a DNS-1123 subdomain)."""
    tree = quota_tree_yaml('{cpu: "8"}', """\
    - name: Video_Team.A
      namespaces: [default]
      max: {cpu: "8"}
    - name: text.team-2
      namespaces: [text]
""")
    files = {"quota/tree.yaml": tree, "policy.yaml": POLICY, "clusters/c1.yaml": CLUSTER}
    assert told(read(files), "warning") == []
    files["clusters/c1.yaml"] = CLUSTER.replace("gangDialect: ack", "gangDialect: kueue")
    assert told(read(files), "warning") == [
        "quota/tree.yaml:10: quota root/Video_Team.A: its name 'Video_Team.A' would name its "
        "jobs' Kueue LocalQueue on c1 (gangDialect: kueue), and no LocalQueue can have it (a "
        "DNS-1123 subdomain: lowercase letters, digits, '-' and '.'); as Kueue would refuse "
        "them, its jobs go to no kueue cluster: rename the quota"]


def test_a_long_generate_name_is_cut_as_the_api_server_cuts_it() -> None:
    """A 61-character prefix: the API server cuts it to 58 and adds 5
    characters; fleetq added its 5 to all 61, and the job was invalid (66)."""
    prefix = "x" * 61
    text = JOB.replace("metadata: {name: j1, namespace: default}",
                       f"metadata: {{generateName: {prefix}, namespace: default}}")
    inputs = read({"jobs/j.yaml": text})
    assert told(inputs) == [] and not inputs.invalid
    (name,) = [key.name for key in inputs.jobs]
    assert len(name) == 63 and name.startswith("x" * 58) and not name.startswith("x" * 59)


@pytest.mark.parametrize(("value", "said"), [
    ("2026-01-01", "metadata.creationTimestamp 2026-01-01 is a date, not an RFC 3339 time, "
                   "which Kubernetes refuses; write e.g. 2026-01-01T00:00:00Z"),
    ("2026-01-01 10:00:00", "metadata.creationTimestamp 2026-01-01 10:00:00 has no time "
                            "zone, which Kubernetes refuses; write it in RFC 3339, e.g. "
                            "2026-01-01T10:00:00Z"),
    ("'20260101T100000Z'", "metadata.creationTimestamp '20260101T100000Z' is not an RFC "
                           "3339 time (e.g. 2026-01-01T10:00:00Z)"),
    ("'2026-01-01 10:00:00Z'", "metadata.creationTimestamp '2026-01-01 10:00:00Z' is not"),
    ("'2026-01-01'", "metadata.creationTimestamp 2026-01-01 is a date, not an RFC 3339 time"),
    ("'2026-01-01T10:00:00'", "metadata.creationTimestamp 2026-01-01T10:00:00 has no time "
                              "zone, which Kubernetes refuses; write it in RFC 3339, e.g. "
                              "2026-01-01T10:00:00Z"),
])
def test_a_creation_time_kubernetes_refuses_is_an_error_at_its_line(value: str,
                                                                    said: str) -> None:
    """Its manifest is rendered as written, which no cluster would take; the
    job's enqueue time would be read from it meanwhile."""
    text = JOB.replace("metadata: {name: j1, namespace: default}",
                       f"metadata:\n  name: j1\n  creationTimestamp: {value}")
    inputs = read({"jobs/j.yaml": text})
    assert not inputs.jobs and [bad.key.name for bad in inputs.invalid] == ["j1"]
    assert told(inputs) and told(inputs)[0].startswith(f"jobs/j.yaml:5: {said}"), told(inputs)


@pytest.mark.parametrize(("value", "enqueued"), [
    ("2026-01-01T10:00:00Z", "2026-01-01T10:00:00Z"),
    ("'2026-01-01T12:00:00.5+02:00'", "2026-01-01T10:00:00Z"),
    ("2026-01-01t10:00:00z", "2026-01-01T10:00:00Z"),
])
def test_an_rfc_3339_creation_time_is_the_enqueue_time_in_utc(value: str,
                                                              enqueued: str) -> None:
    text = JOB.replace("metadata: {name: j1, namespace: default}",
                       f"metadata:\n  name: j1\n  creationTimestamp: {value}")
    inputs = read({"jobs/j.yaml": text})
    assert [s.job.created_at for s in inputs.jobs.values()] == [enqueued], told(inputs)


def test_a_value_of_megabytes_quoted_in_a_message_is_cut_to_its_start_and_end() -> None:
    """A wrong value is quoted where it is told: one of a megabyte made a line of
    a megabyte, in the output and in the job's reason in placements.yaml."""
    long = "x" * 1_000_000
    text = JOB.replace("metadata: {name: j1, namespace: default}",
                       f"metadata:\n  name: j1\n  namespace: default\n"
                       f"  annotations: {{a: [{long}]}}")
    inputs = read({"jobs/j.yaml": text, "jobs/ok.yaml": JOB.replace("j1", "ok")})
    assert [str(k) for k in inputs.jobs] == ["Job default/ok"]
    [message] = told(inputs)
    assert len(message) < MAX_MESSAGE + 100
    assert message.startswith("jobs/j.yaml:6: metadata.annotations: 'a' must be a string, "
                              "not ['xxx")
    assert " characters left out) ... " in message
    assert message.endswith("; write one string in place of a list; fix the manifest")
    [bad] = inputs.invalid
    assert len(bad.message) <= MAX_MESSAGE + 60 and "in place of a list" in bad.message[-60:]


@pytest.mark.parametrize(("size", "invalid"), [(200_000, False), (300_000, True)])
def test_annotations_larger_than_the_api_server_takes_make_a_job_invalid(
        size: int, invalid: bool) -> None:
    """An object's annotations hold 256 KiB at most: a job with more was
    admitted, held its quota and could never be created."""
    text = JOB.replace("metadata: {name: j1, namespace: default}",
                       f"metadata:\n  name: j1\n  namespace: default\n"
                       f"  annotations: {{notes: '{'x' * size}'}}")
    inputs = read({"jobs/j.yaml": text})
    if not invalid:
        assert [str(k) for k in inputs.jobs] == ["Job default/j1"] and told(inputs) == []
        return
    assert not inputs.jobs
    assert told(inputs) == [
        "jobs/j.yaml:6: metadata.annotations: 300,005 bytes in all, more than the 262,144 the "
        "API server takes (keys and values together); keep large data in a ConfigMap; fix the "
        "manifest"]


def test_a_misspelt_kind_is_told_at_the_line_of_its_kind() -> None:
    inputs = read({"jobs/p.yaml": "# a job\napiVersion: kubeflow.org/v1\nmetadata: {name: p}\n"
                                  "kind: PyTorchJobb\nspec: {}\n"})
    assert [line.split(" is not a kind")[0] for line in told(inputs)] == [
        "jobs/p.yaml:4: kubeflow.org/v1 PyTorchJobb"]


@pytest.mark.parametrize("kind", ["Jobb", "Jbo", "job", "Jobs"])
def test_a_job_kind_too_short_for_likeness_misspelt_is_an_error(kind: str) -> None:
    """``kind: Jobb`` was a warning that the document is ignored: a running
    Job's file so edited deleted it from its cluster. A letter or so from a
    kind fleetq reads, of the same API group, it is a typo: an error naming the
    kind meant, and the file counts as broken (its jobs keep their places). A
    kind of another group (Volcano's Job), or further away, is still left alone."""
    inputs = read({"jobs/j.yaml": JOB.replace("kind: Job\n", f"kind: {kind}\n", 1)})
    assert told(inputs) == [f"jobs/j.yaml:2: batch/v1 {kind} is not a kind fleetq reads: did "
                            f"you mean batch/v1 Job? Fix it (until then, the job keeps its "
                            f"placement, if it has one)"]
    assert "jobs/j.yaml" in inputs.broken_paths
    for api_version, other in (("batch.volcano.sh/v1alpha1", kind), ("batch/v1", "CronJob")):
        left = read({"jobs/j.yaml": JOB.replace("kind: Job\n", f"kind: {other}\n", 1).replace(
            "apiVersion: batch/v1\n", f"apiVersion: {api_version}\n", 1)})
        assert not left.broken_paths and not told(left), (api_version, other)


def test_a_job_defined_twice_is_told_at_its_name_or_where_an_alias_repeats_it() -> None:
    """Each copy at the line of its name, naming the other's; where a YAML
    alias gives both the one name node, at their items, and said."""
    two = JOB.replace("metadata: {name: j1, namespace: default}",
                      "metadata:\n  namespace: default\n  name: j1")
    inputs = read({"jobs/a.yaml": two, "jobs/b.yaml": "# the same\n" + two})
    assert [p.split(";")[0] for p in told(inputs)] == [
        "jobs/b.yaml:6: Job default/j1 is also defined at jobs/a.yaml:5"]
    item = ("- apiVersion: batch/v1\n  kind: Job\n  metadata: {meta}\n  spec:\n"
            "    template:\n      spec:\n        restartPolicy: Never\n"
            "        containers: [{{name: c, image: busybox}}]\n")
    listed = ("apiVersion: v1\nkind: List\nitems:\n"
              + item.format(meta="&m {namespace: default, name: j1}") + item.format(meta="*m"))
    inputs = read({"jobs/l.yaml": listed})
    assert [p.split(";")[0] for p in told(inputs)] == [
        "jobs/l.yaml:12: Job default/j1 is also defined at jobs/l.yaml:4 (a YAML alias "
        "repeats it)"]


def test_an_empty_containers_list_and_a_generate_name_not_a_string_are_told_at_their_lines(
        ) -> None:
    empty = JOB.replace("      containers:", "      containers: []\n      was:", 1)
    named = JOB.replace("metadata: {name: j1, namespace: default}",
                        "metadata:\n  generateName: 123\n  namespace: default")
    inputs = read({"jobs/a.yaml": empty, "jobs/b.yaml": named})
    assert [p.split(";")[0] for p in told(inputs)] == [
        "jobs/a.yaml:7: spec.template.spec.containers must list at least one container",
        "jobs/b.yaml:4: metadata.generateName must be a string, not 123"]


def test_a_count_or_a_pod_label_that_is_wrong_hides_none_of_the_jobs_other_mistakes() -> None:
    """A negative parallelism stopped the reading of the pod sets, and a
    template's label that is no string the reading of that pod set, so the
    job's other mistakes were told only once those were fixed, one round of
    pushes each; and a missing restartPolicy, told at the pod's spec, hid the
    mistakes of every field inside it."""
    job = ("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: default}\nspec:\n"
           "  parallelism: -2\n  template:\n    metadata:\n      labels: {team: 1}\n"
           "    spec:\n      containers:\n      - name: c\n        image: busybox\n"
           "        imagePullPolicy: always\n        command: python train.py\n"
           "        resources: {requests: {cpu: lots}}\n")
    lines = [t.split(":")[1] + ":" + t.split(":")[2].split(" ")[1]
             for t in told(read({"jobs/j.yaml": job}))]
    assert lines == ["5:spec.parallelism", "8:spec.template.metadata.labels.team",
                     "9:spec.template.spec.restartPolicy",
                     "13:spec.template.spec.containers[0].imagePullPolicy",
                     "14:spec.template.spec.containers[0].command",
                     "15:spec.template.spec.containers[0].resources.requests.cpu"], lines


@pytest.mark.parametrize(("data", "said"), [
    ("kind: ConfigMap\ndata:\n  retries: 3\n  ok: 'yes'\n",
     "deps.yaml:6: data.retries is 3, not text: the API server refuses it; quote it"),
    ("kind: ConfigMap\ndata: [1, 2]\n",
     "deps.yaml:5: data must be a mapping of keys to text, not a list"),
    ("kind: ConfigMap\nbinaryData:\n  blob: 'not base64 !!'\n",
     "deps.yaml:6: binaryData.blob is not base64: the API server refuses it; encode it "
     "(base64 -w0)"),
    ("kind: ConfigMap\ndata:\n  'a b': x\n",
     "deps.yaml:6: data key 'a b' is no key the API server takes (at most 253 letters, digits, "
     "'-', '_' and '.', not '.' or '..' nor starting with '..'); rename it"),
    ("kind: ConfigMap\ndata:\n  ..data: x\n",
     "deps.yaml:5: data key '..data' is no key the API server takes (at most 253 letters, "
     "digits, '-', '_' and '.', not '.' or '..' nor starting with '..'); rename it"),
    ("kind: ConfigMap\ndata:\n  dup: x\nbinaryData:\n  dup: eA==\n",
     "deps.yaml:8: binaryData.dup: data holds key 'dup' too; the API server takes a key once; "
     "rename one"),
    ("kind: ConfigMap\ndata:\n  big: '" + "x" * (1 << 20) + "'\n",
     "deps.yaml:5: its data holds 1,048,579 bytes, more than the 1,048,576 (1 MiB) the API "
     "server takes of a ConfigMap; split it, or mount the data another way (a volume)"),
    ("kind: Secret\ndata:\n  token: 'not base64 !!'\n",
     "deps.yaml:6: data.token is not base64: the API server refuses it; encode it (base64 "
     "-w0), or put it under stringData"),
    ("kind: Secret\nstringData: [a, b]\n",
     "deps.yaml:5: stringData must be a mapping of keys to text, not a list"),
    ("kind: Secret\ndata:\n  token: dG9rZW4=\n  empty:\nstringData:\n  user: admin\n", None),
    ("kind: ConfigMap\ndata:\n  a.b_c-d: '3'\nbinaryData:\n  blob: |\n    aGVs\n    bG8=\n",
     None),
], ids=lambda value: str(value)[:40])
def test_a_config_map_or_secret_whose_data_the_api_server_refuses_is_an_error(
        data: str, said: str | None) -> None:
    """A ConfigMap with ``retries: 3`` in its data went to the cluster as it
    was, where the API server refuses it: the job that mounts it ran without
    it. Its file is told at the data's line, and does not build."""
    got = read({"deps.yaml": "apiVersion: v1\n# a dependency\nmetadata: {name: code, "
                             "namespace: team-a}\n" + data})
    assert told(got) == ([said] if said else [])
    assert ("deps.yaml" in got.unbuilt) == (said is not None)
    assert bool(got.dependencies) == (said is None)


@pytest.mark.parametrize(("selectors", "said"), [
    ("all", "policies/p.yaml:5: spec.resourceSelectors must be a list of selectors, not a "
            "string 'all'; write one selector per item (- apiVersion: ..., kind: ...)"),
    ("[]", "policies/p.yaml:5: spec.resourceSelectors must list at least one selector"),
])
def test_resource_selectors_that_are_no_list_are_told_as_such(selectors: str, said: str) -> None:
    """``resourceSelectors: all`` was told as if the list were empty."""
    text = POLICY.replace("resourceSelectors: [{apiVersion: batch/v1, kind: Job}]",
                          f"resourceSelectors: {selectors}")
    assert told(read({"policies/p.yaml": text})) == [said]


@pytest.mark.parametrize(("path", "text", "then"), [
    ("jobs/j.yaml", JOB.replace("kind: Job", "kind: Jb"),
     "the job keeps its placement, if it has one"),
    ("policies/p.yaml", POLICY.replace("kind: ClusterPropagationPolicy",
                                       "kind: ClusterPropagationPolcy"),
     "this file is read as it last was, and jobs keep their placements"),
])
def test_a_misspelt_kind_says_what_goes_on_meanwhile_for_what_it_meant(
        path: str, text: str, then: str) -> None:
    """A job's misspelt kind was told what becomes of a file that defines the
    fleet; each is told what becomes of what it meant."""
    [said] = told(read({path: text}))
    assert said.startswith(f"{path}:2: ") and said.endswith(f"? Fix it (until then, {then})")
    assert "did you mean" in said


def test_every_mistake_of_a_quota_tree_is_told_at_once() -> None:
    """The tree's mistakes of form came one a fix: a negative max, then a
    number too large, then a quantity that is none, and so on. All are told
    together, each at its line, as a job's are."""
    tree = """apiVersion: scheduling.sigs.k8s.io/v1beta1
kind: ElasticQuotaTree
metadata: {name: t, namespace: kube-system}
spec:
  root:
    name: root
    max: {cpu: -1, memory: 1e400}
    min: {cpu: "abc"}
    children:
    - name: a
      namespaces: team
      max: {cpu: yes}
      min: [1]
    - max: {cpu: 4}
      mni: {cpu: 1}
    - hello
"""
    got = told(read({"quota.yaml": tree}))
    assert [line.split(": ", 2)[:2] for line in got] == [
        ["quota.yaml:7", "spec.root.max.cpu"], ["quota.yaml:7", "spec.root.max.memory"],
        ["quota.yaml:8", "spec.root.min.cpu"],
        ["quota.yaml:11", "spec.root.children[0].namespaces must be a list"],
        ["quota.yaml:12", "spec.root.children[0].max.cpu"],
        ["quota.yaml:13", "spec.root.children[0].min must be a mapping of resource names to "
                          "quantities"],
        ["quota.yaml:14", "spec.root.children[1] needs a name"],
        ["quota.yaml:15", "spec.root.children[1].mni is not a field of ElasticQuotaTree"],
        ["quota.yaml:16", "spec.root.children[2] must be a mapping (a quota"]], got
    assert got[-1].endswith("(a quota: name, namespaces, min, max, children), not a string "
                            "'hello'"), got


@pytest.mark.parametrize(("spec", "said"), [
    ("  rayClusterSpec:\n    enableInTreeAutoscaling: true\n",
     "jobs/r.yaml:9: spec.rayClusterSpec.enableInTreeAutoscaling is true: fleetq reserves the 2 "
     "worker pod(s) the job starts with, and the Ray autoscaler may add more without bound (a "
     "group sets no maxReplicas), beyond what its quota and cluster were checked for; set each "
     "worker group's maxReplicas to its replicas to keep it within them"),
    ("  rayClusterSpec:\n    enableInTreeAutoscaling: true\n",
     "jobs/r.yaml:9: spec.rayClusterSpec.enableInTreeAutoscaling is true: fleetq reserves the 2 "
     "worker pod(s) the job starts with, and the Ray autoscaler may add up to 7 more, beyond "
     "what its quota and cluster were checked for; set each worker group's maxReplicas to its "
     "replicas to keep it within them"),
    ("  rayClusterSpec:\n    enableInTreeAutoscaling: true\n", None),  # (each max its replicas)
    ("  rayClusterSpec:\n    enableInTreeAutoscaling: false\n", None),
])
def test_an_autoscaling_rayjob_is_warned_of_what_it_may_grow_by(spec: str,
                                                                said: str | None) -> None:
    """It was reserved at the size it starts with, with no word that the
    autoscaler may grow it past its quota's max and its cluster's room."""
    text = RAYJOB.replace("NAME", "groupName: cpu").replace("  rayClusterSpec:\n", spec, 1)
    if said is None or "up to" in said:  # (at its replicas; or the second group to 8)
        text = text.replace("      replicas: 1\n", "      replicas: 1\n      maxReplicas: 1\n")
    if said is not None and "up to" in said:
        text = "maxReplicas: 8".join(text.rsplit("maxReplicas: 1", 1))
    got = read({"jobs/r.yaml": text})
    assert told(got) == [] and len(got.jobs) == 1
    assert told(got, "warning") == ([said] if said else [])


def test_an_elastic_pytorchjob_under_metrics_is_warned_of_what_it_may_grow_by() -> None:
    elastic = ("  elasticPolicy:\n    maxReplicas: 6\n    metrics: [{type: Resource, resource: "
               "{name: cpu, target: {type: Utilization, averageUtilization: 80}}}]\n")
    text = PYTORCHJOB.replace("spec:\n  pytorchReplicaSpecs:", "spec:\n" + elastic +
                              "  pytorchReplicaSpecs:", 1)
    assert told(read({"jobs/p1.yaml": text}), "warning") == [
        "jobs/p1.yaml:6: spec.elasticPolicy.maxReplicas is 6 under metrics: fleetq reserves the 2 "
        "worker(s) the job starts with, and the training operator may scale them up to 6, beyond "
        "what its quota and cluster were checked for; set maxReplicas to the workers' replicas "
        "to keep it within them"]
    # (without metrics nothing scales it; at its replicas it cannot grow)
    for still in (text.split("    metrics:")[0] + "  pytorchReplicaSpecs:" +
                  text.split("  pytorchReplicaSpecs:", 1)[1],
                  text.replace("maxReplicas: 6", "maxReplicas: 2")):
        assert told(read({"jobs/p1.yaml": still}), "warning") == []


@pytest.mark.parametrize(("policy", "said"), [
    ("    minReplicas: 4\n    maxReplicas: 2\n",
     "jobs/p1.yaml:6: spec.elasticPolicy.minReplicas is 4, above its maxReplicas 2: the "
     "training operator starts each worker's torchrun with --nnodes=4:2, which torchrun "
     "refuses; lower minReplicas or raise maxReplicas; fix the manifest"),
    ("    minReplicas: 2\n    maxReplicas: 2\n", None),
    ("    minReplicas: 4\n", None),  # (no max: nothing to be above)
    ("    nProcPerNode: 2\n  nprocPerNode: '2'\n",
     "jobs/p1.yaml:6: spec.elasticPolicy.nProcPerNode and spec.nprocPerNode are both set: the "
     "training operator's webhook refuses the old field beside the new one; keep "
     "spec.nprocPerNode alone; fix the manifest"),
    ("    nProcPerNode: 2\n", None),
])
def test_an_elastic_policy_the_training_operator_or_torchrun_refuses_is_an_error_at_its_line(
        policy: str, said: str | None) -> None:
    """Such a job was queued and sent: its webhook refuses the two places of
    nproc per node; with min above max each worker's torchrun fails at start,
    and the job held its quota and room without training."""
    text = PYTORCHJOB.replace("spec:\n  pytorchReplicaSpecs:",
                              "spec:\n  elasticPolicy:\n" + policy + "  pytorchReplicaSpecs:", 1)
    got = read({"jobs/p1.yaml": text})
    assert told(got) == ([said] if said else [])
    assert len(got.jobs) == (0 if said else 1)


@pytest.mark.parametrize(("policy", "said"), [
    ("    minReplicas: 4\n    maxReplicas: 4\n",
     "jobs/p1.yaml:17: spec.pytorchReplicaSpecs.Worker.replicas is 2, below "
     "spec.elasticPolicy.minReplicas 4: torchrun waits for 4 workers to join before it "
     "trains; fleetq reserves the 2 the job starts with, and more come only from the training "
     "operator's autoscaler (under metrics), beyond them; set the workers' replicas to "
     "minReplicas at least"),
    ("    minReplicas: 2\n    maxReplicas: 4\n", None),
])
def test_elastic_workers_that_start_below_the_min_are_warned_of(policy: str,
                                                                said: str | None) -> None:
    text = PYTORCHJOB.replace("spec:\n  pytorchReplicaSpecs:",
                              "spec:\n  elasticPolicy:\n" + policy + "  pytorchReplicaSpecs:", 1)
    got = read({"jobs/p1.yaml": text})
    assert told(got) == [] and len(got.jobs) == 1
    assert told(got, "warning") == ([said] if said else [])


@pytest.mark.parametrize(("policies", "said"), [
    ("  cleanPodPolicy: All\n  runPolicy: {cleanPodPolicy: None}\n",
     "jobs/p1.yaml:5: spec.cleanPodPolicy is 'All' and spec.runPolicy.cleanPodPolicy is 'None': "
     "the training operator reads runPolicy's alone (the old place is not in its CRD), so "
     "'None' holds; remove spec.cleanPodPolicy, or move its value to runPolicy"),
    ("  cleanPodPolicy: All\n  runPolicy: {cleanPodPolicy: All}\n", None),
    ("  cleanPodPolicy: All\n", None),  # (moved to runPolicy as it is sent)
])
def test_an_old_clean_pod_policy_that_does_not_hold_is_warned_of(policies: str,
                                                                 said: str | None) -> None:
    """It was dropped with no word: the job was sent with runPolicy's."""
    text = PYTORCHJOB.replace("spec:\n", "spec:\n" + policies, 1)
    got = read({"jobs/p1.yaml": text})
    assert told(got) == [] and len(got.jobs) == 1
    assert told(got, "warning") == ([said] if said else [])


def test_a_list_where_a_container_image_goes_is_not_told_to_be_quoted() -> None:
    text = JOB.replace("{name: main, image: busybox,", "{name: main, image: [busybox],")
    assert told(read({"jobs/j.yaml": text})) == [
        "jobs/j.yaml:7: spec.template.spec.containers[0].image must be a string, not "
        "['busybox']; write one string in place of a list; fix the manifest"]


def test_a_job_larger_than_etcd_stores_is_invalid_and_one_just_under_is_not() -> None:
    """A Job of 21 MB (an env of 200,000 values) was admitted, rendered and
    sent: the API server refuses an object etcd cannot store (1.5 MiB as
    JSON), and the job held its quota, running nowhere."""
    def with_env(size: int) -> str:
        return JOB.replace('resources: {requests: {cpu: "1"}}}]',
                           'resources: {requests: {cpu: "1"}}, '
                           f'env: [{{name: BIG, value: "{"x" * size}"}}]}}]')

    big = read({"jobs/big.yaml": with_env(3 << 19)})
    assert [bad.key.name for bad in big.invalid] == ["j1"] and not big.jobs
    message = big.invalid[0].message
    assert message.startswith("the job is 1,573,") and "bytes as the API server stores it " \
        "(JSON), more than the 1,572,864 (1.5 MiB) etcd takes of an object" in message
    assert big.invalid[0].line == 1
    under = read({"jobs/big.yaml": with_env((3 << 19) - 1000)})
    assert not under.invalid and [key.name for key in under.jobs] == ["j1"]


def test_a_document_that_is_a_list_is_told_with_how_to_leave_its_file_out() -> None:
    """A kustomize patch (a JSON6902 list) in the fleet repo: told as no
    Kubernetes object, with the exclude pattern that leaves it out, as a
    document with no kind is."""
    inputs = read({"patches/replicas.yaml": "- op: replace\n  path: /spec/replicas\n"
                                            "  value: 2\n"})
    assert told(inputs) == [
        "patches/replicas.yaml:1: document 1 is a list, not a Kubernetes object; every "
        "document needs apiVersion, kind and metadata, or, if the file is not a Kubernetes "
        "manifest (a kustomize patch, a values file), exclude it in fleet.yaml (spec.exclude: "
        "['patches/replicas.yaml'])"]


def test_a_job_made_large_by_aliases_is_refused_though_its_file_is_small() -> None:
    """The size of a job is looked at where its file could hold one too large:
    aliases expand what they name, so a 100 KB file of 20 aliased values is
    2 MB as the API server stores it."""
    value = "x" * 100_000
    text = JOB.replace('resources: {requests: {cpu: "1"}}}]',
                       'resources: {requests: {cpu: "1"}}, env: ['
                       f'{{name: V0, value: &big "{value}"}}, '
                       + ", ".join(f"{{name: V{i}, value: *big}}" for i in range(1, 20))
                       + "]}]")
    assert len(text) < 3 << 19
    inputs = read({"jobs/aliased.yaml": text})
    assert [bad.key.name for bad in inputs.invalid] == ["j1"], told(inputs)
    assert "as the API server stores it (JSON), more than the 1,572,864" in \
        inputs.invalid[0].message


def test_a_document_that_is_a_list_in_a_file_of_objects_is_told_to_be_taken_out() -> None:
    """The file holds a job too: excluding it, as told of a file of patches,
    would take the job out of the fleet."""
    inputs = read({"jobs/j.yaml": JOB + "---\n- stray\n"})
    assert told(inputs) == [
        "jobs/j.yaml:10: document 2 is a list, not a Kubernetes object; every document needs "
        "apiVersion, kind and metadata; take it out of the file"]
