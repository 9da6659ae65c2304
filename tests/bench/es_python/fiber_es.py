"""ES (es_common.py) on Uber's Fiber 0.2.1 (its local backend): fiber.Pool, multiprocessing's API,
its default chunking. Fiber's workers start in the master's working directory and import
es_common from there (they are not given the script's folder): run it from this folder.
Usage: fiber_es.py [--population 256] [--iterations 10] [--workers 2] [--seed 7]"""

import fiber

import es_common

if __name__ == "__main__":
    args = es_common.parse_args(__doc__)
    pool = fiber.Pool(args.workers)  # Fiber 0.2.1's pool is no context manager
    try:
        es_common.run("fiber", args, lambda members: pool.map(es_common.evaluate, members))
    finally:
        pool.terminate()
