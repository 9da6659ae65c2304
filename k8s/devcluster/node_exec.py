"""The last step before a container's command: run inside the pod's fresh mount (and UTS)
namespace, it mounts the pod's volumes at their mountPaths, sets the host name, changes to the
working dir and execs the command with the container's environment.

Run as a stand-alone script (stdlib only): `python3 -I node_exec.py SPEC.json`, where the JSON has
command, env, workingDir, hostname, mounts [{source, target, readOnly, optional}], scratch (a directory of
the pod's for overlay layers) and startErrorFile. A mount target that does not exist is created inside an overlay of
its nearest existing ancestor, so nothing is written to the host's directories. Exit code 128 and a
message on stderr when the command cannot be started, as a container runtime's StartError."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys


START_ERROR_FILE = ""


def fail(message: str) -> None:
    """Ends as a container runtime's StartError: exit 128, the reason in the start-error file."""
    sys.stderr.write(f"fiber-devcluster: {message}\n")
    sys.stderr.flush()
    if START_ERROR_FILE:
        with open(START_ERROR_FILE, "w", encoding="utf-8") as handle:
            handle.write(message)
    sys.exit(128)


class MountError(Exception):
    """A mount failed; the message has the command and its error output."""


def run_mount(*args: str) -> None:
    result = subprocess.run(["mount", *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise MountError(f"mount {' '.join(args)}: {result.stderr.strip()}")


def nearest_existing(path: str) -> str:
    while not os.path.exists(path):
        path = os.path.dirname(path)
    return path


def mounts_below(directory: str) -> list[str]:
    """The outermost mount points strictly inside directory (e.g. /dev/pts and /dev/shm for /dev),
    from this namespace's mount table (whose paths escape blanks and backslashes as octal)."""
    prefix = directory.rstrip("/") + "/"
    found: list[str] = []
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            if len(fields) < 5:
                continue
            point = re.sub(r"\\([0-7]{3})", lambda match: chr(int(match.group(1), 8)), fields[4])
            if point.startswith(prefix) and point not in found:
                found.append(point)
    return [point for point in sorted(found)
            if not any(point.startswith(other + "/") for other in found if other != point)]


def make_mount_point(target: str, is_directory: bool, scratch: str, overlays: list[str]) -> None:
    """Creates target inside an overlay of its nearest existing ancestor (never on the host). The
    overlay shows the ancestor's own filesystem only, so the mounts inside it (/dev/pts and
    /dev/shm under /dev) are set aside before and moved back on top of it after."""
    if os.path.exists(target):
        return
    # Resolved: through a symbolic link (/var/run -> /run) the mount table names the real path, and
    # the mounts already inside it (a sibling volume) must be found there to be kept.
    ancestor = os.path.realpath(nearest_existing(target))
    if ancestor == "/":
        raise MountError(f"mount point {target} needs a new top-level directory, which the node creates first")
    layer = os.path.join(scratch, f"overlay{len(overlays)}")
    os.makedirs(os.path.join(layer, "upper"), exist_ok=True)
    os.makedirs(os.path.join(layer, "work"), exist_ok=True)
    kept = []
    for index, point in enumerate(mounts_below(ancestor)):
        holder = os.path.join(layer, f"kept{index}")
        if os.path.isdir(point):
            os.makedirs(holder, exist_ok=True)
        else:
            open(holder, "a", encoding="utf-8").close()
        run_mount("--rbind", point, holder)
        kept.append((holder, point))
    run_mount("-t", "overlay", "overlay", "-o",
              f"lowerdir={ancestor},upperdir={layer}/upper,workdir={layer}/work", ancestor)
    for holder, point in kept:
        run_mount("--move", holder, point)
    overlays.append(ancestor)
    if is_directory:
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a", encoding="utf-8").close()


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        spec = json.load(handle)
    global START_ERROR_FILE
    START_ERROR_FILE = spec.get("startErrorFile", "")
    overlays: list[str] = []
    for mount in sorted(spec.get("mounts", []), key=lambda entry: entry["target"].count("/")):
        source, target = mount["source"], os.path.normpath(mount["target"])
        try:
            make_mount_point(target, os.path.isdir(source), spec["scratch"], overlays)
            run_mount("--bind", source, target)
            if mount.get("readOnly"):
                run_mount("-o", "remount,bind,ro", target)
        except MountError as error:
            # An optional mount (the termination-message file) that this machine refuses costs the
            # feature, not the container.
            if not mount.get("optional"):
                fail(str(error))
    if spec.get("hostname"):
        socket.sethostname(spec["hostname"])
    working_dir = spec.get("workingDir") or "/"
    try:
        os.chdir(working_dir)
    except OSError as error:
        fail(f"working directory {working_dir}: {error.strerror}")
    command = spec["command"]
    try:
        os.execvpe(command[0], command, spec["env"])
    except OSError as error:
        fail(f'exec: "{command[0]}": {error.strerror}')


if __name__ == "__main__":
    main()
