"""Helpers for RL libraries: SB3 set-up, GRPO group rollouts."""
