"""What member clusters report, on real git repositories: ``fleetq report``
commits a cluster's jobs and nodes beside the state, and the next
``fleetq reconcile`` acts on them (DESIGN §3 "Failover", §4 ``status/``).

The fleet is the template's (``fleetq init``): in ``text``, at most two jobs
run at a time (``kube-queue/max-jobs``), so a job that finishes lets the next
one in; ``video``'s PyTorchJobs fail over between GPU clusters
(``policies/gang-failover.yaml``: tolerationSeconds 120, purgeMode Graciously).
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .conftest import (
    NOW,
    QUEUED_CLUSTER_POLICY,
    REPO_ROOT,
    commit_all,
    fleetq,
    git,
    make_fleet_repo,
    member_cluster,
    placements,
    pytorchjob,
    rev,
    run_reconcile,
    state_files,
    state_show,
    state_yaml,
    when,
    write_files,
)

START = "2026-12-04T10:00:00Z"
DONE = "2026-12-04T10:30:00Z"
REPORTED = "2026-12-04T10:31:00Z"
NEXT = "2026-12-04T10:32:00Z"
HOTFIX = "text/llm-sft-hotfix"
WAITING = "text/embedding-eval-ray"  # first in text's queue
MAE = "video/video-mae-pretrain"


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI as a subprocess, with ``stdin`` as its standard input."""
    if stdin is None:
        return fleetq(*args)
    return subprocess.run([sys.executable, "-m", "reconciler.cli", *args], cwd=REPO_ROOT,
                          env=dict(os.environ), input=stdin, capture_output=True, text=True,
                          timeout=60, check=False)


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    """The template fleet, reconciled at ``START``."""
    path = tmp_path / "fleet"
    assert fleetq("init", str(path)).returncode == 0
    proc = fleetq("reconcile", "--repo", str(path), "--now", START, "-q")
    assert proc.returncode == 0, proc.stderr
    items = placements(path)
    assert items[HOTFIX]["phase"] == "Admitted" and items[HOTFIX]["cluster"] == "gpu-bj-b"
    assert items[WAITING]["phase"] == "Queued" and items[WAITING]["position"] == 1
    assert items[MAE]["phase"] == "Admitted" and items[MAE]["cluster"] == "gpu-hz-a"
    return path


def pytorchjob_status(name: str, namespace: str, condition: str, at: str,
                      message: str = "") -> str:
    """A PyTorchJob as ``kubectl get -o yaml`` shows it on a member cluster."""
    return f"""
- apiVersion: kubeflow.org/v1
  kind: PyTorchJob
  metadata:
    name: {name}
    namespace: {namespace}
    labels: {{fleetq.io/managed-by: fleetq}}
  status:
    conditions:
    - {{type: Created, status: "True", lastTransitionTime: "{START}"}}
    - {{type: {condition}, status: "True", lastTransitionTime: "{at}", message: "{message}"}}
"""


def succeeded(job: dict[str, str]) -> str:
    """A job of any kind, as its cluster shows it once it succeeded."""
    if job["kind"] == "RayJob":
        status = ("\n    jobDeploymentStatus: Complete\n    jobStatus: SUCCEEDED\n"
                  f"    endTime: \"{DONE}\"")
    else:
        condition = "Complete" if job["kind"] == "Job" else "Succeeded"
        status = (f"\n    conditions: [{{type: {condition}, status: \"True\", "
                  f"lastTransitionTime: \"{DONE}\"}}]")
    return (f"\n- apiVersion: {job['apiVersion']}\n  kind: {job['kind']}\n  metadata:\n"
            f"    name: {job['name']}\n    namespace: {job['namespace']}\n"
            f"    labels: {{fleetq.io/managed-by: fleetq}}\n  status:{status}\n")


def kubectl_list(*items: str) -> str:
    return "apiVersion: v1\nkind: List\nitems:" + "".join(items)


def report(path: Path, cluster: str, text: str, *extra: str,
           now: str = REPORTED) -> subprocess.CompletedProcess[str]:
    return _run("report", "--repo", str(path), "--cluster", cluster, "--now", now, *extra,
                stdin=text)


def reconcile(path: Path, now: str = NEXT) -> subprocess.CompletedProcess[str]:
    proc = fleetq("reconcile", "--repo", str(path), "--now", now, "-q")
    assert proc.returncode == 0, proc.stderr
    return proc


NODE = """
- apiVersion: v1
  kind: Node
  metadata: {name: bj-b-1, labels: {gpu: a100}}
  spec:
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  status:
    allocatable: {cpu: "96", memory: 768Gi, nvidia.com/gpu: "8", pods: "110"}
    conditions: [{type: Ready, status: "True"}]
"""


def test_a_job_reported_succeeded_is_finished_and_the_next_one_in_its_queue_runs(
        fleet: Path) -> None:
    proc = report(fleet, "gpu-bj-b", kubectl_list(
        pytorchjob_status("llm-sft-hotfix", "text", "Succeeded", DONE, "completed"), NODE))
    assert proc.returncode == 0, proc.stderr
    assert "gpu-bj-b: jobs 1 succeeded; 1 nodes" in proc.stdout
    status = state_yaml(fleet, "status/gpu-bj-b.yaml")
    assert status["kind"] == "ClusterStatus" and status["observedAt"] == REPORTED
    assert status["jobs"] == [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                               "namespace": "text", "name": "llm-sft-hotfix",
                               "phase": "Succeeded", "since": DONE, "message": "completed"}]
    inventory = state_yaml(fleet, "inventory/gpu-bj-b.yaml")
    assert inventory["nodes"] == [{
        "name": "bj-b-1", "ready": True, "labels": {"gpu": "a100"},
        "allocatable": {"cpu": "96", "memory": "768Gi", "nvidia.com/gpu": "8", "pods": "110"},
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}]
    before = placements(fleet)
    assert before[HOTFIX]["phase"] == "Admitted"  # a report decides nothing by itself
    # validate shows the capacity the cluster declares and does not have
    checked = fleetq("validate", "--repo", str(fleet))
    assert checked.returncode == 0, checked.stdout
    # (told at the file to fix: the report is on the state branch alone)
    assert ("clusters/gpu-bj-b.yaml:4: warning: MemberCluster gpu-bj-b: 16 nvidia.com/gpu "
            "declared in all, 8 on its ready, schedulable nodes") in checked.stdout

    proc = reconcile(fleet)
    assert "1 finished" in proc.stdout
    # the cluster declares two A100 nodes of 8 GPUs; it reports one
    assert ("clusters/gpu-bj-b.yaml:4: warning: MemberCluster gpu-bj-b: 16 nvidia.com/gpu "
            "declared in all, 8 on its ready, schedulable nodes (observed at 2026-12-04T10:31:00Z, "
            "as its report on the state branch, inventory/gpu-bj-b.yaml, says); fix its "
            "spec.nodes or spec.nodeGroups, or the cluster") in proc.stderr
    items = placements(fleet)
    assert items[HOTFIX]["phase"] == "Finished" and items[HOTFIX]["cluster"] == "gpu-bj-b"
    assert items[HOTFIX]["endedAt"] == DONE
    assert items[WAITING]["phase"] == "Admitted"
    # the finished job stays on its cluster (its object keeps its history)
    assert "clusters/gpu-bj-b/text/pytorchjob-llm-sft-hotfix.yaml" in state_files(fleet)
    message = git(fleet, "log", "-1", "--format=%B", "fleetq/state")
    assert "finished PyTorchJob text/llm-sft-hotfix on gpu-bj-b" in message
    # the reports are taken in: nothing more to do, and they stay
    head = rev(fleet, "fleetq/state")
    assert "up to date" in reconcile(fleet).stdout
    assert rev(fleet, "fleetq/state") == head
    assert state_show(fleet, "status/gpu-bj-b.yaml") is not None
    # a later push: the reports are carried over, the job stays Finished
    (fleet / "jobs" / "text" / "README.md").write_text("notes\n")
    commit_all(fleet, "notes")
    reconcile(fleet, "2026-12-04T11:00:00Z")
    assert placements(fleet)[HOTFIX]["phase"] == "Finished"
    assert state_show(fleet, "inventory/gpu-bj-b.yaml") is not None


