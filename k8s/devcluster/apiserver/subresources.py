"""Subresources: scale (custom resources), pods' binding and log, service accounts' token, and
SelfSubjectAccessReview."""

from __future__ import annotations

import copy
import os
import time
from typing import Any, Callable, Iterator

from . import errors
from .api import Api, Context, resource_key, rfc3339
from .auth import Authenticator, User
from .errors import ApiError
from .patching import (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, decode_patch, json_patch, merge_patch,
                       unsupported_patch_type)
from .resource_info import ResourceInfo
from .validation import invalid, required

_MIN_TOKEN_S = 600
_DEFAULT_TOKEN_S = 3600


# ---- scale ---------------------------------------------------------------------------------------

def _scale_spec(info: ResourceInfo) -> dict[str, str]:
    assert info.crd is not None
    version = next(v for v in info.crd["spec"]["versions"] if v["name"] == info.version)
    return (version.get("subresources") or {}).get("scale") or {}


def _path(text: str) -> list[str]:
    return [part for part in text.split(".") if part]


def _read(obj: dict[str, Any], text: str) -> Any:
    value: Any = obj
    for part in _path(text):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


# The real server's stand-in for "no spec replicas" in the Scale a patch applies to (the smallest
# int32): a patch that does not set spec.replicas then fails validation, as there.
_UNSET_SPEC_REPLICAS = -2147483648


def to_scale(info: ResourceInfo, obj: dict[str, Any], unset_replicas: int = 0) -> dict[str, Any]:
    """The autoscaling/v1 Scale of a custom resource, read through the CRD's scale paths; a custom
    resource without a value at specReplicasPath gets `unset_replicas` there."""
    paths = _scale_spec(info)
    meta = obj["metadata"]
    spec_replicas = _read(obj, paths.get("specReplicasPath", ""))
    status_replicas = _read(obj, paths.get("statusReplicasPath", ""))
    status: dict[str, Any] = {"replicas": status_replicas if isinstance(status_replicas, int) else 0}
    if paths.get("labelSelectorPath"):
        selector = _read(obj, paths["labelSelectorPath"])
        if isinstance(selector, str) and selector:
            status["selector"] = selector
    scale_meta = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                  if k in meta}
    return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": scale_meta,
            "spec": {"replicas": spec_replicas if isinstance(spec_replicas, int) else unset_replicas},
            "status": status}


def get_scale(api: Api, info: ResourceInfo, namespace: str, name: str) -> dict[str, Any]:
    """A custom resource with no value at specReplicasPath has no Scale to read: the real server
    answers 500 (its scale GET: "the spec replicas field ... does not exist"), which is also what
    an HPA reading it gets. A CRD that defaults the field avoids it."""
    obj = api.fetch(info, namespace, name)
    path = _scale_spec(info).get("specReplicasPath", "")
    if not isinstance(_read(obj, path), int):
        raise errors.internal(f'the spec replicas field "{path}" does not exist')
    return to_scale(info, obj)


def update_scale(api: Api, info: ResourceInfo, namespace: str, name: str, body: Any,
                 ctx: Context) -> dict[str, Any]:
    """Write only the spec replicas; a stale resourceVersion in the Scale is a 409."""
    if not isinstance(body, dict):
        raise ApiError(400, "BadRequest", "the body of the request must be an autoscaling/v1 Scale")
    with api.store.lock:
        old = api.fetch(info, namespace, name)
        meta = body.get("metadata") or {}
        if meta.get("name") not in (None, name):
            raise ApiError(400, "BadRequest", f"the name of the object ({meta.get('name')}) does not match the "
                           f"name on the URL ({name})")
        replicas = (body.get("spec") or {}).get("replicas")
        if replicas is None:
            replicas = 0
        if not isinstance(replicas, int) or isinstance(replicas, bool):
            raise ApiError(400, "BadRequest", "json: cannot unmarshal into Go struct field ScaleSpec.spec.replicas "
                           "of type int32")
        if replicas < 0:
            raise errors.invalid("Scale", "autoscaling", name,
                                 [invalid("spec.replicas", replicas, "must be greater than or equal to 0")])
        if meta.get("resourceVersion") and meta["resourceVersion"] != old["metadata"]["resourceVersion"]:
            raise errors.conflict(info.group_resource, name, info.plural)
        new = copy.deepcopy(old)
        target: dict[str, Any] = new
        parts = _path(_scale_spec(info).get("specReplicasPath", ""))
        for part in parts[:-1]:
            if not isinstance(target.get(part), dict):
                target[part] = {}
            target = target[part]
        target[parts[-1]] = replicas
        stored = api.commit_update(info, old, new, ctx, "scale")
        return to_scale(info, stored)


