"""ClusterRole aggregation and the built-in admin/edit/view roles: the aggregation controller's rules
(selector order, name order, each rule once, itself skipped, chains settle, written rules replaced),
checked in-process pass by pass; then through a running stand-in, users bound to `edit`, `view` and
`admin` by RoleBindings doing (or not) what the project's aggregated FiberJob roles grant."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml

from conftest import ApiServerProcess, start_apiserver
from k8s.devcluster.apiserver.api import Api, Context
from k8s.devcluster.apiserver.bootstrap_policy import cluster_roles
from k8s.devcluster.apiserver.clusterrole_aggregation import ClusterRoleAggregator, aggregated_rules
from k8s.devcluster.apiserver.errors import ApiError
from k8s.devcluster.apiserver.registry import Registry
from k8s.devcluster.apiserver.store import Store

REPO_ROOT = Path(__file__).resolve().parents[3]
CRD_FILE = REPO_ROOT / "k8s/config/crd/bases/fibermpi.io_fiberjobs.yaml"
USER_ROLES_FILE = REPO_ROOT / "k8s/config/user_roles/fiberjob_user_roles.yaml"
RBAC = "rbac.authorization.k8s.io"
CLUSTERROLES = f"/apis/{RBAC}/v1/clusterroles"
TO_ADMIN, TO_EDIT, TO_VIEW = (f"{RBAC}/aggregate-to-{name}" for name in ("admin", "edit", "view"))
USERS = {"alice": "edit", "vic": "view", "ada": "admin"}       # user -> built-in role in team-a
LEASES = {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "list"]}


def rule(group: str, resource: str, *verbs: str) -> dict[str, Any]:
    return {"apiGroups": [group], "resources": [resource], "verbs": list(verbs)}


def cluster_role(name: str, rules: list[dict[str, Any]] | None = None, labels: dict[str, str] | None = None,
                 selects: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    role: dict[str, Any] = {"metadata": {"name": name, **({"labels": labels} if labels else {})}}
    if rules is not None:
        role["rules"] = rules
    if selects is not None:
        role["aggregationRule"] = {"clusterRoleSelectors": selects}
    return role


# ---- the aggregation, pass by pass ----------------------------------------------------------------

def test_rules_are_gathered_selector_by_selector_in_name_order_each_once_without_itself():
    tier = {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]}
    role = cluster_role("agg", rules=[rule("", "secrets", "get")], labels={"pick": "yes"},
                        selects=[{"matchLabels": {"pick": "yes"}}, tier])
    others = [role,
              cluster_role("b-picked", [rule("", "pods", "get"), rule("", "pods", "list")], {"pick": "yes"}),
              cluster_role("a-picked", [rule("", "pods", "list")], {"pick": "yes"}),
              cluster_role("gold", [rule("", "pods", "get"), rule("", "events", "get")], {"tier": "gold"}),
              cluster_role("silver", [rule("", "nodes", "get")], {"tier": "silver"})]
    assert aggregated_rules(role, others) == [rule("", "pods", "list"), rule("", "pods", "get"),
                                              rule("", "events", "get")]
    # A missing list and an empty one are the same rule (Go's semantic equality).
    with_empty = cluster_role("c-picked", [{**rule("", "pods", "list"), "resourceNames": []}], {"pick": "yes"})
    assert aggregated_rules(role, [with_empty, *others]) == aggregated_rules(role, others)


def test_exists_and_does_not_exist_select_by_the_key_alone():
    role = cluster_role("agg", selects=[{"matchExpressions": [{"key": "a", "operator": "Exists"},
                                                              {"key": "b", "operator": "DoesNotExist"}]}])
    others = [cluster_role("yes", [rule("", "pods", "get")], {"a": "1"}),
              cluster_role("no", [rule("", "nodes", "get")], {"a": "1", "b": "2"})]
    assert aggregated_rules(role, others) == [rule("", "pods", "get")]


class InProcess:
    """Store, API and aggregator without threads or HTTP: a pass runs when the test says so."""

    def __init__(self) -> None:
        self.api = Api(Store(), Registry())
        self.info = self.api.registry.lookup(RBAC, "v1", "clusterroles")
        self.aggregator = ClusterRoleAggregator(self.api)
        for role in cluster_roles():
            self.create(role)

    def create(self, role: dict[str, Any]) -> None:
        assert self.info is not None
        self.api.create(self.info, "", role, Context())

    def get(self, name: str) -> dict[str, Any]:
        assert self.info is not None
        return self.api.get(self.info, "", name)

    def settle(self) -> int:
        """Passes until one writes nothing; returns how many wrote."""
        for passes in range(10):
            before = self.api.store.rv
            self.aggregator.sync_all()
            if self.api.store.rv == before:
                return passes
        raise AssertionError("the aggregation did not settle in 10 passes")


@pytest.fixture
def cluster() -> InProcess:
    return InProcess()


def test_admin_takes_edit_which_takes_view_and_then_nothing_more_is_written(cluster: InProcess):
    assert cluster.settle() >= 2                 # a chain needs more than one pass
    view, edit, admin = (cluster.get(name)["rules"] for name in ("view", "edit", "admin"))
    assert view == cluster.get("system:aggregate-to-view")["rules"]
    assert all(r in edit for r in view + cluster.get("system:aggregate-to-edit")["rules"])
    admin_only = cluster.get("system:aggregate-to-admin")["rules"]
    assert all(r in admin for r in edit + admin_only)
    assert not any(r in edit for r in admin_only)             # roles and rolebindings: admin's alone
    assert cluster.settle() == 0


def test_a_labelled_role_added_changed_and_removed_is_followed(cluster: InProcess):
    cluster.settle()
    cluster.create(cluster_role("leases-view", [LEASES], {TO_VIEW: "true"}))
    cluster.settle()
    assert all(LEASES in cluster.get(name)["rules"] for name in ("view", "edit", "admin"))
    unlabelled = copy.deepcopy(cluster.get("leases-view"))
    unlabelled["metadata"]["labels"] = {"other": "true"}
    assert cluster.info is not None
    cluster.api.commit_update(cluster.info, cluster.get("leases-view"), unlabelled, Context(), None)
    cluster.settle()
    assert not any(LEASES in cluster.get(name)["rules"] for name in ("view", "edit", "admin"))
    cluster.create(cluster_role("leases-edit", [LEASES], {TO_EDIT: "true"}))
    cluster.settle()
    assert LEASES not in cluster.get("view")["rules"] and LEASES in cluster.get("admin")["rules"]
    cluster.api.delete(cluster.info, "", "leases-edit", {}, Context())
    cluster.settle()
    assert LEASES not in cluster.get("admin")["rules"]


def test_rules_written_into_an_aggregated_role_are_replaced_by_the_aggregated_ones(cluster: InProcess):
    cluster.settle()
    aggregated = cluster.get("view")["rules"]
    written = copy.deepcopy(cluster.get("view"))
    written["rules"] = [rule("", "secrets", "get", "list")] + aggregated
    assert cluster.info is not None
    cluster.api.commit_update(cluster.info, cluster.get("view"), written, Context(), None)
    assert rule("", "secrets", "get", "list") in cluster.get("view")["rules"]      # the write itself is taken
    cluster.settle()
    assert cluster.get("view")["rules"] == aggregated
    # Created with rules of its own: they go too, for the matched ones, or for none when nothing matches.
    cluster.create(cluster_role("jobs", [rule("", "pods", "delete")], selects=[{"matchLabels": {TO_VIEW: "true"}}]))
    cluster.create(cluster_role("nothing", [rule("", "pods", "delete")], selects=[{"matchLabels": {"x": "y"}}]))
    cluster.settle()
    assert cluster.get("jobs")["rules"] == aggregated
    assert "rules" not in cluster.get("nothing")


def test_an_aggregation_rule_without_selectors_or_with_a_bad_one_is_refused(cluster: InProcess):
    with pytest.raises(ApiError) as refused:
        cluster.create(cluster_role("empty", selects=[]))
    assert refused.value.code == 422
    assert refused.value.status()["details"]["causes"] == [{
        "reason": "FieldValueRequired", "field": "aggregationRule.clusterRoleSelectors",
        "message": "Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"}]
    with pytest.raises(ApiError) as refused:
        cluster.create(cluster_role("bad", selects=[{"matchExpressions": [{"key": "a", "operator": "Equals"},
                                                                          {"key": "b", "operator": "In"}]}]))
    assert [(c["field"], c["message"]) for c in refused.value.status()["details"]["causes"]] == [
        ("aggregationRule.clusterRoleSelectors[0].matchExpressions[0].operator",
         'Invalid value: "Equals": not a valid selector operator'),
        ("aggregationRule.clusterRoleSelectors[0].matchExpressions[1].values",
         "Required value: must be specified when `operator` is 'In' or 'NotIn'")]


# ---- users of a running stand-in ------------------------------------------------------------------

def wait_for_role(server: ApiServerProcess, name: str, holds: Callable[[dict[str, Any]], bool],
                  timeout_s: int = 10) -> dict[str, Any]:
    """The ClusterRole once `holds` is true of it, seen through a watch from a list (the aggregation
    controller writes after the request that triggers it has been answered)."""
    listed = server.ok(server.get(CLUSTERROLES, params={"fieldSelector": f"metadata.name={name}"}))
    if listed["items"] and holds(listed["items"][0]):
        return listed["items"][0]
    for event in server.watch(CLUSTERROLES, fieldSelector=f"metadata.name={name}",
                              resourceVersion=listed["metadata"]["resourceVersion"], timeoutSeconds=timeout_s):
        if event["type"] in ("ADDED", "MODIFIED") and holds(event["object"]):
            return event["object"]
    raise AssertionError(f"ClusterRole {name} did not come to hold what was expected in {timeout_s} s")


def holding(*rules: dict[str, Any]) -> Callable[[dict[str, Any]], bool]:
    return lambda role: all(r in (role.get("rules") or []) for r in rules)


def fiberjob(name: str) -> dict[str, Any]:
    return {"apiVersion": "fibermpi.io/v1alpha1", "kind": "FiberJob", "metadata": {"name": name},
            "spec": {"launcher": {"template": {"spec": {"containers": [
                         {"name": "main", "image": "fibermpi/runtime", "command": ["true"]}]}}},
                     "workers": {"template": {}, "maxReplicas": 4}}}


def jobs(namespace: str, name: str = "", subresource: str = "") -> str:
    path = f"/apis/fibermpi.io/v1alpha1/namespaces/{namespace}/fiberjobs"
    return path + (f"/{name}" if name else "") + (f"/{subresource}" if subresource else "")


class Users:
    """Requests as one of the token file's users (the stand-in runs plain HTTP, --insecure: a request
    with a token is that user's, one without is the cluster admin's)."""

    def __init__(self, server: ApiServerProcess):
        self.server = server

    def call(self, user: str, method: str, path: str, body: Any = None,
             content_type: str = "application/json") -> int:
        response = self.server.request(method, path, body, content_type=content_type,
                                       headers={"Authorization": f"Bearer {user}-token"})
        assert response.status_code in (200, 201, 403), f"{response.status_code}: {response.text}"
        if response.status_code == 403:
            assert response.json()["reason"] == "Forbidden"
        return response.status_code

    def can(self, user: str, verb: str, resource: str, namespace: str, subresource: str = "") -> bool:
        """SelfSubjectAccessReview, as `kubectl auth can-i` asks (system:basic-user allows it)."""
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                  "spec": {"resourceAttributes": {"namespace": namespace, "verb": verb, "group": "fibermpi.io",
                                                  "resource": resource, "subresource": subresource}}}
        response = self.server.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review,
                                       headers={"Authorization": f"Bearer {user}-token"})
        return bool(self.server.ok(response)["status"]["allowed"])


@pytest.fixture(scope="module")
def users(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Users]:
    """A stand-in with the FiberJob CRD and the project's user roles, users bound in team-a."""
    state = tmp_path_factory.mktemp("apiserver-aggregation")
    tokens = state / "tokens.csv"
    tokens.write_text("".join(f"{user}-token,{user},{user}-uid\n" for user in USERS))
    server = start_apiserver(state, "--token-file", str(tokens))
    try:
        server.ok(server.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                              yaml.safe_load(CRD_FILE.read_text())))
        for namespace in ("team-a", "team-b"):
            server.namespace(namespace)
        shipped = [doc for doc in yaml.safe_load_all(USER_ROLES_FILE.read_text()) if doc]
        for role in shipped:
            server.ok(server.post(CLUSTERROLES, role))
        for user, role in USERS.items():
            server.ok(server.post(f"/apis/{RBAC}/v1/namespaces/team-a/rolebindings", {
                "metadata": {"name": f"{user}-{role}"},
                "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
                "subjects": [{"apiGroup": RBAC, "kind": "User", "name": user}]}))
        wanted = [r for role in shipped for r in role["rules"]]
        for name in ("edit", "admin"):
            wait_for_role(server, name, holding(*wanted))
        view_role = next(role for role in shipped if TO_VIEW in role["metadata"]["labels"])
        wait_for_role(server, "view", holding(*view_role["rules"]))
        yield Users(server)
    finally:
        server.stop()


