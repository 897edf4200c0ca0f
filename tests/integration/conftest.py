"""Fixtures for integration tests on real temporary git repositories (no mocks).

Every test here builds a fleet repo with ``git init -b main`` in a temporary
folder, commits with a fixed identity and a fixed date (so that two fresh
repos with the same inputs have the same source sha), runs fleetq on it (in
process through ``reconciler.pipeline.reconcile`` or as a subprocess through
the CLI) and reads the result back from the state branch with ``git show``.

The shared contract files (``../shared`` beside the repository: seed
manifests, upstream examples) are read at test time, never copied; tests that
need them skip when they are absent.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.gitops.repo import FleetRepo
from reconciler.pipeline import Outcome, reconcile

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED = REPO_ROOT.parent / "shared"
STATE = "fleetq/state"

# The source commits' fixed identity and default date.
AUTHOR = {"GIT_AUTHOR_NAME": "Fleet Tester", "GIT_AUTHOR_EMAIL": "tester@example.com",
          "GIT_COMMITTER_NAME": "Fleet Tester", "GIT_COMMITTER_EMAIL": "tester@example.com"}
SOURCE_DATE = "2026-11-29T10:00:00Z"
NOW = "2026-11-29T11:00:00Z"
RENDERED_SEED = "clusters/cf-hz-a/default/pytorchjob-pytorch-test.yaml"

# Environment variables that would leak the developer's git setup into a test.
_GIT_LEAKS = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME",
              "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE", "GIT_DIR", "GIT_WORK_TREE",
              "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_CONFIG", "GIT_CONFIG_GLOBAL",
              "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "EMAIL")


def when(text: str) -> dt.datetime:
    """An RFC 3339 time as an aware datetime (the ``now=`` of ``reconcile``)."""
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def shared_path(relative: str) -> Path:
    """``../shared/<relative>``, or skip the test when it is not there."""
    path = SHARED / relative
    if not path.exists():
        pytest.skip(f"../shared/{relative} not present: the shared contract files are not "
                    f"checked out beside the repository ({SHARED})")
    return path


def seed(name: str) -> str:
    """The text of a seed manifest, verbatim."""
    return shared_path(f"seed-manifests/{name}").read_text(encoding="utf-8")


@pytest.fixture(autouse=True)
def clean_git_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
                  ) -> Iterator[Path]:
    """No user/system git config, no identity from the environment: like a bare CI runner."""
    home = tmp_path_factory.mktemp("home")
    for name in _GIT_LEAKS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "0")
    yield home


def git(cwd: Path, *args: str, date: str = SOURCE_DATE, check: bool = True,
        env: Mapping[str, str] | None = None) -> str:
    """Run git with the fixed test identity and date; its stdout."""
    full = dict(os.environ, **AUTHOR, GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    if env:
        full.update(env)
    proc = subprocess.run(["git", *args], cwd=cwd, env=full, capture_output=True, text=True,
                          check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed in {cwd}: {proc.stderr}")
    return proc.stdout


def write_files(root: Path, files: Mapping[str, str]) -> None:
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def make_fleet_repo(path: Path, files: Mapping[str, str], *, date: str = SOURCE_DATE,
                    message: str = "fleet inputs") -> Path:
    """Write ``files``, ``git init -b main`` and commit them; the repo path."""
    path.mkdir(parents=True, exist_ok=True)
    write_files(path, files)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", message, date=date)
    return path


def commit_all(path: Path, message: str = "change", *, date: str = SOURCE_DATE) -> str:
    """Stage everything (new, changed, deleted) and commit; the new HEAD sha."""
    git(path, "add", "-A")
    git(path, "commit", "-q", "--allow-empty", "-m", message, date=date)
    return git(path, "rev-parse", "HEAD").strip()


def rev(path: Path, name: str) -> str | None:
    proc = subprocess.run(["git", "rev-parse", "--verify", "--quiet", name], cwd=path,
                          capture_output=True, text=True, check=False)
    return proc.stdout.strip() or None


def no_state(path: Path, branch: str = STATE) -> None:
    """The clone as one that never had a state: its state branch deleted, and
    fleetq's note of the state it last wrote there (which tells a branch
    deleted by mistake) with it."""
    git(path, "update-ref", "-d", f"refs/heads/{branch}")
    git(path, "update-ref", "-d", f"refs/fleetq/written/{branch}")


def state_show(path: Path, file: str, branch: str = STATE) -> str | None:
    """``git show <branch>:<file>``, or None when the file is not on the branch."""
    proc = subprocess.run(["git", "show", f"{branch}:{file}"], cwd=path, capture_output=True,
                          text=True, check=False)
    return proc.stdout if proc.returncode == 0 else None


def state_files(path: Path, branch: str = STATE) -> list[str]:
    out = git(path, "ls-tree", "-r", "--name-only", branch)
    return [line for line in out.splitlines() if line]


def state_yaml(path: Path, file: str, branch: str = STATE) -> Any:
    text = state_show(path, file, branch)
    assert text is not None, f"{file} is not on {branch}"
    return yaml.safe_load(text)


def state_docs(path: Path, file: str, branch: str = STATE) -> list[Any]:
    text = state_show(path, file, branch)
    assert text is not None, f"{file} is not on {branch}"
    return [d for d in yaml.safe_load_all(text) if d is not None]


def placements(path: Path, branch: str = STATE) -> dict[str, dict[str, Any]]:
    """placements.yaml items keyed by ``namespace/name``."""
    data = state_yaml(path, "placements.yaml", branch)
    assert data["kind"] == "PlacementList"
    return {f"{i['job']['namespace']}/{i['job']['name']}": i for i in data["items"] or []}


def line_of(text: str, needle: str) -> int:
    """1-based line of the first line containing ``needle``."""
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in text")


def run_reconcile(path: Path, now: str = NOW, **kwargs: Any) -> Outcome:
    """Reconcile in process, as ``fleetq reconcile --now NOW`` does."""
    return reconcile(FleetRepo(path), now=when(now), **kwargs)


def fleetq(*args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None,
           timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run the CLI as a subprocess (``python -m reconciler.cli``)."""
    full = dict(os.environ)
    if env:
        full.update(env)
    return subprocess.run([sys.executable, "-m", "reconciler.cli", *args], cwd=cwd or REPO_ROOT,
                          env=full, capture_output=True, text=True, timeout=timeout,
                          check=False)


