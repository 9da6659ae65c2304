"""Local images: an image name the cluster maps to a host directory is mounted read-only at its
mount path in the pod's mount namespace with its bin/ on PATH; a missing directory or a machine
without mount namespaces leaves the container waiting in ErrImagePull, then ImagePullBackOff;
other images run on the host's filesystem."""

from __future__ import annotations

import os
import stat
from typing import Any

import pytest
from test_node_pods import FakeApi, context, make_pod, request_deletion, start  # noqa: F401 (fixture)

from k8s.devcluster import netns
from k8s.devcluster.cluster import ClusterError, image_table
from k8s.devcluster.node_images import (DEFAULT_MOUNT_PATH, ImageError, ImageTable, LocalImage,
                                        parse_image_argument, split_reference)
from k8s.devcluster.node_pod import NodeContext

MOUNT_PATH = "/opt/fiber-image-test"
mount_refusal = netns.probe_mount_namespaces()
needs_mounts = pytest.mark.skipif(bool(mount_refusal), reason=f"no mount namespaces here: {mount_refusal}")


def test_references_are_split_as_registries_read_them() -> None:
    assert split_reference("fibermpi/examples") == ("fibermpi/examples", "latest")
    assert split_reference("fibermpi/examples:v2") == ("fibermpi/examples", "v2")
    assert split_reference("docker.io/library/debian:12@sha256:abc") == ("debian", "12")
    assert split_reference("registry.local:5000/fibermpi/examples") == ("registry.local:5000/fibermpi/examples",
                                                                          "latest")


def test_table_matches_any_tag_or_exactly_the_given_one(tmp_path: Any) -> None:
    any_tag = LocalImage("fibermpi/examples", str(tmp_path / "a"))
    tagged = LocalImage("fibermpi/examples:v2", str(tmp_path / "b"))
    table = ImageTable([any_tag, tagged])
    assert table.find("fibermpi/examples:v2") == tagged
    assert table.find("docker.io/fibermpi/examples:v1") == any_tag
    assert table.find("fibermpi/examples") == any_tag
    assert table.find("fibermpi/other") is None and table.find("") is None
    assert ImageTable([tagged]).find("fibermpi/examples") is None


def test_arguments_parse_with_and_without_mount_path(tmp_path: Any) -> None:
    image = parse_image_argument(f"fibermpi/examples={tmp_path}")
    assert image == LocalImage("fibermpi/examples", str(tmp_path), DEFAULT_MOUNT_PATH)
    image = parse_image_argument("fibermpi/runtime:v1=relative/dir:/opt/x/")
    assert image == LocalImage("fibermpi/runtime:v1", os.path.abspath("relative/dir"), "/opt/x")
    assert parse_image_argument(image.to_argument()) == image
    for bad, complaint in (("fibermpi/examples", "expected NAME=HOSTDIR"), ("=/dir", "expected NAME=HOSTDIR"),
                           ("Fiber=/dir", "not an image reference"), ("x=/dir:/", "not / itself")):
        with pytest.raises(ImageError, match=complaint):
            parse_image_argument(bad)
    with pytest.raises(ClusterError, match="expected NAME=HOSTDIR"):
        image_table(["no-directory"])


def test_given_images_replace_the_defaults_of_the_same_name(tmp_path: Any) -> None:
    defaults = [LocalImage("fibermpi/examples", "/default"), LocalImage("fibermpi/runtime", "/default")]
    table = ImageTable([LocalImage("fibermpi/examples", str(tmp_path))]).with_defaults(defaults)
    assert [(entry.name, entry.directory) for entry in table.images] == [
        ("fibermpi/examples", str(tmp_path)), ("fibermpi/runtime", "/default")]


