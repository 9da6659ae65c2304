"""Termination messages: what a container writes to its terminationMessagePath (default
/dev/termination-log, a file the node provides in the pod's mount namespace) becomes its terminated
state's message, at most 4096 bytes; with FallbackToLogsOnError a failed container that wrote none
reports the last 80 lines of its log, at most 2048 bytes."""

from __future__ import annotations

import os
from typing import Any

import pytest
from test_node_pods import FakeApi, context, make_pod, start  # noqa: F401 (fixture)

from k8s.devcluster import netns
from k8s.devcluster.node_pod import NodeContext
from k8s.devcluster.node_termination import log_tail, termination_message

mount_refusal = netns.probe_mount_namespaces()
needs_mounts = pytest.mark.skipif(bool(mount_refusal), reason=f"no mount namespaces here: {mount_refusal}")


def run_to_end(context: NodeContext, name: str, container: dict[str, Any]) -> dict[str, Any]:
    worker, api = start(context, make_pod(name, [dict({"name": "main", "image": "x"}, **container)]))
    api.wait("the pod's end", lambda: api.phase() in ("Succeeded", "Failed"))
    return api.container()["state"]["terminated"]


@needs_mounts
def test_default_path_message_is_reported_and_dev_still_works(context: NodeContext) -> None:
    script = ("test -c /dev/null && test -d /dev/pts && test -d /dev/shm || exit 9; "
              "printf 'all done: 42 results' > /dev/termination-log")
    terminated = run_to_end(context, "msg", {"command": ["sh", "-c", script]})
    assert terminated["exitCode"] == 0 and terminated["message"] == "all done: 42 results"
    assert not os.path.exists("/dev/termination-log"), "the message file leaked to the host"


@needs_mounts
def test_custom_path_and_a_failed_container(context: NodeContext) -> None:
    terminated = run_to_end(context, "custom", {
        "command": ["sh", "-c", "echo 'bad key: workers' > /var/log/fiber-why; echo noise; exit 3"],
        "terminationMessagePath": "/var/log/fiber-why", "terminationMessagePolicy": "FallbackToLogsOnError"})
    assert terminated["exitCode"] == 3 and terminated["message"] == "bad key: workers\n"


@needs_mounts
def test_message_is_cut_at_4096_bytes(context: NodeContext) -> None:
    terminated = run_to_end(context, "long", {"command": ["sh", "-c", "head -c 6000 /dev/zero | tr '\\0' x "
                                                                     "> /dev/termination-log"]})
    assert terminated["message"] == "x" * 4096


def test_fallback_to_logs_on_error_gives_the_log_tail(context: NodeContext) -> None:
    script = "for i in $(seq 1 120); do echo line $i; done; exit 2"
    terminated = run_to_end(context, "fallback", {"command": ["sh", "-c", script],
                                                  "terminationMessagePolicy": "FallbackToLogsOnError"})
    assert terminated["exitCode"] == 2
    assert terminated["message"].splitlines() == [f"line {i}" for i in range(41, 121)]


def test_fallback_only_on_failure_and_not_under_file_policy(context: NodeContext) -> None:
    ok = run_to_end(context, "fine", {"command": ["sh", "-c", "echo fine"],
                                      "terminationMessagePolicy": "FallbackToLogsOnError"})
    assert ok["exitCode"] == 0 and "message" not in ok
    failed = run_to_end(context, "plain", {"command": ["sh", "-c", "echo oops; exit 1"]})
    assert failed["exitCode"] == 1 and "message" not in failed


def test_log_tail_keeps_at_most_2048_bytes(tmp_path: Any) -> None:
    log = tmp_path / "main.log"
    log.write_text("".join(f"{i:04d}" + "y" * 95 + "\n" for i in range(60)))   # 100-byte lines
    tail = log_tail(str(log))
    assert len(tail.encode()) <= 2048 and tail.endswith("0059" + "y" * 95 + "\n")
    assert termination_message(str(tmp_path / "missing"), "FallbackToLogsOnError", 1, str(log)) == tail
    assert termination_message("", "File", 1, str(log)) == ""


@needs_mounts
def test_a_path_that_cannot_be_provided_costs_the_message_not_the_container(context: NodeContext) -> None:
    terminated = run_to_end(context, "toplevel", {"command": ["sh", "-c", "echo fine"],
                                                  "terminationMessagePath": "/fiber-no-such-top-level-log"})
    assert terminated["exitCode"] == 0 and "message" not in terminated
    assert not os.path.exists("/fiber-no-such-top-level-log")
