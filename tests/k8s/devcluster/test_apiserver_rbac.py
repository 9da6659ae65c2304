"""RBAC decisions over stored roles and bindings, and the 403 the server words from them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from k8s.devcluster.apiserver.rbac import authorize, forbidden_error

CONTROLLER = "system:serviceaccount:fiber-system:fiber-controller"
RBAC_DIR = Path(__file__).resolve().parents[3] / "k8s/config/rbac"


def role(kind: str, name: str, rules: list[dict[str, Any]], namespace: str = "") -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"kind": kind, "metadata": meta, "rules": rules}


def binding(kind: str, name: str, role_kind: str, role_name: str, subjects: list[dict[str, Any]],
            namespace: str = "") -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"kind": kind, "metadata": meta, "subjects": subjects,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind,
                        "name": role_name}}


STORE: dict[str, list[dict[str, Any]]] = {
    "clusterroles": [
        role("ClusterRole", "fiber-controller", [
            {"apiGroups": ["fibermpi.io"], "resources": ["fiberjobs"],
             "verbs": ["get", "list", "watch", "update", "patch"]},
            {"apiGroups": ["fibermpi.io"], "resources": ["fiberjobs/status"],
             "verbs": ["get", "update", "patch"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "delete", "get",
                                                                 "list", "watch"]},
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
             "resourceNames": ["fiber-controller"], "verbs": ["get", "update"]},
            {"nonResourceURLs": ["/metrics", "/debug/*"], "verbs": ["get"]},
        ]),
        role("ClusterRole", "view-everything", [{"apiGroups": ["*"], "resources": ["*"],
                                                 "verbs": ["get", "list"]}]),
        role("ClusterRole", "status-reader", [{"apiGroups": ["*"], "resources": ["*/status"],
                                               "verbs": ["get"]}]),
    ],
    "clusterrolebindings": [
        binding("ClusterRoleBinding", "fiber-controller", "ClusterRole", "fiber-controller",
                [{"kind": "ServiceAccount", "name": "fiber-controller",
                  "namespace": "fiber-system"}]),
        binding("ClusterRoleBinding", "auditors", "ClusterRole", "status-reader",
                [{"kind": "Group", "name": "auditors", "apiGroup": "rbac.authorization.k8s.io"}]),
        binding("ClusterRoleBinding", "dangling", "ClusterRole", "gone",
                [{"kind": "User", "name": "carol"}]),
    ],
    "roles": [
        role("Role", "job-editor", [{"apiGroups": ["fibermpi.io"], "resources": ["fiberjobs"],
                                     "verbs": ["*"]}], namespace="team-a"),
    ],
    "rolebindings": [
        binding("RoleBinding", "alice-edits", "Role", "job-editor",
                [{"kind": "User", "name": "alice"}], namespace="team-a"),
        binding("RoleBinding", "bob-views", "ClusterRole", "view-everything",
                [{"kind": "User", "name": "bob"}], namespace="team-b"),
        binding("RoleBinding", "local-sa", "Role", "job-editor",
                [{"kind": "ServiceAccount", "name": "runner"}], namespace="team-a"),
    ],
}


def objects(group: str, plural: str) -> list[dict[str, Any]]:
    assert group == "rbac.authorization.k8s.io"
    return STORE.get(plural, [])


def allowed(user: str, verb: str, group: str, resource: str, subresource: str = "",
            namespace: str = "", name: str = "", groups: list[str] | None = None) -> bool:
    return authorize(user, groups or [], verb, group, resource, subresource, namespace, name,
                     objects)[0]


def test_cluster_role_binding_grants_everywhere_to_its_service_account():
    assert allowed(CONTROLLER, "list", "fibermpi.io", "fiberjobs")
    assert allowed(CONTROLLER, "watch", "fibermpi.io", "fiberjobs", namespace="any")
    assert allowed(CONTROLLER, "create", "", "pods", namespace="team-a")
    ok, reason = authorize(CONTROLLER, [], "get", "fibermpi.io", "fiberjobs", "", "team-a", "j",
                           objects)
    assert ok and reason == ('RBAC: allowed by ClusterRoleBinding "fiber-controller" of '
                             'ClusterRole "fiber-controller" to ServiceAccount '
                             '"fiber-system/fiber-controller"')


def test_verbs_and_groups_must_match():
    assert not allowed(CONTROLLER, "delete", "fibermpi.io", "fiberjobs", namespace="a", name="j")
    assert not allowed(CONTROLLER, "get", "other.io", "fiberjobs", namespace="a", name="j")
    assert not allowed(CONTROLLER, "create", "", "services", namespace="a")


def test_subresources_are_granted_only_in_their_own_form():
    assert allowed(CONTROLLER, "update", "fibermpi.io", "fiberjobs", "status", "a", "j")
    assert not allowed(CONTROLLER, "update", "fibermpi.io", "fiberjobs", "scale", "a", "j")
    assert not allowed(CONTROLLER, "create", "", "pods", "eviction", "a", "p")
    assert allowed("dave", "get", "", "pods", "status", "a", "p", groups=["auditors"])
    assert not allowed("dave", "get", "", "pods", "", "a", "p", groups=["auditors"])


def test_resource_names_never_match_requests_without_a_name():
    assert allowed(CONTROLLER, "get", "coordination.k8s.io", "leases", namespace="fiber-system",
                   name="fiber-controller")
    assert not allowed(CONTROLLER, "get", "coordination.k8s.io", "leases",
                       namespace="fiber-system", name="other")
    assert not allowed(CONTROLLER, "list", "coordination.k8s.io", "leases",
                       namespace="fiber-system")


def test_role_bindings_grant_only_in_their_namespace():
    assert allowed("alice", "delete", "fibermpi.io", "fiberjobs", namespace="team-a", name="j")
    assert not allowed("alice", "get", "fibermpi.io", "fiberjobs", namespace="team-b", name="j")
    assert not allowed("alice", "list", "fibermpi.io", "fiberjobs")  # cluster scope
    assert allowed("bob", "list", "", "pods", namespace="team-b")
    assert not allowed("bob", "list", "", "pods", namespace="team-a")
    assert not allowed("bob", "watch", "", "pods", namespace="team-b")


def test_a_service_account_subject_without_namespace_means_the_bindings():
    assert allowed("system:serviceaccount:team-a:runner", "create", "fibermpi.io", "fiberjobs",
                   namespace="team-a")
    assert not allowed("system:serviceaccount:team-b:runner", "create", "fibermpi.io",
                       "fiberjobs", namespace="team-a")


def test_non_resource_urls():
    assert allowed(CONTROLLER, "get", "", "", name="/metrics")
    assert allowed(CONTROLLER, "get", "", "", name="/debug/pprof")
    assert not allowed(CONTROLLER, "get", "", "", name="/healthz")


def test_system_masters_may_do_anything_and_nobody_else_is_allowed_by_default():
    assert allowed("admin", "delete", "", "nodes", name="n", groups=["system:masters"])
    assert authorize("eve", [], "get", "", "pods", "", "default", "p", objects) == (False, "")


def test_a_missing_role_is_named_in_the_denial():
    assert authorize("carol", [], "get", "", "pods", "", "default", "p", objects) == (
        False, 'RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found')


def test_forbidden_messages_are_worded_as_the_server_words_them():
    error = forbidden_error("eve", "get", "", "pods", "", "default", "p", "")
    assert (error.code, error.reason) == (403, "Forbidden")
    assert error.message == ('pods "p" is forbidden: User "eve" cannot get resource "pods" in API '
                             'group "" in the namespace "default"')
    error = forbidden_error("eve", "list", "fibermpi.io", "fiberjobs", "", "", "", "")
    assert error.message == ('fiberjobs.fibermpi.io is forbidden: User "eve" cannot list resource '
                             '"fiberjobs" in API group "fibermpi.io" at the cluster scope')
    assert error.details == {"kind": "fiberjobs", "group": "fibermpi.io"}
    error = forbidden_error("carol", "update", "fibermpi.io", "fiberjobs", "status", "ns", "j",
                            'RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found')
    assert error.message == (
        'fiberjobs.fibermpi.io "j" is forbidden: User "carol" cannot update resource '
        '"fiberjobs/status" in API group "fibermpi.io" in the namespace "ns": RBAC: '
        'clusterrole.rbac.authorization.k8s.io "gone" not found')
    error = forbidden_error("eve", "get", "", "", "", "", "/metrics", "")
    assert error.message == 'forbidden: User "eve" cannot get path "/metrics"'


def project_rbac_objects() -> dict[str, list[dict[str, Any]]]:
    """The controller's ServiceAccount roles and bindings as the project ships them."""
    plurals = {"Role": "roles", "ClusterRole": "clusterroles", "RoleBinding": "rolebindings",
               "ClusterRoleBinding": "clusterrolebindings"}
    stored: dict[str, list[dict[str, Any]]] = {plural: [] for plural in plurals.values()}
    for manifest in sorted(RBAC_DIR.glob("*.yaml")):
        for document in yaml.safe_load_all(manifest.read_text()):
            if document and document.get("kind") in plurals:
                stored[plurals[document["kind"]]].append(document)
    return stored


