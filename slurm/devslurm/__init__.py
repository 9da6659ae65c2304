"""The development Slurm: munged, slurmctld and one slurmd on this machine, every file of them in
one directory, for running and testing fibermpi programs under a real Slurm without a cluster."""
