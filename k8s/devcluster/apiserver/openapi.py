"""OpenAPI v3 documents as kube-apiserver publishes them at /openapi/v3: an index of group-versions
and, for each, its operations and component schemas. kubectl reads them to learn that the server
validates fields (the `fieldValidation` parameter of PATCH) and for `kubectl explain`."""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from importlib import resources
from typing import Any

from .resource_info import ResourceInfo

META = "io.k8s.apimachinery.pkg.apis.meta.v1"
REF_PREFIX = "#/components/schemas/"
PATCH_TYPES = ("application/apply-patch+yaml", "application/json-patch+json",
               "application/merge-patch+json")
# Built-in kinds also take strategic merge patches; custom resources never do.
BUILTIN_PATCH_TYPES = PATCH_TYPES + ("application/strategic-merge-patch+json",)
MEDIA_TYPES = ("application/json", "application/yaml")

# Schema keywords a custom resource's published schema keeps.
KEPT_KEYWORDS = frozenset({
    "description", "type", "format", "properties", "required", "items", "additionalProperties",
    "enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
    "maxLength", "pattern", "minItems", "maxItems", "uniqueItems", "multipleOf", "nullable",
    "default", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string",
    "x-kubernetes-embedded-resource", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type", "x-kubernetes-validations",
})

API_VERSION_DOC = ("The versioned schema of this representation of an object: servers convert "
                   "recognized schemas to their latest internal value.")
KIND_DOC = "The REST resource this object represents, in CamelCase."
METADATA_DOC = "Standard object's metadata."
LIST_METADATA_DOC = "Standard list metadata."


def ref(name: str) -> dict[str, Any]:
    return {"$ref": REF_PREFIX + name}


def wrapped_ref(name: str, description: str) -> dict[str, Any]:
    """A property referring to another schema, with its own description (as the server does)."""
    return {"allOf": [ref(name)], "description": description, "default": {}}


