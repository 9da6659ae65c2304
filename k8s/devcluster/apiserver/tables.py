"""meta.k8s.io/v1 Table answers (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`), with the
columns and cells kube-apiserver's printers give: a CRD's additionalPrinterColumns for custom
resources, the built-in printers for pods, nodes, services, endpoints, events, namespaces,
leases, configmaps, secrets, service accounts, resource quotas and RBAC objects, and Name +
Created At for the rest."""

from __future__ import annotations

import datetime
from typing import Any, Callable

from jsonpath_ng.ext import parse as parse_jsonpath

from .errors import ApiError
from .resource_info import ResourceInfo
from .schema import go_plain, go_quote

Row = list[Any]
Column = dict[str, Any]
NAME_DESCRIPTION = ("Name of the object, unique within its namespace (or the cluster for cluster "
                    "objects).")
AGE_DESCRIPTION = "Time since the object was created (its metadata.creationTimestamp)."
CREATED_AT_DESCRIPTION = "When the object was created (its metadata.creationTimestamp)."
INCLUDE_OBJECT_POLICIES = ("Metadata", "Object", "None")


def column(name: str, kind: str = "string", description: str = "", priority: int = 0,
           fmt: str = "") -> Column:
    return {"name": name, "type": kind, "format": fmt, "description": description,
            "priority": priority}


NAME_COLUMN = column("Name", "string", NAME_DESCRIPTION, fmt="name")
AGE_COLUMN = column("Age", "string", AGE_DESCRIPTION)


# ---------------------------------------------------------------- time as the printers show it

def parse_time(text: Any) -> datetime.datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def human_duration(seconds: float) -> str:
    """kubectl's and the server's short age: 45s, 3m20s, 15m, 5h10m, 3d4h, 400d, 2y30d."""
    total = int(seconds)
    if total < -1:
        return "<invalid>"
    if total < 0:
        return "0s"
    if total < 120:
        return f"{total}s"
    minutes = total // 60
    if minutes < 10:
        rest = total % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = total // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rest = (hours // 24) % 365
        return f"{hours // 24 // 365}y{rest}d" if rest else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def age(timestamp: Any, now: datetime.datetime) -> str:
    moment = parse_time(timestamp)
    if moment is None:
        return "<unknown>"
    return human_duration((now - moment).total_seconds())


def meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def created(obj: dict[str, Any], now: datetime.datetime) -> str:
    return age(meta(obj).get("creationTimestamp"), now)


# ---------------------------------------------------------------- custom resources

def crd_printer_columns(info: ResourceInfo) -> list[dict[str, Any]]:
    for version in ((info.crd or {}).get("spec") or {}).get("versions") or []:
        if version.get("name") == info.version:
            return version.get("additionalPrinterColumns") or []
    return []


def json_cell(kind: str, value: Any, now: datetime.datetime) -> Any:
    """A printer-column value as the server converts it: strings printed as Go prints the value
    (lists `[a b]`, maps `map[k:v]`), integers truncated from numbers, numbers as floats, dates
    as ages (45s, 3m20s); a value of another type is a null cell."""
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "string":
        return value if isinstance(value, str) else go_plain(value)
    if kind == "integer":
        return int(value) if numeric else None
    if kind == "number":
        return float(value) if numeric else None
    if kind == "boolean":
        return value if isinstance(value, bool) else None
    if kind == "date" and isinstance(value, str):
        return age(value, now) if parse_time(value) is not None else "<invalid>"
    return None


def custom_columns(info: ResourceInfo, now: datetime.datetime
                   ) -> tuple[list[Column], list[Callable[[dict[str, Any]], Any]]]:
    """Name and the CRD's printer columns, or Name and Created At (the RFC 3339 timestamp) when
    it declares none."""
    columns = [NAME_COLUMN]
    cells: list[Callable[[dict[str, Any]], Any]] = [lambda obj: meta(obj).get("name", "")]
    printer_columns = crd_printer_columns(info)
    if not printer_columns:
        columns.append(column("Created At", "date", CREATED_AT_DESCRIPTION))
        cells.append(lambda obj: meta(obj).get("creationTimestamp"))
        return columns, cells
    for printer in printer_columns:
        path = printer.get("jsonPath", "")
        try:
            expression = parse_jsonpath("$" + path if path.startswith(".") else path)
        except Exception as error:  # noqa: BLE001 - a bad CRD column is the server's 500
            raise ApiError(500, "InternalError",
                           f"unrecognized column definition {path!r}: {error}") from error
        kind = printer.get("type", "string")
        columns.append(column(printer.get("name", ""), kind, printer.get("description", ""),
                              printer.get("priority", 0), printer.get("format", "")))
        cells.append(lambda obj, e=expression, k=kind: first_match(e, obj, k, now))
    return columns, cells


