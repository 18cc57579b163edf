"""DreamGym/<X>-Real-v0 against a local AgentGym server backed by the reference env.

The server (:class:`dreamgym_env.testing.AgentGymServer`) speaks AgentGym's protocol and
reshapes the reference env's texts as AgentGym's servers reshape the real benchmarks'; the real
envs must undo that, so an expert episode on the server reads exactly as on the reference env.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import pytest

from dreamgym_env.agents.make import make_agent
from dreamgym_env.bench.episodes import run_bench
from dreamgym_env.domain import Domain
from dreamgym_env.envs.registry import get_domain, real_id, reference_id, synthetic_id
from dreamgym_env.envs.webshop.real_server import page_labels
from dreamgym_env.errors import ConfigurationError, RealServerError, RealServerTimeoutError
from dreamgym_env.testing import AgentGymServer, delay, http_error, raw
from dreamgym_env.types import Step, Task
from dreamgym_env.wrappers import SimToReal


@dataclass(frozen=True)
class Pack:
    """One domain: its real id, a task index on the stand-in server, the server's launch command."""

    flavor: str
    index: int
    launch: str

    @property
    def domain(self) -> Domain:
        return get_domain(self.flavor)

    @property
    def env_id(self) -> str:
        return real_id(self.domain)

    def server_task(self, server: AgentGymServer) -> Task:
        """The task behind :attr:`index` on ``server`` (the ``agentgym_server`` fixture's)."""
        return server.tasks[self.index]


PACKS = {
    "webshop": Pack("webshop", 3, "webshop --host 0.0.0.0 --port 36001"),
    "alfworld": Pack("alfworld", 2425, "alfworld --host 0.0.0.0 --port 36001"),  # a test game
}


@pytest.fixture(params=sorted(PACKS))
def pack(request) -> Pack:
    return PACKS[request.param]


@pytest.fixture
def server(pack, agentgym_server: Callable[[str], AgentGymServer]) -> AgentGymServer:
    return agentgym_server(pack.flavor)


@dataclass(frozen=True)
class Episode:
    observations: list[str]
    admissible: list[list[str]]
    actions: list[str]
    rewards: list[float]


def expert_episode(pack: Pack, server: AgentGymServer) -> Episode:
    """The expert's episode of the server's task on a reference env of its own."""
    env = pack.domain.make_reference_env(split="test", max_steps=pack.domain.max_episode_steps)
    policy = pack.domain.expert_policy()
    observation, info = env.reset(options={"task": pack.server_task(server)})
    episode = Episode([observation], [info["admissible_actions"]], [], [])
    done = False
    while not done:
        action = policy(observation, info)
        observation, reward, terminated, truncated, info = env.step(action)
        episode.actions.append(action)
        episode.observations.append(observation)
        episode.admissible.append(info["admissible_actions"])
        episode.rewards.append(float(reward))
        done = terminated or truncated
    assert episode.rewards[-1] == 1.0, "the expert solves the task on the reference env"
    return episode


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# -- the protocol ------------------------------------------------------------------------------
def test_an_expert_episode_on_the_server_reads_as_on_the_reference_env(pack, server):
    expected = expert_episode(pack, server)
    env = gym.make(pack.env_id, base_url=server.url)
    observation, info = env.reset(options={"task": pack.index})
    assert observation == expected.observations[0]
    assert info["admissible_actions"] == expected.admissible[0]
    assert info["source"] == "real" and info["task_id"] == f"{pack.flavor}_{pack.index}"
    assert info["task"].instruction == pack.server_task(server).instruction
    for i, action in enumerate(expected.actions, start=1):
        observation, reward, terminated, truncated, info = env.step(action)
        assert observation == expected.observations[i]
        assert info["admissible_actions"] == expected.admissible[i]
        assert reward == expected.rewards[i - 1] and info["action_valid"]
    assert (reward, terminated, truncated, info["won"]) == (1.0, True, False, True)
    env.close()

    field = "env_idx" if pack.flavor == "webshop" else "id"
    resets = server.requests_to("/reset")
    assert len(server.requests_to("/create")) == 1 and len(resets) == 1
    if pack.flavor == "webshop":
        assert set(resets[0].body) == {"env_idx", "session_id"} and resets[0].body["session_id"] == pack.index
    else:
        assert resets[0].body == {"id": 0, "game": pack.index, "world_type": "Text"}
    steps = server.requests_to("/step")
    assert [s.body["action"] for s in steps] == expected.actions
    assert all(set(s.body) == {field, "action"} for s in steps)
    assert server.requests_to("/close")[0].body == {field: resets[0].body[field]}


