"""``fleetq observe`` against Kubernetes API servers: each member cluster's
context of a kubeconfig file points at a small local HTTP server that speaks
the few GET endpoints the Kubernetes client calls (nodes, and each job kind
fleetq knows, filtered by ``labelSelector=fleetq.io/managed-by=fleetq``).

The fleet is the template's (``fleetq init``), each MemberCluster's
``spec.kubeconfigContext`` renamed ``ctx-<cluster>`` so that the context is
seen to come from it. Each server serves the jobs the state placed on its
cluster as the cluster would show them once applied (the rendered manifests
of ``fleetq/state``, with a ``status``), plus objects fleetq does not manage.
After the template's first reconcile, in ``text`` (at most two jobs at once,
``kube-queue/max-jobs``) ``llm-sft-hotfix`` and ``llama-lora-sft`` run on
gpu-bj-b and ``embedding-eval-ray`` waits first in the queue.

Every server listens on 127.0.0.1 (port 0) in a thread and is shut down when
its test ends; the CLI runs in process (``reconciler.cli.main``).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from reconciler import cli

from .conftest import (
    commit_all,
    git,
    placements,
    rev,
    state_files,
    state_show,
    state_yaml,
)

CLUSTERS = ("cpu-sh-c", "gpu-bj-b", "gpu-hz-a")
EDITED = "2026-12-04T09:00:00Z"  # the commit that sets the contexts
START = "2026-12-04T10:00:00Z"  # the first reconcile: jobs admitted
RAN = "2026-12-04T10:05:00Z"
DONE = "2026-12-04T10:30:00Z"
OBSERVED = "2026-12-04T10:31:00Z"
NEXT = "2026-12-04T10:32:00Z"
LATER = "2026-12-04T10:40:00Z"

HOTFIX = "text/llm-sft-hotfix"
LLAMA = "text/llama-lora-sft"
WAITING = "text/embedding-eval-ray"  # first in text's queue
AFTER = "text/tokenizer-ablation"  # second in text's queue
MAE = "video/video-mae-pretrain"

MANAGED = "fleetq.io/managed-by"
SELECTOR = f"{MANAGED}=fleetq"
NODES = "/api/v1/nodes"
# endpoint -> (the list's kind, the items' apiVersion, kind)
JOB_ENDPOINTS = {
    "/apis/kubeflow.org/v1/pytorchjobs": ("PyTorchJobList", "kubeflow.org/v1", "PyTorchJob"),
    "/apis/ray.io/v1/rayjobs": ("RayJobList", "ray.io/v1", "RayJob"),
    "/apis/kubeflow.org/v2beta1/mpijobs": ("MPIJobList", "kubeflow.org/v2beta1", "MPIJob"),
    "/apis/kubeflow.org/v1/mpijobs": ("MPIJobList", "kubeflow.org/v1", "MPIJob"),
    "/apis/batch/v1/jobs": ("JobList", "batch/v1", "Job"),
}
ENDPOINTS = {NODES: ("NodeList", "v1", "Node"), **JOB_ENDPOINTS}
BUILT_IN = {"v1", "batch/v1"}  # the API leaves apiVersion and kind out of their lists' items
CUSTOM = [p for p in JOB_ENDPOINTS if JOB_ENDPOINTS[p][1] not in BUILT_IN]


# -- a Kubernetes API server ----------------------------------------------------

@dataclass
class FakeCluster:
    """What one member cluster's API server serves, and what it was asked."""

    objects: list[dict[str, Any]] = field(default_factory=list)  # nodes and jobs
    not_served: set[str] = field(default_factory=set)  # endpoints answered 404
    refuse: dict[str, int] = field(default_factory=dict)  # endpoint ("*": any) -> status
    body: bytes | None = None  # every answer: 200 with this body (not JSON)
    requests: list[tuple[str, dict[str, list[str]]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def asked(self) -> dict[str, dict[str, list[str]]]:
        with self.lock:
            return dict(self.requests)

    def listing(self, path: str, query: Mapping[str, list[str]]) -> dict[str, Any]:
        list_kind, api_version, kind = ENDPOINTS[path]
        wanted = dict(s.split("=", 1) for s in query.get("labelSelector", [""])[0].split(",")
                      if "=" in s)
        items = []
        for obj in self.objects:
            labels = obj.get("metadata", {}).get("labels") or {}
            if (obj["apiVersion"], obj["kind"]) != (api_version, kind) or any(
                    labels.get(k) != v for k, v in wanted.items()):
                continue
            if api_version in BUILT_IN:
                obj = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
            items.append(obj)
        return {"kind": list_kind, "apiVersion": api_version,
                "metadata": {"resourceVersion": "4711"}, "items": items}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    cluster: FakeCluster


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = 5  # (a connection that says nothing is dropped, not waited on)

    def do_GET(self) -> None:
        cluster = self.server.cluster
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        with cluster.lock:
            cluster.requests.append((url.path, query))
        refused = cluster.refuse.get(url.path) or cluster.refuse.get("*")
        if refused:
            self._status(refused, "Forbidden" if refused == 403 else "InternalError")
        elif cluster.body is not None:
            self._send(200, cluster.body, "text/html")
        elif url.path not in ENDPOINTS or url.path in cluster.not_served:
            self._status(404, "NotFound")
        elif url.path in JOB_ENDPOINTS and query.get("labelSelector") != [SELECTOR]:
            self._status(400, "BadRequest")  # (fleetq asks for its own jobs alone)
        else:
            self._send(200, json.dumps(cluster.listing(url.path, query)).encode())

    def _status(self, code: int, reason: str) -> None:
        body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason,
                "message": f"{reason} {self.path}", "code": code}
        self._send(code, json.dumps(body).encode())

    def _send(self, code: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


Serve = Callable[[FakeCluster], str]


@pytest.fixture
def serve() -> Iterator[Serve]:
    """Start an API server for a ``FakeCluster``; its URL. Every server is
    stopped when the test ends."""
    running: list[tuple[_Server, threading.Thread]] = []

    def start(cluster: FakeCluster) -> str:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.cluster = cluster
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                  daemon=True)
        thread.start()
        running.append((server, thread))
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server, thread in running:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
        assert not thread.is_alive()


def closed_port_url() -> str:
    """The URL of a port nothing listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def write_kubeconfig(path: Path, servers: Mapping[str, str]) -> Path:
    """A kubeconfig with one context per ``servers`` entry (context -> URL), no auth."""
    config = {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": f"k8s-{c}", "cluster": {"server": url}}
                     for c, url in servers.items()],
        "users": [{"name": "nobody", "user": {}}],
        "contexts": [{"name": c, "context": {"cluster": f"k8s-{c}", "user": "nobody"}}
                     for c in servers],
        "current-context": next(iter(servers)),
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def no_proxy_no_kubeconfig(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Kubernetes client takes a proxy from the environment, and a
    kubeconfig from $KUBECONFIG: neither of the developer's is used."""
    import os

    for name in list(os.environ):
        if name.lower().endswith("_proxy") or name == "KUBECONFIG":
            monkeypatch.delenv(name)


# -- the fleet and what its clusters show ---------------------------------------

def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``fleetq ARGS`` in process: its exit code, stdout and stderr."""
    capsys.readouterr()
    code = cli.main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def context(cluster: str) -> str:
    return f"ctx-{cluster}"


@pytest.fixture
def fleet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """The template fleet, its MemberClusters' contexts ``ctx-<name>``,
    reconciled at ``START``."""
    path = tmp_path / "fleet"
    assert run(capsys, "init", str(path))[0] == 0
    for name in CLUSTERS:
        file = path / "clusters" / f"{name}.yaml"
        text = file.read_text(encoding="utf-8")
        assert f"kubeconfigContext: {name}\n" in text
        file.write_text(text.replace(f"kubeconfigContext: {name}\n",
                                     f"kubeconfigContext: {context(name)}\n"), encoding="utf-8")
    commit_all(path, "contexts of the member clusters", date=EDITED)
    code, _, err = run(capsys, "reconcile", "--repo", str(path), "--now", START, "-q")
    assert code == 0, err
    items = placements(path)
    assert items[HOTFIX]["phase"] == "Admitted" and items[HOTFIX]["cluster"] == "gpu-bj-b"
    assert items[LLAMA]["phase"] == "Admitted" and items[LLAMA]["cluster"] == "gpu-bj-b"
    assert items[WAITING]["phase"] == "Queued" and items[WAITING]["position"] == 1
    assert items[AFTER]["phase"] == "Queued" and items[AFTER]["position"] == 2
    assert items[MAE]["phase"] == "Admitted" and items[MAE]["cluster"] == "gpu-hz-a"
    return path


def applied(fleet: Path, cluster: str, statuses: Mapping[str, Mapping[str, Any]]
            ) -> list[dict[str, Any]]:
    """The jobs the state placed on ``cluster``, as its API serves them once
    applied: the rendered manifests, with a uid and the status given by
    ``namespace/name`` (none: just created)."""
    out = []
    for path in state_files(fleet):
        if not path.startswith(f"clusters/{cluster}/"):
            continue
        for doc in yaml.safe_load_all(state_show(fleet, path) or ""):
            if not isinstance(doc, dict) or f"{doc['apiVersion']}|{doc['kind']}" not in {
                    f"{v}|{k}" for _, v, k in JOB_ENDPOINTS.values()}:
                continue
            meta = doc["metadata"]
            assert meta["labels"][MANAGED] == "fleetq"
            key = f"{meta['namespace']}/{meta['name']}"
            doc["metadata"] = {**meta, "uid": f"uid-{meta['name']}", "resourceVersion": "42",
                               "creationTimestamp": START}
            if key in statuses:
                doc["status"] = dict(statuses[key])
            out.append(doc)
    return out


def kubeflow(condition: str, at: str, message: str = "") -> dict[str, Any]:
    """A Kubeflow job's status (training-operator) once ``condition`` is true."""
    conditions = [{"type": "Created", "status": "True", "lastTransitionTime": START,
                   "lastUpdateTime": START, "reason": "PyTorchJobCreated"}]
    if condition != "Created":
        conditions.append({"type": condition, "status": "True", "lastTransitionTime": at,
                           "lastUpdateTime": at, "message": message})
    return {"conditions": conditions, "startTime": START}


def k8s_node(name: str, allocatable: Mapping[str, str], *, labels: Mapping[str, str],
             taints: list[dict[str, str]] | None = None, ready: bool = True,
             cordoned: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"podCIDR": "10.1.0.0/24", "providerID": f"fake://{name}"}
    if taints:
        spec["taints"] = taints
    if cordoned:
        spec["unschedulable"] = True
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-{name}", "labels": dict(labels)},
            "spec": spec,
            "status": {"capacity": dict(allocatable), "allocatable": dict(allocatable),
                       "conditions": [
                           {"type": "MemoryPressure", "status": "False"},
                           {"type": "Ready", "status": "True" if ready else "False",
                            "reason": "KubeletReady" if ready else "KubeletNotReady"}]}}


