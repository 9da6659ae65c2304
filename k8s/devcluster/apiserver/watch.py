"""WATCH: the initial state (resourceVersion unset or "0") or the history after a kept resourceVersion,
then live events, with bookmarks, timeouts and the selection changes the real watch cache reports."""

from __future__ import annotations

import time
from typing import Any, Callable

from .errors import expired
from .listing import Filter, parse_rv
from .resource_info import ResourceInfo
from .store import Event, ResourceKey, Store, encode_event

DEFAULT_TIMEOUT_S = 1800.0
_CLIENT_CHECK_S = 5.0          # how often an idle watch looks whether its client has gone

Transform = Callable[[dict[str, Any]], dict[str, Any]]


def _selected(event: Event, selection: Filter) -> tuple[str, dict[str, Any]] | None:
    """How this watcher sees the event: an object entering the selection is ADDED, one leaving it is
    DELETED (with its previous content and the event's resourceVersion)."""
    if event.type == "ADDED":
        return ("ADDED", event.obj) if selection.matches(event.obj) else None
    if event.type == "DELETED":
        return ("DELETED", event.obj) if selection.matches(event.obj) else None
    now_in = selection.matches(event.obj)
    was_in = event.old is not None and selection.matches(event.old)
    if now_in:
        return ("MODIFIED" if was_in else "ADDED"), event.obj
    if was_in:
        assert event.old is not None
        last = dict(event.old)
        last["metadata"] = dict(event.old["metadata"], resourceVersion=event.obj["metadata"]["resourceVersion"])
        return "DELETED", last
    return None


def bookmark(info: ResourceInfo, rv: int) -> bytes:
    return encode_event("BOOKMARK", {"kind": info.kind, "apiVersion": info.api_version,
                                     "metadata": {"resourceVersion": str(rv)}})


def serve_watch(store: Store, key: ResourceKey, info: ResourceInfo, selection: Filter, query: dict[str, str],
                write: Callable[[bytes], None], client_gone: Callable[[], bool], bookmark_interval: float,
                transform: Transform | None = None) -> None:
    """Write watch lines through `write` until the timeout, the client leaving (write raises or
    `client_gone` says so) or the resource no longer being served."""
    timeout = float(query["timeoutSeconds"]) if query.get("timeoutSeconds") else DEFAULT_TIMEOUT_S
    deadline = time.monotonic() + max(timeout, 0.0)
    with_bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
    rv_text = query.get("resourceVersion", "")

    def line(kind: str, obj: dict[str, Any], event: Event | None = None) -> bytes:
        if transform is None and event is not None and kind == event.type:
            return event.line()
        return encode_event(kind, transform(obj) if transform else obj)

    with store.lock:
        resource = store.resource(key)
        initial: list[dict[str, Any]] = []
        if rv_text in ("", "0"):
            initial = [resource.objects[k] for k in sorted(resource.objects)
                       if selection.matches(resource.objects[k])]
            seq = resource.next_seq
        else:
            rv = parse_rv(rv_text)
            if rv < resource.trimmed_rv:
                status = expired(f"too old resource version: {rv} ({resource.trimmed_rv})").status()
                write(encode_event("ERROR", status))
                return
            seq = resource.seq_after(rv)
    if initial:
        write(b"".join(line("ADDED", obj) for obj in initial))
    next_bookmark = time.monotonic() + bookmark_interval
    while True:
        with store.lock:
            while not resource.closed and seq >= resource.next_seq:
                now = time.monotonic()
                wake = min(deadline, next_bookmark) if with_bookmarks else deadline
                if now >= wake:
                    break
                if not resource.changed.wait(min(wake - now, _CLIENT_CHECK_S)) and client_gone():
                    return
            closed = resource.closed
            try:
                events, seq = resource.events_since(seq)
            except LookupError:
                return          # this watcher fell behind the kept history: it ends, the client resumes
            current_rv = store.rv
        lines = []
        for event in events:
            seen = _selected(event, selection)
            if seen is not None:
                lines.append(line(seen[0], seen[1], event))
        if lines:
            write(b"".join(lines))
        if closed:
            return              # the resource is no longer served (its CRD was deleted)
        now = time.monotonic()
        if now >= deadline:
            if with_bookmarks:
                write(bookmark(info, current_rv))
            return
        if with_bookmarks and now >= next_bookmark:
            write(bookmark(info, current_rv))
            next_bookmark = now + bookmark_interval
