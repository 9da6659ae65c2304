"""Deletion: pods' grace periods, finalizers, preconditions, ownerReference garbage collection
(background, foreground, orphan) and namespace termination."""

from __future__ import annotations

from typing import Any

from conftest import ApiServerProcess


def pod(name: str, node: str = "", **meta: Any) -> dict:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}], "terminationGracePeriodSeconds": 20}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, **meta}, "spec": spec}


def owner_ref(owner: dict, block: bool = True) -> dict:
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": block}


def test_a_bound_pod_is_deleted_gracefully_until_its_node_deletes_it(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("delete-grace")
    path = f"/api/v1/namespaces/{ns}/pods"
    apiserver.ok(apiserver.post(path, pod("bound", "node-a")), 201)
    marked = apiserver.ok(apiserver.delete(f"{path}/bound"))
    assert marked["metadata"]["deletionTimestamp"] and marked["metadata"]["deletionGracePeriodSeconds"] == 20
    assert apiserver.ok(apiserver.get(f"{path}/bound"))["metadata"]["deletionGracePeriodSeconds"] == 20
    shorter = apiserver.ok(apiserver.delete(f"{path}/bound", {"gracePeriodSeconds": 5}))
    assert shorter["metadata"]["deletionGracePeriodSeconds"] == 5
    longer = apiserver.ok(apiserver.delete(f"{path}/bound", {"gracePeriodSeconds": 50}))
    assert longer["metadata"]["deletionGracePeriodSeconds"] == 5
    apiserver.ok(apiserver.delete(f"{path}/bound", params={"gracePeriodSeconds": "0"}))
    assert apiserver.get(f"{path}/bound").status_code == 404


def test_an_unscheduled_or_finished_pod_goes_at_once(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("delete-now")
    path = f"/api/v1/namespaces/{ns}/pods"
    apiserver.ok(apiserver.post(path, pod("pending")), 201)
    gone = apiserver.ok(apiserver.delete(f"{path}/pending"))
    assert gone["kind"] == "Pod"
    assert apiserver.get(f"{path}/pending").status_code == 404
    apiserver.ok(apiserver.post(path, pod("done", "node-a")), 201)
    apiserver.ok(apiserver.patch(f"{path}/done/status", {"status": {"phase": "Succeeded"}}))
    apiserver.ok(apiserver.delete(f"{path}/done"))
    assert apiserver.get(f"{path}/done").status_code == 404


def test_finalizers_hold_an_object_until_an_update_removes_them(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("delete-finalizers")
    path = f"/api/v1/namespaces/{ns}/configmaps"
    apiserver.ok(apiserver.post(path, {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}), 201)
    marked = apiserver.ok(apiserver.delete(f"{path}/held"))
    assert marked["metadata"]["deletionTimestamp"]
    refused = apiserver.patch(f"{path}/held", {"metadata": {"finalizers": ["example.com/hold", "example.com/new"]}})
    assert refused.status_code == 422 and "no new finalizers can be added" in refused.json()["message"]
    assert apiserver.ok(apiserver.patch(f"{path}/held", {"data": {"still": "here"}}))["data"] == {"still": "here"}
    apiserver.ok(apiserver.patch(f"{path}/held", {"metadata": {"finalizers": None}}))
    assert apiserver.get(f"{path}/held").status_code == 404


def test_delete_preconditions_and_status_answer(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("delete-preconditions")
    path = f"/api/v1/namespaces/{ns}/configmaps"
    created = apiserver.ok(apiserver.post(path, {"metadata": {"name": "pre"}}), 201)
    wrong = apiserver.delete(f"{path}/pre", {"preconditions": {"uid": "not-it"}})
    assert wrong.status_code == 409 and "Precondition failed: UID in precondition: not-it" in wrong.json()["message"]
    stale = apiserver.delete(f"{path}/pre", {"preconditions": {"resourceVersion": "1"}})
    assert stale.status_code == 409
    answer = apiserver.ok(apiserver.delete(f"{path}/pre", {"preconditions": {"uid": created["metadata"]["uid"]}}))
    assert answer["kind"] == "Status" and answer["status"] == "Success"
    assert answer["details"] == {"name": "pre", "group": "", "kind": "configmaps", "uid": created["metadata"]["uid"]}
    assert apiserver.delete(f"{path}/pre").status_code == 404


def test_background_deletion_collects_dependents(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("gc-background")
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    owner = apiserver.ok(apiserver.post(cms, {"metadata": {"name": "owner"}}), 201)
    apiserver.ok(apiserver.post(cms, {"metadata": {"name": "dep", "ownerReferences": [owner_ref(owner)]}}), 201)
    other = apiserver.ok(apiserver.post(cms, {"metadata": {"name": "other"}}), 201)
    apiserver.ok(apiserver.post(cms, {"metadata": {"name": "shared", "ownerReferences": [
        owner_ref(owner, False), dict(owner_ref(other, False), controller=False)]}}), 201)
    apiserver.ok(apiserver.delete(f"{cms}/owner", {"propagationPolicy": "Background"}))
    assert apiserver.get(f"{cms}/owner").status_code == 404
    apiserver.wait_gone(f"{cms}/dep")
    shared = apiserver.ok(apiserver.get(f"{cms}/shared"))
    assert [r["name"] for r in shared["metadata"]["ownerReferences"]] == ["other"]


def test_an_object_whose_owner_never_existed_is_collected(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("gc-absent-owner")
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    ghost = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ghost", "uid": "no-such-uid"}}
    apiserver.ok(apiserver.post(cms, {"metadata": {"name": "lost", "ownerReferences": [owner_ref(ghost)]}}), 201)
    apiserver.wait_gone(f"{cms}/lost")


def test_foreground_deletion_waits_for_blocking_dependents(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("gc-foreground")
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    pods = f"/api/v1/namespaces/{ns}/pods"
    owner = apiserver.ok(apiserver.post(cms, {"metadata": {"name": "owner"}}), 201)
    apiserver.ok(apiserver.post(pods, pod("worker", "node-a", ownerReferences=[owner_ref(owner)])), 201)
    marked = apiserver.ok(apiserver.delete(f"{cms}/owner", {"propagationPolicy": "Foreground"}))
    assert "foregroundDeletion" in marked["metadata"]["finalizers"] and marked["metadata"]["deletionTimestamp"]
    listed = apiserver.ok(apiserver.get(pods, params={"fieldSelector": "metadata.name=worker"}))
    if not listed["items"][0]["metadata"].get("deletionTimestamp"):
        for event in apiserver.watch(pods, fieldSelector="metadata.name=worker", timeoutSeconds=10,
                                     resourceVersion=listed["metadata"]["resourceVersion"]):
            if event["object"]["metadata"].get("deletionTimestamp"):
                break
    assert apiserver.ok(apiserver.get(f"{cms}/owner"))["metadata"]["deletionTimestamp"]
    apiserver.ok(apiserver.delete(f"{pods}/worker", {"gracePeriodSeconds": 0}))
    apiserver.wait_gone(f"{cms}/owner")


def test_orphan_deletion_keeps_dependents_without_the_reference(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("gc-orphan")
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    owner = apiserver.ok(apiserver.post(cms, {"metadata": {"name": "owner"}}), 201)
    apiserver.ok(apiserver.post(cms, {"metadata": {"name": "kept", "labels": {"a": "b"},
                                                   "ownerReferences": [owner_ref(owner)]}}), 201)
    apiserver.ok(apiserver.delete(f"{cms}/owner", {"propagationPolicy": "Orphan"}))
    apiserver.wait_gone(f"{cms}/owner")
    kept = apiserver.ok(apiserver.get(f"{cms}/kept"))
    assert "ownerReferences" not in kept["metadata"]


def test_deleting_a_namespace_deletes_its_contents_first(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("delete-namespace")
    apiserver.ok(apiserver.post(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "inside"}}), 201)
    terminating = apiserver.ok(apiserver.delete(f"/api/v1/namespaces/{ns}"))
    assert terminating["status"]["phase"] == "Terminating"
    refused = apiserver.post(f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "late"}})
    assert refused.status_code in (403, 404)
    apiserver.wait_gone(f"/api/v1/namespaces/{ns}")
    assert apiserver.get(f"/api/v1/namespaces/{ns}/configmaps/inside").status_code == 404
    assert apiserver.delete("/api/v1/namespaces/default").status_code == 403


def test_delete_collection_by_label(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("delete-collection")
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    for name, role in (("a", "x"), ("b", "x"), ("c", "y")):
        apiserver.ok(apiserver.post(cms, {"metadata": {"name": name, "labels": {"role": role}}}), 201)
    deleted = apiserver.ok(apiserver.delete(cms, params={"labelSelector": "role=x"}))
    assert sorted(i["metadata"]["name"] for i in deleted["items"]) == ["a", "b"]
    assert [i["metadata"]["name"] for i in apiserver.ok(apiserver.get(cms))["items"]] == ["c"]
