"""Who may join a FiberJob's universe on the development cluster: only pods holding the job's join
token (its Secret, mounted by the controller). A pod of another job running the right binary is
refused by the launcher before any MPI connect, and a rogue publish under the launcher's name on
the job's name service leads a worker to a peer that cannot prove the token, which the worker
refuses; meanwhile the launcher's map runs on its own worker pod with every value exact.

The program is tests/k8s/runtime/k8s_pool_test.cc (scenario guard); the pods are built the way the
other runtime tests build theirs (test_k8s_runtime.fiberjob)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import textwrap
from typing import Any

import yaml

from test_k8s_runtime import Cluster, cluster, fiberjob, succeeded, wait_until, workers_in  # noqa: F401

# Publishes a join address of its own under the launcher's name and answers the join handshake
# with a greeting and a proof made without the token. Run under Debian's mpirun (Open MPI 4.1),
# with the job's name service as its --ompi-server.
IMPOSTOR = textwrap.dedent("""
    import os, socket, sys, threading
    from mpi4py import MPI
    listener = socket.socket()
    listener.bind(("0.0.0.0", 0))
    listener.listen(8)
    address = "fiber-join://%s:%d" % (sys.argv[2], listener.getsockname()[1])
    MPI.Publish_name(sys.argv[1], address)
    print("published", address, flush=True)
    def serve():
        while True:
            peer, _ = listener.accept()
            peer.sendall(b"FJT1" + os.urandom(32))
            peer.settimeout(10)
            try:
                peer.recv(64)
                peer.sendall(os.urandom(32))
            except OSError:
                pass
            print("a worker came", flush=True)
            peer.close()
    threading.Thread(target=serve, daemon=True).start()
    sys.stdin.read()
""")


def intruder_pod(job_yaml: str, job: str, uri: str) -> dict[str, Any]:
    """A pod outside the job running the job's program as one of its workers, holding another job's
    token (Secret other-join-token)."""
    launcher = yaml.safe_load(job_yaml)["spec"]["launcher"]["template"]["spec"]
    container = launcher["containers"][0]
    for key in ("command", "args"):
        if container.get(key, [])[-1:] == ["guard"]:
            container[key] = container[key][:-1]
    field = lambda path: {"valueFrom": {"fieldRef": {"fieldPath": path}}}  # noqa: E731
    container["env"] = [
        {"name": "FIBER_K8S_ROLE", "value": "worker"}, {"name": "FIBER_K8S_JOB", "value": job},
        {"name": "FIBER_K8S_NAMESPACE", "value": "default"}, {"name": "FIBER_NAME_SERVICE_URI", "value": uri},
        {"name": "FIBER_SLOTS_PER_WORKER", "value": "1"}, {"name": "FIBER_POD_START_TIMEOUT_S", "value": "10"},
        {"name": "FIBER_JOIN_TOKEN_FILE", "value": "/var/run/secrets/other/token"},
        {"name": "FIBER_K8S_POD_NAME", **field("metadata.name")},
        {"name": "FIBER_K8S_POD_UID", **field("metadata.uid")},
        {"name": "FIBER_K8S_POD_IP", **field("status.podIP")}]
    container.setdefault("volumeMounts", []).append(
        {"name": "other-token", "mountPath": "/var/run/secrets/other", "readOnly": True})
    launcher.setdefault("volumes", []).append({"name": "other-token", "secret": {"secretName": "other-join-token"}})
    launcher["restartPolicy"] = "Never"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "intruder"}, "spec": launcher}


def test_another_jobs_pod_and_a_rogue_publish_are_refused_and_the_map_stays_exact(cluster: Cluster):
    name = "guard"
    job_yaml = fiberjob(name, "guard")
    cluster.kubectl("apply", "-f", "-", stdin=job_yaml)
    try:
        # 90 s, like the other runtime tests: a loaded 2-core CI machine starts two pods slowly.
        wait_until("1 worker ready", lambda: "1 worker ready" in cluster.log(f"{name}-launcher"), timeout_s=90)
    except AssertionError as error:
        pods = cluster.kubectl("get", "pods", "-o", "wide", check=False)
        raise AssertionError(f"{error}\n--- pods:\n{pods}--- launcher:\n{cluster.log(f'{name}-launcher')}"
                             f"--- worker-0:\n{cluster.log(f'{name}-worker-0')}"
                             f"--- job status:\n{cluster.job(name).get('status')}"
                             f"\n--- stacks:\n{cluster.stacks()}") from None
    uri = cluster.job(name)["status"]["nameService"]["uri"]

    # A pod of another job (another token), the right binary: refused on both sides, it gives up.
    cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "other-join-token"},
        "stringData": {"token": secrets.token_hex(32)}}))
    cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(intruder_pod(job_yaml, name, uri)))
    gave_up = f"no launcher of FiberJob default/{name} that proves the job's join token within 10 s"
    try:
        wait_until("the intruder to give up", lambda: gave_up in cluster.log("intruder"), timeout_s=60)
    finally:
        intruder_log = cluster.log("intruder")
        print(intruder_log, cluster.log(f"{name}-launcher"), sep="\n--- launcher:\n", file=sys.stderr)
    assert "did not prove the join token; refusing to join it" in intruder_log, intruder_log
    intruder_ip = cluster.get("pod", "intruder")["status"]["podIP"]
    cluster.kubectl("delete", "pod", "intruder", "--wait=false")
    launcher_log = cluster.log(f"{name}-launcher")
    assert f"refused a joining job at {intruder_ip}:" in launcher_log, launcher_log
    assert "it did not prove the job's join token" in launcher_log, launcher_log

    # A rogue publish under the launcher's name: a new worker pod finds the impostor's address,
    # which cannot prove the token, and refuses it.
    host = ".".join(uri.split("tcp://")[1].split(".")[:2]) + ".0.1"  # the bridge: where pods reach this machine
    impostor = subprocess.Popen(
        ["/usr/bin/mpirun", "--ompi-server", uri, "-n", "1", "/usr/bin/python3", "-c", IMPOSTOR,
         f"fibermpi:default/{name}", host],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    try:
        published = impostor.stdout.readline()
        assert published.startswith("published fiber-join://"), published + impostor.stdout.read()
        rogue = published.split("fiber-join://")[1].strip()
        cluster.kubectl("scale", f"fiberjob/{name}", "--replicas=2")
        refusal = f"the master at {rogue} did not prove the join token; refusing to join it"
        wait_until("the new worker to refuse the impostor",
                   lambda: refusal in cluster.log(f"{name}-worker-1"), timeout_s=60)
    finally:
        impostor.kill()
        impostor.wait(timeout=10)

    log = succeeded(cluster, name)
    guarded = workers_in(log, "guarded maps")
    assert all(worker.startswith(f"{name}-worker-0/") for worker in guarded), guarded
    assert "pool size 1, 1 workers" in log, log
    assert "FAIL" not in log, log
    print(f"guarded maps: {sum(guarded.values())} tasks exact", file=sys.stderr)
