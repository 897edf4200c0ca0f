"""Which policy places a job, and which member clusters it may go to.

Policy choice follows Karmada: a PropagationPolicy selects jobs of its own
namespace only, a ClusterPropagationPolicy jobs of any namespace. Among the
policies that select a job the preference key is (DESIGN §3 "Policies")::

    (match level: name > label selector > kind only,
     spec.priority (higher first),
     PropagationPolicy before ClusterPropagationPolicy,
     namespace/name)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from reconciler.core.model import (
    ClusterAffinity,
    FleetSettings,
    Job,
    MemberCluster,
    Policy,
    ResourceSelector,
    untolerated,
)

# A name a Kueue LocalQueue can have (a DNS-1123 subdomain): that of a job's quota,
# which names its LocalQueue on a kueue cluster (label kueue.x-k8s.io/queue-name).
LOCAL_QUEUE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
LOCAL_QUEUE_RULE = "a DNS-1123 subdomain: lowercase letters, digits, '-' and '.'"

MATCH_NAME = 3
MATCH_LABELS = 2
MATCH_KIND = 1


def match_level(selector: ResourceSelector, job: Job) -> int:
    """How specifically ``selector`` names ``job`` (0: it does not select it)."""
    if selector.api_version != job.api_version or selector.kind != job.key.kind:
        return 0
    if selector.namespace is not None and selector.namespace != job.key.namespace:
        return 0
    if selector.name is not None:
        return MATCH_NAME if selector.name == job.key.name else 0
    if selector.label_selector is not None:
        return MATCH_LABELS if selector.label_selector.matches(job.label_map) else 0
    return MATCH_KIND


def policy_match(policy: Policy, job: Job) -> int:
    if policy.namespace is not None and policy.namespace != job.key.namespace:
        return 0
    return max((match_level(s, job) for s in policy.selectors), default=0)


def find_policy(policies: Iterable[Policy], ref: tuple[str | None, str]) -> Policy | None:
    """The policy ``ref`` (namespace, name) names, as ``fleet.yaml``'s
    ``defaultPolicy`` does: with no namespace, the first of that name."""
    for p in policies:
        if (p.namespace, p.name) == ref or (ref[0] is None and p.name == ref[1]):
            return p
    return None


def default_policy(policies: Iterable[Policy], settings: FleetSettings) -> Policy | None:
    """The policy ``fleet.yaml``'s ``defaultPolicy`` names, if any: that of
    the jobs no policy selects."""
    ref = settings.default_policy
    return find_policy(policies, ref) if ref is not None else None


def select_policy(policies: Iterable[Policy], job: Job) -> Policy | None:
    best: tuple[int, int, int, str, str] | None = None
    chosen: Policy | None = None
    for policy in policies:
        level = policy_match(policy, job)
        if not level:
            continue
        key = (-level, -policy.priority, 0 if policy.namespace is not None else 1,
               policy.namespace or "", policy.name)
        if best is None or key < best:
            best, chosen = key, policy
    return chosen


def affinity_selects(affinity: ClusterAffinity, cluster: MemberCluster) -> bool:
    if affinity.cluster_names and cluster.name not in affinity.cluster_names:
        return False
    if affinity.label_selector is not None and not affinity.label_selector.matches(
            cluster.label_map):
        return False
    return cluster.name not in affinity.exclude


def candidate_groups(policy: Policy, kind_ref: str, clusters: Sequence[MemberCluster]
                     ) -> tuple[list[list[str]], list[str]]:
    """Candidate cluster names in preference groups, and why others were left out.

    ``clusterAffinity`` gives one group; ``clusterAffinities`` one group per
    term, tried in order. Clusters whose taints the policy does not tolerate,
    or whose capabilities lack the job's kind, are left out.
    """
    notes: list[str] = []
    usable: list[MemberCluster] = []
    terms = policy.affinities or ((policy.affinity,) if policy.affinity else (None,))
    for cluster in sorted(clusters, key=lambda c: c.name):
        if not any(t is None or affinity_selects(t, cluster) for t in terms):
            continue  # (not wanted: why else it could not run there is beside the point)
        if cluster.capabilities is not None and kind_ref not in cluster.capabilities:
            notes.append(f"{cluster.name} does not run {kind_ref}")
            continue
        taint = untolerated(cluster.taints, policy.cluster_tolerations)
        if taint is not None:
            notes.append(f"{cluster.name} has taint {taint.key}={taint.value}:{taint.effect} "
                         f"that {policy.ref} does not tolerate")
            continue
        usable.append(cluster)
    groups: list[list[str]] = []
    for term in terms:
        if term is None:
            groups.append([c.name for c in usable])
        else:
            groups.append([c.name for c in usable if affinity_selects(term, c)])
    if not usable:
        names = {c.name for c in clusters}
        unknown = sorted({n for t in terms if t is not None for n in t.cluster_names} - names)
        if unknown:
            notes.append(f"its clusterAffinity names {', '.join(unknown)}, which is no "
                         f"MemberCluster of the fleet")
    return groups, notes


def ruled_out(policy: Policy, kind_ref: str, clusters: Sequence[MemberCluster]
              ) -> dict[str, str]:
    """Why ``policy`` gives a job of kind ``kind_ref`` none of ``clusters`` that
    a change to the policy alone would make a candidate (``candidate_groups``
    leaves it out: its cluster affinity does not select it, or it has a taint
    the policy does not tolerate), with that change: by cluster name. (A
    cluster that does not run the kind is not told: no policy changes that.)"""
    terms = policy.affinities or ((policy.affinity,) if policy.affinity else ())
    out = {}
    for cluster in sorted(clusters, key=lambda c: c.name):
        if cluster.capabilities is not None and kind_ref not in cluster.capabilities:
            continue
        why = []
        if terms and not any(affinity_selects(t, cluster) for t in terms):
            why.append(_unselected(terms, cluster))
        taint = untolerated(cluster.taints, policy.cluster_tolerations)
        if taint is not None:
            entry = ", ".join(f"{k}: {v}" for k, v in (
                ("key", taint.key), ("operator", "Equal" if taint.value else "Exists"),
                ("value", taint.value), ("effect", taint.effect)) if v)
            said = f"{taint.key}={taint.value}" if taint.value else taint.key
            why.append(f"it has taint {said}:{taint.effect}, which the policy does not "
                       f"tolerate (add {{{entry}}} to its spec.placement.clusterTolerations)")
        if why:
            out[cluster.name] = "; and ".join(why)
    return out


def _unselected(terms: Sequence[ClusterAffinity], cluster: MemberCluster) -> str:
    """Why none of the cluster affinity ``terms`` selects ``cluster``, and the fix."""
    if len(terms) > 1:
        return ("no term of the policy's spec.placement.clusterAffinities selects it (add it "
                "to one)")
    term = terms[0]
    out = []
    if term.cluster_names and cluster.name not in term.cluster_names:
        out.append(f"the policy's clusterAffinity.clusterNames ({', '.join(term.cluster_names)})"
                   f" does not name it (add it there)")
    if term.label_selector is not None and not term.label_selector.matches(cluster.label_map):
        out.append("its labels do not match the policy's clusterAffinity.labelSelector (change "
                   "the selector or the cluster's labels)")
    if cluster.name in term.exclude:
        out.append("the policy's clusterAffinity.exclude names it (take it out there)")
    return "; and ".join(out)


def with_queue_refusal(refused: Sequence[tuple[str, str]], queue: str | None
                       ) -> Sequence[tuple[str, str]]:
    """``Job.refused`` of a job, with Kueue's refusal when the name of its quota
    (``queue``), which names its LocalQueue on a kueue cluster, is one no
    LocalQueue can have: Kueue's webhook refuses such a queue label."""
    if queue is None or LOCAL_QUEUE_NAME.fullmatch(queue):
        return refused
    return _kueue_refuses(refused, (
        f"its quota's name {queue!r} names its Kueue LocalQueue there, and no LocalQueue can "
        f"have it ({LOCAL_QUEUE_RULE}): rename the quota"))


