"""The ElasticQuotaTree: validation, quota binding and the admission test (``core.quota``)."""

from __future__ import annotations

import pytest

from reconciler.core.quota import QuotaSpec, QuotaTree, QuotaUsage, build_tree, max_jobs_hint
from tests.builders import GPU, quota, res, tree

PATH = "quota/tree.yaml"


def problems_of(spec: QuotaSpec) -> list[tuple[int, str]]:
    built, problems = build_tree(spec, path=PATH)
    assert built is not None
    assert all(p.path == PATH for p in problems)
    return [(p.line, p.message) for p in problems]


def two_teams(**root_overrides: dict[str, str]) -> QuotaSpec:
    """A valid tree: root (16 GPUs) > algo (12) > {video, text}; infra (4)."""
    root_res = root_overrides.get("root", {"gpu": "16", "cpu": "160"})
    return quota(
        "root",
        quota("algo",
              quota("video", ns=["video"], min={"gpu": "8"}, max={"gpu": "12"}, line=4),
              quota("text", ns=["text", "nlp"], min={"gpu": "4"}, max={"gpu": "12"}, line=6),
              min={"gpu": "12"}, max={"gpu": "16"}, line=2),
        quota("infra", ns=["infra"], min={"gpu": "4"}, max={"gpu": "4"}, line=8),
        min=root_res, max=root_res, line=1)


# -- validation --------------------------------------------------------------------------


def test_a_valid_tree_has_no_problems_and_indexes_every_path() -> None:
    built, problems = build_tree(two_teams(), path=PATH)
    assert problems == []
    assert built is not None
    assert sorted(built.nodes) == ["root", "root/algo", "root/algo/text", "root/algo/video",
                                   "root/infra"]
    assert sorted(n.path for n in built.leaves()) == ["root/algo/text", "root/algo/video",
                                                      "root/infra"]
    assert [n.path for n in built.ancestry("root/algo/video")] == [
        "root/algo/video", "root/algo", "root"]
    assert built.nodes["root/algo/video"].queue_name == "root-algo-video"


def test_duplicate_names_are_reported_on_the_second_node() -> None:
    spec = quota("root",
                 quota("a", quota("x", ns=["n1"], line=3), line=2),
                 quota("b", quota("x", ns=["n2"], line=5), line=4),
                 min={"cpu": "1"}, max={"cpu": "1"}, line=1)
    found = problems_of(spec)
    assert len(found) == 1
    line, message = found[0]
    assert line == 5
    assert "'x'" in message and "line 3" in message and "unique" in message


def test_namespaces_on_a_non_leaf_are_reported_on_that_node() -> None:
    spec = quota("root",
                 quota("a", quota("x", ns=["n1"], line=3), ns=["n0"], line=2),
                 min={"cpu": "1"}, max={"cpu": "1"}, line=1)
    found = problems_of(spec)
    assert len(found) == 1
    assert found[0][0] == 2
    assert "root/a" in found[0][1] and "leaf" in found[0][1]


def test_a_namespace_listed_twice_is_reported_on_the_second_leaf() -> None:
    spec = quota("root",
                 quota("a", ns=["team"], line=2),
                 quota("b", ns=["other", "team"], line=3),
                 min={"cpu": "1"}, max={"cpu": "1"}, line=1)
    found = problems_of(spec)
    assert len(found) == 1
    line, message = found[0]
    assert line == 3
    assert "'team'" in message and "root/a" in message and "root/b" in message


def test_min_above_max_is_reported_per_resource_with_both_values() -> None:
    spec = quota("root",
                 quota("a", ns=["a"], min={"cpu": "4", "memory": "8Gi"},
                       max={"cpu": "2", "memory": "16Gi"}, line=7),
                 min={"cpu": "10", "memory": "32Gi"}, max={"cpu": "10", "memory": "32Gi"},
                 line=1)
    found = problems_of(spec)
    assert len(found) == 1
    line, message = found[0]
    assert line == 7
    assert "root/a" in message and "cpu" in message and "4" in message and "2" in message
    assert "memory" not in message


