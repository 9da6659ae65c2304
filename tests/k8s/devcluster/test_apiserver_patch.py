"""PATCH: merge patch, JSON patch (with a failing test), strategic merge patch on built-in kinds, and
the 415s for what the stand-in or the resource does not take."""

from __future__ import annotations

from conftest import WIDGETS, ApiServerProcess, install_widget_crd

SMP = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"


def test_merge_patch_merges_maps_replaces_lists_and_null_deletes(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("patch-merge")
    path = f"/api/v1/namespaces/{ns}/configmaps"
    apiserver.ok(apiserver.post(path, {"metadata": {"name": "m", "labels": {"a": "1", "b": "2"}},
                                       "data": {"x": "1", "y": "2"}}), 201)
    patched = apiserver.ok(apiserver.patch(f"{path}/m", {"metadata": {"labels": {"b": None, "c": "3"}},
                                                         "data": {"y": "two"}}))
    assert patched["metadata"]["labels"] == {"a": "1", "c": "3"}
    assert patched["data"] == {"x": "1", "y": "two"}


def test_merge_patch_with_a_stale_resource_version_conflicts(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("patch-stale")
    path = f"/api/v1/namespaces/{ns}/configmaps"
    created = apiserver.ok(apiserver.post(path, {"metadata": {"name": "m"}}), 201)
    apiserver.ok(apiserver.patch(f"{path}/m", {"data": {"a": "1"}}))
    stale = apiserver.patch(f"{path}/m", {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]},
                                          "data": {"a": "2"}})
    assert stale.status_code == 409 and stale.json()["reason"] == "Conflict"


def test_json_patch_and_its_failing_test_operation(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("patch-json")
    path = f"/api/v1/namespaces/{ns}/configmaps"
    apiserver.ok(apiserver.post(path, {"metadata": {"name": "j"}, "data": {"a": "1"}}), 201)
    patched = apiserver.ok(apiserver.patch(f"{path}/j", [{"op": "test", "path": "/data/a", "value": "1"},
                                                         {"op": "add", "path": "/data/b", "value": "2"},
                                                         {"op": "remove", "path": "/data/a"}],
                                           content_type=JSON_PATCH))
    assert patched["data"] == {"b": "2"}
    failed = apiserver.patch(f"{path}/j", [{"op": "test", "path": "/data/b", "value": "3"}], content_type=JSON_PATCH)
    assert failed.status_code == 422 and failed.json()["reason"] == "Invalid"
    missing = apiserver.patch(f"{path}/j", [{"op": "replace", "path": "/data/zzz", "value": "3"}],
                              content_type=JSON_PATCH)
    assert missing.status_code == 422
    assert apiserver.patch(f"{path}/j", "{not json", content_type=JSON_PATCH).status_code == 400


def test_strategic_merge_patch_merges_lists_by_their_keys(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("patch-smp")
    path = f"/api/v1/namespaces/{ns}/pods"
    apiserver.ok(apiserver.post(path, {"metadata": {"name": "p", "finalizers": ["example.com/keep"]}, "spec": {
        "containers": [{"name": "a", "image": "busybox:1"}, {"name": "b", "image": "busybox:1"}]}}), 201)
    patched = apiserver.ok(apiserver.patch(f"{path}/p", {"spec": {"containers": [
        {"name": "a", "image": "busybox:2"}]}}, content_type=SMP))
    assert [(c["name"], c["image"]) for c in patched["spec"]["containers"]] == [("a", "busybox:2"),
                                                                                ("b", "busybox:1")]
    labelled = apiserver.ok(apiserver.patch(f"{path}/p", {"metadata": {"labels": {"k": "v"},
                                                                       "finalizers": ["example.com/more"]}},
                                            content_type=SMP))
    assert labelled["metadata"]["labels"] == {"k": "v"}
    assert labelled["metadata"]["finalizers"] == ["example.com/keep", "example.com/more"]
    deleted = apiserver.ok(apiserver.patch(f"{path}/p", {"metadata": {"$deleteFromPrimitiveList/finalizers": [
        "example.com/keep", "example.com/more"]}}, content_type=SMP))
    assert not deleted["metadata"].get("finalizers")
    services = f"/api/v1/namespaces/{ns}/services"
    apiserver.ok(apiserver.post(services, {"metadata": {"name": "svc"}, "spec": {"ports": [
        {"name": "http", "port": 80}, {"name": "metrics", "port": 9090}]}}), 201)
    ports = apiserver.ok(apiserver.patch(f"{services}/svc", {"spec": {"ports": [
        {"name": "web", "port": 80, "targetPort": 8080}, {"port": 9090, "$patch": "delete"}]}},
        content_type=SMP))["spec"]["ports"]
    assert [(p["name"], p["port"], p["targetPort"]) for p in ports] == [("web", 80, 8080)]


def test_custom_resources_refuse_strategic_merge_patch_and_apply_is_415(apiserver: ApiServerProcess) -> None:
    install_widget_crd(apiserver)
    ns = apiserver.namespace("patch-415")
    path = WIDGETS.format(ns=ns)
    apiserver.ok(apiserver.post(path, {"apiVersion": "example.fibermpi.io/v1", "kind": "Widget",
                                       "metadata": {"name": "w"}, "spec": {"replicas": 1}}), 201)
    smp = apiserver.patch(f"{path}/w", {"spec": {"replicas": 2}}, content_type=SMP)
    assert smp.status_code == 415 and smp.json()["reason"] == "UnsupportedMediaType"
    assert "application/merge-patch+json" in smp.json()["message"]
    apply = apiserver.patch(f"{path}/w", "spec:\n  replicas: 2\n", content_type="application/apply-patch+yaml")
    assert apply.status_code == 415 and "server-side apply" in apply.json()["message"]
    merged = apiserver.ok(apiserver.patch(f"{path}/w", {"spec": {"replicas": 2}}))
    assert merged["spec"]["replicas"] == 2 and merged["metadata"]["generation"] == 2
