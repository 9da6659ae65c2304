"""Pods' subresources: binding by the scheduler, status written by the node, and logs read from the
files the node writes under <state-dir>/logs."""

from __future__ import annotations

from conftest import ApiServerProcess


def make_pod(apiserver: ApiServerProcess, ns: str, name: str, *containers: str) -> dict:
    spec = {"containers": [{"name": c, "image": "busybox"} for c in containers or ("main",)]}
    return apiserver.ok(apiserver.post(f"/api/v1/namespaces/{ns}/pods", {"metadata": {"name": name},
                                                                          "spec": spec}), 201)


def test_binding_assigns_the_node_once(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("pods-binding")
    make_pod(apiserver, ns, "p")
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "node-a"}}
    answer = apiserver.ok(apiserver.post(f"/api/v1/namespaces/{ns}/pods/p/binding", binding), 201)
    assert answer["status"] == "Success"
    bound = apiserver.ok(apiserver.get(f"/api/v1/namespaces/{ns}/pods/p"))
    assert bound["spec"]["nodeName"] == "node-a"
    assert {"type": "PodScheduled", "status": "True"}.items() <= bound["status"]["conditions"][0].items()
    again = apiserver.post(f"/api/v1/namespaces/{ns}/pods/p/binding", dict(binding, target={"name": "node-b"}))
    assert again.status_code == 409 and 'is already assigned to node "node-a"' in again.json()["message"]
    make_pod(apiserver, ns, "q")
    apiserver.ok(apiserver.post(f"/api/v1/namespaces/{ns}/bindings", dict(binding, metadata={"name": "q"})), 201)
    assert apiserver.ok(apiserver.get(f"/api/v1/namespaces/{ns}/pods/q"))["spec"]["nodeName"] == "node-a"
    assert apiserver.post(f"/api/v1/namespaces/{ns}/pods/none/binding", binding).status_code == 404


def test_status_update_changes_only_the_status(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("pods-status")
    created = make_pod(apiserver, ns, "s")
    body = dict(created, status={"phase": "Running", "podIP": "10.244.0.5"},
                metadata=dict(created["metadata"], labels={"ignored": "yes"}))
    updated = apiserver.ok(apiserver.put(f"/api/v1/namespaces/{ns}/pods/s/status", body))
    assert updated["status"]["phase"] == "Running" and "labels" not in updated["metadata"]
    listed = apiserver.ok(apiserver.get(f"/api/v1/namespaces/{ns}/pods", params={"fieldSelector": "status.phase=Running"}))
    assert [p["metadata"]["name"] for p in listed["items"]] == ["s"]
    main = apiserver.ok(apiserver.patch(f"/api/v1/namespaces/{ns}/pods/s", {"status": {"phase": "Failed"}}))
    assert main["status"]["phase"] == "Running"


def test_log_reads_the_container_file(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("pods-log")
    single = make_pod(apiserver, ns, "single")
    not_started = apiserver.get(f"/api/v1/namespaces/{ns}/pods/single/log")
    assert not_started.status_code == 400 and "is waiting to start" in not_started.json()["message"]
    folder = apiserver.state_dir / "logs" / f"{ns}_single_{single['metadata']['uid']}"
    folder.mkdir(parents=True)
    (folder / "main.log").write_text("one\ntwo\nthree\n")
    response = apiserver.get(f"/api/v1/namespaces/{ns}/pods/single/log")
    assert response.status_code == 200 and response.text == "one\ntwo\nthree\n"
    assert apiserver.get(f"/api/v1/namespaces/{ns}/pods/single/log", params={"tailLines": "2"}).text == "two\nthree\n"
    make_pod(apiserver, ns, "double", "a", "b")
    ambiguous = apiserver.get(f"/api/v1/namespaces/{ns}/pods/double/log")
    assert ambiguous.status_code == 400
    assert ambiguous.json()["message"] == "a container name must be specified for pod double, choose one of: [a b]"
    wrong = apiserver.get(f"/api/v1/namespaces/{ns}/pods/double/log", params={"container": "c"})
    assert wrong.status_code == 400 and wrong.json()["message"] == "container c is not valid for pod double"
    assert apiserver.get(f"/api/v1/namespaces/{ns}/pods/missing/log").status_code == 404


def test_log_follow_streams_until_the_container_ends(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("pods-follow")
    pod = make_pod(apiserver, ns, "f")
    folder = apiserver.state_dir / "logs" / f"{ns}_f_{pod['metadata']['uid']}"
    folder.mkdir(parents=True)
    log = folder / "main.log"
    log.write_text("start\n")
    response = apiserver.session.get(f"{apiserver.url}/api/v1/namespaces/{ns}/pods/f/log",
                                     params={"follow": "true"}, stream=True, timeout=(5, 20))
    lines = response.iter_lines()
    assert next(lines) == b"start"
    with log.open("a") as handle:
        handle.write("more\n")
    assert next(lines) == b"more"
    apiserver.ok(apiserver.patch(f"/api/v1/namespaces/{ns}/pods/f/status", {"status": {"containerStatuses": [
        {"name": "main", "state": {"terminated": {"exitCode": 0}}}]}}))
    assert list(lines) == []
    response.close()
