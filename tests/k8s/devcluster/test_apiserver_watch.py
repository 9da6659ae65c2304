"""WATCH: initial events, resuming from a resourceVersion, 410 for a too-old one, bookmarks, timeouts,
and selectors that turn modifications into ADDED/DELETED as objects enter or leave the selection."""

from __future__ import annotations

import time

from conftest import ApiServerProcess

CM = "/api/v1/namespaces/{ns}/configmaps"


def test_watch_from_nothing_sends_current_objects_then_changes(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("watch-initial")
    path = CM.format(ns=ns)
    apiserver.ok(apiserver.post(path, {"metadata": {"name": "before"}}), 201)
    events = apiserver.watch(path, timeoutSeconds=10)
    first = next(events)
    assert first["type"] == "ADDED" and first["object"]["metadata"]["name"] == "before"
    apiserver.ok(apiserver.post(path, {"metadata": {"name": "after"}}), 201)
    second = next(events)
    assert second["type"] == "ADDED" and second["object"]["metadata"]["name"] == "after"
    apiserver.ok(apiserver.delete(f"{path}/before"))
    third = next(events)
    assert third["type"] == "DELETED" and third["object"]["metadata"]["name"] == "before"
    assert int(third["object"]["metadata"]["resourceVersion"]) > int(second["object"]["metadata"]["resourceVersion"])
    events.close()


def test_watch_resumes_after_a_resource_version(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("watch-resume")
    path = CM.format(ns=ns)
    listed = apiserver.ok(apiserver.get(path))
    apiserver.ok(apiserver.post(path, {"metadata": {"name": "one"}}), 201)
    apiserver.ok(apiserver.patch(f"{path}/one", {"data": {"k": "v"}}))
    apiserver.ok(apiserver.post(path, {"metadata": {"name": "two"}}), 201)
    events = apiserver.watch(path, resourceVersion=listed["metadata"]["resourceVersion"], timeoutSeconds=10)
    seen = [(e["type"], e["object"]["metadata"]["name"]) for e in (next(events), next(events), next(events))]
    assert seen == [("ADDED", "one"), ("MODIFIED", "one"), ("ADDED", "two")]
    events.close()


def test_watch_from_a_too_old_resource_version_gets_410(apiserver_with) -> None:
    server: ApiServerProcess = apiserver_with("--watch-history", "10")
    path = "/api/v1/namespaces/default/configmaps"
    first = server.ok(server.post(path, {"metadata": {"name": "churn"}}), 201)
    for index in range(12):
        server.ok(server.patch(f"{path}/churn", {"data": {"n": str(index)}}))
    events = list(server.watch(path, resourceVersion=first["metadata"]["resourceVersion"], timeoutSeconds=5))
    assert len(events) == 1 and events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert status["kind"] == "Status" and status["code"] == 410 and status["reason"] == "Expired"
    assert status["message"].startswith(f"too old resource version: {first['metadata']['resourceVersion']} (")


def test_bookmarks_carry_the_latest_resource_version(apiserver_with) -> None:
    server: ApiServerProcess = apiserver_with("--bookmark-interval", "0.3")
    path = "/api/v1/namespaces/default/configmaps"
    listed = server.ok(server.get(path))
    events = server.watch(path, resourceVersion=listed["metadata"]["resourceVersion"], allowWatchBookmarks="true",
                          timeoutSeconds=10)
    bookmark = next(events)
    assert bookmark["type"] == "BOOKMARK" and bookmark["object"]["kind"] == "ConfigMap"
    assert int(bookmark["object"]["metadata"]["resourceVersion"]) >= int(listed["metadata"]["resourceVersion"])
    created = server.ok(server.post(path, {"metadata": {"name": "marked"}}), 201)
    for event in events:
        if event["type"] == "BOOKMARK" and int(event["object"]["metadata"]["resourceVersion"]) >= int(
                created["metadata"]["resourceVersion"]):
            break
    events.close()


def test_timeout_ends_the_stream_cleanly_with_a_last_bookmark(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("watch-timeout")
    started = time.monotonic()
    events = list(apiserver.watch(CM.format(ns=ns), resourceVersion=apiserver.ok(
        apiserver.get(CM.format(ns=ns)))["metadata"]["resourceVersion"], timeoutSeconds=1,
        allowWatchBookmarks="true"))
    assert 0.9 <= time.monotonic() - started < 5
    assert [e["type"] for e in events] == ["BOOKMARK"]


def test_selection_changes_become_added_and_deleted(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("watch-selection")
    path = CM.format(ns=ns)
    listed = apiserver.ok(apiserver.get(path))
    events = apiserver.watch(path, labelSelector="role=worker", resourceVersion=listed["metadata"]["resourceVersion"],
                             timeoutSeconds=10)
    apiserver.ok(apiserver.post(path, {"metadata": {"name": "m", "labels": {"role": "launcher"}}}), 201)
    apiserver.ok(apiserver.patch(f"{path}/m", {"metadata": {"labels": {"role": "worker"}}}))
    entered = next(events)
    assert entered["type"] == "ADDED" and entered["object"]["metadata"]["labels"]["role"] == "worker"
    apiserver.ok(apiserver.patch(f"{path}/m", {"data": {"x": "1"}}))
    assert next(events)["type"] == "MODIFIED"
    left = apiserver.ok(apiserver.patch(f"{path}/m", {"metadata": {"labels": {"role": "gone"}}}))
    event = next(events)
    assert event["type"] == "DELETED"
    assert event["object"]["metadata"]["resourceVersion"] == left["metadata"]["resourceVersion"]
    apiserver.ok(apiserver.delete(f"{path}/m"))
    apiserver.ok(apiserver.post(path, {"metadata": {"name": "w2", "labels": {"role": "worker"}}}), 201)
    last = next(events)
    assert (last["type"], last["object"]["metadata"]["name"]) == ("ADDED", "w2")
    events.close()


def test_field_selector_watch_on_one_name(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("watch-name")
    path = CM.format(ns=ns)
    events = apiserver.watch(path, fieldSelector="metadata.name=target", timeoutSeconds=10)
    apiserver.ok(apiserver.post(path, {"metadata": {"name": "other"}}), 201)
    apiserver.ok(apiserver.post(path, {"metadata": {"name": "target"}}), 201)
    event = next(events)
    assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "target")
    events.close()
