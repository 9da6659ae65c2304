"""An mpi4py SPMD body in a fibermpi.Group: the members average their gradients with Allreduce
on group_comm() (where the mpirun program used MPI.COMM_WORLD); a member that is lost makes the
whole group run again, resuming from the checkpoint the body keeps."""

import os
import signal

import numpy as np

import fibermpi as mp


def train(steps, checkpoints):
    comm = mp.group_comm()                                # was: MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    start, weights = checkpoints.get("last", (0, np.zeros(4)))
    for step in range(start, steps):
        gradient = np.full(4, float(rank + step))         # this member's share of the batch
        average = np.empty_like(gradient)
        comm.Allreduce(gradient, average)
        weights -= 0.1 * average / size
        if rank == 0:
            checkpoints["last"] = (step + 1, weights)
        if step == 2 and mp.group_restarts() == 0 and rank == size - 1:
            os.kill(os.getpid(), signal.SIGKILL)          # a member lost once, mid-run


if __name__ == "__main__":
    with mp.Manager() as manager:
        checkpoints = manager.dict()
        with mp.Group(3, train, args=(5, checkpoints), max_restarts=1) as group:
            pass
        steps, weights = checkpoints["last"]
        print("exit codes", group.exitcodes, "after", group.restarts, "restart")
        print("trained", steps, "steps; weights", weights)