GPU = {"cpu": "128", "memory": "1024Gi", "nvidia.com/gpu": "8", "pods": "110"}
GENERAL = {"cpu": "64", "memory": "256Gi", "pods": "110"}
HZ_GPU = {"cpu": "96", "memory": "768Gi", "nvidia.com/gpu": "8", "pods": "110"}
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def bj_nodes() -> list[dict[str, Any]]:
    """gpu-bj-b's nodes, as its node groups declare them."""
    return [
        *(k8s_node(f"bj-b-a100-{i}", GPU, labels={"nvidia.com/gpu.product": "A100"},
                   taints=[GPU_TAINT]) for i in range(2)),
        *(k8s_node(f"bj-b-general-{i}", GENERAL, labels={"pool": "general"})
          for i in range(2))]


def hz_nodes(*, cordoned: int | None = None) -> list[dict[str, Any]]:
    return [k8s_node(f"hz-a-gpu-{i}", HZ_GPU, labels={"zone": "cn-hangzhou-h"},
                     cordoned=i == cordoned) for i in range(4)]


def sh_nodes() -> list[dict[str, Any]]:
    return [k8s_node(f"sh-c-{i}", GENERAL, labels={"pool": "general"}) for i in range(4)]


def not_ours() -> list[dict[str, Any]]:
    """Jobs on a cluster that fleetq did not place (filtered out by the API)."""
    return [
        {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
         "metadata": {"name": "hand-made", "namespace": "text", "labels": {"team": "text"}},
         "status": kubeflow("Running", RAN)},
        {"apiVersion": "batch/v1", "kind": "Job",
         "metadata": {"name": "backup", "namespace": "kube-system",
                      "labels": {MANAGED: "helm"}}, "status": {"active": 1}},
    ]


