"""Experience-model backends and what they share: prompts, output parsing, retries, cache."""
