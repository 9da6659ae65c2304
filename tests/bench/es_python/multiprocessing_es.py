"""ES (es_common.py) on Python's multiprocessing.Pool (the default fork context), its default
chunking.
Usage: multiprocessing_es.py [--population 256] [--iterations 10] [--workers 2] [--seed 7]"""

import multiprocessing

import es_common

if __name__ == "__main__":
    args = es_common.parse_args(__doc__)
    with multiprocessing.Pool(args.workers) as pool:
        es_common.run("multiprocessing", args,
                      lambda members: pool.map(es_common.evaluate, members))
