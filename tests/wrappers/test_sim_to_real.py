from __future__ import annotations

import gymnasium as gym
import pytest

from dreamgym_env.envs.synthetic import DreamEnv
from dreamgym_env.envs.webshop.reference_env import WebShopRefEnv
from dreamgym_env.errors import ConfigurationError, SpaceMismatchError
from dreamgym_env.spaces import UnicodeText
from dreamgym_env.wrappers.sim_to_real import RealWithProbability, SimToReal, SourceCounts, SyntheticFirst


@pytest.fixture
def envs(scripted_model):
    synthetic = DreamEnv("webshop", scripted_model, max_steps=3, split="test")
    real = WebShopRefEnv(split="test", max_steps=3)
    return synthetic, real


def play(env: SimToReal, episodes: int, action: str = "click[Back to Search]") -> list[tuple[str, list[str]]]:
    """Run episodes of ``action`` (after a search); return each reset's source and its steps' sources."""
    out = []
    for _ in range(episodes):
        _, info = env.reset()
        sources = []
        done, first = False, True
        while not done:
            _, _, terminated, truncated, step_info = env.step("search[red shoes]" if first else action)
            sources.append(step_info["source"])
            first, done = False, terminated or truncated
        out.append((info["source"], sources))
    return out


def test_synthetic_first_episodes_switches_at_the_scheduled_episode(envs):
    env = SimToReal(*envs, schedule=SyntheticFirst(episodes=2))
    env.reset(seed=0)
    runs = play(env, 4)
    # the first reset above served a synthetic episode that was never stepped
    assert [source for source, _ in runs] == ["synthetic", "real", "real", "real"]
    assert all(step_sources == [source] * len(step_sources) for source, step_sources in runs)
    assert env.counts == SourceCounts(synthetic_steps=3, real_steps=9, synthetic_episodes=2, real_episodes=3)


def test_synthetic_first_steps_never_cuts_an_episode(envs):
    env = SimToReal(*envs, schedule=SyntheticFirst(steps=4))
    env.reset(seed=0)
    sources = [source for source, _ in play(env, 3)]
    # 3 synthetic steps after the first episode, 6 after the second (>= 4): real from the third
    assert sources == ["synthetic", "synthetic", "real"]
    assert (env.counts.synthetic_steps, env.counts.real_steps) == (6, 3)


def test_real_steps_are_counted_apart_and_reported_in_info(envs):
    env = SimToReal(*envs)
    env.switch("real")
    observation, info = env.reset(seed=1)
    assert info["source"] == "real" and observation.startswith("WebShop [SEP] Instruction:")
    assert info["state"].startswith("WebShop | search")
    _, _, _, _, info = env.step("search[shoes]")
    assert info["source"] == "real" and info["action_valid"]
    assert env.counts.real_steps == 1 and env.counts.synthetic_steps == 0 and env.counts.steps == 1


def test_switch_pins_toggles_and_hands_back_to_the_schedule(envs):
    env = SimToReal(*envs, schedule=SyntheticFirst(episodes=100))
    assert env.reset(seed=0)[1]["source"] == "synthetic"
    env.switch()  # toggle
    assert env.reset()[1]["source"] == "real"
    env.switch()
    assert env.reset()[1]["source"] == "synthetic"
    env.switch("real")
    assert env.reset()[1]["source"] == "real"
    env.switch(None)
    assert env.reset()[1]["source"] == "synthetic"
    with pytest.raises(ConfigurationError):
        env.switch("simulated")  # type: ignore[arg-type]


def test_switch_takes_effect_at_the_next_reset_only(envs):
    env = SimToReal(*envs)
    env.reset(seed=0)
    env.switch("real")
    _, _, _, _, info = env.step("search[shoes]")
    assert info["source"] == "synthetic"
    assert env.reset()[1]["source"] == "real"