def test_a_failed_job_fails_over_its_old_copy_kept_until_the_new_one_runs(
        fleet: Path) -> None:
    """gang-failover (Graciously): ``video-mae-pretrain`` fails on gpu-hz-a; it
    is evicted and never placed there again; its copy stays on gpu-hz-a until
    its new placement is reported running, then goes."""
    old_copy = "clusters/gpu-hz-a/video/pytorchjob-video-mae-pretrain.yaml"
    proc = report(fleet, "gpu-hz-a", kubectl_list(
        pytorchjob_status("video-mae-pretrain", "video", "Failed", DONE, "worker-0 OOMKilled")))
    assert proc.returncode == 0, proc.stderr
    proc = reconcile(fleet)
    item = placements(fleet)[MAE]
    assert item["failedOn"] == ["gpu-hz-a"] and item["keptOn"] == ["gpu-hz-a"]
    assert item["reason"].endswith("(it failed on gpu-hz-a: never placed there again)")
    assert item.get("cluster") != "gpu-hz-a"
    assert old_copy in state_files(fleet)
    message = git(fleet, "log", "-1", "--format=%B", "fleetq/state")
    assert ("fail over PyTorchJob video/video-mae-pretrain from gpu-hz-a: queued: failed on "
            "gpu-hz-a at 2026-12-04T10:30:00Z (worker-0 OOMKilled); its copy stays there until "
            "it is placed again and runs there, 600 s at most (purgeMode Graciously, "
            "gracePeriodSeconds)") in message
    # explain names the clusters its policy selects (GPU ones), but the one it failed on
    told = fleetq("explain", "--repo", str(fleet), MAE, "--now", NEXT)
    assert told.returncode == 0, told.stderr
    assert ("Its earlier copy stays on gpu-hz-a until its new placement is reported running, "
"or 600 s after it failed over (from gpu-hz-a at 2026-12-04T10:32:00Z) at the latest "
            "(gracePeriodSeconds), as its policy's failover purgeMode (Graciously) says."
            ) in told.stdout
    listed = [line for line in told.stdout.splitlines() if line.startswith("  - cluster ")]
    assert listed and all(line.startswith("  - cluster gpu-bj-b:") for line in listed), told.stdout
    # a fixed point: the next reconcile changes nothing, and plan says so
    assert "up to date" in reconcile(fleet, "2026-12-04T10:32:30Z").stdout
    assert fleetq("plan", "--repo", str(fleet), "--now", "2026-12-04T10:32:40Z",
                  "--exit-code").returncode == 0

    # room on gpu-bj-b: its jobs there finish; the failed job goes there
    done = [succeeded(i["job"]) for i in placements(fleet).values()
            if i.get("cluster") == "gpu-bj-b" and i["phase"] == "Admitted"]
    assert report(fleet, "gpu-bj-b", kubectl_list(*done), now=NEXT).returncode == 0
    reconcile(fleet, "2026-12-04T10:33:00Z")
    item = placements(fleet)[MAE]
    assert item["phase"] == "Admitted" and item["cluster"] == "gpu-bj-b"
    assert item["keptOn"] == ["gpu-hz-a"] and old_copy in state_files(fleet)

    running = pytorchjob_status("video-mae-pretrain", "video", "Running",
                                "2026-12-04T10:40:00Z")
    assert report(fleet, "gpu-bj-b", kubectl_list(*done, running),
                  now="2026-12-04T10:41:00Z").returncode == 0
    reconcile(fleet, "2026-12-04T10:42:00Z")
    item = placements(fleet)[MAE]
    assert "keptOn" not in item and item["failedOn"] == ["gpu-hz-a"]
    assert item["cluster"] == "gpu-bj-b"
    assert old_copy not in state_files(fleet)
    assert "purge PyTorchJob video/video-mae-pretrain from gpu-hz-a" in git(
        fleet, "log", "-1", "--format=%B", "fleetq/state")


def test_a_report_that_cannot_be_read_records_nothing_and_one_without_state_is_refused(
        tmp_path: Path, fleet: Path) -> None:
    head = rev(fleet, "fleetq/state")
    proc = report(fleet, "gpu-bj-b", "items: [\n")
    assert proc.returncode == 2
    assert "<stdin>:" in proc.stderr and "nothing recorded" in proc.stderr
    assert rev(fleet, "fleetq/state") == head

    fresh = tmp_path / "fresh"
    assert fleetq("init", str(fresh)).returncode == 0
    proc = report(fresh, "gpu-bj-b", kubectl_list())
    assert proc.returncode == 2 and "run fleetq reconcile first" in proc.stderr
    assert rev(fresh, "fleetq/state") is None


