"""``placements.yaml``: the decisions written to, and read back from, the state branch.

The file is a ``PlacementList`` with one item per job, sorted by job identity.
It is written by a small emitter of its own (the schema is fixed and plain),
which is byte-for-byte deterministic and much faster than a generic dumper.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from typing import Any, TypeVar

from reconciler.core.model import Decision, JobKey, Phase, PodSetCount, PriorPlacement, evolve
from reconciler.core.problems import Problem, read_path, shown_path
from reconciler.core.resources import format_resources
from reconciler.fleet.documents import Document, parse_documents
from reconciler.halves import in_two, two_cores
from reconciler.jobkinds.base import ManifestError, parse_resources
from reconciler.render import yamltext

PLACEMENTS = "placements.yaml"
API_VERSION = "fleetq.io/v1alpha1"

def scalar(value: object) -> str:
    """A YAML scalar: plain when every loader reads it back the same, else quoted."""
    return yamltext.scalar(value)


def flow(value: object) -> str:
    """A YAML scalar inside ``{...}``."""
    return yamltext.flow_scalar(value)


def emit(value: Any, indent: int = 0) -> list[str]:
    """Block-style YAML lines for dicts, lists and scalars (keys keep their order)."""
    pad = " " * indent
    out: list[str] = []
    if isinstance(value, Mapping):
        for k, v in value.items():
            if isinstance(v, Mapping) and v and _is_flat(v):
                inner = ", ".join(f"{flow(a)}: {flow(b)}" for a, b in v.items())
                out.append(f"{pad}{scalar(k)}: {{{inner}}}")
            elif isinstance(v, (Mapping, list)) and v:
                out.append(f"{pad}{scalar(k)}:")
                out.extend(emit(v, indent + 2))
            elif isinstance(v, Mapping):
                out.append(f"{pad}{scalar(k)}: {{}}")
            elif isinstance(v, list):
                out.append(f"{pad}{scalar(k)}: []")
            else:
                out.append(f"{pad}{scalar(k)}: {scalar(v)}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, Mapping) and item and _is_flat(item):
                inner = ", ".join(f"{flow(a)}: {flow(b)}" for a, b in item.items())
                out.append(f"{pad}- {{{inner}}}")
            elif isinstance(item, (Mapping, list)) and item:
                lines = emit(item, indent + 2)
                out.append(f"{pad}- {lines[0].lstrip()}")
                out.extend(lines[1:])
            else:
                out.append(f"{pad}- {scalar(item)}")
    else:
        out.append(pad + scalar(value))
    return out


def _is_flat(value: Mapping[str, Any]) -> bool:
    return len(value) <= 6 and all(not isinstance(v, (Mapping, list)) for v in value.values())


def decision_item(d: Decision) -> dict[str, Any]:
    """One placements item (DESIGN §4), fields in the documented order."""
    item: dict[str, Any] = {
        "job": {"apiVersion": d.api_version, "kind": d.key.kind,
                "namespace": d.key.namespace, "name": d.key.name},
        "source": {"path": shown_path(d.path), "blob": d.blob},
    }
    if d.quota is not None:
        item["quota"] = d.quota
    item["priority"] = d.priority
    item["enqueuedAt"] = d.enqueued_at
    item["phase"] = d.phase.value
    if d.cluster is not None:
        item["cluster"] = d.cluster
    if d.copies:
        item["copies"] = list(d.copies)
    if d.pod_sets:
        item["podSets"] = [{"name": p.name, "replicas": p.replicas} for p in d.pod_sets]
    if d.requests:
        item["requests"] = format_resources(d.requests)
    if d.nodes:
        packing: dict[str, dict[str, int]] = {}
        for node, pod_set, count in d.nodes:
            packing.setdefault(node, {})[pod_set] = count
        item["nodes"] = packing
    if d.admitted_at is not None:
        item["admittedAt"] = d.admitted_at
    if d.position is not None:
        item["position"] = d.position
    if d.preempted_by is not None:
        item["preemptedBy"] = d.preempted_by
    if d.preemptions:
        item["preemptions"] = d.preemptions
    if d.preemption_reason is not None:
        item["preemptionReason"] = d.preemption_reason
    if d.kept:
        item["sourceInvalid"] = True
    if d.policy is not None:
        item["policy"] = d.policy
    if d.ended_at is not None:
        item["endedAt"] = d.ended_at
    if d.failed_on:
        item["failedOn"] = list(d.failed_on)
    if d.kept_on:
        item["keptOn"] = list(d.kept_on)
    if d.kept_since:
        item["keptSince"] = dict(d.kept_since)
    item["reason"] = d.reason
    return item


def _item_text(d: Decision, s: Any = yamltext.scalar, f: Any = yamltext.flow_scalar) -> str:
    """``decision_item(d)`` as written by ``emit``, formatted directly (the hot path);
    ``f`` writes the scalars inside ``{...}``."""
    k = d.key
    out = [f"- job: {{apiVersion: {f(d.api_version)}, kind: {f(k.kind)}, "
           f"namespace: {f(k.namespace)}, name: {f(k.name)}}}",
           f"  source: {{path: {f(shown_path(d.path))}, blob: {f(d.blob)}}}"]
    if d.quota is not None:
        out.append(f"  quota: {s(d.quota)}")
    out.append(f"  priority: {d.priority}")
    out.append(f"  enqueuedAt: {s(d.enqueued_at)}")
    out.append(f"  phase: {d.phase.value}")
    if d.cluster is not None:
        out.append(f"  cluster: {s(d.cluster)}")
    _listed(out, "copies", d.copies, s)
    if d.pod_sets:
        out.append("  podSets:")
        out.extend(f"    - {{name: {f(p.name)}, replicas: {p.replicas}}}" for p in d.pod_sets)
    if d.requests:
        req = format_resources(d.requests)
        if len(req) <= 6:
            out.append("  requests: {" + ", ".join(f"{f(n)}: {f(v)}" for n, v in req.items())
                       + "}")
        else:
            out.append("  requests:")
            out.extend(f"    {s(n)}: {s(v)}" for n, v in req.items())
    if d.nodes:
        out.append("  nodes:")
        packing: dict[str, dict[str, int]] = {}
        for node, pod_set, count in d.nodes:
            packing.setdefault(node, {})[pod_set] = count
        for node, sets in packing.items():
            if len(sets) <= 6:
                out.append(f"    {s(node)}: {{"
                           + ", ".join(f"{f(n)}: {c}" for n, c in sets.items()) + "}")
            else:
                out.append(f"    {s(node)}:")
                out.extend(f"      {s(n)}: {c}" for n, c in sets.items())
    if d.admitted_at is not None:
        out.append(f"  admittedAt: {s(d.admitted_at)}")
    if d.position is not None:
        out.append(f"  position: {d.position}")
    if d.preempted_by is not None:
        out.append(f"  preemptedBy: {s(d.preempted_by)}")
    if d.preemptions:
        out.append(f"  preemptions: {d.preemptions}")
    if d.preemption_reason is not None:
        out.append(f"  preemptionReason: {s(d.preemption_reason)}")
    if d.kept:
        out.append("  sourceInvalid: true")
    if d.policy is not None:
        out.append(f"  policy: {s(d.policy)}")
    if d.ended_at is not None:
        out.append(f"  endedAt: {s(d.ended_at)}")
    _listed(out, "failedOn", d.failed_on, s)
    _listed(out, "keptOn", d.kept_on, s)
    if d.kept_since:
        out.append("  keptSince: {" + ", ".join(f"{f(c)}: {f(t)}" for c, t in d.kept_since)
                   + "}")
    out.append(f"  reason: {s(d.reason)}")
    return "\n".join(out)


def _listed(out: list[str], name: str, names: tuple[str, ...], s: Any) -> None:
    """A field listing cluster names, when there are any."""
    if names:
        out.append(f"  {name}:")
        out.extend(f"    - {s(c)}" for c in names)


def render_placements(decisions: Iterable[Decision]) -> bytes:
    """``placements.yaml``: a PlacementList of one item per decision, in the given order.

    It names no source commit (the state commit's trailer does), so a source
    commit that changes no decision changes no byte of the state.
    """
    return render_placements_reusing(decisions, {})[0]


Written = dict[JobKey, tuple[PriorPlacement, bytes]]  # what a decision reads back as, its item
# The fields a decision's item is written from, all of which it reads back as
# (``prior_from_decision``), but ``kept``: such an item is always written anew.
_READ_BACK = operator.attrgetter(*(f.name for f in dataclasses.fields(Decision)
                                   if f.name != "kept"))


def render_placements_reusing(decisions: Iterable[Decision], before: Mapping[
        JobKey, tuple[PriorPlacement, bytes]], as_before: Set[JobKey] = frozenset()
        ) -> tuple[bytes, Written]:
    """``render_placements``, taking the item of each decision that reads back as
    it did ``before`` (the previous state's items, as this wrote them) instead of
    formatting it again; and, for the next reconcile, each decision's read-back
    value and item. The decisions of ``as_before`` are known to read back as
    ``before`` has them: they are not compared again. (``CycleResult.from_prior``
    is such a set when the cycle's priors are ``before``'s, as this version
    wrote them: a job's api_version and requests are then those its blob gave
    the prior.) Many new items are formatted by two processes (``in_two``)."""
    decisions = list(decisions)
    reused: list[tuple[PriorPlacement, bytes] | None] = []
    new: list[Decision] = []
    for d in decisions:
        was = before.get(d.key)
        if was is not None and (was[0] is d or d.key in as_before or (
                not d.kept and _READ_BACK(d) == _READ_BACK(was[0]))):
            reused.append(was)
        else:
            reused.append(None)
            new.append(d)
    if len(new) >= PARALLEL_MIN_ITEMS and two_cores():
        first, second = in_two(_encoded_items, new)
        texts = iter(first + second)
    else:
        texts = iter(_encoded_items(new))
    # Each item encoded at once, joined once: a large fleet's file is held
    # twice at most (its items, then the file), never also as text.
    written: Written = {}
    lines = [_HEAD_LINES]
    for d, was in zip(decisions, reused, strict=True):
        if was is None:
            was = (prior_from_decision(d), next(texts))
        written[d.key] = was
        lines.append(was[1])
    return _joined(lines), written


def placements_file(items: Iterable[bytes]) -> bytes:
    """``placements.yaml`` of its items as written (``Written``'s), in order."""
    return _joined([_HEAD_LINES, *items])


def _joined(lines: list[bytes]) -> bytes:
    """The file of ``lines``: its head, then an item's text each (``lines`` is
    extended: the caller drops it)."""
    if len(lines) == 1:
        return _HEAD_LINES[:-len(b"items:")] + b"items: []\n"
    lines.append(b"")
    return b"\n".join(lines)


PARALLEL_MIN_ITEMS = 5000  # fewer new items than this are formatted in one process


def _encoded_items(decisions: Sequence[Decision]) -> list[bytes]:
    return [_item_text(d).encode() for d in decisions]


_HEAD = f"apiVersion: {API_VERSION}\nkind: PlacementList\nitems:\n".encode()
_HEAD_LINES = _HEAD[:-1]  # (joined to the items by a line break)
_ITEM_START = re.compile(rb"\n- ")
CHUNK_ITEMS = 1000  # items parsed at once when reading the file as written


def read_placements(data: bytes | None) -> tuple[dict[JobKey, PriorPlacement], list[Problem]]:
    """The previous state's decisions, and what is damaged in the file (a reconcile
    stops at it: see ``pipeline.damaged_state``).

    The file as ``render_placements`` writes it is read a chunk of items at a
    time, so that the node tree of the whole file (a few GiB for 100,000
    jobs) is never held; any other file, or one a chunk of which does not
    read back as its items, is read whole.
    """
    if data is None:
        return {}, []
    if _as_written(data):
        got = _read_in_chunks(data)
        if got is not None:
            return got
    return _read_whole(data)


def read_items(data: bytes | None) -> tuple[list[Any], Problem | None]:
    """The items of a ``placements.yaml`` as they read (``fleetq status``): as
    ``read_placements`` reads it, a chunk at a time when it is as written (a
    quarter of the memory the whole file's node tree takes), else whole, with the
    problem that stops it being read, if any (``None``: no file, no items)."""
    if data is None:
        return [], None
    if data and _as_written(data):
        got = _by_spans(data, _items_of_spans, operator.add)
        if got is not None:
            return got, _item_problem(got)
    docs, problem = parse_documents(PLACEMENTS, data or b"")
    problem = problem or _shape_problem(docs)
    got = docs[0].value.get("items") if not problem else []
    return list(got or []), problem or _item_problem(got)


def _shape_problem(docs: list[Document]) -> Problem | None:
    """Why the documents of a ``placements.yaml`` are not one PlacementList
    with a list of items, if they are not."""
    if len(docs) != 1 or not isinstance(docs[0].value, dict) or \
            docs[0].value.get("kind") != "PlacementList" or \
            not isinstance(docs[0].value.get("items") or [], list):
        return Problem(PLACEMENTS, docs[0].line if docs else 0, (
            "it is not one PlacementList with a list of items" if docs else "it is empty"))
    return None


_PHASES = frozenset(p.value for p in Phase)


def _item_problem(items: list[Any]) -> Problem | None:
    """Why one of a state's items does not read as an item, if one does not (a
    look at its job and phase: ``fleetq status`` shows them)."""
    for number, item in enumerate(items, 1):
        if not isinstance(item, dict) or not isinstance(item.get("job"), dict) or \
                item.get("phase") not in _PHASES:
            return Problem(PLACEMENTS, 0, f"its item {number} is not a placement with a job "
                                          f"and a phase ({', '.join(sorted(_PHASES))})")
    return None


def items_of(written: Written) -> tuple[list[bytes], list[Any]] | None:
    """A state's items from its decisions as the cache keeps them (``Written``),
    in the file's order (that of job keys): as written, and as they read
    (``read_items``). Each reads as its decision's item (``prior_from_decision``
    keeps every field written), but one written with ``sourceInvalid`` (a job
    kept where it ran), which is read from its text (``None`` if it does not read
    as one item)."""
    texts: list[bytes] = []
    items: list[Any] = []
    for key in sorted(written):
        prior, text = written[key]
        texts.append(text)
        if b"sourceInvalid" in text:
            docs, problem = parse_documents(PLACEMENTS, text)
            if problem is not None or len(docs) != 1 or not isinstance(docs[0].value, list) \
                    or len(docs[0].value) != 1:
                return None
            items.append(docs[0].value[0])
        else:
            items.append(decision_item(prior))
    return texts, items


def _as_written(data: bytes) -> bool:
    return data.startswith(_HEAD) and data[len(_HEAD):len(_HEAD) + 2] == b"- "


# A chunk of a file as written: its items' bytes (start, end), how many, the line of the first.
Span = tuple[int, int, int, int]
T = TypeVar("T")
PARALLEL_MIN_READ = 20  # chunks of items (of CHUNK_ITEMS) from which two processes read


def _spans(data: bytes) -> list[Span]:
    """The chunks of ``CHUNK_ITEMS`` items of a file that starts as written."""
    starts = [len(_HEAD)] + [m.start() + 1 for m in _ITEM_START.finditer(data, len(_HEAD))]
    starts.append(len(data))
    line = _HEAD.count(b"\n") + 1  # of the chunk's first item
    spans = []
    for first in range(0, len(starts) - 1, CHUNK_ITEMS):
        last = min(first + CHUNK_ITEMS, len(starts) - 1)
        spans.append((starts[first], starts[last], last - first, line))
        line += data.count(b"\n", starts[first], starts[last])
    return spans


def _by_spans(data: bytes, work: Callable[[bytes, Sequence[Span]], T | None],
              join: Callable[[T, T], T]) -> T | None:
    """``work`` over the chunks of ``data`` (a file that starts as written): in
    two processes, half the chunks each, when there are many (``in_two``),
    the halves' results joined; ``None`` when a chunk does not read back as
    its items (the file is not as written)."""
    spans = _spans(data)
    if len(spans) < PARALLEL_MIN_READ or not two_cores():
        return work(data, spans)
    first, second = in_two(functools.partial(work, data), spans)
    return None if first is None or second is None else join(first, second)


Priors = tuple[dict[JobKey, PriorPlacement], list[Problem]]


def _joined_priors(first: Priors, second: Priors) -> Priors:
    first[0].update(second[0])
    return first[0], first[1] + second[1]


def _chunk(data: bytes, span: Span) -> Document | None:
    """The document of a chunk (its value: the list of its items), or ``None``
    when it does not read back as its items."""
    start, end, count, _ = span
    docs, problem = parse_documents(PLACEMENTS, data[start:end])
    if problem is not None or len(docs) != 1 or not isinstance(docs[0].value, list) \
            or len(docs[0].value) != count:
        return None
    return docs[0]


def _items_of_spans(data: bytes, spans: Sequence[Span]) -> list[Any] | None:
    items: list[Any] = []
    for span in spans:
        doc = _chunk(data, span)
        if doc is None:
            return None
        items.extend(doc.value)
    return items


def _priors_of_spans(data: bytes, spans: Sequence[Span]) -> Priors | None:
    prior: dict[JobKey, PriorPlacement] = {}
    problems: list[Problem] = []
    for span in spans:
        doc = _chunk(data, span)
        if doc is None:
            return None  # not items as written: read the whole file, which says where
        for i, item in enumerate(doc.value):
            try:
                p = prior_from_item(item)
            except (KeyError, TypeError, ValueError, AttributeError, ManifestError) as exc:
                problems.append(_damaged(span[3] - 1 + doc.line_of(f"[{i}]"), exc))
                continue
            prior[p.key] = p
    return prior, problems


def _read_in_chunks(data: bytes) -> Priors | None:
    return _by_spans(data, _priors_of_spans, _joined_priors)


def _damaged(line: int, exc: Exception) -> Problem:
    return Problem(PLACEMENTS, line, (
        f"its item at line {line} is damaged ({type(exc).__name__}: {exc})"))


def _read_whole(data: bytes) -> tuple[dict[JobKey, PriorPlacement], list[Problem]]:
    docs, problem = parse_documents(PLACEMENTS, data)
    problem = problem or _shape_problem(docs)
    problems = [problem] if problem is not None else []
    prior: dict[JobKey, PriorPlacement] = {}
    if problem is not None:
        return prior, problems
    for i, item in enumerate(docs[0].value.get("items") or []):
        try:
            p = prior_from_item(item)
        except (KeyError, TypeError, ValueError, AttributeError, ManifestError) as exc:
            problems.append(_damaged(docs[0].line_of(f"items[{i}]"), exc))
            continue
        prior[p.key] = p
    return prior, problems


def prior_from_decision(d: Decision) -> PriorPlacement:
    """What the next reconcile reads back of ``d`` (as ``prior_from_item`` of its
    item): ``d`` itself, unless it is kept or its nodes are not in order."""
    nodes = tuple(sorted(d.nodes))
    if not d.kept and nodes == d.nodes and type(d.requests) is dict:
        return d
    return evolve(d, kept=False, nodes=nodes, requests=dict(d.requests))


def prior_from_item(item: Mapping[str, Any]) -> PriorPlacement:
    job = item["job"]
    api_version = str(job["apiVersion"])
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    key = JobKey(group, str(job["kind"]), str(job["namespace"]), str(job["name"]))
    source = item.get("source") or {}
    return PriorPlacement(
        key=key, phase=Phase(item["phase"]), enqueued_at=str(item.get("enqueuedAt") or ""),
        path=read_path(str(source.get("path") or "")), blob=str(source.get("blob") or ""),
        quota=item.get("quota"), priority=int(item.get("priority") or 0),
        cluster=item.get("cluster"),
        pod_sets=tuple(PodSetCount(str(p["name"]), int(p["replicas"]))
                       for p in item.get("podSets") or ()),
        requests=parse_resources(item.get("requests"), "requests"),
        admitted_at=item.get("admittedAt"), preempted_by=item.get("preemptedBy"),
        preemptions=int(item.get("preemptions") or 0), reason=str(item.get("reason") or ""),
        preemption_reason=item.get("preemptionReason"),
        copies=tuple(str(c) for c in item.get("copies") or ()),
        nodes=tuple(sorted((str(node), str(ps), int(n))
                           for node, sets in (item.get("nodes") or {}).items()
                           for ps, n in sets.items())),
        policy=item.get("policy"),
        api_version=api_version, position=_position(item.get("position")),
        ended_at=_text(item.get("endedAt")),
        failed_on=tuple(str(c) for c in item.get("failedOn") or ()),
        kept_on=tuple(str(c) for c in item.get("keptOn") or ()),
        kept_since=tuple(sorted((str(c), str(t))
                                for c, t in (item.get("keptSince") or {}).items())))


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _position(value: Any) -> int | None:
    """A queue position as written (a hand-edited one that is not counts as none:
    the job is then placed in its queue afresh)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else None

