"""Helpers for RL libraries; import the module you need (each pulls in its own extra).

* :mod:`dreamgym_env.rl.groups`: GRPO group rollouts (N tasks x G rollouts, group advantages).
* :mod:`dreamgym_env.rl.sb3`: Stable-Baselines3 candidate-scoring policies, callbacks, evaluation.
* :mod:`dreamgym_env.rl.trl`: a ``rollout_func`` for TRL's ``GRPOTrainer`` (an LLM plays episodes).
* :mod:`dreamgym_env.rl.tiny_lm`: a tiny random causal LM and a local tokenizer, built offline.
* :mod:`dreamgym_env.rl.sim2real`: the sim-to-real experiment (``dreamgym experiment sim2real``).
"""