def _kueue_refuses(refused: Sequence[tuple[str, str]], why: str) -> Sequence[tuple[str, str]]:
    """``refused`` with ``why`` a kueue cluster refuses the job too."""
    said = dict(refused)
    said["kueue"] = f"{said['kueue']}; {why}" if "kueue" in said else why
    return tuple(sorted(said.items()))


# Why a kueue cluster refuses a job with no quota (one its policy places by capacity
# alone, whose namespace no quota lists): it would name no LocalQueue, and Kueue
# runs such a job unmanaged, its pods started one by one, or never admits it
NO_LOCAL_QUEUE = ("it has no quota, so no LocalQueue to run under there, and Kueue would "
                  "not start its pods as a gang: list its namespace on a quota of the tree, "
                  "or keep it off kueue clusters (its policy's clusterAffinity)")


def with_no_queue_refusal(refused: Sequence[tuple[str, str]]) -> Sequence[tuple[str, str]]:
    """``Job.refused`` of a job that has no quota, with Kueue's (``NO_LOCAL_QUEUE``)."""
    return _kueue_refuses(refused, NO_LOCAL_QUEUE)


EVERY_CLUSTER_FAILED = "it failed on every cluster its policy selects"


def narrowed(groups: list[list[str]], notes: list[str], failed_on: Sequence[str],
             refused: Sequence[tuple[str, str]], clusters: Sequence[MemberCluster]
             ) -> tuple[list[list[str]], list[str], tuple[str, ...], tuple[str, ...]]:
    """A job's candidate ``groups`` (and ``notes``, ``candidate_groups``'), but
    for the clusters it failed on (failover: never again there,
    ``core.outcomes``) and those whose gang dialect would refuse it as it is
    written (``Job.refused``: (dialect, why)); with the clusters left out, and
    a note on each that refuses it, for its reason."""
    if not failed_on and not refused:
        return groups, notes, (), ()
    if failed_on:
        were = any(groups)
        groups = [[n for n in g if n not in failed_on] for g in groups]
        if were and not any(groups):  # (the clusters are named with failedOn)
            notes = [*notes, EVERY_CLUSTER_FAILED]
    said: tuple[str, ...] = ()
    out: list[str] = []
    if refused:
        why = dict(refused)
        named = {n for g in groups for n in g}
        dialect = {c.name: c.gang_dialect for c in clusters
                   if c.name in named and c.gang_dialect in why}
        out = sorted(dialect)
        said = tuple(f"{n} (gangDialect: {dialect[n]}) would refuse it: {why[dialect[n]]}"
                     for n in out)
        if out:
            groups = [[n for n in g if n not in dialect] for g in groups]
            notes = [*notes, *said]
    return groups, notes, (*failed_on, *out), said
