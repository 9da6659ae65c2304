"""A whole development cluster (API server stand-in, scheduler, two nodes, no controller) brought
up with scripts/dev-cluster in a temporary dir and down at the end: pods run as processes, their
exit codes, environment, logs, graceful deletion, networking and service-account tokens go through
the real API, users bound to the built-in edit and view roles run FiberJobs, and the real kubectl
drives it. `down` must leave nothing behind."""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
import time
import uuid
from typing import Any, Iterator

import pytest

from k8s.devcluster import netns
from k8s.devcluster.cluster import DEFAULT_IMAGE_DIR, issue_certificate, processes_mentioning
from k8s.devcluster.kube import (KubeClient, client_from_kubeconfig, core_path, pod_path, wait_for_object,
                                 write_kubeconfig)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DEV_CLUSTER = os.path.join(REPO, "scripts", "dev-cluster")
KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"
KUBECTL_OLDEST = "/usr/lib/google-cloud-sdk/bin/kubectl.1.27"
PYTHON = sys.executable
NAMESPACE = "default"
IMAGE = "fibermpi/dev-cluster-test"
IMAGE_MOUNT = "/opt/fiber-dev-cluster-test"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: Any) -> Iterator[tuple[str, KubeClient]]:
    state_dir = str(tmp_path_factory.mktemp("cluster"))
    image = tmp_path_factory.mktemp("image")
    (image / "bin").mkdir()
    (image / "bin" / "greet").write_text("#!/bin/sh\necho greetings from $0\n")
    (image / "bin" / "greet").chmod(0o755)
    up = subprocess.run([DEV_CLUSTER, "up", state_dir, "--no-controller", "--image", f"{IMAGE}={image}:{IMAGE_MOUNT}"],
                        capture_output=True, text=True, timeout=120)
    assert up.returncode == 0, up.stderr + "\n" + up.stdout
    assert up.stdout.strip() == f"export KUBECONFIG={os.path.realpath(state_dir)}/kubeconfig"
    try:
        yield state_dir, client_from_kubeconfig(os.path.join(state_dir, "kubeconfig"))
    finally:
        down = subprocess.run([DEV_CLUSTER, "down", state_dir], capture_output=True, text=True, timeout=120)
        assert down.returncode == 0, down.stderr
        assert processes_mentioning(state_dir) == []
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert netns.netns_prefix(netns.cluster_id(state_dir)) not in listed
        links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
        assert netns.bridge_name(netns.cluster_id(state_dir)) not in links


def run_pod(client: KubeClient, name: str, command: list[str], **spec: Any) -> dict[str, Any]:
    container = {"name": "main", "image": "debian:bookworm", "command": command}
    container.update(spec.pop("container", {}))
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"test": "dev-cluster"}},
           "spec": {"restartPolicy": spec.pop("restartPolicy", "Never"), "containers": [container], **spec}}
    return client.create(pod_path(NAMESPACE, ""), pod)


def wait_pod(client: KubeClient, name: str, predicate: Any, timeout_s: float = 60) -> dict[str, Any] | None:
    return wait_for_object(client, pod_path(NAMESPACE, ""), name, predicate, timeout_s)


def phase_in(*phases: str) -> Any:
    return lambda pod: pod is not None and pod.get("status", {}).get("phase") in phases


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def pod_log(client: KubeClient, name: str) -> str:
    return client.get_text(pod_path(NAMESPACE, name, "log"))


def test_nodes_are_ready_and_kubectl_sees_them(cluster: tuple[str, KubeClient]) -> None:
    state_dir, client = cluster
    env = dict(os.environ, KUBECONFIG=os.path.join(state_dir, "kubeconfig"))
    for kubectl in (KUBECTL, KUBECTL_OLDEST):
        nodes = subprocess.run([kubectl, "get", "nodes"], capture_output=True, text=True, env=env, timeout=60)
        assert nodes.returncode == 0, nodes.stderr
        lines = nodes.stdout.splitlines()
        assert lines[0].split()[:2] == ["NAME", "STATUS"]
        assert sorted(line.split()[:2] for line in lines[1:]) == [["node-1", "Ready"], ["node-2", "Ready"]]
    lease = client.get("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-1")
    assert lease["spec"]["holderIdentity"] == "node-1"
    name = unique("wide")
    run_pod(client, name, ["sleep", "30"])
    running = wait_pod(client, name, phase_in("Running"))
    wide = subprocess.run([KUBECTL, "get", "pods", name, "-o", "wide"], capture_output=True, text=True, env=env,
                          timeout=60)
    assert wide.returncode == 0, wide.stderr
    row = wide.stdout.splitlines()[1].split()
    assert row[0] == name and row[2] == "Running"
    assert running["status"]["podIP"] in row and running["spec"]["nodeName"] in row
    client.delete(pod_path(NAMESPACE, name), grace_period_seconds=1)


