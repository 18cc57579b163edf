"""Benchmark and fidelity harness."""
