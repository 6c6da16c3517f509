"""Benchmarks of durable-responses (run with `make bench` or `python -m bench`)."""
