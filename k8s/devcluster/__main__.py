"""`python -m k8s.devcluster up|down|status DIR`, and the components it starts:
`python -m k8s.devcluster node ...`, `python -m k8s.devcluster scheduler ...` and
`python -m k8s.devcluster controller-manager ...`."""

from __future__ import annotations

import argparse
import sys

from . import cluster, node, node_lifecycle, scheduler


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="dev-cluster",
                                     description="The fibermpi development cluster: an API server stand-in, "
                                                 "a scheduler and nodes that run pods as podman containers (images in podman's store) "
                                                 "or local processes.")
    subparsers = parser.add_subparsers(dest="command", required=True)
    cluster.add_arguments(subparsers)
    node.add_arguments(subparsers.add_parser("node", help="run one node (a kubelet stand-in)"))
    scheduler.add_arguments(subparsers.add_parser("scheduler", help="run the scheduler"))
    node_lifecycle.add_arguments(subparsers.add_parser(
        "controller-manager", help="run the node lifecycle and taint eviction controllers"))
    args = parser.parse_args(argv)
    if args.command == "node":
        return node.main(args)
    if args.command == "scheduler":
        return scheduler.main(args)
    if args.command == "controller-manager":
        return node_lifecycle.main(args)
    return cluster.main(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
