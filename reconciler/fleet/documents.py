"""YAML documents with their line numbers, parsed with libyaml.

Each document is composed to a node tree (libyaml, in C) and built from it
by a constructor for the plain shapes of manifests, which gives PyYAML's safe
values (anything else is left to PyYAML's own); the node tree is kept beside
the value while the document is being read, so that any field can be traced
back to its ``path:line``.

Four things YAML allows and PyYAML builds are refused at their line, as the
Kubernetes API refuses them or reads them otherwise: a key twice in one
mapping (PyYAML lets the last win, unseen), an alias to a node that holds it
(a cycle, which nothing after could walk), aliases that expand a document
beyond ``MAX_EXPANDED_NODES`` nodes or ``MAX_EXPANDED_TEXT`` characters (a
few lines of them make a manifest of gigabytes), and the tags of values JSON
has no form of (``!!set``, ``!!binary``, ``!!omap``, ``!!pairs``,
``!!timestamp``), which PyYAML builds as Python's own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import yaml

from reconciler.core.problems import Problem, yaml_type

try:
    _Base: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Base = yaml.SafeLoader

_TAGS: dict[str, str] = {}  # plain scalar -> its implicit tag
_NOTHING: dict[Any, Any] = {}  # (never written)
_MAX_TAGS = 1 << 16


class _Loader(_Base):  # type: ignore[misc]
    """The safe loader, with no path resolvers (a set of its own, empty, not
    PyYAML's shared one), and so the tag of a node without one is a function
    of its kind and, for a plain scalar, its text alone: it is remembered for
    each plain scalar, as manifests repeat the same keys and values again and
    again.

    The composer calls ``descend_resolver`` and ``ascend_resolver`` at every
    node, to follow path resolvers; with none they do nothing. Here they are
    builtins that take the same arguments and do nothing (a dict's ``get``,
    ``tuple``), not Python functions that return at once: a fifth less work in
    composing and building a manifest, together with ``resolve`` answering
    mappings, sequences and quoted scalars at once (measured in instructions
    on 3,000 job manifests).
    """

    yaml_path_resolvers: ClassVar[dict[Any, Any]] = {}  # none, ever (see the docstring)
    # (current_node, current_index) and (): nothing to follow, nothing to leave
    descend_resolver: ClassVar[Callable[[Any, Any], Any]] = _NOTHING.get
    ascend_resolver: ClassVar[Callable[[], Any]] = tuple

    def resolve(self, kind: Any, value: str, implicit: tuple[bool, bool]) -> Any:
        if kind is yaml.ScalarNode:
            if not implicit[0]:
                return self.DEFAULT_SCALAR_TAG  # quoted, or in a block: a string
            tag = _TAGS.get(value)
            if tag is None:
                if len(_TAGS) >= _MAX_TAGS:
                    _TAGS.clear()
                tag = super().resolve(kind, value, implicit)
                if tag in _AS_KUBERNETES_READS or (tag in _SEXAGESIMAL and ":" in value):
                    tag = self.DEFAULT_SCALAR_TAG
                _TAGS[value] = tag
            return tag
        return self.DEFAULT_SEQUENCE_TAG if kind is yaml.SequenceNode \
            else self.DEFAULT_MAPPING_TAG


# Plain scalars YAML 1.1 reads as other than strings, which Kubernetes' readers
# (sigs.k8s.io/yaml, go-yaml, for kubectl, Argo CD and Flux) read as the strings they
# are: a timestamp (2024-06-01, 2024-06-01T08:00:00Z), and a number in base 60
# (12:30 is not 750). Read as PyYAML does, they went out changed.
_AS_KUBERNETES_READS = frozenset({"tag:yaml.org,2002:timestamp"})
_SEXAGESIMAL = frozenset({"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"})

_FIELD_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
# Scalars built by PyYAML's own safe constructors, which keep no state.
_SCALARS = {tag: yaml.SafeLoader.yaml_constructors[tag] for tag in (
    "tag:yaml.org,2002:null", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float")}
# Tags of values a Kubernetes object has no form of: PyYAML builds a set (in no
# fixed order), bytes, tuples or a datetime, which would go out as Python's text.
_NOT_JSON = {"tag:yaml.org,2002:set": "a set", "tag:yaml.org,2002:binary": "bytes",
             "tag:yaml.org,2002:omap": "an ordered mapping",
             "tag:yaml.org,2002:pairs": "a list of pairs",
             "tag:yaml.org,2002:timestamp": "a timestamp"}
_WRITE_INSTEAD = {"a set": "a list", "bytes": "the base64 text as a plain string",
                  "an ordered mapping": "a mapping", "a list of pairs": "a mapping",
                  "a timestamp": "the time as a quoted string"}


class _Unusual(Exception):
    """A node the fast constructor leaves to PyYAML's (tags, merge keys)."""


class _Refused(Exception):
    """A document fleetq does not read, though YAML allows it: ``message``
    says why, at the line of ``node``."""

    def __init__(self, node: yaml.Node, message: str) -> None:
        super().__init__(message)
        self.node = node


MAX_EXPANDED_NODES = 400_000  # the nodes a document's aliases may expand it to
# ... and the characters of its scalars (the API server takes objects of 3 MiB at most)
MAX_EXPANDED_TEXT = 16 << 20
_SHARED = -1  # memo key (no id() is negative): how many aliases were met


def _construct(loader: Any, node: yaml.Node, memo: dict[int, Any]) -> Any:
    """The value of ``node``, exactly as PyYAML's safe constructor builds it,
    for the plain shapes of Kubernetes manifests (strings, scalars, mappings
    and sequences). An aliased node gives the same object, as in PyYAML:
    the document is copied apart (``_unshared``) once ``_check_nodes`` has
    bounded what its aliases expand to (an alias bomb is refused, not built).
    Anything else raises ``_Unusual``: the document is then built by PyYAML.
    """
    cls = type(node)
    tag = node.tag
    if cls is yaml.ScalarNode:
        if tag == _STR:
            return node.value
        build = _SCALARS.get(tag)
        if build is None:
            raise _Unusual
        return build(loader, node)
    ident = id(node)
    if ident in memo:
        got = memo[ident]
        if got is None:
            raise _Refused(node, _CYCLE)
        memo[_SHARED] = memo.get(_SHARED, 0) + 1
        return got
    memo[ident] = None
    out: Any
    if cls is yaml.MappingNode and tag == _MAP:
        out = {}
        for key_node, value_node in node.value:
            if type(key_node) is not yaml.ScalarNode:
                raise _Unusual
            key_tag = key_node.tag
            if key_tag == _STR:
                key = key_node.value
            else:
                build = _SCALARS.get(key_tag)
                if build is None:
                    raise _Unusual  # merge keys and the like
                key = build(loader, key_node)
            out[key] = _construct(loader, value_node, memo)
        if len(out) != len(node.value):
            _refuse_duplicate_keys(node)
    elif cls is yaml.SequenceNode and tag == _SEQ:
        out = [_construct(loader, item, memo) for item in node.value]
    else:
        raise _Unusual
    memo[ident] = out
    return out


_CYCLE = ("an alias refers to a node that holds it (a cycle); a Kubernetes object "
          "cannot hold itself: write the value out")


def _unshared(value: Any) -> Any:
    """``value`` with each of its mappings and sequences its own object: as
    the document reads with its aliases written out. (Shared, a change made
    where one alias is used, such as the labels fleetq adds to a job's
    metadata, would show where the other is, a pod's nodeSelector.) Its size
    is bounded by ``_check_nodes``."""
    if isinstance(value, dict):
        return {k: _unshared(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unshared(v) for v in value]
    return value


def _refuse_duplicate_keys(node: yaml.Node) -> None:
    seen: dict[object, int] = {}
    for key_node, _ in node.value:
        if isinstance(key_node, yaml.ScalarNode):
            key = (key_node.tag, key_node.value)
            if key in seen:
                raise _Refused(key_node, (
                    f"key {key_node.value!r} appears twice in one mapping (first at line "
                    f"{seen[key]}); Kubernetes refuses duplicate keys: keep one"))
            seen[key] = key_node.start_mark.line + 1


def _check_nodes(root: yaml.Node) -> None:
    """What ``_construct`` refuses (a cycle, duplicate keys), for a document it
    leaves to PyYAML's constructor, the tags of values JSON has no form of, and
    aliases that expand the document beyond ``MAX_EXPANDED_NODES`` nodes or
    ``MAX_EXPANDED_TEXT`` characters (shared nodes counted at each use), for
    any document that has aliases."""
    sizes: dict[int, tuple[int, int]] = {}  # node -> (nodes, characters) it expands to
    open_: set[int] = set()

    def size(node: yaml.Node) -> tuple[int, int]:
        ident = id(node)
        if ident in sizes:
            return sizes[ident]
        if ident in open_:
            raise _Refused(node, _CYCLE)
        what = _NOT_JSON.get(node.tag)
        if what is not None:
            short = node.tag.replace("tag:yaml.org,2002:", "!!")
            raise _Refused(node, (
                f"the tag {short} makes {what}, which a Kubernetes object has no form of "
                f"(its YAML is read as JSON); write {_WRITE_INSTEAD[what]} instead"))
        if isinstance(node, yaml.ScalarNode):
            return 1, len(node.value)
        open_.add(ident)
        nodes, text = 1, 0
        if isinstance(node, yaml.MappingNode):
            _refuse_duplicate_keys(node)
            parts = [part for pair in node.value for part in pair]
        else:
            parts = node.value
        for part in parts:
            n, t = size(part)
            nodes += n
            text += t
        open_.discard(ident)
        sizes[ident] = (nodes, text)
        return nodes, text

    nodes, text = size(root)
    if nodes > MAX_EXPANDED_NODES:
        raise _Refused(root, (
            f"its aliases expand it to {nodes:,} nodes (more than {MAX_EXPANDED_NODES:,}: "
            f"an alias bomb, or a document far larger than any manifest); write it out "
            f"with fewer aliases"))
    if text > MAX_EXPANDED_TEXT:
        raise _Refused(root, (
            f"its aliases expand it to {text / (1 << 20):,.0f} MiB of text (more than "
            f"{MAX_EXPANDED_TEXT >> 20} MiB: an alias bomb, or a document far larger than "
            f"the API server takes); write it out with fewer aliases"))


@dataclass
class Document:
    """One YAML document of a file: its value, where it starts, and its nodes.

    An item of a ``v1 List`` is read as a document of its own (``expand_lists``):
    ``index`` is then the List's, and ``items`` its place in the List (1 is the
    first item; more than one number for a List in a List)."""

    path: str
    index: int  # its place among the file's documents (0 is the first)
    line: int
    value: Any
    node: yaml.Node | None = None
    items: tuple[int, ...] = ()

    @property
    def place(self) -> str:
        """``document 2``, or ``item 3 of the List of document 2``."""
        text = f"document {self.index + 1}"
        for number in self.items:
            text = f"item {number} of the List of {text}"
        return text

    @property
    def seat(self) -> int | str:
        """Where in its file it is, for what takes its identity from that (a
        job named by ``generateName``): its index, or for an item of a List,
        ``index/item...`` (so that a List's items leave the documents after it
        where they were)."""
        if not self.items:
            return self.index
        return "/".join(map(str, (self.index, *self.items)))

    def line_of(self, field: str, *keys: str) -> int:
        """The line of a dotted field (``spec.root.children[0].max``), then of
        each of ``keys`` in it, taken whole (a label's key has dots:
        ``line_of("metadata.labels", "kueue.x-k8s.io/priority-class")``), or
        of the nearest enclosing one that exists."""
        node = self.node
        line = self.line
        if node is None or not (field or keys):
            return line
        parts = [*_FIELD_PART.findall(field), *((key, "") for key in keys)]
        for name, index in parts:
            if isinstance(node, yaml.MappingNode) and name:
                for k, v in node.value:
                    if isinstance(k, yaml.ScalarNode) and k.value == name:
                        node = v
                        line = k.start_mark.line + 1
                        break
                else:
                    return line
            elif isinstance(node, yaml.SequenceNode) and index:
                i = int(index)
                if i >= len(node.value):
                    return line
                node = node.value[i]
                line = node.start_mark.line + 1
            else:
                return line
        return line


def parse_documents(path: str, data: bytes | str) -> tuple[list[Document], Problem | None]:
    """All documents of one file, and the YAML error that stopped reading, if any.

    Documents before an error are returned; empty documents are skipped.
    """
    docs: list[Document] = []
    loader = _Loader(data)
    index = 0
    # (an alias needs an anchor: without one, no document can be larger than its text)
    anchored = (_ANCHOR.search(data) if isinstance(data, bytes)
                else _ANCHOR_TEXT.search(data)) is not None
    try:
        while loader.check_node():
            node = loader.get_node()
            memo: dict[int, Any] = {}
            try:
                value = _construct(loader, node, memo)
                if anchored:  # (the aliases of strings are not seen by _construct)
                    _check_nodes(node)
                if memo.get(_SHARED):
                    value = _unshared(value)
            except _Unusual:
                _check_nodes(node)
                value = _unshared(loader.construct_document(node))
            if value is not None:
                docs.append(Document(path, index, node.start_mark.line + 1, value, node))
            index += 1
    except yaml.reader.ReaderError as exc:  # (not UTF-8, or a character YAML refuses)
        return docs, _unreadable(path, data, exc)
    except yaml.YAMLError as exc:
        began = getattr(exc, "context_mark", None)
        mark = getattr(exc, "problem_mark", None) or began
        line = mark.line + 1 if mark is not None else 0
        lines = (data.decode("utf-8", "replace") if isinstance(data, bytes) else data
                 ).splitlines()
        found = lines[mark.line][mark.column:mark.column + 1] \
            if mark is not None and mark.line < len(lines) else ""
        if mark is not None and found != "\t" and _nothing_after(lines, mark.line, mark.column):
            # (found at the end of the file: told where what is left open began, at
            # the latest on the last line that holds anything)
            written = max((i for i, text in enumerate(lines, start=1)
                           if text.strip() and not text.lstrip().startswith("#")),
                          default=len(lines))
            line = min(began.line + 1 if began is not None else written, written)
        problem = getattr(exc, "problem", None) or str(exc)
        context = getattr(exc, "context", None)
        if context and began is not None and began.line + 1 < line:
            # (where what is left open began: an unclosed [ or {, most often)
            context = f"{context} begun at line {began.line + 1},"
        text = f"{context} {problem}" if context else str(problem)
        fix = "fix the syntax"
        if found and "found character that" in text:  # (libyaml's: it names none)
            text = text.replace("found character that", f"found character {found!r} that")
        if mark is not None and found == "\\" and "unknown escape character" in text:
            escape = lines[mark.line][mark.column:mark.column + 2]
            text = text.replace("unknown escape character", f"unknown escape character {escape}")
            fix = ("in a double-quoted string a backslash starts an escape (\\n, \\t, \\\\, "
                   "\\\", ...): write \\\\ for a backslash, or quote the string with ' instead")
        if found == "\t" or "a tab character" in text:
            fix = "YAML indents with spaces, not tabs: replace the tab"
        if _documents_after(lines[line:]):
            fix += " (the documents after it in this file are not read until then)"
        return docs, Problem(path, line, f"not valid YAML: {text}; {fix}")
    except _Refused as exc:
        return docs, Problem(path, exc.node.start_mark.line + 1, f"not usable YAML: {exc}")
    except RecursionError:
        return docs, Problem(path, _deep_line(data, index), "not usable YAML: nested too "
                             "deeply; flatten it")
    except UnicodeDecodeError as exc:
        return docs, Problem(path, 1, f"not UTF-8 text ({exc.reason}); save the file as UTF-8")
    finally:
        loader.dispose()
    return docs, None


def _documents_after(lines: list[str]) -> bool:
    """Whether ``lines`` start a document that holds anything (a ``---`` and
    more than comments after it: a trailing ``---`` starts none)."""
    first = next((i for i, text in enumerate(lines) if text.startswith("---")), None)
    if first is None:
        return False
    rest = [lines[first][3:], *lines[first + 1:]]
    return any(text.strip() and not text.lstrip().startswith(("#", "---")) for text in rest)


# What may be an anchor (&name; YAML lets one follow a flow key's ':' with no space):
# a plain scalar's "a && b" is none, its "x&y" is taken for one (a check the more).
_ANCHOR = re.compile(rb"&[^\s,\[\]{}&]")
_ANCHOR_TEXT = re.compile(_ANCHOR.pattern.decode())


def _nothing_after(lines: list[str], line: int, column: int) -> bool:
    """Whether the file holds nothing but blanks and comments from ``line``,
    ``column`` (0-based) on."""
    rest = [lines[line][column:], *lines[line + 1:]] if line < len(lines) else []
    return all(not text.strip() or text.lstrip().startswith("#") for text in rest)


def _deep_line(data: bytes | str, index: int) -> int:
    """The line of the deepest node of document ``index`` of ``data`` (the one
    too deep to build), else 0 (its nodes read again, as many as
    ``MAX_EXPANDED_NODES`` at most)."""
    loader = _Loader(data)
    try:
        for _ in range(index):  # (the documents before it)
            if not loader.check_node():
                return 0
            loader.get_node()
        if not loader.check_node():
            return 0
        root = loader.get_node()
        deepest, line, seen = -1, 0, 0
        stack = [(root, 0)]
        while stack and seen < MAX_EXPANDED_NODES:
            node, depth = stack.pop()
            seen += 1
            if depth > deepest:
                deepest, line = depth, int(node.start_mark.line) + 1
            if isinstance(node, yaml.MappingNode):
                stack.extend((v, depth + 1) for _, v in node.value)
            elif isinstance(node, yaml.SequenceNode):
                stack.extend((v, depth + 1) for v in node.value)
        return line
    except yaml.YAMLError:
        return 0
    finally:
        loader.dispose()


def load_yaml(text: str) -> Any:
    """The one document of ``text`` (``None``: none), its plain scalars read
    as ``parse_documents`` reads them (see ``_AS_KUBERNETES_READS``); a YAML
    error, or what ``parse_documents`` refuses, raises ``yaml.YAMLError``."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        try:
            _check_nodes(node)
        except _Refused as exc:
            raise yaml.MarkedYAMLError(problem=str(exc), problem_mark=exc.node.start_mark
                                       ) from None
        return _unshared(loader.construct_document(node))
    finally:
        loader.dispose()


def expand_lists(docs: list[Document], problems: list[Problem]) -> list[Document]:
    """The documents of a file with each ``apiVersion: v1, kind: List`` (what
    ``kubectl get -o yaml`` writes) replaced by its items, each a document of
    its own at its line (``Document.items``), as ``kubectl apply`` and Argo CD
    take them; a List whose ``items`` is not a list becomes a problem."""
    if not any(_is_list(doc.value) for doc in docs):
        return docs
    out: list[Document] = []
    for doc in docs:
        if not _is_list(doc.value):
            out.append(doc)
            continue
        items = doc.value.get("items")
        if items is None:
            continue  # (an empty List, as kubectl writes none)
        if not isinstance(items, list):
            problems.append(Problem(doc.path, doc.line_of("items"), (
                f"the items of this List are {yaml_type(items)}, not a list; give each "
                f"object as an item (- apiVersion: ...), or as a document of its own")))
            continue
        nodes = _items_node(doc.node)
        for i, item in enumerate(items):
            node = nodes[i] if nodes is not None and i < len(nodes) else None
            line = node.start_mark.line + 1 if node is not None else doc.line
            # (a List in a List: its items too)
            out.extend(expand_lists([Document(doc.path, doc.index, line, item, node,
                                              (*doc.items, i + 1))], problems))
    return out


def _is_list(value: Any) -> bool:
    return isinstance(value, dict) and value.get("kind") == "List" and \
        value.get("apiVersion") == "v1"


def _items_node(node: yaml.Node | None) -> list[yaml.Node] | None:
    """The nodes of a List's items, in order; ``None`` if not a sequence."""
    if not isinstance(node, yaml.MappingNode):
        return None
    for key, value in node.value:
        if isinstance(key, yaml.ScalarNode) and key.value == "items":
            return value.value if isinstance(value, yaml.SequenceNode) else None
    return None


def _unreadable(path: str, data: bytes | str, exc: yaml.reader.ReaderError) -> Problem:
    """What libyaml's reader refused: the first byte that is no part of a UTF-8
    character (its own error names the byte after a bad lead byte), or a
    character YAML does not take."""
    raw = data.encode() if isinstance(data, str) else data
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as bad:
        return Problem(path, raw[:bad.start].count(b"\n") + 1, (
            f"not UTF-8 text: byte 0x{raw[bad.start]:02x} (byte {bad.start + 1} of the file) "
            f"is no part of a UTF-8 character; save the file as UTF-8"))
    line = text[:exc.position].count("\n") + 1
    char = exc.character
    what = f"U+{char:04X}" if isinstance(char, int) else repr(char)
    return Problem(path, line, f"a character YAML does not take: {what} ({exc.reason}); "
                               f"remove it")


# a path, as a link's blob holds (one word: a link to a file of no folder, or dangling)
_LINK = re.compile(r"[^\s:#'\"\[\]{}]+")


_LFS_POINTER = "version https://git-lfs.github.com/spec/v1 "  # (its lines, read as one)


def iter_mapping_docs(docs: list[Document], problems: list[Problem],
                      broken: dict[str, str] | None = None) -> Iterator[Document]:
    """Documents that are mappings with apiVersion and kind; others become
    problems, and their files ``broken`` (path -> why): a document that lost
    its apiVersion or kind line held something (a cluster, a job) that should
    not go with it."""
    for doc in docs:
        value = doc.value
        if isinstance(value, str) and len(docs) == 1 and _LINK.fullmatch(value):
            problem = Problem(doc.path, doc.line, (
                f"it holds only the path {value!r}: is it a symbolic link? fleetq reads what "
                f"git stores for a link, the path it points to, not the file there: copy the "
                f"file here, or exclude the link in fleet.yaml"))
        elif isinstance(value, str) and len(docs) == 1 and value.startswith(_LFS_POINTER):
            problem = Problem(doc.path, doc.line, (
                "it is a Git LFS pointer: fleetq reads the commit, which holds the pointer, "
                "not the file LFS keeps; keep manifests out of LFS (.gitattributes), or "
                "exclude the file in fleet.yaml"))
        elif not isinstance(value, dict):
            # (a file that holds objects too is a manifest: left out, they would go)
            manifest = any(isinstance(d.value, dict) and d.value.get("kind") for d in docs)
            problem = Problem(doc.path, doc.line, (
                f"{doc.place} is {yaml_type(value)}, not a Kubernetes "
                f"object; every document needs apiVersion, kind and metadata" + (
                    "; take it out of the file" if manifest else
                    f", or, if the file is not a Kubernetes manifest (a kustomize patch, a "
                    f"values file), exclude it in fleet.yaml (spec.exclude: "
                    f"[{_exclude_pattern(doc.path)!r}])")))
        elif not isinstance(value.get("apiVersion"), str) or \
                not isinstance(value.get("kind"), str):
            problem = Problem(doc.path, doc.line, (
                f"{doc.place if doc.items else 'document'} has no apiVersion or kind; "
                "add both "
                "(e.g. apiVersion: kubeflow.org/v1, kind: PyTorchJob), or, if the file is "
                f"not a Kubernetes manifest, exclude it in fleet.yaml (spec.exclude: "
                f"[{_exclude_pattern(doc.path)!r}])"))
        else:
            yield doc
            continue
        problems.append(problem)
        if broken is not None:
            broken.setdefault(doc.path, str(problem))


def _exclude_pattern(path: str) -> str:
    """The ``exclude`` pattern to suggest for a file that is not a manifest: its
    top folder's when that is hidden (``.github/**``: a tool's settings), else
    the file's own path."""
    top, sep, _ = path.partition("/")
    return f"{top}/**" if sep and top.startswith(".") else path
