"""step_many: the one way several synthetic envs step together."""

from __future__ import annotations

import pytest

from dreamgym_env.envs.stepping import step_many
from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.errors import ConfigurationError, ModelOutputError
from dreamgym_env.experience.base import ExperienceRequest
from dreamgym_env.testing import ScriptedExperienceModel
from dreamgym_env.types import Transition


def failing_on(word: str, page_after):
    def answer(request: ExperienceRequest) -> Transition:
        if word in request.action:
            raise ModelOutputError(
                f"task {request.task.id!r}, action {request.action!r}: kept answering junk"
            )
        return page_after(request)

    return ScriptedExperienceModel(answer)


def started(model, n: int, **kwargs) -> list[DreamEnv]:
    envs = [DreamEnv("webshop", model, max_steps=5, split="test", **kwargs) for _ in range(n)]
    for seed, env in enumerate(envs):
        env.reset(seed=seed)
    return envs


def test_the_valid_actions_of_envs_sharing_a_model_go_as_one_batch(page_after):
    model = ScriptedExperienceModel(page_after)
    envs = started(model, 3)
    results = step_many(envs, ["search[a]", "not an action", "search[b]"])
    assert model.batches == 1 and model.calls == 2
    assert [r[4]["action_valid"] for r in results] == [True, False, True]
    assert [len(env.steps) for env in envs] == [1, 1, 1]


def test_a_failure_raises_with_nothing_recorded_and_names_the_env_it_concerns(page_after):
    envs = started(failing_on("broken", page_after), 3, on_model_error="raise")
    named: list[tuple[list[int], bool]] = []
    with pytest.raises(ModelOutputError):
        step_many(
            envs,
            ["search[a]", "bad", "search[broken]"],
            on_error=lambda e, p, exact: named.append((p, exact)),
        )
    assert named == [([2], True)]
    assert all(env.steps == [] for env in envs)  # the invalid action of env 1 was not recorded either


def test_a_failure_ends_its_own_envs_episode_truncated_and_the_others_step(page_after):
    model = failing_on("broken", page_after)
    envs = started(model, 3)
    results = step_many(envs, ["search[a]", "search[broken]", "bad"])
    assert not any(isinstance(r, BaseException) for r in results)
    _, reward, terminated, truncated, info = results[1]  # type: ignore[misc]
    assert (reward, terminated, truncated) == (0.0, False, True)
    assert info["error"].startswith("ModelOutputError: ") and info["action_valid"]
    assert [len(env.steps) for env in envs] == [1, 0, 1]  # the failed step is not recorded
    assert [env.model_failures for env in envs] == [0, 1, 0]
    with pytest.raises(ConfigurationError, match="reset"):  # the episode has ended
        step_many([envs[1]], ["search[a]"])


def test_isolated_failures_fail_their_own_env_and_the_others_step(page_after):
    model = failing_on("broken", page_after)
    envs = started(model, 3)
    results = step_many(envs, ["search[a]", "search[broken]", "search[c]"], isolate=(ModelOutputError,))
    assert isinstance(results[1], ModelOutputError)
    assert not isinstance(results[0], BaseException) and not isinstance(results[2], BaseException)
    assert [len(env.steps) for env in envs] == [1, 0, 1]
    assert model.batches == 4  # the batch, then each request alone


def test_an_env_before_its_reset_and_a_length_mismatch_are_configuration_errors(page_after):
    model = ScriptedExperienceModel(page_after)
    with pytest.raises(ConfigurationError, match="reset"):
        step_many([DreamEnv("webshop", model, split="test")], ["search[a]"])
    with pytest.raises(ConfigurationError, match="2 actions for 1 envs"):
        step_many(started(model, 1), ["search[a]", "search[b]"])
