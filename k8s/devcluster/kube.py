"""A small client for the Kubernetes REST API over `requests`, used by the nodes, the scheduler and
the dev-cluster script.

Paths are the API's own (`/api/v1/namespaces/ns/pods/name`); helpers build the common ones. Errors
come back as `KubeError` carrying the Status object's code, reason and message."""

from __future__ import annotations

import base64
import json
import os
import re
import tempfile
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Iterator

import requests
import yaml

JSON = dict[str, Any]


class KubeError(Exception):
    """An API call answered with an error Status (or with no answer at all: code 0)."""

    def __init__(self, code: int, reason: str, message: str, status: JSON | None = None):
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.status = status or {}


def pod_path(namespace: str, name: str = "", subresource: str = "") -> str:
    """`/api/v1/namespaces/NS/pods[/NAME[/SUB]]`."""
    return core_path("pods", namespace, name, subresource)


def core_path(plural: str, namespace: str = "", name: str = "", subresource: str = "") -> str:
    """Path of a core (v1) resource; an empty namespace means cluster-scoped or all namespaces."""
    return _join("/api/v1", plural, namespace, name, subresource)


def group_path(group: str, version: str, plural: str, namespace: str = "", name: str = "",
               subresource: str = "") -> str:
    """Path of a resource of a named API group."""
    return _join(f"/apis/{group}/{version}", plural, namespace, name, subresource)


def resource_path(api_version: str, plural: str, namespace: str = "", name: str = "") -> str:
    """Path from an object's apiVersion (`v1` or `group/version`)."""
    if "/" in api_version:
        group, version = api_version.split("/", 1)
        return group_path(group, version, plural, namespace, name)
    return core_path(plural, namespace, name)


def _join(prefix: str, plural: str, namespace: str, name: str, subresource: str) -> str:
    path = prefix + (f"/namespaces/{namespace}" if namespace else "") + f"/{plural}"
    if name:
        path += f"/{name}"
    if subresource:
        path += f"/{subresource}"
    return path


@dataclass
class Credentials:
    """Where and how to reach the API server."""

    server: str                              # https://127.0.0.1:6443
    ca_file: str | None = None               # None: system trust store
    token: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    insecure_skip_verify: bool = False


