"""What reading the clusters' reports costs a reconcile: ``apply_observations``,
``cycle_input_with`` and ``finish`` (``core.outcomes``) timed on a synthetic
previous state of N jobs (one in seven admitted, on 100 clusters), with no
report, and with a report of every cluster listing its jobs running.

    python -m benchmarks.outcomes --jobs 100000
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from reconciler.core.cycle import CycleInput
from reconciler.core.model import Decision, Job, JobKey, Phase, PodSet, PodSetCount
from reconciler.core.outcomes import (
    ClusterObservation,
    ObservedJob,
    ObservedPhase,
    apply_observations,
    cycle_input_with,
    finish,
)

AT = "2026-12-04T10:00:00Z"


def fleet(n: int) -> tuple[CycleInput, dict[str, ClusterObservation]]:
    jobs, prior = [], {}
    by_cluster: dict[str, dict[JobKey, ObservedJob]] = {}
    for i in range(n):
        key = JobKey("batch", "Job", f"team-{i % 200}", f"job-{i}")
        jobs.append(Job(key=key, api_version="batch/v1", path=f"jobs/{i}.yaml", line=1,
                        blob=f"{i:040x}", pod_sets=(PodSet("main", 1, {"cpu": 1000}),),
                        requests={"cpu": 1000}))
        admitted = i % 7 == 0
        cluster = f"c{i % 100}" if admitted else None
        prior[key] = Decision(key=key, phase=Phase.ADMITTED if admitted else Phase.QUEUED,
                              enqueued_at=AT, api_version="batch/v1", path=f"jobs/{i}.yaml",
                              blob=f"{i:040x}", cluster=cluster, admitted_at=AT if admitted
                              else None, pod_sets=(PodSetCount("main", 1),))
        if cluster is not None:
            by_cluster.setdefault(cluster, {})[key] = ObservedJob(
                key, ObservedPhase.RUNNING, AT, "", "batch/v1")
    inp = CycleInput(jobs=tuple(jobs), tree=None, clusters=(), policies=(),
                     priority_classes={}, default_priority=0, workload_priority_classes={},
                     prior=prior, source_time=AT, now=AT)
    reports = {c: ClusterObservation(c, AT, js, True) for c, js in by_cluster.items()}
    return inp, reports


def timed(work: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    inp, reports = fleet(args.jobs)
    decisions = list(inp.prior.values())

    def run(observations: dict[str, ClusterObservation]) -> None:
        outcomes = apply_observations(inp, observations)
        cycle_input_with(inp, outcomes)
        finish(decisions, outcomes)

    none = timed(lambda: run({}), args.repeat)
    every = timed(lambda: run(reports), args.repeat)
    print(f"{args.jobs} jobs, {sum(len(r.jobs) for r in reports.values())} reported running "
          f"on {len(reports)} clusters (best of {args.repeat}):")
    print(f"  no report:           {none:.3f} s")
    print(f"  every cluster's:     {every:.3f} s")


if __name__ == "__main__":
    main()
