"""What a container sees of its pod: environment variables (values, downward API, ConfigMap and
Secret references, `$(VAR)` expansion) and volume contents (emptyDir, configMap, secret,
downwardAPI, projected, hostPath, the service-account token), resolved the way the kubelet does."""

from __future__ import annotations

import base64
import math
import os
import re
from typing import Any, Callable

from .kube import JSON, KubeClient, KubeError, core_path, parse_quantity


class PodConfigError(Exception):
    """The pod refers to something missing or unsupported; the container cannot be created.
    Reported in the container's waiting state as CreateContainerConfigError, as the kubelet does."""


SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

_FIELD_LABEL = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")
_VAR_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.\-]*)\)")


def field_value(pod: JSON, field_path: str) -> str:
    """The value of a downward-API fieldRef for this pod."""
    metadata = pod.get("metadata", {})
    spec = pod.get("spec", {})
    status = pod.get("status", {})
    simple: dict[str, Callable[[], Any]] = {
        "metadata.name": lambda: metadata.get("name", ""),
        "metadata.namespace": lambda: metadata.get("namespace", ""),
        "metadata.uid": lambda: metadata.get("uid", ""),
        "spec.nodeName": lambda: spec.get("nodeName", ""),
        "spec.serviceAccountName": lambda: spec.get("serviceAccountName", "default"),
        "status.podIP": lambda: status.get("podIP", ""),
        "status.hostIP": lambda: status.get("hostIP", ""),
        "status.podIPs": lambda: ",".join(entry["ip"] for entry in status.get("podIPs", [])),
        "status.hostIPs": lambda: ",".join(entry["ip"] for entry in status.get("hostIPs", [])),
    }
    if field_path in simple:
        return str(simple[field_path]())
    match = _FIELD_LABEL.match(field_path)
    if match:
        return str(metadata.get(match.group(1), {}).get(match.group(2), ""))
    if field_path in ("metadata.labels", "metadata.annotations"):
        entries = metadata.get(field_path.split(".")[1], {})
        return "\n".join(f'{key}="{value}"' for key, value in sorted(entries.items()))
    raise PodConfigError(f"unsupported fieldRef fieldPath {field_path!r}")


def resource_value(container: JSON, reference: JSON, node_allocatable: JSON) -> str:
    """A resourceFieldRef (limits.cpu, requests.memory, ...) with its divisor, rounded up as the
    kubelet does; an unset limit reads the node's allocatable."""
    resource = reference.get("resource", "")
    kind, _, name = resource.partition(".")
    if kind not in ("limits", "requests") or name not in ("cpu", "memory", "ephemeral-storage"):
        raise PodConfigError(f"unsupported resourceFieldRef resource {resource!r}")
    resources = container.get("resources", {})
    value = resources.get(kind, {}).get(name)
    if value is None and kind == "requests":
        value = resources.get("limits", {}).get(name)
    if value is None:
        value = node_allocatable.get(name, "0")
    divisor = parse_quantity(reference.get("divisor", "1"))
    return str(math.ceil(parse_quantity(value) / divisor))


def expand_references(text: str, defined: dict[str, str]) -> str:
    """Kubernetes `$(VAR)` expansion: defined names are replaced, `$$` is a literal `$`, an
    undefined reference stays as written."""
    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return defined.get(name, match.group(0))
    return _VAR_REFERENCE.sub(replace, text)


class ObjectReader:
    """Reads the ConfigMaps and Secrets a pod refers to (cached for one pod start)."""

    def __init__(self, client: KubeClient, namespace: str):
        self.client = client
        self.namespace = namespace
        self.cache: dict[tuple[str, str], JSON | None] = {}

    def data(self, kind: str, name: str, optional: bool) -> dict[str, str | bytes] | None:
        """The object's data: a ConfigMap's `data` as text, its `binaryData` and a Secret's data as
        the bytes they hold (a secret need not be text); None when missing and optional."""
        plural = "configmaps" if kind == "ConfigMap" else "secrets"
        key = (plural, name)
        if key not in self.cache:
            try:
                self.cache[key] = self.client.get(core_path(plural, self.namespace, name))
            except KubeError as error:
                if error.code != 404:
                    raise PodConfigError(f"reading {kind} {name!r}: {error.message}") from error
                self.cache[key] = None
        found = self.cache[key]
        if found is None:
            if optional:
                return None
            raise PodConfigError(f'{kind.lower()} "{name}" not found')
        if plural == "secrets":
            return {k: base64.b64decode(v) for k, v in (found.get("data") or {}).items()}
        data: dict[str, str | bytes] = dict(found.get("data") or {})
        for k, v in (found.get("binaryData") or {}).items():
            data[k] = base64.b64decode(v)
        return data

    def key(self, kind: str, reference: JSON) -> str | bytes | None:
        optional = bool(reference.get("optional", False))
        data = self.data(kind, reference.get("name", ""), optional)
        if data is None:
            return None
        if reference.get("key") not in data:
            if optional:
                return None
            raise PodConfigError(f"couldn't find key {reference.get('key')} in {kind} "
                                 f"{self.namespace}/{reference.get('name')}")
        return data[reference["key"]]


