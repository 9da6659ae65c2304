"""The operator's manifests (k8s/config): they render with kustomize as the oldest and newest kubectl
ship it, every built-in kind validates against the published schema of those Kubernetes versions, the
controller's RBAC is least privilege, a namespace's view/edit/admin users get FiberJobs through
aggregated ClusterRoles, and the Deployment is locked down."""

from __future__ import annotations

import copy
import os
import pathlib
import subprocess

import kubernetes_validate
import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[3]
KUBECTL_DIR = pathlib.Path("/usr/lib/google-cloud-sdk/bin")
# The oldest and the newest kubectl the machines carry, with the Kubernetes version they speak.
KUBECTLS = {"1.27": KUBECTL_DIR / "kubectl.1.27", "1.33": KUBECTL_DIR / "kubectl.1.33"}


def render(kubectl: pathlib.Path) -> list[dict]:
    out = subprocess.run([str(kubectl), "kustomize", str(ROOT / "k8s/config/default")],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


@pytest.fixture(scope="module", params=sorted(KUBECTLS))
def rendered(request) -> tuple[str, list[dict]]:
    kubectl = KUBECTLS[request.param]
    if not kubectl.exists():
        pytest.fail(f"{kubectl} is missing: the machines are expected to carry kubectl 1.27 to 1.33")
    return request.param, render(kubectl)


def by_kind(docs: list[dict], kind: str) -> list[dict]:
    return [d for d in docs if d["kind"] == kind]


def test_default_renders_everything_the_operator_needs(rendered):
    _, docs = rendered
    kinds = sorted(f"{d['kind']}/{d['metadata']['name']}" for d in docs)
    assert kinds == [
        "ClusterRole/fiber-controller",
        "ClusterRole/fibermpi-fiberjobs-edit",
        "ClusterRole/fibermpi-fiberjobs-view",
        "ClusterRoleBinding/fiber-controller",
        "CustomResourceDefinition/fiberjobs.fibermpi.io",
        "Deployment/fiber-controller",
        "Namespace/fiber-system",
        "Role/fiber-controller-leader-election",
        "RoleBinding/fiber-controller-leader-election",
        "ServiceAccount/fiber-controller",
    ]
    for doc in docs:
        if doc["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding",
                               "CustomResourceDefinition"):
            assert doc["metadata"]["namespace"] == "fiber-system", doc["metadata"]


def test_built_in_kinds_validate_against_the_published_schemas(rendered):
    version, docs = rendered
    for doc in docs:
        kubernetes_validate.validate(doc, f"{version}.0", strict=True)


def test_the_validator_refuses_a_broken_deployment(rendered):
    """The check above can fail: a Deployment with a wrong type and an unknown field is refused."""
    version, docs = rendered
    broken = copy.deepcopy(by_kind(docs, "Deployment")[0])
    broken["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, f"{version}.0", strict=True)
    broken = copy.deepcopy(by_kind(docs, "Deployment")[0])
    broken["spec"]["template"]["spec"]["containers"][0]["livenessprobe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, f"{version}.0", strict=True)


def controller_roles(docs: list[dict]) -> list[dict]:
    """The Roles and ClusterRoles the controller runs with (the others are for a namespace's users)."""
    return [d for d in by_kind(docs, "ClusterRole") + by_kind(docs, "Role")
            if d["metadata"]["labels"].get("app.kubernetes.io/name") == "fiber-controller"]


def grants(roles: list[dict]) -> set[tuple[str, str, str]]:
    """(group, resource, verb) of every rule not limited to named objects."""
    return {(g, r, v) for role in roles for rule in role["rules"] if not rule.get("resourceNames")
            for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}


def test_rbac_names_exact_resources_and_verbs(rendered):
    _, docs = rendered
    for rule in [rule for d in by_kind(docs, "ClusterRole") + by_kind(docs, "Role") for rule in d["rules"]]:
        for key in ("apiGroups", "resources", "verbs"):
            assert "*" not in rule[key], f"wildcard in {key}: {rule}"
        assert not {"escalate", "bind", "impersonate"} & set(rule["verbs"]), rule
    rules = [rule for d in controller_roles(docs) for rule in d["rules"]]
    assert rules
    granted = {(g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"]
               for v in rule["verbs"]}
    # What the controller does, and so must be allowed.
    for need in [("fibermpi.io", "fiberjobs", "watch"), ("fibermpi.io", "fiberjobs/status", "update"),
                 ("", "pods", "create"), ("", "pods", "delete"), ("", "pods/log", "get"),
                 ("", "services", "create"), ("", "events", "create"),
                 ("coordination.k8s.io", "leases", "update"),
                 ("", "configmaps", "watch"), ("", "configmaps", "create"), ("", "configmaps", "update"),
                 ("", "serviceaccounts", "create"), ("rbac.authorization.k8s.io", "roles", "create"),
                 ("rbac.authorization.k8s.io", "rolebindings", "create"),
                 ("", "secrets", "create"), ("", "secrets", "get"),
                 ("networking.k8s.io", "networkpolicies", "create"),
                 ("networking.k8s.io", "networkpolicies", "watch"),
                 # A job's egress policy follows the namespace's: changed, and deleted once no
                 # policy isolates the job's egress; the API server's endpoints go in it.
                 ("networking.k8s.io", "networkpolicies", "update"),
                 ("networking.k8s.io", "networkpolicies", "delete"),
                 ("discovery.k8s.io", "endpointslices", "get")]:
        assert need in granted, need
    # The API server's EndpointSlice by name, no other.
    (slices,) = [rule for rule in rules if "endpointslices" in rule["resources"]]
    assert slices["resourceNames"] == ["kubernetes"] and slices["verbs"] == ["get"], slices
    # What it never does: list or watch Secrets (which would read every Secret in reach: it reads
    # its jobs' tokens by name), change a secret it made (a job's token stays the pods'), change a
    # job's spec, write pods in place.
    for never in [("", "secrets", "list"), ("", "secrets", "watch"),
                  ("", "secrets", "update"), ("", "secrets", "patch"), ("", "secrets", "delete"),
                  ("fibermpi.io", "fiberjobs", "update"),
                  ("fibermpi.io", "fiberjobs", "patch"),
                  ("fibermpi.io", "fiberjobs", "create"), ("", "pods", "update"), ("", "pods", "patch"),
                  # spec.workers.replicas is for people and autoscalers: the program asks in its
                  # release ConfigMap, so neither the controller nor a launcher Role writes /scale.
                  ("fibermpi.io", "fiberjobs/scale", "update"), ("fibermpi.io", "fiberjobs/scale", "patch")]:
        assert never not in granted, never


# What the controller's per-job launcher Role (NAME-launcher) grants, limited to the job by name.
LAUNCHER_ROLE_GRANTS = [("fibermpi.io", "fiberjobs", "get"),
                        ("", "configmaps", "get"), ("", "configmaps", "update")]


def test_the_controller_holds_what_the_launcher_role_it_creates_grants(rendered):
    """The API server refuses a Role (and a RoleBinding to it) that grants more than its creator holds,
    unless the creator has escalate/bind, which the controller must not have: so its ClusterRole holds
    every permission of the launcher Role, and deletes nothing but what it needs to. It may update
    Roles (a launcher Role an older version made gets this version's rules; the same escalation
    check bounds what an update can grant), never RoleBindings (who a Role is bound to)."""
    _, docs = rendered
    granted = grants([d for d in by_kind(docs, "ClusterRole") if d["metadata"]["name"] == "fiber-controller"])
    for need in [*LAUNCHER_ROLE_GRANTS, ("rbac.authorization.k8s.io", "roles", "update")]:
        assert need in granted, need
    for never in [("", "serviceaccounts", "delete"), ("rbac.authorization.k8s.io", "roles", "delete"),
                  ("rbac.authorization.k8s.io", "rolebindings", "update"), ("", "configmaps", "delete"),
                  ("rbac.authorization.k8s.io", "clusterroles", "create")]:
        assert never not in granted, never


AGGREGATE_TO = {name: f"rbac.authorization.k8s.io/aggregate-to-{name}" for name in ("admin", "edit", "view")}
READ = {"get", "list", "watch"}
WRITE = {"create", "update", "patch", "delete", "deletecollection"}


def aggregated_into(docs: list[dict], built_in: str, chained: bool = True) -> list[dict]:
    """The ClusterRoles whose rules the cluster's aggregation controller adds to `built_in`: those
    labelled for it, and, following the bootstrap policy's chain (admin takes edit's rules, edit takes
    view's), those labelled for the roles it takes."""
    chain = {"admin": ("admin", "edit", "view"), "edit": ("edit", "view"), "view": ("view",)}[built_in]
    names = chain if chained else chain[:1]
    return [d for d in by_kind(docs, "ClusterRole")
            if any(d["metadata"]["labels"].get(AGGREGATE_TO[name]) == "true" for name in names)]


def test_namespace_users_get_fiberjobs_through_the_aggregated_roles(rendered):
    """A RoleBinding to view, edit or admin in a namespace is all a user needs: view reads jobs, their
    scale and status; edit and admin also create, change, delete and scale them; nobody but the
    controller writes status. The roles bind nobody and aggregate nothing themselves.
    (tests/k8s/devcluster/test_apiserver_rbac_aggregation.py checks it through the API server stand-in.)"""
    _, docs = rendered
    jobs = {"fiberjobs", "fiberjobs/scale", "fiberjobs/status"}
    view = grants(aggregated_into(docs, "view"))
    assert view == {("fibermpi.io", resource, verb) for resource in jobs for verb in READ}
    for built_in in ("edit", "admin"):
        granted = grants(aggregated_into(docs, built_in))
        assert granted == view | {("fibermpi.io", "fiberjobs", verb) for verb in WRITE} | {
            ("fibermpi.io", "fiberjobs/scale", verb) for verb in ("update", "patch")}, built_in
    for built_in in AGGREGATE_TO:      # the same on a cluster whose built-in roles do not chain
        assert grants(aggregated_into(docs, built_in, chained=False)) == grants(aggregated_into(docs, built_in))
    for role in aggregated_into(docs, "admin"):
        assert "aggregationRule" not in role, role["metadata"]["name"]
    user_roles = {role["metadata"]["name"] for role in aggregated_into(docs, "admin")}
    assert user_roles == {"fibermpi-fiberjobs-edit", "fibermpi-fiberjobs-view"}
    bound = {b["roleRef"]["name"] for b in by_kind(docs, "ClusterRoleBinding") + by_kind(docs, "RoleBinding")}
    assert not bound & user_roles


def test_the_controller_deployment_is_locked_down(rendered):
    _, docs = rendered
    deployment = by_kind(docs, "Deployment")[0]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "fiber-controller"
    assert pod["securityContext"]["runAsNonRoot"] is True
    (container,) = pod["containers"]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    for key in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(container["resources"][key])
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_the_crd_declares_what_kubectl_scale_and_hpa_need(rendered):
    _, docs = rendered
    crd = by_kind(docs, "CustomResourceDefinition")[0]
    (version,) = crd["spec"]["versions"]
    assert version["subresources"]["scale"] == {
        "specReplicasPath": ".spec.workers.replicas",
        "statusReplicasPath": ".status.workers.ready",
        "labelSelectorPath": ".status.workers.selector",
    }
    assert "status" in version["subresources"]
    assert [c["name"] for c in version["additionalPrinterColumns"]] == [
        "Phase", "Desired", "Ready", "Min", "Max", "Age"]
    workers = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["workers"]
    (rule,) = workers["x-kubernetes-validations"]
    assert "minReplicas" in rule["message"] and "maxReplicas" in rule["message"]


def render_overlay(kubectl: pathlib.Path, directory: pathlib.Path, base: pathlib.Path,
                   images: list[dict]) -> list[dict]:
    """An overlay of `base` in `directory` (a user's own kustomization) with these `images:`."""
    overlay = {"resources": [os.path.relpath(base, directory)], "images": images}
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(overlay))
    out = subprocess.run([str(kubectl), "kustomize", str(directory)],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def pod_images(doc: dict) -> list[str]:
    """Every image a Deployment's or a FiberJob's pod templates name."""
    if doc["kind"] == "Deployment":
        templates = [doc["spec"]["template"]]
    else:
        templates = [doc["spec"][part]["template"] for part in ("launcher", "workers", "nameService")
                     if "template" in doc["spec"].get(part, {})]
    return [c["image"] for t in templates
            for c in t["spec"].get("initContainers", []) + t["spec"]["containers"]]


REGISTRY_IMAGES = [
    {"name": "fibermpi/controller", "newName": "registry.example.com/ml/fibermpi/controller", "newTag": "a1b2c3"},
    {"name": "fibermpi/runtime", "newName": "registry.example.com/ml/fibermpi/runtime", "newTag": "a1b2c3"},
    {"name": "fibermpi/python", "newName": "registry.example.com/ml/fibermpi/python", "newTag": "a1b2c3"},
]


@pytest.mark.parametrize("version", sorted(KUBECTLS))
def test_one_images_setting_moves_the_controller_and_the_name_service_to_a_registry(version, tmp_path):
    # The name service's image is the controller's FIBER_NAME_SERVICE_IMAGE: `images:` rewrites
    # it with the controller's own (an argument it could not rewrite).
    default = render(KUBECTLS[version])
    (deployment,) = by_kind(default, "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "fibermpi/controller:0.1.0"
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["FIBER_NAME_SERVICE_IMAGE"] == "fibermpi/runtime:0.1.0"
    assert not any(a.startswith("--name-service-image") for a in container["args"])
    moved = render_overlay(KUBECTLS[version], tmp_path, ROOT / "k8s/config/default", REGISTRY_IMAGES)
    (container,) = by_kind(moved, "Deployment")[0]["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.example.com/ml/fibermpi/controller:a1b2c3"
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["FIBER_NAME_SERVICE_IMAGE"] == "registry.example.com/ml/fibermpi/runtime:a1b2c3"
    assert env["POD_NAMESPACE"] is None  # a value that is no image is left alone


@pytest.mark.parametrize("version", sorted(KUBECTLS))
def test_the_samples_follow_an_images_setting_into_their_fiberjob_templates(version, tmp_path):
    samples = sorted((ROOT / "k8s/samples").glob("*.yaml"))
    listed = yaml.safe_load((ROOT / "k8s/samples/kustomization.yaml").read_text())["resources"]
    assert sorted(listed) == sorted(p.name for p in samples
                                    if p.name not in ("kustomization.yaml", "kustomizeconfig.yaml"))
    moved = render_overlay(KUBECTLS[version], tmp_path, ROOT / "k8s/samples", REGISTRY_IMAGES)
    assert len(moved) == len(listed)
    for job in moved:
        images = pod_images(job)
        assert images and all(i.startswith("registry.example.com/ml/fibermpi/") and i.endswith(":a1b2c3")
                              for i in images), (job["metadata"]["name"], images)
    # As a user gets them: a version tag, pulled when the node lacks it.
    for path in samples:
        if path.name.startswith("kustomiz"):
            continue
        job = yaml.safe_load(path.read_text())
        for template in (job["spec"]["launcher"]["template"], job["spec"]["workers"]["template"]):
            for c in template["spec"]["containers"]:
                assert c["image"].endswith(":0.1.0") and c["imagePullPolicy"] == "IfNotPresent", path.name


@pytest.mark.parametrize("version", sorted(KUBECTLS))
def test_the_namespaced_mode_binds_the_controller_in_its_namespace_only(version):
    out = subprocess.run([str(KUBECTLS[version]), "kustomize", str(ROOT / "k8s/config/namespaced")],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    docs = [doc for doc in yaml.safe_load_all(out) if doc]
    kinds = sorted(f"{d['kind']}/{d['metadata']['name']}" for d in docs)
    # Cluster-scoped: the CRD (a cluster administrator's, once) and the namespace; nothing that
    # grants anything beyond it.
    assert kinds == ["CustomResourceDefinition/fiberjobs.fibermpi.io", "Deployment/fiber-controller",
                     "Namespace/fibermpi", "Role/fiber-controller", "Role/fiber-controller-leader-election",
                     "RoleBinding/fiber-controller", "RoleBinding/fiber-controller-leader-election",
                     "ServiceAccount/fiber-controller"]
    for doc in docs:
        if doc["kind"] not in ("Namespace", "CustomResourceDefinition"):
            assert doc["metadata"]["namespace"] == "fibermpi", doc["metadata"]
    # The same rules as the cluster mode's ClusterRole: one list.
    (cluster_role,) = [d for d in render(KUBECTLS[version])
                       if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "fiber-controller"]
    (role,) = [d for d in docs if d["kind"] == "Role" and d["metadata"]["name"] == "fiber-controller"]
    assert role["rules"] == cluster_role["rules"]
    (binding,) = [d for d in docs if d["kind"] == "RoleBinding" and d["metadata"]["name"] == "fiber-controller"]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "fiber-controller"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "fiber-controller", "namespace": "fibermpi"}]
    (container,) = by_kind(docs, "Deployment")[0]["spec"]["template"]["spec"]["containers"]
    assert "--namespace=$(POD_NAMESPACE)" in container["args"]
    assert {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}} in container["env"]
    for doc in docs:
        if doc["kind"] != "CustomResourceDefinition":
            kubernetes_validate.validate(doc, f"{version}.0", strict=True)
