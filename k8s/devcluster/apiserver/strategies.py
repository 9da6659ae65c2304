"""Per-kind behaviour of the built-in resources: defaulting, validation, what a status update may
change, graceful deletion, field selectors. The generic flow is in api.py."""

from __future__ import annotations

import base64
import ipaddress
import json
import threading
from typing import TYPE_CHECKING, Any, Callable

from .errors import ApiError
from .pod_validation import pod_spec_errors, pod_update_errors
from .selectors import META_FIELDS, path_value
from .validation import (Cause, config_key_errors, dns1123_label_errors, duplicate, invalid,
                         label_selector_causes, required, unsupported)

if TYPE_CHECKING:
    from .api import Api
    from .resource_info import ResourceInfo


class Strategy:
    """Defaults shared by every kind; subclasses override what differs."""

    name_rule = "subdomain"
    has_generation = False
    allow_unconditional_update = True
    allow_create_on_update = False
    return_deleted_object = False
    field_selectors: dict[str, Callable[[dict[str, Any]], str]] = META_FIELDS

    def prepare_create(self, api: Api, info: ResourceInfo, obj: dict[str, Any]) -> None:
        """Defaulting and server-set fields of a new object."""

    def validate(self, api: Api, info: ResourceInfo, obj: dict[str, Any],
                 old: dict[str, Any] | None) -> list[Cause]:
        """Kind-specific validation of a create (old is None) or an update."""
        return []

    def prepare_update(self, api: Api, info: ResourceInfo, obj: dict[str, Any], old: dict[str, Any]) -> None:
        """Server-kept fields carried over on an update."""

    def grace_period(self, obj: dict[str, Any], requested: int | None) -> int:
        """Seconds a deletion waits for (0: at once)."""
        return 0


class NamespaceStrategy(Strategy):
    name_rule = "label"
    return_deleted_object = True
    field_selectors = {**META_FIELDS, "status.phase": path_value("status", "phase")}

    def prepare_create(self, api: Api, info: ResourceInfo, obj: dict[str, Any]) -> None:
        obj["spec"] = {"finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}
        if obj["metadata"].get("name"):
            obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]

    def prepare_update(self, api: Api, info: ResourceInfo, obj: dict[str, Any], old: dict[str, Any]) -> None:
        obj["spec"] = old.get("spec", {})
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]


