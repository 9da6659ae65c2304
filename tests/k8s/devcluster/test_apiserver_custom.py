"""CustomResourceDefinitions and custom resources: registration, generation, the status and scale
subresources that change only their half, and CRD deletion."""

from __future__ import annotations

from conftest import WIDGET_CRD, WIDGETS, ApiServerProcess, install_widget_crd

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def widget(name: str, replicas: int = 1, status: dict | None = None) -> dict:
    body = {"apiVersion": "example.fibermpi.io/v1", "kind": "Widget", "metadata": {"name": name},
            "spec": {"replicas": replicas, "size": "s"}}
    if status is not None:
        body["status"] = status
    return body


def test_creating_a_crd_serves_its_resource_at_once(apiserver: ApiServerProcess) -> None:
    install_widget_crd(apiserver)
    crd = apiserver.ok(apiserver.get(f"{CRDS}/widgets.example.fibermpi.io"))
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert crd["status"]["acceptedNames"]["kind"] == "Widget"
    ns = apiserver.namespace("custom-served")
    created = apiserver.ok(apiserver.post(WIDGETS.format(ns=ns), widget("w", 3, {"replicas": 9})), 201)
    assert created["metadata"]["generation"] == 1 and "status" not in created
    assert apiserver.ok(apiserver.get(WIDGETS.format(ns=ns)))["kind"] == "WidgetList"
    missing_kind = apiserver.post(WIDGETS.format(ns=ns), {"metadata": {"name": "k"}})
    assert missing_kind.status_code == 400 and "Object 'Kind' is missing" in missing_kind.json()["message"]


def test_generation_moves_on_spec_changes_only(apiserver: ApiServerProcess) -> None:
    install_widget_crd(apiserver)
    ns = apiserver.namespace("custom-generation")
    path = WIDGETS.format(ns=ns)
    apiserver.ok(apiserver.post(path, widget("g")), 201)
    labelled = apiserver.ok(apiserver.patch(f"{path}/g", {"metadata": {"labels": {"a": "b"}}}))
    assert labelled["metadata"]["generation"] == 1
    status = apiserver.ok(apiserver.patch(f"{path}/g/status", {"status": {"phase": "Running"}}))
    assert status["metadata"]["generation"] == 1
    spec = apiserver.ok(apiserver.patch(f"{path}/g", {"spec": {"size": "m"}}))
    assert spec["metadata"]["generation"] == 2


def test_status_and_main_resource_change_only_their_half(apiserver: ApiServerProcess) -> None:
    install_widget_crd(apiserver)
    ns = apiserver.namespace("custom-status")
    path = WIDGETS.format(ns=ns)
    created = apiserver.ok(apiserver.post(path, widget("s")), 201)
    body = dict(created, spec={"replicas": 5, "size": "s"}, status={"phase": "Running"})
    after_status = apiserver.ok(apiserver.put(f"{path}/s/status", body))
    assert after_status["status"] == {"phase": "Running"} and after_status["spec"]["replicas"] == 1
    body = dict(after_status, spec={"replicas": 2, "size": "s"}, status={"phase": "Ignored"})
    after_main = apiserver.ok(apiserver.put(f"{path}/s", body))
    assert after_main["spec"]["replicas"] == 2 and after_main["status"] == {"phase": "Running"}
    stale = apiserver.put(f"{path}/s/status", dict(after_status, status={"phase": "Late"}))
    assert stale.status_code == 409
    no_rv = dict(after_main, metadata={"name": "s"}, status={"phase": "x"})
    assert apiserver.put(f"{path}/s/status", no_rv).status_code == 422