def test_a_damaged_status_file_is_a_warning_and_the_rest_is_reconciled(fleet: Path) -> None:
    assert report(fleet, "gpu-bj-b", kubectl_list(
        pytorchjob_status("llm-sft-hotfix", "text", "Succeeded", DONE))).returncode == 0
    # someone adds a report for gpu-hz-a by hand on the state branch, badly
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=fleet,
                          input="kind: ClusterStatus\nobservedAt: [\n", capture_output=True,
                          text=True, check=True).stdout.strip()
    index = {"GIT_INDEX_FILE": str(fleet / ".git" / "hand-edit.index")}
    git(fleet, "read-tree", "fleetq/state", env=index)
    git(fleet, "update-index", "--add", "--cacheinfo", f"100644,{blob},status/gpu-hz-a.yaml",
        env=index)
    tree = git(fleet, "write-tree", env=index).strip()
    message = git(fleet, "log", "-1", "--format=%B", "fleetq/state")
    commit = git(fleet, "commit-tree", tree, "-p", "fleetq/state", "-m", message).strip()
    git(fleet, "update-ref", "refs/heads/fleetq/state", commit)

    proc = reconcile(fleet)
    assert "status/gpu-hz-a.yaml:2: warning: not valid YAML" in proc.stderr
    assert "the report is left out (its jobs stay as they are)" in proc.stderr
    items = placements(fleet)
    assert items[HOTFIX]["phase"] == "Finished"
    assert items[MAE]["phase"] == "Admitted" and items[MAE]["cluster"] == "gpu-hz-a"


def test_a_report_is_pushed_onto_the_remotes_state_without_losing_a_newer_reconcile(
        tmp_path: Path, fleet: Path) -> None:
    """Two clones of one remote: B reconciles a new job and pushes; A, whose
    state branch is older, reports: its commit goes on top of B's, which is
    kept whole."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(fleet, "remote", "add", "origin", str(remote))
    git(fleet, "push", "-q", "origin", "main", "fleetq/state")
    b = tmp_path / "b"
    git(tmp_path, "clone", "-q", "-b", "main", str(remote), str(b))
    (b / "jobs" / "text" / "late.yaml").write_text(
        (fleet / "jobs" / "text" / "llm-sft-hotfix.yaml").read_text()
        .replace("llm-sft-hotfix", "late-job"))
    commit_all(b, "late job")
    git(b, "push", "-q", "origin", "main")
    proc = fleetq("reconcile", "--repo", str(b), "--remote", "origin", "--now", NEXT, "-q")
    assert proc.returncode == 0, proc.stderr
    b_state = git(remote, "rev-parse", "fleetq/state").strip()

    proc = report(fleet, "gpu-bj-b", kubectl_list(
        pytorchjob_status("llm-sft-hotfix", "text", "Succeeded", DONE)), "--remote", "origin")
    assert proc.returncode == 0, proc.stderr
    head = git(remote, "rev-parse", "fleetq/state").strip()
    assert proc.stdout.startswith(f"committed {head[:12]} to fleetq/state and pushed it to "
                                  f"origin: "), proc.stdout
    assert git(remote, "rev-parse", f"{head}^").strip() == b_state
    items = placements(remote)
    assert "text/late-job" in items  # B's decisions are all there
    assert state_show(remote, "status/gpu-bj-b.yaml") is not None


def test_an_incremental_reconcile_of_a_report_decides_as_a_whole_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In process, with the cache: after a report, the jobs the state left
    waiting are settled (left out of the cycle until something could help
    them), and the cycle checks (``CHECK_QUICK``, on in every test) that
    deciding with them in gives the same decisions; a failover turns settling
    off. A watch-like second reconcile of the same reports finds nothing to do."""
    from reconciler import pipeline
    from reconciler.cli import init_repo
    from reconciler.fleet.observed import cluster_report
    from reconciler.gitops.repo import FleetRepo

    path = tmp_path / "fleet"
    init_repo(path, commit=True)
    run_reconcile(path, START)
    seen: list[int] = []
    real = pipeline.reconcile_cycle  # type: ignore[attr-defined]

    def counted(inp: object, *args: object, **kw: object) -> object:
        seen.append(len(inp.settled))  # type: ignore[attr-defined]
        return real(inp, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "reconcile_cycle", counted)
    done = yaml.safe_load(kubectl_list(
        pytorchjob_status("llm-sft-hotfix", "text", "Succeeded", DONE)))
    pipeline.record_reports(FleetRepo(path), [cluster_report("gpu-bj-b", REPORTED, [done])],
                            now=when(REPORTED))
    outcome = run_reconcile(path, NEXT)
    assert outcome.commit is not None and seen == [2]  # text's two waiting jobs
    items = placements(path)
    assert items[HOTFIX]["phase"] == "Finished" and items[WAITING]["phase"] == "Admitted"

    failed = yaml.safe_load(kubectl_list(
        pytorchjob_status("video-mae-pretrain", "video", "Failed", DONE)))
    pipeline.record_reports(FleetRepo(path), [cluster_report("gpu-hz-a", REPORTED, [failed])],
                            now=when(REPORTED))
    run_reconcile(path, "2026-12-04T10:40:00Z")
    assert seen[-1] == 0
    assert placements(path)[MAE]["failedOn"] == ["gpu-hz-a"]
    again = run_reconcile(path, "2026-12-04T10:41:00Z")
    assert again.computed is None and len(seen) == 2


def test_a_settled_job_whose_old_copy_goes_after_its_grace_period_is_written_anew(
        tmp_path: Path) -> None:
    """In a BestEffortFIFO queue, a job that failed over waits with its old copy
    kept (purgeMode Graciously). After a push of another job, once the grace
    period ended, the incremental reconcile took the job as settled and wrote
    its decision as the state had it, old copy and all, while a reconcile
    without the cache purged it (as the commit message said)."""
    import shutil

    from reconciler import pipeline
    from reconciler.cli import init_repo
    from reconciler.fleet.observed import cluster_report
    from reconciler.gitops.repo import FleetRepo

    path = tmp_path / "fleet"
    init_repo(path, commit=True)
    fleet_yaml = path / "fleet.yaml"
    fleet_yaml.write_text(fleet_yaml.read_text().replace(
        "queueStrategy: StrictFIFO     # video", "queueStrategy: BestEffortFIFO # video"))
    commit_all(path, "video: BestEffortFIFO")
    run_reconcile(path, START)
    failed = yaml.safe_load(kubectl_list(
        pytorchjob_status("video-mae-pretrain", "video", "Failed", DONE)))
    pipeline.record_reports(FleetRepo(path), [cluster_report("gpu-hz-a", REPORTED, [failed])],
                            now=when(REPORTED))
    run_reconcile(path, NEXT)
    assert placements(path)[MAE]["phase"] == "Queued"
    assert placements(path)[MAE]["keptOn"] == ["gpu-hz-a"]
    job = (path / "jobs/text/tokenizer-ablation.yaml").read_text()  # (one that waits)
    write_files(path, {"jobs/text/late.yaml": job.replace("name: tokenizer-ablation",
                                                          "name: late-job", 1)})
    commit_all(path, "a job pushed", date="2026-12-04T10:40:00Z")
    base = rev(path, "fleetq/state")
    full = tmp_path / "full"
    shutil.copytree(path, full)
    shutil.rmtree(full / ".git" / "fleetq")
    later = "2026-12-04T10:45:00Z"  # (gracePeriodSeconds 600 passed since 10:32)
    assert run_reconcile(path, later).commit is not None
    assert run_reconcile(full, later, use_cache=False).commit is not None
    assert rev(full, "fleetq/state^") == base
    assert placements(path)["text/late-job"]["phase"] == "Queued"
    assert "keptOn" not in placements(path)[MAE]
    assert rev(path, "fleetq/state^{tree}") == rev(full, "fleetq/state^{tree}")


