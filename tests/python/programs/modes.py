"""Runs in every launch mode: the code under the __main__ guard runs once (rank 0 under a
launcher), the pool's values are exact, a Process's exit code comes back."""

import os
import sys

import fibermpi as mp


def square(x):
    return x * x


def where(_):
    return os.getpid()


def exit_with(code):
    sys.exit(code)


if __name__ == "__main__":
    print("MAIN", os.getpid(), flush=True)
    with mp.Pool(3) as pool:
        assert pool.map(square, range(200)) == [x * x for x in range(200)]
        assert pool.apply(square, (12,)) == 144
        assert sorted(pool.imap_unordered(square, range(10))) == [x * x for x in range(10)]
        workers = set(pool.map(where, range(60), chunksize=1))
        assert os.getpid() not in workers, "a task ran in the master"
    process = mp.Process(target=exit_with, args=(7,))
    process.start()
    process.join()
    assert process.exitcode == 7, process.exitcode
    print("OK", len(workers), flush=True)
