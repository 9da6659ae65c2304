"""Legacy (unaggregated) discovery documents: /version, /api, /api/v1, /apis, /apis/<group> and
/apis/<group>/<version>, shaped as kube-apiserver answers them. Clients asking for aggregated
discovery (apidiscovery.k8s.io) fall back to these when answered with plain application/json."""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

from .resource_info import ResourceInfo

# Subresources: (kind, group, version, verbs) of the entry discovery lists for them; an empty group
# and version mean the parent's. The singularName of a subresource entry is empty, as served.
SUBRESOURCE_ENTRIES: dict[str, tuple[str | None, str, str, tuple[str, ...]]] = {
    "status": (None, "", "", ("get", "patch", "update")),
    "scale": ("Scale", "autoscaling", "v1", ("get", "patch", "update")),
    "log": ("Pod", "", "", ("get",)),
    "binding": ("Binding", "", "", ("create",)),
    "eviction": ("Eviction", "policy", "v1", ("create",)),
    "token": ("TokenRequest", "authentication.k8s.io", "v1", ("create",)),
    "exec": ("PodExecOptions", "", "", ("create", "get")),
    "attach": ("PodAttachOptions", "", "", ("create", "get")),
    "portforward": ("PodPortForwardOptions", "", "", ("create", "get")),
    "proxy": (None, "", "", ("create", "delete", "get", "patch", "update")),
    "ephemeralcontainers": (None, "", "", ("get", "patch", "update")),
    "finalize": (None, "", "", ("update",)),
}
KUBE_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key putting GA before beta before alpha, higher numbers first, then non-Kube
    versions alphabetically, as the server orders a group's versions."""
    match = KUBE_VERSION.match(version)
    if not match:
        return (3, 0, 0, version)
    major, stage, minor = match.groups()
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -int(major), -int(minor or 0), version)


