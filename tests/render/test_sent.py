"""A batch Job running on a cluster, rendered with what it was sent with there
(``Sent``): what Kueue's Job webhook refuses to change while it runs."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import yaml

from reconciler.core.model import Decision, MemberCluster, Phase, PodSetCount
from reconciler.core.problems import Problem
from reconciler.fleet.documents import parse_documents
from reconciler.fleet.inputs import FleetInputs
from reconciler.fleet.jobs import JobSource, build_job
from reconciler.jobkinds.base import Manifest
from reconciler.jobkinds.batchjob import BatchJobKind
from reconciler.render.manifests import (
    KueueJobSent,
    Sent,
    dump,
    render_state,
    spec_kept,
    spec_sent,
)
from reconciler.render.overlays import Overlays

EQUAL = "kueue.x-k8s.io/job-completions-equal-parallelism"
MIN = "kueue.x-k8s.io/job-min-parallelism"
FILE = "clusters/m-a/default/job-run.yaml"


def batchjob(parallelism: int | None = 2, **annotations: str) -> str:
    """A batch Job's source, its annotations by name (``EQUAL``, ``MIN``)."""
    meta = "".join(f"    {name}: \"{value}\"\n" for name, value in annotations.items())
    return ("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: run\n  namespace: default\n"
            + (f"  annotations:\n{meta}" if meta else "") + "spec:\n"
            + (f"  parallelism: {parallelism}\n" if parallelism is not None else "")
            + "  template:\n    spec:\n      restartPolicy: Never\n"
            "      containers:\n      - name: train\n        image: train:v1\n")


def source(text: str, blob: str) -> JobSource:
    [doc], _ = parse_documents("jobs/run.yaml", text)
    return build_job(doc.value, BatchJobKind(), path=doc.path, index=doc.seat, line=doc.line,
                     blob=blob, line_of=doc.line_of)


@dataclass
class Rendered:
    obj: Manifest
    problems: list[Problem]
    inputs: str  # (``RenderedTree.inputs`` of its file)


def render(text: str, dialect: str, sent: Sent | None = None) -> Rendered:
    """The Job of ``text`` rendered running on m-a, of ``dialect``, ``sent``
    with what it went with there (None: sent anew)."""
    job = source(text, blob="b")
    made = Decision(job.job.key, Phase.ADMITTED, "2026-11-29T10:00:00Z",
                    api_version="batch/v1", path=job.job.path, blob=job.job.blob,
                    cluster="m-a", pod_sets=(PodSetCount("main", 1),))
    inputs = FleetInputs(clusters=[MemberCluster("m-a", gang_dialect=dialect)],
                         jobs={job.job.key: job})
    out = render_state([made], inputs, JobSource.load_manifest, {}, Overlays({}), None,
                       None, {FILE: sent} if sent is not None else None)
    file = out.files[FILE]
    assert isinstance(file, bytes)
    return Rendered(yaml.safe_load(file), out.problems, out.inputs[FILE])


def annotations(obj: Manifest) -> dict[str, str]:
    return {k: v for k, v in obj["metadata"]["annotations"].items() if k in (EQUAL, MIN)}


def running(was: str, now: str, dialect: str = "kueue") -> Rendered:
    """The Job sent as ``was``, rendered again as ``now`` while it runs."""
    sent = spec_sent(dump(render(was, dialect).obj), dialect == "kueue")
    assert sent is not None
    return render(now, dialect, sent)


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def told(text: str, field: str, edit: str, keeps: str) -> list[str]:
    """The warning of a field kept as sent, at its line in ``text``."""
    why = f" (it was sent with annotation {MIN})" if field == "spec.parallelism" else ""
    at = line_of(text, "  parallelism:" if field == "spec.parallelism" else EQUAL) \
        if edit != "removed" else 1
    return [f"jobs/run.yaml:{at}: warning: {field} {edit} takes effect when Job default/run "
            f"runs again: Kueue refuses to change it while the job runs{why}, so on m-a "
            f"{keeps}"]


@pytest.mark.parametrize(("was", "now", "equal", "edit", "keeps"), [
    ({EQUAL: "true"}, {EQUAL: "false"}, {EQUAL: "true"}, 'changed to "false"',
     'it keeps "true"'),
    ({}, {EQUAL: "true"}, {}, 'set to "true"', "it stays without it"),
    ({EQUAL: "true"}, {}, {EQUAL: "true"}, "removed", 'it keeps "true"'),
    # (whether it is "true" stays: Kueue sees no change, it goes as edited)
    ({EQUAL: "false"}, {}, {}, None, None),
    ({EQUAL: "false"}, {EQUAL: "True"}, {EQUAL: "True"}, None, None),
    ({EQUAL: "true"}, {EQUAL: "true"}, {EQUAL: "true"}, None, None),
], ids=["changed", "set", "removed", "false-removed", "not-true", "same"])
def test_a_batch_job_running_on_a_kueue_cluster_keeps_whether_its_completions_follow(
        was: dict[str, str], now: dict[str, str], equal: dict[str, str],
        edit: str | None, keeps: str | None) -> None:
    """Kueue's Job webhook refuses to change whether the annotation
    job-completions-equal-parallelism of a Job not suspended is "true": the
    Job goes with it as it was sent (its value, or none), told at its line;
    an edit Kueue sees as no change goes as edited. The file's inputs say
    what it kept, so that it is not taken again for one made anew."""
    edited = batchjob(**now)
    out = running(batchjob(**was), edited)
    assert annotations(out.obj) == equal
    assert out.obj["spec"]["parallelism"] == 2
    if edit is None or keeps is None:
        assert out.problems == []
        assert not spec_kept(out.inputs)
    else:
        assert [str(p) for p in out.problems] == told(edited, f"annotation {EQUAL}", edit,
                                                        keeps)
        assert spec_kept(out.inputs)


