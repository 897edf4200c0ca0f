"""Any field of the template's files written in another shape (hypothesis).

One field of one document of the fleet repo template (a job of each kind, a
policy, a member cluster, the quota tree, ``fleet.yaml``, a PriorityClass)
is replaced by a value of any shape YAML writes: a scalar of any type, a
list, a mapping, nested. Reading the fleet must tell what is wrong as
problems and go on: it never stops with an error of its own, and a job in
another file is still read. (Three shapes of a job once stopped the reading
of the whole fleet with a Python error: init containers that were no list, a
mount named by a list, a PyTorchJob replica whose containers were no list;
FLEETQ_EXPLORE=1 asks for new fleets, 3,000 a run, and found the second.)
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.fleet.inputs import FleetInputs, SourceFile, read_fleet

TEMPLATE = Path(__file__).resolve().parents[2] / "fleet-repo-template"
EXPLORE = bool(os.environ.get("FLEETQ_EXPLORE"))
OTHER = ("jobs/other/other.yaml", """\
apiVersion: batch/v1
kind: Job
metadata: {name: other, namespace: platform}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox, resources: {requests: {cpu: "1"}}}]
""")


def _files() -> dict[str, str]:
    return {str(p.relative_to(TEMPLATE)): p.read_text(encoding="utf-8")
            for p in sorted(TEMPLATE.rglob("*.yaml"))}


FILES = _files()


def _places(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every field and item of a document, as its path of keys and indexes."""
    out: list[tuple[Any, ...]] = []
    items = value.items() if isinstance(value, dict) else \
        enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        out.append((*at, key))
        out.extend(_places(inner, (*at, key)))
    return out


_scalar = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(-2, 2),
                    st.sampled_from(["", "x", "Always", "1", "-1", "1.5", "a/b", "nvidia.com/gpu"]))
_value = st.recursive(_scalar, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(
        ["name", "image", "x", "cpu", "requests", "mountPath", "key"]), inner, max_size=3)),
    max_leaves=6)


@st.composite
def fleets(draw: st.DrawFn) -> tuple[str, str, str]:
    """The template's files with one field of one document replaced: the
    file, where, and its text."""
    path = draw(st.sampled_from(sorted(FILES)))
    docs = list(yaml.safe_load_all(FILES[path]))
    seat = draw(st.sampled_from([i for i, d in enumerate(docs) if isinstance(d, dict)]))
    at = draw(st.sampled_from(_places(docs[seat])))
    *parents, last = at
    target = docs[seat]
    for key in parents:
        target = target[key]
    target[last] = draw(_value)
    return path, "/".join(map(str, at)), yaml.safe_dump_all(docs)


def read(files: dict[str, str]) -> FleetInputs:
    return read_fleet([SourceFile(p, hashlib.sha1(t.encode()).hexdigest(), t.encode())
                       for p, t in sorted(files.items())])


@settings(max_examples=3000 if EXPLORE else 300, deadline=None,
          suppress_health_check=[HealthCheck.too_slow], derandomize=not EXPLORE)
@given(fleets())
def test_a_field_of_any_shape_is_told_and_stops_nothing_else(fleet: tuple[str, str, str]
                                                             ) -> None:
    path, where, text = fleet
    inputs = read({**FILES, path: text, OTHER[0]: OTHER[1]})
    read_jobs = {key.name for key in inputs.jobs} | {bad.key.name for bad in inputs.invalid}
    assert "other" in read_jobs, f"{path} ({where}): the other job was not read"
