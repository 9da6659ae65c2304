"""Content negotiation and request options: Table answers for get, list and watch when the client asks
for them first, YAML bodies, server-side dry run, create-on-update for leases, Warning headers."""

from __future__ import annotations

import json

import yaml

from conftest import WIDGETS, ApiServerProcess, install_widget_crd

TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def test_tables_only_when_asked_first(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("negotiation-tables")
    path = f"/api/v1/namespaces/{ns}/configmaps"
    apiserver.ok(apiserver.post(path, {"metadata": {"name": "t"}}), 201)
    table = apiserver.ok(apiserver.get(path, headers={"Accept": TABLE_ACCEPT}))
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert [row["cells"][0] for row in table["rows"]] == ["t"]
    assert apiserver.ok(apiserver.get(f"{path}/t", headers={"Accept": TABLE_ACCEPT}))["kind"] == "Table"
    plain = apiserver.ok(apiserver.get(path, headers={"Accept": "application/json, */*"}))
    assert plain["kind"] == "ConfigMapList"


def test_watch_as_table(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("negotiation-watch")
    path = f"/api/v1/namespaces/{ns}/configmaps"
    apiserver.ok(apiserver.post(path, {"metadata": {"name": "a"}}), 201)
    apiserver.ok(apiserver.post(path, {"metadata": {"name": "b"}}), 201)
    response = apiserver.session.get(apiserver.url + path, params={"watch": "true", "timeoutSeconds": "5"},
                                     headers={"Accept": TABLE_ACCEPT}, stream=True, timeout=(5, 20))
    lines = response.iter_lines()
    first, second = json.loads(next(lines)), json.loads(next(lines))
    response.close()
    assert first["type"] == "ADDED" and first["object"]["kind"] == "Table"
    assert first["object"]["columnDefinitions"] and not second["object"]["columnDefinitions"]
    assert second["object"]["rows"][0]["cells"][0] == "b"


def test_yaml_bodies_are_accepted(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("negotiation-yaml")
    body = yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "y"}, "data": {"k": "v"}})
    created = apiserver.ok(apiserver.post(f"/api/v1/namespaces/{ns}/configmaps", body,
                                          content_type="application/yaml"), 201)
    assert created["data"] == {"k": "v"}
    broken = apiserver.post(f"/api/v1/namespaces/{ns}/configmaps", "{not json")
    assert broken.status_code == 400 and broken.json()["reason"] == "BadRequest"


def test_server_side_dry_run_stores_nothing(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("negotiation-dry-run")
    path = f"/api/v1/namespaces/{ns}/configmaps"
    before = apiserver.ok(apiserver.get(path))["metadata"]["resourceVersion"]
    dry = apiserver.ok(apiserver.post(path, {"metadata": {"name": "d"}}, params={"dryRun": "All"}), 201)
    assert dry["metadata"]["name"] == "d"
    assert apiserver.get(f"{path}/d").status_code == 404
    apiserver.ok(apiserver.post(path, {"metadata": {"name": "d"}}), 201)
    apiserver.ok(apiserver.delete(f"{path}/d", {"dryRun": ["All"]}))
    apiserver.ok(apiserver.get(f"{path}/d"))
    assert int(apiserver.ok(apiserver.get(path))["metadata"]["resourceVersion"]) == int(before) + 1


def test_put_creates_a_missing_lease(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("negotiation-lease")
    path = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
             "spec": {"holderIdentity": "me", "leaseDurationSeconds": 10}}
    response = apiserver.put(f"{path}/l", lease)
    assert response.status_code == 201 and response.json()["spec"]["holderIdentity"] == "me"
    assert apiserver.put(f"/api/v1/namespaces/{ns}/configmaps/none", {"metadata": {"name": "none"}}).status_code == 404


def test_unknown_custom_resource_fields_come_back_as_warnings(apiserver: ApiServerProcess) -> None:
    install_widget_crd(apiserver)
    ns = apiserver.namespace("negotiation-warnings")
    response = apiserver.post(WIDGETS.format(ns=ns), {"apiVersion": "example.fibermpi.io/v1", "kind": "Widget",
                                                      "metadata": {"name": "w"}, "spec": {"colour": "red"}},
                              params={"fieldValidation": "Warn"})
    assert response.status_code == 201 and "colour" not in response.json()["spec"]
    assert 'unknown field \\"spec.colour\\"' in response.headers["Warning"]
    assert response.headers["Warning"].startswith('299 - "')


def test_fields_of_the_wrong_type_are_a_400_not_a_crash(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("negotiation-types")
    for path, body in ((f"/api/v1/namespaces/{ns}/pods", {"metadata": {"name": "a", "labels": ["x"]}}),
                       (f"/api/v1/namespaces/{ns}/secrets", {"metadata": {"name": "b"}, "data": [1]}),
                       ("/apis/rbac.authorization.k8s.io/v1/namespaces/" + ns + "/rolebindings",
                        {"metadata": {"name": "c"}, "roleRef": {"kind": "Role", "name": "r"}, "subjects": [1]})):
        response = apiserver.post(path, body)
        assert response.status_code == 400 and "cannot unmarshal" in response.json()["message"], response.text
    response = apiserver.get(f"/api/v1/namespaces/{ns}/pods", params={"watch": "1", "resourceVersion": "abc"})
    assert response.status_code == 400