class KubeClient:
    """Synchronous REST calls; one `requests.Session` per client (thread-safe enough for the
    dev cluster's use: one client per thread where calls may overlap with a watch)."""

    def __init__(self, credentials: Credentials, timeout_s: float = 30.0):
        self.credentials = credentials
        self.timeout_s = timeout_s
        self.session = requests.Session()
        # The cluster's own CA, not REQUESTS_CA_BUNDLE; no proxy between us and the API server.
        self.session.trust_env = False
        if credentials.insecure_skip_verify:
            self.session.verify = False
        elif credentials.ca_file:
            self.session.verify = credentials.ca_file
        if credentials.client_cert:
            self.session.cert = (credentials.client_cert, credentials.client_key or credentials.client_cert)
        if credentials.token:
            self.session.headers["Authorization"] = f"Bearer {credentials.token}"
        self.session.headers["Accept"] = "application/json"
        self.session.headers["User-Agent"] = "fiber-devcluster"

    def clone(self) -> "KubeClient":
        """A client with the same credentials and its own connection pool."""
        return KubeClient(self.credentials, self.timeout_s)

    # --- verbs -------------------------------------------------------------------------------
    def get(self, path: str, params: dict[str, Any] | None = None) -> JSON:
        return self._call("GET", path, params=params)

    def get_text(self, path: str, params: dict[str, Any] | None = None) -> str:
        response = self._send("GET", path, params=params)
        return response.text

    def list(self, path: str, label_selector: str = "", field_selector: str = "",
             resource_version: str = "") -> JSON:
        return self._call("GET", path, params=_query(resource_version, label_selector, field_selector))

    def create(self, path: str, body: JSON) -> JSON:
        return self._call("POST", path, body=body)

    def update(self, path: str, body: JSON) -> JSON:
        return self._call("PUT", path, body=body)

    def patch(self, path: str, body: Any, patch_type: str = "merge") -> JSON:
        """patch_type: `merge` (RFC 7386), `json` (RFC 6902) or `strategic`."""
        content_types = {"merge": "application/merge-patch+json", "json": "application/json-patch+json",
                         "strategic": "application/strategic-merge-patch+json"}
        return self._call("PATCH", path, body=body, content_type=content_types[patch_type])

    def delete(self, path: str, grace_period_seconds: int | None = None,
               precondition_uid: str | None = None, propagation_policy: str | None = None) -> JSON:
        options: JSON = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if precondition_uid:
            options["preconditions"] = {"uid": precondition_uid}
        if propagation_policy:
            options["propagationPolicy"] = propagation_policy
        return self._call("DELETE", path, body=options)

    def watch(self, path: str, resource_version: str = "", label_selector: str = "",
              field_selector: str = "", timeout_seconds: int = 300,
              allow_bookmarks: bool = True) -> Iterator[JSON]:
        """Yields watch events ({type, object}) until the server ends the stream. An ERROR event is
        yielded as is: the caller decides (410 Expired means relist)."""
        params = _query(resource_version, label_selector, field_selector)
        params.update(watch="true", timeoutSeconds=str(timeout_seconds))
        if allow_bookmarks:
            params["allowWatchBookmarks"] = "true"
        response = self._send("GET", path, params=params, stream=True,
                              timeout=(self.timeout_s, timeout_seconds + 30))
        with response:
            for line in response.iter_lines():
                if line:
                    yield json.loads(line)

    def follow_log(self, namespace: str, name: str, container: str = "", timeout_s: float = 60.0) -> Iterator[str]:
        """A pod's log lines as they are written (`kubectl logs -f`), until the container ends."""
        params = {"follow": "true", **({"container": container} if container else {})}
        response = self._send("GET", pod_path(namespace, name, "log"), params=params, stream=True,
                              timeout=(self.timeout_s, timeout_s))
        with response:
            for line in response.iter_lines():
                yield line.decode("utf-8", "replace")

    def watch_changes(self, path: str, resource_version: str, **options: Any) -> Iterator[tuple[str, JSON]]:
        """Watch events as (type, object), bookmarks included (their object carries the version to
        resume from); an ERROR event is raised as KubeError (410 Expired: the caller relists)."""
        for event in self.watch(path, resource_version, **options):
            item = event.get("object") or {}
            if event.get("type") == "ERROR":
                raise KubeError(int(item.get("code", 500)), item.get("reason", ""), item.get("message", ""), item)
            yield event.get("type", ""), item


    # --- plumbing ----------------------------------------------------------------------------
    def _call(self, method: str, path: str, params: dict[str, Any] | None = None, body: Any = None,
              content_type: str = "application/json") -> JSON:
        response = self._send(method, path, params=params, body=body, content_type=content_type)
        if not response.content:
            return {}
        return response.json()

    def _send(self, method: str, path: str, params: dict[str, Any] | None = None, body: Any = None,
              content_type: str = "application/json", stream: bool = False,
              timeout: Any = None) -> requests.Response:
        headers = {"Content-Type": content_type} if body is not None else {}
        try:
            response = self.session.request(
                method, self.credentials.server.rstrip("/") + path, params=params,
                data=json.dumps(body) if body is not None else None, headers=headers, stream=stream,
                timeout=timeout or self.timeout_s)
        except requests.RequestException as error:
            raise KubeError(0, "ConnectionError", f"{method} {path}: {error}") from error
        if response.status_code >= 400:
            raise _error_from(method, path, response)
        return response


def _query(resource_version: str, label_selector: str, field_selector: str) -> dict[str, Any]:
    names = {"resourceVersion": resource_version, "labelSelector": label_selector, "fieldSelector": field_selector}
    return {name: value for name, value in names.items() if value}


