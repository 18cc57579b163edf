from __future__ import annotations

from pathlib import Path

import pytest

from dreamgym_env.agents.rollouts import collect
from dreamgym_env.replay.embedders import HashedEmbedder
from dreamgym_env.replay.jsonl import read_trajectories
from dreamgym_env.types import Trajectory


@pytest.fixture(scope="session")
def offline_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Offline WebShop trajectories of the reference env (noisy expert, 60 episodes)."""
    path = tmp_path_factory.mktemp("offline") / "webshop.jsonl"
    collect("webshop", "noisy", 60, path, seed=7, progress=False)
    return path


@pytest.fixture(scope="session")
def offline_trajectories(offline_file: Path) -> list[Trajectory]:
    return read_trajectories(offline_file)


@pytest.fixture
def embedder() -> HashedEmbedder:
    return HashedEmbedder()
