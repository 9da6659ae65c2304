"""CustomResourceDefinitions and the custom resources they define."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .errors import ApiError
from .resource_info import ResourceInfo
from .strategies import Strategy
from .validation import Cause, dns1123_label_errors, invalid, required, unsupported

if TYPE_CHECKING:
    from .api import Api

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


def crd_infos(crd: dict[str, Any]) -> list[ResourceInfo]:
    """One ResourceInfo per served version of a CRD."""
    spec = crd["spec"]
    names = spec["names"]
    infos = []
    for version in spec.get("versions") or []:
        if not version.get("served"):
            continue
        declared = version.get("subresources") or {}
        infos.append(ResourceInfo(
            group=spec["group"], version=version["name"], plural=names["plural"],
            singular=names.get("singular") or names["kind"].lower(), kind=names["kind"],
            list_kind=names.get("listKind") or names["kind"] + "List",
            namespaced=spec.get("scope") == "Namespaced",
            short_names=tuple(names.get("shortNames") or ()), categories=tuple(names.get("categories") or ()),
            subresources=tuple(s for s in ("status", "scale") if s in declared), crd=crd))
    return infos


def storage_version(crd: dict[str, Any]) -> str:
    return next(v["name"] for v in crd["spec"]["versions"] if v.get("storage"))


class CustomResourceDefinitionStrategy(Strategy):
    has_generation = True
    return_deleted_object = True

    def prepare_create(self, api: Api, info: ResourceInfo, obj: dict[str, Any]) -> None:
        obj.pop("status", None)
        obj["metadata"].setdefault("finalizers", [])
        if CLEANUP_FINALIZER not in obj["metadata"]["finalizers"]:
            obj["metadata"]["finalizers"].append(CLEANUP_FINALIZER)
        spec = obj.get("spec") or {}
        names = spec.get("names") or {}
        if isinstance(names, dict) and names.get("kind"):
            names.setdefault("singular", names["kind"].lower())
            names.setdefault("listKind", names["kind"] + "List")
        for version in spec.get("versions") or []:
            if isinstance(version, dict):
                version.setdefault("served", False)
                version.setdefault("storage", False)
        spec.setdefault("conversion", {"strategy": "None"})
        obj["status"] = established_status(obj, api.now())

    def validate(self, api: Api, info: ResourceInfo, obj: dict[str, Any],
                 old: dict[str, Any] | None) -> list[Cause]:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return [required("spec")]
        causes: list[Cause] = []
        if old is not None:
            for field in ("group", "scope"):
                if (old.get("spec") or {}).get(field) != spec.get(field):
                    causes.append(invalid(f"spec.{field}", spec.get(field), "field is immutable"))
        schema = _schema_module()
        if schema is not None and hasattr(schema, "validate_crd"):
            if causes:
                return causes
            schema.validate_crd(obj)
            return []
        group = spec.get("group", "")
        names = spec.get("names") or {}
        if not group:
            causes.append(required("spec.group"))
        elif "." not in group:
            causes.append(invalid("spec.group", group, "should be a domain with at least one dot"))
        for field in ("plural", "kind"):
            if not names.get(field):
                causes.append(required(f"spec.names.{field}"))
        if names.get("plural"):
            causes += [invalid("spec.names.plural", names["plural"], e)
                       for e in dns1123_label_errors(names["plural"])]
        if names.get("plural") and group and obj["metadata"]["name"] != f"{names['plural']}.{group}":
            causes.append(invalid("metadata.name", obj["metadata"]["name"],
                                  'must be spec.names.plural+"."+spec.group'))
        if spec.get("scope") not in ("Namespaced", "Cluster"):
            causes.append(unsupported("spec.scope", spec.get("scope", ""), ["Cluster", "Namespaced"]))
        versions = spec.get("versions") or []
        if not versions:
            causes.append(invalid("spec.versions", versions, "must have exactly one version marked as "
                                  "storage version"))
        elif sum(1 for v in versions if v.get("storage")) != 1:
            causes.append(invalid("spec.versions", versions, "must have exactly one version marked as "
                                  "storage version"))
        for index, version in enumerate(versions):
            if not version.get("name"):
                causes.append(required(f"spec.versions[{index}].name"))
            schema = (version.get("schema") or {}).get("openAPIV3Schema")
            if not schema:
                causes.append(required(f"spec.versions[{index}].schema.openAPIV3Schema",
                                       "schemas are required"))
        return causes

    def prepare_update(self, api: Api, info: ResourceInfo, obj: dict[str, Any], old: dict[str, Any]) -> None:
        spec = obj.get("spec") or {}
        spec.setdefault("conversion", {"strategy": "None"})
        for version in spec.get("versions") or []:
            if isinstance(version, dict):
                version.setdefault("served", False)
                version.setdefault("storage", False)


def established_status(crd: dict[str, Any], now: str) -> dict[str, Any]:
    """The status the real apiextensions controllers settle on for a CRD whose names are free."""
    spec = crd.get("spec") or {}
    stored = [v.get("name") for v in spec.get("versions") or [] if isinstance(v, dict) and v.get("storage")]
    return {
        "acceptedNames": dict(spec.get("names") or {}),
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
             "message": "no conflicts found", "lastTransitionTime": now},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted", "lastTransitionTime": now},
        ],
        "storedVersions": stored,
    }


class CustomResourceStrategy(Strategy):
    """Custom resources: generation on every change outside metadata and status, a resourceVersion
    required on update, schema admission by schema.admit_custom_resource when it is there."""

    has_generation = True
    allow_unconditional_update = False
    return_deleted_object = True


def admit(info: ResourceInfo, obj: dict[str, Any], old: dict[str, Any] | None, field_validation: str,
          subresource: str | None) -> tuple[dict[str, Any], list[str]]:
    """Defaulting, pruning and validation of a custom resource by the schema module; without it only
    the presence of apiVersion and kind is checked."""
    schema = _schema_module()
    if schema is not None and hasattr(schema, "admit_custom_resource"):
        return schema.admit_custom_resource(info, obj, old, field_validation=field_validation,
                                            subresource=subresource)
    return obj, []


def _schema_module() -> Any:
    try:
        from . import schema
    except ImportError:
        return None
    return schema


def require_kind(body: dict[str, Any], raw: bytes) -> None:
    """Custom resources decode as unstructured objects, which need their kind."""
    if not body.get("kind"):
        shown = raw.decode(errors="replace") if raw else json.dumps(body)
        raise ApiError(400, "BadRequest", f"Object 'Kind' is missing in '{shown}'")
