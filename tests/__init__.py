"""The project's tests. A package so that `tests.support` is found from the checkout's root (the
directory pytest and the benchmarks run from) before any `tests` a dependency might install."""