def test_a_resource_only_in_min_is_not_limited_by_max() -> None:
    spec = quota("root", quota("a", ns=["a"], min={"cpu": "4"}, max={"memory": "1Gi"}),
                 min={"cpu": "4"}, max={"cpu": "4"})
    assert problems_of(spec) == []


@pytest.mark.parametrize(("root_min", "root_max"), [
    ({"gpu": "16"}, {"gpu": "32"}),
    ({"gpu": "16"}, {"gpu": "16", "cpu": "10"}),
])
def test_root_min_must_equal_root_max(root_min: dict[str, str],
                                      root_max: dict[str, str]) -> None:
    spec = quota("root", quota("a", ns=["a"]), min=root_min, max=root_max, line=3)
    found = problems_of(spec)
    assert len(found) == 1
    assert found[0][0] == 3
    assert "root" in found[0][1] and "min must equal max" in found[0][1]


def test_children_min_above_parent_min_is_reported_on_the_parent() -> None:
    spec = quota("root",
                 quota("algo",
                       quota("video", ns=["video"], min={"gpu": "8"}, line=3),
                       quota("text", ns=["text"], min={"gpu": "8"}, line=4),
                       min={"gpu": "12"}, max={"gpu": "16"}, line=2),
                 min={"gpu": "16"}, max={"gpu": "16"}, line=1)
    found = problems_of(spec)
    assert len(found) == 1
    line, message = found[0]
    assert line == 2
    assert "root/algo" in message and "16" in message and "12" in message


def test_children_min_of_a_resource_the_parent_does_not_name_counts_as_zero() -> None:
    spec = quota("root", quota("a", ns=["a"], min={"cpu": "1"}, line=2),
                 min={"gpu": "1"}, max={"gpu": "1"}, line=1)
    found = problems_of(spec)
    assert [line for line, _ in found] == [1]
    assert "cpu" in found[0][1]


def test_every_problem_is_reported_not_just_the_first() -> None:
    spec = quota("root",
                 quota("a", quota("x", ns=["n"], line=3), ns=["m"], line=2),
                 quota("b", ns=["n"], min={"cpu": "5"}, max={"cpu": "1"}, line=4),
                 min={"cpu": "1"}, max={"cpu": "2"}, line=1)
    lines = sorted(line for line, _ in problems_of(spec))
    # a: namespaces on non-leaf; b: namespace twice, min > max; root: children min, min != max
    assert lines == [1, 1, 2, 4, 4]


# -- binding -----------------------------------------------------------------------------


@pytest.fixture
def teams() -> QuotaTree:
    return tree(two_teams())


@pytest.mark.parametrize(("namespace", "label", "expected"), [
    ("video", None, "root/algo/video"),
    ("nlp", None, "root/algo/text"),
    ("infra", None, "root/infra"),
    ("elsewhere", "video", "root/algo/video"),  # the node's own name
    ("elsewhere", "root-algo-video", "root/algo/video"),  # dashed path with root
    ("elsewhere", "algo-video", "root/algo/video"),  # dashed path without root
    ("video", "infra", "root/infra"),  # the label wins over the namespace
    ("text", "root-infra", "root/infra"),
])
def test_binding(teams: QuotaTree, namespace: str, label: str | None, expected: str) -> None:
    assert teams.bind(namespace, label) == (expected, "")


@pytest.mark.parametrize(("namespace", "label", "words"), [
    ("elsewhere", None, ["'elsewhere'", "no leaf"]),
    ("video", "nope", ["'nope'", "names no quota"]),
    ("video", "algo", ["root/algo", "not a leaf", "root/algo/video", "root/algo/text"]),
    ("video", "root-algo", ["root/algo", "not a leaf"]),
    ("video", "root", ["root", "not a leaf"]),
])
def test_binding_errors_say_why(teams: QuotaTree, namespace: str, label: str | None,
                                words: list[str]) -> None:
    path, why = teams.bind(namespace, label)
    assert path is None
    for word in words:
        assert word in why