def test_reports_that_say_nothing_name_no_cluster_or_come_late_are_not_recorded(
        fleet: Path) -> None:
    """Input with no Kubernetes object (kubectl failed: empty, or its error text)
    is refused before anything is written, as is a cluster that is not a
    MemberCluster (its name becomes a file of the state branch); an empty
    List is a report of no jobs; a report observed before the one there is not
    recorded (it would undo what the newer one said)."""
    head = rev(fleet, "fleetq/state")
    for text, what in (
            ("", ""),
            ("error: You must be logged in to the server (Unauthorized)\n",
             ": its first document has no apiVersion and kind"),
            ("hello", ": its first document is a string"),
            ("- a\n", ": its first document is a list")):
        proc = report(fleet, "gpu-bj-b", text, "--complete")
        assert proc.returncode == 2, (text, proc.stdout)
        assert f"no Kubernetes object in it{what} (did kubectl fail?)" in proc.stderr
    for name in ("../placements", "a/b", "gpu-xx-z"):
        proc = report(fleet, name, kubectl_list())
        assert proc.returncode == 2 and f"no MemberCluster named {name!r}" in proc.stderr
    assert rev(fleet, "fleetq/state") == head
    proc = report(fleet, "cpu-sh-c", kubectl_list())
    assert proc.returncode == 0 and "cpu-sh-c: jobs none" in proc.stdout
    assert "warning" not in proc.stderr
    planned = fleetq("plan", "--repo", str(fleet), "--now", REPORTED)
    assert ("No changes to the state's files. A reconcile would commit once, to record that "
            "it took in the clusters' latest reports") in planned.stdout, planned.stdout
    reconcile(fleet, REPORTED)
    planned = fleetq("plan", "--repo", str(fleet), "--now", REPORTED)
    assert "No changes. The state branch is up to date." in planned.stdout, planned.stdout

    failed = kubectl_list(pytorchjob_status("llm-sft-hotfix", "text", "Failed", DONE, "oom"))
    assert report(fleet, "gpu-bj-b", failed, now="2026-12-04T10:40:00Z").returncode == 0
    late = report(fleet, "gpu-bj-b", kubectl_list(), now="2026-12-04T10:35:00Z")
    assert late.returncode == 0
    assert ("gpu-bj-b: not recorded: the report there was observed at 2026-12-04T10:40:00Z, "
            "after this one (2026-12-04T10:35:00Z)") in late.stderr
    assert state_yaml(fleet, "status/gpu-bj-b.yaml")["observedAt"] == "2026-12-04T10:40:00Z"


def test_a_finished_job_keeps_its_files_and_dependencies_while_its_file_is_broken(
        fleet: Path) -> None:
    """The RayJob ``video-frame-stats`` (sent with its ConfigMap) finishes: its
    ConfigMap stays on the cluster with it. Its file then gets a typo: it stays
    Finished, nothing leaves the cluster, and fixing the typo does not run it
    again."""
    items = placements(fleet)
    (key, item), = [(k, i) for k, i in items.items() if k.startswith("video/video-frame-stats")]
    cluster = item["cluster"]
    files = [f for f in state_files(fleet) if f.startswith(f"clusters/{cluster}/video/")
             and ("frame-stats" in f)]
    assert any("configmap-" in f for f in files), files
    assert report(fleet, cluster, kubectl_list(succeeded(item["job"]))).returncode == 0
    reconcile(fleet)
    assert placements(fleet)[key]["phase"] == "Finished"
    assert all(f in state_files(fleet) for f in files)

    source = fleet / "jobs/video/video-frame-stats.yaml"
    good = source.read_text()
    source.write_text(good.replace("kind: RayJob", "kind: RayJob\n  bad: [", 1))
    commit_all(fleet, "typo")
    proc = reconcile(fleet, "2026-12-04T10:50:00Z")
    assert "jobs/video/video-frame-stats.yaml" in proc.stderr
    assert placements(fleet)[key]["phase"] == "Finished"
    assert all(f in state_files(fleet) for f in files)
    source.write_text(good)
    commit_all(fleet, "fixed")
    reconcile(fleet, "2026-12-04T11:00:00Z")
    assert placements(fleet)[key]["phase"] == "Finished"


def test_a_job_its_operator_deletes_once_ended_leaves_the_cluster_when_it_finishes(
        fleet: Path) -> None:
    """``dataset-shard-index`` (a batch Job with ttlSecondsAfterFinished) and
    ``llm-sft-hotfix`` (none) finish on gpu-bj-b: the first one's manifest
    leaves the cluster (once Kubernetes deletes the Job, a manifest still
    declared would create it and run it again), the second one's stays."""
    items = placements(fleet)
    shard = items["platform/dataset-shard-index"]
    assert shard["cluster"] == "gpu-bj-b"
    shard_file = "clusters/gpu-bj-b/platform/job-dataset-shard-index.yaml"
    hotfix_file = "clusters/gpu-bj-b/text/pytorchjob-llm-sft-hotfix.yaml"
    assert {shard_file, hotfix_file} <= set(state_files(fleet))
    proc = report(fleet, "gpu-bj-b", kubectl_list(succeeded(shard["job"]),
                                                  succeeded(items[HOTFIX]["job"])))
    assert proc.returncode == 0, proc.stderr
    reconcile(fleet)
    after = placements(fleet)
    assert after["platform/dataset-shard-index"]["phase"] == "Finished"
    assert "ttlSecondsAfterFinished" in after["platform/dataset-shard-index"]["reason"]
    files = state_files(fleet)
    assert shard_file not in files and hotfix_file in files
    message = git(fleet, "log", "-1", "--format=%B", "fleetq/state")
    assert ("finished Job platform/dataset-shard-index on gpu-bj-b (its manifest leaves the "
            "cluster: its operator deletes it once it ended)") in message
    assert ("finished PyTorchJob text/llm-sft-hotfix on gpu-bj-b (it stays there until its "
            "file is deleted)") in message
    assert "up to date" in reconcile(fleet, "2026-12-04T10:33:00Z").stdout


