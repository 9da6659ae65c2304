"""ResourceQuota in the API server stand-in: quotas are stored with canonical quantities and validated,
pod creates that leave out a constrained request or would exceed a hard limit are refused with
kube-apiserver's wording, and status.hard/status.used follow the pods as they come, end and go."""

from __future__ import annotations

import time
from typing import Any, Callable

import requests

from conftest import ApiServerProcess
from k8s.devcluster.apiserver.quantities import Quantity
from k8s.devcluster.apiserver.resource_quota import pod_usage

WAIT_S = 10.0


def quota(apiserver: ApiServerProcess, ns: str, name: str, hard: dict[str, str], **spec: Any) -> dict[str, Any]:
    return apiserver.ok(apiserver.post(f"/api/v1/namespaces/{ns}/resourcequotas",
                                       {"metadata": {"name": name}, "spec": {"hard": hard, **spec}}), 201)


def status_once(apiserver: ApiServerProcess, ns: str, name: str,
                done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The quota's status once `done` holds for it (the quota controller writes it shortly after)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        status = apiserver.ok(apiserver.get(f"/api/v1/namespaces/{ns}/resourcequotas/{name}")).get("status") or {}
        if done(status):
            return status
        assert time.monotonic() < deadline, f"quota {ns}/{name} status stayed {status}"
        time.sleep(0.05)


def used_becomes(apiserver: ApiServerProcess, ns: str, name: str, used: dict[str, str]) -> dict[str, Any]:
    return status_once(apiserver, ns, name, lambda s: s.get("used") == used)


def container(name: str = "c", requests: dict[str, str] | None = None,
              limits: dict[str, str] | None = None) -> dict[str, Any]:
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    return {"name": name, "image": "busybox", "resources": resources}


def create_pod(apiserver: ApiServerProcess, ns: str, name: str, *containers: dict[str, Any],
               init: tuple[dict[str, Any], ...] = (), **params: str) -> requests.Response:
    spec: dict[str, Any] = {"containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    return apiserver.post(f"/api/v1/namespaces/{ns}/pods", {"metadata": {"name": name}, "spec": spec},
                          params=params)


def refused(response: requests.Response, message: str, name: str) -> None:
    assert response.status_code == 403, response.text
    assert response.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                               "message": message, "reason": "Forbidden",
                               "details": {"name": name, "kind": "pods"}, "code": 403}


def test_quotas_are_stored_canonical_and_their_status_filled(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("quota-status")
    created = quota(apiserver, ns, "compute", {"requests.cpu": "2000m", "requests.memory": "1.5Gi",
                                                "limits.cpu": "4", "pods": "3", "count/pods": "5",
                                                "services": "5"})
    assert created["spec"]["hard"] == {"requests.cpu": "2", "requests.memory": "1536Mi", "limits.cpu": "4",
                                       "pods": "3", "count/pods": "5", "services": "5"}
    assert created["status"] == {}
    status = status_once(apiserver, ns, "compute", lambda s: "used" in s)
    assert status == {"hard": created["spec"]["hard"],
                      "used": {"count/pods": "0", "limits.cpu": "0", "pods": "0", "requests.cpu": "0",
                               "requests.memory": "0"}}
    listed = apiserver.ok(apiserver.get(f"/api/v1/namespaces/{ns}/resourcequotas"))
    assert listed["kind"] == "ResourceQuotaList" and [q["metadata"]["name"] for q in listed["items"]] == ["compute"]
    # a user's status write is recounted by the controller
    current = apiserver.ok(apiserver.get(f"/api/v1/namespaces/{ns}/resourcequotas/compute"))
    apiserver.ok(apiserver.put(f"/api/v1/namespaces/{ns}/resourcequotas/compute/status",
                               dict(current, status={"hard": {"pods": "1"}, "used": {"pods": "7"}})))
    assert status_once(apiserver, ns, "compute", lambda s: s == status) == status


def test_invalid_quotas_are_refused_as_the_real_server_refuses_them(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("quota-invalid")
    path = f"/api/v1/namespaces/{ns}/resourcequotas"
    response = apiserver.post(path, {"metadata": {"name": "typo"}, "spec": {"hard": {"limit.cpu": "1"}}})
    assert response.status_code == 422
    assert response.json()["message"] == (
        'ResourceQuota "typo" is invalid: [spec.hard[limit.cpu]: Invalid value: "limit.cpu": must be a standard '
        'resource type or fully qualified, spec.hard[limit.cpu]: Invalid value: "limit.cpu": must be a standard '
        "resource for quota]")
    response = apiserver.post(path, {"metadata": {"name": "negative"}, "spec": {"hard": {"cpu": "-1"}}})
    assert response.status_code == 422
    assert response.json()["message"] == ('ResourceQuota "negative" is invalid: spec.hard[cpu]: Invalid value: '
                                          '"-1": must be greater than or equal to 0')
    response = apiserver.post(path, {"metadata": {"name": "words"}, "spec": {"hard": {"cpu": "lots"}}})
    assert response.status_code == 400
    assert response.json()["message"] == (
        'ResourceQuota in version "v1" cannot be handled as a ResourceQuota: quantities must match the regular '
        "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    assert apiserver.post(path, {"metadata": {"name": "gpu"}, "spec": {"hard": {
        "requests.example.com/gpu": "2", "count/configmaps": "3"}}}).status_code == 201


