"""Synthetic fleet repos for fleetq performance benchmarks.

This module writes a complete fleet repo (DESIGN.md §2) of any size into a new Git
repository, deterministically from a seed, so benchmarks can time ``fleetq`` on
fleets of realistic shape: 100,000 job manifests, hundreds of member clusters,
a two-level ElasticQuotaTree with hundreds of leaves.

Speed: the manifests are written as hand-built YAML text (no YAML dumper) and
streamed straight into ``git fast-import``: no file is written to disk and git runs
once. The result is a normal (non-bare) repository whose ``main`` branch holds one
commit, but whose work tree is NOT checked out (``git status`` shows every file as
deleted); pass ``checkout=True`` to ``generate_fleet`` (``--checkout`` on the
command line) to also populate the work tree and index. Readers that read the
commit (``git cat-file``, ``git archive``, GitPython trees) need no work tree.

Every commit uses the fixed identity ``fleetq-bench <bench@fleetq.invalid>``. The
first commit is dated 2026-01-01T00:00:00Z and each later commit made by
``add_job`` / ``change_quota_line`` one minute after its parent, so the same calls
always produce the same commit SHAs.

Public API::

    generate_fleet(path, jobs=, clusters=, nodes_per_cluster=, leaf_quotas=, seed=0)
    add_job(path, index=, seed=1) -> sha          # one new job file on main
    change_quota_line(path) -> sha                # one-line edit of quota/tree.yaml

Command line::

    python -m benchmarks.generate PATH --jobs N --clusters M --nodes K --leaves L
        [--seed S] [--checkout]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence, Set
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["add_job", "change_quota_line", "generate_fleet", "main"]

BENCH_NAME = "fleetq-bench"
BENCH_EMAIL = "bench@fleetq.invalid"
EPOCH = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp())  # 2026-01-01T00:00:00Z
COMMIT_STEP_SECONDS = 60
BRANCH = "refs/heads/main"
TREE_PATH = "quota/tree.yaml"
MAX_JOBS_ROOT = 10_000_000_000

NODE_CPU = 96
NODE_MEMORY_GI = 768
NODE_GPU = 8
NODE_PODS = 110

REGIONS = ("cn-hangzhou", "cn-beijing", "cn-shanghai", "cn-shenzhen", "ap-southeast-1")
DIALECTS = ("ack", "scheduler-plugins", "volcano", "kueue")

# ---------------------------------------------------------------------------
# quota tree


@dataclass(frozen=True)
class _Res:
    """cpu (cores), memory (Gi), nvidia.com/gpu: whole units so sums stay exact."""

    cpu: int
    memory: int
    gpu: int

    def div(self, n: int) -> _Res:
        return _Res(self.cpu // n, self.memory // n, self.gpu // n)

    def twice_capped(self, cap: _Res) -> _Res:
        return _Res(
            min(2 * self.cpu, cap.cpu), min(2 * self.memory, cap.memory), min(2 * self.gpu, cap.gpu)
        )


_ZERO = _Res(0, 0, 0)


def _res_lines(ind: str, key: str, res: _Res, max_jobs: int | None = None) -> list[str]:
    lines = [
        f"{ind}{key}:",
        f'{ind}  cpu: "{res.cpu}"',
        f"{ind}  memory: {res.memory}Gi",
        f'{ind}  nvidia.com/gpu: "{res.gpu}"',
    ]
    if max_jobs is not None:
        lines.append(f'{ind}  kube-queue/max-jobs: "{max_jobs}"')
    return lines


def _departments(leaves: int) -> list[int]:
    """Number of leaves in each department: ~sqrt(leaves) departments, sizes differ by <= 1."""
    depts = max(1, round(math.sqrt(leaves)))
    base, extra = divmod(leaves, depts)
    return [base + (1 if d < extra else 0) for d in range(depts)]


def _quota_tree(total: _Res, leaves: int, interns: Set[int]) -> str:
    lines = [
        "apiVersion: scheduling.sigs.k8s.io/v1beta1",
        "kind: ElasticQuotaTree",
        "metadata:",
        "  name: elasticquotatree",
        "  namespace: kube-system",
        "spec:",
        "  root:",
        "    name: root",
        *_res_lines("    ", "min", total, MAX_JOBS_ROOT),
        *_res_lines("    ", "max", total, MAX_JOBS_ROOT),
        "    children:",
    ]
    sizes = _departments(leaves)
    dept_min = total.div(len(sizes))
    dept_max = dept_min.twice_capped(total)
    leaf = 0
    for d, size in enumerate(sizes):
        lines += [f"    - name: dept-{d}"]
        lines += _res_lines("      ", "min", dept_min)
        lines += _res_lines("      ", "max", dept_max)
        lines += ["      children:"]
        share = dept_min.div(size)
        for _ in range(size):
            # Interns get min 0 but may still borrow up to twice an equal share.
            lines += [f"      - name: team-{leaf}"]
            lines += _res_lines("        ", "min", _ZERO if leaf in interns else share)
            lines += _res_lines("        ", "max", share.twice_capped(dept_max))
            lines += ["        namespaces:", f"        - team-{leaf}"]
            leaf += 1
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# static files


FLEET_YAML = """\
apiVersion: fleetq.io/v1alpha1
kind: Fleet
metadata:
  name: fleet
