"""Pool(maxtasksperchild=1): every task in a process of its own that ran nothing before, never a
rank of the launcher's world (which the pool without maxtasksperchild uses) and never one of the
reserve that served already; module-level state does not carry over."""

import os

import fibermpi as mp

calls = 0


def pid_and_calls(_):
    global calls
    calls += 1
    return os.getpid(), calls


if __name__ == "__main__":
    with mp.Pool(2) as pool:
        ordinary = {pid for pid, _ in pool.map(pid_and_calls, range(20), chunksize=1)}
    with mp.Pool(1, maxtasksperchild=1) as pool:
        fresh = pool.map(pid_and_calls, range(4), chunksize=1)
    pids = [pid for pid, _ in fresh]
    print("FRESH DISTINCT", len(set(pids)) == 4, flush=True)
    print("FRESH FIRST CALLS", all(count == 1 for _, count in fresh), flush=True)
    print("FRESH APART FROM ORDINARY", not (set(pids) & ordinary), flush=True)