def _error_from(method: str, path: str, response: requests.Response) -> KubeError:
    try:
        status = response.json()
    except ValueError:
        status = {}
    if isinstance(status, dict) and status.get("kind") == "Status":
        return KubeError(response.status_code, status.get("reason", ""), status.get("message", ""), status)
    return KubeError(response.status_code, response.reason or "",
                     f"{method} {path}: {response.text[:200].strip()}")


def credentials_from_kubeconfig(path: str, context: str | None = None) -> Credentials:
    """The cluster and user of a kubeconfig's current (or named) context. Inline `*-data` fields are
    written to private temporary files because `requests` wants file names."""
    with open(path, encoding="utf-8") as handle:
        config = yaml.safe_load(handle) or {}
    base_dir = os.path.dirname(os.path.abspath(path))
    context_name = context or config.get("current-context")
    if not context_name:
        raise ValueError(f"{path}: no current-context and no context given")
    contexts = {entry["name"]: entry.get("context", {}) for entry in config.get("contexts") or []}
    if context_name not in contexts:
        raise ValueError(f"{path}: context {context_name!r} not found")
    cluster_name = contexts[context_name].get("cluster")
    user_name = contexts[context_name].get("user")
    clusters = {entry["name"]: entry.get("cluster", {}) for entry in config.get("clusters") or []}
    users = {entry["name"]: entry.get("user", {}) for entry in config.get("users") or []}
    if cluster_name not in clusters:
        raise ValueError(f"{path}: cluster {cluster_name!r} of context {context_name!r} not found")
    cluster = clusters[cluster_name]
    user = users.get(user_name, {})
    if "server" not in cluster:
        raise ValueError(f"{path}: cluster {cluster_name!r} has no server")

    def file_of(entry: JSON, file_key: str, data_key: str) -> str | None:
        if entry.get(file_key):
            return os.path.join(base_dir, entry[file_key])
        if entry.get(data_key):
            handle = tempfile.NamedTemporaryFile("wb", prefix="kubeconfig-", delete=False)
            with handle:
                handle.write(base64.b64decode(entry[data_key]))
            return handle.name
        return None

    token = user.get("token")
    if not token and user.get("tokenFile"):
        with open(os.path.join(base_dir, user["tokenFile"]), encoding="utf-8") as handle:
            token = handle.read().strip()
    return Credentials(
        server=cluster["server"],
        ca_file=file_of(cluster, "certificate-authority", "certificate-authority-data"),
        token=token,
        client_cert=file_of(user, "client-certificate", "client-certificate-data"),
        client_key=file_of(user, "client-key", "client-key-data"),
        insecure_skip_verify=bool(cluster.get("insecure-skip-tls-verify")))


def client_from_kubeconfig(path: str, context: str | None = None) -> KubeClient:
    """A client for the kubeconfig's current (or named) context."""
    return KubeClient(credentials_from_kubeconfig(path, context))


def write_kubeconfig(path: str, server: str, ca_file: str, context: str, user: str,
                     client_cert: str | None = None, client_key: str | None = None,
                     token: str | None = None, namespace: str | None = None) -> None:
    """A kubeconfig with one cluster, user and context, the files referenced by absolute path."""
    user_entry: JSON = {}
    if client_cert:
        user_entry["client-certificate"] = os.path.abspath(client_cert)
        user_entry["client-key"] = os.path.abspath(client_key or client_cert)
    if token:
        user_entry["token"] = token
    context_entry: JSON = {"cluster": context, "user": user}
    if namespace:
        context_entry["namespace"] = namespace
    config = {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": context, "cluster": {"server": server,
                                                   "certificate-authority": os.path.abspath(ca_file)}}],
        "users": [{"name": user, "user": user_entry}],
        "contexts": [{"name": context, "context": context_entry}],
        "current-context": context,
    }
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        yaml.safe_dump(config, handle, sort_keys=False)


