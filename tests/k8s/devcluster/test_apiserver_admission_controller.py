"""fiber-controller's pods meet the stand-in's admission as they would meet a real server's: in a
namespace enforcing Pod Security restricted its default name-service pod is admitted, and so are the
sample job's launcher and workers (the sample is restricted-compliant), while the same job with
templates as a user might write them (no securityContext, no resources) has its launcher and
workers refused, which the controller reports in FailedCreate events; in a namespace with a
compute quota, pods without requests are refused the same way. The controller plays itself; the test plays the node."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml

from conftest import ApiServerProcess
from test_apiserver_pod_security import restricted_detail

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "controller"))
from test_controller_standin import CRD, URI, Controller, controller_binary, wait_for  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[3]
SAMPLE = REPO_ROOT / "k8s" / "samples" / "fiberjob.yaml"
JOBS = "/apis/fibermpi.io/v1alpha1/namespaces/{ns}/fiberjobs"


@pytest.fixture
def server(apiserver_with: Callable[..., ApiServerProcess], tmp_path: Path) -> Iterator[ApiServerProcess]:
    """A stand-in with the FiberJob CRD and a fiber-controller leading against it."""
    if not controller_binary().exists():
        pytest.skip(f"fiber-controller is not built ({controller_binary()})")
    started = apiserver_with()
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    started.ok(started.post(crds, yaml.safe_load(CRD.read_text())))
    started.namespace("fiber-system")
    wait_for("the FiberJob resource", lambda: started.get(JOBS.format(ns="default")).status_code == 200)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "dev",
        "clusters": [{"name": "dev", "cluster": {"server": started.url}}], "users": [{"name": "admin", "user": {}}],
        "contexts": [{"name": "dev", "context": {"cluster": "dev", "user": "admin"}}]}))
    controller = Controller(kubeconfig, tmp_path / "controller.log", "c1")
    yield started
    assert controller.stop() == 0


def without_security_or_resources(job: dict[str, Any]) -> dict[str, Any]:
    """The sample's templates as a user might write them: no securityContext, no resources."""
    for part in ("launcher", "workers"):
        spec = job["spec"][part]["template"]["spec"]
        spec.pop("securityContext", None)
        for container in spec["containers"]:
            container.pop("securityContext", None)
            container.pop("resources", None)
    return job


def run_sample(server: ApiServerProcess, ns: str, as_shipped: bool = False) -> dict[str, Any]:
    """Create the sample FiberJob in `ns` (as shipped, or without_security_or_resources) and play the
    node for its name service, which the controller needs running (with its URI in its log) before
    it creates the launcher; the name-service pod."""
    job = yaml.safe_load(SAMPLE.read_text())
    if not as_shipped:
        job = without_security_or_resources(job)
    job["metadata"]["namespace"] = ns
    server.ok(server.post(JOBS.format(ns=ns), job), 201)
    pods = f"/api/v1/namespaces/{ns}/pods"
    pod = wait_for("the name-service pod", lambda: next(
        (p for p in server.ok(server.get(pods))["items"] if p["metadata"]["name"] == "sample-nameservice"), None))
    meta = pod["metadata"]
    folder = server.state_dir / "logs" / f"{ns}_{meta['name']}_{meta['uid']}"
    folder.mkdir(parents=True)
    (folder / f"{pod['spec']['containers'][0]['name']}.log").write_text(f"starting\n{URI}\n")
    pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    server.ok(server.put(f"{pods}/sample-nameservice/status", pod))
    return pod


SAMPLE_PODS = ("sample-launcher", "sample-worker-0", "sample-worker-1")


def expected_refusals(ns: str, detail: str) -> set[str]:
    """The controller's FailedCreate message for each pod of the sample it creates after the name
    service, carrying the server's refusal `detail`."""
    return {f'Error creating Pod {pod}: POST /api/v1/namespaces/{ns}/pods: 403 Forbidden: pods "{pod}" is '
            f"forbidden: {detail}" for pod in SAMPLE_PODS}


def recorded_refusals(server: ApiServerProcess, ns: str) -> set[str]:
    """The FailedCreate messages, once there is one for the launcher and for each worker."""
    def recorded() -> set[str] | None:
        events = server.ok(server.get(f"/api/v1/namespaces/{ns}/events"))["items"]
        messages = {e["message"] for e in events if e["reason"] == "FailedCreate"}
        return messages if all(any(f"Pod {pod}:" in m for m in messages) for pod in SAMPLE_PODS) else None

    return wait_for("FailedCreate events for the launcher and the workers", recorded)


def test_restricted_admits_the_name_service_and_refuses_the_samples_launcher_and_workers(
        server: ApiServerProcess) -> None:
    ns = "restricted-jobs"
    server.ok(server.post("/api/v1/namespaces", {"metadata": {"name": ns, "labels": {
        "pod-security.kubernetes.io/enforce": "restricted"}}}), 201)
    name_service = run_sample(server, ns)
    assert name_service["spec"]["securityContext"]["runAsNonRoot"] is True
    detail = f'violates PodSecurity "restricted:latest": {restricted_detail("main")}'
    assert recorded_refusals(server, ns) == expected_refusals(ns, detail)


def test_restricted_admits_the_shipped_sample(server: ApiServerProcess) -> None:
    ns = "restricted-sample"
    server.ok(server.post("/api/v1/namespaces", {"metadata": {"name": ns, "labels": {
        "pod-security.kubernetes.io/enforce": "restricted"}}}), 201)
    run_sample(server, ns, as_shipped=True)
    pods = f"/api/v1/namespaces/{ns}/pods"

    def created() -> set[str] | None:
        names = {p["metadata"]["name"] for p in server.ok(server.get(pods))["items"]}
        return names if set(SAMPLE_PODS) <= names else None

    wait_for("the sample's launcher and workers", created)
    events = server.ok(server.get(f"/api/v1/namespaces/{ns}/events"))["items"]
    assert not [e["message"] for e in events if e["reason"] == "FailedCreate"]


def test_a_compute_quota_admits_the_name_service_and_refuses_pods_without_requests(
        server: ApiServerProcess) -> None:
    ns = server.namespace("quota-jobs")
    server.ok(server.post(f"/api/v1/namespaces/{ns}/resourcequotas", {
        "metadata": {"name": "compute"}, "spec": {"hard": {"requests.cpu": "2", "limits.memory": "2Gi"}}}), 201)
    run_sample(server, ns)
    detail = "failed quota: compute: must specify limits.memory for: main; requests.cpu for: main"
    assert recorded_refusals(server, ns) == expected_refusals(ns, detail)
