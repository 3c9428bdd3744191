"""Benchmarks for lakectl (``make bench``): not tests, never collected by pytest."""