# -- small inputs written by the tests ----------------------------------------

def member_cluster(name: str, *, cpu: str = "64", memory: str = "256Gi", nodes: int = 1,
                   labels: Mapping[str, str] | None = None, reservation: bool = True,
                   dialect: str = "ack", extra: str = "") -> str:
    """A MemberCluster manifest with ``nodes`` identical nodes."""
    label_text = ", ".join(f"{k}: {v}" for k, v in (labels or {}).items())
    node_lines = "\n".join(
        f"  - {{name: {name}-n{i}, allocatable: {{cpu: \"{cpu}\", memory: {memory}, "
        f"pods: \"110\"}}}}" for i in range(1, nodes + 1))
    return (f"apiVersion: fleetq.io/v1alpha1\nkind: MemberCluster\n"
            f"metadata: {{name: {name}, labels: {{{label_text}}}}}\n"
            f"spec:\n  resourceReservation: {str(reservation).lower()}\n"
            f"  gangDialect: {dialect}\n{extra}  nodes:\n{node_lines}\n")


def pytorchjob(name: str, *, namespace: str = "default", workers: int = 1, cpu: str = "1",
               memory: str = "1Gi", labels: Mapping[str, str] | None = None,
               image: str = "registry-cn-hangzhou.ack.aliyuncs.com/acs/nginx",
               replicas_text: str | None = None) -> str:
    """A small PyTorchJob: Master x1 and Worker x``workers``."""
    label_lines = "".join(f"    {k}: \"{v}\"\n" for k, v in (labels or {}).items())
    meta_labels = f"  labels:\n{label_lines}" if label_lines else ""
    worker_replicas = replicas_text if replicas_text is not None else str(workers)

    def role(replicas: str) -> str:
        return (f"      replicas: {replicas}\n"
                f"      restartPolicy: Never\n"
                f"      template:\n"
                f"        spec:\n"
                f"          containers:\n"
                f"          - name: pytorch\n"
                f"            image: {image}\n"
                f"            resources:\n"
                f"              requests: {{cpu: \"{cpu}\", memory: {memory}}}\n")

    return (f"apiVersion: kubeflow.org/v1\nkind: PyTorchJob\n"
            f"metadata:\n  name: {name}\n  namespace: {namespace}\n{meta_labels}"
            f"spec:\n  pytorchReplicaSpecs:\n"
            f"    Master:\n{role('1')}"
            f"    Worker:\n{role(worker_replicas)}")