def test_a_job_that_names_no_namespace_is_told_so(teams: QuotaTree) -> None:
    """It was told "namespace 'default' is listed on no leaf quota", as if it
    had named that one."""
    path, why = teams.bind("default", None, namespace_written=False)
    assert path is None
    assert why.startswith("the job names no namespace, so it is in 'default', which is listed "
                          "on no leaf quota; set its metadata.namespace to one a leaf lists "
                          "(e.g. "), why
    # a namespace it names is told as before, and a leaf of 'default' binds it
    assert teams.bind("default", None)[1].startswith("namespace 'default' is listed on no")
    t = tree(quota("root", quota("d", ns=["default"]), min={"cpu": "1"}, max={"cpu": "1"}))
    assert t.bind("default", None, namespace_written=False) == ("root/d", "")


def test_a_binding_mistake_names_what_was_meant(teams: QuotaTree) -> None:
    """A misspelt quota label was told "(e.g. <the first leaf>)"; a job that
    names no namespace, in jobs/<namespace>/, was offered the first namespace
    a leaf lists, not its folder's."""
    assert teams.bind("video", "vidoe")[1] == (
        "label quota.scheduling.alibabacloud.com/name='vidoe' names no quota of the "
        "ElasticQuotaTree (did you mean video?); use a quota name or its path joined with '-' "
        "(e.g. text)")
    assert "(e.g. nlp)" in teams.bind("default", None, False, "jobs/nlp/a.yaml")[1]
    first = teams.bind("default", None, False, "jobs/elsewhere/a.yaml")[1]
    assert f"(e.g. {sorted(teams.by_namespace)[0]})" in first


def test_a_nodes_own_name_wins_over_a_dashed_path() -> None:
    t = tree(quota("root",
                   quota("algo", quota("video", ns=["v"])),
                   quota("algo-video", ns=["av"]),
                   min={"cpu": "1"}, max={"cpu": "1"}))
    assert t.bind("x", "algo-video") == ("root/algo-video", "")
    assert t.bind("x", "root-algo-video") == ("root/algo/video", "")


def test_a_namespace_on_a_non_leaf_binds_to_nothing_usable() -> None:
    built, _ = build_tree(quota("root", quota("a", quota("x"), ns=["team"]),
                                min={"cpu": "1"}, max={"cpu": "1"}), path=PATH)
    assert built is not None
    path, why = built.bind("team", None)
    assert path is None
    assert "not a leaf" in why


# -- admission ---------------------------------------------------------------------------


def admission_tree() -> QuotaTree:
    """root 16 GPU / 100 cpu > algo (min 8, max 12 GPU) > {video (min 4, max 10 GPU),
    text (min 4, max 12 GPU)}; infra (min 8, max 16 GPU, at most 2 jobs)."""
    return tree(quota(
        "root",
        quota("algo",
              quota("video", ns=["video"], min={"gpu": "4", "cpu": "20"},
                    max={"gpu": "10", "cpu": "100"}),
              quota("text", ns=["text"], min={"gpu": "4"}, max={"gpu": "12"}),
              min={"gpu": "8", "cpu": "20"}, max={"gpu": "12"}),
        quota("infra", ns=["infra"], min={"gpu": "8", "cpu": "20"},
              max={"gpu": "16", "kube-queue/max-jobs": "2"}),
        min={"gpu": "16", "cpu": "100"}, max={"gpu": "16", "cpu": "100"}))


def request(gpus: str, cpu: str = "1") -> dict[str, int]:
    return res(gpu=gpus, cpu=cpu, pods="1", max_jobs="1")


