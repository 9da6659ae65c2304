"""LIST: label and field selectors, limit/continue, and resourceVersion semantics."""

from __future__ import annotations

from conftest import ApiServerProcess


def names(listing: dict) -> list[str]:
    return [item["metadata"]["name"] for item in listing["items"]]


def seed(apiserver: ApiServerProcess, ns: str) -> str:
    path = f"/api/v1/namespaces/{ns}/configmaps"
    for name, labels in (("a", {"tier": "web", "env": "prod"}), ("b", {"tier": "db", "env": "prod"}),
                         ("c", {"tier": "web"}), ("d", {})):
        apiserver.ok(apiserver.post(path, {"metadata": {"name": name, "labels": labels}}), 201)
    return path


def test_label_selectors(apiserver: ApiServerProcess) -> None:
    path = seed(apiserver, apiserver.namespace("list-labels"))

    def select(selector: str) -> list[str]:
        return names(apiserver.ok(apiserver.get(path, params={"labelSelector": selector})))

    assert select("tier=web") == ["a", "c"]
    assert select("tier==web") == ["a", "c"]
    assert select("tier!=web") == ["b", "d"]
    assert select("tier in (db, web),env=prod") == ["a", "b"]
    assert select("tier notin (web)") == ["b", "d"]
    assert select("env") == ["a", "b"]
    assert select("!env") == ["c", "d"]
    assert select("") == ["a", "b", "c", "d"]
    bad = apiserver.get(path, params={"labelSelector": "tier=(web"})
    assert bad.status_code == 400 and bad.json()["reason"] == "BadRequest"


def test_field_selectors(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("list-fields")
    path = seed(apiserver, ns)
    assert names(apiserver.ok(apiserver.get(path, params={"fieldSelector": "metadata.name=b"}))) == ["b"]
    assert names(apiserver.ok(apiserver.get(path, params={"fieldSelector": "metadata.name!=b"}))) == ["a", "c", "d"]
    everywhere = apiserver.ok(apiserver.get("/api/v1/configmaps", params={"fieldSelector": f"metadata.namespace={ns}"}))
    assert names(everywhere) == ["a", "b", "c", "d"]
    bad = apiserver.get(path, params={"fieldSelector": "data.x=1"})
    assert bad.status_code == 400 and bad.json()["message"] == "field label not supported: data.x"
    pods = f"/api/v1/namespaces/{ns}/pods"
    for name, node in (("p1", "node-a"), ("p2", "node-b"), ("p3", "")):
        spec = {"containers": [{"name": "c", "image": "busybox"}]}
        if node:
            spec["nodeName"] = node
        apiserver.ok(apiserver.post(pods, {"metadata": {"name": name}, "spec": spec}), 201)
    assert names(apiserver.ok(apiserver.get(pods, params={"fieldSelector": "spec.nodeName=node-a"}))) == ["p1"]
    assert names(apiserver.ok(apiserver.get(pods, params={"fieldSelector": "spec.nodeName="}))) == ["p3"]
    assert len(apiserver.ok(apiserver.get(pods, params={"fieldSelector": "status.phase=Pending"}))["items"]) == 3


def test_limit_and_continue_give_a_consistent_snapshot(apiserver: ApiServerProcess) -> None:
    path = seed(apiserver, apiserver.namespace("list-pages"))
    first = apiserver.ok(apiserver.get(path, params={"limit": 3}))
    assert names(first) == ["a", "b", "c"]
    assert first["metadata"]["remainingItemCount"] == 1
    token = first["metadata"]["continue"]
    apiserver.ok(apiserver.post(path, {"metadata": {"name": "e"}}), 201)
    apiserver.ok(apiserver.delete(f"{path}/d"))
    rest = apiserver.ok(apiserver.get(path, params={"limit": 3, "continue": token}))
    assert names(rest) == ["d"] and "continue" not in rest["metadata"]
    assert rest["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    bad = apiserver.get(path, params={"continue": "not-a-token"})
    assert bad.status_code == 400
    both = apiserver.get(path, params={"continue": token, "resourceVersion": "1"})
    assert both.status_code == 400


def test_list_at_an_exact_resource_version(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("list-exact")
    path = f"/api/v1/namespaces/{ns}/configmaps"
    created = apiserver.ok(apiserver.post(path, {"metadata": {"name": "x"}, "data": {"v": "1"}}), 201)
    apiserver.ok(apiserver.patch(f"{path}/x", {"data": {"v": "2"}}))
    apiserver.ok(apiserver.post(path, {"metadata": {"name": "y"}}), 201)
    then = apiserver.ok(apiserver.get(path, params={"resourceVersion": created["metadata"]["resourceVersion"],
                                                    "resourceVersionMatch": "Exact"}))
    assert names(then) == ["x"] and then["items"][0]["data"] == {"v": "1"}
    assert then["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    now = apiserver.ok(apiserver.get(path, params={"resourceVersion": "0"}))
    assert names(now) == ["x", "y"]
    newer = apiserver.ok(apiserver.get(path, params={"resourceVersion": created["metadata"]["resourceVersion"],
                                                     "resourceVersionMatch": "NotOlderThan"}))
    assert names(newer) == ["x", "y"]
    assert apiserver.get(path, params={"resourceVersionMatch": "Exact"}).status_code == 422


def test_list_too_old_resource_version_is_gone(apiserver_with) -> None:
    server: ApiServerProcess = apiserver_with("--watch-history", "10")
    path = "/api/v1/namespaces/default/configmaps"
    created = server.ok(server.post(path, {"metadata": {"name": "old"}}), 201)
    for index in range(15):
        server.ok(server.patch(f"{path}/old", {"data": {"n": str(index)}}))
    response = server.get(path, params={"resourceVersion": created["metadata"]["resourceVersion"],
                                        "resourceVersionMatch": "Exact"})
    assert response.status_code == 410 and response.json()["reason"] == "Expired"
    assert response.json()["message"] == "The resourceVersion for the provided list is too old."