def test_scale_subresource_reads_and_writes_only_spec_replicas(apiserver: ApiServerProcess) -> None:
    install_widget_crd(apiserver)
    ns = apiserver.namespace("custom-scale")
    path = WIDGETS.format(ns=ns)
    apiserver.ok(apiserver.post(path, widget("sc", 2)), 201)
    apiserver.ok(apiserver.patch(f"{path}/sc/status", {"status": {"replicas": 1, "selector": "app=sc"}}))
    scale = apiserver.ok(apiserver.get(f"{path}/sc/scale"))
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"] == {"replicas": 2} and scale["status"] == {"replicas": 1, "selector": "app=sc"}
    patched = apiserver.ok(apiserver.patch(f"{path}/sc/scale", {"spec": {"replicas": 4}}))
    assert patched["spec"]["replicas"] == 4 and patched["status"]["replicas"] == 1
    scaled = apiserver.ok(apiserver.get(f"{path}/sc"))
    assert scaled["spec"] == {"replicas": 4, "size": "s"} and scaled["metadata"]["generation"] == 2
    stale = apiserver.put(f"{path}/sc/scale", dict(scale, spec={"replicas": 6}))
    assert stale.status_code == 409 and stale.json()["reason"] == "Conflict"
    current = apiserver.ok(apiserver.get(f"{path}/sc/scale"))
    put = apiserver.ok(apiserver.put(f"{path}/sc/scale", dict(current, spec={"replicas": 6})))
    assert put["spec"]["replicas"] == 6
    negative = apiserver.patch(f"{path}/sc/scale", {"spec": {"replicas": -1}})
    assert negative.status_code == 422


def test_a_scale_without_spec_replicas_cannot_be_read_but_can_be_set(apiserver: ApiServerProcess) -> None:
    """As the real server: GET /scale of a resource with no value at specReplicasPath is a 500
    (what an HPA reading it gets); a patch that sets the replicas works, one that does not is 422."""
    install_widget_crd(apiserver)
    ns = apiserver.namespace("custom-scale-unset")
    path = WIDGETS.format(ns=ns)
    apiserver.ok(apiserver.post(path, {"apiVersion": "example.fibermpi.io/v1", "kind": "Widget",
                                       "metadata": {"name": "u"}, "spec": {"size": "s"}}), 201)
    unreadable = apiserver.get(f"{path}/u/scale")
    assert unreadable.status_code == 500, unreadable.text
    assert unreadable.json()["reason"] == "InternalError"
    assert unreadable.json()["message"] == \
        'Internal error occurred: the spec replicas field ".spec.replicas" does not exist'
    unset = apiserver.patch(f"{path}/u/scale", {"metadata": {"labels": {"a": "b"}}})
    assert unset.status_code == 422 and "spec.replicas" in unset.json()["message"], unset.text
    patched = apiserver.ok(apiserver.patch(f"{path}/u/scale", {"spec": {"replicas": 3}}))
    assert patched["spec"]["replicas"] == 3
    assert apiserver.ok(apiserver.get(f"{path}/u/scale"))["spec"]["replicas"] == 3


def test_deleting_a_crd_removes_its_objects_and_its_resource(apiserver_with) -> None:
    server: ApiServerProcess = apiserver_with()
    install_widget_crd(server)
    path = WIDGETS.format(ns="default")
    server.ok(server.post(path, widget("doomed")), 201)
    listed = server.ok(server.get(path))
    events = server.watch(path, resourceVersion=listed["metadata"]["resourceVersion"], timeoutSeconds=10)
    server.ok(server.delete(f"{CRDS}/{WIDGET_CRD['metadata']['name']}"))
    event = next(events)
    assert (event["type"], event["object"]["metadata"]["name"]) == ("DELETED", "doomed")
    assert list(events) == []          # the resource is no longer served: its watch ends
    server.wait_gone(f"{CRDS}/{WIDGET_CRD['metadata']['name']}")
    assert server.get(path).status_code == 404


def test_a_terminating_crd_takes_no_new_objects(apiserver_with) -> None:
    server: ApiServerProcess = apiserver_with()
    install_widget_crd(server)
    path = WIDGETS.format(ns="default")
    held = dict(widget("held"), metadata={"name": "held", "finalizers": ["example.com/hold"]})
    server.ok(server.post(path, held), 201)
    crd = server.ok(server.delete(f"{CRDS}/{WIDGET_CRD['metadata']['name']}"))
    assert crd["metadata"]["deletionTimestamp"]
    refused = server.post(path, widget("late"))
    assert refused.status_code == 405 and "terminating" in refused.json()["message"]
    server.ok(server.patch(f"{path}/held", {"metadata": {"finalizers": None}}))
    server.wait_gone(f"{CRDS}/{WIDGET_CRD['metadata']['name']}")
