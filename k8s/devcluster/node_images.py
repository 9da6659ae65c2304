"""Local images: the development cluster pulls nothing, so an image name can stand for a directory
of the host instead. The cluster's image table maps an image (a repository, optionally with a tag)
to a host directory, which the node bind-mounts read-only at the image's mount path inside the
pod's private mount namespace before the container's command runs; the image's `bin` directory
heads the container's PATH, as an image's `ENV PATH` would. The table's entries given with
--image come before podman's store, the default ones (`fallback`) after it; images in neither run
on the host's filesystem.

An image whose directory is missing, or one that cannot be mounted because the machine gives pods
no private mount namespace, cannot be "pulled": the container waits with reason ErrImagePull, then
ImagePullBackOff, as under a kubelet whose pull fails, and is tried again with backoff."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

DEFAULT_MOUNT_PATH = "/opt/fibermpi"
DEFAULT_TAG = "latest"
# Registry prefixes under which a Docker Hub name may be written (`docker.io/library/debian`).
_HUB_PREFIXES = ("docker.io/", "index.docker.io/", "registry-1.docker.io/")


class ImageError(Exception):
    """An image table entry is malformed; the message names the entry and the problem."""


def split_reference(image: str) -> tuple[str, str]:
    """(repository, tag) of an image reference: a digest is dropped, a missing tag is `latest`,
    and Docker Hub's implicit registry and `library/` namespace are removed."""
    name = image.strip().split("@", 1)[0]
    tag = DEFAULT_TAG
    last_part = name.rsplit("/", 1)[-1]
    if ":" in last_part:
        name, tag = name.rsplit(":", 1)
    for prefix in _HUB_PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix):]
            if name.startswith("library/"):
                name = name[len("library/"):]
            break
    return name, tag


@dataclass(frozen=True)
class LocalImage:
    """One entry of the table: `name` is a repository (any tag matches) or repository:tag."""

    name: str
    directory: str
    mount_path: str = DEFAULT_MOUNT_PATH
    fallback: bool = False            # a default entry: podman's image of that name comes first

    @property
    def has_tag(self) -> bool:
        return ":" in self.name.rsplit("/", 1)[-1]

    def matches(self, image: str) -> bool:
        repository, tag = split_reference(image)
        own_repository, own_tag = split_reference(self.name)
        return repository == own_repository and (not self.has_tag or tag == own_tag)

    @property
    def bin_dir(self) -> str:
        return os.path.join(self.mount_path, "bin")

    def to_argument(self) -> str:
        """The entry as `--image` takes it: NAME=HOSTDIR:MOUNTPATH."""
        return f"{self.name}={self.directory}:{self.mount_path}"

    def record(self) -> dict[str, Any]:
        """The entry as cluster.json records it."""
        record: dict[str, Any] = {"image": self.name, "directory": self.directory, "mountPath": self.mount_path}
        if self.fallback:
            record["fallback"] = True
        return record

    def pull_failure(self, image: str, private_mounts: bool) -> str:
        """Why a container of this image cannot start now, or empty when it can."""
        if not private_mounts:
            return (f'Failed to pull image "{image}": it is the host directory {self.directory}, which is mounted '
                    f"at {self.mount_path} in the pod's private mount namespace, and this machine gives pods none")
        if not os.path.isdir(self.directory):
            return (f'Failed to pull image "{image}": it is the host directory {self.directory}, which does not '
                    f"exist (install the image's files there)")
        return ""


def parse_image_argument(text: str, fallback: bool = False) -> LocalImage:
    """NAME=HOSTDIR[:MOUNTPATH] (mount path /opt/fibermpi when omitted); HOSTDIR is made absolute."""
    name, separator, rest = text.partition("=")
    name = name.strip()
    if not separator or not name or not rest:
        raise ImageError(f"image {text!r}: expected NAME=HOSTDIR[:MOUNTPATH], e.g. "
                         f"fibermpi/examples=/srv/image:{DEFAULT_MOUNT_PATH}")
    if any(character.isspace() for character in name) or name != name.lower():
        raise ImageError(f"image {text!r}: the name {name!r} is not an image reference (lower case, no spaces)")
    directory, separator, mount_path = rest.rpartition(":")
    if not separator or not mount_path.startswith("/"):
        directory, mount_path = rest, DEFAULT_MOUNT_PATH
    if not directory:
        raise ImageError(f"image {text!r}: the host directory is empty")
    mount_path = os.path.normpath(mount_path)
    if mount_path == "/":
        raise ImageError(f"image {text!r}: the mount path must be a directory below /, not / itself")
    return LocalImage(name, os.path.abspath(directory), mount_path, fallback)


@dataclass
class ImageTable:
    """The cluster's local images; an entry with a tag is preferred over one without."""

    images: list[LocalImage] = field(default_factory=list)

    def find(self, image: str) -> LocalImage | None:
        if not image:
            return None
        matching = [entry for entry in self.images if entry.matches(image)]
        matching.sort(key=lambda entry: not entry.has_tag)
        return matching[0] if matching else None

    def with_defaults(self, defaults: list[LocalImage]) -> "ImageTable":
        """This table plus the defaults whose names it does not have yet."""
        names = {entry.name for entry in self.images}
        return ImageTable(self.images + [entry for entry in defaults if entry.name not in names])