def test_exit_codes_land_in_container_statuses(cluster: tuple[str, KubeClient]) -> None:
    _, client = cluster
    good, bad = unique("good"), unique("bad")
    run_pod(client, good, ["true"])
    run_pod(client, bad, ["sh", "-c", "exit 3"])
    succeeded = wait_pod(client, good, phase_in("Succeeded", "Failed"))
    failed = wait_pod(client, bad, phase_in("Succeeded", "Failed"))
    assert succeeded["status"]["phase"] == "Succeeded"
    assert succeeded["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    assert failed["status"]["phase"] == "Failed"
    terminated = failed["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 3 and terminated["reason"] == "Error"


def test_environment_working_dir_and_log_endpoint(cluster: tuple[str, KubeClient], tmp_path: Any) -> None:
    _, client = cluster
    name = unique("env")
    fields = {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace", "POD_UID": "metadata.uid",
              "POD_IP": "status.podIP", "NODE": "spec.nodeName", "ROLE": "metadata.labels['test']"}
    env = [{"name": key, "valueFrom": {"fieldRef": {"fieldPath": path}}} for key, path in fields.items()]
    script = "import json, os; print(json.dumps({**{k: os.environ.get(k) for k in %r}, 'cwd': os.getcwd()}))" % (
        sorted(fields),)
    run_pod(client, name, [PYTHON, "-c", script], container={"env": env, "workingDir": str(tmp_path)})
    done = wait_pod(client, name, phase_in("Succeeded", "Failed"))
    assert done["status"]["phase"] == "Succeeded", pod_log(client, name)
    seen = json.loads(pod_log(client, name))
    assert seen["POD_NAME"] == name and seen["POD_NAMESPACE"] == NAMESPACE
    assert seen["POD_UID"] == done["metadata"]["uid"] and seen["POD_IP"] == done["status"]["podIP"]
    assert seen["NODE"] == done["spec"]["nodeName"] and seen["ROLE"] == "dev-cluster"
    assert seen["cwd"] == str(tmp_path)


def test_delete_with_grace_sigterm_then_sigkill(cluster: tuple[str, KubeClient], tmp_path: Any) -> None:
    _, client = cluster
    polite, stubborn = unique("polite"), unique("stubborn")
    marker = tmp_path / "term"
    run_pod(client, polite, ["bash", "-c", f"trap 'echo term > {marker}; exit 0' TERM; echo ready; "
                                           "while true; do sleep 0.1; done"])
    run_pod(client, stubborn, ["bash", "-c", "trap '' TERM; echo ready; while true; do sleep 0.1; done"])
    for name in (polite, stubborn):
        wait_pod(client, name, phase_in("Running"))
        wait_for_log(client, name, "ready")
    client.delete(pod_path(NAMESPACE, polite), grace_period_seconds=10)
    assert wait_pod(client, polite, lambda pod: pod is None, 30) is None
    assert marker.read_text().strip() == "term"
    began = time.monotonic()
    client.delete(pod_path(NAMESPACE, stubborn), grace_period_seconds=2)
    wait_pod(client, stubborn, lambda pod: pod is None, 30)
    assert time.monotonic() - began >= 2.0


def wait_for_log(client: KubeClient, name: str, text: str, timeout_s: float = 30) -> None:
    """Follows the pod's log (`kubectl logs -f`) until a line says `text`."""
    for line in client.follow_log(NAMESPACE, name, timeout_s=timeout_s):
        if text in line:
            return
    raise AssertionError(f"{name} ended without logging {text!r}")


def test_pods_reach_each_other_by_pod_ip(cluster: tuple[str, KubeClient]) -> None:
    state_dir, client = cluster
    record = json.load(open(os.path.join(state_dir, "cluster.json")))
    if record.get("network") != "pod-netns":
        pytest.skip("this machine gives pods no network namespaces")
    server, talker = unique("server"), unique("client")
    ips = "import socket, subprocess; ips = subprocess.run(['ip','-4','-o','addr'], capture_output=True, text=True).stdout"
    run_pod(client, server, [PYTHON, "-c", f"{ips}\nsrv = socket.create_server(('0.0.0.0', 7000)); print('listening', flush=True)\n"
                                          "conn, peer = srv.accept(); conn.sendall(b'pong ' + conn.recv(10))\n"
                                          "print(peer[0], 'own', ips.count('inet '), flush=True)"])
    server_pod = wait_pod(client, server, lambda pod: pod is not None and pod["status"].get("podIP"))
    wait_for_log(client, server, "listening")
    server_ip = server_pod["status"]["podIP"]
    run_pod(client, talker, [PYTHON, "-c", f"{ips}\ns = socket.create_connection(({server_ip!r}, 7000)); s.sendall(b'ping')\n"
                                           f"print(s.recv(20).decode(), {server_ip!r} in ips)"],
            nodeName="node-2" if server_pod["spec"]["nodeName"] == "node-1" else "node-1")
    talker_pod = wait_pod(client, talker, phase_in("Succeeded", "Failed"))
    assert talker_pod["status"]["phase"] == "Succeeded", pod_log(client, talker)
    assert pod_log(client, talker).split() == ["pong", "ping", "False"]
    wait_pod(client, server, phase_in("Succeeded", "Failed"))
    peer, _, own_count = pod_log(client, server).split("\n")[1].split()
    assert peer == talker_pod["status"]["podIP"] and own_count == "2"  # loopback and eth0 only
    assert talker_pod["spec"]["nodeName"] != server_pod["spec"]["nodeName"]


def test_service_account_token_authenticates(cluster: tuple[str, KubeClient]) -> None:
    state_dir, client = cluster
    if not json.load(open(os.path.join(state_dir, "cluster.json"))).get("private_mounts"):
        pytest.skip("this machine gives pods no mount namespaces, so no mounted token")
    name = unique("sa")
    script = (
        "import os, ssl, urllib.request, urllib.error\n"
        "d = '/var/run/secrets/kubernetes.io/serviceaccount'\n"
        "token = open(d + '/token').read(); ns = open(d + '/namespace').read()\n"
        "context = ssl.create_default_context(cafile=d + '/ca.crt')\n"
        "url = f\"https://{os.environ['KUBERNETES_SERVICE_HOST']}:{os.environ['KUBERNETES_SERVICE_PORT']}/api/v1/namespaces/{ns}/pods\"\n"
        "request = urllib.request.Request(url, headers={'Authorization': 'Bearer ' + token})\n"
        "try:\n  print(urllib.request.urlopen(request, context=context).status)\n"
        "except urllib.error.HTTPError as error:\n  print(error.code, error.read().decode())\n")
    run_pod(client, name, [PYTHON, "-c", script])
    done = wait_pod(client, name, phase_in("Succeeded", "Failed"))
    output = pod_log(client, name)
    assert done["status"]["phase"] == "Succeeded", output
    # Authenticated: allowed, or forbidden by RBAC for the named service account, never 401.
    assert output.startswith("200") or (output.startswith("403")
                                        and f"system:serviceaccount:{NAMESPACE}:default" in output), output


def test_on_failure_restarts(cluster: tuple[str, KubeClient], tmp_path: Any) -> None:
    _, client = cluster
    name = unique("retry")
    marker = tmp_path / "tried"
    run_pod(client, name, ["sh", "-c", f"if [ -e {marker} ]; then exit 0; fi; touch {marker}; exit 4"],
            restartPolicy="OnFailure")
    done = wait_pod(client, name, phase_in("Succeeded", "Failed"))
    assert done["status"]["phase"] == "Succeeded"
    assert done["status"]["containerStatuses"][0]["restartCount"] == 1


def test_local_image_is_recorded_and_mounted(cluster: tuple[str, KubeClient]) -> None:
    state_dir, client = cluster
    record = json.load(open(os.path.join(state_dir, "cluster.json")))
    images = {entry["image"]: entry for entry in record["images"]}
    assert images[IMAGE]["mountPath"] == IMAGE_MOUNT and os.path.isdir(images[IMAGE]["directory"])
    defaults = {name: images.get(name, {}).get("directory") for name in ("fibermpi/examples", "fibermpi/runtime")}
    expected = DEFAULT_IMAGE_DIR if os.path.isdir(DEFAULT_IMAGE_DIR) else None
    assert defaults == {"fibermpi/examples": expected, "fibermpi/runtime": expected}
    if not record.get("private_mounts"):
        pytest.skip("this machine gives pods no mount namespaces, so no local images")
    name = unique("imaged")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": f"{IMAGE}:v1",
                                                              "command": ["greet"]}]}}
    client.create(pod_path(NAMESPACE, ""), pod)
    done = wait_pod(client, name, phase_in("Succeeded", "Failed"))
    assert done["status"]["phase"] == "Succeeded", pod_log(client, name)
    assert pod_log(client, name).strip() == f"greetings from {IMAGE_MOUNT}/bin/greet"