spec:
  stateBranch: fleetq/state
"""

PRIORITY_CLASSES_YAML = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: low
value: 10
globalDefault: false
description: Best-effort experiments; first to be preempted.
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: normal
value: 100
globalDefault: true
description: Default priority for training jobs.
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: high
value: 1000
globalDefault: false
description: Production training and deadline-bound runs.
"""

POLICY_YAML = """\
apiVersion: policy.one.alibabacloud.com/v1alpha1
kind: ClusterPropagationPolicy
metadata:
  name: fleet-gang-queued
spec:
  resourceSelectors:
  - apiVersion: kubeflow.org/v1
    kind: PyTorchJob
  - apiVersion: ray.io/v1
    kind: RayJob
  - apiVersion: kubeflow.org/v2beta1
    kind: MPIJob
  - apiVersion: batch/v1
    kind: Job
  suspension:
    scheduling: true
  propagateDeps: true
  placement:
    replicaScheduling:
      replicaSchedulingType: Divided
      customSchedulingType: Gang
"""


def _cluster_name(i: int, clusters: int) -> str:
    return f"cluster-{i:0{max(3, len(str(clusters - 1)))}d}"


def _cpu_only(i: int) -> bool:
    return i % 5 == 2  # 20% of clusters (cluster 0 always has GPUs)


def _member_cluster(i: int, clusters: int, nodes: int) -> str:
    name = _cluster_name(i, clusters)
    region = REGIONS[i % len(REGIONS)]
    if _cpu_only(i):
        alloc = f'{{cpu: "{NODE_CPU}", memory: {NODE_MEMORY_GI}Gi, pods: "{NODE_PODS}"}}'
    else:
        alloc = (
            f'{{cpu: "{NODE_CPU}", memory: {NODE_MEMORY_GI}Gi, '
            f'nvidia.com/gpu: "{NODE_GPU}", pods: "{NODE_PODS}"}}'
        )
    lines = [
        "apiVersion: fleetq.io/v1alpha1",
        "kind: MemberCluster",
        "metadata:",
        f"  name: {name}",
        "  labels:",
        f"    region: {region}",
        f"    accelerator: {'none' if _cpu_only(i) else 'nvidia'}",
        "spec:",
        f"  resourceReservation: {'true' if i % 2 == 0 else 'false'}",
        f"  gangDialect: {DIALECTS[i % len(DIALECTS)]}",
        f"  kubeconfigContext: {name}",
        "  nodes:",
    ]
    lines += [
        f"  - {{name: {name}-node-{j:03d}, allocatable: {alloc}, labels: {{}}, taints: []}}"
        for j in range(nodes)
    ]
    return "\n".join(lines) + "\n"


