"""A task's function whose module the workers cannot import: the master imports it, then its
file goes away before the task runs. The task fails with the ImportError's text, the pool goes
on."""

import importlib
import os
import shutil
import sys
import tempfile

import fibermpi as mp


def square(x):
    return x * x


if __name__ == "__main__":
    folder = tempfile.mkdtemp()
    with open(os.path.join(folder, "short_lived.py"), "w") as module:
        module.write("def triple(x):\n    return 3 * x\n")
    sys.path.insert(0, folder)
    short_lived = importlib.import_module("short_lived")
    shutil.rmtree(folder)
    importlib.invalidate_caches()
    with mp.Pool(1) as pool:
        try:
            pool.apply(short_lived.triple, (2,))
        except ImportError as error:
            print("IMPORT ERROR:", error, flush=True)
        print("STILL", pool.apply(square, (3,)), flush=True)