BJ_STATUSES: dict[str, dict[str, Any]] = {
    HOTFIX: kubeflow("Succeeded", DONE, "PyTorchJob llm-sft-hotfix is successfully completed."),
    LLAMA: kubeflow("Running", RAN, "PyTorchJob llama-lora-sft is running."),
    "interns/intern-mnist": kubeflow("Created", START),
    "platform/dataset-shard-index": {"active": 8, "ready": 8, "startTime": RAN},
    "video/video-horovod-resnet": kubeflow("Running", RAN),
    "video/video-caption-ray": {"jobDeploymentStatus": "Running", "jobStatus": "RUNNING",
                                "startTime": RAN, "rayClusterName": "video-caption-ray-x"},
}


def bj_cluster(fleet: Path) -> FakeCluster:
    """gpu-bj-b: every job kind; the hotfix has succeeded."""
    return FakeCluster([*bj_nodes(), *applied(fleet, "gpu-bj-b", BJ_STATUSES), *not_ours()])


def hz_cluster(fleet: Path, **nodes: Any) -> FakeCluster:
    """gpu-hz-a: runs video-mae-pretrain; its MPIJob CRD serves v2beta1 alone."""
    return FakeCluster([*hz_nodes(**nodes), *applied(fleet, "gpu-hz-a", {
        MAE: kubeflow("Running", RAN)})], not_served={"/apis/kubeflow.org/v1/mpijobs"})


def sh_cluster() -> FakeCluster:
    """cpu-sh-c: no job of fleetq's; no KubeRay, no v1 MPIJob."""
    return FakeCluster([*sh_nodes(), *not_ours()],
                       not_served={"/apis/ray.io/v1/rayjobs", "/apis/kubeflow.org/v1/mpijobs"})


def kubeconfig_for(tmp_path: Path, servers: Mapping[str, str]) -> str:
    return str(write_kubeconfig(tmp_path / "kubeconfig",
                                {context(c): url for c, url in servers.items()}))


def observe(capsys: pytest.CaptureFixture[str], fleet: Path, kubeconfig: str, *args: str,
            now: str = OBSERVED) -> tuple[int, str, str]:
    return run(capsys, "observe", "--repo", str(fleet), "--kubeconfig", kubeconfig,
               "--now", now, *args)


