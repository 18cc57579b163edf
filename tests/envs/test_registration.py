from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import dreamgym_env  # noqa: F401
from dreamgym_env.experience.openai_backend import OpenAIExperienceModel
from dreamgym_env.testing import ScriptedOpenAIServer

DREAMGYM_IDS = sorted(env_id for env_id in gym.registry if env_id.startswith("DreamGym/"))


def test_ids_registered():
    assert "DreamGym/WebShop-v0" in DREAMGYM_IDS
    spec = gym.spec("DreamGym/WebShop-v0")
    assert spec.nondeterministic and spec.max_episode_steps == 15


@pytest.mark.parametrize("env_id", DREAMGYM_IDS)
def test_check_env(env_id, agentgym_server):
    with ScriptedOpenAIServer() as server:
        kwargs = {}
        if "-Real-" in env_id:  # a stand-in AgentGym server over the reference env
            kwargs["base_url"] = agentgym_server(gym.spec(env_id).kwargs["domain"]).url
        elif "-Ref-" not in env_id:
            kwargs["experience_model"] = OpenAIExperienceModel(base_url=server.url, model="test")
        env = gym.make(env_id, **kwargs)
        check_env(env.unwrapped, skip_render_check=True)
        env.close()
        if "experience_model" in kwargs:
            kwargs["experience_model"].close()


def test_unknown_id_suggests():
    with pytest.raises(gym.error.Error, match="WebShop"):
        gym.make("DreamGym/WebShpo-v0")
