"""A victim placed again in the same reconcile may still be reclaimed then.

The fleet below was found by the property test: j0-1 reclaims j0-2, which is
placed again on c0; j0-0 then needs j0-2's room. A job is a victim at most
once per round, so j0-0 waits in the first round and the second round lets it
reclaim j0-2 again. Without the second round, the next reconcile would do it:
reconciling twice would change the state.
"""

from __future__ import annotations

from pathlib import Path

from reconciler.core.cycle import reconcile_cycle
from reconciler.core.model import Phase
from tests.scenarios.loader import load_scenario, round_trip

FLEET = """\
# source: fleetq property test (tests/properties), a reclaim chain
source: fleetq property test (tests/properties), a reclaim chain
name: victim-placed-again
description: a victim placed again in the same reconcile may be reclaimed again
fleet: {quotas: {root/q0: {queueStrategy: StrictFIFO, preemption: Never},
                 root/q1: {queueStrategy: StrictFIFO, preemption: Never, weight: 0.5}}}
tree:
  name: root
  min: {cpu: 9}
  max: {cpu: 9}
  children:
  - {name: q0, min: {cpu: 9}, max: {cpu: 9}, namespaces: [q0]}
  - {name: q1, min: {cpu: 0}, max: {cpu: 9}, namespaces: [q1]}
clusters:
- {name: c0, resourceReservation: false,
   nodes: [{name: n1, allocatable: {cpu: "5"}}, {name: n2, allocatable: {cpu: "3"}}]}
- {name: c1, resourceReservation: true, nodes: [{name: m1, allocatable: {cpu: "6"}}]}
priorityClasses: {low: 10, mid: 100}
pending:
- {name: j0-0, namespace: q0, cpu: "2", replicas: 2, priority: low,
   enqueuedAt: "2026-01-01T10:05:00Z"}
- {name: j0-1, namespace: q0, cpu: "1", replicas: 2, priority: low,
   enqueuedAt: "2026-01-01T10:04:00Z", clusters: [c1]}
- {name: j0-2, namespace: q1, cpu: "2", replicas: 2, priority: mid,
   enqueuedAt: "2026-01-01T10:08:00Z"}
- {name: j0-3, namespace: q1, cpu: "2", replicas: 1, priority: mid,
   enqueuedAt: "2026-01-01T10:02:00Z"}
- {name: j0-4, namespace: q0, cpu: "1", replicas: 2, priority: low, clusters: [c1]}
expect: {}
"""


def test_a_victim_placed_again_is_reclaimed_in_the_same_reconcile(tmp_path: Path) -> None:
    path = tmp_path / "victim-placed-again.yaml"
    path.write_text(FLEET)
    inp = load_scenario(path).cycle_input
    first = reconcile_cycle(inp)
    got = {d.key.name: (d.phase, d.cluster) for d in first.decisions}
    # q0 is within its min (9 cpu): all three of its jobs run; q1 borrowed and waits.
    assert got == {"j0-0": (Phase.ADMITTED, "c0"), "j0-1": (Phase.ADMITTED, "c1"),
                   "j0-4": (Phase.ADMITTED, "c1"), "j0-2": (Phase.QUEUED, None),
                   "j0-3": (Phase.QUEUED, None)}
    again = reconcile_cycle(round_trip(inp, first))
    assert again.decisions == first.decisions


def test_rounds_that_do_not_settle_are_reported(tmp_path: Path, monkeypatch) -> None:
    from reconciler.core import cycle

    path = tmp_path / "victim-placed-again.yaml"
    path.write_text(FLEET)
    monkeypatch.setattr(cycle, "MAX_ROUNDS", 1)  # this fleet needs two
    result = reconcile_cycle(load_scenario(path).cycle_input)
    assert [p.severity for p in result.problems] == ["warning"]
    assert "did not settle within 1 rounds" in result.problems[0].message
