"""The PodSecurity admission plugin (kube-apiserver 1.25+): a namespace's `pod-security.kubernetes.io/`
labels choose a Pod Security Standards level per mode; `enforce` refuses a pod that breaks it (403),
`warn` admits it with a Warning header, `audit` is validated but records nothing (no audit log here).

The checks are those of k8s.io/pod-security-admission's policy package as Kubernetes v1.30 (the
version this stand-in reports) resolves `latest`; every `*-version` label is validated and shown in
the messages but evaluated as `latest`. Check order, reasons and details are the real ones: baseline
checks sorted by their id, then the restricted ones, a restricted check replacing the baseline check
it overrides."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

from . import errors
from .errors import ApiError
from .schema import go_quote
from .validation import Cause, invalid

PRIVILEGED, BASELINE, RESTRICTED = "privileged", "baseline", "restricted"
LEVELS = (PRIVILEGED, BASELINE, RESTRICTED)
LABEL_PREFIX = "pod-security.kubernetes.io/"
_VERSION = re.compile(r"v1\.([0-9]|[1-9][0-9]*)")
_MAX_PODS_CHECKED = 3000

Spec = dict[str, Any]
Result = Optional[tuple[str, str]]          # (reason, detail) of a failed check, None when it passes


@dataclass(frozen=True)
class LevelVersion:
    level: str = PRIVILEGED
    version: str = "latest"

    def __str__(self) -> str:
        return f"{self.level}:{self.version}"


@dataclass(frozen=True)
class Policy:
    enforce: LevelVersion = LevelVersion()
    audit: LevelVersion = LevelVersion()
    warn: LevelVersion = LevelVersion()


def namespace_policy(labels: dict[str, str] | None) -> tuple[Policy, list[Cause]]:
    """The policy a namespace's labels choose (privileged:latest where unlabelled) and the label errors.
    An unparsable enforce level enforces restricted; unparsable audit and warn levels fail open."""
    labels = labels or {}
    causes: list[Cause] = []
    modes = {}
    for mode in ("enforce", "audit", "warn"):
        level, version = PRIVILEGED, "latest"
        key = LABEL_PREFIX + mode
        if key in labels:
            level = labels[key]
            if level not in LEVELS:
                causes.append(invalid(f"metadata.labels[{key}]", level, "must be one of " + ", ".join(LEVELS)))
                level = RESTRICTED if mode == "enforce" else PRIVILEGED
        key += "-version"
        if key in labels:
            version = labels[key]
            if version != "latest" and not _VERSION.fullmatch(version):
                causes.append(invalid(f"metadata.labels[{key}]", version, 'must be "latest" or "v1.x"'))
                version = "latest"
        modes[mode] = LevelVersion(level, version)
    return Policy(**modes), causes


# ---- checks -------------------------------------------------------------------------------------

def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _containers(spec: Spec) -> list[dict[str, Any]]:
    """Init containers, containers, ephemeral containers: the order the checks name them in."""
    return [c for group in ("initContainers", "containers", "ephemeralContainers")
            for c in spec.get(group) or [] if isinstance(c, dict)]


def _security_context(container: dict[str, Any]) -> dict[str, Any] | None:
    context = container.get("securityContext")
    return context if isinstance(context, dict) else None


def _pod_context(spec: Spec) -> dict[str, Any]:
    return _dict(spec.get("securityContext"))


def _is_windows(spec: Spec) -> bool:
    return _dict(spec.get("os")).get("name") == "windows"


def _join_quote(items: Iterable[str]) -> str:
    items = list(items)
    return '"' + '", "'.join(items) + '"' if items else ""


def _plural(singular: str, plural: str, count: int) -> str:
    return singular if count == 1 else plural


def _containers_phrase(names: list[str]) -> str:
    return f"{_plural('container', 'containers', len(names))} {_join_quote(names)}"


def _name(container: dict[str, Any]) -> str:
    return str(container.get("name", ""))


def _setters(pod_bad: bool, containers: list[str]) -> list[str]:
    return (["pod"] if pod_bad else []) + ([_containers_phrase(containers)] if containers else [])


def _app_armor_profile(meta: dict[str, Any], spec: Spec) -> Result:
    allowed = ("RuntimeDefault", "Localhost")
    values: set[str] = set()
    pod_profile = _pod_context(spec).get("appArmorProfile")
    pod_bad = isinstance(pod_profile, dict) and pod_profile.get("type") not in allowed
    if pod_bad:
        values.add(str(pod_profile.get("type") or ""))
    containers = []
    for container in _containers(spec):
        profile = _dict(_security_context(container)).get("appArmorProfile")
        if isinstance(profile, dict) and profile.get("type") not in allowed:
            containers.append(_name(container))
            values.add(str(profile.get("type") or ""))
    setters = _setters(pod_bad, containers)
    annotations = sorted(f"{key}={go_quote(str(value))}" for key, value in _dict(meta.get("annotations")).items()
                         if key.startswith("container.apparmor.security.beta.kubernetes.io/")
                         and value not in ("", "runtime/default") and not str(value).startswith("localhost/"))
    if annotations:
        setters.append(_plural("annotation", "annotations", len(annotations)))
    if not setters:
        return None
    bad = sorted(values) + annotations
    return (_plural("forbidden AppArmor profile", "forbidden AppArmor profiles", len(bad)),
            f"{' and '.join(setters)} must not set AppArmor profile type to {_join_quote(bad)}")


_DEFAULT_CAPABILITIES = frozenset({"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                                   "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"})


def _containers_with(spec: Spec, bad_values: Callable[[dict[str, Any]], list[str]]) -> tuple[list[str], set[str]]:
    """The containers for which `bad_values` finds something, and all it found."""
    containers, found = [], set()
    for container in _containers(spec):
        values = bad_values(container)
        if values:
            containers.append(_name(container))
            found.update(values)
    return containers, found


def _capabilities_baseline(meta: dict[str, Any], spec: Spec) -> Result:
    def added(container: dict[str, Any]) -> list[str]:
        capabilities = _dict(_dict(_security_context(container)).get("capabilities"))
        return [str(c) for c in capabilities.get("add") or [] if c not in _DEFAULT_CAPABILITIES]

    containers, capabilities = _containers_with(spec, added)
    if not containers:
        return None
    return ("non-default capabilities", f"{_containers_phrase(containers)} must not include "
            f"{_join_quote(sorted(capabilities))} in securityContext.capabilities.add")


def _host_namespaces(meta: dict[str, Any], spec: Spec) -> Result:
    shared = [f"{field}=true" for field in ("hostNetwork", "hostPID", "hostIPC") if spec.get(field) is True]
    return ("host namespaces", ", ".join(shared)) if shared else None


def _host_path_volumes(meta: dict[str, Any], spec: Spec) -> Result:
    names = [str(v.get("name", "")) for v in spec.get("volumes") or [] if isinstance(v, dict)
             and v.get("hostPath") is not None]
    if not names:
        return None
    return "hostPath volumes", f"{_plural('volume', 'volumes', len(names))} {_join_quote(names)}"


def _host_ports(meta: dict[str, Any], spec: Spec) -> Result:
    def host_ports(container: dict[str, Any]) -> list[str]:
        return [str(p.get("hostPort")) for p in container.get("ports") or [] if isinstance(p, dict)
                and p.get("hostPort") not in (None, 0)]

    containers, ports = _containers_with(spec, host_ports)
    if not containers:
        return None
    return ("hostPort", f"{_containers_phrase(containers)} {_plural('uses', 'use', len(containers))} "
            f"{_plural('hostPort', 'hostPorts', len(ports))} {', '.join(sorted(ports))}")


def _privileged(meta: dict[str, Any], spec: Spec) -> Result:
    containers = [_name(c) for c in _containers(spec) if _dict(_security_context(c)).get("privileged") is True]
    if not containers:
        return None
    return "privileged", f"{_containers_phrase(containers)} must not set securityContext.privileged=true"


def _proc_mount(meta: dict[str, Any], spec: Spec) -> Result:
    def unmasked(container: dict[str, Any]) -> list[str]:
        mount = _dict(_security_context(container)).get("procMount")
        return [str(mount)] if mount is not None and mount != "Default" else []

    containers, types = _containers_with(spec, unmasked)
    if not containers:
        return None
    return ("procMount", f"{_containers_phrase(containers)} must not set securityContext.procMount to "
            f"{_join_quote(sorted(types))}")


_SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t"})


def _se_linux_options(meta: dict[str, Any], spec: Spec) -> Result:
    types: set[str] = set()
    found = {"user": False, "role": False}

    def bad(options: Any) -> bool:
        if not isinstance(options, dict):
            return False
        wrong = False
        if str(options.get("type") or "") not in _SELINUX_TYPES:
            types.add(str(options.get("type")))
            wrong = True
        for field in found:
            if options.get(field):
                found[field] = wrong = True
        return wrong

    pod_bad = bad(_pod_context(spec).get("seLinuxOptions"))
    containers = [_name(c) for c in _containers(spec) if bad(_dict(_security_context(c)).get("seLinuxOptions"))]
    setters = _setters(pod_bad, containers)
    if not setters:
        return None
    parts = [f"{_plural('type', 'types', len(types))} {_join_quote(sorted(types))}"] if types else []
    parts += [f"{field} may not be set" for field, present in found.items() if present]
    return ("seLinuxOptions",
            f"{' and '.join(setters)} set forbidden securityContext.seLinuxOptions: {'; '.join(parts)}")


_SECCOMP_TYPES = ("RuntimeDefault", "Localhost")


def _seccomp_setters(spec: Spec) -> tuple[list[str], set[str], bool, list[str]]:
    """Who sets a seccompProfile type other than RuntimeDefault or Localhost, those types, whether the
    pod sets an allowed one, and the containers that set none themselves."""
    values: set[str] = set()
    pod_profile = _pod_context(spec).get("seccompProfile")
    pod_bad = isinstance(pod_profile, dict) and pod_profile.get("type") not in _SECCOMP_TYPES
    if pod_bad:
        values.add(str(pod_profile.get("type") or ""))
    explicit, unset = [], []
    for container in _containers(spec):
        profile = _dict(_security_context(container)).get("seccompProfile")
        if isinstance(profile, dict):
            if profile.get("type") not in _SECCOMP_TYPES:
                explicit.append(_name(container))
                values.add(str(profile.get("type") or ""))
        else:
            unset.append(_name(container))
    return _setters(pod_bad, explicit), values, isinstance(pod_profile, dict) and not pod_bad, unset


def _seccomp_detail(setters: list[str], values: set[str]) -> str:
    return f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to {_join_quote(sorted(values))}"


def _seccomp_profile_baseline(meta: dict[str, Any], spec: Spec) -> Result:
    setters, values, _, _ = _seccomp_setters(spec)
    return ("seccompProfile", _seccomp_detail(setters, values)) if setters else None


# v1.0 set, net.ipv4.ip_local_reserved_ports from v1.27, the TCP keepalive/fin ones from v1.29
_SAFE_SYSCTLS = frozenset({
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start", "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
})


def _sysctls(meta: dict[str, Any], spec: Spec) -> Result:
    names = [str(s.get("name", "")) for s in _pod_context(spec).get("sysctls") or [] if isinstance(s, dict)
             and s.get("name") not in _SAFE_SYSCTLS]
    return ("forbidden sysctls", ", ".join(names)) if names else None


def _windows_host_process(meta: dict[str, Any], spec: Spec) -> Result:
    def host_process(context: Any) -> bool:
        return _dict(_dict(context).get("windowsOptions")).get("hostProcess") is True

    containers = [_name(c) for c in _containers(spec) if host_process(_security_context(c))]
    setters = _setters(host_process(_pod_context(spec)), containers)
    if not setters:
        return None
    return ("hostProcess",
            f"{' and '.join(setters)} must not set securityContext.windowsOptions.hostProcess=true")


def _allow_privilege_escalation(meta: dict[str, Any], spec: Spec) -> Result:
    if _is_windows(spec):
        return None
    containers = [_name(c) for c in _containers(spec)
                  if _dict(_security_context(c)).get("allowPrivilegeEscalation") is not False]
    if not containers:
        return None
    return ("allowPrivilegeEscalation != false",
            f"{_containers_phrase(containers)} must set securityContext.allowPrivilegeEscalation=false")


def _capabilities_restricted(meta: dict[str, Any], spec: Spec) -> Result:
    if _is_windows(spec):
        return None
    def capabilities(container: dict[str, Any]) -> dict[str, Any]:
        return _dict(_dict(_security_context(container)).get("capabilities"))

    missing_drop = [_name(c) for c in _containers(spec) if "ALL" not in (capabilities(c).get("drop") or [])]
    adding, added = _containers_with(spec, lambda c: [str(cap) for cap in capabilities(c).get("add") or []
                                                      if cap != "NET_BIND_SERVICE"])
    details = []
    if missing_drop:
        details.append(f'{_containers_phrase(missing_drop)} must set securityContext.capabilities.drop=["ALL"]')
    if adding:
        details.append(f"{_containers_phrase(adding)} must not include {_join_quote(sorted(added))} in "
                       "securityContext.capabilities.add")
    return ("unrestricted capabilities", "; ".join(details)) if details else None


_ALLOWED_VOLUMES = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                    "projected", "secret")
_RESTRICTED_VOLUMES = ("hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi",
                       "glusterfs", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile",
                       "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "portworxVolume",
                       "scaleIO", "storageos")


def _restricted_volumes(meta: dict[str, Any], spec: Spec) -> Result:
    names, types = [], set()
    for volume in spec.get("volumes") or []:
        if not isinstance(volume, dict) or any(volume.get(kind) is not None for kind in _ALLOWED_VOLUMES):
            continue
        names.append(str(volume.get("name", "")))
        types.add(next((kind for kind in _RESTRICTED_VOLUMES if volume.get(kind) is not None), "unknown"))
    if not names:
        return None
    return ("restricted volume types",
            f"{_plural('volume', 'volumes', len(names))} {_join_quote(names)} {_plural('uses', 'use', len(names))} "
            f"{_plural('restricted volume type', 'restricted volume types', len(types))} "
            f"{_join_quote(sorted(types))}")


def _run_as_non_root(meta: dict[str, Any], spec: Spec) -> Result:
    pod_value = _pod_context(spec).get("runAsNonRoot")
    explicit, implicit = [], []
    for container in _containers(spec):
        value = _dict(_security_context(container)).get("runAsNonRoot")
        if value is None:
            if pod_value is not True:
                implicit.append(_name(container))
        elif value is False:
            explicit.append(_name(container))
    setters = _setters(pod_value is False, explicit)
    if setters:
        return "runAsNonRoot != true", f"{' and '.join(setters)} must not set securityContext.runAsNonRoot=false"
    if implicit:
        return ("runAsNonRoot != true",
                f"pod or {_containers_phrase(implicit)} must set securityContext.runAsNonRoot=true")
    return None


def _is_root(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value == 0


def _run_as_user(meta: dict[str, Any], spec: Spec) -> Result:
    containers = [_name(c) for c in _containers(spec) if _is_root(_dict(_security_context(c)).get("runAsUser"))]
    setters = _setters(_is_root(_pod_context(spec).get("runAsUser")), containers)
    return ("runAsUser=0", f"{' and '.join(setters)} must not set runAsUser=0") if setters else None


def _seccomp_profile_restricted(meta: dict[str, Any], spec: Spec) -> Result:
    if _is_windows(spec):
        return None
    setters, values, pod_allowed, unset = _seccomp_setters(spec)
    if setters:
        return "seccompProfile", _seccomp_detail(setters, values)
    if unset and not pod_allowed:
        return ("seccompProfile", f'pod or {_containers_phrase(unset)} must set securityContext.seccompProfile.type '
                'to "RuntimeDefault" or "Localhost"')
    return None


Check = Callable[[dict[str, Any], Spec], Result]

# (id, check, ids of the baseline checks it replaces under restricted), each level sorted by id
_BASELINE_CHECKS: tuple[tuple[str, Check], ...] = (
    ("appArmorProfile", _app_armor_profile),
    ("capabilities_baseline", _capabilities_baseline),
    ("hostNamespaces", _host_namespaces),
    ("hostPathVolumes", _host_path_volumes),
    ("hostPorts", _host_ports),
    ("privileged", _privileged),
    ("procMount", _proc_mount),
    ("seLinuxOptions", _se_linux_options),
    ("seccompProfile_baseline", _seccomp_profile_baseline),
    ("sysctls", _sysctls),
    ("windowsHostProcess", _windows_host_process),
)
_RESTRICTED_CHECKS: tuple[tuple[str, Check, tuple[str, ...]], ...] = (
    ("allowPrivilegeEscalation", _allow_privilege_escalation, ()),
    ("capabilities_restricted", _capabilities_restricted, ("capabilities_baseline",)),
    ("restrictedVolumes", _restricted_volumes, ("hostPathVolumes",)),
    ("runAsNonRoot", _run_as_non_root, ()),
    ("runAsUser", _run_as_user, ()),
    ("seccompProfile_restricted", _seccomp_profile_restricted, ("seccompProfile_baseline",)),
)


def _checks(level: str) -> list[Check]:
    if level == PRIVILEGED:
        return []
    if level == BASELINE:
        return [check for _, check in _BASELINE_CHECKS]
    overridden = {o for _, _, overrides in _RESTRICTED_CHECKS for o in overrides}
    return ([check for check_id, check in _BASELINE_CHECKS if check_id not in overridden]
            + [check for _, check, _ in _RESTRICTED_CHECKS])


def violations(level: str, pod_meta: dict[str, Any], spec: Spec) -> list[tuple[str, str]]:
    """The (reason, detail) of every check of `level` the pod fails, in the real server's order."""
    return [result for check in _checks(level) if (result := check(pod_meta, spec)) is not None]