@pytest.mark.parametrize(("was", "now", "parallelism", "edit", "keeps"), [
    (batchjob(2, **{MIN: "1"}), batchjob(4, **{MIN: "1"}), 2, "changed to 4", "it keeps 2"),
    (batchjob(2, **{MIN: "1"}), batchjob(None, **{MIN: "1"}), 2, "removed", "it keeps 2"),
    (batchjob(None, **{MIN: "1"}), batchjob(3, **{MIN: "1"}), None, "set to 3",
     "it stays without it"),
    # (its own edit goes: Kueue checks it again, and keeps the parallelism of the Job
    # as it was sent with it)
    (batchjob(2, **{MIN: "1"}), batchjob(4, **{MIN: "2"}), 2, "changed to 4", "it keeps 2"),
    (batchjob(2, **{MIN: "1"}), batchjob(4), 2, "changed to 4", "it keeps 2"),
    # (the default: no change for Kueue)
    (batchjob(None, **{MIN: "1"}), batchjob(1, **{MIN: "1"}), 1, None, None),
    # (sent with no partial admission: it may change)
    (batchjob(2), batchjob(4, **{MIN: "1"}), 4, None, None),
    (batchjob(2), batchjob(4), 4, None, None),
], ids=["changed", "removed", "set", "min-edited", "min-removed", "default", "min-added",
        "no-min"])
def test_a_batch_job_running_on_a_kueue_cluster_under_partial_admission_keeps_its_parallelism(
        was: str, now: str, parallelism: int | None, edit: str | None,
        keeps: str | None) -> None:
    """Kueue's Job webhook refuses to change the parallelism (1 when unset) of
    a Job not suspended that has the annotation job-min-parallelism: sent
    with it, the Job goes with its parallelism as it was sent, told at its
    line; the annotation itself goes as edited."""
    out = running(was, now)
    assert out.obj["spec"].get("parallelism") == parallelism
    assert annotations(out.obj).get(MIN) == annotations(render(now, "kueue").obj).get(MIN)
    if edit is None or keeps is None:
        assert out.problems == []
        assert not spec_kept(out.inputs)
    else:
        assert [str(p) for p in out.problems] == told(now, "spec.parallelism", edit, keeps)
        assert spec_kept(out.inputs)


def test_an_indexed_job_under_partial_admission_keeps_completions_and_parallelism_together(
        ) -> None:
    """An Indexed Job whose completions follow its parallelism, both edited:
    on a kueue cluster, sent with job-min-parallelism, its parallelism stays
    as sent, and so do its completions (the API server takes new completions
    only with the parallelism they equal)."""
    def indexed(pods: int) -> str:
        return batchjob(pods, **{MIN: "1"}).replace(
            "  template:", f"  completions: {pods}\n  completionMode: Indexed\n  template:")

    out = running(indexed(2), indexed(3))
    assert (out.obj["spec"]["parallelism"], out.obj["spec"]["completions"]) == (2, 2)
    assert spec_kept(out.inputs)


@pytest.mark.parametrize("dialect", ["ack", "scheduler-plugins", "volcano"])
def test_a_batch_job_running_on_another_dialect_goes_with_its_kueue_annotations_edited(
        dialect: str) -> None:
    """Off kueue clusters no Kueue webhook refuses them: the parallelism and
    the annotations of a running Job go as edited."""
    out = running(batchjob(2, **{EQUAL: "true", MIN: "1"}), batchjob(4, **{EQUAL: "false"}),
                  dialect)
    assert out.obj["spec"]["parallelism"] == 4
    assert annotations(out.obj) == {EQUAL: "false"}
    assert out.problems == []
    assert not spec_kept(out.inputs)


def test_what_kueue_refuses_to_change_is_read_from_the_job_as_it_was_sent() -> None:
    """``spec_sent`` of a Job rendered for a kueue cluster: its annotation
    (or none), whether it has job-min-parallelism, and its parallelism (or
    none); of one rendered for another dialect, nothing of Kueue's."""
    sent = spec_sent(dump(render(batchjob(3, **{EQUAL: "true", MIN: "2"}), "kueue").obj),
                     True)
    assert sent is not None
    assert sent.kueue_job == KueueJobSent("true", True, 3)
    sent = spec_sent(dump(render(batchjob(None), "kueue").obj), True)
    assert sent is not None
    assert sent.kueue_job == KueueJobSent(None, False, None)
    sent = spec_sent(dump(render(batchjob(3, **{MIN: "2"}), "ack").obj))
    assert sent is not None
    assert sent.kueue_job is None
