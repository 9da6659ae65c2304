"""The REST verbs on stored objects, independent of HTTP: get, list, create, update, patch, delete,
deletecollection, with the real API server's rules for metadata, resourceVersion preconditions,
generation, status halves, finalizers and graceful deletion."""

from __future__ import annotations

import copy
import json
import random
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from . import admission, errors
from .builtin_fields import admit_builtin_fields
from .custom import CLEANUP_FINALIZER, admit, require_kind, storage_version
from .errors import ApiError
from .decoding import check_decodable
from .listing import list_objects
from .patching import (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, decode_patch, json_patch, merge_patch,
                       strategic_merge_patch, unsupported_patch_type)
from .rbac import RBAC_GROUP
from .rbac_escalation import check_escalation
from .registry import Registry
from .resource_info import ResourceInfo
from .store import ResourceKey, Store
from .validation import forbidden, validate_metadata

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_UNDELETABLE_NAMESPACES = ("default", "kube-system", "kube-public")
_NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_SYSTEM_META = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")


@dataclass
class Context:
    """Who asks and how: the per-request options that change what a write does."""
    user: str = "system:apiserver"
    groups: tuple[str, ...] = ("system:masters",)
    field_validation: str = "Warn"
    dry_run: bool = False
    warnings: list[str] = field(default_factory=list)


def resource_key(info: ResourceInfo) -> ResourceKey:
    return info.group, info.plural