class PodStrategy(Strategy):
    has_generation = True
    return_deleted_object = True
    field_selectors = {
        **META_FIELDS,
        "spec.nodeName": path_value("spec", "nodeName"),
        "spec.restartPolicy": path_value("spec", "restartPolicy"),
        "spec.schedulerName": path_value("spec", "schedulerName"),
        "spec.serviceAccountName": path_value("spec", "serviceAccountName"),
        "spec.hostNetwork": lambda pod: "true" if (pod.get("spec") or {}).get("hostNetwork") else "false",
        "status.phase": path_value("status", "phase"),
        "status.podIP": path_value("status", "podIP"),
        "status.nominatedNodeName": path_value("status", "nominatedNodeName"),
    }
    _MUTABLE_SPEC = ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds")

    def prepare_create(self, api: Api, info: ResourceInfo, obj: dict[str, Any]) -> None:
        spec = obj.setdefault("spec", {})
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("securityContext", {})
        spec.setdefault("enableServiceLinks", True)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        spec.setdefault("priority", 0)
        account = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
        spec["serviceAccountName"] = spec["serviceAccount"] = account
        for group in ("initContainers", "containers"):
            for container in spec.get(group) or []:
                if isinstance(container, dict):
                    _default_container(container)
        obj["status"] = {"phase": "Pending", "qosClass": _qos_class(spec)}
        _sync_app_armor(obj)
        _default_toleration_seconds(spec)

    def validate(self, api: Api, info: ResourceInfo, obj: dict[str, Any],
                 old: dict[str, Any] | None) -> list[Cause]:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return [required("spec")]
        causes = pod_spec_errors(spec)
        policy = spec.get("restartPolicy")
        if policy not in ("Always", "OnFailure", "Never"):
            causes.append(unsupported("spec.restartPolicy", policy, ["Always", "OnFailure", "Never"]))
        grace = spec.get("terminationGracePeriodSeconds")
        if not isinstance(grace, int) or grace < 0:
            causes.append(invalid("spec.terminationGracePeriodSeconds", grace,
                                  "must be greater than or equal to 0"))
        if old is not None:
            causes += pod_update_errors(obj, old, self._MUTABLE_SPEC)
        elif "nodeName" in spec and spec["nodeName"]:
            causes += [invalid("spec.nodeName", spec["nodeName"], e)
                       for e in dns1123_label_errors(spec["nodeName"].split(".")[0])]
        return causes

    def prepare_update(self, api: Api, info: ResourceInfo, obj: dict[str, Any], old: dict[str, Any]) -> None:
        for group in ("initContainers", "containers"):
            for container in (obj.get("spec") or {}).get(group) or []:
                if isinstance(container, dict):
                    _default_container(container)

    def grace_period(self, obj: dict[str, Any], requested: int | None) -> int:
        spec = obj.get("spec") or {}
        if not spec.get("nodeName"):
            return 0
        if (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return 0
        if requested is not None:
            return max(requested, 0)
        return int(spec.get("terminationGracePeriodSeconds", 30) or 0)


# The DefaultTolerationSeconds admission plugin (on by default): a pod that does not tolerate the
# node lifecycle controller's NoExecute taints tolerates them for 300 s, so a lost node's pods are
# evicted after five minutes.
DEFAULT_TOLERATION_SECONDS = 300


def _default_toleration_seconds(spec: dict[str, Any]) -> None:
    tolerations = spec.get("tolerations")
    if tolerations is not None and not isinstance(tolerations, list):
        return  # validation names it
    tolerations = tolerations or []
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        # The plugin's own test: a toleration of this key or of every key, for NoExecute or every effect.
        if any(isinstance(t, dict) and t.get("key") in (key, "", None) and t.get("effect") in ("NoExecute", "", None)
               for t in tolerations):
            continue
        tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                            "tolerationSeconds": DEFAULT_TOLERATION_SECONDS})
    spec["tolerations"] = tolerations


def _default_container(container: dict[str, Any]) -> None:
    image = container.get("image", "")
    tag = image.rsplit("/", 1)[-1]
    latest = "@" not in image and (":" not in tag or tag.endswith(":latest"))
    container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    resources = container.setdefault("resources", {})
    limits = resources.get("limits") if isinstance(resources, dict) else None
    if isinstance(limits, dict) and limits:
        # a limit without a request is also the request (SetDefaults_Pod)
        requests = resources.setdefault("requests", {})
        if isinstance(requests, dict):
            for name, value in limits.items():
                requests.setdefault(name, value)
    for port in container.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")


_APP_ARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"
_APP_ARMOR_ANNOTATION_VALUES = {"Unconfined": "unconfined", "RuntimeDefault": "runtime/default"}


def _app_armor_annotation(profile: Any) -> str:
    if not isinstance(profile, dict):
        return ""
    if profile.get("type") == "Localhost":
        return "localhost/" + profile["localhostProfile"] if profile.get("localhostProfile") else ""
    return _APP_ARMOR_ANNOTATION_VALUES.get(profile.get("type"), "")


def _app_armor_field(annotation: Any) -> dict[str, Any] | None:
    for kind, value in _APP_ARMOR_ANNOTATION_VALUES.items():
        if annotation == value:
            return {"type": kind}
    if isinstance(annotation, str) and annotation.startswith("localhost/") and len(annotation) > len("localhost/"):
        return {"type": "Localhost", "localhostProfile": annotation[len("localhost/"):]}
    return None


