"""mpi4py and fibermpi in one program, imported in either order (argv[1]): the MPI that mpi4py
initialised (MPI_THREAD_MULTIPLE) is fibermpi's, and spawning works as root too."""

import sys

if sys.argv[1] == "mpi4py-first":
    from mpi4py import MPI

    import fibermpi as mp
else:
    import fibermpi as mp
    from mpi4py import MPI


def square(x):
    return x * x


if __name__ == "__main__":
    with mp.Pool(2) as pool:
        values = pool.map(square, range(5))
    assert values == [0, 1, 4, 9, 16], values
    assert MPI.Query_thread() == MPI.THREAD_MULTIPLE
    print("WORLD", MPI.COMM_WORLD.Get_size(), "OK", flush=True)
