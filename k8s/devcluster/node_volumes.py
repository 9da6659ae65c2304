"""A pod's volume contents, written under the pod's dir and bind-mounted into its containers:
emptyDir, configMap, secret, downwardAPI, projected (service-account token, ConfigMap, Secret,
downward API) and the automatic service-account dir (token from the TokenRequest API, the
cluster's CA, the namespace). hostPath volumes are mounted from the host as they are."""

from __future__ import annotations

import os
import re
import subprocess
from typing import Any

from .kube import JSON, KubeClient, KubeError, core_path, parse_quantity
from .node_env import ObjectReader, PodConfigError, field_value, write_file, write_key_items

TOKEN_SECONDS = 3600
SERVICE_ACCOUNT_VOLUME = ".serviceaccount"


class VolumeWriter:
    """Writes the volumes of one pod (`pod` carries the status the downward API reads)."""

    def __init__(self, client: KubeClient, pod: JSON, volumes_dir: str, ca_file: str):
        self.client = client
        self.pod = pod
        self.volumes_dir = volumes_dir
        self.ca_file = ca_file
        self.namespace = pod["metadata"].get("namespace", "default")

    def write_all(self, automount_token: bool) -> None:
        reader = ObjectReader(self.client, self.namespace)
        for volume in self.pod["spec"].get("volumes") or []:
            self.write_volume(os.path.join(self.volumes_dir, volume["name"]), volume, reader)
        if automount_token:
            self.write_service_account()

    def write_volume(self, directory: str, volume: JSON, reader: ObjectReader) -> None:
        def mode_of(source: JSON) -> int:
            return int(source.get("defaultMode", 0o644))
        if "hostPath" in volume:
            return
        os.makedirs(directory, exist_ok=True)
        if "emptyDir" in volume:
            # Writable by any user, as the kubelet makes an emptyDir (containers run as non-root).
            os.chmod(directory, 0o777)
            if (volume["emptyDir"] or {}).get("medium") == "Memory":
                mount_memory(directory, (volume["emptyDir"] or {}).get("sizeLimit"))
            return
        if "configMap" in volume:
            source = volume["configMap"]
            data = reader.data("ConfigMap", source.get("name", ""), bool(source.get("optional")))
            write_key_items(directory, data or {}, source.get("items"), mode_of(source),
                            f"configMap {source.get('name')}")
        elif "secret" in volume:
            source = volume["secret"]
            data = reader.data("Secret", source.get("secretName", ""), bool(source.get("optional")))
            write_key_items(directory, data or {}, source.get("items"), mode_of(source),
                            f"secret {source.get('secretName')}")
        elif "downwardAPI" in volume:
            self.write_downward_items(directory, volume["downwardAPI"].get("items") or [],
                                      mode_of(volume["downwardAPI"]))
        elif "projected" in volume:
            for source in volume["projected"].get("sources") or []:
                self.write_projection(directory, source, reader, mode_of(volume["projected"]))
        else:
            raise PodConfigError(f"volume {volume['name']!r}: unsupported type {sorted(set(volume) - {'name'})}")

    def write_downward_items(self, directory: str, items: list[JSON], mode: int) -> None:
        for item in items:
            if "fieldRef" not in item:
                raise PodConfigError(f"downwardAPI item {item.get('path')!r}: only fieldRef is supported")
            write_file(directory, item["path"], field_value(self.pod, item["fieldRef"]["fieldPath"]),
                       item.get("mode", mode))

    def write_projection(self, directory: str, source: JSON, reader: ObjectReader, mode: int) -> None:
        if "serviceAccountToken" in source:
            token = source["serviceAccountToken"]
            seconds = int(token.get("expirationSeconds", TOKEN_SECONDS))
            token_text = self.request_token(token.get("audience"), seconds)
            write_file(directory, token.get("path", "token"), token_text, mode)
        elif "configMap" in source:
            ref = source["configMap"]
            data = reader.data("ConfigMap", ref.get("name", ""), bool(ref.get("optional")))
            if ref.get("name") == "kube-root-ca.crt" and data is None:
                data = {"ca.crt": self.ca_text()}
            write_key_items(directory, data or {}, ref.get("items"), mode, f"configMap {ref.get('name')}")
        elif "secret" in source:
            ref = source["secret"]
            data = reader.data("Secret", ref.get("name", ""), bool(ref.get("optional")))
            write_key_items(directory, data or {}, ref.get("items"), mode, f"secret {ref.get('name')}")
        elif "downwardAPI" in source:
            self.write_downward_items(directory, source["downwardAPI"].get("items") or [], mode)
        else:
            raise PodConfigError(f"projected source {sorted(source)} is not supported")

    def write_service_account(self) -> None:
        """token, ca.crt and namespace, as /var/run/secrets/kubernetes.io/serviceaccount holds them."""
        directory = os.path.join(self.volumes_dir, SERVICE_ACCOUNT_VOLUME)
        # The kubelet's kube-api-access volume: defaultMode 0644, so a container's non-root user reads it.
        write_file(directory, "token", self.request_token(None, TOKEN_SECONDS), 0o644)
        write_file(directory, "ca.crt", self.ca_text(), 0o644)
        write_file(directory, "namespace", self.namespace, 0o644)

    def ca_text(self) -> str:
        with open(self.ca_file, encoding="utf-8") as handle:
            return handle.read()

    def request_token(self, audience: str | None, seconds: int) -> str:
        """A token of the pod's service account bound to the pod, from the TokenRequest API."""
        account = self.pod["spec"].get("serviceAccountName") or "default"
        metadata = self.pod["metadata"]
        request: dict[str, Any] = {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"audiences": [audience] if audience else [], "expirationSeconds": seconds,
                     "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": metadata["name"],
                                        "uid": metadata["uid"]}}}
        path = core_path("serviceaccounts", self.namespace, account, "token")
        try:
            return self.client.create(path, request)["status"]["token"]
        except KubeError as error:
            raise PodConfigError(f"service account token for {self.namespace}/{account}: {error.message}") from error


def mount_memory(directory: str, size_limit: str | None) -> None:
    """An emptyDir of medium Memory: a tmpfs on its directory (sizeLimit as its size; without one,
    tmpfs's default, half the machine's memory), mounted once and shared by the pod's containers.
    Without the privileges for a mount it stays a directory on disk."""
    if os.path.ismount(directory) or os.geteuid() != 0:
        return
    options = "mode=1777"
    if size_limit:
        options += f",size={int(parse_quantity(str(size_limit)))}"
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", directory], capture_output=True,
                            text=True, timeout=30)
    if result.returncode != 0:
        raise PodConfigError(f"emptyDir of medium Memory at {directory}: mount: {result.stderr.strip()}")


def mounts_below(directory: str) -> list[str]:
    """Mount points inside `directory` (the memory emptyDirs of its pods), deepest first."""
    prefix = os.path.realpath(directory).rstrip("/") + "/"
    points = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as handle:
            for line in handle:
                fields = line.split()
                if len(fields) > 4:
                    point = re.sub(r"\\([0-7]{3})", lambda match: chr(int(match.group(1), 8)), fields[4])
                    if point.startswith(prefix):
                        points.append(point)
    except OSError:
        return []
    return sorted(set(points), key=lambda point: point.count("/"), reverse=True)


def unmount_below(directory: str) -> None:
    """Unmounts every mount inside `directory` (before it is removed)."""
    for point in mounts_below(directory):
        subprocess.run(["umount", "-l", point], capture_output=True, timeout=30)