@pytest.mark.parametrize(("used_gpus", "ask", "blocked"), [
    ("0", "4", None),  # within min
    ("4", "6", None),  # borrowing above min, up to the leaf max 10
    ("4", "7", ("root/algo/video", "max")),  # leaf max
    ("0", "10", None),
    ("0", "11", ("root/algo/video", "max")),
])
def test_preemptible_admission_checks_the_leaf_max(used_gpus: str, ask: str,
                                                   blocked: tuple[str, str] | None) -> None:
    usage = QuotaUsage(admission_tree())
    usage.charge("root/algo/video", request(used_gpus), preemptible=True)
    short = usage.shortfall("root/algo/video", request(ask), preemptible=True)
    if blocked is None:
        assert short is None
    else:
        assert short is not None
        assert (short.quota, short.bound, short.resource) == (*blocked, GPU)


def test_preemptible_admission_checks_every_quota_on_the_path() -> None:
    usage = QuotaUsage(admission_tree())
    usage.charge("root/algo/text", request("8"), preemptible=True)
    # video allows 10 GPUs, but algo (max 12) already holds text's 8
    assert usage.shortfall("root/algo/video", request("4"), preemptible=True) is None
    short = usage.shortfall("root/algo/video", request("5"), preemptible=True)
    assert short is not None
    assert (short.quota, short.resource, short.bound, short.limit) == (
        "root/algo", GPU, "max", 12000)
    assert short.used == 8000


def test_a_resource_missing_from_max_is_not_limited_there() -> None:
    usage = QuotaUsage(admission_tree())
    # algo's max names only GPUs: 90 cpu pass algo (video's max is 100, root's is 100)
    assert usage.shortfall("root/algo/video", request("1", cpu="90"), preemptible=True) is None
    short = usage.shortfall("root/algo/video", request("1", cpu="101"), preemptible=True)
    assert short is not None
    assert (short.quota, short.resource) == ("root/algo/video", "cpu")


def test_the_root_min_bounds_every_job() -> None:
    # A root whose min is below its max (reported invalid, but usable) bounds by the min.
    built, problems = build_tree(quota("root", quota("a", ns=["a"]),
                                       min={"gpu": "8"}, max={"gpu": "16"}), path=PATH)
    assert built is not None and problems
    usage = QuotaUsage(built)
    usage.charge("root/a", request("6"), preemptible=True)
    short = usage.shortfall("root/a", request("4"), preemptible=True)
    assert short is not None
    assert (short.quota, short.bound, short.limit) == ("root", "root min", 8000)
    assert usage.shortfall("root/a", request("2"), preemptible=True) is None


@pytest.mark.parametrize(("np_used", "ask", "blocked"), [
    ("0", "4", None),  # exactly video's min
    ("0", "5", ("root/algo/video", "min (non-preemptible)")),
    ("2", "2", None),
    ("2", "3", ("root/algo/video", "min (non-preemptible)")),
])
def test_non_preemptible_jobs_are_limited_to_min(np_used: str, ask: str,
                                                 blocked: tuple[str, str] | None) -> None:
    usage = QuotaUsage(admission_tree())
    usage.charge("root/algo/video", request(np_used), preemptible=False)
    short = usage.shortfall("root/algo/video", request(ask), preemptible=False)
    if blocked is None:
        assert short is None
    else:
        assert short is not None
        assert (short.quota, short.bound, short.resource) == (*blocked, GPU)


def test_preemptible_usage_does_not_count_against_a_non_preemptible_min() -> None:
    usage = QuotaUsage(admission_tree())
    usage.charge("root/algo/video", request("4"), preemptible=True)
    # 4 preemptible GPUs in use (reclaimable): 4 non-preemptible still fit min and max.
    assert usage.shortfall("root/algo/video", request("4"), preemptible=False) is None
    # ... but the same 4 preemptible make a preemptible ask of 7 break the max of 10.
    assert usage.shortfall("root/algo/video", request("7"), preemptible=True) is not None


