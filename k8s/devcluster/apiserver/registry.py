"""Which resources are served: the built-in ones and those the CRDs define, with their strategies."""

from __future__ import annotations

import threading
from typing import Any

from .custom import CustomResourceDefinitionStrategy, CustomResourceStrategy, crd_infos
from .endpoint_slice import EndpointSliceStrategy
from .network_policy import NetworkPolicyStrategy
from .resource_info import ResourceInfo
from .resource_quota import ResourceQuotaStrategy
from .strategies import (ConfigMapStrategy, EventStrategy, LeaseStrategy, NamespaceStrategy, NodeStrategy,
                         PodStrategy, RoleBindingStrategy, RoleStrategy, SecretStrategy, ServiceStrategy,
                         Strategy)

_ALL = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
_NO_COLLECTION = ("create", "delete", "get", "list", "patch", "update", "watch")


def _builtin_infos() -> list[ResourceInfo]:
    core = [
        ResourceInfo("", "v1", "namespaces", "namespace", "Namespace", "NamespaceList", False,
                     verbs=_NO_COLLECTION, short_names=("ns",), subresources=("status", "finalize")),
        ResourceInfo("", "v1", "pods", "pod", "Pod", "PodList", True, short_names=("po",),
                     categories=("all",), subresources=("status", "binding", "log")),
        ResourceInfo("", "v1", "services", "service", "Service", "ServiceList", True, short_names=("svc",),
                     categories=("all",), subresources=("status",)),
        ResourceInfo("", "v1", "endpoints", "endpoints", "Endpoints", "EndpointsList", True,
                     short_names=("ep",)),
        ResourceInfo("", "v1", "configmaps", "configmap", "ConfigMap", "ConfigMapList", True,
                     short_names=("cm",)),
        ResourceInfo("", "v1", "secrets", "secret", "Secret", "SecretList", True),
        ResourceInfo("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", "ServiceAccountList",
                     True, short_names=("sa",), subresources=("token",)),
        ResourceInfo("", "v1", "events", "event", "Event", "EventList", True, short_names=("ev",)),
        ResourceInfo("", "v1", "nodes", "node", "Node", "NodeList", False, short_names=("no",),
                     subresources=("status",)),
        ResourceInfo("", "v1", "bindings", "binding", "Binding", "BindingList", True, verbs=("create",)),
        ResourceInfo("", "v1", "resourcequotas", "resourcequota", "ResourceQuota", "ResourceQuotaList", True,
                     short_names=("quota",), subresources=("status",)),
    ]
    others = [
        ResourceInfo("coordination.k8s.io", "v1", "leases", "lease", "Lease", "LeaseList", True),
        ResourceInfo("discovery.k8s.io", "v1", "endpointslices", "endpointslice", "EndpointSlice",
                     "EndpointSliceList", True),
        ResourceInfo("networking.k8s.io", "v1", "networkpolicies", "networkpolicy", "NetworkPolicy",
                     "NetworkPolicyList", True, short_names=("netpol",)),
        ResourceInfo("rbac.authorization.k8s.io", "v1", "roles", "role", "Role", "RoleList", True),
        ResourceInfo("rbac.authorization.k8s.io", "v1", "rolebindings", "rolebinding", "RoleBinding",
                     "RoleBindingList", True),
        ResourceInfo("rbac.authorization.k8s.io", "v1", "clusterroles", "clusterrole", "ClusterRole",
                     "ClusterRoleList", False),
        ResourceInfo("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "clusterrolebinding",
                     "ClusterRoleBinding", "ClusterRoleBindingList", False),
        ResourceInfo("apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition",
                     "CustomResourceDefinition", "CustomResourceDefinitionList", False,
                     short_names=("crd", "crds"), categories=("api-extensions",), subresources=("status",)),
        ResourceInfo("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "selfsubjectaccessreview",
                     "SelfSubjectAccessReview", "SelfSubjectAccessReviewList", False, verbs=("create",)),
    ]
    return core + others


class Registry:
    """Resource lookup by (group, version, plural) and by (group, kind); CRDs add and remove entries."""

    def __init__(self, service_cidr: str = "10.96.0.0/16"):
        self.lock = threading.Lock()
        self.infos: dict[tuple[str, str, str], ResourceInfo] = {}
        self.strategies: dict[tuple[str, str], Strategy] = {}
        self.crd_resources: dict[str, list[ResourceInfo]] = {}     # CRD name -> its served infos
        plain = Strategy()
        special: dict[str, Strategy] = {
            "namespaces": NamespaceStrategy(), "pods": PodStrategy(), "services": ServiceStrategy(service_cidr),
            "secrets": SecretStrategy(), "configmaps": ConfigMapStrategy(), "events": EventStrategy(), "leases": LeaseStrategy(),
            "nodes": NodeStrategy(), "roles": RoleStrategy(), "clusterroles": RoleStrategy(),
            "rolebindings": RoleBindingStrategy(), "clusterrolebindings": RoleBindingStrategy(),
            "customresourcedefinitions": CustomResourceDefinitionStrategy(),
            "resourcequotas": ResourceQuotaStrategy(), "networkpolicies": NetworkPolicyStrategy(),
            "endpointslices": EndpointSliceStrategy(),
        }
        for info in _builtin_infos():
            self.infos[(info.group, info.version, info.plural)] = info
            self.strategies[(info.group, info.plural)] = special.get(info.plural, plain)
        self.custom = CustomResourceStrategy()

    def lookup(self, group: str, version: str, plural: str) -> ResourceInfo | None:
        return self.infos.get((group, version, plural))

    def all(self) -> list[ResourceInfo]:
        with self.lock:
            return list(self.infos.values())

    def strategy(self, info: ResourceInfo) -> Strategy:
        return self.custom if info.crd is not None else self.strategies[(info.group, info.plural)]

    def by_kind(self, api_version: str, kind: str) -> ResourceInfo | None:
        group, _, version = api_version.rpartition("/")
        for info in self.all():
            if info.group == group and info.version == version and info.kind == kind:
                return info
        return None

    def register_crd(self, crd: dict[str, Any]) -> None:
        """Serve (or re-serve, after an update) the versions a CRD declares."""
        infos = crd_infos(crd)
        with self.lock:
            for old in self.crd_resources.pop(crd["metadata"]["name"], []):
                self.infos.pop((old.group, old.version, old.plural), None)
            for info in infos:
                self.infos[(info.group, info.version, info.plural)] = info
            self.crd_resources[crd["metadata"]["name"]] = infos

    def unregister_crd(self, name: str) -> None:
        with self.lock:
            for old in self.crd_resources.pop(name, []):
                self.infos.pop((old.group, old.version, old.plural), None)

    def crd_infos_of(self, name: str) -> list[ResourceInfo]:
        with self.lock:
            return list(self.crd_resources.get(name, []))
