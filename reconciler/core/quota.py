"""The ElasticQuotaTree: validation, quota binding and the admission test.

A quota is named by its path (``root/algorithm/video``). ``QuotaTree`` is an
immutable index over the nodes; usage lives in ``QuotaUsage`` so that a cycle
can try an admission, undo it, and keep the tree itself untouched.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reconciler.core.problems import Problem, did_you_mean
from reconciler.core.resources import (
    MAX_JOBS,
    PODS,
    Resources,
    ResourcesView,
    add_into,
    format_quantity,
    sub_into,
)

QUOTA_LABEL = "quota.scheduling.alibabacloud.com/name"
PREEMPTIBLE_LABEL = "quota.scheduling.alibabacloud.com/preemptible"
NON_PREEMPTIBLE_MIN = "min (non-preemptible)"  # the bound a non-preemptible job meets
COUNTING = (PODS, MAX_JOBS)


@dataclass(frozen=True, slots=True)
class QuotaSpec:
    """One node as written in the manifest (before validation)."""

    name: str
    min: Resources
    max: Resources
    namespaces: tuple[str, ...] = ()
    children: tuple[QuotaSpec, ...] = ()
    line: int = 0
    # ("min.cpu", its line), ("max", ...), ..., ("namespaces.<namespace>", its line)
    lines: tuple[tuple[str, int], ...] = ()
    # what a mistake of form left unread ("min.cpu"; "min" when all of it): not
    # absent, unknown, so that no rule tells of a value the file does not say
    unread: frozenset[str] = frozenset()

    def reads(self, section: str, name: str) -> bool:
        """Is its ``section`` (min, max) entry ``name`` known (read, or not written)?"""
        return section not in self.unread and f"{section}.{name}" not in self.unread


@dataclass(frozen=True, slots=True)
class QuotaNode:
    path: str
    name: str
    min: Resources
    max: Resources
    namespaces: tuple[str, ...]
    parent: str | None
    children: tuple[str, ...]
    line: int
    lines: tuple[tuple[str, int], ...] = ()  # (see ``QuotaSpec.lines``)

    @property
    def is_leaf(self) -> bool:
        return not self.children

    def line_of(self, section: str, name: str) -> int:
        """The line of its ``section`` (min, max, namespaces) entry ``name`` (a
        resource, a namespace), else of that section, else of its name."""
        found = dict(self.lines)
        return found.get(f"{section}.{name}") or found.get(section) or self.line

    @property
    def queue_name(self) -> str:
        """The Kube Queue style queue name: the path joined with ``-``."""
        return self.path.replace("/", "-")


@dataclass(frozen=True)
class QuotaTree:
    nodes: dict[str, QuotaNode]
    root: str
    path: str = ""
    by_alias: dict[str, str] = field(default_factory=dict)
    by_namespace: dict[str, str] = field(default_factory=dict)

    def ancestry(self, path: str) -> list[QuotaNode]:
        """The nodes from ``path`` up to the root, leaf first."""
        out = []
        cur: str | None = path
        while cur is not None:
            node = self.nodes[cur]
            out.append(node)
            cur = node.parent
        return out

    def guaranteed(self) -> Resources:
        """What the quotas under the root are guaranteed in all: their mins'
        sum (the root's own min when it has none; the root's min is often a
        number with no meaning, set large so as not to limit)."""
        root = self.nodes[self.root]
        if not root.children:
            return dict(root.min)
        out: Resources = {}
        for child in root.children:
            add_into(out, self.nodes[child].min)
        return out

    def leaves(self) -> list[QuotaNode]:
        return [n for n in self.nodes.values() if n.is_leaf]

    def bind(self, namespace: str, label: str | None, namespace_written: bool = True,
             file: str = "") -> tuple[str | None, str]:
        """The leaf quota a job belongs to, or ``None`` and why not.

        The quota label names a node by its name or by its path joined with
        ``-`` (with or without ``root``); without it the namespace decides
        (``namespace_written``: the job names it; else it is ``default``, and
        the reason says the job names none; a folder of its ``file`` that a
        leaf lists is the namespace the reason offers).
        """
        if label is not None:
            path = self.by_alias.get(label)
            if path is None:
                meant = did_you_mean(label, sorted(self.by_alias))
                return None, (
                    f"label {QUOTA_LABEL}={label!r} names no quota of the ElasticQuotaTree"
                    f"{meant}; use a quota name or its path joined with '-' "
                    f"(e.g. {self._alias_example()})"
                )
        else:
            found = self.by_namespace.get(namespace)
            if found is None and not namespace_written:
                return None, (
                    f"the job names no namespace, so it is in {namespace!r}, which is listed "
                    f"on no leaf quota; set its metadata.namespace to one a leaf lists "
                    f"({self._namespace_example(file)}), add {namespace!r} to a leaf's namespaces "
                    f"in the ElasticQuotaTree or set label {QUOTA_LABEL}"
                )
            if found is None:
                return None, (
                    f"namespace {namespace!r} is listed on no leaf quota; add it to a leaf's "
                    f"namespaces in the ElasticQuotaTree or set label {QUOTA_LABEL}"
                )
            path = found
        if not self.nodes[path].is_leaf:
            return None, (
                f"quota {path} is not a leaf (it has children); bind the job to one of "
                f"{', '.join(self.nodes[path].children)}"
            )
        return path, ""

    def _namespace_example(self, path: str = "") -> str:
        """A namespace a leaf lists: the folder of ``path`` that is one (the
        template's ``jobs/<namespace>/``), else the first."""
        listed = sorted(self.by_namespace)
        folder = next((part for part in reversed(path.split("/")[:-1])
                       if part in self.by_namespace), None)
        return f"e.g. {folder or listed[0]}" if listed else "no leaf lists one yet"

    def _alias_example(self) -> str:
        leaves = sorted(n.path for n in self.leaves())
        return leaves[0].split("/")[-1] if leaves else "root"


def build_tree(spec: QuotaSpec, *, path: str) -> tuple[QuotaTree | None, list[Problem]]:
    """Validate ``spec`` (DESIGN §3 "Tree validation") and index it.

    Returns ``None`` when the tree cannot be used at all; problems that leave
    the tree usable are returned beside it. A spec read with mistakes of form
    is checked all the same, for all to be told at once: a rule that takes a
    value left unread (``QuotaSpec.unread``), or a quota with no name, is
    left out.
    """
    problems: list[Problem] = []
    nodes: dict[str, QuotaNode] = {}
    specs: dict[str, QuotaSpec] = {}  # (each node as written: its children, what was unread)
    seen_names: dict[str, int] = {}

    def visit(node: QuotaSpec, parent: str | None) -> None:
        if not node.name:
            return  # (a mistake of form, told: no path names it, or those under it)
        node_path = node.name if parent is None else f"{parent}/{node.name}"
        if node.name in seen_names:
            problems.append(Problem(path, node.line, (
                f"quota name {node.name!r} is used twice (first at line "
                f"{seen_names[node.name]}); quota names must be unique")))
        seen_names.setdefault(node.name, node.line)
        if node_path in nodes:
            return
        nodes[node_path] = QuotaNode(
            path=node_path, name=node.name, min=node.min, max=node.max,
            namespaces=node.namespaces, parent=parent,
            children=tuple(f"{node_path}/{c.name}" for c in node.children if c.name),
            line=node.line, lines=node.lines)
        specs[node_path] = node
        for child in node.children:
            visit(child, node_path)

    visit(spec, None)
    root = spec.name
    if not nodes:
        return None, problems
    by_namespace: dict[str, str] = {}
    for node in nodes.values():
        written = specs[node.path]
        if node.namespaces and written.children:
            problems.append(Problem(path, node.line, (
                f"quota {node.path} lists namespaces but has children; "
                f"namespaces belong on leaf quotas only")))
        for ns in node.namespaces:
            if ns in by_namespace:
                problems.append(Problem(path, node.line_of("namespaces", ns), (
                    f"namespace {ns!r} is listed on both {by_namespace[ns]} and {node.path}; "
                    f"list each namespace on one leaf only")))
                continue
            by_namespace[ns] = node.path
        for name, lo in sorted(node.min.items()):
            hi = node.max.get(name)
            if hi is not None and lo > hi:
                problems.append(Problem(path, node.line_of("max", name), (
                    f"quota {node.path}: min {name} {format_quantity(name, lo)} is more than "
                    f"max {format_quantity(name, hi)}; min must be <= max")))
        if written.children:
            child_min: Resources = {}
            for child in written.children:
                add_into(child_min, child.min)
            for name, value in sorted(child_min.items()):
                if not all(n.reads("min", name) for n in (written, *written.children)):
                    continue  # (a sum with a term unknown is no sum to tell)
                if value > node.min.get(name, 0):
                    problems.append(Problem(path, node.line_of("min", name), (
                        f"quota {node.path}: children's min {name} add up to "
                        f"{format_quantity(name, value)}, more than its min "
                        f"{format_quantity(name, node.min.get(name, 0))}; lower the children's "
                        f"min or raise {node.path}'s")))
    root_node, root_spec = nodes[root], specs[root]
    known = {n for n in {*root_node.min, *root_node.max}
             if root_spec.reads("min", n) and root_spec.reads("max", n)}
    differ = sorted(n for n in known if root_node.min.get(n) != root_node.max.get(n))
    if differ:
        problems.append(Problem(path, root_node.line_of("min", differ[0]), (
            "root quota: min must equal max (both are the fleet's total); "
            f"min {_fmt({n: v for n, v in root_node.min.items() if n in known})} vs "
            f"max {_fmt({n: v for n, v in root_node.max.items() if n in known})}")))
    aliases: dict[str, str] = {}
    for node in nodes.values():
        dashed = node.path.replace("/", "-")
        aliases.setdefault(dashed, node.path)
        if node.parent is not None:
            aliases.setdefault(dashed[len(root) + 1:], node.path)
    for node in nodes.values():
        aliases[node.name] = node.path  # a node's own name wins over a dashed path
    tree = QuotaTree(nodes=nodes, root=root, path=path, by_alias=aliases,
                     by_namespace=by_namespace)
    return tree, problems


EVERY_POD_ASKS = ("cpu", "memory")  # (what a min that leaves it out loses for every job)


def unguaranteed(tree: QuotaTree, leaf: str) -> list[tuple[str, str]]:
    """(resource, the quota on its path that limits it) for each of cpu and
    memory that ``leaf``'s min leaves out while it guarantees something else
    (see ``guarantees_lost``)."""
    node = tree.nodes[leaf]
    if not any(v > 0 for v in node.min.values()):
        return []  # (no guarantee to lose)
    path = tree.ancestry(leaf)
    out = []
    for name in EVERY_POD_ASKS:
        at = None if name in node.min else next(
            (n.path for n in path if name in n.min or name in n.max), None)
        if at is not None:
            out.append((name, at))
    return out


def guarantees_lost(tree: QuotaTree) -> list[Problem]:
    """A warning for each leaf whose min guarantees something but leaves out
    cpu or memory where the tree limits it on the leaf's path: missing from a
    min, a resource counts 0 there, so every job of the leaf (each asks for
    some) is above its min from the first, and reclaims nothing others
    borrow, with no word."""
    out = []
    for leaf in sorted(tree.leaves(), key=lambda n: n.path):
        for name, at in unguaranteed(tree, leaf.path):
            named = ", ".join(sorted(r for r, v in leaf.min.items() if v > 0))
            out.append(Problem(tree.path, leaf.line_of("min", name), (
                f"quota {leaf.path}: its min guarantees {named} but names no {name}, which "
                f"quota {at} limits: left out, it is 0, so each of its jobs (every pod asks "
                f"for {name}) is above its min, reclaims nothing other quotas borrow, and "
                f"its queue goes after those of quotas within their mins (its share, "
                f"used/min, is above 1); give its min the {name} it is guaranteed"),
                "warning"))
    return out


def _fmt(res: ResourcesView) -> str:
    return "{" + ", ".join(f"{k}: {format_quantity(k, v)}" for k, v in sorted(res.items())) + "}"


@dataclass(frozen=True, slots=True)
class QuotaShortfall:
    """Why a request does not fit a quota: the first quota and resource that block it."""

    quota: str
    resource: str
    used: int
    request: int
    limit: int
    bound: str  # "max" | "min" | "root min"

    def describe(self) -> str:
        r = self.resource
        return (f"quota {self.quota} {r}: {format_quantity(r, self.used)} used + "
                f"{format_quantity(r, self.request)} requested > {self.bound} "
                f"{format_quantity(r, self.limit)}")


def max_changed(a: QuotaTree, b: QuotaTree) -> list[str] | None:
    """The quotas whose max limits differ between two trees read from the same
    file, when that is all that differs (each quota limiting the same
    resources; where in the file a quota is written does not count); else
    ``None``."""
    if (a.path, a.root, a.by_alias, a.by_namespace) != (b.path, b.root, b.by_alias,
                                                         b.by_namespace) \
            or a.nodes.keys() != b.nodes.keys():
        return None
    out = []
    for path, x in a.nodes.items():
        y = b.nodes[path]
        if (x.name, x.min, x.namespaces, x.parent, x.children, x.max.keys()) != \
                (y.name, y.min, y.namespaces, y.parent, y.children, y.max.keys()):
            return None
        if x.max != y.max:
            out.append(path)
    return out


class QuotaUsage:
    """Usage per quota path: all admitted jobs, and the non-preemptible ones apart.

    Mutated by the cycle through ``charge``/``release``; everything else reads.
    """

    def __init__(self, tree: QuotaTree) -> None:
        self.tree = tree
        self.used: dict[str, Resources] = {p: {} for p in tree.nodes}
        self.np_used: dict[str, Resources] = {p: {} for p in tree.nodes}
        self._paths: dict[str, list[QuotaNode]] = {p: tree.ancestry(p) for p in tree.nodes}
        # Resources the tree manages for a quota: named in a min or max on its path.
        # A managed resource missing from a quota's min has a min of 0; one the
        # tree never names is not a quota matter at all.
        self.managed: dict[str, frozenset[str]] = {
            p: frozenset(r for n in nodes for r in (*n.min, *n.max))
            for p, nodes in self._paths.items()}
        # borrow_counted, per quota: the managed resources its min names, or not
        # a counting one, or a counting one a sibling's min names (the parent's
        # job slots or pods are then guaranteed to some of its children: the
        # others' use of them is borrowed, 0 their min)
        claimed = {p: frozenset(r for child in n.children for r in tree.nodes[child].min
                                if r in COUNTING) for p, n in tree.nodes.items()}
        self._counted: dict[str, frozenset[str]] = {
            p: frozenset(r for r in managed if r in tree.nodes[p].min or r not in COUNTING
                         or r in claimed.get(tree.nodes[p].parent or "", ()))
            for p, managed in self.managed.items()}
        # Limits in the order shortfall checks them (the tree never changes).
        self._max_order = {p: sorted(n.max) for p, n in tree.nodes.items()}
        self._min_order = {p: sorted(n.min) for p, n in tree.nodes.items()}
        self._min_limited = {p: min_limited(n) for p, n in tree.nodes.items()}
        self._version: dict[str, int] = dict.fromkeys(tree.nodes, 0)  # bumped on a change
        self._above: dict[str, tuple[int, Resources]] = {}  # path -> (version, above_min)

    def under(self, tree: QuotaTree) -> QuotaUsage:
        """This usage, moved to ``tree``: one that differs from this one's in
        the values of its max limits alone (``max_changed``), so that
        all this usage keeps but the limits (used, the versions, above_min)
        holds there as it is. This one is not to be used after."""
        moved = QuotaUsage(tree)
        moved.used, moved.np_used = self.used, self.np_used
        moved._version, moved._above = self._version, self._above
        return moved

    def path_nodes(self, leaf: str) -> list[QuotaNode]:
        return self._paths[leaf]

    def charge(self, leaf: str, request: ResourcesView, *, preemptible: bool) -> None:
        for node in self._paths[leaf]:
            self._version[node.path] += 1
            add_into(self.used[node.path], request)
            if not preemptible:
                add_into(self.np_used[node.path], request)

    def release(self, leaf: str, request: ResourcesView, *, preemptible: bool) -> None:
        for node in self._paths[leaf]:
            self._version[node.path] += 1
            sub_into(self.used[node.path], request)
            if not preemptible:
                sub_into(self.np_used[node.path], request)

    def shortfall(self, leaf: str, request: ResourcesView, *,
                  preemptible: bool) -> QuotaShortfall | None:
        """The first limit the request breaks on the path leaf -> root, or ``None``.

        Preemptible: used + request <= max for every resource in each quota's
        max, and <= min at the root. Non-preemptible: additionally the
        non-preemptible usage + request <= min for every resource the quota
        limits (in its min or its max).
        """
        for node in self._paths[leaf]:
            short = self._node_shortfall(node, request, preemptible)
            if short is not None:
                return short
        return None

    def top_shortfall(self, leaf: str, request: ResourcesView, *,
                      preemptible: bool) -> QuotaShortfall | None:
        """Like ``shortfall``, but the limit nearest the root."""
        for node in reversed(self._paths[leaf]):
            short = self._node_shortfall(node, request, preemptible)
            if short is not None:
                return short
        return None

    def _node_shortfall(self, node: QuotaNode, request: ResourcesView,
                        preemptible: bool) -> QuotaShortfall | None:
        used = self.used[node.path]
        for name in self._max_order[node.path]:
            req = request.get(name, 0)
            if req and used.get(name, 0) + req > node.max[name]:
                return QuotaShortfall(node.path, name, used.get(name, 0), req,
                                      node.max[name], "max")
        if node.parent is None:
            for name in self._min_order[node.path]:
                req = request.get(name, 0)
                if req and used.get(name, 0) + req > node.min[name]:
                    return QuotaShortfall(node.path, name, used.get(name, 0), req,
                                          node.min[name], "root min")
        if not preemptible:
            np_used = self.np_used[node.path]
            for name in self._min_limited[node.path]:
                req = request.get(name, 0)
                limit = node.min.get(name, 0)
                if req and np_used.get(name, 0) + req > limit:
                    return QuotaShortfall(node.path, name, np_used.get(name, 0), req,
                                          limit, NON_PREEMPTIBLE_MIN)
        return None

    def short_of_unguaranteed_only(self, leaf: str, request: ResourcesView) -> bool:
        """Does a preemptible request break some limit on the path leaf -> root,
        each of a resource the leaf's min does not guarantee (not
        ``borrow_counted``: job slots or pods its min does not name)?"""
        counted = self._counted[leaf]
        short = False
        for node in reversed(self._paths[leaf]):  # (most jobs that wait are short at the root)
            used = self.used[node.path]
            for limits in (node.max, node.min) if node.parent is None else (node.max,):
                for name, limit in limits.items():
                    req = request.get(name, 0)
                    if req and used.get(name, 0) + req > limit:
                        if name in counted:
                            return False
                        short = True
        return short

    def np_shortfall(self, leaf: str, request: ResourcesView) -> QuotaShortfall | None:
        """The min a non-preemptible request breaks (eviction cannot help it)."""
        for node in self._paths[leaf]:
            np_used = self.np_used[node.path]
            for name in min_limited(node):
                req = request.get(name, 0)
                limit = node.min.get(name, 0)
                if req and np_used.get(name, 0) + req > limit:
                    return QuotaShortfall(node.path, name, np_used.get(name, 0), req, limit,
                                          NON_PREEMPTIBLE_MIN)
        return None

    def never_fits(self, leaf: str, request: ResourcesView, *,
                   preemptible: bool) -> QuotaShortfall | None:
        """The limit the request breaks even with the whole quota empty."""
        for node in self._paths[leaf]:
            for name in sorted(node.max):
                req = request.get(name, 0)
                if req > node.max[name]:
                    return QuotaShortfall(node.path, name, 0, req, node.max[name], "max")
            if node.parent is None:
                for name in sorted(node.min):
                    req = request.get(name, 0)
                    if req > node.min[name]:
                        return QuotaShortfall(node.path, name, 0, req, node.min[name],
                                              "root min")
            if not preemptible:
                for name in min_limited(node):
                    req = request.get(name, 0)
                    if req > node.min.get(name, 0):
                        return QuotaShortfall(node.path, name, 0, req, node.min.get(name, 0),
                                              NON_PREEMPTIBLE_MIN)
        return None

    def borrow_counted(self, path: str, resource: str) -> bool:
        """Does usage of ``resource`` above ``path``'s min count as borrowing?

        Yes for a resource its min names; for any other resource the tree
        manages on its path (its min is then 0), except the counting resources
        (pods, kube-queue/max-jobs), which count only where min names them or
        a sibling's min does (its guarantee is then of the parent's slots, and
        the quota's own min of them 0).
        """
        return resource in self._counted[path]

    def version(self, path: str) -> int:
        """Bumped whenever the quota's usage changes."""
        return self._version[path]

    def above_min(self, path: str) -> Resources:
        """How far a quota's usage exceeds its min, per resource (borrowed); not
        to be changed (it is kept until the quota's usage changes)."""
        version = self._version[path]
        known = self._above.get(path)
        if known is not None and known[0] == version:
            return known[1]
        low, counted = self.tree.nodes[path].min, self._counted[path]
        out: Resources = {}
        for r, v in self.used[path].items():
            if r in counted and v > low.get(r, 0):
                out[r] = v - low.get(r, 0)
        self._above[path] = (version, out)
        return out


def min_limited(node: QuotaNode) -> list[str]:
    """Resources a non-preemptible job must fit within ``node``'s min.

    Every resource the quota limits (in its min or max), except the counting
    resources ``pods`` and ``kube-queue/max-jobs``, which min limits only
    when it names them.
    """
    names = set(node.min)
    names.update(r for r in node.max if r not in COUNTING)
    return sorted(names)


def max_jobs_hint(shortfall: QuotaShortfall) -> str:
    if shortfall.resource == MAX_JOBS:
        return (f"quota {shortfall.quota} runs at most "
                f"{format_quantity(MAX_JOBS, shortfall.limit)} job(s) at a time "
                f"({MAX_JOBS})")
    return shortfall.describe()
