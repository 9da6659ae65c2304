"""The validating admission plugins, in kube-apiserver's order: PodSecurity, then ResourceQuota. As on
the real server they run after validation and before the object is stored, dry runs included."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from . import pod_security, resource_quota

if TYPE_CHECKING:
    from .api import Api, Context
    from .resource_info import ResourceInfo


def validate(api: Api, info: ResourceInfo, obj: dict[str, Any], old: dict[str, Any] | None, ctx: Context,
             subresource: str | None) -> None:
    """Raise the plugins' refusal of a create (old None) or an update; add their warnings to ctx."""
    if info.group != "" or info.crd is not None or subresource is not None:
        return
    if info.plural == "namespaces":
        name = obj["metadata"].get("name", "")
        ctx.warnings += pod_security.admit_namespace(obj, old, lambda: _in_namespace(api, "pods", name))
    elif info.plural == "pods":
        namespace_name = obj["metadata"].get("namespace", "")
        namespace = api.store.get(("", "namespaces"), "", namespace_name) or {}
        ctx.warnings += pod_security.admit_pod(namespace, obj, old)
        if old is None:
            resource_quota.admit_pod(_in_namespace(api, "resourcequotas", namespace_name),
                                     _in_namespace(api, "pods", namespace_name), obj, time.time())


def _in_namespace(api: Api, plural: str, namespace: str) -> list[dict[str, Any]]:
    return [o for o in api.stored_objects("", plural) if o["metadata"].get("namespace") == namespace]