def test_the_reports_of_a_cluster_leave_with_it(fleet: Path) -> None:
    assert report(fleet, "cpu-sh-c", kubectl_list()).returncode == 0
    assert report(fleet, "gpu-hz-a", kubectl_list()).returncode == 0
    reconcile(fleet)
    assert "status/cpu-sh-c.yaml" in state_files(fleet)
    git(fleet, "rm", "-q", "clusters/cpu-sh-c.yaml")
    commit_all(fleet, "cpu-sh-c leaves")
    reconcile(fleet, "2026-12-04T10:40:00Z")
    files = state_files(fleet)
    assert "status/cpu-sh-c.yaml" not in files and "status/gpu-hz-a.yaml" in files
    head = rev(fleet, "fleetq/state")
    assert "up to date" in reconcile(fleet, "2026-12-04T10:41:00Z").stdout
    assert rev(fleet, "fleetq/state") == head


def test_a_report_of_another_clusters_jobs_is_refused(fleet: Path) -> None:
    """``kubectl`` read gpu-hz-a while ``--cluster gpu-bj-b`` was given: the jobs'
    ``fleetq.io/cluster`` label says so, and nothing is recorded (a complete
    report of gpu-bj-b without its jobs would fail them all over)."""
    head = rev(fleet, "fleetq/state")
    mae = pytorchjob_status("video-mae-pretrain", "video", "Running", START).replace(
        "{fleetq.io/managed-by: fleetq}",
        "{fleetq.io/managed-by: fleetq, fleetq.io/cluster: gpu-hz-a}")
    proc = report(fleet, "gpu-bj-b", kubectl_list(mae), "--complete")
    assert proc.returncode == 2
    assert ("<stdin>: error: these are another cluster's jobs: their label fleetq.io/cluster "
            "says gpu-hz-a (1 of 1), not gpu-bj-b; give --cluster the cluster kubectl read"
            ) in proc.stderr
    assert rev(fleet, "fleetq/state") == head
    proc = report(fleet, "gpu-hz-a", kubectl_list(mae), "--complete")
    assert proc.returncode == 0, proc.stderr
    assert state_yaml(fleet, "status/gpu-hz-a.yaml")["jobs"][0]["phase"] == "Running"


def _failed_over(fleet: Path) -> None:
    """video-mae-pretrain fails on gpu-hz-a and waits, its old copy kept there."""
    proc = report(fleet, "gpu-hz-a", kubectl_list(
        pytorchjob_status("video-mae-pretrain", "video", "Failed", DONE, "OOMKilled")))
    assert proc.returncode == 0, proc.stderr
    reconcile(fleet)
    assert placements(fleet)[MAE]["keptOn"] == ["gpu-hz-a"]


def test_an_old_copy_leaves_with_its_cluster(fleet: Path) -> None:
    _failed_over(fleet)
    git(fleet, "rm", "-q", "clusters/gpu-hz-a.yaml")
    commit_all(fleet, "gpu-hz-a leaves")
    reconcile(fleet, "2026-12-04T10:40:00Z")
    item = placements(fleet)[MAE]
    assert "keptOn" not in item and item["failedOn"] == ["gpu-hz-a"]
    message = git(fleet, "log", "-1", "--format=%B", "fleetq/state")
    assert ("purge PyTorchJob video/video-mae-pretrain from gpu-hz-a: gpu-hz-a left the fleet"
            in message)
    told = fleetq("explain", "--repo", str(fleet), MAE, "--now", "2026-12-04T10:40:00Z")
    assert "earlier copy" not in told.stdout
    assert fleetq("plan", "--repo", str(fleet), "--exit-code",
                  "--now", "2026-12-04T10:40:00Z").returncode == 0


def test_a_finished_job_whose_cluster_left_is_not_sent_there_again(fleet: Path) -> None:
    """A job finished on gpu-bj-b; the cluster leaves the fleet, its folder the
    state: the job's reason no longer tells to delete its file to remove it
    from the cluster, but that it is not sent there again; and it is not, when
    the cluster comes back (it would run again)."""
    proc = report(fleet, "gpu-bj-b", kubectl_list(
        pytorchjob_status("llm-sft-hotfix", "text", "Succeeded", DONE, "completed")))
    assert proc.returncode == 0, proc.stderr
    reconcile(fleet)
    assert placements(fleet)[HOTFIX]["reason"].endswith(
        "delete its file to remove it from the cluster")
    sent = [f for f in state_files(fleet) if "llm-sft-hotfix" in f]
    assert sent and all(f.startswith("clusters/gpu-bj-b/") for f in sent)
    cluster = (fleet / "clusters/gpu-bj-b.yaml").read_text(encoding="utf-8")
    git(fleet, "rm", "-q", "clusters/gpu-bj-b.yaml")
    commit_all(fleet, "gpu-bj-b leaves")
    reconcile(fleet, "2026-12-04T10:40:00Z")
    item = placements(fleet)[HOTFIX]
    assert item["phase"] == "Finished" and item["cluster"] == "gpu-bj-b"
    assert item["reason"] == (
        f"succeeded on gpu-bj-b at {DONE}; its quota and room are free again; gpu-bj-b left "
        f"the fleet: the job is not sent there again, should it come back")
    assert not [f for f in state_files(fleet) if "llm-sft-hotfix" in f]
    write_files(fleet, {"clusters/gpu-bj-b.yaml": cluster})
    commit_all(fleet, "gpu-bj-b is back")
    reconcile(fleet, "2026-12-04T10:41:00Z")
    assert placements(fleet)[HOTFIX] == item
    assert not [f for f in state_files(fleet) if "llm-sft-hotfix" in f]
    assert fleetq("plan", "--repo", str(fleet), "--exit-code", "--no-cache",
                  "--now", "2026-12-04T10:42:00Z").returncode == 0


def test_a_cluster_whose_file_broke_still_reports(fleet: Path) -> None:
    """gpu-bj-b's file has a typo: the fleet goes on with its last good version,
    so the cluster, and its jobs, are still there, and its report is taken (it
    was refused: no MemberCluster of that name), then acted on."""
    path = fleet / "clusters/gpu-bj-b.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("  nodeGroups:", "  nodeGroupz:"),
                    encoding="utf-8")
    commit_all(fleet, "a typo")
    proc = reconcile(fleet)
    assert "clusters/gpu-bj-b.yaml: warning: the fleet goes on with this file's last good" \
        in proc.stderr
    proc = report(fleet, "gpu-bj-b", kubectl_list(
        pytorchjob_status("llm-sft-hotfix", "text", "Succeeded", DONE, "completed")))
    assert proc.returncode == 0, proc.stderr
    assert "gpu-bj-b: jobs 1 succeeded" in proc.stdout
    reconcile(fleet, "2026-12-04T10:40:00Z")
    assert placements(fleet)[HOTFIX]["phase"] == "Finished"


