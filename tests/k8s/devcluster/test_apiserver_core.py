"""The stand-in's REST basics over plain HTTP: create/get/update with the real server's resourceVersion
rules, names, validation, admission, and the objects a fresh cluster has."""

from __future__ import annotations

import base64

import pytest

from conftest import WIDGETS, ApiServerProcess, install_widget_crd



def configmap(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def pod(name: str, *containers: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": c, "image": "busybox:1.36", "command": ["true"]}
                                    for c in containers or ("main",)]}}


def test_health_and_version(apiserver: ApiServerProcess) -> None:
    for path in ("/healthz", "/readyz", "/livez"):
        response = apiserver.get(path)
        assert response.status_code == 200 and response.text == "ok"
    assert apiserver.ok(apiserver.get("/version"))["major"] == "1"


def test_fresh_cluster_has_its_namespaces_and_default_service_accounts(apiserver: ApiServerProcess) -> None:
    names = {n["metadata"]["name"] for n in apiserver.ok(apiserver.get("/api/v1/namespaces"))["items"]}
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names
    apiserver.ok(apiserver.get("/api/v1/namespaces/default/serviceaccounts/default"))
    kubernetes = apiserver.ok(apiserver.get("/api/v1/namespaces/default/services/kubernetes"))
    assert kubernetes["spec"]["clusterIP"] == "10.96.0.1"