def patch_scale(api: Api, info: ResourceInfo, namespace: str, name: str, content_type: str, raw: bytes,
                ctx: Context) -> dict[str, Any]:
    """Scale is a built-in kind: merge, JSON and strategic merge patches apply to it (it has no lists,
    so the strategic patch is a merge patch)."""
    accepted = [JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH]
    if content_type not in accepted:
        raise unsupported_patch_type(content_type, accepted)
    patch = decode_patch(raw)
    with api.store.lock:
        # The real server patches the Scale it reads, with the smallest int32 where the resource
        # has no spec replicas: a patch setting them works, one that does not is refused.
        current = to_scale(info, api.fetch(info, namespace, name), _UNSET_SPEC_REPLICAS)
        if content_type == JSON_PATCH:
            patched = json_patch(current, patch)
        elif isinstance(patch, dict):
            patched = merge_patch(current, patch)
        else:
            raise ApiError(400, "BadRequest", "error decoding patch: the patch must be a JSON object")
        return update_scale(api, info, namespace, name, patched, ctx)


# ---- pods ----------------------------------------------------------------------------------------

def bind_pod(api: Api, pods: ResourceInfo, namespace: str, name: str, body: Any) -> dict[str, Any]:
    """The scheduler's Binding: set spec.nodeName once, mark the pod scheduled."""
    if not isinstance(body, dict) or not isinstance(body.get("target"), dict):
        raise errors.invalid("Binding", "", name, [required("target")])
    node = body["target"].get("name", "")
    if not node:
        raise errors.invalid("Binding", "", name, [required("target.name")])
    with api.store.lock:
        pod = api.fetch(pods, namespace, name)
        if pod["metadata"].get("deletionTimestamp"):
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is '
                           "being deleted, cannot be assigned to a host", {"name": name, "kind": "pods/binding"})
        assigned = (pod.get("spec") or {}).get("nodeName")
        if assigned:
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is '
                           f'already assigned to node "{assigned}"', {"name": name, "kind": "pods/binding"})
        bound = copy.deepcopy(pod)
        bound["spec"]["nodeName"] = node
        conditions = [c for c in (bound.setdefault("status", {}).get("conditions") or [])
                      if c.get("type") != "PodScheduled"]
        conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                           "lastTransitionTime": api.now()})
        bound["status"]["conditions"] = conditions
        api.store.write(resource_key(pods), bound, "MODIFIED")
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def log_path(state_dir: str, pod: dict[str, Any], container: str) -> str:
    meta = pod["metadata"]
    return os.path.join(state_dir, "logs", f"{meta['namespace']}_{meta['name']}_{meta['uid']}",
                        f"{container}.log")


def pod_log(api: Api, pods: ResourceInfo, state_dir: str, namespace: str, name: str,
            query: dict[str, str], client_gone: Callable[[], bool]) -> Iterator[bytes]:
    """The container's log as the node wrote it; with follow=true, new lines until the container ends
    or the client leaves."""
    pod = api.fetch(pods, namespace, name)
    spec = pod.get("spec") or {}
    names = [c.get("name") for c in spec.get("containers") or []]
    init_names = [c.get("name") for c in spec.get("initContainers") or []]
    container = query.get("container", "")
    if not container:
        if len(names) != 1:
            raise ApiError(400, "BadRequest", f"a container name must be specified for pod {name}, choose one of: "
                           f"[{' '.join(names)}]" + (f" or one of the init containers: [{' '.join(init_names)}]"
                                                     if init_names else ""))
        container = names[0]
    elif container not in names and container not in init_names:
        raise ApiError(400, "BadRequest", f"container {container} is not valid for pod {name}")
    if query.get("previous") in ("true", "1"):
        raise ApiError(400, "BadRequest", f'previous terminated container "{container}" in pod "{name}" not found')
    path = log_path(state_dir, pod, container)
    if not os.path.exists(path):
        raise ApiError(400, "BadRequest", f'container "{container}" in pod "{name}" is waiting to start: '
                       "ContainerCreating")
    with open(path, "rb") as handle:
        yield _tail(handle.read(), query)
        if query.get("follow") not in ("true", "1"):
            return
        while True:
            chunk = handle.read()
            if chunk:
                yield chunk
                continue
            if client_gone():
                return
            if _container_finished(api, pods, pod, container):
                rest = handle.read()
                if rest:
                    yield rest
                return
            time.sleep(0.2)      # a file has no change notification the stdlib can wait on