def rfc3339(moment: float) -> str:
    return datetime.fromtimestamp(moment, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Api:
    """The verbs. Every write happens under the store's lock, so a read-check-write is atomic."""

    def __init__(self, store: Store, registry: Registry):
        self.store = store
        self.registry = registry

    # ---- helpers -------------------------------------------------------------------------------

    @staticmethod
    def now() -> str:
        return rfc3339(time.time())

    def stored_objects(self, group: str, plural: str) -> list[dict[str, Any]]:
        with self.store.lock:
            resource = self.store.resources.get((group, plural))
            return list(resource.objects.values()) if resource else []

    def output(self, info: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
        """The object as this version of the resource shows it (custom resources: apiVersion)."""
        if info.crd is not None and obj.get("apiVersion") != info.api_version:
            return {**obj, "apiVersion": info.api_version}
        return obj

    def fetch(self, info: ResourceInfo, namespace: str, name: str) -> dict[str, Any]:
        obj = self.store.get(resource_key(info), namespace if info.namespaced else "", name)
        if obj is None:
            raise errors.not_found(info.group_resource, name, info.plural)
        return obj

    def _check_body(self, info: ResourceInfo, body: Any, raw: bytes) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", f"the body of the request must be a {info.kind} object")
        obj = copy.deepcopy(body)
        if info.crd is not None:
            require_kind(obj, raw)
        kind = obj.setdefault("kind", info.kind)
        api_version = obj.setdefault("apiVersion", info.api_version)
        if kind != info.kind:
            raise ApiError(400, "BadRequest", f'{kind} in version "{api_version.rpartition("/")[2]}" cannot be '
                           f"handled as a {info.kind}: the object provided is unrecognized (wrong kind)")
        if api_version != info.api_version:
            raise ApiError(400, "BadRequest", f"the API version in the data ({api_version}) does not match "
                           f"the expected API version ({info.api_version})")
        obj = {"kind": kind, "apiVersion": api_version, **obj}
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(400, "BadRequest", f"{info.kind} in version \"{info.version}\" cannot be handled "
                           f"as a {info.kind}: metadata must be an object")
        check_decodable(info, obj)
        meta.pop("managedFields", None)
        meta.pop("selfLink", None)
        if info.crd is not None:
            obj["apiVersion"] = f"{info.group}/{storage_version(info.crd)}"
        return obj

    def _place(self, info: ResourceInfo, obj: dict[str, Any], namespace: str) -> None:
        meta = obj["metadata"]
        if info.namespaced:
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise ApiError(400, "BadRequest", "the namespace of the provided object does not match the "
                               "namespace sent on the request")
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)

    def _invalid(self, info: ResourceInfo, name: str, causes: list[dict[str, str]]) -> ApiError:
        return errors.invalid(info.kind, info.group, name, causes)

    # ---- read ------------------------------------------------------------------------------------

    def get(self, info: ResourceInfo, namespace: str, name: str) -> dict[str, Any]:
        return self.output(info, self.fetch(info, namespace, name))

    def list(self, info: ResourceInfo, namespace: str, query: dict[str, str]) -> dict[str, Any]:
        """A List object honouring selectors, limit/continue and resourceVersion(Match)."""
        strategy = self.registry.strategy(info)
        items, metadata = list_objects(self.store, resource_key(info), namespace if info.namespaced else "",
                                       query, strategy.field_selectors)
        if info.crd is None:
            # typed lists of the real server carry no kind/apiVersion on their items
            shown = [{k: v for k, v in obj.items() if k not in ("kind", "apiVersion")} for obj in items]
        else:
            shown = [self.output(info, obj) for obj in items]
        return {"kind": info.list_kind, "apiVersion": info.api_version, "metadata": metadata, "items": shown}

    # ---- create ----------------------------------------------------------------------------------

    def create(self, info: ResourceInfo, namespace: str, body: Any, ctx: Context,
               raw: bytes = b"") -> dict[str, Any]:
        obj = self._check_body(info, body, raw)
        strategy = self.registry.strategy(info)
        with self.store.lock:
            self._place(info, obj, namespace)
            meta = obj["metadata"]
            self._admit_namespace(info, meta)
            if meta.get("resourceVersion"):
                raise ApiError(500, "InternalError", "Internal error occurred: resourceVersion should not be "
                               "set on objects to be created")
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = self._generated_name(info, meta)
            if info.plural == "pods":
                self._admit_service_account(info, obj)
            for key in _SYSTEM_META:
                meta.pop(key, None)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = self.now()
            if strategy.has_generation:
                meta["generation"] = 1
            strategy.prepare_create(self, info, obj)
            if info.crd is not None:
                self._admit_custom_resource_create(info)
                if "status" in info.subresources:
                    obj.pop("status", None)
                obj, warnings = admit(info, obj, None, ctx.field_validation, None)
                ctx.warnings += warnings
            else:
                ctx.warnings += admit_builtin_fields(info, obj, ctx.field_validation)
            causes = validate_metadata(obj, info.namespaced, strategy.name_rule)
            causes += strategy.validate(self, info, obj, None)
            if causes:
                raise self._invalid(info, meta.get("name", ""), causes)
            if info.group == RBAC_GROUP:
                check_escalation(info.plural, obj, None, "", ctx.user, list(ctx.groups), self.stored_objects)
            admission.validate(self, info, obj, None, ctx, None)
            key = resource_key(info)
            if self.store.get(key, meta.get("namespace", ""), meta["name"]) is not None:
                raise errors.already_exists(info.group_resource, meta["name"], info.plural)
            if ctx.dry_run:
                return self.output(info, obj)
            stored = self.store.write(key, obj, "ADDED")
            self._after_write(info, stored)
            return self.output(info, stored)

    def _generated_name(self, info: ResourceInfo, meta: dict[str, Any]) -> str:
        prefix = meta["generateName"][:58]
        for _ in range(16):
            name = prefix + "".join(random.choice(_NAME_SUFFIX_ALPHABET) for _ in range(5))
            if self.store.get(resource_key(info), meta.get("namespace", ""), name) is None:
                return name
        raise ApiError(409, "AlreadyExists", f'{info.group_resource} "{prefix}" already exists, the server '
                       "was not able to generate a unique name for the object")

    def _admit_namespace(self, info: ResourceInfo, meta: dict[str, Any]) -> None:
        """The NamespaceLifecycle admission: content only in an existing, live namespace."""
        if not info.namespaced:
            return
        namespace = self.store.get(("", "namespaces"), "", meta["namespace"])
        if namespace is None:
            raise errors.not_found("namespaces", meta["namespace"], "namespaces")
        if namespace["metadata"].get("deletionTimestamp"):
            raise ApiError(403, "Forbidden", f'{info.group_resource} "{meta.get("name", "")}" is forbidden: '
                           f"unable to create new content in namespace {meta['namespace']} because it is being "
                           "terminated", {"name": meta.get("name", ""), "kind": info.plural})

    def _admit_custom_resource_create(self, info: ResourceInfo) -> None:
        assert info.crd is not None
        crd = self.store.get(("apiextensions.k8s.io", "customresourcedefinitions"), "", info.crd["metadata"]["name"])
        if crd is not None and crd["metadata"].get("deletionTimestamp"):
            raise ApiError(405, "MethodNotAllowed", "create not allowed while custom resource definition is "
                           "terminating")

    def _admit_service_account(self, info: ResourceInfo, pod: dict[str, Any]) -> None:
        """The ServiceAccount admission: a pod runs as an existing service account."""
        spec = pod.get("spec") if isinstance(pod.get("spec"), dict) else {}
        account = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
        namespace = pod["metadata"]["namespace"]
        if self.store.get(("", "serviceaccounts"), namespace, account) is None:
            name = pod["metadata"].get("name", "")
            raise ApiError(403, "Forbidden", f'pods "{name}" is forbidden: error looking up service account '
                           f'{namespace}/{account}: serviceaccount "{account}" not found',
                           {"name": name, "kind": "pods"})

    # ---- update ----------------------------------------------------------------------------------

    def update(self, info: ResourceInfo, namespace: str, name: str, body: Any, ctx: Context,
               subresource: str | None = None, raw: bytes = b"") -> tuple[dict[str, Any], bool]:
        """PUT. Returns the stored object and whether it was created."""
        new = self._check_body(info, body, raw)
        strategy = self.registry.strategy(info)
        with self.store.lock:
            self._check_name(info, new, name)
            self._place(info, new, namespace)
            old = self.store.get(resource_key(info), new["metadata"].get("namespace", ""), name)
            if old is None:
                if strategy.allow_create_on_update and subresource is None:
                    new["metadata"].pop("resourceVersion", None)
                    return self.create(info, namespace, new, ctx), True
                raise errors.not_found(info.group_resource, name, info.plural)
            self._check_preconditions(info, new, old, strategy.allow_unconditional_update)
            return self.commit_update(info, old, new, ctx, subresource), False

    @staticmethod
    def _check_name(info: ResourceInfo, obj: dict[str, Any], name: str) -> None:
        given = obj["metadata"].get("name")
        if given != name:
            raise ApiError(400, "BadRequest", f"the name of the object ({given or ''}) does not match the name "
                           f"on the URL ({name})")

    def _check_preconditions(self, info: ResourceInfo, new: dict[str, Any], old: dict[str, Any],
                             allow_unconditional: bool) -> None:
        meta, old_meta = new["metadata"], old["metadata"]
        rv = meta.get("resourceVersion", "")
        if not rv and not allow_unconditional:
            raise self._invalid(info, meta["name"], [{
                "reason": "FieldValueInvalid", "field": "metadata.resourceVersion",
                "message": "Invalid value: 0x0: must be specified for an update"}])
        if rv and rv != old_meta["resourceVersion"]:
            raise errors.conflict(info.group_resource, meta["name"], info.plural)
        if meta.get("uid") and meta["uid"] != old_meta["uid"]:
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {info.group_resource} '
                           f'"{meta["name"]}": Precondition failed: UID in precondition: {meta["uid"]}, UID in '
                           f'object meta: {old_meta["uid"]}', {"name": meta["name"], "kind": info.plural})

    def commit_update(self, info: ResourceInfo, old: dict[str, Any], new: dict[str, Any], ctx: Context,
                      subresource: str | None) -> dict[str, Any]:
        """Apply an update the preconditions allowed: keep what the server owns, validate, write."""
        strategy = self.registry.strategy(info)
        meta, old_meta = new["metadata"], old["metadata"]
        for key in _SYSTEM_META:
            meta.pop(key, None)
            if key in old_meta:
                meta[key] = old_meta[key]
        meta["resourceVersion"] = old_meta["resourceVersion"]
        if subresource == "status":
            status = new.get("status")
            new = copy.deepcopy(old)
            if status is None:
                new.pop("status", None)
            else:
                new["status"] = status
        elif "status" in info.subresources:
            new.pop("status", None)
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
        strategy.prepare_update(self, info, new, old)
        if info.crd is not None:
            new, warnings = admit(info, new, old, ctx.field_validation, subresource)
            ctx.warnings += warnings
        elif subresource is None:
            ctx.warnings += admit_builtin_fields(info, new, ctx.field_validation)
        causes = validate_metadata(new, info.namespaced, strategy.name_rule)
        causes += strategy.validate(self, info, new, old)
        added = [f for f in new["metadata"].get("finalizers") or [] if f not in old_meta.get("finalizers") or []]
        if old_meta.get("deletionTimestamp") and added:
            listed = ", ".join(json.dumps(f) for f in added)
            causes.append(forbidden("metadata.finalizers", "no new finalizers can be added if the object is "
                                    f"being deleted, found new finalizers []string{{{listed}}}"))
        if causes:
            raise self._invalid(info, meta["name"], causes)
        if info.group == RBAC_GROUP and subresource is None:
            check_escalation(info.plural, new, old, meta["name"], ctx.user, list(ctx.groups), self.stored_objects)
        admission.validate(self, info, new, old, ctx, subresource)
        if strategy.has_generation and self._spec_part(info, new) != self._spec_part(info, old):
            new["metadata"]["generation"] = int(old_meta.get("generation", 1)) + 1
        if new == old:
            return self.output(info, old)
        key = resource_key(info)
        if (old_meta.get("deletionTimestamp") and not new["metadata"].get("finalizers")
                and old_meta.get("deletionGracePeriodSeconds", 0) == 0 and info.plural != "namespaces"):
            if ctx.dry_run:
                return self.output(info, new)
            return self.output(info, self._remove(info, key, new))
        if ctx.dry_run:
            return self.output(info, new)
        stored = self.store.write(key, new, "MODIFIED")
        self._after_write(info, stored)
        return self.output(info, stored)

    @staticmethod
    def _spec_part(info: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
        skipped = {"metadata", "apiVersion", "kind"}
        if "status" in info.subresources:
            skipped.add("status")
        return {k: v for k, v in obj.items() if k not in skipped}

    # ---- patch -----------------------------------------------------------------------------------

    def accepted_patch_types(self, info: ResourceInfo) -> list[str]:
        types = [JSON_PATCH, MERGE_PATCH]
        return types if info.crd is not None else types + [STRATEGIC_PATCH]

    def apply_patch(self, info: ResourceInfo, current: dict[str, Any], content_type: str, raw: bytes) -> Any:
        """The patched document (not yet checked nor stored)."""
        accepted = self.accepted_patch_types(info)
        if content_type not in accepted:
            raise unsupported_patch_type(content_type, accepted)
        patch = decode_patch(raw)
        if content_type == MERGE_PATCH:
            if not isinstance(patch, dict):
                raise ApiError(400, "BadRequest", "error decoding patch: json: cannot unmarshal into "
                               "map[string]interface {}: the patch must be a JSON object")
            return merge_patch(copy.deepcopy(current), patch)
        if content_type == JSON_PATCH:
            return json_patch(copy.deepcopy(current), patch)
        return strategic_merge_patch(copy.deepcopy(current), patch)

    def patch(self, info: ResourceInfo, namespace: str, name: str, content_type: str, raw: bytes,
              ctx: Context, subresource: str | None = None) -> dict[str, Any]:
        with self.store.lock:
            old = self.fetch(info, namespace, name)
            patched = self.apply_patch(info, self.output(info, old), content_type, raw)
            new = self._check_body(info, patched, raw)
            self._check_name(info, new, name)
            self._place(info, new, old["metadata"].get("namespace", ""))
            if not new["metadata"].get("resourceVersion"):
                new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            self._check_preconditions(info, new, old, True)
            return self.commit_update(info, old, new, ctx, subresource)

    # ---- delete ----------------------------------------------------------------------------------

    def delete(self, info: ResourceInfo, namespace: str, name: str, options: dict[str, Any],
               ctx: Context) -> dict[str, Any]:
        """DELETE: at once, or marked with deletionTimestamp while a grace period or finalizers hold it."""
        strategy = self.registry.strategy(info)
        with self.store.lock:
            obj = self.fetch(info, namespace, name)
            meta = obj["metadata"]
            if info.plural == "namespaces" and name in _UNDELETABLE_NAMESPACES:
                raise ApiError(403, "Forbidden", f'namespaces "{name}" is forbidden: this namespace may not be '
                               "deleted", {"name": name, "kind": "namespaces"})
            self._check_delete_preconditions(info, obj, options.get("preconditions") or {})
            finalizers = self._deletion_finalizers(meta, options)
            requested = options.get("gracePeriodSeconds")
            grace = strategy.grace_period(obj, None if requested is None else int(requested))
            key = resource_key(info)
            if meta.get("deletionTimestamp"):
                return self._delete_again(info, key, obj, grace, ctx)
            if info.plural == "namespaces" or finalizers or grace > 0:
                marked = copy.deepcopy(obj)
                marked["metadata"]["deletionTimestamp"] = rfc3339(time.time() + grace)
                marked["metadata"]["deletionGracePeriodSeconds"] = grace
                if finalizers:
                    marked["metadata"]["finalizers"] = finalizers
                if info.plural == "namespaces":
                    marked["status"] = {"phase": "Terminating"}
                if ctx.dry_run:
                    return self.output(info, marked)
                return self.output(info, self.store.write(key, marked, "MODIFIED"))
            if ctx.dry_run:
                return self._deleted_answer(info, obj, strategy.return_deleted_object)
            return self._deleted_answer(info, self._remove(info, key, obj), strategy.return_deleted_object)

    def _check_delete_preconditions(self, info: ResourceInfo, obj: dict[str, Any],
                                    preconditions: dict[str, Any]) -> None:
        meta, name = obj["metadata"], obj["metadata"]["name"]
        uid, rv = preconditions.get("uid"), preconditions.get("resourceVersion")
        if uid and uid != meta["uid"]:
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {info.group_resource} "{name}": '
                           f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta['uid']}",
                           {"name": name, "kind": info.plural})
        if rv and rv != meta["resourceVersion"]:
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {info.group_resource} "{name}": '
                           f"Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in "
                           f"meta: {meta['resourceVersion']}", {"name": name, "kind": info.plural})

    @staticmethod
    def _deletion_finalizers(meta: dict[str, Any], options: dict[str, Any]) -> list[str]:
        policy = options.get("propagationPolicy")
        if policy not in (None, "", "Background", "Foreground", "Orphan"):
            raise ApiError(400, "BadRequest", f'propagationPolicy: Unsupported value: "{policy}": supported '
                           'values: "Foreground", "Background", "Orphan"')
        finalizers = list(meta.get("finalizers") or [])
        orphan = policy == "Orphan" or (not policy and options.get("orphanDependents") is True)
        if orphan and "orphan" not in finalizers:
            finalizers = [f for f in finalizers if f != "foregroundDeletion"] + ["orphan"]
        elif policy == "Foreground" and "foregroundDeletion" not in finalizers:
            finalizers = [f for f in finalizers if f != "orphan"] + ["foregroundDeletion"]
        return finalizers

    def _delete_again(self, info: ResourceInfo, key: ResourceKey, obj: dict[str, Any], grace: int,
                      ctx: Context) -> dict[str, Any]:
        """A DELETE of an object already being deleted may only shorten its grace period."""
        meta = obj["metadata"]
        strategy = self.registry.strategy(info)
        current = meta.get("deletionGracePeriodSeconds", 0)
        if grace >= current:
            return self.output(info, obj)
        if grace == 0 and not meta.get("finalizers"):
            removed = obj if ctx.dry_run else self._remove(info, key, obj)
            return self._deleted_answer(info, removed, strategy.return_deleted_object)
        shorter = copy.deepcopy(obj)
        shorter["metadata"]["deletionTimestamp"] = rfc3339(time.time() + grace)
        shorter["metadata"]["deletionGracePeriodSeconds"] = grace
        if ctx.dry_run:
            return self.output(info, shorter)
        return self.output(info, self.store.write(key, shorter, "MODIFIED"))

    def _deleted_answer(self, info: ResourceInfo, obj: dict[str, Any], return_object: bool) -> dict[str, Any]:
        if return_object:
            return self.output(info, obj)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": {"name": obj["metadata"]["name"], "group": info.group, "kind": info.plural,
                            "uid": obj["metadata"]["uid"]}}

    def _remove(self, info: ResourceInfo, key: ResourceKey, obj: dict[str, Any]) -> dict[str, Any]:
        removed = self.store.remove(key, obj)
        if info.plural == "customresourcedefinitions" and info.group == "apiextensions.k8s.io":
            for served in self.registry.crd_infos_of(obj["metadata"]["name"]):
                self.store.drop_resource(resource_key(served))
            self.registry.unregister_crd(obj["metadata"]["name"])
        return removed

    def delete_collection(self, info: ResourceInfo, namespace: str, query: dict[str, str],
                          options: dict[str, Any], ctx: Context) -> dict[str, Any]:
        with self.store.lock:
            listed = self.list(info, namespace, {k: v for k, v in query.items()
                                                 if k in ("labelSelector", "fieldSelector")})
            deleted = []
            for item in listed["items"]:
                try:
                    answer = self.delete(info, item["metadata"].get("namespace", ""), item["metadata"]["name"],
                                         options, ctx)
                except ApiError as err:
                    if err.code != 404:
                        raise
                    continue
                deleted.append(answer if answer.get("kind") != "Status" else item)
            listed["items"] = deleted
            listed["metadata"] = {"resourceVersion": str(self.store.rv)}
            return listed

    # ---- after writes ----------------------------------------------------------------------------

    def _after_write(self, info: ResourceInfo, stored: dict[str, Any]) -> None:
        """What controllers of a real cluster do at once: a namespace's default service account, a
        CRD's resources served."""
        if info.plural == "namespaces" and info.group == "":
            name = stored["metadata"]["name"]
            if (not stored["metadata"].get("deletionTimestamp")
                    and self.store.get(("", "serviceaccounts"), name, "default") is None):
                account_info = self.registry.lookup("", "v1", "serviceaccounts")
                assert account_info is not None
                self.create(account_info, name, {"metadata": {"name": "default"}}, Context())
        elif info.plural == "customresourcedefinitions" and info.group == "apiextensions.k8s.io":
            if not stored["metadata"].get("deletionTimestamp"):
                self.registry.register_crd(stored)

    def finish_crd_deletion(self, crd: dict[str, Any], ctx: Context) -> bool:
        """Delete a terminating CRD's objects; True once none are left and the CRD itself is gone."""
        infos = self.registry.crd_infos_of(crd["metadata"]["name"])
        remaining = 0
        for info in infos[:1]:
            for obj in self.stored_objects(info.group, info.plural):
                remaining += 1
                if not obj["metadata"].get("deletionTimestamp"):
                    try:
                        self.delete(info, obj["metadata"].get("namespace", ""), obj["metadata"]["name"], {}, ctx)
                    except ApiError:
                        pass
        if remaining and any(self.stored_objects(i.group, i.plural) for i in infos[:1]):
            return False
        crd_info = self.registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        assert crd_info is not None
        self.remove_finalizer(crd_info, crd, CLEANUP_FINALIZER)
        return True

    def remove_finalizer(self, info: ResourceInfo, obj: dict[str, Any], finalizer: str) -> None:
        with self.store.lock:
            current = self.store.get(resource_key(info), obj["metadata"].get("namespace", ""),
                                     obj["metadata"]["name"])
            if current is None or finalizer not in (current["metadata"].get("finalizers") or []):
                return
            new = copy.deepcopy(current)
            new["metadata"]["finalizers"] = [f for f in new["metadata"]["finalizers"] if f != finalizer]
            self.commit_update(info, current, new, Context(), None)
