"""The node's pod watch: list, watch from the list's resourceVersion with its own field selector,
resume from the last version seen (bookmarks included), relist on 410 Expired, and forget pods
that vanished meanwhile."""

from __future__ import annotations

import logging
import threading
from typing import Any, Iterator

from k8s.devcluster.kube import KubeError
from k8s.devcluster.node import Node


def pod(uid: str, version: str) -> dict[str, Any]:
    return {"metadata": {"name": f"pod-{uid}", "namespace": "default", "uid": uid, "resourceVersion": version}}


class ScriptedApi:
    """Answers lists and watches from a script; records what the node asked for."""

    def __init__(self, node: "RecordingNode"):
        self.node = node
        self.lists = [
            {"metadata": {"resourceVersion": "10"}, "items": [pod("a", "9"), pod("b", "10")]},
            {"metadata": {"resourceVersion": "50"}, "items": [pod("a", "40")]},
        ]
        self.watches: list[tuple[str, str]] = []

    def clone(self) -> "ScriptedApi":
        return self

    def list(self, path: str, field_selector: str = "", **_: Any) -> dict[str, Any]:
        assert path == "/api/v1/pods" and field_selector == "spec.nodeName=node-1"
        return self.lists.pop(0)

    def watch_changes(self, path: str, version: str, field_selector: str = "", **_: Any) -> Iterator[tuple[str, Any]]:
        self.watches.append((version, field_selector))
        if len(self.watches) == 1:
            yield "MODIFIED", pod("a", "11")
            yield "BOOKMARK", {"metadata": {"resourceVersion": "20"}}
        elif len(self.watches) == 2:
            raise KubeError(410, "Expired", "too old resource version: 20 (45)")
        else:
            yield "ADDED", pod("c", "51")
            self.node.stopped.set()


class RecordingNode(Node):
    def __init__(self) -> None:
        self.name = "node-1"
        self.stopped = threading.Event()
        self.lock = threading.Lock()
        self.workers: dict[str, Any] = {"b": object()}
        self.finished: set[str] = set()
        self.seen: list[tuple[str, str]] = []
        self.forgotten: list[str] = []
        self.log = logging.getLogger("test")

    def dispatch(self, item: dict[str, Any]) -> None:
        self.seen.append((item["metadata"]["uid"], item["metadata"]["resourceVersion"]))

    def forget(self, uid: str) -> None:
        self.forgotten.append(uid)


def test_relists_on_410_and_resumes_from_the_last_version() -> None:
    node = RecordingNode()
    api = ScriptedApi(node)
    node.client = api  # type: ignore[assignment]
    thread = threading.Thread(target=node.watch_loop, daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive()
    assert api.watches == [("10", "spec.nodeName=node-1"), ("20", "spec.nodeName=node-1"),
                           ("50", "spec.nodeName=node-1")]
    assert node.seen == [("a", "9"), ("b", "10"), ("a", "11"), ("a", "40"), ("c", "51")]
    assert node.forgotten == ["b"]   # gone from the relist