def _sync_app_armor(pod: dict[str, Any]) -> None:
    """The AppArmor version skew of a pod create (KEP-24, v1.30): a container's profile field (or the
    pod's) is also written as the container's annotation; an annotation without a field becomes the
    container's field unless it equals the pod's."""
    spec = pod["spec"]
    if (spec.get("os") or {}).get("name") == "windows":
        return
    context = spec.get("securityContext")
    pod_profile = context.get("appArmorProfile") if isinstance(context, dict) else None
    annotations = dict(pod["metadata"].get("annotations") or {})
    for group in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(group) or []:
            if not isinstance(container, dict):
                continue
            key = _APP_ARMOR_ANNOTATION + str(container.get("name", ""))
            own_context = container.get("securityContext")
            own = own_context.get("appArmorProfile") if isinstance(own_context, dict) else None
            if key not in annotations:
                value = _app_armor_annotation(own if own is not None else pod_profile)
                if value:
                    annotations[key] = value
            elif own is None:
                profile = _app_armor_field(annotations[key])
                if profile is not None and profile != pod_profile:
                    container["securityContext"] = {**(own_context if isinstance(own_context, dict) else {}),
                                                    "appArmorProfile": profile}
    if annotations:
        pod["metadata"]["annotations"] = annotations


def _qos_class(spec: dict[str, Any]) -> str:
    resources = [c.get("resources") or {} for c in spec.get("containers") or [] if isinstance(c, dict)]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    guaranteed = all(r.get("limits") and all(r.get("limits", {}).get(k) == v
                                              for k, v in (r.get("requests") or r["limits"]).items())
                     and set(r["limits"]) >= {"cpu", "memory"} for r in resources)
    return "Guaranteed" if guaranteed else "Burstable"


class ServiceStrategy(Strategy):
    name_rule = "dns1035"

    def __init__(self, cidr: str = "10.96.0.0/16"):
        self.network = ipaddress.ip_network(cidr)
        self.lock = threading.Lock()

    def prepare_create(self, api: Api, info: ResourceInfo, obj: dict[str, Any]) -> None:
        spec = obj.setdefault("spec", {})
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
        for port in spec.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")
                port.setdefault("targetPort", port.get("port"))
        if spec.get("clusterIP") != "None":
            spec["clusterIP"] = spec.get("clusterIP") or self._allocate(api)
        spec["clusterIPs"] = [spec["clusterIP"]]
        obj["status"] = {"loadBalancer": {}}

    def _allocate(self, api: Api) -> str:
        used = {(s.get("spec") or {}).get("clusterIP") for s in api.stored_objects("", "services")}
        for address in self.network.hosts():
            if int(address) - int(self.network.network_address) < 2:
                continue      # .1 is the `kubernetes` Service's on a real cluster
            if str(address) not in used:
                return str(address)
        raise ApiError(500, "InternalError", "Internal error occurred: failed to allocate a serviceIP: "
                       "range is full")

    def prepare_update(self, api: Api, info: ResourceInfo, obj: dict[str, Any], old: dict[str, Any]) -> None:
        spec, old_spec = obj.setdefault("spec", {}), old.get("spec") or {}
        if not spec.get("clusterIP") and old_spec.get("clusterIP"):
            spec["clusterIP"] = old_spec["clusterIP"]
            spec["clusterIPs"] = old_spec.get("clusterIPs", [old_spec["clusterIP"]])

    def validate(self, api: Api, info: ResourceInfo, obj: dict[str, Any],
                 old: dict[str, Any] | None) -> list[Cause]:
        spec = obj.get("spec") or {}
        causes: list[Cause] = []
        ports = spec.get("ports") or []
        if not ports and spec.get("clusterIP") != "None" and spec.get("type") != "ExternalName":
            causes.append(required("spec.ports"))
        seen_names: set[str] = set()
        for index, port in enumerate(ports):
            number = port.get("port") if isinstance(port, dict) else None
            if not isinstance(number, int) or not 1 <= number <= 65535:
                causes.append(invalid(f"spec.ports[{index}].port", number,
                                      "must be between 1 and 65535, inclusive"))
            name = port.get("name", "") if isinstance(port, dict) else ""
            if len(ports) > 1 and not name:
                causes.append(required(f"spec.ports[{index}].name"))
            elif name:
                causes += [invalid(f"spec.ports[{index}].name", name, e) for e in dns1123_label_errors(name)]
                if name in seen_names:
                    causes.append(duplicate(f"spec.ports[{index}].name", name))
                seen_names.add(name)
        if old is not None and (old.get("spec") or {}).get("clusterIP") != spec.get("clusterIP"):
            causes.append(invalid("spec.clusterIPs[0]", spec.get("clusterIP"),
                                  "may not change once set"))
        return causes


