"""The job-kind protocol and what every kind shares.

A kind knows where its pod templates are (one per pod set, with replicas),
how it is suspended, and where it names a priority class. Everything else
(requests, gang labels, dependencies) is derived from the pod templates here,
so a new kind is one small module plus one line in ``KINDS``.
"""

from __future__ import annotations

import importlib.util
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from functools import cache, lru_cache
from types import ModuleType
from typing import Any, Protocol, cast, runtime_checkable

from reconciler.core.outcomes import ObservedPhase
from reconciler.core.problems import as_written, capped, quote_it, yaml_type
from reconciler.core.resources import Resources, add_into, format_quantity, pointwise_max

Manifest = dict[str, Any]


class ManifestError(ValueError):
    """A job manifest that cannot be used; ``field`` is the dotted path at fault."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(capped(message))
        self.field = field
        # the fields of the document its kind does not have, found beside this
        # mistake (a misspelt ``imag:`` beside "image is missing"): told as warnings
        self.unknown: tuple[ManifestError, ...] = ()


class ManifestErrors(ManifestError):
    """Several mistakes in one document, each with its field."""

    def __init__(self, errors: list[ManifestError]) -> None:
        super().__init__("; ".join(str(e) for e in errors), errors[0].field)
        self.errors = errors


def each_error(exc: ManifestError) -> list[ManifestError]:
    """The mistakes ``exc`` tells: its own, or each of ``ManifestErrors``."""
    return exc.errors if isinstance(exc, ManifestErrors) else [exc]


def raise_all(found: list[ManifestError], unknown: Sequence[ManifestError] = ()) -> None:
    """Raise the mistakes ``found``, if any: one as itself, several together;
    with the ``unknown`` fields found beside them (``ManifestError.unknown``)."""
    if not found:
        return
    exc = found[0] if len(found) == 1 else ManifestErrors(found)
    exc.unknown = tuple(unknown)
    raise exc


@dataclass(frozen=True, slots=True)
class PodTemplateRef:
    """One pod set of a job: its name, replicas and the pod template (live dict)."""

    name: str
    replicas: int
    template: Manifest
    field: str  # dotted path of the template, for messages
    # what its operator adds to each pod that the template does not show (KubeRay's
    # submitter container in the head pod of a RayJob of submissionMode SidecarMode)
    added: Resources | None = None


class JobKind(Protocol):
    api_version: str
    kind: str

    def pod_templates(self, obj: Manifest) -> list[PodTemplateRef]: ...

    def set_suspended(self, obj: Manifest, suspended: bool | None) -> None:
        """Write the job as ``suspended``; with None, write nothing of it (a
        ``suspend`` the manifest has is removed: the cluster decides)."""
        ...

    def scheduling_priority_class(self, obj: Manifest) -> str | None: ...

    def observed_phase(self, obj: Manifest) -> Observed:
        """Where a job read from a member cluster is, by its ``status``."""
        ...

    def deleted_when(self, obj: Manifest) -> tuple[bool, bool]:
        """Whether the job's operator deletes it some time after it succeeds,
        and after it fails."""
        ...


@runtime_checkable
class JobWithMovedFields(Protocol):
    """A kind whose manifests may still say a field where an older version of
    its operator took it and its CRD now has none (the API server would drop
    it there): rendered, the field is where the CRD has it."""

    def move_old_fields(self, obj: Manifest) -> None: ...


@runtime_checkable
class JobWithOtherPods(Protocol):
    """A kind whose manifests hold pod templates besides its pod sets: pods
    its operator starts apart from the gang, not counted in its requests
    (a RayJob's submitter). They are sent what they use, and overlays reach
    them."""

    def other_pod_templates(self, obj: Manifest) -> list[PodTemplateRef]: ...


@runtime_checkable
class JobWithLaterPods(Protocol):
    """A kind whose operator creates some pods of the gang only once the others
    are ready (an MPIJob's launcher under ``launcherCreationPolicy:
    WaitForWorkersReady``): a gang that waited for them would never start."""

    def later_pods(self, obj: Manifest) -> int:
        """How many of its pods come only once the others are ready."""
        ...


@runtime_checkable
class JobSomeDialectsRefuse(Protocol):
    """A kind whose manifests a gang scheduler's admission rules refuse when
    they are written so (Kueue's for a RayJob)."""

    def refused_by(self, obj: Manifest) -> dict[str, str]:
        """Gang dialect -> why its clusters would refuse ``obj``."""
        ...


@runtime_checkable
class JobWithOwnRules(Protocol):
    """A kind whose manifests the API server, or its operator (an admission
    webhook, or its controller before it makes a pod), refuses beyond what
    its pod sets show: sent, such a job would never start."""

    def broken_rules(self, obj: Manifest, name: str) -> list[ManifestError]:
        """What it refuses of ``obj``, the job named ``name``."""
        ...


@runtime_checkable
class JobThatGrows(Protocol):
    """A kind whose operator may add pods to a job that runs (an autoscaling
    RayJob, an elastic PyTorchJob under metrics): fleetq reserves the pods it
    starts with, so what it grows by goes past what its quota and cluster
    were checked for."""

    def growth(self, obj: Manifest) -> list[ManifestError]:
        """How ``obj`` may grow, each a warning at the field that lets it."""
        ...


@runtime_checkable
class JobWithOldFields(Protocol):
    """A kind whose operator once read a field elsewhere (fleetq moves it to
    its place when it renders: ``move_old_fields``)."""

    def old_fields(self, obj: Manifest) -> list[ManifestError]:
        """Each old field of ``obj`` whose value does not hold on the cluster,
        a warning at it."""
        ...


def implements(kind: JobKind, protocol: type) -> bool:
    """Whether ``kind`` has the methods of ``protocol``, one of the optional
    protocols above: ``isinstance`` answers that anew from its attributes on
    each call, which a fleet's thousands of files would pay for again and again;
    a kind's class answers it once."""
    return _implements(type(kind), protocol)


@cache
def _implements(cls: type, protocol: type) -> bool:
    return issubclass(cls, protocol)


def old_fields(kind: JobKind, obj: Manifest) -> list[ManifestError]:
    """``JobWithOldFields.old_fields`` of ``obj``; none for a kind that has none."""
    return cast(JobWithOldFields, kind).old_fields(obj) \
        if implements(kind, JobWithOldFields) else []


def growth(kind: JobKind, obj: Manifest) -> list[ManifestError]:
    """``JobThatGrows.growth`` of ``obj``; none for a kind that cannot grow."""
    return cast(JobThatGrows, kind).growth(obj) if implements(kind, JobThatGrows) else []


def broken_rules(kind: JobKind, obj: Manifest, name: str) -> list[ManifestError]:
    """``JobWithOwnRules.broken_rules`` of ``obj``; none for a kind that has none."""
    return cast(JobWithOwnRules, kind).broken_rules(obj, name) \
        if implements(kind, JobWithOwnRules) else []


def refused_by(kind: JobKind, obj: Manifest) -> tuple[tuple[str, str], ...]:
    """``JobSomeDialectsRefuse.refused_by`` of ``obj``, in dialect order."""
    return tuple(sorted(cast(JobSomeDialectsRefuse, kind).refused_by(obj).items())) \
        if implements(kind, JobSomeDialectsRefuse) else ()


def later_pods(kind: JobKind, obj: Manifest) -> int:
    """``JobWithLaterPods.later_pods`` of ``obj``; 0 for a kind that has none."""
    return cast(JobWithLaterPods, kind).later_pods(obj) \
        if implements(kind, JobWithLaterPods) else 0


def other_pod_templates(kind: JobKind, obj: Manifest) -> list[PodTemplateRef]:
    """The pod templates of ``obj`` that are no pod set (``JobWithOtherPods``)."""
    return cast(JobWithOtherPods, kind).other_pod_templates(obj) \
        if implements(kind, JobWithOtherPods) else []


def every_pod_template(kind: JobKind, obj: Manifest) -> list[PodTemplateRef]:
    """The pod templates of ``obj``: its pod sets', then any other's."""
    return [*kind.pod_templates(obj), *other_pod_templates(kind, obj)]


# (phase, since when, message): a job as its member cluster shows it
Observed = tuple[ObservedPhase, str | None, str]


QUANTITY_MODULE = "kubernetes.utils.quantity"


@lru_cache(maxsize=1)
def quantity_parser() -> Callable[[object], Decimal]:
    """``kubernetes.utils.parse_quantity``, the edge's one parser.

    Importing it the usual way runs the ``kubernetes`` package's ``__init__``,
    which imports the whole API client and its config: about 0.5 s, which every
    reconcile that parses a file paid, a push of one job included. The parser's
    file needs only ``decimal``, so it is loaded alone, from where the installed
    package keeps it; by the usual import when it is already imported or that
    file is not there.
    """
    module = sys.modules.get(QUANTITY_MODULE) or _quantity_module_alone()
    if module is None:
        import kubernetes.utils.quantity

        module = kubernetes.utils.quantity
    parse: Callable[[object], Decimal] = module.parse_quantity
    return parse


@lru_cache(maxsize=1)
def kubernetes_folder() -> str | None:
    """The folder of the installed ``kubernetes`` package, found without
    running any of it (its ``__init__`` imports the whole API client)."""
    spec = importlib.util.find_spec("kubernetes")
    places = list(spec.submodule_search_locations or ()) if spec is not None else []
    return places[0] if places else None


def _quantity_module_alone() -> ModuleType | None:
    folder = kubernetes_folder()
    if folder is None:
        return None
    alone = importlib.util.spec_from_file_location(
        "reconciler.jobkinds._kubernetes_quantity", f"{folder}/utils/quantity.py")
    if alone is None or alone.loader is None:
        return None
    module = importlib.util.module_from_spec(alone)
    try:
        alone.loader.exec_module(module)
    except (OSError, ImportError):  # not there, or not a file of its own
        return None
    return module if callable(getattr(module, "parse_quantity", None)) else None


QUANTITY_FORM = ("a number with an optional suffix: m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, "
                 "Ei, or an exponent such as e3")


@lru_cache(maxsize=65536)
def _parse(text: str) -> int:
    # (the parser's own words name a part of the text, "Invalid number format: 10m"
    # for 10mm; and it takes blanks, which the API server refuses)
    try:
        if text != "".join(text.split()):
            raise ValueError
        value = quantity_parser()(text)
    except ValueError:
        raise ManifestError(f"{text!r} is not a Kubernetes quantity ({QUANTITY_FORM})") from None
    if not value.is_finite():
        raise ManifestError(f"{text!r} is not a Kubernetes quantity (not a finite number)")
    if value.adjusted() >= 24:  # (1Ei is about 1.2e18)
        raise ManifestError(f"{text!r} is too large for a quantity of a resource")
    if value < 0:
        raise ManifestError(f"{text!r} is negative: Kubernetes takes no negative quantity "
                            f"of a resource")
    milli = (Decimal(value) * 1000).to_integral_value(rounding=ROUND_CEILING)
    return int(milli)


def parse_quantity_milli(value: object, field: str = "") -> int:
    """A Kubernetes quantity (``10m``, ``2Gi``, ``1e3``, ``4``) in milli-units."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ManifestError(f"{field or 'quantity'}: {as_written(value)} is not a Kubernetes "
                            f"quantity", field)
    if isinstance(value, float) and not math.isfinite(value):  # (in YAML's words: .nan, .inf)
        written = ".nan" if math.isnan(value) else "-.inf" if value < 0 else ".inf"
        raise ManifestError(f"{field or 'quantity'}: {written} is not a Kubernetes quantity "
                            f"(not a finite number)", field)
    try:
        return _parse(str(value))
    except ManifestError as exc:
        raise ManifestError(f"{field}: {exc}" if field else str(exc), field) from None


def parse_resources(raw: object, field: str) -> Resources:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ManifestError(f"{field} must be a mapping of resource names to quantities", field)
    out: Resources = {}
    found: list[ManifestError] = []  # (each bad quantity told, not the first alone)
    for k, v in raw.items():
        try:
            out[sys.intern(str(k))] = parse_quantity_milli(v, f"{field}.{k}")
        except ManifestError as exc:
            found.append(exc)
    raise_all(found)
    return out


def is_extended(name: str) -> bool:
    """Is resource ``name`` an extended resource (``nvidia.com/gpu``: a domain
    other than Kubernetes' own), which the API server takes in whole units only?"""
    domain, slash, _ = name.partition("/")
    return bool(slash) and not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io")
                                or domain == "requests")


def _container_requests(container: Mapping[str, Any], field: str) -> Resources:
    res = container.get("resources") or {}
    if not isinstance(res, Mapping):
        raise ManifestError(f"{field}.resources must be a mapping", field)
    found: list[ManifestError] = []
    requests = _gathered(found, parse_resources, res.get("requests"),
                         f"{field}.resources.requests")
    told = len(found)
    limits = _gathered(found, parse_resources, res.get("limits"), f"{field}.resources.limits")
    uncompared = set() if len(found) == told else set(requests)  # (limits unread: none is)
    for part, values in (("requests", requests), ("limits", limits)):
        for name, value in values.items():
            if "/" not in name and name not in CONTAINER_RESOURCES \
                    and not name.startswith("hugepages-"):
                at = f"{field}.resources.{part}.{name}"
                found.append(ManifestError(
                    f"{at}: {name!r} is not a resource a container may ask for: the API "
                    f"server takes cpu, memory, ephemeral-storage, hugepages-<size>, or an "
                    f"extended resource named with its domain, such as nvidia.com/gpu", at))
                uncompared.add(name)
            elif value % 1000 and is_extended(name):
                at = f"{field}.resources.{part}.{name}"
                found.append(ManifestError(
                    f"{at}: {format_quantity(name, value)} is not a whole number: Kubernetes "
                    f"takes no fraction of an extended resource such as {name}", at))
                uncompared.add(name)
    for name, value in requests.items():  # (the API server's ValidateResourceRequirements)
        if name in uncompared:
            continue  # (told: a fraction, or limits that do not read)
        at = f"{field}.resources.requests.{name}"
        asked = format_quantity(name, value)
        limit = limits.get(name)
        if not overcommitted(name):
            if limit is None:
                found.append(ManifestError(
                    f"{at}: {asked} is requested with no limit: the API server takes {name}, "
                    f"which no node overcommits, only with a limit equal to its request; set "
                    f"resources.limits.{name} to {asked}", at))
            elif limit != value:
                found.append(ManifestError(
                    f"{at}: {asked} differs from its limit, {format_quantity(name, limit)}: "
                    f"the API server takes a request of {name}, which no node overcommits, "
                    f"equal to its limit only", at))
        elif limit is not None and value > limit:
            found.append(ManifestError(
                f"{at}: {asked} is more than its limit, {format_quantity(name, limit)}: the "
                f"API server takes no request above its limit", at))
    raise_all(found)
    for name, value in limits.items():
        requests.setdefault(name, value)  # limits without requests request the limits
    return requests


def container_requests(resources: object, field: str) -> Resources:
    """What a container of ``resources`` (a ResourceRequirements, at ``field``)
    requests, checked as the API server checks it: for a container an operator
    adds to a pod from resources written elsewhere in the job."""
    return _container_requests({"resources": resources}, field.removesuffix(".resources"))


# the resources a container may ask for by a name without a domain (Kubernetes'
# IsStandardContainerResourceName), but for hugepages-<size>
CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})