def first_match(expression: Any, obj: dict[str, Any], kind: str, now: datetime.datetime) -> Any:
    matches = expression.find(obj)
    if not matches or matches[0].value is None:
        return None
    return json_cell(kind, matches[0].value, now)


# ---------------------------------------------------------------- pods

def container_state_reason(status: dict[str, Any]) -> str | None:
    state = status.get("state") or {}
    if (state.get("waiting") or {}).get("reason"):
        return state["waiting"]["reason"]
    terminated = state.get("terminated")
    if terminated is not None:
        if terminated.get("reason"):
            return terminated["reason"]
        if terminated.get("signal"):
            return f"Signal:{terminated['signal']}"
        return f"ExitCode:{terminated.get('exitCode', 0)}"
    return None


def init_status(pod: dict[str, Any]) -> str | None:
    """Init:N/M, Init:<reason> while init containers run; None once they are done."""
    spec_inits = (pod.get("spec") or {}).get("initContainers") or []
    statuses = (pod.get("status") or {}).get("initContainerStatuses") or []
    for index, status in enumerate(statuses):
        state = status.get("state") or {}
        terminated = state.get("terminated")
        if terminated is not None and terminated.get("exitCode", 0) == 0:
            continue
        if terminated is not None:
            if terminated.get("reason"):
                return f"Init:{terminated['reason']}"
            if terminated.get("signal"):
                return f"Init:Signal:{terminated['signal']}"
            return f"Init:ExitCode:{terminated.get('exitCode')}"
        waiting = state.get("waiting") or {}
        if waiting.get("reason") and waiting["reason"] != "PodInitializing":
            return f"Init:{waiting['reason']}"
        return f"Init:{index}/{len(spec_inits)}"
    return None


