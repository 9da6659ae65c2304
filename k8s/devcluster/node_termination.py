"""Container termination messages, as the kubelet reports them in a terminated state's `message`:
what the container wrote to its terminationMessagePath (a file the node provides in the pod's mount
namespace, /dev/termination-log by default), or, with terminationMessagePolicy
FallbackToLogsOnError, the tail of its log when it failed without writing one."""

from __future__ import annotations

import os

DEFAULT_PATH = "/dev/termination-log"
FILE_POLICY = "File"
FALLBACK_POLICY = "FallbackToLogsOnError"
MAX_MESSAGE_BYTES = 4096          # what the kubelet keeps of the file
FALLBACK_LINES = 80               # what it keeps of the log
FALLBACK_BYTES = 2048


def read_tail(path: str, limit: int) -> bytes:
    """The last `limit` bytes of a file (empty when it is missing)."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - limit))
            return handle.read()
    except OSError:
        return b""


def log_tail(log_path: str) -> str:
    """The log's last 80 lines, at most its last 2048 bytes."""
    tail = read_tail(log_path, FALLBACK_BYTES)
    lines = tail.splitlines(keepends=True)[-FALLBACK_LINES:]
    return b"".join(lines).decode("utf-8", errors="replace")


def termination_message(message_file: str, policy: str, exit_code: int, log_path: str) -> str:
    """The message of a run that ended with exit_code: the file's content (its first 4096 bytes),
    else, under FallbackToLogsOnError and a non-zero exit, the log's tail; else empty."""
    message = b""
    if message_file:
        try:
            with open(message_file, "rb") as handle:
                message = handle.read(MAX_MESSAGE_BYTES)
        except OSError:
            message = b""
    if message:
        return message.decode("utf-8", errors="replace")
    if policy == FALLBACK_POLICY and exit_code != 0:
        return log_tail(log_path)
    return ""
