"""The resource quota controller of kube-controller-manager: keeps each ResourceQuota's status.hard
(its spec) and status.used (what the namespace's pods use) current as quotas and pods change, and
on a periodic resync, which catches pods whose deletion grace has run out."""

from __future__ import annotations

import copy
import logging
import time

from .api import Api, Context
from .control_loop import ControlLoop
from .errors import ApiError
from .resource_quota import quota_status
from .store import Event, ResourceKey

_log = logging.getLogger(__name__)
_RESYNC_S = 5.0
QUOTAS: ResourceKey = ("", "resourcequotas")
PODS: ResourceKey = ("", "pods")


class QuotaController(ControlLoop):
    def __init__(self, api: Api):
        self.dirty: set[str] = set()              # namespaces whose quotas need a recount
        super().__init__(api, "resource-quota-controller")

    def _observe(self, key: ResourceKey, event: Event) -> None:
        """Runs under the store lock: only notes the namespace."""
        if key in (QUOTAS, PODS):
            with self.wake:
                self.dirty.add(event.obj["metadata"].get("namespace", ""))
                self.wake.notify()

    def _run(self) -> None:
        next_resync = time.monotonic() + _RESYNC_S
        while True:
            with self.wake:
                if not (self.dirty or self.stopped):
                    self.wake.wait(max(next_resync - time.monotonic(), 0))
                if self.stopped:
                    return
                namespaces, self.dirty = self.dirty, set()
            if time.monotonic() >= next_resync:
                namespaces |= {q["metadata"]["namespace"] for q in self.api.stored_objects(*QUOTAS)}
                next_resync = time.monotonic() + _RESYNC_S
            for namespace in namespaces:
                try:
                    self.sync(namespace)
                except Exception:         # one namespace's trouble must not stop the others
                    _log.exception("quota sync of namespace %s failed", namespace)

    def sync(self, namespace: str) -> None:
        """Write the status of every quota of the namespace whose counts changed."""
        info = self.api.registry.lookup("", "v1", "resourcequotas")
        assert info is not None
        with self.api.store.lock:
            pods = [p for p in self.api.stored_objects(*PODS) if p["metadata"].get("namespace") == namespace]
            quotas = [q for q in self.api.stored_objects(*QUOTAS) if q["metadata"].get("namespace") == namespace]
            for quota in quotas:
                status = quota_status(quota, pods, time.time())
                if status == quota.get("status"):
                    continue
                updated = copy.deepcopy(quota)
                updated["status"] = status
                try:
                    self.api.commit_update(info, quota, updated, Context(), "status")
                except ApiError as err:
                    _log.warning("quota %s/%s: status not written: %s", namespace, quota["metadata"]["name"],
                                 err.message)