class SecretStrategy(Strategy):
    field_selectors = {**META_FIELDS, "type": path_value("type")}

    def prepare_create(self, api: Api, info: ResourceInfo, obj: dict[str, Any]) -> None:
        obj.setdefault("type", "Opaque")
        self._fold_string_data(obj)

    def prepare_update(self, api: Api, info: ResourceInfo, obj: dict[str, Any], old: dict[str, Any]) -> None:
        self._fold_string_data(obj)

    @staticmethod
    def _fold_string_data(obj: dict[str, Any]) -> None:
        strings = obj.pop("stringData", None) or {}
        if strings:
            data = obj.setdefault("data", {})
            for key, value in strings.items():
                data[key] = base64.b64encode(str(value).encode()).decode()

    def validate(self, api: Api, info: ResourceInfo, obj: dict[str, Any],
                 old: dict[str, Any] | None) -> list[Cause]:
        causes = data_key_errors(obj)
        for key, value in (obj.get("data") or {}).items():
            try:
                base64.b64decode(value, validate=True)
            except (ValueError, TypeError):
                causes.append(invalid(f"data[{key}]", "<secret contents redacted>", "illegal base64 data"))
        if old is not None and old.get("type") != obj.get("type"):
            causes.append(invalid("type", obj.get("type"), "field is immutable"))
        return causes


class ConfigMapStrategy(Strategy):
    def validate(self, api: Api, info: ResourceInfo, obj: dict[str, Any],
                 old: dict[str, Any] | None) -> list[Cause]:
        causes = data_key_errors(obj)
        binary = obj.get("binaryData") or {}
        for key in set(obj.get("data") or {}) & set(binary):
            causes.append(invalid("data", key, "duplicate of key present in binaryData"))
        return causes


def data_key_errors(obj: dict[str, Any]) -> list[Cause]:
    """Keys of a ConfigMap's or Secret's data must be usable as file names."""
    causes: list[Cause] = []
    for field in ("data", "binaryData"):
        for key in obj.get(field) or {}:
            causes += [invalid(f"{field}[{key}]", key, e) for e in config_key_errors(key)]
    return causes


