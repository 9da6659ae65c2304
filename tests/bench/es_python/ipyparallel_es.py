"""ES (es_common.py) on ipyparallel: a cluster of W engines (ipyparallel.Cluster) and a
load-balanced view's map_sync, its default chunking (one member per task).
Usage: ipyparallel_es.py [--population 256] [--iterations 10] [--workers 2] [--seed 7]"""

import os

import ipyparallel

import es_common

if __name__ == "__main__":
    args = es_common.parse_args(__doc__)
    with ipyparallel.Cluster(n=args.workers, log_level=40) as client:
        # es_common travels by name: the engines import it from this folder.
        here = os.path.dirname(os.path.abspath(__file__))
        client[:].execute(f"import sys; sys.path.insert(0, {here!r})", block=True)
        view = client.load_balanced_view()
        es_common.run("ipyparallel", args,
                      lambda members: view.map_sync(es_common.evaluate, members))