def test_non_preemptible_min_is_checked_on_every_quota_of_the_path() -> None:
    # In a valid tree the children's min add up to at most the parent's, so only a tree
    # reported invalid (algo's min 6 < 4 + 4) shows the parent's own min check.
    built, problems = build_tree(quota(
        "root",
        quota("algo", quota("video", ns=["video"], min={"gpu": "4"}),
              quota("text", ns=["text"], min={"gpu": "4"}), min={"gpu": "6"}),
        min={"gpu": "16"}, max={"gpu": "16"}), path=PATH)
    assert built is not None and problems
    usage = QuotaUsage(built)
    usage.charge("root/algo/text", request("4"), preemptible=False)
    assert usage.shortfall("root/algo/video", request("2"), preemptible=False) is None
    short = usage.shortfall("root/algo/video", request("3"), preemptible=False)
    assert short is not None
    assert (short.quota, short.limit, short.bound) == ("root/algo", 6000,
                                                       "min (non-preemptible)")


def test_max_jobs_is_a_resource_of_one_per_job() -> None:
    usage = QuotaUsage(admission_tree())
    assert usage.shortfall("root/infra", request("1"), preemptible=True) is None
    usage.charge("root/infra", request("1"), preemptible=True)
    usage.charge("root/infra", request("1"), preemptible=True)
    short = usage.shortfall("root/infra", request("1"), preemptible=True)
    assert short is not None
    assert short.resource == "kube-queue/max-jobs"
    assert "at most 2 job(s)" in max_jobs_hint(short)
    # a non-preemptible job is not held to a min of 0 jobs when min does not name max-jobs
    usage.release("root/infra", request("1"), preemptible=True)
    assert usage.shortfall("root/infra", request("1"), preemptible=False) is None


def test_release_undoes_charge() -> None:
    usage = QuotaUsage(admission_tree())
    usage.charge("root/algo/video", request("3"), preemptible=False)
    usage.release("root/algo/video", request("3"), preemptible=False)
    for path in usage.used:
        assert all(v == 0 for v in usage.used[path].values())
        assert all(v == 0 for v in usage.np_used[path].values())


@pytest.mark.parametrize(("ask", "preemptible", "expected"), [
    ("10", True, None),
    ("11", True, ("root/algo/video", "max")),
    ("4", False, None),
    ("5", False, ("root/algo/video", "min (non-preemptible)")),
])
def test_never_fits_ignores_usage(ask: str, preemptible: bool,
                                  expected: tuple[str, str] | None) -> None:
    usage = QuotaUsage(admission_tree())
    usage.charge("root/algo/video", request("10"), preemptible=False)
    short = usage.never_fits("root/algo/video", request(ask), preemptible=preemptible)
    assert (None if short is None else (short.quota, short.bound)) == expected


def test_shortfall_describe_names_quota_resource_and_quantities() -> None:
    usage = QuotaUsage(admission_tree())
    usage.charge("root/algo/video", request("8"), preemptible=True)
    short = usage.shortfall("root/algo/video", request("3"), preemptible=True)
    assert short is not None
    assert short.describe() == ("quota root/algo/video nvidia.com/gpu: 8 used + 3 requested "
                                "> max 10")


def test_above_min_is_the_borrowed_amount() -> None:
    usage = QuotaUsage(admission_tree())
    usage.charge("root/algo/video", request("6", cpu="10"), preemptible=True)
    # pods and kube-queue/max-jobs are counted only where min names them.
    assert usage.above_min("root/algo/video") == {GPU: 2000}


def test_above_min_follows_every_charge_and_release() -> None:
    """It is kept between changes of the quota's usage, never past one."""
    usage = QuotaUsage(admission_tree())
    leaf = "root/algo/video"
    assert usage.above_min(leaf) == {}
    usage.charge(leaf, request("6"), preemptible=True)
    assert usage.above_min(leaf) == {GPU: 2000}
    assert usage.above_min("root/algo") == {}  # its min holds the 6
    usage.charge(leaf, request("3"), preemptible=False)
    assert usage.above_min(leaf) == {GPU: 5000}
    usage.release(leaf, request("6"), preemptible=True)
    assert usage.above_min(leaf) == {}
    usage.charge(leaf, request("5"), preemptible=True)
    assert usage.above_min(leaf) == {GPU: 4000}