class EventStrategy(Strategy):
    allow_create_on_update = True
    field_selectors = {
        **META_FIELDS,
        **{f"involvedObject.{f}": path_value("involvedObject", f)
           for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")},
        "reason": path_value("reason"), "type": path_value("type"), "source": path_value("source", "component"),
        "reportingComponent": path_value("reportingComponent"),
    }

    def validate(self, api: Api, info: ResourceInfo, obj: dict[str, Any],
                 old: dict[str, Any] | None) -> list[Cause]:
        involved = obj.get("involvedObject")
        if not isinstance(involved, dict) or not involved:
            return [required("involvedObject")]
        namespace = obj["metadata"].get("namespace", "")
        target = involved.get("namespace", "")
        if (target and target != namespace) or (not target and namespace not in ("", "default")):
            return [invalid("involvedObject.namespace", target, "does not match event.namespace")]
        return []


class LeaseStrategy(Strategy):
    allow_create_on_update = True
    _INTEGERS = ("leaseDurationSeconds", "leaseTransitions")
    _TIMES = ("acquireTime", "renewTime")

    def validate(self, api: Api, info: ResourceInfo, obj: dict[str, Any],
                 old: dict[str, Any] | None) -> list[Cause]:
        spec = obj.get("spec") or {}
        if not isinstance(spec, dict):
            raise _decode_error("Lease", "spec", "object", spec)
        holder = spec.get("holderIdentity")
        if holder is not None and not isinstance(holder, str):
            raise _decode_error("LeaseSpec", "spec.holderIdentity", "string", holder)
        for name in self._INTEGERS:
            value = spec.get(name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise _decode_error("LeaseSpec", f"spec.{name}", "int32", value)
        for name in self._TIMES:
            value = spec.get(name)
            if value is not None and not _is_micro_time(value):
                raise ApiError(400, "BadRequest", f"Lease in version \"v1\" cannot be handled as a Lease: "
                               f"parsing time {json.dumps(value)} as \"2006-01-02T15:04:05.000000Z07:00\": "
                               "cannot parse")
        causes = []
        duration = spec.get("leaseDurationSeconds")
        if duration is not None and duration <= 0:
            causes.append(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
        transitions = spec.get("leaseTransitions")
        if transitions is not None and transitions < 0:
            causes.append(invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"))
        return causes


def _is_micro_time(value: Any) -> bool:
    from datetime import datetime
    if not isinstance(value, str):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return "T" in value


def _decode_error(go_type: str, path: str, expected: str, value: Any) -> ApiError:
    found = {str: "string", bool: "bool", list: "array", dict: "object"}.get(type(value), "number")
    return ApiError(400, "BadRequest", f"json: cannot unmarshal {found} into Go struct field {go_type}."
                    f"{path} of type {expected}")


class NodeStrategy(Strategy):
    field_selectors = {**META_FIELDS, "spec.unschedulable":
                       lambda node: "true" if (node.get("spec") or {}).get("unschedulable") else "false"}


class RoleStrategy(Strategy):
    name_rule = "path"

    def validate(self, api: Api, info: ResourceInfo, obj: dict[str, Any],
                 old: dict[str, Any] | None) -> list[Cause]:
        causes = []
        for index, rule in enumerate(obj.get("rules") or []):
            if not isinstance(rule, dict) or not rule.get("verbs"):
                causes.append(required(f"rules[{index}].verbs", "verbs must contain at least one value"))
            elif not rule.get("nonResourceURLs") and rule.get("apiGroups") is None:
                causes.append(required(f"rules[{index}].apiGroups", "resource rules must supply at least "
                                       "one api group"))
        aggregation = obj.get("aggregationRule")
        if info.plural == "clusterroles" and aggregation is not None:
            selectors = aggregation.get("clusterRoleSelectors") if isinstance(aggregation, dict) else None
            if not selectors:
                causes.append(required("aggregationRule.clusterRoleSelectors", "at least one clusterRoleSelector "
                                       "required if aggregationRule is non-nil"))
            for index, selector in enumerate(selectors or []):
                causes += label_selector_causes(f"aggregationRule.clusterRoleSelectors[{index}]", selector)
        return causes


class RoleBindingStrategy(Strategy):
    name_rule = "path"

    def validate(self, api: Api, info: ResourceInfo, obj: dict[str, Any],
                 old: dict[str, Any] | None) -> list[Cause]:
        ref = obj.get("roleRef") or {}
        causes = []
        if ref.get("kind") not in ("Role", "ClusterRole"):
            causes.append(unsupported("roleRef.kind", ref.get("kind", ""), ["ClusterRole", "Role"]))
        if not ref.get("name"):
            causes.append(required("roleRef.name"))
        if old is not None and (old.get("roleRef") or {}) != ref:
            causes.append(invalid("roleRef", ref, "cannot change roleRef"))
        for index, subject in enumerate(obj.get("subjects") or []):
            if subject.get("kind") not in ("ServiceAccount", "User", "Group"):
                causes.append(unsupported(f"subjects[{index}].kind", subject.get("kind", ""),
                                          ["ServiceAccount", "User", "Group"]))
            if not subject.get("name"):
                causes.append(required(f"subjects[{index}].name"))
        return causes