def make_image(root: Any) -> str:
    """An image directory with bin/hello (prints where it runs from and its PATH) and lib/data."""
    (root / "bin").mkdir(parents=True)
    (root / "lib").mkdir()
    (root / "lib" / "data").write_text("payload\n")
    hello = root / "bin" / "hello"
    hello.write_text("#!/bin/sh\necho \"hello from $0\"\necho \"PATH=$PATH\"\n"
                     f"cat {MOUNT_PATH}/lib/data\n"
                     f"touch {MOUNT_PATH}/written 2>/dev/null && echo writable || echo read-only\n")
    hello.chmod(hello.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(root)


def container_log(context: NodeContext, api: FakeApi, name: str) -> str:
    path = os.path.join(context.log_dir, f"team_{name}_{api.pod['metadata']['uid']}", "main.log")
    with open(path, encoding="utf-8") as handle:
        return handle.read()


@needs_mounts
def test_image_directory_is_mounted_read_only_with_bin_on_path(context: NodeContext, tmp_path: Any) -> None:
    directory = make_image(tmp_path / "image")
    context.images = ImageTable([LocalImage("fibermpi/examples", directory, MOUNT_PATH)])
    worker, api = start(context, make_pod("imaged", [{"name": "main", "image": "fibermpi/examples:v1",
                                                      "command": ["hello"]}]))
    api.wait("the pod's end", lambda: api.phase() in ("Succeeded", "Failed"))
    output = container_log(context, api, "imaged")
    assert api.phase() == "Succeeded", output
    lines = output.splitlines()
    assert lines[0] == f"hello from {MOUNT_PATH}/bin/hello"
    assert lines[1].startswith(f"PATH={MOUNT_PATH}/bin:")
    assert lines[2:] == ["payload", "read-only"]
    assert not os.path.exists(MOUNT_PATH), "the image's mount point leaked to the host"
    assert not os.path.exists(os.path.join(directory, "written"))
    assert api.container()["imageID"] == f"devcluster-dir://{directory}"


@needs_mounts
def test_a_pod_that_sets_path_keeps_it(context: NodeContext, tmp_path: Any) -> None:
    directory = make_image(tmp_path / "image")
    context.images = ImageTable([LocalImage("fibermpi/examples", directory, MOUNT_PATH)])
    container = {"name": "main", "image": "fibermpi/examples", "env": [{"name": "PATH", "value": "/usr/bin:/bin"}],
                 "command": [f"{MOUNT_PATH}/bin/hello"]}
    worker, api = start(context, make_pod("ownpath", [container]))
    api.wait("the pod's end", lambda: api.phase() in ("Succeeded", "Failed"))
    output = container_log(context, api, "ownpath")
    assert api.phase() == "Succeeded", output
    assert output.splitlines()[1] == "PATH=/usr/bin:/bin"


def waiting(api: FakeApi) -> dict[str, Any]:
    return api.container().get("state", {}).get("waiting", {})


@needs_mounts
def test_missing_directory_waits_in_image_pull_backoff_until_it_appears(context: NodeContext, tmp_path: Any) -> None:
    missing = tmp_path / "not-installed"
    context.images = ImageTable([LocalImage("fibermpi/examples", str(missing), MOUNT_PATH)])
    worker, api = start(context, make_pod("nopull", [{"name": "main", "image": "fibermpi/examples",
                                                     "command": ["hello"]}]))
    api.wait("ErrImagePull", lambda: waiting(api).get("reason") == "ErrImagePull")
    assert str(missing) in waiting(api)["message"] and "does not exist" in waiting(api)["message"]
    assert api.phase() == "Pending"
    assert any(event["reason"] == "Failed" and str(missing) in event["message"] for event in api.events)
    api.wait("ImagePullBackOff", lambda: waiting(api).get("reason") == "ImagePullBackOff")
    assert waiting(api)["message"].startswith('Back-off pulling image "fibermpi/examples"')
    assert str(missing) in waiting(api)["message"]
    assert api.container()["restartCount"] == 0
    make_image(missing)
    api.wait("the pod's end once the directory exists", lambda: api.phase() in ("Succeeded", "Failed"), 40)
    assert api.phase() == "Succeeded", container_log(context, api, "nopull")


def test_without_mount_namespaces_a_local_image_cannot_be_pulled(context: NodeContext, tmp_path: Any) -> None:
    directory = make_image(tmp_path / "image")
    context.private_mounts = False
    context.images = ImageTable([LocalImage("fibermpi/examples", directory, MOUNT_PATH)])
    worker, api = start(context, make_pod("nomounts", [{"name": "main", "image": "fibermpi/examples",
                                                       "command": ["hello"]}]))
    api.wait("ErrImagePull", lambda: waiting(api).get("reason") == "ErrImagePull")
    assert directory in waiting(api)["message"] and "private mount namespace" in waiting(api)["message"]
    request_deletion(worker, api, 0)
    api.wait("deletion", lambda: bool(api.deleted))


def test_images_not_in_the_table_run_on_the_host(context: NodeContext, tmp_path: Any) -> None:
    context.images = ImageTable([LocalImage("fibermpi/examples", str(tmp_path / "missing"), MOUNT_PATH)])
    out = tmp_path / "out"
    worker, api = start(context, make_pod("host", [{"name": "main", "image": "debian:bookworm",
                                                   "command": ["sh", "-c", f"echo $PATH > {out}"]}]))
    api.wait("the pod's end", lambda: api.phase() in ("Succeeded", "Failed"))
    assert api.phase() == "Succeeded"
    assert out.read_text().strip() == context.base_path