def _fleet_total(clusters: int, nodes: int) -> _Res:
    gpu_clusters = sum(1 for i in range(clusters) if not _cpu_only(i))
    return _Res(
        clusters * nodes * NODE_CPU,
        clusters * nodes * NODE_MEMORY_GI,
        gpu_clusters * nodes * NODE_GPU,
    )


# ---------------------------------------------------------------------------
# job manifests


@dataclass(frozen=True)
class _Pod:
    cpu: int
    memory: int  # Gi
    gpu: int


@dataclass(frozen=True)
class _JobStyle:
    name: str
    namespace: str
    priority: str | None
    quota_label: bool
    non_preemptible: bool
    init_container: bool
    limits_only: bool  # first container declares limits only (requests default to them)


PYTORCH_IMAGES = (
    "registry.example.com/ml/pytorch-train:2.3.1-cuda12.1",
    "registry.example.com/ml/pytorch-train:2.4.0-cuda12.4",
    "nvcr.io/nvidia/pytorch:24.05-py3",
)
RAY_IMAGES = ("rayproject/ray-ml:2.9.0-gpu", "rayproject/ray:2.9.0", "rayproject/ray:2.34.0-py311")
MPI_IMAGES = ("mpioperator/mpi-pi:openmpi", "registry.example.com/hpc/horovod:0.28.1-tf2.15")
BATCH_IMAGES = ("registry.example.com/data/preprocess:1.8.2", "python:3.11-slim")
MODELS = ("resnet50", "bert-large", "llama-7b", "vit-b16", "gpt2-xl", "t5-base", "whisper-small")
WORKER_CHOICES = (1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 7, 8, 11, 15)


def _pod(rng: random.Random, gpu: int) -> _Pod:
    cpu = rng.choice((4, 8, 8, 12, 16)) if gpu else rng.choice((1, 2, 2, 4, 4, 8, 12, 16))
    memory = min(64, max(2, cpu * rng.choice((2, 4, 4))))
    return _Pod(cpu, memory, gpu)


def _container(
    ind: str,
    name: str,
    image: str,
    command: Sequence[str],
    env: Sequence[tuple[str, str]],
    pod: _Pod,
    *,
    limits_only: bool = False,
    shm: bool = True,
) -> list[str]:
    """A container list item whose ``-`` sits at indent ``ind``."""
    c = ind + "  "
    lines = [f"{ind}- name: {name}", f"{c}image: {image}", f"{c}imagePullPolicy: IfNotPresent"]
    if command:
        args = ", ".join(f'"{arg}"' for arg in command)
        lines.append(f"{c}command: [{args}]")
    if env:
        lines.append(f"{c}env:")
        for key, value in env:
            lines += [f"{c}- name: {key}", f'{c}  value: "{value}"']
    lines.append(f"{c}resources:")
    gpu_line = [f'{c}    nvidia.com/gpu: "{pod.gpu}"'] if pod.gpu else []
    if limits_only:
        lines += [f"{c}  limits:", f'{c}    cpu: "{pod.cpu}"', f"{c}    memory: {pod.memory}Gi"]
        lines += gpu_line
    else:
        lines += [f"{c}  requests:", f'{c}    cpu: "{pod.cpu}"', f"{c}    memory: {pod.memory}Gi"]
        lines += gpu_line
        lines += [f"{c}  limits:", f"{c}    memory: {pod.memory}Gi"]
        lines += gpu_line
    if shm:
        lines += [f"{c}volumeMounts:", f"{c}- name: dshm", f"{c}  mountPath: /dev/shm"]
    return lines