def pod_ready(pod: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def pod_status_text(pod: dict[str, Any]) -> str:
    status = pod.get("status") or {}
    reason = status.get("reason") or status.get("phase") or ""
    initializing = init_status(pod)
    if initializing is not None:
        reason = initializing
    else:
        has_running = False
        for container in reversed(status.get("containerStatuses") or []):
            state_reason = container_state_reason(container)
            if state_reason is not None:
                reason = state_reason
            elif "running" in (container.get("state") or {}) and container.get("ready"):
                has_running = True
        if reason == "Completed" and has_running:
            reason = "Running" if pod_ready(pod) else "NotReady"
    if meta(pod).get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    return reason


def pod_restarts(pod: dict[str, Any], now: datetime.datetime) -> str:
    restarts = 0
    last: datetime.datetime | None = None
    for container in (pod.get("status") or {}).get("containerStatuses") or []:
        restarts += container.get("restartCount", 0)
        finished = parse_time(((container.get("lastState") or {}).get("terminated") or {})
                              .get("finishedAt"))
        if finished is not None and (last is None or finished > last):
            last = finished
    if restarts and last is not None:
        return f"{restarts} ({human_duration((now - last).total_seconds())} ago)"
    return str(restarts)


def pod_row(pod: dict[str, Any], now: datetime.datetime) -> Row:
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    total = len(spec.get("containers") or [])
    ready = sum(1 for c in status.get("containerStatuses") or [] if c.get("ready"))
    gates = spec.get("readinessGates") or []
    gates_text = "<none>"
    if gates:
        true_types = {c.get("type") for c in status.get("conditions") or []
                      if c.get("status") == "True"}
        gates_text = f"{sum(1 for g in gates if g.get('conditionType') in true_types)}/{len(gates)}"
    return [meta(pod).get("name", ""), f"{ready}/{total}", pod_status_text(pod),
            pod_restarts(pod, now), created(pod, now), status.get("podIP") or "<none>",
            spec.get("nodeName") or "<none>", status.get("nominatedNodeName") or "<none>",
            gates_text]


POD_COLUMNS = [
    NAME_COLUMN,
    column("Ready", description="Ready containers out of the pod's containers."),
    column("Status", description="The pod's phase, or why a container of it waits or ended."),
    column("Restarts", description="Container restarts, with the time since the last one."),
    AGE_COLUMN,
    column("IP", description="IP address allocated to the pod.", priority=1),
    column("Node", description="Name of the node the pod is assigned to.", priority=1),
    column("Nominated Node", description="Node the scheduler nominated for the pod when it "
                                         "preempts others.", priority=1),
    column("Readiness Gates", description="Readiness gates met out of those declared.",
           priority=1),
]


# ---------------------------------------------------------------- other built-ins

def node_row(node: dict[str, Any], now: datetime.datetime) -> Row:
    status = node.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    ready = conditions.get("Ready")
    states = ["Ready" if ready == "True" else "NotReady" if ready == "False" else "Unknown"]
    if (node.get("spec") or {}).get("unschedulable"):
        states.append("SchedulingDisabled")
    roles = sorted(label.split("/", 1)[1] for label in meta(node).get("labels") or {}
                   if label.startswith("node-role.kubernetes.io/") and label.split("/", 1)[1])
    addresses = status.get("addresses") or []
    internal = [a.get("address") for a in addresses if a.get("type") == "InternalIP"]
    external = [a.get("address") for a in addresses if a.get("type") == "ExternalIP"]
    info = status.get("nodeInfo") or {}
    return [meta(node).get("name", ""), ",".join(states), ",".join(roles) or "<none>",
            created(node, now), info.get("kubeletVersion", ""), internal[0] if internal else "<none>",
            external[0] if external else "<none>", info.get("osImage") or "<unknown>",
            info.get("kernelVersion") or "<unknown>", info.get("containerRuntimeVersion") or
            "<unknown>"]


NODE_COLUMNS = [
    NAME_COLUMN,
    column("Status", description="Ready, NotReady or Unknown; SchedulingDisabled if cordoned."),
    column("Roles", description="Roles from the node-role.kubernetes.io/ labels."),
    AGE_COLUMN,
    column("Version", description="Version of the node agent."),
    column("Internal-IP", description="The node's first internal address.", priority=1),
    column("External-IP", description="The node's first external address.", priority=1),
    column("OS-Image", description="OS image reported by the node.", priority=1),
    column("Kernel-Version", description="Kernel version reported by the node.", priority=1),
    column("Container-Runtime", description="Container runtime reported by the node.",
           priority=1),
]


def event_source(event: dict[str, Any]) -> str:
    """component[, host], each falling back to the reporting controller and instance."""
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingController") or ""
    host = source.get("host") or event.get("reportingInstance") or ""
    return f"{component}, {host}" if host else component


def event_row(event: dict[str, Any], now: datetime.datetime) -> Row:
    """As kube-apiserver's printEvent: Last Seen is the age of lastTimestamp (firstTimestamp,
    then eventTime, when unset; the series' last observation when it has one), with no
    "(xN over ...)": that suffix is `kubectl events`' own, the count has its wide column."""
    first_seen = age(event.get("firstTimestamp") or event.get("eventTime"), now)
    last_seen = age(event["lastTimestamp"], now) if event.get("lastTimestamp") else first_seen
    series = event.get("series")
    count = event.get("count") or 1
    if series is not None:
        last_seen = age(series.get("lastObservedTime"), now)
        count = series.get("count") or 0
    involved = event.get("involvedObject") or {}
    kind = str(involved.get("kind", "")).lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    return [last_seen, event.get("type", ""), event.get("reason", ""), target,
            involved.get("fieldPath", ""), event_source(event),
            str(event.get("message") or "").strip(), first_seen, count,
            meta(event).get("name", "")]


EVENT_COLUMNS = [
    column("Last Seen", description="Time since the event was last seen."),
    column("Type", description="Type of this event (Normal, Warning)."),
    column("Reason", description="Why the event happened, in one word."),
    column("Object", description="The object this event is about."),
    column("Subobject", description="The part of the object this event is about.", priority=1),
    column("Source", description="The component that reported this event.", priority=1),
    column("Message", description="What happened, for people."),
    column("First Seen", description="Time since the event was first seen.", priority=1),
    column("Count", description="How often it happened.", priority=1),
    column("Name", description=NAME_DESCRIPTION, priority=1, fmt="name"),
]


def created_at_row(obj: dict[str, Any], _now: datetime.datetime) -> Row:
    return [meta(obj).get("name", ""), meta(obj).get("creationTimestamp")]


RESOURCE_QUOTA_COLUMNS = [
    NAME_COLUMN, AGE_COLUMN,
    column("Request", description="Request represents a minimum amount of cpu/memory that a container may "
           "consume."),
    column("Limit", description="Limits control the maximum amount of cpu/memory that a container may use "
           "independent of contention on the node."),
]


def resource_quota_row(obj: dict[str, Any], now: datetime.datetime) -> Row:
    """`used/hard` of each resource the quota limits, the limits.* ones in the Limit column."""
    status = obj.get("status") or {}
    used, hard = status.get("used") or {}, status.get("hard") or {}
    columns: dict[bool, list[str]] = {False: [], True: []}
    for resource in sorted((obj.get("spec") or {}).get("hard") or {}):
        columns[resource.split(".")[0] == "limits" and "." in resource].append(
            f"{resource}: {used.get(resource, '0')}/{hard.get(resource, '0')}")
    return [meta(obj).get("name", ""), created(obj, now), ", ".join(columns[False]), ", ".join(columns[True])]


# The kinds whose tables the project's commands print (kubectl get pods, nodes, events, quota);
# every other kind gets the server's default table (Name, Created At).
BUILTIN_PRINTERS: dict[tuple[str, str], tuple[list[Column], Callable[..., Row]]] = {
    ("", "pods"): (POD_COLUMNS, pod_row),
    ("", "nodes"): (NODE_COLUMNS, node_row),
    ("", "events"): (EVENT_COLUMNS, event_row),
    ("", "resourcequotas"): (RESOURCE_QUOTA_COLUMNS, resource_quota_row),
}


def default_columns() -> tuple[list[Column], Callable[..., Row]]:
    """Name and Created At (the RFC 3339 timestamp, as the server's default table has it)."""
    return [NAME_COLUMN, column("Created At", "date", CREATED_AT_DESCRIPTION)], created_at_row


# ---------------------------------------------------------------- the table

def include_object_policy(value: str) -> str:
    """The includeObject policy of a Table request, Metadata when empty. The server validates the
    TableOptions before it lists or starts a watch, so a bad value is a 400 even when no row
    would carry an object; the wording is its ValidateTableOptions field error."""
    if value and value not in INCLUDE_OBJECT_POLICIES:
        raise ApiError(400, "BadRequest", "Unable to convert to Table as requested: includeObject: "
                       f"Invalid value: {go_quote(value)}: must be 'Metadata', 'Object', 'None', "
                       "or empty")
    return value or "Metadata"


def row_object(info: ResourceInfo, obj: dict[str, Any], policy: str) -> dict[str, Any] | None:
    """What a row carries: with Object the whole object converted to the requested version, so
    with its kind and apiVersion even where a typed list's items have none (kubectl decodes
    these objects to sort rows by --sort-by and refuses one without a kind); with Metadata a
    meta.k8s.io/v1 PartialObjectMetadata of its full metadata; with None nothing."""
    if policy == "None":
        return None
    if policy == "Object":
        body = {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
        return {"kind": info.kind, "apiVersion": info.api_version, **body}
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": meta(obj)}


def to_table(info: ResourceInfo, objects: list[dict[str, Any]], *, include_object: str,
             list_metadata: dict[str, Any], now: datetime.datetime | None = None) -> dict[str, Any]:
    """The Table for `objects` of `info` (one object for a get). `include_object` is the
    includeObject parameter (Metadata when empty); a bad value is a 400 as on the server."""
    policy = include_object_policy(include_object)
    moment = now or datetime.datetime.now(datetime.timezone.utc)
    if info.crd is not None:
        columns, cell_fns = custom_columns(info, moment)
        rows_cells = [[fn(obj) for fn in cell_fns] for obj in objects]
    else:
        columns, row_fn = BUILTIN_PRINTERS.get((info.group, info.plural), default_columns())
        rows_cells = [row_fn(obj, moment) for obj in objects]
    rows = []
    for obj, cells in zip(objects, rows_cells):
        row: dict[str, Any] = {"cells": cells}
        attached = row_object(info, obj, policy)
        if attached is not None:
            row["object"] = attached
        rows.append(row)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": dict(list_metadata),
            "columnDefinitions": columns, "rows": rows}
