"""Reading member clusters through the Kubernetes API (``fleetq observe``).

The only Kubernetes client I/O of fleetq. For one member cluster (a context of
a kubeconfig file), it lists the nodes and, for each job kind fleetq knows,
the jobs labelled ``fleetq.io/managed-by: fleetq``, as the API returns them;
``fleet.observed.cluster_report`` makes the cluster's report of them.
"""

from __future__ import annotations

import json
import os
from typing import Any

from reconciler.fleet.observed import MANAGED_LABEL
from reconciler.jobkinds import KINDS

TIMEOUT_SECONDS = 30  # each request's


class ObserveError(Exception):
    """A member cluster that could not be read, and why."""


def _plural(kind: str) -> str:
    return kind.lower() + "s"  # (pytorchjobs, rayjobs, mpijobs, jobs)


def kubeconfig_read(kubeconfig: str | None) -> str:
    """The kubeconfig file(s) a client reads: ``kubeconfig``, else those of
    $KUBECONFIG, else ~/.kube/config (as kubectl reads them)."""
    if kubeconfig:
        return kubeconfig
    if "KUBECONFIG" not in os.environ:
        return os.path.expanduser("~/.kube/config")
    listed = [p for p in os.environ["KUBECONFIG"].split(os.pathsep) if p]
    return ", ".join(listed) if listed else "no file ($KUBECONFIG is set, and empty)"


def read_cluster(context: str, kubeconfig: str | None = None
                 ) -> tuple[list[dict[str, Any]], list[str]]:
    """The nodes and the managed jobs of the cluster of ``context``, each with
    its apiVersion and kind; and notes (a job kind the cluster does not
    serve). Raises ``ObserveError`` when the cluster cannot be read."""
    from kubernetes import client, config  # (imported by this command alone: 0.5 s)
    from kubernetes.client.exceptions import ApiException

    settings = client.Configuration()
    settings.retries = 0  # (urllib3 would try each request 4 times: minutes on a hung server)
    try:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, context=context, client_configuration=settings)
    except Exception as exc:  # (ConfigException, OSError, a kubeconfig YAML cannot read)
        what = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        other = "" if kubeconfig else "give the file with --kubeconfig, or "
        raise ObserveError(
            f"no usable kubeconfig context {context!r} in {kubeconfig_read(kubeconfig)}: "
            f"{what.rstrip('.')}; {other}set the cluster's spec.kubeconfigContext to a "
            f"context of it") from exc
    api = client.ApiClient(settings)
    objects: list[dict[str, Any]] = []
    notes: list[str] = []
    selector = f"{MANAGED_LABEL}=fleetq"
    try:
        with api:
            core = client.CoreV1Api(api)
            custom = client.CustomObjectsApi(api)
            batch = client.BatchV1Api(api)
            listed = _items(core.list_node(_preload_content=False,
                                           _request_timeout=TIMEOUT_SECONDS))
            objects.extend(_typed(n, "v1", "Node") for n in listed)
            for kind in KINDS:
                got: Any
                try:
                    if kind.api_version == "batch/v1":
                        got = batch.list_job_for_all_namespaces(
                            label_selector=selector, _preload_content=False,
                            _request_timeout=TIMEOUT_SECONDS)
                    else:
                        group, version = kind.api_version.split("/")
                        got = custom.list_cluster_custom_object(
                            group, version, _plural(kind.kind), label_selector=selector,
                            _preload_content=False, _request_timeout=TIMEOUT_SECONDS)
                except ApiException as exc:
                    if exc.status == 404:
                        notes.append(f"it serves no {kind.api_version} {kind.kind}")
                        continue
                    raise
                objects.extend(_typed(o, kind.api_version, kind.kind) for o in _items(got))
    except ObserveError:
        raise
    except ApiException as exc:
        raise ObserveError(f"the API refused: {exc.status} {exc.reason}") from exc
    except Exception as exc:  # (urllib3's errors: no server, TLS, a timeout)
        if type(exc).__module__.startswith(("urllib3", "ssl", "socket")) \
                or isinstance(exc, OSError):
            raise ObserveError(f"cannot reach its API server: {exc}") from exc
        raise
    return objects, notes


def _items(response: Any) -> list[dict[str, Any]]:
    try:
        body = json.loads(response.data)
    except ValueError as exc:  # (a proxy's or a login page's HTML)
        raise ObserveError(f"its API server answered with something other than JSON "
                           f"({response.data[:60]!r}...)") from exc
    items = body.get("items") if isinstance(body, dict) else None
    if not isinstance(items, list):  # (an empty answer must not read as "none there")
        raise ObserveError(f"its API server answered with no list of items "
                           f"({response.data[:60]!r}...)")
    return [i for i in items if isinstance(i, dict)]


def _typed(obj: dict[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    """``obj`` with its apiVersion and kind (the API leaves them out of a list's items)."""
    obj.setdefault("apiVersion", api_version)
    obj.setdefault("kind", kind)
    return obj
