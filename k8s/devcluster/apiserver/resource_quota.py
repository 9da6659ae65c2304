"""ResourceQuota (core/v1) for pods: the kind's storage rules (status kept apart, quantities
canonical, names and values validated), what a pod uses (kube's pod quota evaluator), the
ResourceQuota admission of a pod create, and the status the quota controller reports.

Tracked are the pod evaluator's resources: `pods`, `count/pods`, `cpu`, `memory`, `ephemeral-storage`,
their `requests.`/`limits.` forms, hugepages and `requests.<extended resource>`. A quota holding
`cpu`, `memory`, `requests.cpu|memory` or `limits.cpu|memory` needs every container to state that
resource. Other names (services, configmaps, count/<other>, ...) are stored but neither counted nor
enforced."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Iterable

from .errors import ApiError
from .quantities import Quantity, quantity_error
from .selectors import label_selector_matches
from .strategies import Strategy
from .validation import Cause, invalid, label_key_errors

if TYPE_CHECKING:
    from .api import Api
    from .resource_info import ResourceInfo

Usage = dict[str, Quantity]

# the pod quota evaluator's resources (pkg/quota/v1/evaluator/core/pods.go)
POD_RESOURCES = frozenset({
    "count/pods", "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods"})
# a quota on these makes every container state them (kept, as the evaluator says, for compatibility)
_MUST_SPECIFY = ("cpu", "limits.cpu", "limits.memory", "memory", "requests.cpu", "requests.memory")
_STANDARD_QUOTA = POD_RESOURCES - {"count/pods"} | {
    "requests.storage", "resourcequotas", "services", "replicationcontrollers", "secrets",
    "persistentvolumeclaims", "configmaps", "services.nodeports", "services.loadbalancers"}
_STANDARD = _STANDARD_QUOTA | {"storage"}
_INTEGER = frozenset({"pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
                      "persistentvolumeclaims", "services.nodeports", "services.loadbalancers"})


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _hugepages(name: str) -> bool:
    return name.startswith(("hugepages-", "requests.hugepages-"))


def _native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _extended(name: str) -> bool:
    """An extended resource a container may request (example.com/gpu)."""
    return not _native(name) and not name.startswith("requests.") and not label_key_errors("requests." + name)


def pod_resources(names: Iterable[str]) -> list[str]:
    """The names among `names` that the pod evaluator tracks."""
    return sorted(n for n in names if n in POD_RESOURCES or _hugepages(n)
                  or (not _native(n) and n.startswith("requests.")))


# ---- usage ----------------------------------------------------------------------------------------

def _quantities(resources: Any) -> Usage:
    listed = {}
    for name, text in _dict(resources).items():
        try:
            listed[name] = Quantity.parse(text)
        except ValueError:
            continue
    return listed


def add(left: Usage, right: Usage) -> Usage:
    """quota.Add: the sum of two resource lists."""
    total = dict(left)
    for name, quantity in right.items():
        total[name] = total[name] + quantity if name in total else quantity
    return total


def _maximum(left: Usage, right: Usage) -> Usage:
    highest = dict(left)
    for name, quantity in right.items():
        if name not in highest or quantity.value > highest[name].value:
            highest[name] = quantity
    return highest


def _pod_total(spec: dict[str, Any], field: str) -> Usage:
    """PodRequests / PodLimits: the containers' sum, or the largest init container's need (sidecars,
    init containers that keep running, count with the containers), plus the pod's overhead."""
    total: Usage = {}
    for container in spec.get("containers") or []:
        total = add(total, _quantities(_dict(_dict(container).get("resources")).get(field)))
    sidecars: Usage = {}
    init_peak: Usage = {}
    for container in spec.get("initContainers") or []:
        own = _quantities(_dict(_dict(container).get("resources")).get(field))
        if _dict(container).get("restartPolicy") == "Always":
            total = add(total, own)
            sidecars = add(sidecars, own)
            need = sidecars
        else:
            need = add(own, sidecars)
        init_peak = _maximum(init_peak, need)
    total = _maximum(total, init_peak)
    overhead = _quantities(spec.get("overhead"))
    if field == "requests":
        return add(total, overhead)
    return {name: q + overhead[name] if name in overhead else q for name, q in total.items()}


def _compute_usage(requests: Usage, limits: Usage) -> Usage:
    """podComputeUsageHelper: what requests and limits charge to quota names."""
    usage = {"pods": Quantity.parse(1)}
    for resource in ("cpu", "memory", "ephemeral-storage"):
        if resource in requests:
            usage[resource] = usage[f"requests.{resource}"] = requests[resource]
        if resource in limits:
            usage[f"limits.{resource}"] = limits[resource]
    for name, quantity in requests.items():
        if name.startswith("hugepages-"):
            usage[name] = usage[f"requests.{name}"] = quantity
        elif _extended(name):
            usage[f"requests.{name}"] = quantity
    return usage


