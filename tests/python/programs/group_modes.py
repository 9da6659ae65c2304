"""A Group in the program's launch mode: three members Allreduce on group_comm(), one fails
once, the group runs again; the master prints what the members reported and the exit codes."""

import sys

import fibermpi


def member(results):
    comm = fibermpi.group_comm()
    total = comm.allreduce(comm.Get_rank() + 1)
    if fibermpi.group_restarts() == 0 and comm.Get_rank() == 2:
        sys.exit(4)
    comm.Barrier()  # never passed in the failed attempt: no member reports from it
    results.put((fibermpi.group_restarts(), comm.Get_rank(), comm.Get_size(), total))


if __name__ == "__main__":
    results = fibermpi.Queue()
    with fibermpi.Group(3, member, args=(results,), max_restarts=1) as group:
        pass
    reports = sorted(results.get(timeout=30) for _ in range(3))
    print("REPORTS", reports, flush=True)
    print("GROUP", group.exitcodes, group.restarts, flush=True)