def test_the_built_in_roles_select_and_are_labelled_as_the_real_servers(users: Users):
    roles = {item["metadata"]["name"]: item for item in users.server.ok(users.server.get(CLUSTERROLES))["items"]}
    for name, selects, labels in (("admin", TO_ADMIN, {}), ("edit", TO_EDIT, {TO_ADMIN: "true"}),
                                  ("view", TO_VIEW, {TO_EDIT: "true"})):
        assert roles[name]["aggregationRule"] == {"clusterRoleSelectors": [{"matchLabels": {selects: "true"}}]}
        assert roles[name]["metadata"]["labels"] == {**labels, "kubernetes.io/bootstrapping": "rbac-defaults"}
    for name, label in (("system:aggregate-to-admin", TO_ADMIN), ("system:aggregate-to-edit", TO_EDIT),
                        ("system:aggregate-to-view", TO_VIEW)):
        assert roles[name]["metadata"]["labels"] == {label: "true", "kubernetes.io/bootstrapping": "rbac-defaults"}
        assert "aggregationRule" not in roles[name]
    assert roles["cluster-admin"]["rules"][0] == {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}


@pytest.mark.parametrize("user", ["alice", "ada"])
def test_edit_and_admin_create_change_scale_and_delete_fiberjobs_in_their_namespace_only(users: Users, user: str):
    name = f"{user}-job"
    assert users.call(user, "POST", jobs("team-a"), fiberjob(name)) == 201
    assert users.call(user, "PATCH", jobs("team-a", name, "scale"), {"spec": {"replicas": 3}},
                      "application/merge-patch+json") == 200
    assert users.server.ok(users.server.get(jobs("team-a", name)))["spec"]["workers"]["replicas"] == 3
    scale = users.server.ok(users.server.get(jobs("team-a", name, "scale")))
    scale["spec"]["replicas"] = 2
    assert users.call(user, "PUT", jobs("team-a", name, "scale"), scale) == 200
    assert users.call(user, "PATCH", jobs("team-a", name), {"spec": {"workers": {"maxReplicas": 6}}},
                      "application/merge-patch+json") == 200
    assert users.call(user, "GET", jobs("team-a", name, "status")) == 200
    assert users.call(user, "PATCH", jobs("team-a", name, "status"), {"status": {"phase": "Running"}},
                      "application/merge-patch+json") == 403            # status is the controller's
    assert users.call(user, "DELETE", jobs("team-a", name)) == 200
    assert users.call(user, "DELETE", jobs("team-a")) == 200             # deletecollection
    assert users.call(user, "POST", jobs("team-b"), fiberjob(name)) == 403
    assert users.call(user, "GET", jobs("team-b")) == 403
    assert users.can(user, "create", "fiberjobs", "team-a") and users.can(user, "patch", "fiberjobs", "team-a", "scale")
    assert not users.can(user, "create", "fiberjobs", "team-b")