def environment_text(value: str | bytes) -> str:
    """A value for the environment: bytes that are not UTF-8 stay the same bytes in the process's
    environment (surrogateescape is how Python's os.environ and subprocess carry them)."""
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def container_environment(pod: JSON, container: JSON, reader: ObjectReader, base: dict[str, str],
                          node_allocatable: JSON) -> dict[str, str]:
    """The container's environment: `base` (PATH, HOME, HOSTNAME, KUBERNETES_SERVICE_*), then
    envFrom, then env in order, with `$(VAR)` expansion against what came before."""
    environment = dict(base)
    for source in container.get("envFrom") or []:
        prefix = source.get("prefix", "")
        if "configMapRef" in source:
            reference = source["configMapRef"]
            data = reader.data("ConfigMap", reference.get("name", ""), bool(reference.get("optional")))
        elif "secretRef" in source:
            reference = source["secretRef"]
            data = reader.data("Secret", reference.get("name", ""), bool(reference.get("optional")))
        else:
            raise PodConfigError("envFrom entry without configMapRef or secretRef")
        for key, value in (data or {}).items():
            environment[prefix + key] = environment_text(value)
    for variable in container.get("env") or []:
        name = variable.get("name", "")
        value = _variable_value(pod, container, variable, reader, environment, node_allocatable)
        if value is not None:
            environment[name] = value
    return environment


def _variable_value(pod: JSON, container: JSON, variable: JSON, reader: ObjectReader,
                    defined: dict[str, str], node_allocatable: JSON) -> str | None:
    if "valueFrom" not in variable:
        return expand_references(str(variable.get("value", "")), defined)
    source = variable["valueFrom"]
    if "fieldRef" in source:
        return field_value(pod, source["fieldRef"].get("fieldPath", ""))
    if "resourceFieldRef" in source:
        return resource_value(container, source["resourceFieldRef"], node_allocatable)
    if "configMapKeyRef" in source:
        found = reader.key("ConfigMap", source["configMapKeyRef"])
        return None if found is None else environment_text(found)
    if "secretKeyRef" in source:
        found = reader.key("Secret", source["secretKeyRef"])
        return None if found is None else environment_text(found)
    raise PodConfigError(f"env {variable.get('name')!r}: unsupported valueFrom {sorted(source)}")


def write_file(directory: str, relative: str, content: str | bytes, mode: int) -> None:
    """Writes a volume file by rename, so a reader never sees half of it."""
    if os.path.isabs(relative) or ".." in relative.split("/"):
        raise PodConfigError(f"volume item path {relative!r} must be relative without '..'")
    target = os.path.join(directory, relative)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    temporary = target + ".tmp"
    with open(temporary, "wb") as handle:
        handle.write(content.encode() if isinstance(content, str) else content)
    os.chmod(temporary, mode)
    os.replace(temporary, target)


def write_key_items(directory: str, data: dict[str, str | bytes], items: list[JSON] | None, default_mode: int,
                    what: str) -> None:
    """ConfigMap/Secret keys as files: all keys, or the listed items at their paths."""
    if not items:
        for key, value in data.items():
            write_file(directory, key, value, default_mode)
        return
    for item in items:
        if item.get("key") not in data:
            raise PodConfigError(f"{what}: key {item.get('key')!r} not found")
        write_file(directory, item.get("path", item["key"]), data[item["key"]], item.get("mode", default_mode))
