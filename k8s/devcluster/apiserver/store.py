"""In-memory storage: one cluster-wide increasing resourceVersion, objects per resource, and a bounded
history of events per resource from which watches resume and old lists are rebuilt."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any, Iterator

ResourceKey = tuple[str, str]          # (group, plural)
ObjectKey = tuple[str, str]            # (namespace, name); namespace "" for cluster-scoped


@dataclass
class Event:
    """One change. `obj` is the object after it (for DELETED: its last state, carrying the deletion's
    resourceVersion); `old` the object before. Stored objects are never mutated."""
    rv: int
    type: str
    obj: dict[str, Any]
    old: dict[str, Any] | None
    _line: bytes | None = field(default=None, repr=False)

    def line(self) -> bytes:
        """The watch line of this event, serialized once whatever the number of watchers."""
        if self._line is None:
            self._line = encode_event(self.type, self.obj)
        return self._line


def encode_event(kind: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": obj}, separators=(",", ":")).encode() + b"\n"


class ResourceStore:
    """The objects and event history of one resource (all versions of a custom resource share one)."""

    def __init__(self, lock: threading.RLock, history_limit: int):
        self.objects: dict[ObjectKey, dict[str, Any]] = {}
        self.events: list[Event] = []
        self.first_seq = 0                 # sequence number of events[0]
        self.trimmed_rv = 0                # events at or below it may be missing from the history
        self.history_limit = history_limit
        self.changed = threading.Condition(lock)
        self.closed = False                # the resource stopped being served: watches end

    @property
    def next_seq(self) -> int:
        return self.first_seq + len(self.events)

    def record(self, event: Event) -> None:
        self.events.append(event)
        if len(self.events) > self.history_limit:
            drop = len(self.events) - self.history_limit
            self.trimmed_rv = self.events[drop - 1].rv
            del self.events[:drop]
            self.first_seq += drop
        self.changed.notify_all()

    def events_since(self, seq: int) -> tuple[list[Event], int]:
        """Events from sequence number `seq` on, and the next sequence number; raises LookupError when
        some of them have left the history."""
        if seq < self.first_seq:
            raise LookupError("history trimmed")
        return self.events[seq - self.first_seq:], self.next_seq

    def seq_after(self, rv: int) -> int:
        """The sequence number of the first kept event newer than `rv` (caller checked rv >= trimmed_rv)."""
        low, high = 0, len(self.events)
        while low < high:
            middle = (low + high) // 2
            if self.events[middle].rv <= rv:
                low = middle + 1
            else:
                high = middle
        return self.first_seq + low

    def state_at(self, rv: int) -> dict[ObjectKey, dict[str, Any]]:
        """The objects as they were at `rv`, undoing the kept events after it."""
        state = dict(self.objects)
        for event in reversed(self.events):
            if event.rv <= rv:
                break
            key = object_key(event.obj)
            if event.type == "ADDED":
                state.pop(key, None)
            elif event.old is not None:
                state[key] = event.old
        return state


def object_key(obj: dict[str, Any]) -> ObjectKey:
    meta = obj["metadata"]
    return meta.get("namespace", ""), meta["name"]


class Store:
    """All resources, one lock. Writers hold the lock while they read, decide and write, which is what
    makes every update a compare-and-swap."""

    def __init__(self, history_limit: int = 2000):
        self.lock = threading.RLock()
        self.rv = 0
        self.history_limit = history_limit
        self.resources: dict[ResourceKey, ResourceStore] = {}
        self.by_uid: dict[str, tuple[ResourceKey, ObjectKey]] = {}
        self.dependents: dict[str, set[tuple[ResourceKey, ObjectKey]]] = {}
        self.listeners: list[Any] = []     # callables (resource, event) run under the lock

    def resource(self, key: ResourceKey) -> ResourceStore:
        with self.lock:
            store = self.resources.get(key)
            if store is None:
                store = self.resources[key] = ResourceStore(self.lock, self.history_limit)
            return store

    def drop_resource(self, key: ResourceKey) -> None:
        """Forget a resource (its CRD is gone): its watches end."""
        with self.lock:
            store = self.resources.pop(key, None)
            if store is not None:
                store.closed = True
                store.changed.notify_all()

    def get(self, key: ResourceKey, namespace: str, name: str) -> dict[str, Any] | None:
        store = self.resources.get(key)
        return None if store is None else store.objects.get((namespace, name))

    def find_uid(self, uid: str) -> tuple[ResourceKey, dict[str, Any]] | None:
        with self.lock:
            where = self.by_uid.get(uid)
            if where is None:
                return None
            obj = self.get(where[0], *where[1])
            return None if obj is None else (where[0], obj)

    def iter_dependents(self, owner_uid: str) -> Iterator[tuple[ResourceKey, dict[str, Any]]]:
        with self.lock:
            for resource, okey in list(self.dependents.get(owner_uid, ())):
                obj = self.get(resource, *okey)
                if obj is not None:
                    yield resource, obj

    def write(self, key: ResourceKey, obj: dict[str, Any], kind: str) -> dict[str, Any]:
        """Store `obj` (ADDED or MODIFIED) under a new resourceVersion; returns the stored object."""
        with self.lock:
            store = self.resource(key)
            self.rv += 1
            obj["metadata"]["resourceVersion"] = str(self.rv)
            okey = object_key(obj)
            old = store.objects.get(okey)
            store.objects[okey] = obj
            self._index(key, okey, old, obj)
            event = Event(self.rv, kind, obj, old)
            store.record(event)
            for listener in self.listeners:
                listener(key, event)
            return obj

    def remove(self, key: ResourceKey, obj: dict[str, Any]) -> dict[str, Any]:
        """Delete the stored object; the DELETED event carries the deletion's resourceVersion."""
        with self.lock:
            store = self.resource(key)
            okey = object_key(obj)
            old = store.objects.pop(okey)
            self.rv += 1
            last = dict(old)
            last["metadata"] = dict(old["metadata"], resourceVersion=str(self.rv))
            self._index(key, okey, old, None)
            event = Event(self.rv, "DELETED", last, old)
            store.record(event)
            for listener in self.listeners:
                listener(key, event)
            return last

    def _index(self, key: ResourceKey, okey: ObjectKey, old: dict[str, Any] | None,
               new: dict[str, Any] | None) -> None:
        if old is not None:
            self.by_uid.pop(old["metadata"].get("uid", ""), None)
            for ref in old["metadata"].get("ownerReferences") or []:
                holders = self.dependents.get(ref.get("uid", ""))
                if holders is not None:
                    holders.discard((key, okey))
                    if not holders:
                        del self.dependents[ref.get("uid", "")]
        if new is not None:
            self.by_uid[new["metadata"]["uid"]] = (key, okey)
            for ref in new["metadata"].get("ownerReferences") or []:
                self.dependents.setdefault(ref.get("uid", ""), set()).add((key, okey))