def overcommitted(name: str) -> bool:
    """Whether nodes may overcommit resource ``name`` (Kubernetes'
    ``IsOvercommitAllowed``): its own resources (cpu, memory, ...) but for
    hugepages, not an extended one such as ``nvidia.com/gpu``."""
    return not is_extended(name) and not name.startswith("hugepages-")


# Kubernetes' rules for the names of a pod's containers (a DNS-1123 label) and of
# the objects a Service is named after (a DNS-1035 label: a letter first)
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS_1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
DNS_LABEL_MOST = 63
# (and a DNS-1123 subdomain: labels joined by '.', 253 characters at most)
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
DNS_SUBDOMAIN_MOST = 253
DNS_LABEL_RULE = ("at most 63 lower-case letters, digits and '-', starting and ending with a "
                  "letter or digit")
DNS_1035_RULE = ("a lower-case letter first, then lower-case letters, digits and '-', a letter "
                 "or digit last; no '.'")


def _name_once(name: object, at: str, what: str, named: dict[str, str],
               found: list[ManifestError]) -> None:
    """What the API server refuses of the name of a pod's ``what`` (a
    container, a volume) at ``at``: none, one that is no DNS label, or one of
    ``named`` (name -> the one that has it, where it is added), each told in
    ``found``."""
    if name is None or name == "":
        found.append(ManifestError(
            f"{at}.name is missing: the API server refuses a {what} with no name; give it "
            f"one ({DNS_LABEL_RULE})", f"{at}.name"))
    elif not isinstance(name, str) or len(name) > DNS_LABEL_MOST \
            or not DNS_LABEL.fullmatch(name):
        found.append(ManifestError(f"{at}.name {as_written(name)} is not a valid {what} name: "
                                   f"{DNS_LABEL_RULE}", f"{at}.name"))
    elif name in named:
        found.append(ManifestError(
            f"{at}.name {name!r} is the name of {named[name]} too: the API server refuses a "
            f"pod whose {what}s share a name", f"{at}.name"))
    else:
        named[name] = at.rsplit(".", 1)[-1]


