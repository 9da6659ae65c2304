"""Waits in a long map until Ctrl-C: the master gets KeyboardInterrupt there, and every worker
ends with the program."""

import os
import time

import fibermpi as mp


def slow(x):
    time.sleep(5)
    return x


if __name__ == "__main__":
    with mp.Pool(2) as pool:
        pool.wait_until_workers_up()
        print("WORKERS", *pool._pool.worker_pids(), "MASTER", os.getpid(), flush=True)
        try:
            pool.map(slow, range(1000), chunksize=1)
        except KeyboardInterrupt:
            print("INTERRUPTED", flush=True)
            raise