def forbidden_detail(results: list[tuple[str, str]]) -> str:
    """`reason (detail), reason, ...` as the real plugin aggregates its results."""
    return ", ".join(f"{reason} ({detail})" if detail else reason for reason, detail in results)


# ---- admission ----------------------------------------------------------------------------------

_SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
_SECCOMP_CONTAINER_ANNOTATION = "container.seccomp.security.alpha.kubernetes.io/"


def _significant_update(pod: dict[str, Any], old: dict[str, Any]) -> bool:
    """Whether an update changes what the policy looks at among the fields a pod update may change:
    images, seccomp annotations, ephemeral containers."""
    annotations, old_annotations = (_dict(_dict(p.get("metadata")).get("annotations")) for p in (pod, old))
    if annotations.get(_SECCOMP_POD_ANNOTATION) != old_annotations.get(_SECCOMP_POD_ANNOTATION):
        return True
    spec, old_spec = _dict(pod.get("spec")), _dict(old.get("spec"))

    def changed(container: dict[str, Any], before: dict[str, Any]) -> bool:
        key = _SECCOMP_CONTAINER_ANNOTATION + _name(container)
        return container.get("image") != before.get("image") or annotations.get(key) != old_annotations.get(key)

    for group in ("containers", "initContainers"):
        now, then = spec.get(group) or [], old_spec.get(group) or []
        if len(now) != len(then) or any(changed(_dict(a), _dict(b)) for a, b in zip(now, then)):
            return True
    before_by_name = {_name(_dict(c)): _dict(c) for c in old_spec.get("ephemeralContainers") or []}
    return any(_name(_dict(c)) not in before_by_name or changed(_dict(c), before_by_name[_name(_dict(c))])
               for c in spec.get("ephemeralContainers") or [])