def test_an_old_copy_keeps_what_it_was_sent_with_when_its_file_is_deleted(
        fleet: Path) -> None:
    """video-mae-pretrain uses a ConfigMap; it fails over, its old copy kept on
    gpu-hz-a. The ConfigMap's file is deleted: the old copy keeps it there
    (it leaves with the copy), as the README says; it was taken at once."""
    job = fleet / "jobs/video/video-mae-pretrain.yaml"
    text = job.read_text(encoding="utf-8").replace(
        "            command: [\"torchrun\"]\n",
        "            command: [\"torchrun\"]\n"
        "            envFrom: [{configMapRef: {name: mae-env}}]\n")
    assert "mae-env" in text
    write_files(fleet, {"jobs/video/video-mae-pretrain.yaml": text, "jobs/video/mae-env.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: mae-env, namespace: video}\n"
        "data: {A: \"1\"}\n")})
    commit_all(fleet, "mae uses a ConfigMap")
    reconcile(fleet, "2026-12-04T10:01:00Z")
    sent = "clusters/gpu-hz-a/video/configmap-mae-env.yaml"
    assert sent in state_files(fleet)
    was = state_show(fleet, sent)
    _failed_over(fleet)
    assert sent in state_files(fleet)
    git(fleet, "rm", "-q", "jobs/video/mae-env.yaml")
    commit_all(fleet, "no more mae-env")
    reconcile(fleet, "2026-12-04T10:33:00Z")
    assert placements(fleet)[MAE]["keptOn"] == ["gpu-hz-a"]
    assert state_show(fleet, sent) == was


def test_deleting_a_job_that_fails_over_says_its_old_copy_goes_too(fleet: Path) -> None:
    _failed_over(fleet)
    git(fleet, "rm", "-q", "jobs/video/video-mae-pretrain.yaml")
    commit_all(fleet, "no more mae")
    reconcile(fleet, "2026-12-04T10:40:00Z")
    message = git(fleet, "log", "-1", "--format=%B", "fleetq/state")
    assert "delete PyTorchJob video/video-mae-pretrain from gpu-hz-a (its old copy)" in message
    assert not [f for f in state_files(fleet) if "video-mae-pretrain" in f]


def test_a_report_dated_ahead_of_the_clock_does_not_block_the_next(fleet: Path) -> None:
    """A report sent from a machine whose clock was a day ahead would make every
    later report of its cluster "older": the next one, dated by a right clock,
    replaces it, and says so."""
    import datetime as dt

    tomorrow = (dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert report(fleet, "cpu-sh-c", kubectl_list(), now=tomorrow).returncode == 0
    right = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    proc = report(fleet, "cpu-sh-c", kubectl_list(NODE), now=right)
    assert proc.returncode == 0, proc.stderr
    assert (f"warning: cpu-sh-c: the report there was dated {tomorrow}, ahead of this "
            f"machine's clock") in proc.stderr
    assert state_yaml(fleet, "status/cpu-sh-c.yaml")["observedAt"] == right


def test_an_old_copy_goes_after_the_grace_period_with_no_new_input(fleet: Path) -> None:
    """gang-failover (Graciously, gracePeriodSeconds 600 by default):
    ``video-mae-pretrain`` fails on gpu-hz-a and waits for room, its copy kept
    there. The state commit says when that copy is due to go (Fleet-Due); a
    reconcile before then is a fixed point, one from then on purges it though
    nothing was pushed or reported (it used to be kept for as long as the job
    waited)."""
    old_copy = "clusters/gpu-hz-a/video/pytorchjob-video-mae-pretrain.yaml"
    assert report(fleet, "gpu-hz-a", kubectl_list(pytorchjob_status(
        "video-mae-pretrain", "video", "Failed", DONE, "worker-0 OOMKilled"))).returncode == 0
    reconcile(fleet)  # at NEXT, 10:32:00
    item = placements(fleet)[MAE]
    assert item["phase"] == "Queued" and item["keptOn"] == ["gpu-hz-a"]
    assert item["keptSince"] == {"gpu-hz-a": NEXT}
    message = git(fleet, "log", "-1", "--format=%B", "fleetq/state")
    assert "\nFleet-Due: 2026-12-04T10:42:00Z\nFleet-State-Tree: " in message
    head = rev(fleet, "fleetq/state")
    assert "up to date" in reconcile(fleet, "2026-12-04T10:41:59Z").stdout
    assert rev(fleet, "fleetq/state") == head
    told = fleetq("plan", "--repo", str(fleet), "--now", "2026-12-04T10:42:00Z")
    assert f"- {old_copy}" in told.stdout, told.stdout
    proc = reconcile(fleet, "2026-12-04T10:42:00Z")
    assert "committed" in proc.stdout + proc.stderr
    item = placements(fleet)[MAE]
    assert "keptOn" not in item and "keptSince" not in item
    assert item["phase"] == "Queued" and item["failedOn"] == ["gpu-hz-a"]
    assert old_copy not in state_files(fleet)
    message = git(fleet, "log", "-1", "--format=%B", "fleetq/state")
    assert ("purge PyTorchJob video/video-mae-pretrain from gpu-hz-a: gracePeriodSeconds "
            "(600 s) passed since it failed over at 2026-12-04T10:32:00Z") in message
    assert "Fleet-Due" not in message
    head = rev(fleet, "fleetq/state")
    assert "up to date" in reconcile(fleet, "2026-12-04T11:00:00Z").stdout
    assert rev(fleet, "fleetq/state") == head


def test_a_report_of_part_of_a_clusters_jobs_keeps_what_the_last_one_said_of_the_others(
        fleet: Path) -> None:
    """``kubectl get pytorchjobs`` said llm-sft-hotfix succeeded; a report of
    the RayJobs alone, then of the nodes alone, used to write a status with no
    PyTorchJob in it: the job was Admitted again, holding its quota for good.
    What a partial report does not list keeps the last word on it, dated when
    it was said (a Pending one is not taken as pending at the later time); a
    complete report replaces every entry."""
    assert report(fleet, "gpu-bj-b", kubectl_list(pytorchjob_status(
        "llm-sft-hotfix", "text", "Succeeded", DONE, "completed"))).returncode == 0
    for now, only in (("2026-12-04T10:31:30Z", ""), (NEXT, NODE)):
        proc = report(fleet, "gpu-bj-b", kubectl_list(only) if only else
                      "apiVersion: v1\nkind: List\nitems: []\n", now=now)
        assert proc.returncode == 0, proc.stderr
        status = state_yaml(fleet, "status/gpu-bj-b.yaml")
        assert status["observedAt"] == now
        assert status["jobs"] == [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                                   "namespace": "text", "name": "llm-sft-hotfix",
                                   "phase": "Succeeded", "since": DONE, "message": "completed",
                                   "observedAt": REPORTED}]
    reconcile(fleet, "2026-12-04T10:33:00Z")
    items = placements(fleet)
    assert items[HOTFIX]["phase"] == "Finished" and items[WAITING]["phase"] == "Admitted"
    # a complete report lists every job: what it does not list is not there
    assert report(fleet, "gpu-bj-b", kubectl_list(NODE), "--complete",
                  now="2026-12-04T10:34:00Z").returncode == 0
    assert state_yaml(fleet, "status/gpu-bj-b.yaml")["jobs"] == []