def test_the_shipped_controller_role_grants_what_the_controller_does_and_no_more():
    shipped = project_rbac_objects()

    def can(verb: str, group: str, resource: str, subresource: str = "", namespace: str = "",
            name: str = "") -> bool:
        return authorize(CONTROLLER, ["system:serviceaccounts"], verb, group, resource,
                         subresource, namespace, name, lambda _g, plural: shipped[plural])[0]

    assert can("list", "fibermpi.io", "fiberjobs") and can("watch", "fibermpi.io", "fiberjobs")
    assert can("update", "fibermpi.io", "fiberjobs", "status", "team-a", "job")
    assert can("create", "", "pods", namespace="team-a")
    assert can("get", "", "pods", "log", "team-a", "job-nameservice")
    assert can("create", "", "events", namespace="team-a")
    assert can("create", "coordination.k8s.io", "leases", namespace="fiber-system")
    assert can("update", "coordination.k8s.io", "leases", "", "fiber-system", "fiber-controller")
    assert not can("update", "coordination.k8s.io", "leases", "", "fiber-system", "other")
    assert not can("create", "coordination.k8s.io", "leases", namespace="team-a")
    assert not can("update", "fibermpi.io", "fiberjobs", "", "team-a", "job")
    assert not can("update", "", "pods", "status", "team-a", "job-worker-0")
    # Each job's join-token Secret: created and read by name (created again when missing), never
    # listed or watched (that would read every Secret), changed or deleted by the controller (the
    # garbage collector deletes it with its job).
    assert can("create", "", "secrets", namespace="team-a")
    assert can("get", "", "secrets", "", "team-a", "job-join-token")
    assert not can("list", "", "secrets") and not can("watch", "", "secrets")
    for verb in ("update", "patch", "delete"):
        assert not can(verb, "", "secrets", "", "team-a", "job-join-token")
    assert can("create", "networking.k8s.io", "networkpolicies", namespace="team-a")
    # A job's egress policy JOB.egress follows the namespace's policies: updated, and deleted once
    # nothing isolates the job's egress. RBAC cannot name a pattern of names, so the grant covers
    # every policy (docs/kubernetes.md says so); the EndpointSlice it reads is named.
    assert can("update", "networking.k8s.io", "networkpolicies", "", "team-a", "job.egress")
    assert can("delete", "networking.k8s.io", "networkpolicies", "", "team-a", "job.egress")
    assert can("get", "discovery.k8s.io", "endpointslices", "", "default", "kubernetes")
    assert not can("get", "discovery.k8s.io", "endpointslices", "", "default", "other")
    assert not can("list", "discovery.k8s.io", "endpointslices", namespace="default")


def test_an_aggregated_cluster_role_grants_its_stored_rules_only():
    """As the real authorizer: what the aggregation controller wrote into the role, not what its
    selectors would match now (test_apiserver_rbac_aggregation.py covers the controller)."""
    stored = {
        "clusterroles": [
            {"metadata": {"name": "fiberjob-viewer"},
             "aggregationRule": {"clusterRoleSelectors": [
                 {"matchLabels": {"rbac.fibermpi.io/aggregate-to-view": "true"}}]},
             "rules": [{"apiGroups": ["fibermpi.io"], "resources": ["fiberjobs"], "verbs": ["get"]}]},
            {"metadata": {"name": "pods", "labels": {"rbac.fibermpi.io/aggregate-to-view": "true"}},
             "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]},
        ],
        "clusterrolebindings": [binding("ClusterRoleBinding", "v", "ClusterRole",
                                        "fiberjob-viewer", [{"kind": "User", "name": "vic"}])],
    }

    def can(verb: str, group: str, resource: str, name: str = "") -> bool:
        return authorize("vic", [], verb, group, resource, "", "ns", name,
                         lambda _g, plural: stored.get(plural, []))[0]

    assert can("get", "fibermpi.io", "fiberjobs", "j")
    assert not can("list", "", "pods")