def batchjob(name: str, *, namespace: str = "default", parallelism: int = 1,
             cpu: str = "1", image: str = "registry.example.com/train:v1",
             spec_extra: str = "", labels: Mapping[str, str] | None = None,
             annotations: Mapping[str, str] | None = None) -> str:
    """A small batch Job of ``parallelism`` pods (``spec_extra``: more lines of its spec)."""
    meta = "".join(f"  {field}:\n" + "".join(f"    {k}: \"{v}\"\n" for k, v in values.items())
                   for field, values in (("labels", labels), ("annotations", annotations))
                   if values)
    return (f"apiVersion: batch/v1\nkind: Job\n"
            f"metadata:\n  name: {name}\n  namespace: {namespace}\n{meta}"
            f"spec:\n  parallelism: {parallelism}\n{spec_extra}"
            f"  template:\n    spec:\n      restartPolicy: Never\n"
            f"      containers:\n      - name: train\n        image: {image}\n"
            f"        resources:\n          requests: {{cpu: \"{cpu}\", memory: 1Gi}}\n")


def one_leaf_tree(cpu: str, memory: str, *, leaf_max_extra: str = "",
                  namespaces: str = "default") -> str:
    """An ElasticQuotaTree whose root and only leaf ``team`` hold the whole fleet."""
    total = f'cpu: "{cpu}", memory: {memory}'
    return ("apiVersion: scheduling.sigs.k8s.io/v1beta1\nkind: ElasticQuotaTree\n"
            "metadata: {name: elasticquotatree, namespace: kube-system}\n"
            f"spec:\n  root:\n    name: root\n    min: {{{total}}}\n    max: {{{total}}}\n"
            f"    children:\n    - name: team\n      min: {{{total}}}\n"
            f"      max: {{{total}{leaf_max_extra}}}\n      namespaces: [{namespaces}]\n")


QUEUED_CLUSTER_POLICY = """\
apiVersion: policy.one.alibabacloud.com/v1alpha1
kind: ClusterPropagationPolicy
metadata:
  name: queued-gang
spec:
  suspension:
    scheduling: true
  placement:
    replicaScheduling:
      replicaSchedulingType: Divided
      customSchedulingType: Gang
  resourceSelectors:
  - apiVersion: kubeflow.org/v1
    kind: PyTorchJob
  - apiVersion: ray.io/v1
    kind: RayJob
  - apiVersion: kubeflow.org/v2beta1
    kind: MPIJob
  - apiVersion: kubeflow.org/v1
    kind: MPIJob
  - apiVersion: batch/v1
    kind: Job
"""


@dataclass
class SeedFleet:
    """The ACK Fleet seed: tree + queued Gang policy + pytorch-test + one member cluster."""

    path: Path

    def reconcile(self, now: str = NOW, **kwargs: Any) -> Outcome:
        return run_reconcile(self.path, now, **kwargs)


def seed_fleet_files(*, policy: str = "ack-fleet-policy-gang-queued.yaml",
                     cluster: str = "cf-hz-a") -> dict[str, str]:
    return {
        "quota/elasticquotatree.yaml": seed("ack-fleet-elasticquotatree.yaml"),
        "policies/example-policy.yaml": seed(policy),
        "jobs/default/pytorch-test.yaml": seed("ack-fleet-pytorchjob.yaml"),
        f"clusters/{cluster}.yaml": member_cluster(cluster, cpu="32", memory="128Gi",
                                                   labels={"region": "cn-hangzhou"}),
    }


@pytest.fixture
def seed_fleet(tmp_path: Path) -> SeedFleet:
    """A committed fleet repo with the ACK Fleet seed manifests (queued Gang policy)."""
    return SeedFleet(make_fleet_repo(tmp_path / "fleet", seed_fleet_files()))


def priority_classes(**values: int) -> str:
    """PriorityClass manifests, one per ``name=value``."""
    return "---\n".join(f"apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
                        f"metadata: {{name: {name}}}\nvalue: {value}\n"
                        for name, value in values.items())


def with_priority(manifest: str, name: str) -> str:
    """``manifest`` (a ``pytorchjob``) with ``priorityClassName: name`` in its pods."""
    spec = "        spec:\n"
    return manifest.replace(spec, f"{spec}          priorityClassName: {name}\n")


def reconciled_template(tmp_path: Path) -> Path:
    """A fleet made by ``fleetq init`` (the bundled template), reconciled once."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW, "-q").returncode == 0
    return path


def push_template_job(path: Path, name: str) -> None:
    """Commit to a template fleet one more job, ``text/<name>``: a copy of its
    ``tokenizer-ablation``, under another name."""
    job = (path / "jobs/text/tokenizer-ablation.yaml").read_text()
    (path / f"jobs/text/{name}.yaml").write_text(
        job.replace("name: tokenizer-ablation", f"name: {name}", 1))
    commit_all(path, f"a job pushed: {name}")
