"""A Python program of fibermpi as a Slurm job runs it (tests/slurm/test_slurm_jobs.py): a Pool of
the default size over the ranks `fibermpi run` starts on the allocation, a map checked value by
value, and the exit status given as the first argument."""

import sys

import fibermpi as mp


def square(x):
    return x * x


if __name__ == "__main__":
    with mp.Pool() as pool:
        pool.wait_until_workers_up()
        print(f"python pool of {len(pool._pool.worker_pids())} workers", flush=True)
        values = pool.map(square, range(100), chunksize=1)
        assert values == [x * x for x in range(100)], values
        print(f"100 python results exact, exiting with {sys.argv[1]}", flush=True)
    sys.exit(int(sys.argv[1]))
