"""`scripts/images --registry R --tag T --push` against a real registry: Debian's docker-registry
(the CNCF distribution registry) on a loopback port, which podman is told to reach over plain HTTP
through a registries.conf of the test's own (CONTAINERS_REGISTRIES_CONF). The pushed image is
listed by the registry, its manifest names the local image's configuration, and it pulls back. A
registry that does not answer fails the push with the script's message."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import socket
import subprocess
import time
import uuid
from typing import Iterator

import pytest
import requests

ROOT = pathlib.Path(__file__).resolve().parents[2]
PODMAN = ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs"]
MANIFEST_TYPES = ", ".join(("application/vnd.oci.image.manifest.v1+json",
                            "application/vnd.docker.distribution.manifest.v2+json"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def images(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(ROOT / "scripts/images"), "--prebuilt", "--only", "controller", *args],
                          capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)


def podman(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([*PODMAN, *args], capture_output=True, text=True, timeout=120, env=env)


@pytest.fixture()
def registry(tmp_path: pathlib.Path) -> Iterator[tuple[str, dict[str, str]]]:
    """A registry at 127.0.0.1:PORT storing under tmp_path, and the environment that lets podman
    reach it over HTTP."""
    server = shutil.which("docker-registry")
    if server is None:
        pytest.fail("docker-registry is not installed: scripts/setup installs it")
    address = f"127.0.0.1:{free_port()}"
    config = tmp_path / "config.yml"
    config.write_text(f"version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
                      f"    rootdirectory: {tmp_path / 'data'}\nhttp:\n  addr: {address}\n")
    registries = tmp_path / "registries.conf"
    registries.write_text(f'[[registry]]\nlocation = "{address}"\ninsecure = true\n')
    process = subprocess.Popen([server, "serve", str(config)], stdout=subprocess.DEVNULL,
                               stderr=open(tmp_path / "registry.log", "w"))
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if requests.get(f"http://{address}/v2/", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, \
                (tmp_path / "registry.log").read_text()
            time.sleep(0.1)
        yield address, {**os.environ, "CONTAINERS_REGISTRIES_CONF": str(registries)}
    finally:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(tmp_path / "data", ignore_errors=True)   # the pushed layers: tens of MB


def test_push_puts_the_image_in_the_registry_and_it_pulls_back(registry: tuple[str, dict[str, str]]) -> None:
    address, env = registry
    tag = f"push-{uuid.uuid4().hex[:8]}"
    name = f"{address}/ml/fibermpi/controller:{tag}"
    try:
        done = images("--registry", f"{address}/ml/", "--tag", tag, "--push", env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"pushed {name}" in done.stdout, done.stdout
        assert requests.get(f"http://{address}/v2/_catalog", timeout=10).json() == \
            {"repositories": ["ml/fibermpi/controller"]}
        assert requests.get(f"http://{address}/v2/ml/fibermpi/controller/tags/list", timeout=10).json() == \
            {"name": "ml/fibermpi/controller", "tags": [tag]}
        manifest = requests.get(f"http://{address}/v2/ml/fibermpi/controller/manifests/{tag}",
                                headers={"Accept": MANIFEST_TYPES}, timeout=10).json()
        local = json.loads(podman("image", "inspect", name, env=env).stdout)[0]
        assert manifest["config"]["digest"] == f"sha256:{local['Id']}"
        # Gone from this machine, then back from the registry.
        assert podman("untag", name, name, env=env).returncode == 0
        assert podman("image", "exists", name, env=env).returncode != 0
        pulled = podman("pull", "-q", name, env=env)
        assert pulled.returncode == 0, pulled.stderr
        assert pulled.stdout.strip() == local["Id"]
    finally:
        podman("untag", name, name, env=env)


def test_a_push_to_a_registry_that_does_not_answer_fails_with_the_scripts_message(
        tmp_path: pathlib.Path) -> None:
    address = f"127.0.0.1:{free_port()}"   # nothing listens there
    registries = tmp_path / "registries.conf"
    registries.write_text(f'[[registry]]\nlocation = "{address}"\ninsecure = true\n')
    env = {**os.environ, "CONTAINERS_REGISTRIES_CONF": str(registries)}
    name = f"{address}/fibermpi/controller:unreachable"
    try:
        done = images("--registry", address, "--tag", "unreachable", "--push", env=env)
        assert done.returncode == 1, done.stdout + done.stderr
        assert f"scripts/images: pushing {name} failed" in done.stderr, done.stderr
    finally:
        podman("untag", name, name, env=env)
