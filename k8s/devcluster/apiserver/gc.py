"""What the controllers of a real control plane finish after a deletion: ownerReference garbage
collection (background, foreground, orphan), namespace termination and CRD clean-up."""

from __future__ import annotations

import copy
import logging
from typing import Any

from .api import Api, Context
from .control_loop import ControlLoop
from .errors import ApiError
from .resource_info import ResourceInfo
from .store import Event, ObjectKey, ResourceKey

_log = logging.getLogger(__name__)
_RECHECK_S = 0.5
Pending = tuple[ResourceKey, ObjectKey]


class GarbageCollector(ControlLoop):
    """A background thread fed by the store's events: no periodic scan of all objects."""

    def __init__(self, api: Api):
        self.gone_owners: set[str] = set()
        self.orphans: set[Pending] = set()          # objects whose owner was missing when written
        self.pending: set[Pending] = set()          # deletions waiting on dependents or contents
        super().__init__(api, "garbage-collector")

    def _observe(self, key: ResourceKey, event: Event) -> None:
        """Runs under the store lock: only notes work."""
        meta = event.obj["metadata"]
        okey = (meta.get("namespace", ""), meta["name"])
        with self.wake:
            if event.type == "DELETED":
                self.gone_owners.add(meta["uid"])
            else:
                finalizers = meta.get("finalizers") or []
                if meta.get("deletionTimestamp") and (
                        "foregroundDeletion" in finalizers or "orphan" in finalizers
                        or key in (("", "namespaces"), ("apiextensions.k8s.io", "customresourcedefinitions"))):
                    self.pending.add((key, okey))
                by_uid = self.api.store.by_uid
                if any(ref.get("uid") not in by_uid for ref in meta.get("ownerReferences") or []):
                    self.orphans.add((key, okey))
            self.wake.notify()

    def _run(self) -> None:
        while True:
            with self.wake:
                if not (self.gone_owners or self.orphans or self.stopped):
                    self.wake.wait(_RECHECK_S)
                if self.stopped:
                    return
                gone, self.gone_owners = self.gone_owners, set()
                orphans, self.orphans = self.orphans, set()
                pending = set(self.pending)
            try:
                self._collect(gone, orphans, pending)
            except Exception:          # the collector must outlive any one object's trouble
                _log.exception("garbage collection pass failed")

    def _collect(self, gone: set[str], orphans: set[Pending], pending: set[Pending]) -> None:
        store = self.api.store
        for uid in gone:
            for key, obj in list(store.iter_dependents(uid)):
                self._check_dependent(key, obj)
        for key, okey in orphans:
            obj = store.get(key, *okey)
            if obj is not None:
                self._check_dependent(key, obj)
        for key, okey in pending:
            obj = store.get(key, *okey)
            finished = obj is None or not obj["metadata"].get("deletionTimestamp") or self._finish(key, obj)
            if finished:
                with self.wake:
                    self.pending.discard((key, okey))

    def _info(self, key: ResourceKey) -> ResourceInfo | None:
        for info in self.api.registry.all():
            if (info.group, info.plural) == key:
                return info
        return None

    def _check_dependent(self, key: ResourceKey, obj: dict[str, Any]) -> None:
        """Delete an object none of whose owners exist; drop references to missing owners otherwise."""
        refs = obj["metadata"].get("ownerReferences") or []
        if not refs:
            return
        alive = [ref for ref in refs if self.api.store.find_uid(ref.get("uid", "")) is not None]
        info = self._info(key)
        if info is None or len(alive) == len(refs):
            return
        meta = obj["metadata"]
        try:
            if not alive:
                if not meta.get("deletionTimestamp"):
                    self.api.delete(info, meta.get("namespace", ""), meta["name"],
                                    {"propagationPolicy": "Background"}, Context())
            else:
                self._set_owner_references(info, obj, alive)
        except ApiError as err:
            if err.code not in (404, 409):
                raise

    def _set_owner_references(self, info: ResourceInfo, obj: dict[str, Any], refs: list[dict[str, Any]]) -> None:
        with self.api.store.lock:
            current = self.api.store.get((info.group, info.plural), obj["metadata"].get("namespace", ""),
                                         obj["metadata"]["name"])
            if current is None:
                return
            new = copy.deepcopy(current)
            new["metadata"]["ownerReferences"] = refs
            if not refs:
                del new["metadata"]["ownerReferences"]
            self.api.commit_update(info, current, new, Context(), None)

    def _finish(self, key: ResourceKey, obj: dict[str, Any]) -> bool:
        """Advance one pending deletion; True when nothing is left to do for it."""
        info = self._info(key)
        if info is None:
            return True
        if key == ("", "namespaces"):
            return self._finish_namespace(info, obj)
        if key == ("apiextensions.k8s.io", "customresourcedefinitions"):
            return self.api.finish_crd_deletion(obj, Context())
        uid = obj["metadata"]["uid"]
        finalizers = obj["metadata"].get("finalizers") or []
        dependents = list(self.api.store.iter_dependents(uid))
        if "orphan" in finalizers:
            for dep_key, dependent in dependents:
                dep_info = self._info(dep_key)
                if dep_info is not None:
                    kept = [r for r in dependent["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
                    self._set_owner_references(dep_info, dependent, kept)
            self.api.remove_finalizer(info, obj, "orphan")
            return True
        blocking = 0
        for dep_key, dependent in dependents:
            dep_info = self._info(dep_key)
            if dep_info is None:
                continue
            if any(r.get("uid") == uid and r.get("blockOwnerDeletion") for r in
                   dependent["metadata"].get("ownerReferences") or []):
                blocking += 1
            if not dependent["metadata"].get("deletionTimestamp"):
                try:
                    self.api.delete(dep_info, dependent["metadata"].get("namespace", ""),
                                    dependent["metadata"]["name"], {"propagationPolicy": "Background"}, Context())
                except ApiError as err:
                    if err.code != 404:
                        raise
        if blocking:
            return False
        self.api.remove_finalizer(info, obj, "foregroundDeletion")
        return True

    def _finish_namespace(self, info: ResourceInfo, namespace: dict[str, Any]) -> bool:
        """The namespace controller: delete everything in it, then the namespace."""
        name = namespace["metadata"]["name"]
        remaining = 0
        for resource in self.api.registry.all():
            if not resource.namespaced or "list" not in resource.verbs:
                continue
            for obj in self.api.stored_objects(resource.group, resource.plural):
                if obj["metadata"].get("namespace") != name:
                    continue
                remaining += 1
                if not obj["metadata"].get("deletionTimestamp"):
                    try:
                        self.api.delete(resource, name, obj["metadata"]["name"], {}, Context())
                    except ApiError as err:
                        if err.code != 404:
                            raise
        if remaining:
            return False
        with self.api.store.lock:
            current = self.api.store.get(("", "namespaces"), "", name)
            if current is not None and not current["metadata"].get("finalizers"):
                self.api.store.remove(("", "namespaces"), current)
        return True
