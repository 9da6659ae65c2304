"""RBAC escalation prevention, as kube-apiserver applies it to writes of roles and bindings: a user
may create or update a Role or ClusterRole only when it already holds every permission the role
grants (in the role's namespace, or cluster-wide for a ClusterRole) or holds the `escalate` verb on
it; and a RoleBinding or ClusterRoleBinding only when it holds the referenced role's permissions
(in the binding's namespace) or the `bind` verb on that role. system:masters bypasses both.

Coverage is decided per atom of a rule (one API group, resource, resource name and verb, or one
non-resource URL and verb): an atom is held when one of the user's rules names its verb, group and
resource (or `*`, or `*/subresource`) and either names no resources by name or names this one."""

from __future__ import annotations

import copy
from typing import Any, Iterator

from .errors import ApiError
from .rbac import (RBAC_GROUP, SUPERUSER_GROUP, Objects, authorize, bindings, find_object, role_rules,
                   subject_matches)

Rule = dict[str, Any]
# What an aggregated ClusterRole may come to grant: only who holds everything may create one.
FULL_AUTHORITY: list[Rule] = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                              {"nonResourceURLs": ["*"], "verbs": ["*"]}]
# Metadata whose change alone is not a grant (the garbage collector's fields, and what the server sets).
_NEUTRAL_METADATA = ("ownerReferences", "finalizers", "resourceVersion", "generation", "managedFields",
                     "uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds")