def test_pods_must_state_what_a_quota_constrains(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("quota-specify")
    quota(apiserver, ns, "compute", {"requests.cpu": "4", "limits.memory": "4Gi"})
    quota(apiserver, ns, "count", {"pods": "10"})
    refused(create_pod(apiserver, ns, "bare", container("a"), container("b", requests={"cpu": "100m"}),
                       init=(container("setup"),)),
            'pods "bare" is forbidden: failed quota: compute: must specify limits.memory for: a,b,setup; '
            "requests.cpu for: a,setup", "bare")
    # a limit without a request is the request too, as the server defaults it
    response = create_pod(apiserver, ns, "limited", container("a", limits={"cpu": "500m", "memory": "128Mi"}))
    assert response.status_code == 201, response.text
    assert response.json()["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "500m", "memory": "128Mi"}
    assert response.json()["status"]["qosClass"] == "Guaranteed"
    other = apiserver.namespace("quota-specify-count")
    quota(apiserver, other, "count", {"pods": "10"})
    assert create_pod(apiserver, other, "bare", container("a")).status_code == 201


def test_quotas_refuse_what_would_exceed_them_and_free_up_as_pods_end_or_go(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("quota-exceed")
    quota(apiserver, ns, "compute", {"requests.cpu": "2", "pods": "2"})
    assert create_pod(apiserver, ns, "one", container(requests={"cpu": "1"})).status_code == 201
    used_becomes(apiserver, ns, "compute", {"pods": "1", "requests.cpu": "1"})
    refused(create_pod(apiserver, ns, "two", container(requests={"cpu": "2"})),
            'pods "two" is forbidden: exceeded quota: compute, requested: requests.cpu=2, used: requests.cpu=1, '
            "limited: requests.cpu=2", "two")
    assert create_pod(apiserver, ns, "half", container(requests={"cpu": "500m"})).status_code == 201
    used_becomes(apiserver, ns, "compute", {"pods": "2", "requests.cpu": "1500m"})
    refused(create_pod(apiserver, ns, "more", container(requests={"cpu": "1"})),
            'pods "more" is forbidden: exceeded quota: compute, requested: pods=1,requests.cpu=1, used: '
            "pods=2,requests.cpu=1500m, limited: pods=2,requests.cpu=2", "more")
    assert create_pod(apiserver, ns, "dry", container(requests={"cpu": "1"}), dryRun="All").status_code == 403
    # a pod that ends (Succeeded) stops counting
    one = apiserver.ok(apiserver.get(f"/api/v1/namespaces/{ns}/pods/one"))
    apiserver.ok(apiserver.put(f"/api/v1/namespaces/{ns}/pods/one/status", dict(one, status={"phase": "Succeeded"})))
    used_becomes(apiserver, ns, "compute", {"pods": "1", "requests.cpu": "500m"})
    assert create_pod(apiserver, ns, "again", container(requests={"cpu": "1500m"})).status_code == 201
    used_becomes(apiserver, ns, "compute", {"pods": "2", "requests.cpu": "2"})
    # a deleted one too
    apiserver.ok(apiserver.delete(f"/api/v1/namespaces/{ns}/pods/half"))
    used_becomes(apiserver, ns, "compute", {"pods": "1", "requests.cpu": "1500m"})
    assert create_pod(apiserver, ns, "last", container(requests={"cpu": "500m"})).status_code == 201
    used_becomes(apiserver, ns, "compute", {"pods": "2", "requests.cpu": "2"})


def test_memory_sums_keep_the_first_format(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("quota-memory")
    quota(apiserver, ns, "memory", {"requests.memory": "1Gi", "limits.memory": "2Gi"})
    assert create_pod(apiserver, ns, "a", container(requests={"memory": "512Mi"}, limits={"memory": "1Gi"}),
                      container("b", requests={"memory": "256Mi"}, limits={"memory": "256Mi"})).status_code == 201
    used_becomes(apiserver, ns, "memory", {"limits.memory": "1280Mi", "requests.memory": "768Mi"})
    refused(create_pod(apiserver, ns, "b", container(requests={"memory": "300M"}, limits={"memory": "300M"})),
            'pods "b" is forbidden: exceeded quota: memory, requested: requests.memory=300M, used: '
            "requests.memory=768Mi, limited: requests.memory=1Gi", "b")


def test_scoped_quotas_count_only_the_pods_they_select(apiserver: ApiServerProcess) -> None:
    ns = apiserver.namespace("quota-scoped")
    quota(apiserver, ns, "best-effort", {"pods": "1"}, scopes=["BestEffort"])
    assert create_pod(apiserver, ns, "free", container()).status_code == 201
    assert create_pod(apiserver, ns, "burstable", container(requests={"cpu": "100m"})).status_code == 201
    refused(create_pod(apiserver, ns, "free-too", container()),
            'pods "free-too" is forbidden: exceeded quota: best-effort, requested: pods=1, used: pods=1, limited: '
            "pods=1", "free-too")
    used_becomes(apiserver, ns, "best-effort", {"pods": "1"})


def test_pod_usage_takes_the_largest_init_container_and_stops_at_the_end() -> None:
    pod = {"spec": {"initContainers": [container("i", requests={"cpu": "3"}, limits={"cpu": "3"})],
                    "containers": [container("a", requests={"cpu": "1", "memory": "1Gi"}),
                                   container("b", requests={"cpu": "500m"}, limits={"memory": "2Gi"})]}}
    usage = {name: str(q) for name, q in pod_usage(pod, time.time()).items()}
    assert usage == {"count/pods": "1", "pods": "1", "cpu": "3", "requests.cpu": "3", "limits.cpu": "3",
                     "memory": "1Gi", "requests.memory": "1Gi", "limits.memory": "2Gi"}
    ended = dict(pod, status={"phase": "Failed"})
    assert {name: str(q) for name, q in pod_usage(ended, time.time()).items()} == {"count/pods": "1"}
    gone = dict(pod, metadata={"deletionTimestamp": "2020-01-01T00:00:00Z", "deletionGracePeriodSeconds": 30})
    assert list(pod_usage(gone, time.time())) == ["count/pods"]


def test_quantities_print_as_apimachinery_prints_them() -> None:
    printed = {text: str(Quantity.parse(text)) for text in
               ("1000m", "1.5", "0.5m", "1e3", "1k", "2048Mi", "1.5Gi", "1023", "100M", "0")}
    assert printed == {"1000m": "1", "1.5": "1500m", "0.5m": "500u", "1e3": "1e3", "1k": "1k", "2048Mi": "2Gi",
                       "1.5Gi": "1536Mi", "1023": "1023", "100M": "100M", "0": "0"}
    assert str(Quantity() + Quantity.parse("64Mi")) == "64Mi"
    assert str(Quantity.parse("64Mi") + Quantity.parse("100M")) == "167108864"