def test_webshop_pays_the_servers_score_when_asked(agentgym_server):
    pack, server = PACKS["webshop"], agentgym_server("webshop")
    reference = pack.domain.make_reference_env(split="test", reward="score")
    observation, info = reference.reset(options={"task": pack.server_task(server)})
    expected = []
    for action in ["search[pet bed]", None, "click[Buy Now]"]:
        if action is None:  # the first product of the results
            action = info["admissible_actions"][2]
        observation, reward, terminated, _, info = reference.step(action)
        expected.append((action, float(reward), terminated, info["score"]))
    assert 0.0 < expected[-1][1] < 1.0, "the first product is no perfect match"
    env = gym.make(pack.env_id, base_url=server.url, reward="score")
    env.reset(options={"task": pack.index})
    for action, reward, terminated, score in expected:
        _, real_reward, real_terminated, _, info = env.step(action)
        assert (real_reward, real_terminated, info["score"], info["won"]) == (
            reward,
            terminated,
            score,
            False,
        )
    env.close()


def test_alfworld_truncates_where_the_server_ends_an_unwon_game(agentgym_server):
    pack, server = PACKS["alfworld"], agentgym_server("alfworld")
    env = gym.make(pack.env_id, base_url=server.url)
    env.reset(options={"task": pack.index})
    ended = {"observation": "Nothing happens.", "reward": 0.0, "available_actions": ["look"], "done": True}
    server.enqueue("/step", raw(ended))
    _, reward, terminated, truncated, info = env.step("look")
    assert (reward, terminated, truncated, info["won"]) == (0.0, False, True, False)
    with pytest.raises(ConfigurationError, match="reset"):
        env.step("look")
    env.close()


def test_webshop_clickables_come_back_as_the_page_shows_them():
    head = ["Instruction:", "a red shirt", "Back to Search", "< Prev", "color", "Red", "navy", "size", "M"]
    page = " [SEP] ".join(
        [*head, "Shirt", "Price: $10.0", "Rating: 4.0", "Description", "Features", "Reviews", "Buy Now"]
    )
    # WebShop keys buttons lower-cased first, then options as their values are.
    clickables = [
        "back to search",
        "< prev",
        "description",
        "features",
        "reviews",
        "buy now",
        "Red",
        "navy",
        "M",
    ]
    assert page_labels(page, clickables) == [
        "Back to Search",
        "< Prev",
        "Red",
        "navy",
        "M",
        "Description",
        "Features",
        "Reviews",
        "Buy Now",
    ]
    assert page_labels(page, ["buy now", "not on the page"]) == ["Buy Now", "not on the page"]


# -- sim-to-real -------------------------------------------------------------------------------
def test_sim_to_real_switches_to_the_server_and_records_its_steps(pack, server):
    expected = expert_episode(pack, server)
    synthetic = gym.make(synthetic_id(pack.domain), experience_model="oracle")
    env = SimToReal(synthetic, gym.make(pack.env_id, base_url=server.url))
    recorded: list[Step] = []
    env.add_real_step_listener(lambda task, step: recorded.append(step))
    observation, info = env.reset(seed=0)
    assert info["source"] == "synthetic"
    _, _, _, _, info = env.step(info["admissible_actions"][-1].replace("<query>", "shoes"))
    assert info["source"] == "synthetic" and recorded == []

    env.switch("real")
    observation, info = env.reset(options={"task": pack.index})
    assert info["source"] == "real" and observation == expected.observations[0]
    for action in expected.actions:
        observation, reward, terminated, truncated, info = env.step(action)
        assert info["source"] == "real"
    assert (reward, terminated) == (1.0, True)
    assert (env.counts.real_steps, env.counts.real_episodes, env.counts.synthetic_steps) == (
        len(expected.actions),
        1,
        1,
    )
    assert [s.action for s in recorded] == expected.actions
    assert (
        recorded[0].state == expected.observations[0] and recorded[-1].next_state == expected.observations[-1]
    )
    assert recorded[-1].reward == 1.0 and recorded[-1].done
    env.close()


# -- failures of the server --------------------------------------------------------------------
def test_a_refused_connection_is_a_typed_error_naming_the_url_and_the_launch(pack):
    url = f"http://127.0.0.1:{closed_port()}"
    env = gym.make(pack.env_id, base_url=url)
    with pytest.raises(RealServerError) as raised:
        env.reset()
    assert not isinstance(raised.value, RealServerTimeoutError)
    assert raised.value.url == f"{url}/create" and raised.value.status is None
    assert url in str(raised.value) and pack.launch in str(raised.value)
    with pytest.raises(ConfigurationError, match="reset"):
        env.step("look")
    env.close()  # the server is gone: close still returns


