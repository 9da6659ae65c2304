"""Waiting for a condition that something outside the test (a controller, a node, a pod) brings
about: there is nothing to block on, so the check is polled."""
from __future__ import annotations

import time
from typing import Any, Callable


def wait_until(what: str, check: Callable[[], Any], timeout_s: float = 60, interval_s: float = 0.2) -> Any:
    """Returns the first truthy value `check()` gives; raises AssertionError naming `what` and the
    last value seen once `timeout_s` has passed without one."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what} (last: {last!r})")