def admit_pod(namespace: dict[str, Any], pod: dict[str, Any], old: dict[str, Any] | None) -> list[str]:
    """Enforce the namespace's level on a pod create (old None) or update; the warnings to send back."""
    policy, label_errors = namespace_policy(_dict(namespace.get("metadata")).get("labels"))
    if not label_errors and all(mode.level == PRIVILEGED for mode in (policy.enforce, policy.audit, policy.warn)):
        return []
    if old is not None and not _significant_update(pod, old):
        return []
    meta, spec = _dict(pod.get("metadata")), _dict(pod.get("spec"))
    enforced = violations(policy.enforce.level, meta, spec)
    if enforced:
        name = str(meta.get("name", ""))
        raise ApiError(403, "Forbidden", f'pods "{name}" is forbidden: violates PodSecurity '
                       f'"{policy.enforce}": {forbidden_detail(enforced)}', {"name": name, "kind": "pods"})
    warned = violations(policy.warn.level, meta, spec)
    return [f'would violate PodSecurity "{policy.warn}": {forbidden_detail(warned)}'] if warned else []


def admit_namespace(namespace: dict[str, Any], old: dict[str, Any] | None,
                    pods: Callable[[], list[dict[str, Any]]]) -> list[str]:
    """Refuse invalid pod-security labels on a create, or on an update that changes them (422); when an
    update tightens the enforced level, the warnings naming the existing pods that break it."""
    meta = _dict(namespace.get("metadata"))
    policy, label_errors = namespace_policy(meta.get("labels"))
    old_policy, old_errors = namespace_policy(_dict(old.get("metadata")).get("labels")) if old else (None, [])
    if label_errors and (old is None or not old_errors or label_errors != old_errors):
        raise errors.invalid("Namespace", "", str(meta.get("name", "")), label_errors)
    if old_policy is None or policy.enforce == old_policy.enforce or policy.enforce.level == PRIVILEGED:
        return []
    if policy.enforce.version == old_policy.enforce.version and \
            LEVELS.index(policy.enforce.level) <= LEVELS.index(old_policy.enforce.level):
        return []
    return _existing_pod_warnings(str(meta.get("name", "")), policy.enforce, pods())


def _existing_pod_warnings(namespace: str, enforce: LevelVersion, pods: list[dict[str, Any]]) -> list[str]:
    checked = pods[:_MAX_PODS_CHECKED]
    by_reasons: dict[str, list[str]] = {}
    for pod in checked:
        results = violations(enforce.level, _dict(pod.get("metadata")), _dict(pod.get("spec")))
        if results:
            by_reasons.setdefault(", ".join(r for r, _ in results), []).append(pod["metadata"]["name"])
    warnings = []
    if len(checked) < len(pods):
        warnings.append(f"new PodSecurity enforce level only checked against the first {len(checked)} of "
                        f"{len(pods)} existing pods")
    if by_reasons:
        warnings.append(f'existing pods in namespace "{namespace}" violate the new PodSecurity enforce level '
                        f'"{enforce}"')
    named = []
    for reasons, names in by_reasons.items():
        others = len(names) - 1
        suffix = "" if not others else f" (and {others} other pod{'s' if others > 1 else ''})"
        named.append(f"{min(names)}{suffix}: {reasons}")
    return warnings + sorted(named)
