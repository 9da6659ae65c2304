"""What the stand-in's controllers (garbage collector, ClusterRole aggregator, resource quotas) share:
a background thread woken by the store's events (no periodic scan of all objects)."""

from __future__ import annotations

import threading

from .api import Api
from .store import Event, ResourceKey


class ControlLoop:
    """Subclasses note work in `_observe`, which runs under the store lock for every write, and do it in
    `_run`, on their own thread, waiting on `wake` until there is some or `stopped` is set."""

    def __init__(self, api: Api, name: str):
        self.api = api
        self.wake = threading.Condition()
        self.stopped = False
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        api.store.listeners.append(self._observe)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        with self.wake:
            self.stopped = True
            self.wake.notify()

    def _observe(self, key: ResourceKey, event: Event) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        raise NotImplementedError