def _rfc3339_seconds(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def counts_against_quota(pod: dict[str, Any], now: float) -> bool:
    """Terminal pods (Succeeded, Failed) and pods whose deletion grace ran out no longer count."""
    if _dict(pod.get("status")).get("phase") in ("Succeeded", "Failed"):
        return False
    meta = _dict(pod.get("metadata"))
    deletion, grace = meta.get("deletionTimestamp"), meta.get("deletionGracePeriodSeconds")
    return not (deletion and grace is not None and now > _rfc3339_seconds(deletion) + grace)


def pod_usage(pod: dict[str, Any], now: float) -> Usage:
    usage = {"count/pods": Quantity.parse(1)}
    if not counts_against_quota(pod, now):
        return usage
    spec = _dict(pod.get("spec"))
    return add(usage, _compute_usage(_pod_total(spec, "requests"), _pod_total(spec, "limits")))


# ---- scopes ----------------------------------------------------------------------------------------

def _best_effort(spec: dict[str, Any]) -> bool:
    return not any(_dict(_dict(c).get("resources")).get(field) for group in ("initContainers", "containers")
                   for c in spec.get(group) or [] for field in ("requests", "limits"))


def _cross_namespace_affinity(spec: dict[str, Any]) -> bool:
    affinity = _dict(spec.get("affinity"))
    for kind in ("podAffinity", "podAntiAffinity"):
        part = _dict(affinity.get(kind))
        terms = list(part.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
        preferred = part.get("preferredDuringSchedulingIgnoredDuringExecution") or []
        terms += [_dict(t).get("podAffinityTerm") for t in preferred]
        if any(_dict(t).get("namespaces") or _dict(t).get("namespaceSelector") is not None for t in terms):
            return True
    return False


def _scope_selectors(quota: dict[str, Any]) -> list[dict[str, Any]]:
    spec = _dict(quota.get("spec"))
    selectors = [{"scopeName": scope, "operator": "Exists"} for scope in spec.get("scopes") or []]
    return selectors + list(_dict(spec.get("scopeSelector")).get("matchExpressions") or [])


def _matches_scope(selector: dict[str, Any], pod: dict[str, Any]) -> bool:
    spec = _dict(pod.get("spec"))
    scope = selector.get("scopeName")
    deadline = spec.get("activeDeadlineSeconds")
    terminating = isinstance(deadline, int) and deadline >= 0
    if scope == "Terminating":
        return terminating
    if scope == "NotTerminating":
        return not terminating
    if scope == "BestEffort":
        return _best_effort(spec)
    if scope == "NotBestEffort":
        return not _best_effort(spec)
    if scope == "CrossNamespacePodAffinity":
        return _cross_namespace_affinity(spec)
    if scope == "PriorityClass":
        name = spec.get("priorityClassName") or ""
        expression = {"key": "PriorityClass", "operator": selector.get("operator"),
                      "values": selector.get("values") or []}
        return label_selector_matches({"matchExpressions": [expression]}, {"PriorityClass": name} if name else {})
    return False


def quota_applies(quota: dict[str, Any], pod: dict[str, Any]) -> bool:
    """The quota's scopes all select the pod and it limits a resource pods use."""
    return bool(pod_resources(_dict(_dict(quota.get("spec")).get("hard")))) and \
        all(_matches_scope(s, pod) for s in _scope_selectors(quota))


def quota_usage(quota: dict[str, Any], pods: list[dict[str, Any]], now: float) -> Usage:
    """What the pods the quota selects use of each pod resource it limits (zero when none do), summed
    the way the quota controller sums them."""
    tracked = pod_resources(_dict(_dict(quota.get("spec")).get("hard")))
    used = {name: Quantity() for name in tracked}
    for pod in pods:
        if all(_matches_scope(s, pod) for s in _scope_selectors(quota)):
            used = add(used, pod_usage(pod, now))
    # the controller stores the sum, so it is read back as its canonical string says
    return {name: Quantity.parse(str(used[name])) for name in tracked}


def quota_status(quota: dict[str, Any], pods: list[dict[str, Any]], now: float) -> dict[str, Any]:
    """status.hard (the spec's) and status.used (the tracked resources') as the controller writes them."""
    hard = dict(_dict(_dict(quota.get("spec")).get("hard")))
    previous = _dict(_dict(quota.get("status")).get("used"))
    used = {name: value for name, value in previous.items() if name in hard and not pod_resources([name])}
    used.update({name: str(q) for name, q in quota_usage(quota, pods, now).items()})
    return {"hard": hard, "used": dict(sorted(used.items()))}


# ---- admission --------------------------------------------------------------------------------------

def _forbidden(pod_name: str, why: str) -> ApiError:
    return ApiError(403, "Forbidden", f'pods "{pod_name}" is forbidden: {why}', {"name": pod_name, "kind": "pods"})


def _missing_requests(pod: dict[str, Any], required: list[str]) -> str:
    """`must specify limits.cpu for: a,b; requests.cpu for: a` for the containers that leave out a
    resource the quota requires ("" when none do)."""
    wanted = [name for name in required if name in _MUST_SPECIFY]
    missing: dict[str, set[str]] = {}
    spec = _dict(pod.get("spec"))
    for container in [_dict(c) for group in ("containers", "initContainers") for c in spec.get(group) or []]:
        resources = _dict(container.get("resources"))
        stated = _compute_usage(_quantities(resources.get("requests")), _quantities(resources.get("limits")))
        for name in wanted:
            if name not in stated:
                missing.setdefault(name, set()).add(str(container.get("name", "")))
    if not missing:
        return ""
    return "must specify " + "; ".join(f"{name} for: {','.join(sorted(missing[name]))}" for name in sorted(missing))


def _listed(usage: Usage, names: Iterable[str]) -> str:
    return ",".join(f"{name}={usage[name]}" for name in sorted(names) if name in usage)


def admit_pod(quotas: list[dict[str, Any]], pods: list[dict[str, Any]], pod: dict[str, Any], now: float) -> None:
    """The ResourceQuota admission of a pod create: every quota of the namespace that applies must be
    stated (requests) and must not be exceeded; `pods` are the namespace's other pods."""
    name = str(_dict(pod.get("metadata")).get("name", ""))
    applying = []
    for quota in sorted(quotas, key=lambda q: q["metadata"]["name"]):
        if not quota_applies(quota, pod):
            continue
        required = pod_resources(_dict(_dict(quota.get("spec")).get("hard")))
        missing = _missing_requests(pod, required)
        if missing:
            raise _forbidden(name, f"failed quota: {quota['metadata']['name']}: {missing}")
        applying.append(quota)
    requested_all = {k: q for k, q in pod_usage(pod, now).items() if q.value != 0}
    for quota in applying:
        hard = _quantities(_dict(quota.get("spec")).get("hard"))
        requested = {k: q for k, q in requested_all.items() if k in hard}
        used = quota_usage(quota, pods, now)
        total = add(used, requested)
        exceeded = [k for k in requested if total[k].value > hard[k].value]
        if exceeded:
            raise _forbidden(name, f"exceeded quota: {quota['metadata']['name']}, requested: "
                             f"{_listed(requested, exceeded)}, used: {_listed(used, exceeded)}, limited: "
                             f"{_listed(hard, exceeded)}")


# ---- the kind ------------------------------------------------------------------------------------------

def _canonical_list(resources: Any, kind: str = "ResourceQuota") -> dict[str, str]:
    if resources is None:
        return {}
    if not isinstance(resources, dict):
        raise ApiError(400, "BadRequest", quantity_error(kind))
    try:
        return {name: str(Quantity.parse(text)) for name, text in resources.items()}
    except ValueError:
        raise ApiError(400, "BadRequest", quantity_error(kind)) from None


def _canonicalize(obj: dict[str, Any]) -> None:
    """Quantities as the real server stores them (it decodes and re-encodes them: `1000m` -> `1`)."""
    spec = obj.get("spec")
    if isinstance(spec, dict) and "hard" in spec:
        spec["hard"] = _canonical_list(spec["hard"])
    status = obj.get("status")
    if isinstance(status, dict):
        for part in ("hard", "used"):
            if part in status:
                status[part] = _canonical_list(status[part])


class ResourceQuotaStrategy(Strategy):
    def prepare_create(self, api: Api, info: ResourceInfo, obj: dict[str, Any]) -> None:
        obj["status"] = {}
        obj.setdefault("spec", {})
        _canonicalize(obj)

    def prepare_update(self, api: Api, info: ResourceInfo, obj: dict[str, Any], old: dict[str, Any]) -> None:
        _canonicalize(obj)

    def validate(self, api: Api, info: ResourceInfo, obj: dict[str, Any],
                 old: dict[str, Any] | None) -> list[Cause]:
        spec = _dict(obj.get("spec"))
        causes: list[Cause] = []
        for name, text in _dict(spec.get("hard")).items():
            causes += _resource_name_errors(f"spec.hard[{name}]", name)
            quantity = Quantity.parse(text)
            if quantity.value < 0:
                causes.append(invalid(f"spec.hard[{name}]", str(quantity), "must be greater than or equal to 0"))
            if (name in _INTEGER or _extended(name)) and quantity.value.denominator != 1:
                causes.append(invalid(f"spec.hard[{name}]", str(quantity), "must be an integer"))
        return causes


def _resource_name_errors(path: str, name: str) -> list[Cause]:
    """A quota's resource name: qualified, and standard unless it has a domain."""
    causes = [invalid(path, name, e) for e in label_key_errors(name)]
    if causes or "/" in name:
        return causes
    if name not in _STANDARD and not _hugepages(name):
        causes.append(invalid(path, name, "must be a standard resource type or fully qualified"))
    if name not in _STANDARD_QUOTA and not _hugepages(name):
        causes.append(invalid(path, name, "must be a standard resource for quota"))
    return causes