def reconcile(capsys: pytest.CaptureFixture[str], fleet: Path, now: str = NEXT
              ) -> tuple[str, str]:
    code, out, err = run(capsys, "reconcile", "--repo", str(fleet), "--now", now, "-q")
    assert code == 0, err
    return out, err


# -- the tests ------------------------------------------------------------------

def test_observe_records_what_each_cluster_serves(
        tmp_path: Path, fleet: Path, serve: Serve, capsys: pytest.CaptureFixture[str]) -> None:
    """Each cluster is read through the context its MemberCluster names: its
    nodes, and its jobs of every kind asked by fleetq's label; the state
    branch gets ``status/<cluster>.yaml`` (each job's phase, since when, its
    message; complete) and ``inventory/<cluster>.yaml`` (the nodes), and
    nothing else changes. A kind a cluster does not serve is a note."""
    clusters = {"gpu-bj-b": bj_cluster(fleet), "gpu-hz-a": hz_cluster(fleet),
                "cpu-sh-c": sh_cluster()}
    kubeconfig = kubeconfig_for(tmp_path, {c: serve(f) for c, f in clusters.items()})
    before = state_yaml(fleet, "placements.yaml")
    head = rev(fleet, "fleetq/state")

    code, out, err = observe(capsys, fleet, kubeconfig)

    assert code == 0, err
    assert out.startswith("committed ")
    assert "gpu-bj-b: jobs 2 pending, 4 running, 1 succeeded; 4 nodes" in out
    assert "gpu-hz-a: jobs 1 running; 4 nodes" in out
    assert "cpu-sh-c: jobs none; 4 nodes" in out
    assert "gpu-hz-a: it serves no kubeflow.org/v1 MPIJob" in err
    assert "cpu-sh-c: it serves no ray.io/v1 RayJob" in err
    assert "cpu-sh-c: it serves no kubeflow.org/v1 MPIJob" in err
    assert "Traceback" not in err

    # every server was asked for its nodes and each job kind, the jobs by label
    for name, cluster in clusters.items():
        asked = cluster.asked()
        assert set(asked) == set(ENDPOINTS), name
        assert len(cluster.requests) == len(ENDPOINTS), name  # each once
        assert asked[NODES] == {}
        assert all(asked[p] == {"labelSelector": [SELECTOR]} for p in JOB_ENDPOINTS), name

    status = state_yaml(fleet, "status/gpu-bj-b.yaml")
    assert {k: status[k] for k in ("apiVersion", "kind", "metadata", "observedAt",
                                   "complete")} == {
        "apiVersion": "fleetq.io/v1alpha1", "kind": "ClusterStatus",
        "metadata": {"name": "gpu-bj-b"}, "observedAt": OBSERVED, "complete": True}
    jobs = {f"{j['namespace']}/{j['name']}": j for j in status["jobs"]}
    frame_stats = next(k for k in jobs if k.startswith("video/video-frame-stats-"))
    assert jobs == {
        HOTFIX: {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "namespace": "text",
                 "name": "llm-sft-hotfix", "phase": "Succeeded", "since": DONE,
                 "message": "PyTorchJob llm-sft-hotfix is successfully completed."},
        LLAMA: {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "namespace": "text",
                "name": "llama-lora-sft", "phase": "Running", "since": RAN},
        "interns/intern-mnist": {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                                 "namespace": "interns", "name": "intern-mnist",
                                 "phase": "Pending"},
        "platform/dataset-shard-index": {"apiVersion": "batch/v1", "kind": "Job",
                                         "namespace": "platform",
                                         "name": "dataset-shard-index", "phase": "Running",
                                         "since": RAN},
        "video/video-horovod-resnet": {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
                                       "namespace": "video", "name": "video-horovod-resnet",
                                       "phase": "Running", "since": RAN},
        "video/video-caption-ray": {"apiVersion": "ray.io/v1", "kind": "RayJob",
                                    "namespace": "video", "name": "video-caption-ray",
                                    "phase": "Running", "since": RAN},
        frame_stats: {"apiVersion": "ray.io/v1", "kind": "RayJob", "namespace": "video",
                      "name": frame_stats.split("/")[1], "phase": "Pending"},
    }
    # the jobs fleetq did not place are not there (the API filtered them out)
    assert not {"text/hand-made", "kube-system/backup"} & set(jobs)

    inventory = state_yaml(fleet, "inventory/gpu-bj-b.yaml")
    assert inventory["kind"] == "ClusterInventory" and inventory["observedAt"] == OBSERVED
    assert inventory["nodes"] == [
        {"name": "bj-b-a100-0", "allocatable": GPU, "ready": True,
         "labels": {"nvidia.com/gpu.product": "A100"}, "taints": [GPU_TAINT]},
        {"name": "bj-b-a100-1", "allocatable": GPU, "ready": True,
         "labels": {"nvidia.com/gpu.product": "A100"}, "taints": [GPU_TAINT]},
        {"name": "bj-b-general-0", "allocatable": GENERAL, "ready": True,
         "labels": {"pool": "general"}},
        {"name": "bj-b-general-1", "allocatable": GENERAL, "ready": True,
         "labels": {"pool": "general"}}]

    hz = state_yaml(fleet, "status/gpu-hz-a.yaml")
    assert hz["complete"] is True and hz["jobs"] == [
        {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "namespace": "video",
         "name": "video-mae-pretrain", "phase": "Running", "since": RAN}]
    sh = state_yaml(fleet, "status/cpu-sh-c.yaml")
    assert sh["jobs"] == [] and sh["complete"] is True
    assert [n["name"] for n in state_yaml(fleet, "inventory/cpu-sh-c.yaml")["nodes"]] == [
        f"sh-c-{i}" for i in range(4)]

    # one commit on top of the state, with the reports alone; the decisions are as they were
    assert git(fleet, "rev-parse", "fleetq/state^").strip() == head
    changed = git(fleet, "diff", "--name-only", f"{head}", "fleetq/state").split()
    assert sorted(changed) == sorted([*(f"status/{c}.yaml" for c in CLUSTERS),
                                      *(f"inventory/{c}.yaml" for c in CLUSTERS)])
    assert state_yaml(fleet, "placements.yaml") == before
    assert git(fleet, "log", "-1", "--format=%s", "fleetq/state").startswith("Report ")

    # the same answers again: nothing new to commit
    reported = rev(fleet, "fleetq/state")
    code, out, err = observe(capsys, fleet, kubeconfig)
    assert code == 0, err
    assert out.startswith("no change")
    assert rev(fleet, "fleetq/state") == reported