def _volume_names(volumes: object, at: str, found: list[ManifestError]) -> set[str] | None:
    """The names of a pod's ``volumes``; ``None`` when what the API server
    refuses of them (``_name_once``) is told in ``found``."""
    if volumes is None:
        return set()
    told = len(found)
    named: dict[str, str] = {}
    if not isinstance(volumes, list):
        found.append(ManifestError(f"{at} must be a list", at))
    else:
        for i, volume in enumerate(volumes):
            _name_once(volume.get("name") if isinstance(volume, Mapping) else None,
                       f"{at}[{i}]", "volume", named, found)
    return set(named) if len(found) == told else None


def _check_mounts(c: Mapping[str, Any], at: str, volumes: set[str] | None,
                  found: list[ManifestError]) -> None:
    """A container's volume mounts the API server refuses: of a volume the pod
    does not have (``volumes``; ``None``: its volumes are told wrong), with no
    mount path, or with another mount's."""
    mounts = c.get("volumeMounts")
    if mounts is None:
        return
    if not isinstance(mounts, list):
        found.append(ManifestError(f"{at}.volumeMounts must be a list", f"{at}.volumeMounts"))
        return
    paths: dict[str, int] = {}
    for j, mount in enumerate(mounts):
        where = f"{at}.volumeMounts[{j}]"
        if not isinstance(mount, Mapping):
            found.append(ManifestError(f"{where} must be a mapping", where))
            continue
        name, path = mount.get("name"), mount.get("mountPath")
        if volumes is not None and (not isinstance(name, str) or name not in volumes):
            found.append(ManifestError(
                f"{where}.name {as_written(name)} names no volume of the pod (its "
                f"spec.volumes): the API server refuses the pod; add the volume, or name one "
                f"it has", f"{where}.name" if "name" in mount else where))
        if not isinstance(path, str) or not path:
            found.append(ManifestError(f"{where}.mountPath is missing: the API server refuses "
                                       f"a volume mount with no path", f"{where}.mountPath"))
        elif path in paths:
            found.append(ManifestError(
                f"{where}.mountPath {path!r} is that of volumeMounts[{paths[path]}] too: the "
                f"API server refuses two mounts at one path of a container",
                f"{where}.mountPath"))
        else:
            paths[path] = j


