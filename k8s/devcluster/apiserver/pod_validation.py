"""Validation of a pod's spec worded as the real API server words it: containers, ports, environment,
volumes and their mounts, host names, and which fields an update may change."""

from __future__ import annotations

import copy
from typing import Any

from .validation import Cause, dns1123_label_errors, duplicate, forbidden, invalid, required

def pod_spec_errors(spec: dict[str, Any]) -> list[Cause]:
    """Containers, ports, environment, volumes and DNS names of a pod spec."""
    causes = _container_errors(spec) + _volume_errors(spec)
    for field in ("hostname", "subdomain"):
        if spec.get(field):
            causes += [invalid(f"spec.{field}", spec[field], e) for e in dns1123_label_errors(spec[field])]
    return causes


def _container_errors(spec: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    containers = spec.get("containers")
    if not containers:
        causes.append(required("spec.containers"))
    seen: set[str] = set()
    volumes = {v.get("name") for v in spec.get("volumes") or [] if isinstance(v, dict)}
    for group in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(group) or []):
            path = f"spec.{group}[{index}]"
            if not isinstance(container, dict):
                causes.append(invalid(path, container, "must be an object"))
                continue
            name = container.get("name", "")
            if not name:
                causes.append(required(f"{path}.name"))
            else:
                causes += [invalid(f"{path}.name", name, e) for e in dns1123_label_errors(name)]
                if name in seen:
                    causes.append(duplicate(f"{path}.name", name))
                seen.add(name)
            if not container.get("image"):
                causes.append(required(f"{path}.image"))
            causes += _port_errors(path, container.get("ports") or [])
            causes += _env_errors(path, container.get("env") or [])
            causes += _mount_errors(path, container.get("volumeMounts") or [], volumes)
    return causes


def _port_errors(path: str, ports: list[Any]) -> list[Cause]:
    causes = []
    for index, port in enumerate(ports):
        number = port.get("containerPort") if isinstance(port, dict) else None
        if not isinstance(number, int) or not 1 <= number <= 65535:
            causes.append(invalid(f"{path}.ports[{index}].containerPort", number,
                                  "must be between 1 and 65535, inclusive"))
    return causes


def _env_errors(path: str, env: list[Any]) -> list[Cause]:
    causes = []
    for index, var in enumerate(env):
        if not isinstance(var, dict) or not var.get("name"):
            causes.append(required(f"{path}.env[{index}].name"))
        elif "value" in var and "valueFrom" in var:
            causes.append(invalid(f"{path}.env[{index}].valueFrom", "",
                                  "may not be specified when `value` is not empty"))
    return causes


def pod_update_errors(obj: dict[str, Any], old: dict[str, Any], mutable: tuple[str, ...]) -> list[Cause]:
    def masked(spec: dict[str, Any]) -> dict[str, Any]:
        spec = copy.deepcopy(spec)
        for key in mutable:
            spec.pop(key, None)
        for group in ("initContainers", "containers"):
            for container in spec.get(group) or []:
                if isinstance(container, dict):
                    container.pop("image", None)
        return spec

    if masked(obj.get("spec") or {}) != masked(old.get("spec") or {}):
        return [forbidden("spec", "pod updates may not change fields other than `spec.containers[*].image`,"
                          "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
                          "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
                          "(allow it to be set to 1 if it was previously negative)")]
    return []


def _volume_errors(spec: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for index, volume in enumerate(spec.get("volumes") or []):
        path = f"spec.volumes[{index}]"
        name = volume.get("name", "") if isinstance(volume, dict) else ""
        if not name:
            causes.append(required(f"{path}.name"))
            continue
        causes += [invalid(f"{path}.name", name, e) for e in dns1123_label_errors(name)]
        if name in seen:
            causes.append(duplicate(f"{path}.name", name))
        seen.add(name)
        sources = [s for s in volume if s != "name"]
        if not sources:
            causes.append(required(path, "must specify a volume type"))
        elif len(sources) > 1:
            causes.append(forbidden(f"{path}.{sources[1]}", "may not specify more than 1 volume type"))
    return causes


def _mount_errors(path: str, mounts: list[Any], volumes: set[Any]) -> list[Cause]:
    causes: list[Cause] = []
    for index, mount in enumerate(mounts):
        where = f"{path}.volumeMounts[{index}]"
        if not isinstance(mount, dict):
            causes.append(invalid(where, mount, "must be an object"))
            continue
        name = mount.get("name", "")
        if not name:
            causes.append(required(f"{where}.name"))
        elif name not in volumes:
            causes.append({"reason": "FieldValueNotFound", "message": f'Not found: "{name}"',
                           "field": f"{where}.name"})
        if not mount.get("mountPath"):
            causes.append(required(f"{where}.mountPath"))
    return causes