def _template(
    ind: str,
    style: _JobStyle,
    role: str,
    containers: list[str],
    *,
    restart_policy: str | None = None,
    shm_gi: int = 0,
) -> list[str]:
    """A ``template:`` key (pod template) at indent ``ind``."""
    s = ind + "  "
    lines = [
        f"{ind}template:",
        f"{s}metadata:",
        f"{s}  labels:",
        f"{s}    app.kubernetes.io/name: {style.name}",
        f"{s}    app.kubernetes.io/component: {role}",
        f"{s}spec:",
    ]
    if style.priority:
        lines.append(f"{s}  priorityClassName: {style.priority}")
    if restart_policy:
        lines.append(f"{s}  restartPolicy: {restart_policy}")
    if style.init_container:
        lines.append(f"{s}  initContainers:")
        lines += _container(
            s + "  ",
            "fetch-data",
            "registry.example.com/tools/s5cmd:2.2.2",
            ("s5cmd", "sync", f"s3://datasets/{style.namespace}/*", "/data/"),
            (),
            _Pod(1, 2, 0),
            shm=False,
        )
    lines.append(f"{s}  containers:")
    lines += containers
    if shm_gi:
        lines += [
            f"{s}  volumes:",
            f"{s}  - name: dshm",
            f"{s}    emptyDir:",
            f"{s}      medium: Memory",
            f"{s}      sizeLimit: {shm_gi}Gi",
        ]
    return lines


def _metadata(style: _JobStyle) -> list[str]:
    lines = [
        "metadata:",
        f"  name: {style.name}",
        f"  namespace: {style.namespace}",
        "  labels:",
        f"    app.kubernetes.io/name: {style.name}",
        "    app.kubernetes.io/part-of: fleetq-bench",
        f"    team: {style.namespace}",
    ]
    if style.quota_label:
        lines.append(f"    quota.scheduling.alibabacloud.com/name: {style.namespace}")
    if style.non_preemptible:
        lines.append('    quota.scheduling.alibabacloud.com/preemptible: "false"')
    return lines


