"""Leave out the example smoke tests whose extra is not installed."""

from __future__ import annotations

import importlib.util

collect_ignore = [] if importlib.util.find_spec("stable_baselines3") else ["test_examples.py"]