def test_view_reads_fiberjobs_but_cannot_create_change_or_scale_them(users: Users):
    users.server.ok(users.server.post(jobs("team-a"), fiberjob("viewed")))
    assert users.call("vic", "GET", jobs("team-a")) == 200
    assert users.call("vic", "GET", jobs("team-a", "viewed")) == 200
    assert users.call("vic", "GET", jobs("team-a", "viewed", "scale")) == 200
    assert users.call("vic", "POST", jobs("team-a"), fiberjob("mine")) == 403
    assert users.call("vic", "PATCH", jobs("team-a", "viewed"), {"spec": {"workers": {"maxReplicas": 6}}},
                      "application/merge-patch+json") == 403
    assert users.call("vic", "PATCH", jobs("team-a", "viewed", "scale"), {"spec": {"replicas": 3}},
                      "application/merge-patch+json") == 403
    assert users.call("vic", "DELETE", jobs("team-a", "viewed")) == 403
    assert users.call("vic", "GET", jobs("team-b")) == 403
    assert users.can("vic", "watch", "fiberjobs", "team-a") and not users.can("vic", "update", "fiberjobs", "team-a")


def test_admin_may_grant_edit_in_its_namespace_because_it_holds_all_of_it(users: Users):
    """Escalation prevention lets a RoleBinding to `edit` through only when the author holds all of
    edit's rules there: admin does, by aggregation; edit itself cannot grant admin."""
    edit = users.server.ok(users.server.get(f"{CLUSTERROLES}/edit"))
    wait_for_role(users.server, "admin", holding(*edit["rules"]))
    binding = {"metadata": {"name": "bob-edit"}, "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "edit"},
               "subjects": [{"apiGroup": RBAC, "kind": "User", "name": "bob"}]}
    assert users.call("ada", "POST", f"/apis/{RBAC}/v1/namespaces/team-a/rolebindings", binding) == 201
    binding = {**binding, "metadata": {"name": "bob-admin"}, "roleRef": {**binding["roleRef"], "name": "admin"}}
    assert users.call("alice", "POST", f"/apis/{RBAC}/v1/namespaces/team-a/rolebindings", binding) == 403


