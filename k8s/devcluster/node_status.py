"""What a node reports of a pod: each container's state record across its runs, and the pod's
status fields built from them as the kubelet words them (container states, conditions with
transition times that change only with their status)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .kube import JSON
from .node_probes import ProbeState
from .node_process import ContainerProcess, now_rfc3339


@dataclass
class ContainerSlot:
    """What the node knows of one container of the pod across its runs."""

    spec: JSON
    init: bool
    restart_count: int = 0
    current: ContainerProcess | None = None
    last: ContainerProcess | None = None
    waiting_reason: str = "ContainerCreating"
    waiting_message: str = ""
    next_start: float = 0.0
    done: bool = False                # ended and will not run again
    probes: dict[str, ProbeState] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    kill_deadline: float = 0.0        # a probe asked for its end: SIGKILL when this passes
    pull_failures: int = 0            # failed "pulls" of its local image in a row
    image_id: str = ""                # the local image's host directory, once mounted

    @property
    def started(self) -> bool:
        """Running, and past its startup probe if it has one."""
        startup = self.probes.get("startupProbe")
        return self.current is not None and (startup is None or startup.passed)

    @property
    def ready(self) -> bool:
        readiness = self.probes.get("readinessProbe")
        return self.started and not self.init and (readiness is None or readiness.passed)

    @property
    def name(self) -> str:
        return self.spec.get("name", "")


class ConditionClock:
    """Pod conditions whose lastTransitionTime moves only when their status does."""

    def __init__(self) -> None:
        self.transitions: dict[str, tuple[str, str]] = {}

    def condition(self, kind: str, status: bool, reason: str = "", message: str = "") -> JSON:
        value = "True" if status else "False"
        previous = self.transitions.get(kind)
        if previous is None or previous[0] != value:
            self.transitions[kind] = (value, now_rfc3339())
        condition: JSON = {"type": kind, "status": value, "lastProbeTime": None,
                           "lastTransitionTime": self.transitions[kind][1]}
        if reason:
            condition["reason"] = reason
        if message:
            condition["message"] = message
        return condition


def container_status(slot: ContainerSlot, pod_uid: str) -> JSON:
    """One entry of containerStatuses / initContainerStatuses."""
    status: JSON = {"name": slot.name, "image": slot.spec.get("image", ""), "imageID": slot.image_id,
                    "ready": slot.ready, "restartCount": slot.restart_count, "started": slot.started}
    if slot.current is not None:
        status["containerID"] = f"devcluster://{pod_uid}/{slot.name}/{slot.restart_count}"
        status["state"] = {"running": {"startedAt": slot.current.started_at}}
    elif slot.done and slot.last is not None:
        status["containerID"] = f"devcluster://{pod_uid}/{slot.name}/{slot.restart_count}"
        terminated = slot.last.terminated_state()
        if slot.waiting_reason in ("NoCommand", "StartError") and terminated["exitCode"] == 128:
            terminated.update(reason=slot.waiting_reason, message=slot.waiting_message)
        status["state"] = {"terminated": terminated}
    else:
        waiting: JSON = {"reason": slot.waiting_reason or "PodInitializing"}
        if slot.waiting_message:
            waiting["message"] = slot.waiting_message
        status["state"] = {"waiting": waiting}
    if slot.last is not None and not (slot.done and slot.current is None):
        status["lastState"] = {"terminated": slot.last.terminated_state()}
    else:
        status["lastState"] = {}
    return status


def pod_conditions(clock: ConditionClock, slots: list[ContainerSlot], phase: str, sandbox_ready: bool,
                   scheduled: JSON | None) -> list[JSON]:
    """PodReadyToStartContainers, Initialized, Ready, ContainersReady and PodScheduled (kept as
    the binding wrote it)."""
    unready = [slot.name for slot in slots if not slot.init and not slot.ready]
    pending_init = [slot.name for slot in slots if slot.init and not slot.done]
    terminal = phase in ("Succeeded", "Failed")
    if terminal:
        ready_reason, ready_message = "PodCompleted", ""
    elif unready:
        ready_reason, ready_message = "ContainersNotReady", f"containers with unready status: [{' '.join(unready)}]"
    else:
        ready_reason = ready_message = ""
    return [
        clock.condition("PodReadyToStartContainers", sandbox_ready and not terminal),
        clock.condition("Initialized", not pending_init, "PodCompleted" if terminal and not pending_init else "",
                        f"containers with incomplete status: [{' '.join(pending_init)}]" if pending_init else ""),
        clock.condition("Ready", not unready, ready_reason, ready_message),
        clock.condition("ContainersReady", not unready, ready_reason, ready_message),
        scheduled or clock.condition("PodScheduled", True),
    ]
