"""LIST semantics: selectors, resourceVersion / resourceVersionMatch, limit and continue tokens."""

from __future__ import annotations

import base64
import binascii
import json
import time
from dataclasses import dataclass
from typing import Any, Callable

from .errors import ApiError, expired
from .selectors import FieldSelector, LabelSelector
from .store import ObjectKey, ResourceKey, Store

_TOO_LARGE_WAIT_S = 3.0


@dataclass
class Filter:
    """Which objects a list or watch selects: namespace, label and field selectors."""
    namespace: str
    labels: LabelSelector
    fields: FieldSelector

    def matches(self, obj: dict[str, Any]) -> bool:
        meta = obj["metadata"]
        if self.namespace and meta.get("namespace", "") != self.namespace:
            return False
        return self.labels.matches(meta.get("labels")) and self.fields.matches(obj)


def make_filter(namespace: str, query: dict[str, str],
                field_selectors: dict[str, Callable[[dict[str, Any]], str]]) -> Filter:
    return Filter(namespace, LabelSelector(query.get("labelSelector", "")),
                  FieldSelector(query.get("fieldSelector", ""), field_selectors))


def parse_rv(text: str, what: str = "resourceVersion") -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise ApiError(400, "BadRequest", f'{what}: Invalid value: "{text}": must be a non-negative integer'
                       if what != "resourceVersion" else f'invalid resource version: "{text}"')
    return value


def encode_continue(rv: int, start: ObjectKey) -> str:
    token = {"v": "meta.k8s.io/v1", "rv": rv, "start": "/".join(start) + "\x00"}
    return base64.urlsafe_b64encode(json.dumps(token).encode()).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, ObjectKey]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        rv, start = int(data["rv"]), str(data["start"]).rstrip("\x00")
        if data.get("v") != "meta.k8s.io/v1":
            raise ValueError("unknown version")
    except (ValueError, KeyError, TypeError, binascii.Error) as err:
        raise ApiError(400, "BadRequest", f"continue key is not valid: {err}") from err
    namespace, _, name = start.rpartition("/")
    return rv, (namespace, name)


def wait_for_rv(store: Store, rv: int) -> None:
    """A list or get asking for a resourceVersion newer than any waits a little, then times out (504)."""
    deadline = time.monotonic() + _TOO_LARGE_WAIT_S
    with store.lock:
        while store.rv < rv:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ApiError(504, "Timeout", f"Timeout: Too large resource version: {rv}, current: {store.rv}",
                               {"causes": [{"reason": "ResourceVersionTooLarge",
                                            "message": "Too large resource version"}],
                                "retryAfterSeconds": 1})
            store.lock.release()
            try:
                time.sleep(min(left, 0.05))
            finally:
                store.lock.acquire()


def list_objects(store: Store, key: ResourceKey, namespace: str, query: dict[str, str],
                 field_selectors: dict[str, Callable[[dict[str, Any]], str]]
                 ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The selected objects, sorted by namespace/name as etcd returns them, and the list metadata."""
    selection = make_filter(namespace, query, field_selectors)
    rv_text = query.get("resourceVersion", "")
    match = query.get("resourceVersionMatch", "")
    token = query.get("continue", "")
    limit = parse_rv(query["limit"], "limit") if query.get("limit") else 0
    if match not in ("", "Exact", "NotOlderThan"):
        raise ApiError(422, "Invalid", f'resourceVersionMatch: Unsupported value: "{match}": supported values: '
                       '"Exact", "NotOlderThan"')
    if match and not rv_text:
        raise ApiError(422, "Invalid", "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden "
                       "unless resourceVersion is provided")
    if token and rv_text:
        raise ApiError(400, "BadRequest", "specifying resource version is not allowed when using continue")
    if match == "Exact" and rv_text == "0":
        raise ApiError(422, "Invalid", 'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is '
                       'forbidden for resourceVersion "0"')
    with store.lock:
        resource = store.resource(key)
        start: ObjectKey | None = None
        if token:
            list_rv, start = decode_continue(token)
            # the real server also offers an inconsistent continuation here; this one does not
            if list_rv < resource.trimmed_rv:
                raise ApiError(410, "Expired", "The provided continue parameter is too old to display a "
                               "consistent list result. You can start a new list without the continue parameter.")
            state = resource.state_at(list_rv)
        elif match == "Exact":
            list_rv = parse_rv(rv_text)
            if list_rv > store.rv:
                wait_for_rv(store, list_rv)
            if list_rv < resource.trimmed_rv:
                raise expired("The resourceVersion for the provided list is too old.")
            state = resource.state_at(list_rv)
        else:
            if rv_text and rv_text != "0":
                wanted = parse_rv(rv_text)
                if wanted > store.rv:
                    wait_for_rv(store, wanted)
            elif rv_text == "0":
                limit = 0         # served from the watch cache, which does not paginate
            list_rv = store.rv
            state = resource.objects
        name = selection.fields.exact_name()
        if name is not None:
            keys = [k for k in ((namespace, name),) if k in state] if namespace else \
                sorted(k for k in state if k[1] == name)
        else:
            keys = sorted(state)
        if start is not None:
            keys = [k for k in keys if k > start]
        items: list[dict[str, Any]] = []
        metadata: dict[str, Any] = {"resourceVersion": str(list_rv)}
        last: ObjectKey | None = None
        for position, okey in enumerate(keys):
            obj = state[okey]
            if not selection.matches(obj):
                continue
            if limit and len(items) == limit and last is not None:
                metadata["continue"] = encode_continue(list_rv, last)
                if selection.labels.empty and selection.fields.empty:
                    metadata["remainingItemCount"] = len(keys) - position
                break
            items.append(obj)
            last = okey
        return items, metadata