def _tail(data: bytes, query: dict[str, str]) -> bytes:
    if query.get("tailLines"):
        try:
            count = int(query["tailLines"])
        except ValueError as err:
            raise ApiError(400, "BadRequest", f'tailLines: Invalid value: "{query["tailLines"]}"') from err
        lines = data.splitlines(keepends=True)
        data = b"".join(lines[-count:]) if count > 0 else b""
    if query.get("limitBytes"):
        data = data[:max(int(query["limitBytes"]), 0)]
    return data


def _container_finished(api: Api, pods: ResourceInfo, pod: dict[str, Any], container: str) -> bool:
    current = api.store.get(resource_key(pods), pod["metadata"]["namespace"], pod["metadata"]["name"])
    if current is None or current["metadata"]["uid"] != pod["metadata"]["uid"]:
        return True
    statuses = (current.get("status") or {}).get("containerStatuses") or []
    return any(s.get("name") == container and "terminated" in (s.get("state") or {}) for s in statuses)


# ---- service accounts ----------------------------------------------------------------------------

def request_token(api: Api, accounts: ResourceInfo, authenticator: Authenticator, namespace: str, name: str,
                  body: Any) -> dict[str, Any]:
    """TokenRequest: an opaque token that authenticates as the service account until it expires or
    the account is deleted."""
    account = api.fetch(accounts, namespace, name)
    spec = (body or {}).get("spec") or {} if isinstance(body, dict) else {}
    # Absent or null (`kubectl create token NAME` without --duration sends null): an hour, as
    # the real server's defaulting gives.
    seconds = spec.get("expirationSeconds")
    if seconds is None:
        seconds = _DEFAULT_TOKEN_S
    if not isinstance(seconds, int) or seconds < _MIN_TOKEN_S:
        raise errors.invalid("TokenRequest", "authentication.k8s.io", name, [
            invalid("spec.expirationSeconds", seconds, "may not specify a duration less than 10 minutes")])
    if seconds > 2 ** 32:
        raise errors.invalid("TokenRequest", "authentication.k8s.io", name, [
            invalid("spec.expirationSeconds", seconds, "may not specify a duration larger than 2^32 seconds")])
    token, expires = authenticator.issue(namespace, name, account["metadata"]["uid"], seconds)
    return {
        "kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": api.now()},
        "spec": {"audiences": spec.get("audiences") or ["https://kubernetes.default.svc.cluster.local"],
                 "expirationSeconds": seconds, "boundObjectRef": spec.get("boundObjectRef")},
        "status": {"token": token, "expirationTimestamp": rfc3339(expires)},
    }


# ---- access reviews ------------------------------------------------------------------------------

def self_subject_access_review(user: User, body: Any,
                               decide: Callable[[User, str, str, str, str, str, str], tuple[bool, str]]
                               ) -> dict[str, Any]:
    """`kubectl auth can-i`: the caller's own permission for one action."""
    spec = body.get("spec") if isinstance(body, dict) else None
    if not isinstance(spec, dict) or not (spec.get("resourceAttributes") or spec.get("nonResourceAttributes")):
        raise errors.invalid("SelfSubjectAccessReview", "authorization.k8s.io", "", [
            required("spec.resourceAttributes", "exactly one of nonResourceAttributes or resourceAttributes "
                     "must be specified")])
    attributes = spec.get("resourceAttributes")
    if attributes:
        allowed, reason = decide(user, attributes.get("verb", ""), attributes.get("group", ""),
                                 attributes.get("resource", ""), attributes.get("subresource", ""),
                                 attributes.get("namespace", ""), attributes.get("name", ""))
    else:
        allowed, reason = True, "non-resource URLs are allowed to every authenticated user"
    status: dict[str, Any] = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    return {"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
            "metadata": {"creationTimestamp": None}, "spec": spec, "status": status}
