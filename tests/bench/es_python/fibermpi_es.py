"""ES (es_common.py) on fibermpi's Pool: multiprocessing's API, its default chunking.

Runs as `python fibermpi_es.py` (the pool spawns its workers) and unchanged under
`fibermpi run -n W+1 python fibermpi_es.py` (ranks 1..W are the pool's workers).
Usage: fibermpi_es.py [--population 256] [--iterations 10] [--workers 2] [--seed 7]"""

import os

import fibermpi as mp

import es_common


def launched() -> bool:
    return any(os.environ.get(v) for v in ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"))


if __name__ == "__main__":
    args = es_common.parse_args(__doc__)
    impl = "fibermpi (static ranks)" if launched() else "fibermpi (spawned)"
    with mp.Pool(args.workers) as pool:
        es_common.run(impl, args, lambda members: pool.map(es_common.evaluate, members))