def test_a_server_error_in_step_raises_and_records_nothing(pack, server):
    expected = expert_episode(pack, server)
    real = gym.make(pack.env_id, base_url=server.url)
    env = SimToReal(gym.make(reference_id(pack.domain)), real)
    recorded: list[Step] = []
    env.add_real_step_listener(lambda task, step: recorded.append(step))
    env.switch("real")
    env.reset(options={"task": pack.index})
    server.enqueue("/step", http_error(500, "Internal Server Error"))
    with pytest.raises(RealServerError) as raised:
        env.step(expected.actions[0])
    assert raised.value.status == 500 and raised.value.url == f"{server.url}/step"
    assert (env.counts.real_steps, recorded, real.unwrapped.elapsed_steps) == (0, [], 0)
    with pytest.raises(ConfigurationError, match="reset"):  # the server's episode is unknown now
        env.step(expected.actions[0])
    observation, _ = env.reset(options={"task": pack.index})
    assert observation == expected.observations[0]
    observation, *_ = env.step(expected.actions[0])
    assert observation == expected.observations[1] and env.counts.real_steps == 1 and len(recorded) == 1
    env.close()


def test_answers_off_the_protocol_are_typed_errors(pack, server):
    env = gym.make(pack.env_id, base_url=server.url)
    env.reset(options={"task": pack.index})
    server.enqueue("/step", raw({"state": 1}), raw("<html>502 Bad Gateway</html>", content_type="text/html"))
    with pytest.raises(RealServerError, match="not an object whose"):
        env.step("look")
    env.reset(options={"task": pack.index})
    with pytest.raises(RealServerError, match="not JSON"):
        env.step("look")
    env.close()


def test_a_task_index_the_server_lacks_is_its_error(pack, server):
    env = gym.make(pack.env_id, base_url=server.url)
    with pytest.raises(RealServerError) as raised:
        env.reset(options={"task": 10**6})
    if pack.flavor == "webshop":  # FastAPI's 500 for the IndexError
        assert raised.value.status == 500
    else:  # ALFWorld_Wrapper answers its errors with HTTP 200
        assert raised.value.status == 200 and "list index out of range" in str(raised.value)
    env.close()


def test_the_timeout_is_honoured(pack, server):
    env = gym.make(pack.env_id, base_url=server.url, timeout_s=0.3)
    env.reset(options={"task": pack.index})
    server.enqueue("/step", delay(5.0))
    started = time.perf_counter()
    with pytest.raises(RealServerTimeoutError, match=r"timeout_s=0\.3"):
        env.step("look")
    assert time.perf_counter() - started < 3.0
    env.close()


def test_an_observation_longer_than_the_space_is_refused(pack, server):
    env = gym.make(pack.env_id, base_url=server.url, max_text_length=20)
    with pytest.raises(RealServerError, match="max_text_length"):
        env.reset(options={"task": pack.index})
    env.close()


# -- actions -----------------------------------------------------------------------------------
@pytest.mark.parametrize("action", [123, None, b"click[Buy Now]", ["look"], 4.5, {"action": "look"}])
def test_a_non_string_action_is_invalid_and_never_sent(pack, server, action):
    env = gym.make(pack.env_id, base_url=server.url)
    reference = pack.domain.make_reference_env(split="test")
    observation, info = env.reset(options={"task": pack.index})
    reference.reset(options={"task": pack.server_task(server)})
    expected, expected_reward, *_ = reference.step(action)
    shown, reward, terminated, truncated, info = env.step(action)
    assert (shown, reward, terminated, truncated) == (expected, expected_reward, False, False)
    assert info["action_valid"] is False and "must be a string" in info["error"]
    assert server.requests_to("/step") == []
    env.close()


def test_invalid_and_unencodable_strings_go_to_the_server_without_raising(pack, server):
    env = gym.make(pack.env_id, base_url=server.url)
    observation, _ = env.reset(options={"task": pack.index})
    for action in ["", "click[nothing here]", "search[\udc80 lone surrogate]", "x" * 5000]:
        _, reward, terminated, _, info = env.step(action)
        assert reward == 0.0 and not terminated
    assert len(server.requests_to("/step")) == 4
    assert "\udc80" not in server.requests_to("/step")[2].body["action"]
    env.close()


def test_action_valid_follows_the_servers_rule(pack, server):
    expected = expert_episode(pack, server)
    env = gym.make(pack.env_id, base_url=server.url)
    env.reset(options={"task": pack.index})
    _, _, _, _, info = env.step("click[Back to Search]" if pack.flavor == "alfworld" else "click[Buy Now]")
    assert info["action_valid"] is False and info["error"]
    _, _, _, _, info = env.step(expected.actions[0])
    assert info["action_valid"] is True and "error" not in info
    env.close()