def _strings(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def atoms(rule: Rule) -> Iterator[Rule]:
    """The rule taken apart into one-verb, one-group, one-resource, one-name rules (and one-URL,
    one-verb rules for non-resource URLs)."""
    verbs = _strings(rule.get("verbs"))
    for url in _strings(rule.get("nonResourceURLs")):
        for verb in verbs:
            yield {"nonResourceURLs": [url], "verbs": [verb]}
    names = _strings(rule.get("resourceNames"))
    for group in _strings(rule.get("apiGroups")):
        for resource in _strings(rule.get("resources")):
            for name in names or [None]:
                for verb in verbs:
                    atom: Rule = {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
                    if name is not None:
                        atom["resourceNames"] = [name]
                    yield atom


def _url_covered(held: list[str], url: str) -> bool:
    return any(pattern == "*" or pattern == url or (pattern.endswith("*") and url.startswith(pattern[:-1]))
               for pattern in held)


def _resource_covered(held: list[str], resource: str) -> bool:
    if "*" in held or resource in held:
        return True
    _, slash, subresource = resource.partition("/")
    return bool(slash) and f"*/{subresource}" in held


def covers(held: Rule, atom: Rule) -> bool:
    """Whether one held rule grants the atom."""
    held_verbs = _strings(held.get("verbs"))
    if "*" not in held_verbs and atom["verbs"][0] not in held_verbs:
        return False
    if "nonResourceURLs" in atom:
        return _url_covered(_strings(held.get("nonResourceURLs")), atom["nonResourceURLs"][0])
    held_groups = _strings(held.get("apiGroups"))
    if "*" not in held_groups and atom["apiGroups"][0] not in held_groups:
        return False
    if not _resource_covered(_strings(held.get("resources")), atom["resources"][0]):
        return False
    held_names = _strings(held.get("resourceNames"))
    if not held_names:
        return True
    return "resourceNames" in atom and atom["resourceNames"][0] in held_names


def missing_atoms(held_rules: list[Rule], wanted: list[Rule]) -> list[Rule]:
    """The atoms of `wanted` that no held rule grants (each once, in order)."""
    missing: list[Rule] = []
    for rule in wanted:
        for atom in atoms(rule):
            if atom not in missing and not any(covers(held, atom) for held in held_rules):
                missing.append(atom)
    return missing


def compact(missing: list[Rule]) -> list[Rule]:
    """Atoms of the same group, resource and name merged into one rule with their verbs."""
    merged: list[Rule] = []
    for atom in missing:
        if "nonResourceURLs" in atom:
            merged.append(copy.deepcopy(atom))
            continue
        for rule in merged:
            if "nonResourceURLs" not in rule and all(rule.get(key) == atom.get(key)
                                                     for key in ("apiGroups", "resources", "resourceNames")):
                rule["verbs"].append(atom["verbs"][0])
                break
        else:
            merged.append(copy.deepcopy(atom))
    return merged


def _quoted(values: list[str]) -> str:
    return "[" + " ".join('"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"' for value in values) + "]"


def compact_text(rule: Rule) -> str:
    """A rule as the server lists it in the message: `{APIGroups:["x"], Resources:["y"], Verbs:["get"]}`."""
    parts = [f"{label}:{_quoted(rule[key])}" for key, label in (
        ("apiGroups", "APIGroups"), ("resources", "Resources"), ("nonResourceURLs", "NonResourceURLs"),
        ("resourceNames", "ResourceNames"), ("verbs", "Verbs")) if rule.get(key)]
    return "{" + ", ".join(parts) + "}"


def rules_for(user: str, groups: list[str], namespace: str, objects: Objects) -> tuple[list[Rule], list[str]]:
    """Every rule the user holds in the namespace (cluster-wide ones only for ""), and the errors
    met resolving its bindings (roles that do not exist)."""
    held: list[Rule] = []
    errors: list[str] = []
    for binding_kind, binding in bindings(objects, namespace):
        binding_namespace = (binding.get("metadata") or {}).get("namespace", "") if binding_kind == "RoleBinding" \
            else ""
        if not any(subject_matches(subject, user, groups, binding_namespace)
                   for subject in binding.get("subjects") or []):
            continue
        role, missing = referenced_role(binding.get("roleRef") or {}, binding_namespace, objects)
        if role is None:
            errors.append(missing)
            continue
        held.extend(rule for rule in role_rules(role) if isinstance(rule, dict))
    return held, errors


def referenced_role(role_ref: dict[str, Any], namespace: str,
                    objects: Objects) -> tuple[dict[str, Any] | None, str]:
    """The Role (in `namespace`) or ClusterRole a roleRef names, or None and the not-found text."""
    name = role_ref.get("name", "")
    if role_ref.get("kind") == "Role":
        return (find_object(objects, "roles", name, namespace),
                f'role.rbac.authorization.k8s.io "{name}" not found')
    return find_object(objects, "clusterroles", name, None), f'clusterrole.rbac.authorization.k8s.io "{name}" not found'


def _forbidden(plural: str, name: str, user: str, groups: list[str], missing: list[Rule],
               errors: list[str]) -> ApiError:
    listed = "\n".join(sorted(compact_text(rule) for rule in compact(missing)))
    message = (f'{plural}.{RBAC_GROUP} "{name}" is forbidden: user "{user}" (groups={_quoted(groups)}) is '
               f"attempting to grant RBAC permissions not currently held:\n{listed}")
    if errors:
        message += f"; resolution errors: [{' '.join(errors)}]"
    return ApiError(403, "Forbidden", message, {"name": name, "group": RBAC_GROUP, "kind": plural})


def only_neutral_change(obj: dict[str, Any], old: dict[str, Any] | None) -> bool:
    """An update that changes nothing but the garbage collector's and the server's metadata."""
    if old is None:
        return False

    def without_neutral(item: dict[str, Any]) -> dict[str, Any]:
        trimmed = dict(item)
        trimmed["metadata"] = {k: v for k, v in (item.get("metadata") or {}).items() if k not in _NEUTRAL_METADATA}
        return trimmed
    return without_neutral(obj) == without_neutral(old)


def check_escalation(plural: str, obj: dict[str, Any], old: dict[str, Any] | None, request_name: str,
                     user: str, groups: list[str], objects: Objects) -> None:
    """Raises the server's 403 when this create (old None) or update of a role or binding would grant
    the user permissions it does not hold; returns for other resources."""
    if plural not in ("roles", "clusterroles", "rolebindings", "clusterrolebindings"):
        return
    if SUPERUSER_GROUP in groups or only_neutral_change(obj, old):
        return
    meta = obj.get("metadata") or {}
    name = meta.get("name", "")
    namespace = meta.get("namespace", "") if plural in ("roles", "rolebindings") else ""
    if plural in ("roles", "clusterroles"):
        if authorize(user, groups, "escalate", RBAC_GROUP, plural, "", namespace, request_name, objects)[0]:
            return
        if plural == "clusterroles" and obj.get("aggregationRule"):
            held, _ = rules_for(user, groups, "", objects)
            if missing_atoms(held, FULL_AUTHORITY):
                raise ApiError(403, "Forbidden", f'{plural}.{RBAC_GROUP} "{name}" is forbidden: must have '
                               "cluster-admin privileges to use the aggregationRule",
                               {"name": name, "group": RBAC_GROUP, "kind": plural})
        wanted = [rule for rule in obj.get("rules") or [] if isinstance(rule, dict)]
    else:
        role_ref = obj.get("roleRef") or {}
        role_plural = "roles" if role_ref.get("kind") == "Role" else "clusterroles"
        if authorize(user, groups, "bind", RBAC_GROUP, role_plural, "", namespace, role_ref.get("name", ""),
                     objects)[0]:
            return
        role, not_found = referenced_role(role_ref, namespace, objects)
        if role is None:
            raise ApiError(404, "NotFound", f'{role_plural}.{RBAC_GROUP} "{role_ref.get("name", "")}" not found',
                           {"name": role_ref.get("name", ""), "group": RBAC_GROUP, "kind": role_plural})
        wanted = [rule for rule in role_rules(role) if isinstance(rule, dict)]
    held, errors = rules_for(user, groups, namespace, objects)
    missing = missing_atoms(held, wanted)
    if missing:
        raise _forbidden(plural, name, user, groups, missing, errors)