def test_a_job_reported_succeeded_finishes_and_frees_its_quota_for_the_next(
        tmp_path: Path, fleet: Path, serve: Serve, capsys: pytest.CaptureFixture[str]) -> None:
    """gpu-bj-b says ``llm-sft-hotfix`` succeeded: the next reconcile makes it
    Finished (at its Succeeded condition's time) and frees its job slot of
    ``text`` (``kube-queue/max-jobs: 2``), which ``embedding-eval-ray``,
    first in text's queue, takes. A node the cluster reports cordoned, that
    its MemberCluster declares, is warned about."""
    kubeconfig = kubeconfig_for(tmp_path, {
        "gpu-bj-b": serve(bj_cluster(fleet)), "gpu-hz-a": serve(hz_cluster(fleet, cordoned=3)),
        "cpu-sh-c": serve(sh_cluster())})
    code, _, err = observe(capsys, fleet, kubeconfig)
    assert code == 0, err
    assert placements(fleet)[HOTFIX]["phase"] == "Admitted"  # a report decides nothing itself

    _, err = reconcile(capsys, fleet)

    items = placements(fleet)
    assert items[HOTFIX]["phase"] == "Finished" and items[HOTFIX]["cluster"] == "gpu-bj-b"
    assert items[HOTFIX]["endedAt"] == DONE
    assert items[WAITING]["phase"] == "Admitted", items[WAITING]
    assert items[AFTER]["phase"] == "Queued" and items[AFTER]["position"] == 1
    assert items[LLAMA]["phase"] == "Admitted" and items[MAE]["phase"] == "Admitted"
    assert "finished PyTorchJob text/llm-sft-hotfix on gpu-bj-b" in git(
        fleet, "log", "-1", "--format=%B", "fleetq/state")
    # the finished job's object stays on its cluster; the admitted one is rendered
    files = state_files(fleet)
    assert "clusters/gpu-bj-b/text/pytorchjob-llm-sft-hotfix.yaml" in files
    assert any(f.startswith(f"clusters/{items[WAITING]['cluster']}/text/rayjob-"
                            "embedding-eval-ray") for f in files)
    # the reports are kept beside the new state
    assert state_yaml(fleet, "status/gpu-bj-b.yaml")["observedAt"] == OBSERVED
    # capacity: gpu-hz-a's declared node hz-a-gpu-3 is cordoned; gpu-bj-b is as declared
    assert ("MemberCluster gpu-hz-a: node hz-a-gpu-3 is declared but reported cordoned "
            "(unschedulable)") in err
    assert "MemberCluster gpu-bj-b" not in err and "MemberCluster cpu-sh-c" not in err