_QUANTITY_SUFFIXES = {
    "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 10**3), "": Fraction(1),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18), "Ki": Fraction(2**10), "Mi": Fraction(2**20),
    "Gi": Fraction(2**30), "Ti": Fraction(2**40), "Pi": Fraction(2**50), "Ei": Fraction(2**60),
}
# apimachinery's resource.Quantity syntax (its error names this expression)
QUANTITY_PATTERN = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"


def exact_quantity(text: str | int | float) -> tuple[Fraction, str]:
    """A resource.Quantity (`500m`, `2`, `1Gi`, `1e3`) as its exact number of base units (cores, bytes)
    and its format as apimachinery names it: BinarySI (Ki, Mi, ...), DecimalExponent (1e3) or DecimalSI."""
    if isinstance(text, bool):
        raise ValueError(f"quantity {text!r} is not a valid resource quantity")
    if isinstance(text, (int, float)):
        return Fraction(text), "DecimalSI"
    value = str(text).strip()
    if re.fullmatch(QUANTITY_PATTERN, value):
        for suffix in sorted(_QUANTITY_SUFFIXES, key=len, reverse=True):
            if suffix and value.endswith(suffix):
                try:
                    number = Fraction(value[: -len(suffix)])
                except ValueError:
                    break
                return number * _QUANTITY_SUFFIXES[suffix], "BinarySI" if suffix.endswith("i") else "DecimalSI"
        try:
            return Fraction(value), "DecimalExponent" if "e" in value.lower() else "DecimalSI"
        except ValueError:
            pass
    raise ValueError(f"quantity {text!r} is not a valid resource quantity")


def parse_quantity(text: str | int | float) -> float:
    """A resource.Quantity as a number of base units (cores, bytes)."""
    return float(exact_quantity(text)[0])


def make_event(involved: JSON, event_type: str, reason: str, message: str, component: str,
               host: str = "") -> JSON:
    """A core/v1 Event about `involved`, in its namespace, as the kubelet and scheduler write them."""
    from datetime import datetime, timezone
    import secrets

    metadata = involved.get("metadata", {})
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    source: JSON = {"component": component}
    if host:
        source["host"] = host
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"{metadata.get('name', 'object')}.{secrets.token_hex(8)}",
                     "namespace": metadata.get("namespace", "default")},
        "involvedObject": {"kind": involved.get("kind", "Pod"), "apiVersion": involved.get("apiVersion", "v1"),
                           "namespace": metadata.get("namespace", "default"), "name": metadata.get("name", ""),
                           "uid": metadata.get("uid", ""), "resourceVersion": metadata.get("resourceVersion", "")},
        "reason": reason, "message": message, "type": event_type, "source": source,
        "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        "reportingComponent": component, "reportingInstance": host or component,
    }


def wait_for_object(client: KubeClient, collection: str, name: str, predicate: Any,
                    timeout_s: float = 60.0) -> JSON | None:
    """Like `kubectl wait`: lists then watches the named object of `collection` until
    predicate(object or None when absent) is true; returns that object. Raises TimeoutError naming
    the last state seen."""
    import time

    deadline = time.monotonic() + timeout_s
    selector = f"metadata.name={name}"
    listed = client.list(collection, field_selector=selector)
    current: JSON | None = (listed.get("items") or [None])[0]
    if predicate(current):
        return current
    version = listed["metadata"]["resourceVersion"]
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"{collection}/{name} did not reach the awaited state in {timeout_s:g} s; "
                               f"last seen: {json.dumps(current)[:2000]}")
        watcher = client.clone()
        watcher.timeout_s = max(1.0, remaining)
        for kind, item in watcher.watch_changes(collection, version, field_selector=selector,
                                                timeout_seconds=max(1, int(remaining))):
            version = item.get("metadata", {}).get("resourceVersion", version)
            if kind == "BOOKMARK":
                continue
            current = None if kind == "DELETED" else item
            if predicate(current):
                return current
            if time.monotonic() >= deadline:
                break
