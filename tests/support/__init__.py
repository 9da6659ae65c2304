"""Helpers the Python tests and benchmarks share."""
