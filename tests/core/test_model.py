"""The core values pickle as plain tuples and are updated by ``evolve``."""

from __future__ import annotations

import collections
import dataclasses
import pickle

import pytest

from reconciler.core.cycle import InvalidJob, reconcile_cycle
from reconciler.core.model import Decision, JobKey, Phase, evolve
from reconciler.fleet.jobs import JobSource
from tests.builders import cycle_input, gpu_job, job


def test_values_pickle_to_equal_values_with_plain_state() -> None:
    jobs = [job("a", "team-a").priority_class("p").obj(), gpu_job("b", 2, "team-b").obj()]
    decisions = reconcile_cycle(cycle_input(jobs=jobs, priority_classes={"p": 5})).decisions
    source = JobSource(job=jobs[0], deps=(("ConfigMap", "c"),), index=0, manifest=b"x")
    bad = InvalidJob(key=JobKey("batch", "Job", "ns", "n"), api_version="batch/v1",
                     path="jobs/n.yaml", line=3, blob="0" * 40, message="broken")
    values = [*jobs, *decisions, source, bad, jobs[0].pod_sets[0], jobs[0].key]
    back = pickle.loads(pickle.dumps(values, protocol=pickle.HIGHEST_PROTOCOL))
    assert back == values
    assert [type(v) for v in back] == [type(v) for v in values]
    key = jobs[0].key
    assert tuple(key) == (key.group, key.kind, key.namespace, key.name)
    # keys sort in that field order; namespace/name is the queues' tie-break
    assert sorted([JobKey("b", "Job", "a", "z"), JobKey("a", "Job", "z", "a")])[0].group == "a"
    assert JobKey("b", "Job", "a", "z").order < JobKey("a", "Job", "z", "a").order


def test_evolve_is_replace() -> None:
    d = reconcile_cycle(cycle_input(jobs=[job("a", "team-a")])).decisions[0]
    changed = evolve(d, phase=Phase.QUEUED, cluster=None, position=2)
    assert changed == dataclasses.replace(d, phase=Phase.QUEUED, cluster=None, position=2)
    assert d.phase is Phase.ADMITTED and isinstance(changed, Decision)
    with pytest.raises(TypeError, match="no field colour"):
        evolve(d, colour="red")


def test_plain_state_sets_every_field_and_takes_slots_dataclasses_only() -> None:
    from reconciler.core.model import PodSetCount, plain_state

    p = PodSetCount("worker", 3)
    back = object.__new__(PodSetCount)
    back.__setstate__(("worker", 3))  # type: ignore[attr-defined]
    assert back == p and back.replicas == 3
    with pytest.raises(ValueError):
        object.__new__(PodSetCount).__setstate__(("worker",))  # type: ignore[attr-defined]

    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        a: int

    with pytest.raises(TypeError, match="not a slots dataclass"):
        plain_state(NoSlots)


def test_plain_state_init_is_the_dataclass_init() -> None:
    from reconciler.core.model import plain_state

    @dataclasses.dataclass(frozen=True, slots=True)
    class Plain:
        a: int
        b: str = "b"
        c: dict[str, int] = dataclasses.field(default_factory=dict)

    @plain_state
    @dataclasses.dataclass(frozen=True, slots=True)
    class Fast:  # the same fields, the generated __init__
        a: int
        b: str = "b"
        c: dict[str, int] = dataclasses.field(default_factory=dict)

    for args, kwargs in [((1,), {}), ((1, "x"), {}), ((), {"a": 2, "c": {"k": 1}}),
                         ((3,), {"b": "y"})]:
        want, got = Plain(*args, **kwargs), Fast(*args, **kwargs)
        assert (got.a, got.b, got.c) == (want.a, want.b, want.c)
    first, second = Fast(1), Fast(1)
    assert first.c == {} and first.c is not second.c
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.a = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        Fast()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Fast(1, colour="red")  # type: ignore[call-arg]

    @dataclasses.dataclass(frozen=True, slots=True)
    class Later:
        a: int

        def __post_init__(self) -> None:
            pass

    with pytest.raises(TypeError, match="__post_init__"):
        plain_state(Later)


def test_one_each_gives_the_first_equal_value_and_starts_again_at_its_limit() -> None:
    from reconciler.core.model import OneEach

    one = OneEach(limit=3)
    first = {"cpu": 1000, "memory": 5}
    assert one(first) is first
    again = {"cpu": 1000, "memory": 5}
    assert one(again) is first  # equal: the first one
    reordered = {"memory": 5, "cpu": 1000}
    assert one(reordered) is reordered  # the same items in another order: its own
    ordered = collections.OrderedDict(first)
    assert one(ordered) is ordered  # equal, but of another type: its own
    labels = (("team", "a"),)
    assert one(labels) is labels and one((("team", "a"),)) is labels
    assert one.by(("shape", 1), "x") == "x" and one.by(("shape", 1), "y") == "x"
    # more than three values kept: it started again, so the first dict is no longer given
    assert one({"cpu": 1000, "memory": 5}) is not first


def test_jobs_parsed_alike_share_their_pod_sets_and_requests_and_read_back_equal() -> None:
    from reconciler.fleet.jobs import build_job
    from reconciler.jobkinds import kind_for

    def manifest(name: str, gpus: int) -> dict[str, object]:
        pod = {"spec": {"containers": [{"name": "pytorch", "image": "x", "resources": {"limits": {
            "nvidia.com/gpu": gpus}, "requests": {"cpu": "2"}}}]}}
        return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                "metadata": {"name": name, "namespace": "team-a",
                             "labels": {"quota.scheduling.alibabacloud.com/name": "team-a"}},
                "spec": {"pytorchReplicaSpecs": {
                    "Master": {"replicas": 1, "template": pod},
                    "Worker": {"replicas": 3, "template": pod}}}}

    kind = kind_for("kubeflow.org/v1", "PyTorchJob")
    assert kind is not None
    a, b, c = (build_job(manifest(name, gpus), kind, path=f"jobs/{name}.yaml", index=0,
                         line=1, blob=str(i) * 40)
               for i, (name, gpus) in enumerate([("a", 1), ("b", 1), ("c", 2)]))
    assert a.job.pod_sets is b.job.pod_sets and a.job.requests is b.job.requests
    assert a.job.labels is b.job.labels and a.job.key != b.job.key
    assert c.job.pod_sets != a.job.pod_sets and c.job.requests != a.job.requests
    assert c.job.pod_sets[0].node_selector is a.job.pod_sets[0].node_selector
    # pickled together (as a shard of the cache), each shared value is written
    # once, and reads back as one object again, equal
    back = pickle.loads(pickle.dumps([a, b], protocol=pickle.HIGHEST_PROTOCOL))
    assert back == [a, b] and back[0].job.pod_sets is back[1].job.pod_sets
    assert back[0].job.requests is back[1].job.requests