def test_real_with_probability_is_seeded_and_mixes(envs):
    def sources(seed: int) -> list[str]:
        env = SimToReal(*envs, schedule=RealWithProbability(0.5))
        return [env.reset(seed=seed if i == 0 else None)[1]["source"] for i in range(40)]

    first = sources(3)
    assert first == sources(3)
    assert 5 < first.count("real") < 35
    always = SimToReal(*envs, schedule=RealWithProbability(1.0))
    assert always.reset(seed=0)[1]["source"] == "real"


def test_callable_schedule_sees_the_counts(envs):
    seen: list[SourceCounts] = []

    def schedule(counts, rng):
        seen.append(counts)
        return "real" if counts.episodes % 2 else "synthetic"

    env = SimToReal(*envs, schedule=schedule)
    assert [env.reset(seed=0)[1]["source"], env.reset()[1]["source"], env.reset()[1]["source"]] == [
        "synthetic",
        "real",
        "synthetic",
    ]
    assert [c.episodes for c in seen] == [0, 1, 2]
    bad = SimToReal(*envs, schedule=lambda counts, rng: "elsewhere")  # type: ignore[arg-type,return-value]
    with pytest.raises(ConfigurationError, match="elsewhere"):
        bad.reset()


def test_mismatched_spaces_are_refused_with_a_clear_error(scripted_model):
    synthetic = DreamEnv("webshop", scripted_model)
    with pytest.raises(
        SpaceMismatchError,
        match=r"observation_spaces; the synthetic env has UnicodeText.*the real env has Box",
    ):
        SimToReal(synthetic, gym.make("CartPole-v1").unwrapped)
    short = WebShopRefEnv(max_text_length=100)
    assert short.observation_space == UnicodeText(100)
    with pytest.raises(SpaceMismatchError, match="observation_space"):
        SimToReal(synthetic, short)
    with pytest.raises(ConfigurationError, match="exactly one"):
        SyntheticFirst()
    with pytest.raises(ConfigurationError):
        RealWithProbability(1.5)


def test_real_steps_reach_the_listeners_as_steps(envs):
    env = SimToReal(*envs, schedule=SyntheticFirst(episodes=1))
    recorded = []
    env.add_real_step_listener(lambda task, step: recorded.append((task.id, step)))
    env.reset(seed=0)
    env.step("search[shoes]")  # synthetic: not recorded
    _, info = env.reset()
    real_obs = env.real_env.unwrapped.state
    _, reward, _, _, real_info = env.step("search[blue shirt]")
    obs = real_info["state"]  # the Markov page, what the experience model is grounded in
    env.step("click[no such label]")
    assert [task_id for task_id, _ in recorded] == [info["task_id"]] * 2
    first, invalid = recorded[0][1], recorded[1][1]
    assert (first.state, first.action, first.next_state, first.reward) == (
        real_obs,
        "search[blue shirt]",
        obs,
        reward,
    )
    assert not invalid.action_valid and invalid.state == obs


def test_replay_grounding_over_sim_to_real_writes_real_steps_as_real(envs):
    from dreamgym_env.replay.buffer import ExperienceReplayBuffer
    from dreamgym_env.wrappers.replay_grounding import ReplayGrounding

    buffer = ExperienceReplayBuffer(None, embedder="hashed")
    env = ReplayGrounding(SimToReal(*envs, schedule=SyntheticFirst(episodes=1)), buffer, k=0)
    env.reset(seed=0)
    env.step("search[red shoes]")
    env.reset()
    env.step("search[blue shirt]")
    env.step("click[Back to Search]")
    counts = buffer.counts()
    assert counts["synthetic"] == 1 and counts["real"] == 2
    buffer.close()


def test_a_listener_can_fill_a_replay_buffer(envs):
    from dreamgym_env.replay.buffer import ExperienceReplayBuffer

    buffer = ExperienceReplayBuffer(None, embedder="hashed")
    env = SimToReal(*envs)
    env.add_real_step_listener(lambda task, step: buffer.add(task, step, source="real"))
    env.switch("real")
    env.reset(seed=0)
    env.step("search[red shoes]")
    assert buffer.counts()["real"] == 1
    buffer.close()