def _check_container(c: Mapping[str, Any], at: str, named: dict[str, str],
                     found: list[ManifestError]) -> None:
    """What the API server refuses of a pod's container, but its resources
    and mounts: a container with no name, a name that is no DNS label or
    another container's (``named``: name -> the container that has it), no
    image."""
    _name_once(c.get("name"), at, "container", named, found)
    image = c.get("image")
    if image is None or image == "":
        found.append(ManifestError(
            f"{at}.image is missing: the API server refuses a container with no image",
            f"{at}.image"))
    elif not isinstance(image, str):
        found.append(ManifestError(f"{at}.image must be a string, not {as_written(image)}"
                                   f"{quote_it(image)}", f"{at}.image"))


def pod_requests(template: Manifest, field: str) -> Resources:
    """Per pod: the containers' sum (plus restartable init sidecars), raised to
    the largest init container, plus the pod overhead."""
    spec = template.get("spec")
    if not isinstance(spec, Mapping):
        raise ManifestError(f"{field}.spec is missing", field)
    containers = spec.get("containers")
    if containers is not None and not isinstance(containers, list):
        raise ManifestError(f"{field}.spec.containers must be a list of containers, not "
                            f"{yaml_type(containers)}: write each as an item (- name: ...)",
                            f"{field}.spec.containers")
    if not containers:
        raise ManifestError(f"{field}.spec.containers must list at least one container",
                            f"{field}.spec.containers")
    total: Resources = {}
    found: list[ManifestError] = []  # (each container's mistakes told)
    named: dict[str, str] = {}  # (a name once in the pod: its init containers' too)
    volumes = _volume_names(spec.get("volumes"), f"{field}.spec.volumes", found)
    for i, c in enumerate(containers):
        if not isinstance(c, Mapping):
            raise ManifestError(f"{field}.spec.containers[{i}] must be a mapping", field)
        _check_container(c, f"{field}.spec.containers[{i}]", named, found)
        _check_mounts(c, f"{field}.spec.containers[{i}]", volumes, found)
        add_into(total, _gathered(found, _container_requests, c,
                                  f"{field}.spec.containers[{i}]"))
    init_peak: Resources = {}
    sidecars: Resources = {}
    inits = spec.get("initContainers") or []
    if not isinstance(inits, list):
        raise ManifestError(f"{field}.spec.initContainers must be a list",
                            f"{field}.spec.initContainers")
    for i, c in enumerate(inits):
        if not isinstance(c, Mapping):
            raise ManifestError(f"{field}.spec.initContainers[{i}] must be a mapping", field)
        _check_container(c, f"{field}.spec.initContainers[{i}]", named, found)
        _check_mounts(c, f"{field}.spec.initContainers[{i}]", volumes, found)
        req = _gathered(found, _container_requests, c, f"{field}.spec.initContainers[{i}]")
        if c.get("restartPolicy") == "Always":
            add_into(sidecars, req)
            continue
        running = dict(sidecars)
        add_into(running, req)
        init_peak = pointwise_max(init_peak, running)
    add_into(total, sidecars)
    total = pointwise_max(total, init_peak)
    add_into(total, _gathered(found, parse_resources, spec.get("overhead"),
                              f"{field}.spec.overhead"))
    raise_all(found)
    return {k: v for k, v in total.items() if v}