def test_a_cluster_that_cannot_be_reached_fails_observe_and_the_others_are_recorded(
        tmp_path: Path, fleet: Path, serve: Serve, capsys: pytest.CaptureFixture[str]) -> None:
    """gpu-hz-a's context points at a closed port: ``observe`` exits 1 naming
    it, records the other clusters, and leaves gpu-hz-a's last report as it
    was (none at first; then the earlier one)."""
    bj, sh = bj_cluster(fleet), sh_cluster()
    urls = {"gpu-bj-b": serve(bj), "gpu-hz-a": closed_port_url(), "cpu-sh-c": serve(sh)}

    code, out, err = observe(capsys, fleet, kubeconfig_for(tmp_path, urls))

    assert code == 1
    assert "fleetq: gpu-hz-a: cannot reach its API server" in err
    assert "its last report stays" in err
    assert "Traceback" not in err
    assert "gpu-bj-b" in out and "cpu-sh-c" in out and "gpu-hz-a" not in out
    files = state_files(fleet)
    assert {"status/gpu-bj-b.yaml", "inventory/gpu-bj-b.yaml", "status/cpu-sh-c.yaml",
            "inventory/cpu-sh-c.yaml"} <= set(files)
    assert "status/gpu-hz-a.yaml" not in files and "inventory/gpu-hz-a.yaml" not in files
    assert len(bj.requests) == len(sh.requests) == len(ENDPOINTS)

    # gpu-hz-a answers once, then is gone again: its report of then stays
    hz = hz_cluster(fleet)
    urls["gpu-hz-a"] = serve(hz)
    assert observe(capsys, fleet, kubeconfig_for(tmp_path, urls))[0] == 0
    urls["gpu-hz-a"] = closed_port_url()
    code, _, err = observe(capsys, fleet, kubeconfig_for(tmp_path, urls), now=LATER)
    assert code == 1 and "fleetq: gpu-hz-a: cannot reach its API server" in err
    assert state_yaml(fleet, "status/gpu-hz-a.yaml")["observedAt"] == OBSERVED
    assert state_yaml(fleet, "inventory/gpu-hz-a.yaml")["observedAt"] == OBSERVED
    assert state_yaml(fleet, "status/gpu-bj-b.yaml")["observedAt"] == LATER

    # every cluster unreachable: exit 1, nothing committed
    head = rev(fleet, "fleetq/state")
    dead = {c: closed_port_url() for c in CLUSTERS}
    code, out, err = observe(capsys, fleet, kubeconfig_for(tmp_path, dead), now=NEXT)
    assert code == 1
    assert all(f"fleetq: {c}: cannot reach its API server" in err for c in CLUSTERS)
    assert rev(fleet, "fleetq/state") == head


