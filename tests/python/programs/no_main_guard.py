"""A script that makes its pool at module level, with no __main__ guard: the workers, which
import it again, must refuse to make another (multiprocessing's bootstrapping RuntimeError)
instead of recursing."""

import fibermpi as mp


def square(x):
    return x * x


pool = mp.Pool(2)
print(pool.map(square, range(4)))
