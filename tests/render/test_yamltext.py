"""The fast YAML writer: whatever it writes, YAML reads back as the same value."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.render.yamltext import dump

SHARED = Path(__file__).resolve().parents[2].parent / "shared"

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(["yes", "No", "on", "y", "1e3", "0x1F", "12:30", "- a", "a: b", "#x",
                     "a #b", "multi\nline\n", "keep\n\n", "strip", " lead", "trail ",
                     "\ttab", "~", "null", "2026-01-01", "*ref", "&anchor", "!tag", "%x",
                     "@x", "`x", "|x", ">x", "[x", "{x", "...", "---", "é ü 中文",
                     "\n 0", "\n\n\tx\n"]),
)
keys = st.text(min_size=1, max_size=12)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)), max_leaves=20)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(keys, values, min_size=1, max_size=5))
def test_round_trip(doc: dict[str, Any]) -> None:
    assert yaml.safe_load(dump(doc)) == doc


@pytest.mark.parametrize("text", ["\n 0", "a\n  b\n", "\n\n\tx\n", "\n  indented\nback\n"])
def test_a_block_whose_first_line_is_indented_reads_back_whole(text: str) -> None:
    assert yaml.safe_load(dump({"v": text})) == {"v": text}


@pytest.mark.parametrize("text", ["1e3", "y", "N", "on", "0o17", ".5", "+1", "-.inf", "1_000"])
def test_strings_other_loaders_read_as_numbers_or_booleans_are_quoted(text: str) -> None:
    assert dump({"v": text}) == f'v: "{text}"\n'


@pytest.mark.parametrize("text", ["\u2028", "a\u2028b", "x\u2029", "\ufeffz", "é\u2028中文",
                                  "a: b\u2029", "line\n\u2028\n"])
def test_line_and_paragraph_separators_and_a_bom_are_escaped_in_quotes(text: str) -> None:
    """YAML reads U+2028 and U+2029 as line breaks and U+FEFF as a byte order mark:
    written as themselves in a quoted scalar, a key or a value would read back
    changed, or not at all."""
    doc = {text: text, "list": [text, {text: [text]}]}
    written = dump(doc)
    assert "\u2028" not in written and "\u2029" not in written and "\ufeff" not in written
    assert yaml.safe_load(written) == doc


def test_layout_is_kubectl_style() -> None:
    doc = {"spec": {"containers": [{"name": "a", "args": ["-c", "sleep 1"],
                                    "resources": {"limits": {"cpu": "2"}}}],
                    "script": "line 1\nline 2\n", "empty": {}, "none": []},
           "when": dt.date(2026, 1, 1)}
    assert dump(doc) == (
        "spec:\n"
        "  containers:\n"
        "  - name: a\n"
        "    args:\n"
        "    - -c\n"
        "    - sleep 1\n"
        "    resources:\n"
        "      limits:\n"
        '        cpu: "2"\n'
        "  script: |\n"
        "    line 1\n"
        "    line 2\n"
        "  empty: {}\n"
        "  none: []\n"
        'when: "2026-01-01"\n')


def test_upstream_and_seed_manifests_round_trip() -> None:
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} not present: the shared upstream examples are not beside the repo")
    docs = []
    for path in sorted(SHARED.rglob("*.yaml")):
        if path.stat().st_size > 200_000:  # CRD schemas: large, nothing new to learn
            continue
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict))
    assert len(docs) > 20
    for doc in docs:
        assert yaml.safe_load(dump(doc)) == doc


def test_placements_formatter_writes_what_the_generic_writer_writes() -> None:
    """``render_placements`` formats items directly for speed; it must stay byte-for-byte
    what ``emit`` writes for ``decision_item``, and read back to the same items."""
    from reconciler.core.cycle import reconcile_cycle
    from reconciler.fleet.state import decision_item, emit, render_placements
    from tests.core.test_cycle import busy_fleet_after_team_b_ran

    decisions = reconcile_cycle(busy_fleet_after_team_b_ran()).decisions
    assert {d.phase.value for d in decisions} >= {"Admitted", "Queued", "Invalid"}
    assert any(d.preempted_by for d in decisions) and any(d.nodes for d in decisions)
    generic = ["apiVersion: fleetq.io/v1alpha1", "kind: PlacementList", "items:"]
    generic += [line for d in decisions for line in emit([decision_item(d)])]
    data = render_placements(decisions)
    assert data == ("\n".join(generic) + "\n").encode()
    assert yaml.safe_load(data)["items"] == [decision_item(d) for d in decisions]


@pytest.mark.parametrize("path", ["jobs/a,b.yaml", "jobs/[x]/y.yaml", "jobs/{a}.yaml",
                                  "jobs/a\u2028b.yaml"])
def test_placements_keep_a_path_with_flow_indicators(path: str) -> None:
    """Source paths sit inside ``{...}`` in placements.yaml: a comma or bracket in
    one must not split the mapping."""
    from reconciler.core.cycle import reconcile_cycle
    from reconciler.fleet.state import read_placements, render_placements
    from tests.builders import cycle_input, job

    decisions = reconcile_cycle(cycle_input(jobs=[job("j", "team-a").path(path)])).decisions
    prior, problems = read_placements(render_placements(decisions))
    assert problems == []
    assert [p.path for p in prior.values()] == [path]
    assert yaml.safe_load(render_placements(decisions))["items"][0]["source"]["path"] == path
