"""ES (es_common.py) on Ray, as its users write ES: a local cluster of W CPUs (ray.init) and one
remote task per member, its results gathered with ray.get.
Usage: ray_es.py [--population 256] [--iterations 10] [--workers 2] [--seed 7]"""

import ray

import es_common


@ray.remote
def evaluate(member):
    return es_common.evaluate(member)


if __name__ == "__main__":
    args = es_common.parse_args(__doc__)
    ray.init(num_cpus=args.workers, include_dashboard=False)
    try:
        es_common.run("ray", args,
                      lambda members: ray.get([evaluate.remote(m) for m in members]))
    finally:
        ray.shutdown()
