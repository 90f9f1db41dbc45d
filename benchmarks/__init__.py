"""Benchmarks, probes and profilers: run from the repository root (`python -m benchmarks.NAME`).
They are not part of the installed packages; docs/PERFORMANCE.md quotes what they print."""
