"""What kube-controller-manager's ClusterRole aggregation controller does
(pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go): a ClusterRole with an
aggregationRule gets as its rules those of every ClusterRole that one of its clusterRoleSelectors
matches, and keeps them up to date.

As the real controller:
- any change to any ClusterRole (added, changed, deleted) re-syncs every ClusterRole that has an
  aggregationRule, since which role feeds which is not tracked;
- the rules are gathered selector by selector, each selector's matches in name order, skipping the
  role itself, each rule once (a rule equal to one already gathered is dropped); a matched role that
  is aggregated itself gives its current rules, so chains (admin takes edit, which takes view) settle
  over a few passes, each pass's writes being changes that start the next;
- the role is written only when the gathered rules differ from its own (no rules equal an empty list),
  and the write replaces them: rules someone writes into an aggregated role are overwritten.
The real controller writes by server-side apply as field manager `clusterrole-aggregation-controller`,
so when nothing matches, rules that another field manager wrote stay; this stand-in has no field
managers and clears them."""

from __future__ import annotations

import copy
import logging
from typing import Any, Iterable

from .api import Api, Context
from .control_loop import ControlLoop
from .rbac import RBAC_GROUP
from .selectors import label_selector_matches
from .store import Event, ResourceKey

_log = logging.getLogger(__name__)
CLUSTER_ROLES: ResourceKey = (RBAC_GROUP, "clusterroles")
_RETRY_S = 1.0
_RULE_FIELDS = ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")

Rule = dict[str, Any]


def _comparable(rule: Rule) -> tuple[tuple[Any, ...], ...]:
    """A rule as Go's semantic equality sees it: a missing list equals an empty one."""
    return tuple(tuple(rule.get(key) or ()) for key in _RULE_FIELDS)


def same_rules(left: Iterable[Rule], right: Iterable[Rule]) -> bool:
    return [_comparable(r) for r in left] == [_comparable(r) for r in right]


def aggregated_rules(role: dict[str, Any], cluster_roles: list[dict[str, Any]]) -> list[Rule]:
    """The rules the controller gives `role` from the ClusterRoles there are now."""
    name = role["metadata"]["name"]
    by_name = sorted(cluster_roles, key=lambda other: other["metadata"]["name"])
    gathered: list[Rule] = []
    seen: set[tuple[tuple[Any, ...], ...]] = set()
    for selector in (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []:
        for other in by_name:
            meta = other["metadata"]
            if meta["name"] == name or not label_selector_matches(selector, meta.get("labels")):
                continue
            for rule in other.get("rules") or []:
                if _comparable(rule) not in seen:
                    seen.add(_comparable(rule))
                    gathered.append(copy.deepcopy(rule))
    return gathered


class ClusterRoleAggregator(ControlLoop):
    """Woken by the store's ClusterRole events."""

    def __init__(self, api: Api):
        self.dirty = True                  # the first pass covers roles written before start()
        super().__init__(api, "clusterrole-aggregator")

    def _observe(self, key: ResourceKey, event: Event) -> None:
        """Runs under the store lock: only notes that a pass is due."""
        if key == CLUSTER_ROLES:
            with self.wake:
                self.dirty = True
                self.wake.notify()

    def _run(self) -> None:
        while True:
            with self.wake:
                while not (self.dirty or self.stopped):
                    self.wake.wait()
                if self.stopped:
                    return
                self.dirty = False
            try:
                self.sync_all()
            except Exception:          # the aggregator must outlive any one role's trouble: retry later
                _log.exception("ClusterRole aggregation failed; retrying in %.0f s", _RETRY_S)
                with self.wake:
                    self.dirty = True
                    self.wake.wait(_RETRY_S)

    def sync_all(self) -> None:
        """One pass over every aggregated ClusterRole, each decided and written under the store lock
        (so against the roles as they are, never a stale copy)."""
        info = self.api.registry.lookup(RBAC_GROUP, "v1", "clusterroles")
        assert info is not None
        with self.api.store.lock:
            names = [role["metadata"]["name"] for role in self.api.stored_objects(*CLUSTER_ROLES)
                     if role.get("aggregationRule")]
            for name in names:
                current = self.api.store.get(CLUSTER_ROLES, "", name)
                if current is None or not current.get("aggregationRule"):
                    continue
                rules = aggregated_rules(current, self.api.stored_objects(*CLUSTER_ROLES))
                if same_rules(rules, current.get("rules") or []):
                    continue
                updated = copy.deepcopy(current)
                updated.pop("rules", None)
                if rules:
                    updated["rules"] = rules
                self.api.commit_update(info, current, updated, Context(), None)