def test_a_cluster_that_never_answers_is_given_up_on(
        tmp_path: Path, fleet: Path, serve: Serve, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """gpu-hz-a's server takes the connection and says nothing: once each
    request's timeout (shortened here) has passed, observe gives it up (exit 1,
    named) and records the other clusters."""
    from reconciler.kube import observe as observe_module

    monkeypatch.setattr(observe_module, "TIMEOUT_SECONDS", 0.1)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # (the kernel takes connections; nothing ever answers them)
        urls = {"gpu-bj-b": serve(bj_cluster(fleet)),
                "gpu-hz-a": f"http://127.0.0.1:{silent.getsockname()[1]}"}

        code, out, err = observe(capsys, fleet, kubeconfig_for(tmp_path, urls),
                                 "--cluster", "gpu-hz-a", "--cluster", "gpu-bj-b")

    assert code == 1
    assert "fleetq: gpu-hz-a: cannot reach its API server" in err and "timed out" in err
    assert "gpu-bj-b: jobs" in out
    files = state_files(fleet)
    assert "status/gpu-bj-b.yaml" in files and "status/gpu-hz-a.yaml" not in files


def test_a_kind_a_cluster_does_not_serve_is_a_note_not_a_failure(
        tmp_path: Path, fleet: Path, serve: Serve, capsys: pytest.CaptureFixture[str]) -> None:
    """A cluster with none of the job CRDs installed (404 for each): a note per
    kind, exit 0, and a complete report of its batch Jobs alone."""
    bare = FakeCluster([*hz_nodes(), *applied(fleet, "gpu-hz-a", {})], not_served=set(CUSTOM))
    kubeconfig = kubeconfig_for(tmp_path, {"gpu-hz-a": serve(bare)})

    code, out, err = observe(capsys, fleet, kubeconfig, "--cluster", "gpu-hz-a")

    assert code == 0, err
    for path in CUSTOM:
        _, api_version, kind = JOB_ENDPOINTS[path]
        assert f"gpu-hz-a: it serves no {api_version} {kind}" in err
    assert "it serves no batch/v1 Job" not in err
    assert "gpu-hz-a: jobs none; 4 nodes" in out
    status = state_yaml(fleet, "status/gpu-hz-a.yaml")
    assert status["jobs"] == [] and status["complete"] is True
    assert set(bare.asked()) == set(ENDPOINTS)


@pytest.mark.parametrize(("refuse", "said"), [
    ({"*": 403}, "the API refused: 403"),
    ({NODES: 403}, "the API refused: 403"),
    ({"/apis/batch/v1/jobs": 500}, "the API refused: 500"),
], ids=["forbidden", "nodes-forbidden", "server-error-on-one-kind"])
def test_a_cluster_whose_api_refuses_fails_observe_and_the_others_are_recorded(
        tmp_path: Path, fleet: Path, serve: Serve, capsys: pytest.CaptureFixture[str],
        refuse: dict[str, int], said: str) -> None:
    """An answer other than 404 (RBAC forbids, the server fails) is a cluster
    that could not be read: exit 1, named; nothing of it is recorded."""
    hz = hz_cluster(fleet)
    hz.refuse = refuse
    kubeconfig = kubeconfig_for(tmp_path, {"gpu-bj-b": serve(bj_cluster(fleet)),
                                           "gpu-hz-a": serve(hz), "cpu-sh-c": serve(sh_cluster())})

    code, _, err = observe(capsys, fleet, kubeconfig)

    assert code == 1
    assert f"fleetq: gpu-hz-a: {said}" in err
    files = state_files(fleet)
    assert "status/gpu-hz-a.yaml" not in files and "inventory/gpu-hz-a.yaml" not in files
    assert "status/gpu-bj-b.yaml" in files and "status/cpu-sh-c.yaml" in files


def test_a_cluster_that_answers_what_is_not_json_fails_observe_alone(
        tmp_path: Path, fleet: Path, serve: Serve, capsys: pytest.CaptureFixture[str]) -> None:
    """A proxy's login page instead of the API: that cluster fails (exit 1,
    named), and the others are recorded."""
    proxy = FakeCluster(body=b"<html><body>Please log in</body></html>")
    kubeconfig = kubeconfig_for(tmp_path, {"gpu-bj-b": serve(bj_cluster(fleet)),
                                           "gpu-hz-a": serve(proxy)})

    code, _, err = observe(capsys, fleet, kubeconfig, "--cluster", "gpu-bj-b",
                           "--cluster", "gpu-hz-a")

    assert code == 1
    assert "fleetq: gpu-hz-a: its API server answered with something other than JSON" in err
    assert "status/gpu-bj-b.yaml" in state_files(fleet)


def test_a_cluster_that_answers_json_with_no_items_fails_observe_alone(
        tmp_path: Path, fleet: Path, serve: Serve, capsys: pytest.CaptureFixture[str]) -> None:
    """``200 {}`` from a proxy is not "no jobs there" (a complete, empty report
    would fail every job there over): that cluster fails, the others are recorded."""
    proxy = FakeCluster(body=b"{}")
    kubeconfig = kubeconfig_for(tmp_path, {"gpu-bj-b": serve(bj_cluster(fleet)),
                                           "gpu-hz-a": serve(proxy)})
    code, _, err = observe(capsys, fleet, kubeconfig, "--cluster", "gpu-bj-b",
                           "--cluster", "gpu-hz-a")
    assert code == 1
    assert "fleetq: gpu-hz-a: its API server answered with no list of items" in err
    files = state_files(fleet)
    assert "status/gpu-bj-b.yaml" in files and "status/gpu-hz-a.yaml" not in files


def test_cluster_options_choose_the_clusters_read(
        tmp_path: Path, fleet: Path, serve: Serve, capsys: pytest.CaptureFixture[str]) -> None:
    """``--cluster NAME`` reads that cluster alone (the others' servers are not
    asked); a name that is no MemberCluster is a usage error (exit 2) before
    any cluster is read."""
    clusters = {"gpu-bj-b": bj_cluster(fleet), "gpu-hz-a": hz_cluster(fleet),
                "cpu-sh-c": sh_cluster()}
    kubeconfig = kubeconfig_for(tmp_path, {c: serve(f) for c, f in clusters.items()})

    code, _, err = observe(capsys, fleet, kubeconfig, "--cluster", "gpu-hz-a")
    assert code == 0, err
    assert clusters["gpu-hz-a"].requests and not clusters["gpu-bj-b"].requests
    assert not clusters["cpu-sh-c"].requests
    files = state_files(fleet)
    assert "status/gpu-hz-a.yaml" in files
    assert "status/gpu-bj-b.yaml" not in files and "status/cpu-sh-c.yaml" not in files

    head = rev(fleet, "fleetq/state")
    asked = len(clusters["gpu-hz-a"].requests)
    code, _, err = observe(capsys, fleet, kubeconfig, "--cluster", "gpu-hz-a",
                           "--cluster", "nope")
    assert code == 2
    assert "no MemberCluster named 'nope'" in err
    assert "cpu-sh-c, gpu-bj-b, gpu-hz-a" in err
    assert len(clusters["gpu-hz-a"].requests) == asked
    assert rev(fleet, "fleetq/state") == head


def test_a_cluster_without_a_context_is_skipped_unless_named(
        tmp_path: Path, fleet: Path, serve: Serve, capsys: pytest.CaptureFixture[str]) -> None:
    """A MemberCluster without ``spec.kubeconfigContext`` is skipped (said);
    named with ``--cluster``, the context of its own name is used."""
    file = fleet / "clusters" / "cpu-sh-c.yaml"
    file.write_text(file.read_text(encoding="utf-8").replace(
        f"  kubeconfigContext: {context('cpu-sh-c')}\n", ""), encoding="utf-8")
    commit_all(fleet, "cpu-sh-c: no context", date=START)
    reconcile(capsys, fleet, START)
    sh = sh_cluster()
    servers = {context("gpu-bj-b"): serve(bj_cluster(fleet)),
               context("gpu-hz-a"): serve(hz_cluster(fleet)), "cpu-sh-c": serve(sh)}
    kubeconfig = str(write_kubeconfig(tmp_path / "kubeconfig", servers))

    code, _, err = observe(capsys, fleet, kubeconfig)
    assert code == 0, err
    assert "cpu-sh-c: skipped: no spec.kubeconfigContext" in err
    assert not sh.requests
    assert "status/cpu-sh-c.yaml" not in state_files(fleet)

    code, _, err = observe(capsys, fleet, kubeconfig, "--cluster", "cpu-sh-c", now=LATER)
    assert code == 0, err
    assert len(sh.requests) == len(ENDPOINTS)
    assert state_yaml(fleet, "status/cpu-sh-c.yaml")["observedAt"] == LATER


def test_a_context_missing_from_the_kubeconfig_fails_that_cluster(
        tmp_path: Path, fleet: Path, serve: Serve, capsys: pytest.CaptureFixture[str]) -> None:
    kubeconfig = kubeconfig_for(tmp_path, {"gpu-bj-b": serve(bj_cluster(fleet))})

    code, _, err = observe(capsys, fleet, kubeconfig)

    assert code == 1
    for name in ("gpu-hz-a", "cpu-sh-c"):
        assert f"fleetq: {name}: no usable kubeconfig context '{context(name)}' in " \
               f"{kubeconfig}: " in err, err
    assert "; set the cluster's spec.kubeconfigContext to a context of it" in err
    assert "give the file with --kubeconfig" not in err  # (it was given)
    assert "status/gpu-bj-b.yaml" in state_files(fleet)


def test_no_kubeconfig_names_the_files_read(
        tmp_path: Path, fleet: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """It said "Invalid kube-config file. No configuration found." of no file
    named, and nothing of --kubeconfig."""
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    code, _, err = run(capsys, "observe", "--repo", str(fleet), "--now", OBSERVED)
    assert code == 1
    assert f"no usable kubeconfig context '{context('gpu-hz-a')}' in " \
           f"{tmp_path}/.kube/config: " in err, err
    assert "give the file with --kubeconfig, or set the cluster's" in err
    monkeypatch.setenv("KUBECONFIG", "")  # (the client reads no file then)
    code, _, err = run(capsys, "observe", "--repo", str(fleet), "--now", OBSERVED)
    assert code == 1 and "in no file ($KUBECONFIG is set, and empty): " in err, err


@pytest.mark.parametrize(("where", "said"), [("missing", "no such file"),
                                               (".", "a folder, not a file")])
def test_a_kubeconfig_that_is_no_file_is_a_usage_error_naming_it(
        tmp_path: Path, fleet: Path, capsys: pytest.CaptureFixture[str], where: str,
        said: str) -> None:
    """It failed each cluster in turn (exit 1), never naming the file."""
    head = rev(fleet, "fleetq/state")
    kubeconfig = str(tmp_path / where)
    code, _, err = observe(capsys, fleet, kubeconfig)
    assert code == 2, err
    assert err.strip() == (f"fleetq: --kubeconfig {kubeconfig}: {said}; name a kubeconfig "
                           f"file (default: $KUBECONFIG or ~/.kube/config)")
    assert rev(fleet, "fleetq/state") == head


def test_observe_before_any_reconcile_is_refused(
        tmp_path: Path, serve: Serve, capsys: pytest.CaptureFixture[str]) -> None:
    """Reports are kept beside the state: with no state yet, nothing is
    recorded (exit 2)."""
    path = tmp_path / "fresh"
    assert run(capsys, "init", str(path))[0] == 0
    kubeconfig = str(write_kubeconfig(tmp_path / "kubeconfig", {
        "gpu-hz-a": serve(FakeCluster(hz_nodes()))}))

    code, _, err = run(capsys, "observe", "--repo", str(path), "--kubeconfig", kubeconfig,
                       "--cluster", "gpu-hz-a", "--now", OBSERVED)

    assert code == 2
    assert "run fleetq reconcile first" in err
    assert rev(path, "fleetq/state") is None


def test_a_context_that_reads_another_cluster_fails_that_cluster_alone(
        tmp_path: Path, fleet: Path, serve: Serve, capsys: pytest.CaptureFixture[str]) -> None:
    """gpu-hz-a's context points at gpu-bj-b's API server (a kubeconfig mix-up):
    the jobs served carry ``fleetq.io/cluster: gpu-bj-b``. Recorded as gpu-hz-a's,
    they would fail video-mae-pretrain over (not listed in a complete report);
    that cluster fails instead (exit 1, named), and the others are recorded."""
    bj = serve(bj_cluster(fleet))
    kubeconfig = kubeconfig_for(tmp_path, {"gpu-bj-b": bj, "gpu-hz-a": bj})
    jobs = len(applied(fleet, "gpu-bj-b", BJ_STATUSES))

    code, _, err = observe(capsys, fleet, kubeconfig, "--cluster", "gpu-bj-b",
                           "--cluster", "gpu-hz-a")

    assert code == 1
    assert (f"fleetq: gpu-hz-a: the context {context('gpu-hz-a')!r} reads another cluster: "
            f"these are another cluster's jobs: their label fleetq.io/cluster says gpu-bj-b "
            f"({jobs} of {jobs}), not gpu-hz-a") in err
    files = state_files(fleet)
    assert "status/gpu-bj-b.yaml" in files and "status/gpu-hz-a.yaml" not in files
