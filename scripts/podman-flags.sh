# podman's flags on these machines, sourced by scripts/images and the image tests' helpers:
# crun refuses this machine's hybrid cgroup layout (runc with cgroupfs works), and the sandbox
# cannot raise rlimits, so containers get the ones it allows.
# shellcheck shell=bash
FIBER_PODMAN_GLOBAL=(--runtime runc --cgroup-manager cgroupfs)
FIBER_PODMAN_LIMITS=(--ulimit nofile=20000:20000 --ulimit nproc=4096:4096)
