"""Role-based access control over the stored rbac.authorization.k8s.io objects, with
kube-apiserver's RBAC semantics and its wording of allowed/forbidden decisions."""

from __future__ import annotations

from typing import Any, Callable, Iterator

from .errors import ApiError

RBAC_GROUP = "rbac.authorization.k8s.io"
# Members of this group are allowed everything, before RBAC is asked (as kube-apiserver's
# privileged-group authorizer does for cluster administrators' certificates).
SUPERUSER_GROUP = "system:masters"

Objects = Callable[[str, str], list[dict[str, Any]]]


def subject_matches(subject: dict[str, Any], user: str, groups: list[str],
                    binding_namespace: str) -> bool:
    """Whether a binding subject names this user: a User by name, a Group the user belongs to,
    or a ServiceAccount (whose user is system:serviceaccount:NS:NAME; a RoleBinding's subject
    without namespace means the binding's own)."""
    kind = subject.get("kind")
    name = subject.get("name", "")
    if kind == "User":
        return user == name
    if kind == "Group":
        return name in groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return bool(namespace) and user == f"system:serviceaccount:{namespace}:{name}"
    return False


def rule_allows(rule: dict[str, Any], verb: str, api_group: str, resource: str,
                subresource: str, name: str) -> bool:
    """One PolicyRule against a resource request. resourceNames restrict to named objects, so
    they never match a request without a name (list, watch, create, deletecollection)."""
    verbs = rule.get("verbs") or []
    if "*" not in verbs and verb not in verbs:
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and api_group not in groups:
        return False
    requested = f"{resource}/{subresource}" if subresource else resource
    resources = rule.get("resources") or []
    if not any(r == "*" or r == requested or (subresource and r == f"*/{subresource}")
               for r in resources):
        return False
    names = rule.get("resourceNames") or []
    return not names or (bool(name) and name in names)


def rule_allows_path(rule: dict[str, Any], verb: str, path: str) -> bool:
    """One PolicyRule against a non-resource request (nonResourceURLs, `*` as a final wildcard)."""
    verbs = rule.get("verbs") or []
    if "*" not in verbs and verb not in verbs:
        return False
    for url in rule.get("nonResourceURLs") or []:
        if url == "*" or url == path or (url.endswith("*") and path.startswith(url[:-1])):
            return True
    return False


def find_object(objects: Objects, plural: str, name: str,
                namespace: str | None) -> dict[str, Any] | None:
    for obj in objects(RBAC_GROUP, plural):
        meta = obj.get("metadata") or {}
        if meta.get("name") == name and (namespace is None or meta.get("namespace") == namespace):
            return obj
    return None


def role_rules(role: dict[str, Any]) -> list[dict[str, Any]]:
    """A role's stored rules. Those of a ClusterRole with an aggregationRule are what the
    ClusterRole aggregation controller last wrote into it (clusterrole_aggregation.py), as the real
    authorizer reads them: nothing is aggregated at request time."""
    return role.get("rules") or []


def bindings(objects: Objects, namespace: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """ClusterRoleBindings (cluster-wide), then the RoleBindings of the request's namespace."""
    for binding in objects(RBAC_GROUP, "clusterrolebindings"):
        yield "ClusterRoleBinding", binding
    if namespace:
        for binding in objects(RBAC_GROUP, "rolebindings"):
            if (binding.get("metadata") or {}).get("namespace") == namespace:
                yield "RoleBinding", binding


def authorize(user: str, groups: list[str], verb: str, api_group: str, resource: str,
              subresource: str, namespace: str, name: str,
              objects: Objects) -> tuple[bool, str]:
    """Decides one request. A non-resource request passes resource "" and its path as `name`.

    Returns (allowed, reason): the reason names the binding and role that allowed it, or, when
    denied, the roles that could not be found (empty when nothing matched), as RBAC words it."""
    if SUPERUSER_GROUP in groups:
        return True, ""
    errors: list[str] = []
    for binding_kind, binding in bindings(objects, namespace):
        meta = binding.get("metadata") or {}
        binding_namespace = meta.get("namespace", "") if binding_kind == "RoleBinding" else ""
        matched = [s for s in binding.get("subjects") or []
                   if subject_matches(s, user, groups, binding_namespace)]
        if not matched:
            continue
        role_ref = binding.get("roleRef") or {}
        role_kind = role_ref.get("kind", "")
        role_name = role_ref.get("name", "")
        if role_kind == "Role":
            role = find_object(objects, "roles", role_name, binding_namespace)
            missing = f'role.rbac.authorization.k8s.io "{role_name}" not found'
        else:
            role = find_object(objects, "clusterroles", role_name, None)
            missing = f'clusterrole.rbac.authorization.k8s.io "{role_name}" not found'
        if role is None:
            errors.append(missing)
            continue
        for rule in role_rules(role):
            if resource:
                allowed = rule_allows(rule, verb, api_group, resource, subresource, name)
            else:
                allowed = rule_allows_path(rule, verb, name)
            if allowed:
                return True, allowed_reason(binding_kind, meta, role_kind, role_name, matched[0])
    return False, ("RBAC: " + ", ".join(errors)) if errors else ""


def allowed_reason(binding_kind: str, meta: dict[str, Any], role_kind: str, role_name: str,
                   subject: dict[str, Any]) -> str:
    where = f'{binding_kind} "{meta.get("name", "")}"'
    if binding_kind == "RoleBinding":
        where += f' of {role_kind} "{role_name}" in namespace "{meta.get("namespace", "")}"'
    else:
        where += f' of ClusterRole "{role_name}"'
    subject_text = subject.get("name", "")
    if subject.get("kind") == "ServiceAccount":
        subject_text = f'{subject.get("namespace") or meta.get("namespace", "")}/{subject_text}'
    return f'RBAC: allowed by {where} to {subject.get("kind")} "{subject_text}"'


def forbidden_error(user: str, verb: str, api_group: str, resource: str, subresource: str,
                    namespace: str, name: str, reason: str) -> ApiError:
    """The 403 kube-apiserver answers for a denied request, e.g. `pods "x" is forbidden: User
    "alice" cannot get resource "pods" in API group "" in the namespace "default"`."""
    if not resource:
        message = f'forbidden: User "{user}" cannot {verb} path "{name}"'
        if reason:
            message += f": {reason}"
        return ApiError(403, "Forbidden", message, {})
    requested = f"{resource}/{subresource}" if subresource else resource
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    why = (f'User "{user}" cannot {verb} resource "{requested}" in API group "{api_group}" '
           f"{scope}")
    if reason:
        why += f": {reason}"
    qualified = f"{resource}.{api_group}" if api_group else resource
    subject = f'{qualified} "{name}"' if name else qualified
    details: dict[str, Any] = {"kind": resource}
    if name:
        details["name"] = name
    if api_group:
        details["group"] = api_group
    return ApiError(403, "Forbidden", f"{subject} is forbidden: {why}", details)
