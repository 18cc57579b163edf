"""Fixtures of the toy-pack tests: the pack registered per module, scripted models, toy data."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dreamgym_env.agents.rollouts import collect
from dreamgym_env.envs.oracle import OracleExperienceModel
from dreamgym_env.envs.registry import get_domain, register_domain, unregister_domain
from dreamgym_env.errors import UnknownNameError
from dreamgym_env.testing import ScriptedExperienceModel, ScriptedOpenAIServer
from dreamgym_env.types import ExperienceRequest, Task, Transition

from .pack import ToyDomain, goal_of


@pytest.fixture(scope="module")
def toy() -> Iterator[ToyDomain]:
    """The toy pack, registered (``DreamGym/Toy-v0``, ``DreamGym/Toy-Ref-v0``) for one module."""
    with pytest.raises(UnknownNameError):
        get_domain("toy")  # nothing outside this folder knows the pack
    domain = register_domain(ToyDomain())
    assert isinstance(domain, ToyDomain)
    yield domain
    unregister_domain("toy")


@pytest.fixture
def toy_task(toy: ToyDomain) -> Task:
    """A train task whose key is in the library (north of the hall)."""
    task = toy.tasks("train")[1]
    assert goal_of(task).key_room == "library"
    return task


def toy_reply(request: ExperienceRequest) -> Transition:
    """A scripted toy house: every action leads to the vault; CLAIM ends the episode, won on the treasure."""
    goal = goal_of(request.task)
    if request.action.startswith("CLAIM "):
        won = request.action == f"CLAIM {goal.treasure}"
        return Transition(
            reasoning="claimed",
            next_state=f"Toy | done\nGoal: {request.task.instruction}\nYou claimed the {request.action[6:]}.",
            reward=float(won),
            terminated=True,
        )
    return Transition(
        reasoning=f"after {request.action}",
        next_state=(
            f"Toy | vault\nGoal: {request.task.instruction}\nExits: west (hall)\n"
            f"Here: {', '.join(goal.vault_items)}\nHolding: key\nDoor: open\nNote: {request.action}"
        ),
    )


@pytest.fixture
def toy_model() -> Iterator[ScriptedExperienceModel]:
    model = ScriptedExperienceModel(toy_reply)
    yield model
    model.close()


@pytest.fixture
def oracle(toy: ToyDomain) -> Iterator[OracleExperienceModel]:
    model = OracleExperienceModel(toy)
    yield model
    model.close()


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def toy_offline(toy: ToyDomain, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Noisy-expert trajectories of the toy reference env (JSONL, 30 episodes)."""
    path = tmp_path_factory.mktemp("toy") / "toy.jsonl"
    summary = collect("toy", "noisy", 30, path, seed=3, progress=False)
    assert summary.episodes == 30 and summary.domain == "toy"
    return path
