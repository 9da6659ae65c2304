"""RBAC escalation prevention: roles and bindings grant only what their author holds (resourceNames
included), unless the author holds `escalate` or `bind`; system:masters bypasses; the 403 is worded
as kube-apiserver words it. Checked on the decision function and through a running stand-in."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest
import requests

from conftest import ApiServerProcess, start_apiserver
from k8s.devcluster.apiserver.errors import ApiError
from k8s.devcluster.apiserver.rbac_escalation import check_escalation, compact, compact_text, missing_atoms
from test_apiserver_auth import make_pki

RBAC = "rbac.authorization.k8s.io"
ADMIN_TOKEN = "admin-token-for-escalation"
MANAGER = "system:serviceaccount:fiber-system:fiber-controller"
JOB_RULES = [{"apiGroups": ["fibermpi.io"], "resources": ["fiberjobs"], "resourceNames": ["job"],
              "verbs": ["get", "patch"]},
             {"apiGroups": ["fibermpi.io"], "resources": ["fiberjobs/scale"], "resourceNames": ["job"],
              "verbs": ["get", "patch", "update"]}]
MANAGER_RULES = [{"apiGroups": ["fibermpi.io"], "resources": ["fiberjobs"], "verbs": ["get", "list", "patch"]},
                 {"apiGroups": ["fibermpi.io"], "resources": ["fiberjobs/scale"], "verbs": ["get", "patch", "update"]},
                 {"apiGroups": [RBAC], "resources": ["roles", "rolebindings"], "verbs": ["create", "update", "get"]},
                 {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["create"]}]


def store(extra_cluster_rules: list[dict[str, Any]] | None = None) -> dict[str, list[dict[str, Any]]]:
    return {
        "clusterroles": [{"metadata": {"name": "manager"}, "rules": MANAGER_RULES + (extra_cluster_rules or [])},
                         {"metadata": {"name": "admin-ish"}, "rules": [{"apiGroups": ["*"], "resources": ["*"],
                                                                         "verbs": ["*"]}]}],
        "clusterrolebindings": [{"metadata": {"name": "manager"},
                                 "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "manager"},
                                 "subjects": [{"kind": "ServiceAccount", "name": "fiber-controller",
                                               "namespace": "fiber-system"}]}],
        "roles": [{"metadata": {"name": "job-access", "namespace": "team"}, "rules": JOB_RULES}],
        "rolebindings": [],
    }


def check(plural: str, obj: dict[str, Any], stored: dict[str, list[dict[str, Any]]], user: str = MANAGER,
          groups: list[str] | None = None, old: dict[str, Any] | None = None) -> None:
    check_escalation(plural, obj, old, obj["metadata"]["name"] if old else "", user,
                     groups if groups is not None else ["system:serviceaccounts", "system:authenticated"],
                     lambda _group, name: stored.get(name, []))


def job_role(rules: list[dict[str, Any]], name: str = "job-access") -> dict[str, Any]:
    return {"kind": "Role", "metadata": {"name": name, "namespace": "team"}, "rules": rules}


def job_binding(role_kind: str = "Role", role_name: str = "job-access") -> dict[str, Any]:
    return {"kind": "RoleBinding", "metadata": {"name": "job-access", "namespace": "team"},
            "roleRef": {"apiGroup": RBAC, "kind": role_kind, "name": role_name},
            "subjects": [{"kind": "ServiceAccount", "name": "job-launcher", "namespace": "team"}]}


def test_a_role_within_held_permissions_passes_and_names_narrow_held_rules() -> None:
    check("roles", job_role(JOB_RULES), store())
    assert missing_atoms(MANAGER_RULES, JOB_RULES) == []
    named = [{"apiGroups": ["fibermpi.io"], "resources": ["fiberjobs"], "resourceNames": ["a", "b"], "verbs": ["get"]}]
    assert missing_atoms(named, [dict(named[0], resourceNames=["a"])]) == []
    assert missing_atoms(named, [dict(named[0], resourceNames=["c"])]) != []
    without_names = {key: value for key, value in named[0].items() if key != "resourceNames"}
    assert missing_atoms(named, [without_names]) == [dict(without_names, apiGroups=["fibermpi.io"])]


def test_wildcards_and_subresource_wildcards_cover() -> None:
    held = [{"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["get"]},
            {"nonResourceURLs": ["/debug/*"], "verbs": ["get"]}]
    assert missing_atoms(held, [{"apiGroups": ["apps"], "resources": ["deployments/status"], "verbs": ["get"]}]) == []
    assert missing_atoms(held, [{"nonResourceURLs": ["/debug/pprof"], "verbs": ["get"]}]) == []
    assert missing_atoms(held, [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]}]) != []
    assert missing_atoms(held, [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]) != []


def test_a_role_granting_more_is_forbidden_in_the_servers_words() -> None:
    wider = JOB_RULES + [{"apiGroups": ["fibermpi.io"], "resources": ["fiberjobs"], "verbs": ["delete", "get"]},
                         {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["s"], "verbs": ["get"]}]
    with pytest.raises(ApiError) as raised:
        check("roles", job_role(wider), store())
    assert raised.value.code == 403 and raised.value.reason == "Forbidden"
    assert raised.value.message == (
        f'roles.{RBAC} "job-access" is forbidden: user "{MANAGER}" (groups=["system:serviceaccounts" '
        '"system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n'
        '{APIGroups:[""], Resources:["secrets"], ResourceNames:["s"], Verbs:["get"]}\n'
        '{APIGroups:["fibermpi.io"], Resources:["fiberjobs"], Verbs:["delete"]}')
    assert raised.value.details == {"name": "job-access", "group": RBAC, "kind": "roles"}


def test_escalate_verb_and_system_masters_bypass() -> None:
    wider = [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]
    check("roles", job_role(wider), store(), user="root", groups=["system:masters"])
    escalate = [{"apiGroups": [RBAC], "resources": ["roles"], "verbs": ["escalate"]}]
    check("roles", job_role(wider), store(escalate))
    with pytest.raises(ApiError):
        check("clusterroles", {"metadata": {"name": "c"}, "rules": wider}, store(escalate))


def test_cluster_roles_need_cluster_wide_permissions() -> None:
    stored = store()
    stored["rolebindings"] = [dict(job_binding("ClusterRole", "admin-ish"),
                                   subjects=[{"kind": "ServiceAccount", "name": "fiber-controller",
                                              "namespace": "fiber-system"}])]
    secrets = [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]
    check("roles", job_role(secrets), stored)        # held in namespace team through the RoleBinding
    with pytest.raises(ApiError, match="not currently held"):
        check("clusterroles", {"metadata": {"name": "c"}, "rules": secrets}, stored)
    with pytest.raises(ApiError, match="must have cluster-admin privileges to use the aggregationRule"):
        check("clusterroles", {"metadata": {"name": "agg"}, "aggregationRule": {"clusterRoleSelectors": []}},
              stored)


def test_bindings_need_the_roles_permissions_or_bind() -> None:
    check("rolebindings", job_binding(), store())
    with pytest.raises(ApiError) as raised:
        check("rolebindings", job_binding("ClusterRole", "admin-ish"), store())
    assert raised.value.message.startswith(f'rolebindings.{RBAC} "job-access" is forbidden: user "{MANAGER}"')
    assert raised.value.message.endswith('{APIGroups:["*"], Resources:["*"], Verbs:["*"]}')
    bind = [{"apiGroups": [RBAC], "resources": ["clusterroles"], "resourceNames": ["admin-ish"], "verbs": ["bind"]}]
    check("rolebindings", job_binding("ClusterRole", "admin-ish"), store(bind))
    with pytest.raises(ApiError) as missing:
        check("rolebindings", job_binding("Role", "absent"), store())
    assert missing.value.code == 404 and missing.value.message == f'roles.{RBAC} "absent" not found'


def test_an_update_changing_only_owner_references_is_not_checked() -> None:
    wide = job_role([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}])
    owned = dict(wide, metadata=dict(wide["metadata"], ownerReferences=[{"kind": "FiberJob", "name": "job"}]))
    check("roles", owned, store(), old=wide)
    with pytest.raises(ApiError):
        check("roles", wide, store(), old=job_role(JOB_RULES))


def test_compaction_merges_verbs_of_the_same_resource() -> None:
    missing = missing_atoms([], [{"apiGroups": ["a"], "resources": ["x", "y"], "verbs": ["get", "list"]}])
    assert [compact_text(rule) for rule in compact(missing)] == [
        '{APIGroups:["a"], Resources:["x"], Verbs:["get" "list"]}',
        '{APIGroups:["a"], Resources:["y"], Verbs:["get" "list"]}']


# --- through the server ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ApiServerProcess, Path]]:
    pki = tmp_path_factory.mktemp("pki")
    make_pki(pki)
    tokens = pki / "tokens.csv"
    tokens.write_text(f'{ADMIN_TOKEN},admin,admin-uid,"system:masters"\nmanager-token,manager,manager-uid\n')
    process = start_apiserver(tmp_path_factory.mktemp("apiserver-escalation"), "--tls-cert", str(pki / "server.crt"),
                              "--tls-key", str(pki / "server.key"), "--client-ca", str(pki / "ca.crt"),
                              "--token-file", str(tokens))
    yield process, pki
    process.stop()


def call(server: tuple[ApiServerProcess, Path], method: str, path: str, token: str,
         body: dict[str, Any] | None = None) -> requests.Response:
    process, pki = server
    return requests.request(method, process.url + path, headers={"Authorization": f"Bearer {token}"}, json=body,
                            verify=str(pki / "ca.crt"), timeout=10)


def test_the_server_refuses_escalation_and_allows_what_is_held(server: tuple[ApiServerProcess, Path]) -> None:
    rbac = f"/apis/{RBAC}/v1"
    assert call(server, "POST", "/api/v1/namespaces", ADMIN_TOKEN, {"metadata": {"name": "team"}}).status_code == 201
    assert call(server, "POST", f"{rbac}/clusterroles", ADMIN_TOKEN,
                {"metadata": {"name": "manager"}, "rules": MANAGER_RULES}).status_code == 201
    assert call(server, "POST", f"{rbac}/clusterrolebindings", ADMIN_TOKEN, {
        "metadata": {"name": "manager"}, "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "manager"},
        "subjects": [{"kind": "User", "name": "manager"}]}).status_code == 201
    roles = f"{rbac}/namespaces/team/roles"
    created = call(server, "POST", roles, "manager-token", job_role(JOB_RULES))
    assert created.status_code == 201, created.text
    bound = call(server, "POST", f"{rbac}/namespaces/team/rolebindings", "manager-token", job_binding())
    assert bound.status_code == 201, bound.text
    wider = job_role(JOB_RULES + [{"apiGroups": [""], "resources": ["pods"], "verbs": ["delete"]}], "wider")
    refused = call(server, "POST", roles, "manager-token", wider)
    assert refused.status_code == 403, refused.text
    status = refused.json()
    assert status["reason"] == "Forbidden" and status["kind"] == "Status"
    assert status["message"] == (
        f'roles.{RBAC} "wider" is forbidden: user "manager" (groups=["system:authenticated"]) is attempting to '
        'grant RBAC permissions not currently held:\n{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}')
    current = created.json()
    current["rules"] = wider["rules"]
    assert call(server, "PUT", f"{roles}/job-access", "manager-token", current).status_code == 403
    assert call(server, "POST", roles, ADMIN_TOKEN, wider).status_code == 201
