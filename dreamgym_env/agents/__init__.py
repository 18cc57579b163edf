"""Baseline text policies: random, expert, LLM agent."""
