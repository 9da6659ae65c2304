"""Unknown fields of a built-in kind (a Pod, a Service...), as kube-apiserver's decoding treats them:
a field its Go types do not have is dropped, with a warning under fieldValidation=Warn (the default),
silently under Ignore, and under Strict the request fails with 400 naming every such field. The
types are Kubernetes' published OpenAPI definitions (the kubernetes-validate package's copy); a kind
without one is taken as it is."""

from __future__ import annotations

import functools
from typing import Any

from . import openapi
from .resource_info import ResourceInfo
from .schema import Path, go_quote, path_text, unknown_fields_error

# Fields every object has whatever its definition says (the type meta).
_ROOT_FIELDS = ("apiVersion", "kind")


@functools.lru_cache(maxsize=None)
def _definition_name(group: str, version: str, kind: str) -> str | None:
    for name, definition in openapi.published_definitions().items():
        for gvk in definition.get("x-kubernetes-group-version-kind") or []:
            if (gvk.get("group", ""), gvk.get("version"), gvk.get("kind")) == (group, version, kind):
                return name
    return None


def _resolved(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with its $ref (direct, or the allOf of one that carries a description) followed."""
    definitions = openapi.published_definitions()
    for _ in range(16):
        target = schema.get("$ref")
        if target is None and len(schema.get("allOf") or []) == 1:
            target = schema["allOf"][0].get("$ref")
        if not isinstance(target, str):
            return schema
        schema = definitions.get(target.removeprefix(openapi.REF_PREFIX), {})
    return schema


def _drop_unknown(value: Any, schema: dict[str, Any], path: Path, unknown: list[str]) -> None:
    schema = _resolved(schema)
    if isinstance(value, dict):
        properties = schema.get("properties")
        additional = schema.get("additionalProperties")
        if properties is None:
            # A map (labels, resources' limits) or an open value (RawExtension, JSON): its keys are
            # data, not fields.
            if isinstance(additional, dict):
                for key in value:
                    _drop_unknown(value[key], additional, path + (key,), unknown)
            return
        for key in sorted(value):
            if key in properties:
                _drop_unknown(value[key], properties[key], path + (key,), unknown)
            elif not (path == () and key in _ROOT_FIELDS):
                unknown.append(path_text(path + (key,)))
                del value[key]
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            _drop_unknown(item, schema["items"], path + (index,), unknown)


def admit_builtin_fields(info: ResourceInfo, obj: dict[str, Any], field_validation: str) -> list[str]:
    """Drops the fields of `obj` (a built-in kind's object, changed in place) that its type does not
    have, and returns the warnings to send. Raises ApiError 400 under Strict when there is any."""
    name = _definition_name(info.group, info.version, info.kind)
    if name is None:
        return []
    unknown: list[str] = []
    _drop_unknown(obj, openapi.published_definitions()[name], (), unknown)
    if not unknown:
        return []
    if field_validation == "Strict":
        raise unknown_fields_error(info, unknown)
    if field_validation == "Warn":
        return [f"unknown field {go_quote(p)}" for p in unknown]
    return []