def test_in_cluster_config_reads_through_the_api_from_the_pods_network(cluster: tuple[str, KubeClient]) -> None:
    """What a launcher does: KUBERNETES_SERVICE_HOST/PORT, the mounted token, CA and namespace, from the
    pod's own network namespace, with a ServiceAccount a Role lets read one ConfigMap by name; the same
    ConfigMap's fiber.yaml key mounted with items."""
    state_dir, client = cluster
    record = json.load(open(os.path.join(state_dir, "cluster.json")))
    if not record.get("private_mounts"):
        pytest.skip("this machine gives pods no mount namespaces, so no mounted token")
    name = unique("incluster")
    rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"
    client.create(core_path("configmaps", NAMESPACE), {"apiVersion": "v1", "kind": "ConfigMap",
                                                       "metadata": {"name": name},
                                                       "data": {"fiber.yaml": "workers: 3\n", "other": "x"}})
    client.create(core_path("serviceaccounts", NAMESPACE), {"apiVersion": "v1", "kind": "ServiceAccount",
                                                            "metadata": {"name": name}})
    client.create(f"{rbac}/roles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                                    "metadata": {"name": name},
                                    "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                                               "resourceNames": [name], "verbs": ["get"]}]})
    client.create(f"{rbac}/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}]})
    script = (
        "import json, os, ssl, urllib.request, urllib.error\n"
        "d = '/var/run/secrets/kubernetes.io/serviceaccount'\n"
        "token = open(d + '/token').read(); ns = open(d + '/namespace').read()\n"
        "context = ssl.create_default_context(cafile=d + '/ca.crt')\n"
        "base = f\"https://{os.environ['KUBERNETES_SERVICE_HOST']}:{os.environ['KUBERNETES_SERVICE_PORT']}\"\n"
        "def get(name):\n"
        "  request = urllib.request.Request(f'{base}/api/v1/namespaces/{ns}/configmaps/{name}',\n"
        "                                   headers={'Authorization': 'Bearer ' + token})\n"
        "  try:\n    return json.load(urllib.request.urlopen(request, context=context, timeout=10))['data']\n"
        "  except urllib.error.HTTPError as error:\n    return error.code\n"
        f"print(json.dumps({{'own': get({name!r}), 'other': get('kube-root-ca.crt'), 'ns': ns,\n"
        "                  'host': os.environ['KUBERNETES_SERVICE_HOST'], 'files': sorted(os.listdir('/etc/fiber')),\n"
        "                  'config': open('/etc/fiber/fiber.yaml').read()}))\n")
    run_pod(client, name, [PYTHON, "-c", script], serviceAccountName=name,
            volumes=[{"name": "config", "configMap": {"name": name, "items": [{"key": "fiber.yaml",
                                                                                "path": "fiber.yaml"}]}}],
            container={"volumeMounts": [{"name": "config", "mountPath": "/etc/fiber", "readOnly": True}]})
    done = wait_pod(client, name, phase_in("Succeeded", "Failed"))
    output = pod_log(client, name)
    assert done["status"]["phase"] == "Succeeded", output
    seen = json.loads(output)
    assert seen["own"] == {"fiber.yaml": "workers: 3\n", "other": "x"} and seen["other"] == 403
    assert seen["ns"] == NAMESPACE and seen["files"] == ["fiber.yaml"] and seen["config"] == "workers: 3\n"
    if record.get("network") == "pod-netns":
        assert seen["host"] == str(ipaddress.ip_network(record["subnet"]).network_address + 1)
        assert done["status"]["podIP"] not in ("127.0.0.1", seen["host"])


def test_a_namespace_editor_runs_fiberjobs_with_kubectl_and_a_viewer_only_reads_them(cluster: tuple[str, KubeClient],
                                                                                   tmp_path: Any) -> None:
    """`up` installs the project's aggregated FiberJob roles and waits for them to land in the built-in
    edit and view: RoleBindings to those are all two users (client certificates of the cluster's CA)
    need, in their namespace only. The oldest kubectl, whose `auth can-i` sends JSON, asks too."""
    state_dir, client = cluster
    team, other = unique("team"), unique("other")
    for namespace in (team, other):
        client.create(core_path("namespaces"), {"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": namespace}})
    pki = os.path.join(state_dir, "pki")
    record = json.load(open(os.path.join(state_dir, "cluster.json")))
    envs = {}
    for user, role in (("dana", "edit"), ("vera", "view")):
        issue_certificate(pki, user, f"/CN={user}", "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,"
                                                    "keyEncipherment\nextendedKeyUsage=clientAuth\n")
        kubeconfig = str(tmp_path / f"{user}.kubeconfig")
        write_kubeconfig(kubeconfig, record["server"], os.path.join(pki, "ca.crt"), "fiber-dev", user,
                         os.path.join(pki, f"{user}.crt"), os.path.join(pki, f"{user}.key"), namespace=team)
        envs[user] = dict(os.environ, KUBECONFIG=kubeconfig, HOME=str(tmp_path))
        client.create(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{team}/rolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": f"{user}-{role}"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})
    job = tmp_path / "job.yaml"
    job.write_text(json.dumps({
        "apiVersion": "fibermpi.io/v1alpha1", "kind": "FiberJob", "metadata": {"name": "sweep"},
        "spec": {"launcher": {"template": {"spec": {"containers": [
                     {"name": "main", "image": "fibermpi/runtime", "command": ["true"]}]}}},
                 "workers": {"template": {}, "maxReplicas": 4}}}))

    def kubectl(user: str, *args: str, binary: str = KUBECTL) -> subprocess.CompletedProcess[str]:
        return subprocess.run([binary, *args], capture_output=True, text=True, env=envs[user], timeout=60)

    applied = kubectl("dana", "apply", "-f", str(job))
    assert applied.returncode == 0, applied.stderr
    scaled = kubectl("dana", "scale", "fiberjob", "sweep", "--replicas=3")
    assert scaled.returncode == 0, scaled.stderr
    assert client.get(f"/apis/fibermpi.io/v1alpha1/namespaces/{team}/fiberjobs/sweep")["spec"]["workers"][
        "replicas"] == 3
    assert kubectl("dana", "auth", "can-i", "patch", "fiberjobs.fibermpi.io", "--subresource=scale",
                   binary=KUBECTL_OLDEST).stdout.strip() == "yes"
    refused = kubectl("dana", "apply", "-n", other, "-f", str(job))
    assert refused.returncode != 0 and "forbidden" in refused.stderr, refused.stderr
    listed = kubectl("vera", "get", "fiberjobs")
    assert listed.returncode == 0 and "sweep" in listed.stdout, listed.stderr
    refused = kubectl("vera", "scale", "fiberjob", "sweep", "--replicas=1")
    assert refused.returncode != 0 and "forbidden" in refused.stderr, refused.stderr
    assert kubectl("vera", "auth", "can-i", "delete", "fiberjobs.fibermpi.io", binary=KUBECTL_OLDEST
                   ).stdout.strip() == "no"
    assert kubectl("dana", "delete", "fiberjob", "sweep").returncode == 0
