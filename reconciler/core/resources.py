"""Resource vectors in exact integer milli-units.

A quantity such as ``10m``, ``2Gi`` or ``1e3`` is parsed at the edge (``fleet``
uses ``kubernetes.utils.parse_quantity``) and enters the core as an ``int`` of
milli-units: ``10m`` -> 10, ``2`` -> 2000, ``1Gi`` -> 1073741824000. Integer
arithmetic keeps sums exact and fast. ``format_quantity`` turns a value back
into the shortest canonical Kubernetes spelling.

A ``Resources`` is a plain ``dict[str, int]``; functions here never mutate
their arguments unless their name says so (``add_into``/``sub_into``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

Resources = dict[str, int]
ResourcesView = Mapping[str, int]

MILLI = 1000
PODS = "pods"
MAX_JOBS = "kube-queue/max-jobs"

_BINARY_SUFFIXES = (("Ei", 1 << 60), ("Pi", 1 << 50), ("Ti", 1 << 40), ("Gi", 1 << 30),
                    ("Mi", 1 << 20), ("Ki", 1 << 10))
_BINARY_RESOURCES = ("memory", "ephemeral-storage", "storage")


def is_binary_resource(name: str) -> bool:
    """Resources counted in bytes, spelled with binary suffixes (``Gi``)."""
    return name in _BINARY_RESOURCES or name.startswith("hugepages-")


def format_quantity(name: str, milli: int) -> str:
    """The canonical spelling of ``milli`` milli-units of resource ``name``.

    Whole values print as integers, byte resources with the largest exact
    binary suffix (``4Gi``); fractions print in milli-units (``4010m``).
    """
    if milli % MILLI:
        return f"{milli}m"
    whole = milli // MILLI
    if whole and is_binary_resource(name):
        for suffix, size in _BINARY_SUFFIXES:
            if whole % size == 0:
                return f"{whole // size}{suffix}"
    return str(whole)


def format_resources(res: ResourcesView) -> dict[str, str]:
    """Resources as a name-sorted mapping of canonical quantity strings."""
    return {name: format_quantity(name, res[name]) for name in sorted(res)}


def add(a: ResourcesView, b: ResourcesView) -> Resources:
    out = dict(a)
    for name, value in b.items():
        out[name] = out.get(name, 0) + value
    return out


def add_into(target: Resources, b: ResourcesView, times: int = 1) -> None:
    for name, value in b.items():
        target[name] = target.get(name, 0) + value * times


def sub_into(target: Resources, b: ResourcesView, times: int = 1) -> None:
    for name, value in b.items():
        target[name] = target.get(name, 0) - value * times


def sub(a: ResourcesView, b: ResourcesView) -> Resources:
    out = dict(a)
    sub_into(out, b)
    return out


def total(items: Iterable[ResourcesView]) -> Resources:
    out: Resources = {}
    for item in items:
        add_into(out, item)
    return out


def pointwise_max(a: ResourcesView, b: ResourcesView) -> Resources:
    out = dict(a)
    for name, value in b.items():
        if value > out.get(name, 0):
            out[name] = value
    return out


def first_excess(request: ResourcesView, free: ResourcesView) -> str | None:
    """The first resource of ``request`` (in its order) that ``free`` does not cover.

    A resource absent from ``free`` counts as zero. Requests are built in a
    fixed order, so the answer is deterministic.
    """
    for name, value in request.items():
        if value > 0 and value > free.get(name, 0):
            return name
    return None


def copies_that_fit(per_pod: ResourcesView, free: ResourcesView, limit: int) -> int:
    """How many pods of size ``per_pod`` fit into ``free``, at most ``limit``."""
    n = limit
    for name, value in per_pod.items():
        if value <= 0:
            continue
        have = free.get(name, 0)
        if have < value:
            return 0
        k = have // value
        if k < n:
            n = k
    return n