def test_create_sets_server_fields_and_one_increasing_resource_version(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("core-create")
    first = apiserver.ok(apiserver.post(f"/api/v1/namespaces/{ns}/configmaps", configmap("a", k="1")), 201)
    second = apiserver.ok(apiserver.post(f"/api/v1/namespaces/{ns}/secrets",
                                         {"metadata": {"name": "s"}, "stringData": {"password": "pw"}}), 201)
    assert int(second["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])
    assert first["metadata"]["uid"] and first["metadata"]["creationTimestamp"].endswith("Z")
    assert first["metadata"]["namespace"] == ns
    assert base64.b64decode(second["data"]["password"]) == b"pw" and "stringData" not in second
    got = apiserver.ok(apiserver.get(f"/api/v1/namespaces/{ns}/configmaps/a"))
    assert got == first


def test_create_conflicts_and_refusals(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("core-refusals")
    path = f"/api/v1/namespaces/{ns}/configmaps"
    apiserver.ok(apiserver.post(path, configmap("dup")), 201)
    again = apiserver.post(path, configmap("dup"))
    assert again.status_code == 409 and again.json()["reason"] == "AlreadyExists"
    assert again.json()["message"] == 'configmaps "dup" already exists'
    bad = apiserver.post(path, configmap("Bad_Name"))
    assert bad.status_code == 422 and bad.json()["reason"] == "Invalid"
    assert bad.json()["message"].startswith('ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: '
                                            '"Bad_Name": a lowercase RFC 1123 subdomain')
    unnamed = apiserver.post(path, {"metadata": {}})
    assert unnamed.status_code == 422
    assert "metadata.name: Required value: name or generateName is required" in unnamed.json()["message"]
    missing_ns = apiserver.post("/api/v1/namespaces/nowhere/configmaps", configmap("x"))
    assert missing_ns.status_code == 404 and missing_ns.json()["message"] == 'namespaces "nowhere" not found'
    wrong_ns = apiserver.post(path, {"metadata": {"name": "w", "namespace": "default"}})
    assert wrong_ns.status_code == 400
    label = apiserver.post(path, {"metadata": {"name": "l", "labels": {"a": "not ok"}}})
    assert label.status_code == 422 and "metadata.labels: Invalid value: \"not ok\"" in label.json()["message"]
    generated = apiserver.ok(apiserver.post(path, {"metadata": {"generateName": "gen-"}}), 201)
    assert generated["metadata"]["name"].startswith("gen-") and len(generated["metadata"]["name"]) == 9


def test_update_needs_the_current_resource_version(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("core-update")
    path = f"/api/v1/namespaces/{ns}/configmaps"
    created = apiserver.ok(apiserver.post(path, configmap("cm", v="1")), 201)
    changed = dict(created, data={"v": "2"})
    updated = apiserver.ok(apiserver.put(f"{path}/cm", changed))
    assert updated["data"] == {"v": "2"}
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    stale = apiserver.put(f"{path}/cm", dict(created, data={"v": "3"}))
    assert stale.status_code == 409 and stale.json()["reason"] == "Conflict"
    assert stale.json()["message"] == ('Operation cannot be fulfilled on configmaps "cm": the object has been '
                                       "modified; please apply your changes to the latest version and try again")
    other_uid = dict(updated, metadata=dict(updated["metadata"], uid="0000"))
    assert apiserver.put(f"{path}/cm", other_uid).status_code == 409
    renamed = apiserver.put(f"{path}/cm", dict(updated, metadata=dict(updated["metadata"], name="other")))
    assert renamed.status_code == 400
    unconditional = {"metadata": {"name": "cm"}, "data": {"v": "4"}}
    assert apiserver.ok(apiserver.put(f"{path}/cm", unconditional))["data"] == {"v": "4"}
    assert apiserver.put(f"{path}/absent", {"metadata": {"name": "absent"}}).status_code == 404


def test_an_update_that_changes_nothing_keeps_the_resource_version(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("core-noop")
    created = apiserver.ok(apiserver.post(f"/api/v1/namespaces/{ns}/configmaps", configmap("same", a="b")), 201)
    again = apiserver.ok(apiserver.put(f"/api/v1/namespaces/{ns}/configmaps/same", created))
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_custom_resource_update_without_resource_version_is_invalid(apiserver: ApiServerProcess) -> None:
    install_widget_crd(apiserver)
    ns = apiserver.namespace("core-cr")
    path = WIDGETS.format(ns=ns)
    apiserver.ok(apiserver.post(path, {"apiVersion": "example.fibermpi.io/v1", "kind": "Widget",
                                       "metadata": {"name": "w"}, "spec": {"replicas": 1}}), 201)
    response = apiserver.put(f"{path}/w", {"apiVersion": "example.fibermpi.io/v1", "kind": "Widget",
                                           "metadata": {"name": "w"}, "spec": {"replicas": 2}})
    assert response.status_code == 422
    assert response.json()["message"] == ('Widget.example.fibermpi.io "w" is invalid: metadata.resourceVersion: '
                                          "Invalid value: 0x0: must be specified for an update")


def test_pod_validation_defaults_and_admission(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("core-pods")
    path = f"/api/v1/namespaces/{ns}/pods"
    created = apiserver.ok(apiserver.post(path, pod("p")), 201)
    assert created["status"]["phase"] == "Pending"
    assert created["spec"]["serviceAccountName"] == "default"
    assert created["spec"]["terminationGracePeriodSeconds"] == 30
    no_image = pod("q")
    del no_image["spec"]["containers"][0]["image"]
    response = apiserver.post(path, no_image)
    assert response.status_code == 422 and "spec.containers[0].image: Required value" in response.json()["message"]
    response = apiserver.post(path, pod("r", "same", "same"))
    assert response.status_code == 422
    assert 'spec.containers[1].name: Duplicate value: "same"' in response.json()["message"]
    assert apiserver.post(path, {"metadata": {"name": "s"}, "spec": {"containers": []}}).status_code == 422
    orphan_ref = pod("t")
    orphan_ref["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "x"}]
    response = apiserver.post(path, orphan_ref)
    assert response.status_code == 422 and "metadata.ownerReferences[0].uid" in response.json()["message"]
    stranger = pod("u")
    stranger["spec"]["serviceAccountName"] = "nobody"
    response = apiserver.post(path, stranger)
    assert response.status_code == 403
    assert response.json()["message"] == (f'pods "u" is forbidden: error looking up service account {ns}/nobody: '
                                          'serviceaccount "nobody" not found')
    changed = dict(created, spec=dict(created["spec"], restartPolicy="Never"))
    response = apiserver.put(f"{path}/p", changed)
    assert response.status_code == 422 and "pod updates may not change fields" in response.json()["message"]


def test_pod_volumes_mounts_and_host_names_are_checked(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("core-volumes")
    path = f"/api/v1/namespaces/{ns}/pods"
    good = pod("v")
    good["spec"].update(hostname="v", subdomain="job", volumes=[{"name": "config", "configMap": {"name": "c"}}])
    good["spec"]["containers"][0]["volumeMounts"] = [{"name": "config", "mountPath": "/etc/fiber"}]
    apiserver.ok(apiserver.post(path, good), 201)
    bad = pod("w")
    bad["spec"]["subdomain"] = "Not_A_Label"
    bad["spec"]["containers"][0]["volumeMounts"] = [{"name": "missing", "mountPath": "/x"}]
    message = apiserver.post(path, bad).json()["message"]
    assert 'spec.containers[0].volumeMounts[0].name: Not found: "missing"' in message
    assert 'spec.subdomain: Invalid value: "Not_A_Label"' in message


def test_config_keys_and_service_port_names_are_checked(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("core-keys")
    response = apiserver.post(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "k"},
                                                                      "data": {"bad/key": "x"}})
    assert response.status_code == 422 and "a valid config key must consist of" in response.json()["message"]
    response = apiserver.post(f"/api/v1/namespaces/{ns}/services", {"metadata": {"name": "s"}, "spec": {
        "ports": [{"name": "a", "port": 1}, {"name": "a", "port": 2}]}})
    assert response.status_code == 422 and 'spec.ports[1].name: Duplicate value: "a"' in response.json()["message"]


def test_services_get_cluster_ips_and_keep_headless(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("core-services")
    path = f"/api/v1/namespaces/{ns}/services"
    plain = apiserver.ok(apiserver.post(path, {"metadata": {"name": "web"},
                                               "spec": {"ports": [{"port": 80}]}}), 201)
    assert plain["spec"]["clusterIP"].startswith("10.96.") and plain["spec"]["clusterIP"] != "10.96.0.1"
    headless = apiserver.ok(apiserver.post(path, {"metadata": {"name": "job"},
                                                  "spec": {"clusterIP": "None", "selector": {"a": "b"}}}), 201)
    assert headless["spec"]["clusterIP"] == "None"
    assert apiserver.post(path, {"metadata": {"name": "1bad"}, "spec": {"clusterIP": "None"}}).status_code == 422


def test_events_and_leases_are_validated(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("core-events")
    events = f"/api/v1/namespaces/{ns}/events"
    response = apiserver.post(events, {"metadata": {"name": "e1"}, "reason": "Created"})
    assert response.status_code == 422 and "involvedObject: Required value" in response.json()["message"]
    response = apiserver.post(events, {"metadata": {"name": "e2"}, "reason": "Created", "type": "Normal",
                                       "involvedObject": {"kind": "Pod", "name": "p", "namespace": "elsewhere"}})
    assert response.status_code == 422
    apiserver.ok(apiserver.post(events, {"metadata": {"name": "e3"}, "reason": "Created", "type": "Normal",
                                         "involvedObject": {"kind": "Pod", "name": "p", "namespace": ns}}), 201)
    leases = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
    lease = {"metadata": {"name": "leader"},
             "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
                      "renewTime": "2024-01-01T00:00:00.000000Z"}}
    apiserver.ok(apiserver.post(leases, lease), 201)
    response = apiserver.post(leases, {"metadata": {"name": "bad"}, "spec": {"leaseDurationSeconds": "15"}})
    assert response.status_code == 400
    response = apiserver.post(leases, {"metadata": {"name": "zero"}, "spec": {"leaseDurationSeconds": 0}})
    assert response.status_code == 422


def test_unknown_paths_and_methods(apiserver: ApiServerProcess) -> None:
    assert apiserver.get("/api/v1/namespaces/default/frobs").status_code == 404
    assert apiserver.get("/apis/nothing.example/v1/things").status_code == 404
    assert apiserver.get("/nowhere").status_code == 404
    response = apiserver.post("/api/v1/namespaces/default/configmaps/x", configmap("x"))
    assert response.status_code == 405


def test_several_bind_addresses_share_one_port(apiserver_with) -> None:
    server: ApiServerProcess = apiserver_with("--bind", "127.0.0.1", "--bind", "127.0.0.2")
    port = server.url.rsplit(":", 1)[1]
    assert (server.state_dir / "port").read_text().strip() == port
    for host in ("127.0.0.1", "127.0.0.2"):
        response = server.session.get(f"http://{host}:{port}/api/v1/namespaces/default", timeout=10)
        assert response.status_code == 200


def test_protobuf_bodies_get_a_clear_415(apiserver: ApiServerProcess) -> None:
    response = apiserver.post("/api/v1/namespaces/default/configmaps", b"k8s\x00",
                              content_type="application/vnd.kubernetes.protobuf")
    assert response.status_code == 415 and "does not decode protobuf" in response.json()["message"]
