"""ConfigMap volumes with items, as a FiberJob's configuration reaches its pods: the listed key at
its path (and mode) in the mounted directory, other keys left out, and a single key mounted as a
file with subPath; a missing key is a CreateContainerConfigError naming it."""

from __future__ import annotations

import base64
import copy
import os
from typing import Any

import pytest
from test_node_pods import FakeApi, context, make_pod, request_deletion, start  # noqa: F401 (fixture)

from k8s.devcluster import netns
from k8s.devcluster.node_pod import NodeContext, PodWorker

FIBER_YAML = "workers: 4\nheartbeat_ms: 250\n"
mount_refusal = netns.probe_mount_namespaces()


def run_with_configmap(context: NodeContext, name: str, container: dict[str, Any],
                       volume: dict[str, Any]) -> tuple[PodWorker, FakeApi]:
    pod = make_pod(name, [dict({"name": "main", "image": "x"}, **container)],
                   volumes=[{"name": "config", "configMap": volume}])
    api = FakeApi(pod)
    api.configmaps["job-config"] = {"data": {"fiber.yaml": FIBER_YAML, "other": "left out"}}
    context.client_factory = lambda: api
    os.makedirs(context.pid_dir(), exist_ok=True)
    worker = PodWorker(context, copy.deepcopy(pod))
    worker.start()
    return worker, api


@pytest.mark.skipif(bool(mount_refusal), reason=f"no mount namespaces here: {mount_refusal}")
def test_configmap_items_are_mounted_at_their_paths(context: NodeContext, tmp_path: Any) -> None:
    out = tmp_path / "seen"
    script = (f"{{ cat /etc/fiber/fiber.yaml; ls /etc/fiber; stat -c %a /etc/fiber/fiber.yaml; "
              f"cat /etc/fiber-file.yaml; }} > {out}")
    container = {"command": ["sh", "-c", script],
                 "volumeMounts": [{"name": "config", "mountPath": "/etc/fiber", "readOnly": True},
                                  {"name": "config", "mountPath": "/etc/fiber-file.yaml", "subPath": "fiber.yaml"}]}
    _, api = run_with_configmap(context, "configured", container, {
        "name": "job-config", "items": [{"key": "fiber.yaml", "path": "fiber.yaml", "mode": 0o440}]})
    api.wait("the pod's end", lambda: api.phase() in ("Succeeded", "Failed"))
    assert api.phase() == "Succeeded", api.container()
    assert out.read_text() == FIBER_YAML + "fiber.yaml\n440\n" + FIBER_YAML
    assert not os.path.exists("/etc/fiber") and not os.path.exists("/etc/fiber-file.yaml")


def test_a_missing_item_key_is_a_config_error(context: NodeContext) -> None:
    worker, api = run_with_configmap(context, "misconfigured", {"command": ["true"]}, {
        "name": "job-config", "items": [{"key": "absent.yaml", "path": "fiber.yaml"}]})
    api.wait("the config error", lambda: api.container().get("state", {}).get("waiting", {}).get("reason")
             == "CreateContainerConfigError")
    assert "absent.yaml" in api.container()["state"]["waiting"]["message"]
    assert api.phase() == "Pending"
    request_deletion(worker, api, 0)
    api.wait("deletion", lambda: bool(api.deleted))


BINARY = bytes(range(256))  # not UTF-8: a key file, a DER certificate


@pytest.mark.skipif(bool(mount_refusal), reason=f"no mount namespaces here: {mount_refusal}")
def test_binary_secret_data_reaches_the_container_byte_for_byte(context: NodeContext, tmp_path: Any) -> None:
    """A Secret's data and a ConfigMap's binaryData are bytes, not text: the mounted file and an env
    var from a secretKeyRef hold exactly the bytes stored (no byte replaced for not being UTF-8)."""
    file_out, env_out, config_out = tmp_path / "file", tmp_path / "env", tmp_path / "config"
    script = (f"cat /etc/secret/key.bin > {file_out}; printf %s \"$KEY\" > {env_out}; "
              f"cat /etc/fiber/blob > {config_out}")
    container = {"command": ["sh", "-c", script],
                 "env": [{"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "keys", "key": "env.bin"}}}],
                 "volumeMounts": [{"name": "keys", "mountPath": "/etc/secret", "readOnly": True},
                                  {"name": "config", "mountPath": "/etc/fiber", "readOnly": True}]}
    pod = make_pod("binary", [dict({"name": "main", "image": "x"}, **container)],
                   volumes=[{"name": "keys", "secret": {"secretName": "keys"}},
                            {"name": "config", "configMap": {"name": "job-config"}}])
    api = FakeApi(pod)
    # An environment value cannot hold a NUL byte; every other byte must come through.
    api.secrets["keys"] = {"data": {"key.bin": base64.b64encode(BINARY).decode(),
                                    "env.bin": base64.b64encode(BINARY[1:]).decode()}}
    api.configmaps["job-config"] = {"binaryData": {"blob": base64.b64encode(BINARY).decode()}}
    context.client_factory = lambda: api
    os.makedirs(context.pid_dir(), exist_ok=True)
    PodWorker(context, copy.deepcopy(pod)).start()
    api.wait("the pod's end", lambda: api.phase() in ("Succeeded", "Failed"))
    assert api.phase() == "Succeeded", api.container()
    assert file_out.read_bytes() == BINARY
    assert env_out.read_bytes() == BINARY[1:]
    assert config_out.read_bytes() == BINARY
