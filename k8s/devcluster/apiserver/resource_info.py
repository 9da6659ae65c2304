"""What the stand-in knows of one served resource: the facts discovery, OpenAPI, tables, RBAC and
storage all read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ResourceInfo:
    group: str                    # "" for the core group
    version: str                  # "v1", "v1alpha1"
    plural: str                   # "pods", "fiberjobs"
    singular: str                 # "pod", "fiberjob"
    kind: str                     # "Pod", "FiberJob"
    list_kind: str                # "PodList"
    namespaced: bool
    verbs: tuple[str, ...] = ("create", "delete", "deletecollection", "get", "list", "patch",
                              "update", "watch")
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()  # e.g. ("status", "scale", "log", "binding", "token")
    crd: dict[str, Any] | None = field(default=None, compare=False, hash=False)  # the CRD object

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """"pods", "fiberjobs.fibermpi.io": how messages name the resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural
