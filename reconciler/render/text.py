"""Tables and documents for the terminal: kubectl-style columns, JSON and YAML."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TextIO

from reconciler.core.problems import Problem
from reconciler.fleet.state import emit

MAX_REASON = 110


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """Columns separated by three spaces, headers in capitals, like kubectl."""
    body = [[str(c) if c is not None and c != "" else "-" for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in body:
        for i, cell in enumerate(row[:-1]):
            widths[i] = max(widths[i], len(cell))
    lines = []
    for row in [list(headers), *body]:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])] + [row[-1]]
        lines.append("   ".join(cells).rstrip())
    return "\n".join(lines)


def short(text: str, limit: int = MAX_REASON) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def placements_table(items: Sequence[Mapping[str, Any]], *, wide: bool = False) -> str:
    preempted = any(i.get("preemptedBy") for i in items)
    headers = ["NAMESPACE", "NAME", "KIND", "PHASE", "QUOTA", "PRIORITY", "CLUSTER", "POS"]
    if preempted:
        headers.append("PREEMPTED-BY")
    # wide: the clusters a job failed on, and those keeping its old copy (failover)
    failover = [f for f in ("failedOn", "keptOn") if wide and any(i.get(f) for i in items)]
    headers.extend({"failedOn": "FAILED-ON", "keptOn": "KEPT-ON"}[f] for f in failover)
    if wide:  # (and when it came, and when it was admitted)
        headers.extend(("ENQUEUED", "ADMITTED"))
    headers.append("REASON")
    rows = []
    # (as kubectl lists objects: by namespace, then name; placements.yaml's order is
    # that of the job's kind first)
    for i in sorted(items, key=lambda i: (str(i["job"]["namespace"]), str(i["job"]["name"]),
                                          str(i["job"]["kind"]))):
        job = i["job"]
        # (a job invalid from the start has no priority: none was resolved)
        priority = None if i["phase"] == "Invalid" and not i.get("quota") else i.get("priority")
        row: list[object] = [job["namespace"], job["name"], job["kind"], i["phase"],
                             i.get("quota"), priority, i.get("cluster"), i.get("position")]
        if preempted:
            by = i.get("preemptedBy")
            count = i.get("preemptions")  # (none: reclaimed before it ran)
            row.append((f"{by} (x{count})" if count else str(by)) if by else None)
        row.extend(",".join(map(str, i.get(f) or ())) or None for f in failover)
        if wide:
            row.extend((i.get("enqueuedAt"), i.get("admittedAt")))
        row.append(i.get("reason", "") if wide else short(str(i.get("reason", ""))))
        rows.append(row)
    return table(headers, rows)


def json_parts(value: Any) -> Iterator[str]:
    """``value`` as indented JSON, in parts, as it is made (100,000 items are
    written as they are encoded, not held as one text and its millions of
    pieces)."""
    return json.JSONEncoder(indent=2, sort_keys=False, ensure_ascii=False).iterencode(value)


def yaml_parts(value: Any) -> Iterator[str]:
    """``value`` as YAML (``emit``'s block style), in parts: a list an item at a
    time (``emit`` lays each out alone)."""
    if isinstance(value, list) and not value:
        yield "[]"
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield ("\n" if i else "") + "\n".join(emit([item]))
    else:
        yield "\n".join(emit(value))


def write_parts(parts: Iterable[str], out: TextIO, batch: int = 4096) -> None:
    """Write ``parts`` to ``out``, ``batch`` of them at a time, then a line break."""
    held: list[str] = []
    for part in parts:
        held.append(part)
        if len(held) >= batch:
            out.write("".join(held))
            held.clear()
    held.append("\n")
    out.write("".join(held))


def problems_text(problems: Iterable[Problem]) -> str:
    return "\n".join(str(p) for p in problems)
