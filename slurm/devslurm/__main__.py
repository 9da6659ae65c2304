"""`python -m slurm.devslurm up|down|status DIR`."""

from __future__ import annotations

import argparse
import sys

from . import cluster


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="dev-slurm",
                                     description="The fibermpi development Slurm: munged, slurmctld and one slurmd "
                                                 "(node `localhost`, partition `debug`) whose every file lives in DIR.")
    cluster.add_arguments(parser.add_subparsers(dest="command", required=True))
    return cluster.main(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