def string(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


def integer(description: str, fmt: str = "int64") -> dict[str, Any]:
    return {"type": "integer", "format": fmt, "description": description}


def string_map(description: str) -> dict[str, Any]:
    return {"type": "object", "description": description,
            "additionalProperties": {"type": "string", "default": ""}}


def string_list(description: str) -> dict[str, Any]:
    return {"type": "array", "description": description,
            "items": {"type": "string", "default": ""}}


def object_of(description: str, properties: dict[str, Any],
              required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "description": description,
                              "properties": properties}
    if required:
        schema["required"] = required
    return schema


# ---------------------------------------------------------------- shared meta schemas

def meta_schemas() -> dict[str, dict[str, Any]]:
    """ObjectMeta, ListMeta, OwnerReference, ManagedFieldsEntry, Time, Status, DeleteOptions, Patch."""
    time_ref = "Time"
    return {
        f"{META}.Time": {"type": "string", "format": "date-time",
                         "description": "A timestamp in RFC 3339 form, to the second."},
        f"{META}.ObjectMeta": object_of(
            "Metadata every persisted object has.",
            {
                "name": string("Unique name within the namespace; required on create unless "
                               "generateName is given."),
                "generateName": string("Prefix from which the server makes a unique name when "
                                       "name is empty."),
                "namespace": string("Namespace of the object; empty for cluster objects."),
                "uid": string("Unique id of this object over all time, set by the server."),
                "resourceVersion": string("Opaque version of this object, for optimistic "
                                          "concurrency and watches."),
                "generation": integer("Sequence number of changes to the desired state."),
                "creationTimestamp": wrapped_ref(f"{META}.{time_ref}",
                                                 "When the server created the object."),
                "deletionTimestamp": wrapped_ref(f"{META}.{time_ref}",
                                                 "When the object will be deleted; set by the "
                                                 "server on a delete request."),
                "deletionGracePeriodSeconds": integer("Seconds the object has to end "
                                                      "gracefully before it is removed."),
                "labels": string_map("Key/value pairs to organize and select objects."),
                "annotations": string_map("Key/value pairs for tools, not for selection."),
                "ownerReferences": {"type": "array", "description": "Objects this one depends "
                                    "on; it is garbage collected when they are gone.",
                                    "items": {"allOf": [ref(f"{META}.OwnerReference")],
                                              "default": {}},
                                    "x-kubernetes-patch-merge-key": "uid",
                                    "x-kubernetes-patch-strategy": "merge"},
                "finalizers": {**string_list("Conditions to meet before the object is removed."),
                               "x-kubernetes-patch-strategy": "merge"},
                "managedFields": {"type": "array", "description": "Which manager owns which "
                                  "fields (server-side apply).",
                                  "items": {"allOf": [ref(f"{META}.ManagedFieldsEntry")],
                                            "default": {}}},
                "selfLink": string("Deprecated; always empty."),
            }),
        f"{META}.ListMeta": object_of(
            "Metadata of a list.",
            {"resourceVersion": string("Version of the list, to watch from."),
             "continue": string("Token to fetch the next page, when the list was limited."),
             "remainingItemCount": integer("Items after this page, when known.")}),
        f"{META}.OwnerReference": object_of(
            "An object this one belongs to.",
            {"apiVersion": string("API version of the owner.", default=""),
             "kind": string("Kind of the owner.", default=""),
             "name": string("Name of the owner.", default=""),
             "uid": string("UID of the owner.", default=""),
             "controller": {"type": "boolean", "description": "True for the managing "
                            "controller."},
             "blockOwnerDeletion": {"type": "boolean", "description": "True keeps a "
                                    "foreground deletion of the owner waiting for this "
                                    "object."}},
            ["apiVersion", "kind", "name", "uid"]),
        f"{META}.ManagedFieldsEntry": object_of(
            "Fields one manager owns.",
            {"manager": string("Name of the manager."),
             "operation": string("Apply or Update."),
             "apiVersion": string("Version of the fields."),
             "time": wrapped_ref(f"{META}.Time", "When the entry last changed."),
             "fieldsType": string("Format of fieldsV1."),
             "fieldsV1": {"type": "object", "description": "The fields owned."},
             "subresource": string("Subresource the fields were written through.")}),
        f"{META}.Status": object_of(
            "Result of an operation that returns no object.",
            {"apiVersion": string(API_VERSION_DOC), "kind": string(KIND_DOC),
             "metadata": wrapped_ref(f"{META}.ListMeta", LIST_METADATA_DOC),
             "status": string("Success or Failure."),
             "message": string("Human-readable description."),
             "reason": string("Machine-readable reason."),
             "code": integer("HTTP status code.", "int32"),
             "details": {"type": "object", "description": "Extended data of the reason.",
                         "x-kubernetes-preserve-unknown-fields": True}}),
        f"{META}.DeleteOptions": object_of(
            "Options of a delete request.",
            {"apiVersion": string(API_VERSION_DOC), "kind": string(KIND_DOC),
             "gracePeriodSeconds": integer("Seconds before the object is deleted."),
             "propagationPolicy": string("Orphan, Background or Foreground."),
             "dryRun": string_list("All: process the request without persisting it."),
             "preconditions": object_of("Conditions checked before deleting.",
                                        {"uid": string("Expected UID."),
                                         "resourceVersion": string("Expected version.")})}),
        f"{META}.Patch": {"type": "object",
                          "description": "A patch document, in the request's content type."},
    }


def scale_schemas() -> dict[str, dict[str, Any]]:
    name = "io.k8s.api.autoscaling.v1.Scale"
    return {
        name: {**object_of(
            "Scale of a resource: desired and observed replicas.",
            {"apiVersion": string(API_VERSION_DOC), "kind": string(KIND_DOC),
             "metadata": wrapped_ref(f"{META}.ObjectMeta", METADATA_DOC),
             "spec": object_of("Desired scale.", {"replicas": integer("Desired replicas.",
                                                                      "int32")}),
             "status": object_of("Observed scale.",
                                 {"replicas": integer("Observed replicas.", "int32"),
                                  "selector": string("Label selector of the pods, as a "
                                                     "string.")},
                                 ["replicas"])}),
            "x-kubernetes-group-version-kind": [gvk("autoscaling", "v1", "Scale")]},
    }


# ---------------------------------------------------------------- kinds

def gvk(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "version": version, "kind": kind}


def schema_name(info: ResourceInfo, kind: str) -> str:
    """Definition names as the server publishes them: io.k8s.api.core.v1.Pod,
    io.k8s.api.coordination.v1.Lease, io.fibermpi.v1alpha1.FiberJob."""
    group = info.group
    if not group:
        prefix = "io.k8s.api.core"
    elif group == "apiextensions.k8s.io":
        prefix = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions"
    elif group.endswith(".k8s.io") or "." not in group:
        prefix = f"io.k8s.api.{group.split('.')[0]}"
    else:
        prefix = ".".join(reversed(group.split(".")))
    return f"{prefix}.{info.version}.{kind}"


def published_schema(schema: Any) -> Any:
    """A CRD schema node as published: known keywords only, recursively."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in KEPT_KEYWORDS:
            continue
        if key == "properties":
            out[key] = {k: published_schema(v) for k, v in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = published_schema(value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def crd_kind_schema(info: ResourceInfo) -> dict[str, Any]:
    schema: dict[str, Any] = {}
    for version in ((info.crd or {}).get("spec") or {}).get("versions") or []:
        if version.get("name") == info.version:
            schema = (version.get("schema") or {}).get("openAPIV3Schema") or {}
    published = published_schema(schema)
    published.setdefault("type", "object")
    properties = published.setdefault("properties", {})
    properties["apiVersion"] = string(API_VERSION_DOC)
    properties["kind"] = string(KIND_DOC)
    properties["metadata"] = wrapped_ref(f"{META}.ObjectMeta", METADATA_DOC)
    return published


def builtin_kind_schema(info: ResourceInfo) -> dict[str, Any]:
    """Top-level shape of a built-in kind: spec and status are open objects here."""
    properties: dict[str, Any] = {
        "apiVersion": string(API_VERSION_DOC),
        "kind": string(KIND_DOC),
        "metadata": wrapped_ref(f"{META}.ObjectMeta", METADATA_DOC),
    }
    for part, description in BUILTIN_PARTS.get(info.kind, DEFAULT_PARTS).items():
        properties[part] = {"type": "object", "description": description,
                            "x-kubernetes-preserve-unknown-fields": True}
    return {"type": "object", "description": BUILTIN_DOCS.get(info.kind, f"{info.kind} object."),
            "properties": properties}


BUILTIN_DOCS = {
    "Pod": "A group of containers run together on a node.",
    "Service": "A stable name and address for a set of pods.",
    "Event": "A report of something that happened to an object.",
    "Namespace": "A scope for names.",
    "ConfigMap": "Configuration data for pods to read.",
    "Node": "A machine that runs pods.",
    "Lease": "A lease held by one holder at a time, e.g. for leader election.",
    "ResourceQuota": "Hard limits on what the objects of a namespace may use, and what they use.",
}
DEFAULT_PARTS = {"spec": "Desired state.", "status": "Observed state."}
BUILTIN_PARTS = {
    "Event": {"involvedObject": "The object this event is about.",
              "source": "The component that reported it."},
    "ConfigMap": {"data": "String values by key.", "binaryData": "Binary values by key."},
    "Namespace": DEFAULT_PARTS,
    "Lease": {"spec": "Holder and timing of the lease."},
}


def kind_schemas(info: ResourceInfo) -> dict[str, dict[str, Any]]:
    body = crd_kind_schema(info) if info.crd is not None else builtin_kind_schema(info)
    body["x-kubernetes-group-version-kind"] = [gvk(info.group, info.version, info.kind)]
    list_body = {
        **object_of(f"A list of {info.kind} objects.",
                    {"apiVersion": string(API_VERSION_DOC),
                     "items": {"type": "array", "description": f"The {info.kind} objects.",
                               "items": ref(schema_name(info, info.kind))},
                     "kind": string(KIND_DOC),
                     "metadata": wrapped_ref(f"{META}.ListMeta", LIST_METADATA_DOC)},
                    ["items"]),
        "x-kubernetes-group-version-kind": [gvk(info.group, info.version, info.list_kind)],
    }
    return {schema_name(info, info.kind): body, schema_name(info, info.list_kind): list_body}


# ---------------------------------------------------------------- operations

def query(name: str, description: str, kind: str = "string") -> dict[str, Any]:
    schema: dict[str, Any] = {"type": kind, "uniqueItems": True}
    return {"name": name, "in": "query", "description": description, "schema": schema}


WRITE_PARAMETERS = [
    query("dryRun", "All: process the request without persisting it."),
    query("fieldManager", "Name of the actor making the change."),
    query("fieldValidation", "What the server does with unknown or duplicate fields: Ignore "
                             "drops them, Warn drops them with a warning, Strict refuses the "
                             "request."),
]
LIST_PARAMETERS = [
    query("allowWatchBookmarks", "Ask for BOOKMARK events in a watch.", "boolean"),
    query("continue", "Token of the next page of a limited list."),
    query("fieldSelector", "Restrict to objects whose fields match."),
    query("labelSelector", "Restrict to objects whose labels match."),
    query("limit", "Most items in one page.", "integer"),
    query("resourceVersion", "The version to list or watch from."),
    query("resourceVersionMatch", "How resourceVersion applies to a list."),
    query("sendInitialEvents", "Start a watch with the current objects.", "boolean"),
    query("timeoutSeconds", "End the call after this long.", "integer"),
    query("watch", "Stream changes instead of listing.", "boolean"),
]
DELETE_PARAMETERS = [
    query("dryRun", "All: process the request without persisting it."),
    query("gracePeriodSeconds", "Seconds before the object is deleted.", "integer"),
    query("propagationPolicy", "Orphan, Background or Foreground garbage collection."),
]


def content(schema_ref: str, types: tuple[str, ...] = MEDIA_TYPES) -> dict[str, Any]:
    return {t: {"schema": ref(schema_ref)} for t in types}


def responses(schema_ref: str, *codes: str) -> dict[str, Any]:
    described = {"200": "OK", "201": "Created", "202": "Accepted"}
    out = {code: {"description": described[code], "content": content(schema_ref)}
           for code in codes}
    out["401"] = {"description": "Unauthorized"}
    return out


def operation(action: str, verb: str, kind: dict[str, str], operation_id: str, tag: str,
              parameters: list[dict[str, Any]], result: str, codes: tuple[str, ...],
              body: str | None = None, patch: tuple[str, ...] = ()) -> dict[str, Any]:
    op: dict[str, Any] = {"tags": [tag], "description": f"{verb} {kind['kind']}",
                          "operationId": operation_id, "parameters": copy.deepcopy(parameters)}
    if body is not None:
        types = patch or MEDIA_TYPES
        op["requestBody"] = {"content": content(body, types), "required": True}
    op["responses"] = responses(result, *codes)
    op["x-kubernetes-action"] = action
    op["x-kubernetes-group-version-kind"] = kind
    return op


def path_parameter(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "description": description, "required": True,
            "schema": {"type": "string", "uniqueItems": True}}


ACTION_VERBS = {"list": "list", "post": "create", "deletecollection": "deletecollection",
                "get": "get", "put": "update", "patch": "patch", "delete": "delete"}


def served_operations(paths: dict[str, Any], info: ResourceInfo) -> dict[str, Any]:
    """Only the operations of the resource's verbs (bindings: create alone), and only paths
    left with one."""
    kept: dict[str, Any] = {}
    for path, item in paths.items():
        ops = {method: op for method, op in item.items()
               if method == "parameters" or ACTION_VERBS[op["x-kubernetes-action"]] in info.verbs}
        if set(ops) - {"parameters"}:
            kept[path] = ops
    return kept


def resource_paths(info: ResourceInfo) -> dict[str, Any]:
    """The REST paths of one resource and its status/scale subresources."""
    root = f"/apis/{info.group}/{info.version}" if info.group else f"/api/{info.version}"
    tag = (f"{info.group.split('.')[0]}_{info.version}" if info.group else f"core_{info.version}")
    object_ref = schema_name(info, info.kind)
    patch_types = PATCH_TYPES if info.crd is not None else BUILTIN_PATCH_TYPES
    list_ref = schema_name(info, info.list_kind)
    status_ref = f"{META}.Status"
    kind = gvk(info.group, info.version, info.kind)
    suffix = f"{info.version.capitalize()}{info.kind}"
    scoped = "Namespaced" if info.namespaced else ""
    pretty = query("pretty", "Indent the output.")
    name_param = path_parameter("name", f"name of the {info.kind}")
    ns_param = path_parameter("namespace", "object name and auth scope, such as for teams and "
                                           "projects")
    common = [name_param] + ([ns_param] if info.namespaced else []) + [pretty]
    collection_common = ([ns_param] if info.namespaced else []) + [pretty]
    base = f"{root}/namespaces/{{namespace}}/{info.plural}" if info.namespaced else \
        f"{root}/{info.plural}"
    paths: dict[str, Any] = {
        base: {
            "get": operation("list", "list or watch objects of kind", kind,
                             f"list{scoped}{suffix}", tag, LIST_PARAMETERS, list_ref, ("200",)),
            "post": operation("post", "create a", kind, f"create{scoped}{suffix}", tag,
                              WRITE_PARAMETERS, object_ref, ("200", "201", "202"),
                              body=object_ref),
            "delete": operation("deletecollection", "delete collection of", kind,
                                f"deleteCollection{scoped}{suffix}", tag,
                                LIST_PARAMETERS + DELETE_PARAMETERS, status_ref, ("200",),
                                body=f"{META}.DeleteOptions"),
            "parameters": collection_common,
        },
        f"{base}/{{name}}": {
            "get": operation("get", "read the specified", kind, f"read{scoped}{suffix}", tag,
                             [], object_ref, ("200",)),
            "put": operation("put", "replace the specified", kind, f"replace{scoped}{suffix}",
                             tag, WRITE_PARAMETERS, object_ref, ("200", "201"),
                             body=object_ref),
            "patch": operation("patch", "partially update the specified", kind,
                               f"patch{scoped}{suffix}", tag,
                               WRITE_PARAMETERS + [query("force", "Take over conflicting "
                                                         "fields in an apply.", "boolean")],
                               object_ref, ("200", "201"), body=f"{META}.Patch", patch=patch_types),
            "delete": operation("delete", "delete a", kind, f"delete{scoped}{suffix}", tag,
                                DELETE_PARAMETERS, status_ref, ("200", "202"),
                                body=f"{META}.DeleteOptions"),
            "parameters": common,
        },
    }
    if info.namespaced:
        paths[f"{root}/{info.plural}"] = {
            "get": operation("list", "list or watch objects of kind", kind,
                             f"list{suffix}ForAllNamespaces", tag, LIST_PARAMETERS, list_ref,
                             ("200",)),
            "parameters": [pretty],
        }
    paths = served_operations(paths, info)
    for sub in ("status", "scale"):
        if sub not in info.subresources:
            continue
        sub_kind = kind if sub == "status" else gvk("autoscaling", "v1", "Scale")
        sub_ref = object_ref if sub == "status" else "io.k8s.api.autoscaling.v1.Scale"
        sub_suffix = f"{suffix}{sub.capitalize()}"
        paths[f"{base}/{{name}}/{sub}"] = {
            "get": operation("get", f"read {sub} of the specified", sub_kind,
                             f"read{scoped}{sub_suffix}", tag, [], sub_ref, ("200",)),
            "put": operation("put", f"replace {sub} of the specified", sub_kind,
                             f"replace{scoped}{sub_suffix}", tag, WRITE_PARAMETERS, sub_ref,
                             ("200", "201"), body=sub_ref),
            "patch": operation("patch", f"partially update {sub} of the specified", sub_kind,
                               f"patch{scoped}{sub_suffix}", tag,
                               WRITE_PARAMETERS + [query("force", "Take over conflicting "
                                                         "fields in an apply.", "boolean")],
                               sub_ref, ("200", "201"), body=f"{META}.Patch", patch=patch_types),
            "parameters": common,
        }
    return paths


# ---------------------------------------------------------------- Kubernetes' own definitions

# The built-in kinds' schemas come from the OpenAPI definitions of the Kubernetes release the
# stand-in reports, as the kubernetes-validate package ships them (JSON Schema form).
PUBLISHED_RELEASE = "v1.30.0"
JSON_SCHEMA_REF = "#/$defs/"


def json_schema_to_openapi(node: Any) -> Any:
    """A JSON Schema node of those definitions in OpenAPI v3 form: nullable type lists become
    one type, $defs references component references (wrapped in allOf when the property adds a
    description), a oneOf of plain types (IntOrString, Quantity) becomes a string."""
    if isinstance(node, list):
        return [json_schema_to_openapi(item) for item in node]
    if not isinstance(node, dict):
        return node
    if "oneOf" in node and all(set(option) == {"type"} for option in node["oneOf"]):
        types = [t for option in node["oneOf"] for t in option["type"] if t != "null"]
        out = {k: json_schema_to_openapi(v) for k, v in node.items() if k != "oneOf"}
        out["type"] = "string"
        if types == ["string", "integer"]:
            out.update({"format": "int-or-string", "x-kubernetes-int-or-string": True})
        return out
    out = {}
    for key, value in node.items():
        if key == "type" and isinstance(value, list):
            concrete = [t for t in value if t != "null"]
            if concrete:
                out["type"] = concrete[0]
        elif key == "$ref":
            out["$ref"] = REF_PREFIX + value.removeprefix(JSON_SCHEMA_REF)
        elif key == "properties":
            out["properties"] = {name: without_kind_enum(name, json_schema_to_openapi(prop))
                                 for name, prop in value.items()}
        else:
            out[key] = json_schema_to_openapi(value)
    if "$ref" in out and len(out) > 1:
        target = out.pop("$ref")
        out = {"allOf": [{"$ref": target}], **out}
    return out


def without_kind_enum(name: str, prop: Any) -> Any:
    """apiVersion and kind are published without the enum the JSON Schema form adds."""
    if name in ("apiVersion", "kind") and isinstance(prop, dict):
        prop.pop("enum", None)
    return prop


@functools.lru_cache(maxsize=1)
def published_definitions() -> dict[str, Any]:
    """Kubernetes' definitions by name, or {} when the package is not installed."""
    try:
        source = (resources.files("kubernetes_validate") / "kubernetes-json-schema" /
                  f"{PUBLISHED_RELEASE}-local" / "_definitions.json")
        raw = json.loads(source.read_text())
    except (ModuleNotFoundError, FileNotFoundError, OSError, ValueError):
        return {}
    return {name: json_schema_to_openapi(schema)
            for name, schema in (raw.get("$defs") or {}).items()}


def references(node: Any) -> list[str]:
    if isinstance(node, dict):
        target = node.get("$ref")
        found = [target.removeprefix(REF_PREFIX)] if isinstance(target, str) else []
        return found + [r for value in node.values() for r in references(value)]
    if isinstance(node, list):
        return [r for item in node for r in references(item)]
    return []


def definitions_closure(names: list[str], published: dict[str, Any]) -> dict[str, Any]:
    """The named definitions and every definition they reach."""
    out: dict[str, Any] = {}
    pending = list(names)
    while pending:
        name = pending.pop()
        if name in out or name not in published:
            continue
        out[name] = copy.deepcopy(published[name])
        pending.extend(references(out[name]))
    return out


# ---------------------------------------------------------------- documents

def group_version_key(info: ResourceInfo) -> str:
    return f"apis/{info.group}/{info.version}" if info.group else f"api/{info.version}"


def group_version_document(key: str, infos: list[ResourceInfo]) -> dict[str, Any]:
    served = [i for i in infos if group_version_key(i) == key]
    published = published_definitions()
    schemas = meta_schemas()
    paths: dict[str, Any] = {}
    for info in served:
        schemas.update(kind_schemas(info))
        paths.update(resource_paths(info))
        if "scale" in info.subresources:
            schemas.update(scale_schemas())
    if published:
        # Kubernetes' own definitions replace the short ones, with everything they refer to.
        wanted = [name for name in schemas if name in published]
        schemas.update(definitions_closure(wanted, published))
    title = "Kubernetes" if not served or not served[0].crd else \
        f"{served[0].group} {served[0].version}"
    return {"openapi": "3.0.0", "info": {"title": title, "version": "unversioned"},
            "paths": dict(sorted(paths.items())),
            "components": {"schemas": dict(sorted(schemas.items())),
                           "securitySchemes": {"BearerToken": {
                               "type": "apiKey", "description": "Bearer token authentication",
                               "name": "authorization", "in": "header"}}},
            "security": [{"BearerToken": []}]}


def document_hash(document: dict[str, Any]) -> str:
    """The hash the index puts in each serverRelativeURL: SHA-512 of the document, upper hex."""
    encoded = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha512(encoded).hexdigest().upper()


def openapi_v3(path: str, infos: list[ResourceInfo]) -> dict[str, Any] | None:
    """The document at `path` (/openapi/v3 or /openapi/v3/<api|apis/group>/<version>, a query
    string ignored), or None when nothing is published there."""
    bare = path.split("?", 1)[0].rstrip("/")
    keys = sorted({group_version_key(i) for i in infos})
    if bare == "/openapi/v3":
        return {"paths": {key: {"serverRelativeURL": f"/openapi/v3/{key}?hash="
                                f"{document_hash(group_version_document(key, infos))}"}
                          for key in keys}}
    prefix = "/openapi/v3/"
    if bare.startswith(prefix) and bare[len(prefix):] in keys:
        return group_version_document(bare[len(prefix):], infos)
    return None


# ---------------------------------------------------------------- OpenAPI v2

OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def openapi_v2(path: str, accept: str) -> tuple[bytes, str] | None:
    """/openapi/v2 as (body, content type): an empty document. kubectl loads it before `apply`
    and `explain` (1.27 stops when it is missing), then reads /openapi/v3 for what it needs. A
    protobuf reader (kubectl's Accept) gets zero bytes, a valid empty gnostic Document; anyone
    else gets the JSON form."""
    if path.split("?", 1)[0].rstrip("/") != "/openapi/v2":
        return None
    if "protobuf" in (accept or ""):
        return b"", OPENAPI_V2_PROTOBUF
    document = {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "unversioned"},
                "paths": {}, "definitions": {}}
    return json.dumps(document).encode(), "application/json"
