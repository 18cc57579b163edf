"""Wrappers: replay grounding, curriculum resets, sim-to-real and RL-library adapters."""