def storage_version_hash(info: ResourceInfo) -> str:
    """An opaque hash of the storage version (group/version/kind), as the server derives it:
    the first 8 bytes of its SHA-256, base64-encoded."""
    digest = hashlib.sha256(f"{info.group}/{info.version}/{info.kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def resource_entries(info: ResourceInfo) -> list[dict[str, Any]]:
    """The APIResource entries of one resource: itself, then each subresource."""
    entry: dict[str, Any] = {
        "name": info.plural,
        "singularName": info.singular,
        "namespaced": info.namespaced,
        "kind": info.kind,
        "verbs": sorted(info.verbs),
    }
    if info.short_names:
        entry["shortNames"] = list(info.short_names)
    if info.categories:
        entry["categories"] = list(info.categories)
    entry["storageVersionHash"] = storage_version_hash(info)
    entries = [entry]
    for sub in info.subresources:
        kind, group, version, verbs = SUBRESOURCE_ENTRIES.get(sub, (None, "", "", ("get",)))
        sub_entry: dict[str, Any] = {"name": f"{info.plural}/{sub}", "singularName": "",
                                     "namespaced": info.namespaced}
        if group:
            sub_entry["group"] = group
            sub_entry["version"] = version
        sub_entry["kind"] = kind or info.kind
        sub_entry["verbs"] = list(verbs)
        entries.append(sub_entry)
    return entries


def group_versions(infos: list[ResourceInfo]) -> dict[str, list[str]]:
    """Named groups in the order first served, each with its versions, preferred first."""
    groups: dict[str, list[str]] = {}
    for info in infos:
        if info.group:
            versions = groups.setdefault(info.group, [])
            if info.version not in versions:
                versions.append(info.version)
    return {g: sorted(v, key=version_priority) for g, v in groups.items()}


def api_group(name: str, versions: list[str]) -> dict[str, Any]:
    listed = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": listed, "preferredVersion": listed[0]}


def resource_list(group_version: str, infos: list[ResourceInfo], core: bool) -> dict[str, Any]:
    document: dict[str, Any] = {"kind": "APIResourceList"}
    if not core:
        document["apiVersion"] = "v1"
    document["groupVersion"] = group_version
    document["resources"] = [e for info in infos for e in resource_entries(info)]
    return document


def discovery_document(path: str, infos: list[ResourceInfo], version_info: dict[str, Any], *,
                       server_address: str = "127.0.0.1:6443") -> dict[str, Any] | None:
    """The discovery document served at `path`, or None when `path` is not a discovery path
    (or names a group or version that is not served)."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if parts == ["version"]:
        return version_info
    if parts == ["api"]:
        core_versions = sorted({i.version for i in infos if not i.group}, key=version_priority)
        return {"kind": "APIVersions", "versions": core_versions or ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                "serverAddress": server_address}]}
    if len(parts) == 2 and parts[0] == "api":
        served = [i for i in infos if not i.group and i.version == parts[1]]
        return resource_list(parts[1], served, core=True) if served else None
    if parts == ["apis"]:
        return {"kind": "APIGroupList", "apiVersion": "v1",
                "groups": [api_group(g, v) for g, v in group_versions(infos).items()]}
    if len(parts) == 2 and parts[0] == "apis":
        versions = group_versions(infos).get(parts[1])
        if not versions:
            return None
        return {"kind": "APIGroup", "apiVersion": "v1", **api_group(parts[1], versions)}
    if len(parts) == 3 and parts[0] == "apis":
        served = [i for i in infos if i.group == parts[1] and i.version == parts[2]]
        return resource_list(f"{parts[1]}/{parts[2]}", served, core=False) if served else None
    return None


# ---------------------------------------------------------------- aggregated discovery

AGGREGATED_VERSIONS = ("v2", "v2beta1")


def aggregated_content_type(version: str) -> str:
    """The Content-Type of an aggregated discovery answer of apidiscovery.k8s.io `version`."""
    return f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"


def wanted_aggregated_version(accept: str) -> str | None:
    """The apidiscovery.k8s.io version a client's Accept header asks for first, if any (kubectl
    1.27+ lists v2, then v2beta1, then plain JSON)."""
    for media_range in (accept or "").split(","):
        params = dict(part.strip().split("=", 1) for part in media_range.split(";")[1:]
                      if "=" in part)
        if params.get("g") == "apidiscovery.k8s.io" and params.get("as") == \
                "APIGroupDiscoveryList" and params.get("v") in AGGREGATED_VERSIONS:
            return params["v"]
    return None


def discovery_resource(info: ResourceInfo) -> dict[str, Any]:
    """One resource of an aggregated discovery version, with its subresources inside."""
    entry: dict[str, Any] = {
        "resource": info.plural,
        "responseKind": {"group": info.group, "version": info.version, "kind": info.kind},
        "scope": "Namespaced" if info.namespaced else "Cluster",
        "singularResource": info.singular,
        "verbs": sorted(info.verbs),
    }
    if info.short_names:
        entry["shortNames"] = list(info.short_names)
    if info.categories:
        entry["categories"] = list(info.categories)
    subresources = []
    for sub in info.subresources:
        kind, group, version, verbs = SUBRESOURCE_ENTRIES.get(sub, (None, "", "", ("get",)))
        subresources.append({
            "subresource": sub,
            "responseKind": {"group": group if group else info.group,
                             "version": version if group else info.version,
                             "kind": kind or info.kind},
            "verbs": list(verbs)})
    if subresources:
        entry["subresources"] = subresources
    return entry


def aggregated_discovery(path: str, infos: list[ResourceInfo],
                         version: str = "v2") -> dict[str, Any] | None:
    """The APIGroupDiscoveryList of /api (the core group) or /apis (named groups), or None for
    any other path."""
    bare = path.split("?", 1)[0].rstrip("/")
    if bare not in ("/api", "/apis") or version not in AGGREGATED_VERSIONS:
        return None
    if bare == "/api":
        groups: dict[str, list[str]] = {"": sorted({i.version for i in infos if not i.group},
                                                   key=version_priority)}
    else:
        groups = group_versions(infos)
    items = []
    for group, versions in groups.items():
        metadata: dict[str, Any] = {"creationTimestamp": None}
        if group:
            metadata["name"] = group
        items.append({"metadata": metadata, "versions": [
            {"version": v, "freshness": "Current",
             "resources": [discovery_resource(i) for i in infos
                           if i.group == group and i.version == v]}
            for v in versions]})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": f"apidiscovery.k8s.io/{version}",
            "metadata": {}, "items": items}