def pod_set_requests(ref: PodTemplateRef) -> Resources:
    """Per pod of the set: its template's requests (``pod_requests``) and what
    its operator adds to each pod (``PodTemplateRef.added``)."""
    per_pod = pod_requests(ref.template, ref.field)
    if ref.added:
        add_into(per_pod, ref.added)
    return per_pod


def _gathered(found: list[ManifestError], read: Callable[[Any, str], Resources], raw: Any,
              field: str) -> Resources:
    """``read(raw, field)``, or nothing, its mistakes added to ``found``."""
    try:
        return read(raw, field)
    except ManifestError as exc:
        found.extend(each_error(exc))
        return {}


INT32_MAX = 2**31 - 1  # (replicas, parallelism, ...: int32 in the API server)


def replicas_of(raw: object, field: str, default: int = 1) -> int:
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw <= INT32_MAX:
        raise ManifestError(f"{field} must be a whole number from 0 to {INT32_MAX}, "
                            f"not {as_written(raw)}", field)
    return raw


def mapping_at(obj: Manifest, *path: str) -> Manifest | None:
    cur: Any = obj
    for part in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(part)
    return cur if isinstance(cur, dict) else None


MULTIKUEUE = "kueue.x-k8s.io/multikueue"
# the managedBy of a job the training operator (kubeflow.org/v1) runs
TRAINING_OPERATOR = "kubeflow.org/training-operator"


