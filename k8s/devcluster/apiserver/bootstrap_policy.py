"""The ClusterRoles and ClusterRoleBindings a fresh cluster starts with, shaped as kube-apiserver's
RBAC bootstrap policy makes them (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go).

`admin`, `edit` and `view` hold no rules of their own: each has an aggregationRule, and the ClusterRole
aggregation controller (clusterrole_aggregation.py) fills their rules from the ClusterRoles its selector
matches. Their names, labels and selectors are the real ones, which chain them: `view` carries
aggregate-to-edit, so `edit` takes view's rules; `edit` carries aggregate-to-admin, so `admin` takes
edit's. The rules themselves live in `system:aggregate-to-view`, `-edit` and `-admin`; here they name only
the resources this stand-in serves (the real ones also list apps, batch, autoscaling, policy,
networking and the pods/exec-like subresources)."""

from __future__ import annotations

from typing import Any

from .rbac import RBAC_GROUP

# What the bootstrap policy puts on every role and binding it makes.
BOOTSTRAP_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
BOOTSTRAP_ANNOTATIONS = {"rbac.authorization.kubernetes.io/autoupdate": "true"}
AGGREGATE_TO_ADMIN = "rbac.authorization.k8s.io/aggregate-to-admin"
AGGREGATE_TO_EDIT = "rbac.authorization.k8s.io/aggregate-to-edit"
AGGREGATE_TO_VIEW = "rbac.authorization.k8s.io/aggregate-to-view"

READ = ["get", "list", "watch"]
WRITE = ["create", "update", "patch", "delete", "deletecollection"]
READ_WRITE = READ + WRITE

Object = dict[str, Any]


def _rule(verbs: list[str], group: str, *resources: str) -> Object:
    return {"apiGroups": [group], "resources": list(resources), "verbs": list(verbs)}


def _metadata(name: str, labels: dict[str, str] | None = None) -> Object:
    return {"name": name, "labels": {**(labels or {}), **BOOTSTRAP_LABELS},
            "annotations": dict(BOOTSTRAP_ANNOTATIONS)}


def _aggregated(name: str, selects: str, labels: dict[str, str] | None = None) -> Object:
    """A role whose rules are those of every ClusterRole labelled `selects: "true"`."""
    return {"metadata": _metadata(name, labels),
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {selects: "true"}}]}}


def cluster_roles() -> list[Object]:
    """cluster-admin, system:basic-user, the user-facing roles and the system:aggregate-to-* roles
    that fill them."""
    return [
        {"metadata": _metadata("cluster-admin"),
         "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                   {"nonResourceURLs": ["*"], "verbs": ["*"]}]},
        # What every authenticated user may ask about itself (`kubectl auth can-i`).
        {"metadata": _metadata("system:basic-user"),
         "rules": [_rule(["create"], "authorization.k8s.io", "selfsubjectaccessreviews", "selfsubjectrulesreviews")]},
        _aggregated("admin", AGGREGATE_TO_ADMIN),
        _aggregated("edit", AGGREGATE_TO_EDIT, {AGGREGATE_TO_ADMIN: "true"}),
        _aggregated("view", AGGREGATE_TO_VIEW, {AGGREGATE_TO_EDIT: "true"}),
        {"metadata": _metadata("system:aggregate-to-admin", {AGGREGATE_TO_ADMIN: "true"}),
         "rules": [_rule(["create"], "authorization.k8s.io", "localsubjectaccessreviews"),
                   _rule(READ_WRITE, RBAC_GROUP, "roles", "rolebindings")]},
        # Escalating powers (secrets, acting as a service account, writes) that `view` lacks.
        {"metadata": _metadata("system:aggregate-to-edit", {AGGREGATE_TO_EDIT: "true"}),
         "rules": [_rule(READ, "", "secrets"),
                   _rule(["impersonate"], "", "serviceaccounts"),
                   _rule(WRITE, "", "pods"),
                   # No Endpoints (nor EndpointSlices) since v1.22: writing them redirects a Service's
                   # traffic anywhere (CVE-2021-25740).
                   _rule(WRITE, "", "serviceaccounts", "services", "configmaps", "secrets"),
                   _rule(["create"], "", "serviceaccounts/token"),
                   _rule(WRITE, "networking.k8s.io", "networkpolicies")]},
        {"metadata": _metadata("system:aggregate-to-view", {AGGREGATE_TO_VIEW: "true"}),
         "rules": [_rule(READ, "", "pods", "serviceaccounts", "services", "services/status", "endpoints",
                         "configmaps"),
                   _rule(READ, "", "resourcequotas", "bindings", "events", "pods/status", "resourcequotas/status",
                         "namespaces/status", "pods/log"),
                   # namespaces read in a namespace: the one the binding is in.
                   _rule(READ, "", "namespaces"),
                   _rule(READ, "networking.k8s.io", "networkpolicies"),
                   _rule(READ, "discovery.k8s.io", "endpointslices")]},
    ]


def _binding(role: str, group: str) -> Object:
    return {"metadata": _metadata(role),
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": group}]}


def cluster_role_bindings() -> list[Object]:
    """cluster-admin for system:masters, system:basic-user for every authenticated user."""
    return [_binding("cluster-admin", "system:masters"), _binding("system:basic-user", "system:authenticated")]
