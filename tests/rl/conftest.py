"""Leave out the RL-library tests whose extra is not installed (``sb3``, ``trl``)."""

from __future__ import annotations

import importlib.util


def _missing(*modules: str) -> bool:
    return any(importlib.util.find_spec(name) is None for name in modules)


collect_ignore = [
    *(["test_sb3.py"] if _missing("stable_baselines3") else []),
    *(["test_sim2real.py"] if _missing("stable_baselines3", "sb3_contrib", "matplotlib") else []),
    *(["test_trl.py"] if _missing("trl", "transformers", "datasets", "tokenizers") else []),
]