# what the API server takes as a Job's spec.managedBy: a DNS subdomain, '/' and a path of these
_PATH = re.compile(r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+")
MANAGED_BY_MOST = 63  # (characters of a Job's spec.managedBy)


def _domain_prefixed(value: object) -> bool:
    if not isinstance(value, str) or len(value) > MANAGED_BY_MOST:
        return False
    prefix, slash, path = value.partition("/")
    return bool(slash and DNS_SUBDOMAIN.fullmatch(prefix) and _PATH.fullmatch(path))


def managed_elsewhere(obj: Manifest, at: str, own: str, who: str,
                      takes: tuple[str, ...] | None, *, refuser: str = "the API server",
                      empty_is_unset: bool = True) -> list[ManifestError]:
    """A job whose ``managedBy`` (the field at the dotted path ``at``) names a
    controller other than its own (``own``, the one ``who`` names): on its
    member cluster that controller leaves it alone. MultiKueue's runs on a
    manager cluster only (fleetq sends the job to its member cluster in its
    place), so such a job would never start there; a value other than those
    ``refuser`` ``takes`` it refuses (``None``: any domain-prefixed path, as
    the API server takes for a Job). An empty value is no value where
    ``empty_is_unset`` (the CRD says so), and refused elsewhere."""
    *parents, field = at.split(".")
    spec = mapping_at(obj, *parents) or {}
    value = spec.get(field)
    if value is None or value == own or (value == "" and empty_is_unset):
        return []
    if value == MULTIKUEUE:
        return [ManifestError(
            f"{at} is {MULTIKUEUE!r}: on a member cluster {who} leaves a job that MultiKueue "
            f"manages alone, and MultiKueue runs on a manager cluster only (fleetq sends "
            f"the job to its member cluster in its place), so the job would never start "
            f"there; remove {at}", at)]
    if takes is None and not _domain_prefixed(value):
        return [ManifestError(
            f"{at} is {as_written(value)}: {refuser} takes a domain-prefixed path of at most "
            f"{MANAGED_BY_MOST} characters only (such as example.com/controller); remove {at} "
            f"to have {who} run the job", at)]
    if takes is not None and value not in takes:
        allowed = " or ".join(repr(v) for v in takes)
        return [ManifestError(
            f"{at} is {as_written(value)}: {refuser} takes {allowed} only; remove {at} "
            f"to have {who} run the job", at)]
    return [ManifestError(
        f"{at} is {as_written(value)}: {who} runs a job whose {field} is unset or {own!r} "
        f"only, and fleetq cannot tell that a controller of that name runs on the member "
        f"cluster, so the job may never start there; remove {at}", at)]


def at_least(spec: Manifest, at: str, fields: tuple[str, ...], least: int, who: str
             ) -> list[ManifestError]:
    """Each whole-number field of ``spec`` (at the dotted path ``at``) that is
    below ``least``: ``who`` refuses the job. (One of another type is the
    field check's to tell.)"""
    found = []
    for field in fields:
        value = spec.get(field)
        if isinstance(value, int) and not isinstance(value, bool) and value < least:
            where = f"{at}.{field}"
            found.append(ManifestError(
                f"{where} is {value}: {who} refuses a job whose {field} is below {least}",
                where))
    return found


def require_mapping(obj: Manifest, *path: str) -> Manifest:
    found = mapping_at(obj, *path)
    if found is None:
        raise ManifestError(f"{'.'.join(path)} is missing or not a mapping", ".".join(path))
    return found


def replica_specs(obj: Manifest, field: str, order: tuple[str, ...],
                  defaults: Mapping[str, int] | None = None) -> list[PodTemplateRef]:
    """Kubeflow-style ``<x>ReplicaSpecs``: roles in ``order`` first, then by name.
    A role's replicas default to ``defaults[role]``, else to 1."""
    specs = require_mapping(obj, "spec", field)
    roles = sorted(specs, key=lambda r: (order.index(r) if r in order else len(order), r))
    out = []
    for role in roles:
        spec = specs[role]
        where = f"spec.{field}.{role}"
        if not isinstance(spec, dict):
            raise ManifestError(f"{where} must be a mapping", where)
        template = spec.get("template")
        if not isinstance(template, dict):
            raise ManifestError(f"{where}.template is missing", where)
        replicas = replicas_of(spec.get("replicas"), f"{where}.replicas",
                               (defaults or {}).get(role, 1))
        out.append(PodTemplateRef(role.lower(), replicas, template, f"{where}.template"))
    return out


def set_run_policy_suspend(obj: Manifest, suspended: bool | None) -> None:
    """``spec.runPolicy.suspend`` as ``JobKind.set_suspended`` writes it."""
    spec = obj.get("spec")
    if spec is None:
        if not suspended:
            return
        spec = obj["spec"] = {}
    _set_suspend(spec, "runPolicy", suspended)


def set_spec_suspend(obj: Manifest, suspended: bool | None) -> None:
    """``spec.suspend`` as ``JobKind.set_suspended`` writes it."""
    _set_suspend(obj, "spec", suspended)


def _set_suspend(parent: Manifest, key: str, suspended: bool | None) -> None:
    """``parent[key].suspend`` as ``JobKind.set_suspended`` writes it. A mapping
    that held its ``suspend`` alone goes with it: it is not sent as ``{}``,
    which the source did not have (one the source has empty stays)."""
    where = parent.get(key)
    if where is None:
        if not suspended:
            return
        where = parent[key] = {}
    if suspended is None:
        if "suspend" in where:
            del where["suspend"]
            if not where:
                del parent[key]
    elif suspended or "suspend" in where:  # (false is the default: not added)
        where["suspend"] = suspended


def run_policy_priority_class(obj: Manifest) -> str | None:
    sp = mapping_at(obj, "spec", "runPolicy", "schedulingPolicy")
    value = sp.get("priorityClass") if sp else None
    return str(value) if value else None


MIN_AVAILABLE_AT = "spec.runPolicy.schedulingPolicy.minAvailable"
VOLCANO_QUEUE_LABEL = "volcano.sh/queue-name"  # (KubeRay's, on the RayJob)
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"  # (Volcano's own)


def gang_minimum(obj: Manifest, pods: int, later: int = 0) -> int:
    """The pods of the job's gang that must start together: the Kubeflow
    run policy's ``schedulingPolicy.minAvailable`` (what the operators give a
    PodGroup's minMember), else all ``pods`` but the ``later`` ones its
    operator creates once the others are ready (``later_pods``). Raises
    ``ManifestError`` for one that is no whole number from 1 to that."""
    most = pods - later
    sp = mapping_at(obj, "spec", "runPolicy", "schedulingPolicy")
    value = sp.get("minAvailable") if sp else None
    if value is None:
        return most
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= max(most, 1):
        whose = (f"the job's pods but its launcher, which its operator creates once the "
                 f"workers are ready ({LAUNCHER_LATER}): a gang that waits for it never "
                 f"starts" if later else "the job's pods")
        raise ManifestError(f"{MIN_AVAILABLE_AT} must be a whole number from 1 to {most} "
                            f"({whose}), not {as_written(value)}", MIN_AVAILABLE_AT)
    return value


LAUNCHER_LATER = "launcherCreationPolicy: WaitForWorkersReady"


def volcano_queue(obj: Manifest) -> str | None:
    """The Volcano queue the job names, for its PodGroup: the Kubeflow run
    policy's ``schedulingPolicy.queue``, else the ``volcano.sh/queue-name``
    label (KubeRay's) or the ``scheduling.volcano.sh/queue-name`` annotation."""
    sp = mapping_at(obj, "spec", "runPolicy", "schedulingPolicy")
    meta = mapping_at(obj, "metadata") or {}
    for where, key in ((sp, "queue"), (meta.get("labels"), VOLCANO_QUEUE_LABEL),
                       (meta.get("annotations"), VOLCANO_QUEUE_ANNOTATION)):
        if isinstance(where, Mapping) and where.get(key):
            return str(where[key])
    return None


def conditions_phase(obj: Manifest, *, succeeded: str = "Succeeded", failed: str = "Failed",
                     running: str = "Running") -> Observed:
    """A job's phase by its ``status.conditions`` (Kubeflow's and batch/v1's):
    the last true one of ``succeeded`` and ``failed`` ends it; else a true
    ``running`` one runs it; else it is pending."""
    status = obj.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    true = [c for c in conditions or () if isinstance(c, Mapping)
            and str(c.get("status")) == "True"] if isinstance(conditions, list) else []
    ended = [c for c in true if c.get("type") in (succeeded, failed)]
    if ended:
        last = max(ended, key=lambda c: str(c.get("lastTransitionTime") or ""))
        return (ObservedPhase.SUCCEEDED if last.get("type") == succeeded
                else ObservedPhase.FAILED, _time(last), str(last.get("message") or ""))
    for c in true:  # (restarting pods: it ran, and runs on)
        if c.get("type") in (running, "Restarting"):
            return ObservedPhase.RUNNING, _time(c), ""
    return ObservedPhase.PENDING, None, ""


def _time(condition: Mapping[str, Any]) -> str | None:
    value = condition.get("lastTransitionTime") or condition.get("lastUpdateTime")
    return str(value) if value else None


def run_policy_ttl(obj: Manifest) -> tuple[bool, bool]:
    """Kubeflow's ``spec.runPolicy.ttlSecondsAfterFinished`` is set: the job
    is deleted after it succeeds, and after it fails."""
    policy = mapping_at(obj, "spec", "runPolicy")
    ttl = policy is not None and policy.get("ttlSecondsAfterFinished") is not None
    return ttl, ttl
