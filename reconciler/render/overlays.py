"""The fleet's own Jinja2 templates: per-cluster overlays and the commit message.

Templates live in the fleet repo's ``templates/`` folder and run sandboxed.

``templates/overlays/<name>.yaml.j2`` renders, for each (cluster, job), to a
YAML mapping (or nothing, to skip) with any of:

- ``patch``: a JSON merge patch (RFC 7386) applied to the job manifest;
- ``podTemplatePatch``: a merge patch applied to every pod template;
- ``imageRewrite``: a list of ``{from: prefix, to: prefix}`` applied to the
  image of every container and init container.

An overlay may not change a pod set's replicas or requests (the job's quota
and fit were decided on them), nor give a field a type or value its API
refuses: where it would, it is told and not applied to that job. A field it
gives a job that the job's API has not is warned of at the overlay, once per
field.

Each rendering has a budget of work (``sandbox``); a template beyond it, or
failing in any other way, is told at its file and skipped.

The context is ``cluster`` (name, labels, gangDialect), ``job`` (apiVersion,
kind, namespace, name, labels, quota, priority, podSets) and ``manifest``.

``templates/commit-message.j2`` replaces the state commit message; its
context is ``source`` (sha, short), ``counts``, ``changes`` (every one),
``change_limit`` (how many of them the default message lists; it counts the
rest) and ``decisions``. The ``Fleet-Source-Commit`` trailer is always added
by fleetq.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import re
import traceback
from collections.abc import Mapping
from importlib import resources
from typing import TYPE_CHECKING, Any

import yaml

from reconciler.core.model import Decision, MemberCluster
from reconciler.core.problems import Problem
from reconciler.fleet.documents import load_yaml
from reconciler.jobkinds import kind_for
from reconciler.jobkinds.base import (
    JobKind,
    Manifest,
    ManifestError,
    broken_rules,
    each_error,
    every_pod_template,
    pod_set_requests,
)
from reconciler.jobkinds.schema import check_fields

if TYPE_CHECKING:
    import jinja2

    from reconciler.render.sandbox import Sandbox

REFUSED_NAMED = 3  # the jobs an overlay was not applied to, named in its message (the rest counted)
_SKIPPED = "the overlay is skipped until it is fixed"
_OWN_MESSAGE = "fleetq's own commit message is used until it is fixed"
OVERLAY_DIR = "overlays/"
COMMIT_TEMPLATE = "commit-message.j2"
TEMPLATES_PREFIX = "templates/"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: mappings merge, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, Mapping) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def _environment(sources: Mapping[str, str]) -> Sandbox:
    """A sandbox for ``sources``, each rendering with a budget (``sandbox``).
    (Jinja2 is imported here, when a template is first rendered: a command
    that renders none starts without it.)"""
    from reconciler.render.sandbox import Sandbox

    return Sandbox(sources)


def _render(template: jinja2.Template, context: Mapping[str, Any], *,
            overlay: bool = False) -> str:
    from reconciler.render import sandbox

    return sandbox.render(template, context,
                          steps=sandbox.OVERLAY_STEPS if overlay else sandbox.STEPS)


def _failed(exc: Exception) -> str:
    """What the rendering of a template that raised ``exc`` is told as: an
    error of Python's too (a division by zero, a recursion without end, a
    float too large) is the template's, not fleetq's."""
    import jinja2

    if isinstance(exc, jinja2.TemplateNotFound):  # (its text is the name alone)
        return (f"template error: no template {exc.name!r} to include or import (a "
                f"template names another by its path under templates/)")
    if isinstance(exc, jinja2.TemplateError):
        return f"template error: {exc}"
    return f"template error: {type(exc).__name__}{f': {exc}' if str(exc) else ''}"


class Overlays:
    """The overlays and commit template of one fleet commit."""

    def __init__(self, templates: Mapping[str, str]) -> None:
        self.sources = dict(templates)
        self._env: Sandbox | None = None  # made when first used
        self.names = sorted(n for n in self.sources if n.startswith(OVERLAY_DIR)
                            and n.endswith((".j2", ".jinja", ".jinja2")))
        self._compiled: dict[str, jinja2.Template | None] = {}
        self._reported: set[str] = set()
        # what a file rendered with these overlays was made of, besides its
        # decision ("" with none): a file rendered under overlays is never
        # taken for one rendered without them
        self.made_of = hashlib.sha1("\0".join(
            f"{n}\0{self.sources[n]}" for n in self.names).encode()).hexdigest() \
            if self.names else ""

    def _template(self, name: str, problems: list[Problem],
                  skipped: str = _SKIPPED) -> jinja2.Template | None:
        if name not in self._compiled:
            import jinja2

            if self._env is None:
                self._env = _environment(self.sources)
            try:
                self._compiled[name] = self._env.get_template(name)
            except jinja2.TemplateSyntaxError as exc:
                self._report(problems, name, exc.lineno or 0, f"template syntax: {exc.message}",
                             skipped)
                self._compiled[name] = None
            except Exception as exc:  # (any: a nesting too deep for Python, see _failed)
                self._report(problems, name, _line_of(exc, name), _failed(exc), skipped)
                self._compiled[name] = None
        return self._compiled[name]

    def _report(self, problems: list[Problem], name: str, line: int, message: str,
                skipped: str = _SKIPPED) -> None:
        if name in self._reported:
            return
        self._reported.add(name)
        problems.append(Problem(TEMPLATES_PREFIX + name, line, f"{message}; {skipped}"))

    def apply(self, obj: Manifest, decision: Decision, cluster: MemberCluster,
              problems: list[Problem], refused: dict[str, list[tuple[str, str]]],
              unknown: dict[str, list[tuple[str, str, str]]] | None = None) -> Manifest:
        """``obj`` with each overlay applied, but for those that would change
        what the job was decided on, or make it one its cluster would refuse:
        those are added to ``refused`` (overlay -> the jobs it was not applied
        to, each "Kind namespace/name on cluster" and what the cluster would
        refuse, "" when nothing), to be told once each (``refusals``).
        The fields an overlay gives a job that its API has not (as a job file
        is checked: ``check_fields``) are added to ``unknown`` (overlay -> each
        field's name, the job, what is told of it), to be told once per
        overlay and field (``unknown_fields``): the job runs without them."""
        if not self.names:
            return obj
        context = {
            "cluster": {"name": cluster.name, "labels": cluster.label_map,
                        "gangDialect": cluster.gang_dialect,
                        "resourceReservation": cluster.resource_reservation},
            "job": {"apiVersion": decision.api_version, "kind": decision.key.kind,
                    "namespace": decision.key.namespace, "name": decision.key.name,
                    "labels": dict((obj.get("metadata") or {}).get("labels") or {}),
                    "quota": decision.quota, "priority": decision.priority,
                    "podSets": [{"name": p.name, "replicas": p.replicas}
                                for p in decision.pod_sets]},
            "manifest": obj,
        }
        kind = kind_for(decision.api_version, decision.key.kind)
        decided, _ = _decided(obj, kind, decision.key.name)
        job = f"{decision.key.kind} {decision.key.namespace}/{decision.key.name} on {cluster.name}"
        told: set[str] | None = None  # what is told of obj's own fields (made when needed)
        for name in self.names:
            template = self._template(name, problems)
            if template is None:
                continue
            try:
                text = _render(template, context, overlay=True)
            except Exception as exc:  # (any: see _failed)
                self._report(problems, name, _line_of(exc, name), _failed(exc))
                continue
            try:
                spec = load_yaml(text) if text.strip() else None
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                self._report(problems, name, mark.line + 1 if mark else 0,
                             f"renders to invalid YAML ({exc})")
                continue
            if spec is None:
                continue
            if not isinstance(spec, Mapping) or not set(spec) <= {
                    "patch", "podTemplatePatch", "imageRewrite"}:
                self._report(problems, name, 1, (
                    "an overlay must render to a mapping of patch, podTemplatePatch "
                    "and/or imageRewrite"))
                continue
            wrong = _misshapen(spec)
            if wrong is not None:
                self._report(problems, name, 1, wrong)
                continue
            patched = _apply_one(copy.deepcopy(obj), spec, kind)
            now, broken = _decided(patched, kind, decision.key.name)
            checked = check_fields(patched, decision.api_version, decision.key.kind)
            if (checked.errors or checked.unknown) and told is None:
                told = _told_of(obj, decision)
            if broken is None:  # (a field of a wrong type or value: refused as a rule is)
                broken = next((str(e) for e in checked.errors if str(e) not in (told or ())),
                              None)
            if broken is not None or now != decided:
                refused.setdefault(name, []).append((job, broken or ""))
                continue
            for e in checked.unknown:
                if str(e) not in (told or ()) and unknown is not None:
                    unknown.setdefault(name, []).append((e.field.rsplit(".", 1)[-1], job,
                                                         str(e)))
            obj, told = patched, None
        return obj

    @staticmethod
    def refusals(refused: Mapping[str, list[tuple[str, str]]]) -> list[Problem]:
        """One problem per overlay of ``refused`` (see ``apply``) and what it
        breaks, naming the first few of its jobs in order and counting the
        others: the same whatever order the clusters were rendered in."""
        problems = []
        for name in sorted(refused):
            by_why: dict[str, set[str]] = {}
            for job, why in refused[name]:
                by_why.setdefault(why, set()).add(job)
            for why in sorted(by_why):
                jobs = sorted(by_why[why])
                which = _named(jobs)
                whose, manifest = ("its", "the job's manifest") if len(jobs) == 1 else \
                    ("their", "the jobs' manifests")
                problems.append(Problem(TEMPLATES_PREFIX + name, 0, (
                    f"it makes {which} a job {whose} cluster would refuse ({why}); fix the "
                    f"overlay; it is not applied to such a job") if why else (
                    f"it changes the replicas or resource requests of {which}, which {whose} "
                    f"quota and placement were decided on; set them in {manifest}; it is not "
                    f"applied to such a job")))
        return problems

    def unknown_fields(self, unknown: Mapping[str, list[tuple[str, str, str]]]
                       ) -> list[Problem]:
        """One warning per overlay of ``unknown`` (see ``apply``) and field name,
        at the overlay's line that names it: what is told of it in the first
        of its jobs in order, naming the first few of them and counting the
        others (the same whatever order the clusters were rendered in)."""
        problems = []
        for name in sorted(unknown):
            by_field: dict[str, dict[str, str]] = {}
            for field, job, said in unknown[name]:
                jobs = by_field.setdefault(field, {})
                jobs[job] = min(said, jobs.get(job, said))
            for field in sorted(by_field):
                jobs = by_field[field]
                first = min(jobs)
                whose = "its" if len(jobs) == 1 else "their"
                problems.append(Problem(
                    TEMPLATES_PREFIX + name, _line_naming(self.sources.get(name, ""), field),
                    f"it gives {_named(sorted(jobs))} a field {whose} API has not: "
                    f"{jobs[first]}", severity="warning"))
        return problems

    def commit_message(self, context: Mapping[str, Any], problems: list[Problem]) -> str:
        if COMMIT_TEMPLATE in self.sources:
            template = self._template(COMMIT_TEMPLATE, problems, _OWN_MESSAGE)
            if template is not None:
                try:
                    return _render(template, context)
                except Exception as exc:  # (any: see _failed)
                    self._report(problems, COMMIT_TEMPLATE, _line_of(exc, COMMIT_TEMPLATE),
                                 _failed(exc), _OWN_MESSAGE)
        return _render(default_commit_template(), context)


def _named(jobs: list[str]) -> str:
    """The first few of ``jobs``, the others counted."""
    named, rest = jobs[:REFUSED_NAMED], len(jobs) - REFUSED_NAMED
    if rest > 0:
        return f"{', '.join(named)} and {rest} more"
    return " and ".join(filter(None, (", ".join(named[:-1]), named[-1])))


def _told_of(obj: Manifest, decision: Decision) -> set[str]:
    """What checking the fields of job ``obj`` tells (as its file is told it)."""
    checked = check_fields(obj, decision.api_version, decision.key.kind)
    return {str(e) for e in (*checked.errors, *checked.unknown)}


def _line_naming(source: str, field: str) -> int:
    """The first line of a template's ``source`` where ``field`` is written as
    a key (``field:``, quoted or not); 0 where none is."""
    key = re.compile(rf"(?:^|[\s{{,]|-\s)[\"']?{re.escape(field)}[\"']?\s*:")
    return next((n for n, line in enumerate(source.splitlines(), 1) if key.search(line)), 0)


def _line_of(exc: Exception, name: str) -> int:
    """The line of template ``name`` an error of its rendering was raised at:
    the error's own, else that of the template's last frame in its traceback
    (Jinja2 puts the template's lines there, under its file name, or
    "<template>" for one loaded from memory); 0 when neither says."""
    line = getattr(exc, "lineno", None)
    if isinstance(line, int) and line > 0:
        return line
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if f.filename in (name, "<template>")]  # (a template of no file: "<template>")
    return frames[-1].lineno or 0 if frames else 0


@functools.cache
def default_commit_template() -> jinja2.Template:
    """fleetq's own commit message template, compiled once per process (a watch
    renders it each round)."""
    text = resources.files("reconciler.render").joinpath(
        "templates/commit-message.j2").read_text(encoding="utf-8")
    return _environment({}).from_string(text)


def _decided(obj: Manifest, kind: JobKind | None, name: str) -> tuple[object, str | None]:
    """What a job's admission and fit were decided on, as its manifest says:
    each pod set's name, replicas and requests per pod (``None``: it says
    none); and the first thing its cluster would refuse of it, what
    ``build_job`` checks of its pods and of its kind (``None``: nothing)."""
    if kind is None:
        return None, None
    try:
        decided = [(ref.name, ref.replicas, pod_set_requests(ref))
                   for ref in kind.pod_templates(obj)]
    except ManifestError as exc:
        return None, str(each_error(exc)[0])
    except (TypeError, AttributeError, KeyError):
        return None, None
    refused = broken_rules(kind, obj, name)
    return decided, str(refused[0]) if refused else None


def _misshapen(spec: Mapping[str, Any]) -> str | None:
    """What is wrong with the shape of an overlay's rendered ``spec``, if anything."""
    for field in ("patch", "podTemplatePatch"):
        value = spec.get(field)
        if value is not None and not isinstance(value, Mapping):
            return (f"{field} must be a mapping (a merge patch of the "
                    f"{'job manifest' if field == 'patch' else 'pod template'}), not "
                    f"{type(value).__name__} {value!r:.60}")
    rules = spec.get("imageRewrite")
    if rules is not None and not (isinstance(rules, list) and all(
            isinstance(r, Mapping) and set(r) <= {"from", "to"}
            and isinstance(r.get("from"), str) and isinstance(r.get("to", ""), str)
            for r in rules)):
        return (f"imageRewrite must be a list of mappings {{from: prefix, to: prefix}} (two "
                f"strings), not {rules!r:.60}")
    return None


def _apply_one(obj: Manifest, spec: Mapping[str, Any], kind: JobKind | None) -> Manifest:
    if spec.get("patch"):
        obj = merge_patch(obj, spec["patch"])
    if kind is None:
        return obj
    if spec.get("podTemplatePatch"):
        for ref in every_pod_template(kind, obj):
            patched = merge_patch(ref.template, spec["podTemplatePatch"])
            ref.template.clear()
            ref.template.update(patched)
    for rule in spec.get("imageRewrite") or ():
        old, new = str(rule.get("from", "")), str(rule.get("to", ""))
        if not old:
            continue
        for ref in every_pod_template(kind, obj):
            pod = ref.template.get("spec") or {}
            for group in ("containers", "initContainers"):
                for c in pod.get(group) or ():
                    image = c.get("image")
                    if isinstance(image, str) and image.startswith(old):
                        c["image"] = new + image[len(old):]
    return obj