def test_a_labelled_role_reaches_the_users_and_leaves_with_its_removal(users: Users):
    server = users.server
    assert users.call("vic", "GET", "/apis/coordination.k8s.io/v1/namespaces/team-a/leases") == 403
    server.ok(server.post(CLUSTERROLES, cluster_role("leases-view", [LEASES], {TO_VIEW: "true"})))
    for name in ("view", "edit", "admin"):
        wait_for_role(server, name, holding(LEASES))
    assert users.call("vic", "GET", "/apis/coordination.k8s.io/v1/namespaces/team-a/leases") == 200
    server.ok(server.delete(f"{CLUSTERROLES}/leases-view"))
    for name in ("view", "edit", "admin"):
        wait_for_role(server, name, lambda role: LEASES not in role["rules"])
    assert users.call("vic", "GET", "/apis/coordination.k8s.io/v1/namespaces/team-a/leases") == 403


def test_rules_put_into_view_are_taken_back(users: Users):
    server = users.server
    view = server.ok(server.get(f"{CLUSTERROLES}/view"))
    aggregated = view["rules"]
    view["rules"] = aggregated + [rule("fibermpi.io", "fiberjobs", "delete")]
    written = server.ok(server.put(f"{CLUSTERROLES}/view", view))
    restored = wait_for_role(server, "view", lambda role: role["metadata"]["resourceVersion"] !=
                             written["metadata"]["resourceVersion"])
    assert restored["rules"] == aggregated
    assert users.call("vic", "DELETE", jobs("team-a", "anything")) == 403


def test_edit_writes_no_endpoints_and_creates_service_account_tokens(users: Users):
    """As since Kubernetes v1.22 (CVE-2021-25740: a written Endpoints object sends a Service's
    traffic anywhere): `edit` and `admin` read Endpoints and EndpointSlices but write neither; `edit`
    creates service-account tokens."""
    endpoints = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
                 "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]}
    slice_path = "/apis/discovery.k8s.io/v1/namespaces/team-a/endpointslices"
    endpoint_slice = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "web"},
                      "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}]}
    for user in ("alice", "ada"):
        assert users.call(user, "POST", "/api/v1/namespaces/team-a/endpoints", endpoints) == 403
        assert users.call(user, "POST", slice_path, endpoint_slice) == 403
        assert users.call(user, "GET", "/api/v1/namespaces/team-a/endpoints") == 200
        assert users.call(user, "GET", slice_path) == 200
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    assert users.call("alice", "POST", "/api/v1/namespaces/team-a/serviceaccounts/default/token", request) == 201
    assert users.call("vic", "POST", "/api/v1/namespaces/team-a/serviceaccounts/default/token", request) == 403
