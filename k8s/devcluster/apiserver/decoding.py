"""What the real server's JSON decoder refuses (400) before any validation: fields of the wrong type
in ObjectMeta and in the top-level fields of the built-in kinds."""

from __future__ import annotations

from typing import Any

from .errors import ApiError
from .network_policy import decode_errors as network_policy_decode_errors
from .resource_info import ResourceInfo


_BINDING_FIELDS = {"roleRef": ("v1.RoleRef", dict), "subjects": ("[]v1.Subject", list)}
_KIND_FIELDS: dict[str, dict[str, tuple[str, type]]] = {
    "configmaps": {"data": ("map[string]string", dict), "binaryData": ("map[string]string", dict)},
    "secrets": {"data": ("map[string]string", dict), "stringData": ("map[string]string", dict),
                "type": ("v1.SecretType", str)},
    "roles": {"rules": ("[]v1.PolicyRule", list)},
    "clusterroles": {"rules": ("[]v1.PolicyRule", list)},
    "rolebindings": _BINDING_FIELDS,
    "clusterrolebindings": _BINDING_FIELDS,
    "events": {"involvedObject": ("v1.ObjectReference", dict), "reason": ("string", str),
               "message": ("string", str), "type": ("string", str)},
    "endpoints": {"subsets": ("[]v1.EndpointSubset", list)},
    "endpointslices": {"addressType": ("v1.AddressType", str), "endpoints": ("[]v1.Endpoint", list),
                       "ports": ("[]v1.EndpointPort", list)},
    "serviceaccounts": {"secrets": ("[]v1.ObjectReference", list)},
}

_META_TYPES = {"labels": ("map[string]string", dict), "annotations": ("map[string]string", dict),
               "finalizers": ("[]string", list), "ownerReferences": ("[]v1.OwnerReference", list),
               "name": ("string", str), "generateName": ("string", str), "namespace": ("string", str),
               "resourceVersion": ("string", str), "uid": ("string", str)}


def _json_kind(value: Any) -> str:
    return {str: "string", bool: "bool", list: "array", dict: "object", type(None): "null"}.get(type(value), "number")


def check_decodable(info: ResourceInfo, obj: dict[str, Any]) -> None:
    """What the real server's decoder refuses before any validation: fields of the wrong JSON type in
    ObjectMeta, and a spec or status that is not an object."""
    def refuse(path: str, go_type: str, value: Any) -> ApiError:
        return ApiError(400, "BadRequest", f'{info.kind} in version "{info.version}" cannot be handled as a '
                        f"{info.kind}: json: cannot unmarshal {_json_kind(value)} into Go struct field {path} of "
                        f"type {go_type}")

    for field, (go_type, python_type) in _META_TYPES.items():
        value = obj["metadata"].get(field)
        if value is not None and not isinstance(value, python_type):
            raise refuse(f"ObjectMeta.metadata.{field}", go_type, value)
    for field in ("labels", "annotations"):
        for key, value in (obj["metadata"].get(field) or {}).items():
            if not isinstance(value, str):
                raise refuse(f"ObjectMeta.metadata.{field}", "string", value)
    for field in ("finalizers",):
        for value in obj["metadata"].get(field) or []:
            if not isinstance(value, str):
                raise refuse(f"ObjectMeta.metadata.{field}", "string", value)
    for ref in obj["metadata"].get("ownerReferences") or []:
        if not isinstance(ref, dict):
            raise refuse("ObjectMeta.metadata.ownerReferences", "v1.OwnerReference", ref)
    if info.crd is not None:
        return
    for field in [k for k, v in obj.items() if v is None]:
        del obj[field]          # null decodes to the zero value of a typed field
    expected = {"spec": ("object", dict), "status": ("object", dict), **_KIND_FIELDS.get(info.plural, {})}
    for field, (go_type, python_type) in expected.items():
        value = obj.get(field)
        if value is None:
            continue
        if not isinstance(value, python_type):
            raise refuse(f"{info.kind}.{field}", go_type, value)
        if isinstance(value, dict) and go_type == "map[string]string":
            for item in value.values():
                if not isinstance(item, str):
                    raise refuse(f"{info.kind}.{field}", "string", item)
        if isinstance(value, list):
            for item in value:
                if not isinstance(item, dict):
                    raise refuse(f"{info.kind}.{field}", go_type.removeprefix("[]"), item)
    if info.plural == "networkpolicies":
        for path, go_type, value in network_policy_decode_errors(obj.get("spec")):
            raise refuse(path, go_type, value)

