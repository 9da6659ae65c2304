"""The Python program the Kubernetes runtime tests run as a FiberJob's launcher; its worker pods run
it too (the worker template names no command), with the fibermpi package built against Open MPI
4.1 (.venv-openmpi4/). It prints what it saw; the test checks the cluster's side. Every result's
value is checked, so a lost or misplaced result fails.

Usage: python k8s_python_program.py loss
  loss   Pool(4) on 4 worker pods maps 2,000 tasks of 10 ms while the test deletes worker pods;
         prints how many results each worker (pod/pid) computed
"""

import collections
import os
import sys
import time

import fibermpi


def square_on_pod(x):
    """x squared, after 10 ms of work, and the worker that computed it: "<pod>/<pid>" (a
    replacement pod may reuse a deleted pod's name, never its process)."""
    until = time.monotonic() + 0.01
    while time.monotonic() < until:
        pass
    return x * x, f"{os.environ.get('FIBER_K8S_POD_NAME', '?')}/{os.getpid()}"


def loss():
    with fibermpi.Pool(4) as pool:
        pool.wait_until_workers_up()
        print("4 workers ready", flush=True)
        results = pool.map(square_on_pod, range(2000), chunksize=1)
    if [value for value, _ in results] != [x * x for x in range(2000)]:
        print(f"FAIL: {len(results)} results, not the 2000 squares in order", flush=True)
        return 1
    per_worker = collections.Counter(worker for _, worker in results)
    print("map of 2000:" + "".join(f" {worker}={count}" for worker, count in sorted(per_worker.items())),
          flush=True)
    return 0


if __name__ == "__main__":
    scenarios = {"loss": loss}
    if len(sys.argv) != 2 or sys.argv[1] not in scenarios:
        sys.exit(f"usage: k8s_python_program.py {'|'.join(scenarios)}")
    sys.exit(scenarios[sys.argv[1]]())
