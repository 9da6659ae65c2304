"""The PATCH content types: JSON merge patch (RFC 7386), JSON patch (RFC 6902, by the jsonpatch
package) and a strategic merge patch that knows the merge keys of the built-in kinds' common lists."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonpatch

from .errors import ApiError

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# Lists of the built-in kinds that a strategic merge patch merges element by element, by this key.
# Service ports merge by "port", container ports by "containerPort": keyed by (parent field, list).
_MERGE_KEYS: dict[str, str] = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name", "env": "name",
    "volumes": "name", "volumeMounts": "mountPath", "volumeDevices": "devicePath",
    "imagePullSecrets": "name", "conditions": "type", "ownerReferences": "uid", "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey", "addresses": "type", "resourceClaims": "name",
    "secrets": "name", "containerStatuses": "name", "initContainerStatuses": "name",
    "readinessGates": "conditionType",
}
_PRIMITIVE_MERGE_LISTS = {"finalizers"}


def decode_patch(raw: bytes) -> Any:
    """The JSON document of a patch body; 400 when it is not JSON."""
    try:
        return json.loads(raw or b"null")
    except ValueError as err:
        raise ApiError(400, "BadRequest", f"error decoding patch: {err}") from err


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, null removes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: dict[str, Any], operations: Any) -> dict[str, Any]:
    """RFC 6902 through jsonpatch; a failing operation (a `test` included) is a 422 as on the real server."""
    if not isinstance(operations, list):
        raise ApiError(400, "BadRequest", "json: cannot unmarshal object into Go value of type "
                       "jsonpatch.Patch")
    if len(operations) > 10000:
        raise ApiError(413, "RequestEntityTooLarge", "Request entity too large: The allowed maximum "
                       f"operations in a JSON patch is 10000, got {len(operations)}")
    try:
        patch = jsonpatch.JsonPatch(operations)
        result = patch.apply(target)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, KeyError, IndexError,
            TypeError, ValueError) as err:
        raise ApiError(422, "Invalid", "the server rejected our request due to an error in our request",
                       {"causes": [{"message": str(err) or type(err).__name__}]}) from err
    if not isinstance(result, dict):
        raise ApiError(422, "Invalid", "the server rejected our request due to an error in our request",
                       {"causes": [{"message": "the patch replaced the whole object by a non-object"}]})
    return result


def strategic_merge_patch(target: dict[str, Any], patch: Any) -> dict[str, Any]:
    """The subset of strategic merge patch the built-in kinds need: maps merge, `null` deletes, lists
    named in _MERGE_KEYS merge by key (with `$patch: delete|replace|merge` on elements), `finalizers`
    merge as a set; `$setElementOrder/`, `$retainKeys` and `$deleteFromPrimitiveList/` are honoured
    or dropped as kubectl sends them."""
    if not isinstance(patch, dict):
        raise ApiError(400, "BadRequest", "the patch must be a JSON object")
    return _merge_map(target, patch, "")


def _merge_map(target: Any, patch: dict[str, Any], parent: str) -> Any:
    if patch.get("$patch") == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            result[field] = [v for v in result.get(field) or [] if v not in (value or [])]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            merged = _merge_map(result.get(key), value, key)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _merge_list(result.get(key), value, key, parent)
        else:
            result[key] = copy.deepcopy(value)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(target: Any, patch: list[Any], field: str, parent: str) -> list[Any]:
    current = list(target) if isinstance(target, list) else []
    if field in _PRIMITIVE_MERGE_LISTS:
        return current + [v for v in patch if v not in current]
    key = _MERGE_KEYS.get(field)
    if field == "ports":
        key = "port" if parent == "spec" else "containerPort"
    if key is None or not all(isinstance(e, dict) for e in patch):
        return copy.deepcopy(patch)
    if any(e.get("$patch") == "replace" for e in patch):
        return [copy.deepcopy(e) for e in patch if e.get("$patch") != "replace"]
    for element in patch:
        if key not in element:
            raise ApiError(400, "BadRequest", f"map: {json.dumps(element)} does not contain declared merge "
                           f"key: {key}")
        position = next((i for i, e in enumerate(current)
                         if isinstance(e, dict) and e.get(key) == element[key]), None)
        if element.get("$patch") == "delete":
            if position is not None:
                current.pop(position)
        elif position is None:
            current.append({k: v for k, v in element.items() if k != "$patch"})
        else:
            current[position] = _merge_map(current[position], element, field)
    return current


def unsupported_patch_type(content_type: str, accepted: list[str]) -> ApiError:
    """415 as the real server answers a PATCH it cannot take."""
    listed = ", ".join(accepted)
    if content_type == APPLY_PATCH:
        return ApiError(415, "UnsupportedMediaType",
                        "the body of the request was in an unknown format - accepted media types include: "
                        f"{listed} (server-side apply is not implemented by this API server)")
    return ApiError(415, "UnsupportedMediaType",
                    f"the body of the request was in an unknown format - accepted media types include: {listed}")