# -- configuration and tasks -------------------------------------------------------------------
def test_make_needs_an_address_from_the_argument_or_the_variable(pack, monkeypatch):
    variable = f"DREAMGYM_{pack.flavor.upper()}_SERVER"
    monkeypatch.delenv(variable, raising=False)
    with pytest.raises(ConfigurationError, match=variable):
        gym.make(pack.env_id)
    monkeypatch.setenv(variable, "127.0.0.1:36001")
    assert gym.make(pack.env_id).unwrapped.base_url == "http://127.0.0.1:36001"
    assert gym.make(pack.env_id, base_url="http://h:1/").unwrapped.base_url == "http://h:1"
    with pytest.raises(ConfigurationError, match="http"):
        gym.make(pack.env_id, base_url="ftp://h:1")


@pytest.mark.parametrize(
    ("env_id", "kwargs", "message"),
    [
        ("DreamGym/ALFWorld-Real-v0", {"reward": "score"}, "reward must be one of"),
        ("DreamGym/WebShop-Real-v0", {"split": "train"}, "tasks="),
        ("DreamGym/ALFWorld-Real-v0", {"split": "dev"}, "no 'dev' split"),
        ("DreamGym/WebShop-Real-v0", {"timeout_s": 0}, "timeout_s"),
        ("DreamGym/WebShop-Real-v0", {"tasks": ["shop_3"]}, "webshop_<index>"),
    ],
)
def test_bad_arguments_are_refused_at_make(env_id, kwargs, message):
    with pytest.raises(ConfigurationError, match=message):
        gym.make(env_id, base_url="http://127.0.0.1:1", **kwargs)


def test_tasks_are_server_indices_item_ids_or_its_own_tasks(pack, server):
    env = gym.make(pack.env_id, base_url=server.url, tasks=[pack.index, f"{pack.flavor}_{pack.index + 1}"])
    assert [t.id for t in env.unwrapped.tasks] == [
        f"{pack.flavor}_{pack.index}",
        f"{pack.flavor}_{pack.index + 1}",
    ]
    first = env.reset(options={"task": pack.index})[0]
    for spec in (np.int64(pack.index), f"{pack.flavor}_{pack.index}", env.unwrapped.tasks[0]):
        assert env.reset(options={"task": spec})[0] == first
    assert env.reset(seed=7)[0] == env.reset(seed=7)[0]  # a seeded draw among env.tasks
    with pytest.raises(ConfigurationError, match="plays its own tasks"):
        env.reset(options={"task": pack.domain.tasks("test")[0]})
    for bad in (-1, True, 2.5):
        with pytest.raises(ConfigurationError):
            env.reset(options={"task": bad})
    env.close()


def test_the_default_splits_are_agentgyms():
    webshop = gym.make("DreamGym/WebShop-Real-v0", base_url="http://127.0.0.1:1").unwrapped
    assert [t.id for t in webshop.tasks] == [f"webshop_{i}" for i in range(200)]
    alfworld = gym.make("DreamGym/ALFWorld-Real-v0", base_url="http://127.0.0.1:1", split="train").unwrapped
    assert len(alfworld.tasks) == 2420 and alfworld.tasks[-1].id == "alfworld_2419"
    test = gym.make("DreamGym/ALFWorld-Real-v0", base_url="http://127.0.0.1:1").unwrapped
    assert [t.metadata["server_index"] for t in test.tasks] == list(range(2420, 2620))


def test_spaces_equal_the_reference_envs_and_close_is_idempotent(pack, server):
    env = gym.make(pack.env_id, base_url=server.url)
    reference = gym.make(reference_id(pack.domain))
    assert env.observation_space == reference.observation_space
    assert env.action_space == reference.action_space
    assert gym.spec(pack.env_id).max_episode_steps == pack.domain.max_episode_steps
    env.close()  # no instance yet: nothing is sent
    assert server.requests == []
    env.reset(options={"task": pack.index})
    env.close()
    env.close()
    assert len(server.requests_to("/close")) == 1
    env.reset(options={"task": pack.index})  # a closed env makes a new instance
    assert len(server.requests_to("/create")) == 2
    env.close()


def test_bench_runs_agents_on_a_real_id_from_the_variable(agentgym_server, monkeypatch):
    monkeypatch.setenv("DREAMGYM_WEBSHOP_SERVER", agentgym_server("webshop").url)
    result = run_bench(
        make_agent("random", "webshop"), PACKS["webshop"].env_id, 3, num_envs=2, progress=False
    )
    assert result.episodes == 3 and result.errored == 0
    assert all(r.task_id.startswith("webshop_") for r in result.records)
    assert all(1 <= r.steps <= PACKS["webshop"].domain.max_episode_steps for r in result.records)