def _pytorch_job(rng: random.Random, style: _JobStyle, gpu: int) -> list[str]:
    workers = rng.choice(WORKER_CHOICES)
    pod = _pod(rng, gpu)
    image = rng.choice(PYTORCH_IMAGES)
    model = rng.choice(MODELS)
    nproc = max(1, gpu)
    command = (
        "torchrun",
        f"--nnodes={workers + 1}",
        f"--nproc-per-node={nproc}",
        "/workspace/train.py",
        f"--model={model}",
        f"--epochs={rng.randint(1, 120)}",
        f"--batch-size={rng.choice((32, 64, 128, 256))}",
    )
    env = (
        ("NCCL_DEBUG", "WARN"),
        ("OMP_NUM_THREADS", str(pod.cpu)),
    )
    shm = max(1, pod.memory // 4)
    lines = [
        "apiVersion: kubeflow.org/v1",
        "kind: PyTorchJob",
        *_metadata(style),
        "spec:",
        "  runPolicy:",
        "    cleanPodPolicy: None",
        f"    backoffLimit: {rng.randint(0, 6)}",
        "  pytorchReplicaSpecs:",
    ]
    for role, replicas in (("Master", 1), ("Worker", workers)):
        ctr = _container(
            "          ",
            "pytorch",
            image,
            command,
            env,
            pod,
            limits_only=style.limits_only and role == "Master",
        )
        lines += [f"    {role}:", f"      replicas: {replicas}", "      restartPolicy: OnFailure"]
        lines += _template("      ", style, role.lower(), ctr, shm_gi=shm)
    return lines


def _ray_job(rng: random.Random, style: _JobStyle, gpu: int) -> list[str]:
    workers = rng.choice(WORKER_CHOICES)
    head = _Pod(rng.choice((2, 4, 8)), rng.choice((8, 16)), 0)
    pod = _pod(rng, gpu)
    image = rng.choice(RAY_IMAGES)
    head_ctr = _container(
        "          ",
        "ray-head",
        image,
        (),
        (("RAY_memory_monitor_refresh_ms", "0"),),
        head,
        limits_only=style.limits_only,
    )
    worker_ctr = _container(
        "          ",
        "ray-worker",
        image,
        (),
        (("RAY_memory_monitor_refresh_ms", "0"),),
        pod,
    )
    lines = [
        "apiVersion: ray.io/v1",
        "kind: RayJob",
        *_metadata(style),
        "spec:",
        f"  entrypoint: python /home/ray/jobs/tune.py --model {rng.choice(MODELS)}"
        f" --trials {rng.randint(4, 256)}",
        "  runtimeEnvYAML: |",
        "    pip:",
        "      - requests==2.26.0",
        "      - pendulum==2.1.2",
        "    env_vars:",
        f'      RUN_ID: "{style.name}"',
        "  shutdownAfterJobFinishes: true",
        "  ttlSecondsAfterFinished: 600",
        "  suspend: true",
        "  rayClusterSpec:",
        "    rayVersion: '2.9.0'",
        "    headGroupSpec:",
        "      rayStartParams:",
        "        dashboard-host: '0.0.0.0'",
        *_template("      ", style, "head", head_ctr, shm_gi=max(1, head.memory // 4)),
        "    workerGroupSpecs:",
        f"    - groupName: {'gpu' if gpu else 'cpu'}-workers",
        f"      replicas: {workers}",
        f"      minReplicas: {workers}",
        f"      maxReplicas: {workers}",
        "      rayStartParams: {}",
        *_template("      ", style, "worker", worker_ctr, shm_gi=max(1, pod.memory // 4)),
    ]
    return lines


def _mpi_job(rng: random.Random, style: _JobStyle, gpu: int) -> list[str]:
    workers = rng.choice(WORKER_CHOICES)
    pod = _pod(rng, gpu)
    slots = max(1, gpu)
    image = rng.choice(MPI_IMAGES)
    launcher = _container(
        "          ",
        "launcher",
        image,
        (
            "mpirun",
            "-np",
            str(workers * slots),
            "--allow-run-as-root",
            "-bind-to",
            "none",
            "python",
            "/examples/train.py",
            f"--model={rng.choice(MODELS)}",
        ),
        (("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),),
        _Pod(1, 2, 0),
        limits_only=style.limits_only,
        shm=False,
    )
    worker = _container(
        "          ",
        "worker",
        image,
        ("/usr/sbin/sshd", "-De"),
        (("NCCL_SOCKET_IFNAME", "eth0"),),
        pod,
    )
    lines = [
        "apiVersion: kubeflow.org/v2beta1",
        "kind: MPIJob",
        *_metadata(style),
        "spec:",
        f"  slotsPerWorker: {slots}",
        "  mpiImplementation: OpenMPI",
        "  runPolicy:",
        "    cleanPodPolicy: Running",
        "    ttlSecondsAfterFinished: 3600",
        "  mpiReplicaSpecs:",
        "    Launcher:",
        "      replicas: 1",
        "      restartPolicy: OnFailure",
        *_template("      ", style, "launcher", launcher),
        "    Worker:",
        f"      replicas: {workers}",
        "      restartPolicy: Never",
        *_template("      ", style, "worker", worker, shm_gi=max(1, pod.memory // 4)),
    ]
    return lines


def _batch_job(rng: random.Random, style: _JobStyle, gpu: int) -> list[str]:
    parallelism = rng.choice((1, 1, 2, 4, 4, 8, 16))
    pod = _pod(rng, gpu)
    ctr = _container(
        "      ",
        "main",
        rng.choice(BATCH_IMAGES),
        (
            "python",
            "-m",
            "pipeline.preprocess",
            f"--input=s3://datasets/{style.namespace}/raw",
            f"--output=s3://datasets/{style.namespace}/shards",
            f"--shards={parallelism * 64}",
        ),
        (("PIPELINE_STAGE", "preprocess"), ("WORKERS", str(pod.cpu))),
        pod,
        limits_only=style.limits_only,
        shm=False,
    )
    lines = [
        "apiVersion: batch/v1",
        "kind: Job",
        *_metadata(style),
        "spec:",
        f"  parallelism: {parallelism}",
        f"  completions: {parallelism}",
        "  completionMode: Indexed",
        f"  backoffLimit: {rng.randint(0, 6)}",
        "  suspend: true",
        *_template("  ", style, "main", ctr, restart_policy="Never"),
    ]
    return lines


_KINDS = (
    (0.50, "pytorch", _pytorch_job),
    (0.70, "ray", _ray_job),
    (0.85, "mpi", _mpi_job),
    (1.00, "batch", _batch_job),
)


def _job(
    rng: random.Random, index: int, leaves: Sequence[str], interns: Set[str]
) -> tuple[str, str]:
    """One job manifest: (path in the repo, YAML text)."""
    r = rng.random()
    prefix, build = next((p, b) for cut, p, b in _KINDS if r < cut)
    namespace = rng.choice(leaves)
    pr = rng.random()
    style = _JobStyle(
        name=f"{prefix}-{index:06d}",
        namespace=namespace,
        priority="low" if pr < 0.2 else "high" if pr < 0.35 else None,
        quota_label=rng.random() < 0.05,
        non_preemptible=rng.random() < 0.03 and namespace not in interns,
        init_container=rng.random() < 0.1,
        limits_only=rng.random() < 0.1,
    )
    gpu = rng.choice((1, 2, 4, 4, 8, 8)) if rng.random() < 0.4 else 0
    text = "\n".join(build(rng, style, gpu)) + "\n"
    return f"jobs/{namespace}/{style.name}.yaml", text


# ---------------------------------------------------------------------------
# git plumbing


def _env(when: int) -> dict[str, str]:
    env = dict(os.environ)
    stamp = f"@{when} +0000"
    env.update(
        GIT_AUTHOR_NAME=BENCH_NAME,
        GIT_AUTHOR_EMAIL=BENCH_EMAIL,
        GIT_COMMITTER_NAME=BENCH_NAME,
        GIT_COMMITTER_EMAIL=BENCH_EMAIL,
        GIT_AUTHOR_DATE=stamp,
        GIT_COMMITTER_DATE=stamp,
    )
    return env


def _git(
    repo: Path, *args: str, input: bytes | None = None, env: dict[str, str] | None = None
) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args],
        input=input,
        env=env,
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"git {' '.join(args)} failed ({proc.returncode}): {proc.stderr.decode().strip()}"
        )
    return proc.stdout.decode().strip()


def _fast_import_file(out: list[bytes], rel: str, text: str) -> None:
    data = text.encode()
    out.append(b"M 100644 inline %s\ndata %d\n%s\n" % (rel.encode(), len(data), data))


def generate_fleet(
    path: Path,
    *,
    jobs: int,
    clusters: int,
    nodes_per_cluster: int,
    leaf_quotas: int,
    seed: int = 0,
    checkout: bool = False,
) -> None:
    """Create a new Git repo at ``path`` holding one commit of a synthetic fleet on ``main``.

    The commit is built with ``git fast-import``; the work tree is left empty unless
    ``checkout`` is true. ``path`` must not exist or be an empty directory.
    """
    if jobs < 0 or clusters < 1 or nodes_per_cluster < 1 or leaf_quotas < 1:
        raise ValueError("need jobs >= 0, clusters >= 1, nodes_per_cluster >= 1, leaf_quotas >= 1")
    path = Path(path)
    if path.exists() and any(path.iterdir()):
        raise FileExistsError(f"{path} exists and is not empty")
    path.mkdir(parents=True, exist_ok=True)
    _git(path, "init", "-q", "-b", "main")

    rng = random.Random(seed)
    interns_idx = set(rng.sample(range(1, leaf_quotas), leaf_quotas // 10))
    leaves = [f"team-{i}" for i in range(leaf_quotas)]
    interns = {f"team-{i}" for i in interns_idx}
    total = _fleet_total(clusters, nodes_per_cluster)

    message = (
        f"Synthetic fleet: {jobs} jobs, {clusters} clusters x {nodes_per_cluster} nodes, "
        f"{leaf_quotas} leaf quotas (seed {seed})\n"
    ).encode()
    ident = f"{BENCH_NAME} <{BENCH_EMAIL}> {EPOCH} +0000".encode()
    header = b"commit %s\nauthor %s\ncommitter %s\ndata %d\n%s\n" % (
        BRANCH.encode(),
        ident,
        ident,
        len(message),
        message,
    )

    proc = subprocess.Popen(
        ["git", "-C", str(path), "fast-import", "--quiet", "--date-format=raw", "--done"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None
    try:
        buf: list[bytes] = [header]
        _fast_import_file(buf, "fleet.yaml", FLEET_YAML)
        _fast_import_file(buf, "priorityclasses.yaml", PRIORITY_CLASSES_YAML)
        _fast_import_file(buf, "policies/fleet.yaml", POLICY_YAML)
        _fast_import_file(buf, TREE_PATH, _quota_tree(total, leaf_quotas, interns_idx))
        for i in range(clusters):
            _fast_import_file(
                buf,
                f"clusters/{_cluster_name(i, clusters)}.yaml",
                _member_cluster(i, clusters, nodes_per_cluster),
            )
        for i in range(jobs):
            _fast_import_file(buf, *_job(rng, i, leaves, interns))
            if len(buf) >= 2048:
                proc.stdin.write(b"".join(buf))
                buf.clear()
        buf.append(b"done\n")
        proc.stdin.write(b"".join(buf))
        proc.stdin.close()
    except BrokenPipeError:
        pass
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.wait() != 0:
        raise RuntimeError(f"git fast-import failed: {err.strip()}")
    if checkout:
        _git(path, "checkout", "-q", "-f", "main")


def _commit_one_file(path: Path, rel: str, text: str, message: str) -> str:
    """Commit ``text`` at ``rel`` on main, one minute after main's head; return the SHA.

    Plumbing only, through a temporary index, so it works without a work tree. If the
    repo has a checked-out work tree (an index file exists), the file is also written
    there and staged in the real index, so ``git status`` stays clean.
    """
    path = Path(path)
    parent = _git(path, "rev-parse", "--verify", f"{BRANCH}^{{commit}}")
    when = int(_git(path, "log", "-1", "--format=%ct", parent)) + COMMIT_STEP_SECONDS
    env = _env(when)
    data = text.encode()
    blob = _git(path, "hash-object", "-w", "--no-filters", "--stdin", input=data)
    with tempfile.TemporaryDirectory(prefix="fleetq-bench-") as tmp:
        tmp_env = dict(env, GIT_INDEX_FILE=str(Path(tmp) / "index"))
        _git(path, "read-tree", parent, env=tmp_env)
        _git(path, "update-index", "--add", "--cacheinfo", f"100644,{blob},{rel}", env=tmp_env)
        tree = _git(path, "write-tree", env=tmp_env)
    sha = _git(path, "commit-tree", "--no-gpg-sign", tree, "-p", parent, "-m", message, env=env)
    _git(path, "update-ref", "-m", f"fleetq-bench: {message}", BRANCH, sha, parent)
    git_dir = Path(_git(path, "rev-parse", "--absolute-git-dir"))
    if (git_dir / "index").exists():
        target = path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        _git(path, "update-index", "--add", "--cacheinfo", f"100644,{blob},{rel}")
    return sha


def _read_main(path: Path, rel: str) -> str:
    return _git(Path(path), "cat-file", "blob", f"{BRANCH}:{rel}") + "\n"


_LEAF_RE = re.compile(r"^ +- name: (team-\d+)\n +min:\n +cpu: \"(\d+)\"", re.MULTILINE)


def add_job(path: Path, *, index: int, seed: int = 1) -> str:
    """Commit one new job manifest on main and return the new commit's SHA.

    The job is ``<kind>-<index:06d>`` in the namespace of a random leaf quota,
    deterministic from ``(seed, index)``. Use an ``index`` >= the ``jobs`` count given
    to ``generate_fleet`` (and not used before) so the name is new; a path that
    already exists on main raises ``ValueError``.
    """
    leaves_min = _LEAF_RE.findall(_read_main(path, TREE_PATH))
    if not leaves_min:
        raise ValueError(f"no leaf quotas found in {TREE_PATH}")
    leaves = [name for name, _ in leaves_min]
    interns = {name for name, cpu in leaves_min if cpu == "0"}
    rel, text = _job(random.Random(f"fleetq-bench:{seed}:{index}"), index, leaves, interns)
    exists = subprocess.run(
        ["git", "-C", str(path), "cat-file", "-e", f"{BRANCH}:{rel}"], capture_output=True
    )
    if exists.returncode == 0:
        raise ValueError(f"{rel} already exists on main; pick another index")
    return _commit_one_file(path, rel, text, f"Add job {rel}")


def change_quota_line(path: Path) -> str:
    """Commit a one-line change to leaf ``team-0``'s max cpu in quota/tree.yaml; return SHA.

    Each call lowers that max by one core while it stays >= the leaf's min, and
    otherwise raises it by one (within its department's max), so every call changes
    the file and the tree stays valid. Raises ``ValueError`` when neither is possible
    (a degenerate fleet where the leaf's min equals its department's max).
    """
    lines = _read_main(path, TREE_PATH).splitlines(keepends=True)
    leaf = next(i for i, line in enumerate(lines) if line.strip() == "- name: team-0")
    dept = max(i for i in range(leaf) if lines[i].strip().startswith("- name: dept-"))

    def cpu_line(start: int, section: str) -> int:
        at = next(i for i in range(start + 1, len(lines)) if lines[i].strip() == f"{section}:")
        return next(i for i in range(at + 1, len(lines)) if lines[i].lstrip().startswith("cpu:"))

    def cpu_at(i: int) -> int:
        return int(lines[i].split(":", 1)[1].strip().strip('"'))

    max_at = cpu_line(leaf, "max")
    low, high, cap = cpu_at(cpu_line(leaf, "min")), cpu_at(max_at), cpu_at(cpu_line(dept, "max"))
    if high - 1 >= low:
        new = high - 1
    elif high + 1 <= cap:
        new = high + 1
    else:
        raise ValueError(f"team-0 max cpu {high} cannot change: min {low}, parent max {cap}")
    indent = lines[max_at][: len(lines[max_at]) - len(lines[max_at].lstrip())]
    lines[max_at] = f'{indent}cpu: "{new}"\n'
    return _commit_one_file(
        path, TREE_PATH, "".join(lines), f"quota: team-0 max cpu {high} -> {new}"
    )


# ---------------------------------------------------------------------------
# command line


def _du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.generate",
        description="Generate a synthetic fleetq fleet repo (one commit on main) for benchmarks.",
    )
    parser.add_argument("path", type=Path, help="new repository directory (must not exist)")
    parser.add_argument("--jobs", type=int, required=True, help="number of job manifests")
    parser.add_argument("--clusters", type=int, required=True, help="number of member clusters")
    parser.add_argument("--nodes", type=int, required=True, help="nodes per member cluster")
    parser.add_argument("--leaves", type=int, required=True, help="number of leaf quotas")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--checkout", action="store_true", help="also check out the work tree (slower)"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        generate_fleet(
            args.path,
            jobs=args.jobs,
            clusters=args.clusters,
            nodes_per_cluster=args.nodes,
            leaf_quotas=args.leaves,
            seed=args.seed,
            checkout=args.checkout,
        )
    except (ValueError, FileExistsError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    elapsed = time.perf_counter() - started
    sha = _git(args.path, "rev-parse", BRANCH)
    depts = len(_departments(args.leaves))
    size = _du(args.path / ".git")
    print(
        f"generated {args.path}: {args.jobs} jobs, {args.clusters} clusters x {args.nodes} nodes, "
        f"{args.leaves} leaf quotas in {depts} departments (seed {args.seed})"
    )
    print(f"commit {sha} on main; .git is {size / 1e6:.1f} MB; took {elapsed:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
