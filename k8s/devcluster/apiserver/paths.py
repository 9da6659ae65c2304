"""Request paths: which resource, namespace, name and subresource a URL names, and the verb of a
request (the attributes authorization sees)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    """A resource request's path. `namespace` is None for a cluster-wide path."""
    group: str
    version: str
    resource: str
    namespace: str | None = None
    name: str = ""
    subresource: str = ""
    watch_prefix: bool = False      # the deprecated /watch/ path form


def parse_resource_path(path: str) -> Target | None:
    """None when the path is not a resource path (discovery, OpenAPI, health, unknown)."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 3 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    watch_prefix = rest[0] == "watch"
    if watch_prefix:
        rest = rest[1:]
        if not rest:
            return None
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3 and not (len(rest) == 3 and rest[2] in ("status", "finalize")):
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        return None
    return Target(group, version, rest[0], namespace, rest[1] if len(rest) > 1 else "",
                  rest[2] if len(rest) > 2 else "", watch_prefix)


def verb_of(method: str, target: Target, watch: bool) -> str:
    """The Kubernetes verb of an HTTP method on a target."""
    if method in ("GET", "HEAD"):
        if watch or target.watch_prefix:
            return "watch"
        return "get" if target.name else "list"
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        return "delete" if target.name else "deletecollection"
    return method.lower()
