"""parse_documents builds exactly the values PyYAML's safe loader builds, but
for the plain scalars YAML 1.1 reads as timestamps or numbers in base 60,
which it reads as the strings Kubernetes reads them as.

Its fast constructor covers the plain shapes of manifests and hands every
other document to PyYAML; either way the values, the errors and the sharing
of aliased nodes must be PyYAML's. But it refuses three things PyYAML takes,
as Kubernetes does: duplicate keys, cycles, and aliases that expand a document
beyond any manifest's size.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.core.problems import Problem
from reconciler.fleet.documents import (
    expand_lists,
    iter_mapping_docs,
    load_yaml,
    parse_documents,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED = REPO_ROOT.parent / "shared"


class _AsKubernetes(yaml.CSafeLoader):  # type: ignore[misc]
    """PyYAML's safe loader with no implicit timestamps, and no numbers with a
    ':' (base 60): as sigs.k8s.io/yaml reads a manifest, those are strings."""

    yaml_implicit_resolvers: ClassVar[dict[str, list[tuple[str, re.Pattern[str]]]]] = {
        first: [(tag, re.compile(r"^(?!.*:)" + regexp.pattern[1:], regexp.flags)
                 if tag.endswith((":int", ":float")) else regexp)
                for tag, regexp in resolvers if not tag.endswith(":timestamp")]
        for first, resolvers in yaml.CSafeLoader.yaml_implicit_resolvers.items()}


def pyyaml(data: bytes) -> list[object]:
    return [v for v in yaml.load_all(data, Loader=_AsKubernetes) if v is not None]


def test_timestamps_and_numbers_in_base_60_are_read_as_the_strings_kubernetes_reads() -> None:
    """kubectl, Argo CD and Flux read ``12:30`` and ``2024-06-01T08:00:00Z`` as
    written; read as YAML 1.1 numbers and times, they went out as 750 and
    2024-06-01T08:00:00+00:00."""
    data = (b"a: 12:30\nb: 2024-06-01T08:00:00Z\nc: 2024-06-01\nd: -1:05\ne: 190:20:30.15\n"
            b"f: 2024-06-01 08:00:00\ng: 12\nh: 1.5\ni: yes\nj: 0x1F\n")
    assert values(data) == [{"a": "12:30", "b": "2024-06-01T08:00:00Z", "c": "2024-06-01",
                             "d": "-1:05", "e": "190:20:30.15", "f": "2024-06-01 08:00:00",
                             "g": 12, "h": 1.5, "i": True, "j": 31}]


def values(data: bytes) -> list[object]:
    docs, problem = parse_documents("f.yaml", data)
    assert problem is None, problem
    return [d.value for d in docs]


CASES = {
    "scalars of every implicit tag": b"a: yes\nb: 0x1F\nc: 1:30\nd: 2001-12-14\ne: ~\n"
                                     b"f: .inf\ng: '010'\nh: 010\n1: int key\nnull: k\n",
    "merge key": b"base: &b {cpu: 1}\nworker:\n  <<: *b\n  memory: 2Gi\n",
    "value key": b"- =: 1\n",
    "explicit str tag": b"a: !!str 1\nb: !!int '2'\n",
    "documents with empties": b"---\na: 1\n---\n---\n- x\n...\n",
    "nested flow and block":
        b"spec: {template: {spec: {containers: [{name: c, args: [1, '2']}]}}}\n",
    "quoted and block scalars": b"a: 'yes'\nb: \"1\"\nc: |\n  2\nd: >\n  ~\n'e': 1\n\"3\": f\n",
}


@pytest.mark.parametrize("data", list(CASES.values()), ids=list(CASES))
def test_values_are_pyyamls(data: bytes) -> None:
    assert repr(values(data)) == repr(pyyaml(data))


def test_aliased_nodes_are_read_as_if_written_out() -> None:
    """Equal to PyYAML's values, but each alias its own object (PyYAML's share
    one, so a change where one is used showed where the other is)."""
    data = b"a: &x {b: [1]}\nc: *x\nd: &y [1]\ne: *y\n"
    got = values(data)[0]
    assert isinstance(got, dict)
    assert got == pyyaml(data)[0]
    assert got["a"] is not got["c"] and got["a"]["b"] is not got["c"]["b"]
    assert got["d"] is not got["e"]


LONG_STRINGS = b"s: &s " + b"x" * 100_000 + b"\n" + b"".join(
    f"{n}: &{n} [{','.join(['*' + p] * 10)}]\n".encode() for p, n in zip("sab", "abc",
                                                                      strict=True))
LAUGHS = b"a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n" + b"".join(
    f"{n}: &{n} [{','.join(['*' + p] * 9)}]\n".encode()
    for p, n in zip("abcdef", "bcdefg", strict=True))


@pytest.mark.parametrize(("data", "line", "message"), [
    (b"kind: Job\nmetadata:\n  name: a\n  name: b\n", 4,
     "key 'name' appears twice in one mapping (first at line 5); Kubernetes refuses "
     "duplicate keys: keep one"),
    (b"a: 1\nb: {x: !!str 1, x: 2}\n", 2, "key 'x' appears twice"),  # (left to PyYAML)
    (b"m:\n  <<: {x: 1}\n  y: 2\n  y: 3\n", 4, "key 'y' appears twice"),
    (b"a: &a {x: *a}\n", 1, "an alias refers to a node that holds it (a cycle)"),
    (b"&a [*a]\n", 1, "an alias refers to a node that holds it (a cycle)"),
    (b"m: &m\n  <<: {x: 1}\n  self: *m\n", 1, "a cycle"),
    (LAUGHS, 1, "its aliases expand it to 6,053,451 nodes (more than 400,000"),
    # (few nodes, each a long string: a manifest of 1 GB to render)
    (LONG_STRINGS, 1, "its aliases expand it to 106 MiB of text (more than 16 MiB"),
    # (aliases of a string alone, which the constructor does not see)
    (b"a: &s " + b"z" * 50_000 + b"\nf: [" + b",".join([b"*s"] * 2000) + b"]\n", 1,
     "its aliases expand it to 95 MiB of text"),
    # (an anchor right after a flow key's ':', as YAML allows)
    (b'env: [{"v":&s "' + b"z" * 50_000 + b'"}, ' + b", ".join([b'{"v":*s}'] * 400)
     + b"]\n", 1, "its aliases expand it to 19 MiB of text"),
    # values a Kubernetes object has no form of, which PyYAML builds as Python's own
    # (a set went out as "{'b', 'a'}", in an order of its process)
    (b"a: 1\nargs: !!set {x, y}\n", 2, "the tag !!set makes a set, which a Kubernetes "
     "object has no form of (its YAML is read as JSON); write a list instead"),
    (b"args:\n- !!binary aGVsbG8=\n", 2, "the tag !!binary makes bytes"),
    (b"env: !!omap [{x: 1}, {y: 2}]\n", 1, "the tag !!omap makes an ordered mapping"),
    (b"env: !!pairs [{x: 1}, {x: 2}]\n", 1, "the tag !!pairs makes a list of pairs"),
    (b"at: !!timestamp 2024-06-01\n", 1, "write the time as a quoted string instead"),
])
def test_what_kubernetes_refuses_and_pyyaml_takes_is_a_problem_at_its_line(
        data: bytes, line: int, message: str) -> None:
    """A cycle made every command fail (a RecursionError); duplicate keys let
    the last win, unseen; seven lines of aliases rendered a 127 MB manifest."""
    docs, problem = parse_documents("jobs/bad.yaml", b"kind: Ok\n---\n" + data)
    assert [d.value for d in docs] == [{"kind": "Ok"}]  # (those before it are read)
    assert problem is not None and problem.line == line + 2, problem
    assert problem.message.startswith("not usable YAML: ") and message in problem.message


def test_aliases_that_expand_a_document_little_are_read() -> None:
    data = b"a: &a [x, y]\n" + b"".join(f"k{i}: *a\n".encode() for i in range(1000))
    assert values(data) == pyyaml(data)
    data = b"a: &s text\nb: [*s, *s]\nc: 'x && y'\nd: p&q\n"
    assert values(data) == pyyaml(data)


@pytest.mark.parametrize("data, message", [
    (b"a: !Ref x\n", "could not determine a constructor for the tag '!Ref'"),
    (b"? [1]\n: x\n", "found unhashable key"),
])
def test_what_pyyaml_refuses_is_a_problem_with_its_line(data: bytes, message: str) -> None:
    _, problem = parse_documents("jobs/bad.yaml", data)
    assert problem is not None and problem.path == "jobs/bad.yaml" and problem.line == 1
    assert message in problem.message


@pytest.mark.parametrize(("data", "line"), [
    (b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n", 3),  # (not 4: no such line)
    (b"a: 1\nb: [1,\n\n", 2),
    (b"a: 1\nb: 'x", 2),
    (b"a: 1\n b: 2\n", 2),
    (b"x: 1\na: {b: 1,\n# c", 2),  # (comments after it: the end all the same)
    (b"a: [1,\n# x\n# y", 1),
    (b'a: "abc\ndef', 1),
])
def test_a_yaml_error_at_the_end_of_a_file_is_told_where_what_is_left_open_begins(
        data: bytes, line: int) -> None:
    """PyYAML finds an unclosed flow mapping at the end of the stream: told
    at the line after the last one, which the file does not have."""
    _, problem = parse_documents("jobs/bad.yaml", data)
    assert problem is not None and problem.line == line, problem


def test_every_yaml_file_of_the_template_and_upstream() -> None:
    files = sorted((REPO_ROOT / "fleet-repo-template").rglob("*.yaml"))
    if SHARED.exists():
        files += sorted(SHARED.rglob("*.yaml"))
    assert len(files) > 10
    for path in files:
        data = path.read_bytes()
        assert repr(values(data)) == repr(pyyaml(data)), path


_scalar = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8),
                    st.sampled_from(["yes", "No", "0x10", "1:20", "2026-01-01", "~", ".nan",
                                     "1e3", "010", "+1", "null", ""]))
_value = st.recursive(_scalar, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(_value, st.sampled_from([False, True]))
def test_any_dumped_value_reads_back_as_pyyaml_reads_it(value: object, flow: bool) -> None:
    data = yaml.safe_dump({"v": value}, default_flow_style=flow).encode()
    assert repr(values(data)) == repr(pyyaml(data))


def test_path_resolvers_registered_on_pyyamls_loaders_do_not_reach_it() -> None:
    """fleetq's loader has no path resolvers (its composer hooks for them do
    nothing): one registered on PyYAML's loader changes PyYAML's values only."""
    data = b"spec:\n  replicas: 2\n"
    was = yaml.CSafeLoader.__dict__.get("yaml_path_resolvers")
    yaml.add_path_resolver("tag:yaml.org,2002:set", ["spec"], dict, Loader=yaml.CSafeLoader)
    try:
        assert pyyaml(data) == [{"spec": {"replicas"}}]  # (it took effect there)
        assert values(data) == [{"spec": {"replicas": 2}}]
    finally:
        if was is None:
            del yaml.CSafeLoader.yaml_path_resolvers
        else:
            yaml.CSafeLoader.yaml_path_resolvers = was
    assert values(data) == pyyaml(data)


@pytest.mark.parametrize(("data", "line", "said"), [
    (b"apiVersion: batch/v1\nkind: Job\nmetadata: {name: caf\xe9}\n", 3,
     "not UTF-8 text: byte 0xe9 (byte 52 of the file) is no part of a UTF-8 character; "
     "save the file as UTF-8"),
    # (libyaml names the byte after a bad lead byte: 0x78 here)
    ("a: 1\n# café\nteam: t".encode() + b"\xe9xt\n", 3,
     "not UTF-8 text: byte 0xe9 (byte 21 of the file) is no part of a UTF-8 character; "
     "save the file as UTF-8"),
    ("# café\na: 1\nb: \x07bell\n".encode(), 3,
     "a character YAML does not take: U+0007 (control characters are not allowed); "
     "remove it"),
])
def test_text_yaml_cannot_read_is_a_problem_at_its_line(data: bytes, line: int,
                                                         said: str) -> None:
    _, problem = parse_documents("jobs/x.yaml", data)
    assert problem is not None and problem.line == line, problem
    assert problem.message == said


def test_a_git_lfs_pointer_is_told_as_one() -> None:
    """It was told to be a str, not a Kubernetes object, with no fix."""
    data = (b"version https://git-lfs.github.com/spec/v1\n"
            b"oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
            b"size 12345\n")
    docs, problem = parse_documents("jobs/big.yaml", data)
    assert problem is None
    problems: list[Problem] = []
    assert list(iter_mapping_docs(docs, problems)) == []
    assert problems == [Problem("jobs/big.yaml", 1, (
        "it is a Git LFS pointer: fleetq reads the commit, which holds the pointer, not the "
        "file LFS keeps; keep manifests out of LFS (.gitattributes), or exclude the file in "
        "fleet.yaml"))]


def test_a_document_that_is_no_mapping_is_named_in_yaml_words() -> None:
    """As YAML names it ("a number", "a list"), not as Python does ("a int")."""
    docs, problem = parse_documents("jobs/x.yaml", b"5\n---\n- a\n---\ntrue\n")
    assert problem is None
    problems: list[Problem] = []
    assert list(iter_mapping_docs(docs, problems)) == []
    assert [(p.line, p.message.split(",")[0]) for p in problems] == [
        (1, "document 1 is a number"), (3, "document 2 is a list"),
        (5, "document 3 is a boolean")]


LISTED = b"""\
apiVersion: v1
kind: ConfigMap
metadata: {name: before}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: first}
- apiVersion: v1
  kind: List
  items:
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: inner}}
- 7
---
apiVersion: v1
kind: List
items: null
---
apiVersion: v1
kind: ConfigMap
metadata: {name: after}
"""


def test_the_items_of_a_v1_list_are_read_as_documents_at_their_lines() -> None:
    """What ``kubectl get -o yaml`` writes (``kind: List``), as ``kubectl apply``
    takes it: each item an object of the file at its own line, a List in a
    List read through, an empty one nothing; a document that is not a List is
    kept as it is, where it was in the file (its ``seat``: a job named by
    generateName keeps its name), and each item has a seat of its own."""
    docs, problem = parse_documents("jobs/x.yaml", LISTED)
    assert problem is None and len(docs) == 4
    problems: list[Problem] = []
    read = expand_lists(docs, problems)
    assert [(d.seat, d.line, d.place) for d in read] == [
        (0, 1, "document 1"), ("1/1", 8, "item 1 of the List of document 2"),
        ("1/2/1", 14, "item 1 of the List of item 2 of the List of document 2"),
        ("1/3", 15, "item 3 of the List of document 2"), (3, 21, "document 4")]
    assert [d.value["metadata"]["name"] for d in read if isinstance(d.value, dict)] == [
        "before", "first", "inner", "after"]
    assert read[1].line_of("metadata.name") == 10  # (its own nodes: a field's line)
    kept = list(iter_mapping_docs(read, problems))
    assert len(kept) == 4
    assert [(p.line, p.message.split(",")[0]) for p in problems] == [
        (15, "item 3 of the List of document 2 is a number")]


@pytest.mark.parametrize("items", ["{a: 1}", "just text"])
def test_a_list_whose_items_are_no_list_is_a_problem_at_the_line_of_its_items(
        items: str) -> None:
    docs, _ = parse_documents("jobs/x.yaml", f"apiVersion: v1\nkind: List\nitems: {items}\n")
    problems: list[Problem] = []
    assert expand_lists(docs, problems) == []
    assert [(p.line, p.message.split(";")[0]) for p in problems] == [
        (3, f"the items of this List are {'a mapping' if '{' in items else 'a string'}, "
            f"not a list")]


def test_only_a_v1_list_is_expanded() -> None:
    """Another tool's kind named ...List (fleetq's own PlacementList) is an
    object of that kind, not a List: left as it is."""
    data = b"apiVersion: fleetq.io/v1alpha1\nkind: PlacementList\nitems: [{a: 1}]\n"
    docs, _ = parse_documents("x.yaml", data)
    problems: list[Problem] = []
    assert expand_lists(docs, problems) is docs and problems == []


def test_an_overlay_s_yaml_refuses_what_a_manifest_s_does() -> None:
    """``load_yaml`` reads a rendered overlay: a set there went out in an
    order of its process, as in a manifest."""
    assert load_yaml("a: 12:30\nb: &b [1]\nc: *b\n") == {"a": "12:30", "b": [1], "c": [1]}
    with pytest.raises(yaml.MarkedYAMLError, match="the tag !!set makes a set") as got:
        load_yaml("a: 1\nb: !!set {x}\n")
    assert got.value.problem_mark is not None and got.value.problem_mark.line == 1
    assert load_yaml("") is None


def test_a_document_nested_too_deeply_to_build_is_told_at_its_line() -> None:
    """Nested deeper than Python's stack builds, it was told with no line."""
    data = b"a: 1\nb: 2\nx: " + b"[" * 700 + b"]" * 700 + b"\n"
    _, problem = parse_documents("jobs/deep.yaml", data)
    assert problem is not None and problem.line == 3, problem
    assert problem.message == "not usable YAML: nested too deeply; flatten it"
    # the deepest of the document that does not build, not a deep one that does
    data = (b"a: " + b"[" * 150 + b"]" * 150 + b"\n---\nb: 1\nc: " + b"[" * 990 + b"]" * 990
            + b"\nd: " + b"[" * 150 + b"]" * 150 + b"\n")
    docs, problem = parse_documents("jobs/deep.yaml", data)
    assert len(docs) == 1 and problem is not None and problem.line == 4, problem


