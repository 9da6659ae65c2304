"""Processes with exit codes, and a failing task whose exception arrives with its own type and
the worker's traceback."""

import sys

import fibermpi as mp


def train(seed):
    if seed == 2:
        sys.exit(3)  # the exit code comes back as Process.exitcode


def check(x):
    if x < 0:
        raise ValueError(f"negative input {x}")
    return x


if __name__ == "__main__":
    processes = [mp.Process(target=train, args=(seed,), name=f"trainer-{seed}") for seed in range(4)]
    for process in processes:
        process.start()
    for process in processes:
        process.join()
        print(process.name, "exitcode", process.exitcode)
    with mp.Pool(2) as pool:
        try:
            pool.map(check, [1, -1])
        except ValueError as error:
            print("the task raised:", repr(error))