def test_a_pending_job_a_partial_report_keeps_fails_over_by_when_it_was_seen(
        fleet: Path) -> None:
    """gang-failover tolerates 120 s: video-mae-pretrain seen Pending 60 s
    after its admission, then a report of the nodes alone 10 minutes later,
    is not failed over: it was last seen 60 s in."""
    admitted = placements(fleet)[MAE]["admittedAt"]
    seen = (dt.datetime.fromisoformat(admitted.replace("Z", "+00:00"))
            + dt.timedelta(seconds=60)).strftime("%Y-%m-%dT%H:%M:%SZ")
    later = (dt.datetime.fromisoformat(admitted.replace("Z", "+00:00"))
             + dt.timedelta(seconds=660)).strftime("%Y-%m-%dT%H:%M:%SZ")
    pending = pytorchjob_status("video-mae-pretrain", "video", "Created", admitted)
    assert report(fleet, "gpu-hz-a", kubectl_list(pending), now=seen).returncode == 0
    assert report(fleet, "gpu-hz-a", kubectl_list(NODE.replace("bj-b-1", "hz-a-1")),
                  now=later).returncode == 0
    reconcile(fleet, later)
    item = placements(fleet)[MAE]
    assert item["phase"] == "Admitted" and item["cluster"] == "gpu-hz-a", item
    assert "failedOn" not in item


def test_a_pending_job_a_report_dated_ahead_saw_past_its_toleration_fails_over_when_due(
        fleet: Path) -> None:
    """A report from a clock ahead of the reconcile's saw video-mae-pretrain
    pending 20 minutes after its admission; the reconcile, 60 s after it, does
    not fail it over yet (gang-failover tolerates 120 s). That state said no
    time it changes at: every later reconcile was "up to date", while plan
    said it fails over, and it never did until something else changed."""
    admitted = placements(fleet)[MAE]["admittedAt"]
    at = dt.datetime.fromisoformat(admitted.replace("Z", "+00:00"))

    def after(seconds: int) -> str:
        return (at + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")

    pending = pytorchjob_status("video-mae-pretrain", "video", "Created", admitted)
    assert report(fleet, "gpu-hz-a", kubectl_list(pending), now=after(1200)).returncode == 0
    reconcile(fleet, after(60))
    assert placements(fleet)[MAE]["phase"] == "Admitted"
    message = git(fleet, "log", "-1", "--format=%B", "fleetq/state")
    assert f"\nFleet-Due: {after(120)}\n" in message, message
    head = rev(fleet, "fleetq/state")
    assert "up to date" in reconcile(fleet, after(119)).stdout
    assert rev(fleet, "fleetq/state") == head
    reconcile(fleet, after(120))
    item = placements(fleet)[MAE]
    assert item["phase"] != "Admitted" and item["failedOn"] == ["gpu-hz-a"], item


def _rayjob(name: str, deletion: str) -> str:
    return (f"apiVersion: ray.io/v1\nkind: RayJob\nmetadata: {{name: {name}, namespace: default}}"
            f"\nspec:\n  entrypoint: python run.py\n  suspend: true\n  deletionStrategy: "
            f"{deletion}\n  rayClusterSpec:\n    headGroupSpec:\n      template:\n        spec:"
            f"\n          containers: [{{name: head, image: ray, resources: {{requests: "
            f"{{cpu: \"1\"}}}}}}]\n")


def _ray_ended(name: str, job_status: str) -> str:
    deployment = "Complete" if job_status == "SUCCEEDED" else "Failed"
    return (f"\n- apiVersion: ray.io/v1\n  kind: RayJob\n  metadata:\n    name: {name}\n"
            f"    namespace: default\n    labels: {{fleetq.io/managed-by: fleetq}}\n"
            f"  status:\n    jobDeploymentStatus: {deployment}\n    jobStatus: {job_status}\n"
            f"    endTime: \"{DONE}\"\n")


def test_a_rayjob_leaves_its_cluster_only_when_its_deletion_strategy_deletes_it(
        tmp_path: Path) -> None:
    """KubeRay deletes a RayJob by its outcome: ``keep-failed`` (DeleteSelf on
    success, DeleteNone on failure) failed and stays, for its logs (it was taken
    off its cluster, as if it had succeeded); ``drop-failed`` (DeleteSelf on
    failure) failed and leaves; ``keep-done`` succeeded with DeleteSelf on
    failure alone, and stays."""
    from .conftest import QUEUED_CLUSTER_POLICY, make_fleet_repo, member_cluster, one_leaf_tree
    on_success = "{onSuccess: {policy: DeleteSelf}, onFailure: {policy: DeleteNone}}"
    on_failure = "{onSuccess: {policy: DeleteCluster}, onFailure: {policy: DeleteSelf}}"
    fleet = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": one_leaf_tree("16", "64Gi"), "policy.yaml": QUEUED_CLUSTER_POLICY,
        "clusters/c1.yaml": member_cluster("c1", cpu="16", memory="64Gi"),
        "jobs/keep-failed.yaml": _rayjob("keep-failed", on_success),
        "jobs/drop-failed.yaml": _rayjob("drop-failed", on_failure),
        "jobs/keep-done.yaml": _rayjob("keep-done", on_failure)})
    reconcile(fleet, START)
    assert report(fleet, "c1", kubectl_list(
        _ray_ended("keep-failed", "FAILED"), _ray_ended("drop-failed", "FAILED"),
        _ray_ended("keep-done", "SUCCEEDED"))).returncode == 0
    reconcile(fleet)
    items = placements(fleet)
    assert [items[f"default/{n}"]["phase"] for n in ("keep-failed", "drop-failed", "keep-done")
            ] == ["Failed", "Failed", "Finished"]
    files = state_files(fleet)
    assert "clusters/c1/default/rayjob-keep-failed.yaml" in files
    assert "clusters/c1/default/rayjob-drop-failed.yaml" not in files
    assert "clusters/c1/default/rayjob-keep-done.yaml" in files
    message = git(fleet, "log", "-1", "--format=%B", "fleetq/state")
    assert "failed RayJob default/keep-failed on c1 (it stays there until its file is " \
           "deleted)" in message
    assert "failed RayJob default/drop-failed on c1 (its manifest leaves the cluster: its " \
           "operator deletes it once it ended)" in message
    told = fleetq("explain", "--repo", str(fleet), "keep-done", "--now", NEXT).stdout
    assert "it stays on its cluster (for its history) until its file is deleted" in told
    told = fleetq("explain", "--repo", str(fleet), "drop-failed", "--now", NEXT).stdout
    assert ("Its operator deletes it there once it ended (its manifest left the state branch: "
            "declared, it would run again).") in told, told
    assert "Deleting its file removes it" not in told


