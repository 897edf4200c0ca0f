"""The fleet's own templates: per-cluster overlays and the commit message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.builders import quota_tree_yaml

from .conftest import (
    NOW,
    STATE,
    fleetq,
    git,
    make_fleet_repo,
    member_cluster,
    no_state,
    placements,
    pytorchjob,
    state_show,
)

TREE = quota_tree_yaml("{cpu: 1000, memory: 4000Gi}", """\
    - name: team
      max: {cpu: 1000, memory: 4000Gi}
      namespaces: [team-bj, team-hz]
""")


def _pinned_policy(namespace: str, cluster: str) -> str:
    return f"""\
apiVersion: policy.one.alibabacloud.com/v1alpha1
kind: PropagationPolicy
metadata: {{name: pinned, namespace: {namespace}}}
spec:
  suspension: {{scheduling: true}}
  placement:
    clusterAffinity: {{clusterNames: [{cluster}]}}
    replicaScheduling: {{replicaSchedulingType: Divided, customSchedulingType: Gang}}
  resourceSelectors:
  - {{apiVersion: kubeflow.org/v1, kind: PyTorchJob}}
"""


REGISTRY_OVERLAY = """\
{#- Beijing clusters pull from the Beijing registry and run on Beijing nodes. -#}
{% if cluster.labels.get("region") == "cn-beijing" %}
imageRewrite:
- from: registry-cn-hangzhou.ack.aliyuncs.com/
  to: registry-cn-beijing.ack.aliyuncs.com/
podTemplatePatch:
  spec:
    nodeSelector:
      topology.kubernetes.io/region: {{ cluster.labels.region }}
{% endif %}
"""

COMMIT_TEMPLATE = """\
fleet state for {{ source.short }}: {{ counts.Admitted }} running, {{ counts.Queued }} waiting
{% for change in changes %}
* {{ change }}
{% endfor %}
"""

# Line 3 has the syntax error (a filter bar with no filter name).
BROKEN_OVERLAY = """\
{# a broken overlay #}
patch:
  metadata: {{ job.name | }}
"""
BROKEN_OVERLAY_LINE = 3

IMAGE = "registry-cn-hangzhou.ack.aliyuncs.com/acs/nginx"


def _files(*, broken: bool = False) -> dict[str, str]:
    files = {
        "quota.yaml": TREE,
        "clusters/bj.yaml": member_cluster("bj", labels={"region": "cn-beijing"}),
        "clusters/hz.yaml": member_cluster("hz", labels={"region": "cn-hangzhou"}),
        "policies/team-bj.yaml": _pinned_policy("team-bj", "bj"),
        "policies/team-hz.yaml": _pinned_policy("team-hz", "hz"),
        "jobs/team-bj/train.yaml": pytorchjob("train", namespace="team-bj", image=IMAGE),
        "jobs/team-hz/train.yaml": pytorchjob("train", namespace="team-hz", image=IMAGE),
        "templates/overlays/registry.yaml.j2": REGISTRY_OVERLAY,
        "templates/commit-message.j2": COMMIT_TEMPLATE,
    }
    if broken:
        files["templates/overlays/broken.yaml.j2"] = BROKEN_OVERLAY
    return files


def _pod_specs(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    return [s["template"]["spec"] for s in manifest["spec"]["pytorchReplicaSpecs"].values()]


def _check_overlay_applied(path: Path) -> None:
    items = placements(path)
    assert items["team-bj/train"]["cluster"] == "bj"
    assert items["team-hz/train"]["cluster"] == "hz"
    bj = yaml.safe_load(state_show(path, "clusters/bj/team-bj/pytorchjob-train.yaml") or "")
    hz = yaml.safe_load(state_show(path, "clusters/hz/team-hz/pytorchjob-train.yaml") or "")
    assert len(_pod_specs(bj)) == 2
    for pod in _pod_specs(bj):
        assert pod["containers"][0]["image"] == "registry-cn-beijing.ack.aliyuncs.com/acs/nginx"
        assert pod["nodeSelector"] == {"topology.kubernetes.io/region": "cn-beijing"}
        # The merge patch keeps everything else of the pod template.
        assert pod["containers"][0]["resources"]["requests"]["cpu"] == "1"
    for pod in _pod_specs(hz):
        assert pod["containers"][0]["image"] == IMAGE
        assert "nodeSelector" not in pod
    # fleetq's own labels survive the overlay.
    assert bj["metadata"]["labels"]["fleetq.io/managed-by"] == "fleetq"


def test_overlay_rewrites_registry_and_commit_template_keeps_trailer(tmp_path: Path) -> None:
    path = make_fleet_repo(tmp_path / "fleet", _files())
    source = git(path, "rev-parse", "HEAD").strip()
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert "templates/" not in proc.stderr  # no template problem
    _check_overlay_applied(path)

    message = git(path, "log", "-1", "--format=%B", STATE).rstrip("\n")
    lines = message.splitlines()
    assert lines[0] == f"fleet state for {source[:12]}: 2 running, 0 waiting"
    assert any(line.startswith("* admit PyTorchJob team-bj/train -> bj") for line in lines)
    assert lines[-1] == f"Fleet-Source-Commit: {source}"
    # templates/ is never read as fleet input.
    assert state_show(path, "clusters/bj/kustomization.yaml") is not None
    assert not any("templates" in p for p in
                   git(path, "ls-tree", "-r", "--name-only", STATE).splitlines())


def test_template_syntax_error_is_reported_and_reconcile_succeeds(tmp_path: Path) -> None:
    path = make_fleet_repo(tmp_path / "fleet", _files(broken=True))
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert f"templates/overlays/broken.yaml.j2:{BROKEN_OVERLAY_LINE}:" in proc.stderr
    assert proc.stderr.count("templates/overlays/broken.yaml.j2") == 1  # reported once
    # The good overlay still applies and both jobs are placed.
    _check_overlay_applied(path)

    proc = fleetq("validate", "--repo", str(path))
    assert f"templates/overlays/broken.yaml.j2:{BROKEN_OVERLAY_LINE}:" in proc.stdout, (
        proc.stdout)


@pytest.mark.parametrize(("overlay", "said"), [
    ('imageRewrite: {from: "registry-cn", to: "mirror"}',
     "imageRewrite must be a list of mappings {from: prefix, to: prefix} (two strings), not "),
    ("imageRewrite: [registry-cn]",
     "imageRewrite must be a list of mappings {from: prefix, to: prefix} (two strings), not "),
    ("podTemplatePatch: [1, 2]",
     "podTemplatePatch must be a mapping (a merge patch of the pod template), not list [1, 2]"),
    ("patch: just text",
     "patch must be a mapping (a merge patch of the job manifest), not str 'just text'"),
])
def test_an_overlay_of_the_wrong_shape_is_told_and_skipped(
        tmp_path: Path, overlay: str, said: str) -> None:
    """Told at its file (validate exits 1), skipped, the rest reconciled: it
    stopped every command with a Python error."""
    files = _files()
    files["templates/overlays/wrong.yaml.j2"] = overlay + "\n"
    path = make_fleet_repo(tmp_path / "fleet", files)
    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 1, proc.stdout
    assert f"templates/overlays/wrong.yaml.j2:1: error: {said}" in proc.stdout
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert "the overlay is skipped until it is fixed" in proc.stderr
    assert "Traceback" not in proc.stderr
    _check_overlay_applied(path)


def test_commit_template_syntax_error_falls_back_to_default_message(tmp_path: Path) -> None:
    files = _files()
    files["templates/commit-message.j2"] = "ok line\n{% for x in %}\n"
    path = make_fleet_repo(tmp_path / "fleet", files)
    source = git(path, "rev-parse", "HEAD").strip()
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert "templates/commit-message.j2:2:" in proc.stderr
    assert "fleetq's own commit message is used until it is fixed" in proc.stderr
    assert "overlay" not in proc.stderr  # (it is none)
    message = git(path, "log", "-1", "--format=%B", STATE).rstrip("\n")
    assert message.startswith("fleetq: reconcile")
    assert message.splitlines()[-1] == f"Fleet-Source-Commit: {source}"
    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 1 and "templates/commit-message.j2:2: error: template syntax" \
        in proc.stdout, proc.stdout


def test_a_template_that_fails_to_render_is_told_by_validate_at_its_line(
        tmp_path: Path) -> None:
    """A commit message template, told before a commit; an overlay; each at the
    line that failed (it was told with none)."""
    files = _files()
    files["templates/commit-message.j2"] = "fleet state\n\n{{ source.nope.deeper }}\n"
    files["templates/overlays/wrong.yaml.j2"] = ("patch:\n  metadata:\n    labels: "
                                                 "{x: \"{{ job.nosuch.deeper }}\"}\n")
    path = make_fleet_repo(tmp_path / "fleet", files)
    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 1, proc.stdout
    assert ("templates/commit-message.j2:3: error: template error: 'dict object' has no "
            "attribute 'nope'; fleetq's own commit message is used until it is fixed"
            ) in proc.stdout
    assert ("templates/overlays/wrong.yaml.j2:3: error: template error: 'dict object' has no "
            "attribute 'nosuch'; the overlay is skipped until it is fixed") in proc.stdout


# Line 2 loops 10,000,000,000 times.
ENDLESS = """\
{# loops for hours #}
{% for x in range(100000) %}{% for y in range(100000) %}{% endfor %}{% endfor %}hello
"""
OVERLAY_SKIPPED = "the overlay is skipped until it is fixed"
OWN_MESSAGE = "fleetq's own commit message is used until it is fixed"


@pytest.mark.parametrize(("template", "skipped"), [
    ("templates/overlays/endless.yaml.j2", OVERLAY_SKIPPED),
    ("templates/commit-message.j2", OWN_MESSAGE),
])
def test_a_template_that_loops_too_long_is_told_and_the_rest_reconciled(
        tmp_path: Path, template: str, skipped: str) -> None:
    """Its work is counted (loop iterations and calls): beyond its budget it is
    told at the line of its loop and skipped; validate and reconcile spun for
    hours."""
    files = _files()
    files[template] = ENDLESS
    path = make_fleet_repo(tmp_path / "fleet", files)
    proc = fleetq("validate", "--repo", str(path), timeout=30)
    assert proc.returncode == 1, proc.stdout
    said = f"{template}:2: error: template error: it takes more than "
    assert said in proc.stdout, proc.stdout
    assert f" steps to render (a loop iteration, a call, 1,000 characters or items of a value " \
        f"it makes: a loop that runs too long?); make it do less; {skipped}" in proc.stdout
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count(template) == 1, proc.stderr  # (told once, of every job)
    _check_overlay_applied(path)
    if skipped == OWN_MESSAGE:
        assert git(path, "log", "-1", "--format=%B", STATE).startswith("fleetq: reconcile")


@pytest.mark.parametrize(("template", "said"), [
    ('{{ "x" * 10**10 }}', "template error: it makes a value of 10,000,000,000 characters "
     "or items, more than 10,000,000; make it smaller"),
    ('{{ ["x"] * 10**10 }}', "it makes a value of 10,000,000,000 characters or items"),
    ('{{ "x"|center(10**10) }}', "it makes a value of 10,000,000,000 characters or items"),
    ('{{ "x".ljust(10**10) }}', "it makes a value of 10,000,000,000 characters or items"),
    ('{% set ns = namespace(s="x" * 6000000) %}{% for i in range(64) %}'
     '{% set ns.s = ns.s ~ ns.s %}{% endfor %}',
     "it makes a value of 12,000,000 characters or items"),
    ('{% set ns = namespace(s="x" * 6000000) %}{% for i in range(64) %}'
     '{% set ns.s = ns.s + ns.s %}{% endfor %}',
     "it makes a value of 12,000,000 characters or items"),
    ("{{ 7 ** (10**9) }}", "it makes a value of 3,000,000,000 characters or items"),
    # (a width of a format, a replace that multiplies: measured before they are made)
    ("{{ '%0999999999d' % 1 }}", "it makes a value of 1,000,000,035 characters or items"),
    ("{{ '%*d' % (999999999, 1) }}", "it makes a value of 1,000,000,050 characters or items"),
    ("{{ '{:>300000000}'.format(1) }}", "it makes a value of 300,000,037 characters or items"),
    ("{{ '%0300000000d'|format(1) }}", "it makes a value of 300,000,036 characters or items"),
    ("{{ ('a' * 3000)|replace('a', 'a' * 10000) }}",
     "it makes a value of 30,000,000 characters or items"),
    ("{{ ('a' * 3000).replace('a', 'a' * 10000) }}",
     "it makes a value of 30,000,000 characters or items"),
    ("{{ 1 // 0 }}", "template error: ZeroDivisionError: integer division or modulo by zero"),
    # (told by its name alone, it read as a path fleetq had a problem with)
    ('{% include "/etc/passwd" %}', "template error: no template '/etc/passwd' to include or "
     "import (a template names another by its path under templates/)"),
    ("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}",
     "template error: RecursionError: maximum recursion depth exceeded"),
    ("{{ range(10**6)|list }}", "template error: OverflowError: Range too big."),
    ('{% for i in range(100000) %}{% set s = "x" * 10**7 %}{% endfor %}',
     "steps to render (a loop iteration, a call, 1,000 characters or items of a value"),
])
def test_a_template_that_makes_too_much_or_fails_in_python_is_told(
        tmp_path: Path, template: str, said: str) -> None:
    """A value too large to hold is refused before it is made; an error of
    Python's is the template's: each is told at the template, the rest
    reconciled (they ran the machine out of memory, or stopped every command)."""
    files = _files()
    files["templates/commit-message.j2"] = "fleet state\n" + template + "\n"
    files["templates/overlays/costly.yaml.j2"] = template + "\n"
    path = make_fleet_repo(tmp_path / "fleet", files)
    proc = fleetq("validate", "--repo", str(path), timeout=30)
    assert proc.returncode == 1, proc.stdout
    for name, skipped in (("commit-message.j2", OWN_MESSAGE),
                          ("overlays/costly.yaml.j2", OVERLAY_SKIPPED)):
        told = [line for line in proc.stdout.splitlines()
                if line.startswith(f"templates/{name}:")]
        assert len(told) == 1 and said in told[0] and told[0].endswith(skipped), proc.stdout
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    _check_overlay_applied(path)


def test_an_overlay_beyond_its_budget_is_told_alike_by_two_processes(
        tmp_path: Path, monkeypatch, forks: list[int]) -> None:
    """The budget is counted, not timed: the same problems and tree whichever
    process renders a cluster."""
    files = _files()
    files["templates/overlays/endless.yaml.j2"] = ENDLESS
    path, two, one = _rendered_in_two_then_one(tmp_path, monkeypatch, forks, files)
    _check_overlay_applied(path)
    assert two.problems == one.problems
    assert [p.line for p in one.problems if p.path == "templates/overlays/endless.yaml.j2"
            ] == [2]


def test_clusters_rendered_by_two_processes_give_the_same_tree(
        tmp_path: Path, monkeypatch, forks: list[int]) -> None:
    """Past ``PARALLEL_MIN_JOBS`` jobs to render, half of the clusters are rendered
    by a forked process: the same state tree, overlays applied and their
    problems reported, as when one process renders them all."""
    path, two, one = _rendered_in_two_then_one(tmp_path, monkeypatch, forks,
                                               _files(broken=True))
    _check_overlay_applied(path)
    assert two.problems == one.problems
    assert any(p.path == "templates/overlays/broken.yaml.j2" for p in one.problems)
    assert two.rendered_from == one.rendered_from
    assert len(one.rendered_from) == 8  # each job file (PodGroups: none for ack)


def _rendered_in_two_then_one(tmp_path: Path, monkeypatch, forks: list[int],
                              files: dict[str, str]) -> tuple[Path, Any, Any]:
    """A fleet of ``files`` and three more jobs in each team, reconciled with
    its clusters rendered by two processes, then, from no state, by one: the
    same state tree. Its path and the two reconciles' ``Computed``."""
    from reconciler.render import manifests

    from .conftest import rev, run_reconcile

    for i in range(3):
        for team in ("bj", "hz"):
            files[f"jobs/team-{team}/more-{i}.yaml"] = pytorchjob(
                f"more-{i}", namespace=f"team-{team}", image=IMAGE)
    path = make_fleet_repo(tmp_path / "fleet", files)
    monkeypatch.setattr(manifests, "PARALLEL_MIN_JOBS", 1)
    two = run_reconcile(path, use_cache=False)
    assert len(forks) == 1
    tree = rev(path, f"{STATE}^{{tree}}")
    monkeypatch.setattr(manifests, "PARALLEL_MIN_JOBS", 10_000)
    no_state(path)
    one = run_reconcile(path, use_cache=False)
    assert len(forks) == 1
    assert rev(path, f"{STATE}^{{tree}}") == tree
    assert two.computed is not None and one.computed is not None
    return path, two.computed, one.computed


def test_default_message_lists_the_first_changes_and_counts_the_rest(
        tmp_path: Path, monkeypatch) -> None:
    """The default commit message lists ``CHANGE_LIMIT`` changes and counts the
    others; a template of the fleet's own gets them all. Either way the
    trailers end the message, and the next reconcile finds the state up to date."""
    from reconciler import pipeline

    from .conftest import run_reconcile

    files = _files()
    del files["templates/commit-message.j2"]
    files["jobs/team-hz/eval.yaml"] = pytorchjob("eval", namespace="team-hz", image=IMAGE)
    path = make_fleet_repo(tmp_path / "fleet", files)
    source = git(path, "rev-parse", "HEAD").strip()
    monkeypatch.setattr(pipeline, "CHANGE_LIMIT", 2)
    assert run_reconcile(path).commit is not None
    lines = git(path, "log", "-1", "--format=%B", STATE).rstrip("\n").splitlines()
    assert lines[0].startswith(f"fleetq: reconcile {source[:12]}: 3 admitted")
    assert lines[2:5] == [
        "admit PyTorchJob team-bj/train -> bj (master 1, worker 1)",
        "admit PyTorchJob team-hz/eval -> hz (master 1, worker 1)",
        "... and 1 more: placements.yaml has every decision (fleetq status lists them)"]
    assert lines[-1] == f"Fleet-Source-Commit: {source}"
    assert run_reconcile(path).commit is None  # (its trailers read back)

    monkeypatch.setattr(pipeline, "CHANGE_LIMIT", 3)  # all three listed, none counted
    no_state(path)
    assert run_reconcile(path, use_cache=False).commit is not None
    message = git(path, "log", "-1", "--format=%B", STATE)
    assert "admit PyTorchJob team-hz/train -> hz" in message
    assert "more:" not in message

    monkeypatch.setattr(pipeline, "CHANGE_LIMIT", 1)  # not the fleet's own template's
    (path / "templates/commit-message.j2").write_text(
        COMMIT_TEMPLATE + "limit {{ change_limit }}\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "our own message")
    no_state(path)
    assert run_reconcile(path, use_cache=False).commit is not None
    lines = git(path, "log", "-1", "--format=%B", STATE).splitlines()
    assert sum(line.startswith("* admit ") for line in lines) == 3
    assert "limit 1" in lines


def test_a_file_rendered_under_overlays_is_rendered_again_once_they_are_gone(
        tmp_path: Path) -> None:
    """The render cache takes a job file for the same only when it was made of
    the same decision under the same overlays: once the overlays are deleted,
    the files they rewrote are rendered without them, as with no cache."""
    from .conftest import commit_all, rev, run_reconcile

    path = make_fleet_repo(tmp_path / "fleet", _files())
    run_reconcile(path)
    _check_overlay_applied(path)
    (path / "templates/overlays/registry.yaml.j2").unlink()
    commit_all(path, "no overlays")
    run_reconcile(path)
    bj = yaml.safe_load(state_show(path, "clusters/bj/team-bj/pytorchjob-train.yaml") or "")
    for pod in _pod_specs(bj):
        assert pod["containers"][0]["image"] == IMAGE
        assert "nodeSelector" not in pod
    tree = rev(path, f"{STATE}^{{tree}}")
    no_state(path)
    run_reconcile(path, use_cache=False)
    assert rev(path, f"{STATE}^{{tree}}") == tree


SCALING_OVERLAY = """\
{% if job.namespace == "team-bj" %}
patch:
  spec: {pytorchReplicaSpecs: {Worker: {replicas: 8}}}
{% else %}
podTemplatePatch:
  spec:
    containers: [{name: pytorch, image: other, resources: {requests: {cpu: "64"}}}]
{% endif %}
"""


def _reconciled_with(name: str, overlay: str, tmp_path: Path) -> tuple[Path, list[str]]:
    """The fleet of ``_files`` with overlay ``name`` too, reconciled: its path
    and the lines the command told of its templates."""
    files = _files()
    files[f"templates/overlays/{name}"] = overlay
    path = make_fleet_repo(tmp_path / "fleet", files)
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    return path, [line for line in proc.stderr.splitlines() if "templates/" in line]


def test_an_overlay_that_changes_what_a_job_was_admitted_with_is_not_applied(
        tmp_path: Path) -> None:
    """Replicas and requests decide a job's quota and its fit: an overlay that
    changes them after the decision would send a job that neither quota nor
    cluster admitted. It is told and left out for such a job; the other
    overlays apply."""
    path, told = _reconciled_with("scale.yaml.j2", SCALING_OVERLAY, tmp_path)
    assert told == [
        "templates/overlays/scale.yaml.j2: error: it changes the replicas or resource requests "
        "of PyTorchJob team-bj/train on bj and PyTorchJob team-hz/train on hz, which their quota "
        "and placement were decided on; set them in the jobs' manifests; it is not applied to "
        "such a job"], told
    _check_overlay_applied(path)  # (registry.yaml.j2; each pod set as it was admitted)
    hz = yaml.safe_load(state_show(path, "clusters/hz/team-hz/pytorchjob-train.yaml") or "")
    assert [pod["containers"][0]["image"] for pod in _pod_specs(hz)] == [IMAGE, IMAGE]
    for manifest in (hz, yaml.safe_load(
            state_show(path, "clusters/bj/team-bj/pytorchjob-train.yaml") or "")):
        assert manifest["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 1  # (its own)
        for pod in _pod_specs(manifest):
            assert pod["containers"][0]["resources"]["requests"]["cpu"] == "1"


def test_an_overlay_that_makes_a_job_its_cluster_would_refuse_is_not_applied(
        tmp_path: Path) -> None:
    """A merge patch replaces a list whole: this one leaves each pod a container
    with no image, which the API server refuses. It was applied (or told as a
    change of the job's requests): the job was sent as its cluster refuses
    it. It is told with what the cluster would refuse, and left out for such
    a job; the other overlays apply."""
    path, told = _reconciled_with("env.yaml.j2", (
        "podTemplatePatch:\n  spec:\n    containers: [{name: pytorch, env: [{name: A, "
        "value: b}]}]\n"), tmp_path)
    assert told == [
        "templates/overlays/env.yaml.j2: error: it makes PyTorchJob team-bj/train on bj and "
        "PyTorchJob team-hz/train on hz a job their cluster would refuse (spec."
        "pytorchReplicaSpecs.Master.template.spec.containers[0].image is missing: the API "
        "server refuses a container with no image); fix the overlay; it is not applied to such "
        "a job"], told
    _check_overlay_applied(path)  # (registry.yaml.j2)
    hz = yaml.safe_load(state_show(path, "clusters/hz/team-hz/pytorchjob-train.yaml") or "")
    assert [pod["containers"][0]["image"] for pod in _pod_specs(hz)] == [IMAGE, IMAGE]

def test_an_overlay_not_applied_to_many_jobs_names_the_first_and_counts_the_rest(
        tmp_path: Path, monkeypatch, forks: list[int]) -> None:
    """One message per overlay, the same whichever process rendered which
    cluster: its first three jobs by name, and how many more."""
    files = _files()
    files["templates/overlays/scale.yaml.j2"] = SCALING_OVERLAY
    _, two, one = _rendered_in_two_then_one(tmp_path, monkeypatch, forks, files)
    told = [p.message for p in one.problems if p.path.startswith("templates/")]
    assert told == [
        "it changes the replicas or resource requests of PyTorchJob team-bj/more-0 on bj, "
        "PyTorchJob team-bj/more-1 on bj, PyTorchJob team-bj/more-2 on bj and 5 more, which "
        "their quota and placement were decided on; set them in the jobs' manifests; it is not "
        "applied to such a job"]
    assert two.problems == one.problems


TIMES_OVERLAY = """\
patch:
  metadata:
    annotations: {start: 10:30, until: 2024-06-01}
"""


def test_times_and_numbers_in_base_60_written_plain_go_out_as_the_strings_they_are(
        tmp_path: Path) -> None:
    """kubectl, Argo CD and Flux read ``12:30`` and ``2024-06-01T08:00:00Z`` as
    strings; read as YAML 1.1 numbers and times, they went out as ``750`` (an
    env value the API server refuses) and ``2024-06-01T08:00:00+00:00``, and an
    annotation ``12:30`` made the job invalid. The same in an overlay."""
    job = pytorchjob("train", namespace="team-bj", image=IMAGE).replace(
        "  namespace: team-bj\n",
        "  namespace: team-bj\n  creationTimestamp: 2026-01-01T00:00:00Z\n"
        "  annotations: {window: 12:30}\n").replace(
        f"            image: {IMAGE}\n",
        f"            image: {IMAGE}\n            env:\n"
        f"            - {{name: WINDOW, value: 12:30}}\n"
        f"            - {{name: NOT_BEFORE, value: 2024-06-01T08:00:00Z}}\n"
        f"            envFrom: [{{configMapRef: {{name: sched}}}}]\n")
    files = _files()
    files["jobs/team-bj/train.yaml"] = job
    files["jobs/team-bj/sched.yaml"] = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sched, namespace: team-bj}\n"
        "data: {window: 12:30, ratio: 1:05, day: 2024-06-01}\n")
    files["templates/overlays/times.yaml.j2"] = TIMES_OVERLAY
    files["policies/team-bj.yaml"] = _pinned_policy("team-bj", "bj").replace(
        "spec:\n", "spec:\n  propagateDeps: true\n")
    path = make_fleet_repo(tmp_path / "fleet", files)
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert "error" not in proc.stderr, proc.stderr
    assert placements(path)["team-bj/train"]["phase"] == "Admitted"
    sent = yaml.safe_load(state_show(path, "clusters/bj/team-bj/pytorchjob-train.yaml") or "")
    assert sent["metadata"]["annotations"] == {
        "window": "12:30", "start": "10:30", "until": "2024-06-01",
        "fleetq.io/source": "jobs/team-bj/train.yaml"}
    assert sent["metadata"]["creationTimestamp"] == "2026-01-01T00:00:00Z"
    env = _pod_specs(sent)[0]["containers"][0]["env"]
    assert env == [{"name": "WINDOW", "value": "12:30"},
                   {"name": "NOT_BEFORE", "value": "2024-06-01T08:00:00Z"}]
    config = yaml.safe_load(state_show(path, "clusters/bj/team-bj/configmap-sched.yaml") or "")
    assert config["data"] == {"window": "12:30", "ratio": "1:05", "day": "2024-06-01"}


RAYJOB = f"""\
apiVersion: ray.io/v1
kind: RayJob
metadata: {{name: ray, namespace: team-bj}}
spec:
  entrypoint: python /code/run.py
  rayClusterSpec:
    headGroupSpec:
      template:
        spec:
          containers: [{{name: head, image: {IMAGE}, resources: {{requests: {{cpu: "1"}}}}}}]
  submitterPodTemplate:
    spec:
      restartPolicy: Never
      containers:
      - name: submit
        image: {IMAGE}
        envFrom: [{{configMapRef: {{name: submit-env}}}}]
"""
CONFIG_MAP = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: submit-env, namespace: team-bj}
data: {RAY_ADDRESS: "http://ray-head-svc:8265"}
"""


def test_a_rayjob_submitter_is_sent_what_it_uses_and_reached_by_overlays(
        tmp_path: Path) -> None:
    """The submitter pod is no part of the gang, but it runs on the cluster
    all the same: the ConfigMap it reads goes with the job, and the registry
    overlay rewrites its image as the others'."""
    files = _files()
    files["policies/team-bj.yaml"] = _pinned_policy("team-bj", "bj").replace(
        "  resourceSelectors:\n", "  propagateDeps: true\n  resourceSelectors:\n").replace(
        "  - {apiVersion: kubeflow.org/v1, kind: PyTorchJob}\n",
        "  - {apiVersion: kubeflow.org/v1, kind: PyTorchJob}\n"
        "  - {apiVersion: ray.io/v1, kind: RayJob}\n")
    files["jobs/team-bj/ray.yaml"] = RAYJOB
    files["jobs/team-bj/submit-env.yaml"] = CONFIG_MAP
    path = make_fleet_repo(tmp_path / "fleet", files)
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert placements(path)["team-bj/ray"]["cluster"] == "bj"
    ray = yaml.safe_load(state_show(path, "clusters/bj/team-bj/rayjob-ray.yaml") or "")
    beijing = "registry-cn-beijing.ack.aliyuncs.com/acs/nginx"
    assert ray["spec"]["submitterPodTemplate"]["spec"]["containers"][0]["image"] == beijing
    assert ray["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"][
        "containers"][0]["image"] == beijing
    sent = yaml.safe_load(state_show(path, "clusters/bj/team-bj/configmap-submit-env.yaml")
                          or "")
    assert sent["data"] == {"RAY_ADDRESS": "http://ray-head-svc:8265"}


# Line 3 gives a field no PyTorchJob has; line 6 one no pod has.
UNKNOWN_FIELDS_OVERLAY = """\
{# fields their APIs have not #}
patch:
  spec: {tolerationz: 1}
podTemplatePatch:
  spec:
    nodeSelectr: {disk: ssd}
"""


def test_an_overlay_that_gives_jobs_fields_their_api_has_not_is_warned_once_per_field(
        tmp_path: Path) -> None:
    """As a job file is checked: a warning at the overlay's line naming the
    field, once however many jobs it is applied to, and the overlay applied
    (the API server drops such a field); it was applied without a word."""
    files = _files()
    files["templates/overlays/typo.yaml.j2"] = UNKNOWN_FIELDS_OVERLAY
    files["jobs/team-bj/train.yaml"] += "  cleanPodPolicyy: All\n"  # (told at its file alone)
    path = make_fleet_repo(tmp_path / "fleet", files)
    both = "PyTorchJob team-bj/train on bj and PyTorchJob team-hz/train on hz"
    told = [
        f"templates/overlays/typo.yaml.j2:3: warning: it gives {both} a field their API has "
        f"not: spec.tolerationz: PyTorchJobSpec has no field 'tolerationz': the API server "
        f"drops it (or refuses the job, under strict field validation); remove it, or check "
        f"its place",
        f"templates/overlays/typo.yaml.j2:6: warning: it gives {both} a field their API has "
        f"not: spec.pytorchReplicaSpecs.Master.template.spec.nodeSelectr: PodSpec has no "
        f"field 'nodeSelectr': the API server drops it (or refuses the job, under strict "
        f"field validation); nodeSelector was meant, perhaps"]
    proc = fleetq("validate", "--repo", str(path))
    assert proc.returncode == 0, proc.stdout
    assert [line for line in proc.stdout.splitlines() if "typo.yaml.j2" in line] == told
    assert "jobs/team-bj/train.yaml:28: warning: spec.cleanPodPolicyy: " in proc.stdout
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert [line for line in proc.stderr.splitlines() if "typo.yaml.j2" in line] == told
    _check_overlay_applied(path)
    bj = yaml.safe_load(state_show(path, "clusters/bj/team-bj/pytorchjob-train.yaml") or "")
    assert bj["spec"]["tolerationz"] == 1


def test_an_overlay_that_gives_a_field_a_value_its_api_refuses_is_not_applied(
        tmp_path: Path) -> None:
    """As a field of the wrong type in a job file makes it invalid: told, and
    the overlay not applied (the cluster would refuse the job)."""
    files = _files()
    files["templates/overlays/wrong.yaml.j2"] = \
        'patch:\n  spec: {runPolicy: {backoffLimit: "three"}}\n'
    path = make_fleet_repo(tmp_path / "fleet", files)
    proc = fleetq("reconcile", "--repo", str(path), "--now", NOW)
    assert proc.returncode == 0, proc.stderr
    assert ("templates/overlays/wrong.yaml.j2: error: it makes PyTorchJob team-bj/train on bj "
            "and PyTorchJob team-hz/train on hz a job their cluster would refuse "
            "(spec.runPolicy.backoffLimit must be an integer, not a string 'three': the API "
            "server refuses it); fix the overlay; it is not applied to such a job"
            ) in proc.stderr
    _check_overlay_applied(path)
    bj = yaml.safe_load(state_show(path, "clusters/bj/team-bj/pytorchjob-train.yaml") or "")
    assert "runPolicy" not in bj["spec"]


def test_fields_an_overlay_gives_are_told_alike_by_two_processes(
        tmp_path: Path, monkeypatch, forks: list[int]) -> None:
    files = _files()
    files["templates/overlays/typo.yaml.j2"] = UNKNOWN_FIELDS_OVERLAY
    _, two, one = _rendered_in_two_then_one(tmp_path, monkeypatch, forks, files)
    assert two.problems == one.problems
    assert [(p.line, p.severity) for p in one.problems
            if p.path == "templates/overlays/typo.yaml.j2"] == [(3, "warning"), (6, "warning")]