def test_a_flow_sequence_left_open_before_more_lines_is_told_with_the_line_it_began() -> None:
    """``stateBranch: [fleetq/state`` with lines after it: libyaml stops at
    the next line; the message says where the sequence began."""
    _, problem = parse_documents("fleet.yaml", b"spec:\n  stateBranch: [fleetq/state\n"
                                               b"  remote: origin\n  other: 1\n")
    assert problem is not None and problem.line == 3, problem
    assert "while parsing a flow sequence begun at line 2, " in problem.message, problem


def test_a_flow_left_open_on_the_last_line_names_no_line_after_it() -> None:
    _, problem = parse_documents("jobs/a.yaml", b"a: 1\nbad: [\n")
    assert problem is not None and problem.line == 2 and "begun at" not in problem.message


@pytest.mark.parametrize(("text", "said"), [
    # (libyaml names no character: the line alone did not say it held a tab)
    (b"kind: x\nmetadata:\n\tname: x\n",
     "a.yaml:3: error: not valid YAML: while scanning for the next token found character "
     "'\\t' that cannot start any token; YAML indents with spaces, not tabs: replace the tab"),
    (b"kind: x\nmetadata:\n  name: x\n\t  namespace: y\n",
     "a.yaml:4: error: not valid YAML: while scanning a plain scalar begun at line 3, found a "
     "tab character that violates indentation; YAML indents with spaces, not tabs: replace "
     "the tab"),
    (b"a: 1\nb: @x\n",
     "a.yaml:2: error: not valid YAML: while scanning for the next token found character "
     "'@' that cannot start any token; fix the syntax"),
    # (a tab on a line of its own, the last: told there, not on the line before)
    (b"kind: x\nmetadata:\n  name: x\n\t\n",
     "a.yaml:4: error: not valid YAML: while scanning a plain scalar begun at line 3, found a "
     "tab character that violates indentation; YAML indents with spaces, not tabs: replace "
     "the tab"),
    # (libyaml names no escape either)
    (b'kind: x\ndata:\n  x: "C:\\qa"\n',
     "a.yaml:3: error: not valid YAML: while parsing a quoted scalar found unknown escape "
     "character \\q; in a double-quoted string a backslash starts an escape (\\n, \\t, "
     "\\\\, \\\", ...): write \\\\ for a backslash, or quote the string with ' instead"),
    # (a new job in a document after it was in no list: it is not read either)
    (b"a: 1\n---\nb: @x\n---\nc: 3\n",
     "a.yaml:3: error: not valid YAML: while scanning for the next token found character "
     "'@' that cannot start any token; fix the syntax (the documents after it in this file "
     "are not read until then)"),
    # (a trailing ---, or one with comments alone after it, starts no document)
    (b"a: 1\nb: @x\n---\n# none\n",
     "a.yaml:2: error: not valid YAML: while scanning for the next token found character "
     "'@' that cannot start any token; fix the syntax"),
])
def test_a_syntax_error_names_the_character_and_the_documents_it_hides(
        text: bytes, said: str) -> None:
    docs, problem = parse_documents("a.yaml", text)
    assert str(problem) == said
    assert len(docs) == text[:text.index(b"@") if b"@" in text else 0].count(b"---")