def test_a_job_its_operator_deletes_once_failed_keeps_no_old_copy_on_failover(
        fleet: Path) -> None:
    """video-mae-pretrain with ttlSecondsAfterFinished, not running 120 s after
    its admission (gang-failover, Graciously): its copy leaves gpu-hz-a at once
    (kept, then failed and deleted, it would be created and run again), and
    the item, the commit message and explain say so; they used to say it was
    kept (``keptOn``) while its manifest was gone."""
    path = fleet / "jobs/video/video-mae-pretrain.yaml"
    text = path.read_text()
    assert "\n  runPolicy:\n" in text and "ttlSecondsAfterFinished" not in text
    path.write_text(text.replace("\n  runPolicy:\n",
                                 "\n  runPolicy:\n    ttlSecondsAfterFinished: 60\n", 1))
    commit_all(fleet, "ttl")
    reconcile(fleet, START)
    admitted = placements(fleet)[MAE]["admittedAt"]
    later = (dt.datetime.fromisoformat(admitted.replace("Z", "+00:00"))
             + dt.timedelta(seconds=130)).strftime("%Y-%m-%dT%H:%M:%SZ")
    pending = pytorchjob_status("video-mae-pretrain", "video", "Created", admitted)
    assert report(fleet, "gpu-hz-a", kubectl_list(pending), now=later).returncode == 0
    reconcile(fleet, later)
    item = placements(fleet)[MAE]
    assert item["failedOn"] == ["gpu-hz-a"] and "keptOn" not in item, item
    assert "clusters/gpu-hz-a/video/pytorchjob-video-mae-pretrain.yaml" not in state_files(fleet)
    message = git(fleet, "log", "-1", "--format=%B", "fleetq/state")
    # (it did not fail: should it end there, kept, it would be deleted and run again)
    assert ("its copy there is removed at once, whatever purgeMode Graciously says: its "
            "operator deletes the job once it ended, and should the copy end there, a manifest "
            "kept there would run it again") in message
    told = fleetq("explain", "--repo", str(fleet), MAE, "--now", later).stdout
    assert "earlier copy stays" not in told, told


TWO_TEAMS = """\
apiVersion: scheduling.sigs.k8s.io/v1beta1
kind: ElasticQuotaTree
metadata: {name: elasticquotatree, namespace: kube-system}
spec:
  root:
    name: root
    min: {cpu: "288", memory: 2Ti}
    max: {cpu: "288", memory: 2Ti}
    children:
    - name: team
      min: {cpu: "100", memory: 1Ti}
      max: {cpu: "200", memory: 1Ti, kube-queue/max-jobs: "2"}
      namespaces: [default]
    - name: other
      min: {cpu: "188", memory: 1Ti}
      max: {cpu: "288", memory: 1Ti}
      namespaces: [other]
"""


def _waiting_for_a_slot(tmp_path: Path, tree: str) -> Path:
    """A fleet of ``tree`` (``TWO_TEAMS``): one cluster of three 96-cpu nodes,
    each with a 60-cpu job of quota other; x1 and x2 (a cpu each) hold both
    job slots of quota team, and t (two pods of 40 cpu) waits for one."""
    others = {f"jobs/other/f{i}.yaml": pytorchjob(f"f{i}", namespace="other", workers=0,
                                                   cpu="60") for i in (1, 2, 3)}
    path = make_fleet_repo(tmp_path / "fleet", {
        "quota.yaml": tree, "policy.yaml": QUEUED_CLUSTER_POLICY,
        "clusters/c1.yaml": member_cluster("c1", cpu="96", memory="512Gi", nodes=3),
        **others,
        "jobs/default/x1.yaml": pytorchjob("x1", workers=0), "jobs/default/x2.yaml":
            pytorchjob("x2", workers=0)})
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    write_files(path, {"jobs/default/t.yaml": pytorchjob("t", cpu="40")})
    commit_all(path, "a job of two 40-cpu pods")
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    return path


def test_explain_tells_the_room_of_each_node_and_a_priority_that_would_not_help(
        tmp_path: Path) -> None:
    """A job waiting for a job slot whose pods would not pack on any node once
    it had one (each node has 36 cpu free, 108 in all, for two pods of 40):
    explain told it only of the slot, and that a higher priority would let it
    preempt a job of its quota, whose leaving frees a cpu, and no node, so that
    it waited on. Said now: no cluster has room for it, a node at a time, and a
    higher priority would not let it in."""
    path = _waiting_for_a_slot(tmp_path, TWO_TEAMS)
    assert placements(path)["default/t"]["phase"] == "Queued"
    told = fleetq("explain", "--repo", str(path), "--now", NOW, "default/t")
    assert told.returncode == 0, told.stderr
    lines = told.stdout.splitlines()
    assert lines[3] == (
        "- jobs holding quota root/team: default/x1 (priority 0), default/x2 (priority 0); a "
        "higher priority would not let it in: with those it could preempt gone, no member "
        "cluster would have room for it (below)"), told.stdout
    assert lines[4:] == [
        "- and once the quota has room, no member cluster has room for the whole gang now:",
        "  - cluster c1: a master pod needs cpu 40 but no node has more than 36 free"], lines


def test_explain_tells_of_room_it_may_reclaim_and_its_advice_then_lets_it_in(
        tmp_path: Path) -> None:
    """The same, but the other quota's jobs borrow above its min (100): once
    the job has a slot it reclaims a node from one of them. It was told no
    cluster had room; told now that it may reclaim, and the advice it is
    given, a third slot, lets it in."""
    borrowing = TWO_TEAMS.replace('      min: {cpu: "188", memory: 1Ti}\n',
                                  '      min: {cpu: "100", memory: 1Ti}\n')
    path = _waiting_for_a_slot(tmp_path, borrowing)
    told = fleetq("explain", "--repo", str(path), "--now", NOW, "default/t")
    assert told.returncode == 0, told.stderr
    lines = told.stdout.splitlines()
    assert lines[2] == ("- quota root/team kube-queue/max-jobs: 2 used of max 2; 1 more must "
                        "be freed, or max raised to 3"), lines
    assert lines[-1] == (
        "- once the quota has room, no member cluster has room for the whole gang now, but "
        "within its quota's min it may reclaim room from jobs of quotas above their min: "
        "other/f1 (root/other), other/f2 (root/other), other/f3 (root/other)"), lines
    write_files(path, {"quota.yaml": borrowing.replace('kube-queue/max-jobs: "2"',
                                                       'kube-queue/max-jobs: "3"')})
    commit_all(path, "a third job slot, as explain says")
    assert fleetq("reconcile", "--repo", str(path), "--now", NOW).returncode == 0
    assert placements(path)["default/t"]["phase"] == "Admitted"
